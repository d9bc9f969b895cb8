"""An exporter that cannot be set up (a TLS file missing or a directory, a compression it
refuses, an ``--output`` that cannot be opened, an exporter otelbridge lacks) is one line on
stderr naming what is wrong; only that exporter is out: every byte passes, the stream is decoded,
spans are built for the waterfall, ``--report`` and the job outputs, and the counts say where
they went (``N not exported (REASON)``). ``--fail-on-export-error`` gives 1 when spans built to be
exported reached no exporter asked for. otelbridge runs as a real subprocess; spans are checked
at real OTLP receivers and in the files written."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import EXAMPLES, ROOT, clean_env, run_bridge
from tests.receivers import GrpcReceiver

SESSION = EXAMPLES / "claude-code-session.jsonl"
DATA = SESSION.read_bytes()
#: spans SESSION gives (the README's waterfall)
SPANS = 18
DEAD_TLS = "https://127.0.0.1:9"


def plain_env(tmp_path, **extra: str) -> dict[str, str]:
    """:func:`clean_env` with this test's own ``GITHUB_OUTPUT`` (no runner's step summary)."""
    env = {k: v for k, v in clean_env(**extra).items() if not k.startswith("GITHUB_")}
    env["GITHUB_OUTPUT"] = str(tmp_path / "github_output")
    return env


def run_with_reports(tmp_path, args: list[str], env: dict[str, str], data: bytes = DATA):
    """otelbridge ARGS with ``--report``, ``--stats-json``, ``--fail-on-export-error`` and
    ``GITHUB_OUTPUT``; (process, stderr lines, stats, report text, job outputs)."""
    report, stats = tmp_path / "report.html", tmp_path / "stats.json"
    proc = run_bridge([*args, "--flush-timeout", "1", "--fail-on-export-error", "--report", str(report),
                       "--stats-json", str(stats)], data, env=env)
    outputs = dict(l.split("=", 1) for l in (tmp_path / "github_output").read_text().splitlines())
    return (proc, proc.stderr.decode().splitlines(), json.loads(stats.read_text()),
            report.read_text(), outputs)


BROKEN = [  # (args, env, the variable or flag named, the words of its line)
    (["--protocol", "grpc", "--endpoint", DEAD_TLS], {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/tmp"},
     "OTEL_EXPORTER_OTLP_CERTIFICATE", ["'/tmp'", "CA certificate file is a directory"]),
    (["--endpoint", DEAD_TLS], {"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "/nonexistent/ca.pem"},
     "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", ["'/nonexistent/ca.pem'", "does not exist"]),
    (["--protocol", "grpc", "--endpoint", DEAD_TLS], {"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/nonexistent/k"},
     "OTEL_EXPORTER_OTLP_CLIENT_KEY", ["client key file does not exist"]),
    (["--exporter", "file", "--output", "/nonexistent/x"], {},
     "--output", ["cannot open --output '/nonexistent/x': No such file or directory"]),
    ([], {"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER", ["'zipkin' is not supported"]),
]


@pytest.mark.parametrize("args,env,named,words", BROKEN, ids=[b[2] for b in BROKEN])
def test_an_exporter_that_cannot_be_set_up_is_out_and_the_reports_are_still_built(
        tmp_path, args, env, named, words):
    proc, err, stats, report, outputs = run_with_reports(tmp_path, args, plain_env(tmp_path, **env))
    assert proc.stdout == DATA
    assert proc.returncode == 1, err  # --fail-on-export-error: no span reached an exporter asked for
    said = [l for l in err if named in l]
    assert len(said) == 1, err
    for word in words:
        assert word in said[0]
    assert said[0].endswith("spans are built for the reports but not exported"), said
    assert not any("cannot set up tracing" in l for l in err), err
    # decoded and built, and the counts say where the spans went
    counts = next(l for l in err if " bytes, " in l)
    assert (f"{len(DATA)} bytes, 34 lines, 33 decoded, 1 not wanted, 0 not decoded (behind), 0 bad, "
            f"0 overlong; spans {SPANS} built, 0 exported, 0 dropped, {SPANS} not exported "
            "(no usable exporter); ") in counts
    assert (stats["lines_decoded"], stats["spans_started"], stats["spans_not_exported"]) == (33, SPANS, SPANS)
    assert stats["spans_not_exported_reason"] == "no usable exporter"
    assert stats["spans_exported"] == stats["spans_dropped"] == stats["spans_sampled_out"] == 0
    # the reports: the HTML page and the job outputs of the session
    assert re.fullmatch(r"[0-9a-f]{32}", outputs["trace_id"]) and outputs["trace_id"] in report
    assert "invoke_agent claude-code" in report and outputs["total_cost_usd"] == "0.0141"


def test_exporter_none_is_counted_as_asked_and_is_no_failure(tmp_path):
    proc, err, stats, report, outputs = run_with_reports(tmp_path, ["--exporter", "none"],
                                                         plain_env(tmp_path))
    assert proc.returncode == 0 and proc.stdout == DATA
    assert err[-1].endswith(f"spans {SPANS} built, 0 exported, 0 dropped, {SPANS} not exported "
                            "(exporter none); 0 late events ignored")
    assert (stats["spans_not_exported"], stats["spans_not_exported_reason"]) == (SPANS, "exporter none")
    assert outputs["trace_id"] in report


def test_a_tls_file_left_out_leaves_the_file_exporter_writing(tmp_path):
    traces = tmp_path / "traces.jsonl"
    env = plain_env(tmp_path, OTEL_EXPORTER_OTLP_CERTIFICATE=str(tmp_path / "ca.pem"))
    proc, err, stats, _, _ = run_with_reports(
        tmp_path, ["--exporter", "otlp,file", "--output", str(traces), "--endpoint", DEAD_TLS], env)
    assert proc.stdout == DATA
    said = [l for l in err if "OTEL_EXPORTER_OTLP_CERTIFICATE" in l]
    assert len(said) == 1 and said[0].endswith("the otlp exporter is left out, using file"), err
    written = [s for line in traces.read_text().splitlines()
               for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(written) == stats["spans_exported"] == stats["spans_started"] == SPANS
    assert (stats["spans_dropped"], stats["spans_not_exported"]) == (0, 0)
    # the file has them all; the otlp exporter asked for has none: said, and exit 1
    assert "otelbridge: export incomplete (otlp not set up: it took none of the 18 spans)" in err
    assert proc.returncode == 1


def test_a_compression_the_grpc_exporter_refuses_is_ignored_and_spans_arrive(tmp_path):
    with GrpcReceiver() as rx:
        env = plain_env(tmp_path, OTEL_EXPORTER_OTLP_COMPRESSION="bogus", OTEL_BSP_SCHEDULE_DELAY="50")
        proc, err, stats, _, _ = run_with_reports(tmp_path, ["--protocol", "grpc", "--endpoint", rx.endpoint],
                                                  env)
        received = rx.received.spans()
    assert proc.returncode == 0 and proc.stdout == DATA, err
    assert [l for l in err if "COMPRESSION" in l] == [
        "otelbridge: OTEL_EXPORTER_OTLP_COMPRESSION='bogus' is not an OTLP grpc compression (gzip); "
        "ignored, no compression"]
    assert len(received) == stats["spans_exported"] == SPANS
    assert "invoke_agent claude-code" in {s.name for s in received}


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_CERTIFICATE",
                                      "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"])
def test_a_missing_tls_file_is_said_once_at_start_even_without_input(protocol, variable):
    env = {k: v for k, v in clean_env(**{variable: "/nope"}).items() if not k.startswith("GITHUB_")}
    proc = run_bridge(["--protocol", protocol, "--endpoint", DEAD_TLS, "--flush-timeout", "1"],
                      b"", env=env)
    assert proc.returncode == 0 and proc.stdout == b""
    err = proc.stderr.decode().splitlines()
    assert len(err) == 3, err  # that line, the counts and the empty input: nothing of the SDK's
    what = "CA certificate" if variable.endswith("_CERTIFICATE") and "CLIENT" not in variable \
        else "client certificate"
    assert err[0] == (f"otelbridge: {variable}='/nope': the {what} file does not exist; the otlp "
                      "exporter is left out, spans are built for the reports but not exported")
    assert err[1].startswith("otelbridge: 0 bytes, 0 lines")
    assert err[2].startswith("otelbridge: the input was empty, so nothing was traced")


def test_replay_builds_its_reports_when_the_exporter_cannot_be_set_up(tmp_path):
    report, stats_path = tmp_path / "report.html", tmp_path / "stats.json"
    env = clean_env(OTEL_EXPORTER_OTLP_CERTIFICATE="/tmp")
    proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", DEAD_TLS, "--report", str(report),
                       "--stats-json", str(stats_path), str(SESSION)], env=env)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode().splitlines()
    assert [l for l in err if "OTEL_EXPORTER_OTLP_CERTIFICATE" in l] == [
        "otelbridge: OTEL_EXPORTER_OTLP_CERTIFICATE='/tmp': the CA certificate file is a directory; the "
        "otlp exporter is left out, spans are built for the reports but not exported"]
    stats = json.loads(stats_path.read_text())
    assert (stats["spans_started"], stats["spans_not_exported"]) == (SPANS, SPANS)
    assert "invoke_agent claude-code" in report.read_text()


def test_follow_builds_its_reports_when_the_exporter_cannot_be_set_up(tmp_path):
    log, state, report = tmp_path / "agent.jsonl", tmp_path / "state", tmp_path / "report.html"
    log.write_bytes(DATA)
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbridge", "follow", str(log), "--from-start", "--state-dir", str(state),
         "--poll-interval", "0.05", "--protocol", "grpc", "--endpoint", DEAD_TLS, "--report", str(report),
         "--fail-on-export-error"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env=clean_env(OTEL_EXPORTER_OTLP_CERTIFICATE="/tmp"))
    until = time.monotonic() + 20
    while not (state.is_dir() and any(state.iterdir())) and time.monotonic() < until:
        time.sleep(0.05)  # the offset file: the file was read
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    lines = err.decode().splitlines()
    assert proc.returncode == 1, lines  # --fail-on-export-error: no span reached an exporter
    assert [l for l in lines if "OTEL_EXPORTER_OTLP_CERTIFICATE" in l] == [
        "otelbridge: OTEL_EXPORTER_OTLP_CERTIFICATE='/tmp': the CA certificate file is a directory; the "
        "otlp exporter is left out, spans are built for the reports but not exported"]
    assert f"spans {SPANS} built, 0 exported, 0 dropped, {SPANS} not exported (no usable exporter);" in lines[-2]
    assert lines[-1] == f"otelbridge: export incomplete (otlp not set up: it took none of the {SPANS} spans)"
    assert "invoke_agent claude-code" in report.read_text()


@pytest.mark.parametrize("setting", [
    {"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=abc,oops"},  # one header it cannot read
])
def test_a_warning_about_a_setting_leaves_the_export_error_its_line(setting):
    """The SDK's warning about a setting is said, and so is the collector's refusal (401)
    after it: the one export-failure line is not spent on the setting."""
    from tests.receivers import HttpReceiver

    with HttpReceiver(status=401) as rx:
        proc = run_bridge(["--summary", "never", "--endpoint", rx.endpoint, "--flush-timeout", "5"],
                          DATA, env=clean_env(**setting))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    cause = "HTTP 401: the collector wants credentials (OTEL_EXPORTER_OTLP_HEADERS)"
    assert err.count(f"otelbridge: export to {rx.endpoint} failed: {cause} (further export messages "
                     "suppressed)") == 1
    assert f"otelbridge: export incomplete ({rx.endpoint}: {SPANS} of {SPANS} not confirmed; {cause})" in err
    assert "no '=' after the name" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("status", "cause"), [
    (429, "HTTP 429: the collector limits how much it takes (rate limited: send less, or raise its limits)"),
    (503, "HTTP 503: the collector is unavailable (overloaded or starting)"),
])
def test_a_status_the_sdk_retries_is_named_when_it_gives_up(status, cause):
    """The SDK retries 429 and 503 and then logs that it gave up "due to timeout, max retries
    or shutdown", naming no status: the answer's status is the cause said."""
    from tests.receivers import HttpReceiver

    with HttpReceiver(status=status) as rx:
        proc = run_bridge(["--summary", "never", "--endpoint", rx.endpoint, "--flush-timeout", "2"],
                          DATA, env=clean_env())
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    assert err.count(f"otelbridge: export to {rx.endpoint} failed: {cause}") == 1, err
    assert "not confirmed; " in err and err.rstrip().endswith(f"{cause})"), err


