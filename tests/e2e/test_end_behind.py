"""The end of input while decoding is far behind (issue 5: "exit at end of input within
``--flush-timeout`` + 1 s", "Stats"): a burst piped in at once, and a live stream offered faster
than decoding, paced by a slow collector, can apply it.

What must hold (otelbridge as a real subprocess, spans at a real gRPC receiver on 127.0.0.1 that
takes a while per request):

* the process exits within ``--flush-timeout`` + 1 s of the end of input;
* the stats line on stderr and ``--stats-json`` give the same counts (the decoding thread has
  stopped counting before they are printed and written);
* every line is accounted for: ``lines`` = the newlines sent = decoded + bad + overlong + not
  decoded (every line of these streams is one a dialect wants: none is "not wanted"), and the
  stream was really behind: some lines were not decoded;
* every span built is exported or dropped, none is received twice; the workflows still open at
  the end are ended and reach the receiver once.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter

from tests.e2e.test_faults import Live, stats_line, workflow_lines, workflow_spans
from tests.receivers import GrpcReceiver

#: --flush-timeout of the burst: the open workflows' spans, ended at the end, queue behind the
#: burst's and need the second half of it to reach the receiver.
BURST_FLUSH_S = 2.0
#: --flush-timeout of the live stream (nothing waits behind it at the end but what was in flight).
LIVE_FLUSH_S = 1.0
#: Workflows of 10 agents in the burst (~4.3 MB, 8,000 lines): several times what decoding
#: applies in its share of BURST_FLUSH_S, paced by a receiver taking 0.1 s a request (the SDK's
#: batches of 512 spans then leave at ~5,000 spans/s), within what the tee keeps for decoding
#: (11 MiB).
BURST = 2000
#: The live stream: this many workflows of 10 agents every 0.1 s (24,000 spans/s offered; the
#: decoding process exports ~11,000/s) for LIVE_S seconds.
LIVE_PER_TICK = 200
LIVE_S = 1.5
OPEN = 3

STATS_LINE = re.compile(
    r"(?P<bytes>\d+) bytes?, (?P<lines>\d+) lines?, (?P<lines_decoded>\d+) decoded, "
    r"(?P<lines_not_wanted>\d+) not wanted, "
    r"(?P<lines_not_decoded>\d+) not decoded \(behind\), (?P<bad_lines>\d+) bad, "
    r"(?P<overlong_lines>\d+) overlong; spans (?P<spans_started>\d+) built, "
    r"(?P<spans_exported>\d+) exported, (?P<spans_dropped>\d+) dropped; "
    r"(?P<late_events_ignored>\d+) late events ignored"
)


def start(rx: GrpcReceiver, stats_path, flush: float) -> Live:
    # no grace window: a completed workflow ends at its notification, so what the end itself
    # has to end and flush is the open workflows (and what was in flight), not the burst's tail
    return Live(["--protocol", "grpc", "--endpoint", rx.endpoint, "--grace-period", "0",
                 "--flush-timeout", str(flush), "--stats-json", str(stats_path)])


def check_end(live: Live, took: float, stats: dict, sent: list[bytes], received: list,
              flush: float) -> None:
    """What every end behind must give (see the module doc), ``flush``: --flush-timeout."""
    assert live.proc.returncode == 0, live.stderr
    assert live.output() == b"".join(sent)
    assert took <= flush + 1.0, took

    line = stats_line(live.stderr)
    printed = {k: int(v) for k, v in STATS_LINE.search(line).groupdict().items()}
    assert printed == {k: stats[k] for k in printed}, (line, stats)

    assert stats["bytes"] == sum(len(l) for l in sent)
    assert stats["lines"] == len(sent)
    assert stats["lines"] == (stats["lines_decoded"] + stats["bad_lines"] + stats["overlong_lines"]
                              + stats["lines_not_decoded"])
    assert stats["bytes_not_decoded"] >= stats["lines_not_decoded"]
    assert stats["lines_not_decoded"] > 0  # paced by the slow receiver, it cannot catch up

    assert stats["spans_started"] == stats["spans_exported"] + stats["spans_dropped"]
    assert max(Counter((s.trace_id, s.span_id) for s in received).values()) == 1
    assert len(received) >= stats["spans_exported"] > 0


def test_a_burst_decoding_cannot_catch_up_with(tmp_path):
    """Open workflows and one complete workflow (waited for at the receiver: all before it is
    decoded), then the burst at once and the end of input."""
    stats_path = tmp_path / "stats.json"
    opened = [line for i in range(OPEN) for line in workflow_lines(f"open{i}", agents=3, complete=False)]
    first = workflow_lines("first", agents=2)
    burst = [line for i in range(BURST) for line in workflow_lines(f"b{i}", agents=10)]
    with GrpcReceiver(delay=0.1) as rx:
        live = start(rx, stats_path, BURST_FLUSH_S)
        try:
            live.send(opened + first)
            got = rx.received.wait_for(workflow_spans(2), timeout=10)
            assert {s.attributes.get("workflow.task_id") for s in got} == {"first"}
            live.send(burst)
            took = live.close_and_wait(timeout=30)
        finally:
            if live.proc.poll() is None:
                live.proc.kill()
        time.sleep(0.3)  # a request the receiver is still answering
        received = rx.received.spans()
    check_end(live, took, json.loads(stats_path.read_text()), opened + first + burst, received,
              BURST_FLUSH_S)

    per_open = Counter(s.attributes.get("workflow.task_id") for s in received
                       if str(s.attributes.get("workflow.task_id")).startswith("open"))
    # ended at the end, after the cut, and flushed in the time left
    assert per_open == {f"open{i}": workflow_spans(3) for i in range(OPEN)}, per_open


def test_a_live_stream_faster_than_decoding(tmp_path):
    """Workflows written every 0.1 s for LIVE_S seconds, faster than they are decoded and
    exported (a receiver taking 0.05 s a request), then the end of input."""
    stats_path = tmp_path / "stats.json"
    sent: list[bytes] = []
    with GrpcReceiver(delay=0.05) as rx:
        live = start(rx, stats_path, LIVE_FLUSH_S)
        try:
            began = time.monotonic()
            tick = 0
            while time.monotonic() - began < LIVE_S:
                lines = [line for w in range(LIVE_PER_TICK)
                         for line in workflow_lines(f"t{tick}w{w}", agents=10)]
                live.proc.stdin.write(b"".join(lines))
                live.proc.stdin.flush()
                sent += lines
                tick += 1
                time.sleep(max(0.0, began + tick * 0.1 - time.monotonic()))
            took = live.close_and_wait(timeout=30)
        finally:
            if live.proc.poll() is None:
                live.proc.kill()
        time.sleep(0.2)
        received = rx.received.spans()
    check_end(live, took, json.loads(stats_path.read_text()), sent, received, LIVE_FLUSH_S)
