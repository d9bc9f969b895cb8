"""Stage 3: dialect decoders — plug-ins of one shape, and the registry that runs them.

A dialect is a module exposing ``DIALECT``, an object with:

* ``name: str`` — what ``--dialect`` selects it by;
* ``markers: tuple[bytes, ...]`` — substrings one of which every line it can use contains (the
  line splitter's cheap pre-filter; a line with none is never decoded);
* ``decode(doc: dict, line: LineInfo) -> list[Event]`` — events from one JSON-object line
  (return ``[]`` for what it does not know: every protocol here is an open set);
* optionally ``decode_raw(raw: bytes, line: LineInfo) -> list[Event] | None`` for lines that
  are not JSON (Bernstein signals): events, ``[]`` for a line it recognises as plain output
  (neither decoded nor bad), ``None`` for a line that is not its own.
* optionally ``raw_lists: tuple[str, ...]`` — top-level keys whose array values it wants left
  undecoded: in ``doc`` such a value is a ``list[msgspec.Raw]`` (each element's JSON text, to
  decode with ``msgspec.json.decode`` or compare byte-wise) instead of a list of decoded values.
  Every dialect then sees it so; a value that is not an array is decoded as usual. An element
  is valid JSON but may still fail to decode (a number out of range: ``1e999``), which makes
  that element unreadable, not the line bad. Lines under :data:`RAW_LISTS_MIN` bytes are
  decoded in full all the same, so a dialect reads both shapes. Used for ``workflow_progress``
  snapshots, which repeat mostly unchanged entries (the cbc workflow protocol §6).

Several dialects may contribute events for one line. No OpenTelemetry here.
"""

from __future__ import annotations

import importlib
import json
import math
from typing import Any

import msgspec

from ..events import Event, StreamTime, as_str
from ..stats import Stats
from .base import Dialect, LineInfo, parse_timestamp, parse_usage

__all__ = ["REGISTRY", "Decoder", "Dialect", "LineInfo", "load", "parse_timestamp", "parse_usage"]

#: Registered dialect modules, by name, in decoding order.
REGISTRY: dict[str, str] = {
    "claude_code": "otelbridge.dialects.claude_code",
    "caudra": "otelbridge.dialects.caudra",
    "bernstein": "otelbridge.dialects.bernstein",
    "milk": "otelbridge.dialects.milk",
}

_BOM = b"\xef\xbb\xbf"
#: Lines shorter than this (bytes) are decoded in full even when a dialect declares
#: ``raw_lists``: they cannot hold enough entries to pay for the search of the key.
RAW_LISTS_MIN = 1024


#: Dialects another one's streams need: Caudra's sessions are Claude Code's stream-json.
NEEDS: dict[str, tuple[str, ...]] = {"caudra": ("claude_code",)}


def load(names: list[str] | None = None) -> list[Dialect]:
    """The dialect objects to run, in :data:`REGISTRY` order: all registered, or ``names`` and
    those they need (:data:`NEEDS`). ``ValueError`` on an unknown name."""
    for name in names or ():
        if name not in REGISTRY:
            raise ValueError(f"unknown dialect {name!r} (known: {', '.join(REGISTRY)})")
    chosen = set(REGISTRY) if not names else {n for name in names for n in (name, *NEEDS.get(name, ()))}
    return [importlib.import_module(REGISTRY[name]).DIALECT for name in REGISTRY if name in chosen]


