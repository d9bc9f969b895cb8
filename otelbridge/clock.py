"""The clock that dates lines without a timestamp of their own (docs/span-model.md, "Time").

Modes (``--clock``):

* ``wall`` — the wall clock at arrival (``time.time_ns()``).
* ``stream`` — the *stream clock*: the latest epoch-ns time the stream has shown (line
  timestamps and the event times lines report, fed to :meth:`Clock.observe`).
* ``auto`` (default live) — the wall clock until the stream shows a time; then the stream's
  newest time plus the wall time that passed since the line that showed it, so that lines
  without a timestamp lie in the stream's frame (a live CLI's timestamps are its arrival times;
  a recording piped in a minute after it was made is dated by its own). When that newest time
  lies more than :data:`SKEW_NS` away from the wall clock (a recording piped in), ``stream``
  for the rest of the run (the switch is one-way, so one run never mixes the two).

Before the stream's first timestamp the clock is *pending* in ``stream`` and ``auto`` mode, and
the clock settles (:meth:`settled`) at the first timestamp, when ``auto`` has waited :data:`WAIT_NS` of wall
time since the first line (the *anchor*), or at :meth:`settle` (end of input: a stream with no
timestamp at all keeps the wall clock). Whoever took times while it was pending is told a shift
(``on_settle``) and moves them by it:

* ``stream`` dates every pending line with the anchor; the shift (first timestamp − anchor) moves
  them all to the first timestamp.
* ``auto`` dates each pending line with the wall clock; the shift (first timestamp − the wall
  clock when it came) moves them into the stream's frame, just before it, spaced as they came.
  When ``auto`` settled on the wall clock before any timestamp came (the wait ran out), the
  first time the stream shows tells ``on_settle`` that shift once more: the runs still open
  move with it (spans already ended keep their wall-clock times).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

#: How far the stream's newest timestamp may lie from the wall clock before ``auto`` switches to
#: the stream clock: 5 minutes, in ns.
SKEW_NS = 5 * 60 * 1_000_000_000
#: How long live ``auto`` waits, after the first line, for a timestamp before it settles on the
#: wall clock: 1 s, in ns.
WAIT_NS = 1_000_000_000

MODES = ("auto", "wall", "stream")


class Clock:
    """Epoch-ns time source for the tracker. Not thread-safe; lives on the event loop.

    ``on_settle`` holds callables run once, with the shift in ns (first timestamp − anchor when
    the clock settles on the stream, else 0), at the moment the clock settles: before the line
    that settled it is dated.
    """

    __slots__ = ("mode", "_wall", "_latest", "_latest_wall", "_use_stream", "_anchor", "_settled",
                 "on_settle")

    def __init__(self, mode: str = "auto", wall: Callable[[], int] = time.time_ns) -> None:
        if mode not in MODES:
            raise ValueError(f"clock mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self._wall = wall
        self._latest: int | None = None
        #: the wall clock when the line that showed ``_latest`` came
        self._latest_wall = 0
        self._use_stream = False
        self._anchor: int | None = None
        self._settled = mode == "wall"
        self.on_settle: list[Callable[[int], None]] = []

    @property
    def settled(self) -> bool:
        """False while lines are dated from the anchor, waiting for the first timestamp."""
        if not self._settled and self.mode == "auto" and self._anchor is not None \
                and self._wall() - self._anchor >= WAIT_NS:
            self._settle(0)
        return self._settled

    def wait_left_s(self) -> float | None:
        """Seconds until a pending ``auto`` clock's wait for a timestamp runs out (``None``: it
        waits for nothing: settled, another mode, or no line dated yet)."""
        if self._settled or self.mode != "auto" or self._anchor is None:
            return None
        return max(0, WAIT_NS - (self._wall() - self._anchor)) / 1e9

    @property
    def uses_stream(self) -> bool:
        """True when times come from the stream clock (mode ``stream``, or ``auto`` switched)."""
        return self._use_stream

    @property
    def latest(self) -> int | None:
        """The newest time the stream has shown (epoch ns), or ``None``."""
        return self._latest

    def observe(self, ns: int | None) -> None:
        """Feed one time the stream showed (epoch ns). ``None`` is ignored."""
        if ns is None:
            return
        first = self._latest is None
        if not first and ns <= self._latest:
            return
        wall = self._wall()
        self._latest, self._latest_wall = ns, wall
        if self._use_stream:
            return
        far = abs(ns - wall) > SKEW_NS
        if not self.settled:  # (reading it settles auto whose wait ran out)
            self._use_stream = self.mode == "stream" or far
            if self._anchor is None:
                self._settle(0)
            else:
                self._settle(ns - (self._anchor if self.mode == "stream" else wall))
            return
        if self.mode == "stream" or (self.mode == "auto" and far):
            self._use_stream = True
        if first and self.mode == "auto" and ns != wall:
            # settled on the wall clock by the wait: the runs still open move into the
            # stream's frame, as pending lines do when it settles on a timestamp
            for fn in self.on_settle:
                fn(ns - wall)

    def settle(self) -> None:
        """End of input (or no more waiting): a clock still pending settles on the wall clock."""
        if not self._settled:
            self._settle(0)

    def _settle(self, shift: int) -> None:
        self._settled = True
        for fn in self.on_settle:
            fn(shift)

    def wall(self) -> int:
        """The wall clock (epoch ns), whatever the mode."""
        return self._wall()

    def now(self) -> int:
        """The current time (epoch ns) by the mode's rule; ``stream`` while pending: the anchor;
        ``auto`` once the stream showed a time: that time plus the wall time since its line."""
        if self._use_stream and self._latest is not None:
            return self._latest
        if self.mode == "stream" and not self._settled and self._anchor is not None:
            return self._anchor
        wall = self._wall()
        if self.mode == "auto" and self._latest is not None:
            return self._latest + max(0, wall - self._latest_wall)
        return wall

    def at(self, own_ns: int | None) -> int:
        """A line's time: its own timestamp when it has one (also observed), else :meth:`now`
        (the first line without one sets the anchor while the clock is pending)."""
        if own_ns is not None:
            self.observe(own_ns)
            return own_ns
        if self._anchor is None and not self._settled:
            self._anchor = self._wall()
        return self.now()


class Timer:
    """What :meth:`StreamTimers.call_later` returns: ``cancel()`` it before it fires to skip
    it."""

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

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[tuple[int, int, Timer]] = []
        self._seq = 0

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> Timer:
        """Run ``fn`` when the stream clock reaches its newest time + ``delay_s`` (seconds)."""
        handle = Timer(fn)
        due = (self.clock.latest or 0) + int(delay_s * 1_000_000_000)
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, handle))
        return handle

    @property
    def pending(self) -> bool:
        """Whether a callback waits to run."""
        return bool(self._heap)

    def run_due(self, upto: int | None = None) -> None:
        """Run every callback whose time the stream clock, or ``upto`` (epoch ns: a line's own
        time, before the line is applied) when later, has reached."""
        if not self._heap:
            return
        latest = self.clock.latest
        if upto is not None and (latest is None or upto > latest):
            latest = upto
        while self._heap and latest is not None and self._heap[0][0] <= latest:
            _, _, handle = heapq.heappop(self._heap)
            if not handle.cancelled:
                handle.fn()

    def run_all(self) -> None:
        """End of the stream: run every pending callback, earliest first."""
        while self._heap:
            _, _, handle = heapq.heappop(self._heap)
            if not handle.cancelled:
                handle.fn()
