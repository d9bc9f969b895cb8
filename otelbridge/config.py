"""One frozen :class:`Config` from flags and the standard ``OTEL_*`` environment.

Environment read here (the SDK and the OTLP exporters read the rest themselves):

* ``OTEL_TRACES_EXPORTER`` — ``otlp``, ``console``, ``none`` (comma-separated), when no
  ``--exporter`` is given;
* ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` — ``grpc``,
  ``http/protobuf`` or ``http/json`` (default ``http/protobuf``, the OTLP specification's
  default), when no ``--protocol`` is given;
* checked only, the SDK reads them: the OTLP endpoints, timeouts and compressions,
  ``OTEL_BSP_*``, the span limits and ``OTEL_TRACES_SAMPLER``/``_ARG``; the TLS files
  (``_CERTIFICATE``, ``_CLIENT_CERTIFICATE``, ``_CLIENT_KEY``) when the exporter uses TLS: one
  that cannot be read leaves the ``otlp`` exporter out (:attr:`Config.exporters_left_out`).

The stream first, whatever the environment: a value in the environment that otelbridge or the
SDK cannot use is one line in :attr:`Config.env_problems` (naming the variable and what is done
instead) and, where the SDK would read it, in :attr:`Config.ignored_env` (hidden from the SDK
while it is set up: :func:`without`); only a bad command-line flag is a :class:`ConfigError`.
* ``TRACEPARENT`` / ``TRACESTATE`` — the W3C environment carrier, unless ``--no-traceparent``;
* ``OTELBRIDGE_TRACE_URL`` — the trace link template, when no ``--trace-url-template``;
* ``CI`` — set (and not ``0``/``false``): ``--summary auto`` draws the waterfall even when stderr is
  not a terminal.
* ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`` / ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`` — also cap
  :attr:`Config.max_attribute_length` (the SDK applies them too, without our ``…``).

Read by the SDK/exporters, not here: ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``_HEADERS``, ``_TIMEOUT``
(seconds, in the Python exporters), ``_CERTIFICATE``, ``_CLIENT_KEY``, ``_CLIENT_CERTIFICATE``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SDK_DISABLED``, ``OTEL_TRACES_SAMPLER``,
``OTEL_BSP_*`` and the span limits.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

EXPORTERS = ("otlp", "console", "file", "none")
SUMMARY_MODES = ("auto", "always", "never")
#: What ``{trace_id}`` in ``--trace-url-template`` is replaced with (32 lowercase hex digits).
TRACE_ID_PLACEHOLDER = "{trace_id}"
PROTOCOLS = ("grpc", "http/protobuf", "http/json")
#: Seconds a workflow's spans stay open after its terminal ``task_notification`` (late progress).
DEFAULT_GRACE_S = 5.0
#: The longest --flush-timeout and --grace-period: a day, in seconds.
MAX_SECONDS = 86_400.0
#: Line-length cap for decoding, in bytes (8 MiB): longer lines pass through, counted, undecoded.
DEFAULT_MAX_LINE = 8 * 1024 * 1024


class ConfigError(ValueError):
    """A flag or environment value otelbridge cannot use; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Config:
    """Everything a run needs to know. Times in seconds unless the name says otherwise."""

    exporters: tuple[str, ...] = ("otlp",)
    protocol: str = "http/protobuf"
    endpoint: str | None = None
    output: str | None = None
    flush_timeout_s: float = 5.0
    grace_s: float = DEFAULT_GRACE_S
    clock: str = "auto"
    max_line: int = DEFAULT_MAX_LINE
    dialects: tuple[str, ...] = ()
    deterministic_ids: bool = False
    capture_content: bool = False
    #: ``--redact REGEX`` patterns added to the defaults (kind ``custom``)
    redact_patterns: tuple[str, ...] = ()
    #: false with ``--no-default-redaction`` (local debugging only; warned about at startup)
    default_redaction: bool = True
    #: cap for exported strings, in characters (``--max-attribute-length`` and the env limit)
    max_attribute_length: int = 256
    fail_on_export_error: bool = False
    stats_json: str | None = None
    quiet: bool = False
    traceparent: str | None = None
    tracestate: str | None = None
    trace_url_template: str | None = None
    #: ``auto`` | ``always`` | ``never``: the waterfall on stderr and the GitHub step summary
    summary: str = "auto"
    #: ``--report PATH``: the self-contained HTML page of the run (mode 0600)
    report: str | None = None
    command: tuple[str, ...] = field(default_factory=tuple)
    #: one line per environment value that cannot be used, saying what is done instead
    env_problems: tuple[str, ...] = ()
    #: variables the SDK must not read (their values cannot be used): see :func:`without`
    ignored_env: tuple[str, ...] = ()
    #: exporters asked for that cannot be used (said in :attr:`env_problems`): not in
    #: :attr:`exporters`, and their spans are not exported (``--fail-on-export-error``)
    exporters_left_out: tuple[str, ...] = ()


