"""Caudra decoder (seed 003 "Run events", "Firings and notices", "Goal events")."""

from __future__ import annotations

import json

from otelbridge.dialects import Decoder, LineInfo, load
from otelbridge.dialects.caudra import DIALECT
from otelbridge.events import (
    AutomationFired,
    AutomationNotice,
    CaudraAgentMessage,
    CaudraWorkflowLog,
    CaudraWorkflowSnapshot,
    GoalEvent,
    Usage,
)
from otelbridge.stats import Stats

INFO = LineInfo("sess-1", None)
S = 1_000_000_000
MS = 1_000_000

# the snapshot example of seed 003 "Run events", verbatim but for the elided fields
SNAPSHOT = {
    "type": "system", "subtype": "workflow",
    "event": {"kind": "snapshot", "run_id": "run-1", "status": "active", "phase": "gather",
              "revision": 3, "phase_history": [{"title": "gather", "started_at": 1730000000}],
              "logs": [{"at": 1730000012, "message": "3 sources found"}]},
    "workflow_run_id": "run-1", "workflow_epoch": 1, "workflow_call_key": 0, "workflow_phase": "gather",
}


def test_snapshot_seconds_to_ns():
    (ev,) = DIALECT.decode(SNAPSHOT, INFO)
    assert isinstance(ev, CaudraWorkflowSnapshot)
    assert (ev.run_id, ev.status, ev.phase, ev.revision, ev.epoch) == ("run-1", "active", "gather", 3, 1)
    assert [(p.title, p.started_ns) for p in ev.phase_history] == [("gather", 1730000000 * S)]
    assert [(log.at_ns, log.message) for log in ev.logs] == [(1730000012 * S, "3 sources found")]


def test_integer_run_id_is_a_string():
    doc = json.loads(json.dumps(SNAPSHOT))
    doc["event"]["run_id"] = 7
    (ev,) = DIALECT.decode(doc, INFO)
    assert ev.run_id == "7"
    del doc["event"]["run_id"]
    doc["workflow_run_id"] = 8
    (ev,) = DIALECT.decode(doc, INFO)
    assert ev.run_id == "8"  # the envelope names the run when the event does not


def test_snapshot_bad_fields_dropped_one_by_one():
    doc = json.loads(json.dumps(SNAPSHOT))
    doc["event"]["phase_history"] = [{"title": "a", "started_at": 1730000000123},  # ms, not s
                                     {"title": "b", "started_at": "1730000001.5"}, "junk", None]
    doc["event"]["logs"] = [{"at": 1730000002}, {"message": "no time"}, 3]
    doc["event"]["revision"] = True
    (ev,) = DIALECT.decode(doc, INFO)
    assert [(p.title, p.started_ns) for p in ev.phase_history] == [("a", None), ("b", 1730000001_500_000_000)]
    assert [(log.at_ns, log.message) for log in ev.logs] == [(None, "no time")]
    assert ev.revision is None


def test_log_event():
    doc = {"type": "system", "subtype": "workflow",
           "event": {"kind": "log", "run_id": "run-1", "at": 1730000013, "message": "done", "revision": 4},
           "workflow_run_id": "run-1", "workflow_epoch": 2}
    (ev,) = DIALECT.decode(doc, INFO)
    assert isinstance(ev, CaudraWorkflowLog)
    assert (ev.run_id, ev.epoch, ev.revision, ev.log.at_ns, ev.log.message) == ("run-1", 2, 4, 1730000013 * S, "done")
    doc["event"]["kind"] = "phase"  # unknown kinds are ignored
    assert DIALECT.decode(doc, INFO) == []


