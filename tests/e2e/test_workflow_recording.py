"""End to end on the real workflow recording: otelbridge as a subprocess, spans at a real OTLP
receiver (gRPC and HTTP), stdout byte-identical to stdin."""

from __future__ import annotations

import re

import pytest

from tests.conftest import WORKFLOW_PROBE, clean_env, needs_fixtures, run_bridge, workflow_facts
from tests.receivers import GrpcReceiver, HttpReceiver

pytestmark = needs_fixtures()

MS = 1_000_000


def recording_facts():
    """What the recording itself says (read from the file, not copied into the test)."""
    return workflow_facts(WORKFLOW_PROBE)


def workflow_trace(spans):
    """The spans of the workflow's own trace (the recording also yields the session's trace)."""
    (root,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    return [s for s in spans if s.trace_id == root.trace_id]


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_workflow_spans_at_receiver(protocol):
    receiver_cls = GrpcReceiver if protocol == "grpc" else HttpReceiver
    data = WORKFLOW_PROBE.read_bytes()
    with receiver_cls() as rx:
        proc = run_bridge(["--protocol", protocol, "--endpoint", rx.endpoint], data)
        everything = rx.received.wait_for(4, timeout=5)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    assert f"{len(everything)} exported, 0 dropped".encode() in proc.stderr

    started, agents, phases, updated, notified = recording_facts()
    spans = workflow_trace(everything)
    assert len(spans) == 2 + len(agents) == 4
    by_name = {s.name.split(" ", 1)[0]: [] for s in spans}
    for s in spans:
        by_name[s.name.split(" ", 1)[0]].append(s)
    (root,) = by_name["invoke_workflow"]
    (phase,) = by_name["phase"]
    agent_spans = sorted(by_name["invoke_agent"], key=lambda s: s.attributes["workflow.agent.index"])

    # one trace, the tree root → phase → agents
    assert {s.trace_id for s in spans} == {root.trace_id}
    assert root.parent_span_id == ""
    assert phase.parent_span_id == root.span_id
    assert all(a.parent_span_id == phase.span_id for a in agent_spans)

    # names and attributes by SPAN-MODEL.md
    assert root.name == f"invoke_workflow {started['workflow_name']}"
    assert root.attributes["workflow.name"] == started["workflow_name"]
    assert root.attributes["workflow.task_id"] == started["task_id"]
    assert root.attributes["workflow.tool_use_id"] == started["tool_use_id"]
    assert root.attributes["workflow.status"] == notified["status"] == "completed"
    assert root.attributes["workflow.usage.total_tokens"] == notified["usage"]["total_tokens"]
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.conversation.id"] == started["session_id"]
    assert phase.name == f"phase {phases[0]['title']}"
    assert phase.attributes["workflow.phase.index"] == phases[0]["index"]
    for span, entry in zip(agent_spans, agents):
        # Claude Code labelled these agents by the start of their prompts (the workflow gave
        # them no label): content, so the span is named by the agent's index and no attribute
        # holds the label
        assert entry["promptPreview"].startswith(entry["label"])
        assert span.name == f"invoke_agent #{entry['index']}"
        assert "gen_ai.agent.name" not in span.attributes
        assert not any(entry["label"] in str(v) for v in span.attributes.values())
        assert span.attributes["gen_ai.agent.id"] == entry["agentId"]
        assert span.attributes["workflow.agent.tokens"] == entry["tokens"]
        assert span.attributes["workflow.agent.tool_calls"] == entry["toolCalls"]
        assert span.attributes["workflow.agent.state"] == "done"
        assert span.attributes["gen_ai.request.model"] == entry["model"]
        # agent times in ns equal the recording's ms values (no endedAt: startedAt + durationMs)
        assert span.start_ns == entry["startedAt"] * MS
        assert span.end_ns == (entry["startedAt"] + entry["durationMs"]) * MS
        assert span.status_code == 0
        # content is opt-in: previews are not exported
        assert not any("preview" in k for k in span.attributes)

    # root start = end_time − duration_ms; end = end_time; phase spans its agents
    assert root.start_ns == (updated["patch"]["end_time"] - notified["usage"]["duration_ms"]) * MS
    assert root.end_ns == updated["patch"]["end_time"] * MS
    assert phase.start_ns == agents[0]["startedAt"] * MS
    assert phase.end_ns == max((a["startedAt"] + a["durationMs"]) for a in agents) * MS
    # no secrets of the stream: the workflow script (prompt) is not exported
    assert all(started["prompt"] not in str(s.attributes) for s in everything)

    # the session that started the workflow: a separate trace, linked both ways
    (session,) = [s for s in everything if s.name == "invoke_agent claude-code"]
    assert session.trace_id != root.trace_id
    assert root.links == [(session.trace_id, session.span_id)]
    assert session.links == [(root.trace_id, root.span_id)]


def test_env_configuration_grpc():
    """OTEL_EXPORTER_OTLP_ENDPOINT / _PROTOCOL / OTEL_SERVICE_NAME / _RESOURCE_ATTRIBUTES / _HEADERS."""
    data = WORKFLOW_PROBE.read_bytes()
    with GrpcReceiver() as rx:
        env = clean_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
            OTEL_SERVICE_NAME="ci-agents",
            OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=test",
            OTEL_EXPORTER_OTLP_HEADERS="x-team=platform",
        )
        proc = run_bridge([], data, env=env)
        spans = workflow_trace(rx.received.wait_for(4, timeout=5))
        headers = rx.received.headers
    assert proc.returncode == 0, proc.stderr
    assert len(spans) == 4
    assert spans[0].resource["service.name"] == "ci-agents"
    assert spans[0].resource["deployment.environment.name"] == "test"
    assert any(dict(h).get("x-team") == "platform" for h in headers)


def test_sdk_disabled_exports_nothing_and_passes_through():
    data = WORKFLOW_PROBE.read_bytes()
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, OTEL_SDK_DISABLED="true")
        proc = run_bridge([], data, env=env)
        assert proc.returncode == 0
        assert proc.stdout == data
        assert rx.received.spans() == []
    # the counts add up: every span built is said to be held back by OTEL_SDK_DISABLED
    stderr = proc.stderr.decode()
    built = int(re.search(r"spans (\d+) built", stderr).group(1))
    assert built > 0 and f", {built} not exported (OTEL_SDK_DISABLED)" in stderr


def test_traceparent_in_puts_workflow_under_ci_span():
    data = WORKFLOW_PROBE.read_bytes()
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with GrpcReceiver() as rx:
        env = clean_env(TRACEPARENT=f"00-{trace_id}-{parent_id}-01")
        proc = run_bridge(["--protocol", "grpc", "--endpoint", rx.endpoint], data, env=env)
        spans = rx.received.wait_for(4, timeout=5)
    assert proc.returncode == 0, proc.stderr
    assert {s.trace_id for s in spans} == {trace_id}
    (root,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    assert root.parent_span_id == parent_id
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert session.parent_span_id == parent_id
