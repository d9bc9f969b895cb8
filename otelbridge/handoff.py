"""Between stage 2 and stage 3: the tee hands marked lines over and goes on; decoding, tracking,
span building and export run on one thread of their own (ARCHITECTURE.md: the source "must never
wait on any later stage").

Why: a 50-agent ``task_progress`` snapshot costs ~2 ms to decode, track and turn into spans; done
inline, the next line of the stream waits that long (bench/RESULTS.md, latency p99). On its own
thread it costs the tee at most one GIL switch interval (``app.SWITCH_INTERVAL_S``).

Bounded: at most :data:`DEFAULT_LIMIT` bytes of lines wait; beyond that :meth:`Handoff.put`
waits (back-pressure — a stream far faster than decoding, such as a recording piped in, is slowed
to decoding speed rather than losing spans). Timers (``call_later``: grace windows) fire on the
same thread as the lines, so the tracker is only ever touched by one thread.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger("otelbridge")

#: Bytes of lines that may wait for the decoding thread before the tee waits for it (2 MiB).
DEFAULT_LIMIT = 2 * 1024 * 1024


class Timer:
    """What :meth:`Handoff.call_later` returns: ``cancel()`` it before it fires to skip it."""

    __slots__ = ("fn", "cancelled")

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Handoff:
    """A bounded line queue plus timers, drained by one thread.

    ``start(on_line, on_finish)`` starts the thread; :meth:`put` (the tee's thread) queues one
    line; :meth:`close` queues the end — the thread applies what is queued, then calls
    ``on_finish(reason)`` and ends. Exceptions from ``on_line`` and timers are logged and cost
    that line only.
    """

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._cond = threading.Condition()
        self._lines: deque[bytes] = deque()
        self._bytes = 0
        self._timers: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._closing: tuple[str | None] | None = None
        self._thread: threading.Thread | None = None
        #: set once ``setup`` (see :meth:`start`) has returned or failed
        self.ready = threading.Event()

    def start(
        self,
        on_line: Callable[[bytes], None],
        on_finish: Callable[[str | None], None],
        setup: Callable[[], None] | None = None,
    ) -> None:
        """Start the thread; it runs ``setup()`` (if any) before the first line."""
        self._on_line = on_line
        self._on_finish = on_finish
        self._setup = setup
        self._thread = threading.Thread(target=self._run, name="otelbridge-decode", daemon=True)
        self._thread.start()

    # -- the tee's side

    def put(self, line: bytes) -> None:
        """Queue one line; waits while :attr:`limit` bytes are already waiting."""
        with self._cond:
            while self._bytes >= self.limit and self._closing is None:
                self._cond.wait(0.05)
            self._lines.append(line)
            self._bytes += len(line)
            self._cond.notify_all()

    def close(self, reason: str | None = None, timeout: float | None = None) -> bool:
        """End: apply what waits, then ``on_finish(reason)``. Returns False if the thread had
        not finished within ``timeout`` seconds."""
        with self._cond:
            if self._closing is None:
                self._closing = (reason,)
            self._cond.notify_all()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the decoding thread's side

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> Timer:
        """Run ``fn`` on the decoding thread after ``delay_s`` seconds (unless cancelled)."""
        timer = Timer(fn)
        with self._cond:
            heapq.heappush(self._timers, (time.monotonic() + delay_s, next(self._seq), timer))
            self._cond.notify_all()
        return timer

    def _next_wait(self) -> float | None:
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if not self._timers:
            return None
        return max(0.0, self._timers[0][0] - time.monotonic())

    def _due(self) -> list[Timer]:
        now = time.monotonic()
        due = []
        with self._cond:
            while self._timers and self._timers[0][0] <= now:
                timer = heapq.heappop(self._timers)[2]
                if not timer.cancelled:
                    due.append(timer)
        return due

    def _run(self) -> None:
        if self._setup is not None:
            try:
                self._setup()
            except Exception as exc:
                log.warning("cannot set up tracing, passing the stream through only: %s", exc)
        self.ready.set()
        while True:
            with self._cond:
                while not self._lines and self._closing is None:
                    wait = self._next_wait()
                    if wait == 0.0:
                        break
                    self._cond.wait(wait)
                batch = list(self._lines)
                self._lines.clear()
                self._bytes = 0
                closing = self._closing
                self._cond.notify_all()
            for line in batch:
                try:
                    self._on_line(line)
                except Exception as exc:  # a bug costs one line, never the thread
                    log.warning("line not applied: %s", exc)
            for timer in self._due():
                try:
                    timer.fn()
                except Exception as exc:
                    log.warning("timer failed: %s", exc)
            if closing is not None:
                with self._cond:
                    if self._lines:
                        continue
                try:
                    self._on_finish(closing[0])
                except Exception as exc:
                    log.warning("closing spans failed: %s", exc)
                return
