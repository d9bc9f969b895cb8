"""Workflow runs, their phases and agents → span records.

Rules (docs/span-model.md, "Time" and "Identity and hazards"; the cbc workflow protocol §5–§6):

* a run is keyed by ``(session_id, task_id)``; phases and agents by their ``index`` in the run;
* ``task_progress.workflow_progress`` is an authoritative snapshot; a terminal agent state
  (``done``/``error``/``cached``) is final; an agent missing from a later snapshot is ended at
  that snapshot's time with ``workflow.agent.vanished = true``;
* a terminal agent is emitted at once (so a long workflow shows progress in a backend); phases
  and the root are emitted when the run closes;
* ``task_notification`` is the terminal signal; the run stays open for the grace window (late
  progress still applies: cbc's interrupt path flips agents to ``error`` after ``stopped``), then
  every span of the run ends exactly once; a second notification is counted and ignored;
  progress for a closed run is counted and ignored;
* :meth:`Tracker.finish` (end of input) cuts every window short and ends everything.
"""

from __future__ import annotations

import posixpath
from typing import Any

import msgspec

from ..events import (
    Event,
    SpanEvent,
    SpanLink,
    SpanRecord,
    TaskNotification,
    TaskProgress,
    TaskUpdated,
    TaskUsage,
    WorkflowAgent,
    WorkflowProgress,
    WorkflowStarted,
)
from .base import Context, RunBase, RunTable, SpanRef, interrupted_event, shift_all, span_name
from .budget import ITEM_BYTES, RUN_BYTES, text_bytes

TERMINAL_AGENT_STATES = frozenset({"done", "error", "cached"})

#: Agents per run at most (memory: open runs are bounded by the state budget, :mod:`.budget`).
MAX_AGENTS_PER_RUN = 10_000

NO_TERMINAL_AT_EOF = "no terminal state at end of input"
NO_TERMINAL_AT_RUN_END = "no terminal state when the workflow ended"
RUN_INCOMPLETE = "stream ended before task_notification"

class _Phase(msgspec.Struct):
    index: int
    span_id: int
    title: str | None
    first_seen_ns: int


class _Agent(msgspec.Struct):
    entry: WorkflowAgent
    span_id: int
    first_seen_ns: int
    #: estimated bytes of its entry's strings (:func:`_entry_chars`)
    chars: int = 0
    terminal_seen_ns: int | None = None
    vanished: bool = False
    start_ns: int = 0
    end_ns: int = 0
    emitted: bool = False


class _Run(RunBase):
    task_id: str
    started_ns: int | None = None
    tool_use_id: str | None = None
    name: str | None = None
    description: str | None = None
    usage: TaskUsage | None = None
    end_time_ns: int | None = None
    status: str | None = None
    summary: str | None = None
    notified_ns: int | None = None
    timer: Any = None
    phases: dict[int, _Phase] = msgspec.field(default_factory=dict)
    agents: dict[int, _Agent] = msgspec.field(default_factory=dict)
    #: estimated bytes of the strings its agents hold (the state budget's weight)
    held_chars: int = 0
    #: the attributes every span of the run carries (:func:`_common`)
    common: dict[str, Any] = msgspec.field(default_factory=dict)
    #: its session's ``gen_ai.provider.name`` when known as it started (its agents')
    provider: str | None = None
    #: the session span it started in (its root links to it)
    session_link: SpanRef | None = None


def _common(task_id: str, session_id: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"workflow.task_id": task_id}
    if session_id:
        attrs["gen_ai.conversation.id"] = session_id
    return attrs


def _is_prompt(label: str, prompt: str | None) -> bool:
    """Whether ``label`` is the start of the agent's ``prompt`` (``promptPreview``), or the
    preview, cut short, the start of the label: Claude Code labels an agent so when its
    workflow gave it no label (``"Reply with exactly: wf-alpha"``). Compared case-blind, every
    run of blanks (line ends too) as one space, without a closing ``.`` or ``…``."""
    if not prompt:
        return False
    head = _words(label)
    # (the preview's start is enough: a run of blanks it loses only makes it shorter)
    preview = _words(prompt[:2 * len(label) + 16])
    return bool(head) and bool(preview) and (preview.startswith(head) or head.startswith(preview))


def _words(text: str) -> str:
    return " ".join(text.split()).rstrip(".…").rstrip().casefold()


