"""The standard ``OTEL_*`` variables the SDK and the OTLP exporters read, checked before they
are made: each value they cannot use is one line in ``problems`` (naming the variable and what
is done instead) and, where they would read it, returned to be hidden from them while they are
set up (:func:`without`). Nothing here raises: the stream goes on whatever the environment.

* numbers: the export timeouts (milliseconds, as the specification says; the Python exporters
  alone read seconds, so :func:`otlp_timeout_s` hands them the value), ``OTEL_BSP_*``, the span
  limits (:data:`NUMERIC_ENV`);
* ``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS``: what the protocol cannot send (gRPC metadata is
  narrower than HTTP's fields); ``OTEL_RESOURCE_ATTRIBUTES``: an item that is not ``key=value``;
  in both, a ``%`` that begins no escape;
* ``OTEL_TRACES_SAMPLER``/``_ARG``; the endpoints, compressions and TLS files.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Collection, Iterator, Mapping
from typing import Any


def shown(value: str, limit: int = 40) -> str:
    """An environment value as we quote it: one line, at most ``limit`` characters, no secrets."""
    from .redact import message

    return repr(message(value.strip())[:limit])


#: The batch delay without ``OTEL_BSP_SCHEDULE_DELAY`` (the SDK's 5000 ms would hold a CI job's
#: spans back 5 s at its end and a live viewer's for as long), ms.
SCHEDULE_DELAY_MS = 1000

#: Numeric variables the SDK reads: (name, smallest usable value, what is used without it).
NUMERIC_ENV = (
    # milliseconds, as the specification says (the Python SDK alone reads seconds: the value
    # reaches the exporter from :func:`otlp_timeout_s`)
    ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 1, "OTEL_EXPORTER_OTLP_TIMEOUT or 10000 ms"),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", 1, "10000 ms"),
    ("OTEL_BSP_SCHEDULE_DELAY", 1, f"{SCHEDULE_DELAY_MS} ms"),
    ("OTEL_BSP_EXPORT_TIMEOUT", 0, "30000 ms"),
    ("OTEL_BSP_MAX_QUEUE_SIZE", 1, "2048"),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, "512"),
    ("OTEL_ATTRIBUTE_COUNT_LIMIT", 0, "128"),
    # a length limit of 0 would blank every string (--max-attribute-length 0 is refused alike)
    ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", 1, "--max-attribute-length (256 by default)"),
    ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", 0, "OTEL_ATTRIBUTE_COUNT_LIMIT or 128"),
    ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", 1,
     "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT or --max-attribute-length (256 by default)"),
    ("OTEL_SPAN_EVENT_COUNT_LIMIT", 0, "128"),
    ("OTEL_SPAN_LINK_COUNT_LIMIT", 0, "128"),
    ("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", 0, "128"),
    ("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", 0, "128"),
)


_OTLP_TIMEOUTS = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


#: The largest whole number taken: a day in ms for the timeouts and the batch processor's delay
#: (beyond, the processor's wait or the exporter's deadline, ``time() + timeout``, overflows),
#: else 2**31 − 1 for sizes and limits (no queue or string is that large; past 2**63 the SDK's
#: C-level sizes overflow and cost the spans).
_MOST = {"OTEL_BSP_SCHEDULE_DELAY": 86_400_000, "OTEL_BSP_EXPORT_TIMEOUT": 86_400_000,
         **dict.fromkeys(_OTLP_TIMEOUTS, 86_400_000)}


#: An export timeout shorter than this (ms) is said: most likely meant in seconds.
_SHORT_TIMEOUT_MS = 100


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
            value = int(raw.strip())
        except ValueError:
            value = None
        most = _MOST.get(var, MAX_COUNT)
        if value is None or value < least or value > most:
            unit = " (milliseconds)" if var in _OTLP_TIMEOUTS else ""
            problems.append(f"{var}={shown(raw)} is not a whole number from {least} to {most}"
                            f"{unit}; ignored, using {default}")
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


def otlp_timeout_s(env: Mapping[str, str], ignored: list[str], problems: list[str]) -> float | None:
    """The OTLP export timeout in seconds, from ``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` else
    ``OTEL_EXPORTER_OTLP_TIMEOUT`` in milliseconds (the specification; values :func:`check_numbers`
    passed), or ``None`` (the exporter's 10 s). One shorter than :data:`_SHORT_TIMEOUT_MS` is
    used and said in ``problems``."""
    for var in _OTLP_TIMEOUTS:
        raw = env.get(var)
        if raw and raw.strip() and var not in ignored:
            ms = int(raw.strip())
            if ms < _SHORT_TIMEOUT_MS:
                problems.append(f"{var}={ms} is read in milliseconds, as the OpenTelemetry "
                                f"specification says: an export that takes longer than {ms} ms "
                                "fails (for seconds, multiply by 1000)")
            return ms / 1000
    return None


#: an HTTP field name (RFC 9110 ``token``); gRPC metadata keys are narrower (``_GRPC_KEY``)
_HTTP_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


#: How an item without ``=`` is to be written
_NO_EQUALS_HINT = "name=value, a blank in the value as %20: authorization=Bearer%20…"
#: HTTP fields that describe the body, which the OTLP/HTTP exporter sets (protobuf, its
#: compression): a user's value misdescribes it and the collector refuses every export
_BODY_FIELDS = frozenset({"content-type", "content-encoding", "content-length", "transfer-encoding"})

_GRPC_KEY = re.compile(r"[0-9a-z_.-]+")


#: a gRPC metadata value that is not ``-bin``: printable ASCII
_GRPC_VALUE = re.compile(r"[\x20-\x7e]*")


#: A word of 8 characters or more with a digit, or 16 of letters, digits, ``+/_``: in a header's
#: name that is none (a value pasted without its name: ``Basic dXNlcjpw…``), likely a secret
_GENERATED = re.compile(r"(?=[^\s:=,;]*[0-9])[^\s:=,;]{8,}|[A-Za-z0-9+/_]{16,}")


#: A ``%`` that begins no escape (``%`` then two hex digits). The headers and the resource
#: attributes are W3C Baggage, where a ``%`` itself is written ``%25``. The SDK keeps such a
#: value as written, and so do we, saying it: it is likely what was meant (a token with a
#: ``%``), and the resource specification's answer, to drop the whole variable, would cost
#: every attribute, ``service.name`` among them, for one character
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _bad_escapes(what: str, names: list[str], done: str) -> list[str]:
    """What is said of the ``names`` (at most 3 shown) whose values have a :data:`_BAD_ESCAPE`,
    each kept as written (``done``)."""
    if not names:
        return []
    whose = "its value" if len(names) == 1 else "each one's value"
    return [f"{what}{'s' * (len(names) > 1)} {', '.join(names[:3])}{', …' * (len(names) > 3)}: a % in "
            f"{whose} begins no %XX escape, {done} (a % itself is written %25)"]


def _named(key: str) -> str:
    """A header's or resource attribute's name as we quote it: a generated-looking word in it
    (a value pasted in its place, a secret) as ``…``."""
    return shown(_GENERATED.sub("…", key.strip()), 40)


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
    if key in _BODY_FIELDS:  # (a collector answered a JSON type with 500, the others with 400)
        return "name is one the OTLP/HTTP exporter sets itself, for the body it sends (protobuf or JSON)"
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return "value is no HTTP header value (not Latin-1)"
    if any(c in value for c in "\r\n\0"):
        return "value is no HTTP header value (a line break)"
    return None


def check_headers(env: Mapping[str, str], problems: list[str],
                  protocol: str = "http/protobuf") -> tuple[list[str], dict[str, str]]:
    """``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`` with headers that, URL-decoded as the exporters
    decode them, ``protocol`` cannot send (an HTTP field, or gRPC metadata): every export would
    fail. Each said in ``problems`` by its name (never its value) and left out, the others sent
    (as the SDK does with an item without ``=``: a typo in one must not cost the rest, an
    ``authorization`` among them). Returns the variables left with no header, to be hidden from
    the SDK, and the others' values without the headers left out, to be given to it instead."""
    from urllib.parse import unquote

    ignored, replaced = [], {}
    for var in ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"):
        kept, faults, as_written = [], [], []
        for item in (env.get(var) or "").split(","):
            key, eq, value = item.partition("=")
            key = unquote(key).strip()
            if eq:
                fault = _header_fault(protocol, key.lower(), unquote(value).strip())
                fault = fault and f"its URL-decoded {fault}"
            elif key:  # (``Authorization: Bearer x``, as an HTTP request writes it: the name alone shown)
                key = re.split(r"[\s:]", key, maxsplit=1)[0]
                fault = f"no '=' after the name (write {_NO_EQUALS_HINT})"
            else:
                fault = None
            if fault:
                faults.append(f"header {_named(key)}: {fault}")
                continue
            kept.append(item)
            if eq and _BAD_ESCAPE.search(value):
                as_written.append(_named(key))
        said = [f"{'; '.join(faults[:3])}{'; …' if len(faults) > 3 else ''}"] if faults else []
        if faults and any(item.partition("=")[1] for item in kept):
            replaced[var] = ",".join(kept)
            said.append("left out, the other headers are sent")
        elif faults:
            ignored.append(var)
            said.append("the variable is ignored, no headers sent")
        said += _bad_escapes("header", as_written, "sent as written")
        if said:
            problems.append(f"{var}: {'; '.join(said)}")
    return ignored, replaced


def for_the_sdk(ignored: tuple[str, ...], replaced: tuple[tuple[str, str], ...]) -> None:
    """``os.environ`` as the SDK is to read it (in this process: a wrapped command gets the
    environment as given): the values said unusable dropped, those usable in part replaced by
    that part."""
    for name in ignored:
        os.environ.pop(name, None)
    os.environ.update(replaced)


def check_resource_attributes(env: Mapping[str, str], problems: list[str]) -> None:
    """``OTEL_RESOURCE_ATTRIBUTES`` items the SDK does not take as written, said in one line in
    ``problems``, each by its place (``item 2 of 3``) and, when it has one, its key, never its
    value (it may hold a secret): one that is not ``key=value`` (no ``=``, an empty key), which
    the SDK skips (using the others) with a warning per item and per read that quotes it
    (:func:`otelbridge.resource.make_resource` keeps the SDK's quiet); a value with a ``%``
    that begins no escape, which the SDK keeps as written."""
    items = (env.get("OTEL_RESOURCE_ATTRIBUTES") or "").split(",")
    said, as_written = [], []
    for n, item in enumerate(items, 1):
        key, eq, value = item.partition("=")
        place = f"item {n} of {len(items)}"
        if not item.strip():
            continue  # (a comma too many: nothing lost)
        if not eq or not key.strip():
            said.append(f"{place}: " + ("not key=value (a comma in a value is written %2C)" if not eq
                                        else "an empty key") + ", skipped")
        elif _BAD_ESCAPE.search(value):
            as_written.append(f"{_named(key)} ({place})")
    if said:
        said = [f"{'; '.join(said[:3])}{'; …' * (len(said) > 3)}; the others are used"]
    said += _bad_escapes("attribute", as_written, "kept as written")
    if said:
        problems.append(f"OTEL_RESOURCE_ATTRIBUTES: {'; '.join(said)}")


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
        problems.append(f"OTEL_TRACES_SAMPLER={shown(raw)} is not a sampler ({', '.join(SAMPLERS)}); "
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
    problems.append(f"OTEL_TRACES_SAMPLER_ARG={shown(arg)} is not a ratio from 0 to 1 (for "
                    f"{name}); ignored with OTEL_TRACES_SAMPLER, using {_DEFAULT_SAMPLER}")
    return ["OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"]


def sampler(env: Mapping[str, str]) -> Any:
    """The sampler ``OTEL_TRACES_SAMPLER`` names (blanks around it and case aside), with its
    ratio, ``OTEL_TRACES_SAMPLER_ARG``, or the specification's default, 1.0, when that is unset
    or blank (the SDK reads the same, but logs a warning for the latter, and takes a name with
    blanks around it, or a blank one, for none); when none is named (or :func:`check_sampler`
    said the value unusable and hid it), the default, ``parentbased_always_on``."""
    from opentelemetry.sdk.trace import sampling

    name = env.get("OTEL_TRACES_SAMPLER", "").strip().lower()
    if name not in SAMPLERS:
        return sampling.DEFAULT_ON
    if name.endswith("traceidratio"):
        ratio = float(env.get("OTEL_TRACES_SAMPLER_ARG", "").strip() or 1.0)
        return (sampling.ParentBasedTraceIdRatio if name.startswith("parentbased")
                else sampling.TraceIdRatioBased)(ratio)
    return {"always_on": sampling.ALWAYS_ON, "always_off": sampling.ALWAYS_OFF,
            "parentbased_always_on": sampling.DEFAULT_ON,
            "parentbased_always_off": sampling.DEFAULT_OFF}[name]


@contextlib.contextmanager
def without(names: tuple[str, ...]) -> Iterator[None]:
    """``os.environ`` without ``names`` for the duration (the SDK's objects read the environment
    as they are made); restored after."""
    saved = {n: os.environ.pop(n) for n in names if n in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


_SPACE = re.compile(r"\s")


#: What a gRPC endpoint with ``user:password@`` is told: gRPC would take them for the host name.
GRPC_CREDENTIALS = ("it without its user:password@, not shown: gRPC takes no credentials from the URL "
                    "and would read them as part of the host name; send them in OTEL_EXPORTER_OTLP_HEADERS "
                    "as the authorization header: the word Basic, %20, then user:password in base64")


def endpoint_problem(protocol: str, value: str) -> str | None:
    """What an OTLP ``protocol`` exporter needs and ``value`` is not (``None``: usable). OTLP/HTTP
    needs an ``http://`` or ``https://`` URL; gRPC also takes ``host:port``, but no
    ``user:password@`` (:data:`GRPC_CREDENTIALS`)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value.strip())
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if (parts is not None and port_ok and parts.scheme in ("http", "https") and parts.hostname
            and not _SPACE.search(parts.hostname)):
        return GRPC_CREDENTIALS if protocol == "grpc" and "@" in parts.netloc else None
    if protocol == "grpc" and "://" not in value:
        host, _, port = value.strip().rpartition(":")
        if host and not _SPACE.search(host) and port.isdigit() and 0 < int(port) < 65536:
            return GRPC_CREDENTIALS if "@" in host else None
    return "http(s)://host:port" + (" or host:port" if protocol == "grpc" else "")


def loopback_address(value: str) -> bool:
    """Whether ``value`` is ``host:port`` without a scheme, a path after it or not, ``host`` a
    loopback address (``localhost``, ``127.0.0.1``, ``[::1]``) and ``port`` from 1 to 65535."""
    import ipaddress

    value = value.strip()
    if "/" in value:  # a path: after the port alone
        value, _, path = value.partition("/")
        if _SPACE.search(path):
            return False
    host, _, port = value.rpartition(":")
    if "://" in value or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        return False
    if host.lower() == "localhost":
        return True
    if ":" in host and not (host.startswith("[") and host.endswith("]")) or "%" in host:
        return False  # (an IPv6 address is bracketed in a URL; a zone in it no URL host takes)
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _insecure(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The ``OTEL_EXPORTER_OTLP[_TRACES]_INSECURE`` variable the gRPC exporter reads (the first
    set) and its value; ``(None, None)`` when neither is set."""
    for var in ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_INSECURE"):
        if var in env:
            return var, env[var]
    return None, None


def tls_notice(protocol: str, where: str, value: str, env: Mapping[str, str]) -> list[str]:
    """One line when the gRPC exporter will connect to ``value`` (given by ``where``) with TLS
    because it has no scheme: the OTLP exporter specification has a scheme-less gRPC endpoint
    use TLS unless ``OTEL_EXPORTER_OTLP_TRACES_INSECURE``/``OTEL_EXPORTER_OTLP_INSECURE`` is
    ``true`` — a plaintext collector then sees only failed handshakes."""
    if protocol != "grpc" or "://" in value:
        return []
    insecure = _insecure(env)[1]
    if (insecure or "").strip().lower() == "true":
        return []
    from .redact import endpoint as printable

    target = printable(value.strip())[:80]
    said = "" if insecure is None or insecure.strip().lower() in _BOOLEAN else f" but {shown(insecure)}"
    return [f"{where}{target!r} has no scheme: gRPC connects with TLS (OTEL_EXPORTER_OTLP_INSECURE "
            f"is not true{said}); for a plaintext collector use http://{target} or set "
            "OTEL_EXPORTER_OTLP_INSECURE=true, for TLS say https://"]


def grpc_path_notice(protocol: str, where: str, value: str) -> list[str]:
    """One line when a gRPC endpoint ``value`` (given by ``where``) has a path or a query: the
    gRPC exporter connects to its host and port alone (a gRPC call's path is its method's)."""
    from urllib.parse import urlsplit

    if protocol != "grpc" or "://" not in value:
        return []
    parts = urlsplit(value.strip())
    if parts.path in ("", "/") and not parts.query:
        return []
    from .redact import endpoint as printable

    return [f"{where}{printable(value.strip())[:80]!r}: its path is not used over gRPC, which connects to "
            f"{parts.scheme}://{parts.netloc.rpartition('@')[2]} alone (a path is OTLP/HTTP's)"]


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
        problems.append(f"{var}={shown(raw)} is not an OTLP {protocol} compression "
                        f"({', '.join(usable)}); ignored, "
                        + (f"using {rest[0]}" if rest else "no compression"))
    return ignored


#: The TLS files the OTLP exporters read, each first from its ``_TRACES_`` variable.
TLS_FILES = (("CERTIFICATE", "CA certificate"), ("CLIENT_CERTIFICATE", "client certificate"),
             ("CLIENT_KEY", "client key"))


def default_endpoint(protocol: str) -> str:
    """The OTLP exporters' endpoint when none is given: ``http://localhost:4317`` for gRPC
    (written with ``http://``: without it, gRPC's exporter would use TLS), else
    ``http://localhost:4318``."""
    return "http://localhost:4317" if protocol == "grpc" else "http://localhost:4318"


def endpoint_used(flag: str | None, env: Mapping[str, str], ignored: Collection[str] = ()) -> tuple[str, str]:
    """The endpoint the OTLP exporter is given (``""``: its default) and its scheme, lower-case
    (``""``: none). ``ignored``: endpoint variables hidden from it."""
    endpoint = flag or next((env[v] for v in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                               "OTEL_EXPORTER_OTLP_ENDPOINT")
                             if env.get(v) and v not in ignored), "")
    return endpoint, endpoint.strip().split("://", 1)[0].lower() if "://" in endpoint else ""


def uses_tls(protocol: str, flag: str | None, env: Mapping[str, str], ignored: list[str]) -> bool:
    """Whether the OTLP exporter will connect with TLS (and so read the TLS files): an
    ``https://`` endpoint; over gRPC also one without a scheme unless
    ``OTEL_EXPORTER_OTLP[_TRACES]_INSECURE`` is ``true`` (an ``http://`` one, the default's
    too, is plaintext: :func:`otelbridge.exporters.otlp_exporter`). ``ignored``: endpoint
    variables hidden from it."""
    endpoint, scheme = endpoint_used(flag, env, ignored)
    if scheme == "https":
        return True
    if protocol != "grpc" or not endpoint or scheme:
        return False
    return (_insecure(env)[1] or "").strip().lower() != "true"


_BOOLEAN = ("", "true", "false")


def check_booleans(env: Mapping[str, str], problems: list[str]) -> None:
    """A boolean variable neither ``true``, ``false`` (any case) nor empty is said in
    ``problems``: the specification reads it as false and asks for a warning (``1`` and ``yes``
    are not true). ``OTEL_SDK_DISABLED``; the gRPC exporter's ``INSECURE`` is read only for an
    endpoint without a scheme, where :func:`tls_notice` says it."""
    raw = env.get("OTEL_SDK_DISABLED")
    if raw is not None and raw.strip().lower() not in _BOOLEAN:
        problems.append(f"OTEL_SDK_DISABLED={shown(raw)} is not true or false: read as false, "
                        "tracing stays on (true turns it off)")


def tls_file_problems(env: Mapping[str, str]) -> list[str]:
    """What is wrong with the TLS files of ``OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE``,
    ``_CLIENT_CERTIFICATE`` and ``_CLIENT_KEY`` (each the ``_TRACES_`` one when set, as the
    exporters read them): one phrase per file that is missing, not a regular file, unreadable
    or not PEM (no ``-----BEGIN`` line in its first 64 KiB: the exporters read PEM only);
    empty when all can be read."""
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
            if why is None:
                with open(path, "rb") as fh:
                    why = None if b"-----BEGIN " in fh.read(64 << 10) else "is not PEM (no -----BEGIN line)"
        except OSError as exc:
            why = "does not exist" if isinstance(exc, FileNotFoundError) else exc.strerror.lower()
        if why is not None:
            found.append(f"{var}={shown(path, 200)}: the {what} file {why}")
    return found
