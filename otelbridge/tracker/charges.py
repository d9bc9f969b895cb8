"""What the session part holds, charged to the state budget (:mod:`.budget`).

Each session, and each model call, tool call, sub-agent and background task open in it, is one
budget item keyed ``(kind, part, session id, item key)``; an item is charged when it opens (again
when it grows or is active: the charge makes it the most recently active) and released when its
span is emitted. The session's own weight (its turns, events and remembered ids) is charged after
every event of the session, after its items: a session is always more recently active than what
it holds, so the budget ends a session's items before the session itself.

When the budget ends an item it is ended as at end of input (ERROR ``incomplete``) at the
session's last activity, with an ``interrupted`` event (``otelbridge.reason``): a tool call that
is a sub-agent's parent ends that sub-agent first, a sub-agent its calls and tools, a session
everything it holds, so no child outlives its parent.

A mixin of :class:`~otelbridge.tracker.sessions.SessionTracker`.
"""

from __future__ import annotations

from typing import Any

from .budget import ITEM_BYTES, REF_BYTES, SESSION_BYTES, interrupting, text_bytes
from .state import Agent, Chat, Session, Task, Tool

SESSION = "session"
CHAT = "chat"
TOOL = "tool"
AGENT = "agent"
TASK = "task"


def session_text(s: Session) -> int:
    """Estimated bytes of the strings ``s`` holds itself (for ``s.text_bytes``)."""
    held = text_bytes(s.sid, s.agent_name, s.model, s.version, s.cwd, s.stop_pending,
                      s.turn.stopped if s.turn is not None else None)
    last = s.last
    if last is not None:
        held += text_bytes(last.terminal_reason, last.error, last.content, last.stop_reason)
    return held


def session_weight(s: Session) -> int:
    """Estimated bytes ``s`` holds itself (its open items are charged on their own)."""
    return (SESSION_BYTES + ITEM_BYTES * (len(s.waiting) + len(s.events) + 1)
            + REF_BYTES * (len(s.agent_tasks) + len(s.tool_tasks) + len(s.scope_chat))
            + s.tool_spans.bytes + s.hints.bytes + s.workflows.bytes + s.closed_agents.bytes
            + s.closed_tasks.bytes + s.text_bytes)


_WEIGH: dict[type, Any] = {
    Chat: lambda c: ITEM_BYTES + text_bytes(c.message_id, c.model, c.content, c.error_text)
    + sum(REF_BYTES + text_bytes(*call) for call in c.tool_calls),
    Tool: lambda t: ITEM_BYTES + text_bytes(t.id, t.name, t.arguments),
    Agent: lambda a: ITEM_BYTES + text_bytes(a.key, a.description, a.summary),
    Task: lambda t: ITEM_BYTES + text_bytes(t.task_id, t.description),
}


def item_weight(item: Chat | Tool | Agent | Task) -> int:
    """Estimated bytes of one open item with the raw strings it holds."""
    return _WEIGH[type(item)](item)


class ChargesMixin:
    """Budget charges of :class:`~otelbridge.tracker.sessions.SessionTracker`."""

    ctx: Any
    sessions: dict

    def _charge(self, s: Session, kind: str, key: str, item: Chat | Tool | Agent | Task) -> None:
        budget, ident, weight = self.ctx.budget, (kind, id(self), s.sid, key), item_weight(item)
        if not budget.reweigh(ident, weight):
            budget.charge(ident, weight, lambda reason: self._end_early(s, kind, key, reason))

    def _release(self, s: Session, kind: str, key: str | None) -> None:
        self.ctx.budget.release((kind, id(self), s.sid, key))

    def _charge_session(self, s: Session) -> None:
        if self.sessions.get(s.sid) is s:
            budget, ident, weight = self.ctx.budget, (SESSION, id(self), s.sid, None), session_weight(s)
            if not budget.reweigh(ident, weight):
                budget.charge(ident, weight, lambda reason: self._end_early(s, SESSION, None, reason))

    def _end_early(self, s: Session, kind: str, key: str | None, reason: str) -> None:
        """The budget ends item ``key`` of ``kind`` in ``s`` (if it is still open)."""
        if self.sessions.get(s.sid) is not s:
            return
        with interrupting(self.ctx, reason):
            if kind == SESSION:
                self._close_session(s, eof=True)  # type: ignore[attr-defined]
            elif kind == CHAT and key in s.chats:
                chat = s.chats[key]
                self._emit_chat(s, chat)  # type: ignore[attr-defined]
                turn = s.turn  # nor held (Turn.first_call): its memory is what the budget wants
                held = turn.first_call if turn is not None else None
                if held is not None and held.span_id == chat.span_id:
                    self._release_first_call(turn, turn.start_ns)  # type: ignore[attr-defined]
            elif kind == AGENT and key in s.agents:
                self._emit_agent(s, s.agents[key], reason)  # type: ignore[attr-defined]
            elif kind == TASK and key in s.tasks:
                self._emit_task(s, s.tasks[key], s.last_ns, None, eof=True)  # type: ignore[attr-defined]
            elif kind == TOOL and key in s.tools:
                agent = s.agents.get(key)  # the sub-agent this call started ends first
                if agent is not None:
                    self._emit_agent(s, agent, reason)  # type: ignore[attr-defined]
                tool = s.tools.pop(key)
                self._emit_tool(s, tool, max(s.last_ns, tool.start_ns), reason,  # type: ignore[attr-defined]
                                "incomplete", None)
