"""Every shared recording (../shared/fixtures) and those in examples/ and tests/recordings: no
exception, and no workflow span from a file that holds no workflow (SPAN-MODEL.md; fixtures
README) — each recording through the pipeline in process (no process boundary is the point);
then all of them through one otelbridge process to a real receiver: output == input byte for
byte, exit 0, every span exported."""

from __future__ import annotations

import json
import logging

import pytest

from otelbridge.config import build
from otelbridge.pipeline import Pipeline
from otelbridge.stats import Stats
from tests.conftest import EXAMPLES, fixture_files, run_bridge
from tests.receivers import HttpReceiver
from tests.test_pipeline import Keep

RECORDINGS = EXAMPLES.parent / "tests" / "recordings"
FILES = (fixture_files() + sorted(p for p in EXAMPLES.glob("*") if p.suffix in (".jsonl", ".txt"))
         + sorted(RECORDINGS.glob("*.jsonl")))


def has_workflow(data: bytes) -> bool:
    """True when some line is a top-level workflow line: cbc/Claude Code ``system/task_*`` of a
    ``local_workflow`` (seed 000) or Caudra ``system/workflow`` (seed 003)."""
    for line in data.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("type") != "system":
            continue
        if doc.get("subtype") == "workflow":
            return True
        if (doc.get("subtype") in ("task_started", "task_progress")
                and (doc.get("task_type") == "local_workflow" or "workflow_progress" in doc)):
            return True
    return False


def records_of(data: bytes, caplog) -> tuple[list, Stats]:
    """``data`` through the pipeline as the decoding process runs it (default flags, 4 KiB
    chunks that cut lines); fails when a stage logged a swallowed exception (a tracker,
    splitter or closing bug: the subprocess would have gone on, the event lost)."""
    stats = Stats()
    pipeline = Pipeline(build(exporter="none", protocol=None), stats, hold=Keep)
    with caplog.at_level(logging.WARNING, logger="otelbridge"):
        for start in range(0, len(data), 4096):
            chunk = data[start:start + 4096]
            pipeline.on_chunk(chunk, len(chunk))
        pipeline.end_stream()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("otelbridge")] == []
    assert stats.lines == data.count(b"\n")
    return pipeline.sink.records, stats


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recording_yields_only_implied_spans(path, caplog):
    data = path.read_bytes()
    records, stats = records_of(data, caplog)
    assert stats.spans_started == len(records)
    roots = [r for r in records if r.name.startswith("invoke_workflow")]
    if has_workflow(data):
        assert len(roots) >= 1
    else:
        assert roots == []
    for r in records:
        assert r.end_ns >= r.start_ns > 0


def test_every_recording_passes_through_one_process_byte_for_byte(tmp_path):
    """All recordings, one after another, through one otelbridge process (the tee and the
    decoding process) to a real OTLP receiver: stdout is the input, every span built is exported."""
    assert FILES
    data = b"".join(p.read_bytes() for p in FILES)
    stats_path = tmp_path / "stats.json"
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, "--flush-timeout", "10", "--stats-json", str(stats_path)],
                          data)
        spans = rx.received.spans()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    assert b"Traceback" not in proc.stderr
    stats = json.loads(stats_path.read_text())
    assert stats["lines"] == data.count(b"\n")
    assert len(spans) == stats["spans_exported"] == stats["spans_started"] > 0, stats
    for s in spans:
        assert s.end_ns >= s.start_ns > 0


CURSOR = [p for p in FILES if p.name.startswith("cursor-")]


@pytest.mark.parametrize("path", CURSOR, ids=lambda p: p.name)
def test_cursor_session_is_not_called_claude_code_and_keeps_its_times(path, caplog):
    """Cursor prints Claude-Code-shaped lines without naming itself: its session is
    ``invoke_agent agent`` (not ``claude-code``), dated by its own ``timestamp_ms``."""
    data = path.read_bytes()
    stamps = [json.loads(l)["timestamp_ms"] for l in data.splitlines() if b'"timestamp_ms"' in l]
    records, _ = records_of(data, caplog)
    (session,) = [r for r in records if r.parent_span_id is None]
    assert session.name == "invoke_agent agent"
    assert "gen_ai.provider.name" not in session.attributes
    assert min(stamps) * 1_000_000 <= session.end_ns <= max(stamps) * 1_000_000
    assert all(r.start_ns >= min(stamps) * 1_000_000 - 60 * 10**9 for r in records)
