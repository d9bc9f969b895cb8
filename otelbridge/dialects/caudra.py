"""Caudra stream-json (``caudra --print --input-format stream-json``): workflows, automations
and goals.

Source: Caudra's "Headless Mode" documentation, sections "Run events", "Firings and notices" and
"Goal events". Caudra's ``assistant``/``user``/``result`` lines are Claude Code shaped and belong
to the session decoder; this dialect reads what only Caudra prints:

* ``system/workflow`` with ``event.kind: "snapshot"`` → :class:`CaudraWorkflowSnapshot`
  (``run_id`` string or integer, ``status``, ``phase``, ``revision``, ``phase_history`` with
  ``started_at`` in **seconds**, the last 200 ``logs`` with ``at`` in seconds);
* ``system/workflow`` with ``event.kind: "log"`` → :class:`CaudraWorkflowLog` (``at``,
  ``message``, ``revision``);
* ``assistant``/``user`` lines carrying ``workflow_run_id`` (with ``workflow_epoch``,
  ``workflow_call_key``, ``workflow_phase`` beside ``parent_tool_use_id``) →
  :class:`CaudraAgentMessage`;
* ``system/automation_fired`` → :class:`AutomationFired` (epoch-**ms** times);
* ``system/automation_notice`` → :class:`AutomationNotice`;
* ``system/goal`` → :class:`GoalEvent`.

Unknown kinds, subtypes and fields are ignored (the protocol evolves additively); wrong types
are dropped field by field.
"""

from __future__ import annotations

from typing import Any

from ..events import (
    AutomationFired,
    AutomationNotice,
    CaudraAgentMessage,
    CaudraLog,
    CaudraPhase,
    CaudraWorkflowLog,
    CaudraWorkflowSnapshot,
    Event,
    GoalEvent,
    ModelCall,
    ToolResult,
    as_int,
    as_key,
    as_str,
    ms_to_ns,
    s_to_ns,
)
from .base import LineInfo, parse_usage
from .claude_code import parse_assistant, parse_user

#: ``phase_history`` and ``logs`` entries read at most per snapshot (logs are the last 200 by
#: the protocol; the cap keeps a hostile snapshot from costing unbounded memory).
MAX_ENTRIES = 10_000

#: ``goal`` fields exported, by wire name (Caudra's headless-mode documentation "Goal events" table); all scalars.
GOAL_FIELDS = (
    "verdict",
    "reason",
    "evaluation",
    "evaluations",
    "applied",
    "cost",
    "subscription_cost",
    "billing",
    "model",
    "duration_ms",
    "continuations",
    "limit",
    "active_background_tasks",
    "message",
    "condition",
)


def _log(entry: Any) -> CaudraLog | None:
    if not isinstance(entry, dict):
        return None
    message = as_str(entry.get("message"))
    if message is None:
        return None
    return CaudraLog(s_to_ns(entry.get("at")), message)


def _error_text(value: Any) -> str | None:
    if isinstance(value, dict):
        return as_str(value.get("message")) or as_str(value.get("kind"))
    return as_str(value)


def _snapshot(doc: dict, event: dict, run_id: str, line: LineInfo) -> CaudraWorkflowSnapshot:
    snap = CaudraWorkflowSnapshot(
        line.session_id,
        line.ts_ns,
        run_id=run_id,
        status=as_str(event.get("status")),
        phase=as_str(event.get("phase")),
        revision=as_int(event.get("revision")),
        name=as_str(event.get("name")),
        error=_error_text(event.get("error")),
        epoch=as_int(doc.get("workflow_epoch")),
    )
    history = event.get("phase_history")
    if isinstance(history, list):
        for entry in history[:MAX_ENTRIES]:
            if isinstance(entry, dict):
                snap.phase_history.append(
                    CaudraPhase(as_str(entry.get("title")), s_to_ns(entry.get("started_at")))
                )
    logs = event.get("logs")
    if isinstance(logs, list):
        for entry in logs[-MAX_ENTRIES:]:
            log = _log(entry)
            if log is not None:
                snap.logs.append(log)
    return snap


def _agent_message(doc: dict, run_id: str, line: LineInfo) -> CaudraAgentMessage:
    """Its content as Claude Code's (the same SDK shape): an ``assistant`` line's text and
    ``tool_use`` blocks, a ``user`` line's ``tool_result`` blocks."""
    msg = doc.get("message")
    if not isinstance(msg, dict):
        msg = {}
    role = doc.get("type")
    ev = CaudraAgentMessage(
        line.session_id,
        line.ts_ns,
        run_id=run_id,
        epoch=as_int(doc.get("workflow_epoch")),
        call_key=as_key(doc.get("workflow_call_key")),
        phase=as_str(doc.get("workflow_phase")),
        parent_tool_use_id=as_str(doc.get("parent_tool_use_id")),
        role=role,
        model=as_str(msg.get("model")),
        message_id=as_str(msg.get("id")),
        usage=parse_usage(msg.get("usage")),
    )
    if role == "assistant":
        for call in parse_assistant(doc, line):
            if isinstance(call, ModelCall):
                ev.tool_calls, ev.content = call.tool_calls, call.content
    elif role == "user":
        ev.tool_results = [r for r in parse_user(doc, line) if isinstance(r, ToolResult)]
    return ev


