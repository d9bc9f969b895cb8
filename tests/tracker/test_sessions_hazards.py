"""Hazards: real session lines dropped, repeated and reordered never raise, and every span is
still emitted exactly once with integer times and end ≥ start."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otelbridge import dialects
from otelbridge.clock import Clock
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Tracker
from tests.conftest import EXAMPLES, FIXTURES

SOURCES = sorted((FIXTURES / "claude-code").glob("*.jsonl")) + sorted((FIXTURES / "milk").glob("*.jsonl")) + [
    EXAMPLES / "claude-code-session.jsonl", EXAMPLES / "milk-session.jsonl", EXAMPLES / "caudra-session-turns.jsonl"]
LINES = [line for path in SOURCES if path.is_file() for line in path.read_bytes().splitlines()]


def run(lines: list[bytes]):
    records = []
    stats = Stats()
    tracker = Tracker(Context(emit=records.append, ids=Ids(False), clock=Clock("auto"), stats=stats))
    decoder = dialects.Decoder(dialects.load(), stats)
    for line in lines:
        for event in decoder.decode(line):
            tracker.handle(event)
    tracker.finish()
    return records


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=80))
def test_any_mix_of_real_lines_ends_every_span_once(lines):
    records = run(lines)
    ids = [(r.trace_id, r.span_id) for r in records]
    assert len(ids) == len(set(ids))
    for r in records:
        assert type(r.start_ns) is int and type(r.end_ns) is int
        assert r.end_ns >= r.start_ns
        assert all(type(e.time_ns) is int for e in r.events)


def test_every_recording_reversed_still_ends_every_span_once():
    for path in SOURCES:
        records = run(list(reversed(path.read_bytes().splitlines())))
        ids = [(r.trace_id, r.span_id) for r in records]
        assert len(ids) == len(set(ids)), path.name
        assert all(r.end_ns >= r.start_ns for r in records), path.name
