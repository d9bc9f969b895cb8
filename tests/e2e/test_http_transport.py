"""OTLP/HTTP to a plain ``http://`` collector goes through the SDK's ``urllib3`` transport
(``requests`` is never imported: less memory at rest), unless ``requests`` would add something:
a proxy that applies to the collector's host, credentials in the URL or a netrc file; then
through ``requests``, as before.
otelbridge runs as a real subprocess; real OTLP receivers listen on 127.0.0.1, one of them
taken for a proxy (it records each request's target)."""

from __future__ import annotations

import base64

import pytest

from otelbridge.exporters import _plain_http_transport
from tests.conftest import EXAMPLES, clean_env, run_bridge, side_by_side
from tests.receivers import HttpReceiver

DATA = (EXAMPLES / "claude-code-session.jsonl").read_bytes()
SPANS = 18  # what DATA gives (the README's waterfall)
NETWORK_VARS = ("NETRC", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
                "https_proxy", "HTTPS_PROXY")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in clean_env().items() if k not in NETWORK_VARS}
    return {**env, **extra}


@pytest.fixture
def no_proxies(monkeypatch, tmp_path):
    for name in NETWORK_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    return monkeypatch


def test_plain_http_without_a_proxy_takes_the_urllib3_transport(no_proxies):
    from opentelemetry.exporter.http.transport._urllib3 import Urllib3HTTPTransport

    transport = _plain_http_transport("http://127.0.0.1:4318/v1/traces")
    assert isinstance(transport, Urllib3HTTPTransport)
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
    with HttpReceiver() as direct, HttpReceiver() as bypassed, HttpReceiver() as proxy:
        def run(endpoint: str, **extra: str):
            return run_bridge(["--endpoint", endpoint, "--flush-timeout", "5"], DATA,
                              env=_env(HTTP_PROXY=proxy.endpoint, **extra))

        via_proxy, via_no_proxy = side_by_side(
            lambda: run(direct.endpoint),
            lambda: run(bypassed.endpoint, NO_PROXY="127.0.0.1"))
        got = bypassed.received.wait_for(SPANS, timeout=5)
        proxied = proxy.received.wait_for(SPANS, timeout=5)
    assert via_proxy.returncode == 0 and via_proxy.stdout == DATA
    assert via_no_proxy.returncode == 0 and via_no_proxy.stdout == DATA
    assert direct.received.requests == []
    assert len(proxied) == SPANS and set(proxy.received.targets) == {f"{direct.endpoint}/v1/traces"}
    assert f"{SPANS} exported, 0 dropped".encode() in via_proxy.stderr
    assert len(got) == SPANS and set(bypassed.received.targets) == {"/v1/traces"}
    assert f"{SPANS} exported, 0 dropped".encode() in via_no_proxy.stderr


