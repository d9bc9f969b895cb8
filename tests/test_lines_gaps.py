"""LineSplitter.gap: parts of the stream not seen (the decoding side was behind). Against a
reference computed from the whole stream: every line is counted once; a line touched by a gap is
never offered, and is counted in ``lines_not_decoded`` with its bytes (without ``\\n``) in
``bytes_not_decoded`` — unless it is overlong anyway; every untouched marked line is offered."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collections import deque

from otelbridge.lines import Gap, LinePosition, LineSplitter, queue_gap
from otelbridge.stats import Stats

MARKERS = (b"ab",)
ALPHABET = [b"a", b"b", b"\n", b"x", b"ab", b"\n\n", b"xxxxxxx"]
streams = st.lists(st.sampled_from(ALPHABET), max_size=200).map(b"".join)


def line_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every line, end exclusive of its ``\\n``; a last line without one too."""
    spans, start = [], 0
    while True:
        nl = data.find(b"\n", start)
        if nl < 0:
            if start < len(data):
                spans.append((start, len(data)))
            return spans
        spans.append((start, nl))
        start = nl + 1


def reference(data: bytes, skipped: list[tuple[int, int]], max_line: int):
    offered, not_decoded, bytes_not, overlong = [], 0, 0, 0
    for start, end in line_spans(data):
        line = data[start:end]
        touched = any(s < end + 1 and e > start for s, e in skipped)  # its "\n" counts too
        if end - start > max_line:
            overlong += 1
        elif touched:
            not_decoded += 1
            bytes_not += end - start
        elif any(m in line for m in MARKERS):
            offered.append(line)
    return offered, len(line_spans(data)), not_decoded, bytes_not, overlong


@settings(max_examples=500, deadline=None)
@given(
    data=streams,
    cut_points=st.lists(st.integers(0, 2000), max_size=25),
    skip_mask=st.lists(st.booleans(), min_size=26, max_size=26),
    max_line=st.sampled_from([3, 12, 10_000]),
)
def test_gaps_count_every_touched_line_once_and_offer_the_rest(data, cut_points, skip_mask, max_line):
    cuts = sorted({c for c in cut_points if 0 < c < len(data)})
    chunks = list(zip([0, *cuts], [*cuts, len(data)]))
    got: list[bytes] = []
    stats = Stats()
    splitter = LineSplitter(MARKERS, got.append, stats, max_line)
    skipped = []
    for (start, end), skip in zip(chunks, skip_mask):
        if skip:
            splitter.gap(Gap.of(data, start, end))
            skipped.append((start, end))
        else:
            splitter.feed(data[start:end], end - start)
    splitter.close()
    offered, lines, not_decoded, bytes_not, overlong = reference(data, skipped, max_line)
    # a line that is overlong *and* touched may be counted either way: it is never offered
    ambiguous = sum(
        1 for start, end in line_spans(data)
        if end - start > max_line and any(s < end + 1 and e > start for s, e in skipped)
    )
    assert got == offered
    assert stats.lines == lines
    assert stats.lines_not_decoded + stats.overlong_lines == not_decoded + overlong
    assert not_decoded <= stats.lines_not_decoded <= not_decoded + ambiguous
    if ambiguous == 0:
        assert stats.bytes_not_decoded == bytes_not


def test_gap_of_counts_newlines_and_the_last_byte():
    assert Gap.of(b"ab\ncd\n") == Gap(6, 2, True)
    assert Gap.of(bytearray(b"xx\nyy"), 1, 5) == Gap(4, 1, False)
    assert Gap.of(b"abc", 2, 2) == Gap(0, 0, False)


def test_a_line_cut_by_a_gap_is_dropped_when_its_end_comes():
    got, stats = [], Stats()
    splitter = LineSplitter((b"ab",), got.append, stats)
    for part in (b"ab1\nab2-head", Gap.of(b"-middle-"), b"-tail\nab3\n"):
        if isinstance(part, Gap):
            splitter.gap(part)
        else:
            splitter.feed(part, len(part))
    splitter.close()
    assert got == [b"ab1", b"ab3"]
    assert (stats.lines, stats.lines_not_decoded) == (3, 1)
    assert stats.bytes_not_decoded == len(b"ab2-head-middle--tail")


def test_queue_gap_takes_the_queued_head_of_the_line_it_cuts():
    queue = deque([b"a\nhead-", memoryview(b"more-head")])
    freed = queue_gap(queue, Gap.of(b"tail\nnext"))
    assert freed == len(b"more-head")
    assert list(queue) == [b"a\nhead-", Gap(len(b"more-head") + 9, 1, False)]
    assert queue_gap(queue, Gap.of(b"x\n")) == 0  # a gap at the tail absorbs the next one
    assert list(queue) == [b"a\nhead-", Gap(len(b"more-head") + 11, 2, True)]


def test_line_position_knows_a_chunk_inside_an_undecodable_line():
    pos = LinePosition(max_line=10)
    assert not pos.undecodable(b"ab\n" + b"x" * 8, 11)  # a newline: a line may start here
    assert not pos.undecodable(b"x" * 3, 3)  # 11 bytes in, but only 8 of them before this chunk
    assert pos.undecodable(b"x" * 3, 3)  # 11 before it: over max_line
    assert not pos.undecodable(b"\nyy", 3)
    pos.skipped(Gap.of(b"yy"))  # a gap cuts the line in progress
    assert pos.undecodable(b"zz", 2)
    pos.unseen()  # tee(2) moved bytes we did not see: anything may have started
    assert not pos.undecodable(b"zz", 2)
