"""Between the source and stage 2: the stream's chunks (and the gaps where it was not seen) go to
one thread that splits lines, decodes, tracks, builds spans and fires the grace-window timers
(ARCHITECTURE.md: the source "must never wait on any later stage").

Two producers, one queue:

* **in process** (no ``fork``: :class:`otelbridge.pipeline.LiveFront` alone): the tee's thread
  :meth:`Handoff.offer` s a copy of each chunk it wrote and goes on; a chunk that does not fit in
  :data:`DEFAULT_LIMIT` bytes is skipped — :meth:`Handoff.gap` queues a
  :class:`~otelbridge.lines.Gap` (its size and newlines: counted in ``stats.lines_not_decoded``/
  ``bytes_not_decoded`` when applied) instead;
* **the decoding process** (:mod:`otelbridge.worker`): the reader thread :meth:`Handoff.put` s
  each chunk read from the tee's pipe and *waits* while the queue is full — the pipe then fills
  and the tee (in the other process) skips, never waits.

Why a thread of its own: a 50-agent ``task_progress`` snapshot costs ~2 ms to decode, track and
turn into spans; OTLP encoding holds the GIL for milliseconds (../shared/MEASURED.md). A stream
far faster than decoding (a recording piped in) is therefore traced in part, never slowed
(issue 5: "stdout keeps flowing with no added stall"); ``otelbridge replay`` decodes every line
of a recording. Skipping is tolerable because ``task_progress`` snapshots are authoritative
(seed 000 §6: snapshot replacement): the next snapshot decoded repairs a run whose earlier lines
were skipped.

Timers (``call_later``: grace windows) fire on the same thread as the chunks, so the tracker is
only ever touched by one thread.

The end is bounded (issue 5: exit within ``--flush-timeout`` + 1 s of the end of input): from the
*cut* (:meth:`Handoff.cut_at`, set by :meth:`otelbridge.pipeline.LiveFront.ending` at decoding's
share of ``--flush-timeout``) on, chunks are no longer applied but counted as not decoded — those
still queued are handed on as gaps, :meth:`Handoff.put` queues a gap instead of waiting — so the
thread reaches ``on_finish`` (every open span ended) and stops, and the counts are final before
they are printed.
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
from .lines import Gap, queue_gap
from .stats import Stats

log = logging.getLogger("otelbridge")

#: At most this long (seconds) the end of a run waits for the tracing set-up (imports, exporter
#: construction: no network) still running on the handoff's thread.
SETUP_TIMEOUT_S = 30.0

#: Bytes of chunks that may wait for the decoding thread (16 MiB).
DEFAULT_LIMIT = 16 * 1024 * 1024

#: Items the thread takes at once (their bytes are released, and timers run, after each batch).
BATCH = 4

#: Said once on stderr when the first :class:`Gap` is applied.
BEHIND_MESSAGE = (
    "decoding fell behind the stream; parts of it were skipped unread (counted as not decoded) "
    "— traces may be incomplete; for recordings use `otelbridge replay`"
)

Item = bytes | Gap


class Handoff:
    """A bounded queue of chunks and gaps plus timers, drained by one thread.

    ``start(on_item, on_finish)`` starts the thread, which calls ``on_item(item)`` for each
    chunk (``bytes``) and :class:`Gap` in order; :meth:`close` queues the end — the thread
    applies what is queued, then calls ``on_finish(reason)`` and ends. Exceptions from
    ``on_item`` and timers are logged and cost that item only.
    """

    def __init__(self, stats: Stats, limit: int = DEFAULT_LIMIT) -> None:
        self.stats = stats
        self.limit = limit
        self._cond = threading.Condition()
        self._items: deque[Item] = deque()
        self._bytes = 0
        self._timers: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._closing: tuple[str | None] | None = None
        #: ``time.monotonic()`` instant from which chunks are counted as not decoded (cut_at)
        self._cut = float("inf")
        self._thread: threading.Thread | None = None
        #: set once ``setup`` (see :meth:`start`) has returned or failed
        self.ready = threading.Event()

    def start(
        self,
        on_item: Callable[[Item], None],
        on_finish: Callable[[str | None], None],
        setup: Callable[[], None] | None = None,
        on_idle: Callable[[], None] | None = None,
    ) -> None:
        """Start the thread; it runs ``setup()`` (if any) before the first item, and
        ``on_idle()`` each time it is about to wait for items (the queue is empty)."""
        self._on_item = on_item
        self._on_finish = on_finish
        self._setup = setup
        self._on_idle = on_idle
        self._thread = threading.Thread(target=self._run, name="otelbridge-decode", daemon=True)
        self._thread.start()

    # -- the producers' side

    def _fits(self, size: int) -> bool:
        return not self._bytes or self._bytes + size <= self.limit

    def _append(self, item: Item, size: int) -> None:
        self._items.append(item)
        self._bytes += size
        if len(self._items) == 1:  # the thread only sleeps on an empty queue
            self._cond.notify()

    def offer(self, chunk: bytes) -> bool:
        """Queue ``chunk`` unless it would take the bytes queued or being applied past
        :attr:`limit` (a chunk always fits an empty queue). Never waits; False: not queued (the
        caller queues a :meth:`gap` instead)."""
        with self._cond:
            if not self._fits(len(chunk)):
                return False
            self._append(chunk, len(chunk))
            return True

    def put(self, chunk: bytes, timeout: float | None = None) -> bool:
        """Queue ``chunk``, waiting while it does not fit (the decoding process's reader) — at
        most ``timeout`` seconds (then False: not queued) and never past the cut
        (:meth:`cut_at`): from then on ``chunk`` is queued as a :class:`Gap`, at once."""
        with self._cond:
            until = None if timeout is None else time.monotonic() + timeout
            while not self._fits(len(chunk)) and self._closing is None:
                now = time.monotonic()
                if now >= self._cut:
                    break
                if until is not None and now >= until:
                    return False
                wait = min(self._cut, until if until is not None else float("inf")) - now
                self._cond.wait(wait if wait != float("inf") else None)
            if time.monotonic() >= self._cut:
                self._bytes -= queue_gap(self._items, Gap.of(chunk))
                if len(self._items) == 1:
                    self._cond.notify()
            else:
                self._append(chunk, len(chunk))
            return True

    def gap(self, gap: Gap) -> None:
        """Queue a part of the stream that was not seen (:func:`~otelbridge.lines.queue_gap`:
        queued chunks of the line it cuts join it)."""
        with self._cond:
            self._bytes -= queue_gap(self._items, gap)
            if len(self._items) == 1:
                self._cond.notify()

    def cut_at(self, when: float) -> None:
        """From ``when`` (``time.monotonic()``; an earlier cut stands) on, chunks are not
        applied: the thread hands each one still queued — and each :meth:`put` queues as one —
        to ``on_item`` as a :class:`Gap` (counted as not decoded, lines and bytes), so that the
        end (:meth:`close`) comes within a bounded time however far decoding is behind."""
        with self._cond:
            self._cut = min(self._cut, when)
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
            if self._on_idle is not None and not self._items and self._closing is None:
                try:  # outside the lock: it may write to a pipe
                    self._on_idle()
                except Exception as exc:
                    log.warning("idle hook failed: %s", exc)
            with self._cond:
                while not self._items and self._closing is None:
                    wait = self._next_wait()
                    if wait == 0.0:
                        break
                    self._cond.wait(wait)
                items = self._items
                batch = [items.popleft() for _ in range(min(len(items), BATCH))]
                closing = self._closing
            for item in batch:
                try:
                    if isinstance(item, bytes) and time.monotonic() >= self._cut:
                        self._on_item(Gap.of(item))  # past the cut: counted, not decoded
                    else:
                        self._on_item(item)
                except Exception as exc:  # a bug costs one item, never the thread
                    log.warning("chunk not applied: %s", exc)
                if isinstance(item, bytes):
                    with self._cond:  # a chunk's bytes count against the limit until applied
                        self._bytes -= len(item)
                        self._cond.notify_all()
            for timer in self._due():
                try:
                    timer.fn()
                except Exception as exc:
                    log.warning("timer failed: %s", exc)
            if closing is not None:
                with self._cond:
                    if self._items:
                        continue
                try:
                    self._on_finish(closing[0])
                except Exception as exc:
                    log.warning("closing spans failed: %s", exc)
                return
