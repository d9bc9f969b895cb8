"""Stage 4a: protocol-neutral state, and *when* each span starts and ends.

Plain events in (``otelbridge.events``), plain :class:`~otelbridge.events.SpanRecord` out; no
OpenTelemetry here, and no redaction: strings are carried raw (the span builder redacts them).
The work is split by what is tracked, one module each, all sharing one :class:`Context`
(:mod:`.base`, the leaf every part imports):

* :mod:`.workflows` — workflow runs, their phases and agents (the cbc workflow protocol);
* :mod:`.caudra` — Caudra workflow runs, phases and agents, automation firings, goal and
  notice events (Caudra's headless-mode documentation);
* :mod:`.bernstein` — Bernstein stream signals on the run span (the Bernstein stream-signal protocol);
* :mod:`.sessions` — sessions and turns, with :mod:`.calls` (model calls, tools) and
  :mod:`.subagents` (sub-agents, background tasks);
* :mod:`.budget` — the one bound on what all parts hold open (:class:`StateBudget`, on the
  context): when it is full the least recently active items are ended early;

:class:`Tracker` routes every event to each part, holds finished records while the clock is
pending (before the stream's first timestamp, docs/span-model.md "Time"), settles the budget after
each event and ends everything at :meth:`Tracker.finish`.
"""

from __future__ import annotations

from ..clock import WAIT_NS
from ..events import Event, SessionStarted, SpanRecord, StreamTime
from ..source import REASON_DOWNSTREAM_CLOSED, interrupted_by
from .base import (
    DEFAULT_GRACE_S,
    MAX_REFS,
    MAX_SESSION_EVENTS,
    CallLater,
    Context,
    Parent,
    Part,
    Recent,
    RunBase,
    RunTable,
    SessionRef,
    SpanRef,
    counted_parts,
    interrupted_event,
    put_attributes,
    remember,
    span_name,
    usage_attributes,
)
from .bernstein import BernsteinTracker
from .budget import DEFAULT_STATE_BYTES, ITEM_BYTES, REASON_STATE_BUDGET, StateBudget, text_bytes
from .caudra import CaudraTracker
from .results import counted_so_far
from .sessions import SessionTracker
from .workflows import WorkflowTracker

__all__ = [
    "DEFAULT_GRACE_S", "DEFAULT_STATE_BYTES", "REASON_STATE_BUDGET", "StateBudget", "MAX_REFS", "MAX_SESSION_EVENTS", "REASON_DOWNSTREAM_CLOSED", "CallLater",
    "Context", "Parent", "Part", "Recent", "RunBase", "RunTable", "SpanRef", "Tracker",
    "interrupted_by", "interrupted_event", "put_attributes", "remember", "span_name",
    "usage_attributes",
]

#: Records held while the clock is pending, at most: beyond it (or when the state budget ends
#: the held records as its least recently active item) the clock settles on the wall clock.
MAX_HELD = 10_000
#: the held records' key in the state budget
HELD = ("held records",)


def _record_bytes(rec: SpanRecord) -> int:
    return ITEM_BYTES * (1 + len(rec.events)) + text_bytes(rec.name, *rec.attributes.values())


def _shift(rec: SpanRecord, shift: int) -> None:
    rec.start_ns += shift
    rec.end_ns += shift
    for ev in rec.events:
        ev.time_ns += shift


