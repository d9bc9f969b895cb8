"""Stage 5: the TracerProvider, its exporters, export accounting and the bounded shutdown.

* ``otlp`` — ``OTLPSpanExporter`` from ``opentelemetry-exporter-otlp-proto-grpc`` or ``-http``
  (by :attr:`Config.protocol`); endpoint, headers, timeout, TLS from the ``OTEL_EXPORTER_OTLP_*``
  variables, which the exporters read themselves; ``--endpoint`` overrides the endpoint (for
  HTTP it is the base URL: ``/v1/traces`` is appended, as the exporter does for the env var).
* ``console`` — the SDK's ``ConsoleSpanExporter`` pointed at **stderr** (its default is stdout,
  which belongs to the stream).
* ``file`` — :class:`OtlpJsonFileExporter`: OTLP/JSON lines in ``--output`` (one ``TracesData``
  object per line and export batch, hex ids, 64-bit integers as strings, enums as integers: what
  the collector's ``otlpjsonfile`` receiver and ``otel-tui --from-json-file`` read), appended to,
  created with mode 0600. Encoded with the SDK's own OTLP protobuf encoder and protobuf's
  ``json_format``; the ids ``json_format`` writes as base64 are rewritten as hex.
* ``none`` — spans are built (so counts and summaries work) but not exported.

The resource (:func:`make_resource`) carries the ``cicd.*`` and ``vcs.*`` semantic-convention
attributes when run in GitHub Actions (``GITHUB_ACTIONS``) or GitLab CI (``GITLAB_CI``), read from
their environment (:func:`ci_resource_attributes`); ``OTEL_RESOURCE_ATTRIBUTES`` wins over them.

Nothing secret reaches stderr: every log record (ours and the SDK's) passes :class:`_SecretFilter`
— the values of ``OTEL_EXPORTER_OTLP_HEADERS``/``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` (auth tokens)
masked, URL credentials and query strings cut, one line — and every endpoint we name goes
through :func:`otelbridge.redact.endpoint`. TLS (``https://`` endpoints,
``OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE``, ``_CLIENT_CERTIFICATE``, ``_CLIENT_KEY``) is the
exporters' own: ``--endpoint`` passes only the endpoint, so they still read those variables.

Shutdown is bounded: :meth:`Exporters.shutdown` gives ``provider.shutdown()`` at most
``flush_timeout_s`` in a daemon thread (the SDK's own shutdown can block 7–30 s on a dead endpoint
and ``force_flush`` ignores its timeout), then reports what was confirmed exported.
"""

from __future__ import annotations

import base64
import logging
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec
from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)

from . import __version__, redact
from .config import Config, without
from .spans import PresetIdGenerator
from .stats import Stats

log = logging.getLogger("otelbridge")


class CountingExporter(SpanExporter):
    """Delegates to ``inner`` and counts spans whose export was confirmed (``exported``) or
    failed (``failed``). Exceptions from ``inner`` are caught and counted as failures."""

    #: An export running longer than this (seconds) marks the exporter as stuck.
    STUCK_S = 1.0

    def __init__(self, inner: SpanExporter, label: str) -> None:
        self.inner = inner
        self.label = label
        self.exported = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._last_ok = True
        self._busy_since: float | None = None
        #: called (on the exporting thread) after each export is counted
        self.on_export: Callable[[], None] | None = None

    def healthy(self) -> bool:
        """True when the last export succeeded and none has been running for :data:`STUCK_S`."""
        busy = self._busy_since
        return self._last_ok and (busy is None or time.monotonic() - busy < self.STUCK_S)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._busy_since = time.monotonic()
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # never let an exporter bug escape into the SDK thread
            log.warning("export to %s raised %s", self.label, type(exc).__name__)
            result = SpanExportResult.FAILURE
        self._busy_since = None
        self._last_ok = result == SpanExportResult.SUCCESS
        with self._lock:
            if result == SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
        if self.on_export is not None:
            self.on_export()
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _EndCounter(SpanProcessor):
    """Counts sampled spans handed to the exporters (``on_end`` is only called for those)."""

    def __init__(self) -> None:
        self.ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        if span.context.trace_flags.sampled:  # a recorded, unsampled span is not exported
            self.ended += 1


