"""The scaled-out topology against the real binaries: otelbridge → the load-balancing agent
(``otelcol-agent-lb.yaml``) → two gateway collectors (``otelcol-gateway.yaml``) → Jaeger v2.

What the test changes in the real files (through a second, merged config file): listening
addresses on free 127.0.0.1 ports; the agent's resolver is ``static`` with the two gateways'
addresses (compose resolves a DNS name to the replicas); the gateways decide after 1 s instead of
300 s, and the agent's and gateways' batches leave after 0.2 s instead of 1 s (a trace's spans
reach its gateway well within the decision wait either way). Each gateway's second exporter
(Tempo in compose) goes to a test receiver of its own, so the test sees which gateway exported
which span; each gateway's own telemetry says how many spans it accepted before sampling and how
many traces its sampler decided and kept.

Input: the workflow example (a failed run: kept by ``keep_errors``) and a stream made here of
20 workflows, every other one failing (kept) and the rest healthy (kept only by
``keep_fraction``, 10 % of trace ids), all with deterministic ids, so the sampler's decisions
are the same on every run.
"""

from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.conftest import EXAMPLES
from tests.e2e import realstack
from tests.e2e.realstack import CONF, jaeger_spans, run_otelbridge_together
from tests.receivers import GrpcReceiver, HttpReceiver

EXAMPLE = EXAMPLES / "cbc-workflow.jsonl"
RUNS = 20
DECISION_WAIT_S = 1
#: The agent's and gateways' batch timeout here (their files: 1 s).
BATCH_TIMEOUT = "200ms"


