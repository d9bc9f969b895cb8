"""Wire values → Python: numbers, epoch times and strings as the streams send them, checked.

Units: the streams carry epoch **milliseconds** (or seconds); these return epoch **ns**, and
reject values that cannot be a real time (:data:`MIN_EPOCH_MS`, :data:`MAX_EPOCH_MS`).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from .redact import DROPPED, current

#: The longest string one wire value is held as (characters): a memory bound on what the
#: tracker holds per value (64 Ki). A longer one is redacted on its whole length before it is
#: cut to this (:func:`as_str`, :func:`held_json`); the span builder redacts and caps again.
MAX_HELD_CHARS = 65_536
_ENCODE = msgspec.json.Encoder().encode

#: 2000-01-01T00:00:00Z in epoch ms. Earlier "timestamps" are treated as garbage.
MIN_EPOCH_MS = 946_684_800_000
#: 2100-01-01T00:00:00Z in epoch ms. Later "timestamps" (1e30, ...) are treated as garbage.
MAX_EPOCH_MS = 4_102_444_800_000
#: The longest duration taken, in ms (~30 years; longer is garbage): a time within the bounds
#: above, plus or minus one, stays within 0 .. 2**63 ns.
MAX_DURATION_MS = MIN_EPOCH_MS


def as_int(value: Any, *, minimum: int = 0, maximum: int = 2**62) -> int | None:
    """Coerce a wire number to ``int`` or ``None``.

    Accepts ints, finite floats (truncated) and decimal strings (``"12"``); rejects bools, NaN,
    infinities, values outside ``[minimum, maximum]`` and everything else. Never raises.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        out = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        out = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if not text or len(text) > 20:
            return None
        try:
            out = int(text)
        except ValueError:
            return None
    else:
        return None
    if out < minimum or out > maximum:
        return None
    return out


def ms_to_ns(value: Any) -> int | None:
    """Epoch milliseconds (int, float or numeric string) → epoch nanoseconds, or ``None``.

    Values outside 2000–2100 are rejected, so a corrupt ``1e30`` never reaches an exporter.
    """
    ms = as_int(value, minimum=MIN_EPOCH_MS, maximum=MAX_EPOCH_MS)
    return None if ms is None else ms * 1_000_000


def s_to_ns(value: Any) -> int | None:
    """Epoch **seconds** (int, float or numeric string; Caudra ``phase_history[].started_at`` and
    ``logs[].at``, Caudra's headless-mode documentation "Run events") → epoch nanoseconds, or ``None``.

    Fractions of a second are kept; values outside 2000–2100 are rejected (so an epoch in ms
    given where seconds belong is absent rather than a date in the year 56000).
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip()) if len(value) <= 32 else None
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if not MIN_EPOCH_MS <= value * 1000 <= MAX_EPOCH_MS:
        return None
    if isinstance(value, int):
        return value * 1_000_000_000
    return round(value * 1_000_000) * 1_000


def as_str(value: Any) -> str | None:
    """A wire string as it is; non-strings give ``None``. A string longer than
    :data:`MAX_HELD_CHARS` (a memory bound on what the tracker holds, far above any exported
    cap) is held as what may leave of it: sanitised and redacted on its whole length first
    (:meth:`~otelbridge.redact.Redactor.scan`: a value that only the words after it mark as a
    secret is hidden even where the cut falls right after it), then what comes before its last
    whitespace within the bound (no marker held cut in half); one too long to scan is held as
    :data:`~otelbridge.redact.DROPPED`, so none of it ever leaves."""
    if isinstance(value, str):
        return value if len(value) <= MAX_HELD_CHARS else _held(value)
    return None


def _held(text: str) -> str:
    out = current().scan(text, keep=False)  # (the span builder scans what is held, not this)
    if out is None:
        return DROPPED
    if len(out) <= MAX_HELD_CHARS:  # (redaction may have made it short enough)
        return out
    cut = max(out.rfind(c, 0, MAX_HELD_CHARS + 1) for c in " \t\n\r")
    return out[:cut] if cut > 0 else ""


def held_json(doc: Any) -> str | None:
    """``doc`` (decoded JSON) as JSON text of at most :data:`MAX_HELD_CHARS` characters: where
    it is longer, as it may leave at that length
    (:meth:`~otelbridge.redact.Redactor.json_text`: each string redacted on its whole length,
    one too long to scan left out, then the document as a whole, and only then its long strings
    cut to one length, the last items of a list left out where that is not enough); ``None``
    when nothing fits or it nests too deep to walk. Cutting the text itself would leave no
    JSON; cutting its strings before redaction could leave a secret that the words after it
    mark."""
    text = _ENCODE(doc).decode()
    if len(text) <= MAX_HELD_CHARS:
        return text
    return current().json_text(text, MAX_HELD_CHARS)


def as_key(value: Any) -> str | None:
    """An identifier the wire sends as a string or an integer (Caudra ``run_id``,
    ``workflow_call_key``), as a string; empty strings, bools and other types give ``None``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value:
        return as_str(value)
    return None