def parse_exporters(value: str) -> tuple[str, ...]:
    """``"otlp,file"`` → ``("otlp", "file")``; ``ConfigError`` on an unknown name."""
    names = tuple(dict.fromkeys(p.strip().lower() for p in value.split(",") if p.strip()))
    for name in names:
        if name not in EXPORTERS:
            raise ConfigError(f"unknown exporter {name!r}: use {', '.join(EXPORTERS)}")
    if "none" in names and len(names) > 1:
        names = tuple(n for n in names if n != "none")
    return names or ("none",)


def _shown(value: str, limit: int = 40) -> str:
    """An environment value as we quote it: one line, at most ``limit`` characters, no secrets."""
    from .redact import message

    return repr(message(value.strip())[:limit])


def exporters_from_env(value: str, output: str | None, problems: list[str],
                       left_out: list[str] | None = None) -> tuple[str, ...]:
    """``OTEL_TRACES_EXPORTER``'s exporters: names otelbridge does not have (``zipkin``, ...) and
    ``file`` without ``--output`` are left out (added to ``left_out``) and said in ``problems``;
    nothing left: ``none``."""
    names = [p.strip().lower() for p in value.split(",") if p.strip()]
    usable = [n for n in names if n in EXPORTERS and (n != "file" or output)]
    dropped = [n for n in names if n not in usable]
    result = parse_exporters(",".join(usable)) if usable else ("none",)
    if left_out is not None:
        left_out += dropped
    if dropped:
        instead = ("spans are built for the reports but not exported" if result == ("none",)
                   else f"using {','.join(result)}")
        why = ", ".join(_shown(n) + (" needs --output" if n == "file" else " is not supported")
                        for n in dropped)
        problems.append(f"OTEL_TRACES_EXPORTER={_shown(value)}: {why} (otelbridge has "
                        f"{', '.join(EXPORTERS)}); {instead}")
    return result


def resolve_protocol(flag: str | None, env: Mapping[str, str], problems: list[str] | None = None) -> str:
    """The OTLP protocol from ``--protocol``, else ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, else
    ``OTEL_EXPORTER_OTLP_PROTOCOL``, else ``http/protobuf``. A bad flag is a
    :class:`ConfigError`; a bad environment value is said in ``problems`` and the next one (at
    last the default) is used."""
    if flag:
        value = flag.strip().lower()
        if value not in PROTOCOLS:
            raise ConfigError(f"--protocol {flag!r} is not supported: use {', '.join(PROTOCOLS)}")
        return value
    for var in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        raw = env.get(var, "")
        value = raw.strip().lower()
        if not value:
            continue
        if value == "http":
            value = "http/protobuf"
        if value in PROTOCOLS:
            return value
        if problems is not None:
            problems.append(f"{var}={_shown(raw)} is not an OTLP protocol ({', '.join(PROTOCOLS)}); "
                            "ignored")
    return "http/protobuf"


