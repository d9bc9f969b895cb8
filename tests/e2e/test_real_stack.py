"""The deploy kit against the real binaries (collector-config/build.sh builds them into .tools/bin):
every collector configuration passes ``otelcol-otelbridge validate``, and
otelbridge → collector (``otelcol.yaml``) → Jaeger v2 (``jaeger.yaml``), read back through
Jaeger's query API.

One stack per module: Jaeger, the collector with the real ``otelcol.yaml`` (its listening
addresses moved to free 127.0.0.1 ports by a second, merged config file; ``span_metrics``
flushing every second instead of every 15 s, batches leaving after 0.2 s instead of 1 s), its Jaeger and Tempo endpoints set through the
environment variables the file reads. Tempo is stood in for by the test's own OTLP/gRPC receiver.
Every span is compared with what the same otelbridge run sends straight to a test receiver.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
import urllib.request

import pytest
import yaml

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2
from tests.conftest import EXAMPLES, FIXTURES, needs_fixtures, sent, workflow_facts
from tests.e2e import realstack
from tests.e2e.realstack import CONF, COLLECTOR, JAEGER, run_otelbridge, run_otelbridge_together, wait_for_trace
from tests.receivers import GrpcReceiver, HttpReceiver

EXAMPLE = EXAMPLES / "cbc-workflow.jsonl"
SESSION = FIXTURES / "claude-code" / "subagent-explore-2.1.178.jsonl"
COLLECTOR_CONFIGS = sorted(CONF.glob("otelcol*.yaml"))


def deterministic_trace_id(session_id: str, task_id: str) -> str:
    """SPAN-MODEL.md "Deterministic ids": the first 16 bytes of sha256(otelbridge/1/{session}/{task})."""
    return hashlib.sha256(f"otelbridge/1/{session_id}/{task_id}".encode()).hexdigest()[:32]


@pytest.mark.parametrize("config", COLLECTOR_CONFIGS, ids=lambda p: p.name)
def test_every_collector_config_validates(config):
    realstack.require_binaries(COLLECTOR)
    proc = subprocess.run([str(COLLECTOR), "validate", f"--config={config}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_distribution_has_exactly_the_components_the_configs_use():
    realstack.require_binaries(COLLECTOR)
    proc = subprocess.run([str(COLLECTOR), "components"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    listed = yaml.safe_load(proc.stdout)
    built = {kind: {c["name"] for c in listed.get(kind) or []}
             for kind in ("receivers", "processors", "exporters", "connectors", "extensions")}
    used = {kind: set() for kind in built}
    for config in COLLECTOR_CONFIGS:
        cfg = yaml.safe_load(config.read_text())
        for kind in used:
            used[kind] |= {name.split("/")[0] for name in cfg.get(kind) or {}}
    assert built == used


def test_jaeger_config_validates():
    realstack.require_binaries(JAEGER)
    proc = subprocess.run([str(JAEGER), "validate", f"--config={CONF / 'jaeger.yaml'}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """{jaeger, collector: Service; jaeger_ports, ports: dict; tempo: GrpcReceiver}; all stopped
    at the module's end."""
    realstack.require_binaries()
    work = tmp_path_factory.mktemp("real-stack")
    started = []
    with GrpcReceiver() as tempo:
        try:
            jaeger, jports = realstack.start_jaeger(work)
            started.append(jaeger)
            env = {"OTELBRIDGE_JAEGER_ENDPOINT": f"127.0.0.1:{jports['grpc']}",
                   "OTELBRIDGE_TEMPO_ENDPOINT": f"127.0.0.1:{tempo.port}"}
            collector, ports = realstack.start_collector(
                CONF / "otelcol.yaml", work, "otelcol", env=env,
                changes={"connectors": {"span_metrics": {"metrics_flush_interval": "1s"}},
                         "processors": {"batch": {"timeout": "200ms"}}})
            started.append(collector)
            yield {"jaeger": jaeger, "jaeger_ports": jports, "collector": collector, "ports": ports,
                   "tempo": tempo}
        finally:
            realstack.stop_all(started)


