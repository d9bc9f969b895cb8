"""Shared test helpers: paths to the shared recordings, running otelbridge as a subprocess."""

from __future__ import annotations

import compileall
import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# A test run started in the background by a non-interactive shell (``cmd &``, CI scripts) has
# SIGINT ignored, and an ignored signal stays ignored across exec: every otelbridge, ``sh`` trap
# and wrapped child the tests start would ignore a Ctrl-C. Start them as a terminal would.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
EXAMPLES = ROOT / "examples"
WORKFLOW_PROBE = FIXTURES / "claude-code" / "workflow-probe-2.1.206.jsonl"

# Hundreds of tests start otelbridge as a subprocess. Compiled once here, its modules load from
# __pycache__ as an installed package's do, instead of being compiled again by every process
# (PYTHONDONTWRITEBYTECODE keeps each from saving its work): ~0.1 s of CPU per start. The same
# for this run's rewritten test modules (pytest saves them unless bytecode writing is off).
# Both caches are Python's own, checked against the sources' times; .gitignore leaves them out.
compileall.compile_dir(ROOT / "otelbridge", quiet=1)
sys.dont_write_bytecode = False


#: an argv prefix: runs the rest of argv as the leader of a new session whose controlling
#: terminal is its stdin (give it a pty's slave end): a command started at a terminal, in the
#: terminal's foreground process group (the INTR character written to the master signals it)
AT_TERMINAL = [sys.executable, "-c", "import fcntl, os, sys, termios; os.setsid(); "
               "fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.argv[1], sys.argv[1:])"]


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


#: ``python -c NO_FORK ARGS``: otelbridge where ``os.fork`` is missing (Windows): no decoding
#: process, the stream passes untraced.
NO_FORK = "import os; del os.fork; from otelbridge.__main__ import main; main()"


def run_bridge(args: list[str], data: bytes | None = None, *, env: dict | None = None,
               timeout: float = 60, stdin=None, no_fork: bool = False) -> subprocess.CompletedProcess:
    """Run ``python -m otelbridge ARGS`` (with ``no_fork``: as :data:`NO_FORK`) with ``data`` on
    stdin; returns bytes stdout/stderr."""
    return subprocess.run(
        [sys.executable, *(("-c", NO_FORK) if no_fork else ("-m", "otelbridge")), *args],
        input=data,
        stdin=stdin,
        capture_output=True,
        env=env if env is not None else clean_env(),
        timeout=timeout,
        cwd=ROOT,
    )


