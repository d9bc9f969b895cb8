"""What every dialect shares: :class:`LineInfo`, the :class:`Dialect` protocol, timestamp and
usage parsing. A leaf: dialect modules import from here, never from the package."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

import msgspec

from ..events import Event, Usage, as_int, ms_to_ns


class LineInfo(msgspec.Struct):
    """What every dialect may use of a line besides its own fields: the session id (the line's,
    else the latest the stream showed) and the line's own timestamp in epoch ns, if any."""

    session_id: str | None
    ts_ns: int | None


class Dialect(Protocol):
    name: str
    markers: tuple[bytes, ...]

    def decode(self, doc: dict[str, Any], line: LineInfo) -> list[Event]: ...


def parse_timestamp(value: Any) -> int | None:
    """A line's own timestamp → epoch ns, or ``None``.

    Accepts RFC 3339 / ISO 8601 strings (``2026-10-02T12:00:00.123Z``; milk ``ts``, Claude Code
    wrappers' ``timestamp``; a fraction to the ns) and epoch-ms numbers. Out-of-range values
    give ``None``.
    """
    if isinstance(value, str):
        if not 10 <= len(value) <= 40:
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            return None
        seconds = int(parsed.timestamp())
        ns = seconds * 1_000_000_000 + parsed.microsecond * 1_000
        dot = max(value.find(".", 19), value.find(",", 19))  # (datetime keeps µs: 7–9 digits here)
        if dot > 0 and value[dot + 7:dot + 8].isdigit():
            digits = value[dot + 1:dot + 10]
            digits = digits[:len(digits) - len(digits.lstrip("0123456789"))]
            ns = seconds * 1_000_000_000 + int(digits.ljust(9, "0"))
        return ms_to_ns(ns // 1_000_000) and ns
    return ms_to_ns(value)


def parse_usage(value: Any) -> Usage | None:
    """A ``usage`` object → :class:`~otelbridge.events.Usage`, or ``None`` when ``value`` is not
    an object. The Anthropic shape (``cache_read_input_tokens``, ``cache_creation_input_tokens``:
    Claude Code, cbc, Caudra) sets ``anthropic`` and reads ``output_tokens_details.
    thinking_tokens`` and ``cache_creation.ephemeral_5m/1h_input_tokens``; milk's
    ``cache_read``/``cache_creation`` (milk's stream-json contract, ADR-0050 §2) are taken as given."""
    if not isinstance(value, dict):
        return None
    get = value.get
    if "cache_read_input_tokens" in value or "cache_creation_input_tokens" in value:
        usage = Usage(
            as_int(get("input_tokens")),
            as_int(get("output_tokens")),
            as_int(get("cache_read_input_tokens")),
            as_int(get("cache_creation_input_tokens")),
            anthropic=True,
        )
        details = get("output_tokens_details")
        if isinstance(details, dict):
            usage.reasoning_output = as_int(details.get("thinking_tokens"))
        cache = get("cache_creation")
        if isinstance(cache, dict):
            usage.cache_creation_5m = as_int(cache.get("ephemeral_5m_input_tokens"))
            usage.cache_creation_1h = as_int(cache.get("ephemeral_1h_input_tokens"))
        return usage
    return Usage(
        as_int(get("input_tokens")),
        as_int(get("output_tokens")),
        as_int(get("cache_read")),
        as_int(get("cache_creation")),
    )
