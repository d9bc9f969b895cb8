"""The stream first, whatever the environment: an OTEL_* value otelbridge or the SDK cannot use
is one stderr line naming the variable and what is done instead; every byte passes, the wrapped
command runs and its exit status is otelbridge's. A bad command-line flag stays exit 2.
otelbridge runs as a real subprocess; spans are checked at a real OTLP/HTTP receiver."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, ROOT, clean_env, run_bridge, side_by_side
from tests.receivers import GrpcReceiver, HttpReceiver

CBC = EXAMPLES / "cbc-workflow.jsonl"
DATA = CBC.read_bytes()

#: (variables, the words the one line about them must contain)
BAD = [
    ({"OTEL_TRACES_EXPORTER": "zipkin"}, ["OTEL_TRACES_EXPORTER", "zipkin", "not exported"]),
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"},
     ["OTEL_EXPORTER_OTLP_PROTOCOL", "thrift", "using http/protobuf (the default)"]),
    ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/xml", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
     ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "using grpc (OTEL_EXPORTER_OTLP_PROTOCOL)"]),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector.invalid:4318"},
     ["OTEL_EXPORTER_OTLP_ENDPOINT", "collector.invalid:4318", "using http://localhost:4318"]),
    ({"OTEL_EXPORTER_OTLP_TIMEOUT": "ten"}, ["OTEL_EXPORTER_OTLP_TIMEOUT", "using 10000 ms"]),
    ({"OTEL_BSP_MAX_QUEUE_SIZE": "lots"}, ["OTEL_BSP_MAX_QUEUE_SIZE", "using 2048"]),
    ({"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "0"}, ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "using 512"]),
    ({"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "abc"}, ["OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "ignored"]),
    ({"OTEL_SPAN_EVENT_COUNT_LIMIT": "-3"}, ["OTEL_SPAN_EVENT_COUNT_LIMIT", "using 128"]),
    ({"OTELBRIDGE_TRACE_URL": "https://grafana.example/explore"},
     ["OTELBRIDGE_TRACE_URL", "{trace_id}", "no trace links"]),
    ({"OTEL_TRACES_SAMPLER": "bogus"}, ["OTEL_TRACES_SAMPLER", "bogus", "using parentbased_always_on"]),
    ({"OTEL_TRACES_SAMPLER_ARG": "2", "OTEL_TRACES_SAMPLER": "traceidratio"},
     ["OTEL_TRACES_SAMPLER_ARG", "'2'", "from 0 to 1", "using parentbased_always_on"]),
    ({"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "0"},
     ["OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "from 1 to", "ignored",
      "using OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT or --max-attribute-length (256 by default)"]),
    ({"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "-1"},
     ["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "from 1 to", "using --max-attribute-length (256 by default)"]),
    # the SDK refuses a delay of 0 (tracing off for the run), a queue beyond a C size, and a
    # delay past time_t in its thread (a traceback, every span dropped)
    ({"OTEL_BSP_SCHEDULE_DELAY": "0"}, ["OTEL_BSP_SCHEDULE_DELAY", "from 1 to 86400000", "using 1000 ms"]),
    ({"OTEL_BSP_MAX_QUEUE_SIZE": "99999999999999999999"}, ["OTEL_BSP_MAX_QUEUE_SIZE", "using 2048"]),
    ({"OTEL_BSP_SCHEDULE_DELAY": "10000000000000"}, ["OTEL_BSP_SCHEDULE_DELAY", "using 1000 ms"]),
    ({"OTEL_SPAN_LINK_COUNT_LIMIT": "9223372036854775808"}, ["OTEL_SPAN_LINK_COUNT_LIMIT", "using 128"]),
    ({"OTEL_SPAN_EVENT_COUNT_LIMIT": "9223372036854775808"}, ["OTEL_SPAN_EVENT_COUNT_LIMIT", "using 128"]),
    # URL-decoded, not Latin-1: the HTTP client failed every export
    ({"OTEL_EXPORTER_OTLP_HEADERS": "x-team=caf%E9,x-api-key=k"},
     ["OTEL_EXPORTER_OTLP_HEADERS", "'x-team'", "left out, the other headers are sent"]),
    # a name that is no HTTP field name: every export failed ("Invalid leading whitespace")
    ({"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k,a%0Ab=1"},
     ["OTEL_EXPORTER_OTLP_HEADERS", "'a b'", "no HTTP field name", "left out, the other headers are sent"]),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "=c"}, ["OTEL_EXPORTER_OTLP_HEADERS", "header ''", "no headers sent"]),
    # the body's own fields: the Go-built collector refused every export (HTTP 500, 400)
    ({"OTEL_EXPORTER_OTLP_HEADERS": "Content-Type=application/json"},
     ["OTEL_EXPORTER_OTLP_HEADERS", "'Content-Type'", "the OTLP/HTTP exporter sets itself", "no headers sent"]),
    # written as an HTTP request writes it: the SDK skipped it, naming neither variable nor item
    ({"OTEL_EXPORTER_OTLP_HEADERS": "Authorization: Bearer s3cr3tT0ken"},
     ["OTEL_EXPORTER_OTLP_HEADERS", "header 'Authorization': no '=' after the name",
      "authorization=Bearer%20…", "no headers sent"]),
    ({"OTEL_EXPORTER_OTLP_TIMEOUT": "1e400"}, ["OTEL_EXPORTER_OTLP_TIMEOUT", "using 10000 ms"]),
    # the SDK skipped each such item with a warning per item and per read (3 lines here)
    ({"OTEL_RESOURCE_ATTRIBUTES": "garbage,,=x,team=a"},
     ["OTEL_RESOURCE_ATTRIBUTES", "item 1 of 4: not key=value", "item 3 of 4: an empty key", "the others are used"]),
    ({"OTEL_EXPORTER_OTLP_COMPRESSION": "brotli"},
     ["OTEL_EXPORTER_OTLP_COMPRESSION", "'brotli'", "ignored, no compression"]),
    # the specification's booleans: only "true" is true; the SDK said nothing of "yes"
    ({"OTEL_SDK_DISABLED": "yes"}, ["OTEL_SDK_DISABLED", "'yes'", "read as false", "tracing stays on"]),
]


@pytest.mark.parametrize("variables,words", BAD, ids=[next(iter(v)) + "=" + next(iter(v.values()))
                                                    for v, _ in BAD])
def test_bad_value_is_one_line_and_the_stream_and_child_go_on(variables, words, tmp_path):
    marker = tmp_path / "ran"
    with HttpReceiver() as rx:
        # a collector that answers (unless the endpoint is the variable under test): the end
        # is not spent retrying a refused export
        env = clean_env(**{"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint,
                           **variables})
        proc = run_bridge(["--flush-timeout", "0.3", "--", "sh", "-c",
                           f'cat "{CBC}"; touch "{marker}"; exit 7'], env=env, timeout=60)
    assert proc.stdout == DATA  # 0 bytes lost
    assert marker.exists()  # the wrapped command ran
    assert proc.returncode == 7  # its status
    err = proc.stderr.decode().splitlines()
    said = [l for l in err if next(iter(variables)) in l]
    assert len(said) == 1, err
    assert said[0].startswith("otelbridge: ")
    for word in words:
        assert word in said[0]
    # nothing else: the SDK's own messages about the value ("Couldn't recognize sampler", ...)
    assert all(l.startswith("otelbridge: ") for l in err), err
    assert not any("Traceback" in l or "cannot set up tracing" in l for l in err), err
    assert not any(": opentelemetry." in l and "export" not in l for l in err), err


@pytest.mark.parametrize("variables,sent", [
    ({"OTEL_TRACES_SAMPLER": "traceidratio"}, 8),  # no ratio: the specification's 1.0
    ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": " "}, 8),
    ({"OTEL_TRACES_SAMPLER": " TraceIdRatio ", "OTEL_TRACES_SAMPLER_ARG": "0"}, 0),
    ({"OTEL_TRACES_SAMPLER": "always_off "}, 0),
    ({"OTEL_TRACES_SAMPLER": ""}, 8),  # empty: unset (the SDK said it recognised no sampler)
])
def test_a_valid_sampler_is_used_and_nothing_is_said(variables, sent):
    """A sampler the specification allows is one the SDK must not warn about (it logged that
    it could not read an absent ratio, and took a name with blanks around it for none)."""
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, OTEL_BSP_SCHEDULE_DELAY="50", **variables)
        proc = run_bridge(["--summary", "never"], DATA, env=env)
        spans = rx.received.wait_for(sent, timeout=10) if sent else rx.received.spans()
    assert proc.returncode == 0 and proc.stdout == DATA
    (line,) = proc.stderr.decode().splitlines()  # the counts at exit, alone
    assert line.startswith("otelbridge: 5046 bytes, ") and f"spans 8 built, {sent} exported" in line, line
    assert len(spans) == sent


def test_an_empty_batch_setting_is_unset_and_the_export_error_is_still_said():
    """An empty value is unset (the specification): nothing said about it, and the SDK's "cannot
    parse" line does not take the place of the first export error, which is said."""
    env = clean_env(OTEL_BSP_EXPORT_TIMEOUT="", OTEL_BSP_SCHEDULE_DELAY="  ",
                    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    proc = run_bridge(["--flush-timeout", "1"], DATA, env=env)
    assert proc.returncode == 0 and proc.stdout == DATA
    err = proc.stderr.decode()
    assert "OTEL_BSP" not in err, err
    assert "127.0.0.1:9" in err and "export incomplete" in err, err


def test_a_bad_value_is_ignored_and_the_good_ones_still_export():
    """Ignored means the SDK's default is used: spans still reach the collector."""
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, OTEL_BSP_MAX_QUEUE_SIZE="x",
                        OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT="many", OTEL_EXPORTER_OTLP_PROTOCOL="junk")
        proc = run_bridge([], DATA, env=env)
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA
    assert len(spans) == 8 and any(s.name.startswith("invoke_workflow") for s in spans)