def side_by_side(*calls):
    """Each of ``calls`` (zero-argument callables: independent runs, e.g. of :func:`run_bridge`,
    each with its own input, receiver and files) started at once in a thread of its own; their
    results in the order of ``calls``. For tests that assert no time."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return [f.result() for f in [pool.submit(call) for call in calls]]


def export_in_process(data: bytes, endpoint: str, *, chunk: int = 65536, **flags):
    """``data`` through stages 2–5 in this process (a :class:`~otelbridge.pipeline.Pipeline`,
    fed in ``chunk``-byte pieces that cut lines, as the decoding process is fed), its spans sent
    by the real OTLP/HTTP exporter to ``endpoint`` and flushed (10 s at most). ``flags``: as
    :func:`otelbridge.config.build` takes them (``deterministic_ids=True``, ...). For tests of
    what the spans are, where no process boundary is the point. Returns (Stats, all exported)."""
    from otelbridge.config import build
    from otelbridge.deadline import Deadline
    from otelbridge.pipeline import Pipeline
    from otelbridge.stats import Stats

    stats = Stats()
    cfg = build(exporter="otlp", protocol="http/protobuf", env=clean_env(), endpoint=endpoint, **flags)
    pipeline = Pipeline(cfg, stats)
    for start in range(0, len(data), chunk):
        piece = data[start:start + chunk]
        pipeline.on_chunk(piece, len(piece))
    pipeline.end_stream()
    return stats, pipeline.exporters.shutdown(Deadline.after(10))


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


# ----------------------------------------------------------------------- selecting spans
# A stream with a session_id yields, besides its workflow traces, the session's own trace
# (SPAN-MODEL.md: `invoke_agent {agent}` with its turns, calls and tools; in wrapper mode under
# `run {cmd}`). Tests about one of them select it by its root.


def sent(start_ns: int, end_ns: int) -> tuple[int, int]:
    """The times a span the stream dates ``start_ns`` to ``end_ns`` is sent with: an instant
    as the microsecond that ends at it (``otelbridge.spans.MIN_SPAN_NS``)."""
    return min(start_ns, end_ns - 1_000), end_ns


def roots(spans, prefix: str) -> list:
    """The spans named ``prefix...`` whose parent is not among ``spans`` (roots, or children of
    a TRACEPARENT span)."""
    ids = {s.span_id for s in spans}
    return [s for s in spans if s.name.startswith(prefix) and s.parent_span_id not in ids]


def spans_of_trace(spans, root_prefix: str) -> list:
    """The spans of the one trace whose root is named ``root_prefix...`` (exactly one such root)."""
    found = roots(spans, root_prefix)
    assert len(found) == 1, [s.name for s in found]
    return [s for s in spans if s.trace_id == found[0].trace_id]


def workflow_spans(spans) -> list:
    """The spans of every workflow trace (a trace whose root is ``invoke_workflow ...``)."""
    traces = {s.trace_id for s in roots(spans, "invoke_workflow ")}
    return [s for s in spans if s.trace_id in traces]


def session_name(data: bytes) -> str:
    """The session span's name SPAN-MODEL.md implies for a stream, from its first
    ``system/init``: milk's ``agent.name``; ``claude-code`` when the init carries
    ``claude_code_version`` (or there is no init: the claude_code dialect's default); ``caudra``
    when it lists Caudra's runtimes (``automations``, ``workflows``); else ``agent`` (a CLI
    printing the same family of lines without naming itself: Cursor, cbc)."""
    for raw in data.splitlines():
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("type") == "system" and doc.get("subtype") == "init":
            if "seq" in doc and isinstance(doc.get("agent"), dict):
                return f"invoke_agent {doc['agent'].get('name') or 'milk'}"
            if "claude_code_version" in doc:
                return "invoke_agent claude-code"
            return "invoke_agent " + ("caudra" if "automations" in doc or "workflows" in doc else "agent")
    return "invoke_agent claude-code"


def session_span_count(data: bytes) -> int:
    """The session spans SPAN-MODEL.md implies for a Claude Code stream (``data``), read from the
    stream itself: per session id shown, one session span, one turn per ``init`` and per top-level
    line when no turn is open (a ``result`` with no turn makes one), one ``chat`` per top-level ``message.id``, one ``execute_tool``
    per ``tool_use`` id. Only for streams without sub-agents, background tasks, Caudra lines or
    repeated results: anything else fails here rather than being miscounted. Lines that are not
    JSON objects (plain output, Bernstein signals) are skipped."""
    sessions: dict = {}
    workflow_tasks: set = set()
    for raw in data.splitlines():
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("session_id") is None:
            continue
        assert "workflow_run_id" not in doc and doc.get("subtype") not in (
            "turn_start", "workflow", "automation_fired"), "Caudra lines are not modelled here"
        s = sessions.setdefault(doc["session_id"], {"turns": 0, "open": False, "pending": 0,
                                                    "results": 0, "chats": set(), "tools": set()})
        kind, sub = doc.get("type"), doc.get("subtype")
        if sub == "task_started" and doc.get("task_type") == "local_workflow" or doc.get("workflow_progress"):
            workflow_tasks.add(doc["task_id"])
        elif sub and sub.startswith("task_"):
            assert doc["task_id"] in workflow_tasks, f"background task {doc['task_id']} not modelled here"
        if kind in ("assistant", "user"):
            assert doc.get("parent_tool_use_id") is None, "sub-agent lines are not modelled here"
        message = None
        if kind == "assistant":
            message = doc["message"]
        elif kind == "stream_event" and doc["event"].get("type") in ("message_start", "message_delta"):
            message = doc["event"].get("message") or {}
        if sub == "init" or ((message is not None or kind == "user") and not s["open"]):
            s["turns"] += 1  # each init opens a turn; the open one waits for its result
            s["pending"] += 1
            s["open"] = True
        if message is not None:
            if message.get("id"):
                s["chats"].add(message["id"])
            s["tools"] |= {b["id"] for b in message.get("content", []) if b.get("type") == "tool_use"}
        if kind == "result":
            assert s["pending"] or not s["results"], "a possibly repeated result is not modelled here"
            if s["pending"]:  # the oldest turn without a result takes it
                s["pending"] -= 1
            else:
                s["turns"] += 1
            s["results"] += 1
            s["open"] = s["pending"] > 0
    return sum(1 + s["turns"] + len(s["chats"]) + len(s["tools"]) for s in sessions.values())


@pytest.fixture(autouse=True)
def fresh_redactor():
    """Each test a run of its own: the installed redactor remembers every secret it found
    (``Redactor.found``), which a later test's text must not meet."""
    from otelbridge import redact

    previous = redact.install(redact.Redactor())
    yield
    redact.install(previous)
