"""Stage 4a: protocol-neutral state, and *when* each span starts and ends.

Plain events in (``otelbridge.events``), plain :class:`~otelbridge.events.SpanRecord` out; no
OpenTelemetry here. The work is split by what is tracked, one module each, all sharing one
:class:`Context`:

* :mod:`.workflows` — workflow runs, their phases and agents (seed 000);

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
    _sessions: dict[str | None, SpanRef] = field(default_factory=dict)

    def session_ref(self, session_id: str | None) -> SpanRef:
        """The session span's ids for ``session_id``, allocated once and shared by every part
        (workflow roots link to it; tasks and automations are its children)."""
        ref = self._sessions.get(session_id)
        if ref is None:
            if self.parent is not None:
                trace_id = self.parent.trace_id
            else:
                trace_id = self.ids.trace_id(session_id)
            ref = SpanRef(trace_id, self.ids.span_id(trace_id, "session", session_id or ""))
            self._sessions[session_id] = ref
        return ref


class Part(Protocol):
    """One tracked concern: takes the events it knows, ends all at :meth:`finish`."""

    def handle(self, ev: Event) -> None: ...

    def finish(self) -> None: ...


class Tracker:
    """Routes events to every part; ``finish()`` is end of input (cuts grace windows short)."""

    def __init__(self, ctx: Context, parts: list[Part] | None = None) -> None:
        from .workflows import WorkflowTracker

        self.ctx = ctx
        self.parts: list[Part] = parts if parts is not None else [WorkflowTracker(ctx)]

    def handle(self, ev: Event) -> None:
        for part in self.parts:
            part.handle(ev)

    def finish(self) -> None:
        for part in self.parts:
            part.finish()

    def open_workflows(self) -> int:
        """Workflow runs not yet ended (``follow`` checkpoints only when this is 0)."""
        return sum(len(getattr(part, "runs", ())) for part in self.parts
                   if type(part).__name__ == "WorkflowTracker")
