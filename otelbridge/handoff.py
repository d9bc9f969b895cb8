"""Between stage 2 and stage 3: the tee hands marked lines over and goes on; decoding, tracking,
span building and export run on one thread of their own (ARCHITECTURE.md: the source "must never
wait on any later stage").

Why: a 50-agent ``task_progress`` snapshot costs ~2 ms to decode, track and turn into spans; done
inline, the next line of the stream waits that long (bench/RESULTS.md, latency p99). On its own
thread it costs the tee at most one GIL switch interval (``app.SWITCH_INTERVAL_S``).

Bounded, and the tee never waits: at most :data:`DEFAULT_LIMIT` bytes of lines wait; a line
that does not fit is **not decoded** — :meth:`Handoff.put` counts it
(``stats.lines_not_decoded``/``bytes_not_decoded``), says so once on stderr and returns at once.
A stream far faster than decoding (a recording piped in) is therefore traced in part, never
slowed (issue 5: "stdout keeps flowing with no added stall"); ``otelbridge replay`` decodes
every line of a recording. Skipping is tolerable because ``task_progress`` snapshots are
authoritative (seed 000 §6: snapshot replacement): the next snapshot decoded repairs a run whose
earlier lines were skipped. The decoding thread alone may be slowed (paced by the exporters).

Timers (``call_later``: grace windows) fire on the same thread as the lines, so the tracker is
only ever touched by one thread.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from .clock import Timer
from .stats import Stats

log = logging.getLogger("otelbridge")

#: Bytes of lines that may wait for the decoding thread; lines beyond are not decoded (16 MiB).
DEFAULT_LIMIT = 16 * 1024 * 1024

#: The stderr line said the first time a line is not decoded (``{n}``: lines so far).
#: Lines the thread takes at once (their bytes are released, and timers run, after each batch).
BATCH = 256

BEHIND_MESSAGE = (
    "decoding fell behind the stream; {n} lines not decoded so far — traces may be incomplete; "
    "for recordings use `otelbridge replay`"
)


class Handoff:
    """A bounded line queue plus timers, drained by one thread.

    ``start(on_line, on_finish)`` starts the thread; :meth:`put` (the tee's thread) queues one
    line, or counts it in ``stats`` when :attr:`limit` bytes would be exceeded (``warn(text)``
    is called once then: one stderr line); :meth:`close` queues the end — the thread applies
    what is queued, then calls ``on_finish(reason)`` and ends. Exceptions from ``on_line`` and
    timers are logged and cost that line only.
    """

    def __init__(
        self,
        stats: Stats,
        limit: int = DEFAULT_LIMIT,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.stats = stats
        self.limit = limit
        self._warn = warn
        self._warned = False
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
        """Queue one line, never waiting. A line that would take the bytes queued or being
        applied past :attr:`limit` (unless there are none) is not queued: it is counted in
        ``stats.lines_not_decoded`` and ``stats.bytes_not_decoded``."""
        with self._cond:
            if self._bytes and self._bytes + len(line) > self.limit:
                self.stats.lines_not_decoded += 1
                self.stats.bytes_not_decoded += len(line)
                warn = not self._warned
                self._warned = True
            else:
                self._lines.append(line)
                self._bytes += len(line)
                if len(self._lines) == 1:  # the thread only sleeps on an empty queue
                    self._cond.notify()
                return
        if warn and self._warn is not None:
            self._warn(BEHIND_MESSAGE.format(n=self.stats.lines_not_decoded))

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
                lines = self._lines
                batch = [lines.popleft() for _ in range(min(len(lines), BATCH))]
                closing = self._closing
            size = 0
            for line in batch:
                size += len(line)
                try:
                    self._on_line(line)
                except Exception as exc:  # a bug costs one line, never the thread
                    log.warning("line not applied: %s", exc)
            if size:
                with self._cond:  # a line's bytes count against the limit until it is applied
                    self._bytes -= size
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
