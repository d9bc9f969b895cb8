"""Real OTLP receivers for tests: a grpcio ``TraceService`` server and an OTLP/HTTP server, both
on 127.0.0.1, decoding ``ExportTraceServiceRequest`` with ``opentelemetry-proto``.

``Received.spans()`` flattens what arrived into :class:`Span` rows with hex ids.
"""

from __future__ import annotations

import gzip
import ssl
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def any_value(v: AnyValue):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict
    status_code: int
    status_message: str
    events: list
    links: list
    resource: dict
    trace_state: str = ""
    scope: tuple[str, str] = ("", "")
    dropped_attributes: int = 0
    dropped_events: int = 0
    dropped_links: int = 0


@dataclass
class Received:
    requests: list = field(default_factory=list)
    headers: list = field(default_factory=list)
    #: each request's query string (OTLP/HTTP; "" when none)
    queries: list = field(default_factory=list)
    #: each request's target as sent (OTLP/HTTP): ``/v1/traces``, or a whole URL when the
    #: client took this receiver for its proxy
    targets: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, req: trace_service_pb2.ExportTraceServiceRequest, headers=None, query="",
            target="") -> None:
        with self.lock:
            self.requests.append(req)
            self.headers.append(dict(headers or {}))
            self.queries.append(query)
            self.targets.append(target)

    def spans(self) -> list[Span]:
        out = []
        with self.lock:
            reqs = list(self.requests)
        for req in reqs:
            for rs in req.resource_spans:
                resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append(
                            Span(
                                name=s.name,
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_span_id=s.parent_span_id.hex(),
                                kind=s.kind,
                                start_ns=s.start_time_unix_nano,
                                end_ns=s.end_time_unix_nano,
                                attributes={kv.key: any_value(kv.value) for kv in s.attributes},
                                status_code=s.status.code,
                                status_message=s.status.message,
                                events=[
                                    (e.name, e.time_unix_nano,
                                     {kv.key: any_value(kv.value) for kv in e.attributes})
                                    for e in s.events
                                ],
                                links=[(l.trace_id.hex(), l.span_id.hex()) for l in s.links],
                                resource=resource,
                                trace_state=s.trace_state,
                                scope=(ss.scope.name, ss.scope.version),
                                dropped_attributes=s.dropped_attributes_count,
                                dropped_events=s.dropped_events_count,
                                dropped_links=s.dropped_links_count,
                            )
                        )
        return out

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Span]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = self.spans()
            if len(spans) >= count:
                return spans
            time.sleep(0.02)
        return self.spans()


def _answer(rejecting: int, message: str) -> trace_service_pb2.ExportTraceServiceResponse:
    """An export's answer: a partial success rejecting ``rejecting`` spans with ``message``."""
    answer = trace_service_pb2.ExportTraceServiceResponse()
    if rejecting or message:
        answer.partial_success.rejected_spans = rejecting
        answer.partial_success.error_message = message
    return answer


class _Servicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received, delay: float = 0.0, rejecting: int = 0, message: str = "") -> None:
        self.received = received
        self.delay = delay
        self.rejecting, self.message = rejecting, message

    def Export(self, request, context):
        if self.delay:
            time.sleep(self.delay)
        self.received.add(request, context.invocation_metadata())
        return _answer(self.rejecting, self.message)


class GrpcReceiver:
    """``with GrpcReceiver() as r:`` → ``r.endpoint`` (``http://127.0.0.1:PORT``), ``r.received``;
    ``rejecting``/``message``: each export answered with a partial success (a collector that
    rejects that many spans of each request, saying ``message``); ``port`` 0 picks a free one (a
    given port lets a test bring a collector back where it was)."""

    def __init__(self, delay: float = 0.0, credentials: grpc.ServerCredentials | None = None,
                 rejecting: int = 0, message: str = "", port: int = 0) -> None:
        self.received = Received()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(
            _Servicer(self.received, delay, rejecting, message), self.server
        )
        if credentials is None:
            self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")
            self.endpoint = f"http://127.0.0.1:{self.port}"
        else:
            self.port = self.server.add_secure_port("127.0.0.1:0", credentials)
            self.endpoint = f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> "GrpcReceiver":
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop(0)


def otlp_json_request(body: bytes):
    """An OTLP/JSON request body (hex ids, as the specification says) as the protobuf message
    (protobuf's JSON mapping wants base64 ids)."""
    import base64
    import json

    from google.protobuf import json_format

    doc = json.loads(body)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                for item in (span, *span.get("links", ())):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if item.get(key):
                            item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return json_format.ParseDict(doc, trace_service_pb2.ExportTraceServiceRequest())


class HttpReceiver:
    """``with HttpReceiver() as r:`` → ``r.endpoint`` (base URL), ``r.received``; serves
    ``POST /v1/traces`` (protobuf, gzip when ``Content-Encoding`` says so; also as a proxy is
    asked, ``POST http://host:port/v1/traces``); over TLS (``https://`` endpoint) when given an
    ``ssl_context``. ``port`` 0 picks a free one; a given
    port lets a test bring a collector back where it was. ``status`` other than 200: every
    export is answered with it (``401``: a collector that refuses the credentials);
    ``rejecting``/``message``: with a partial success, in the request's encoding."""

    def __init__(
        self, delay: float = 0.0, ssl_context: ssl.SSLContext | None = None, port: int = 0,
        status: int = 200, rejecting: int = 0, message: str = "",
    ) -> None:
        self.received = Received()
        received = received_ref = self.received
        self.posts = 0  # every request, answered or refused
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                receiver.posts += 1
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                # a proxy's request names the whole URL (absolute form): its path is ours
                parts = urlsplit(self.path)
                path, query = parts.path, parts.query
                if path != "/v1/traces" or status != 200:  # ``status``: a collector refusing
                    self.send_response(404 if path != "/v1/traces" else status)
                    self.end_headers()
                    return
                if delay:
                    time.sleep(delay)
                req = trace_service_pb2.ExportTraceServiceRequest()
                as_json = self.headers.get("Content-Type") == "application/json"  # OTLP/JSON
                if as_json:
                    req = otlp_json_request(body)
                else:
                    req.ParseFromString(body)
                received_ref.add(req, dict(self.headers), query, self.path)
                answer = _answer(rejecting, message)
                if as_json:
                    from google.protobuf import json_format

                    payload = json_format.MessageToJson(answer).encode()  # (rejectedSpans as a string)
                else:
                    payload = answer.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/json" if as_json else "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        del received
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        if ssl_context is not None:
            self.server.socket = ssl_context.wrap_socket(self.server.socket, server_side=True)
            self.endpoint = f"https://127.0.0.1:{self.port}"
        # a short poll: ``shutdown()`` waits for the loop's next poll (0.5 s by default, per use)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    def __enter__(self) -> "HttpReceiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
