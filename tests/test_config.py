"""otelbridge.config: the redaction flags and the attribute length cap."""

from __future__ import annotations

import pytest

from otelbridge import config


@pytest.mark.parametrize("flag,env,expected", [
    (None, {}, 256),
    (1000, {}, 1000),
    (None, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "64"}, 64),
    (None, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "4096"}, 4096),
    (1000, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "64"}, 64),
    (32, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "64"}, 32),
    (None, {"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "100"}, 100),
    (None, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "50", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "9"}, 50),
    (None, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "lots"}, 256),
    (None, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "0"}, 256),
])
def test_max_attribute_length(flag, env, expected):
    assert config.resolve_max_attribute_length(flag, env) == expected


def test_build_carries_redaction_settings():
    cfg = config.build(exporter="none", protocol=None, env={}, redact_patterns=(r"PROJ-\d+",),
                       default_redaction=False, max_attribute_length=128)
    assert cfg.redact_patterns == (r"PROJ-\d+",)
    assert cfg.default_redaction is False
    assert cfg.max_attribute_length == 128
    assert config.build(exporter="none", protocol=None, env={}).default_redaction is True


def test_build_refuses_a_bad_pattern():
    with pytest.raises(config.ConfigError, match="not a valid regular expression"):
        config.build(exporter="none", protocol=None, env={}, redact_patterns=("[",))


def test_endpoint_checked_at_start():
    from otelbridge.config import ConfigError, check_endpoint

    for protocol in ("grpc", "http/protobuf"):
        check_endpoint(protocol, "http://127.0.0.1:4318", {})
        check_endpoint(protocol, "https://collector.example:443/base", {})
        for bad in ("notaurl", "http://", "ftp://host:1", "http://host:0"):
            with pytest.raises(ConfigError, match="is not an OTLP"):
                check_endpoint(protocol, bad, {})
    check_endpoint("grpc", "localhost:4317", {})
    with pytest.raises(ConfigError, match="http\\(s\\)://host:port$"):
        check_endpoint("http/protobuf", "localhost:4318", {})
    # the environment is checked too: said, ignored (never fatal), credentials never shown
    problems: list[str] = []
    ignored = check_endpoint("http/protobuf", None,
                             {"OTEL_EXPORTER_OTLP_ENDPOINT": "user:secret@nohost"}, problems)
    assert ignored == ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    (line,) = problems
    assert line.startswith("OTEL_EXPORTER_OTLP_ENDPOINT=") and "secret" not in line
    assert line.endswith("ignored, using http://localhost:4318")
