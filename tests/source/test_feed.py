"""The tee's side of the decoding process (otelbridge/source/feed.py) against a real forked
decoding process (otelbridge/modes/live.py): what crosses the pipes, and when it is read."""

from __future__ import annotations

import array
import fcntl
import json
import termios
import time

from otelbridge.config import Config
from otelbridge.deadline import Deadline
from otelbridge.modes import live
from otelbridge.source.feed import BACKLOG_LIMIT, DecoderFeed
from otelbridge.stats import Stats

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
        assert feed.backlogged()

        def drained() -> bool:
            feed.drain()  # what the tee does whenever the pipe has room
            return not feed.backlogged() and queued(feed.fd) == 0

        assert wait_until(drained, 20.0)
        stats.bytes = 2 * len(LINE) + len(burst)
    finally:
        code = feed.end(None, 0, stats, Deadline.after(5.0))
    assert code == 0
    counts = json.loads(stats_path.read_text())
    lines = 2 + len(burst) // len(LINE)
    assert (counts["lines"], counts["lines_decoded"], counts["lines_not_decoded"]) == (lines, lines, 0)
