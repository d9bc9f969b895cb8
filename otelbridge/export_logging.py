"""What otelbridge and the OpenTelemetry SDK log: to stderr, one line each, never a secret.

:func:`configure_logging` installs it: :class:`_SecretFilter` masks the OTLP header values
(``OTEL_EXPORTER_OTLP_HEADERS``) and whatever :func:`otelbridge.redact.message` finds;
:class:`_OnceFilter` lets the SDK's first export failure through, said as a user acts on it
(:meth:`otelbridge.export.CountingExporter.failed_because`), and counts the repeats.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping

from . import redact
from .escape import one_line

#: ``current``: the :class:`~otelbridge.export.CountingExporter` whose export runs on this thread
#: (the SDK logs an export's failure there)
exporting = threading.local()


#: The SDK's loggers of the export path (the exporters, the batch processors): their failures
#: repeat every batch. Its other warnings are about a setting (a sampler argument, a header).
_EXPORT_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk.trace.export",
                   "opentelemetry.sdk._shared_internal")


#: The SDK's parser of ``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS``: it skips an item it cannot read
#: (the others are sent), with a warning said as :data:`_HEADER_ITEM_SKIPPED` instead.
_HEADER_PARSER = "opentelemetry.util.re"
_HEADER_ITEM_SKIPPED = ("OTEL_EXPORTER_OTLP_[TRACES_]HEADERS: an item that is not name=value (a "
                        "token for the name, the rest URL-encoded) is skipped; the others are sent")
#: The SDK's warnings that name no setting, as a user acts on them: (its text, ours)
_SAID_AS = (
    ("Queue full, dropping", "the export queue is full: spans are dropped while the collector takes "
     "them slower than they come, or not at all (OTEL_BSP_MAX_QUEUE_SIZE)"),
    ("Attributes dict is full", "a span has more attributes than OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT (or "
     "OTEL_ATTRIBUTE_COUNT_LIMIT) allows: the oldest are dropped"),
    ("String attribute value exceeds max length", "a span's string is longer than "
     "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT (or OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) allows: it is cut on "
     "export (the views show operation and state names whole)"),
)


class _OnceFilter(logging.Filter):
    """Lets the first export-failure message of the SDK through (one line), counts the rest;
    each of its other warnings (a setting it could not use) once, apart from that one."""

    def __init__(self) -> None:
        super().__init__()
        self.suppressed = 0
        self._seen = False
        self._said: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == _HEADER_PARSER:  # it quotes the item (a value, perhaps), names no variable
            record.name, record.msg, record.args = "otelbridge", _HEADER_ITEM_SKIPPED, None
            if (record.name, record.msg) in self._said:
                self.suppressed += 1
                return False
            self._said.add((record.name, record.msg))
            return True
        if record.levelno < logging.WARNING or not record.name.startswith("opentelemetry"):
            return True
        message = record.getMessage()
        msg = message.splitlines()[0] if message else ""
        ours = next((said for theirs, said in _SAID_AS if msg.startswith(theirs)), None)
        if ours is not None:
            record.name, msg = "otelbridge", ours
        # cut at a word, not inside one; long enough for gRPC's TLS failures to end in their
        # reason (CERTIFICATE_VERIFY_FAILED, WRONG_VERSION_NUMBER): gRPC C-core's own log
        # lines, which also name it, are off (exporters.import_otlp_exporter)
        if len(msg) > 500:
            msg = msg[:500].rsplit(" ", 1)[0] + " …"
        if record.name.startswith(_EXPORT_LOGGERS):
            # the SDK's form when no status came, or one it took for success was refused
            msg = msg.replace(" batch code: None, reason: ", " batch: ")
            exporter = getattr(exporting, "current", None)
            cause = exporter.failed_because(message) if exporter is not None else None
            if self._seen:
                self.suppressed += 1
                return False
            self._seen = True
            if cause is not None:  # said as a user acts on it, not as the SDK logs it
                record.name, msg = "otelbridge", f"export to {exporter.label} failed: {cause}"
            msg += " (further export messages suppressed)"
        else:
            key = (record.name, msg)
            if key in self._said:
                self.suppressed += 1
                return False
            self._said.add(key)
        record.msg, record.args = msg, None
        record.exc_info = record.exc_text = None
        return True


#: The variables whose values are OTLP headers (auth tokens): never printed.
HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")


def header_secrets_in(env: Mapping[str, str]) -> list[str]:
    """The OTLP header values in ``env``: never printed."""
    return redact.header_secrets(*(env.get(v) for v in HEADER_VARIABLES))


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
        message = one_line(record.getMessage())
        if record.name == "otelbridge" or record.name.startswith("otelbridge."):
            return f"otelbridge: {message}"
        return f"otelbridge: {record.name}: {message}"


def configure_logging(env: dict[str, str] | None = None) -> _OnceFilter:
    """All logging to stderr, one line each, header values masked; the SDK's repeated export
    errors said once. ``env`` (default ``os.environ``) supplies the header variables."""
    env = os.environ if env is None else env
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    handler.addFilter(_SecretFilter(header_secrets_in(env)))
    once = _OnceFilter()
    handler.addFilter(once)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    return once