def test_the_collector_listens_where_its_variables_say(tmp_path):
    """docs/deploy.md's variables move the collector off its default ports, with no other
    setting (two collectors on one machine): it answers its health check there and takes
    otelbridge's spans over OTLP/HTTP and gRPC there."""
    realstack.require_binaries(COLLECTOR)
    ports = {k: realstack.free_port() for k in ("grpc", "http", "health", "metrics", "telemetry")}
    env = {"OTELBRIDGE_LISTEN_HOST": "127.0.0.1", "OTELBRIDGE_OTLP_GRPC_PORT": str(ports["grpc"]),
           "OTELBRIDGE_OTLP_HTTP_PORT": str(ports["http"]), "OTELBRIDGE_HEALTH_PORT": str(ports["health"]),
           "OTELBRIDGE_METRICS_PORT": str(ports["metrics"]), "OTELBRIDGE_TELEMETRY_PORT": str(ports["telemetry"])}
    svc = realstack.Service("collector", [str(COLLECTOR), f"--config={CONF / 'otelcol.yaml'}"],
                            tmp_path / "collector.log", env, ready_url=f"http://127.0.0.1:{ports['health']}/")
    try:
        realstack.ready(svc)
        assert realstack.http_get(f"http://localhost:{ports['telemetry']}/metrics")[0] == 200
        for protocol, port in (("http/protobuf", ports["http"]), ("grpc", ports["grpc"])):
            out = run_otelbridge(["--protocol", protocol, "--endpoint", f"http://127.0.0.1:{port}",
                                  "--fail-on-export-error"], EXAMPLE.read_bytes())
            assert out.returncode == 0, out.stderr
    finally:
        svc.stop()


def test_collector_and_jaeger_start_without_warnings(stack):
    """No deprecated component name or OTTL path (the collector warns of them at every start,
    not at validate), nothing else to warn of either; Jaeger's only warning is that a binary
    built from the Go module carries no UI assets (they come from a separate JavaScript build)."""
    assert realstack.startup_warnings(stack["collector"]) == []
    (ui,) = realstack.startup_warnings(stack["jaeger"])
    assert "ui assets not embedded" in ui


