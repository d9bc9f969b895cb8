"""The tee's record of when each chunk passed, read back by the decoding process in pieces
(otelbridge/source/arrivals.py)."""

from __future__ import annotations

import os

from otelbridge.source.arrivals import MERGE_NS, RECORD_EVERY_NS, SLOTS, ArrivalClock, Arrivals


MS = 1_000_000


def test_pieces_follow_the_chunks_and_carry_the_last_time_over():
    ring = Arrivals()
    assert ring.pieces(0, 50) == [(50, None)]  # before any record: unknown
    ring.passed(50, 100 * MS)
    ring.passed(120, 200 * MS)
    ring.passed(300, 300 * MS)  # not yet read: stays for the next call
    assert ring.pieces(50, 200) == [(120, 100 * MS), (200, 200 * MS)]
    assert ring.pieces(200, 250) == [(250, 200 * MS)]  # inside the chunk that began at 120
    assert ring.pieces(250, 400) == [(300, 200 * MS), (400, 300 * MS)]


def test_chunks_join_a_record_within_5_ms_and_a_piece_within_10_ms_dated_by_the_latest():
    ring = Arrivals()
    for i, at_ms in enumerate((100, 101, 105, 110, 111, 130)):  # a burst, then a later write
        ring.passed(i * 10, at_ms * MS)
    assert (RECORD_EVERY_NS, MERGE_NS) == (5 * MS, 10 * MS)
    assert ring.chunks() == 6  # every chunk counted; 101 and 111 were not recorded
    # 100..110 ms: one piece, dated 110 (the bytes of the chunk at 111 take 110: 1 ms early)
    assert ring.pieces(0, 60) == [(50, 110 * MS), (60, 130 * MS)]


def test_a_chunk_recorded_twice_at_one_offset_keeps_one_time():
    """The tee records a chunk before tee(2), and again when the pipe was full and the chunk went
    by hand to the same offset."""
    ring = Arrivals()
    ring.passed(0, 5 * MS)
    ring.passed(0, 7 * MS)
    ring.passed(0, 12 * MS)
    assert ring.pieces(0, 10) == [(10, 12 * MS)]


def test_a_reader_far_behind_dates_what_it_lost_as_unknown():
    ring = Arrivals()
    for i in range(SLOTS + 10):
        ring.passed(i * 10, i * 100 * MS)
    assert ring.pieces(0, 30) == [(30, None)]  # its records may be overwritten: not read
    newest = (SLOTS + 9) * 10
    tail = ring.pieces(newest, newest + 10)
    assert tail == [(newest + 10, (SLOTS + 9) * 100 * MS)]


def test_the_ring_is_shared_across_a_fork():
    ring = Arrivals()
    pid = os.fork()
    if pid == 0:
        ring.passed(0, 42 * MS)
        ring.passed(100, 430 * MS)
        os._exit(0)
    os.waitpid(pid, 0)
    assert ring.pieces(0, 150) == [(100, 42 * MS), (150, 430 * MS)]


def test_the_clock_is_the_pieces_time_while_set_else_now():
    clock = ArrivalClock()
    clock.at = 123
    assert clock() == 123
    clock.at = None
    assert clock() > 1_700_000_000 * 10**9
