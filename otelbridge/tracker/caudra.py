"""Caudra workflow runs, automation firings, goal events and notices → span records.

Source: Caudra's headless-mode documentation (Caudra "Headless Mode"): "Run events", "Firings and notices", "Goal events",
"Restart and resume"; span names and keys by docs/span-model.md.

Workflow runs (``system/workflow``):

* a run is keyed by ``(session_id, run_id)`` and is the root ``invoke_workflow {name}``;
* each ``phase_history`` entry is a ``phase {title}`` child, identified by ``(title,
  started_at)`` — a re-entered phase is a new span; a phase runs from its ``started_at``
  (seconds → ns) to the next entry's start, the last one to the run's end;
* log lines (``log`` events and the ``logs`` a snapshot repeats) become ``workflow.log`` span
  events at their ``at`` time, once each (deduplicated by time and text), on the phase that was
  running at that time (else the root);
* agents (``assistant``/``user`` lines with ``workflow_run_id``) become ``invoke_agent``
  children of the phase of their ``workflow_phase`` title that was running when the agent was
  first seen (else the latest phase of that title, else the root), their tool calls
  ``execute_tool`` children of theirs (:mod:`.caudra_agents`);
* terminal statuses (:data:`TERMINAL_STATUSES`) end the run after the grace window
  (``ctx.grace_s``; late logs and agent lines still land); ``paused`` is not terminal: a
  ``paused`` event, and a ``resumed`` event when ``workflow_epoch`` rises; a run still paused at
  end of input ends with ``workflow.status = paused`` and no error; any other run open at end of
  input ends with ``workflow.status = incomplete`` and ERROR :data:`RUN_INCOMPLETE`.

Automations and goals belong to the session: ``automation_fired`` → an ``automation {name}``
child of the session span (``ctx.session_ref``), from ``started_at`` (else ``queued_at``) to
``finished_at`` (else zero-length: the stream tells no end), ERROR when ``failed``, the
session span ending no earlier; ``automation_notice`` → an
``automation_notice`` event on its firing's span when that firing is still to come, else a
session event; ``goal`` → a ``goal.{kind}`` session event. Session events go through
``ctx.session_event`` (the session span's owner takes them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..events import (
    AutomationFired,
    AutomationNotice,
    CaudraAgentMessage,
    CaudraLog,
    CaudraWorkflowLog,
    CaudraWorkflowSnapshot,
    Event,
    GoalEvent,
    SpanEvent,
    SpanLink,
    SpanRecord,
)
from .base import (
    Context,
    Recent,
    RunBase,
    event_bytes,
    RunTable,
    interrupted_event,
    put_attributes,
    shift_all,
    span_name,
    usage_attributes,
)
from .budget import ITEM_BYTES, REF_BYTES, RUN_BYTES, text_bytes
from .caudra_agents import Agent, WorkflowAgents

#: status → ``workflow.status`` for the statuses that end a run (Caudra's headless-mode documentation: "completed" and
#: "finished" both mean done; "interrupted" is a run left active at shutdown, not an error).
TERMINAL_STATUSES = {
    "completed": "completed",
    "finished": "completed",
    "failed": "failed",
    "stopped": "stopped",
    "interrupted": "stopped",
}
PAUSED = "paused"

#: Caps that keep memory bounded by design, not by stream length.
MAX_PHASES_PER_RUN = 10_000
MAX_LOGS_PER_RUN = 10_000
MAX_PENDING_NOTICES = 1_024
#: notices held in all for firings not seen yet; beyond, they go to the session at once
MAX_PENDING_NOTICE_EVENTS = 10_000

RUN_INCOMPLETE = "stream ended before a terminal workflow status"


def workflow_key(run_id: str) -> str:
    """The key of a Caudra run among a session's workflows (``Context.workflow_ref``; the
    deterministic trace id hashes it in place of a cbc ``task_id``)."""
    return f"caudra:{run_id}"


class _Run(RunBase):
    run_id: str
    name: str | None = None
    status: str | None = None
    error: str | None = None
    revision: int | None = None
    epoch: int | None = None
    terminal_ns: int | None = None
    timer: Any = None
    #: (title, started_ns) → first time seen (the start when ``started_at`` is missing)
    phases: dict[tuple[str | None, int | None], int] = msgspec.field(default_factory=dict)
    logs: dict[tuple[int, str], int | None] = msgspec.field(default_factory=dict)
    agents: dict[tuple, Agent] = msgspec.field(default_factory=dict)
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    #: estimated bytes of its logs' text and its agents' usage entries and tools (the budget's weight)
    held_chars: int = 0


def _weigh(run: _Run) -> int:
    return (RUN_BYTES + ITEM_BYTES * (len(run.agents) + len(run.phases) + len(run.events))
            + REF_BYTES * len(run.logs) + text_bytes(run.name, run.error) + run.held_chars)


class CaudraTracker:
    """Caudra events → span records through ``ctx.emit``. Never raises on events."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.table: RunTable[_Run] = RunTable(ctx, close=self._close, weigh=_weigh)
        self.runs = self.table.open
        self.agents = WorkflowAgents(ctx)
        self._fired = Recent()
        self._anonymous = 0
        #: fire_id → notices that came before their firing: (session_id, event)
        self._notices: dict[str, list[tuple[str | None, SpanEvent]]] = {}
        self._notices_held = 0
        self._notice_bytes: dict[str, int] = {}
        self._handlers: dict[type, Callable[[Any], None]] = {
            CaudraWorkflowSnapshot: self._snapshot,
            CaudraWorkflowLog: self._log_event,
            CaudraAgentMessage: self._agent_message,
            AutomationFired: self._automation,
            AutomationNotice: self._notice,
            GoalEvent: self._goal,
        }

    # ------------------------------------------------------------------ events in

    def handle(self, ev: Event) -> None:
        handler = self._handlers.get(type(ev))
        if handler is not None:
            handler(ev)
            self.table.recharge()

    def rebase(self, shift: int) -> None:
        """The clock settled: times its open runs took from the anchor move by ``shift`` ns."""
        shift_all(self.runs.values(), shift)

    def finish(self, *, reason: str | None = None) -> None:
        """End of input: every run closes now (grace windows cut short); notices whose firing
        never came go to the session. With a ``reason`` (see :meth:`Tracker.finish`) a root
        without its terminal event carries an ``interrupted`` event with ``otelbridge.reason``."""
        for run in list(self.runs.values()):
            self._close(run, reason=reason)
        for fire_id in list(self._notices):
            for session_id, event in self._take_notices(fire_id):
                self.ctx.session_event(session_id, event)

    # ------------------------------------------------------------------ runs

    def _run_for(self, ev: Event, run_id: str, now: int) -> _Run | None:
        key = (ev.session_id, run_id)
        run = self.table.lookup(key)
        if run is not None:
            return run
        # the ids every part agrees on (the session span links to this root by them)
        ref = self.ctx.workflow_ref(ev.session_id, workflow_key(run_id))
        return self.table.create(
            key,
            workflow_key(run_id),
            f"workflow {run_id}",
            lambda trace_id: _Run(
                key=key,
                session_id=ev.session_id,
                run_id=run_id,
                trace_id=trace_id,
                span_id=ref.span_id,
                first_seen_ns=now,
            ),
            trace_id=ref.trace_id,
        )

    def _epoch(self, run: _Run, epoch: int | None, now: int) -> None:
        if epoch is None:
            return
        if run.epoch is not None and epoch > run.epoch:
            run.events.append(SpanEvent("resumed", now, {"workflow.epoch": epoch}))
        if run.epoch is None or epoch > run.epoch:
            run.epoch = epoch

    def _snapshot(self, ev: CaudraWorkflowSnapshot) -> None:
        times = [p.started_ns for p in ev.phase_history] + [log.at_ns for log in ev.logs]
        self.ctx.clock.observe(max((t for t in times if t is not None), default=None))
        now = self.ctx.clock.at(ev.ts_ns)
        run = self._run_for(ev, ev.run_id, now)
        if run is None:
            return
        run.name = ev.name or run.name
        if ev.revision is not None:
            run.revision = max(ev.revision, run.revision or 0)
        self._epoch(run, ev.epoch, now)
        for phase in ev.phase_history:
            key = (phase.title, phase.started_ns)
            if key not in run.phases:
                if len(run.phases) >= MAX_PHASES_PER_RUN:
                    self.ctx.stats.events_capped += 1
                    continue
                run.phases[key] = now
        for log in ev.logs:
            self._add_log(run, log, None, now)
        if ev.error:
            run.error = ev.error
        status = ev.status
        if not status:
            return
        if status == PAUSED and run.status != PAUSED:
            run.events.append(SpanEvent("paused", now, put_attributes({}, [("workflow.revision", run.revision)])))
        if run.terminal_ns is None or status in TERMINAL_STATUSES:
            run.status = status
        if status in TERMINAL_STATUSES and run.terminal_ns is None:
            run.terminal_ns = now
            if self.ctx.call_later is not None:
                key = run.key
                run.timer = self.ctx.call_later(self.ctx.grace_s, lambda: self._close_if_open(key))

    def _log_event(self, ev: CaudraWorkflowLog) -> None:
        if ev.log is None:
            return
        self.ctx.clock.observe(ev.log.at_ns)
        now = self.ctx.clock.at(ev.ts_ns)
        run = self._run_for(ev, ev.run_id, now)
        if run is None:
            return
        self._epoch(run, ev.epoch, now)
        self._add_log(run, ev.log, ev.revision, now)

    def _add_log(self, run: _Run, log: CaudraLog, revision: int | None, now: int) -> None:
        key = (log.at_ns if log.at_ns is not None else now, log.message)
        if key in run.logs:
            return
        if len(run.logs) >= MAX_LOGS_PER_RUN:
            self.ctx.stats.events_capped += 1
            return
        run.logs[key] = revision
        run.held_chars += text_bytes(log.message)

    def _agent_message(self, ev: CaudraAgentMessage) -> None:
        now = self.ctx.clock.at(ev.ts_ns)
        run = self._run_for(ev, ev.run_id, now)
        if run is None:
            return
        self._epoch(run, ev.epoch, now)
        run.held_chars += self.agents.message(run.agents, run.trace_id, lambda: self._common(run), ev, now)

    def _close_if_open(self, key: tuple[str | None, str]) -> None:
        run = self.runs.get(key)
        if run is not None:
            self._close(run)

    # ------------------------------------------------------------------ records

    def _common(self, run: _Run) -> dict[str, Any]:
        return put_attributes({}, (("workflow.run_id", run.run_id),
                                   ("gen_ai.conversation.id", run.session_id or None)))

    def _close(self, run: _Run, *, reason: str | None = None) -> None:
        """End every span of ``run`` exactly once and forget it."""
        self.table.close(run)

        # phases in start order; one without started_at starts where it was first seen
        phases = sorted(
            ((start if start is not None else seen, title) for (title, start), seen in run.phases.items()),
            key=lambda p: p[0],
        )
        agent_times = [t for a in run.agents.values() for t in (a.first_ns, a.last_ns)]
        log_times = [at for at, _ in run.logs]
        starts = [s for s, _ in phases]
        if run.terminal_ns is not None:
            end = run.terminal_ns
        else:
            end = self.ctx.clock.now()
        end = max([end] + starts + agent_times + log_times)
        start = min([run.first_seen_ns] + starts + agent_times + log_times)

        spans: list[tuple[str | None, int, int, int]] = []  # title, start, end, span id
        for i, (p_start, title) in enumerate(phases):
            p_end = phases[i + 1][0] if i + 1 < len(phases) else end
            span_id = self.ctx.ids.span_id(run.trace_id, "phase", str(i))
            spans.append((title, p_start, max(p_end, p_start), span_id))

        def phase_at(t: int, title: str | None = None) -> int | None:
            """Index of the phase running at ``t`` (of ``title`` when given)."""
            found = None
            for i, (p_title, p_start, _, _) in enumerate(spans):
                if title is not None and p_title != title:
                    continue
                if p_start <= t:
                    found = i
                elif found is None and title is not None:
                    found = i  # the agent came before its phase was recorded
            return found

        phase_events: dict[int, list[SpanEvent]] = {}
        root_events = list(run.events)
        for (at, message), revision in sorted(run.logs.items(), key=lambda kv: kv[0][0]):
            attrs: dict[str, Any] = {"workflow.log.message": message}
            if revision is not None:
                attrs["workflow.revision"] = revision
            event = SpanEvent("workflow.log", at, attrs)
            i = phase_at(at)
            (phase_events.setdefault(i, []) if i is not None else root_events).append(event)

        for agent in run.agents.values():
            # its own phase title decides; without one, the phase running when it started
            i = phase_at(agent.first_ns, agent.phase) if agent.phase else phase_at(agent.first_ns)
            self.agents.end(agent, run.trace_id, self._common(run), spans[i][3] if i is not None else run.span_id,
                            reason if run.terminal_ns is None else None)

        for i, (title, p_start, p_end, span_id) in enumerate(spans):
            attrs = self._common(run)
            attrs["workflow.phase.index"] = i
            if title:
                attrs["workflow.phase.title"] = title
            self.ctx.emit(
                SpanRecord(
                    name=span_name("phase", title, f"#{i}"),
                    trace_id=run.trace_id,
                    span_id=span_id,
                    parent_span_id=run.span_id,
                    start_ns=p_start,
                    end_ns=p_end,
                    attributes=attrs,
                    events=phase_events.get(i, []),
                )
            )
        root = self._root_record(run, start, end, root_events)
        if reason is not None and root.error_type == "incomplete":
            root.error = f"{reason} before a terminal workflow status"  # the stream did not end
            root.events.append(interrupted_event(end, reason))
        self.ctx.emit(root)

    def _root_record(self, run: _Run, start: int, end: int, events: list[SpanEvent]) -> SpanRecord:
        raw = run.status
        if run.terminal_ns is not None:
            status = TERMINAL_STATUSES.get(raw or "", "completed")
        elif raw == PAUSED:
            status = PAUSED
        else:
            status = "incomplete"
        attrs = self._common(run)
        attrs["gen_ai.operation.name"] = "invoke_workflow"
        attrs["workflow.status"] = status
        if run.name:
            attrs["workflow.name"] = run.name
        if run.revision is not None:
            attrs["workflow.revision"] = run.revision
        if run.epoch is not None:
            attrs["workflow.epoch"] = run.epoch
        parent_span_id, remote = self.ctx.root_parent()
        rec = SpanRecord(
            name=span_name("invoke_workflow", run.name, "workflow"),
            trace_id=run.trace_id,
            span_id=run.span_id,
            parent_span_id=parent_span_id,
            parent_remote=remote,
            start_ns=start,
            end_ns=end,
            attributes=attrs,
            events=sorted(events, key=lambda e: e.time_ns),
        )
        session = self.ctx.session_ref(run.session_id)  # tracker/sessions.py links back
        rec.links.append(SpanLink(session.trace_id, session.span_id, {"otelbridge.link": "session"}))
        if status == "incomplete":
            rec.error, rec.error_type = RUN_INCOMPLETE, "incomplete"
        elif status == "failed":
            rec.error = run.error or "workflow failed"
            rec.error_type = "workflow_failed"
        elif status == "stopped":
            rec.events.append(
                SpanEvent("interrupted", run.terminal_ns or end, {"workflow.status": raw or status})
            )
        return rec

    # ------------------------------------------------------------------ session level

    def _automation(self, ev: AutomationFired) -> None:
        for t in (ev.queued_ns, ev.started_ns, ev.finished_ns):
            self.ctx.clock.observe(t)
        now = self.ctx.clock.at(ev.ts_ns)
        start = ev.started_ns or ev.queued_ns or now
        # ended (a firing is reported once it has); without finished_at (never started: rate
        # limited, skipped, dropped; or failed) the stream tells no end: none is made up
        end = ev.finished_ns if ev.finished_ns is not None else start
        ref = self.ctx.session_ref(ev.session_id)
        self._anonymous += 0 if ev.fire_id else 1
        key = ev.fire_id or f"#{self._anonymous}"
        attrs = put_attributes({}, (
            ("gen_ai.conversation.id", ev.session_id),
            ("automation.name", ev.automation),
            ("automation.fire_id", ev.fire_id),
            ("automation.digest", ev.digest),
            ("automation.trigger", ev.trigger),
            ("automation.event_key", ev.event_key),
            ("automation.status", ev.status),
            ("automation.reason", ev.reason),
            ("automation.error.kind", ev.error_kind),
            ("automation.error.message", ev.error_message),
            ("automation.state_outcome", ev.state_outcome),
            ("automation.first_action", ev.first_action),
            ("automation.absorbed", ev.absorbed),
            ("automation.trigger_index", ev.trigger_index),
            ("automation.error.line", ev.error_line),
            ("automation.error.column", ev.error_column),
            ("automation.repeats", ev.repeats),
            ("automation.attempts", ev.attempts),
            ("automation.operations", ev.operations),
            ("automation.action_count", ev.action_count),
        ))
        events = []
        if ev.deferred_until_ns is not None:
            events.append(SpanEvent("deferred", ev.queued_ns or start,
                                    {"automation.deferred_until": ev.deferred_until_ns // 1_000_000}))
        if ev.fire_id:
            waiting = self._take_notices(ev.fire_id)
            events.extend(event for _, event in waiting)
            self._fired.add(ev.fire_id)
        rec = SpanRecord(
            name=span_name("automation", ev.automation, "automation"),
            trace_id=ref.trace_id,
            span_id=self.ctx.ids.span_id(ref.trace_id, "automation", key),
            parent_span_id=ref.span_id,
            start_ns=start,
            end_ns=max(end, start),
            attributes=attrs,
            events=events,
        )
        if ev.status == "failed":
            rec.error = (ev.error_message or ev.error_kind or "automation failed")
            rec.error_type = ev.error_kind or "automation_failed"
        self.ctx.emit(rec)
        self.ctx.cover_session(ev.session_id, rec.end_ns)

    def _notice(self, ev: AutomationNotice) -> None:
        attrs = put_attributes({}, (
            ("automation.name", ev.automation),
            ("automation.fire_id", ev.fire_id),
            ("automation.notice.text", ev.text),
        ))
        event = SpanEvent("automation_notice", self.ctx.clock.at(ev.ts_ns), attrs)
        if ev.fire_id and ev.fire_id not in self._fired:
            pending = self._notices.get(ev.fire_id)
            if pending is None and len(self._notices) < MAX_PENDING_NOTICES:
                pending = self._notices[ev.fire_id] = []
            if pending is not None and self._notices_held < MAX_PENDING_NOTICE_EVENTS:
                pending.append((ev.session_id, event))
                self._notices_held += 1
                fire_id = ev.fire_id
                weight = self._notice_bytes[fire_id] = self._notice_bytes.get(fire_id, 0) + event_bytes(event)
                self.ctx.budget.charge(("notices", id(self), fire_id), weight,
                                       lambda _reason: self._drop_notices(fire_id))
                return
        self.ctx.session_event(ev.session_id, event)

    def _take_notices(self, fire_id: str) -> list[tuple[str | None, SpanEvent]]:
        waiting = self._notices.pop(fire_id, [])
        self._notices_held -= len(waiting)
        self._notice_bytes.pop(fire_id, None)
        self.ctx.budget.release(("notices", id(self), fire_id))
        return waiting

    def _drop_notices(self, fire_id: str) -> None:
        """The state budget lets go of the notices waiting for ``fire_id`` (counted)."""
        self.ctx.stats.session_events_capped += len(self._take_notices(fire_id))

    def _goal(self, ev: GoalEvent) -> None:
        attrs: dict[str, Any] = {"goal.kind": ev.kind}
        put_attributes(attrs, (
            (f"goal.{key}", value)
            for key, value in ev.fields.items()
            # the goal's text is the user's prompt: content, opt-in
            if key != "condition" or self.ctx.capture_content
        ))
        if ev.usage is not None:
            attrs.update(usage_attributes(ev.usage))
        event = SpanEvent(f"goal.{ev.kind}", self.ctx.clock.at(ev.ts_ns), attrs)
        self.ctx.session_event(ev.session_id, event)
