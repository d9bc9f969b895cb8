"""Feed a recording through the decoder and the tracker in-process: its records, in a list.

``lines(path)`` gives the recording's JSON lines by their 1-based line number in the file, so
tests name the line behind each assertion."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from otelbridge import dialects
from otelbridge.clock import Clock
from otelbridge.events import SpanRecord
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Tracker

from tests.conftest import FIXTURES, ROOT  # noqa: E402

CLAUDE = FIXTURES / "claude-code"
RECORDINGS = ROOT / "tests" / "recordings"
MS = 1_000_000
#: the wall clock the tests run at: a day the recordings were not made on
WALL = 1_800_000_000 * 10**9


def lines(path: Path) -> dict[int, dict]:
    """``{line number: JSON object}`` of the recording (lines that are not JSON left out)."""
    out = {}
    for n, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out[n] = doc
    return out


def iso_ns(text: str) -> int:
    """An ISO ``timestamp`` of a line → epoch ns (as the decoder reads it)."""
    return dialects.parse_timestamp(text)


class Run:
    """The records of one recording, with lookups by name and id."""

    def __init__(self, path: Path, *, mode: str = "stream", wall: int = WALL,
                 arrival: Callable[[int], int] | None = None, capture_content: bool = False) -> None:
        """``arrival(n)``: the wall clock (epoch ns) when line ``n`` (1-based) came; else
        ``wall`` for every line."""
        self.records: list[SpanRecord] = []
        self.stats = Stats()
        now = [wall]
        ctx = Context(emit=self.records.append, ids=Ids(True), clock=Clock(mode, wall=lambda: now[0]),
                      stats=self.stats, capture_content=capture_content)
        tracker = Tracker(ctx)
        decoder = dialects.Decoder(dialects.load(), self.stats)
        for n, raw in enumerate(path.read_bytes().splitlines(), 1):
            if arrival is not None:
                now[0] = arrival(n)
            for ev in decoder.decode(raw):
                tracker.handle(ev)
        tracker.finish()

    def named(self, name: str) -> list[SpanRecord]:
        return [r for r in self.records if r.name == name]

    def one(self, name: str) -> SpanRecord:
        (rec,) = self.named(name)
        return rec

    def by_id(self, span_id: int) -> SpanRecord:
        (rec,) = [r for r in self.records if r.span_id == span_id]
        return rec

    def attr(self, key: str, value) -> list[SpanRecord]:
        return [r for r in self.records if r.attributes.get(key) == value]

    def outside_parents(self) -> list[str]:
        """Spans (but ``task`` spans: background work may outlive its tool call) that do not
        lie inside their parent span."""
        by_id = {r.span_id: r for r in self.records}
        return [r.name for r in self.records
                if r.parent_span_id in by_id and not r.name.startswith("task ")
                and not by_id[r.parent_span_id].start_ns <= r.start_ns <= r.end_ns
                <= by_id[r.parent_span_id].end_ns]


def tree(run: Run) -> str:
    """The records as an indented tree (for reading a failure)."""
    kids: dict[int | None, list[SpanRecord]] = {}
    ids = {r.span_id for r in run.records}
    for r in run.records:
        kids.setdefault(r.parent_span_id if r.parent_span_id in ids else None, []).append(r)
    out: list[str] = []

    def walk(parent, depth):
        for r in sorted(kids.get(parent, []), key=lambda r: r.start_ns):
            out.append(f"{'  ' * depth}{r.name} {r.start_ns} {r.end_ns - r.start_ns} {r.error_type or ''}")
            walk(r.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(out)