class Tracker:
    """Routes events to every part; ``finish()`` is end of input (cuts grace windows short).

    While ``ctx.clock`` is pending, records the parts emit are held; when it settles they move
    by the clock's shift (as the parts move the times they hold, :meth:`Part.rebase`) and go
    out. Live ``auto`` checks again :data:`~otelbridge.clock.WAIT_NS` after the first line
    through ``ctx.call_later``.
    """

    def __init__(self, ctx: Context, parts: list[Part] | None = None) -> None:
        self.ctx = ctx
        self.parts: list[Part] = (
            parts
            if parts is not None
            # the session part last: other parts hand it session events at their finish
            else [WorkflowTracker(ctx), CaudraTracker(ctx), BernsteinTracker(ctx), SessionTracker(ctx)]
        )
        self._sessions = [part for part in self.parts if isinstance(part, SessionTracker)]
        self._sink = ctx.emit
        self._held: list[SpanRecord] = []
        self._held_bytes = 0
        #: no 1 s check to schedule (only a live ``auto`` clock that is still pending needs one)
        self._waiting = ctx.call_later is None or ctx.clock.mode != "auto" or ctx.clock.settled
        if not ctx.clock.settled:
            ctx.emit = self._hold
            ctx.clock.on_settle.extend(part.rebase for part in self.parts)
            ctx.clock.on_settle.append(ctx.rebase)
            ctx.clock.on_settle.append(self._release)

    def _hold(self, rec: SpanRecord) -> None:
        if self.ctx.clock.settled:
            self._sink(rec)
            return
        self._held.append(rec)
        self._held_bytes += _record_bytes(rec)
        # as old as the first record held: the budget lets them go (settling the clock, nothing
        # lost) before it ends anything opened since
        if not self.ctx.budget.reweigh(HELD, self._held_bytes, touch=False):
            self.ctx.budget.charge(HELD, self._held_bytes, lambda _reason: self.ctx.clock.settle())
        if len(self._held) >= MAX_HELD:
            self.ctx.clock.settle()

    def _release(self, shift: int) -> None:
        held, self._held = self._held, []
        self._held_bytes = 0
        self.ctx.budget.release(HELD)
        self.ctx.emit = self._sink
        for rec in held:
            if shift:
                _shift(rec, shift)
            self._sink(rec)

    def _check_clock(self) -> None:
        clock = self.ctx.clock
        if clock.settled:  # (a pending auto clock whose wait ran out settles here)
            return
        # a timer may fire a little before the wait is over (the loop's granularity; the
        # wait counts from the first dated line, after the timer was set): the held records
        # must not wait for a next line, which may not come for long
        left = clock.wait_left_s()
        if left is None:
            self._waiting = False  # nothing dated yet: the next line sets the check again
        else:
            self.ctx.call_later(left + 0.001, self._check_clock)

    def handle(self, ev: Event) -> None:
        if not self._waiting:
            self._waiting = True
            self.ctx.call_later(WAIT_NS / 1e9, self._check_clock)
        if type(ev) is StreamTime:
            self.ctx.clock.observe(ev.ts_ns)
            return
        if type(ev) is SessionStarted:
            for part in self._sessions:
                part.end_quiet(ev.session_id, self._running())
        for part in self.parts:
            part.handle(ev)
        if any(part.passed_over for part in self._sessions):
            running = self._running()
            for part in self._sessions:
                part.end_passed_over(running)
        self.ctx.budget.settle()

    def finish(self, *, reason: str | None = None) -> None:
        """End every open span exactly once.

        ``reason`` is ``None`` at plain end of input; otherwise why the run was cut short
        (:data:`REASON_DOWNSTREAM_CLOSED`, :func:`interrupted_by`): parts put it on the spans
        they end early (an ``interrupted`` event with ``otelbridge.reason``). A clock still
        pending settles on the wall clock first (a stream with no timestamp at all).
        """
        self.ctx.clock.settle()
        # (a session whose turns all ended is cut short too while a workflow of it runs)
        running = self._running()
        for part in self.parts:
            if isinstance(part, SessionTracker):
                part.finish(reason=reason, running=running)
            else:
                part.finish(reason=reason)
        # session events no session span took: counted, never dropped silently
        self.ctx.stats.session_events_unclaimed += self.ctx.pending_session_events()

    def _running(self) -> frozenset[str | None]:
        """The session ids of the workflow runs not yet ended."""
        return frozenset(key[0] for part in self.parts if hasattr(part, "table") for key in part.table.open)

    def open_workflows(self) -> int:
        """Workflow runs (of every part that keeps a :class:`RunTable`) not yet ended
        (``follow`` checkpoints only when this is 0)."""
        return sum(len(part.table.open) for part in self.parts if hasattr(part, "table"))

    def open_turns(self) -> int:
        """Sessions with a turn, a sub-agent, a tool or a task open (``follow`` takes a
        checkpoint only when this is 0 too: a restart reads each of them again from its first
        line)."""
        return sum(1 for part in self._sessions
                   for s in part.sessions.values() if s.busy())

    def read_again(self) -> None:
        """``follow`` has read again what a run before read: the cost and tokens the sessions
        that go on counted so far are the ended spans' (their own are what comes after)."""
        for part in self._sessions:
            for s in part.sessions.values():
                if s.continues is not None:
                    s.own_from = s.ref()[4]
                    if s.model_total is not None:
                        counted = s.process_tokens(earlier=True)
                        s.tokens_from = counted_parts(counted)[2] if counted is not None else None
                    else:  # (it takes off what the ended span counted, a cut turn's too: not twice)
                        s.counted_from, s.cut_before = counted_so_far(s), ()

    def open_session_refs(self) -> tuple[SessionRef, ...]:
        """The sessions not yet ended that have an id (``turns``: those begun)."""
        return tuple(s.ref() for part in self._sessions for s in part.sessions.values() if s.sid)

    def quiet_refs(self) -> tuple[SessionRef, ...]:
        """The sessions another session's ``init`` ended whose lines have not come again."""
        return tuple(ref for part in self._sessions for ref in part.quiet_refs())

    def sessions_begin(self) -> int | None:
        """Where the first line of the oldest session open, or of an event held for a session,
        begins in the input (bytes, see :attr:`~otelbridge.tracker.base.Context.line_at`):
        every session begun before it has ended. ``None`` with none open, with a workflow open
        (it may have begun before), or with a Bernstein signal run open (its start is not a
        line)."""
        if self.open_workflows() or any(getattr(part, "pipe_run", None) is not None for part in self.parts):
            return None
        starts = [s.first_line for part in self._sessions for s in part.sessions.values()]
        held = self.ctx.held_since()
        return min(starts if held is None else [*starts, held], default=None)

    def continuation_refs(self) -> tuple[SessionRef, ...]:
        """The ended spans the open sessions go on from (:mod:`.quiet`, or a ``follow`` stop;
        ``turns``: those before, the cost the last before)."""
        return tuple((s.sid, s.continues.trace_id, s.continues.span_id, s.turns_before, *s.before_cost, s.ref()[7], None)
                     for part in self._sessions for s in part.sessions.values()
                     if s.sid and s.continues is not None)

    def session_refs(self) -> tuple[SessionRef, ...]:
        """:meth:`open_session_refs` and those of the sessions this stream ended."""
        return tuple(ref for part in self._sessions
                     for ref in part.ended.values() if ref[0]) + self.open_session_refs()

    def open_sessions(self) -> int:
        """Sessions not yet ended, and Bernstein signal runs (while one is, ``follow``'s
        checkpoints resume at its first line, reading up to the checkpoint again without
        exporting: a session span not yet exported — the process killed — still comes)."""
        return sum(len(part.sessions) if isinstance(part, SessionTracker)
                   else getattr(part, "pipe_run", None) is not None for part in self.parts)