class _OnceFilter(logging.Filter):
    """Lets the first export-failure message of the SDK through (one line), counts the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.suppressed = 0
        self._seen = False
        #: a pipe shared by processes that export (export_processes.py): the one that reads its
        #: single byte says the first message for all
        self.token_fd: int | None = None

    def _first(self) -> bool:
        """True for the first message of this process, and of all sharing :attr:`token_fd`."""
        if self._seen:
            return False
        self._seen = True
        if self.token_fd is None:
            return True
        try:
            os.set_blocking(self.token_fd, False)
            return os.read(self.token_fd, 1) == b"!"
        except OSError:
            return False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and record.name.startswith("opentelemetry"):
            if not self._first():
                self.suppressed += 1
                return False
            msg = record.getMessage().splitlines()[0] if record.getMessage() else ""
            if len(msg) > 300:  # cut at a word, not inside one
                msg = msg[:300].rsplit(" ", 1)[0] + " …"
            record.msg, record.args = msg + " (further export messages suppressed)", None
            record.exc_info = record.exc_text = None
        return True


#: The variables whose values are OTLP headers (auth tokens): never printed.
HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")


class _SecretFilter(logging.Filter):
    """Makes every record safe for stderr before it is formatted: one line
    (:func:`otelbridge.redact.message`: ``secrets`` masked, URL credentials and query strings
    cut, escapes stripped, default patterns applied), an exception reduced to its type and text,
    no traceback. The SDK prints a malformed ``OTEL_EXPORTER_OTLP_HEADERS`` item verbatim;
    this is what keeps it off the terminal."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            text = f"{text} ({type(exc).__name__}: {exc})"
        record.msg, record.args = redact.message(text, self.secrets), None
        record.exc_info = record.exc_text = record.stack_info = None
        return True


class _Formatter(logging.Formatter):
    """``otelbridge: MESSAGE`` for our own records, ``otelbridge: LOGGER: MESSAGE`` for a
    library's (``opentelemetry.sdk...``), so that the source of a line is known."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.name == "otelbridge" or record.name.startswith("otelbridge."):
            return f"otelbridge: {message}"
        return f"otelbridge: {record.name}: {message}"


def configure_logging(env: dict[str, str] | None = None) -> _OnceFilter:
    """All logging to stderr, one line each, header values masked; the SDK's repeated export
    errors said once. ``env`` (default ``os.environ``) supplies the header variables."""
    env = os.environ if env is None else env
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    handler.addFilter(_SecretFilter(redact.header_secrets(*(env.get(v) for v in HEADER_VARIABLES))))
    once = _OnceFilter()
    handler.addFilter(once)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    return once


def share_first_message(token_fd: int) -> None:
    """Processes that export side by side say the SDK's first export-failure message once for
    all: the installed :class:`_OnceFilter` (see :func:`configure_logging`) speaks only if it
    takes the one byte of ``token_fd``'s pipe."""
    for handler in logging.getLogger().handlers:
        for filt in handler.filters:
            if isinstance(filt, _OnceFilter):
                filt.token_fd = token_fd


def _endpoint_label(cfg: Config) -> str:
    """The endpoint as we name it on stderr: no credentials, no query string."""
    env = {k: v for k, v in os.environ.items() if k not in cfg.ignored_env}
    return redact.endpoint(
        cfg.endpoint
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or ("localhost:4317" if cfg.protocol == "grpc" else "localhost:4318")
    )


def import_otlp_exporter(cfg: Config) -> type:
    """The ``OTLPSpanExporter`` class for ``cfg.protocol`` (``ImportError`` if its package is
    missing); importing it costs ~0.2 s (gRPC)."""
    if cfg.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter


def otlp_exporter(cfg: Config) -> SpanExporter:
    """The OTLP exporter for ``cfg.protocol`` (``ImportError`` if its package is missing)."""
    OTLPSpanExporter = import_otlp_exporter(cfg)
    if cfg.protocol == "http/json":
        OTLPSpanExporter = _json_over_http(OTLPSpanExporter)
    if cfg.protocol == "grpc":
        return OTLPSpanExporter(endpoint=cfg.endpoint) if cfg.endpoint else OTLPSpanExporter()
    url = None
    if cfg.endpoint:
        url = cfg.endpoint.rstrip("/")
        if not url.endswith("/v1/traces"):
            url += "/v1/traces"
    return OTLPSpanExporter(endpoint=url, session=_http_session())


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
    """A ``requests`` session that keeps the exporter's ``verify`` (the CA file of
    ``OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE``), or ``None`` when no CA file is configured or a
    credential-provider session is (the exporter then builds its own).

    ``requests`` lets ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` override a session's ``verify``
    (psf/requests#4726, #3829): on a machine or CI image that sets them — common — the
    configured CA would be ignored and a collector with a private CA refused."""
    if not any(os.environ.get(v) for v in CERTIFICATE_VARIABLES):
        return None
    if any(k.startswith("_OTEL_PYTHON_EXPORTER_OTLP_HTTP") and k.endswith("CREDENTIAL_PROVIDER")
           for k in os.environ):
        return None
    import requests

    class PinnedVerifySession(requests.Session):
        def merge_environment_settings(self, url, proxies, stream, verify, cert):
            merged = super().merge_environment_settings(url, proxies, stream, verify, cert)
            if verify is None:
                merged["verify"] = self.verify
            return merged

    return PinnedVerifySession()


