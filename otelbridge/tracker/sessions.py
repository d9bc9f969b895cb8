"""Sessions and turns → span records (docs/span-model.md, "Spans", "Turns"; milk: milk's stream-json contract, ADR-0050).

* a **session** (``invoke_agent {agent}``) runs from its first line to its last ``result`` (at
  end of input at the latest); its parent is the wrapper's run span, else ``TRACEPARENT``, else
  none; it links every workflow root it started;
* a **turn** (``turn {n}``) opens at each ``system/init`` and, when none is open, at a top-level
  ``user``/``assistant`` line (older CLIs print one ``init``; Caudra: its ``turn_start``, whose
  ``run_id`` and counts the turn carries). Bookkeeping lines never open one;
* results pair with turns in order: a ``result`` belongs to the oldest turn still without one
  (``result_index`` is recorded as ``turn.result_index``). The open turn ends at its result
  (starting no later than result time − ``duration_ms``); a turn the next ``init`` closed ends at
  its start + ``duration_ms`` when its result comes, else, at the session's end, at the next
  turn's start with ``turn.result`` = false. Only the turn open at end of input is ERROR
  ``incomplete``;
* usage: a turn carries its result's usage (its model calls' sum when the result says 0 for
  every count while they reported tokens: an interrupted turn); the session its total: the
  latest ``modelUsage`` summed over models (cumulative: every model call so far, sub-agents'
  and the CLI's own side calls included; ``session.usage.source`` = ``modelUsage``) plus the
  model calls whose last line came after it, else its turns' results' ``usage`` and its
  sub-agents' calls (``results``, :func:`~.results.results_total`), else its calls (``calls``);
  Claude Code's ``total_cost_usd`` is cumulative per process (a value below the previous
  result's, an interrupted turn's 0, keeps that one; a new process's, which counts from 0
  again, adds to it: :func:`~.results.on_session_scale`): a turn's ``turn.cost_usd`` is the
  difference from the previous result's, the session's the last value. ``is_error: true`` is
  an ERROR whatever the ``subtype``, described by its ``errors``/``error``, else its ``result``
  text (the CLI's error report), else its ``subtype`` or ``terminal_reason`` other than
  ``success``, else ``result is_error``;
* a later ``init`` that changes the model or CLI version adds a ``session.changed`` event with
  the new values, a changed ``cwd`` ``session.cwd_changed`` (a path is not exported); the session
  span keeps the first values; the turn it opens carries its model as ``gen_ai.request.model``
  (every turn carries the model it began with);
* times: the line's own timestamp, else the clock (:mod:`otelbridge.clock`); when the clock
  settles on the stream (:meth:`SessionTracker.rebase`) or ``auto`` switches to it mid-session,
  the times taken so far move with it; end ≥ start always; every span ends once.

Model calls and tools: :mod:`.calls`; sub-agents and tasks: :mod:`.subagents`; session
events: :mod:`.marks`.

Memory: a session and each item open in it are charged to the state budget (:mod:`.charges`)
and released when they end (milk's final ``result``, end of input, or the budget ending the least
recently active item early, counted in ``state_budget_ended``); remembered ids are bounded per
session (:data:`MAX_ITEMS`), events per session span (:data:`~.marks.MAX_EVENTS`).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any

import msgspec

from ..clock import SKEW_NS
from ..events import (
    CaudraWorkflowLog, CaudraWorkflowSnapshot, Event, LineSeq, ModelCall, ModelStreaming,
    SessionError, SessionMark, SessionStarted, SpanEvent, SpanLink, SpanRecord,
    TaskNotification, TaskProgress, TaskStarted, TaskUpdated, ToolResult, TurnResult,
    TurnStarted, Usage, UserMessage, WorkflowProgress, WorkflowStarted)
from .base import Context, Refs, collapse_wall_times, interrupted_event, put_attributes, remember, shift_times, span_name
from .calls import MAX_ITEMS, CallsMixin, usage_attrs
from .charges import SESSION, ChargesMixin, session_text
from .marks import MarksMixin
from .quiet import QuietMixin
from .caudra import workflow_key as caudra_workflow_key
from .results import (add_result, count_turn, duplicate_result, model_counts, on_session_scale,
                      result_attributes, result_error, results_total, says_interrupted,
                      session_result_attributes, turn_usage, uncounted)
from .state import MAX_CLOSED_REMEMBERED, Session, Turn
from .subagents import AGENT_TASK_TYPES, NO_TERMINAL, NO_TOOL_RESULT, SubagentsMixin

__all__ = ["AGENT_TASK_TYPES", "MAX_ITEMS", "NO_RESULT", "NO_TERMINAL", "NO_TOOL_RESULT",
           "SessionTracker"]

#: Workflow links per session.
MAX_LINKS = 128

#: Session name when the stream never said (no ``system/init``: only Claude Code streams lack
#: one in practice; milk's init is always first, milk's stream-json contract, ADR-0050 §1).
DEFAULT_AGENT = "claude-code"
NO_RESULT = "stream ended before result"
NEXT_RUN = "the next run began before its result"
NO_TOOL_RESULT_IN_TURN = "no tool_result before the turn's result"
#: a turn a ``prevent_continuation`` notice stopped before any model call (its result: success)
STOPPED_BEFORE_MODEL = "stopped before any model call (prevent_continuation)"


class SessionTracker(CallsMixin, SubagentsMixin, MarksMixin, ChargesMixin, QuietMixin):
    """Session lines → span records through ``ctx.emit``. Never raises on events."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.sessions: OrderedDict[str | None, Session] = OrderedDict()
        #: the sessions ended, by id: (session id, trace id, span id, turns) (late lines are
        #: ignored; ``replay``'s next file goes on with them), bounded as :func:`remember` is
        self.ended = Refs()
        self._carried = Refs()
        self.passed_over: set[str] = set()
        self._stream_mode = self.ctx.clock.uses_stream
        self._dated = False  # the event being handled has a timestamp of its own

    # ------------------------------------------------------------------ events in

    def handle(self, ev: Event) -> None:
        """Apply one decoded event."""
        handler = self._handlers.get(type(ev))
        if handler is None:
            return
        now = self._time(ev.ts_ns)
        self._dated = ev.ts_ns is not None
        session = self._session(ev.session_id, now)
        if session is None:
            return
        if now > session.last_ns:
            session.last_ns = now
        handler(self, session, ev, now)
        self._charge_session(session)

    def finish(self, *, reason: str | None = None, running: frozenset[str | None] = frozenset()) -> None:
        """End of input: end every session (and all it holds) exactly once; live (lines dated
        as they came) what is still open ends now, else at its last line. With a ``reason``
        (the run was cut short) each session span ended here with something open in it (or a
        workflow ``running``: their session ids), and each span in it ended without its own end
        (those ERROR ``incomplete``), carries an ``interrupted`` event; a
        session or turn without its result says ``{reason} before result``, a tool or task
        without its end ``no tool_result: {reason}``."""
        emit, clock = self.ctx.emit, self.ctx.clock
        if clock.mode != "stream" and not clock.uses_stream:
            # live, lines dated as they came: what was still open ran until now (a CLI killed or
            # crashed mid-tool spent its time there), not until its last line
            now = clock.now()
            for s in self.sessions.values():
                s.last_ns = max(s.last_ns, now)
                if s.turn is not None:
                    s.turn.last_ns = max(s.turn.last_ns, now)
        if reason is not None:
            # the sessions with something open (one whose turns all ended was not cut short: a
            # sidecar's stop after `claude -p` printed its result), and the model calls whose
            # stream began and had not ended: cut as they streamed
            cut_sessions = {s.span_id for s in self.sessions.values() if s.busy() or s.chats or s.sid in running} | {
                c.span_id for s in self.sessions.values() for c in s.chats.values() if c.streamed and not c.final}

            def cut(rec: SpanRecord) -> None:
                if rec.error_type == "incomplete" or rec.span_id in cut_sessions:
                    rec.events.append(interrupted_event(rec.end_ns, reason))
                if rec.error == NO_RESULT:  # the stream did not end: the run was stopped
                    rec.error = f"{reason} before result"
                elif rec.error in (NO_TOOL_RESULT, NO_TERMINAL):
                    rec.error = f"{rec.error.removesuffix(' at end of input')}: {reason}"
                emit(rec)

            self.ctx.emit = cut
        try:
            for session in list(self.sessions.values()):
                self._close_session(session, eof=True)
        finally:
            self.ctx.emit = emit

    def rebase(self, shift: int) -> None:
        """The clock settled: every time taken from its anchor moves by ``shift`` ns."""
        self._stream_mode = self.ctx.clock.uses_stream
        if not shift:
            return
        seen: set[int] = set()
        for s in self.sessions.values():
            shift_times(s, shift, seen)
            for tool_id, (span_id, start) in list(s.tool_spans.items()):
                s.tool_spans[tool_id] = (span_id, start + shift)  # (tuples: not shift_times')

    # ------------------------------------------------------------------ time and sessions

    def _time(self, own_ns: int | None) -> int:
        was_stream = self._stream_mode
        now = self.ctx.clock.at(own_ns)
        if not was_stream and self.ctx.clock.uses_stream:
            self._stream_mode = True
            latest = self.ctx.clock.latest
            if latest is not None:
                self._rebase_wall(latest)
            if own_ns is None:
                now = self.ctx.clock.now()
        return now

    def _rebase_wall(self, latest: int) -> None:
        """``auto`` switched from wall to stream time mid-run (a recording piped in after lines
        with timestamps near the wall clock): every wall-clock time taken so far becomes
        ``latest``, the best reading of "when" for lines before it."""
        wall = self.ctx.clock.wall()
        for s in self.sessions.values():
            collapse_wall_times(s, wall, latest)
            for turn in (s.turn, *s.waiting):
                if turn is not None:
                    collapse_wall_times(turn, wall, latest)
            for group in (s.chats, s.tools, s.agents, s.tasks):
                for item in group.values():
                    collapse_wall_times(item, wall, latest)
            for ev in s.events:
                if abs(ev.time_ns - wall) <= SKEW_NS:
                    ev.time_ns = latest
            for tool_id, (span_id, start) in list(s.tool_spans.items()):
                if abs(start - wall) <= SKEW_NS:
                    s.tool_spans[tool_id] = (span_id, latest)

    def _session(self, sid: str | None, now: int) -> Session | None:
        session = self.sessions.get(sid)
        if session is not None:
            self.sessions.move_to_end(sid)
            return session
        if sid in self.ended and self.ctx.continues(sid) is None:
            self.ctx.stats.late_events_ignored += 1
            return None
        ref = self.ctx.session_ref(sid)
        session = Session(sid, ref.trace_id, ref.span_id, now, now,
                          first_line=self.ctx.line_at() if self.ctx.line_at is not None else 0)
        session.continues, session.turn_count = self.ctx.continues(sid) or (None, 0)
        if session.continues is not None:
            self._carry_over(session)
        self.sessions[sid] = session
        remember(self.ctx.providers, sid, session.provider_name())
        if self.ctx.on_trace is not None and self.ctx.run is None and self.ctx.parent is None:
            self.ctx.on_trace(ref.trace_id, f"session {sid or ''}".strip())
        return session

    def _span_id(self, s: Session, kind: str, key: str) -> int:
        # a session going on after a follow stop: its spans are not the ended span's (those the
        # stop cut short come again whole, as spans of their own)
        return self.ctx.ids.span_id(s.trace_id, kind, key if s.continues is None else f"{key}@{s.span_id:016x}")

    def _open_turn(self, s: Session, now: int) -> Turn:
        s.turn_count += 1
        n = s.turn_count
        s.turn = Turn(n, self._span_id(s, "turn", f"{s.sid}/{n}"), now, now,
                      after_clock=self.ctx.clock.latest is not None, stopped=s.stop_pending,
                      asked_shown=self._dated, dated=self._dated)
        s.turn.model = s.now_model or s.model
        s.stop_pending = None
        return s.turn

    def _turn(self, s: Session, now: int) -> Turn:
        """The open turn; a top-level line opens one when none is."""
        if s.turn is None:
            return self._open_turn(s, now)
        if now > s.turn.last_ns:
            s.turn.last_ns = now
        return s.turn

    def _common(self, s: Session) -> dict[str, Any]:
        return {"gen_ai.conversation.id": s.sid} if s.sid else {}

    # ------------------------------------------------------------------ handlers

    def _on_started(self, s: Session, ev: SessionStarted, now: int) -> None:
        if s.turn is not None and ev.opens_turn:  # the next turn begins before this one's result came
            # its model calls are done (the next call is not theirs to end): they end with its
            # result, which may settle their usage; its tools may still get their results
            current = s.scope_chat.get(None)
            if current in s.chats and s.chats[current].turn_n == s.turn.n:
                del s.scope_chat[None]
            s.turn.closed_ns = now
            self._release_first_call(s.turn, s.turn.start_ns)  # a deferred result moves no start
            s.waiting.append(s.turn)
            s.turn = None
        if ev.opens_turn and s.turn_count == s.turns_before:
            # the turns a file before cut wait for their result, as they would in one stream:
            # it comes after this init (:meth:`~.state.Session.cut_of`)
            for _ in s.cut_before:
                s.waiting.append(self._open_turn(s, now))
                s.turn = None
        if ev.opens_turn:  # (Caudra's runs open with their turn_start)
            turn = self._open_turn(s, now)
            turn.model, turn.from_start = ev.model or s.model, True
        else:
            s.outlives_turns = True
        changed: dict[str, Any] = {key: new for key, old, new in (
            ("gen_ai.request.model", s.model, ev.model), ("gen_ai.agent.version", s.version, ev.version),
        ) if old is not None and new is not None and new != old}
        if s.cwd is not None and ev.cwd is not None and ev.cwd != s.cwd:
            changed["session.cwd_changed"] = True  # a path is not exported: only that it changed
        if changed:
            self._event(s, SpanEvent("session.changed", now, changed))
        s.agent_name = s.agent_name or ev.agent_name
        s.provider = s.provider or ev.provider
        remember(self.ctx.providers, s.sid, s.provider_name())
        s.model = s.model or ev.model
        s.version = s.version or ev.version
        s.cwd = s.cwd or ev.cwd
        s.text_bytes = session_text(s)

    def _on_turn_start(self, s: Session, ev: TurnStarted, now: int) -> None:
        open_turn = s.turn
        if open_turn is not None and open_turn.started is not None and open_turn.started.run_id != ev.run_id:
            self._end_open_turn(s, NEXT_RUN)  # the previous run never got its result
        if s.turn is None:
            self._open_turn(s, now).from_start = True
        turn = self._turn(s, now)
        turn.started = ev

    def _on_user(self, s: Session, ev: UserMessage, now: int) -> None:
        if ev.parent_tool_use_id is None:
            turn = self._turn(s, now)
            turn.ready_ns, turn.asked_shown = max(turn.ready_ns, now), True  # the next call answers it
            turn.interrupted_ns = now if ev.interrupted else turn.interrupted_ns
            return
        agent = self._agent(s, ev.parent_tool_use_id, now)
        if agent is not None:
            agent.last_ns = max(agent.last_ns, now)
            agent.ready_ns = max(agent.ready_ns, now)
            agent.own_line(now if ev.ts_ns is not None else None)

    def _on_result(self, s: Session, ev: TurnResult, now: int) -> None:
        if duplicate_result(s, ev):
            self.ctx.stats.duplicate_results += 1
            return
        before = s.latest_result()
        previous = before.total_cost_usd if before is not None else s.before_cost[0]
        model_total = None
        if ev.model_usage:  # cumulative: replaces the previous one and covers every call so far
            model_total = Usage()
            for each in ev.model_usage.values():
                model_total.add(each)
        ev = on_session_scale(s, ev, previous, model_total)
        deferred = bool(s.waiting)
        turn = s.waiting.pop(0) if deferred else self._turn(s, now)
        duration = ev.duration_ms * 1_000_000 if ev.duration_ms is not None else None
        if deferred:  # its turn was closed by the next init: it lasted duration_ms
            start = turn.start_ns
            end = start + duration if duration is not None else (turn.closed_ns or turn.last_ns)
        else:
            start, end = turn.start_ns, now
            # woken: by a background task's notification (Claude Code: the result's origin), or
            # a Caudra run that started by itself (``turn_start`` ``automatic``)
            woken = (ev.origin == "task-notification" or (
                turn.started is not None and turn.started.automatic is True)) and ev.ts_ns is None
            if duration is not None and not ((woken or not turn.dated) and turn.after_clock):
                # it lasted duration_ms to its result (the CLI counts from when it took the
                # prompt, which may be before it printed its init, or queued)
                start = min(start, now - duration)
            elif duration is not None:
                # a background task woke it: it began when it opened (after that task ended)
                # or, when the stream clock went on since, duration_ms before the result; the
                # result's time is that clock, a lower bound that stands still while nothing
                # carries a timestamp: it ran duration_ms from its start. Opened by a line
                # without a time of its own (Claude Code's init), its start was only the last
                # time shown (the previous turn's end, maybe before time idle): duration_ms then
                start = max(start, now - duration) if woken else now - duration
                end = max(end, start + duration)
                for chat in s.chats.values():  # its calls were asked for within it
                    if chat.owner is None and chat.turn_n == turn.n:
                        chat.start_ns = min(max(chat.start_ns, start), chat.end_ns)
        # calls and tools of the turn end here; done sub-agents (of any turn) are emitted
        self._cut_streamed_call(s, turn, end)
        self._settle_last_call(s, turn, ev.last_call)
        self._settle_stop(s, turn, ev.stop_reason)
        self._settle_output(s, turn, ev.usage, ev.last_call)
        if ev.is_error:
            self._cut_calls(s, turn.n, ev.terminal_reason or ev.subtype or "error")
        else:
            self._settle_end(s, turn, end)
        if deferred:  # (no more an open turn, which a call's end adds its usage to)
            self._own_calls(s, turn)
        self._end_calls(s, turn.n, end, None if says_interrupted(ev) else NO_TOOL_RESULT_IN_TURN)
        self._release_first_call(turn, start)
        for agent in list(s.agents.values()):
            if self._agent_done(s, agent, ev.background_active == 0):
                self._emit_agent(s, agent, None)
        # (a session its first turn's undated line opened began with it: see the turn's start)
        s.start_ns = start if turn.n == 1 and not turn.dated and turn.after_clock else min(s.start_ns, start)
        rec = self._turn_record(s, turn, start, end)
        lost = uncounted(ev, turn)  # (its cost unknown; the session's the one before, if any)
        if lost:
            ev = msgspec.structs.replace(ev, total_cost_usd=previous)
        result_attributes(rec.attributes, ev)
        put_attributes(rec.attributes, (("turn.result", True), ("turn.result_index", ev.result_index)))
        unknown = lost or previous is None and (ev.result_index or (s.continues is not None and turn.n > 1))
        if ev.total_cost_usd is not None and not (deferred or s.cost_stale or unknown):
            # (the session's 2nd+ result read without the one before: ``follow`` resumed
            # mid-session, or going on after a stop, whose ended span holds the results before)
            # a difference of two sums of floats: 0.0046249 came out as 0.004624900000000001
            rec.attributes["turn.cost_usd"] = round(ev.total_cost_usd - (previous or 0.0), 12)
        s.cost_stale = deferred
        usage = turn_usage(ev.usage, turn, model_total, s.model_total)
        usage_attrs(rec.attributes, usage)
        result_error(rec, ev, rec.end_ns, turn.interrupted_ns)
        if turn.stopped is not None and turn.calls == 0 and rec.error is None:
            # the result says success, yet nothing ran: the prompt never reached the model
            rec.error = f"{STOPPED_BEFORE_MODEL}: {turn.stopped}" if turn.stopped else STOPPED_BEFORE_MODEL
            rec.error_type = "prevent_continuation"
        s.blocked = rec.error if rec.error_type == "prevent_continuation" else None
        self.ctx.emit(rec)
        s.child_end_ns = max(s.child_end_ns, rec.end_ns)
        if not deferred:
            s.turn = None
        s.results += 1
        add_result(s, ev)
        s.result_ns = max(now, s.result_ns or now)
        s.last, s.last_by_user = ev, turn.interrupted_ns
        s.text_bytes = session_text(s)
        # (the calls' sum turn_usage fell back on is no count of the result's)
        count_turn(s, turn, usage if usage is not turn.calls_usage else None)
        if model_total is not None:
            s.model_total = model_total
            s.model_results += 1
        if ev.final:
            self._close_session(s, eof=False)

    def _on_workflow(self, s: Session, ev: WorkflowStarted | WorkflowProgress, now: int) -> None:
        # every workflow task is remembered (its task_* lines are not background tasks); the
        # session span links the first MAX_LINKS of them
        if ev.task_id not in s.workflows:  # (a snapshot a task: a known one stays where it is)
            remember(s.workflows, ev.task_id, cap=MAX_ITEMS)
        if s.tasks.pop(ev.task_id, None) is not None:
            self._release(s, "task", ev.task_id)

    def _on_caudra_workflow(self, s: Session, ev: CaudraWorkflowSnapshot | CaudraWorkflowLog,
                            now: int) -> None:
        remember(s.workflows, caudra_workflow_key(ev.run_id), cap=MAX_ITEMS)

    _handlers: dict[type, Any] = {}

    # ------------------------------------------------------------------ records

    def _turn_record(self, s: Session, turn: Turn, start: int, end: int) -> SpanRecord:
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["turn.number"] = turn.n  # (an invoke_agent span: its agent and provider too)
        put_attributes(attrs, (("gen_ai.agent.name", s.agent_name or DEFAULT_AGENT), ("gen_ai.provider.name",
                               s.provider_name()), ("gen_ai.request.model", turn.model or None)))
        ev = turn.started
        if ev is not None:  # Caudra turn_start fields (Caudra's headless-mode documentation)
            put_attributes(attrs, (
                ("turn.run_id", ev.run_id),
                ("turn.automatic", ev.automatic),
                ("turn.task_event_ids.count", ev.task_events),
                ("turn.workflow_events.count", ev.workflow_events),
                ("turn.automation_events.count", ev.automation_events),
            ))
        return SpanRecord(
            name=f"turn {turn.n}",
            trace_id=s.trace_id,
            span_id=turn.span_id,
            parent_span_id=s.span_id,
            start_ns=start,
            end_ns=max(end, start, turn.child_end_ns),  # its calls lie inside it
            attributes=attrs,
        )

    def _close_session(self, s: Session, *, eof: bool) -> None:
        """End everything ``s`` holds, then the session span itself, exactly once."""
        self.sessions.pop(s.sid, None)
        remember(self.ended, s.sid, s.ref(), MAX_CLOSED_REMEMBERED)
        self._release(s, SESSION, None)
        end_all = s.last_ns
        for agent in list(s.agents.values()):
            done = agent.tool_done_ns is not None or agent.notified_ns is not None
            self._emit_agent(s, agent, None if done else NO_TERMINAL)
        for turn in s.waiting:  # closed by the next init, no result came: not an error
            self._end_calls(s, turn.n, turn.closed_ns or turn.last_ns, NO_TOOL_RESULT_IN_TURN)
            rec = self._turn_record(s, turn, turn.start_ns, turn.closed_ns or turn.last_ns)
            rec.attributes["turn.result"] = False
            self._calls_usage(s, turn, rec)
            self.ctx.emit(rec)
            s.child_end_ns = max(s.child_end_ns, rec.end_ns)
        s.waiting = []
        for tool in list(s.tools.values()):
            del s.tools[tool.id]
            self._emit_tool(s, tool, end_all, NO_TOOL_RESULT, "incomplete", None)
        for chat in list(s.chats.values()):  # after their tools: a call ends no earlier
            self._emit_chat(s, chat)
        for task in list(s.tasks.values()):
            self._emit_task(s, task, end_all, None, eof=True)
        # a stream that showed only background tasks, workflows or automation firings of a session
        # (Caudra's init opens no run) is not an error
        active = s.turn_count > s.turns_before or (bool(s.events) and s.continues is None)
        incomplete = s.turn is not None or (s.results == 0 and active)
        self._end_open_turn(s)
        end = s.result_ns if (s.result_ns is not None and not incomplete) else s.last_ns
        end = max(end, s.child_end_ns, s.start_ns, self.ctx.session_covered(s.sid))
        self.ctx.emit(self._session_record(s, end, incomplete))

    def _end_open_turn(self, s: Session, error: str = NO_RESULT) -> None:
        """A turn that never got its result: ends at its last line (no earlier than its
        calls), ERROR ``incomplete`` with ``error``."""
        turn = s.turn
        if turn is None:
            return
        self._cut_streamed_call(s, turn, turn.last_ns)
        for chat in [c for c in s.chats.values() if c.owner is None]:
            self._emit_chat(s, chat)
        self._release_first_call(turn, turn.start_ns)
        rec = self._turn_record(s, turn, turn.start_ns, turn.last_ns)
        rec.attributes["turn.result"] = False
        rec.error, rec.error_type = error, "incomplete"
        self._calls_usage(s, turn, rec)
        self.ctx.emit(rec)
        s.child_end_ns = max(s.child_end_ns, rec.end_ns)
        s.turn = None

    def _session_record(self, s: Session, end: int, incomplete: bool) -> SpanRecord:
        name = s.agent_name or DEFAULT_AGENT
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.agent.name"] = name
        put_attributes(attrs, (("gen_ai.provider.name", s.provider_name()),
                               ("gen_ai.request.model", s.model or s.call_model), ("gen_ai.agent.version", s.version)))
        attrs["session.turns"] = s.turn_count
        events = list(s.events)
        events.extend(self.ctx.take_session_events(s.sid))  # Caudra goal events, notices
        last = s.last
        session_result_attributes(attrs, s)
        if last is not None:
            for model, usage in last.model_usage.items():
                ev_attrs: dict[str, Any] = {"gen_ai.response.model": model}
                usage_attrs(ev_attrs, usage)
                if usage.cost_usd is not None:
                    ev_attrs["cost_usd"] = usage.cost_usd
                events.append(SpanEvent("model_usage", s.result_ns or end, ev_attrs))
        if s.model_total is not None:
            total = model_counts(s)
            if s.tail_mark == s.model_results:
                total.add(s.tail)
            if s.tokens_from is not None:  # (its own turns': the span before counted up to there)
                total = total.less(s.tokens_from)
            attrs["session.usage.source"] = "modelUsage"
        else:
            total = results_total(s)
            if total is not None:
                attrs["session.usage.source"] = "results" if s.by_results else "calls"
        usage_attrs(attrs, total)
        links = [] if s.continues is None else [  # (the span a follow stop ended)
            SpanLink(s.continues.trace_id, s.continues.span_id, {"otelbridge.link": "continues"})]
        linked = (s.workflows if s.continues is None  # (follow: the ended span links those)
                  else [t for t in s.workflows if not self.ctx.linked_before(t)])
        for task_id in itertools.islice(linked, MAX_LINKS):
            ref = self.ctx.workflow_ref(s.sid, task_id)
            links.append(SpanLink(ref.trace_id, ref.span_id, {"otelbridge.link": "workflow"}))
        if self.ctx.run is not None:
            parent, remote = self.ctx.run.span_id, False
        elif self.ctx.parent is not None:
            parent, remote = self.ctx.parent.span_id, True
        else:
            parent, remote = None, False
        rec = SpanRecord(
            name=span_name("invoke_agent", name, "agent"),
            trace_id=s.trace_id,
            span_id=s.span_id,
            parent_span_id=parent,
            parent_remote=remote,
            start_ns=s.start_ns,
            end_ns=max(end, s.start_ns),
            attributes=attrs,
            events=events,
            links=links,
        )
        if incomplete:
            rec.error, rec.error_type = NO_RESULT, "incomplete"
        elif last is not None:
            result_error(rec, last, None, s.last_by_user)
            if rec.error is None and s.blocked:
                rec.error, rec.error_type = s.blocked, "prevent_continuation"
        return rec


SessionTracker._handlers = {
    SessionStarted: SessionTracker._on_started,
    TurnStarted: SessionTracker._on_turn_start,
    LineSeq: SessionTracker._on_seq,
    SessionMark: SessionTracker._on_mark,
    SessionError: SessionTracker._on_error,
    ModelCall: SessionTracker._on_model_call,
    ModelStreaming: SessionTracker._on_streaming,
    ToolResult: SessionTracker._on_tool_result,
    UserMessage: SessionTracker._on_user,
    TurnResult: SessionTracker._on_result,
    TaskStarted: SessionTracker._on_task_started,
    TaskProgress: SessionTracker._on_task_progress,
    TaskUpdated: SessionTracker._on_task_updated,
    TaskNotification: SessionTracker._on_task_notification,
    WorkflowStarted: SessionTracker._on_workflow,
    WorkflowProgress: SessionTracker._on_workflow,
    CaudraWorkflowSnapshot: SessionTracker._on_caudra_workflow,
    CaudraWorkflowLog: SessionTracker._on_caudra_workflow,
}