def test_quiet_leaves_out_the_counts_line_but_not_lost_spans():
    proc = run_bridge(["-q", "--summary", "never", "--endpoint", "http://127.0.0.1:9",
                       "--flush-timeout", "1"], DATA, env=clean_env())
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    # the SDK retries a refused connection for its export timeout (10 s): busy at the deadline
    assert (f"export incomplete (http://127.0.0.1:9: {SPANS} of {SPANS} not confirmed; "
            "still retrying when --flush-timeout (1 s) ran out; connection refused: is a collector "
            "listening there?)") in err
    assert " bytes, " not in err  # the counts line


def test_a_refused_default_endpoint_says_none_was_set():
    """No endpoint set and no collector on localhost: the export error says the endpoint is the
    default and what to set, or --exporter none (once, not again at exit); the stream is whole."""
    import socket

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 4318)) == 0:
            pytest.skip("something listens on localhost:4318 here")
    proc = run_bridge(["--summary", "never", "--flush-timeout", "1"], DATA, env=clean_env())
    err = proc.stderr.decode().splitlines()
    assert proc.returncode == 0 and proc.stdout == DATA
    hint = ("connection refused: is a collector listening there? (no endpoint is set, this is the default: "
            "set --endpoint or OTEL_EXPORTER_OTLP_ENDPOINT, or use --exporter none where there is no collector)")
    assert err[0] == f"otelbridge: export to http://localhost:4318 failed: {hint} (further export messages suppressed)"
    assert err[-1].startswith(f"otelbridge: export incomplete (http://localhost:4318: {SPANS} of {SPANS} not confirmed")
    # the hint once: the exit line names the cause alone
    assert err[-1].endswith("; connection refused: is a collector listening there?)") and len(err) == 3


