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
exist), and a record is a finished span: :class:`SpanBuilder` builds a :class:`BuiltSpan` (a
``ReadableSpan`` with plain fields) from it directly and hands it to the tracer's span
processors (``on_end``; every processor here is the SDK's batch or simple processor, or ours,
and none looks at a live span: ``on_start`` is not called). What ``Tracer.start_span`` …
``Span.end`` would give is kept:

* ``OTEL_SDK_DISABLED=true``: no span at all (the provider hands out a no-op tracer);
* the sampler (the provider's, ``OTEL_TRACES_SAMPLER``): asked once per trace and kind of
  parent (none, local, remote) — every built-in sampler decides by nothing else — with the
  parent as ``start_span`` would give it; a span it does not record is not built, one it does
  not sample carries no SAMPLED flag (processors drop it). Attributes a sampler would add
  are not (the built-in samplers add none);
* span limits (``OTEL_SPAN_*``/``OTEL_ATTRIBUTE_*``: a ``SpanLimits()`` read from the
  environment, as the provider reads it): attributes within the limits and of plain types
  (``str``, ``bool``, ``int``, ``float``) are kept as the record's own dict (what the SDK's
  ``BoundedAttributes`` would hold, at ~0.3 µs instead of ~7 µs a span); any others, and
  those of events and links, go through ``BoundedAttributes``, events and links through
  ``BoundedList``, exactly as ``Span`` applies them;
