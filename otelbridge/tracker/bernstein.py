"""Bernstein stream signals → the run span's events and terminal status.

Source: the Bernstein stream-signal protocol ("Adapter stream-signal protocol"), "Canonical kinds" and the conformance note
on ``MissingTerminalSignal``; span names by docs/span-model.md (``run {cmd}``, ``run stdin``).

* Every signal is a span event ``bernstein.<kind>`` (``bernstein.completed``,
  ``bernstein.question``, ...) at the line's time, with the payload fields under
  ``bernstein.<field>`` (``reason``, ``hint``, ``question``, ``options``, ``id``, ``path``;
  the plan ``markdown`` only with ``--capture-content``).
* ``COMPLETED``/``FAILED`` are terminal: ``bernstein.terminal_signal`` says which; ``FAILED``
  sets ERROR described ``FAILED: {reason}`` (``error.type = run_failed``).
* A run with signals but no terminal one is not failed: ``bernstein.terminal_signal = none``
  and a ``MissingTerminalSignal`` event (the seed's conformance warning); counted in
  ``stats.bernstein_runs_without_terminal``. A run without any signal gets nothing.

Where the signals go:

* **wrapper mode** (``ctx.run`` set, by whoever emits ``run {cmd}``): they are held and
  applied to that span's record by the process hook this part registers
  (``ctx.decorate_process(rec)``); the first ``FAILED`` decides the status, else the first
  ``COMPLETED``.
* **pipe mode**: a ``run stdin`` root (under ``TRACEPARENT`` when given) exists only once a
  signal appears. It starts when otelbridge started reading (or, for a later run, at the
  previous run's terminal signal) and ends at its terminal signal, when it is emitted at once;
  a signal after that starts the next ``run stdin``. A run open at end of input ends then.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import BernsteinSignal, Event, SpanEvent, SpanRecord
from .base import Context, event_bytes, interrupted_event, put_attributes, shift_times
from .budget import ITEM_BYTES, interrupting

TERMINAL_KINDS = frozenset({"COMPLETED", "FAILED"})
MISSING_TERMINAL = "MissingTerminalSignal"
#: Signals held per run at most (more are counted in ``stats.events_capped``).
MAX_SIGNALS_PER_RUN = 10_000


class _SignalRun(msgspec.Struct):
    start_ns: int
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    terminal: str | None = None
    terminal_ns: int | None = None
    reason: str | None = None
    session_id: str | None = None
    first_ns: int | None = None
    #: estimated bytes held (the state budget's weight)
    held: int = ITEM_BYTES


class BernsteinTracker:
    """Bernstein signals → span records (pipe mode) or process-span decorations (wrapper
    mode). Never raises on events."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.began_ns = ctx.clock.now()
        self.pipe_run: _SignalRun | None = None
        self.process_run: _SignalRun | None = None
        self.next_start_ns = self.began_ns
        self.runs_emitted = 0
        ctx.process_hooks.append(self.decorate)

    def handle(self, ev: Event) -> None:
        if type(ev) is not BernsteinSignal:  # (exact: isinstance of a struct class is slow)
            return
        now = self.ctx.clock.at(ev.ts_ns)
        if self.ctx.run is not None:
            if self.process_run is None:
                self.process_run = _SignalRun(self.began_ns)
            self._apply(self.process_run, ev, now)
            return
        if self.pipe_run is None:
            self.pipe_run = _SignalRun(self.next_start_ns)
        run = self.pipe_run
        self._apply(run, ev, now)
        if run.terminal is not None:
            self._emit_pipe_run(run, now)

    def rebase(self, shift: int) -> None:
        """The clock settled: times taken from its anchor move by ``shift`` ns."""
        if shift:
            self.began_ns += shift
            self.next_start_ns += shift
            for run in (self.process_run, self.pipe_run):
                if run is not None:
                    shift_times(run, shift)

    def finish(self, *, reason: str | None = None) -> None:
        """End of input: a ``run stdin`` still open ends now, without a terminal signal (with a
        ``reason``, see :meth:`Tracker.finish`: and an ``interrupted`` event saying why)."""
        if self.pipe_run is not None:
            self._emit_pipe_run(self.pipe_run, self.ctx.clock.now(), reason)

    # ------------------------------------------------------------------ state

    def _apply(self, run: _SignalRun, ev: BernsteinSignal, now: int) -> None:
        run.session_id = run.session_id or ev.session_id
        if run.first_ns is None:
            run.first_ns = now
        if len(run.events) >= MAX_SIGNALS_PER_RUN:
            self.ctx.stats.events_capped += 1
        else:
            event = SpanEvent(f"bernstein.{ev.kind.lower()}", now, self._attributes(ev))
            run.events.append(event)
            run.held += event_bytes(event)
            self.ctx.budget.charge(("bernstein", id(self)), run.held, lambda reason: self._end_early(run, reason))
        if ev.kind in TERMINAL_KINDS:
            if run.terminal is None or (ev.kind == "FAILED" and run.terminal != "FAILED"):
                # (wrapper mode: one span for all the command's runs; a FAILED among them
                # decides, as its own ``run stdin`` span would fail in pipe mode)
                run.terminal, run.terminal_ns, run.reason = ev.kind, now, ev.reason
            else:
                self.ctx.stats.duplicate_notifications += 1

    def _end_early(self, run: _SignalRun, reason: str) -> None:
        """The state budget ends ``run``: a ``run stdin`` span now (interrupted); the signals
        held for the wrapper's run span are let go (counted in ``stats.events_capped``)."""
        if run is self.pipe_run:
            with interrupting(self.ctx, reason):
                self._emit_pipe_run(run, self.ctx.clock.now(), reason)
        elif run is self.process_run:
            self.ctx.stats.events_capped += len(run.events)
            run.events = []
            run.held = ITEM_BYTES

    def _attributes(self, ev: BernsteinSignal) -> dict[str, Any]:
        attrs = put_attributes({}, (
            ("bernstein.reason", ev.reason),
            ("bernstein.hint", ev.hint),
            ("bernstein.question", ev.question),
            ("bernstein.id", ev.question_id),
            ("bernstein.path", ev.path),
        ))
        if ev.options is not None:
            attrs["bernstein.options"] = list(ev.options)
        if ev.markdown is not None and self.ctx.capture_content:
            attrs["bernstein.markdown"] = ev.markdown
        return attrs

    def _outcome(self, run: _SignalRun, rec: SpanRecord, end_ns: int) -> None:
        """Put ``run``'s events and terminal status on ``rec``."""
        rec.events.extend(run.events)
        rec.attributes["bernstein.terminal_signal"] = run.terminal or "none"
        if run.terminal is None:
            self.ctx.stats.bernstein_runs_without_terminal += 1
            rec.events.append(
                SpanEvent(MISSING_TERMINAL, end_ns, {"bernstein.reason": "no COMPLETED or FAILED signal"})
            )
        elif run.terminal == "FAILED" and rec.error is None:
            # (named: a reason reads like the wrapped command's own, "exit 2")
            rec.error = f"FAILED: {run.reason}" if run.reason else "FAILED"
            rec.error_type = "run_failed"

    # ------------------------------------------------------------------ records

    def _emit_pipe_run(self, run: _SignalRun, end_ns: int, reason: str | None = None) -> None:
        self.pipe_run = None
        self.ctx.budget.release(("bernstein", id(self)))
        self.runs_emitted += 1
        end = run.terminal_ns if run.terminal_ns is not None else end_ns
        start = run.start_ns
        if run.first_ns is not None and start > run.first_ns:
            start = run.first_ns  # the clock moved to the stream's (older) time meanwhile
        end = max(end, start)
        self.next_start_ns = end
        # (a run no session names has a random trace: signals carry no id of their own)
        key = None if run.session_id is None else f"stdin/{self.runs_emitted}"
        trace_id = self.ctx.root_trace_id(run.session_id, key)
        parent_span_id, remote = self.ctx.root_parent()
        attrs = put_attributes({}, [("gen_ai.conversation.id", run.session_id)])
        rec = SpanRecord(
            name="run stdin",
            trace_id=trace_id,
            span_id=self.ctx.ids.span_id(trace_id, "run", f"stdin/{self.runs_emitted}"),
            parent_span_id=parent_span_id,
            parent_remote=remote,
            start_ns=start,
            end_ns=end,
            attributes=attrs,
        )
        self._outcome(run, rec, end)
        if reason is not None and run.terminal is None:
            rec.events.append(interrupted_event(end, reason))
        if self.ctx.on_trace is not None:
            self.ctx.on_trace(trace_id, "run stdin")
        self.ctx.emit(rec)

    def decorate(self, rec: SpanRecord) -> None:
        """Process hook (wrapper mode): the held signals' events and terminal status onto the
        ``run {cmd}`` record ``rec``. Without any signal, ``rec`` is left as it is."""
        run, self.process_run = self.process_run, None
        self.ctx.budget.release(("bernstein", id(self)))
        if run is not None:
            self._outcome(run, rec, rec.end_ns)
