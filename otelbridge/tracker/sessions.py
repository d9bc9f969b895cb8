"""Sessions, turns, model calls, tool calls, sub-agents and background tasks → span records.

The session part of SPAN-MODEL.md (issue 3; milk: seed 002 / issue 4):

* a **session** (``invoke_agent {agent}``) runs from ``system/init`` — or the first line seen of
  it — to its last ``result`` (at end of input at the latest); its parent is the wrapper's run
  span, else ``TRACEPARENT``, else none; it links every workflow root it started;
* each stretch up to a ``result`` is a **turn** (``turn {n}``), opened by the first top-level
  line after the previous result (Caudra: its ``turn_start``, whose ``run_id`` and counts the
  turn carries); its start is never after ``result time − duration_ms``;
* **model calls** (``chat {model}``, CLIENT): lines grouped by ``message.id``; a ``message_delta``
  belongs to the open call of its scope and carries the final usage; a call ends at its last
  line and is emitted when the next call of its scope starts, or its turn / sub-agent ends;
* **tool calls** (``execute_tool {name}``): ``tool_use`` … the ``tool_result`` of that id, found
  by id only; ERROR when ``is_error``;
* **sub-agents** (``invoke_agent {subagent_type}``): lines with ``parent_tool_use_id`` X nest
  under the tool span X; a ``local_agent``/``Agent`` task of tool use X is the same sub-agent.
  A sub-agent is emitted at the first ``result`` after it is done (its tool answered, or its
  task notified), so lines arriving after the notification still land; it ends at the latest of
  its own lines, its tools' results, its tool's result and the task's ``end_time``/notification;
* other background **tasks** (``task {task_type}``): ``task_started`` … ``task_notification``,
  emitted at the notification (a second one is counted and ignored); progress before start
  creates the task;
* usage: Anthropic-shaped usage counts cache read + creation in ``gen_ai.usage.input_tokens``;
  a turn carries its result's usage, the session the sum over its results (Claude Code reports
  usage per result, ``modelUsage`` and ``total_cost_usd`` cumulatively: the last result's);
* ``is_error: true`` on a result is an ERROR whatever its ``subtype``;
* times: the line's own timestamp, else the clock; when the clock switches from the wall to the
  stream clock mid-session, every time taken so far is moved by the same offset (a replayed
  recording never mixes today with its own dates); end ≥ start always; every span ends once.

Memory: a session is released when it ends (milk's final ``result``, end of input, or eviction
of the least recently active session beyond :data:`MAX_OPEN_SESSIONS`, counted in
``sessions_capped``); tools, calls, sub-agents and tasks are released when emitted and capped
per session (``session_items_capped``).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .. import redact
from ..clock import SKEW_NS
from ..events import (
    CLIENT,
    CaudraWorkflowLog,
    CaudraWorkflowSnapshot,
    Event,
    LineSeq,
    ModelCall,
    SessionError,
    SessionMark,
    SessionStarted,
    SpanEvent,
    SpanLink,
    SpanRecord,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    TaskUpdated,
    TaskUsage,
    ToolResult,
    TurnResult,
    TurnStarted,
    Usage,
    UserMessage,
    WorkflowProgress,
    WorkflowStarted,
)
from . import Context, Recent, interrupted_event, put_attributes, remember, usage_attributes
from .caudra import workflow_key as caudra_workflow_key

MAX_OPEN_SESSIONS = 1_000
#: Open tools, calls, sub-agents, tasks per session; remembered tool span ids per session.
MAX_ITEMS = 10_000
#: Events per session span (marks, seq gaps, exceptions) and workflow links per session.
MAX_EVENTS = 256
MAX_LINKS = 128
MAX_CLOSED_REMEMBERED = 10_000

AGENT_TASK_TYPES = frozenset({"local_agent", "Agent"})
#: Session name when the stream never said (no ``system/init``: only Claude Code streams lack
#: one in practice; milk's init is always first, seed 002 §1).
DEFAULT_AGENT = "claude-code"
NO_RESULT = "stream ended before result"
NO_TOOL_RESULT = "no tool_result at end of input"
NO_TOOL_RESULT_IN_TURN = "no tool_result before the turn's result"
NO_TERMINAL = "no terminal state at end of input"

_json = msgspec.json.Encoder()


@dataclass(slots=True)
class _Chat:
    message_id: str
    span_id: int
    parent_span_id: int
    owner: str | None
    start_ns: int
    end_ns: int
    model: str | None
    usage: Usage = field(default_factory=Usage)
    final: bool = False
    stop_reason: str | None = None
    content: str | None = None


@dataclass(slots=True)
class _Tool:
    id: str
    span_id: int
    parent_span_id: int
    owner: str | None
    start_ns: int
    name: str | None
    arguments: str | None


@dataclass(slots=True)
class _Agent:
    key: str
    span_id: int
    start_ns: int
    last_ns: int
    subagent_type: str | None = None
    description: str | None = None
    task_id: str | None = None
    status: str | None = None
    summary: str | None = None
    task_usage: TaskUsage | None = None
    tool_done_ns: int | None = None
    notified_ns: int | None = None
    end_time_ns: int | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class _Task:
    task_id: str
    span_id: int
    start_ns: int
    first_seen_ns: int
    started: bool = False
    task_type: str | None = None
    tool_use_id: str | None = None
    description: str | None = None
    usage: TaskUsage | None = None
    status: str | None = None
    end_time_ns: int | None = None


@dataclass(slots=True)
class _Turn:
    n: int
    span_id: int
    start_ns: int
    last_ns: int
    started: TurnStarted | None = None


@dataclass(slots=True)
class _Session:
    sid: str | None
    trace_id: int
    span_id: int
    start_ns: int
    last_ns: int
    agent_name: str | None = None
    provider: str | None = None
    model: str | None = None
    version: str | None = None
    turn: _Turn | None = None
    turn_count: int = 0
    child_end_ns: int = 0
    result_ns: int | None = None
    results: int = 0
    usage: Usage | None = None
    last: TurnResult | None = None
    last_seq: int | None = None
    chats: dict[str, _Chat] = field(default_factory=dict)
    scope_chat: dict[str | None, str] = field(default_factory=dict)
    tools: dict[str, _Tool] = field(default_factory=dict)
    tool_spans: OrderedDict[str, int] = field(default_factory=OrderedDict)
    agents: dict[str, _Agent] = field(default_factory=dict)
    closed_agents: Recent = field(default_factory=lambda: Recent(MAX_CLOSED_REMEMBERED))
    agent_tasks: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, _Task] = field(default_factory=dict)
    closed_tasks: Recent = field(default_factory=lambda: Recent(MAX_CLOSED_REMEMBERED))
    workflows: OrderedDict[str, None] = field(default_factory=OrderedDict)
    hints: OrderedDict[str, tuple[str | None, str | None]] = field(default_factory=OrderedDict)
    events: list[SpanEvent] = field(default_factory=list)


def _collapse(obj: Any, wall: int, to: int) -> None:
    """Set every ``*_ns`` time of a state object that is a wall-clock time (within
    :data:`~otelbridge.clock.SKEW_NS` of ``wall``) to ``to``; the stream's own times stay."""
    for name in type(obj).__slots__:
        if name.endswith("_ns"):
            value = getattr(obj, name)
            if isinstance(value, int) and value and abs(value - wall) <= SKEW_NS:
                setattr(obj, name, to)