* resource (the provider's) and instrumentation scope (``otelbridge`` and its version);
* ids, parent (remote or not), kind, links, events, status, ``error.type``; times are int ns
  ≥ 0 with end ≥ start and events not before the start.

Not kept: the SDK's own metrics of started spans (``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.span import TraceFlags, TraceState

import posixpath
from collections.abc import Callable
from operator import length_hint

from . import __version__, redact
from .events import CLIENT, SpanEvent, SpanLink, SpanRecord
from .stats import SDK_DISABLED, Stats
from .tracker.workflows import workflow_display_name

try:  # the SDK's rule for which links a span keeps (older SDKs keep every link)
    from opentelemetry.sdk.trace import _is_valid_link
except ImportError:  # pragma: no cover
    def _is_valid_link(context: SpanContext, attributes: Any) -> bool:
        return True

log = logging.getLogger("otelbridge")

_KINDS = {"INTERNAL": SpanKind.INTERNAL, CLIENT: SpanKind.CLIENT}
_INTERNAL = SpanKind.INTERNAL
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSAMPLED = TraceFlags(TraceFlags.DEFAULT)
_RANDOM = getattr(TraceFlags, "RANDOM_TRACE_ID", 0)
_UNSET = Status(StatusCode.UNSET)
_MAX_NS = 2**63 - 1
#: The shortest span sent, in ns: 1 µs, what Jaeger keeps of a time. Jaeger takes a span of no
#: length as broken (a warning on it, copies sent again not merged): an instant of the stream
#: goes out as the microsecond that ends at it.
MIN_SPAN_NS = 1_000
#: Parents that a child moved back by that microsecond may await, at most: the oldest entry
#: goes first (a parent sent before its child, a sub-agent's tool call, never pops its own)
_MAX_EARLIER = 1_024
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


#: The operations span names start with (the name's first word, ours): the rest of the name,
#: its subject, is scanned on its own, as the attribute it repeats is (with the default
#: patterns, one scan of a label, not two: they find the same in both forms).
OPERATIONS = frozenset({"automation", "chat", "execute_tool", "invoke_agent", "invoke_workflow",
                        "phase", "run", "task", "turn"})


def _name(rec: SpanRecord, safe: redact.Redactor) -> str:
    """``rec``'s span name as it may leave: an operation's subject redacted as its attribute is
    (see :data:`NAMED_BY`, :data:`OPERATIONS`); with a ``--redact`` regex, which may read the
    operation, the whole name is scanned as well."""
    op, _, subject = rec.name.partition(" ")
    if not subject or op not in OPERATIONS:
        return safe.name(rec.name)
    name = _named_by(rec, op, safe) or safe.operation_name(op, subject)
    return name if safe.only_defaults else safe.name(name)


def _named_by(rec: SpanRecord, op: str, safe: redact.Redactor) -> str | None:
    """The name :data:`NAMED_BY` makes of ``rec``'s attribute (``None``: no rule, no value)."""
    rule = NAMED_BY.get(op)
    value = rec.attributes.get(rule[0]) if rule is not None and rec.attributes else None
    if not isinstance(value, str) or not value:
        return None
    scanned = safe.scan(value)
    if scanned is None:  # too long to scan: the name shows none of it
        return safe.span_name(op, redact.DROPPED, op)
    shown = rule[1](scanned).strip()
    return safe.span_name(op, shown, op) if shown else None


def redacted(rec: SpanRecord, safe: redact.Redactor | None = None) -> SpanRecord:
    """``rec`` as it may leave, by ``safe`` (default: the installed redactor): name (see
    :data:`NAMED_BY`), attributes, events, links, ``error`` and ``error_type`` sanitised,
    redacted on their whole length, then capped; strings too long to scan left out (an
    ``error`` becomes :data:`otelbridge.redact.DROPPED`). Ids, times and numbers as they are.
    Idempotent; ``rec`` is not changed."""
    safe = safe or redact.current()
    found = safe.found
    learnt = found.learnt
    out = _redacted(rec, safe)
    # a value found in one of its strings is hidden in all of them, those read before it too
    return out if found.learnt == learnt else _redacted(rec, safe)


def _redacted(rec: SpanRecord, safe: redact.Redactor) -> SpanRecord:
    attributes = safe.attributes
    error, error_type = rec.error, rec.error_type
    return SpanRecord(
        _name(rec, safe), rec.trace_id, rec.span_id, rec.parent_span_id, rec.start_ns,
        rec.end_ns, attributes(rec.attributes), rec.kind, rec.parent_remote,
        None if error is None else safe.clean(error),
        safe.clean(error_type, redact.SPAN_NAME_MAX) if error_type else error_type,
        [SpanEvent(safe.name(ev.name), ev.time_ns, attributes(ev.attributes))
         for ev in rec.events] if rec.events else [],
        [SpanLink(l.trace_id, l.span_id, attributes(l.attributes)) for l in rec.links]
        if rec.links else [],
    )


class PresetIdGenerator(IdGenerator):
    """The provider's id generator: the ids set by :meth:`preset` for the next span started
    through ``Tracer.start_span`` (the spans built here carry their records' ids), else random
    ones."""

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


_SCOPE = InstrumentationScope("otelbridge", __version__)


class BuiltSpan(ReadableSpan):
    """A finished span as the exporters read it: ``ReadableSpan``'s interface as plain fields
    (no property, copy or ``MappingProxyType`` per read: the OTLP encoder reads each once).
    ``attributes`` is a dict or the SDK's ``BoundedAttributes``; ``events`` and ``links``
    tuples; ``dropped_*`` what the limits dropped."""

    __slots__ = ("name", "context", "parent", "resource", "attributes", "events", "links",
                 "kind", "status", "start_time", "end_time", "instrumentation_scope",
                 "dropped_attributes", "dropped_events", "dropped_links")

    def __init__(self, name: str, context: SpanContext, parent: SpanContext | None,
                 resource: Any, attributes: Any, events: tuple, links: tuple, kind: SpanKind,
                 status: Status, start_time: int, end_time: int, scope: InstrumentationScope,
                 dropped: tuple[int, int, int] = (0, 0, 0)) -> None:
        self.name = name
        self.context = context
        self.parent = parent
        self.resource = resource
        self.attributes = attributes
        self.events = events
        self.links = links
        self.kind = kind
        self.status = status
        self.start_time = start_time
        self.end_time = end_time
        self.instrumentation_scope = scope
        self.dropped_attributes, self.dropped_events, self.dropped_links = dropped

    def get_span_context(self) -> SpanContext:
        return self.context

    @property
    def instrumentation_info(self) -> None:  # deprecated in the SDK; never set here
        return None

    def to_json(self, indent: int | None = 4) -> str:
        """As the SDK's ``ReadableSpan.to_json`` (the console exporter)."""
        return ReadableSpan(self.name, self.context, self.parent, self.resource, self.attributes,
                            self.events, self.links, self.kind, None, self.status,
                            self.start_time, self.end_time, self.instrumentation_scope
                            ).to_json(indent)


#: the value types ``BoundedAttributes`` keeps as they are
_PLAIN_TYPES = frozenset({str, bool, int, float})
_STR_ONLY = frozenset({str})


def _plain(attrs: dict, max_count: int | None, max_len: int | None) -> bool:
    """Whether ``attrs`` is what ``BoundedAttributes`` would hold unchanged: at most
    ``max_count`` items, non-empty ``str`` keys, ``str`` values of at most ``max_len``
    characters, ``bool``/``int``/``float`` values. (C-level passes over ``map``, no Python-level
    loop per attribute: ``length_hint`` is a string's length and 0 for a number.)"""
    if max_count is not None and len(attrs) > max_count:
        return False
    if not attrs:
        return True
    values = attrs.values()
    if not _PLAIN_TYPES.issuperset(map(type, values)):
        return False
    if max_len is not None and max(map(length_hint, values)) > max_len:
        return False
    return "" not in attrs and _STR_ONLY.issuperset(map(type, attrs))


class SpanBuilder:
    """Turns :class:`SpanRecord` values into ended spans on ``provider``'s span processors.

    ``trace_state`` is the ``TRACESTATE`` to carry on spans under a remote parent;
    ``remote_parent_flags`` its ``TRACEPARENT`` flags (the sampling decision of the remote
    trace, which the spans' parent contexts carry). ``limits``: the provider's span limits
    (default: ``SpanLimits()``, read from the environment as the provider reads them).
    ``ids``: the provider's id generator (whether trace ids are random, for the trace flags).
    """

    def __init__(
        self,
        provider: TracerProvider,
        ids: IdGenerator,
        stats: Stats,
        trace_state: TraceState | None = None,
        remote_parent_flags: TraceFlags | None = None,
        limits: SpanLimits | None = None,
    ) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("otelbridge", __version__)
        self.ids = ids
        self.stats = stats
        self.trace_state = trace_state or TraceState()
        self.remote_parent_flags = remote_parent_flags
        #: trace id → the flags its spans' parent contexts carry (the trace's decision)
        self._flags: dict[int, TraceFlags] = {}
        #: (trace id, kind of parent) → (recording, flags, trace state, exported) from the sampler
        self._decisions: dict[tuple[int, int], tuple[bool, TraceFlags, TraceState | None, bool]] = {}
        #: OTEL_SDK_DISABLED (a no-op tracer) or another SDK's tracer: no spans built here
        self._sdk = isinstance(self.tracer, SdkTracer)
        if not self._sdk:
            stats.not_exported_reason = SDK_DISABLED
        self._limits = limits or SpanLimits()
        self._random = bool(_RANDOM) and ids.is_trace_id_random()
        #: the last (trace id, parent span id, remote) → (parent context, what ``_decide`` said):
        #: siblings come one after another
        self._last: tuple[Any, Any] = (None, None)
        self._on_end = self.tracer.span_processor.on_end if self._sdk else None
        #: parent span id → the earliest start of its children sent so far that begin before
        #: their own start in the record (an instant made a microsecond long): the parent,
        #: sent after them, starts no later
        self._earlier: dict[int, int] = {}
        self._resource = self.tracer.resource if self._sdk else None

    # ------------------------------------------------------------------ sampling

    def _trace_flags(self, rec: SpanRecord) -> TraceFlags:
        """The sampling decision for ``rec``'s trace, made once: the flags its spans' parent
        contexts carry (``TRACEPARENT``'s flags under a remote parent)."""
        flags = self._flags.get(rec.trace_id)
        if flags is None:
            if self.remote_parent_flags is not None:
                flags = self.remote_parent_flags
            else:
                result = self.provider.sampler.should_sample(None, rec.trace_id, rec.name)
                flags = _SAMPLED if result.decision.is_sampled() else _UNSAMPLED
            self._flags[rec.trace_id] = flags
        return flags

    def sampled(self, trace_id: int, parent: SpanContext | None) -> bool:
        """Whether a trace whose root has ``parent`` (``TRACEPARENT``'s, or ``None``) would be
        exported: the provider's sampler says so for its root (every built-in sampler decides
        by the trace id and the parent alone); ``False`` without an SDK tracer."""
        if not self._sdk:
            return False
        context = trace.set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
        return self.provider.sampler.should_sample(context, trace_id, "").decision.is_sampled()

    def _decide(self, rec: SpanRecord, parent: SpanContext | None, name: str,
                kind: SpanKind) -> tuple[bool, TraceFlags, TraceState | None, bool]:
        """What ``Tracer.start_span`` would decide for a span of ``rec``'s trace under
        ``parent``: recorded or not, its trace flags, trace state and whether it is exported
        (recorded and sampled) — asked of the provider's
        sampler once per trace and kind of parent."""
        which = _ROOT if parent is None else _REMOTE if parent.is_remote else _LOCAL
        key = (rec.trace_id, which)
        decided = self._decisions.get(key)
        if decided is None:
            context = trace.set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
            result = self.provider.sampler.should_sample(context, rec.trace_id, name, kind)
            flags = TraceFlags.SAMPLED if result.decision.is_sampled() else TraceFlags.DEFAULT
            random = self._random if parent is None else bool(parent.trace_flags & _RANDOM)
            if random:
                flags |= _RANDOM
            recording, flags = result.decision.is_recording(), TraceFlags(flags)
            decided = (recording, flags, result.trace_state, recording and flags.sampled)
            self._decisions[key] = decided
        return decided

    def _forget(self, trace_id: int) -> None:
        self._flags.pop(trace_id, None)
        self._last = (None, None)
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
            if self._sdk:
                self._build(rec)
            else:
                self.stats.spans_not_exported += 1
            self.stats.spans_started += 1
        except Exception as exc:  # the SDK must never take the tee down
            log.warning("span not built: %s", type(exc).__name__)  # its text may quote raw values
        if rec.parent_span_id is None or rec.parent_remote:
            self._forget(rec.trace_id)

    def _parent(self, rec: SpanRecord) -> SpanContext | None:
        """The parent's context (``None`` for a root)."""
        if rec.parent_span_id is None:
            return None
        parent = SpanContext(
            trace_id=rec.trace_id,
            span_id=rec.parent_span_id,
            is_remote=rec.parent_remote,
            trace_flags=self._trace_flags(rec),
            trace_state=self.trace_state,
        )
        return parent if parent.is_valid else None

    def _build(self, rec: SpanRecord) -> None:
        """``rec`` (redacted) as a :class:`BuiltSpan` within the span limits, to the
        processors."""
        name = rec.name
        kind = _KINDS.get(rec.kind, _INTERNAL)
        key = (rec.trace_id, rec.parent_span_id, rec.parent_remote)
        last_key, last = self._last
        if last_key == key:
            parent, (recording, flags, trace_state, exported) = last
        else:
            parent = self._parent(rec)
            decided = self._decide(rec, parent, name, kind)
            self._last = (key, (parent, decided))
            recording, flags, trace_state, exported = decided
        if not exported:
            self.stats.spans_sampled_out += 1
            if not recording:
                return
        limits = self._limits
        start, end = rec.start_ns, rec.end_ns
        if not (type(start) is int and type(end) is int and 0 <= start <= end <= _MAX_NS):
            start = _clamp_ns(start)
            end = max(_clamp_ns(end), start)
        earlier = self._earlier
        moved = start
        if earlier:
            moved = min(start, earlier.pop(rec.span_id, start))
        if end - moved < MIN_SPAN_NS:
            moved = max(0, end - MIN_SPAN_NS)
        if moved < start:
            start = moved
            if rec.parent_span_id is not None and not rec.parent_remote:
                if len(earlier) >= _MAX_EARLIER:
                    del earlier[next(iter(earlier))]
                above = rec.parent_span_id
                earlier[above] = min(start, earlier.get(above, start))
        attributes: Any = rec.attributes
        status = _UNSET
        if rec.error is not None:
            if rec.error_type:  # set last, as Span.set_attribute would
                attributes.pop("error.type", None)
                attributes["error.type"] = rec.error_type
            status = Status(StatusCode.ERROR, rec.error)
        dropped_attributes = 0
        if not _plain(attributes, limits.max_span_attributes, limits.max_span_attribute_length):
            attributes = BoundedAttributes(limits.max_span_attributes, attributes, immutable=True,
                                           max_value_len=limits.max_span_attribute_length)
            dropped_attributes = attributes.dropped
        events: tuple = ()
        dropped_events = 0
        if rec.events:
            bounded = BoundedList(limits.max_events)
            for ev in rec.events:
                bounded.append(Event(
                    ev.name,
                    BoundedAttributes(limits.max_event_attributes, ev.attributes, immutable=True,
                                      max_value_len=limits.max_attribute_length),
                    max(_clamp_ns(ev.time_ns), start),
                ))
            events, dropped_events = tuple(bounded), bounded.dropped
        links: tuple = ()
        dropped_links = 0
        if rec.links:
            kept = []
            for l in rec.links:
                context = SpanContext(l.trace_id, l.span_id, is_remote=False, trace_flags=_SAMPLED)
                if _is_valid_link(context, l.attributes):
                    kept.append(Link(context, BoundedAttributes(
                        limits.max_link_attributes, l.attributes, immutable=True,
                        max_value_len=limits.max_attribute_length)))
            if kept:
                bounded = BoundedList.from_seq(limits.max_links, kept)
                links, dropped_links = tuple(bounded), bounded.dropped
        span = BuiltSpan(
            name,
            SpanContext(rec.trace_id, rec.span_id, False, flags, trace_state),
            parent, self._resource, attributes, events, links, kind, status, start, end,
            _SCOPE, (dropped_attributes, dropped_events, dropped_links),
        )
        self._on_end(span)
