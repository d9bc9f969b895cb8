"""A JSON document's strings, for the attributes whose value is one (:data:`JSON_ATTRIBUTES`):
rewrite each string, put back what a pass over the whole text changed, and fit the document to
a length by cutting its long strings to one length, then leaving out the last items of a list.
Documents are decoded JSON (``dict``/``list``/``str``/numbers); nothing here scans text
(:mod:`otelbridge.redact` does)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

#: Attributes whose value is a JSON document (the GenAI conventions' message lists, a tool
#: call's arguments): redacted and cut string by string inside it, so that what leaves is
#: still JSON.
JSON_ATTRIBUTES = frozenset({"gen_ai.input.messages", "gen_ai.output.messages",
                             "gen_ai.system_instructions", "gen_ai.tool.call.arguments"})
#: Deeper documents are left out: no agent's message or tool input nests so, and walking one
#: would overflow the interpreter's stack.
MAX_DEPTH = 64


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    if len(text) > limit:
        return text[: max(limit - 1, 0)] + "…"
    return text


def strings(doc: Any, fix: Callable[[str], Any], key: Callable[[str], str] | None = None) -> Any:
    """``doc`` with every string ``s`` replaced by ``fix(s)`` (``None``: left out of its list
    or object), and with ``key``, every object's key by ``key(k)``."""
    if isinstance(doc, str):
        return fix(doc)
    if isinstance(doc, list):
        return [v for v in (strings(x, fix, key) for x in doc) if v is not None]
    if isinstance(doc, dict):
        return {(k if key is None else key(k)): v
                for k, v in ((k, strings(x, fix, key)) for k, x in doc.items()) if v is not None}
    return doc


def depth(doc: Any) -> int:
    """How deep ``doc``'s lists and objects nest (a string or number: 0), without recursion."""
    n, level = 0, [doc]
    while True:
        containers = [d for d in level if isinstance(d, (list, dict))]
        if not containers:
            return n
        n += 1
        level = [x for d in containers for x in (d.values() if isinstance(d, dict) else d)]


class Pairs(list):
    """An object's members as the text has them, in order (a key may repeat: two keys the
    pass hid alike)."""


def decode_pairs(text: str) -> Any:
    """``text`` decoded, each object as :class:`Pairs` (``ValueError`` when it is no JSON)."""
    return json.loads(text, object_pairs_hook=Pairs)


def _plain(doc: Any) -> Any:
    """``doc`` with each :class:`Pairs` an object again (a repeated key: its last value)."""
    if type(doc) is Pairs:
        return {k: _plain(v) for k, v in doc}
    if type(doc) is list:
        return [_plain(v) for v in doc]
    return doc


def from_context(each: Any, whole: Any, alone: Callable[[str], str | None]) -> Any:
    """``whole`` (a document after its text's pass) with each string that pass changed
    given back as ``each`` (the same document, each string redacted alone) has it, where
    the pass reads it so without the document around it (``alone``): JSON's escapes
    (``\\"``, ``\\n``) are the document's, not the string's; what a string's neighbours tell
    (``{"password": "x"}``, ``["--token", "x"]``) stays. A key the pass changed though it is no
    secret alone was taken for what follows a flag (``{"flag": "--password", "value": X}``):
    the key stays, its value is hidden. ``whole`` (:func:`decode_pairs`: objects as
    :class:`Pairs`) as it is where the two differ in shape."""
    if type(whole) is str:
        if type(each) is str and whole != each and alone(each) == whole:
            return each
        return whole
    if type(whole) is list and type(each) is list and len(whole) == len(each):
        return [from_context(s, w, alone) for s, w in zip(each, whole)]
    if type(whole) is Pairs and type(each) is dict and len(whole) == len(each):
        out: dict[str, Any] = {}
        for (key, mine), (said, value) in zip(each.items(), whole):
            if said == key or alone(key) == said:
                out[said] = from_context(mine, value, alone)
            else:
                out[key] = said if type(value) is str else from_context(mine, value, alone)
        return out
    return _plain(whole)


def string_pairs(a: Any, b: Any) -> Iterator[tuple[str, str]]:
    """Each string of ``a`` (keys too) with the string at its place in ``b``; where the two
    documents differ in shape (a list whose items a marker took together), the JSON texts of
    the two parts there."""
    if type(a) is str and type(b) is str:
        yield a, b
    elif type(a) is list and type(b) is list and len(a) == len(b):
        for x, y in zip(a, b):
            yield from string_pairs(x, y)
    elif type(a) is dict and type(b) is dict and len(a) == len(b):
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            yield ka, kb
            yield from string_pairs(va, vb)
    elif type(a) in (list, dict) and type(b) in (str, list, dict):
        yield msgspec.json.encode(a).decode(), b if type(b) is str else msgspec.json.encode(b).decode()


#: Strings this short are cut only when no list can lose an item (a part's ``type``, a tool call's id).
SHORT = 40


def fit(doc: Any, limit: int) -> str | None:
    """``doc`` encoded in at most ``limit`` characters: its strings longer than
    :data:`SHORT` cut (ending in ``…``) to one length, the longest that fits; where even that
    is not enough, first the last items of its first list of several (breadth first: a
    message's tool call parts, not its messages) left out, as many as its size says (its first
    item stays), in place; ``None`` when nothing fits."""
    for _ in range(64):
        out = cut_strings(doc, limit, SHORT)
        if out is not None:
            return out
        items = _first_list(doc)
        if items is None:
            return cut_strings(doc, limit, 1)
        floor = len(msgspec.json.encode(strings(doc, lambda s: s if len(s) <= 1 else "…")))
        del items[max(1, min(len(items) - 1, len(items) * limit // max(floor, 1))):]
    return None


def cut_strings(doc: Any, limit: int, least: int, cut: Callable[[str, int], str] = cap) -> str | None:
    """``doc`` encoded in at most ``limit`` characters, every string longer than ``least``
    cut to one length by ``cut(s, length)`` (found by bisection: the longest that fits);
    ``None`` when even ``least + 1`` does not fit."""
    out = msgspec.json.encode(doc).decode()
    if len(out) <= limit:
        return out
    found: list[int] = []
    strings(doc, lambda s: found.append(len(s)) or s)
    longest = max(found, default=0)
    if longest <= least:
        return None
    low, high, best = least + 1, longest - 1, None
    while low <= high:
        size = (low + high) // 2
        text = msgspec.json.encode(strings(doc, lambda s: cut(s, size) if len(s) > size else s)).decode()
        if len(text) <= limit:
            low, best = size + 1, text
        else:
            high = size - 1
    return best


def _first_list(doc: Any) -> list | None:
    """The first list of two items or more, breadth first, or ``None``."""
    level = [doc]
    while level:
        for d in level:
            if isinstance(d, list) and len(d) > 1:
                return d
        level = [x for d in level if isinstance(d, (list, dict))
                 for x in (d.values() if isinstance(d, dict) else d)]
    return None