#: Numeric variables the SDK reads: (name, smallest usable value, what the SDK does without it).
NUMERIC_ENV = (
    ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 0.001, "OTEL_EXPORTER_OTLP_TIMEOUT or 10 s"),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", 0.001, "10 s"),
    ("OTEL_BSP_SCHEDULE_DELAY", 1, "5000 ms"),
    ("OTEL_BSP_EXPORT_TIMEOUT", 0, "30000 ms"),
    ("OTEL_BSP_MAX_QUEUE_SIZE", 1, "2048"),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, "512"),
    ("OTEL_ATTRIBUTE_COUNT_LIMIT", 0, "128"),
    # a length limit of 0 would blank every string (--max-attribute-length 0 is refused alike)
    ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", 1, "no limit"),
    ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", 0, "OTEL_ATTRIBUTE_COUNT_LIMIT or 128"),
    ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", 1, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"),
    ("OTEL_SPAN_EVENT_COUNT_LIMIT", 0, "128"),
    ("OTEL_SPAN_LINK_COUNT_LIMIT", 0, "128"),
    ("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", 0, "128"),
    ("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", 0, "128"),
)
#: Variables that must be whole numbers (the timeouts may be fractions of a second).
_FRACTIONAL = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
#: The longest export timeout, in seconds (a day): far longer ones overflow the exporters'
#: deadlines (``time() + timeout`` past ``time_t``: every export fails).
MAX_TIMEOUT_S = 86400.0
#: The largest whole number taken: a day in ms for the batch processor's delay and timeout
#: (beyond, its thread's wait overflows), else 2**31 − 1 (sizes and limits: beyond 2**63 the
#: SDK's C-level sizes overflow and cost the spans).
_MOST = {"OTEL_BSP_SCHEDULE_DELAY": 86_400_000, "OTEL_BSP_EXPORT_TIMEOUT": 86_400_000}
MAX_COUNT = 2**31 - 1


