"""When the stream's bytes passed the tee, for the decoding process: a line without a timestamp
of its own is dated by when it passed through, not by when decoding reached it (decoding pauses
at a trickle and falls behind in a burst).

:class:`Arrivals` is a ring of :data:`SLOTS` records in memory shared across the fork: the tee
writes one per chunk, ``(offset, ns)`` — the chunk starts at this byte of the data pipe and
passed at this epoch-ns time — always before the chunk's bytes go into the data pipe. The
decoding process reads the records of the bytes it has read: the data pipe's write and read are
system calls, which order the record before the bytes for the reader. One writer, one reader;
a reader more than half the ring behind skips to the newer half (the writer may be overwriting
the older), and the bytes it skipped records of are dated when decoded.
"""

from __future__ import annotations

import mmap
import struct
import time

#: Records kept: a reader more than half of them behind loses the oldest.
SLOTS = 4096
#: Chunks that passed within this long of a piece's first (10 ms, in ns) join that piece, dated
#: by the latest of them: a burst is decoded in a few pieces, not one per write.
MERGE_NS = 10_000_000
_RECORD = struct.Struct("=QQ")  # data-pipe offset, epoch ns
_COUNT = struct.Struct("=Q")  # records written so far, at the head


class Arrivals:
    """The shared ring (make it before the fork; both processes then hold it)."""

    __slots__ = ("_mem", "_written", "_next", "_current")

    def __init__(self) -> None:
        self._mem = mmap.mmap(-1, _COUNT.size + SLOTS * _RECORD.size)  # shared, anonymous
        self._written = 0  # the writer's count
        self._next = 0  # the reader's next record
        self._current: tuple[int, int | None] = (0, None)  # the reader's last record

    # -- the tee

    def passed(self, offset: int, ns: int | None = None) -> None:
        """The chunk starting at data-pipe byte ``offset`` passed the tee at ``ns`` (epoch ns;
        now). Call it before the chunk goes into the data pipe."""
        i = self._written
        _RECORD.pack_into(self._mem, _COUNT.size + (i % SLOTS) * _RECORD.size,
                          offset, time.time_ns() if ns is None else ns)
        self._written = i + 1
        _COUNT.pack_into(self._mem, 0, i + 1)

    # -- the decoding process

    def pieces(self, start: int, end: int) -> list[tuple[int, int | None]]:
        """The data-pipe bytes ``[start, end)``, read (so their records are written), as
        ``(piece end, ns)`` in order: the bytes of each piece passed at ``ns`` (epoch ns) or at
        most :data:`MERGE_NS` before it; ``None``: no record says when (before the first one,
        or lost to a reader far behind)."""
        mem, first = self._mem, self._next
        written = _COUNT.unpack_from(mem, 0)[0]
        if written - first > SLOTS // 2:  # far behind: the oldest may be being overwritten
            first = written - SLOTS // 2
            self._current = (start, None)
        records = []
        i = first
        while i < written:
            offset, ns = _RECORD.unpack_from(mem, _COUNT.size + (i % SLOTS) * _RECORD.size)
            if offset >= end:  # a later read's
                break
            records.append((offset, ns))
            i += 1
        if _COUNT.unpack_from(mem, 0)[0] - first >= SLOTS:  # overwritten while read
            records, self._current = [], (start, None)
        self._next = i
        out: list[tuple[int, int | None]] = []
        at, ns = self._current
        first = ns  # when the current piece's first chunk passed
        for offset, next_ns in records:
            if offset <= start or offset <= at:  # the piece's own record (or one taken again)
                ns = first = next_ns
            elif ns is not None and next_ns is not None and next_ns - first <= MERGE_NS:
                ns = next_ns  # the same piece, dated by its latest chunk
            else:
                out.append((offset, ns))
                ns = first = next_ns
            at = max(offset, at)
        self._current = (at, ns)
        out.append((end, ns))
        return out


class ArrivalClock:
    """The decoding process's wall clock (epoch ns): when the bytes being decoded passed the tee
    (:attr:`at`, set around each piece), else now (timers, the end)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: int | None = None

    def __call__(self) -> int:
        at = self.at
        return time.time_ns() if at is None else at
