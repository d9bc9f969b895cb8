"""Handoff: lines and timers applied on one other thread, in order; bounded; the end applies
what waits and then finishes with the reason."""

from __future__ import annotations

import threading
import time

from otelbridge.handoff import Handoff


def test_lines_in_order_then_finish_with_reason_on_one_thread():
    seen, threads, finished = [], set(), []
    h = Handoff()
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
    h = Handoff()
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


def test_put_waits_while_the_limit_is_reached():
    gate = threading.Event()
    h = Handoff(limit=10)
    h.start(lambda line: gate.wait(5), lambda reason: None)
    h.put(b"x" * 10)  # taken by the thread, which then blocks on the gate
    time.sleep(0.05)
    h.put(b"y" * 10)  # waits in the queue: now the limit is reached
    done = threading.Event()
    threading.Thread(target=lambda: (h.put(b"z"), done.set()), daemon=True).start()
    assert not done.wait(0.2)  # the third put waits for the thread
    gate.set()
    assert done.wait(5)
    assert h.close(timeout=5)


def test_a_failing_line_costs_that_line_only():
    seen = []

    def on_line(line):
        if line == b"bad":
            raise ValueError("boom")
        seen.append(line)

    h = Handoff()
    h.start(on_line, lambda reason: seen.append(reason))
    for line in (b"a", b"bad", b"b"):
        h.put(line)
    assert h.close(None, timeout=5)
    assert seen == [b"a", b"b", None]
