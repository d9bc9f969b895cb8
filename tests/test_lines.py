"""LineSplitter: for any bytes and any chunking, the lines offered, the line count and the
overlong count are those of ``data.split(b"\\n")`` — the chunk boundaries never show."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbridge import lines
from otelbridge.lines import FindScanner, HyperscanScanner, LineSplitter
from otelbridge.stats import Stats

#: both marker scanners, each through the whole splitter (the platform picks one at run time)
SCANNERS = [
    pytest.param(FindScanner, id="find"),
    pytest.param(HyperscanScanner, id="hyperscan",
                 marks=pytest.mark.skipif(lines.hyperscan is None, reason="hyperscan not installed")),
]

MARKERS = (b"ab", b"task_progress")
# a small alphabet so markers, newlines and hostile bytes (CR, NUL, invalid UTF-8, a BOM) meet
ALPHABET = [b"a", b"b", b"\n", b"\r", b"\x00", b"\xff", b"\xef\xbb\xbf", b" ", b"task_progress", b"x"]

streams = st.lists(st.sampled_from(ALPHABET), max_size=300).map(b"".join)


def reference(data: bytes, max_line: int):
    parts = data.split(b"\n")
    lines = parts[:-1] + ([parts[-1]] if parts[-1] else [])
    offered = [l for l in lines if len(l) <= max_line and any(m in l for m in MARKERS)]
    return offered, len(lines), sum(len(l) > max_line for l in lines)


def run_splitter(data: bytes, cuts: list[int], max_line: int, reuse_buffer: bool, starts: list | None = None):
    """The lines offered and the stats; with ``starts``, each offered line's :attr:`at`
    appended to it (the splitter made with ``fed=7``)."""
    got: list[bytes] = []
    stats = Stats()

    def offered(line: bytes) -> None:
        got.append(line)
        if starts is not None:
            starts.append(splitter.at)

    splitter = LineSplitter(MARKERS, offered, stats, max_line, fed=7 if starts is not None else 0)
    buf = bytearray(len(data) + 1)
    for start, end in zip([0, *cuts], [*cuts, len(data)]):
        if reuse_buffer:  # what the tee does: one buffer, overwritten chunk after chunk
            buf[: end - start] = data[start:end]
            buf[end - start :] = b"\xaa" * (len(buf) - (end - start))  # stale bytes after n
            splitter.feed(buf, end - start)
        else:
            splitter.feed(data[start:end], end - start)
    splitter.close()
    return got, stats


@pytest.mark.parametrize("scanner", SCANNERS)
@settings(max_examples=400, deadline=None)
@given(
    data=streams,
    cut_points=st.lists(st.integers(min_value=0, max_value=400), max_size=30),
    max_line=st.integers(min_value=0, max_value=40),
    reuse_buffer=st.booleans(),
)
def test_any_chunking_gives_the_lines_of_the_whole(scanner, data, cut_points, max_line, reuse_buffer):
    cuts = sorted({c for c in cut_points if 0 < c < len(data)})
    starts: list[int] = []
    with mock.patch.object(lines, "make_scanner", scanner):
        got, stats = run_splitter(data, cuts, max_line, reuse_buffer, starts)
    offered, count, overlong = reference(data, max_line)
    assert got == offered
    assert stats.lines == count
    assert stats.overlong_lines == overlong
    # each line's offset in the input (7 bytes fed before): where it is, just after a newline
    whole = b"x" * 6 + b"\n" + data
    assert [whole[at:at + len(line)] for at, line in zip(starts, got)] == got
    assert all(whole[at - 1:at] == b"\n" for at in starts)


def test_huge_line_across_many_chunks_is_released_not_kept():
    got: list[bytes] = []
    stats = Stats()
    splitter = LineSplitter(MARKERS, got.append, stats, max_line=1000)
    piece = b"task_progress" + b"y" * 4083  # 4 KiB chunks of one 4 MiB line
    for _ in range(1024):
        splitter.feed(piece, len(piece))
    assert len(splitter._pending) == 0  # the cap frees the buffer at once
    splitter.feed(b"\nab\n", 4)
    splitter.close()
    assert got == [b"ab"]
    assert (stats.lines, stats.overlong_lines) == (2, 1)


def test_last_line_without_newline_is_a_line():
    got: list[bytes] = []
    stats = Stats()
    splitter = LineSplitter(MARKERS, got.append, stats)
    splitter.feed(b"x\r\nab", 5)
    splitter.close()
    assert got == [b"ab"]
    assert stats.lines == 2


@pytest.mark.skipif(lines.hyperscan is None, reason="hyperscan not installed")
def test_hyperscan_is_used_where_installed_and_find_for_markers_it_cannot_take():
    assert isinstance(LineSplitter(MARKERS, print, Stats())._scanner, HyperscanScanner)
    assert isinstance(lines.make_scanner((b"ab", b"a\0b")), FindScanner)


# markers that overlap, share prefixes and sit in one another, over a small alphabet
marker_sets = st.lists(st.lists(st.sampled_from([b"a", b"b", b"\xff"]), min_size=1, max_size=3).map(b"".join),
                       min_size=1, max_size=4, unique=True)


@pytest.mark.skipif(lines.hyperscan is None, reason="hyperscan not installed")
@settings(max_examples=300, deadline=None)
@given(markers=marker_sets,
       parts=st.lists(st.sampled_from([b"a", b"b", b"ab", b"\n", b"\x00", b"\xff", b"ba"]), max_size=200),
       data=st.data())
def test_both_scanners_find_the_same_lines(markers, parts, data):
    buf = b"".join(parts) + b"\n"
    markers = tuple(markers)
    start = data.draw(st.integers(min_value=0, max_value=len(buf) - 1))
    last = buf.rfind(b"\n")
    if start > last:
        start = last
    start = buf.rfind(b"\n", 0, start) + 1  # scans begin at a line start
    expected = [(s, e) for s, e in _lines(buf, start, last) if any(m in buf[s:e] for m in markers)]
    assert list(FindScanner(markers).lines(buf, start, last)) == expected
    assert list(HyperscanScanner(markers).lines(bytearray(buf), start, last)) == expected


def _lines(buf: bytes, start: int, last: int):
    pos = start
    while pos <= last:
        end = buf.index(b"\n", pos)
        yield pos, end
        pos = end + 1


@settings(max_examples=300, deadline=None)
@given(buf=st.binary(max_size=300).map(lambda b: b.replace(b"a", b"\n")), data=st.data())
def test_count_lines_counts_newlines_every_way(buf, data):
    n = data.draw(st.integers(min_value=0, max_value=len(buf)))
    held = bytearray(buf + b"tail\n")  # a reused buffer: only buf[:n] counts
    for average in (0, lines.LONG_LINE_BYTES, lines.VERY_LONG_LINE_BYTES):  # each way of counting
        assert lines.count_lines(held, n, average) == buf[:n].count(b"\n")
    held += b"more"  # no view of it is left behind (the tee resizes its buffer)


def test_the_splitter_counts_every_line_whatever_their_length():
    stats = Stats()
    splitter = LineSplitter([b"subtype"], lambda line: None, stats)
    long = b'{"x":"' + b"y" * 500 + b'"}\n'
    chunks = [long * 100, b"ok\n" * 1000, long * 3 + b"cut", b"\n" * 7, b"short\n" * 50]
    for chunk in chunks:
        buf = bytearray(chunk) + bytearray(64)  # a chunk in a larger buffer
        splitter.feed(buf, len(chunk))
    splitter.close()
    assert stats.lines == sum(c.count(b"\n") for c in chunks)