def workflows_stream(runs: int) -> bytes:
    """One session running ``runs`` two-agent workflows (epoch ms times); in every odd-numbered
    run the second agent errs and the run fails, the others complete."""
    session, t0 = "sess-scale", 1_790_100_000_000
    lines = [{"type": "system", "subtype": "init", "session_id": session, "model": "claude-sonnet-4-5",
              "tools": ["Workflow"]}]
    for i in range(runs):
        task, start, failed = f"wf-{i:02d}", t0 + i * 10_000, i % 2 == 1
        base = {"type": "system", "task_id": task, "tool_use_id": f"toolu_h{i:02d}", "session_id": session}
        agents = [{"type": "workflow_agent", "index": n, "agentId": f"v2:{i:02d}{n:062d}", "state": "done",
                   "startedAt": start + 100 * n, "endedAt": start + 1_000 + 100 * n, "label": f"agent-{n}",
                   "phaseIndex": 1, "phaseTitle": "Work", "tokens": 100 * n} for n in (1, 2)]
        if failed:
            agents[1] |= {"state": "error", "error": "tool crashed"}
        status = "failed" if failed else "completed"
        lines += [
            {**base, "subtype": "task_started", "task_type": "local_workflow",
             "workflow_name": "path:scale.workflow.js", "description": f"run {i}"},
            {**base, "subtype": "task_progress", "usage": {"total_tokens": 300, "tool_uses": 0, "duration_ms": 1200},
             "workflow_progress": [{"type": "workflow_phase", "index": 1, "title": "Work"}, *agents]},
            {**base, "subtype": "task_updated", "patch": {"status": status, "end_time": start + 1_500}},
            {**base, "subtype": "task_notification", "status": status, "summary": status,
             "usage": {"total_tokens": 300, "tool_uses": 0, "duration_ms": 1500}},
        ]
    lines.append({"type": "result", "subtype": "success", "is_error": False, "session_id": session,
                  "num_turns": 1, "duration_ms": runs * 10_000, "result": "ok"})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def must_keep(spans) -> bool:
    """The gateway's keep_errors / keep_failed_workflows policies, for one trace's spans."""
    return any(s.status_code == 2 or s.attributes.get("workflow.status") in ("failed", "incomplete") for s in spans)


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    """Start Jaeger, two gateways, the agent; send both streams through the agent; return
    {reference: spans sent, gateways: [(Service, ports, tempo receiver)], jaeger_ports}."""
    realstack.require_binaries()
    work = tmp_path_factory.mktemp("real-stack-scale")
    started = []
    with GrpcReceiver() as tempo_a, GrpcReceiver() as tempo_b:
        try:
            jaeger, jports = realstack.start_jaeger(work)
            started.append(jaeger)
            gateways = []
            for name, tempo in (("gateway-a", tempo_a), ("gateway-b", tempo_b)):
                svc, ports = realstack.start_collector(
                    CONF / "otelcol-gateway.yaml", work, name,
                    env={"OTELBRIDGE_JAEGER_ENDPOINT": f"127.0.0.1:{jports['grpc']}",
                         "OTELBRIDGE_TEMPO_ENDPOINT": f"127.0.0.1:{tempo.port}"},
                    changes={"processors": {"tail_sampling": {"decision_wait": f"{DECISION_WAIT_S}s"},
                                            "batch": {"timeout": BATCH_TIMEOUT}}},
                    wait=False)
                started.append(svc)
                gateways.append((svc, ports, tempo))
            realstack.ready(*(svc for svc, _, _ in gateways))  # the two start side by side
            static = {"hostnames": [f"127.0.0.1:{ports['grpc']}" for _, ports, _ in gateways]}
            agent, aports = realstack.start_collector(
                CONF / "otelcol-agent-lb.yaml", work, "agent",
                changes={"exporters": {"load_balancing": {"resolver": {"dns": None, "static": static}}},
                         "processors": {"batch": {"timeout": BATCH_TIMEOUT}}})
            started.append(agent)
            # each stream twice, all four runs side by side: to a test receiver (the reference
            # spans; deterministic ids make them the ones the agent gets) and to the agent
            streams = (EXAMPLE.read_bytes(), workflows_stream(RUNS))
            args = ["--deterministic-ids", "--protocol", "http/protobuf", "--endpoint"]
            with HttpReceiver() as rx:
                runs = [(args + [endpoint], data) for data in streams
                        for endpoint in (rx.endpoint, f"http://127.0.0.1:{aports['http']}")]
                for proc in run_otelbridge_together(runs):
                    assert proc.returncode == 0, proc.stderr
                reference = rx.received.spans()
            yield {"reference": reference, "gateways": gateways, "jaeger_ports": jports, "agent": agent}
        finally:
            realstack.stop_all(started)


def own_counts(telemetry_port: int) -> dict[str, float]:
    """A gateway's own telemetry: spans its otlp receiver accepted, traces its tail_sampling
    decided (each decision runs every policy once: the runs of its first policy) and kept."""
    first_policy = yaml.safe_load((CONF / "otelcol-gateway.yaml").read_text())[
        "processors"]["tail_sampling"]["policies"][0]["name"]
    out = {"accepted": 0.0, "decided": 0.0, "kept": 0.0}
    for name, labels, value in realstack.prometheus_samples(telemetry_port):
        name = name.removesuffix("_total")
        if name == "otelcol_receiver_accepted_spans" and labels.get("receiver") == "otlp":
            out["accepted"] += value
        elif name == "otelcol_processor_tail_sampling_sampling_policy_execution_count" and \
                labels.get("policy") == first_policy:
            out["decided"] += value
        elif name == "otelcol_processor_tail_sampling_global_count_traces_sampled" and \
                labels.get("sampled") == "true":
            out["kept"] += value
    return out


def by_trace(spans) -> dict[str, list]:
    out: dict[str, list] = {}
    for s in spans:
        out.setdefault(s.trace_id, []).append(s)
    return out


