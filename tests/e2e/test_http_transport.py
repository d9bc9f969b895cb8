"""OTLP/HTTP to a plain ``http://`` collector goes through the SDK's ``urllib3`` transport
(``requests`` is never imported: less memory at rest), unless a proxy variable applies to the
collector's host: then through ``requests``, which honours ``HTTP_PROXY``/``NO_PROXY`` as before.
otelbridge runs as a real subprocess; a recording proxy and a real OTLP receiver listen on
127.0.0.1."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from otelbridge.exporters import _plain_http_transport
from tests.conftest import EXAMPLES, clean_env, run_bridge, side_by_side
from tests.receivers import HttpReceiver

DATA = (EXAMPLES / "claude-code-session.jsonl").read_bytes()
SPANS = 18  # what DATA gives (the README's waterfall)
NO_PROXY_VARS = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
                 "https_proxy", "HTTPS_PROXY")


class RecordingProxy:
    """An HTTP proxy that forwards nothing: it records each request line's target (an absolute
    URI when the client speaks to it as a proxy) and answers as a collector would."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        targets = self.targets

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                targets.append(self.path)
                body = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in clean_env().items() if k not in NO_PROXY_VARS}
    return {**env, **extra}


@pytest.fixture
def no_proxies(monkeypatch):
    for name in NO_PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_plain_http_without_a_proxy_takes_the_urllib3_transport(no_proxies):
    transport = _plain_http_transport("http://127.0.0.1:4318/v1/traces")
    assert type(transport).__name__ == "Urllib3HTTPTransport"
    assert _plain_http_transport("https://collector.example:4318/v1/traces") is None  # CA bundles: requests


@pytest.mark.parametrize("variables, urllib3", [
    ({"HTTP_PROXY": "http://proxy.example:3128"}, False),
    ({"http_proxy": "http://proxy.example:3128"}, False),
    ({"ALL_PROXY": "http://proxy.example:3128"}, False),
    ({"HTTP_PROXY": "http://proxy.example:3128", "NO_PROXY": "127.0.0.1"}, True),
    ({"HTTP_PROXY": "http://proxy.example:3128", "NO_PROXY": "*"}, True),
    ({"HTTPS_PROXY": "http://proxy.example:3128"}, True),  # not for an http:// collector
    ({"_OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER": "x"}, False),
])
def test_a_proxy_or_credential_provider_keeps_requests(no_proxies, variables, urllib3):
    for name, value in variables.items():
        no_proxies.setenv(name, value)
    transport = _plain_http_transport("http://127.0.0.1:4318/v1/traces")
    assert (transport is not None) is urllib3


def test_a_proxy_variable_still_routes_the_export_and_no_proxy_still_bypasses_it():
    with HttpReceiver() as direct, HttpReceiver() as bypassed, RecordingProxy() as proxy:
        def run(endpoint: str, **extra: str):
            return run_bridge(["--endpoint", endpoint, "--flush-timeout", "5"], DATA,
                              env=_env(HTTP_PROXY=proxy.url, **extra))

        via_proxy, via_no_proxy = side_by_side(
            lambda: run(direct.endpoint),
            lambda: run(bypassed.endpoint, NO_PROXY="127.0.0.1"))
        got = bypassed.received.wait_for(SPANS, timeout=5)
    assert via_proxy.returncode == 0 and via_proxy.stdout == DATA
    assert via_no_proxy.returncode == 0 and via_no_proxy.stdout == DATA
    assert direct.received.requests == []
    assert proxy.targets and set(proxy.targets) == {f"{direct.endpoint}/v1/traces"}
    assert f"{SPANS} exported, 0 dropped".encode() in via_proxy.stderr
    assert len(got) == SPANS
    assert f"{SPANS} exported, 0 dropped".encode() in via_no_proxy.stderr