def _github(env: Mapping[str, str]) -> dict[str, str | None]:
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    repo = env.get("GITHUB_REPOSITORY")
    run_id = env.get("GITHUB_RUN_ID")
    run_url = None
    if repo and run_id:
        run_url = f"{server}/{repo}/actions/runs/{run_id}"
        if env.get("GITHUB_RUN_ATTEMPT"):
            run_url += f"/attempts/{env['GITHUB_RUN_ATTEMPT']}"
    ref = env.get("GITHUB_REF", "")
    change = ref.split("/")[2] if ref.startswith("refs/pull/") and ref.count("/") >= 3 else None
    return {
        "cicd.pipeline.name": env.get("GITHUB_WORKFLOW"),
        "cicd.pipeline.run.id": run_id,
        "cicd.pipeline.run.url.full": run_url,
        "cicd.pipeline.task.name": env.get("GITHUB_JOB"),
        "cicd.worker.name": env.get("RUNNER_NAME"),
        "vcs.provider.name": "github",
        "vcs.repository.url.full": f"{server}/{repo}" if repo else None,
        "vcs.repository.name": repo.rsplit("/", 1)[-1] if repo else None,
        "vcs.ref.head.name": env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME"),
        "vcs.ref.head.revision": env.get("GITHUB_SHA"),
        "vcs.ref.type": env.get("GITHUB_REF_TYPE"),
        "vcs.change.id": change,
    }


def _gitlab(env: Mapping[str, str]) -> dict[str, str | None]:
    return {
        "cicd.pipeline.name": env.get("CI_PIPELINE_NAME"),
        "cicd.pipeline.run.id": env.get("CI_PIPELINE_ID"),
        "cicd.pipeline.run.url.full": env.get("CI_PIPELINE_URL"),
        "cicd.pipeline.task.name": env.get("CI_JOB_NAME"),
        "cicd.pipeline.task.run.id": env.get("CI_JOB_ID"),
        "cicd.pipeline.task.run.url.full": env.get("CI_JOB_URL"),
        "cicd.worker.id": env.get("CI_RUNNER_ID"),
        "cicd.worker.name": env.get("CI_RUNNER_DESCRIPTION"),
        "vcs.provider.name": "gitlab",
        "vcs.repository.url.full": env.get("CI_PROJECT_URL"),
        "vcs.repository.name": env.get("CI_PROJECT_NAME"),
        "vcs.ref.head.name": env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME") or env.get("CI_COMMIT_REF_NAME"),
        "vcs.ref.head.revision": env.get("CI_COMMIT_SHA"),
        "vcs.ref.type": "tag" if env.get("CI_COMMIT_TAG") else "branch",
        "vcs.change.id": env.get("CI_MERGE_REQUEST_IID"),
    }


