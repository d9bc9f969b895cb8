"""Stage 4a: protocol-neutral state, and *when* each span starts and ends.

Plain events in (``otelbridge.events``), plain :class:`~otelbridge.events.SpanRecord` out; no
OpenTelemetry here. The work is split by what is tracked, one module each, all sharing one
:class:`Context`:

* :mod:`.workflows` — workflow runs, their phases and agents (seed 000);
* :mod:`.sessions` — sessions, turns, model calls, tools, sub-agents, background tasks;

:class:`Tracker` routes every event to each part that wants it and ends everything at
:meth:`Tracker.finish`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..clock import Clock
from ..events import Event, SpanRecord
from ..ids import Ids
from ..stats import Stats

CallLater = Callable[[float, Callable[[], None]], Any]

#: Default grace window after ``task_notification``, in seconds (seed 000 §6 recommends 5 s).
DEFAULT_GRACE_S = 5.0
#: Span refs remembered per registry (sessions, workflow roots); the oldest are forgotten.
MAX_REFS = 10_000


@dataclass(slots=True)
class Parent:
    """A remote parent span (``TRACEPARENT``): its trace id and span id, as ints."""

    trace_id: int
    span_id: int


@dataclass(slots=True)
class SpanRef:
    """Where a span is (or will be): trace id and span id, allocated before the span ends."""

    trace_id: int
    span_id: int


@dataclass
class Context:
    """What every part of the tracker shares.

    ``emit`` receives each finished record (the span builder, the summary, tests);
    ``call_later(delay_s, fn)`` schedules real-time work such as a grace window's end (``None``
    in replay: windows then close at :meth:`Tracker.finish`); ``parent`` is the ``TRACEPARENT``
    span, if any.
    """

    emit: Callable[[SpanRecord], None]
    ids: Ids
    clock: Clock
    stats: Stats
    call_later: CallLater | None = None
    grace_s: float = DEFAULT_GRACE_S
    parent: Parent | None = None
    capture_content: bool = False
    #: called with (trace_id, label) when a new trace's root is first known (trace links)
    on_trace: Callable[[int, str], None] | None = None
    #: the wrapper's ``run {cmd}`` span (wrapper mode): parent of every session span
    run: SpanRef | None = None
    _sessions: dict[str | None, SpanRef] = field(default_factory=dict)
    _workflows: dict[tuple[str | None, str], SpanRef] = field(default_factory=dict)

    def session_ref(self, session_id: str | None) -> SpanRef:
        """The session span's ids for ``session_id``, allocated once and shared by every part
        (workflow roots link to it; tasks and automations are its children). In wrapper mode
        the session lives in the run span's trace, else in the ``TRACEPARENT`` trace, else in
        its own."""
        ref = self._sessions.get(session_id)
        if ref is None:
            if self.run is not None:
                trace_id = self.run.trace_id
            elif self.parent is not None:
                trace_id = self.parent.trace_id
            else:
                trace_id = self.ids.trace_id(session_id)
            ref = SpanRef(trace_id, self.ids.span_id(trace_id, "session", session_id or ""))
            _remember(self._sessions, session_id, ref)
        return ref

    def workflow_ref(self, session_id: str | None, task_id: str) -> SpanRef:
        """The workflow root's ids for ``(session_id, task_id)``, allocated once: its own trace,
        or the ``TRACEPARENT`` trace (the session span links to it)."""
        key = (session_id, task_id)
        ref = self._workflows.get(key)
        if ref is None:
            if self.parent is not None:
                trace_id = self.parent.trace_id
            else:
                trace_id = self.ids.trace_id(session_id, task_id)
            ref = SpanRef(trace_id, self.ids.span_id(trace_id, "workflow", task_id))
            _remember(self._workflows, key, ref)
        return ref


def _remember(registry: dict, key: Any, ref: SpanRef) -> None:
    registry[key] = ref
    if len(registry) > MAX_REFS:
        registry.pop(next(iter(registry)))


class Part(Protocol):
    """One tracked concern: takes the events it knows, ends all at :meth:`finish`."""

    def handle(self, ev: Event) -> None: ...

    def finish(self) -> None: ...


class Tracker:
    """Routes events to every part; ``finish()`` is end of input (cuts grace windows short)."""

    def __init__(self, ctx: Context, parts: list[Part] | None = None) -> None:
        from .sessions import SessionTracker
        from .workflows import WorkflowTracker

        self.ctx = ctx
        self.parts: list[Part] = (
            parts if parts is not None else [WorkflowTracker(ctx), SessionTracker(ctx)]
        )

    def handle(self, ev: Event) -> None:
        for part in self.parts:
            part.handle(ev)

    def finish(self) -> None:
        for part in self.parts:
            part.finish()
