"""Stage 4b: span records → OpenTelemetry spans, through the SDK (limits, sampler and
``OTEL_SDK_DISABLED`` all apply). The last gate of what may leave: every name, string attribute,
event, link attribute and status description passes the installed
:class:`otelbridge.redact.Redactor` here, whatever the tracker part already did.

The tracker decides every id up front (so an agent can be exported before its phase and root
exist); :class:`PresetIdGenerator` hands the SDK exactly those ids when :class:`SpanBuilder`
starts the span. A child's parent is a non-recording ``SpanContext`` carrying the parent's ids
and the trace's sampling decision, which is made once per trace with the provider's sampler.
"""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.span import TraceFlags, TraceState

from . import __version__, redact
from .events import CLIENT, SpanRecord
from .stats import Stats

_KINDS = {"INTERNAL": SpanKind.INTERNAL, "CLIENT": SpanKind.CLIENT}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSAMPLED = TraceFlags(TraceFlags.DEFAULT)


class PresetIdGenerator(IdGenerator):
    """Returns the ids set by :meth:`preset` for the next span, else random ones."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._random = RandomIdGenerator()

    def preset(self, trace_id: int, span_id: int) -> None:
        self._local.ids = (trace_id, span_id)

    def clear(self) -> None:
        self._local.ids = None

    def generate_span_id(self) -> int:
        ids = getattr(self._local, "ids", None)
        return ids[1] if ids else self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        ids = getattr(self._local, "ids", None)
        return ids[0] if ids else self._random.generate_trace_id()


def _clamp_ns(value: Any) -> int:
    """Timestamps handed to the SDK are ints ≥ 0 (a float fails later, in the export thread,
    and loses the whole batch)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(value)
        except (TypeError, ValueError, OverflowError):
            return 0
    return max(0, min(value, 2**63 - 1))


class SpanBuilder:
    """Turns :class:`SpanRecord` values into ended SDK spans on ``provider``.

    ``trace_state`` is the ``TRACESTATE`` to carry on spans under a remote parent.
    """

    def __init__(
        self,
        provider: TracerProvider,
        ids: PresetIdGenerator,
        stats: Stats,
        trace_state: TraceState | None = None,
        remote_parent_flags: TraceFlags | None = None,
    ) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("otelbridge", __version__)
        self.ids = ids
        self.stats = stats
        self.trace_state = trace_state or TraceState()
        self.remote_parent_flags = remote_parent_flags
        self._flags: dict[int, TraceFlags] = {}

    def _trace_flags(self, rec: SpanRecord) -> TraceFlags:
        """The sampling decision for ``rec``'s trace, made once."""
        flags = self._flags.get(rec.trace_id)
        if flags is None:
            if self.remote_parent_flags is not None:
                flags = self.remote_parent_flags
            else:
                sampler = getattr(self.provider, "sampler", None)
                flags = _SAMPLED
                if sampler is not None:
                    result = sampler.should_sample(None, rec.trace_id, rec.name)
                    flags = _SAMPLED if result.decision.is_sampled() else _UNSAMPLED
            self._flags[rec.trace_id] = flags
        return flags

    def emit(self, rec: SpanRecord) -> None:
        """Start and end one span exactly as ``rec`` says. Never raises."""
        try:
            self._emit(rec)
        except Exception as exc:  # the SDK must never take the tee down
            import logging

            logging.getLogger("otelbridge").warning("span %r not built: %s", rec.name, exc)

    def _emit(self, rec: SpanRecord) -> None:
        if rec.parent_span_id is not None:
            parent = SpanContext(
                trace_id=rec.trace_id,
                span_id=rec.parent_span_id,
                is_remote=rec.parent_remote,
                trace_flags=self._trace_flags(rec),
                trace_state=self.trace_state,
            )
            context = trace.set_span_in_context(NonRecordingSpan(parent))
        else:
            context = trace.set_span_in_context(trace.INVALID_SPAN)
        safe = redact.current()  # the last gate: everything that leaves is cleaned once more
        links = [
            Link(SpanContext(l.trace_id, l.span_id, is_remote=False, trace_flags=_SAMPLED),
                 safe.attributes(l.attributes))
            for l in rec.links
        ]
        start = _clamp_ns(rec.start_ns)
        end = max(_clamp_ns(rec.end_ns), start)
        self.ids.preset(rec.trace_id, rec.span_id)
        try:
            span = self.tracer.start_span(
                safe.name(rec.name),
                context=context,
                kind=_KINDS.get(rec.kind, SpanKind.CLIENT if rec.kind == CLIENT else SpanKind.INTERNAL),
                attributes=safe.attributes(rec.attributes),
                links=links,
                start_time=start,
            )
        finally:
            self.ids.clear()
        for ev in rec.events:
            span.add_event(safe.name(ev.name), safe.attributes(ev.attributes),
                           timestamp=max(_clamp_ns(ev.time_ns), start))
        if rec.error is not None:
            if rec.error_type:
                span.set_attribute("error.type", safe.clean(rec.error_type))
            span.set_status(Status(StatusCode.ERROR, safe.clean(rec.error)))
        span.end(end_time=end)
        self.stats.spans_started += 1
        if rec.parent_span_id is None or rec.parent_remote:
            self._flags.pop(rec.trace_id, None)
