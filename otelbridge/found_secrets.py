"""Secrets found once, hidden everywhere after: a value the detector redacted in one string is
redacted wherever it appears again in the run, even where nothing around it says it is one —
the model's prose repeating it (``I'll set the password to Zq8v…``), a tool's output echoing it
bare (``echo $DB_PASSWORD`` → the value), a later file showing it under another name.

The detector reads each string's shape alone; this is its memory across strings. Only values
that cannot be ordinary words are remembered (:func:`worth_remembering`): at least
:data:`MIN_CHARS` characters, not letters alone, no marker inside. At most :data:`MAX_VALUES`
values are remembered (the latest found: a ``follow`` process lives for days); a value is
hidden by exact match, in any string redacted after it was found (and in the rest of the string
it was found in)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

#: Shortest value remembered, in characters: shorter ones are as often a word as a secret.
MIN_CHARS = 8
#: Values remembered at most (the latest found are kept); with all of them a string costs
#: ~6 µs more, 7 ms for one of 256 Ki characters (``bench/redaction.py``).
MAX_VALUES = 128
#: Longest value remembered, in characters (a PEM key block is ~3 Ki): what is kept stays
#: bounded (at most :data:`MAX_VALUES` × this).
MAX_CHARS = 8192
#: Quotes and blanks around a match are not part of its value (``'k3y with space'``).
_AROUND = " \t\r\n\"'`"
_MARKER = re.compile(r"\[REDACTED:(\w+)\]")


def worth_remembering(value: str, reserved: str = "") -> str | None:
    """``value`` (a text the detector replaced) without the quotes and blanks around it, or
    ``None`` when it may be an ordinary word or holds a marker already (``Bearer
    [REDACTED:jwt]``): shorter than :data:`MIN_CHARS` or longer than :data:`MAX_CHARS`, letters
    only, no letter or digit, or part of ``reserved`` (the markers' text: hiding it would write
    a marker into a marker)."""
    value = value.strip(_AROUND)
    if not MIN_CHARS <= len(value) <= MAX_CHARS or value.isalpha() or "[REDACTED:" in value or value in reserved:
        return None
    if "\0" in value or not any(c.isalnum() for c in value):
        return None
    return value


def replaced(before: str, after: str) -> list[tuple[str, str]]:
    """``(value, kind)`` for each marker in ``after`` (``before`` with some of its text
    replaced by markers) where ``before`` held ``value``, each marker aligned at the next
    place the text after it is found; ``[]`` when ``after`` is not such a text."""
    pieces = _MARKER.split(after)  # text, kind, text, kind, ..., text
    first, last = pieces[0], pieces[-1]
    if not (before.startswith(first) and before.endswith(last)) or len(first) + len(last) > len(before):
        return []
    out, pos = [], len(first)
    for k in range(1, len(pieces), 2):
        follows = pieces[k + 1]
        end = len(before) - len(last) if k + 2 == len(pieces) else before.find(follows, pos)
        if end < pos:
            return out
        out.append((before[pos:end], pieces[k]))
        pos = end + len(follows)
    return out


class FoundSecrets:
    """The values found so far → their markers (``[REDACTED:{kind}]``). Hiding tests each
    value as a substring (``bench/redaction.py``: ~0.05 µs a value on a short string, 2 ms a
    value on 256 Ki characters of prose; a multi-literal search such as Hyperscan's scans faster,
    but building it again for each value found costs more than it saves at this size). Safe to
    share between threads."""

    __slots__ = ("markers", "reserved", "learnt", "_order", "_lock")

    def __init__(self, reserved: str = "") -> None:
        #: text no value may be part of (:func:`worth_remembering`)
        self.reserved = reserved
        #: value → marker, the oldest first (this one dict for the object's life: its truth
        #: tells a caller in one C call whether anything is known)
        self.markers: dict[str, str] = {}
        #: values learnt so far, forgotten ones too (a caller compares it before and after)
        self.learnt = 0
        #: (value, marker), the longest first: a value inside a longer one must not leave the
        #: rest of it
        self._order: tuple[tuple[str, str], ...] = ()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.markers)

    def learn(self, values: Iterable[str], kind: str) -> int:
        """Remember each of ``values`` worth it (:func:`worth_remembering`) under ``kind``,
        forgetting the oldest beyond :data:`MAX_VALUES`; returns how many were new."""
        new = 0
        for raw in values:
            value = worth_remembering(raw, self.reserved)
            if value is None or value in self.markers:
                continue
            with self._lock:
                markers = self.markers
                if len(markers) >= MAX_VALUES:
                    del markers[next(iter(markers))]
                markers[value] = f"[REDACTED:{kind}]"
                self.learnt += 1
                self._order = tuple(sorted(markers.items(), key=lambda item: -len(item[0])))
            new += 1
        return new

    def learn_changes(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Remember what each ``(before, after)`` pair's markers replaced (:func:`replaced`):
        a value a JSON document's pass found through its neighbours. Returns how many were new."""
        return sum(self.learn((value,), kind) for before, after in pairs if before != after
                   for value, kind in replaced(before, after))

    def hide(self, text: str) -> str:
        """``text`` with every remembered value replaced by its marker."""
        for value, marker in self._order:
            if value in text:
                text = text.replace(value, marker)
        return text
