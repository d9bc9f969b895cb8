"""The exporters otelbridge makes (:class:`otelbridge.export.Exporters` wraps each to count
what it confirmed):

* OTLP — the SDK's ``OTLPSpanExporter`` for ``grpc`` or ``http/protobuf``, or, for
  ``http/json``, the HTTP one sending :func:`otlp_json` bodies; endpoint, headers, TLS and
  compression from the ``OTEL_EXPORTER_OTLP_*`` variables, which the exporters read themselves;
  the timeout from :attr:`Config.otlp_timeout_s` (the variables' milliseconds).
* ``file`` — :class:`OtlpJsonFileExporter`, OTLP/JSON lines.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import stat
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from . import files
from .config import Config
from .environment import default_endpoint, endpoint_used


def import_otlp_exporter(cfg: Config) -> type:
    """The ``OTLPSpanExporter`` class for ``cfg.protocol`` (``ImportError`` if its package is
    missing); importing it costs ~0.2 s (gRPC)."""
    if cfg.protocol == "grpc":
        # gRPC C-core's own log lines (unprefixed, several per failed handshake) stay off our
        # stderr: the exporter says each failure itself. Read as grpc is imported.
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter


#: Each OTLP export's timeout when no variable sets one, in seconds (the specification's and
#: the SDK's 10 s)
DEFAULT_EXPORT_TIMEOUT_S = 10.0


def export_timeout_s(cfg: Config) -> float:
    """Each OTLP export's timeout in seconds, as :func:`otlp_exporter` gives it."""
    return cfg.otlp_timeout_s or DEFAULT_EXPORT_TIMEOUT_S


def otlp_exporter(cfg: Config) -> SpanExporter:
    """The OTLP exporter for ``cfg.protocol`` (``ImportError`` if its package is missing)."""
    OTLPSpanExporter = import_otlp_exporter(cfg)
    if cfg.protocol == "http/json":
        OTLPSpanExporter = _json_over_http(OTLPSpanExporter)
    # the timeout in seconds from the environment's milliseconds (:mod:`otelbridge.environment`),
    # always given: the one a timeout's cause names is the one used
    kwargs = {"timeout": export_timeout_s(cfg)}
    if cfg.protocol == "grpc":
        # an http:// endpoint (the default's too) is plaintext whatever OTEL_EXPORTER_OTLP_INSECURE
        # says, as the specification has it (the SDK would read false there as TLS)
        used, scheme = endpoint_used(cfg.endpoint, os.environ)
        if not used or scheme == "http":
            kwargs["insecure"] = True
        OTLPSpanExporter = _reads_grpc_answers(OTLPSpanExporter)
        return OTLPSpanExporter(**kwargs, **({"endpoint": cfg.endpoint} if cfg.endpoint else {}))
    # a base URL (--endpoint, else OTEL_EXPORTER_OTLP_ENDPOINT when no traces endpoint is
    # set, which the exporter takes as it is): /v1/traces joins its path, before its query
    # (the SDK would append it after: ?code=X/v1/traces)
    base = cfg.endpoint
    url = traces_url(cfg)
    if not base and not url:
        base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or None
    if base:
        parts = urlsplit(base)
        path = parts.path.rstrip("/")
        if not path.endswith("/v1/traces"):
            path += "/v1/traces"
        url = urlunsplit(parts._replace(path=path))
    transport = _plain_http_transport(url or default_endpoint("http/protobuf"))
    if transport is not None:
        try:
            return OTLPSpanExporter(endpoint=url, _transport=transport, **kwargs)
        except TypeError:  # an SDK whose exporter takes no transport: its default, as below
            pass
    return OTLPSpanExporter(endpoint=url, session=_http_session(), **kwargs)


class NotOtlpError(Exception):
    """An answer no OTLP receiver gives, though the SDK would count it as success."""


class TlsMismatch(Exception):
    """TLS to a plain-text endpoint, or a certificate not trusted: no retry can heal it (not a
    connection error, which the SDK retries)."""