def _automation_fired(doc: dict, line: LineInfo) -> AutomationFired:
    get = doc.get
    error = get("error")
    if not isinstance(error, dict):
        error = {}
    return AutomationFired(
        line.session_id,
        line.ts_ns,
        fire_id=as_str(get("fire_id")),
        automation=as_str(get("automation")),
        digest=as_str(get("digest")),
        trigger=as_str(get("trigger")),
        trigger_index=as_int(get("trigger_index")),
        event_key=as_str(get("event_key")),
        status=as_str(get("status")),
        reason=as_str(get("reason")),
        error_kind=as_str(error.get("kind")),
        error_message=as_str(error.get("message")),
        error_line=as_int(error.get("line")),
        error_column=as_int(error.get("column")),
        repeats=as_int(get("repeats")),
        attempts=as_int(get("attempts")),
        operations=as_int(get("operations")),
        state_outcome=as_str(get("state_outcome")),
        queued_ns=ms_to_ns(get("queued_at")),
        deferred_until_ns=ms_to_ns(get("deferred_until")),
        started_ns=ms_to_ns(get("started_at")),
        finished_ns=ms_to_ns(get("finished_at")),
        action_count=as_int(get("action_count")),
        first_action=as_str(get("first_action")),
        absorbed=as_str(get("absorbed")),
    )


def _goal(doc: dict, line: LineInfo) -> GoalEvent | None:
    kind = as_str(doc.get("kind"))
    if not kind:
        return None
    fields: dict[str, Any] = {}
    for key in GOAL_FIELDS:
        value = doc.get(key)
        if isinstance(value, str):
            fields[key] = as_str(value)
        elif isinstance(value, bool) or (isinstance(value, int) and -(2**62) < value < 2**62):
            fields[key] = value
        elif isinstance(value, float) and value == value and abs(value) != float("inf"):
            fields[key] = value
    return GoalEvent(line.session_id, line.ts_ns, kind=kind, fields=fields,
                     usage=parse_usage(doc.get("usage")))


class Caudra:
    """The ``caudra`` dialect."""

    name = "caudra"
    #: every line this dialect reads is a ``system`` line with a ``subtype`` (rare next to the
    #: bulk of ``assistant``/``stream_event`` lines) or an agent's ``assistant``/``user`` line
    #: (it carries ``workflow_run_id`` and a ``"message"`` object); the same two markers as
    #: claude_code's, so together they cost two passes over each chunk
    markers = (b"subtype", b'"message')

    def decode(self, doc: dict[str, Any], line: LineInfo) -> list[Event]:
        kind = doc.get("type")
        if kind == "system":
            return self._system(doc, line)
        if kind in ("assistant", "user"):
            run_id = as_key(doc.get("workflow_run_id"))
            if run_id is None:
                return []
            return [_agent_message(doc, run_id, line)]
        return []

    def _system(self, doc: dict[str, Any], line: LineInfo) -> list[Event]:
        subtype = doc.get("subtype")
        if subtype == "workflow":
            event = doc.get("event")
            if not isinstance(event, dict):
                return []
            run_id = as_key(event.get("run_id")) or as_key(doc.get("workflow_run_id"))
            if run_id is None:
                return []
            if event.get("kind") == "snapshot":
                return [_snapshot(doc, event, run_id, line)]
            if event.get("kind") == "log":
                log = _log(event)
                if log is None:
                    return []
                return [
                    CaudraWorkflowLog(
                        line.session_id,
                        line.ts_ns,
                        run_id=run_id,
                        epoch=as_int(doc.get("workflow_epoch")),
                        revision=as_int(event.get("revision")),
                        log=log,
                    )
                ]
            return []
        if subtype == "automation_fired":
            return [_automation_fired(doc, line)]
        if subtype == "automation_notice":
            return [
                AutomationNotice(
                    line.session_id,
                    line.ts_ns,
                    automation=as_str(doc.get("automation")),
                    fire_id=as_str(doc.get("fire_id")),
                    text=as_str(doc.get("text")),
                )
            ]
        if subtype == "goal":
            goal = _goal(doc, line)
            return [goal] if goal is not None else []
        return []


DIALECT = Caudra()
