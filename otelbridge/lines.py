"""Stage 2: chunks → the complete lines some dialect may want, off the passthrough path.

The source hands each chunk *after* writing it to stdout. :class:`LineSplitter` never copies a
chunk whole and never splits every line: it searches the chunk for the dialects' *markers*
(substrings such as ``task_progress`` — value words, so they match whatever whitespace the writer
put around ``:`` and ``,``) and cuts out only the lines that contain one. The search is one
pass for all markers with Hyperscan (the ``hyperscan`` package, SIMD multi-literal matching,
where it is installed: :class:`HyperscanScanner`), else one ``bytearray.find`` pass per marker
(:class:`FindScanner`); both offer exactly the same lines. Lines that span chunks are buffered up
to ``max_line`` bytes; a longer line is counted as overlong and skipped by the decoder (it was
already passed through in full).
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterable
from typing import NamedTuple

from .literals import literal_database
from .stats import Stats

try:  # optional: wheels for Linux x86-64 (pyproject.toml); the find scanner does the same work
    import hyperscan
except ImportError:  # pragma: no cover - depends on the platform
    hyperscan = None

from .config import DEFAULT_MAX_LINE  # noqa: E402

_NL = b"\n"
#: Average line lengths (bytes) at which :func:`count_lines` changes how it counts: ``bytes.count``
#: below the first, ``BytesIO.readlines`` up to the second, a ``find`` a line above it (measured
#: in a replay: ``readlines`` 3× faster than ``count`` at the ~400-byte lines of a stream-json
#: stream; ``find`` overtakes it at ~2 KB, and takes 3 ms where it took 118 ms on 86 MB of
#: ~19 KB workflow snapshots: ``readlines`` copies every line it finds).
LONG_LINE_BYTES = 128
VERY_LONG_LINE_BYTES = 2048


def count_lines(buf: bytes | bytearray, n: int, average: int) -> int:
    """The ``\n`` in ``buf[:n]``, counted the way that is fastest where lines are ``average``
    bytes long (the previous chunk's). ``bytes.count`` tests every byte (~8 instructions a
    byte); ``BytesIO.readlines`` and ``find`` jump from one to the next with ``memchr``, at the
    cost of a copy of each line (``readlines``) or a Python step a line (``find``)."""
    if average < LONG_LINE_BYTES:
        return buf.count(_NL, 0, n)
    if average < VERY_LONG_LINE_BYTES:
        with memoryview(buf) as view, view[:n] as part:  # released: the tee reuses its buffer
            lines = io.BytesIO(part).readlines()
        return len(lines) - (1 if lines and lines[-1][-1:] != _NL else 0)
    count, find = 0, buf.find
    at = find(_NL, 0, n)
    while at >= 0:
        count += 1
        at = find(_NL, at + 1, n)
    return count


class Gap(NamedTuple):
    """A part of the stream that was passed through but not handed to decoding (the decoding side
    was behind: ``source/feed.py``): ``nbytes`` bytes holding ``newlines`` ``\\n``,
    the last of them its final byte when ``ends_with_newline``. (A ``NamedTuple``: immutable,
    and made far faster at import than a dataclass.)"""

    nbytes: int
    newlines: int
    ends_with_newline: bool

    @classmethod
    def of(cls, buf: bytes | bytearray, start: int = 0, end: int | None = None) -> "Gap":
        """The gap that skipping ``buf[start:end]`` makes."""
        end = len(buf) if end is None else end
        if end <= start:
            return cls(0, 0, False)
        return cls(end - start, buf.count(_NL, start, end), buf[end - 1] == 10)


def queue_gap(queue: "deque[bytes | memoryview | Gap]", gap: Gap) -> int:
    """Append ``gap`` to a queue of chunks and gaps waiting for decoding. The chunks at its tail
    that hold no newline lie inside the line the gap cuts — never decoded — so they join the gap
    (their room is freed), and a gap already at the tail absorbs the new one. Returns the bytes
    of chunks taken into the gap."""
    freed = 0
    while queue and not isinstance(queue[-1], Gap) and _NL not in bytes(queue[-1]):
        freed += len(queue.pop())
    if freed:
        gap = Gap(freed + gap.nbytes, gap.newlines, gap.ends_with_newline if gap.nbytes else False)
    last = queue[-1] if queue else None
    if isinstance(last, Gap):
        queue[-1] = Gap(last.nbytes + gap.nbytes, last.newlines + gap.newlines,
                        gap.ends_with_newline if gap.nbytes else last.ends_with_newline)
    else:
        queue.append(gap)
    return freed


class LinePosition:
    """A producer's idea of where it is in the stream's lines, from the chunks it sees (the tee
    sees only those it passes by hand): :meth:`undecodable` tells a chunk that lies wholly inside
    a line decoding will drop anyway — one already longer than ``max_line``, or one a
    :class:`Gap` has cut — so that it is skipped at once instead of taking buffer room from the
    whole lines after it."""

    __slots__ = ("max_line", "run", "cut")

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.run = 0  # bytes since the last newline seen
        self.cut = False  # the current line was cut by a gap

    def undecodable(self, buf: bytes | bytearray, n: int) -> bool:
        """Account ``buf[:n]``; True when it holds no newline and its line cannot be decoded."""
        last = buf.rfind(_NL, 0, n)
        if last >= 0:
            self.run, self.cut = n - last - 1, False
            return False
        self.run += n
        return self.cut or self.run - n > self.max_line

    def unseen(self) -> None:
        """Bytes went by unseen (``tee(2)``): a line may start anywhere in them."""
        self.run, self.cut = 0, False

    def skipped(self, gap: Gap) -> None:
        """``gap`` was skipped: the line after it is cut unless the gap ended one."""
        if gap.nbytes:
            self.cut = gap.newlines == 0 or not gap.ends_with_newline


class FindScanner:
    """The marked lines of a chunk by ``bytearray.find``: one scan of the chunk per marker."""

    def __init__(self, markers: tuple[bytes, ...]) -> None:
        self._markers = markers

    def lines(self, buf: bytes | bytearray, start: int, last: int) -> list[tuple[int, int]]:
        """``(line_start, line_end)`` (``buf[line_end]`` is its ``\\n``) of every line of
        ``buf[start:last+1]`` (which ends in ``\\n``) containing a marker, in order."""
        found: dict[int, int] = {}
        for marker in self._markers:
            pos = buf.find(marker, start, last)
            while pos >= 0:
                line_start = buf.rfind(_NL, start, pos) + 1 or start
                line_end = buf.find(_NL, pos, last + 1)
                found[line_start] = line_end
                pos = buf.find(marker, line_end + 1, last)
        return sorted(found.items()) if len(found) > 1 else list(found.items())


class HyperscanScanner:
    """The marked lines of a chunk by Hyperscan: one pass for all markers. Each match on a new
    line records that line; a second match on a line already recorded halts the scan, which
    resumes after that line (so a line full of markers costs two matches, not one per marker)."""

    def __init__(self, markers: tuple[bytes, ...]) -> None:
        self._db = literal_database(markers)
        # per scan: the buffer, where the scanned part starts, its last byte, the lines found
        self._buf: bytes | bytearray = b""
        self._base = self._first = self._last = 0
        self._found: list[tuple[int, int]] = []
        self._line_end = -1

    def _on_match(self, _id: int, _from: int, to: int, _flags: int, _ctx: object) -> bool:
        end = self._base + to  # just past the marker (a marker holds no newline)
        if end <= self._line_end:
            return True  # a line already found: stop, resume after it
        buf = self._buf
        line_end = buf.find(_NL, end - 1, self._last + 1)
        self._found.append((buf.rfind(_NL, self._first, end) + 1 or self._first, line_end))
        self._line_end = line_end
        return False

    def lines(self, buf: bytes | bytearray, start: int, last: int) -> list[tuple[int, int]]:
        """As :meth:`FindScanner.lines`."""
        found: list[tuple[int, int]] = []
        self._buf, self._first, self._last, self._found, self._line_end = buf, start, last, found, -1
        view = memoryview(buf)
        try:
            pos = start
            while pos < last:
                self._base = pos
                part = view[pos:last]
                try:
                    self._db.scan(part, match_event_handler=self._on_match)
                    break
                except hyperscan.ScanTerminated:
                    pos = self._line_end + 1
                finally:
                    part.release()
        finally:
            view.release()  # the tee reuses (and may resize) its buffer
            self._buf = b""
        return found


def make_scanner(markers: tuple[bytes, ...]) -> FindScanner | HyperscanScanner:
    """Hyperscan when it is installed and takes the markers (it needs SSSE3 or NEON; the
    markers no NUL byte), else ``find``."""
    if hyperscan is not None and markers and not any(_NL in m or b"\0" in m for m in markers):
        try:
            return HyperscanScanner(markers)
        except hyperscan.error:  # pragma: no cover - a CPU it does not run on
            pass
    return FindScanner(markers)


class LineSplitter:
    """Feeds ``on_line(line)`` with every complete line (without its ``\\n``) that contains at
    least one of ``markers``, in stream order. Counts every line in ``stats.lines``.

    ``feed(buf, n)`` reads ``buf[0:n]`` (``bytes`` or ``bytearray``; it is not kept), ``close()``
    handles a final line without a trailing newline. While ``on_line`` runs, :attr:`at` is
    the line's first byte's offset in the input (``fed`` before this splitter, then the bytes
    fed and gaps).
    """

    __slots__ = ("_markers", "_max", "_on_line", "_stats", "_pending", "_overlong", "_broken",
                 "_scanner", "_line_bytes", "fed", "at")

    def __init__(
        self,
        markers: Iterable[bytes],
        on_line: Callable[[bytes], None],
        stats: Stats,
        max_line: int = DEFAULT_MAX_LINE,
        fed: int = 0,
    ) -> None:
        self._markers = tuple(dict.fromkeys(m for m in markers if m))
        self._scanner = make_scanner(self._markers)
        self._max = max_line
        self._on_line = on_line
        self._stats = stats
        self._pending = bytearray()
        self._overlong = False
        #: bytes so far of a line cut by a :class:`Gap` (``None``: the current line is whole)
        self._broken: int | None = None
        #: the last chunk's average line length, bytes (how :func:`count_lines` counts the next)
        self._line_bytes = 0
        #: input bytes taken so far (while a chunk is read: before it)
        self.fed = fed
        self.at = 0

    def feed(self, buf: bytes | bytearray, n: int) -> None:
        """Take ``buf[0:n]``: count its lines and offer the complete, marked ones."""
        first = buf.find(_NL, 0, n)
        if first < 0:
            self._hold(buf, 0, n)
            self.fed += n
            return
        lines = count_lines(buf, n, self._line_bytes)
        self._line_bytes = n // lines  # (a newline was found above: lines >= 1)
        self._stats.lines += lines
        start = 0
        if self._pending or self._overlong or self._broken is not None:
            self._hold(buf, 0, first)
            self.at = self.fed + first - len(self._pending)
            self._finish_pending()
            start = first + 1
        last = buf.rfind(_NL, start, n)
        if last >= start:
            self._scan(buf, start, last)
            start = last + 1
        if start < n:
            self._hold(buf, start, n)
        self.fed += n

    def close(self) -> None:
        """End of input: a last line without ``\\n`` is still a line."""
        if self._pending or self._overlong or self._broken is not None:
            self._stats.lines += 1
            self.at = self.fed - len(self._pending)
            self._finish_pending()

    def gap(self, gap: Gap) -> None:
        """The stream went on with ``gap`` here, unseen: every line it touches is counted in
        ``stats.lines`` and, once, in ``stats.lines_not_decoded``/``bytes_not_decoded`` (their
        bytes without the ``\\n``) — the line held so far, those inside, and the line the gap
        leaves unfinished, whose rest is dropped when it comes."""
        if gap.nbytes <= 0:
            return
        self.fed += gap.nbytes
        stats = self._stats
        stats.lines += gap.newlines
        held = self._broken if self._broken is not None else len(self._pending)
        counted = self._broken is not None  # a line cut by an earlier gap is counted already
        if self._overlong:
            held, counted = 0, True  # counted as overlong when its end comes
        self._pending = bytearray()
        if gap.newlines == 0:  # the gap lies inside one line: it goes on after the gap
            if self._overlong:
                return
            if not counted:
                stats.lines_not_decoded += 1
            self._broken = held
            self._grow_broken(gap.nbytes)
            return
        inside = gap.nbytes - gap.newlines  # every byte of the gap but its newlines
        stats.lines_not_decoded += gap.newlines - (1 if counted else 0)
        stats.bytes_not_decoded += held + inside
        if self._overlong:
            stats.overlong_lines += 1
            self._overlong = False
        if gap.ends_with_newline:
            self._broken = None
        else:  # the gap's last line goes on after it: counted now, its bytes as they come
            stats.lines_not_decoded += 1
            self._broken = 0

    # -- internals

    def _hold(self, buf: bytes | bytearray, start: int, end: int) -> None:
        if self._broken is not None:
            self._grow_broken(end - start)
            return
        if self._overlong or start >= end:
            return
        if len(self._pending) + (end - start) > self._max:
            self._overlong = True
            self._pending = bytearray()  # release, not just clear: a cap must free memory
            return
        self._pending += memoryview(buf)[start:end]

    def _grow_broken(self, n: int) -> None:
        """A cut line goes on by ``n`` bytes; past ``max_line`` it is overlong instead (it could
        not have been decoded anyway)."""
        self._broken += max(0, n)  # type: ignore[operator]
        if self._broken > self._max:  # type: ignore[operator]
            self._broken = None
            self._overlong = True
            self._stats.lines_not_decoded -= 1

    def _finish_pending(self) -> None:
        if self._broken is not None:
            self._stats.bytes_not_decoded += self._broken
            self._broken = None
            self._pending = bytearray()
            return
        if self._overlong:
            self._stats.overlong_lines += 1
        else:
            line = bytes(self._pending)
            if any(m in line for m in self._markers):
                self._on_line(line)
        self._pending = bytearray()
        self._overlong = False

    def _scan(self, buf: bytes | bytearray, start: int, last: int) -> None:
        """Offer the marked lines of ``buf[start:last+1]`` (which ends in ``\\n``), in order."""
        if last - start > self._max:  # only then can a line here be overlong (marked or not)
            self._count_overlong(buf, start, last)
        view = memoryview(buf)  # one copy per offered line (a bytearray's slice is a copy too)
        fed = self.fed
        try:
            for line_start, line_end in self._scanner.lines(buf, start, last):
                if line_end - line_start > self._max:
                    continue  # counted by _count_overlong
                self.at = fed + line_start
                self._on_line(view[line_start:line_end].tobytes())
        finally:
            view.release()  # the tee reuses (and may resize) its buffer

    def _count_overlong(self, buf: bytes | bytearray, start: int, last: int) -> None:
        pos = start
        while pos <= last:
            end = buf.find(_NL, pos, last + 1)
            if end - pos > self._max:
                self._stats.overlong_lines += 1
            pos = end + 1
