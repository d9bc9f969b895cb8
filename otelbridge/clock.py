"""The clock that dates lines without a timestamp of their own (SPAN-MODEL.md, "Time").

Modes (``--clock``):

* ``wall`` — the wall clock at arrival (``time.time_ns()``).
* ``stream`` — the *stream clock*: the latest epoch-ns timestamp the stream has shown; before the
  stream has shown any, the wall clock.
* ``auto`` (default live) — ``wall`` until the newest timestamp the stream shows lies more than
  :data:`SKEW_NS` away from the wall clock (a recording piped in), then ``stream`` for the rest of
  the run (the switch is one-way, so one run never mixes the two).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: How far the stream's newest timestamp may lie from the wall clock before ``auto`` switches to
#: the stream clock: 5 minutes, in ns.
SKEW_NS = 5 * 60 * 1_000_000_000

MODES = ("auto", "wall", "stream")


class Clock:
    """Epoch-ns time source for the tracker. Not thread-safe; lives on the event loop."""

    __slots__ = ("mode", "_wall", "_latest", "_use_stream")

    def __init__(self, mode: str = "auto", wall: Callable[[], int] = time.time_ns) -> None:
        if mode not in MODES:
            raise ValueError(f"clock mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self._wall = wall
        self._latest: int | None = None
        self._use_stream = mode == "stream"

    @property
    def uses_stream(self) -> bool:
        """True when times come from the stream clock: mode ``stream`` (or ``auto`` switched)
        and the stream has shown a timestamp. Until then even ``stream`` answers with the wall
        clock, so a part that took times before the first timestamp sees the switch happen."""
        return self._use_stream and self._latest is not None

    @property
    def latest(self) -> int | None:
        """The newest timestamp the stream has shown (epoch ns), or ``None``."""
        return self._latest

    def observe(self, ns: int | None) -> None:
        """Feed one timestamp the stream showed (epoch ns). ``None`` is ignored."""
        if ns is None:
            return
        if self._latest is None or ns > self._latest:
            self._latest = ns
            if self.mode == "auto" and not self._use_stream and abs(ns - self._wall()) > SKEW_NS:
                self._use_stream = True

    def wall(self) -> int:
        """The wall clock (epoch ns), whatever the mode."""
        return self._wall()

    def now(self) -> int:
        """The current time (epoch ns) by the mode's rule."""
        if self._use_stream and self._latest is not None:
            return self._latest
        return self._wall()

    def at(self, own_ns: int | None) -> int:
        """A line's time: its own timestamp when it has one (also observed), else :meth:`now`."""
        if own_ns is not None:
            self.observe(own_ns)
            return own_ns
        return self.now()


class Timer:
    """What a ``call_later`` returns (:class:`StreamTimers`, ``handoff.Handoff``):
    ``cancel()`` it before it fires to skip it."""

    __slots__ = ("fn", "cancelled")

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class StreamTimers:
    """``call_later`` in *stream* time, for ``replay``: a callback scheduled ``delay_s`` after the
    stream clock's newest time runs once the stream has shown a time at least that late
    (:meth:`run_due`, called after each line), or at :meth:`run_all` (end of the file). So a grace
    window after ``task_notification`` lasts ``--grace-period`` seconds of the stream's own time,
    late progress within it still lands, and a long recording never holds every run open.
    """

    __slots__ = ("clock", "_heap", "_seq")

    Handle = Timer

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[tuple[int, int, StreamTimers.Handle]] = []
        self._seq = 0

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> "StreamTimers.Handle":
        """Run ``fn`` when the stream clock reaches its newest time + ``delay_s`` (seconds)."""
        import heapq

        handle = StreamTimers.Handle(fn)
        due = (self.clock.latest or 0) + int(delay_s * 1_000_000_000)
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, handle))
        return handle

    def run_due(self) -> None:
        """Run every callback whose time the stream clock has reached."""
        if not self._heap:
            return
        import heapq

        latest = self.clock.latest
        while self._heap and latest is not None and self._heap[0][0] <= latest:
            _, _, handle = heapq.heappop(self._heap)
            if not handle.cancelled:
                handle.fn()

    def run_all(self) -> None:
        """End of the stream: run every pending callback, earliest first."""
        import heapq

        while self._heap:
            _, _, handle = heapq.heappop(self._heap)
            if not handle.cancelled:
                handle.fn()