class Decoder:
    """Runs the dialects over the lines the splitter offers.

    ``decode(raw)`` returns the events of one line (possibly none). A line that is not a JSON
    object is counted in ``stats.bad_lines`` unless a dialect's ``decode_raw`` claims it. Never
    raises on input: a dialect that raises on a hostile line costs that line only (counted bad).
    """

    def __init__(self, dialects: list[Dialect], stats: Stats) -> None:
        self.dialects = dialects
        self.json_dialects = [d for d in dialects if hasattr(d, "decode")]
        self.raw_dialects = [d for d in dialects if hasattr(d, "decode_raw")]
        self.markers: tuple[bytes, ...] = tuple(m for d in dialects for m in d.markers)
        self.stats = stats
        self.session_id: str | None = None
        self._json = msgspec.json.Decoder()
        self._raw_lists = frozenset(k for d in self.json_dialects for k in getattr(d, "raw_lists", ()))
        #: the quoted keys, as a line holding one must contain them (a key written with ``\u``
        #: escapes misses the fast path and is decoded in full: same doc, only slower)
        self._raw_keys = tuple(b'"%s"' % k.encode() for k in sorted(self._raw_lists))
        #: one pass: top-level arrays as their elements' JSON text, everything else decoded
        self._fields = msgspec.json.Decoder(
            dict[str, list[msgspec.Raw] | str | int | float | bool | None | dict[str, Any]]
        )

    def decode(self, raw: bytes) -> list[Event]:
        body = raw.strip()
        if body.startswith(_BOM):
            body = body[3:].lstrip()
        if not body.startswith(b"{"):
            return self._decode_raw(raw)
        try:
            doc = self._doc(body)
        except msgspec.ValidationError as exc:  # valid JSON, a number msgspec cannot hold
            doc = _out_of_range(body) if "out of range" in str(exc) else None
            if doc is None:
                self.stats.bad_lines += 1
                return []
        except (msgspec.DecodeError, RecursionError) as exc:
            # bytes that are not UTF-8 in a string (a tool's binary output): left out, not the
            # whole line lost (as U+FFFD they would split a token the redactor must see whole)
            doc = self._replaced(body) if "UTF-8" in str(exc) else None
            if doc is None:
                self.stats.bad_lines += 1
                return []
        if not isinstance(doc, dict):
            self.stats.bad_lines += 1
            return []
        self.stats.lines_decoded += 1
        sid = doc.get("session_id")
        if isinstance(sid, str) and sid:
            self.session_id = as_str(sid)
        ts = doc.get("ts")  # milk (its stream-json contract, ADR-0050 §1)
        if ts is None:
            ts = doc.get("timestamp")  # wrapper envelopes (ISO) and epoch-ms stamps
        if ts is None:
            ts = doc.get("timestamp_ms")  # Cursor's epoch ms
        info = LineInfo(self.session_id, parse_timestamp(ts) if ts is not None else None)
        events: list[Event] = []
        for dialect in self.json_dialects:
            try:
                events.extend(dialect.decode(doc, info))
            except Exception:  # a hostile line must never kill the tee
                self.stats.bad_lines += 1
        if not events and info.ts_ns is not None:
            # a line no dialect models still shows the time (a wrapper's envelope lines): the
            # stream clock is "the latest timestamp the stream has shown" (docs/span-model.md)
            events.append(StreamTime(info.session_id, info.ts_ns))
        return events

    def _doc(self, body: bytes) -> Any:
        """``body`` decoded, the dialects' ``raw_lists`` as :meth:`_decode_with_raw_lists`
        keeps them. Raises as ``msgspec.json.decode`` does."""
        keys = self._raw_keys  # (one key in practice: no generator per line)
        if len(body) >= RAW_LISTS_MIN and keys and (
            keys[0] in body or (len(keys) > 1 and any(k in body for k in keys[1:]))
        ):
            return self._decode_with_raw_lists(body)
        return self._json.decode(body)

    def _replaced(self, body: bytes) -> Any:
        """``body``, which is not UTF-8, decoded without its invalid bytes; ``None`` when it is
        still no JSON."""
        try:
            return self._doc(body.decode("utf-8", "ignore").encode())
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None

    def _decode_with_raw_lists(self, body: bytes) -> Any:
        """``body`` decoded as :meth:`decode` would, except that the array values of the
        dialects' ``raw_lists`` keys stay ``list[msgspec.Raw]``. Raises as ``msgspec.json.decode``
        does (a body that is not an object is decoded in full, for the caller to judge)."""
        try:
            doc = self._fields.decode(body)
        except msgspec.DecodeError:
            return self._json.decode(body)
        for key, value in doc.items():
            if type(value) is list and key not in self._raw_lists:
                doc[key] = [self._json.decode(element) for element in value]
        return doc

    def _decode_raw(self, raw: bytes) -> list[Event]:
        info = LineInfo(self.session_id, None)
        for dialect in self.raw_dialects:
            try:
                events = dialect.decode_raw(raw, info)
            except Exception:
                events = None
            if events is not None:
                if events:
                    self.stats.lines_decoded += 1
                return events
        self.stats.bad_lines += 1
        return []


def _number(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _out_of_range(body: bytes) -> Any:
    """A line with a number out of any range (``1e400``, thousands of digits) — valid JSON —
    decoded with such numbers as ``None`` (not given), so the rest of the line still counts;
    ``None`` when it cannot be (deep nesting, not JSON after all)."""
    try:
        return json.loads(body, parse_float=_number, parse_constant=lambda _name: None,
                          parse_int=lambda text: int(text) if len(text) <= 40 else None)
    except (ValueError, RecursionError):
        return None
