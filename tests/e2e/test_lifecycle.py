"""Workflow lifecycle with real time, as a user runs it: the grace window (seed 000 §6) and the
interrupt path (seed 000 §4.1) through a wrapped emitter, spans at a real OTLP receiver."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from tests.conftest import clean_env, run_bridge, spans_of_trace
from tests.receivers import HttpReceiver

EMITTER = Path(__file__).with_name("emitter.py")
S, T = "sess-live-1", "task-live-1"


def sys_line(subtype, **fields):
    return {"type": "system", "subtype": subtype, "task_id": T, "session_id": S, **fields}


def agent(index, state, **kw):
    return {"type": "workflow_agent", "index": index, "agentId": f"v2:{index}", "state": state,
            "startedAt": "$NOW-200", "label": f"worker-{index}", "phaseIndex": 1,
            "phaseTitle": "Work", **kw}


def snapshot(*agents):
    return sys_line("task_progress", workflow_progress=[
        {"type": "workflow_phase", "index": 1, "title": "Work"}, *agents])


def run_script(tmp_path, script, grace, open_gate_at: int | None = None):
    """otelbridge wrapping the emitter playing ``script``; with ``open_gate_at``, the script's
    ``"wait:GATE"`` line (see :func:`gate`) is released once that many spans have reached the
    receiver. Returns (the completed process, the spans received, --stats-json)."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    stats = tmp_path / "stats.json"
    with HttpReceiver() as rx:
        if open_gate_at is not None:
            def release():
                rx.received.wait_for(open_gate_at, timeout=30)
                gate(tmp_path).touch()

            threading.Thread(target=release, daemon=True).start()
        proc = run_bridge(["--endpoint", rx.endpoint, "--grace-period", str(grace),
                           "--stats-json", str(stats), "--", sys.executable, str(EMITTER), str(path)],
                          env=clean_env(OTEL_BSP_SCHEDULE_DELAY="100"))  # spans leave 0.1 s after they end
        spans = rx.received.spans()
    return proc, spans, json.loads(stats.read_text())


def gate(tmp_path) -> Path:
    return tmp_path / "gate"


def run_and_session(everything, root):
    """Wrapper mode: the ``run {cmd}`` span and, under it, the span of session ``S`` (seen only
    through its workflow: no error), linked to the workflow ``root`` both ways; the only spans
    outside the workflow's trace."""
    trace = spans_of_trace(everything, "run ")
    assert len(everything) == len(spans_of_trace(everything, "invoke_workflow ")) + len(trace)
    (run,) = [s for s in trace if s.name.startswith("run ")]
    (session,) = [s for s in trace if s.name == "invoke_agent claude-code"]
    assert len(trace) == 2
    assert run.name == f"run {os.path.basename(sys.executable)}"
    assert run.attributes["process.exit.code"] == 0 and run.status_code == 0
    assert session.parent_span_id == run.span_id
    assert session.attributes["gen_ai.conversation.id"] == S and session.status_code == 0
    assert root.links == [(session.trace_id, session.span_id)]
    assert session.links == [(root.trace_id, root.span_id)]


def test_interrupt_path_late_error_flips_land_within_grace(tmp_path):
    script = [
        [0, sys_line("task_started", task_type="local_workflow", workflow_name="path:jobs/probe.js",
                     tool_use_id="toolu_9")],
        [0, snapshot(agent(1, "start"), agent(2, "start"), agent(3, "start"))],
        [0.05, sys_line("task_updated", patch={"status": "killed", "end_time": "$NOW"})],
        [0, sys_line("task_notification", status="stopped", summary="stopped by user")],
        # cbc superset: agents wind down after the notification (0.25 s: inside the 1 s window)
        [0.1, snapshot(agent(1, "error", error="subagent aborted: user cancel", endedAt="$NOW"),
                       agent(2, "start"), agent(3, "start"))],
        [0.1, snapshot(agent(1, "error", error="subagent aborted: user cancel", endedAt="$NOW"),
                       agent(2, "error", error="subagent aborted: user cancel", endedAt="$NOW"),
                       agent(3, "start"))],
        # after the window closed (its 5 spans were exported): counted, not applied
        [f"wait:{gate(tmp_path)}",
         snapshot(agent(1, "error"), agent(2, "error"), agent(3, "error", error="too late"))],
    ]
    proc, everything, stats = run_script(tmp_path, script, grace=1.0, open_gate_at=5)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(b"\n") == len(script)
    spans = spans_of_trace(everything, "invoke_workflow ")
    by_name = {s.name: s for s in spans}
    assert len(spans) == 5, sorted(by_name)
    root = by_name["invoke_workflow probe.js"]
    run_and_session(everything, root)
    assert root.attributes["workflow.name"] == "path:jobs/probe.js"
    assert root.attributes["workflow.status"] == "stopped"
    assert root.status_code == 0  # stopped is not an error
    assert [e[0] for e in root.events] == ["interrupted"]
    for i in (1, 2):
        a = by_name[f"invoke_agent worker-{i}"]
        # wound down by the stop: interrupted with cbc's text, not a failure (as worker 3)
        assert a.status_code == 0 and "error.type" not in a.attributes
        assert [(e[0], e[2]["otelbridge.reason"]) for e in a.events] == [("interrupted", "subagent aborted: user cancel")]
        assert a.attributes["workflow.agent.state"] == "error"
        assert a.attributes["gen_ai.agent.id"] == f"v2:{i}"
    a3 = by_name["invoke_agent worker-3"]
    assert a3.attributes["workflow.agent.state"] == "start"
    assert a3.status_code == 0 and [e[0] for e in a3.events] == ["interrupted"]
    assert stats["late_events_ignored"] == 1
    assert all(s.end_ns >= s.start_ns for s in spans)


def test_grace_window_closes_on_time_and_end_of_input_cuts_it_short(tmp_path):
    """A completed workflow with a long grace window: end of input closes it at once."""
    script = [
        [0, sys_line("task_started", task_type="local_workflow", workflow_name="quick")],
        [0, snapshot(agent(1, "done", durationMs=100, tokens=7))],
        [0, sys_line("task_notification", status="completed", usage={"duration_ms": 300})],
    ]
    import time

    t0 = time.monotonic()
    proc, everything, stats = run_script(tmp_path, script, grace=30)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 15  # not the 30 s window: end of input cut it short
    spans = spans_of_trace(everything, "invoke_workflow ")
    assert sorted(s.name for s in spans) == ["invoke_agent worker-1", "invoke_workflow quick", "phase Work"]
    (root,) = [s for s in spans if s.name == "invoke_workflow quick"]
    run_and_session(everything, root)
    (agent_span,) = [s for s in spans if s.name == "invoke_agent worker-1"]
    assert agent_span.attributes["workflow.agent.tokens"] == 7
    assert agent_span.end_ns - agent_span.start_ns == 100 * 1_000_000
