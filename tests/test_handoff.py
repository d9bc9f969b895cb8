"""Handoff: chunks, gaps and timers applied on one other thread, in order; ``offer`` never waits
(a chunk beyond the limit is refused: the caller queues a gap), ``put`` waits for room; gaps
queued back to back merge; the end applies what waits and then finishes with the reason."""

from __future__ import annotations

import threading
import time

from otelbridge.handoff import DEFAULT_LIMIT, Handoff
from otelbridge.lines import Gap
from otelbridge.stats import Stats


def wait_until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cond()


def gated(limit: int = DEFAULT_LIMIT):
    """(handoff, gate, seen): its thread waits at ``gate`` before it records each item, then the
    end's reason, in ``seen``."""
    gate = threading.Event()
    seen = []
    h = Handoff(Stats(), limit=limit)
    h.start(lambda item: (gate.wait(5), seen.append(item)), seen.append)
    return h, gate, seen


def test_chunks_in_order_then_finish_with_reason_on_one_thread():
    seen, threads, finished = [], set(), []
    h = Handoff(Stats())
    h.start(lambda item: (seen.append(item), threads.add(threading.get_ident())),
            lambda reason: (finished.append(reason), threads.add(threading.get_ident())))
    chunks = [b"%d\n" % i for i in range(5000)]
    for chunk in chunks:
        h.put(chunk)
    assert h.close("downstream closed", timeout=5)
    assert seen == chunks
    assert finished == ["downstream closed"]
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_timers_fire_on_the_thread_unless_cancelled():
    fired, threads = [], set()
    h = Handoff(Stats())
    h.start(lambda item: None, lambda reason: None)
    h.call_later(0.05, lambda: (fired.append("a"), threads.add(threading.get_ident())))
    h.call_later(0.01, lambda: fired.append("b"))
    h.call_later(0.02, lambda: fired.append("never")).cancel()
    assert wait_until(lambda: len(fired) >= 2)
    h.close(timeout=5)
    assert fired == ["b", "a"]
    assert threading.get_ident() not in threads


def test_offer_never_waits_and_refuses_beyond_the_limit():
    gate = threading.Event()
    seen = []
    h = Handoff(Stats(), limit=10)
    h.start(lambda item: (gate.wait(5), seen.append(item)), lambda reason: None)
    assert h.offer(b"x" * 6)  # taken by the thread, which blocks on the gate: its bytes still count
    time.sleep(0.05)
    started = time.monotonic()
    assert h.offer(b"yyy\n")  # fits: 10 bytes queued or being applied
    assert not h.offer(b"z")  # would make 11
    h.gap(Gap.of(b"z"))
    h.gap(Gap.of(b"w\nww"))  # merges with the gap before it
    assert time.monotonic() - started < 0.5  # returned at once, with the thread still stuck
    gate.set()
    assert wait_until(lambda: len(seen) == 3)
    assert h.offer(b"v" * 10)  # room again once the thread applied what it held
    assert h.close(timeout=5)
    assert seen == [b"x" * 6, b"yyy\n", Gap(5, 1, False), b"v" * 10]


def test_put_waits_for_room():
    h, gate, seen = gated(limit=4)
    h.put(b"1234")
    time.sleep(0.05)
    done = threading.Event()
    threading.Thread(target=lambda: (h.put(b"5678"), done.set()), daemon=True).start()
    assert not done.wait(0.2)  # full: the producer waits
    gate.set()
    assert done.wait(5)
    assert h.close(timeout=5)
    assert seen == [b"1234", b"5678", None]


def test_a_chunk_longer_than_the_limit_fits_an_empty_queue():
    seen = []
    h = Handoff(Stats(), limit=4)
    h.start(seen.append, lambda reason: None)
    assert h.offer(b"0123456789")
    assert h.close(timeout=5)
    assert seen == [b"0123456789"]


def test_a_failing_chunk_costs_that_chunk_only():
    seen = []

    def on_item(item):
        if item == b"bad":
            raise ValueError("boom")
        seen.append(item)

    h = Handoff(Stats())
    h.start(on_item, lambda reason: seen.append(reason))
    for chunk in (b"a", b"bad", b"b"):
        h.put(chunk)
    assert h.close(None, timeout=5)
    assert seen == [b"a", b"b", None]


def test_past_the_cut_queued_chunks_are_handed_on_as_gaps_then_the_end():
    h, gate, seen = gated()
    h.put(b"applied\n")  # taken by the thread, which waits at the gate
    assert wait_until(lambda: not h._items)
    for chunk in (b"b\nbb", b"c\n", b"d"):
        h.put(chunk)
    h.cut_at(time.monotonic())
    gate.set()
    assert h.close("why", timeout=5)
    assert seen == [b"applied\n", Gap(4, 1, False), Gap(2, 1, True), Gap(1, 0, False), "why"]


def test_put_waits_for_room_until_the_cut_then_queues_gaps():
    h, gate, seen = gated(limit=4)
    h.put(b"1234")
    assert wait_until(lambda: not h._items)
    assert not h.put(b"5\n", timeout=0.05)  # full: not queued
    done = threading.Event()
    threading.Thread(target=lambda: (h.put(b"5\n"), done.set()), daemon=True).start()
    assert not done.wait(0.2)  # full: the producer waits
    h.cut_at(time.monotonic() + 0.1)
    assert done.wait(5)  # the cut ended the wait, with the thread still at the gate
    assert h.put(b"67\n", timeout=0)  # past the cut: queued as a gap at once
    gate.set()
    assert h.close(timeout=5)
    assert seen == [b"1234", Gap(5, 2, True), None]  # the two merged
