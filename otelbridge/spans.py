"""Stage 4b: span records → OpenTelemetry spans, handed to the provider's span processors.

The one redaction boundary: the tracker and decoders carry raw text, and :func:`redacted` turns
a record into the record that may leave — every name, attribute key and string value, event,
link attribute, status description and ``error.type`` sanitised and redacted on its whole
length by the installed :class:`otelbridge.redact.Redactor`, then capped (attributes at its
``max_length``, names at 64); a string too long to scan is left out. Names that show part of a
value (``invoke_workflow <basename>``, ``run <basename of CMD>``) are built here from the
redacted value (:data:`NAMED_BY`), never cut from the raw one. The span builder exports
:func:`redacted` records only; reports (waterfall, step summary, job outputs) read the same.

The tracker decides every id up front (so an agent can be exported before its phase and root
exist), and a record is a finished span: :class:`SpanBuilder` builds the SDK's
``ReadableSpan`` from it directly, with the SDK's own parts for everything the SDK path
(``Tracer.start_span`` … ``Span.end``) applied, and hands it to the provider's span processors
(``on_end``): ~11 µs a span instead of ~21 µs (measured on 50-agent workflows; the SDK's
``BoundedAttributes`` is ~7 µs of it). What that path gave, each kept:

* ``OTEL_SDK_DISABLED=true``: no span at all (the provider hands out a no-op tracer);
* the sampler (the provider's, ``OTEL_TRACES_SAMPLER``): asked once per trace and kind of
  parent (none, local, remote) — every built-in sampler decides by nothing else — with the
  parent as ``start_span`` would give it; a span it does not record is not built, one it does
  not sample carries no SAMPLED flag (processors drop it). Attributes a sampler would add
  are not (the built-in samplers add none);
* span limits (``OTEL_SPAN_*``/``OTEL_ATTRIBUTE_*``, the provider's ``SpanLimits``): attributes
  of spans, events and links through the SDK's ``BoundedAttributes``, events and links through
  its ``BoundedList``, exactly as ``Span`` applies them;
* resource and instrumentation scope (``otelbridge`` and its version) of the provider's tracer;
* ids, parent (remote or not), kind, links, events, status, ``error.type``; times are int ns
  ≥ 0 with end ≥ start and events not before the start.

Where a processor of the provider wants the live span (it has an ``on_start`` or
``_on_ending`` of its own, not the SDK's no-op ones), or the SDK's own metrics
(``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``) are on, the span goes through ``Tracer.start_span``
as before (:meth:`SpanBuilder._emit_sdk`; :class:`PresetIdGenerator` hands it the preset ids).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.span import TraceFlags, TraceState

import posixpath
from collections.abc import Callable

from . import __version__, redact
from .events import CLIENT, SpanEvent, SpanLink, SpanRecord
from .stats import Stats
from .tracker.workflows import workflow_display_name

try:  # the SDK's rule for which links a span keeps (older SDKs keep every link)
    from opentelemetry.sdk.trace import _is_valid_link
except ImportError:  # pragma: no cover
    def _is_valid_link(context: SpanContext, attributes: Any) -> bool:
        return True

log = logging.getLogger("otelbridge")

_KINDS = {"INTERNAL": SpanKind.INTERNAL, "CLIENT": SpanKind.CLIENT}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSAMPLED = TraceFlags(TraceFlags.DEFAULT)
_RANDOM = getattr(TraceFlags, "RANDOM_TRACE_ID", 0)
_UNSET = Status(StatusCode.UNSET)
_MAX_NS = 2**63 - 1
#: kinds of parent the sampler is asked about once per trace
_ROOT, _LOCAL, _REMOTE = 0, 1, 2


def _basename(path: str) -> str:
    return posixpath.basename(path.replace("\\", "/").rstrip("/")) or path


#: Span names that show part of an attribute's value: the operation (the name's first word) →
#: (the attribute holding the whole raw value, what of the *redacted* value the name shows).
#: A PEM block or token inside ``path:…/x.js`` can hold ``/``: a basename of the raw value
#: would keep a piece the patterns no longer recognise.
NAMED_BY: dict[str, tuple[str, Callable[[str], str]]] = {
    "invoke_workflow": ("workflow.name", workflow_display_name),  # cbc's path:… form
    "run": ("process.command", _basename),
}


def _name(rec: SpanRecord, safe: redact.Redactor) -> str:
    """``rec``'s span name as it may leave (see :data:`NAMED_BY`)."""
    op, _, subject = rec.name.partition(" ")
    rule = NAMED_BY.get(op)
    if rule is not None:
        value = rec.attributes.get(rule[0]) if rec.attributes else None
        if isinstance(value, str) and value:
            scanned = safe.scan(value)
            if scanned is None:  # too long to scan: the name shows none of it
                return safe.span_name(op, redact.DROPPED, op)
            shown = rule[1](scanned).strip()
            if shown:
                return safe.span_name(op, shown, op)
    return safe.name(rec.name)