def test_tls_to_a_plain_text_collector_is_not_retried():
    """``https://`` to a plain-text collector cannot heal: said at once and given up (it was
    retried until --flush-timeout, 5 s of every run of a misconfigured job)."""
    from tests.receivers import HttpReceiver

    with HttpReceiver() as rx:
        endpoint = rx.endpoint.replace("http://", "https://")
        proc = run_bridge(["--summary", "never", "--endpoint", endpoint], DATA, env=clean_env())
    assert proc.returncode == 0 and proc.stdout == DATA
    cause = "TLS to a plain-text endpoint (WRONG_VERSION_NUMBER): use http://"
    err = proc.stderr.decode().splitlines()
    assert err[0] == f"otelbridge: export to {endpoint} failed: {cause} (further export messages suppressed)"
    # given up, not "still retrying when --flush-timeout (5 s) ran out"
    assert err[-1] == f"otelbridge: export incomplete ({endpoint}: {SPANS} of {SPANS} not confirmed; {cause})"


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json", "grpc"])
def test_spans_a_collector_rejects_in_a_partial_success_are_lost_not_exported(protocol):
    """OTLP's partial success: the collector answers the export, but rejects some of its
    spans (too old, too large) and says why. The SDK reads no answer; the rejected spans are
    counted as not exported, the collector's reason said once, and --fail-on-export-error
    fails the run. The stream is whole."""
    from tests.receivers import HttpReceiver

    receiver = GrpcReceiver if protocol == "grpc" else HttpReceiver
    with receiver(rejecting=5, message="span timestamp too old") as rx:
        proc = run_bridge(["--summary", "never", "--endpoint", rx.endpoint, "--protocol", protocol,
                           "--fail-on-export-error", "--flush-timeout", "5"], DATA, env=clean_env())
        sizes = [sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
                 for req in rx.received.requests]
    err = proc.stderr.decode()
    assert proc.stdout == DATA and sum(sizes) == SPANS
    rejected = sum(min(5, n) for n in sizes)
    assert proc.returncode == 1, err
    first = f"the collector rejected {min(5, sizes[0])} of {sizes[0]} spans: span timestamp too old"
    assert err.count(f"otelbridge: export to {rx.endpoint}: {first}") == 1, err
    assert (f"{SPANS - rejected} exported, {rejected} dropped") in err, err
    assert f"export incomplete ({rx.endpoint}: {rejected} of {SPANS} not confirmed; the collector rejected" in err


