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


@pytest.mark.parametrize("var", ["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"])
def test_a_length_limit_said_to_be_ignored_is_not_used(var):
    """A limit out of the range the SDK takes is said ignored, and it is: strings stay capped."""
    cfg = config.build(exporter="none", protocol=None, env={var: "3000000000"})
    assert cfg.max_attribute_length == 256
    (said,) = [p for p in cfg.env_problems if p.startswith(var)]
    assert "ignored" in said


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
    check_endpoint("grpc", "[::1]:4317", {})
    # a host with a space, a port out of range: the exporter retried a target it cannot resolve
    for bad in ("a b:4317", "host:99999", "host:0", "http://a b:4317"):
        with pytest.raises(ConfigError, match="is not an OTLP grpc endpoint"):
            check_endpoint("grpc", bad, {})
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


@pytest.mark.parametrize("value,read_as", [
    ("localhost:4318", "http://localhost:4318"), ("LOCALHOST:4318", "http://LOCALHOST:4318"),
    ("127.0.0.2:14318", "http://127.0.0.2:14318"), ("[::1]:4318", "http://[::1]:4318"), (" 127.0.0.1:4318 ", "http://127.0.0.1:4318"),
    ("::1:4318", None), ("localhost:0", None), ("localhost", None), ("10.0.0.1:4318", None),
    ("collector:4318", None), ("user@localhost:4318", None), ("localhost/v1/traces", None),
    ("localhost:4318/a path", None), ("[::1%lo]:4318", None),
    ("localhost:\uff14\uff13\uff11\uff18", None),
])
def test_a_loopback_endpoint_without_a_scheme_is_read_as_http(value, read_as):
    """Over OTLP/HTTP a scheme-less ``host:port`` on a loopback address is what ``http://``
    would name (no TLS is meant there); any other stays unusable, the default used instead."""
    from otelbridge.config import check_endpoint

    problems: list[str] = []
    replaced: dict[str, str] = {}
    ignored = check_endpoint("http/protobuf", None, {"OTEL_EXPORTER_OTLP_ENDPOINT": value}, problems, replaced)
    if read_as is None:
        assert ignored == ["OTEL_EXPORTER_OTLP_ENDPOINT"] and replaced == {}
        assert problems[-1].endswith("ignored, using http://localhost:4318")
    else:
        assert ignored == [] and replaced == {"OTEL_EXPORTER_OTLP_ENDPOINT": read_as}
        assert problems == [f"OTEL_EXPORTER_OTLP_ENDPOINT={value.strip()!r} has no scheme: read as {read_as} "
                            "(a loopback address, plaintext); write the scheme, http:// or https://"]
    # the traces variable is the whole URL: the collector's path is added to it (not to one
    # that names a path)
    replaced = {}
    check_endpoint("http/protobuf", None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318/v1/traces"}, [],
                   replaced)
    assert replaced == {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4318/v1/traces"}
    if read_as is not None:
        replaced = {}
        check_endpoint("http/protobuf", None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": value}, [], replaced)
        assert replaced == {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": read_as + "/v1/traces"}
    # over gRPC such a value is usable as it is (with TLS, said elsewhere): nothing replaced
    replaced = {}
    check_endpoint("grpc", None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4317"}, [], replaced)
    assert replaced == {}
    # the flag as the variable: read so and said, or (any other) a usage error
    if read_as is None:
        with pytest.raises(config.ConfigError, match="is not an OTLP http/protobuf endpoint"):
            config.build(exporter="otlp", protocol="http/protobuf", env={}, endpoint=value)
    else:
        cfg = config.build(exporter="otlp", protocol="http/protobuf", env={}, endpoint=value)
        assert cfg.endpoint == read_as and ("--endpoint", read_as) not in cfg.replaced_env
        assert cfg.env_problems == (f"--endpoint {value.strip()!r} has no scheme: read as {read_as} "
                                    "(a loopback address, plaintext); write the scheme, http:// or https://",)


def test_credentials_in_a_grpc_endpoint_are_said_not_taken_for_the_host():
    """gRPC takes ``user:password@`` for part of the host name (every span lost to a name it
    cannot resolve): refused at start, said without the password; OTLP/HTTP sends them."""
    from otelbridge.config import ConfigError, check_endpoint

    url = "http://alice:s3cret@127.0.0.1:4317"
    check_endpoint("http/protobuf", url, {})
    for given in (url, "alice:s3cret@127.0.0.1:4317", "alice@127.0.0.1:4317"):
        with pytest.raises(ConfigError, match="without its user:password@") as err:
            check_endpoint("grpc", given, {})
        assert "s3cret" not in str(err.value) and "alice" not in str(err.value)
    # endpoints refused as any unusable one: their credentials not shown either
    for protocol, given in (("http/protobuf", "http://alice:s3cret@[::1:4318"),
                            ("grpc", "dns:///alice:s3cret@127.0.0.1:4317")):
        with pytest.raises(ConfigError, match=f"is not an OTLP {protocol} endpoint") as err:
            check_endpoint(protocol, given, {})
        assert "s3cret" not in str(err.value) and "alice" not in str(err.value)
    problems: list[str] = []
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}
    assert check_endpoint("grpc", None, env, problems) == ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    (line,) = problems
    assert "user:password@" in line and "s3cret" not in line
    assert line.endswith("ignored, using OTEL_EXPORTER_OTLP_ENDPOINT")


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


@pytest.mark.parametrize("value,usable", [("500", True), ("86400000", True), ("86400001", False),
                                          ("0.5", False), ("1e400", False), ("inf", False), ("0", False)])
def test_export_timeout_range(value, usable):
    cfg = config.build(exporter="otlp", protocol=None, env={"OTEL_EXPORTER_OTLP_TIMEOUT": value})
    assert (cfg.ignored_env == ()) is usable
    assert cfg.otlp_timeout_s == (int(value) / 1000 if usable else None)


def test_export_timeout_is_read_in_milliseconds():
    """The specification's unit (the Python exporters alone read seconds: 10000 was 2.8 hours
    per export); the traces variable first; one shorter than 100 ms is used and said."""
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "10000"}
    cfg = config.build(exporter="otlp", protocol=None, env=env)
    assert cfg.otlp_timeout_s == 10.0 and cfg.env_problems == ()
    env["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"] = "2500"
    assert config.build(exporter="otlp", protocol=None, env=env).otlp_timeout_s == 2.5
    cfg = config.build(exporter="otlp", protocol="grpc", env={"OTEL_EXPORTER_OTLP_TIMEOUT": "10"})
    assert cfg.otlp_timeout_s == 0.01
    (line,) = [p for p in cfg.env_problems if "TIMEOUT" in p]
    assert line.startswith("OTEL_EXPORTER_OTLP_TIMEOUT=10 is read in milliseconds") and "1000" in line
    assert config.build(exporter="otlp", protocol=None, env={}).otlp_timeout_s is None


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


@pytest.mark.parametrize("value,said", [("maybe", True), ("1", True), ("yes", True), ("TRUE", False),
                                        (" false ", False), ("", False)])
def test_sdk_disabled_neither_true_nor_false_is_said_read_as_false(value, said):
    """The specification: true only for ``true`` (any case), anything else false, with a
    warning for a value neither true, false nor empty."""
    problems = config.build(exporter="none", protocol=None,
                            env={"OTEL_SDK_DISABLED": value}).env_problems
    assert problems == ((f"OTEL_SDK_DISABLED={value.strip()!r} is not true or false: read as "
                         "false, tracing stays on (true turns it off)",) if said else ())


@pytest.mark.parametrize("env", [
    {"OTEL_EXPORTER_OTLP_INSECURE": "1"},
    {"OTEL_EXPORTER_OTLP_INSECURE": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
    {"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "on", "OTEL_EXPORTER_OTLP_INSECURE": "1"},
    {"OTEL_EXPORTER_OTLP_INSECURE": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317"},
])
def test_grpc_insecure_is_read_only_for_an_endpoint_without_a_scheme(env):
    """The specification: OTEL_EXPORTER_OTLP_INSECURE applies to a gRPC endpoint without a
    scheme; http:// (the default's too) is plaintext and https:// TLS whatever it says, so no
    line for it there; without a scheme the TLS notice says its value, once."""
    assert config.build(exporter="otlp", protocol="grpc", env=env).env_problems == ()
    assert config.build(exporter="otlp", protocol="http/protobuf", env=env).env_problems == ()
    (line,) = config.build(exporter="otlp", protocol="grpc",
                           env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317"}).env_problems
    insecure = env.get("OTEL_EXPORTER_OTLP_TRACES_INSECURE", env.get("OTEL_EXPORTER_OTLP_INSECURE"))
    assert "has no scheme: gRPC connects with TLS" in line
    assert (f"is not true but {insecure!r}" in line) == (insecure not in ("false",))


def _build(env, *, exporter=None, protocol=None, **flags):
    return config.build(exporter=exporter, protocol=protocol, env=env, **flags)


@pytest.mark.parametrize("protocol,value,said,ignored", [
    ("grpc", "bogus", "(gzip); ignored, no compression", True),
    ("grpc", "deflate", "(gzip); ignored, no compression", True),  # the gRPC exporter refuses it
    ("grpc", "none", None, True),  # what hiding it gives; the gRPC exporter refuses the word
    ("grpc", "gzip", None, False),
    ("http/protobuf", "bogus", "(none, gzip, deflate); ignored, no compression", True),
    ("http/protobuf", "deflate", None, False),
])
def test_compression_the_exporter_cannot_take_is_said_and_hidden(protocol, value, said, ignored):
    cfg = _build({"OTEL_EXPORTER_OTLP_COMPRESSION": value}, protocol=protocol)
    assert ("OTEL_EXPORTER_OTLP_COMPRESSION" in cfg.ignored_env) is ignored
    if said is None:
        assert cfg.env_problems == ()
    else:
        (line,) = cfg.env_problems
        assert line.startswith(f"OTEL_EXPORTER_OTLP_COMPRESSION={value!r} is not an OTLP {protocol} ")
        assert line.endswith(said)
    assert cfg.exporters == ("otlp",) and cfg.exporters_left_out == ()


def test_a_bad_traces_compression_falls_back_to_the_general_one():
    cfg = _build({"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd",
                  "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, protocol="grpc")
    assert cfg.ignored_env == ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",)
    assert cfg.env_problems[0].endswith("ignored, using OTEL_EXPORTER_OTLP_COMPRESSION")


@pytest.mark.parametrize("variable,what", [
    ("OTEL_EXPORTER_OTLP_CERTIFICATE", "CA certificate"),
    ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "CA certificate"),
    ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "client certificate"),
    ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "client key"),
])
@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_tls_file_that_is_missing_or_a_directory_leaves_the_otlp_exporter_out(
        variable, what, protocol, tmp_path):
    for path, why in ((str(tmp_path / "nope.pem"), "does not exist"), (str(tmp_path), "is a directory")):
        cfg = _build({variable: path}, protocol=protocol, endpoint="https://collector.example:4317")
        (line,) = cfg.env_problems
        assert line == (f"{variable}={path!r}: the {what} file {why}; the otlp exporter is left "
                        "out, spans are built for the reports but not exported")
        assert cfg.exporters == ("none",) and cfg.exporters_left_out == ("otlp",)


def test_a_bad_tls_file_leaves_the_other_exporters_in(tmp_path):
    cfg = _build({"OTEL_EXPORTER_OTLP_CERTIFICATE": str(tmp_path / "ca.pem")}, exporter="otlp,file",
                 output=str(tmp_path / "t.jsonl"), endpoint="https://collector.example")
    assert cfg.exporters == ("file",) and cfg.exporters_left_out == ("otlp",)
    assert cfg.env_problems[0].endswith("the otlp exporter is left out, using file")


def test_several_bad_tls_files_are_one_line(tmp_path):
    ca, key = str(tmp_path / "ca.pem"), str(tmp_path)
    cfg = _build({"OTEL_EXPORTER_OTLP_CERTIFICATE": ca, "OTEL_EXPORTER_OTLP_CLIENT_KEY": key},
                 endpoint="https://collector.example")
    assert cfg.env_problems == (
        f"OTEL_EXPORTER_OTLP_CERTIFICATE={ca!r}: the CA certificate file does not exist; "
        f"OTEL_EXPORTER_OTLP_CLIENT_KEY={key!r}: the client key file is a directory; the otlp "
        "exporter is left out, spans are built for the reports but not exported",)


def test_a_tls_file_that_is_not_pem_is_said_at_start(tmp_path):
    """A CA or client file that exists but holds no PEM (a DER file, the wrong path): no
    exporter can use it, so it is said at start like a missing one, not retried until
    --flush-timeout."""
    der = tmp_path / "ca.der"
    der.write_bytes(b"\x30\x82\x01\x0a" + bytes(200))
    (line,) = _build({"OTEL_EXPORTER_OTLP_CERTIFICATE": str(der)}, endpoint="https://collector.example").env_problems
    assert line == (f"OTEL_EXPORTER_OTLP_CERTIFICATE={str(der)!r}: the CA certificate file is not PEM (no "
                    "-----BEGIN line); the otlp exporter is left out, spans are built for the reports but "
                    "not exported")


def test_the_tls_file_read_is_the_traces_one_when_set(tmp_path):
    good = tmp_path / "ca.pem"
    good.write_text("-----BEGIN CERTIFICATE-----\n")
    env = {"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": str(good),
           "OTEL_EXPORTER_OTLP_CERTIFICATE": str(tmp_path / "unused.pem")}
    cfg = _build(env, endpoint="https://collector.example")
    assert cfg.env_problems == () and cfg.exporters == ("otlp",)
    env = {"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": str(tmp_path / "missing.pem"),
           "OTEL_EXPORTER_OTLP_CERTIFICATE": str(good)}
    (line,) = _build(env, endpoint="https://collector.example").env_problems
    assert line.startswith("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE=")


@pytest.mark.parametrize("protocol,endpoint,env,checked", [
    ("http/protobuf", "http://collector.example:4318", {}, False),  # plaintext: no TLS file read
    ("http/protobuf", None, {}, False),  # the default endpoint is plaintext
    ("grpc", "http://collector.example:4317", {}, False),
    ("grpc", "collector.example:4317", {}, True),  # no scheme: TLS (the OTLP specification)
    ("grpc", "collector.example:4317", {"OTEL_EXPORTER_OTLP_INSECURE": "true"}, False),
    # http:// is plaintext whatever INSECURE says (the specification; the SDK alone would use TLS)
    ("grpc", "http://collector.example:4317", {"OTEL_EXPORTER_OTLP_INSECURE": "false"}, False),
    ("grpc", None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example"}, True),
])
def test_tls_files_are_checked_only_when_the_exporter_uses_tls(protocol, endpoint, env, checked):
    env = {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem", **env}
    cfg = _build(env, protocol=protocol, endpoint=endpoint)
    assert (cfg.exporters_left_out == ("otlp",)) is checked
    assert any("OTEL_EXPORTER_OTLP_CERTIFICATE=" in p for p in cfg.env_problems) is checked


def test_tls_files_are_not_checked_without_the_otlp_exporter():
    cfg = _build({"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, exporter="none",
                 endpoint="https://collector.example")
    assert cfg.env_problems == () and cfg.exporters_left_out == ()


def test_exporters_the_environment_names_but_otelbridge_lacks_are_left_out():
    cfg = _build({"OTEL_TRACES_EXPORTER": "zipkin,console,file"})
    assert cfg.exporters == ("console",) and cfg.exporters_left_out == ("zipkin", "file")
    cfg = _build({"OTEL_TRACES_EXPORTER": "none"})
    assert cfg.exporters == ("none",) and cfg.exporters_left_out == ()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e10, -1.0])
def test_seconds_out_of_range_are_refused(value):
    for name in ("flush_timeout_s", "grace_s"):
        with pytest.raises(config.ConfigError, match="must be from 0 to 86400 seconds"):
            config.build(exporter="none", protocol=None, **{name: value})


@pytest.mark.parametrize("flag", ["--flush-timeout", "--grace-period"])
@pytest.mark.parametrize("value", ["nan", "inf", "1e10"])
def test_seconds_flags_out_of_range_are_a_usage_error_before_anything_runs(tmp_path, flag, value):
    """A deadline of inf or 1e10 s overflowed into a traceback (the wrapped command's status
    lost); nan killed the decoding process at once."""
    from tests.conftest import run_bridge

    ran = tmp_path / "ran"
    proc = run_bridge(["--exporter", "none", flag, value, "--", "touch", str(ran)], b"")
    assert proc.returncode == 2 and not ran.exists()
    err = proc.stderr.decode()
    assert f"Invalid value for '{flag}'" in err and "Traceback" not in err


def test_a_report_or_stats_file_whose_directory_is_missing_is_said_at_start(tmp_path):
    build = config.build
    """Both are written at exit: a typo in the directory is said when the run begins (after a
    long CI run the file would just be missing), and the path is kept (the run may make it)."""
    missing = tmp_path / "nope"
    cfg = build(exporter="none", protocol=None, env={}, report=str(missing / "r.html"),
                stats_json=str(missing / "s.json"))
    said = [p for p in cfg.env_problems if "no directory" in p]
    assert said == [
        f"--report '{missing / 'r.html'}': no directory '{missing}' now; it is written at exit, if the directory is there by then",
        f"--stats-json '{missing / 's.json'}': no directory '{missing}' now; it is written at exit, if the directory is there by then"]
    assert cfg.report == str(missing / "r.html") and cfg.stats_json == str(missing / "s.json")
    cfg = build(exporter="none", protocol=None, env={}, report=str(tmp_path / "r.html"), stats_json="s.json")
    assert not [p for p in cfg.env_problems if "no directory" in p]


def test_a_report_path_that_is_a_directory_or_under_a_file_is_said_at_start(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    cfg = config.build(exporter="none", protocol=None, env={}, report=str(tmp_path),
                       stats_json=str(afile / "s.json"))
    assert [p for p in cfg.env_problems if p.startswith("--")] == [
        f"--report '{tmp_path}': a directory; the file cannot be written",
        f"--stats-json '{afile / 's.json'}': '{afile}' is not a directory; the file cannot be written"]


def test_output_without_the_file_exporter_is_said_at_start(tmp_path):
    """--output is read by the file exporter alone: given without it, nothing is written
    there, and the run says so and how to ask for it (a new user's run wrote no file, silently)."""
    out = str(tmp_path / "spans.jsonl")
    cfg = config.build(exporter="none", protocol=None, env={}, output=out)
    assert [p for p in cfg.env_problems if p.startswith("--output")] == [
        "--output is for --exporter file, which is not in use (none): nothing is written there; "
        "add --exporter file"]
    cfg = config.build(exporter=None, protocol=None, env={}, output=out)
    assert [p for p in cfg.env_problems if p.startswith("--output")] == [
        "--output is for --exporter file, which is not in use (otlp): nothing is written there; "
        "add --exporter file (or otlp,file to keep otlp)"]
    for exporter, env in (("otlp,file", {}), (None, {"OTEL_TRACES_EXPORTER": "file"})):
        cfg = config.build(exporter=exporter, protocol=None, env=env, output=out)
        assert not [p for p in cfg.env_problems if p.startswith("--output")]


def test_the_grpc_credentials_hint_survives_the_redaction_of_a_usage_error():
    """A usage error is printed redacted (it quotes what was given): the hint how to send the
    credentials instead must not read as a credential itself and vanish."""
    from tests.conftest import EXAMPLES, clean_env, run_bridge

    data = (EXAMPLES / "milk-session.jsonl").read_bytes()
    proc = run_bridge(["--protocol", "grpc", "--endpoint", "http://alice:hunter2pass@127.0.0.1:1"], data,
                      env=clean_env())
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == data  # (pipe mode: the input passes, untraced)
    assert "as the authorization header: the word Basic, %20, then user:password in base64" in err, err
    assert "[REDACTED" not in err and "hunter2pass" not in err
