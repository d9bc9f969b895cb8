"""``--exporter otlp,file``: the OTLP/JSON lines file, parsed back as OTLP/JSON, holds the same
spans the gRPC receiver got in the same run; CI resource attributes in GitHub Actions."""

from __future__ import annotations

import base64
import json
import os
import re
import stat

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from tests.conftest import (session_name, EXAMPLES, FIXTURES, clean_env, needs_fixtures, run_bridge,
                            session_span_count, spans_of_trace, workflow_facts)
from tests.receivers import GrpcReceiver, Received

CBC = EXAMPLES / "cbc-workflow.jsonl"
_, _AGENTS, _PHASES, _, _ = workflow_facts(CBC)
#: the workflow's trace (root, phases, agents) and the session's (its span, its one turn)
N_WORKFLOW = 1 + len(_PHASES) + len(_AGENTS)
N_SESSION = session_span_count(CBC.read_bytes())

GITHUB_ENV = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_WORKFLOW": "agents",
    "GITHUB_RUN_ID": "9753949763",
    "GITHUB_RUN_ATTEMPT": "2",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "acme/widgets",
    "GITHUB_JOB": "research",
    "GITHUB_REF": "refs/pull/42/merge",
    "GITHUB_REF_NAME": "42/merge",
    "GITHUB_HEAD_REF": "feature/x",
    "GITHUB_REF_TYPE": "branch",
    "GITHUB_SHA": "9d59409acf479dfa0df1aa568182e43e43df8bbe",
    "GITHUB_BASE_REF": "main",
}
HEAD_SHA, BASE_SHA = "5f3c2a17e0b94d68c1a2b3c4d5e6f708192a3b4c", "0e1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5"


def _b64_ids(doc: dict) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if doc.get(key):
            raw = bytes.fromhex(doc[key])  # OTLP/JSON ids are hex: a base64 reading would garble them
            assert len(raw) == (16 if key == "traceId" else 8)
            doc[key] = base64.b64encode(raw).decode()


def read_otlp_json_lines(path) -> Received:
    """Each line an OTLP/JSON TracesData: hex ids turned into protobuf JSON's base64, then
    parsed with json_format into the protobuf message the receivers hold."""
    received = Received()
    for line in path.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    # times are strings in OTLP/JSON (64-bit integers)
                    assert isinstance(span["startTimeUnixNano"], str)
                    assert isinstance(span["kind"], int)  # enums as integers
                    _b64_ids(span)
                    for link in span.get("links", []):
                        _b64_ids(link)
        traces = ParseDict(doc, TracesData())
        received.add(ExportTraceServiceRequest(resource_spans=traces.resource_spans))
    return received


def test_file_and_grpc_get_the_same_spans(tmp_path):
    out = tmp_path / "spans.jsonl"
    data = CBC.read_bytes()
    with GrpcReceiver() as rx:
        event = tmp_path / "event.json"  # the pull request's payload: its head commit, not the merge's
        event.write_text(json.dumps({"number": 42, "pull_request": {
            "head": {"ref": "feature/x", "sha": HEAD_SHA}, "base": {"ref": "main", "sha": BASE_SHA}}}))
        env = clean_env(**GITHUB_ENV, GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event))
        proc = run_bridge(["--exporter", "otlp,file", "--output", str(out), "--protocol", "grpc",
                           "--endpoint", rx.endpoint], data, env=env)
        got = rx.received.wait_for(N_WORKFLOW + N_SESSION, timeout=5)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data  # the file exporter never writes to stdout
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    from_file = read_otlp_json_lines(out).spans()
    assert len(got) == len(from_file) == N_WORKFLOW + N_SESSION
    assert (N_WORKFLOW, N_SESSION) == (6, 2)  # root, 2 phases, 3 agents; session, turn 1
    assert len(spans_of_trace(got, "invoke_workflow ")) == N_WORKFLOW
    assert sorted(s.name for s in spans_of_trace(got, "invoke_agent ")) == sorted([session_name(data), "turn 1"])

    def key(s):
        return s.span_id

    for a, b in zip(sorted(got, key=key), sorted(from_file, key=key)):
        assert a == b  # names, ids, parents, times in ns, attributes, status, events, resource
    ids = {s.span_id for s in got}
    assert all(s.parent_span_id in ids for s in from_file if s.parent_span_id)

    resource = got[0].resource
    assert resource["cicd.pipeline.name"] == "agents"
    assert resource["cicd.pipeline.run.id"] == "9753949763"
    assert resource["cicd.pipeline.run.url.full"] == \
        "https://github.com/acme/widgets/actions/runs/9753949763/attempts/2"
    assert resource["cicd.pipeline.task.name"] == "research"
    assert resource["vcs.repository.url.full"] == "https://github.com/acme/widgets"
    assert resource["vcs.repository.name"] == "widgets"
    assert resource["vcs.ref.head.name"] == "feature/x"
    assert resource["vcs.ref.head.revision"] == HEAD_SHA != GITHUB_ENV["GITHUB_SHA"]
    assert (resource["vcs.ref.base.name"], resource["vcs.ref.base.revision"]) == ("main", BASE_SHA)
    assert resource["vcs.ref.type"] == "branch"
    assert resource["vcs.change.id"] == "42"
    assert resource["vcs.provider.name"] == "github"


