"""Every shared recording (../shared/fixtures) and those in tests/recordings: output == input, no exception, exit 0, and no
workflow span from a file that holds no workflow (SPAN-MODEL.md; fixtures README)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLES, fixture_files, run_bridge
from tests.receivers import HttpReceiver

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


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recording_passes_through_and_yields_only_implied_spans(path):
    data = path.read_bytes()
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, "--flush-timeout", "3"], data)
        spans = rx.received.spans()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    assert b"Traceback" not in proc.stderr
    roots = [s for s in spans if s.name.startswith("invoke_workflow")]
    if has_workflow(data):
        assert len(roots) >= 1
    else:
        assert roots == []
    for s in spans:
        assert s.end_ns >= s.start_ns > 0


CURSOR = [p for p in FILES if p.name.startswith("cursor-")]


@pytest.mark.parametrize("path", CURSOR, ids=lambda p: p.name)
def test_cursor_session_is_not_called_claude_code_and_keeps_its_times(path):
    """Cursor prints Claude-Code-shaped lines without naming itself: its session is
    ``invoke_agent agent`` (not ``claude-code``), dated by its own ``timestamp_ms``."""
    data = path.read_bytes()
    stamps = [json.loads(l)["timestamp_ms"] for l in data.splitlines() if b'"timestamp_ms"' in l]
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint], data)
        spans = rx.received.spans()
    assert proc.returncode == 0 and proc.stdout == data
    (session,) = [s for s in spans if s.parent_span_id == ""]
    assert session.name == "invoke_agent agent"
    assert "gen_ai.provider.name" not in session.attributes
    assert min(stamps) * 1_000_000 <= session.end_ns <= max(stamps) * 1_000_000
    assert all(s.start_ns >= min(stamps) * 1_000_000 - 60 * 10**9 for s in spans)
