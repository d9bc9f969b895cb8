"""Shared test helpers: paths to the shared recordings, running otelbridge as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
EXAMPLES = ROOT / "examples"
WORKFLOW_PROBE = FIXTURES / "claude-code" / "workflow-probe-2.1.206.jsonl"


def fixture_files() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".txt"))


def needs_fixtures():
    return pytest.mark.skipif(not WORKFLOW_PROBE.is_file(), reason="../shared/fixtures not present")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any OTEL_*/TRACEPARENT of the caller, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "OTELBRIDGE_")) and k not in ("TRACEPARENT", "TRACESTATE", "CI")}
    env.update(extra)
    return env


def run_bridge(args: list[str], data: bytes | None = None, *, env: dict | None = None,
               timeout: float = 60, stdin=None) -> subprocess.CompletedProcess:
    """Run ``python -m otelbridge ARGS`` with ``data`` on stdin; returns bytes stdout/stderr."""
    return subprocess.run(
        [sys.executable, "-m", "otelbridge", *args],
        input=data,
        stdin=stdin,
        capture_output=True,
        env=env if env is not None else clean_env(),
        timeout=timeout,
        cwd=ROOT,
    )


def workflow_facts(path: Path):
    """What a recorded workflow stream itself says: (task_started, the last snapshot's agents,
    its phases, task_updated, task_notification) — the last snapshot is authoritative."""
    started = progress = updated = notified = None
    for line in path.read_bytes().splitlines():
        doc = json.loads(line)
        sub = doc.get("subtype")
        if sub == "task_started":
            started = doc
        elif sub == "task_progress":
            progress = doc
        elif sub == "task_updated":
            updated = doc
        elif sub == "task_notification":
            notified = doc
    agents = [e for e in progress["workflow_progress"] if e["type"] == "workflow_agent"]
    phases = [e for e in progress["workflow_progress"] if e["type"] == "workflow_phase"]
    return started, agents, phases, updated, notified