@needs_fixtures()
def test_jaeger_sends_no_traces_of_its_own(tmp_path):
    """Jaeger's query service traces itself by default, over OTLP to the SDK's default address
    (localhost:4317, where a collector of the user's listens): its config turns that off. A
    receiver stands at the address its SDK reads; the UI's API is asked, and nothing arrives."""
    realstack.require_binaries()
    with GrpcReceiver() as rx:
        jaeger, ports = realstack.start_jaeger(tmp_path, env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_BSP_SCHEDULE_DELAY": "100"})
        try:
            for path in ("/api/services", "/api/traces?service=otelbridge", "/api/services"):
                with urllib.request.urlopen(f"http://127.0.0.1:{ports['query']}{path}", timeout=10) as answer:
                    assert answer.status == 200
            time.sleep(1.5)  # (five times its export delay)
        finally:
            realstack.stop_all([jaeger])
        assert rx.received.spans() == []


def test_jaegers_query_port_taken_for_the_otlp_endpoint_fails_the_export(stack):
    """Jaeger's query port (its UI's, in a trace link) answers any POST with its web page, 200:
    the SDK would count the spans as sent. The run says what the endpoint is instead."""
    data = (FIXTURES / "claude-code" / "claudecli-go-bg-bash-wake-2.1.280.jsonl").read_bytes()
    proc = run_otelbridge(["--fail-on-export-error", "--endpoint",
                           f"http://127.0.0.1:{stack['jaeger_ports']['query']}"], data)
    assert proc.stdout == data
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "the endpoint answered with a web page (text/html), not an OTLP response" in err
    assert re.search(r"spans (\d+) built, 0 exported, \1 dropped", err)


def test_the_collectors_health_check_port_taken_for_the_otlp_endpoint_fails_the_export(stack):
    """The collector's health_check answers any POST with 200 and a JSON status: the SDK would
    count the spans as sent (nothing reached a backend, unsaid). The run says what answered,
    as the export fails and in the exit line."""
    data = (EXAMPLES / "claude-code-session.jsonl").read_bytes()
    endpoint = f"http://127.0.0.1:{stack['ports']['health']}"
    proc = run_otelbridge(["--fail-on-export-error", "--flush-timeout", "2", "--endpoint", endpoint], data)
    assert proc.stdout == data and proc.returncode == 1
    err = proc.stderr.decode().splitlines()
    cause = ("the endpoint answered with JSON that is no OTLP response (keys status, upSince, uptime): a "
             "health check's or another service's port? OTLP/HTTP is usually on port 4318")
    assert err[0] == f"otelbridge: export to {endpoint} failed: {cause} (further export messages suppressed)"
    assert re.search(r"spans (\d+) built, 0 exported, \1 dropped", err[1])
    assert err[2].startswith(f"otelbridge: export incomplete ({endpoint}: ") and err[2].endswith(f"; {cause})")


@pytest.mark.parametrize("protocol, port, cause", [
    ("grpc", "http", "an HTTP/1 server answered OTLP/gRPC: OTLP/HTTP's port? (gRPC is usually on 4317, "
                     "or use --protocol http/protobuf)"),
    ("http/protobuf", "grpc", "the other end closed the connection: an OTLP receiver of another protocol? "
                              "(OTLP/gRPC is usually on port 4317, OTLP/HTTP on 4318: --protocol)"),
])
def test_the_collectors_other_port_is_named_as_the_cause(stack, protocol, port, cause):
    """OTLP/gRPC sent to the collector's OTLP/HTTP port, or the other way round: the stream
    passes, and the run says what is wrong in its own words (not gRPC's or urllib3's), once as
    it happens and once in the exit line."""
    data = (EXAMPLES / "claude-code-session.jsonl").read_bytes()
    endpoint = f"http://127.0.0.1:{stack['ports'][port]}"
    proc = run_otelbridge(["--protocol", protocol, "--endpoint", endpoint, "--flush-timeout", "2",
                           "--summary", "never"], data)
    assert proc.stdout == data and proc.returncode == 0
    lines = proc.stderr.decode().splitlines()
    assert lines[0] == f"otelbridge: export to {endpoint} failed: {cause} (further export messages suppressed)"
    assert lines[-1].startswith(f"otelbridge: export incomplete ({endpoint}: 18 of 18 not confirmed; ")
    assert lines[-1].endswith(f"; {cause})")
    assert len(lines) == 3  # and the counts line
    assert "StatusCode" not in proc.stderr.decode() and "HTTPConnection" not in proc.stderr.decode()


def send_through_stack(stack, path) -> list:
    """``otelbridge --deterministic-ids`` over ``path`` twice, side by side: to a test receiver
    (the reference spans, returned) and to the collector's OTLP/HTTP receiver."""
    data = path.read_bytes()
    args = ["--deterministic-ids", "--protocol", "http/protobuf", "--endpoint"]
    with HttpReceiver() as rx:
        ref, proc = run_otelbridge_together([(args + [rx.endpoint], data),
                                             (args + [f"http://127.0.0.1:{stack['ports']['http']}"], data)])
        assert ref.returncode == 0, ref.stderr
        reference = rx.received.spans()
    assert reference
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    return reference


#: Jaeger's own notes on a span: its sanitizer's (a span of no length: none is sent) and its
#: query service's on clock skew it saw (a child outside its parent)
JAEGER_WARNINGS = "@jaeger@warnings"


def assert_same_spans(jaeger_spans, reference):
    """Jaeger holds every reference span once, with the same ids, parent, name, times (ns),
    status, attributes (Jaeger's notes aside), events and links."""
    assert sorted(s.span_id for s in jaeger_spans) == sorted(s.span_id for s in reference)
    got = {s.span_id: s for s in jaeger_spans}
    for want in reference:
        s = got[want.span_id]
        assert (s.trace_id, s.parent_span_id, s.name, s.kind) == (
            want.trace_id, want.parent_span_id, want.name, want.kind), want.name
        attributes = dict(s.attributes)
        assert attributes.pop(JAEGER_WARNINGS, []) == [], want.name
        assert (s.start_ns, s.end_ns) == (want.start_ns, want.end_ns), want.name
        assert (s.status_code, s.status_message) == (want.status_code, want.status_message), want.name
        assert attributes == want.attributes, want.name
        assert s.events == want.events and s.links == want.links, want.name
        assert s.resource["service.name"] == want.resource["service.name"]


@pytest.fixture(scope="module")
def workflow(stack):
    reference = send_through_stack(stack, EXAMPLE)
    started, agents, phases, updated, notified = workflow_facts(EXAMPLE)
    trace_id = deterministic_trace_id(started["session_id"], started["task_id"])
    ours = [s for s in reference if s.trace_id == trace_id]
    spans = wait_for_trace(stack["jaeger_ports"]["query"], trace_id, len(ours))
    return {"reference": reference, "trace_id": trace_id, "spans": spans, "agents": agents,
            "phases": phases, "started": started}


def test_workflow_example_reaches_jaeger_whole(workflow):
    """The example's trace under its deterministic id: the root, a span per phase under it, a
    span per agent under its phase, with the stream's token counts; every span as sent."""
    spans, agents, phases = workflow["spans"], workflow["agents"], workflow["phases"]
    assert len(spans) == 1 + len(phases) + len(agents) == 6
    assert_same_spans(spans, [s for s in workflow["reference"] if s.trace_id == workflow["trace_id"]])
    (root,) = [s for s in spans if s.parent_span_id == ""]
    assert root.name == "invoke_workflow deep-research.workflow.js"
    assert root.attributes["workflow.task_id"] == workflow["started"]["task_id"]
    assert root.attributes["gen_ai.conversation.id"] == workflow["started"]["session_id"]
    assert root.attributes["workflow.status"] == "failed" and root.status_code == 2
    by_name = {s.name: s for s in spans}
    for phase in phases:
        span = by_name[f"phase {phase['title']}"]
        assert span.parent_span_id == root.span_id
        assert span.attributes["workflow.phase.title"] == phase["title"]
    for agent in agents:
        span = by_name[f"invoke_agent {agent['label']}"]
        assert span.parent_span_id == by_name[f"phase {agent['phaseTitle']}"].span_id
        assert span.attributes["gen_ai.agent.id"] == agent["agentId"]
        if span.attributes.get("workflow.agent.cached"):  # (no length: an instant at its start)
            assert (span.start_ns, span.end_ns) == sent(agent["startedAt"] * 1_000_000, agent["startedAt"] * 1_000_000)
        else:
            assert span.start_ns == agent["startedAt"] * 1_000_000
        if agent.get("tokens") is not None:
            assert span.attributes["workflow.agent.tokens"] == agent["tokens"]
    assert sum(s.attributes.get("workflow.agent.tokens", 0) for s in spans) == sum(
        a.get("tokens") or 0 for a in agents) > 0


def test_tempo_exporter_sends_the_same_trace(workflow, stack):
    """The collector's second trace exporter (Tempo in compose) delivers the same spans."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = [s for s in stack["tempo"].received.spans() if s.trace_id == workflow["trace_id"]]
        if len(got) >= len(workflow["spans"]):
            break
        time.sleep(0.1)
    assert sorted(s.span_id for s in got) == sorted(s.span_id for s in workflow["spans"])


def test_a_header_describing_the_body_is_left_out_and_the_collector_takes_the_spans(stack):
    """``Content-Type=application/json`` in the headers made the collector answer every export
    with 500 (``content-encoding`` with 400): the header is said and left out, the rest sent."""
    data = (EXAMPLES / "bernstein-signals.txt").read_bytes()  # (no model call: the token metrics stay the recording's)
    proc = run_otelbridge(["--fail-on-export-error", "--endpoint", f"http://127.0.0.1:{stack['ports']['http']}"],
                          data, OTEL_EXPORTER_OTLP_HEADERS="Content-Type=application/json,content-encoding=gzip,x-team=a")
    assert proc.stdout == data and proc.returncode == 0, proc.stderr
    err = proc.stderr.decode().splitlines()
    (said,) = [l for l in err if "OTEL_EXPORTER_OTLP_HEADERS" in l]
    assert "'Content-Type'" in said and "'content-encoding'" in said and said.endswith(
        "left out, the other headers are sent"), said
    assert re.search(r"spans (\d+) built, \1 exported, 0 dropped", err[-1]), err


@pytest.fixture(scope="module")
def session(stack):
    """A real recording (a session with an Explore sub-agent) sent through the stack: the
    reference spans."""
    return send_through_stack(stack, SESSION)


@needs_fixtures()
def test_session_recording_tree_reaches_jaeger(session, stack):
    """Every trace otelbridge sends for the recording arrives in Jaeger with the same tree."""
    reference = session
    traces = sorted({s.trace_id for s in reference})
    for trace_id in traces:
        want = [s for s in reference if s.trace_id == trace_id]
        got = wait_for_trace(stack["jaeger_ports"]["query"], trace_id, len(want))
        assert_same_spans(got, want)
    ids = {s.span_id for s in reference}
    roots = [s for s in reference if s.parent_span_id not in ids]
    assert len(reference) > len(roots) >= 1  # a tree, not a flat list
    assert any(s.name.startswith("execute_tool ") for s in reference)


def otlp_http_post(port: int, request: trace_service_pb2.ExportTraceServiceRequest) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=request.SerializeToString(),
                                 headers={"Content-Type": "application/x-protobuf"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status


def test_collector_redacts_secret_looking_attributes(stack):
    """What another sender (or a misconfigured capture) puts on a span: a key that names a
    secret is deleted (attributes/drop_secrets), a value that looks like a credential is masked
    (redaction), token counts pass."""
    trace_id = hashlib.sha256(b"real-stack redaction probe").digest()[:16]
    bearer = "Bearer abcdefghijklmnop1234567890"
    span = trace_pb2.Span(
        trace_id=trace_id, span_id=b"\x01" * 8, name="chat probe", kind=trace_pb2.Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=1_790_000_000_000_000_000, end_time_unix_nano=1_790_000_001_000_000_000,
        attributes=[KeyValue(key="db.password", value=AnyValue(string_value="hunter2-hunter2")),
                    KeyValue(key="http.request.header.note", value=AnyValue(string_value=f"sent {bearer}")),
                    KeyValue(key="gen_ai.usage.input_tokens", value=AnyValue(int_value=42)),
                    KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="chat"))])
    request = trace_service_pb2.ExportTraceServiceRequest(resource_spans=[trace_pb2.ResourceSpans(
        resource={"attributes": [KeyValue(key="service.name", value=AnyValue(string_value="probe"))]},
        scope_spans=[trace_pb2.ScopeSpans(spans=[span])])])
    assert otlp_http_post(stack["ports"]["http"], request) == 200
    (got,) = wait_for_trace(stack["jaeger_ports"]["query"], trace_id.hex(), 1)
    assert "db.password" not in got.attributes
    note = got.attributes["http.request.header.note"]
    assert note.startswith("sent ") and "abcdefghijklmnop" not in note and "****" in note
    assert got.attributes["gen_ai.usage.input_tokens"] == 42
    assert got.attributes["redaction.masked.count"] == 1
    assert "hunter2" not in json.dumps(got.attributes) and "abcdefghijklmnop" not in json.dumps(got.attributes)


def test_span_and_token_metrics_on_the_prometheus_endpoint(workflow, stack):
    """span_metrics (RED) and signal_to_metrics (tokens, runs) for the example's trace, as the
    collector's Prometheus exporter serves them: counts and sums from the stream itself."""
    agents, notified = workflow["agents"], workflow_facts(EXAMPLE)[4]
    tokens = {a["label"]: a["tokens"] for a in agents if a.get("tokens") is not None}
    assert tokens
    root = next(s for s in workflow["spans"] if s.parent_span_id == "")
    wanted = {("otelbridge_agent_tokens_total", label): float(n) for label, n in tokens.items()}
    statuses = {0: "STATUS_CODE_UNSET", 1: "STATUS_CODE_OK", 2: "STATUS_CODE_ERROR"}
    every_call = [(s.name, statuses[s.status_code]) for s in workflow["spans"]]
    deadline = time.monotonic() + 20
    while True:
        rows = realstack.prometheus_samples(stack["ports"]["prometheus"])
        agent_tokens = {("otelbridge_agent_tokens_total", l["gen_ai_agent_name"]): v for n, l, v in rows
                        if n == "otelbridge_agent_tokens_total"}
        calls = {(l["span_name"], l["status_code"]): v for n, l, v in rows
                 if n == "traces_span_metrics_calls_total" and l.get("service_name") == "otelbridge"}
        runs = [(l, v) for n, l, v in rows if n == "otelbridge_workflow_runs_total"]
        # a series can show at 0 before its first flush of counts: wait for every span's count
        if (all(agent_tokens.get(k) == v for k, v in wanted.items()) and runs
                and ("invoke_agent write-report", "STATUS_CODE_ERROR") in calls
                and all(calls.get(key, 0) >= 1 for key in every_call)) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for key, value in wanted.items():
        assert agent_tokens.get(key) == value, (key, agent_tokens)
    ((labels, value),) = runs
    assert labels["workflow_name"] == root.attributes["workflow.name"]
    assert labels["workflow_status"] == "failed" and value == 1.0
    for key in every_call:
        assert calls.get(key, 0) >= 1, (key, calls)
    ((labels, total),) = [(l, v) for n, l, v in rows if n == "otelbridge_workflow_tokens_total"]
    assert labels["workflow_status"] == "failed"
    assert total == root.attributes["workflow.usage.total_tokens"] == notified["usage"]["total_tokens"]


@needs_fixtures()
def test_session_token_and_cost_metrics_from_a_session_recording(session, stack):
    """signal_to_metrics' per-session counters: the recording's session span's tokens and
    cost, which are its result's (the raw stream's), by agent and model."""
    (root,) = [s for s in session if "session.turns" in s.attributes]
    result = json.loads(next(l for l in SESSION.read_text().splitlines() if '"type":"result"' in l.replace(" ", "")))
    assert root.attributes["result.total_cost_usd"] == root.attributes["session.cost_usd"] == result["total_cost_usd"]
    labels = (root.attributes["gen_ai.agent.name"], root.attributes["gen_ai.request.model"])
    want = {("otelbridge_session_input_tokens_total", *labels): float(root.attributes["gen_ai.usage.input_tokens"]),
            ("otelbridge_session_output_tokens_total", *labels): float(root.attributes["gen_ai.usage.output_tokens"]),
            ("otelbridge_session_cost_usd_total", *labels): result["total_cost_usd"]}

    def got():
        return {(n, l["gen_ai_agent_name"], l["gen_ai_request_model"]): v
                for n, l, v in realstack.prometheus_samples(stack["ports"]["prometheus"])
                if n.startswith("otelbridge_session_") and l.get("job") == "otelbridge"}

    deadline = time.monotonic() + 20
    while (seen := got()) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    assert seen == want


@needs_fixtures()
@pytest.mark.parametrize("name", ["claudecli-go-bg-bash-wake-2.1.280.jsonl", "claudecli-go-basic-thinking-2.1.68.jsonl"],
                         ids=["timestamped", "no-timestamp"])
def test_a_recording_replayed_twice_is_held_once_by_jaeger(stack, name, tmp_path):
    """`replay` of one recording, twice, a second apart, straight to Jaeger: the same spans
    (ids, times, resource), which Jaeger holds once (its API v3). A random service.instance.id each run made
    every span two in Jaeger's trace, and a recording with no timestamp, dated by the wall
    clock of each replay, gave two timelines under one set of ids."""
    path = tmp_path / name
    path.write_bytes((FIXTURES / "claude-code" / name).read_bytes())
    endpoint = f"http://127.0.0.1:{stack['jaeger_ports']['grpc']}"
    with GrpcReceiver() as rx:
        runs = []
        for to in (rx.endpoint, endpoint, endpoint):
            runs.append(run_otelbridge(["replay", "--summary", "never", "--protocol", "grpc", "--endpoint", to,
                                        str(path)], b""))
            assert runs[-1].returncode == 0, runs[-1].stderr
            time.sleep(1)
        reference = rx.received.spans()
    assert reference
    for trace_id in sorted({s.trace_id for s in reference}):
        want = [s for s in reference if s.trace_id == trace_id]
        wait_for_trace(stack["jaeger_ports"]["query"], trace_id, len(want))
        time.sleep(0.5)  # (the second replay's spans, if they were others, have come by now)
        assert_same_spans(realstack.jaeger_spans(stack["jaeger_ports"]["query"], trace_id), want)


@needs_fixtures()
@pytest.mark.parametrize("path", [EXAMPLES / "claude-code-session.jsonl", FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl"],
                         ids=["instants-at-their-parents-end", "no-timestamp"])
def test_jaegers_ui_shows_each_span_once_and_warns_of_none(stack, path, tmp_path):
    """What Jaeger's UI reads (its ``/api/traces``, after its adjusters) of a recording replayed
    twice: each span once, none with a warning. Instants the stream shows (a tool answered at
    once, a call's lines all at its turn's end, every line of an untimed recording) went out
    with no length: Jaeger called each a negative duration, merged none of their copies (task-tool:
    94 spans for 48) and found the one at its parent's end outside it (a clock-skew warning)."""
    endpoint = f"http://127.0.0.1:{stack['jaeger_ports']['http']}"
    with HttpReceiver() as rx:
        for to in (rx.endpoint, endpoint, endpoint):
            run = run_otelbridge(["replay", "--summary", "never", "--endpoint", to, str(path)], b"")
            assert run.returncode == 0, run.stderr
        reference = rx.received.spans()
    instants = [s for s in reference if s.end_ns - s.start_ns == 1_000]
    assert len(instants) >= 3
    if path.parent == EXAMPLES:  # (dated by the stream in ms: each ends at its instant)
        assert all(s.end_ns % 1_000_000 == 0 for s in instants)
    for trace_id in sorted({s.trace_id for s in reference}):
        want = sorted(s.span_id for s in reference if s.trace_id == trace_id)
        wait_for_trace(stack["jaeger_ports"]["query"], trace_id, len(want))
        time.sleep(0.5)
        seen = realstack.jaeger_ui_spans(stack["jaeger_ports"]["query"], trace_id)
        assert sorted(span_id for span_id, *_ in seen) == want
        assert [(span_id, warnings) for span_id, _, _, warnings in seen if warnings] == []
        assert all(duration >= 1 for _, _, duration, _ in seen)


@needs_fixtures()
def test_follow_sends_what_a_collector_restart_lost_once_the_collector_is_back(tmp_path):
    """A sidecar follows a worker's log into the Go-built collector, which sends on to a backend
    (a receiver standing for Tempo). The collector is stopped while a run is written (a
    rollout) and started again on its addresses; nothing more is written. Without a restart of
    the sidecar, every span of the file reaches the backend, none without its parent."""
    from types import SimpleNamespace

    from tests.e2e.test_follow import (append, assert_whole_by_shape, back_to_back, empty_log, replay_into,
                                       saved_offset, start, stop, wait)

    realstack.require_binaries()
    log, state = empty_log(tmp_path)
    runs = back_to_back("claudecli-go-bg-bash-wake-2.1.280.jsonl", 3)
    with GrpcReceiver() as backend, GrpcReceiver() as jaeger:
        env = {"OTELBRIDGE_JAEGER_ENDPOINT": f"127.0.0.1:{jaeger.port}",
               "OTELBRIDGE_TEMPO_ENDPOINT": f"127.0.0.1:{backend.port}"}
        changes = {"processors": {"batch": {"timeout": "200ms"}}}
        collector, ports = realstack.start_collector(CONF / "otelcol.yaml", tmp_path, "otelcol", env=env, changes=changes)
        proc = None
        try:
            to = SimpleNamespace(endpoint=f"http://127.0.0.1:{ports['http']}")
            proc = start(log, state, to, "--from-start", "--flush-timeout", "1", "--protocol", "http/protobuf",
                         OTEL_EXPORTER_OTLP_TIMEOUT="1000")
            append(log, runs[0] + runs[1])
            wait(lambda: (saved_offset(state) or {}).get("read_to") == log.stat().st_size, what="a saved position")
            collector.stop()  # (a rollout)
            append(log, runs[2])
            time.sleep(2.5)
            again = realstack.Service("otelcol-again", list(collector.proc.args), tmp_path / "otelcol-again.log",
                                      env, ready_url=collector.ready_url)
            try:
                realstack.ready(again)
                # (23 of the file's 24: the last session ends at the stop)
                wait(lambda: len({s.span_id for s in backend.received.spans()}) >= 23, timeout=30,
                     what="the spans lost in the rollout")
                err = stop(proc)[1]
                time.sleep(1)  # (the collector's batch)
            finally:
                again.stop()
        finally:
            collector.stop()
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        spans = backend.received.spans()
    assert b"again from the last point whose spans were all exported" in err, err
    with HttpReceiver() as whole:
        replay_into(whole, log)
        want = whole.received.spans()
    assert_whole_by_shape(spans, want)
    assert len({s.span_id for s in spans}) == len(want)
