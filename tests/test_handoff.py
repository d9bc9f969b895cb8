"""Handoff: lines and timers applied on one other thread, in order; bounded without ever making
the tee wait (lines beyond the limit counted, not decoded); the end applies what waits and then
finishes with the reason."""

from __future__ import annotations

import threading
import time

from otelbridge.handoff import Handoff
from otelbridge.stats import Stats


def test_lines_in_order_then_finish_with_reason_on_one_thread():
    seen, threads, finished = [], set(), []
    h = Handoff(Stats())
    h.start(lambda line: (seen.append(line), threads.add(threading.get_ident())),
            lambda reason: (finished.append(reason), threads.add(threading.get_ident())))
    lines = [b"%d" % i for i in range(5000)]
    for line in lines:
        h.put(line)
    assert h.close("downstream closed", timeout=5)
    assert seen == lines
    assert finished == ["downstream closed"]
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_timers_fire_on_the_thread_unless_cancelled():
    fired, threads = [], set()
    h = Handoff(Stats())
    h.start(lambda line: None, lambda reason: None)
    h.call_later(0.05, lambda: (fired.append("a"), threads.add(threading.get_ident())))
    h.call_later(0.01, lambda: fired.append("b"))
    h.call_later(0.02, lambda: fired.append("never")).cancel()
    deadline = time.monotonic() + 5
    while len(fired) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    h.close(timeout=5)
    assert fired == ["b", "a"]
    assert threading.get_ident() not in threads


def test_put_never_waits_lines_beyond_the_limit_are_counted_not_decoded():
    gate = threading.Event()
    seen, warnings = [], []
    stats = Stats()
    h = Handoff(stats, limit=10, warn=warnings.append)
    h.start(lambda line: (gate.wait(5), seen.append(line)), lambda reason: None)
    h.put(b"x" * 6)  # taken by the thread, which then blocks on the gate: its bytes still count
    time.sleep(0.05)
    started = time.monotonic()
    h.put(b"y" * 4)  # fits: 10 bytes queued or being applied
    h.put(b"z")  # would make 11: not decoded
    h.put(b"w" * 3)  # nor this one
    assert time.monotonic() - started < 0.5  # returned at once, with the thread still stuck
    assert (stats.lines_not_decoded, stats.bytes_not_decoded) == (2, 4)
    assert len(warnings) == 1 and "1 lines not decoded so far" in warnings[0]
    gate.set()
    deadline = time.monotonic() + 5
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    h.put(b"v" * 10)  # room again once the thread applied what it held
    assert h.close(timeout=5)
    assert seen == [b"x" * 6, b"y" * 4, b"v" * 10]
    assert len(warnings) == 1


def test_a_line_longer_than_the_limit_is_decoded_when_nothing_waits():
    seen = []
    stats = Stats()
    h = Handoff(stats, limit=4)
    h.start(seen.append, lambda reason: None)
    h.put(b"0123456789")
    assert h.close(timeout=5)
    assert seen == [b"0123456789"] and stats.lines_not_decoded == 0


def test_a_failing_line_costs_that_line_only():
    seen = []

    def on_line(line):
        if line == b"bad":
            raise ValueError("boom")
        seen.append(line)

    h = Handoff(Stats())
    h.start(on_line, lambda reason: seen.append(reason))
    for line in (b"a", b"bad", b"b"):
        h.put(line)
    assert h.close(None, timeout=5)
    assert seen == [b"a", b"b", None]
