"""When the stream's bytes passed the tee, for the decoding process: a line without a timestamp
of its own is dated by when it passed through, not by when decoding reached it (decoding pauses
at a trickle and falls behind in a burst).

:class:`Arrivals` is a ring of :data:`SLOTS` records in memory shared across the fork: the tee
writes ``(offset, ns)`` — the chunk starting at this byte of the data pipe passed at this epoch-ns
time — for a chunk at least :data:`RECORD_EVERY_NS` after the last record, always before the
chunk's bytes go into the data pipe, and counts every chunk. The decoding process reads the
records of the bytes it has read: the data pipe's write and read are system calls, which order
the record before the bytes for the reader. One writer, one reader; a reader more than the ring
behind dates the bytes whose records it lost when it decodes them.
"""

from __future__ import annotations

import mmap
import struct
import time

#: Records kept: at most one each :data:`RECORD_EVERY_NS`, so a reader can be this many times
#: 5 ms behind (20 s) and still date every line.
SLOTS = 4096
#: A chunk that passed within this long (5 ms, in ns) of the last record takes that record's time
#: (at most that much early): a stream of tiny writes fills the ring no faster than a slow one.
RECORD_EVERY_NS = 5_000_000
#: Chunks that passed within this long of a piece's first (10 ms, in ns) join that piece, dated
#: by the latest of them: a burst is decoded in a few pieces, not one per write.
MERGE_NS = 10_000_000
#: Far behind, the reader starts this many records short of the ring's length: room for the
#: writer to go on while it reads.
_SPARE = 64
_RECORD = struct.Struct("=QQ")  # data-pipe offset, epoch ns
_HEAD = struct.Struct("=QQ")  # records written, chunks passed


class Arrivals:
    """The shared ring (make it before the fork; both processes then hold it)."""

    __slots__ = ("_mem", "_written", "_chunks", "_last_ns", "_next", "_current")

    def __init__(self) -> None:
        self._mem = mmap.mmap(-1, _HEAD.size + SLOTS * _RECORD.size)  # shared, anonymous
        self._written = 0  # the writer's count of records
        self._chunks = 0  # the writer's count of chunks
        self._last_ns = -RECORD_EVERY_NS  # the writer's last record's time
        self._next = 0  # the reader's next record
        self._current: tuple[int, int | None] = (0, None)  # the reader's last record

    # -- the tee

    def passed(self, offset: int, ns: int | None = None) -> None:
        """The chunk starting at data-pipe byte ``offset`` passed the tee at ``ns`` (epoch ns;
        now). Call it before the chunk goes into the data pipe."""
        if ns is None:
            ns = time.time_ns()
        self._chunks += 1
        if ns - self._last_ns >= RECORD_EVERY_NS:
            i = self._written
            _RECORD.pack_into(self._mem, _HEAD.size + (i % SLOTS) * _RECORD.size, offset, ns)
            self._written, self._last_ns = i + 1, ns
        _HEAD.pack_into(self._mem, 0, self._written, self._chunks)

    # -- the decoding process

    def chunks(self) -> int:
        """Chunks the tee has passed so far (each takes at least one slot of the data pipe)."""
        return _HEAD.unpack_from(self._mem, 0)[1]

    def pieces(self, start: int, end: int) -> list[tuple[int, int | None]]:
        """The data-pipe bytes ``[start, end)``, read (so their records are written), as
        ``(piece end, ns)`` in order: the bytes of each piece passed at ``ns`` (epoch ns), at
        most :data:`MERGE_NS` before it or :data:`RECORD_EVERY_NS` after; ``None``: no record
        says when (before the first one, or lost to a reader more than the ring behind)."""
        mem = self._mem
        written = _HEAD.unpack_from(mem, 0)[0]
        oldest = max(self._next, written - SLOTS + _SPARE)  # older ones may be being overwritten
        if oldest > self._next:
            self._current = (start, None)
        records = []
        i = oldest
        while i < written:
            offset, ns = _RECORD.unpack_from(mem, _HEAD.size + (i % SLOTS) * _RECORD.size)
            if offset >= end:  # a later read's
                break
            records.append((offset, ns))
            i += 1
        if _HEAD.unpack_from(mem, 0)[0] - oldest >= SLOTS:  # overwritten while read
            records, self._current = [], (start, None)
        self._next = i
        out: list[tuple[int, int | None]] = []
        at, ns = self._current
        began = ns  # when the current piece's first chunk passed
        for offset, next_ns in records:
            if offset <= start or offset <= at:  # the piece's own record (or one taken again)
                ns = began = next_ns
            elif ns is not None and next_ns is not None and next_ns - began <= MERGE_NS:
                ns = next_ns  # the same piece, dated by its latest chunk
            else:
                out.append((offset, ns))
                ns = began = next_ns
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