#: What ``ssl`` says of a TLS failure that lasts (:class:`TlsMismatch`)
_LASTING_TLS = re.compile(r"WRONG_VERSION_NUMBER|CERTIFICATE_VERIFY_FAILED|wrong version number|certificate verify failed"
                          r"|NO_CERTIFICATE_OR_CRL_FOUND|PEM lib")


#: How every reason :func:`not_otlp` gives begins (:func:`failure_cause` finds it in the SDK's line)
_ANSWERED = "the endpoint answered "


def not_otlp(status: int | None, headers: Mapping[str, str], body: bytes = b"") -> str | None:
    """Why an HTTP answer of ``status`` 2xx or 3xx (``headers``, ``body``) is no OTLP
    receiver's, else ``None``. The SDK counts every status below 400 as sent, but its
    transports follow no redirect, and a web page (a UI's port, a login page) took nothing
    in: the spans would be lost unsaid. A page is known by its label or by its body (markup:
    an OTLP answer, protobuf or JSON, never begins with ``<``); an empty body is no page,
    whatever its label (web frameworks label an empty answer ``text/html``). Other text
    (``text/plain`` ``OK``: a health check) is no OTLP answer either; JSON of another service
    is known by its keys."""
    if status is None or not 200 <= status < 400:
        return None
    if status >= 300:
        return (f"{_ANSWERED}{status}, a redirect to {headers.get('location') or 'elsewhere'}, "
                "which OTLP exporters do not follow: set the endpoint to where it points")
    kind = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if body and (kind == "text/html" or body.lstrip()[:1] == b"<"):
        return (f"{_ANSWERED}with a web page ({kind or 'no content type'}), not an OTLP "
                "response: is it a user interface's port? OTLP/HTTP is usually on port 4318")
    if body.strip() and kind.startswith("text/") and body.lstrip()[:1] != b"{":
        return (f"{_ANSWERED}with text ({kind}: {body.strip()[:20].decode('utf-8', 'replace')!r}), not an "
                "OTLP response: a health check's or a proxy's port? OTLP/HTTP is usually on port 4318")
    other = _json_keys(body) - _OTLP_ANSWER_KEYS
    if other:
        keys = ", ".join(sorted(other)[:3])
        return (f"{_ANSWERED}with JSON that is no OTLP response (keys {keys}): a health "
                "check's or another service's port? OTLP/HTTP is usually on port 4318")
    return None


#: The fields of an OTLP export response in JSON (``ExportTraceServiceResponse``); a protobuf
#: one never begins with ``{``
_OTLP_ANSWER_KEYS = frozenset({"partialSuccess", "partial_success"})


def note_partial_success(body: bytes) -> None:
    """Keeps the ``partial_success`` of an OTLP export's answer (``body``: an
    ``ExportTraceServiceResponse`` in protobuf or JSON) as ``answered.rejected``: (spans the
    collector rejected, its message), or ``None`` when it rejected none and said nothing.
    The SDK reads no answer: a collector's rejection (spans too old, too large) would count
    as sent."""
    rejected, said = 0, ""
    if body.lstrip()[:1] == b"{":
        doc = _json_object(body)
        part = doc.get("partialSuccess") or doc.get("partial_success")
        if isinstance(part, dict):
            count = part.get("rejectedSpans", part.get("rejected_spans", 0))
            rejected = int(count) if isinstance(count, (int, str)) and str(count).isdigit() else 0
            said = str(part.get("errorMessage", part.get("error_message", "")) or "")
    elif body:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        try:
            part = ExportTraceServiceResponse.FromString(body).partial_success
        except DecodeError:
            part = None
        if part is not None:
            rejected, said = part.rejected_spans, part.error_message
    _keep_partial_success(rejected, said)


def _keep_partial_success(rejected: int, said: str) -> None:
    answered.rejected = (rejected, said) if rejected > 0 or said else None


