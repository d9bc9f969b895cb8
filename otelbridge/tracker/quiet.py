"""Sessions that end before the end of input: a run that is over while another writes on.

``follow`` never reaches an end of input, and a worker runs one CLI after another into the file
it reads: a session whose runs all ended (a result came; no turn, model call, tool, sub-agent,
task or workflow is open) ends when another session's ``init`` comes, and its span (its tokens,
cost and status) goes out then. A session whose runtime outlives its turns (Caudra's init lists
``automations`` or ``workflows``: firings come between runs) is left open. One whose workflow
still runs then (its grace window: the next run began at once) ends at the first line after
that workflow ended.

A line of such a session after that (two runs writing to one stream, a resumed session) goes on
in a span of its own in the same trace, linked to the ended one (``continues``, as after a
``follow`` stop), its turns numbered on; it keeps the ended span's agent, provider, model and
version, and the last result before it, against which a repeated result is known and the next
turn's cost is the difference.

A mixin of :class:`~otelbridge.tracker.sessions.SessionTracker`.
"""

from __future__ import annotations

from typing import Any

from .base import Context, Refs, SessionRef, SpanRef, counted_parts, remember
from .state import MAX_CLOSED_REMEMBERED, Session


class QuietMixin:
    """:meth:`end_quiet` and what a session ended so carries over to its next span."""

    ctx: Context
    sessions: Any
    #: session id → (its :meth:`~.state.Session.ref`, cwd, last result) of a session ended by
    #: another's init, bounded as :func:`remember` is
    _carried: Refs
    #: the sessions another's ``init`` found done but for a workflow still open (its grace
    #: window): :meth:`end_passed_over` ends them once it has ended
    passed_over: set[str]

    def end_quiet(self, sid: str | None, running: frozenset[str | None]) -> None:
        """Session ``sid``'s first ``init``: another run writes to the stream now; each other
        session whose runs all ended (by ``running``: the session ids of the workflows still
        open) ends here (see the module)."""
        if sid is None or sid in self.sessions:
            return
        for s in list(self.sessions.values()):
            if s.sid is None or not self._done(s):
                continue
            if s.sid in running:
                self.passed_over.add(s.sid)
            else:
                self._end_quietly(s)

    def end_passed_over(self, running: frozenset[str | None]) -> None:
        """After a line: each session :attr:`passed_over` whose workflows all ended ends now,
        if it is still done (else the next ``init`` ends it)."""
        for sid in [sid for sid in self.passed_over if sid not in running]:
            self.passed_over.discard(sid)
            s = self.sessions.get(sid)
            if s is not None and self._done(s):
                self._end_quietly(s)

    @staticmethod
    def _done(s: Session) -> bool:
        """Whether ``s``'s runs all ended: a result came, and no turn, call, tool, sub-agent or
        task is open (nor is a runtime that outlives them)."""
        return bool(s.results) and not (s.outlives_turns or s.busy() or s.chats)

    def _end_quietly(self, s: Session) -> None:
        self._close_session(s, eof=False)  # type: ignore[attr-defined]
        self.ctx.went_quiet(s.sid, SpanRef(s.trace_id, s.span_id), s.turn_count)
        remember(self._carried, s.sid, (s.ref(), s.cwd, s.last), MAX_CLOSED_REMEMBERED)

    def _carry_over(self, s: Session) -> None:
        """``s`` goes on from a span a stop or another session's ``init`` ended: its turns are
        numbered on; after an ``init``, what that span knew of the run is ``s``'s too."""
        s.turns_before = s.turn_count
        carried = self._carried.pop(s.sid, None)
        if carried is not None:
            ref, s.cwd, s.before = carried
        else:  # (a follow stop's, kept)
            ref = self.ctx.ref_before(s.sid)
        if ref is not None:
            s.before_cost = ref[4:7]  # type: ignore[assignment]
            s.cut_before, s.cut_calls = ref[8] if len(ref) > 8 and ref[8] is not None else ((), ())
            s.tokens_from = counted_parts(ref[6])[2] if ref[6] is not None else None
            if ref[7] is not None:
                s.agent_name, s.provider, s.model, s.version = ref[7]
        s.cost_base = s.before_cost[1]

    def quiet_refs(self) -> tuple[SessionRef, ...]:
        """The sessions ended by another's ``init`` whose lines have not come again (``follow``
        saves them at a stop: their lines after the restart go on in a span of their own, not
        under the ended span's ids)."""
        return tuple(carried[0] for sid, carried in self._carried.items() if self.ctx.continues(sid) is not None)