def test_file_appends_and_second_run_adds_lines(tmp_path):
    out = tmp_path / "spans.jsonl"
    out.write_text("")
    os.chmod(out, 0o644)
    for _ in range(2):
        proc = run_bridge(["--exporter", "file", "--output", str(out), "--deterministic-ids"],
                          CBC.read_bytes())
        assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600  # tightened
    spans = read_otlp_json_lines(out).spans()
    n = N_WORKFLOW + N_SESSION
    assert len(spans) == 2 * n and len({s.span_id for s in spans}) == n  # same ids both runs


def test_output_stdout_refused():
    proc = run_bridge(["--exporter", "file", "--output", "-"], b"")
    assert proc.returncode == 2 and b"stdout" in proc.stderr and proc.stdout == b""


def test_unwritable_output_still_passes_the_stream(tmp_path):
    data = CBC.read_bytes()
    proc = run_bridge(["--exporter", "file", "--output", str(tmp_path / "no" / "such" / "f")], data)
    assert proc.returncode == 0 and proc.stdout == data
    assert b"cannot open --output" in proc.stderr


def test_a_fifo_nobody_reads_is_said_not_waited_for(tmp_path):
    """``--output`` and ``--report`` naming a FIFO with no reader: opening it for writing would
    wait for a reader (the run held past its flush bound; wrapper mode never ended). Each is
    one line; the stream, the child and its status go on; ``GITHUB_OUTPUT`` alike."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = (EXAMPLES / "claude-code-session.jsonl").read_bytes()
    script = f"cat {EXAMPLES / 'claude-code-session.jsonl'}; exit 3"
    proc = run_bridge(["--exporter", "file", "--output", str(fifo), "--report", str(fifo),
                       "--", "sh", "-c", script], env=clean_env(GITHUB_OUTPUT=str(fifo)), timeout=30)
    assert (proc.returncode, proc.stdout) == (3, data)
    err = proc.stderr.decode()
    assert err.count("a FIFO nobody reads") == 3, err
    assert "did not finish in time" not in err


def test_flush_timeout_0_still_writes_the_file_and_counts_it(tmp_path):
    """--flush-timeout 0 means no collector to wait for; a file needs none. The file held all
    spans while the counts said some dropped (read at the deadline, before the writer ended),
    and --fail-on-export-error then failed the job. A local exporter gets its second: the file
    and the counts agree, every span exported."""
    out, stats_path = tmp_path / "spans.jsonl", tmp_path / "stats.json"
    session = EXAMPLES / "claude-code-session.jsonl"
    proc = run_bridge(["--flush-timeout", "0", "--fail-on-export-error", "--exporter", "file",
                       "--output", str(out), "--stats-json", str(stats_path), "--",
                       "sh", "-c", f'cat "{session}"; exec >&-; sleep 1'], env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == session.read_bytes()
    written = sum(len(ss["spans"]) for line in out.read_text().splitlines()
                  for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"])
    stats = json.loads(stats_path.read_text())
    assert written == stats["spans_exported"] == stats["spans_started"] > 0
    assert stats["spans_dropped"] == 0


@needs_fixtures()
def test_a_full_disk_leaves_no_half_line_and_is_said_once(tmp_path):
    """The disk fills while spans are written (a file size limit of 20,000 bytes stands for
    it): the batch that did not fit leaves no half line for the next to follow, so the file
    stays OTLP/JSON lines; the failure is said once and named in the exit line; the stream
    passes whole."""
    import resource
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # (a write past the limit fails instead)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    out = tmp_path / "spans.jsonl"
    data = (FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "otelbridge", "--exporter", "file", "--output", str(out)],
                          input=data, capture_output=True, cwd=ROOT, preexec_fn=limited,
                          env=clean_env(OTEL_BSP_MAX_EXPORT_BATCH_SIZE="3"), timeout=60)
    assert proc.returncode == 0 and proc.stdout == data
    written = out.read_bytes()
    assert 0 < len(written) <= 20_000 and written.endswith(b"\n")
    kept = sum(len(s["spans"]) for line in written.splitlines()
               for rs in json.loads(line)["resourceSpans"] for s in rs["scopeSpans"])
    err = proc.stderr.decode()
    total = int(re.search(r"spans (\d+) built", err).group(1))
    assert err.count("raised OSError (File too large)") == 2, err  # its line, and the exit line's cause
    assert f"{kept} exported, {total - kept} dropped" in err and 0 < kept < total
