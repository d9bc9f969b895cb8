"""Session events (docs/span-model.md, "Sessions", milk): ``seq`` gaps, marks (milk's
``route``, ``agent_switch``, notices; Claude Code's ``system/informational``) and errors become
events on the session span, at most :data:`MAX_EVENTS` of them.

A mixin of :class:`~otelbridge.tracker.sessions.SessionTracker`.
"""

from __future__ import annotations

from typing import Any

from ..events import LineSeq, SessionError, SessionMark, SpanEvent
from .charges import session_text
from .state import Session

#: Events per session span (marks, seq gaps, exceptions).
MAX_EVENTS = 256


class MarksMixin:
    """Session events of :class:`~otelbridge.tracker.sessions.SessionTracker`."""

    ctx: Any

    def _event(self, s: Session, ev: SpanEvent) -> None:
        if len(s.events) < MAX_EVENTS:
            s.events.append(ev)
        else:
            self.ctx.stats.session_items_capped += 1

    def _on_seq(self, s: Session, ev: LineSeq, now: int) -> None:
        last = s.last_seq
        s.last_seq = ev.seq if last is None else max(last, ev.seq)  # (a step back: a late line)
        if last is not None and ev.seq != last + 1:
            self.ctx.stats.seq_gaps += 1
            self._event(s, SpanEvent("seq_gap", now, {
                "seq.expected": last + 1, "seq.received": ev.seq,
                "seq.kind": "reordered" if ev.seq <= last else "missing"}))

    def _on_mark(self, s: Session, ev: SessionMark, now: int) -> None:
        s.now_model, s.now_provider = ev.model or s.now_model, ev.provider or s.now_provider
        attrs = {str(key): value for key, value in ev.attributes.items()}
        text = ev.text if self.ctx.capture_content and ev.text else None
        if text is not None:
            attrs[f"{ev.name or 'event'}.content"] = text
        self._event(s, SpanEvent(ev.name or "event", now, attrs))
        if attrs.get("informational.prevent_continuation") is True:
            if s.turn is not None:
                s.turn.stopped = text or ""
            else:  # a notice never opens a turn: the next one is the one it stopped
                s.stop_pending = text or ""
            s.text_bytes = session_text(s)

    def _on_error(self, s: Session, ev: SessionError, now: int) -> None:
        attrs: dict[str, Any] = {"exception.message": ev.message,
                                 "exception.type": ev.error_type or "error"}
        if ev.recoverable is not None:
            attrs["exception.recoverable"] = ev.recoverable
        self._event(s, SpanEvent("exception", now, attrs))
