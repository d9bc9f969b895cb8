"""clock.StreamTimers: call_later in stream time (replay's grace windows)."""

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
