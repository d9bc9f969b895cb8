"""clock.py (SPAN-MODEL.md "Time") and ids.py (deterministic id rule)."""

from __future__ import annotations

import hashlib
import os

from otelbridge.clock import SKEW_NS, Clock
from otelbridge.ids import Ids

NOW = 1_800_000_000_000_000_000


def test_auto_switches_to_stream_clock_for_a_recording():
    clock = Clock("auto", wall=lambda: NOW)
    assert clock.now() == NOW
    clock.observe(NOW - 1_000)  # live: close to the wall clock, in the stream's frame
    assert not clock.uses_stream and clock.now() == NOW - 1_000
    old = NOW - SKEW_NS - 10**9 * 3600 * 24 * 100
    clock2 = Clock("auto", wall=lambda: NOW)
    clock2.observe(old)
    assert clock2.uses_stream and clock2.now() == old
    clock2.observe(old - 5)  # older times never move the stream clock back
    assert clock2.now() == old


def test_wall_and_stream_modes_and_at():
    wall = Clock("wall", wall=lambda: NOW)
    wall.observe(5 * 10**18)
    assert wall.now() == NOW
    stream = Clock("stream", wall=lambda: NOW)
    assert stream.now() == NOW  # nothing shown yet
    assert stream.at(1_700_000_000_000_000_000) == 1_700_000_000_000_000_000
    assert stream.now() == 1_700_000_000_000_000_000


def test_deterministic_ids_follow_the_rule():
    ids = Ids(deterministic=True)
    tid = ids.trace_id("sess", "task")
    assert tid == int.from_bytes(hashlib.sha256(b"otelbridge/1/sess/task").digest()[:16], "big")
    assert ids.trace_id("sess") == int.from_bytes(hashlib.sha256(b"otelbridge/1/sess").digest()[:16], "big")
    sid = ids.span_id(tid, "agent", "3")
    assert sid == int.from_bytes(hashlib.sha256(f"{tid:032x}/agent/3".encode()).digest()[:8], "big")
    assert Ids(True).span_id(tid, "agent", "3") == sid


def test_deterministic_span_ids_follow_the_rule_across_interleaved_traces():
    """Each span id hashes its own trace id, also when traces alternate (zero included)."""
    ids = Ids(deterministic=True)
    calls = [(0, "agent", "1"), (7, "phase", "1"), (7, "agent", "12"), (0, "agent", "1"),
             (2**128 - 1, "workflow", "wf"), (7, "agent", "12")]
    got = [ids.span_id(*call) for call in calls]
    assert got == [int.from_bytes(hashlib.sha256(f"{t:032x}/{k}/{key}".encode()).digest()[:8], "big")
                   for t, k, key in calls]
    assert got[0] == got[3] and got[2] == got[5] and len(set(got)) == 4


def test_random_ids_differ_and_are_nonzero():
    ids = Ids()
    values = {ids.trace_id("s", "t") for _ in range(50)}
    assert len(values) == 50 and 0 not in values


def test_random_ids_across_buffer_refills_fit_their_width():
    ids = Ids()
    spans = [ids.span_id(1, "agent", str(i)) for i in range(2000)]  # 16 KB: several 4 KiB reads
    traces = [ids.trace_id("s") for _ in range(600)]
    assert len(set(spans)) == 2000 and all(0 < s < 2**64 for s in spans)
    assert len(set(traces)) == 600 and all(0 < t < 2**128 for t in traces)
    assert max(traces) >= 2**120 and max(spans) >= 2**56  # the high bytes are used too


def test_a_forked_child_never_repeats_its_parents_ids():
    ids = Ids()
    ids.span_id(1, "agent", "warm")  # the buffer is filled before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.write(write, b"".join(ids.span_id(1, "agent", str(i)).to_bytes(8, "big") for i in range(4)))
        os._exit(0)
    os.close(write)
    mine = {ids.span_id(1, "agent", str(i)) for i in range(4)}
    data = b""
    while len(data) < 32:
        chunk = os.read(read, 32)
        if not chunk:
            break
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    theirs = {int.from_bytes(data[i:i + 8], "big") for i in range(0, 32, 8)}
    assert len(theirs) == 4 and not mine & theirs