def _entry_chars(e: WorkflowAgent) -> int:
    # every field is a string or None (the decoder's types): summed without a join
    return (len(e.agent_id or "") + len(e.state or "") + len(e.label or "")
            + len(e.phase_title or "") + len(e.model or "") + len(e.error or "")
            + len(e.result_preview or "") + len(e.prompt_preview or ""))


def _weigh(run: _Run) -> int:
    return (RUN_BYTES + ITEM_BYTES * (len(run.agents) + len(run.phases))
            + text_bytes(run.name, run.description, run.summary) + run.held_chars)


def workflow_display_name(raw: str | None) -> str:
    """The span-name part of ``workflow_name``: the basename after ``path:`` (cbc's form for a
    script started by path, the cbc workflow protocol §5.1), else the name itself."""
    if not raw:
        return "workflow"
    if raw.startswith("path:"):
        base = posixpath.basename(raw[5:].replace("\\", "/").rstrip("/"))
        return base or raw
    return raw


class WorkflowTracker:
    """Workflow runs → span records, through ``ctx.emit``. Never raises on events."""

    def __init__(
        self,
        ctx: Context,
        *,
        max_agents: int = MAX_AGENTS_PER_RUN,
    ) -> None:
        self.ctx = ctx
        self.max_agents = max_agents
        self.table: RunTable[_Run] = RunTable(ctx, close=self._close, weigh=_weigh)
        self.runs = self.table.open
        self._closed = self.table.closed

    # ------------------------------------------------------------------ events in

    def handle(self, ev: Event) -> None:
        """Apply one decoded event."""
        # (exact types: isinstance of a struct class costs ~0.2 µs a miss, and every event
        # passes here)
        kind = type(ev)
        if kind is WorkflowProgress:
            if (ev.session_id, ev.task_id) in self._closed:  # late: its times move no clock
                self.ctx.stats.late_events_ignored += 1
                return
            if ev.newest_ns is None:  # (the decoder sets it; events built by hand may not)
                ev.newest_ns = max((t for a in ev.agents for t in (
                    a.last_progress_ns, a.ended_ns, a.started_ns, a.queued_ns) if t), default=None)
            self.ctx.clock.observe(ev.newest_ns)
            self._progress(ev, self.ctx.clock.at(ev.ts_ns if ev.ts_ns is not None else ev.newest_ns))
        elif kind is WorkflowStarted:
            self._started(ev, self.ctx.clock.at(ev.ts_ns))
        elif kind is TaskUpdated:
            self._updated(ev, self.ctx.clock.at(ev.ts_ns if ev.ts_ns is not None else ev.end_time_ns))
        elif kind is TaskNotification:
            self._notification(ev, self.ctx.clock.at(ev.ts_ns))
        elif kind is TaskProgress and ev.usage is not None:
            # a known run's progress without a snapshot (one per agent's tool use): its usage
            # so far, what the run shows if it is cut off before its notification
            run = self._run_for(ev, ev.task_id, 0, create=False)
            if run is None or run.notified_ns is not None:
                return
            run.usage = ev.usage
        else:
            return
        self.table.recharge()

    def rebase(self, shift: int) -> None:
        """The clock settled: times its open runs took from the anchor move by ``shift`` ns."""
        shift_all(self.runs.values(), shift)

    def finish(self, *, reason: str | None = None) -> None:
        """End of input: close every run now (grace windows cut short). With a ``reason`` (the
        run was cut short: signal, downstream closed) every span ended without its terminal
        signal carries an ``interrupted`` event saying so (``otelbridge.reason``)."""
        for run in list(self.runs.values()):
            self._close(run, reason=reason)

    # ------------------------------------------------------------------ runs

    def _run_for(self, ev: Event, task_id: str, now: int, create: bool) -> _Run | None:
        key = (ev.session_id, task_id)
        run = self.table.lookup(key)
        if run is not None or not create:
            return run
        ref = self.ctx.workflow_ref(ev.session_id, task_id)
        return self.table.create(
            key,
            task_id,
            f"workflow {task_id}",
            lambda trace_id: _Run(
                key=key,
                session_id=ev.session_id,
                task_id=task_id,
                trace_id=trace_id,
                span_id=ref.span_id,
                first_seen_ns=now,
                common=_common(task_id, ev.session_id),
                provider=self.ctx.providers.get(ev.session_id),
                session_link=self.ctx.session_link(ev.session_id),
            ),
            trace_id=ref.trace_id,
        )

    def _started(self, ev: WorkflowStarted, now: int) -> None:
        run = self._run_for(ev, ev.task_id, now, create=True)
        if run is None:
            return
        if run.started_ns is None:
            run.started_ns = now
        run.tool_use_id = ev.tool_use_id or run.tool_use_id
        run.name = ev.workflow_name or run.name
        run.description = ev.description or run.description

    def _updated(self, ev: TaskUpdated, now: int) -> None:
        run = self.table.lookup((ev.session_id, ev.task_id))
        if run is None:
            if (ev.session_id, ev.task_id) in self._closed:
                self.ctx.stats.late_events_ignored += 1
            return
        if ev.end_time_ns is not None:
            run.end_time_ns = ev.end_time_ns
        if ev.status == "killed" and run.notified_ns is None:
            # the interrupt path (§4.1): cbc's wind-down flips to ``error`` can come before
            # ``stopped`` as well as after it; read them alike (the notification still decides)
            run.status = "stopped"

    def _notification(self, ev: TaskNotification, now: int) -> None:
        key = (ev.session_id, ev.task_id)
        run = self.table.lookup(key)
        if run is None:
            if key in self._closed:
                self.ctx.stats.duplicate_notifications += 1
            return
        if run.notified_ns is not None:
            self.ctx.stats.duplicate_notifications += 1
            return
        run.notified_ns = now
        run.status = ev.status or "completed"
        run.summary = ev.summary
        if ev.usage is not None:
            run.usage = ev.usage
        if self.ctx.call_later is not None:
            run.timer = self.ctx.call_later(self.ctx.grace_s, lambda: self._close_if_open(key))

    def _close_if_open(self, key: tuple[str | None, str]) -> None:
        run = self.runs.get(key)
        if run is not None:
            self._close(run)

    # ------------------------------------------------------------------ snapshots

    def _progress(self, ev: WorkflowProgress, now: int) -> None:
        run = self._run_for(ev, ev.task_id, now, create=True)
        if run is None:
            return
        run.tool_use_id = run.tool_use_id or ev.tool_use_id
        if ev.usage is not None and run.notified_ns is None:
            run.usage = ev.usage
        for ph in ev.phases:
            phase = self._phase(run, ph.index, ph.title, now)
            if ph.title:
                phase.title = ph.title
        agents, phases = run.agents, run.phases
        seen: set[int] = set()
        see = seen.add
        for entry in ev.agents:
            index = entry.index
            see(index)
            agent = agents.get(index)
            if agent is None:
                if len(agents) >= self.max_agents:
                    self.ctx.stats.agents_capped += 1
                    continue
                chars = _entry_chars(entry)
                agent = _Agent(entry, self.ctx.ids.span_id(run.trace_id, "agent", str(index)), now,
                               chars)
                agents[index] = agent
                run.held_chars += chars
            elif agent.emitted or agent.terminal_seen_ns is not None:
                continue  # terminal states are final
            elif entry is agent.entry:  # the decoder hands an unchanged entry over as is
                continue  # (its phase and state were applied when it was new)
            else:
                chars = _entry_chars(entry)
                run.held_chars += chars - agent.chars
                agent.entry, agent.chars = entry, chars
            phase_index = entry.phase_index
            if phase_index is not None:
                phase = phases.get(phase_index)
                if phase is None or (not phase.title and entry.phase_title):
                    self._phase(run, phase_index, entry.phase_title, now)
            if entry.state in TERMINAL_AGENT_STATES:
                agent.terminal_seen_ns = now
                self._emit_agent(run, agent, end_fallback=now)
        if agents.keys() - seen:  # (one set pass when none is missing, the common case)
            for index, agent in agents.items():
                if index not in seen and not agent.emitted:
                    agent.vanished = True
                    self._emit_agent(run, agent, end_fallback=now, force_end=now)

    def _phase(self, run: _Run, index: int, title: str | None, now: int) -> _Phase:
        phase = run.phases.get(index)
        if phase is None:
            phase = _Phase(index, self.ctx.ids.span_id(run.trace_id, "phase", str(index)), title, now)
            run.phases[index] = phase
        elif not phase.title and title:
            phase.title = title
        return phase

    # ------------------------------------------------------------------ records

    def _common(self, run: _Run) -> dict[str, Any]:
        return dict(run.common)

    def _emit_agent(
        self,
        run: _Run,
        agent: _Agent,
        *,
        end_fallback: int,
        force_end: int | None = None,
        error: str | None = None,
        interrupted_at: int | None = None,
        reason: str | None = None,
    ) -> None:
        e = agent.entry
        started, state, index, label = e.started_ns, e.state, e.index, e.label
        if label and not self.ctx.capture_content and _is_prompt(label, e.prompt_preview):
            label = None  # the CLI named the agent by the start of its prompt: content
        start = started or e.queued_ns or agent.first_seen_ns
        cached = state == "cached"
        if force_end is not None:
            end = force_end
        elif cached:
            end = start
        elif e.ended_ns is not None:
            end = e.ended_ns
        elif started is not None and e.duration_ms is not None:
            # Claude Code counts durationMs from when the agent got its agentId, which can be
            # seconds after startedAt; its last progress is then the later, true end
            end = max(started + e.duration_ms * 1_000_000, e.last_progress_ns or 0)
        else:
            end = end_fallback
        if end < start:
            end = start
        agent.start_ns, agent.end_ns, agent.emitted = start, end, True
        attrs = {**run.common, "gen_ai.operation.name": "invoke_agent",
                 "workflow.agent.index": index, "workflow.agent.state": state or "unknown",
                 "workflow.agent.cached": cached, "workflow.agent.vanished": agent.vanished}
        if label:
            attrs["gen_ai.agent.name"] = label
        if run.provider:
            attrs["gen_ai.provider.name"] = run.provider
        if e.agent_id:
            attrs["gen_ai.agent.id"] = e.agent_id
        if e.model:
            attrs["gen_ai.request.model"] = e.model
        if e.tokens is not None:
            attrs["workflow.agent.tokens"] = e.tokens
        if e.tool_calls is not None:
            attrs["workflow.agent.tool_calls"] = e.tool_calls
        if e.attempt is not None:
            attrs["workflow.agent.attempt"] = e.attempt
        phase = run.phases.get(e.phase_index)  # (no phase: ``None``, never a key)
        if e.phase_index is not None:
            attrs["workflow.phase.index"] = e.phase_index
        if self.ctx.capture_content:
            if e.prompt_preview:
                attrs["workflow.agent.prompt_preview"] = e.prompt_preview
            if e.result_preview:
                attrs["workflow.agent.result_preview"] = e.result_preview
        rec = SpanRecord(
            span_name("invoke_agent", label, f"#{index}"), run.trace_id,
            agent.span_id, run.span_id if phase is None else phase.span_id, start, end, attrs,
        )
        if e.state == "error" and run.status == "stopped":
            # wound down by the stop (cbc flips each agent to error after it: "subagent
            # aborted: …"): interrupted, as the agents the stop left open; not a failure
            interrupted_at, reason = interrupted_at or end, e.error or "stopped"
        elif e.state == "error":
            rec.error = e.error or "agent error"
            rec.error_type = "agent_error"
        elif error is not None:
            rec.error = error
            rec.error_type = "incomplete"
        if interrupted_at is not None:
            at = max(interrupted_at, start)
            rec.events.append(interrupted_event(at, reason) if reason else SpanEvent("interrupted", at))
        self.ctx.emit(rec)

    def _close(self, run: _Run, *, reason: str | None = None) -> None:
        """End every span of ``run`` exactly once and forget it."""
        self.table.close(run)

        notified = run.notified_ns is not None
        if notified:
            base_end = run.end_time_ns or run.notified_ns
        else:
            base_end = max(self.ctx.clock.now(), run.end_time_ns or 0)
        stopped = run.status == "stopped"
        for agent in run.agents.values():
            if agent.emitted:
                continue
            if not notified:
                self._emit_agent(run, agent, end_fallback=base_end, force_end=base_end,
                                 error=NO_TERMINAL_AT_EOF if reason is None
                                 else f"no terminal state: {reason}",
                                 interrupted_at=None if reason is None else base_end,
                                 reason=reason)
            elif stopped:
                self._emit_agent(run, agent, end_fallback=base_end, force_end=base_end,
                                 interrupted_at=run.notified_ns)
            else:
                self._emit_agent(run, agent, end_fallback=base_end, force_end=base_end,
                                 error=NO_TERMINAL_AT_RUN_END)

        # phases: earliest agent start .. latest agent end; agent-less ones to the next phase.
        # One walk over the agents: each phase's bounds, the run's latest end, the earliest start
        bounds: dict[int, list[int]] = {}
        run_end, earliest = base_end, None
        for agent in run.agents.values():
            start, end = agent.start_ns, agent.end_ns
            if end > run_end:
                run_end = end
            if earliest is None or start < earliest:
                earliest = start
            index = agent.entry.phase_index
            if index is not None:
                b = bounds.get(index)
                if b is None:
                    bounds[index] = [start, end]
                else:
                    if start < b[0]:
                        b[0] = start
                    if end > b[1]:
                        b[1] = end
        spans: list[tuple[_Phase, int, int | None]] = []
        for index in sorted(run.phases):
            phase = run.phases[index]
            b = bounds.get(index)
            spans.append((phase, b[0], b[1]) if b is not None
                         else (phase, phase.first_seen_ns, None))  # (its end settled below)
        settled: list[tuple[_Phase, int, int]] = []
        for i, (phase, start, end) in enumerate(spans):
            if end is None:
                # no agent ran in it. Every phase is listed from the first snapshot on, so it
                # began no earlier than the phase before it ended (one never reached: after the last)
                if settled:
                    start = min(max(start, settled[-1][2]), run_end)
                nxt = spans[i + 1] if i + 1 < len(spans) else None
                if nxt is not None and nxt[2] is not None:  # to where the next one (agents) starts:
                    start, end = min(start, nxt[1]), nxt[1]  # (zero length when phases overlap)
                else:
                    end = nxt[1] if nxt is not None and nxt[1] >= start else run_end
            settled.append((phase, start, max(end, start)))

        # root: end_time − duration_ms when both known (and the duration is one: not longer than
        # the time since the epoch), else task_started, never after a child
        duration = run.usage.duration_ms if run.usage else None
        if (run.end_time_ns is not None and duration is not None
                and 0 <= duration * 1_000_000 <= run.end_time_ns):
            root_start = run.end_time_ns - duration * 1_000_000
        else:
            root_start = run.started_ns if run.started_ns is not None else run.first_seen_ns
        child_starts = [s for _, s, _ in settled]
        if earliest is not None:
            child_starts.append(earliest)
        if child_starts:
            root_start = min(root_start, min(child_starts))
        root_end = max([run_end, root_start] + [e for _, _, e in settled])

        for phase, start, end in settled:
            attrs = self._common(run)
            attrs["workflow.phase.index"] = phase.index
            if phase.title:
                attrs["workflow.phase.title"] = phase.title
            self.ctx.emit(
                SpanRecord(
                    name=span_name("phase", phase.title, f"#{phase.index}"),
                    trace_id=run.trace_id,
                    span_id=phase.span_id,
                    parent_span_id=run.span_id,
                    start_ns=start,
                    end_ns=end,
                    attributes=attrs,
                )
            )
        self.ctx.emit(self._root_record(run, root_start, root_end, notified, reason))

    def _root_record(
        self, run: _Run, start: int, end: int, notified: bool, reason: str | None = None
    ) -> SpanRecord:
        status = run.status if notified else "incomplete"
        attrs = self._common(run)
        attrs["gen_ai.operation.name"] = "invoke_workflow"
        attrs["workflow.status"] = status
        if run.name:
            attrs["workflow.name"] = run.name
        if run.tool_use_id:
            attrs["workflow.tool_use_id"] = run.tool_use_id
        if run.description:
            attrs["workflow.description"] = run.description
        if run.usage is not None:
            for key, value in (
                ("workflow.usage.total_tokens", run.usage.total_tokens),
                ("workflow.usage.tool_uses", run.usage.tool_uses),
                ("workflow.usage.duration_ms", run.usage.duration_ms),
            ):
                if value is not None:
                    attrs[key] = value
        parent_span_id, remote = self.ctx.root_parent()
        rec = SpanRecord(
            name=span_name("invoke_workflow", workflow_display_name(run.name), "workflow"),
            trace_id=run.trace_id,
            span_id=run.span_id,
            parent_span_id=parent_span_id,
            parent_remote=remote,
            start_ns=start,
            end_ns=end,
            attributes=attrs,
        )
        # the session span that started the workflow (tracker/sessions.py links back)
        session = run.session_link or self.ctx.session_ref(run.session_id)
        rec.links.append(SpanLink(session.trace_id, session.span_id, {"otelbridge.link": "session"}))
        if not notified:
            rec.error, rec.error_type = RUN_INCOMPLETE, "incomplete"
            if reason is not None:
                rec.error = f"{reason} before task_notification"
                rec.events.append(interrupted_event(end, reason))
        elif status == "failed":
            summary = run.summary if self.ctx.capture_content else None  # its output: content
            rec.error = summary or "workflow failed"
            rec.error_type = "workflow_failed"
        elif status == "stopped":
            rec.events.append(SpanEvent("interrupted", max(run.notified_ns or start, start)))
        return rec