def test_http_json_sends_otlp_json():
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="http/json")
        proc = run_bridge([], DATA, env=env)
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA
    assert b"http/json" not in proc.stderr  # supported: nothing to say
    types = {v for h in rx.received.headers for k, v in h.items() if k.lower() == "content-type"}
    assert types == {"application/json"}
    (root,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    agents = [s for s in spans if s.name.startswith("invoke_agent") and s.parent_span_id]
    assert len(root.trace_id) == 32 and all(a.trace_id == root.trace_id for a in agents)
    assert len(spans) == 8


@pytest.mark.parametrize("args", [["--protocol", "junk"], ["--endpoint", "collector.invalid:4318"],
                                  ["--exporter", "zipkin"], ["--exporter", ""], ["--exporter", " , "]])
def test_a_bad_flag_stays_a_usage_error(args):
    proc = run_bridge(args, b"", env=clean_env())
    assert proc.returncode == 2 and proc.stdout == b""
    assert args[0].encode() in proc.stderr or b"zipkin" in proc.stderr
    (line,) = proc.stderr.splitlines()  # one line: what is wrong, and where help is
    assert line.startswith(b"otelbridge: ") and b"See 'otelbridge --help'." in line, line


@pytest.mark.parametrize("args", [["--protocol", "junk"], ["--endpoint", "collector.invalid:4318"], ["--bogus"],
                                  ["--max-line", "-1"], ["--exporter", "file"]])
def test_a_usage_error_in_pipe_mode_still_passes_every_byte(args):
    """A bad flag in a pipeline: the error is said (exit 2, the job fails under pipefail), and
    the stream still reaches its reader whole, untraced — not the part that had passed while
    the flags were read (the first bytes pass before they are), nor nothing."""
    data = b"".join(b'{"type":"system","subtype":"init","session_id":"s","n":%d}\n' % i for i in range(40_000))
    assert len(data) > 2 << 20  # beyond what passes before the flags are read
    proc = subprocess.run(["/bin/bash", "-o", "pipefail", "-c",
                           f"cat | {shlex.quote(sys.executable)} -m otelbridge {shlex.join(args)} | cat"],
                          input=data, capture_output=True, env=clean_env(), cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and proc.stdout == data
    (line,) = proc.stderr.splitlines()
    assert line.endswith(b"See 'otelbridge --help'. The input passes through untraced."), line


@pytest.mark.parametrize("args", [["--max-line", "0", "echo", "hi"], ["--max-line", "0", "--", "echo", "hi"]])
def test_a_usage_error_before_a_command_runs_nothing_and_reads_no_input(args):
    """A command given, with or without ``--``: a bad flag before it is a usage error (exit 2)
    that runs nothing; the command's input is not read (it was copied to stdout as if piped:
    a writer that never closed it held otelbridge until it did)."""
    proc = subprocess.run([sys.executable, "-m", "otelbridge", *args], input=b"PROMPT\n",
                          capture_output=True, env=clean_env(), cwd=ROOT, timeout=30)
    assert proc.returncode == 2 and proc.stdout == b""
    (line,) = proc.stderr.splitlines()
    assert b"Invalid value for '--max-line'" in line and b"passes through" not in line, line


def test_a_mistyped_option_is_said_in_one_sentence_with_the_likely_one():
    proc = run_bridge(["--capture-contnet"], b"", env=clean_env())
    assert proc.returncode == 2
    assert proc.stderr.decode() == ("otelbridge: No such option '--capture-contnet'. Did you mean '--capture-content'? "
                                    "See 'otelbridge --help'. The input passes through untraced.\n")


@pytest.mark.parametrize("args", [["--"], ["--exporter", "none", "--"], ["-q", "--"]])
def test_a_separator_without_a_command_is_a_usage_error(args):
    """``otelbridge --`` ran pipe mode on the terminal's stdin: a mistake, as an empty command."""
    proc = run_bridge(args, b'{"type":"system"}\n', env=clean_env())
    assert proc.returncode == 2 and proc.stdout == b""
    (line,) = proc.stderr.splitlines()
    assert b"needs a command" in line, line


def test_a_separator_as_an_option_value_is_no_empty_command():
    proc = run_bridge(["--exporter", "none", "-q", "--redact", "--"], b'{"type":"system"}\n',
                      env=clean_env())
    assert proc.returncode == 0 and proc.stdout == b'{"type":"system"}\n'


def test_grpc_endpoint_without_scheme_says_tls_and_grpc_core_keeps_off_stderr():
    """The OTLP exporter spec: a scheme-less gRPC endpoint uses TLS unless
    OTEL_EXPORTER_OTLP_INSECURE=true. Against a plaintext collector that is said in one line, and
    gRPC C-core's own handshake log lines (unprefixed) never reach stderr."""
    from tests.receivers import GrpcReceiver

    with GrpcReceiver() as rx:
        hostport = rx.endpoint.split("://", 1)[1]
        base = dict(OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_EXPORTER_OTLP_ENDPOINT=hostport)
        tls, plain = side_by_side(
            lambda: run_bridge(["--flush-timeout", "0.5"], DATA, env=clean_env(**base)),
            lambda: run_bridge([], DATA, env=clean_env(OTEL_EXPORTER_OTLP_INSECURE="true", **base)))
        spans = rx.received.wait_for(8, timeout=10)
    assert tls.returncode == 0 and tls.stdout == DATA
    err = tls.stderr.decode().splitlines()
    assert all(l.startswith("otelbridge: ") for l in err), err  # no "I1201 ... ssl_transport"
    (said,) = [l for l in err if "has no scheme" in l]
    assert f"OTEL_EXPORTER_OTLP_ENDPOINT='{hostport}'" in said and "TLS" in said
    assert f"http://{hostport}" in said
    # insecure as asked: nothing said, every span delivered
    assert plain.returncode == 0 and b"has no scheme" not in plain.stderr
    assert len(spans) == 8


def test_grpc_insecure_that_is_not_true_leaves_an_http_endpoint_plaintext():
    """``OTEL_EXPORTER_OTLP_INSECURE=1`` (false by the specification) or ``true``: the variable
    applies only to an endpoint without a scheme, so an ``http://`` one is plaintext either
    way: every span delivered, nothing said about it."""
    with GrpcReceiver() as rx:
        base = dict(OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint)
        one = run_bridge([], DATA, env=clean_env(OTEL_EXPORTER_OTLP_INSECURE="1", **base))
        assert len(rx.received.wait_for(8, timeout=10)) == 8
        plain = run_bridge([], DATA, env=clean_env(OTEL_EXPORTER_OTLP_INSECURE="true", **base))
        spans = rx.received.wait_for(16, timeout=10)
    for run in (one, plain):
        assert run.returncode == 0 and run.stdout == DATA
        assert b"OTEL_EXPORTER_OTLP_INSECURE" not in run.stderr and b"TLS" not in run.stderr, run.stderr
    assert len(spans) == 16


@pytest.mark.parametrize("host,variable,path", [
    ("127.0.0.1", "OTEL_EXPORTER_OTLP_ENDPOINT", ""), ("localhost", "OTEL_EXPORTER_OTLP_ENDPOINT", ""),
    ("localhost", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces"),
])
def test_a_loopback_endpoint_without_a_scheme_is_read_as_http_and_said(host, variable, path):
    """``127.0.0.1:PORT`` over OTLP/HTTP, which needs a scheme: plaintext is what a loopback
    address means, so the spans go there (not to the default port) and one line says how to
    write it; the traces variable, a whole URL, gets the collector's path."""
    with HttpReceiver() as rx:
        value = f"{host}:{rx.port}"
        proc = run_bridge([], DATA, env=clean_env(**{variable: value}))
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA
    assert len(spans) == 8  # every span built
    said = [l for l in proc.stderr.decode().splitlines() if variable in l]
    assert said == [f"otelbridge: {variable}='{value}' has no scheme: read as "
                    f"http://{value}{path} (a loopback address, plaintext); write the scheme, http:// or https://"]


def test_a_grpc_endpoints_path_is_said_unused():
    """gRPC connects to the endpoint's host and port alone: the spans arrive at a receiver
    without that path, and one line says the path is not used."""
    with GrpcReceiver() as rx:
        value = f"{rx.endpoint}/otlp"
        proc = run_bridge([], DATA, env=clean_env(OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_EXPORTER_OTLP_ENDPOINT=value))
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA and len(spans) == 8
    said = [l for l in proc.stderr.decode().splitlines() if "OTEL_EXPORTER_OTLP_ENDPOINT" in l]
    assert said == [f"otelbridge: OTEL_EXPORTER_OTLP_ENDPOINT='{value}': its path is not used over gRPC, which "
                    f"connects to {rx.endpoint} alone (a path is OTLP/HTTP's)"]


@pytest.mark.parametrize("variable,path,hint", [
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as given: end it "
                                               "with /v1/traces"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "/otlp", "otelbridge adds /v1/traces to the endpoint's path"),
])
def test_a_404_says_how_the_path_was_made(variable, path, hint):
    """A collector answers 404 at any path but /v1/traces. The traces variable is used as
    given (the OTLP exporter specification), so a base URL there needs /v1/traces; to the
    other, and to --endpoint, otelbridge adds it."""
    with HttpReceiver() as rx:
        proc = run_bridge(["--flush-timeout", "1"], DATA, env=clean_env(**{variable: rx.endpoint + path}))
    assert proc.returncode == 0 and proc.stdout == DATA
    err = proc.stderr.decode()
    assert "HTTP 404: no OTLP receiver at that path" in err and hint in err, err
    assert rx.posts >= 1 and not rx.received.requests


def test_a_secret_in_the_endpoint_path_is_never_printed():
    """A token in the endpoint's path (some gateways take it there), or a header's value in it:
    the export error line names the endpoint without them."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    header = "s3cr3tHeaderValue4242"
    env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:9/{token}/{header}",
                    OTEL_EXPORTER_OTLP_HEADERS=f"x-api-key={header}")
    proc = run_bridge(["--flush-timeout", "0.5"], DATA, env=env)
    assert proc.returncode == 0 and proc.stdout == DATA
    err = proc.stderr.decode()
    assert "export incomplete" in err and "127.0.0.1:9" in err, err
    assert token not in err and header not in err, err


def test_a_very_long_value_is_said_in_a_line_of_bounded_length():
    env = clean_env(OTEL_TRACES_EXPORTER="x" * 120_000,
                    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9/" + "p" * 120_000)
    proc = run_bridge(["--flush-timeout", "0.5", "--exporter", "otlp"], DATA, env=env)
    assert proc.returncode == 0 and proc.stdout == DATA
    lines = proc.stderr.decode().splitlines()
    assert lines and max(map(len, lines)) <= 2100, max(map(len, lines))
    proc = run_bridge(["--flush-timeout", "0.5"], DATA,
                      env=clean_env(OTEL_TRACES_EXPORTER="otlp,zipkin" + "z" * 120_000))
    lines = proc.stderr.decode().splitlines()
    assert any("OTEL_TRACES_EXPORTER" in l for l in lines) and max(map(len, lines)) <= 2100


def test_resource_values_that_are_not_utf8_are_exported_as_replacement_characters():
    """Bytes that are not UTF-8 in OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES: the SDK failed to
    encode them in every export (a line that took the place of the first export error); they are
    shown as U+FFFD, as a decoder would."""
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, OTEL_SERVICE_NAME="svc\udcff",
                        OTEL_RESOURCE_ATTRIBUTES="team=a\udcfeb")
        proc = run_bridge([], DATA, env=env)
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA
    assert {(s.resource["service.name"], s.resource["team"]) for s in spans} == {("svc\ufffd", "a\ufffdb")}
    assert b"encode" not in proc.stderr, proc.stderr


def test_resource_values_set_by_hand_are_redacted_at_the_receiver():
    """OTEL_RESOURCE_ATTRIBUTES may hold what CI put in a variable (a clone URL with its job
    token, a key): every resource string is redacted as a span's are; the rest stays whole."""
    token = "ghp_" + "Vq3xK9mP2wL8nR5tY7uZ1aB4cD6eF0gH2jK4"
    env = clean_env(OTEL_RESOURCE_ATTRIBUTES=(
        "vcs.repository.url.full=https://gitlab-ci-token:glcbt-64_Xq7RtY9uZ2@gitlab.example.com/g/p.git,"
        f"deploy.key={token},db.password=ResPw(88!,team=" + "platform" * 40))
    with HttpReceiver() as rx:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = rx.endpoint
        proc = run_bridge([], DATA, env=env)
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA
    resources = {tuple(sorted(s.resource.items())) for s in spans}
    assert len(resources) == 1
    resource = dict(resources.pop())
    assert resource["vcs.repository.url.full"] == (
        "https://[REDACTED:url_credentials]@gitlab.example.com/g/p.git")
    assert resource["deploy.key"] == "[REDACTED:github_token]"
    assert resource["db.password"] == "[REDACTED:secret]"  # the key names a secret
    assert resource["team"] == "platform" * 40  # not capped: the user chose it
    assert b"glcbt" not in proc.stderr and token.encode() not in proc.stderr


@pytest.mark.parametrize("headers,words", [
    ("x-team=caf%C3%A9", ["'x-team'", "no gRPC metadata value"]),  # Latin-1, not ASCII
    ("x-team=a%7Fb", ["'x-team'", "no gRPC metadata value"]),
    ("X!team=a", ["'X!team'", "no gRPC metadata key"]),  # an HTTP field name, no gRPC key
    ("x-team-bin=abc", ["'x-team-bin'", "no gRPC metadata key"]),  # the SDK sends str: TypeError
])
def test_a_header_grpc_cannot_send_is_one_line_and_the_spans_still_go(headers, words):
    """gRPC metadata is narrower than HTTP's fields: such a header failed every export
    ("Invalid metadata"). The variable is ignored: the spans reach the collector."""
    with GrpcReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_HEADERS=headers, OTEL_EXPORTER_OTLP_INSECURE="true")
        proc = run_bridge(["--protocol", "grpc", "--endpoint", rx.endpoint], DATA, env=env)
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA
    assert len(spans) == 8
    err = proc.stderr.decode().splitlines()
    said = [l for l in err if "OTEL_EXPORTER_OTLP_HEADERS" in l]
    assert len(said) == 1, err
    for word in [*words, "no headers sent"]:
        assert word in said[0], said
    assert not any("export incomplete" in l or "Invalid metadata" in l for l in err), err


@pytest.mark.parametrize("bad", ["=c", "x-\u00fc=1", "a%0Ab=1", "Content-Type=application/json",
                                 "content-encoding=gzip"])
def test_a_header_that_cannot_be_sent_costs_only_itself(bad):
    """One unsendable item among the headers (an empty name, a name no HTTP field has) is left
    out and said; the others, an ``authorization`` among them, still reach the collector (the
    whole variable was dropped: a typo cost the credentials)."""
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint,
                        OTEL_EXPORTER_OTLP_HEADERS=f"authorization=Bearer%20tok3n,{bad},x-team=platform")
        proc = run_bridge(["--summary", "never"], DATA, env=env)
        spans = rx.received.wait_for(8, timeout=10)
    assert proc.returncode == 0 and proc.stdout == DATA and len(spans) == 8
    sent = [{k.lower(): v for k, v in h.items()} for h in rx.received.headers]
    assert sent and all(h.get("authorization") == "Bearer tok3n" and h.get("x-team") == "platform"
                        and h.get("content-type") == "application/x-protobuf"
                        and h.get("content-encoding") in (None, "identity") for h in sent), sent
    (said,) = [l for l in proc.stderr.decode().splitlines() if "OTEL_EXPORTER_OTLP_HEADERS" in l]
    assert said.endswith("left out, the other headers are sent") and "tok3n" not in said, said
