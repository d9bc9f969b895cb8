"""otelbridge.stats: every line is exactly one of decoded, not wanted, bad, overlong, not
decoded — on the counts line and in ``--stats-json`` — for every real recording."""

from __future__ import annotations

import json
import re

import pytest

from otelbridge.config import build
from otelbridge.pipeline import Pipeline
from otelbridge.stats import Stats
from tests.conftest import EXAMPLES, fixture_files, needs_fixtures

RECORDINGS = [*fixture_files(), EXAMPLES / "bernstein-signals.txt"]


def through_pipeline(data: bytes) -> tuple[Stats, Pipeline]:
    stats = Stats()
    pipeline = Pipeline(build(exporter="none", protocol=None, env={}, clock="stream"), stats)
    for start in range(0, len(data), 4096):  # chunks that cut lines
        pipeline.on_chunk(data[start:start + 4096], len(data[start:start + 4096]))
    pipeline.end_stream()
    return stats, pipeline


def not_wanted(lines: list[bytes], pipeline: Pipeline) -> int:
    """Counted on its own: the lines holding none of the dialects' markers, and the plain-text
    lines a raw dialect (Bernstein signals) claims but finds nothing in."""
    from otelbridge.dialects import LineInfo

    decoder = pipeline.decoder
    count = 0
    for line in lines:
        if not any(m in line for m in decoder.markers):
            count += 1
        elif not line.strip().lstrip(b"\xef\xbb\xbf").startswith(b"{"):
            for dialect in decoder.raw_dialects:
                events = dialect.decode_raw(line, LineInfo(None, None))
                if events is not None:
                    count += not events
                    break
    return count


@needs_fixtures()
@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_the_five_line_counts_add_up(path, tmp_path):
    data = path.read_bytes()
    stats, pipeline = through_pipeline(data)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    assert stats.lines == len(lines)
    unmarked = not_wanted(lines, pipeline)
    assert stats.lines_not_wanted == unmarked
    assert stats.lines == (stats.lines_decoded + stats.lines_not_wanted + stats.bad_lines
                           + stats.overlong_lines + stats.lines_not_decoded)
    # the counts line and --stats-json say the same
    said = re.search(r"(\d+) lines?, (\d+) decoded, (\d+) not wanted, (\d+) not decoded \(behind\), "
                     r"(\d+) bad, (\d+) overlong", stats.line())
    assert [int(n) for n in said.groups()] == [
        stats.lines, stats.lines_decoded, stats.lines_not_wanted, stats.lines_not_decoded,
        stats.bad_lines, stats.overlong_lines]
    stats.write_json(str(tmp_path / "s.json"))
    written = json.loads((tmp_path / "s.json").read_text())
    assert written["lines_not_wanted"] == unmarked and written["lines"] == stats.lines


def test_bernstein_signals_example_counts():
    stats, _ = through_pipeline((EXAMPLES / "bernstein-signals.txt").read_bytes())
    assert (stats.lines, stats.lines_decoded, stats.lines_not_wanted) == (16, 5, 11)
    assert (stats.bad_lines, stats.overlong_lines, stats.lines_not_decoded) == (0, 0, 0)
