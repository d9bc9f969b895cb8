"""Bernstein adapter stream signals: ``BERNSTEIN:<KIND>[ <json-object>]`` lines in any CLI's
stdout, mixed with plain output.

Source: the Bernstein adapter stream-signal protocol, sections "Grammar" and "Canonical kinds".
The grammar is applied exactly: the line starts with the literal, case-sensitive
``BERNSTEIN:``; the kind is one of the canonical ALL-CAPS kinds (:data:`KINDS`); then either
the end of the line or **one** space and a JSON **object** (never an array, scalar or ``null``).
The line terminator (``\\n``, ``\\r\\n``) is not part of the line. Anything else is plain stdout
("ignored by the parser"): :meth:`Bernstein.decode_raw` returns ``[]`` for it (no event, and
not counted as a bad line).

Payload fields read, by kind: ``FAILED`` ``reason``; ``QUESTION`` ``question``, ``options``
(list of strings or null), ``id``; ``PLAN_DRAFT`` ``markdown``, ``path``; ``PLAN_READY``
``path``; ``BLOCKED`` ``reason``, ``hint``. Other payload fields (adapter extras) are ignored.
"""

from __future__ import annotations

import msgspec

from ..events import BernsteinSignal, Event, as_str
from .base import LineInfo

PREFIX = b"BERNSTEIN:"

#: The canonical kinds (the Bernstein stream-signal protocol "Canonical kinds"); COMPLETED and FAILED are terminal.
KINDS = frozenset({"COMPLETED", "FAILED", "QUESTION", "PLAN_DRAFT", "PLAN_READY", "BLOCKED"})
TERMINAL_KINDS = frozenset({"COMPLETED", "FAILED"})

#: Options of a QUESTION kept at most.
MAX_OPTIONS = 64


def parse(raw: bytes) -> tuple[str, dict] | None:
    """``(kind, payload)`` of a signal line (payload ``{}`` when absent), or ``None`` when the
    line is off the grammar. ``raw`` may end in ``\\n`` or ``\\r\\n``. Never raises."""
    if not raw.startswith(PREFIX):
        return None
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    rest = raw[len(PREFIX):]
    space = rest.find(b" ")
    kind_bytes = rest if space < 0 else rest[:space]
    try:
        kind = kind_bytes.decode("ascii")
    except UnicodeDecodeError:
        return None
    if kind not in KINDS:
        return None
    if space < 0:
        return kind, {}
    body = rest[space + 1:]
    if not body.startswith(b"{"):  # one space exactly, then an object
        return None
    try:
        payload = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(payload, dict):
        return None
    return kind, payload


def _options(value) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [as_str(v) for v in value[:MAX_OPTIONS] if isinstance(v, str)]


class Bernstein:
    """The ``bernstein`` dialect: raw lines only (a signal line is never JSON)."""

    name = "bernstein"
    markers = (PREFIX,)

    def decode_raw(self, raw: bytes, line: LineInfo) -> list[Event] | None:
        """The signal of ``raw`` as one :class:`BernsteinSignal`; ``[]`` for plain output that
        mentions the prefix; ``None`` for a line without it (not this dialect's)."""
        parsed = parse(raw)
        if parsed is None:
            return [] if PREFIX in raw else None
        kind, p = parsed
        return [
            BernsteinSignal(
                line.session_id,
                line.ts_ns,
                kind=kind,
                reason=as_str(p.get("reason")),
                hint=as_str(p.get("hint")),
                question=as_str(p.get("question")),
                options=_options(p.get("options")),
                question_id=as_str(p.get("id")),
                path=as_str(p.get("path")),
                markdown=as_str(p.get("markdown")),
            )
        ]


DIALECT = Bernstein()
