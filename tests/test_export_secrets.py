"""otelbridge.export: what it prints never carries credentials (log filter, endpoint label)."""

from __future__ import annotations

import logging

import pytest

from otelbridge import export, export_logging
from otelbridge.config import Config


@pytest.mark.parametrize("cfg_endpoint,env,expected", [
    ("https://u:pw@otel.example.com/?key=abc", {}, "https://otel.example.com/"),
    (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://ci:tok@127.0.0.1:4318?x=1"}, "http://127.0.0.1:4318"),
    (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://a:b@t.example/v1/traces",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other"}, "https://t.example/v1/traces"),
    (None, {}, "http://localhost:4318"),
    ("https://otlp.example.com/ingest/Zb7kQ2mL9pRzVv3Tq1/v1/traces?k=1", {},
     "https://otlp.example.com/ingest/[REDACTED:path]/v1/traces"),
    ("https://e.collection.sumologic.com/receiver/v1/otlp/ZaVnC4dhaV39Tn37mRkL8qB2xWyP0sJdFgHiKlMnOpQ==", {},
     "https://e.collection.sumologic.com/receiver/v1/otlp/[REDACTED:path]"),
    ("https://live.dynatrace.com/e/abc12345/api/v2/otlp", {}, "https://live.dynatrace.com/e/abc12345/api/v2/otlp"),
    ("https://o.example/ap-southeast-2/otelcol-contrib-0/prometheus2024/customer12345/v1/traces", {},
     "https://o.example/ap-southeast-2/otelcol-contrib-0/prometheus2024/customer12345/v1/traces"),
])
def test_endpoint_label_has_no_credentials(monkeypatch, cfg_endpoint, env, expected):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert export._endpoint_label(Config(endpoint=cfg_endpoint)) == expected


def test_log_records_lose_header_values_and_tracebacks():
    secret = "tok_abcdef123456"
    env = {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"x-api-key={secret}"}
    flt = export_logging._SecretFilter(export_logging.header_secrets_in(env))
    try:
        raise ValueError(f"server said no to {secret}")
    except ValueError as exc:
        record = logging.LogRecord("opentelemetry.x", logging.ERROR, __file__, 1,
                                   "export failed: %s\nsecond line", (secret,), (type(exc), exc, None))
    assert flt.filter(record)
    text = logging.Formatter("%(message)s").format(record)
    assert secret not in text and "\n" not in text
    assert text.startswith("export failed: [REDACTED:header] second line (ValueError: server said no to")


@pytest.mark.parametrize("name,expected", [
    ("otelbridge", "otelbridge: export process 1 ended"),
    ("otelbridge.sub", "otelbridge: export process 1 ended"),
    ("opentelemetry.sdk._shared_internal", "otelbridge: opentelemetry.sdk._shared_internal: export process 1 ended"),
])
def test_lines_name_their_source_once(name, expected):
    record = logging.LogRecord(name, logging.WARNING, __file__, 1, "export process %d ended", (1,), None)
    assert export_logging._Formatter().format(record) == expected