def test_agent_message_keys_and_usage():
    doc = {"type": "assistant", "parent_tool_use_id": "toolu_1", "workflow_run_id": "run-1",
           "workflow_epoch": 2, "workflow_call_key": 5, "workflow_phase": "analyze",
           "message": {"id": "msg_1", "model": "m-1",
                       "usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 7},
                       "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "t1"},
                                   {"type": "tool_use", "id": "t2"}]}}
    (ev,) = DIALECT.decode(doc, INFO)
    assert isinstance(ev, CaudraAgentMessage)
    assert (ev.run_id, ev.epoch, ev.call_key, ev.phase, ev.parent_tool_use_id) == ("run-1", 2, "5", "analyze", "toolu_1")
    assert (ev.role, ev.model, ev.message_id, ev.content) == ("assistant", "m-1", "msg_1", "x")
    assert [c.id for c in ev.tool_calls] == ["t1", "t2"] and ev.tool_results == []
    doc["type"], doc["message"]["content"] = "user", [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}]
    (ev,) = DIALECT.decode(doc, INFO)
    assert [(r.tool_use_id, r.is_error) for r in ev.tool_results] == [("t1", True)] and ev.tool_calls == []
    doc["type"] = "assistant"
    assert ev.usage == Usage(10, 3, 7, None, anthropic=True)
    # a line without workflow_run_id is not a workflow agent's
    del doc["workflow_run_id"]
    assert DIALECT.decode(doc, INFO) == []


def test_automation_fired_example():
    # the automation_fired example of seed 003 "Firings and notices"
    doc = {"type": "system", "subtype": "automation_fired", "fire_id": "3vQBu5nX2kYmR8tL7eHcWd",
           "automation": "deploy-watch", "trigger": "schedule", "trigger_index": 0, "status": "completed",
           "reason": None, "error": None, "queued_at": 1790000000000, "started_at": 1790000000004,
           "finished_at": 1790000000011, "action_count": 1, "first_action": "message"}
    (ev,) = DIALECT.decode(doc, INFO)
    assert isinstance(ev, AutomationFired)
    assert (ev.fire_id, ev.automation, ev.trigger, ev.trigger_index, ev.status) == (
        "3vQBu5nX2kYmR8tL7eHcWd", "deploy-watch", "schedule", 0, "completed")
    assert (ev.queued_ns, ev.started_ns, ev.finished_ns) == (
        1790000000000 * MS, 1790000000004 * MS, 1790000000011 * MS)
    assert ev.error_kind is None and ev.reason is None
    doc.update(status="failed", error={"kind": "script", "message": "boom", "line": 3, "column": 9},
               started_at=None, finished_at=None)
    (ev,) = DIALECT.decode(doc, INFO)
    assert (ev.error_kind, ev.error_message, ev.error_line, ev.error_column) == ("script", "boom", 3, 9)
    assert ev.started_ns is None and ev.finished_ns is None


def test_notice_and_goal():
    (ev,) = DIALECT.decode({"type": "system", "subtype": "automation_notice", "automation": "deploy-watch",
                            "fire_id": "f1", "text": "deploy finished"}, INFO)
    assert isinstance(ev, AutomationNotice) and (ev.automation, ev.fire_id, ev.text) == ("deploy-watch", "f1", "deploy finished")
    # the goal example of seed 003 "Goal events"
    (ev,) = DIALECT.decode({"type": "system", "subtype": "goal", "kind": "evaluation", "verdict": "not_met",
                            "reason": "two tests still fail", "evaluation": 2, "applied": True, "cost": 0.0054,
                            "billing": "api", "model": "anthropic/claude-haiku-4-5",
                            "usage": {"input_tokens": 5, "output_tokens": 1}, "secret_blob": {"a": 1}}, INFO)
    assert isinstance(ev, GoalEvent)
    assert ev.kind == "evaluation"
    assert ev.fields == {"verdict": "not_met", "reason": "two tests still fail", "evaluation": 2,
                         "applied": True, "cost": 0.0054, "billing": "api", "model": "anthropic/claude-haiku-4-5"}
    assert ev.usage == Usage(5, 1, None, None)
    assert DIALECT.decode({"type": "system", "subtype": "goal"}, INFO) == []  # no kind


def test_markers_let_every_caudra_line_through():
    from tests.conftest import EXAMPLES

    decoder = Decoder(load(["caudra"]), Stats())
    for raw in (EXAMPLES / "caudra-workflow.jsonl").read_bytes().splitlines():
        doc = json.loads(raw)
        if decoder.decode(raw):  # a line that yields events must pass the pre-filter
            assert any(m in raw for m in decoder.markers), doc