def test_a_collector_s_rejection_message_is_cleaned_on_every_line_that_shows_it():
    """The collector's message (which may quote the spans it rejected, or come from a proxy)
    reaches stderr without an escape sequence or a secret, on the first line and on the exit
    line alike."""
    from tests.receivers import HttpReceiver

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with HttpReceiver(rejecting=1, message=f"bad span \x1b]0;TITLE\x07\x1b[31mRED {token}") as rx:
        proc = run_bridge(["--summary", "never", "--endpoint", rx.endpoint], DATA, env=clean_env())
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    lines = [line for line in err.splitlines() if "the collector rejected" in line]
    assert len(lines) == 2 and lines[-1].startswith("otelbridge: export incomplete (")
    for line in lines:
        assert "bad span" in line and "[REDACTED:github_token]" in line, line
        assert token[4:] not in line and "\x1b" not in line and "\x07" not in line, line


def test_a_partial_success_that_only_warns_is_said_and_every_span_counts():
    """A partial success rejecting none, with a message: a warning, said once; every span is
    exported."""
    from tests.receivers import HttpReceiver

    with HttpReceiver(message="attribute values truncated") as rx:
        proc = run_bridge(["--summary", "never", "--endpoint", rx.endpoint, "--fail-on-export-error"],
                          DATA, env=clean_env())
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    assert err.count(f"otelbridge: export to {rx.endpoint}: the collector took every span but warned: "
                     "attribute values truncated") == 1, err
    assert f"{SPANS} exported, 0 dropped" in err


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE"])
def test_grpc_to_an_http_endpoint_is_plaintext_whatever_insecure_says(variable):
    """OTEL_EXPORTER_OTLP_INSECURE applies only to a gRPC endpoint without a scheme (the OTLP
    exporter specification): with http:// and INSECURE=false every span reaches a plaintext
    collector, and nothing is said."""
    with GrpcReceiver() as rx:
        proc = run_bridge(["--summary", "never", "--protocol", "grpc", "--flush-timeout", "5"], DATA,
                          env=clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, **{variable: "false"}))
        spans = rx.received.wait_for(SPANS, timeout=5)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    assert len(spans) == SPANS
    assert f"{SPANS} exported, 0 dropped" in err and "TLS" not in err, err


