"""otelbridge.spans: records → spans without ``Tracer.start_span``, keeping what that path gives
(sampler once per trace, span limits from the environment, OTEL_SDK_DISABLED, resource, scope,
ids, parents, links, events, status, kind, int-ns times), checked at the SDK's in-memory
exporter; and the built spans encode to exactly the OTLP bytes the SDK's own path gives
(:func:`sdk_path`, the reference)."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, Sampler, TraceIdRatioBased
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.span import TraceFlags, TraceState

from otelbridge import __version__
from otelbridge.events import CLIENT, SpanEvent, SpanLink, SpanRecord
from otelbridge.spans import PresetIdGenerator, SpanBuilder, redacted
from otelbridge.stats import Stats

T0 = 1_783_647_395_000_000_000
#: a microsecond in ns: the shortest span sent
US = 1_000
LIMIT_VARS = ("OTEL_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
              "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_EVENT_COUNT_LIMIT", "OTEL_SPAN_LINK_COUNT_LIMIT",
              "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", "OTEL_SDK_DISABLED",
              "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG")


@pytest.fixture(autouse=True)
def _no_otel_env(monkeypatch):
    for name in LIMIT_VARS:
        monkeypatch.delenv(name, raising=False)


class LiveSpanProcessor(SpanProcessor):
    """A processor with an ``on_start``: built spans never start, so it is never called."""

    def __init__(self) -> None:
        self.started = 0

    def on_start(self, span, parent_context=None) -> None:
        self.started += 1


class CountingSampler(Sampler):
    def __init__(self, inner: Sampler) -> None:
        self.inner, self.calls = inner, 0

    def should_sample(self, *args, **kwargs):
        self.calls += 1
        return self.inner.should_sample(*args, **kwargs)

    def get_description(self) -> str:
        return "counting"


def pipeline(*, sampler: Sampler | None = None, resource: Resource | None = None, **builder_args):
    """A provider with an in-memory exporter, and a builder on it."""
    ids = PresetIdGenerator()
    provider = TracerProvider(id_generator=ids, sampler=sampler, resource=resource, shutdown_on_exit=False)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    stats = Stats()
    return SpanBuilder(provider, ids, stats, **builder_args), memory, stats


def sdk_path(records, *, remote_parent_flags=None, trace_state=None):
    """The reference: each record, redacted, through the SDK's own ``Tracer.start_span`` …
    ``Span.end`` (ids preset), to an in-memory exporter."""
    ids = PresetIdGenerator()
    provider = TracerProvider(id_generator=ids, shutdown_on_exit=False)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("otelbridge", __version__)
    flags = remote_parent_flags or TraceFlags(TraceFlags.SAMPLED)
    for rec in map(redacted, records):
        context = trace.set_span_in_context(trace.INVALID_SPAN)
        if rec.parent_span_id is not None:
            context = trace.set_span_in_context(NonRecordingSpan(SpanContext(
                rec.trace_id, rec.parent_span_id, is_remote=rec.parent_remote, trace_flags=flags,
                trace_state=trace_state or TraceState())))
        start = max(0, min(int(rec.start_ns) if not isinstance(rec.start_ns, str) else 0, 2**63 - 1))
        end = rec.end_ns if not isinstance(rec.end_ns, str) else 0
        end = max(max(0, min(int(end), 2**63 - 1)), start)
        start = min(start, max(0, end - US))  # (an instant: the microsecond that ends at it)
        ids.preset(rec.trace_id, rec.span_id)
        span = tracer.start_span(
            rec.name, context=context, kind=SpanKind.CLIENT if rec.kind == CLIENT else SpanKind.INTERNAL,
            attributes=rec.attributes, start_time=start,
            links=[Link(SpanContext(l.trace_id, l.span_id, is_remote=False,
                                    trace_flags=TraceFlags(TraceFlags.SAMPLED)), l.attributes)
                   for l in rec.links])
        ids.clear()
        for ev in rec.events:
            span.add_event(ev.name, ev.attributes, timestamp=max(int(ev.time_ns), start))
        if rec.error is not None:
            if rec.error_type:
                span.set_attribute("error.type", rec.error_type)
            span.set_status(Status(StatusCode.ERROR, rec.error))
        span.end(end_time=end)
    return memory.get_finished_spans()


def family(trace_id: int = 0xABC, agents: int = 3) -> list[SpanRecord]:
    """A root, a child with events, links and an error, and ``agents`` grandchildren: children
    first, the root last (as the tracker emits them)."""
    root = SpanRecord("invoke_workflow w", trace_id, 0x10, None, T0, T0 + 900 * US, {"workflow.status": "completed"})
    root.links.append(SpanLink(0xDEF, 0x99, {"otelbridge.link": "session"}))
    phase = SpanRecord("phase Build", trace_id, 0x11, 0x10, T0 + 5 * US, T0 + 800 * US,
                       {"workflow.phase.index": 1, "workflow.phase.title": "Build"}, kind=CLIENT)
    phase.events.append(SpanEvent("interrupted", T0 + 700 * US, {"otelbridge.reason": "downstream closed"}))
    phase.events.append(SpanEvent("early", T0 - 50 * US))  # before the start: moved to the start
    phase.error, phase.error_type = "no terminal state", "incomplete"
    kids = [SpanRecord(f"invoke_agent agent {i}", trace_id, 0x100 + i, 0x11, T0 + 10 * i * US, T0 + (10 * i + 5) * US,
                       {"gen_ai.operation.name": "invoke_agent", "workflow.agent.index": i,
                        "workflow.agent.cached": i % 2 == 0, "gen_ai.agent.name": f"agent {i}",
                        "process.command_args": ["run", f"#{i}"]})
            for i in range(agents)]
    return kids + [phase, root]


def odd_times() -> list[SpanRecord]:
    """Times the SDK path sanitises: a float, a bool, negative, end before start, huge."""
    return [
        SpanRecord("float", 0x1, 0x2, None, 1000.0, 1001.7, {}),
        SpanRecord("bool", 0x1, 0x3, 0x2, True, False, {}),
        SpanRecord("negative", 0x1, 0x4, 0x2, -5, -1, {}),
        SpanRecord("backwards", 0x1, 0x5, 0x2, T0 + 10, T0, {}),
        SpanRecord("huge", 0x1, 0x6, 0x2, 10**30, "nonsense", {}),
    ]


def otlp(spans) -> bytes:
    return encode_spans(sorted(spans, key=lambda s: s.context.span_id)).SerializeToString()


# ------------------------------------------------------------------ same spans as the SDK path


@pytest.mark.parametrize("env", [
    {},
    {"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "2", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "3",
     "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "4", "OTEL_SPAN_EVENT_COUNT_LIMIT": "1",
     "OTEL_SPAN_LINK_COUNT_LIMIT": "0", "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": "0"},
])
@pytest.mark.parametrize("remote", [None, TraceFlags(TraceFlags.SAMPLED)])
def test_built_spans_encode_exactly_as_the_sdk_path(monkeypatch, env, remote):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    records = family() + odd_times()
    if remote is not None:  # roots under a remote parent (TRACEPARENT), its trace state carried
        records[-1].parent_span_id, records[-1].parent_remote = 0x77, True
        records[-6].parent_span_id, records[-6].parent_remote = 0x77, True
    state = TraceState([("vendor", "x")]) if remote is not None else None
    builder, memory, stats = pipeline(remote_parent_flags=remote, trace_state=state)
    for rec in records:
        builder.emit(rec)
    assert stats.spans_started == len(records)
    built = memory.get_finished_spans()
    sdk = sdk_path(records, remote_parent_flags=remote, trace_state=state)
    assert len(built) == len(sdk) == len(records)
    assert otlp(built) == otlp(sdk)
    # what OTLP does not carry: flags, remote-ness, drop counts of the SDK's bounded containers
    for a, b in zip(sorted(built, key=lambda s: s.context.span_id), sorted(sdk, key=lambda s: s.context.span_id)):
        assert a.context == b.context and a.context.trace_flags == b.context.trace_flags
        assert a.parent == b.parent and (a.parent is None or a.parent.is_remote == b.parent.is_remote)
        assert (a.dropped_attributes, a.dropped_events, a.dropped_links) == \
               (b.dropped_attributes, b.dropped_events, b.dropped_links)
        assert [e.dropped_attributes for e in a.events] == [e.dropped_attributes for e in b.events]
        assert a.instrumentation_scope == b.instrumentation_scope and a.resource == b.resource


# ------------------------------------------------------------------ each guarantee on its own


def test_ids_parents_kind_links_events_status_and_times():
    builder, memory, _ = pipeline()
    records = family()
    for rec in records:
        builder.emit(rec)
    spans = {s.context.span_id: s for s in memory.get_finished_spans()}
    assert set(spans) == {r.span_id for r in records}
    for rec in records:
        span = spans[rec.span_id]
        assert span.name == rec.name and span.context.trace_id == rec.trace_id
        assert span.context.trace_flags.sampled and not span.context.is_remote
        assert (span.parent.span_id if span.parent else None) == rec.parent_span_id
        assert (span.start_time, span.end_time) == (rec.start_ns, rec.end_ns)
        assert span.kind == (SpanKind.CLIENT if rec.kind == CLIENT else SpanKind.INTERNAL)
    root, phase = spans[0x10], spans[0x11]
    (link,) = root.links
    assert (link.context.trace_id, link.context.span_id) == (0xDEF, 0x99)
    assert dict(link.attributes) == {"otelbridge.link": "session"}
    assert root.status.status_code == StatusCode.UNSET
    assert [(e.name, e.timestamp) for e in phase.events] == [("interrupted", T0 + 700 * US), ("early", T0 + 5 * US)]
    assert dict(phase.events[0].attributes) == {"otelbridge.reason": "downstream closed"}
    assert phase.status.status_code == StatusCode.ERROR and phase.status.description == "no terminal state"
    assert list(phase.attributes)[-1] == "error.type" and phase.attributes["error.type"] == "incomplete"
    agent = spans[0x102]
    assert agent.attributes["process.command_args"] == ("run", "#2")
    assert agent.attributes["workflow.agent.cached"] is True and agent.attributes["workflow.agent.index"] == 2


def test_times_are_int_ns_with_end_not_before_start():
    builder, memory, _ = pipeline()
    for rec in odd_times():
        builder.emit(rec)
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert len(spans) == 5
    for span in spans.values():
        assert type(span.start_time) is int and type(span.end_time) is int
        assert 0 <= span.start_time <= span.end_time <= 2**63 - 1
    # (shorter than a microsecond: the microsecond that ends at the end, or from 0)
    assert (spans["float"].start_time, spans["float"].end_time) == (1, 1001)
    assert (spans["bool"].start_time, spans["bool"].end_time) == (0, 1)  # True is 1, end ≥ start
    assert (spans["negative"].start_time, spans["negative"].end_time) == (0, 0)
    assert (spans["backwards"].start_time, spans["backwards"].end_time) == (T0 + 10 - US, T0 + 10)
    assert (spans["huge"].start_time, spans["huge"].end_time) == (2**63 - 1 - US, 2**63 - 1)


def test_the_parents_an_instant_moved_are_bounded_and_the_latest_kept(monkeypatch):
    """Parents sent before a child that an instant moved (a sub-agent's tool call) never take
    their entry: at the bound the oldest goes, and a parent sent after its children still
    starts no later than they do."""
    from otelbridge import spans

    monkeypatch.setattr(spans, "_MAX_EARLIER", 8)
    builder, memory, _ = pipeline()
    for n in range(20):  # instants whose parents were sent before them
        builder.emit(SpanRecord(f"instant {n}", 0x9, 0x100 + n, 0x900 + n, T0, T0, {}))
    builder.emit(SpanRecord("instant", 0x9, 0x2, 0x1, T0 + US, T0 + US, {}))
    builder.emit(SpanRecord("parent", 0x9, 0x1, None, T0 + US, T0 + 5 * US, {}))
    times = {s.name: (s.start_time - T0, s.end_time - T0) for s in memory.get_finished_spans()}
    assert times["instant"] == (0, US) and times["parent"] == (0, 5 * US)
    assert all(times[f"instant {n}"] == (-US, 0) for n in range(20))


def test_an_instant_goes_out_as_the_microsecond_that_ends_at_it_inside_its_parents():
    """A span the stream shows as an instant (start = end) is sent 1 µs long, ending at its
    instant: Jaeger, which keeps µs, takes no length for a broken span. A parent sent after it
    starts no later (one at its parent's start), up to the root; a longer span is unchanged."""
    ms = 1_000_000
    builder, memory, _ = pipeline()
    records = [
        SpanRecord("execute_tool at the call's start", 0x9, 0x3, 0x2, T0, T0, {}),
        SpanRecord("execute_tool inside", 0x9, 0x4, 0x2, T0 + 2 * ms, T0 + 2 * ms, {}),
        SpanRecord("chat", 0x9, 0x2, 0x1, T0, T0 + 5 * ms, {}),
        SpanRecord("chat at the turn's end", 0x9, 0x5, 0x1, T0 + 9 * ms, T0 + 9 * ms, {}),
        SpanRecord("turn 1", 0x9, 0x1, None, T0, T0 + 9 * ms, {}),
        SpanRecord("turn 2", 0x9, 0x6, None, T0 + 10 * ms, T0 + 10 * ms + 999, {}),
    ]
    for rec in records:
        builder.emit(rec)
    times = {s.name: (s.start_time - T0, s.end_time - T0) for s in memory.get_finished_spans()}
    assert times == {
        "execute_tool at the call's start": (-US, 0),
        "execute_tool inside": (2 * ms - US, 2 * ms),
        "chat": (-US, 5 * ms),
        "chat at the turn's end": (9 * ms - US, 9 * ms),
        "turn 1": (-US, 9 * ms),
        "turn 2": (10 * ms + 999 - US, 10 * ms + 999),
    }


def test_span_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "3")
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "5")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "2")
    monkeypatch.setenv("OTEL_SPAN_EVENT_COUNT_LIMIT", "2")
    monkeypatch.setenv("OTEL_SPAN_LINK_COUNT_LIMIT", "1")
    monkeypatch.setenv("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "1")
    monkeypatch.setenv("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", "1")
    attrs = {f"k{i}": f"value-{i}" for i in range(6)}
    rec = SpanRecord("limited", 0x5, 0x6, None, T0, T0 + 1, dict(attrs))
    for i in range(4):
        rec.events.append(SpanEvent(f"e{i}", T0 + i, {"a": "xyz", "b": "w"}))
    rec.links += [SpanLink(0x7, 0x8 + i, {"why": "because", "n": i}) for i in range(3)]
    builder, memory, _ = pipeline()
    builder.emit(rec)
    (span,) = memory.get_finished_spans()
    kept = list(attrs)[-3:]  # the oldest are dropped first
    assert dict(span.attributes) == {k: attrs[k][:5] for k in kept} and span.dropped_attributes == 3
    assert [e.name for e in span.events] == ["e2", "e3"] and span.dropped_events == 2
    assert all(dict(e.attributes) == {"b": "w"} and e.dropped_attributes == 1 for e in span.events)
    (link,) = span.links
    assert link.context.span_id == 0x8 + 2 and span.dropped_links == 2
    assert dict(link.attributes) == {"n": 2} and link.dropped_attributes == 1


def test_sdk_disabled_builds_nothing(monkeypatch):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    builder, memory, stats = pipeline()
    for rec in family():
        builder.emit(rec)
    assert memory.get_finished_spans() == ()
    assert stats.spans_started == len(family())  # counted as built, as the SDK path counted them
    assert stats.spans_not_exported == len(family()) and stats.spans_exported == stats.spans_dropped == 0
    assert stats.not_exported_reason == "OTEL_SDK_DISABLED"


def test_resource_and_instrumentation_scope():
    resource = Resource({"service.name": "svc", "deployment.environment.name": "ci"})
    builder, memory, _ = pipeline(resource=resource)
    builder.emit(family()[-1])
    (span,) = memory.get_finished_spans()
    assert span.resource is resource
    assert (span.instrumentation_scope.name, span.instrumentation_scope.version) == ("otelbridge", __version__)


def test_sampler_is_asked_once_per_trace_and_kind_of_parent():
    sampler = CountingSampler(ParentBased(ALWAYS_ON))
    builder, memory, _ = pipeline(sampler=sampler)
    for rec in family(0xA, agents=50):
        builder.emit(rec)
    one_trace = sampler.calls
    assert one_trace <= 3  # the trace's flags, its root, its local children: never per span
    for rec in family(0xB, agents=50):
        builder.emit(rec)
    assert sampler.calls == 2 * one_trace
    assert len(memory.get_finished_spans()) == 2 * (50 + 2)


def test_ratio_sampler_keeps_or_drops_whole_traces():
    ratio = TraceIdRatioBased(0.5)
    builder, memory, stats = pipeline(sampler=ParentBased(ratio))
    kept_trace = (1 << 100) | 1                     # low 64 bits under the ratio's bound
    dropped_trace = (1 << 100) | (ratio.bound + 1)  # over it
    for trace_id in (kept_trace, dropped_trace):
        for rec in family(trace_id, agents=4):
            builder.emit(rec)
    spans = memory.get_finished_spans()
    assert len(spans) == 4 + 2 and {s.context.trace_id for s in spans} == {kept_trace}
    # counted: every record built, the dropped trace's as sampled out
    assert (stats.spans_started, stats.spans_sampled_out) == (2 * (4 + 2), 4 + 2)


@pytest.mark.parametrize("flags, exported", [(TraceFlags(TraceFlags.SAMPLED), True),
                                             (TraceFlags(TraceFlags.DEFAULT), False)])
def test_remote_parent_decides_and_its_trace_state_is_carried(flags, exported):
    state = TraceState([("vendor", "abc")])
    builder, memory, stats = pipeline(remote_parent_flags=flags, trace_state=state)
    records = family(0xFEED, agents=2)
    records[-1].parent_span_id, records[-1].parent_remote = 0x77, True
    for rec in records:
        builder.emit(rec)
    spans = memory.get_finished_spans()
    assert stats.spans_sampled_out == (0 if exported else len(records))
    if not exported:
        assert spans == ()
        return
    assert len(spans) == len(records)
    (root,) = [s for s in spans if s.context.span_id == 0x10]
    assert root.parent.span_id == 0x77 and root.parent.is_remote
    assert all(s.context.trace_state == state for s in spans)


def test_a_processor_added_later_gets_the_built_spans_and_is_never_started():
    builder, memory, _ = pipeline()
    builder.emit(family()[0])
    live = LiveSpanProcessor()
    ended = []
    live.on_end = ended.append
    builder.provider.add_span_processor(live)
    builder.emit(family()[1])
    assert live.started == 0 and [s.name for s in ended] == ["invoke_agent agent 1"]
    assert len(memory.get_finished_spans()) == 2


def test_a_span_the_sampler_drops_reaches_no_processor():
    ended = []

    class Ends(SpanProcessor):  # sees every ended span, sampled or not
        def on_end(self, span) -> None:
            ended.append(span.name)

    ratio = TraceIdRatioBased(0.5)
    builder, memory, _ = pipeline(sampler=ParentBased(ratio))
    builder.provider.add_span_processor(Ends())
    for rec in family((1 << 64) - 1, agents=3) + family(7, agents=3):  # dropped, then kept
        builder.emit(rec)
    assert len(ended) == len(memory.get_finished_spans()) == 3 + 2


@pytest.mark.parametrize("attrs, plain", [
    ({}, True),
    ({"a": "x", "n": 1, "f": 2.5}, True),
    ({"b": True, "c": "x" * 10}, True),
    ({"a": "x" * 11}, False),  # longer than the limit
    ({"n": 10**20, "s": "x"}, True),  # a number is never cut, however many digits
    ({"a": type("S", (str,), {})("x")}, False),  # not exactly str: BoundedAttributes decides
    ({"a": [1, 2]}, False),  # a sequence: BoundedAttributes makes it a tuple
    ({"": "x"}, False),
    ({5: "x"}, False),
    ({"a": None}, False),
    ({f"k{i}": i for i in range(4)}, False),  # more than the limit's count
])
def test_plain_attributes_are_exactly_those_bounded_attributes_keep_unchanged(attrs, plain):
    from opentelemetry.attributes import BoundedAttributes

    from otelbridge.spans import _plain

    assert _plain(attrs, 3, 10) is plain
    if plain:
        bounded = BoundedAttributes(3, attrs, immutable=True, max_value_len=10)
        assert dict(bounded) == attrs and bounded.dropped == 0
