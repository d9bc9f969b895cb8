"""What may leave: every string otelbridge exports or shows passes through :func:`clean`.

Strips ANSI escape sequences and control characters (untrusted labels, previews and errors must
never carry escapes into a terminal or a trace UI) and caps the length. Source: seed 000 §9
(labels, previews and workflow names are untrusted).
"""

from __future__ import annotations

import re

#: CSI / OSC / other ESC sequences, then any remaining C0/C1 control character except tab.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")

#: Default cap for exported strings, in characters.
DEFAULT_MAX_LENGTH = 256
#: Cap for span names, in characters.
SPAN_NAME_MAX = 64


def clean(text: str, limit: int = DEFAULT_MAX_LENGTH) -> str:
    """``text`` without escape sequences or control characters, at most ``limit`` characters
    (a cut string ends in ``…``). Newlines and other controls become spaces."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = _CONTROL.sub(" ", text)
    if len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def span_name(prefix: str, text: str | None, fallback: str) -> str:
    """``"{prefix} {text}"`` with ``text`` cleaned, capped so the whole name is ≤ 64 characters."""
    body = clean(text or "", SPAN_NAME_MAX).strip() or fallback
    return clean(f"{prefix} {body}", SPAN_NAME_MAX)