def test_a_proxy_that_fails_is_named_not_the_collector():
    """OTLP/HTTP through HTTP_PROXY (as requests reads it) to a proxy that is not there: the
    cause names the proxy and NO_PROXY, not the collector, which is up."""
    from tests.receivers import HttpReceiver

    with HttpReceiver() as rx:
        proc = run_bridge(["--summary", "never", "--endpoint", rx.endpoint, "--flush-timeout", "3"], DATA,
                          env=clean_env(HTTP_PROXY="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9",
                                        NO_PROXY="", no_proxy="", OTEL_EXPORTER_OTLP_TIMEOUT="2000"))
        assert rx.received.requests == []
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    assert "the proxy failed (HTTP_PROXY/HTTPS_PROXY; NO_PROXY naming the collector's host bypasses it)" in err, err
    assert "is a collector listening there" not in err


def test_a_file_exporter_on_a_full_disk_says_why():
    proc = run_bridge(["--summary", "never", "--exporter", "file", "--output", "/dev/full"], DATA, env=clean_env())
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    assert "export to /dev/full raised OSError (No space left on device)" in err, err


def test_a_full_export_queue_and_an_attribute_limit_are_said_with_their_settings():
    """The SDK's "Queue full, dropping Span." and "Attributes dict is full" name no setting:
    each is said once, with the variable that bounds it. The stream is whole."""
    from tests.receivers import HttpReceiver

    with HttpReceiver(delay=1.0) as rx:
        proc = run_bridge(["--summary", "never", "--endpoint", rx.endpoint, "--flush-timeout", "3"], DATA,
                          env=clean_env(OTEL_BSP_MAX_QUEUE_SIZE="1", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="1",
                                        OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT="2"))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    assert err.count("otelbridge: the export queue is full: spans are dropped while the collector takes them "
                     "slower than they come, or not at all (OTEL_BSP_MAX_QUEUE_SIZE)") == 1, err
    assert err.count("otelbridge: a span has more attributes than OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT") == 1, err
    assert "Queue full" not in err and "Attributes dict" not in err


def test_a_grpc_proxy_that_refuses_is_named_not_the_collector():
    """gRPC goes through grpc_proxy/https_proxy/http_proxy (a CI runner's): when the proxy is
    not there, the refused connection is said with the proxy and no_proxy, since the
    collector, which is up, never saw a connection."""
    with GrpcReceiver() as rx:
        proc = run_bridge(["--summary", "never", "--protocol", "grpc", "--endpoint", rx.endpoint,
                           "--flush-timeout", "2"], DATA,
                          env=clean_env(grpc_proxy="http://127.0.0.1:9", no_proxy="", NO_PROXY=""))
        assert rx.received.requests == []
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == DATA
    assert ("connection refused: is a collector listening there? (through the proxy http://127.0.0.1:9 "
            "(grpc_proxy/https_proxy/http_proxy): no_proxy naming the collector's host bypasses it)") in err, err


def test_a_loopback_endpoint_flag_without_a_scheme_exports_over_http():
    """``--endpoint 127.0.0.1:PORT`` (no ``http://``), as a user types it for a local collector:
    read as ``http://…``, said, and the spans reach it; the run is not a usage error."""
    from tests.receivers import HttpReceiver

    with HttpReceiver() as rx:
        address = rx.endpoint.removeprefix("http://")
        proc = run_bridge(["--summary", "never", "--endpoint", address], DATA, env=clean_env())
        spans = rx.received.wait_for(SPANS, timeout=5)
    assert proc.returncode == 0 and proc.stdout == DATA and len(spans) == SPANS
    assert proc.stderr.decode().splitlines()[0] == (
        f"otelbridge: --endpoint {address!r} has no scheme: read as http://{address} (a loopback "
        "address, plaintext); write the scheme, http:// or https://")
