"""The tee's side of the decoding process (otelbridge/source/feed.py) against a real forked
decoding process (otelbridge/modes/live.py): what crosses the pipes, and when it is read."""

from __future__ import annotations

import array
import fcntl
import json
import os
import signal
import termios
import time

from otelbridge.config import Config
from otelbridge.deadline import Deadline
from otelbridge.modes import live
from otelbridge.source.feed import BACKLOG_LIMIT, DecoderFeed
from otelbridge.stats import Stats
from tests.conftest import ROOT

LINE = b'{"type":"system","subtype":"init","session_id":"s","model":"claude-opus-4-8"}\n'


def queued(fd: int) -> int:
    """Bytes in the pipe whose end ``fd`` is (``FIONREAD`` answers on either end)."""
    n = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, n)
    return n[0]


def wait_until(condition, within_s: float, step_s: float = 0.01) -> bool:
    until = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > until:
            return False
        time.sleep(step_s)
    return True


def test_a_burst_while_decoding_pauses_at_a_trickle_is_read_at_once(monkeypatch, tmp_path):
    """At a trickle the decoding process pauses reading between wake-ups; a burst that fills the
    data pipe ends the pause at once (the ``full`` message), long before the backlog could
    outgrow its limit. The pause is made a minute long here: every line of the burst must be
    decoded within seconds all the same."""
    monkeypatch.setattr(live, "PAUSE_S", 60.0)
    monkeypatch.setattr(live, "PAUSE_CHUNKS", 10**9)  # only PAUSE_S bounds the pause
    stats_path = tmp_path / "stats.json"
    feed = DecoderFeed.start(Config(exporters=("none",), stats_json=str(stats_path)))
    assert feed is not None
    stats = Stats()
    try:
        one = bytearray(LINE)
        feed.chunk(one, len(one))
        assert wait_until(lambda: queued(feed.fd) == 0, 30.0)  # read: a small read, then a pause
        feed.chunk(one, len(one))
        time.sleep(1.0)
        assert queued(feed.fd) == len(LINE)  # the premise: the decoder is pausing, not reading

        burst = bytearray(LINE * (3 * 1024 * 1024 // len(LINE)))  # 3 MiB: more than the pipe
        assert len(burst) < BACKLOG_LIMIT
        feed.chunk(burst, len(burst))
        assert feed.waiting_on() == feed.fd

        def drained() -> bool:
            feed.drain()  # what the tee does whenever the pipe has room
            return feed.waiting_on() is None and queued(feed.fd) == 0

        assert wait_until(drained, 20.0)
        stats.bytes = 2 * len(LINE) + len(burst)
    finally:
        code = feed.end(None, 0, stats, Deadline.after(5.0))
    assert code == 0
    counts = json.loads(stats_path.read_text())
    lines = 2 + len(burst) // len(LINE)
    assert (counts["lines"], counts["lines_decoded"], counts["lines_not_decoded"]) == (lines, lines, 0)


def fed_with_gaps(tmp_path, name: str, stop: bool) -> dict:
    """A line over ``--max-line`` fed in 2 KiB chunks (each then a gap of its own: thousands of
    control messages, more than the control pipe holds) and a real recording after it, the
    decoding process stopped meanwhile if ``stop``; its counts."""
    recording = (ROOT / "examples" / "cbc-workflow.jsonl").read_bytes()
    big = b'{"type":"system","subtype":"task_progress","d":"' + b"a" * 8_000_000 + b'"}\n'
    stats_path = tmp_path / f"{name}.json"
    feed = DecoderFeed.start(Config(exporters=("none",), max_line=100_000,
                                    stats_json=str(stats_path)))
    assert feed is not None
    stats = Stats()
    try:
        first = bytearray(LINE)
        feed.chunk(first, len(first))
        assert wait_until(lambda: queued(feed.fd) == 0, 30.0)  # read: set up
        if stop:
            os.kill(feed.pid, signal.SIGSTOP)
        try:
            for i in range(0, len(big), 2048):
                part = bytearray(big[i:i + 2048])
                feed.chunk(part, len(part))
            if stop:  # the premise: control messages wait for the control pipe's room
                assert feed.waiting_on() not in (None, feed.fd)
            after = bytearray(recording)
            feed.chunk(after, len(after))
        finally:
            if stop:
                os.kill(feed.pid, signal.SIGCONT)
        # what the data pipe holds is read (and so decoded) before anything more is written
        assert wait_until(lambda: queued(feed.fd) == 0, 20.0)
        time.sleep(0.3)

        def drained() -> bool:
            feed.drain()  # what the tee does whenever the pipe it waits on has room
            return feed.waiting_on() is None

        assert wait_until(drained, 20.0)
        stats.bytes = len(LINE) + len(big) + len(recording)
    finally:
        code = feed.end(None, 0, stats, Deadline.after(5.0))
    assert code == 0
    return json.loads(stats_path.read_text())


def test_gaps_are_told_before_the_data_after_them_however_many(tmp_path):
    """The decoding process applies each gap where it lies: data never overtakes a gap still
    waiting for the control pipe's room, so the recording after the overlong line decodes
    as it does when nothing was stopped."""
    stopped, at_once = fed_with_gaps(tmp_path, "stopped", True), fed_with_gaps(tmp_path, "at-once", False)
    lines = 2 + (ROOT / "examples" / "cbc-workflow.jsonl").read_bytes().count(b"\n")
    for counts in (stopped, at_once):
        assert (counts["lines"], counts["overlong_lines"], counts["lines_not_decoded"]) == (lines, 1, 0)
    for key in ("lines_decoded", "lines_not_wanted", "spans_started"):
        assert stopped[key] == at_once[key], key
    assert at_once["spans_started"] > 0


def test_a_flood_of_gaps_while_decoding_is_stopped_costs_one_message_and_a_bounded_end(tmp_path):
    """300,000 chunks of a line over ``--max-line`` while the decoding process is stopped: once
    the control pipe is full the gaps wait as one, so the tee holds no queue of messages, and
    an end that the stopped process cannot read still ends by its deadline (the process is
    then stopped for good), with the tee's counts."""
    stats_path = tmp_path / "stats.json"
    feed = DecoderFeed.start(Config(exporters=("none",), max_line=1000, stats_json=str(stats_path)))
    assert feed is not None
    first = bytearray(LINE)
    feed.chunk(first, len(first))
    assert wait_until(lambda: queued(feed.fd) == 0, 30.0)
    time.sleep(0.5)  # set up (it says so: the end then waits for it no longer than the deadline)
    os.kill(feed.pid, signal.SIGSTOP)
    piece = bytearray(b"L" * 8)
    began = time.process_time()
    for _ in range(300_000):
        feed.chunk(piece, len(piece))
    took = time.process_time() - began
    assert feed.waiting_on() not in (None, feed.fd)  # the control pipe is full
    stats = Stats()
    stats.bytes = len(LINE) + 8 * 300_000
    ended = time.monotonic()
    code = feed.end(None, 0, stats, Deadline.after(1.0))  # the decoding process still stopped
    ended = time.monotonic() - ended
    assert code == 0
    assert ended < 1.0 + 2.0 + 3.0  # the deadline + EXIT_MARGIN_S, and slack for this machine
    assert took < 30.0  # (a queue of messages grew with every gap and was written one by one)