def redacted(rec: SpanRecord, safe: redact.Redactor | None = None) -> SpanRecord:
    """``rec`` as it may leave, by ``safe`` (default: the installed redactor): name (see
    :data:`NAMED_BY`), attributes, events, links, ``error`` and ``error_type`` sanitised,
    redacted on their whole length, then capped; strings too long to scan left out (an
    ``error`` becomes :data:`otelbridge.redact.DROPPED`). Ids, times and numbers as they are.
    Idempotent; ``rec`` is not changed."""
    safe = safe or redact.current()
    return SpanRecord(
        name=_name(rec, safe),
        trace_id=rec.trace_id,
        span_id=rec.span_id,
        parent_span_id=rec.parent_span_id,
        start_ns=rec.start_ns,
        end_ns=rec.end_ns,
        attributes=safe.attributes(rec.attributes),
        kind=rec.kind,
        parent_remote=rec.parent_remote,
        error=None if rec.error is None else safe.clean(rec.error),
        error_type=safe.clean(rec.error_type, redact.SPAN_NAME_MAX) if rec.error_type else rec.error_type,
        events=[SpanEvent(safe.name(ev.name), ev.time_ns, safe.attributes(ev.attributes))
                for ev in rec.events],
        links=[SpanLink(l.trace_id, l.span_id, safe.attributes(l.attributes)) for l in rec.links],
    )


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
    return max(0, min(value, _MAX_NS))


#: The SDK processors whose hooks on the live span (``on_start``, ``_on_ending``) do nothing.
_NO_LIVE_HOOKS = (SpanProcessor, SimpleSpanProcessor, BatchSpanProcessor)
_NOOP_ON_START = frozenset(c.on_start for c in _NO_LIVE_HOOKS)
_NOOP_ON_ENDING = frozenset(getattr(c, "_on_ending", None) for c in _NO_LIVE_HOOKS)


def _wants_live_span(processor: SpanProcessor) -> bool:
    """Whether a processor has its own ``on_start`` or ``_on_ending`` (hooks that see the live
    span): a built ``ReadableSpan`` cannot be handed to those. The SDK's no-op ones (base,
    simple, batch processor) do not count."""
    cls = type(processor)
    return (getattr(cls, "on_start", None) not in _NOOP_ON_START
            or getattr(cls, "_on_ending", None) not in _NOOP_ON_ENDING)