def ci_resource_attributes(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``cicd.*`` / ``vcs.*`` resource attributes (OpenTelemetry semantic conventions,
    "CICD" and "VCS" resources) of the CI system we run in, from its variables:

    * GitHub Actions (``GITHUB_ACTIONS=true``): ``GITHUB_WORKFLOW``, ``GITHUB_RUN_ID``,
      ``GITHUB_RUN_ATTEMPT``, ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_JOB``,
      ``RUNNER_NAME``, ``GITHUB_HEAD_REF``/``GITHUB_REF_NAME``, ``GITHUB_REF_TYPE``, ``GITHUB_SHA``,
      ``GITHUB_REF`` (``refs/pull/N/merge`` → ``vcs.change.id``);
    * GitLab CI (``GITLAB_CI=true``): ``CI_PIPELINE_NAME``, ``CI_PIPELINE_ID``, ``CI_PIPELINE_URL``,
      ``CI_JOB_NAME``, ``CI_JOB_ID``, ``CI_JOB_URL``, ``CI_RUNNER_ID``, ``CI_RUNNER_DESCRIPTION``,
      ``CI_PROJECT_URL``, ``CI_PROJECT_NAME``, ``CI_MERGE_REQUEST_SOURCE_BRANCH_NAME``/
      ``CI_COMMIT_REF_NAME``, ``CI_COMMIT_SHA``, ``CI_COMMIT_TAG``, ``CI_MERGE_REQUEST_IID``.

    Empty and missing values are left out; values pass through ``redact.clean``. ``{}`` elsewhere.
    """
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") == "true":
        found = _github(env)
    elif env.get("GITLAB_CI") == "true":
        found = _gitlab(env)
    else:
        return {}
    return {k: redact.clean(v) for k, v in found.items() if v}


class HashOnceResource(Resource):
    """A ``Resource`` that computes its hash once. The SDK's OTLP encoder groups spans by
    resource, hashing the resource of every span it encodes, and ``Resource.__hash__``
    JSON-encodes all its attributes each time (~3.6 µs a span); a resource's attributes are
    immutable, so the first hash holds. Equality is ``Resource``'s."""

    _hash: int | None = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = super().__hash__()
        return self._hash


def make_resource(env: Mapping[str, str] | None = None) -> Resource:
    """``Resource.create`` (applies ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``) with
    ``service.name = otelbridge`` when neither names a service, and the CI attributes of
    :func:`ci_resource_attributes` (``OTEL_RESOURCE_ATTRIBUTES`` wins over them); a
    :class:`HashOnceResource`."""
    resource = Resource.create({"telemetry.distro.name": "otelbridge",
                                "telemetry.distro.version": __version__,
                                **ci_resource_attributes(env)})
    resource = resource.merge(OTELResourceDetector().detect())
    name = resource.attributes.get(SERVICE_NAME)
    if not name or str(name).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "otelbridge"}))
    return HashOnceResource(resource.attributes, resource.schema_url)


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
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
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
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view):]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _queue_of(bsp: BatchSpanProcessor) -> tuple[Any, Any]:
    """(queue, its maximum size) of the SDK's batch processor — private state: ``None`` where a
    version of the SDK has it elsewhere."""
    inner = getattr(bsp, "_batch_processor", None)
    return getattr(inner, "_queue", None), getattr(inner, "_max_queue_size", None)


