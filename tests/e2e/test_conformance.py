"""Every shared recording (../shared/fixtures): output == input, no exception, exit 0, and no
workflow span from a file that holds no workflow (SPAN-MODEL.md; fixtures README)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLES, fixture_files, run_bridge
from tests.receivers import HttpReceiver

FILES = fixture_files() + sorted(p for p in EXAMPLES.glob("*") if p.suffix in (".jsonl", ".txt"))


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
