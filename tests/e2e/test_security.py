"""End to end, issue 8: nothing secret leaves, untrusted text is defused, transport is
authenticated. otelbridge runs as a subprocess; spans are read at a real OTLP receiver.

The corpus ``tests/data/secrets-corpus.jsonl`` is ours (seed 000 §9): an ``initialize``
``control_request``/``control_response`` with a JWT, an enterprise id and an e-mail; a workflow
whose name, description, labels, phase titles, previews, errors and summary hold keys, tokens,
ANSI/OSC escapes, C0/C1 controls and bidi overrides. A second workflow with 1 MB strings (and
one of 200 K characters: more than the decoder holds, not too long to scan) is generated here
(a 1 MB file does not belong in the repository).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
import socket
import ssl
from dataclasses import asdict
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import session_name, ROOT, clean_env, run_bridge, session_span_count, side_by_side, workflow_spans
from tests.receivers import GrpcReceiver, HttpReceiver

CORPUS = ROOT / "tests" / "data" / "secrets-corpus.jsonl"

JWT = ("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZW1haWwiOiJhbm4ubGVlQGV4YW1wbGUuY29tIn0"
       ".c2lnbmF0dXJlLW5vdC1yZWFsLWJ1dC1sb25nLWVub3VnaA")
#: every secret the corpus holds; none may reach a receiver
SECRETS = [
    JWT, JWT.split(".")[1], JWT.split(".")[2],
    "ann.lee@example.com", "ent-7f3a9c2e-5b1d-4e8a-9c0f-2d6b8e1a4c73", "Ann Lee",
    "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm", "sk-proj-4hT9kL2mN8pQ1rS6vW3xY7zA0bC5dE",
    "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEYAB",
    "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0123", "github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP",
    "MIIEowIBAAKCAQEAx7Tq3dummykeymaterialnotrealZZ", "tok_live_9f8e7d6c5b4a3210ffee",
    "S3cr3tPassw0rd", "hunter2hunter2", "/home/alice", "/Users/alice",
]
#: C0/C1 controls (tab allowed), bidi overrides/isolates, zero-width characters
UNSAFE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
MB = 1 << 20
#: the decoder reads at most this many characters of a wire string (events.as_str)
DECODED_CHARS = 4096


def big_text(marker: str, size: int = MB) -> str:
    """``size`` characters (1 MB) of text with a key near the start, ANSI escapes throughout, and a JWT placed so
    the decoder's 4096-character cut leaves exactly its first 20 characters."""
    head = f"{marker} key sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm "
    filler = ("\x1b[7mZZ\x1b[0m pad " * (MB // 10))
    body = head + filler
    cut = DECODED_CHARS - 20
    body = body[:cut - 1] + " " + JWT + " " + filler
    return body[:size]


def big_workflow() -> bytes:
    """A second workflow (task ``wf-big``) whose name, description, phase title, label and
    prompt preview are 1 MB each, too long to scan; its result preview 200 K characters."""
    sid, tid = "sess-secrets-0001", "wf-big"
    agent = {"type": "workflow_agent", "index": 1, "agentId": "v2:big", "state": "done",
             "startedAt": 1790000005000, "endedAt": 1790000006000, "phaseIndex": 1,
             "label": big_text("label"), "promptPreview": big_text("prompt"),
             "resultPreview": big_text("result", 200_000)}
    lines = [
        {"type": "system", "subtype": "task_started", "task_id": tid, "task_type": "local_workflow",
         "workflow_name": big_text("name"), "description": big_text("description"), "session_id": sid},
        {"type": "system", "subtype": "task_progress", "task_id": tid, "session_id": sid,
         "workflow_progress": [{"type": "workflow_phase", "index": 1, "title": big_text("phase")}, agent]},
        {"type": "system", "subtype": "task_notification", "task_id": tid, "status": "completed",
         "session_id": sid},
    ]
    return b"".join(json.dumps(l).encode() + b"\n" for l in lines)


def stream() -> bytes:
    return CORPUS.read_bytes() + big_workflow()


def workflow_span_count(data: bytes) -> int:
    """Root + phases + agents of each workflow, read from the input (last snapshot wins)."""
    last: dict[str, list] = {}
    for line in data.splitlines():
        doc = json.loads(line)
        if doc.get("subtype") == "task_progress":
            last[doc["task_id"]] = doc["workflow_progress"]
    return sum(1 + len(entries) for entries in last.values())


def expected_spans(data: bytes) -> int:
    """The workflows' spans and the session's (SPAN-MODEL.md), read from the input."""
    return workflow_span_count(data) + session_span_count(data)


def all_strings(span) -> list[str]:
    """Every string a backend would store for ``span``: name, keys, values, status, events."""
    out = [span.name, span.status_message]

    def walk(value):
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                out.append(k)
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    walk(span.attributes)
    walk(span.events)
    walk(span.resource)
    return out


def without_ids(requests) -> bytes:
    """The OTLP requests as sent, with every trace and span id cleared: the bytes a secret could
    be in (random ids hold any short byte string now and then)."""
    out = []
    for request in requests:
        copy = type(request)()
        copy.CopyFrom(request)
        for rs in copy.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = span.span_id = span.parent_span_id = b""
                    for link in span.links:
                        link.trace_id = link.span_id = b""
        out.append(copy.SerializeToString())
    return b"".join(out)


def export(args: list[str], data: bytes, **env: str):
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, *args], data, env=clean_env(**env))
        spans = rx.received.wait_for(expected_spans(data), timeout=5)
        raw = without_ids(rx.received.requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data  # the stream itself passes untouched, secrets and all
    return proc, spans, raw


def assert_nothing_leaks(spans, raw: bytes, limit: int) -> str:
    text = json.dumps([asdict(s) for s in spans], ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in text and secret.encode() not in raw, secret
    assert JWT[:20] not in text  # the part of the JWT the decoder's cut left over
    for span in spans:
        assert len(span.name) <= 64, span.name
        for s in all_strings(span):
            assert not UNSAFE.search(s), repr(s)
        for key, value in span.attributes.items():
            if isinstance(value, str):
                assert len(value) <= limit, key
    return text


def by_name(spans, prefix: str):
    return [s for s in spans if s.name.startswith(prefix)]


def test_corpus_nothing_secret_or_unsafe_leaves():
    data = stream()
    proc, spans, raw = export([], data)
    count = expected_spans(data)
    # the session and its turn 1 (opened by init, never a result: incomplete)
    assert (workflow_span_count(data), session_span_count(data)) == (9, 2) and len(spans) == count
    assert f"{count} exported, 0 dropped".encode() in proc.stderr
    text = assert_nothing_leaks(spans, raw, 256)  # the session span included (its cwd is not exported)
    # one session for both workflows: init, never a result
    (session,) = by_name(spans, session_name(data))
    assert session.parent_span_id == "" and session.attributes["gen_ai.conversation.id"] == "sess-secrets-0001"
    assert (session.status_code, session.status_message) == (2, "stream ended before result")
    assert sorted(session.links) == sorted((r.trace_id, r.span_id) for r in by_name(spans, "invoke_workflow"))
    # content is opt-in: no previews without --capture-content
    assert "preview" not in text and "prompt " not in text and "deployed to staging" not in text
    # the names were redacted, not dropped: markers name the kinds found
    (root,) = [s for s in by_name(spans, "invoke_workflow") if s.attributes["workflow.task_id"] == "wf-sec-01"]
    assert root.attributes["workflow.name"] == "path:~/flows/release [REDACTED:github_token].workflow.js"
    assert root.attributes["workflow.description"] == (
        "release for [REDACTED:email] with Authorization: [REDACTED:authorization]")
    assert root.status_message == "workflow failed"  # its summary is content
    (build,) = [s for s in spans if s.attributes.get("gen_ai.agent.id") == "v2:sec-agent-1"]
    assert build.name == "invoke_agent build token [REDACTED:jwt]"
    # 1 MB strings are too long to scan: none of them leaves
    (big_root,) = [s for s in by_name(spans, "invoke_workflow") if s.attributes["workflow.task_id"] == "wf-big"]
    assert big_root.name == "invoke_workflow [REDACTED:too_long]"
    for key in ("workflow.name", "workflow.description"):
        assert big_root.attributes[key] == "[REDACTED:too_long]"


def test_capture_content_exports_previews_still_redacted():
    data = stream()
    limit = 8192  # above the decoder's 4096: redaction, not the cap, must hide the cut JWT
    proc, spans, raw = export(
        ["--capture-content", "--redact", r"PROJ-SECRET-\d+", "--max-attribute-length", str(limit)], data
    )
    assert len(spans) == expected_spans(data)
    assert_nothing_leaks(spans, raw, limit)
    agents = {s.attributes["gen_ai.agent.id"]: s.attributes for s in by_name(workflow_spans(spans), "invoke_agent")}
    assert len(agents) == 4  # the corpus's 3 and the big one
    (root,) = [s for s in by_name(spans, "invoke_workflow") if s.attributes["workflow.task_id"] == "wf-sec-01"]
    assert root.status_message.endswith("and [REDACTED:github_token]")  # the failed run's summary
    result = agents["v2:sec-agent-1"]["workflow.agent.result_preview"]
    # an Authorization header's value runs to the end of its line (SigV4's Credential=…,
    # Signature=…): here over the key block and the clone URL after it
    assert result == ("deployed to staging: AWS [REDACTED:aws_access_key] gh [REDACTED:github_token] "
                      "Authorization: [REDACTED:authorization]")
    assert agents["v2:sec-agent-1"]["workflow.agent.prompt_preview"] == (
        "Use [REDACTED:anthropic_key] and mail [REDACTED:email] please")
    assert agents["v2:sec-agent-3"]["workflow.agent.prompt_preview"] == (
        "export AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]")
    assert agents["v2:sec-agent-2"]["gen_ai.agent.name"] == "review [REDACTED:custom] for [REDACTED:email]"
    big = agents["v2:big"]["workflow.agent.result_preview"]
    assert big.startswith("result key [REDACTED:anthropic_key] ZZ pad")
    # 200 K characters, more than the decoder holds (wire.MAX_HELD_CHARS): redacted on its whole
    # length before that cut, the JWT 4096 characters in too, then capped at the limit
    assert "[REDACTED:jwt]" in big and DECODED_CHARS < len(big) <= limit
    # 1 MB: too long to scan, none of it leaves
    assert agents["v2:big"]["workflow.agent.prompt_preview"] == "[REDACTED:too_long]"


def test_no_default_redaction_warns_and_exports_raw_values():
    data = CORPUS.read_bytes()
    proc, spans, _ = export(["--no-default-redaction"], data)
    assert b"--no-default-redaction" in proc.stderr and b"local debugging only" in proc.stderr
    names = {s.attributes.get("gen_ai.agent.name") for s in spans}
    assert "review PROJ-SECRET-4711 for ann.lee@example.com" in names
    for span in spans:  # sanitising stays on
        for s in all_strings(span):
            assert not UNSAFE.search(s)


def test_otel_attribute_length_limit_is_honoured():
    data = CORPUS.read_bytes()
    _, spans, _ = export(["--capture-content"], data, OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT="40")
    previews = [v for s in spans for k, v in s.attributes.items() if k.endswith("_preview")]
    assert len(previews) == 4
    assert all(len(p) <= 40 for p in previews)
    assert [p for p in previews if len(p) == 40 and p.endswith("…")]  # our cut, not the SDK's


def test_bad_redact_regex_is_a_usage_error():
    proc = run_bridge(["--redact", "(unclosed", "--exporter", "none"], b"")
    assert proc.returncode == 2
    assert b"not a valid regular expression" in proc.stderr


@pytest.mark.parametrize("args,secret", [
    (["--redact", "Tr0ub4dor&3(horse"], b"Tr0ub4dor"),  # the regex is the secret it hides
    (["--protocol", "ghp_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"], b"Ab1Cd2Ef3Gh4"),
    (["--exporter", "ghp_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"], b"Ab1Cd2Ef3Gh4"),
    (["--max-attribute-length", "ghp_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"], b"Ab1Cd2Ef3Gh4"),
    (["--exporter", "otlp", "--endpoint", "https://admin:hunter2secret99#frag@collector.example.com:4318"],
     b"hunter2"),
], ids=["redact", "protocol", "exporter", "max-attribute-length", "endpoint"])
def test_a_usage_error_shows_no_secret_given(args, secret):
    """A value given to the wrong option, or a ``--redact`` regex naming a secret: the usage
    error says what is wrong without it (exit 2, as every usage error)."""
    proc = run_bridge([*args, "--exporter", "none"] if "--exporter" not in args else args, b"")
    assert proc.returncode == 2
    assert b"See 'otelbridge --help'" in proc.stderr and secret not in proc.stderr, proc.stderr


def test_stats_json_is_private(tmp_path):
    path = tmp_path / "stats.json"
    path.write_text("{}")
    path.chmod(0o644)
    proc = run_bridge(["--exporter", "none", "--stats-json", str(path)], CORPUS.read_bytes())
    assert proc.returncode == 0
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["lines"] == len(CORPUS.read_bytes().splitlines())


# --------------------------------------------------------------------------- TLS


def self_signed(directory: Path, name: str, ip: bool = True) -> tuple[bytes, bytes, Path, Path]:
    """A self-signed certificate for 127.0.0.1 (unless not ``ip``) and localhost (it is its own
    CA): PEM cert, PEM key, and the paths they were written to."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))] * ip + [x509.DNSName("localhost")]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(cert_pem)
    key_path.write_bytes(key_pem)
    return cert_pem, key_pem, cert_path, key_path


def tls_receiver(protocol: str, cert_pem: bytes, key_pem: bytes, cert_path: Path, key_path: Path,
                 client_ca: bytes | None = None):
    if protocol == "grpc":
        creds = grpc.ssl_server_credentials(
            [(key_pem, cert_pem)], root_certificates=client_ca, require_client_auth=client_ca is not None)
        return GrpcReceiver(credentials=creds)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_path, key_path)
    return HttpReceiver(ssl_context=ctx)


FAIL_FAST = {"OTEL_EXPORTER_OTLP_TIMEOUT": "1000"}


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_tls_export_needs_the_ca(tmp_path, protocol):
    server = self_signed(tmp_path, "collector")
    _, _, other_ca, _ = self_signed(tmp_path, "unrelated")
    data = CORPUS.read_bytes()
    count = expected_spans(data)
    # the run with the CA and the one without, side by side, each to a receiver of its own
    with tls_receiver(protocol, *server) as rx, tls_receiver(protocol, *server) as rx_bad:
        assert rx.endpoint.startswith("https://") and rx_bad.endpoint.startswith("https://")

        def args(endpoint):
            return ["--protocol", protocol, "--endpoint", endpoint, "--flush-timeout", "2"]

        ok, bad = side_by_side(
            # an unrelated CA bundle in REQUESTS_CA_BUNDLE must not override the configured CA
            lambda: run_bridge(args(rx.endpoint), data, env=clean_env(
                OTEL_EXPORTER_OTLP_CERTIFICATE=str(server[2]), REQUESTS_CA_BUNDLE=str(other_ca), **FAIL_FAST)),
            # a timeout longer than the first retry's backoff, so the SDK logs the cause before
            # giving up (with a shorter one it says only "timeout"); --flush-timeout still bounds it
            lambda: run_bridge(args(rx_bad.endpoint), data, env=clean_env(OTEL_EXPORTER_OTLP_TIMEOUT="3000")))
        spans = rx.received.wait_for(count, timeout=5)
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout == data
        assert len(spans) == count
        assert f"{count} exported, 0 dropped".encode() in ok.stderr
        assert rx_bad.received.requests == []  # nothing got through without the CA
    assert bad.returncode == 0
    assert bad.stdout == data
    err = bad.stderr.decode()
    assert f"0 exported, {count} dropped" in err
    assert f"export incomplete ({rx_bad.endpoint}: {count} of {count} not confirmed" in err
    assert "CERTIFICATE_VERIFY_FAILED" in err  # the reason is named
    assert "Traceback" not in err


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_certificate_for_another_host_is_said_so_not_untrusted(tmp_path, protocol):
    """The CA is configured and trusted, but the collector's certificate does not list the
    endpoint's host (127.0.0.1; it names localhost): the cause says so, not that the CA is
    wrong. The stream is whole."""
    server = self_signed(tmp_path, "collector", ip=False)
    data = CORPUS.read_bytes()
    count = expected_spans(data)
    with tls_receiver(protocol, *server) as rx:
        proc = run_bridge(["--protocol", protocol, "--endpoint", rx.endpoint, "--flush-timeout", "3"], data,
                          env=clean_env(OTEL_EXPORTER_OTLP_CERTIFICATE=str(server[2]), OTEL_EXPORTER_OTLP_TIMEOUT="2000"))
        assert rx.received.requests == []
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == data
    assert (f"export incomplete ({rx.endpoint}: {count} of {count} not confirmed; the collector's "
            "certificate is not issued for the endpoint's host") in err, err
    assert "not trusted" not in err and "Traceback" not in err


def test_grpc_client_certificate_is_sent(tmp_path):
    server = self_signed(tmp_path, "collector")
    client_cert, _, client_cert_path, client_key_path = self_signed(tmp_path, "client")
    data = CORPUS.read_bytes()
    count = expected_spans(data)
    # with the client certificate and without, side by side, each to a receiver of its own
    with tls_receiver("grpc", *server, client_ca=client_cert) as rx, \
            tls_receiver("grpc", *server, client_ca=client_cert) as rx_refused:
        def args(endpoint):
            return ["--protocol", "grpc", "--endpoint", endpoint, "--flush-timeout", "2"]

        base = {"OTEL_EXPORTER_OTLP_CERTIFICATE": str(server[2]), **FAIL_FAST}
        ok, refused = side_by_side(
            lambda: run_bridge(args(rx.endpoint), data, env=clean_env(
                OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=str(client_cert_path),
                OTEL_EXPORTER_OTLP_CLIENT_KEY=str(client_key_path), **base)),
            lambda: run_bridge(args(rx_refused.endpoint), data, env=clean_env(**base)))
        assert len(rx.received.wait_for(count, timeout=5)) == count
        assert rx_refused.received.spans() == []
    assert f"{count} exported, 0 dropped".encode() in ok.stderr, ok.stderr
    assert f"0 exported, {count} dropped".encode() in refused.stderr
    assert refused.returncode == 0 and refused.stdout == data


# --------------------------------------------------------------------------- headers


TOKEN = "tok_hdr_5e4d3c2b1a09f8e7"
MALFORMED = "s3cr3t-in-a-bad-item-77"


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def header_env(**extra: str) -> dict[str, str]:
    # the second item has no "=": the SDK warns about it and quotes it
    return clean_env(OTEL_EXPORTER_OTLP_HEADERS=f"authorization=Bearer%20{TOKEN},{MALFORMED}",
                     **FAIL_FAST, **extra)


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_headers_reach_the_collector_but_never_stderr(protocol):
    data = CORPUS.read_bytes()
    receiver_cls = GrpcReceiver if protocol == "grpc" else HttpReceiver
    with receiver_cls() as rx:
        proc = run_bridge(["--protocol", protocol, "--endpoint", rx.endpoint], data, env=header_env())
        rx.received.wait_for(expected_spans(data), timeout=5)
        sent = [{k.lower(): v for k, v in dict(h).items()} for h in rx.received.headers]
    assert proc.returncode == 0
    assert sent and all(h.get("authorization") == f"Bearer {TOKEN}" for h in sent)
    err = proc.stderr.decode()
    # the item without "=" (which the SDK skipped, warning with the item quoted) is said and
    # left out by us, its generated-looking name not shown
    (said,) = [l for l in err.splitlines() if "HEADERS" in l]
    assert said == ("otelbridge: OTEL_EXPORTER_OTLP_HEADERS: header '…': no '=' after the name (write "
                    "name=value, a blank in the value as %20: authorization=Bearer%20…); left out, the "
                    "other headers are sent")
    assert "Header format invalid" not in err
    assert TOKEN not in err and MALFORMED not in err


def test_an_item_the_sdk_skips_is_said_without_its_value():
    """A value the SDK's parser refuses (a ``;`` in it: it skips the item and warns quoting it)
    is said by us in one line that quotes nothing; the other headers still go."""
    data = CORPUS.read_bytes()
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_HEADERS=f"authorization=Bearer%20{TOKEN},x-note=a;{MALFORMED}",
                        **FAIL_FAST)
        proc = run_bridge(["--endpoint", rx.endpoint], data, env=env)
        rx.received.wait_for(expected_spans(data), timeout=5)
        sent = [{k.lower(): v for k, v in dict(h).items()} for h in rx.received.headers]
    assert proc.returncode == 0
    assert sent and all(h.get("authorization") == f"Bearer {TOKEN}" and "x-note" not in h for h in sent)
    err = proc.stderr.decode()
    (said,) = [l for l in err.splitlines() if "HEADERS" in l]
    assert said.startswith("otelbridge: OTEL_EXPORTER_OTLP_[TRACES_]HEADERS: an item that is not")
    assert "Header format invalid" not in err and TOKEN not in err and MALFORMED not in err


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_headers_never_printed_when_export_fails(protocol):
    port = dead_port()
    if protocol == "grpc":
        endpoint = f"http://127.0.0.1:{port}"
    else:  # credentials and a query in the URL are not printed either
        endpoint = f"http://user:{TOKEN}x@127.0.0.1:{port}/?api_key={TOKEN}y"
    data = CORPUS.read_bytes()
    proc = run_bridge(["--protocol", protocol, "--endpoint", endpoint, "--flush-timeout", "2"], data,
                      env=header_env())
    assert proc.returncode == 0 and proc.stdout == data
    err = proc.stderr.decode()
    assert f"0 exported, {expected_spans(data)} dropped" in err
    assert f"export incomplete (http://127.0.0.1:{port}" in err
    assert TOKEN not in err and MALFORMED not in err and "user:" not in err


@pytest.mark.parametrize("path", ["/receiver/v1/otlp/ZaVnC4dhaV39Tn37mRkL8qB2xWyP0sJdFgHiKlMnOpQ==",
                                  "/ingest/Zb7kQ2mL9pRzVv3Tq1/v1/traces"])
def test_a_token_in_the_endpoints_path_is_not_printed(path):
    """A collector endpoint whose path holds its secret (a Sumo Logic source's URL; another
    vendor's): the lines that name the endpoint show the route's words, not the token."""
    token = path.split("/")[4] if path.startswith("/receiver") else path.split("/")[2]
    port = dead_port()
    data = CORPUS.read_bytes()
    proc = run_bridge(["--flush-timeout", "1"], data,
                      env=clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"http://127.0.0.1:{port}{path}", **FAIL_FAST))
    assert proc.returncode == 0 and proc.stdout == data
    err = proc.stderr.decode()
    route = path.replace(token, "[REDACTED:path]")
    assert f"export incomplete (http://127.0.0.1:{port}{route}:" in err
    assert token not in err and token[:12] not in err


# --------------------------------------------------------------------------- the forms corpus

FORMS = [json.loads(line) for line in
         (ROOT / "tests" / "data" / "secret-forms.jsonl").read_text().splitlines() if line]
POSITIVES = [f for f in FORMS if f["kind"] == "positive"]
#: hand-written negatives short enough to be a whole span name ("invoke_agent " + text)
NEGATIVES = [f["text"] for f in FORMS if f["kind"] == "negative" and len(f["text"]) <= 64 - 13]


def forms_stream() -> bytes:
    """A Claude Code session in which each positive form is assistant text, a Bash command
    (tool arguments: JSON-escaped in the exported JSON), its tool result, a workflow's name,
    its phase title, its agent's label and preview, and its failure summary; each negative is
    an agent's label."""
    sid = "sess-forms-0001"
    ts = 1_790_000_000_000
    lines: list[dict] = [{"type": "system", "subtype": "init", "session_id": sid, "model": "claude-sonnet-4-5",
                          "cwd": "/tmp", "tools": ["Bash", "Workflow"]}]
    for i, form in enumerate(POSITIVES):
        text, tool = form["text"], f"toolu_forms_{i:03d}"
        lines.append({"type": "assistant", "session_id": sid, "message": {
            "id": f"msg_forms_{i:03d}", "model": "claude-sonnet-4-5", "role": "assistant",
            "content": [{"type": "text", "text": text},
                        {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": text}}],
            "usage": {"input_tokens": 10, "output_tokens": 5}}})
        lines.append({"type": "user", "session_id": sid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool, "content": text, "is_error": i % 2 == 0}]}})
    labels = [f["text"] for f in POSITIVES] + NEGATIVES
    for i, text in enumerate(labels):
        task = f"wf-forms-{i:03d}"
        lines += [
            {"type": "system", "subtype": "task_started", "task_id": task, "task_type": "local_workflow",
             "workflow_name": text, "description": text, "session_id": sid},
            {"type": "system", "subtype": "task_progress", "task_id": task, "session_id": sid,
             "workflow_progress": [
                 {"type": "workflow_phase", "index": 1, "title": text},
                 {"type": "workflow_agent", "index": 1, "agentId": f"v2:forms-{i}", "state": "error",
                  "startedAt": ts + i, "endedAt": ts + i + 5, "phaseIndex": 1, "label": text,
                  "promptPreview": text, "resultPreview": text, "error": text}]},
            {"type": "system", "subtype": "task_notification", "task_id": task, "status": "failed",
             "summary": text, "session_id": sid},
        ]
    lines.append({"type": "result", "subtype": "success", "is_error": True, "session_id": sid,
                  "result": POSITIVES[0]["text"], "num_turns": 1, "duration_ms": 10})
    return b"".join(json.dumps(l, ensure_ascii=False).encode() + b"\n" for l in lines)


def _walk_strings(value, out: list[str]) -> list[str]:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(k)
            _walk_strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _walk_strings(v, out)
    return out


def test_forms_corpus_through_a_real_run_leaves_no_secret(tmp_path):
    """Every positive form of the corpus, in every exported place, through otelbridge as a
    subprocess to a real OTLP/HTTP receiver and the file exporter (``--capture-content``): no
    secret in any span name, attribute, event, link or status; each negative label intact."""
    data = forms_stream()
    out = tmp_path / "spans.jsonl"
    count = expected_spans(data)
    with HttpReceiver() as rx:
        # (~4,700 spans: a loaded machine may need more than the default 5 s to flush them;
        # what is under test is what leaves, not how fast)
        proc = run_bridge(["--capture-content", "--exporter", "otlp,file", "--output", str(out),
                           "--endpoint", rx.endpoint, "--flush-timeout", "60"], data, env=clean_env(), timeout=120)
        spans = rx.received.wait_for(count, timeout=20)
        raw = without_ids(rx.received.requests)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == data
    assert len(spans) == count == 1 + 2 * len(POSITIVES) + 1 + 3 * (len(POSITIVES) + len(NEGATIVES))
    exported = [s for span in spans for s in all_strings(span)]
    from_file = [s for line in out.read_text().splitlines() for s in _walk_strings(json.loads(line), [])]
    assert len(from_file) > len(exported) // 2
    # one search per secret: in every string at once (NUL is in no secret, so no match spans
    # two strings); the strings holding it are listed only when there is one
    everywhere = "\0".join(exported + from_file)
    leaks = {}
    for form in POSITIVES:
        for secret in form["secrets"]:
            assert "\0" not in secret
            if secret.isdigit():  # (a PIN leaks as a number, not as digits inside a hex id or a longer number)
                number = re.compile(rf"(?<![0-9A-Za-z]){secret}(?![0-9A-Za-z])")
                found = [s for s in exported + from_file if number.search(s)]
                if found or number.search(raw.decode("utf-8", "replace")):
                    leaks[form["form"]] = (secret, found[:1])
            elif secret in everywhere or secret.encode() in raw:
                leaks[form["form"]] = (secret, [s for s in exported + from_file if secret in s][:1])
    assert leaks == {}
    # the content was exported (redacted), not dropped: arguments, results, messages
    tools = by_name(spans, "execute_tool")
    assert len(tools) == len(POSITIVES) and all("gen_ai.tool.call.arguments" in t.attributes for t in tools)
    assert sum("[REDACTED:" in t.attributes["gen_ai.tool.call.arguments"] for t in tools) == len(POSITIVES)
    # negatives survive whole, as span names and attributes (a name's line ends as blanks)
    names = {s.name for s in by_name(spans, "invoke_agent ")}
    for text in NEGATIVES:
        assert f"invoke_agent {text}".replace("\n", " ") in names


def test_no_ci_log_command_can_be_forged_through_our_lines_on_stderr():
    """A CI runner reads commands from a job's log: GitHub Actions' ``##[name]`` anywhere in a
    line and ``::name::`` at its start, Azure Pipelines' ``##vso[``. Untrusted names and
    texts in the waterfall (printed when ``CI`` is set) and in our messages stay inert."""
    lines = [
        {"type": "system", "subtype": "init", "session_id": "s-ci", "model": "claude-sonnet-4-6"},
        {"type": "system", "subtype": "task_started", "task_id": "wf", "task_type": "local_workflow",
         "workflow_name": "##[set-output name=deploy]true", "description": "::add-mask::x",
         "session_id": "s-ci"},
        {"type": "system", "subtype": "task_notification", "task_id": "wf", "status": "failed",
         "summary": "::error title=forged::x ##vso[task.setvariable variable=ok]1", "session_id": "s-ci"},
    ]
    data = b"".join(json.dumps(doc).encode() + b"\n" for doc in lines)
    proc = run_bridge(["--exporter", "none", "--capture-content", "--summary", "always"], data,
                      env=clean_env(CI="true"))
    assert proc.returncode == 0 and proc.stdout == data
    err = proc.stderr.decode()
    assert "deploy]true" in err and "title=forged" in err  # the texts are shown
    assert "##[" not in err and "##vso[" not in err
    assert [line for line in err.splitlines() if line.lstrip().startswith("::")] == []


def echo_stream(password: str, token: str, user_password: str) -> bytes:
    """A Claude Code session in which each secret shows its form once (``export API_TOKEN=…``,
    a ``.env`` file's ``DB_PASSWORD=…``, ``password: …`` in the model's prose) and then appears
    bare: the model's prose before the command in the same message, the prose after reading it,
    a command's output echoing it, the arguments of the call the prose announced (whose span
    ends before the prose's)."""
    sid, model = "sess-found-0001", "claude-sonnet-4-5"

    def assistant(mid: str, text: str, tool: str, name: str, args: dict) -> dict:
        return {"type": "assistant", "session_id": sid, "message": {
            "id": mid, "model": model, "role": "assistant", "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [{"type": "text", "text": text}, {"type": "tool_use", "id": tool, "name": name, "input": args}]}}

    def result(tool: str, text: str) -> dict:
        return {"type": "user", "session_id": sid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool, "content": text}]}}

    lines = [
        {"type": "system", "subtype": "init", "session_id": sid, "model": model, "cwd": "/tmp", "tools": ["Bash", "Read"]},
        assistant("msg_1", f"I'll export the token {token} first.", "toolu_1", "Bash",
                  {"command": f"export API_TOKEN={token}"}),
        result("toolu_1", ""),
        assistant("msg_2", "Reading the settings.", "toolu_2", "Read", {"file_path": "/tmp/app/.env"}),
        result("toolu_2", f"DB_HOST=db.internal\nDB_PASSWORD={password}\n"),
        assistant("msg_3", f"The database password is {password}; checking it reaches the app.", "toolu_3",
                  "Bash", {"command": "printenv DB_PASSWORD"}),
        result("toolu_3", password + "\n"),
        assistant("msg_4", f"I'll create the database user with password: {user_password}", "toolu_4", "Bash",
                  {"command": f"./create-user app {user_password}"}),
        result("toolu_4", f"created user app ({user_password})"),
        {"type": "result", "subtype": "success", "is_error": False, "session_id": sid,
         "result": f"Done: the app uses {password}.", "num_turns": 3, "duration_ms": 10},
    ]
    return b"".join(json.dumps(l).encode() + b"\n" for l in lines)


def test_a_secret_found_once_is_hidden_wherever_it_appears_again():
    """With ``--capture-content``, a value the detector found in one place (a command, a file a
    tool read) leaves nowhere: not in the prose around it, not in a command's bare output."""
    password, token, user_password = "Zq8vK2mP9xL4wR", "tk-7Hq2Lm9Xv4Rs8Wd3", "Ab9x2Cd8Ef77"
    data = echo_stream(password, token, user_password)
    _, spans, raw = export(["--capture-content"], data)
    assert len(spans) == 10
    text = json.dumps([asdict(s) for s in spans], ensure_ascii=False)
    for secret in (password, token, user_password):
        assert secret not in text and secret.encode() not in raw, secret
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool")}
    # (printenv of a variable naming a password: the whole output is the secret)
    assert tools["toolu_3"].attributes["gen_ai.tool.call.result"] == "[REDACTED:secret]"
    assert json.loads(tools["toolu_4"].attributes["gen_ai.tool.call.arguments"]) == \
        {"command": "./create-user app [REDACTED:secret]"}
    assert tools["toolu_4"].attributes["gen_ai.tool.call.result"] == "created user app ([REDACTED:secret])"
    chats = [json.loads(s.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"]
             for s in sorted(by_name(spans, "chat"), key=lambda s: s.attributes["gen_ai.response.id"])]
    assert chats == ["I'll export the token [REDACTED:secret] first.", "Reading the settings.",
                     "The database password is [REDACTED:secret]; checking it reaches the app.",
                     "I'll create the database user with password: [REDACTED:secret]"]


def one_call_session(sid: str, tool: str, args: dict, output: str, result: dict) -> bytes:
    """A Claude Code session of one tool call: its ``output`` (an error when ``result`` says
    so), then the ``result`` line's fields."""
    model = "claude-sonnet-4-5"
    lines = [
        {"type": "system", "subtype": "init", "session_id": sid, "model": model, "cwd": "/tmp", "tools": [tool],
         "claude_code_version": "2.1.280"},
        {"type": "assistant", "session_id": sid, "message": {
            "id": "msg_1", "model": model, "role": "assistant", "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": args}]}},
        {"type": "user", "session_id": sid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": output, "is_error": result["is_error"]}]}},
        {"type": "result", "session_id": sid, "num_turns": 1, "duration_ms": 10, **result},
    ]
    return b"".join(json.dumps(l).encode() + b"\n" for l in lines)


@pytest.mark.parametrize(("tool", "args", "output", "result"), [
    # a command's password, repeated in an error result's text
    ("Bash", {"command": "export DB_PASSWORD=Zq8vK2mP9xL4wR && ./migrate"}, "connection refused",
     {"subtype": "success", "is_error": True, "result": "could not connect, password Zq8vK2mP9xL4wR rejected"}),
    # a token a file showed (a tool's output), repeated in a result's errors
    ("Read", {"file_path": "/srv/app/.env"}, "HOST=api01.internal\nAPI_TOKEN=Zq8vK2mP9xL4wR\n",
     {"subtype": "error_during_execution", "is_error": True, "errors": ["key Zq8vK2mP9xL4wR rejected by api01.internal"]}),
    # ... the error's own text, a label in another language in Markdown's bold
    ("Bash", {"command": "./login"}, "denied",
     {"subtype": "success", "is_error": True, "result": "Login failed. **비밀번호**: Zq8vK2mP9xL4wR"}),
    # ... a program's JSON whose '=' is escaped (Gson), read unescaped though not exported
    ("Bash", {"command": "java -jar dump-config.jar"}, '{"env":["DB_PASSWORD\\u003dZq8vK2mP9xL4wR","HOME\\u003d/root"]}',
     {"subtype": "error_during_execution", "is_error": True, "errors": ["role app rejected Zq8vK2mP9xL4wR"]}),
])
def test_a_secret_is_hidden_in_an_error_exported_by_default(tool, args, output, result):
    """Without ``--capture-content`` a tool's arguments and output are not exported, but an
    error result's text is (a status description): the value they showed, repeated bare there,
    was exported. Model output, tool calls and tool outputs are read as they arrive."""
    secret = "Zq8vK2mP9xL4wR"
    data = one_call_session(f"sess-found-{tool}", tool, args, output, result)
    _, spans, raw = export([], data)
    assert len(spans) == 4
    assert secret.encode() not in raw
    session = next(s for s in spans if s.name == "invoke_agent claude-code")
    said = result.get("result") or result["errors"][0]
    assert session.status_message == said.replace(secret, "[REDACTED:secret]")
    assert "[REDACTED:secret]" in session.status_message
    tool_span = next(s for s in spans if s.name == f"execute_tool {tool}")
    assert "gen_ai.tool.call.arguments" not in tool_span.attributes and "gen_ai.tool.call.result" not in tool_span.attributes


def test_a_milk_notice_s_fields_named_for_a_secret_are_redacted_whole():
    """milk's ``permission_denied`` and ``notification`` lines become session events whose
    attributes are the line's fields, objects flattened (``input.password``,
    ``env.GITHUB_TOKEN``, ``var.name``/``var.value``): a value is redacted as in the JSON object
    it came from (by a name it is under, or its pair's name),
    without ``--capture-content``, a number too; the other fields stay, as they would there."""
    lines = [
        {"type": "system", "subtype": "init", "session_id": "s", "seq": 0, "ts": "2026-10-02T12:00:00Z",
         "milk_version": "0.9.0", "agent": {"name": "a", "model": "m"}},
        {"type": "system", "subtype": "permission_denied", "session_id": "s", "seq": 1,
         "ts": "2026-10-02T12:00:01Z", "tool_name": "mcp",
         "input": {"password": "Kp9Lm8Nb7Vc6", "api_key": "Qw3Er4Ty5Ui6Op", "path": "/srv/app",
                   "db_pass": 12345678, "pass_rate": "0.95", "token_count": 5}},
        {"type": "system", "subtype": "notification", "session_id": "s", "seq": 2,
         "ts": "2026-10-02T12:00:02Z", "env": {"GITHUB_TOKEN": "Gt1Gt2Gt3Gt4Gt5"}, "secret": 31415926,
         "var": {"name": "DB_PASSWORD", "value": "S3cr3tValue99"}, "path": {"name": "PATH", "value": "/usr/bin"},
         "password": {"value": "Zx9Yw8Vu7Ts6"}},
        {"type": "result", "subtype": "success", "session_id": "s", "seq": 3, "ts": "2026-10-02T12:00:03Z",
         "is_error": False, "num_turns": 1, "usage": {"input_tokens": 1, "output_tokens": 1}},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint], data, env=clean_env())
        spans = rx.received.wait_for(2, timeout=5)
        raw = without_ids(rx.received.requests)
    assert proc.returncode == 0 and proc.stdout == data
    for secret in ("Kp9Lm8Nb7Vc6", "Qw3Er4Ty5Ui6Op", "Gt1Gt2Gt3Gt4Gt5", "12345678", "31415926", "S3cr3tValue99",
                   "Zx9Yw8Vu7Ts6"):
        assert secret.encode() not in raw
    (session,) = by_name(spans, "invoke_agent")
    events = {name: attrs for name, _, attrs in session.events}
    assert events["permission_denied"] == {
        "tool_name": "mcp", "input.password": "[REDACTED:secret]", "input.api_key": "[REDACTED:secret]",
        "input.path": "/srv/app", "input.db_pass": "[REDACTED:secret]", "input.pass_rate": "0.95",
        "input.token_count": 5}
    assert events["notification"] == {
        "env.GITHUB_TOKEN": "[REDACTED:secret]", "secret": "[REDACTED:secret]", "var.name": "DB_PASSWORD",
        "var.value": "[REDACTED:secret]", "path.name": "PATH", "path.value": "/usr/bin",
        "password.value": "[REDACTED:secret]"}