def poll(condition, what: str, timeout: float):
    """``condition()`` until it returns something true (returned), or fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return result


@pytest.fixture(scope="module")
def decided(scale):
    """Once the gateways have decided every trace (their own counts say so) and the traces they
    kept have reached Jaeger and their Tempo stand-ins: per trace id, the reference spans,
    Jaeger's spans and each gateway's exported spans; each gateway's own counts."""
    reference = by_trace(scale["reference"])
    ports = [p["telemetry"] for _, p, _ in scale["gateways"]]
    query = scale["jaeger_ports"]["query"]
    poll(lambda: sum(own_counts(p)["decided"] for p in ports) >= len(reference),
         "the gateways did not decide every trace", timeout=DECISION_WAIT_S + 30)

    def exported():
        # each gateway's counts read again: one may count its kept traces after the other has
        # exported them (a busy machine), and each must have exported all it kept
        counts = [own_counts(p) for p in ports]
        kept = sum(x["kept"] for x in counts)
        jaeger = {t: jaeger_spans(query, t) for t in reference}
        gateways = [by_trace(tempo.received.spans()) for _, _, tempo in scale["gateways"]]
        whole = [t for t, spans in jaeger.items() if len(spans) == len(reference[t])]
        done = len(whole) >= kept and all(len(g) >= x["kept"] for g, x in zip(gateways, counts))
        return done and {"jaeger": jaeger, "gateways": gateways, "counts": counts, "kept": kept}

    found = poll(exported, "the kept traces did not reach Jaeger and Tempo", timeout=20)
    return {"reference": reference, **found}


def test_every_trace_goes_whole_through_one_gateway(decided):
    reference, gateways = decided["reference"], decided["gateways"]
    # both gateways got a share of the load, and together every span once
    accepted = [c["accepted"] for c in decided["counts"]]
    assert all(n > 0 for n in accepted) and sum(accepted) == sum(len(v) for v in reference.values()), accepted
    # what each gateway exported after sampling: whole traces, each at one gateway only
    for trace_id, spans in reference.items():
        holders = [g[trace_id] for g in gateways if trace_id in g]
        if holders:
            (held,) = holders
            assert sorted(s.span_id for s in held) == sorted(s.span_id for s in spans)
    # each gateway exported exactly the traces its own sampler kept (how the kept ones split
    # between the two depends on the ring, placed by endpoints whose ports are chosen per run)
    assert [len(g) for g in gateways] == [x["kept"] for x in decided["counts"]]
    assert all(x["decided"] > 0 for x in decided["counts"]), decided["counts"]


def test_tail_sampling_decision_is_honoured(decided):
    """Traces with an error or a failed workflow are kept whole; the healthy ones follow
    keep_fraction (most dropped: 10 % kept); no trace arrives in part; Jaeger shows exactly what
    the gateways exported."""
    reference, jaeger, gateways = decided["reference"], decided["jaeger"], decided["gateways"]
    kept = {t for t, spans in jaeger.items() if spans}
    assert len(kept) == decided["kept"]  # the samplers' own count of kept traces
    for trace_id, spans in reference.items():
        got = jaeger[trace_id]
        if must_keep(spans):
            assert trace_id in kept, [s.name for s in spans]
        if got:
            assert sorted(s.span_id for s in got) == sorted(s.span_id for s in spans), trace_id
        assert (trace_id in kept) == any(trace_id in g for g in gateways), trace_id
    failing = [t for t, spans in reference.items() if must_keep(spans)]
    healthy = [t for t, spans in reference.items() if not must_keep(spans)]
    assert len(failing) == 1 + RUNS // 2 and len(healthy) >= RUNS // 2
    dropped = [t for t in healthy if t not in kept]
    assert dropped, "keep_fraction (10 %) kept every healthy trace"
    (example_root,) = [s for t in kept for s in jaeger[t] if s.name.startswith("invoke_workflow deep-research")]
    assert example_root.attributes["workflow.status"] == "failed"


def test_agent_and_gateways_start_without_warnings(scale):
    for svc in (scale["agent"], *(g for g, _, _ in scale["gateways"])):
        assert realstack.startup_warnings(svc) == [], svc.name
