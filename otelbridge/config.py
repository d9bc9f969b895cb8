"""One frozen :class:`Config` from flags and the standard ``OTEL_*`` environment.

Environment read here:

* ``OTEL_TRACES_EXPORTER`` — ``otlp``, ``console``, ``none`` (comma-separated), when no
  ``--exporter`` is given;
* ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` — ``grpc``,
  ``http/protobuf`` or ``http/json`` (default ``http/protobuf``, the OTLP specification's
  default), when no ``--protocol`` is given;
* ``OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT`` — each export's timeout, in milliseconds;
* ``TRACEPARENT`` / ``TRACESTATE`` — the W3C environment carrier, unless ``--no-traceparent``;
* ``OTELBRIDGE_TRACE_URL`` — the trace link template, when no ``--trace-url-template``;
* ``CI`` — set (and not ``0``/``false``): ``--summary auto`` draws the waterfall even when stderr is
  not a terminal;
* ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`` / ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`` — also cap
  :attr:`Config.max_attribute_length` (the SDK applies them too, without our ``…``).

The rest the SDK and the exporters read themselves (endpoints, headers, TLS files,
compression, ``OTEL_BSP_*``, the span limits, the sampler, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SDK_DISABLED``), checked first by
:mod:`otelbridge.environment`. The stream first, whatever the environment: a value otelbridge or
the SDK cannot use is one line in :attr:`Config.env_problems` and, where the SDK would read it,
in :attr:`Config.ignored_env` (hidden from the SDK while it is set up); only a bad command-line
flag is a :class:`ConfigError`; a TLS file that cannot be read leaves the ``otlp`` exporter out
(:attr:`Config.exporters_left_out`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from .environment import (check_booleans, check_compression, check_headers, check_numbers,
                          check_resource_attributes, check_sampler, default_endpoint,
                          endpoint_problem, grpc_path_notice, loopback_address, otlp_timeout_s, shown, tls_file_problems, tls_notice,
                          uses_tls)

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
    #: each OTLP export's timeout (``OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT``, ms, in seconds);
    #: ``None``: the exporter's own
    otlp_timeout_s: float | None = None
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
    #: ``--outputs PATH``: the job outputs written as ``name=value`` lines, as ``GITHUB_OUTPUT``
    #: gets them (a dotenv file: GitLab CI's ``artifacts:reports:dotenv``)
    outputs: str | None = None
    command: tuple[str, ...] = field(default_factory=tuple)
    #: one line per environment value that cannot be used, saying what is done instead
    env_problems: tuple[str, ...] = ()
    #: variables the SDK must not read (their values cannot be used): see :func:`without`
    ignored_env: tuple[str, ...] = ()
    #: (variable, value) given to the SDK in place of a value usable only in part
    replaced_env: tuple[tuple[str, str], ...] = ()
    #: exporters asked for that cannot be used (said in :attr:`env_problems`): not in
    #: :attr:`exporters`, and their spans are not exported (``--fail-on-export-error``)
    exporters_left_out: tuple[str, ...] = ()


def parse_exporters(value: str) -> tuple[str, ...]:
    """``"otlp,file"`` → ``("otlp", "file")``; ``ConfigError`` on an unknown name."""
    names = tuple(dict.fromkeys(p.strip().lower() for p in value.split(",") if p.strip()))
    if not names:
        raise ConfigError(f"--exporter {value!r} names no exporter: use {', '.join(EXPORTERS)}")
    for name in names:
        if name not in EXPORTERS:
            raise ConfigError(f"unknown exporter {name!r}: use {', '.join(EXPORTERS)}")
    if "none" in names and len(names) > 1:
        names = tuple(n for n in names if n != "none")
    return names or ("none",)


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
        why = ", ".join(shown(n) + (" needs --output" if n == "file" else " is not supported")
                        for n in dropped)
        problems.append(f"OTEL_TRACES_EXPORTER={shown(value)}: {why} (otelbridge has "
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
    refused: list[str] = []
    value, source = "http/protobuf", "the default"
    for var in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        raw = env.get(var, "")
        given = raw.strip().lower()
        if not given:
            continue
        if given in PROTOCOLS:
            value, source = given, var
            break
        # (``http`` too: not among the specification's values; the Python and Java SDKs
        # refuse it at start, and which encoding it means is the user's to say)
        hint = "; OTLP over HTTP is http/protobuf or http/json" if given.startswith("http") else ""
        refused.append(f"{var}={shown(raw)} is not an OTLP protocol ({', '.join(PROTOCOLS)}{hint})")
    if problems is not None:
        problems.extend(f"{bad}; using {value} ({source})" for bad in refused)
    return value


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


def _loopback_read(protocol: str, given: str, value: str, problems: list[str] | None,
                   whole: bool = False) -> str | None:
    """Over OTLP/HTTP, a loopback ``host:port[/path]`` without a scheme (``given``: where it
    was, as ``--endpoint `` or ``VAR=``) as the URL it is read as, ``http://``, said in
    ``problems``; ``None`` for any other value. ``whole``: the traces variable, a whole URL
    (``/v1/traces`` added when it has no path)."""
    from . import redact

    if protocol == "grpc" or not loopback_address(value):
        return None
    # (no TLS is meant on a loopback address: plaintext there is what the user meant, where
    # the default would be another port or nothing)
    url = f"http://{value.strip()}" + ("/v1/traces" if whole and "/" not in value.strip() else "")
    if problems is not None:
        problems.append(f"{given}{redact.endpoint(value.strip())[:80]!r} has no scheme: read as "
                        f"{redact.endpoint(url)[:90]} (a loopback address, plaintext); "
                        "write the scheme, http:// or https://")
    return url


def check_endpoint(protocol: str, flag: str | None, env: Mapping[str, str],
                   problems: list[str] | None = None, replaced: dict[str, str] | None = None) -> list[str]:
    """``--endpoint`` an endpoint the exporter cannot use: :class:`ConfigError`. The
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``/``_ENDPOINT`` variables: each unusable one is said in
    ``problems`` and returned, to be hidden from the exporter (which then takes the next one,
    at last its default); over OTLP/HTTP, a loopback ``host:port`` without a scheme, in either,
    is read as ``http://host:port`` (in ``replaced``, the flag's under ``--endpoint``), and said."""
    if flag:
        want = endpoint_problem(protocol, flag)
        url = _loopback_read(protocol, "--endpoint ", flag, problems) if want and replaced is not None else None
        if url is not None:
            replaced["--endpoint"] = url  # type: ignore[index]
            return []
        if want:
            from .redact import endpoint as printable

            raise ConfigError(f"--endpoint {printable(flag)!r} is not an OTLP {protocol} endpoint: use {want}")
        if problems is not None:
            problems += tls_notice(protocol, "--endpoint ", flag, env) + grpc_path_notice(protocol, "--endpoint ", flag)
        return []
    ignored = []
    default = default_endpoint(protocol)
    said = len(problems) if problems is not None else 0  # where the last ignored one is said
    for var in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        value = env.get(var)
        if not value:
            continue
        want = endpoint_problem(protocol, value)
        if want is None:
            if problems is not None:
                problems += tls_notice(protocol, f"{var}=", value, env) + grpc_path_notice(protocol, f"{var}=", value)
            break
        url = _loopback_read(protocol, f"{var}=", value, problems,
                             whole=var == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") if replaced is not None else None
        if url is not None:
            replaced[var] = url  # type: ignore[index]
            break
        from . import redact

        ignored.append(var)
        if problems is not None:
            said = len(problems)
            problems.append(f"{var}={redact.endpoint(value)[:80]!r} is not an OTLP {protocol} endpoint "
                            f"(use {want}); ignored")
    if ignored and problems is not None:
        rest = [v for v in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
                if env.get(v) and v not in ignored]
        problems[said] += f", using {rest[0] if rest else default}"
    return ignored


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
    regexes = flags.get("redact_patterns") or ()
    for n, regex in enumerate(regexes, 1):
        from .redact import PatternError, custom_pattern

        try:
            custom_pattern(regex)
        except PatternError as exc:
            which = f" (the --redact {n} of {len(regexes)})" if len(regexes) > 1 else ""
            raise ConfigError(str(exc) + which) from None
    problems: list[str] = []
    left_out: list[str] = []
    if exporter is not None:
        exporters = parse_exporters(exporter)
    else:
        exporters = exporters_from_env(env.get("OTEL_TRACES_EXPORTER") or "otlp", flags.get("output"),
                                       problems, left_out)
    if "file" in exporters and not flags.get("output"):
        raise ConfigError("--exporter file needs --output PATH")
    if flags.get("output") in ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        raise ConfigError("--output cannot be stdout (it carries the stream alone): give a file path")
    if flags.get("output") and "file" not in exporters:
        kept = ",".join(n for n in exporters if n != "none")
        problems.append(f"--output is for --exporter file, which is not in use ({','.join(exporters)}): "
                        "nothing is written there; add --exporter file"
                        + (f" (or {kept},file to keep {kept})" if kept else ""))
    if trace_url_template is not None and TRACE_ID_PLACEHOLDER not in trace_url_template:
        raise ConfigError(f"--trace-url-template needs the {TRACE_ID_PLACEHOLDER} placeholder")
    template = trace_url_template or env.get("OTELBRIDGE_TRACE_URL") or None
    if template is not None and TRACE_ID_PLACEHOLDER not in template:
        problems.append(f"OTELBRIDGE_TRACE_URL={shown(template)} has no {TRACE_ID_PLACEHOLDER} "
                        "placeholder; ignored, no trace links")
        template = None
    for option in ("report", "outputs", "stats_json"):  # written at exit: what cannot be is said now
        path = flags.get(option)
        where = os.path.dirname(os.path.abspath(path)) if path else ""
        if not path or os.path.isdir(where) and not os.path.isdir(path):
            continue  # (shown() imports the redactor: only when there is something to say)
        said = f"--{option.replace('_', '-')} {shown(path, 300)}: "
        if os.path.isdir(path):
            problems.append(said + "a directory; the file cannot be written")
        elif os.path.exists(where):
            problems.append(said + f"{shown(where, 300)} is not a directory; the file cannot be written")
        else:
            problems.append(said + f"no directory {shown(where, 300)} now; it is written at exit, "
                            "if the directory is there by then")
    if flags.get("summary") is not None and flags["summary"] not in SUMMARY_MODES:
        raise ConfigError(f"--summary must be one of {', '.join(SUMMARY_MODES)}")
    for name in ("flush_timeout_s", "grace_s"):
        value = flags.get(name)
        if value is not None and not 0 <= value <= MAX_SECONDS:  # (nan fails too)
            raise ConfigError(f"--{name[:-2].replace('_', '-')} must be from 0 to {MAX_SECONDS:.0f} seconds")
    protocol = resolve_protocol(protocol, env, problems)
    ignored: list[str] = []
    endpoints: dict[str, str] = {}
    if "otlp" in exporters:
        ignored += check_endpoint(protocol, flags.get("endpoint"), env, problems, endpoints)
        if "--endpoint" in endpoints:
            flags["endpoint"] = endpoints.pop("--endpoint")
        ignored += check_compression(protocol, env, problems)
        tls = tls_file_problems(env) if uses_tls(protocol, flags.get("endpoint"), env, ignored) else []
        if tls:  # the OTLP exporter could not connect: one line says which files and what follows
            exporters = tuple(n for n in exporters if n != "otlp") or ("none",)
            left_out.append("otlp")
            problems.append("; ".join(tls) + "; the otlp exporter is left out, " + (
                f"using {','.join(exporters)}" if exporters != ("none",)
                else "spans are built for the reports but not exported"))
    check_booleans(env, problems)
    ignored += check_numbers(env, problems)
    timeout_s = otlp_timeout_s(env, ignored, problems) if "otlp" in exporters else None
    ignored += check_sampler(env, problems)
    hidden, replaced = check_headers(env, problems, protocol)
    ignored += hidden
    check_resource_attributes(env, problems)
    return Config(
        env_problems=tuple(problems),
        ignored_env=tuple(ignored),
        replaced_env=tuple({**replaced, **endpoints}.items()),
        exporters=exporters,
        exporters_left_out=tuple(left_out),
        protocol=protocol,
        traceparent=env.get("TRACEPARENT") if use_traceparent else None,
        tracestate=env.get("TRACESTATE") if use_traceparent else None,
        trace_url_template=template,
        otlp_timeout_s=timeout_s,
        max_attribute_length=resolve_max_attribute_length(
            max_attribute_length, {k: v for k, v in env.items() if k not in ignored}),
        **{k: v for k, v in flags.items() if v is not None},
    )