def test_credentials_in_the_url_or_a_netrc_file_keep_requests(no_proxies, tmp_path):
    assert _plain_http_transport("http://ann:s3cret@127.0.0.1:4318/v1/traces") is None
    assert _plain_http_transport("http://ann@127.0.0.1:4318/v1/traces") is None
    (tmp_path / ".netrc").write_text("machine collector login ann password s3cret\n")
    assert _plain_http_transport("http://127.0.0.1:4318/v1/traces") is None
    (tmp_path / ".netrc").unlink()
    assert _plain_http_transport("http://127.0.0.1:4318/v1/traces") is not None
    no_proxies.setenv("NETRC", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").write_text("default login ann password s3cret\n")
    assert _plain_http_transport("http://127.0.0.1:4318/v1/traces") is None


def test_credentials_from_the_url_and_from_netrc_still_reach_the_collector(tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login bob password n3trc\n")
    with HttpReceiver() as in_url, HttpReceiver() as in_netrc:
        host = in_url.endpoint.removeprefix("http://")
        from_url, from_netrc = side_by_side(
            lambda: run_bridge(["--endpoint", f"http://ann:s3cret@{host}", "--flush-timeout", "5"], DATA,
                               env=_env(HOME=str(tmp_path))),
            lambda: run_bridge(["--endpoint", in_netrc.endpoint, "--flush-timeout", "5"], DATA,
                               env=_env(HOME=str(tmp_path), NETRC=str(netrc))))
        assert len(in_url.received.wait_for(SPANS, timeout=5)) == SPANS
        assert len(in_netrc.received.wait_for(SPANS, timeout=5)) == SPANS
        url_auth = {h.get("Authorization") for h in in_url.received.headers}
        netrc_auth = {h.get("Authorization") for h in in_netrc.received.headers}
    assert from_url.returncode == 0 and from_url.stdout == DATA
    assert from_netrc.returncode == 0 and from_netrc.stdout == DATA
    assert url_auth == {"Basic " + base64.b64encode(b"ann:s3cret").decode()}
    assert netrc_auth == {"Basic " + base64.b64encode(b"bob:n3trc").decode()}


def test_a_netrc_default_entry_is_not_sent_and_a_configured_header_is_kept(tmp_path):
    """The netrc's ``default`` holds credentials for any host: not sent to the collector; an
    ``authorization`` header of ``OTEL_EXPORTER_OTLP_HEADERS`` wins over a netrc entry for the
    collector's own host (``requests`` alone replaced it by the netrc's)."""
    default, own = tmp_path / "default", tmp_path / "own"
    default.write_text("default login ci password N3trcDefault99\n")
    own.write_text("machine 127.0.0.1 login bob password n3trc\n")
    with HttpReceiver() as rx_default, HttpReceiver() as rx_own:
        by_default, by_header = side_by_side(
            lambda: run_bridge(["--endpoint", rx_default.endpoint, "--flush-timeout", "5"], DATA,
                               env=_env(HOME=str(tmp_path), NETRC=str(default))),
            lambda: run_bridge(["--endpoint", rx_own.endpoint, "--flush-timeout", "5"], DATA,
                               env=_env(HOME=str(tmp_path), NETRC=str(own),
                                        OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20c0llector")))
        assert len(rx_default.received.wait_for(SPANS, timeout=5)) == SPANS
        assert len(rx_own.received.wait_for(SPANS, timeout=5)) == SPANS
        sent_default = {h.get("Authorization") for h in rx_default.received.headers}
        sent_own = {h.get("authorization", h.get("Authorization")) for h in rx_own.received.headers}
    assert by_default.returncode == 0 and by_default.stdout == DATA
    assert by_header.returncode == 0 and by_header.stdout == DATA
    assert sent_default == {None}
    assert sent_own == {"Bearer c0llector"}


def test_an_sdk_exporter_without_transports_gets_its_default(no_proxies, monkeypatch):
    """``opentelemetry-exporter-otlp-proto-http`` before its transports (otelbridge allows it):
    an exporter whose constructor refuses ``_transport`` is built as before. (An older SDK
    cannot be installed beside this one: its constructor is stood in for.)"""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from otelbridge import exporters
    from otelbridge.config import build

    class Older(OTLPSpanExporter):
        def __init__(self, endpoint=None, certificate_file=None, client_key_file=None,
                     client_certificate_file=None, headers=None, timeout=None, compression=None,
                     session=None):
            super().__init__(endpoint, certificate_file, client_key_file, client_certificate_file,
                             headers, timeout, compression, session)

    monkeypatch.setattr(exporters, "import_otlp_exporter", lambda cfg: Older)
    exporter = exporters.otlp_exporter(build(exporter="otlp", protocol="http/protobuf", env={},
                                             endpoint="http://127.0.0.1:4318"))
    assert type(exporter) is Older
    assert exporter._endpoint == "http://127.0.0.1:4318/v1/traces"
    assert type(exporter._client._transport).__name__ == "RequestsHTTPTransport"


def test_the_traces_variable_is_taken_without_the_blanks_around_it():
    """``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` with a line end after it (a value pasted from a
    file) passes the start-up check as the other endpoints do, so it is sent to as they are."""
    with HttpReceiver() as rx:
        run = run_bridge(["--flush-timeout", "5"], DATA,
                         env=_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f" {rx.endpoint}/v1/traces\r\n"))
        got = rx.received.wait_for(SPANS, timeout=5)
    assert run.returncode == 0 and run.stdout == DATA
    assert len(got) == SPANS and set(rx.received.targets) == {"/v1/traces"}
    assert f"{SPANS} exported, 0 dropped".encode() in run.stderr


class _Answering:
    """A real HTTP server on 127.0.0.1 that answers every POST with ``status``, ``headers``
    and ``body`` (a front end moved elsewhere; a web framework's empty answer)."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _through(front: _Answering, credentials: str, tmp_path, flush_s: int):
    """otelbridge run with ``front`` as its endpoint (``credentials`` in its URL) and
    --fail-on-export-error; ``front`` closed after."""
    try:
        return run_bridge(["--endpoint", f"http://{credentials}{front.host}", "--flush-timeout", str(flush_s),
                           "--fail-on-export-error"], DATA, env=_env(HOME=str(tmp_path)))
    finally:
        front.close()


@pytest.mark.parametrize("credentials", ["", "ann:s3cret@"], ids=["urllib3", "requests"])
def test_a_redirect_is_a_failed_export_said_with_where_it_points(tmp_path, credentials):
    """The SDK counts a 3xx as sent, yet follows no redirect: the spans were lost while the run
    said them exported. Now each transport (``requests`` for credentials in the URL) fails it,
    and the one line names where the endpoint points."""
    with HttpReceiver() as rx:
        run = _through(_Answering(308, {"Location": f"{rx.endpoint}/v1/traces"}), credentials, tmp_path, 5)
        assert rx.received.requests == []
    assert run.stdout == DATA
    assert run.returncode == 1
    err = run.stderr.decode()
    assert f"the endpoint answered 308, a redirect to {rx.endpoint}/v1/traces" in err
    assert f"spans {SPANS} built, 0 exported, {SPANS} dropped" in err
    assert "s3cret" not in err


@pytest.mark.parametrize("credentials", ["", "ann:s3cret@"], ids=["urllib3", "requests"])
def test_an_empty_answer_labelled_html_is_a_success(tmp_path, credentials):
    """Web frameworks label an empty answer ``text/html`` (Flask's ``return "", 200``): no
    page, so the spans count as exported, as the SDK counts them."""
    run = _through(_Answering(200, {"Content-Type": "text/html; charset=utf-8"}), credentials, tmp_path, 5)
    assert run.returncode == 0 and run.stdout == DATA
    assert f"spans {SPANS} built, {SPANS} exported, 0 dropped" in run.stderr.decode()


@pytest.mark.parametrize("content_type", [None, "application/xhtml+xml", "text/plain"])
def test_a_page_under_another_label_is_known_by_its_body(tmp_path, content_type):
    """A front end serving its page without a label, as XHTML or as text: an OTLP answer
    (protobuf or JSON) never begins with "<", so the page confirms nothing either."""
    headers = {"Content-Type": content_type} if content_type else {}
    page = b"\n<!DOCTYPE html><html><head><title>Grafana</title></head></html>"
    run = _through(_Answering(200, headers, page), "", tmp_path, 5)
    assert run.stdout == DATA and run.returncode == 1
    err = run.stderr.decode()
    assert f"the endpoint answered with a web page ({content_type or 'no content type'}), not an OTLP response" in err
    assert f"spans {SPANS} built, 0 exported, {SPANS} dropped" in err


@pytest.mark.parametrize("credentials", ["", "ann:s3cret@"], ids=["urllib3", "requests"])
@pytest.mark.parametrize("body, ok", [
    (b"{}", True), (b'{"partialSuccess": {}}', True),  # an OTLP response in JSON (http/json)
    (b'{"status":"Server available","upSince":"2026-12-06T03:00:00Z","uptime":"1m"}', False),
    (b'{"ok": true}', False),
])
def test_a_json_answer_that_is_no_otlp_response_confirms_nothing(tmp_path, credentials, body, ok):
    """A health check or another service answering any POST with 200 and JSON of its own: the
    spans reached no receiver. An OTLP response in JSON (its only field ``partialSuccess``) is
    one."""
    run = _through(_Answering(200, {"Content-Type": "application/json"}, body), credentials, tmp_path, 3)
    assert run.stdout == DATA and run.returncode == (0 if ok else 1)
    err = run.stderr.decode()
    if ok:
        assert f"spans {SPANS} built, {SPANS} exported, 0 dropped" in err
    else:
        assert "the endpoint answered with JSON that is no OTLP response (keys " in err
        assert f"spans {SPANS} built, 0 exported, {SPANS} dropped" in err


@pytest.mark.parametrize("credentials", ["", "ann:s3cret@"], ids=["urllib3", "requests"])
def test_a_plain_text_ok_confirms_nothing(tmp_path, credentials):
    """A health check's port answering any POST with 200 ``OK`` as text: the spans reached no
    receiver (an OTLP answer is protobuf or JSON)."""
    run = _through(_Answering(200, {"Content-Type": "text/plain; charset=utf-8"}, b"OK"), credentials, tmp_path, 3)
    assert run.stdout == DATA and run.returncode == 1
    err = run.stderr.decode()
    assert "the endpoint answered with text (text/plain: 'OK'), not an OTLP response" in err, err
    assert f"spans {SPANS} built, 0 exported, {SPANS} dropped" in err