def _usage_attrs(attrs: dict[str, Any], usage: Usage | None) -> None:
    """Add ``gen_ai.usage.*`` of ``usage`` to ``attrs``."""
    attrs.update(usage_attributes(usage))


class SessionTracker:
    """Session lines → span records through ``ctx.emit``. Never raises on events."""

    def __init__(
        self, ctx: Context, *, max_sessions: int = MAX_OPEN_SESSIONS, max_items: int = MAX_ITEMS
    ) -> None:
        self.ctx = ctx
        self.max_sessions = max_sessions
        self.max_items = max_items
        self.sessions: OrderedDict[str | None, _Session] = OrderedDict()
        self._closed = Recent(MAX_CLOSED_REMEMBERED)
        self._stream_mode = self.ctx.clock.uses_stream

    # ------------------------------------------------------------------ events in

    def handle(self, ev: Event) -> None:
        """Apply one decoded event."""
        handler = self._handlers.get(type(ev))
        if handler is None:
            return
        now = self._time(ev.ts_ns)
        session = self._session(ev.session_id, now)
        if session is None:
            return
        if now > session.last_ns:
            session.last_ns = now
        handler(self, session, ev, now)

    def finish(self, *, reason: str | None = None) -> None:
        """End of input: end every session (and all it holds) exactly once. With a ``reason``
        (the run was cut short: signal, downstream closed; see :meth:`Tracker.finish`) each
        session span ended here, and each span in it ended without its own end (those ERROR
        ``incomplete``), carries an ``interrupted`` event with ``otelbridge.reason``."""
        emit = self.ctx.emit
        if reason is not None:
            cut_sessions = {s.span_id for s in self.sessions.values()}

            def cut(rec: SpanRecord) -> None:
                if rec.error_type == "incomplete" or rec.span_id in cut_sessions:
                    rec.events.append(interrupted_event(rec.end_ns, reason))
                emit(rec)

            self.ctx.emit = cut
        try:
            for session in list(self.sessions.values()):
                self._close_session(session, eof=True)
        finally:
            self.ctx.emit = emit

    # ------------------------------------------------------------------ time and sessions

    def _time(self, own_ns: int | None) -> int:
        was_stream = self._stream_mode
        now = self.ctx.clock.at(own_ns)
        if not was_stream and self.ctx.clock.uses_stream:
            self._stream_mode = True
            latest = self.ctx.clock.latest
            if latest is not None:
                self._rebase(latest)
            if own_ns is None:
                now = self.ctx.clock.now()
        return now

    def _rebase(self, latest: int) -> None:
        """The clock switched from wall to stream time (a recording): every wall-clock time
        taken so far becomes ``latest``, the first time the stream showed — the best reading of
        "when" for lines before it, and the same on every replay."""
        wall = self.ctx.clock.wall()
        for s in self.sessions.values():
            _collapse(s, wall, latest)
            if s.turn is not None:
                _collapse(s.turn, wall, latest)
            for group in (s.chats, s.tools, s.agents, s.tasks):
                for item in group.values():
                    _collapse(item, wall, latest)
            for ev in s.events:
                if abs(ev.time_ns - wall) <= SKEW_NS:
                    ev.time_ns = latest

    def _session(self, sid: str | None, now: int) -> _Session | None:
        session = self.sessions.get(sid)
        if session is not None:
            self.sessions.move_to_end(sid)
            return session
        if sid in self._closed:
            self.ctx.stats.late_events_ignored += 1
            return None
        if len(self.sessions) >= self.max_sessions:
            self.ctx.stats.sessions_capped += 1
            self._close_session(next(iter(self.sessions.values())), eof=True)
        ref = self.ctx.session_ref(sid)
        session = _Session(sid, ref.trace_id, ref.span_id, now, now)
        self.sessions[sid] = session
        if self.ctx.on_trace is not None and self.ctx.run is None and self.ctx.parent is None:
            self.ctx.on_trace(ref.trace_id, f"session {sid or ''}".strip())
        return session

    def _span_id(self, s: _Session, kind: str, key: str) -> int:
        return self.ctx.ids.span_id(s.trace_id, kind, key)

    def _turn(self, s: _Session, now: int) -> _Turn:
        if s.turn is None:
            s.turn_count += 1
            n = s.turn_count
            s.turn = _Turn(n, self._span_id(s, "turn", f"{s.sid}/{n}"), now, now)
        elif now > s.turn.last_ns:
            s.turn.last_ns = now
        return s.turn

    def _common(self, s: _Session) -> dict[str, Any]:
        return {"gen_ai.conversation.id": s.sid} if s.sid else {}

    def _capped(self, group: dict) -> bool:
        if len(group) >= self.max_items:
            self.ctx.stats.session_items_capped += 1
            return True
        return False

    def _event(self, s: _Session, ev: SpanEvent) -> None:
        if len(s.events) < MAX_EVENTS:
            s.events.append(ev)
        else:
            self.ctx.stats.session_items_capped += 1

    # ------------------------------------------------------------------ handlers

    def _on_started(self, s: _Session, ev: SessionStarted, now: int) -> None:
        if s.results and s.turn is None:
            self._turn(s, now)  # init mid-session (a turn started by a task notification)
        s.agent_name = ev.agent_name or s.agent_name
        s.provider = ev.provider or s.provider
        s.model = ev.model or s.model
        s.version = ev.version or s.version

    def _on_turn_start(self, s: _Session, ev: TurnStarted, now: int) -> None:
        open_turn = s.turn
        if open_turn is not None and open_turn.started is not None and open_turn.started.run_id != ev.run_id:
            self._end_open_turn(s)  # the previous run never got its result
        turn = self._turn(s, now)
        turn.started = ev

    def _on_seq(self, s: _Session, ev: LineSeq, now: int) -> None:
        last = s.last_seq
        s.last_seq = ev.seq
        if last is not None and ev.seq != last + 1:
            self.ctx.stats.seq_gaps += 1
            self._event(
                s,
                SpanEvent(
                    "seq_gap",
                    now,
                    {"seq.expected": last + 1, "seq.received": ev.seq,
                     "seq.kind": "reordered" if ev.seq <= last else "missing"},
                ),
            )

    def _on_mark(self, s: _Session, ev: SessionMark, now: int) -> None:
        if ev.model:
            s.model = ev.model
        attrs: dict[str, Any] = {}
        for key, value in ev.attributes.items():
            if isinstance(value, str):
                value = redact.clean(value)
            elif isinstance(value, list):
                value = [redact.clean(v) if isinstance(v, str) else v for v in value]
            attrs[redact.clean(str(key), 64)] = value
        self._event(s, SpanEvent(redact.clean(ev.name, 64) or "event", now, attrs))

    def _on_error(self, s: _Session, ev: SessionError, now: int) -> None:
        attrs: dict[str, Any] = {
            "exception.message": redact.clean(ev.message),
            "exception.type": redact.clean(ev.error_type or "error", 64),
        }
        if ev.recoverable is not None:
            attrs["exception.recoverable"] = ev.recoverable
        self._event(s, SpanEvent("exception", now, attrs))

    def _on_model_call(self, s: _Session, ev: ModelCall, now: int) -> None:
        scope = ev.parent_tool_use_id
        agent = None
        if scope is not None:
            agent = self._agent(s, scope, now)
            if agent is None:
                return
        else:
            self._turn(s, now)
        mid = ev.message_id or s.scope_chat.get(scope)
        if mid is None:
            return  # a delta with no call to belong to
        chat = s.chats.get(mid)
        if chat is None:
            current = s.scope_chat.get(scope)
            if current is not None and current in s.chats:
                self._emit_chat(s, s.chats[current])
            if self._capped(s.chats):
                return
            parent = agent.span_id if agent is not None else s.turn.span_id  # type: ignore[union-attr]
            chat = _Chat(mid, self._span_id(s, "chat", mid), parent, scope, now, now,
                         ev.model or s.model)
            s.chats[mid] = chat
            s.scope_chat[scope] = mid
        chat.end_ns = max(chat.end_ns, now)
        if ev.model and not chat.model:
            chat.model = ev.model
        if ev.stop_reason:
            chat.stop_reason = ev.stop_reason
        if ev.content:
            chat.content = ((chat.content + "\n") if chat.content else "") + ev.content
        if ev.usage is not None:
            self._merge_usage(chat, ev)
        for call in ev.tool_calls:
            if call.id in s.tools or self._capped(s.tools):
                continue
            tool = _Tool(call.id, self._span_id(s, "tool", call.id), chat.span_id, scope, now,
                         call.name, call.arguments)
            s.tools[call.id] = tool
            remember(s.tool_spans, call.id, tool.span_id, cap=MAX_ITEMS)
            if call.subagent_type or call.description:
                pending = s.agents.get(call.id)
                if pending is not None:
                    pending.subagent_type = pending.subagent_type or call.subagent_type
                    pending.description = pending.description or call.description
                else:  # remembered until the sub-agent shows up
                    remember(s.hints, call.id, (call.subagent_type, call.description), cap=MAX_ITEMS)
        if agent is not None:
            agent.last_ns = max(agent.last_ns, now)

    @staticmethod
    def _merge_usage(chat: _Chat, ev: ModelCall) -> None:
        u = ev.usage
        assert u is not None
        if chat.final and not ev.usage_final:
            return
        mine = chat.usage
        for name in ("input_tokens", "cache_read", "cache_creation"):
            value = getattr(u, name)
            if value is not None:
                setattr(mine, name, value)
        if u.output_tokens is not None:
            if ev.usage_final or mine.output_tokens is None:
                mine.output_tokens = u.output_tokens
            else:  # per-line output_tokens is a snapshot taken at the line's start
                mine.output_tokens = max(mine.output_tokens, u.output_tokens)
        mine.anthropic = mine.anthropic or u.anthropic
        chat.final = chat.final or ev.usage_final

    def _on_tool_result(self, s: _Session, ev: ToolResult, now: int) -> None:
        tool = s.tools.pop(ev.tool_use_id, None)
        agent = s.agents.get(ev.tool_use_id)
        if agent is not None:
            agent.tool_done_ns = now
        if tool is None:
            if ev.parent_tool_use_id is None and agent is None:
                self._turn(s, now)
            return
        if tool.owner is None:
            self._turn(s, now)
        else:
            owner = s.agents.get(tool.owner)
            if owner is not None:
                owner.last_ns = max(owner.last_ns, now)
        error = None
        if ev.is_error:
            error = redact.clean(ev.content) if (self.ctx.capture_content and ev.content) else "tool error"
        self._emit_tool(s, tool, now, error, "tool_error" if ev.is_error else None, ev.content)

    def _on_user(self, s: _Session, ev: UserMessage, now: int) -> None:
        if ev.parent_tool_use_id is None:
            self._turn(s, now)
            return
        agent = self._agent(s, ev.parent_tool_use_id, now)
        if agent is not None:
            agent.last_ns = max(agent.last_ns, now)

    def _on_result(self, s: _Session, ev: TurnResult, now: int) -> None:
        last = s.last
        if s.turn is None and last is not None and (
            (ev.uuid is not None and ev.uuid == last.uuid)
            or (ev.uuid is None or last.uuid is None)
            and (ev.subtype, ev.is_error, ev.num_turns, ev.duration_ms)
            == (last.subtype, last.is_error, last.num_turns, last.duration_ms)
        ):
            self.ctx.stats.duplicate_results += 1
            return
        turn = self._turn(s, now)
        # calls and tools of the turn end here; done sub-agents (of any turn) are emitted
        for chat in [c for c in s.chats.values() if c.owner is None]:
            self._emit_chat(s, chat)
        for tool in [t for t in s.tools.values() if t.owner is None]:
            del s.tools[tool.id]
            self._emit_tool(s, tool, now, NO_TOOL_RESULT_IN_TURN, "incomplete", None)
        for agent in list(s.agents.values()):
            if self._agent_done(s, agent):
                self._emit_agent(s, agent, None)
        start = turn.start_ns
        if ev.duration_ms is not None:
            start = min(start, now - ev.duration_ms * 1_000_000)
        if s.result_ns is not None:  # turns follow each other: never before the last result
            start = max(start, min(s.result_ns, turn.start_ns))
        s.start_ns = min(s.start_ns, start)
        rec = self._turn_record(s, turn, start, now)
        self._result_attrs(rec.attributes, ev)
        _usage_attrs(rec.attributes, ev.usage)
        self._result_error(rec, ev)
        self.ctx.emit(rec)
        s.child_end_ns = max(s.child_end_ns, rec.end_ns)
        s.turn = None
        s.results += 1
        s.result_ns = now
        s.last = ev
        if ev.usage is not None:
            if s.usage is None:
                s.usage = Usage()
            s.usage.add(ev.usage)
        if ev.final:
            self._close_session(s, eof=False)

    def _on_task_started(self, s: _Session, ev: TaskStarted, now: int) -> None:
        if ev.task_id in s.workflows:
            return
        if ev.task_type in AGENT_TASK_TYPES or ev.subagent_type:
            key = ev.tool_use_id or f"task:{ev.task_id}"
            earlier = s.tasks.pop(ev.task_id, None)  # progress seen before its start
            agent = self._agent(s, key, earlier.first_seen_ns if earlier else now)
            if agent is None:
                return
            s.agent_tasks[ev.task_id] = key
            agent.task_id = ev.task_id
            agent.subagent_type = ev.subagent_type or agent.subagent_type
            agent.description = ev.description or agent.description
            if earlier is not None and earlier.usage is not None:
                agent.task_usage = earlier.usage
            return
        task = self._task(s, ev.task_id, now)
        if task is None:
            return
        task.started = True
        task.start_ns = min(task.start_ns, now)
        task.task_type = ev.task_type or task.task_type
        task.tool_use_id = ev.tool_use_id or task.tool_use_id
        task.description = ev.description or task.description

    def _on_task_progress(self, s: _Session, ev: TaskProgress, now: int) -> None:
        if ev.task_id in s.workflows:
            return
        agent = self._task_agent(s, ev.task_id, ev.tool_use_id)
        if agent is not None:
            agent.task_usage = ev.usage or agent.task_usage
            agent.last_ns = max(agent.last_ns, now)
            return
        task = self._task(s, ev.task_id, now)
        if task is not None:
            task.usage = ev.usage or task.usage
            task.tool_use_id = task.tool_use_id or ev.tool_use_id
            task.description = task.description or ev.description

    def _on_task_updated(self, s: _Session, ev: TaskUpdated, now: int) -> None:
        if ev.task_id in s.workflows:
            return
        agent = self._task_agent(s, ev.task_id, None)
        if agent is not None:
            agent.status = ev.status or agent.status
            agent.end_time_ns = ev.end_time_ns or agent.end_time_ns
            return
        task = s.tasks.get(ev.task_id)
        if task is not None:
            task.status = ev.status or task.status
            task.end_time_ns = ev.end_time_ns or task.end_time_ns

    def _on_task_notification(self, s: _Session, ev: TaskNotification, now: int) -> None:
        if ev.task_id in s.workflows:
            return
        agent = self._task_agent(s, ev.task_id, ev.tool_use_id)
        if agent is not None:
            if agent.notified_ns is not None:
                self.ctx.stats.duplicate_notifications += 1
                return
            agent.notified_ns = now
            agent.task_id = agent.task_id or ev.task_id
            agent.status = ev.status or agent.status or "completed"
            agent.summary = ev.summary
            agent.task_usage = ev.usage or agent.task_usage
            return
        if ev.task_id in s.closed_tasks:
            self.ctx.stats.duplicate_notifications += 1
            return
        task = self._task(s, ev.task_id, now)
        if task is None:
            return
        task.status = ev.status or task.status or "completed"
        task.usage = ev.usage or task.usage
        task.tool_use_id = task.tool_use_id or ev.tool_use_id
        self._emit_task(s, task, now, ev.summary, eof=False)

    def _on_workflow(self, s: _Session, ev: WorkflowStarted | WorkflowProgress, now: int) -> None:
        # every workflow task is remembered (its task_* lines are not background tasks); the
        # session span links the first MAX_LINKS of them
        remember(s.workflows, ev.task_id, cap=MAX_ITEMS)
        s.tasks.pop(ev.task_id, None)

    def _on_caudra_workflow(self, s: _Session, ev: CaudraWorkflowSnapshot | CaudraWorkflowLog,
                            now: int) -> None:
        remember(s.workflows, caudra_workflow_key(ev.run_id), cap=MAX_ITEMS)

    _handlers: dict[type, Any] = {}

    # ------------------------------------------------------------------ sub-agents and tasks

    def _agent(self, s: _Session, key: str, now: int) -> _Agent | None:
        agent = s.agents.get(key)
        if agent is not None:
            return agent
        if key in s.closed_agents:
            self.ctx.stats.late_events_ignored += 1
            return None
        if self._capped(s.agents):
            return None
        agent = _Agent(key, self._span_id(s, "subagent", key), now, now)
        hint = s.hints.pop(key, None)
        if hint is not None:
            agent.subagent_type, agent.description = hint
        s.agents[key] = agent
        return agent

    @staticmethod
    def _agent_done(s: _Session, agent: _Agent) -> bool:
        """Done: some terminal signal came, its tool (if known) was answered and its task (if
        any) notified. A background sub-agent's tool is answered at launch: it waits for the
        notification."""
        if agent.tool_done_ns is None and agent.notified_ns is None:
            return False
        tool_ok = agent.tool_done_ns is not None or agent.key not in s.tool_spans
        task_ok = agent.task_id is None or agent.notified_ns is not None
        return tool_ok and task_ok

    def _task_agent(self, s: _Session, task_id: str, tool_use_id: str | None) -> _Agent | None:
        key = s.agent_tasks.get(task_id)
        if key is None and tool_use_id is not None and tool_use_id in s.agents:
            key = tool_use_id
            s.agent_tasks[task_id] = key
        return s.agents.get(key) if key is not None else None

    def _task(self, s: _Session, task_id: str, now: int) -> _Task | None:
        task = s.tasks.get(task_id)
        if task is None:
            if task_id in s.closed_tasks or self._capped(s.tasks):
                return None
            task = _Task(task_id, self._span_id(s, "task", task_id), now, now)
            s.tasks[task_id] = task
        return task

    # ------------------------------------------------------------------ records

    def _emit_chat(self, s: _Session, chat: _Chat) -> None:
        s.chats.pop(chat.message_id, None)
        if s.scope_chat.get(chat.owner) == chat.message_id:
            del s.scope_chat[chat.owner]
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "chat"
        attrs["gen_ai.response.id"] = redact.clean(chat.message_id)
        if s.provider:
            attrs["gen_ai.provider.name"] = redact.clean(s.provider)
        if chat.model:
            attrs["gen_ai.request.model"] = redact.clean(chat.model)
            attrs["gen_ai.response.model"] = attrs["gen_ai.request.model"]
        if chat.stop_reason:
            attrs["gen_ai.response.finish_reasons"] = [redact.clean(chat.stop_reason, 64)]
        _usage_attrs(attrs, chat.usage)
        if self.ctx.capture_content and chat.content:
            attrs["gen_ai.output.messages"] = _json.encode(
                [{"role": "assistant", "parts": [{"type": "text", "content": redact.clean(chat.content, 1024)}]}]
            ).decode()
        if chat.owner is not None:
            agent = s.agents.get(chat.owner)
            if agent is not None:
                agent.usage.add(chat.usage)
        self.ctx.emit(
            SpanRecord(
                name=redact.span_name("chat", chat.model, "model"),
                trace_id=s.trace_id,
                span_id=chat.span_id,
                parent_span_id=chat.parent_span_id,
                start_ns=chat.start_ns,
                end_ns=max(chat.end_ns, chat.start_ns),
                attributes=attrs,
                kind=CLIENT,
            )
        )

    def _emit_tool(self, s: _Session, tool: _Tool, end: int, error: str | None,
                   error_type: str | None, result: str | None) -> None:
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.call.id"] = redact.clean(tool.id)
        if tool.name:
            attrs["gen_ai.tool.name"] = redact.clean(tool.name)
        if self.ctx.capture_content:
            if tool.arguments:
                attrs["gen_ai.tool.call.arguments"] = redact.clean(tool.arguments, 1024)
            if result:
                attrs["gen_ai.tool.call.result"] = redact.clean(result, 1024)
        self.ctx.emit(
            SpanRecord(
                name=redact.span_name("execute_tool", tool.name, "tool"),
                trace_id=s.trace_id,
                span_id=tool.span_id,
                parent_span_id=tool.parent_span_id,
                start_ns=tool.start_ns,
                end_ns=max(end, tool.start_ns),
                attributes=attrs,
                error=error,
                error_type=error_type,
            )
        )

    def _emit_agent(self, s: _Session, agent: _Agent, eof_error: str | None) -> None:
        """End a sub-agent: its open calls and tools first, then its own span."""
        for chat in [c for c in s.chats.values() if c.owner == agent.key]:
            self._emit_chat(s, chat)
        end = agent.last_ns
        for t in (agent.tool_done_ns, agent.notified_ns, agent.end_time_ns):
            if t is not None:
                end = max(end, t)
        for tool in [t for t in s.tools.values() if t.owner == agent.key]:
            del s.tools[tool.id]
            self._emit_tool(s, tool, end, NO_TOOL_RESULT, "incomplete", None)
        s.agents.pop(agent.key, None)
        s.closed_agents.add(agent.key)
        if agent.task_id is not None:
            s.agent_tasks.pop(agent.task_id, None)
            s.closed_tasks.add(agent.task_id)
        start = agent.start_ns
        duration = agent.task_usage.duration_ms if agent.task_usage else None
        if agent.end_time_ns is not None and duration is not None:
            start = min(start, agent.end_time_ns - duration * 1_000_000)
        name = agent.subagent_type or "subagent"
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.agent.name"] = redact.clean(name)
        if agent.description:
            attrs["gen_ai.agent.description"] = redact.clean(agent.description)
        if agent.task_id:
            attrs["gen_ai.agent.id"] = redact.clean(agent.task_id)
            attrs["task.id"] = attrs["gen_ai.agent.id"]
        if not agent.key.startswith("task:"):
            attrs["task.tool_use_id"] = redact.clean(agent.key)
        if agent.status:
            attrs["task.status"] = redact.clean(agent.status, 32)
        self._task_usage_attrs(attrs, agent.task_usage)
        if agent.usage.input_tokens is not None or agent.usage.output_tokens is not None:
            _usage_attrs(attrs, agent.usage)
        parent = s.tool_spans.get(agent.key)
        if parent is None:
            parent = s.turn.span_id if s.turn is not None else s.span_id
        rec = SpanRecord(
            name=redact.span_name("invoke_agent", name, "subagent"),
            trace_id=s.trace_id,
            span_id=agent.span_id,
            parent_span_id=parent,
            start_ns=start,
            end_ns=max(end, start),
            attributes=attrs,
        )
        if agent.status == "failed":
            rec.error, rec.error_type = redact.clean(agent.summary or "sub-agent failed"), "agent_error"
        elif agent.status in ("stopped", "killed"):
            rec.events.append(SpanEvent("interrupted", max(agent.notified_ns or end, start)))
        elif eof_error is not None:
            rec.error, rec.error_type = eof_error, "incomplete"
        self.ctx.emit(rec)

    @staticmethod
    def _task_usage_attrs(attrs: dict[str, Any], usage: TaskUsage | None) -> None:
        if usage is not None:
            put_attributes(attrs, (
                ("task.usage.total_tokens", usage.total_tokens),
                ("task.usage.tool_uses", usage.tool_uses),
                ("task.usage.duration_ms", usage.duration_ms),
            ))

    def _emit_task(self, s: _Session, task: _Task, now: int, summary: str | None, *, eof: bool) -> None:
        s.tasks.pop(task.task_id, None)
        s.closed_tasks.add(task.task_id)
        end = task.end_time_ns or now
        start = task.start_ns
        duration = task.usage.duration_ms if task.usage else None
        if duration is not None and (not task.started or end - duration * 1_000_000 < start):
            start = end - duration * 1_000_000
        attrs = self._common(s)
        attrs["task.id"] = redact.clean(task.task_id)
        if task.task_type:
            attrs["task.type"] = redact.clean(task.task_type, 64)
        if task.tool_use_id:
            attrs["task.tool_use_id"] = redact.clean(task.tool_use_id)
        if task.description:
            attrs["task.description"] = redact.clean(task.description)
        attrs["task.status"] = redact.clean(task.status or "incomplete", 32)
        self._task_usage_attrs(attrs, task.usage)
        rec = SpanRecord(
            name=redact.span_name("task", task.task_type, "task"),
            trace_id=s.trace_id,
            span_id=task.span_id,
            parent_span_id=s.span_id,
            start_ns=start,
            end_ns=max(end, start),
            attributes=attrs,
        )
        if eof:
            rec.error, rec.error_type = NO_TERMINAL, "incomplete"
        elif task.status == "failed":
            rec.error, rec.error_type = redact.clean(summary or "task failed"), "task_failed"
        elif task.status in ("stopped", "killed"):
            rec.events.append(SpanEvent("interrupted", max(now, start)))
        s.start_ns = min(s.start_ns, start)
        s.child_end_ns = max(s.child_end_ns, rec.end_ns)
        self.ctx.emit(rec)

    def _turn_record(self, s: _Session, turn: _Turn, start: int, end: int) -> SpanRecord:
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["turn.number"] = turn.n
        self._turn_attrs(attrs, turn)
        return SpanRecord(
            name=f"turn {turn.n}",
            trace_id=s.trace_id,
            span_id=turn.span_id,
            parent_span_id=s.span_id,
            start_ns=start,
            end_ns=max(end, start),
            attributes=attrs,
        )

    @staticmethod
    def _turn_attrs(attrs: dict[str, Any], turn: _Turn) -> None:
        """Caudra ``turn_start`` fields (seed 003): ``turn.run_id``, ``turn.automatic``, counts."""
        ev = turn.started
        if ev is None:
            return
        if ev.run_id is not None:
            attrs["turn.run_id"] = redact.clean(ev.run_id, 128)
        put_attributes(attrs, (
            ("turn.automatic", ev.automatic),
            ("turn.task_event_ids.count", ev.task_events),
            ("turn.workflow_events.count", ev.workflow_events),
            ("turn.automation_events.count", ev.automation_events),
        ))

    @staticmethod
    def _result_attrs(attrs: dict[str, Any], ev: TurnResult) -> None:
        for key, value in (
            ("result.subtype", ev.subtype),
            ("result.stop_reason", ev.stop_reason),
            ("result.terminal_reason", ev.terminal_reason),
        ):
            if value:
                attrs[key] = redact.clean(value, 64)
        attrs["result.is_error"] = ev.is_error
        if ev.run_id is not None:
            attrs["result.run_id"] = redact.clean(ev.run_id, 128)
        put_attributes(attrs, (
            ("result.background_active", ev.background_active),
            ("result.num_turns", ev.num_turns),
            ("result.duration_ms", ev.duration_ms),
            ("result.duration_api_ms", ev.duration_api_ms),
            ("result.total_cost_usd", ev.total_cost_usd),
        ))

    @staticmethod
    def _result_error(rec: SpanRecord, ev: TurnResult) -> None:
        if ev.is_error:
            kind = ev.subtype if ev.subtype and ev.subtype != "success" else ev.terminal_reason
            rec.error = redact.clean(ev.error or ev.terminal_reason or ev.subtype or "result is_error")
            rec.error_type = redact.clean(kind or "result_error", 64)

    def _close_session(self, s: _Session, *, eof: bool) -> None:
        """End everything ``s`` holds, then the session span itself, exactly once."""
        self.sessions.pop(s.sid, None)
        self._closed.add(s.sid)
        end_all = s.last_ns
        for agent in list(s.agents.values()):
            done = agent.tool_done_ns is not None or agent.notified_ns is not None
            self._emit_agent(s, agent, None if done else NO_TERMINAL)
        for chat in list(s.chats.values()):
            self._emit_chat(s, chat)
        for tool in list(s.tools.values()):
            del s.tools[tool.id]
            self._emit_tool(s, tool, end_all, NO_TOOL_RESULT, "incomplete", None)
        for task in list(s.tasks.values()):
            self._emit_task(s, task, end_all, None, eof=True)
        # a stream that showed only background tasks or workflows of a session is not an error
        active = s.turn_count > 0 or s.agent_name is not None or bool(s.events)
        incomplete = s.turn is not None or (s.results == 0 and active)
        self._end_open_turn(s)
        end = s.result_ns if (s.result_ns is not None and not incomplete) else s.last_ns
        end = max(end, s.child_end_ns, s.start_ns)
        self.ctx.emit(self._session_record(s, end, incomplete))

    def _end_open_turn(self, s: _Session) -> None:
        """A turn that never got its result: ends at its last line, ERROR ``incomplete``."""
        turn = s.turn
        if turn is None:
            return
        for chat in [c for c in s.chats.values() if c.owner is None]:
            self._emit_chat(s, chat)
        rec = self._turn_record(s, turn, turn.start_ns, turn.last_ns)
        rec.error, rec.error_type = NO_RESULT, "incomplete"
        self.ctx.emit(rec)
        s.child_end_ns = max(s.child_end_ns, turn.last_ns)
        s.turn = None

    def _session_record(self, s: _Session, end: int, incomplete: bool) -> SpanRecord:
        name = s.agent_name or DEFAULT_AGENT
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.agent.name"] = redact.clean(name)
        if s.provider:
            attrs["gen_ai.provider.name"] = redact.clean(s.provider)
        if s.model:
            attrs["gen_ai.request.model"] = redact.clean(s.model)
        if s.version:
            attrs["gen_ai.agent.version"] = redact.clean(s.version, 64)
        attrs["session.turns"] = s.turn_count
        events = list(s.events)
        events.extend(self.ctx.take_session_events(s.sid))  # Caudra goal events, notices
        last = s.last
        if last is not None:
            self._result_attrs(attrs, last)
            for model, usage in last.model_usage.items():
                ev_attrs: dict[str, Any] = {"gen_ai.response.model": redact.clean(model)}
                _usage_attrs(ev_attrs, usage)
                if usage.cost_usd is not None:
                    ev_attrs["cost_usd"] = usage.cost_usd
                events.append(SpanEvent("model_usage", s.result_ns or end, ev_attrs))
        _usage_attrs(attrs, s.usage)
        links = []
        for task_id in itertools.islice(s.workflows, MAX_LINKS):
            ref = self.ctx.workflow_ref(s.sid, task_id)
            links.append(SpanLink(ref.trace_id, ref.span_id, {"otelbridge.link": "workflow"}))
        if self.ctx.run is not None:
            parent, remote = self.ctx.run.span_id, False
        elif self.ctx.parent is not None:
            parent, remote = self.ctx.parent.span_id, True
        else:
            parent, remote = None, False
        rec = SpanRecord(
            name=redact.span_name("invoke_agent", name, "agent"),
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
            self._result_error(rec, last)
        return rec


SessionTracker._handlers = {
    SessionStarted: SessionTracker._on_started,
    TurnStarted: SessionTracker._on_turn_start,
    LineSeq: SessionTracker._on_seq,
    SessionMark: SessionTracker._on_mark,
    SessionError: SessionTracker._on_error,
    ModelCall: SessionTracker._on_model_call,
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
