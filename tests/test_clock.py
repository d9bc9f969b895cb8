"""clock: the pending clock before the first timestamp, and StreamTimers (call_later in stream time)."""

from __future__ import annotations

from otelbridge.clock import Clock, StreamTimers

S = 1_000_000_000


def test_callbacks_run_when_the_stream_reaches_their_time():
    clock = Clock("stream", wall=lambda: 0)
    timers = StreamTimers(clock)
    ran: list[str] = []
    clock.observe(100 * S)
    timers.call_later(5, lambda: ran.append("a"))
    timers.call_later(2, lambda: ran.append("b"))
    timers.call_later(3, lambda: ran.append("cancelled")).cancel()
    timers.run_due()
    assert ran == []
    clock.observe(102 * S)
    timers.run_due()
    assert ran == ["b"]
    clock.observe(104 * S)  # the cancelled one's time: nothing runs
    timers.run_due()
    assert ran == ["b"]
    timers.call_later(60, lambda: ran.append("c"))
    timers.run_all()  # end of file: everything pending, earliest first
    assert ran == ["b", "a", "c"]


def test_a_pending_clock_dates_lines_with_one_anchor_and_settles_at_the_first_timestamp():
    wall = [1_800_000_000 * S]
    clock = Clock("stream", wall=lambda: wall[0])
    shifts: list[int] = []
    clock.on_settle.append(shifts.append)
    assert not clock.settled and clock.at(None) == wall[0]
    wall[0] += 5 * S  # later lines before the first timestamp still take the anchor
    assert clock.at(None) == wall[0] - 5 * S
    clock.observe(100 * S)  # the first timestamp, another day
    assert clock.settled and shifts == [100 * S - (wall[0] - 5 * S)]
    assert clock.at(None) == 100 * S and clock.uses_stream
    clock.settle()
    assert len(shifts) == 1  # once


def _auto() -> tuple[list[int], Clock, list[int]]:
    """A live ``auto`` clock on a settable wall clock (``wall[0]``), and the shifts it gives."""
    wall = [1_800_000_000 * S]
    clock = Clock("auto", wall=lambda: wall[0])
    shifts: list[int] = []
    clock.on_settle.append(shifts.append)
    return wall, clock, shifts


def test_auto_settles_on_the_wall_clock_after_one_second_without_a_timestamp():
    from otelbridge.clock import WAIT_NS

    wall, clock, shifts = _auto()
    first = clock.at(None)
    wall[0] += WAIT_NS - 1
    # pending, each line takes the wall clock as it came: what it keeps once settled on it
    assert clock.at(None) == first + WAIT_NS - 1 and not clock.settled
    wall[0] += 1
    assert clock.settled and shifts == [0] and clock.at(None) == wall[0]
    clock.observe(100 * S)  # a recording piped in later: auto still switches, one way
    assert clock.uses_stream and clock.now() == 100 * S
    # and what is still open moves into the stream's frame, once
    assert shifts == [0, 100 * S - wall[0]]
    clock.observe(101 * S)
    assert len(shifts) == 2


def test_auto_settled_on_the_wall_clock_shifts_open_runs_at_a_near_first_timestamp():
    from otelbridge.clock import WAIT_NS

    wall, clock, shifts = _auto()
    clock.at(None)
    wall[0] += WAIT_NS
    assert clock.settled and shifts == [0]
    wall[0] += 3 * S  # a model call's first line, stamped 50 ms before it came
    assert clock.at(wall[0] - 50_000_000) == wall[0] - 50_000_000
    assert shifts == [0, -50_000_000] and not clock.uses_stream


def test_auto_pending_lines_keep_their_spacing_before_a_far_first_timestamp():
    """A recording piped in live: the lines before its first timestamp move to just before
    it, as far apart as they came (never after it, never on the wall clock of another day)."""
    wall, clock, shifts = _auto()
    first = clock.at(None)
    wall[0] += 300_000_000
    second = clock.at(None)
    assert (first, second) == (1_800_000_000 * S, 1_800_000_000 * S + 300_000_000)
    wall[0] += 200_000_000  # the first timestamp comes 0.5 s after the first line
    assert clock.at(100 * S) == 100 * S
    assert clock.settled and clock.uses_stream and shifts == [100 * S - wall[0]]
    assert (first + shifts[0], second + shifts[0]) == (100 * S - 500_000_000, 100 * S - 200_000_000)


def test_auto_dates_lines_in_the_stream_frame_of_a_near_timestamp():
    """A recording piped in a minute after it was made (or a CLI whose lines are stamped
    before they come): lines without a timestamp take the stream's newest time plus the wall
    time that passed since its line, not the wall clock itself."""
    wall, clock, shifts = _auto()
    first = clock.at(None)
    wall[0] += 400_000_000
    assert clock.at(None) == first + 400_000_000
    behind = wall[0] - 60 * S
    clock.observe(behind)  # the first timestamp, a minute behind the wall clock
    assert clock.settled and not clock.uses_stream and shifts == [-60 * S]
    assert first + shifts[0] == behind - 400_000_000  # pending lines: just before it, spaced
    assert clock.at(None) == behind
    wall[0] += 250_000_000
    assert clock.at(None) == behind + 250_000_000
    assert clock.at(behind + 5 * S) == behind + 5 * S  # a later timestamp (the CLI's clock)
    assert clock.at(None) == behind + 5 * S
    wall[0] += 1 * S
    assert clock.at(None) == behind + 6 * S and len(shifts) == 1


def test_wall_mode_never_waits_and_a_recording_without_timestamps_keeps_the_wall_clock():
    assert Clock("wall", wall=lambda: 7 * S).settled
    clock = Clock("stream", wall=lambda: 7 * S)
    clock.at(None)
    clock.settle()  # end of input, no timestamp ever
    assert clock.settled and not clock.uses_stream and clock.now() == 7 * S
