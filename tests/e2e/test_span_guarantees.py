"""What the SDK's span path gave, at a real OTLP/gRPC receiver with otelbridge as a subprocess,
now that spans are built without ``Tracer.start_span`` (otelbridge/spans.py): the sampler
from ``OTEL_TRACES_SAMPLER`` keeps or drops whole traces, span limits from ``OTEL_SPAN_*``
apply, the instrumentation scope and resource are the SDK's."""

from __future__ import annotations

import hashlib
import json

from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from otelbridge import __version__
from tests.conftest import clean_env, run_bridge, side_by_side
from tests.receivers import GrpcReceiver

SESSION = "guarantees"
EPOCH_MS = 1_783_647_395_000
WORKFLOWS, AGENTS = 12, 4


def stream() -> bytes:
    """``WORKFLOWS`` completed workflows of ``AGENTS`` agents each (seed 000 §5 shapes)."""
    lines = []
    for w in range(WORKFLOWS):
        base = {"type": "system", "task_id": f"w{w}", "session_id": SESSION}
        agents = [{"type": "workflow_agent", "index": i, "label": f"agent {i}", "phaseIndex": 1,
                   "agentId": f"a{i}", "state": "done", "startedAt": EPOCH_MS + i, "durationMs": 5,
                   "tokens": 100 + i, "model": "claude-opus-4-8"} for i in range(1, AGENTS + 1)]
        for doc in ({**base, "subtype": "task_started", "task_type": "local_workflow", "workflow_name": "g"},
                    {**base, "subtype": "task_progress",
                     "workflow_progress": [{"type": "workflow_phase", "index": 1, "title": "Run"}] + agents},
                    {**base, "subtype": "task_updated", "patch": {"status": "completed", "end_time": EPOCH_MS + 100}},
                    {**base, "subtype": "task_notification", "status": "completed"}):
            lines.append(json.dumps(doc).encode())
    return b"\n".join(lines) + b"\n"


def workflow_trace_id(task_id: str) -> int:
    """SPAN-MODEL.md's deterministic rule for a workflow's trace id."""
    return int.from_bytes(hashlib.sha256(f"otelbridge/1/{SESSION}/{task_id}".encode()).digest()[:16], "big")


def export(**env: str) -> list:
    data = stream()
    with GrpcReceiver() as rx:
        proc = run_bridge(["--protocol", "grpc", "--endpoint", rx.endpoint, "--deterministic-ids",
                           "--grace-period", "0"], data, env=clean_env(**env))
        spans = rx.received.spans()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    return spans


def test_ratio_sampler_attribute_limit_scope_and_resource_at_the_receiver():
    unlimited, limited = side_by_side(
        export, lambda: export(OTEL_TRACES_SAMPLER="parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG="0.5",
                               OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT="5", OTEL_SERVICE_NAME="limits-test"))

    # every workflow arrives without a sampler; with one, exactly the traces its rule keeps, whole
    bound = TraceIdRatioBased(0.5).bound
    traces = {f"{workflow_trace_id(f'w{w}'):032x}": workflow_trace_id(f"w{w}") for w in range(WORKFLOWS)}
    kept = {hex_id for hex_id, trace_id in traces.items() if trace_id & (2**64 - 1) < bound}
    assert 0 < len(kept) < WORKFLOWS  # the rule keeps some and drops some of these ids
    per_trace = 2 + AGENTS
    unlimited_wf = [s for s in unlimited if s.trace_id in traces]
    limited_wf = [s for s in limited if s.trace_id in traces]
    assert len(unlimited_wf) == WORKFLOWS * per_trace
    assert {s.trace_id for s in limited_wf} == kept
    assert len(limited_wf) == len(kept) * per_trace

    # the count limit keeps the newest 5 attributes of each span and says how many it dropped
    full = {(s.trace_id, s.span_id): s for s in unlimited}
    for span in limited_wf:
        original = full[(span.trace_id, span.span_id)]
        assert span.name == original.name and (span.start_ns, span.end_ns) == (original.start_ns, original.end_ns)
        assert list(span.attributes.items()) == list(original.attributes.items())[-5:]
        assert span.dropped_attributes == max(len(original.attributes) - 5, 0)
        assert original.dropped_attributes == 0
    agents = [s for s in limited_wf if s.name.startswith("invoke_agent")]
    assert len(agents) == len(kept) * AGENTS and all(s.dropped_attributes > 0 for s in agents)

    # the instrumentation scope and the resource (OTEL_SERVICE_NAME applies)
    assert {s.scope for s in unlimited + limited} == {("otelbridge", __version__)}
    assert {s.resource["service.name"] for s in limited} == {"limits-test"}
    assert {s.resource["service.name"] for s in unlimited} == {"otelbridge"}