class SpanBuilder:
    """Turns :class:`SpanRecord` values into ended spans on ``provider``'s span processors.

    ``trace_state`` is the ``TRACESTATE`` to carry on spans under a remote parent;
    ``remote_parent_flags`` its ``TRACEPARENT`` flags (the sampling decision of the remote
    trace, which the spans' parent contexts carry).
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
        #: trace id → the flags its spans' parent contexts carry (the trace's decision)
        self._flags: dict[int, TraceFlags] = {}
        #: (trace id, kind of parent) → (recording, flags, trace state) from the sampler
        self._decisions: dict[tuple[int, int], tuple[bool, TraceFlags, TraceState | None]] = {}
        tracer = self.tracer
        #: OTEL_SDK_DISABLED (a no-op tracer) or another SDK's tracer: no spans built here
        self._sdk = isinstance(tracer, SdkTracer)
        self._limits: SpanLimits = getattr(tracer, "_span_limits", None) or SpanLimits()
        self._scope = getattr(tracer, "_instrumentation_scope", None)
        #: the tracer's configurator switch (start_span builds nothing while it says no)
        self._enabled = getattr(tracer, "_is_enabled", None)
        metrics = getattr(tracer, "_tracer_metrics", None)
        self._sdk_metrics = metrics is not None and type(metrics).__name__ != "NoOpTracerMetrics"
        self._last_parent: tuple[Any, SpanContext | None] = (None, None)
        self._seen_processors: Any = None
        self._live = True

    # ------------------------------------------------------------------ sampling

    def _trace_flags(self, rec: SpanRecord) -> TraceFlags:
        """The sampling decision for ``rec``'s trace, made once: the flags its spans' parent
        contexts carry (``TRACEPARENT``'s flags under a remote parent)."""
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

    def _decide(self, rec: SpanRecord, parent: SpanContext | None, name: str,
                kind: SpanKind) -> tuple[bool, TraceFlags, TraceState | None]:
        """What ``Tracer.start_span`` would decide for a span of ``rec``'s trace under
        ``parent``: recorded or not, its trace flags and trace state — asked of the provider's
        sampler once per trace and kind of parent."""
        which = _ROOT if parent is None else _REMOTE if parent.is_remote else _LOCAL
        key = (rec.trace_id, which)
        decided = self._decisions.get(key)
        if decided is None:
            context = trace.set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
            result = self.tracer.sampler.should_sample(context, rec.trace_id, name, kind)
            flags = TraceFlags.SAMPLED if result.decision.is_sampled() else TraceFlags.DEFAULT
            if parent is None:
                random = self.tracer.id_generator.is_trace_id_random() if _RANDOM else False
            else:
                random = bool(parent.trace_flags & _RANDOM)
            if random:
                flags |= _RANDOM
            decided = (result.decision.is_recording(), TraceFlags(flags), result.trace_state)
            self._decisions[key] = decided
        return decided

    def _forget(self, trace_id: int) -> None:
        self._flags.pop(trace_id, None)
        for which in (_ROOT, _LOCAL, _REMOTE):
            self._decisions.pop((trace_id, which), None)

    # ------------------------------------------------------------------ spans

    def emit(self, rec: SpanRecord) -> None:
        """Build and end one span as ``rec`` (raw, from the tracker) says, redacted
        (:func:`redacted`). Never raises."""
        try:
            rec = redacted(rec)
        except Exception as exc:  # pragma: no cover - a redactor bug costs one span, never the tee
            log.warning("span not redacted, not built: %s", type(exc).__name__)
            return
        self.emit_redacted(rec)

    def emit_redacted(self, rec: SpanRecord) -> None:
        """Build and end one span from ``rec`` as :func:`redacted` returned it (a sink that
        also hands the record to the reports redacts once and calls this). Never raises."""
        try:
            if self._wants_sdk_path():
                self._emit_sdk(rec)
            elif self._enabled is None or self._enabled():
                self._emit_built(rec)
            self.stats.spans_started += 1
        except Exception as exc:  # the SDK must never take the tee down
            log.warning("span not built: %s", type(exc).__name__)  # its text may quote raw values
        if rec.parent_span_id is None or rec.parent_remote:
            self._forget(rec.trace_id)

    def _wants_sdk_path(self) -> bool:
        """True when a span must go through ``Tracer.start_span``: a processor wants the live
        span, the SDK records its own metrics, or the tracer is not the SDK's."""
        if not self._sdk or self._sdk_metrics:
            return True
        processors = getattr(self.tracer.span_processor, "_span_processors", None)
        if processors is not self._seen_processors:  # a processor was added (a new tuple)
            self._seen_processors = processors
            self._live = processors is None or any(_wants_live_span(p) for p in processors)
        return self._live

    def _parent(self, rec: SpanRecord) -> SpanContext | None:
        """The parent's context (``None`` for a root); the last one is reused, as siblings
        come one after another."""
        if rec.parent_span_id is None:
            return None
        flags = self._trace_flags(rec)
        key = (rec.trace_id, rec.parent_span_id, rec.parent_remote, flags)
        if self._last_parent[0] == key:
            return self._last_parent[1]
        parent: SpanContext | None = SpanContext(
            trace_id=rec.trace_id,
            span_id=rec.parent_span_id,
            is_remote=rec.parent_remote,
            trace_flags=flags,
            trace_state=self.trace_state,
        )
        if not parent.is_valid:
            parent = None
        self._last_parent = (key, parent)
        return parent

    def _emit_built(self, rec: SpanRecord) -> None:
        """``rec`` (redacted) as a ``ReadableSpan`` built with the SDK's limits, to the
        processors."""
        name = rec.name
        kind = _KINDS.get(rec.kind, SpanKind.CLIENT if rec.kind == CLIENT else SpanKind.INTERNAL)
        parent = self._parent(rec)
        recording, flags, trace_state = self._decide(rec, parent, name, kind)
        if not (recording and flags.sampled):
            self.stats.spans_sampled_out += 1
            if not recording:
                return
        limits = self._limits
        value_len = limits.max_attribute_length
        start, end = rec.start_ns, rec.end_ns
        if not (type(start) is int and type(end) is int and 0 <= start <= end <= _MAX_NS):
            start = _clamp_ns(start)
            end = max(_clamp_ns(end), start)
        attributes = rec.attributes
        status = _UNSET
        if rec.error is not None:
            if rec.error_type:  # set last, as Span.set_attribute would
                attributes.pop("error.type", None)
                attributes["error.type"] = rec.error_type
            status = Status(StatusCode.ERROR, rec.error)
        events: Any = ()  # what an empty BoundedList reads as, without building one
        if rec.events:
            events = BoundedList(limits.max_events)
        for ev in rec.events:
            events.append(Event(
                ev.name,
                BoundedAttributes(limits.max_event_attributes, ev.attributes,
                                  immutable=True, max_value_len=value_len),
                max(_clamp_ns(ev.time_ns), start),
            ))
        links = []
        for l in rec.links:
            context = SpanContext(l.trace_id, l.span_id, is_remote=False, trace_flags=_SAMPLED)
            attrs = l.attributes
            if _is_valid_link(context, attrs):
                links.append(Link(context, BoundedAttributes(
                    limits.max_link_attributes, attrs, immutable=True, max_value_len=value_len)))
        tracer = self.tracer
        span = ReadableSpan(
            name=name,
            context=SpanContext(rec.trace_id, rec.span_id, is_remote=False, trace_flags=flags,
                                trace_state=trace_state),
            parent=parent,
            resource=tracer.resource,
            attributes=BoundedAttributes(limits.max_span_attributes, attributes, immutable=True,
                                         max_value_len=limits.max_span_attribute_length),
            events=events,
            links=BoundedList.from_seq(limits.max_links, links) if links else (),
            kind=kind,
            instrumentation_info=tracer.instrumentation_info,
            status=status,
            start_time=start,
            end_time=end,
            instrumentation_scope=self._scope,
        )
        tracer.span_processor.on_end(span)

    def _emit_sdk(self, rec: SpanRecord) -> None:
        """``rec`` (redacted) through ``Tracer.start_span`` … ``Span.end`` (the ids preset)."""
        parent = self._parent(rec)
        if parent is not None:
            context = trace.set_span_in_context(NonRecordingSpan(parent))
        else:
            context = trace.set_span_in_context(trace.INVALID_SPAN)
        links = [
            Link(SpanContext(l.trace_id, l.span_id, is_remote=False, trace_flags=_SAMPLED),
                 l.attributes)
            for l in rec.links
        ]
        start = _clamp_ns(rec.start_ns)
        end = max(_clamp_ns(rec.end_ns), start)
        self.ids.preset(rec.trace_id, rec.span_id)
        try:
            span = self.tracer.start_span(
                rec.name,
                context=context,
                kind=_KINDS.get(rec.kind, SpanKind.CLIENT if rec.kind == CLIENT else SpanKind.INTERNAL),
                attributes=rec.attributes,
                links=links,
                start_time=start,
            )
        finally:
            self.ids.clear()
        for ev in rec.events:
            span.add_event(ev.name, ev.attributes, timestamp=max(_clamp_ns(ev.time_ns), start))
        if rec.error is not None:
            if rec.error_type:
                span.set_attribute("error.type", rec.error_type)
            span.set_status(Status(StatusCode.ERROR, rec.error))
        span.end(end_time=end)
        if not span.get_span_context().trace_flags.sampled:
            self.stats.spans_sampled_out += 1