class Exporters:
    """Owns the provider and its processors for one run. ``resource``: the run's resource when
    it is made elsewhere (the export processes share their parent's: one ``service.instance.id``
    a run); else :func:`make_resource`."""

    def __init__(self, cfg: Config, stats: Stats, resource: Resource | None = None) -> None:
        with without(cfg.ignored_env):  # values said unusable at start are not the SDK's to read
            self._make(cfg, stats, resource)

    def _make(self, cfg: Config, stats: Stats, resource: Resource | None) -> None:
        self.cfg = cfg
        self.stats = stats
        self.ids = PresetIdGenerator()
        self.provider = TracerProvider(
            resource=resource if resource is not None else make_resource(), id_generator=self.ids,
            shutdown_on_exit=False,
        )
        self.counter = _EndCounter()
        self.provider.add_span_processor(self.counter)
        self.counted: list[CountingExporter] = []
        self._queues: list[tuple[CountingExporter, BatchSpanProcessor]] = []
        #: :meth:`pace` and :meth:`wait_for_room` never wait past this ``time.monotonic()``
        #: instant, nor past what :attr:`deadline_source` says as they wait (an end set by
        #: another process: the export processes' shared deadline)
        self.pace_until = float("inf")
        self.deadline_source: Callable[[], float] | None = None
        delay = None if os.environ.get("OTEL_BSP_SCHEDULE_DELAY") else 1000
        for name in cfg.exporters:
            if name == "none":
                continue
            if name == "otlp":
                exp = CountingExporter(otlp_exporter(cfg), _endpoint_label(cfg))
            elif name == "console":
                exp = CountingExporter(ConsoleSpanExporter(out=sys.stderr), "console")
            elif name == "file":
                try:
                    exp = CountingExporter(OtlpJsonFileExporter(cfg.output), cfg.output)
                except OSError as exc:  # the stream still passes; one actionable line
                    log.error("cannot open --output %r: %s; spans are not written to a file",
                              cfg.output, exc.strerror)
                    continue
            else:  # config already rejected it
                continue
            self.counted.append(exp)
            bsp = BatchSpanProcessor(exp, schedule_delay_millis=delay)
            self._queues.append((exp, bsp))
            self.provider.add_span_processor(bsp)

    def pace(self, limit_s: float = 0.2, high: float = 0.75) -> None:
        """Pace the live span producer (the decoding thread — never the tee's) so that a burst
        is exported rather than dropped: while a *healthy* exporter's queue is more than
        ``high`` full, wait, at most ``limit_s`` (and never past :attr:`pace_until`). An exporter
        that failed last time or is stuck (:meth:`CountingExporter.healthy`) is never waited
        for: its overflow is dropped and counted, as before. Reads the SDK's private queue;
        without it, never waits. (``replay``, which may wait as long as the exporters progress,
        uses :meth:`wait_for_room`.)"""
        deadline = 0.0
        while True:
            full = False
            for exp, bsp in self._queues:
                queue, size = _queue_of(bsp)
                if queue is not None and size and len(queue) > high * size and exp.healthy():
                    full = True
            if not full:
                return
            now = time.monotonic()
            if not deadline:
                deadline = now + limit_s
            if now >= min(deadline, self._until()):
                return
            time.sleep(0.002)

    def queued(self) -> int:
        """Spans waiting in the longest queue of the batch processors (not yet taken for
        export), read from the SDK's private state; :meth:`pending` where it cannot be."""
        longest = 0
        for _, bsp in self._queues:
            queue = _queue_of(bsp)[0]
            if queue is None:
                return self.pending()
            longest = max(longest, len(queue))
        return longest

    def smallest_queue(self, default: int = 2048) -> int:
        """The smallest span queue of the batch processors (``OTEL_BSP_MAX_QUEUE_SIZE``), read
        from the SDK's private state; ``default`` where it cannot be."""
        sizes = [_queue_of(bsp)[1] for _, bsp in self._queues]
        return min((n for n in sizes if isinstance(n, int) and n > 0), default=default)

    def emit_sink(self, builder):
        """Where the pipeline's span records go: the span builder (this process exports)."""
        return builder.emit

    def flush(self) -> None:
        """Nothing to do: spans are handed to the processors as they are built (the
        interface of :class:`~otelbridge.export_processes.ExportProcesses`)."""

    def pending(self) -> int:
        """Spans ended but not yet settled (exported or failed) by the slowest exporter."""
        if not self.counted:
            return 0
        return self.counter.ended - min(c.exported + c.failed for c in self.counted)

    def _until(self) -> float:
        """The instant no wait may pass: :attr:`pace_until`, or earlier what
        :attr:`deadline_source` says now."""
        source = self.deadline_source
        return self.pace_until if source is None else min(self.pace_until, source())

    def wait_for_room(self, high: int = 1024, low: int = 256, stall_s: float = 5.0) -> None:
        """Back-pressure for producers that can wait (``replay``): with more than ``high`` spans
        pending, wait until at most ``low`` are, or until ``stall_s`` pass without any progress
        (a dead collector: then go on, and the processor's queue drops and is counted as usual),
        and never past the run's end (:attr:`pace_until`, :attr:`deadline_source`).
        The processor's queue holds 2048 spans by default (``OTEL_BSP_MAX_QUEUE_SIZE``)."""
        pending = self.pending()
        if pending <= high:
            return
        deadline = time.monotonic() + stall_s
        while pending > low and time.monotonic() < min(deadline, self._until()):
            time.sleep(0.002)
            now = self.pending()
            if now < pending:
                deadline = time.monotonic() + stall_s
            pending = now

    def shutdown(self, timeout_s: float) -> bool:
        """Flush and shut down within ``timeout_s``; fill the export counts in ``stats``.
        Returns True when every ended span was confirmed exported by every exporter."""
        done = threading.Event()

        def _run() -> None:
            try:
                self.provider.shutdown()
            except Exception:
                pass
            done.set()

        threading.Thread(target=_run, name="otelbridge-shutdown", daemon=True).start()
        done.wait(timeout_s)
        if not self.counted:
            self.stats.spans_exported = 0
            self.stats.spans_dropped = 0
            return True
        exported = min(c.exported for c in self.counted)
        self.stats.spans_exported = exported
        self.stats.spans_dropped = max(self.counter.ended - exported, 0)
        return self.stats.spans_dropped == 0

    def describe_failure(self) -> str | None:
        """One line naming the exporters that lost spans, or ``None``."""
        lost = [c for c in self.counted if c.exported < self.counter.ended]
        if not lost:
            return None
        parts = [f"{c.label}: {self.counter.ended - c.exported} of {self.counter.ended} not confirmed"
                 for c in lost]
        return "export incomplete (" + "; ".join(parts) + ")"
