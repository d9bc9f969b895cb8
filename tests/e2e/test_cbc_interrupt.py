"""cbc's declared supersets (seed 000 §4.1 step 4, §6, §7) end to end, in real time: late
``task_progress`` after ``task_notification: stopped`` flips in-flight agents to ``error``
("subagent aborted: ..."); within the grace window (``--grace-period``) they land as ERROR spans
with that text, after it they are ignored and counted. Also ``path:<basename>`` naming and the
content-addressed ``agentId`` recorded as ``gen_ai.agent.id``."""

from __future__ import annotations

import json

from tests.conftest import session_span_count, spans_of_trace
from tests.e2e.live import feed_live
from tests.receivers import GrpcReceiver

SID = "sess-int-0001"
TASK = "wf-int-1"
NAME = "path:flows/nightly-audit.workflow.js"
T0 = 1_790_000_000_000  # epoch ms
MS = 1_000_000
AGENT_IDS = {1: "v2:" + "a" * 64, 2: "v2:" + "b" * 64, 3: "v2:" + "c" * 64}
ABORT = "subagent aborted: user cancel"


def line(doc: dict) -> bytes:
    doc.setdefault("session_id", SID)
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def progress(states: dict[int, tuple[str, dict]]) -> bytes:
    entries = [{"type": "workflow_phase", "index": 1, "title": "Audit"}]
    for index, (state, extra) in states.items():
        entries.append({"type": "workflow_agent", "index": index, "agentId": AGENT_IDS[index], "state": state,
                        "label": f"auditor-{index}", "phaseIndex": 1, "startedAt": T0 + 100 * index, **extra})
    return line({"type": "system", "subtype": "task_progress", "task_id": TASK, "tool_use_id": "toolu_int",
                 "workflow_progress": entries})


BEFORE = b"".join([
    line({"type": "system", "subtype": "init", "cwd": "/repo"}),
    line({"type": "system", "subtype": "task_started", "task_id": TASK, "tool_use_id": "toolu_int",
          "task_type": "local_workflow", "workflow_name": NAME, "description": "nightly audit"}),
    progress({1: ("start", {}), 2: ("start", {}), 3: ("done", {"endedAt": T0 + 900})}),
    line({"type": "control_response", "response": {"subtype": "success", "request_id": "stop-1"}}),
    line({"type": "system", "subtype": "task_updated", "task_id": TASK,
          "patch": {"status": "killed", "end_time": T0 + 2000}}),
    line({"type": "system", "subtype": "task_notification", "task_id": TASK, "status": "stopped",
          "summary": "stopped by user", "usage": {"total_tokens": 10, "tool_uses": 1, "duration_ms": 1900}}),
])
# cbc superset: after the notification, in-flight agents flip from start to error
LATE = progress({1: ("error", {"error": ABORT, "endedAt": T0 + 2100}), 2: ("start", {}),
                 3: ("done", {"endedAt": T0 + 900})})


def run_live(grace_s: float, late_after_window: bool):
    """otelbridge reading a live pipe: BEFORE, then LATE, then EOF. With ``late_after_window``,
    LATE is written only once the workflow's spans have reached the receiver (the grace window
    has closed in real time, whatever the machine's load); else at once (the window, long,
    is still open; EOF right after cuts it short). Checks the exit status and the passthrough.
    Returns (stderr, the 5 spans of the workflow's trace, the session span)."""
    n_session = session_span_count(BEFORE + LATE)
    assert n_session == 2  # init opens turn 1; no result: the session and its open turn
    with GrpcReceiver() as rx:
        def window_closed():
            assert len(rx.received.wait_for(5, timeout=25)) == 5, "the workflow never closed"

        code, out, err = feed_live(
            ["--protocol", "grpc", "--endpoint", rx.endpoint, "--grace-period", str(grace_s), "--clock", "stream"],
            [(0.0, BEFORE), (window_closed if late_after_window else 0.1, LATE)],
            0.0,
        )
        everything = rx.received.wait_for(5 + n_session, timeout=5)
    assert code == 0, err
    assert out == BEFORE + LATE
    assert len(everything) == 5 + n_session
    spans = spans_of_trace(everything, "invoke_workflow ")
    assert len(spans) == 5  # root, phase, 3 agents
    session_trace = spans_of_trace(everything, "invoke_agent ")
    (session,) = [s for s in session_trace if s.name.startswith("invoke_agent ")]
    (turn,) = [s for s in session_trace if s.name == "turn 1"]
    assert turn.parent_span_id == session.span_id and turn.status_code == 2  # open at the end: incomplete
    return err, spans, session


def agents_of(spans):
    return {s.attributes["workflow.agent.index"]: s for s in spans if s.name.startswith("invoke_agent")}


def test_late_error_within_grace_window_lands():
    err, spans, session = run_live(grace_s=60.0, late_after_window=False)
    assert b"0 late events ignored" in err
    agents = agents_of(spans)
    a1, a2, a3 = agents[1], agents[2], agents[3]
    # the flipped agent, wound down by the stop: interrupted with cbc's text, not an error (the
    # same stop leaves agent 2 interrupted too), ended at its endedAt
    assert a1.status_code == 0 and "error.type" not in a1.attributes
    assert [(n, a["otelbridge.reason"]) for n, _, a in a1.events] == [("interrupted", ABORT)]
    assert a1.attributes["workflow.agent.state"] == "error"
    assert (a1.start_ns, a1.end_ns) == ((T0 + 100) * MS, (T0 + 2100) * MS)
    # still start when the run closed: ended at the run's end, interrupted, no error (stopped)
    assert a2.status_code == 0 and [n for n, _, _ in a2.events] == ["interrupted"]
    assert a2.end_ns == (T0 + 2000) * MS
    assert a3.status_code == 0 and a3.end_ns == (T0 + 900) * MS
    # agentId recorded (content-addressed, stable across reruns)
    assert {i: s.attributes["gen_ai.agent.id"] for i, s in agents.items()} == AGENT_IDS
    (root,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    assert root.name == "invoke_workflow nightly-audit.workflow.js"
    assert root.attributes["workflow.name"] == NAME
    assert root.attributes["workflow.status"] == "stopped" and root.status_code == 0
    assert [n for n, _, _ in root.events] == ["interrupted"]
    assert (root.start_ns, root.end_ns) == ((T0 + 2000 - 1900) * MS, (T0 + 2100) * MS)
    # the session (init, never a result): its own trace, linked both ways, ERROR incomplete
    assert session.name == "invoke_agent agent"  # its init does not name the CLI
    assert session.attributes["gen_ai.conversation.id"] == SID
    assert (session.status_code, session.status_message) == (2, "stream ended before result")
    assert session.attributes["error.type"] == "incomplete"
    assert root.links == [(session.trace_id, session.span_id)]
    assert session.links == [(root.trace_id, root.span_id)]


def test_late_error_after_grace_window_is_ignored_and_counted():
    err, spans, _ = run_live(grace_s=0.2, late_after_window=True)
    assert b"1 late events ignored" in err
    agents = agents_of(spans)
    # the window closed in real time before the flip came: agent 1 ended as interrupted
    assert agents[1].status_code == 0 and [n for n, _, _ in agents[1].events] == ["interrupted"]
    assert agents[1].attributes["workflow.agent.state"] == "start"
    # the same agentId values as in the other run: one query finds all runs of an agent
    assert {i: s.attributes["gen_ai.agent.id"] for i, s in agents.items()} == AGENT_IDS