class _GrpcAnswers:
    """A gRPC ``TraceServiceStub`` whose answers' ``partial_success`` is kept
    (:func:`note_partial_success`)."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub

    def Export(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 (the stub's method)
        response = self._stub.Export(*args, **kwargs)
        part = response.partial_success
        _keep_partial_success(part.rejected_spans, part.error_message)
        return response


def _reads_grpc_answers(base: type) -> type:
    """The SDK's OTLP/gRPC exporter, its stub wrapped in :class:`_GrpcAnswers` each time the
    SDK makes one (at start, and again after ``UNAVAILABLE``)."""

    class OtlpGrpcExporter(base):
        def _initialize_channel_and_stub(self) -> None:
            super()._initialize_channel_and_stub()
            if getattr(self, "_client", None) is not None:
                self._client = _GrpcAnswers(self._client)

    return OtlpGrpcExporter


def _json_object(body: bytes) -> dict:
    """``body`` as a JSON object; ``{}`` when it is none."""
    if body.lstrip()[:1] != b"{":
        return {}
    try:
        doc = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _json_keys(body: bytes) -> set[str]:
    """The keys of ``body`` when it is a JSON object, else none."""
    return {str(k) for k in _json_object(body)}


#: A failed export's SDK message → its cause, as a user acts on it: (texts any of which the
#: message holds, the cause). gRPC's and urllib3's wordings both.
_CAUSES = (
    (("ProxyError", "Unable to connect to proxy", "Tunnel connection failed"),
     "the proxy failed (HTTP_PROXY/HTTPS_PROXY; NO_PROXY naming the collector's host bypasses it)"),
    (("Connection refused",), "connection refused: is a collector listening there?"),
    (("Expected SETTINGS frame", "http1.x server"),
     "an HTTP/1 server answered OTLP/gRPC: OTLP/HTTP's port? (gRPC is usually on 4317, or use "
     "--protocol http/protobuf)"),
    (("Connection reset by peer", "Connection aborted", "RemoteDisconnected", "BadStatusLine",
      "Socket closed"),
     "the other end closed the connection: an OTLP receiver of another protocol? (OTLP/gRPC is "
     "usually on port 4317, OTLP/HTTP on 4318: --protocol)"),
    (("NameResolutionError", "Name or service not known", "Domain name not found",
      "Temporary failure in name resolution", "DNS resolution failed"), "the host name is not found"),
    (("WRONG_VERSION_NUMBER",), "TLS to a plain-text endpoint (WRONG_VERSION_NUMBER): use http://"),
    (("Hostname mismatch", "IP address mismatch", "is not in peer certificate", "Hostname Verification Check failed"),
     "the collector's certificate is not issued for the endpoint's host (use a name its "
     "subjectAltName lists, or reissue it for this one)"),
    (("CERTIFICATE_VERIFY_FAILED",),
     "the collector's certificate is not trusted (CERTIFICATE_VERIFY_FAILED: "
     "OTEL_EXPORTER_OTLP_CERTIFICATE names a CA file)"),
    # (urllib3's, also through requests: which of the two it was; gRPC's deadline says neither)
    (("ConnectTimeoutError", "connect timeout="),
     "no connection {within} (OTEL_EXPORTER_OTLP_TIMEOUT): is a collector listening at that "
     "address, or a firewall dropping the packets?"),
    (("Read timed out", "read timeout="),
     "connected, but no answer {within} (OTEL_EXPORTER_OTLP_TIMEOUT): is the collector stuck or "
     "overloaded, or is another program on that port?"),
    (("timed out", "DEADLINE_EXCEEDED", "Deadline Exceeded"),
     "no answer {within} (OTEL_EXPORTER_OTLP_TIMEOUT): is a collector listening and answering there, or a "
     "firewall dropping the packets?"),
)
_HTTP_STATUS = re.compile(r"\bcode: (\d{3})\b")
#: ``status``: the HTTP status of the last answer an export on this thread got, and ``error``:
#: the last request's failure (the SDK's final line after retries names neither: "due to
#: timeout, max retries or shutdown");
#: ``rejected``: its partial success (:func:`note_partial_success`)
answered = threading.local()
_GRPC_STATUS = re.compile(r"StatusCode\.([A-Z_]+)")
_STATUS_HINTS = {
    "429": "the collector limits how much it takes (rate limited: send less, or raise its limits)",
    "502": "a proxy before the collector got no answer from it",
    "503": "the collector is unavailable (overloaded or starting)",
    "504": "a proxy before the collector got no answer from it in time",
    "401": "the collector wants credentials (OTEL_EXPORTER_OTLP_HEADERS)",
    "403": "the credentials are refused (OTEL_EXPORTER_OTLP_HEADERS)",
    "404": "no OTLP receiver at that path",
    "UNAUTHENTICATED": "the collector wants credentials (OTEL_EXPORTER_OTLP_HEADERS)",
    "PERMISSION_DENIED": "the credentials are refused (OTEL_EXPORTER_OTLP_HEADERS)",
    "UNIMPLEMENTED": "no OTLP trace receiver there",
}


def traces_url(cfg: Config) -> str | None:
    """The URL OTLP/HTTP sends to as given (the OTLP exporter specification): the traces
    variable's, without blanks around it (the SDK would take them into the URL), unless
    ``--endpoint`` is set; ``None``: a base URL is used, ``/v1/traces`` added to its path."""
    return None if cfg.endpoint else os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or None


def refused_hint(cfg: Config) -> str:
    """What the hint to a refused connection says: that OTLP/gRPC goes through a proxy (gRPC
    reads ``grpc_proxy``, ``https_proxy``, ``http_proxy``: a runner's proxy refuses, not the
    collector), or why the exporter sends to its default endpoint, on localhost; ``""``: neither."""
    from .redact import endpoint as printable

    names = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
    if cfg.protocol == "grpc":
        from urllib.parse import urlsplit
        from urllib.request import proxy_bypass_environment

        env = {k.lower(): v for k, v in os.environ.items()}
        proxy = next((v for v in (env.get("grpc_proxy"), env.get("https_proxy"), env.get("http_proxy")) if v), None)
        used = endpoint_used(cfg.endpoint, os.environ)[0].strip() or default_endpoint("grpc")
        host = urlsplit(used if "://" in used else f"//{used}").hostname or ""
        if proxy and not proxy_bypass_environment(host):
            return (f"through the proxy {printable(proxy)} (grpc_proxy/https_proxy/http_proxy): "
                    "no_proxy naming the collector's host bypasses it")
    if cfg.endpoint or any(os.environ.get(n) and n not in cfg.ignored_env for n in names):
        return ""
    if any(n in cfg.ignored_env for n in names):  # (out of the environment by now)
        return "the default, used in place of the endpoint said unusable at start"
    return ("no endpoint is set, this is the default: set --endpoint or OTEL_EXPORTER_OTLP_ENDPOINT, "
            "or use --exporter none where there is no collector")


def path_hint(cfg: Config) -> str:
    """What the hint to an HTTP 404 says of the URL's path: the traces variable is used as
    given (:func:`traces_url`), a base URL (``--endpoint``, the other variable) gets
    ``/v1/traces``; a collector takes ``/v1/traces`` at its root."""
    if cfg.protocol != "grpc" and traces_url(cfg):
        return ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as given: end it with /v1/traces, as a "
                "collector takes it at its root")
    return "otelbridge adds /v1/traces to the endpoint's path; a collector takes /v1/traces at its root"


def failure_cause(message: str, timeout_s: float | None = None) -> str | None:
    """What an OTLP exporter's failure ``message`` (the SDK's log line) says went wrong, as one
    short clause with what to check; ``None`` when it is none of the known failures.
    ``timeout_s``: the export's timeout, which a timeout's cause names."""
    ours = message.find(_ANSWERED)  # (not_otlp's refusal, as the SDK logs it: a cause already)
    if ours >= 0:
        return message[ours:].splitlines()[0]
    for needles, cause in _CAUSES:
        if any(n in message for n in needles):
            return cause.replace("{within}", f"within {timeout_s:g} s" if timeout_s else "within the timeout")
    http = _HTTP_STATUS.search(message)
    grpc = _GRPC_STATUS.search(message)
    if http is not None:
        status, name = http.group(1), f"HTTP {http.group(1)}"
    elif grpc is not None and grpc.group(1) != "UNAVAILABLE":
        status, name = grpc.group(1), f"gRPC {grpc.group(1)}"
    else:
        return None
    hint = _STATUS_HINTS.get(status)
    return f"{name}: {hint}" if hint else f"{name} from the collector"


def _plain_http_transport(url: str):
    """The SDK's ``urllib3`` transport for a plain ``http://`` collector that ``requests``
    would send nothing more to, else ``None`` (the SDK's default, ``requests``). ``requests``
    adds what the environment configures: a proxy (``*_PROXY``/``NO_PROXY``, or the system's),
    credentials (the URL's ``user:password@``, a netrc file), CA bundles (``https://``); with
    any of them, or a credential-provider session, it stays. Same requests otherwise, and the
    same retries (the SDK's); ``requests`` and its character detection stay unimported: ~3.5 MB
    less at rest. ``None`` too when the SDK predates its transports."""
    from urllib.request import getproxies, proxy_bypass

    parts = urlsplit(url)
    if parts.scheme.lower() != "http" or "@" in parts.netloc or _netrc_path() is not None or _credential_provider():
        return None
    proxies = getproxies()
    if (proxies.get("http") or proxies.get("all")) and not proxy_bypass(parts.hostname or ""):
        return None
    try:
        from opentelemetry.exporter.http.transport._urllib3 import Urllib3HTTPResult, Urllib3HTTPTransport
    except ImportError:
        return None

    class OtlpAnswersOnly(Urllib3HTTPTransport):
        """The SDK's transport; an answer :func:`not_otlp` refuses is a failed request."""

        def request(self, *args: Any, **kwargs: Any) -> Any:
            result = super().request(*args, **kwargs)
            answered.status, answered.error = result.status_code, result.error
            reason = not_otlp(result.status_code, result.headers(), result.content()) if result.status_code else None
            if reason is None and result.status_code == 200:
                note_partial_success(result.content())
            return result if reason is None else Urllib3HTTPResult(error=NotOtlpError(reason))

    return OtlpAnswersOnly()


def _credential_provider() -> bool:
    """Whether the SDK is told to make its ``requests`` session itself
    (``_OTEL_PYTHON_EXPORTER_OTLP_HTTP[_TRACES]_CREDENTIAL_PROVIDER``)."""
    return any(k.startswith("_OTEL_PYTHON_EXPORTER_OTLP_HTTP") and k.endswith("CREDENTIAL_PROVIDER")
               for k in os.environ)


def _netrc_path() -> str | None:
    """The netrc file where ``requests`` looks for one (``$NETRC``, else ``~/.netrc``,
    ``~/_netrc``), ``None``: none there."""
    named = os.environ.get("NETRC")
    places = (named,) if named is not None else ("~/.netrc", "~/_netrc")
    return next((p for p in map(os.path.expanduser, places) if os.path.exists(p)), None)


def _collector_auth(request: Any) -> Any:
    """The session's ``auth`` (so that ``requests`` reads no netrc of its own): an
    ``authorization`` header of ``OTEL_EXPORTER_OTLP_HEADERS`` as it is; else Basic from the
    endpoint's ``user:password@``; else from the netrc entry naming the collector's host — not
    the netrc's ``default`` (credentials for any host: no one chose to send them to a
    telemetry endpoint, nor to replace a configured header with them)."""
    import netrc

    from requests.auth import HTTPBasicAuth
    from requests.utils import get_auth_from_url

    if "Authorization" in request.headers:
        return request
    user, password = get_auth_from_url(request.url)
    path = None if user or password else _netrc_path()
    if path is not None:
        try:
            entry = netrc.netrc(path).hosts.get(urlsplit(request.url).hostname or "")
        except (netrc.NetrcParseError, OSError):
            entry = None
        if entry:
            user, password = entry[0] or entry[1] or "", entry[2] or ""
    return HTTPBasicAuth(user, password)(request) if user or password else request


def _json_over_http(base: type) -> type:
    """``http/json``: the SDK's OTLP/HTTP exporter (endpoint, headers, TLS, compression, timeout
    and retries as configured) sending :func:`otlp_json` bodies as ``application/json``."""
    encoder = msgspec.json.Encoder()

    class OtlpJsonHttpExporter(base):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(headers={"Content-Type": "application/json"}, **kwargs)

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            if self._shutdown:
                return SpanExportResult.FAILURE
            result = self._client.export(encoder.encode(otlp_json(spans)))
            return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE

    return OtlpJsonHttpExporter


#: The variables naming the CA file the HTTP exporter verifies the collector with.
CERTIFICATE_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE")


def _http_session():
    """A ``requests`` session that refuses what :func:`not_otlp` refuses and keeps the
    exporter's ``verify`` when a CA file is configured (``OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE``);
    ``None`` when a credential-provider session is (the exporter then builds its own).

    ``requests`` lets ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` override a session's ``verify``
    (psf/requests#4726, #3829): on a machine or CI image that sets them — common — the
    configured CA would be ignored and a collector with a private CA refused."""
    if _credential_provider():
        return None
    import requests

    class Session(requests.Session):
        def send(self, request, **kwargs):  # type: ignore[no-untyped-def]
            try:
                return super().send(request, **kwargs)
            except requests.exceptions.SSLError as exc:
                if _LASTING_TLS.search(str(exc)) is None:
                    answered.error = exc
                    raise
                # a protocol or certificate mismatch does not heal: said at once, not retried
                # until --flush-timeout (the SDK retries what it takes for a connection error)
                raise TlsMismatch(str(exc)) from None
            except requests.exceptions.RequestException as exc:
                answered.error = exc
                raise

    class PinnedVerifySession(Session):
        def merge_environment_settings(self, url, proxies, stream, verify, cert):
            merged = super().merge_environment_settings(url, proxies, stream, verify, cert)
            if verify is None:
                merged["verify"] = self.verify
            return merged

    pinned = any(os.environ.get(v) for v in CERTIFICATE_VARIABLES)
    session = PinnedVerifySession() if pinned else Session()
    session.auth = _collector_auth
    session.hooks["response"].append(_refuse_non_otlp)
    return session


def _refuse_non_otlp(response: Any, *args: Any, **kwargs: Any) -> None:
    """A ``requests`` response hook: raises :class:`NotOtlpError` for what :func:`not_otlp`
    refuses (the SDK's transport makes it a failed request)."""
    answered.status = response.status_code
    reason = not_otlp(response.status_code, response.headers, response.content)
    if reason is not None:
        raise NotOtlpError(reason)
    if response.status_code == 200:
        note_partial_success(response.content)


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(doc: dict) -> None:
    for key in _ID_KEYS:
        value = doc.get(key)
        if value:
            doc[key] = base64.b64decode(value).hex()


def otlp_json(spans: Sequence[ReadableSpan]) -> dict:
    """``spans`` as one OTLP/JSON ``TracesData`` object: lowerCamelCase keys, trace and span ids
    as hex (not protobuf JSON's base64), 64-bit integers (times in ns) as strings, enums as
    integers — the OTLP specification's JSON encoding."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                _hex_ids(span)
                for link in span.get("links", ()):
                    _hex_ids(link)
    return doc


class OtlpJsonFileExporter(SpanExporter):
    """Appends each export batch to ``path`` as one OTLP/JSON line (:func:`otlp_json`).

    The file is created with mode 0600 (an existing regular file of ours is set to 0600 too).
    Raises ``OSError`` when ``path`` cannot be opened; a failed write is an export failure.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = files.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC)
        st = os.fstat(self._fd)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
            os.fchmod(self._fd, 0o600)
        self._lock = threading.Lock()
        self._encoder = msgspec.json.Encoder()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        line = self._encoder.encode(otlp_json(spans)) + b"\n"
        with self._lock:
            if self._fd < 0:
                return SpanExportResult.FAILURE
            st = os.fstat(self._fd)
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(self._fd, view):]
            except OSError:  # (a full disk): no half line stays for the next batch to follow
                written = len(line) - len(view)
                with contextlib.suppress(OSError):  # (only when ours are its last bytes: a
                    # second writer to the file may have appended since)
                    if written and stat.S_ISREG(st.st_mode) and os.fstat(self._fd).st_size == st.st_size + written:
                        os.ftruncate(self._fd, st.st_size)
                raise
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
