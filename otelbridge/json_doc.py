"""A JSON document's strings, for the attributes whose value is one (:data:`JSON_ATTRIBUTES`):
rewrite each string, put back what a pass over the whole text changed, and fit the document to
a length by cutting its longest strings, then leaving out the last items of its longest list.
Documents are decoded JSON (``dict``/``list``/``str``/numbers); nothing here scans text
(:mod:`otelbridge.redact` does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

#: Attributes whose value is a JSON document (the GenAI conventions' message lists, a tool
#: call's arguments): redacted and cut string by string inside it, so that what leaves is
#: still JSON.
JSON_ATTRIBUTES = frozenset({"gen_ai.input.messages", "gen_ai.output.messages",
                             "gen_ai.system_instructions", "gen_ai.tool.call.arguments"})


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    if len(text) > limit:
        return text[: max(limit - 1, 0)] + "…"
    return text


def strings(doc: Any, fix: Callable[[str], Any]) -> Any:
    """``doc`` with every string ``s`` replaced by ``fix(s)`` (``None``: left out of its list
    or object)."""
    if isinstance(doc, str):
        return fix(doc)
    if isinstance(doc, list):
        return [v for v in (strings(x, fix) for x in doc) if v is not None]
    if isinstance(doc, dict):
        return {k: v for k, v in ((k, strings(x, fix)) for k, x in doc.items()) if v is not None}
    return doc


def from_context(each: Any, whole: Any, alone: Callable[[str], str | None]) -> Any:
    """``whole`` (a document after its text's pass) with each string that pass changed
    given back as ``each`` (the same document, each string redacted alone) has it, where
    the pass reads it so without the document around it (``alone``): JSON's escapes
    (``\\"``, ``\\n``) are the document's, not the string's; what a string's neighbours tell
    (``{"password": "x"}``, ``["--token", "x"]``) stays. ``whole`` as it is where the two
    differ in shape."""
    if type(whole) is str:
        if type(each) is str and whole != each and alone(each) == whole:
            return each
        return whole
    if type(whole) is list and type(each) is list and len(whole) == len(each):
        return [from_context(s, w, alone) for s, w in zip(each, whole)]
    if type(whole) is dict and type(each) is dict and whole.keys() == each.keys():
        return {k: from_context(each[k], w, alone) for k, w in whole.items()}
    return whole


#: Strings this short are cut only when no list can lose an item (a part's ``type``, a tool call's id).
SHORT = 40


def fit(doc: Any, limit: int) -> str | None:
    """``doc`` encoded in at most ``limit`` characters: its longest strings cut (ending in
    ``…``) by what is over, those of :data:`SHORT` characters or fewer kept while the last
    items of its longest list can be left out instead (a quarter of them a round, in place;
    its first item stays: a message's text part before its tool calls); ``None`` when no cut
    makes it fit."""
    while True:
        out = _cut_strings(doc, limit, SHORT)
        if out is not None:
            return out
        lists: list[list] = []
        _lists(doc, lists)
        longest = max(lists, key=len, default=[])
        if len(longest) < 2:
            return _cut_strings(doc, limit, 1)
        del longest[max(1, len(longest) - max(1, len(longest) // 4)):]


def _cut_strings(doc: Any, limit: int, least: int) -> str | None:
    """``doc`` encoded in at most ``limit`` characters by cutting strings longer than
    ``least``, longest first; ``None`` when that is not enough."""
    out = msgspec.json.encode(doc).decode()
    for _ in range(8):  # each round cuts the longest string by what is over
        over = len(out) - limit
        if over <= 0:
            return out
        found: list[str] = []
        strings(doc, lambda s: found.append(s) or s)
        longest = max(found, key=len, default="")
        if len(longest) <= least:
            return None
        size = max(len(longest) - over, 1)
        doc = strings(doc, lambda s, t=longest: cap(s, size) if s is t else s)
        out = msgspec.json.encode(doc).decode()
    return out if len(out) <= limit else None


def _lists(doc: Any, found: list[list]) -> None:
    if isinstance(doc, list):
        found.append(doc)
        for x in doc:
            _lists(x, found)
    elif isinstance(doc, dict):
        for x in doc.values():
            _lists(x, found)
