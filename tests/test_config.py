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
    (None, {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "0", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "9"}, 9),
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


def test_trace_url_from_the_flag_is_checked_from_the_environment_said():
    with pytest.raises(config.ConfigError, match="--trace-url-template needs"):
        config.build(exporter="none", protocol=None, env={}, trace_url_template="https://x/y")
    cfg = config.build(exporter="none", protocol=None, env={"OTELBRIDGE_TRACE_URL": "https://x/y"})
    assert cfg.trace_url_template is None
    (line,) = cfg.env_problems
    assert line.startswith("OTELBRIDGE_TRACE_URL='https://x/y' has no {trace_id}")


@pytest.mark.parametrize("env,ignored", [
    ({"OTEL_TRACES_SAMPLER": "always_off"}, ()),
    ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, ()),
    ({"OTEL_TRACES_SAMPLER": "traceidratio"}, ()),
    ({"OTEL_TRACES_SAMPLER": "Bogus"}, ("OTEL_TRACES_SAMPLER",)),
    ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "nan"},
     ("OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG")),
    ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "-0.1"},
     ("OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG")),
    ({"OTEL_TRACES_SAMPLER": "always_on", "OTEL_TRACES_SAMPLER_ARG": "2"}, ()),  # not read
])
def test_sampler_values_the_sdk_cannot_use_are_hidden(env, ignored):
    cfg = config.build(exporter="none", protocol=None, env=env)
    assert cfg.ignored_env == ignored
    assert len(cfg.env_problems) == (1 if ignored else 0)


@pytest.mark.parametrize("value,usable", [("0.5", True), ("86400", True), ("86401", False),
                                          ("1e400", False), ("inf", False), ("0", False)])
def test_export_timeout_range(value, usable):
    cfg = config.build(exporter="none", protocol=None, env={"OTEL_EXPORTER_OTLP_TIMEOUT": value})
    assert (cfg.ignored_env == ()) is usable


def test_scheme_less_grpc_endpoint_is_said_to_use_tls():
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}
    (line,) = config.build(exporter="otlp", protocol="grpc", env=env).env_problems
    assert line.startswith("OTEL_EXPORTER_OTLP_ENDPOINT='collector:4317' has no scheme")
    (line,) = config.build(exporter="otlp", protocol="grpc", env={}, endpoint="c:4317").env_problems
    assert line.startswith("--endpoint 'c:4317' has no scheme")
    for quiet in ({**env, "OTEL_EXPORTER_OTLP_INSECURE": "TRUE"},
                  {**env, "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true"},
                  {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4317"}, {}):
        assert config.build(exporter="otlp", protocol="grpc", env=quiet).env_problems == ()
    assert config.build(exporter="otlp", protocol="http/protobuf", env={}).env_problems == ()
