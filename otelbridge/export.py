"""Stage 5: the TracerProvider, its exporters, export accounting and the bounded shutdown.

* ``otlp`` — ``OTLPSpanExporter`` from ``opentelemetry-exporter-otlp-proto-grpc`` or ``-http``
  (by :attr:`Config.protocol`); endpoint, headers, timeout, TLS from the ``OTEL_EXPORTER_OTLP_*``
  variables, which the exporters read themselves; ``--endpoint`` overrides the endpoint (for
  HTTP it is the base URL: ``/v1/traces`` is appended, as the exporter does for the env var).
* ``console`` — the SDK's ``ConsoleSpanExporter`` pointed at **stderr** (its default is stdout,
  which belongs to the stream).
* ``none`` — spans are built (so counts and summaries work) but not exported.

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

import logging
import os
import sys
import threading
from collections.abc import Sequence

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)

from . import __version__, redact
from .config import Config
from .spans import PresetIdGenerator
from .stats import Stats

log = logging.getLogger("otelbridge")


class CountingExporter(SpanExporter):
    """Delegates to ``inner`` and counts spans whose export was confirmed (``exported``) or
    failed (``failed``). Exceptions from ``inner`` are caught and counted as failures."""

    def __init__(self, inner: SpanExporter, label: str) -> None:
        self.inner = inner
        self.label = label
        self.exported = 0
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # never let an exporter bug escape into the SDK thread
            log.warning("export to %s raised %s", self.label, type(exc).__name__)
            result = SpanExportResult.FAILURE
        with self._lock:
            if result == SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
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
        self.ended += 1


class _OnceFilter(logging.Filter):
    """Lets the first export-failure message of the SDK through (one line), counts the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.suppressed = 0
        self._seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and record.name.startswith("opentelemetry"):
            if self._seen:
                self.suppressed += 1
                return False
            self._seen = True
            msg = record.getMessage().splitlines()[0] if record.getMessage() else ""
            record.msg, record.args = msg[:300] + " (further export messages suppressed)", None
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


def configure_logging(env: dict[str, str] | None = None) -> _OnceFilter:
    """All logging to stderr, one line each, header values masked; the SDK's repeated export
    errors said once. ``env`` (default ``os.environ``) supplies the header variables."""
    env = os.environ if env is None else env
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("otelbridge: %(name)s: %(message)s"))
    handler.addFilter(_SecretFilter(redact.header_secrets(*(env.get(v) for v in HEADER_VARIABLES))))
    once = _OnceFilter()
    handler.addFilter(once)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    return once


def _endpoint_label(cfg: Config) -> str:
    """The endpoint as we name it on stderr: no credentials, no query string."""
    return redact.endpoint(
        cfg.endpoint
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or ("localhost:4317" if cfg.protocol == "grpc" else "localhost:4318")
    )


def otlp_exporter(cfg: Config) -> SpanExporter:
    """The OTLP exporter for ``cfg.protocol`` (``ImportError`` if its package is missing)."""
    if cfg.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=cfg.endpoint) if cfg.endpoint else OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    url = None
    if cfg.endpoint:
        url = cfg.endpoint.rstrip("/")
        if not url.endswith("/v1/traces"):
            url += "/v1/traces"
    return OTLPSpanExporter(endpoint=url, session=_http_session())


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


def make_resource() -> Resource:
    """``Resource.create`` (applies ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``) with
    ``service.name = otelbridge`` when neither names a service."""
    resource = Resource.create({"telemetry.distro.name": "otelbridge",
                                "telemetry.distro.version": __version__})
    name = resource.attributes.get(SERVICE_NAME)
    if not name or str(name).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "otelbridge"}))
    return resource


class Exporters:
    """Owns the provider and its processors for one run."""

    def __init__(self, cfg: Config, stats: Stats) -> None:
        self.cfg = cfg
        self.stats = stats
        self.ids = PresetIdGenerator()
        self.provider = TracerProvider(
            resource=make_resource(), id_generator=self.ids, shutdown_on_exit=False
        )
        self.counter = _EndCounter()
        self.provider.add_span_processor(self.counter)
        self.counted: list[CountingExporter] = []
        delay = None if os.environ.get("OTEL_BSP_SCHEDULE_DELAY") else 1000
        for name in cfg.exporters:
            if name == "none":
                continue
            if name == "otlp":
                exp = CountingExporter(otlp_exporter(cfg), _endpoint_label(cfg))
            elif name == "console":
                exp = CountingExporter(ConsoleSpanExporter(out=sys.stderr), "console")
            else:  # config already rejected it
                continue
            self.counted.append(exp)
            self.provider.add_span_processor(BatchSpanProcessor(exp, schedule_delay_millis=delay))

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