def check_numbers(env: Mapping[str, str], problems: list[str]) -> list[str]:
    """The :data:`NUMERIC_ENV` variables set to something that is not a number in range (the SDK
    would refuse to set up tracing for some, log a line per export for others); each said in
    ``problems``. Also a batch size above the queue size. Empty ones are unset, as the
    specification says (returned, not said: the SDK would log that it cannot parse them)."""
    ignored = []
    values: dict[str, float] = {}
    for var, least, default in NUMERIC_ENV:
        raw = env.get(var)
        if raw is None:
            continue
        if not raw.strip():
            ignored.append(var)
            continue
        try:
            value = float(raw) if var in _FRACTIONAL else int(raw.strip())
        except ValueError:
            value = None
        most = MAX_TIMEOUT_S if var in _FRACTIONAL else _MOST.get(var, MAX_COUNT)
        if value is None or value != value or value < least or (most and value > most):
            kind = "a number" if var in _FRACTIONAL else "a whole number"
            bound = f"from {least:g} to {most:g}" if var in _FRACTIONAL else f"from {least} to {most}"
            problems.append(f"{var}={_shown(raw)} is not {kind} {bound}; ignored, "
                            f"using {default}")
            ignored.append(var)
        else:
            values[var] = value
    # the SDK refuses a batch larger than the queue (tracing would be off for the run)
    batch, queue = values.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), values.get("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
    if batch is not None and batch > queue:
        problems.append(f"OTEL_BSP_MAX_EXPORT_BATCH_SIZE={int(batch)} is above the queue size "
                        f"({int(queue)}); ignored, using 512")
        ignored.append("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
        batch = None
    if batch is None and queue < 512:
        problems.append(f"OTEL_BSP_MAX_QUEUE_SIZE={int(queue)} is below the batch size (512); "
                        "ignored, using 2048 (or set OTEL_BSP_MAX_EXPORT_BATCH_SIZE)")
        ignored.append("OTEL_BSP_MAX_QUEUE_SIZE")
    return ignored


#: an HTTP field name (RFC 9110 ``token``); gRPC metadata keys are narrower (``_GRPC_KEY``)
_HTTP_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_GRPC_KEY = re.compile(r"[0-9a-z_.-]+")
#: a gRPC metadata value that is not ``-bin``: printable ASCII
_GRPC_VALUE = re.compile(r"[\x20-\x7e]*")


def _header_fault(protocol: str, key: str, value: str) -> str | None:
    """What keeps one URL-decoded header (``key`` lower-cased, as the SDK sends it) from going
    out with ``protocol`` (``None``: nothing)."""
    if protocol == "grpc":
        if not _GRPC_KEY.fullmatch(key) or key.endswith("-bin"):
            return "name is no gRPC metadata key (a-z, 0-9, - _ . and not -bin)"
        if not _GRPC_VALUE.fullmatch(value):
            return "value is no gRPC metadata value (printable ASCII)"
        return None
    if not _HTTP_NAME.fullmatch(key):
        return "name is no HTTP field name"
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return "value is no HTTP header value (not Latin-1)"
    if any(c in value for c in "\r\n\0"):
        return "value is no HTTP header value (a line break)"
    return None


def check_headers(env: Mapping[str, str], problems: list[str], protocol: str = "http/protobuf") -> list[str]:
    """``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`` with a header that, URL-decoded as the exporters
    decode it, ``protocol`` cannot send (an HTTP field, or gRPC metadata), or an item without
    ``=``: every export would fail, or the SDK would skip it with a warning that shows it. Said
    in ``problems`` by the header's name (never a value, nor an item without ``=``, which may be
    one); the variables returned, to be hidden from the SDK."""
    from urllib.parse import unquote

    ignored = []
    for var in ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"):
        for item in (env.get(var) or "").split(","):
            key, eq, value = item.partition("=")
            key = unquote(key).strip().lower()
            if not eq:
                said = "an item without '=' (name=value)" if key else None
            else:
                fault = _header_fault(protocol, key, unquote(value).strip())
                said = f"header {_shown(key, 40)}: its URL-decoded {fault}" if fault else None
            if said:
                problems.append(f"{var}: {said}; the variable is ignored, no headers sent")
                ignored.append(var)
                break
    return ignored


#: ``OTEL_TRACES_SAMPLER`` values the SDK knows; the ratio ones read ``OTEL_TRACES_SAMPLER_ARG``.
SAMPLERS = ("always_on", "always_off", "parentbased_always_on", "parentbased_always_off",
            "traceidratio", "parentbased_traceidratio")
_DEFAULT_SAMPLER = "parentbased_always_on (every trace sampled unless its parent was not)"


def check_sampler(env: Mapping[str, str], problems: list[str]) -> list[str]:
    """``OTEL_TRACES_SAMPLER`` naming no sampler, or a ratio sampler whose
    ``OTEL_TRACES_SAMPLER_ARG`` is not a number from 0 to 1: said in ``problems``; the variables
    returned, to be hidden from the SDK (which then samples as by default)."""
    raw = env.get("OTEL_TRACES_SAMPLER", "")
    name = raw.strip().lower()
    if not name:
        return []
    if name not in SAMPLERS:
        problems.append(f"OTEL_TRACES_SAMPLER={_shown(raw)} is not a sampler ({', '.join(SAMPLERS)}); "
                        f"ignored, using {_DEFAULT_SAMPLER}")
        return ["OTEL_TRACES_SAMPLER"]
    arg = env.get("OTEL_TRACES_SAMPLER_ARG")
    if not name.endswith("traceidratio") or arg is None or not arg.strip():
        return []  # an absent ratio is the SDK's 1.0
    try:
        ratio = float(arg)
    except ValueError:
        ratio = None
    if ratio is not None and 0.0 <= ratio <= 1.0:
        return []
    problems.append(f"OTEL_TRACES_SAMPLER_ARG={_shown(arg)} is not a ratio from 0 to 1 (for "
                    f"{name}); ignored with OTEL_TRACES_SAMPLER, using {_DEFAULT_SAMPLER}")
    return ["OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"]


@contextlib.contextmanager
def without(names: tuple[str, ...]) -> Iterator[None]:
    """``os.environ`` without ``names`` for the duration (the SDK's objects read the environment
    as they are made); restored after."""
    saved = {n: os.environ.pop(n) for n in names if n in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def ci_is_set(env: Mapping[str, str]) -> bool:
    """True when ``CI`` is set to anything but empty, ``0`` or ``false`` (GitHub Actions and GitLab
    CI set ``CI=true``)."""
    return env.get("CI", "").strip().lower() not in ("", "0", "false")


def resolve_max_attribute_length(flag: int | None, env: Mapping[str, str]) -> int:
    """The cap for exported strings, in characters: ``--max-attribute-length`` (default 256),
    lowered to ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`` (else ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``)
    when that is set smaller; without the flag the env value replaces the default. An env value
    that is not a positive integer is ignored, as the SDK ignores it."""
    env_limit = None
    for var in ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"):
        try:
            env_limit = int(env.get(var) or "")
        except ValueError:
            continue
        if env_limit >= 1:
            break
        env_limit = None
    if flag is None:
        return env_limit if env_limit is not None else 256
    if flag < 1:
        raise ConfigError("--max-attribute-length must be ≥ 1")
    return min(flag, env_limit) if env_limit is not None else flag


_SPACE = re.compile(r"\s")


def endpoint_problem(protocol: str, value: str) -> str | None:
    """What an OTLP ``protocol`` exporter needs and ``value`` is not (``None``: usable). OTLP/HTTP
    needs an ``http://`` or ``https://`` URL; gRPC also takes ``host:port``."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value.strip())
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if (parts is not None and port_ok and parts.scheme in ("http", "https") and parts.hostname
            and not _SPACE.search(parts.hostname)):
        return None
    if protocol == "grpc" and "://" not in value:
        host, _, port = value.strip().rpartition(":")
        if host and not _SPACE.search(host) and port.isdigit() and 0 < int(port) < 65536:
            return None
    return "http(s)://host:port" + (" or host:port" if protocol == "grpc" else "")


def tls_notice(protocol: str, where: str, value: str, env: Mapping[str, str]) -> list[str]:
    """One line when the gRPC exporter will connect to ``value`` (given by ``where``) with TLS
    because it has no scheme: the OTLP exporter specification has a scheme-less gRPC endpoint
    use TLS unless ``OTEL_EXPORTER_OTLP_TRACES_INSECURE``/``OTEL_EXPORTER_OTLP_INSECURE`` is
    ``true`` — a plaintext collector then sees only failed handshakes."""
    if protocol != "grpc" or "://" in value:
        return []
    insecure = env.get("OTEL_EXPORTER_OTLP_TRACES_INSECURE", env.get("OTEL_EXPORTER_OTLP_INSECURE"))
    if (insecure or "").strip().lower() == "true":
        return []
    from .redact import endpoint as printable

    shown = printable(value.strip())[:80]
    return [f"{where}{shown!r} has no scheme: gRPC connects with TLS (OTEL_EXPORTER_OTLP_INSECURE "
            f"is not true); for a plaintext collector use http://{shown} or set "
            "OTEL_EXPORTER_OTLP_INSECURE=true, for TLS say https://"]


def check_endpoint(protocol: str, flag: str | None, env: Mapping[str, str],
                   problems: list[str] | None = None) -> list[str]:
    """``--endpoint`` an endpoint the exporter cannot use: :class:`ConfigError`. The
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``/``_ENDPOINT`` variables: each unusable one is said in
    ``problems`` and returned, to be hidden from the exporter (which then takes the next one,
    at last its default)."""
    if flag:
        want = endpoint_problem(protocol, flag)
        if want:
            from .redact import endpoint as printable

            raise ConfigError(f"--endpoint {printable(flag)!r} is not an OTLP {protocol} endpoint: use {want}")
        if problems is not None:
            problems += tls_notice(protocol, "--endpoint ", flag, env)
        return []
    ignored = []
    default = "localhost:4317" if protocol == "grpc" else "http://localhost:4318"
    for var in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        value = env.get(var)
        if not value:
            continue
        want = endpoint_problem(protocol, value)
        if want is None:
            if problems is not None:
                problems += tls_notice(protocol, f"{var}=", value, env)
            break
        ignored.append(var)
        if problems is not None:
            from .redact import endpoint as printable

            problems.append(f"{var}={printable(value)[:80]!r} is not an OTLP {protocol} endpoint "
                            f"(use {want}); ignored")
    if ignored and problems is not None:
        rest = [v for v in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
                if env.get(v) and v not in ignored]
        problems[-1] += f", using {rest[0] if rest else default}"
    return ignored


#: Compressions the OTLP exporters take, by protocol (the gRPC exporter refuses to be made with
#: any other value, ``none`` included; the HTTP one logs every other value at each start).
COMPRESSIONS = {"grpc": ("gzip",), "http/protobuf": ("none", "gzip", "deflate"),
                "http/json": ("none", "gzip", "deflate")}
_COMPRESSION_ENV = ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")


def check_compression(protocol: str, env: Mapping[str, str], problems: list[str]) -> list[str]:
    """The ``OTEL_EXPORTER_OTLP[_TRACES]_COMPRESSION`` values the ``protocol`` exporter cannot
    take, to be hidden from it: each said in ``problems`` (with what is used instead), except
    ``none`` or an empty value over gRPC, which mean what hiding them gives (no compression)."""
    usable = COMPRESSIONS[protocol]
    ignored = []
    for var in _COMPRESSION_ENV:
        raw = env.get(var)
        if raw is None or raw.strip().lower() in usable:
            continue
        ignored.append(var)
        if raw.strip().lower() in ("", "none"):
            continue
        rest = [v for v in _COMPRESSION_ENV if v != var and v not in ignored
                and (env.get(v) or "").strip().lower() in usable]
        problems.append(f"{var}={_shown(raw)} is not an OTLP {protocol} compression "
                        f"({', '.join(usable)}); ignored, "
                        + (f"using {rest[0]}" if rest else "no compression"))
    return ignored


#: The TLS files the OTLP exporters read, each first from its ``_TRACES_`` variable.
TLS_FILES = (("CERTIFICATE", "CA certificate"), ("CLIENT_CERTIFICATE", "client certificate"),
             ("CLIENT_KEY", "client key"))


def uses_tls(protocol: str, flag: str | None, env: Mapping[str, str], ignored: list[str]) -> bool:
    """Whether the OTLP exporter will connect with TLS (and so read the TLS files): an
    ``https://`` endpoint; over gRPC also one without ``http://`` unless
    ``OTEL_EXPORTER_OTLP[_TRACES]_INSECURE`` is ``true``, or an ``http://`` one when it is set to
    something else (the exporters' own rules). ``ignored``: endpoint variables hidden from it."""
    endpoint = flag or next((env[v] for v in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                               "OTEL_EXPORTER_OTLP_ENDPOINT")
                             if env.get(v) and v not in ignored), "")
    scheme = endpoint.strip().split("://", 1)[0].lower() if "://" in endpoint else ""
    if scheme == "https":
        return True
    if protocol != "grpc":
        return False
    insecure = env.get("OTEL_EXPORTER_OTLP_TRACES_INSECURE", env.get("OTEL_EXPORTER_OTLP_INSECURE"))
    if insecure is not None:
        return insecure.strip().lower() != "true"
    return bool(endpoint) and scheme != "http"


def tls_file_problems(env: Mapping[str, str]) -> list[str]:
    """What is wrong with the TLS files of ``OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE``,
    ``_CLIENT_CERTIFICATE`` and ``_CLIENT_KEY`` (each the ``_TRACES_`` one when set, as the
    exporters read them): one phrase per file that is missing, not a regular file or
    unreadable; empty when all can be read."""
    found = []
    for kind, what in TLS_FILES:
        var = next((v for v in (f"OTEL_EXPORTER_OTLP_TRACES_{kind}", f"OTEL_EXPORTER_OTLP_{kind}")
                    if env.get(v)), None)
        if var is None:
            continue
        path = env[var]
        try:
            st = os.stat(path)
            why = (None if stat.S_ISREG(st.st_mode) and os.access(path, os.R_OK)
                   else "is a directory" if stat.S_ISDIR(st.st_mode)
                   else "is not a regular file" if not stat.S_ISREG(st.st_mode) else "is not readable")
        except OSError as exc:
            why = "does not exist" if isinstance(exc, FileNotFoundError) else exc.strerror.lower()
        if why is not None:
            found.append(f"{var}={_shown(path, 200)}: the {what} file {why}")
    return found


def build(
    *,
    exporter: str | None,
    protocol: str | None,
    env: Mapping[str, str] | None = None,
    use_traceparent: bool = True,
    trace_url_template: str | None = None,
    max_attribute_length: int | None = None,
    **flags,
) -> Config:
    """A :class:`Config` from parsed flags and ``env`` (default ``os.environ``).
    Raises :class:`ConfigError` on a value that cannot be used (a bad ``--redact`` regex, ...)."""
    env = os.environ if env is None else env
    for regex in flags.get("redact_patterns") or ():
        from .redact import PatternError, custom_pattern

        try:
            custom_pattern(regex)
        except PatternError as exc:
            raise ConfigError(str(exc)) from None
    problems: list[str] = []
    left_out: list[str] = []
    if exporter:
        exporters = parse_exporters(exporter)
    else:
        exporters = exporters_from_env(env.get("OTEL_TRACES_EXPORTER") or "otlp", flags.get("output"),
                                       problems, left_out)
    if "file" in exporters and not flags.get("output"):
        raise ConfigError("--exporter file needs --output PATH")
    if flags.get("output") in ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        raise ConfigError("--output cannot be stdout (it carries the stream alone): give a file path")
    if trace_url_template is not None and TRACE_ID_PLACEHOLDER not in trace_url_template:
        raise ConfigError(f"--trace-url-template needs the {TRACE_ID_PLACEHOLDER} placeholder")
    template = trace_url_template or env.get("OTELBRIDGE_TRACE_URL") or None
    if template is not None and TRACE_ID_PLACEHOLDER not in template:
        problems.append(f"OTELBRIDGE_TRACE_URL={_shown(template)} has no {TRACE_ID_PLACEHOLDER} "
                        "placeholder; ignored, no trace links")
        template = None
    if flags.get("summary") is not None and flags["summary"] not in SUMMARY_MODES:
        raise ConfigError(f"--summary must be one of {', '.join(SUMMARY_MODES)}")
    for name in ("flush_timeout_s", "grace_s"):
        value = flags.get(name)
        if value is not None and not 0 <= value <= MAX_SECONDS:  # (nan fails too)
            raise ConfigError(f"--{name[:-2].replace('_', '-')} must be from 0 to {MAX_SECONDS:.0f} seconds")
    protocol = resolve_protocol(protocol, env, problems)
    ignored: list[str] = []
    if "otlp" in exporters:
        ignored += check_endpoint(protocol, flags.get("endpoint"), env, problems)
        ignored += check_compression(protocol, env, problems)
        tls = tls_file_problems(env) if uses_tls(protocol, flags.get("endpoint"), env, ignored) else []
        if tls:  # the OTLP exporter could not connect: one line says which files and what follows
            exporters = tuple(n for n in exporters if n != "otlp") or ("none",)
            left_out.append("otlp")
            problems.append("; ".join(tls) + "; the otlp exporter is left out, " + (
                f"using {','.join(exporters)}" if exporters != ("none",)
                else "spans are built for the reports but not exported"))
    ignored += check_numbers(env, problems)
    ignored += check_sampler(env, problems)
    ignored += check_headers(env, problems, protocol)
    return Config(
        env_problems=tuple(problems),
        ignored_env=tuple(ignored),
        exporters=exporters,
        exporters_left_out=tuple(left_out),
        protocol=protocol,
        traceparent=env.get("TRACEPARENT") if use_traceparent else None,
        tracestate=env.get("TRACESTATE") if use_traceparent else None,
        trace_url_template=template,
        max_attribute_length=resolve_max_attribute_length(max_attribute_length, env),
        **{k: v for k, v in flags.items() if v is not None},
    )
