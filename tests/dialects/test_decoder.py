"""The Decoder registry (dialects/__init__.py): ``raw_lists`` hands a dialect the array values
of its keys as ``list[msgspec.Raw]`` and changes nothing else of the doc every dialect sees."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbridge.dialects import RAW_LISTS_MIN, Decoder, LineInfo
from otelbridge.stats import Stats


class Recorder:
    """A plug-in dialect that keeps the docs it is handed."""

    name = "recorder"
    markers = (b"{",)
    raw_lists = ("xs",)

    def __init__(self) -> None:
        self.docs: list[dict] = []

    def decode(self, doc: dict, line: LineInfo) -> list:
        self.docs.append(doc)
        return []


#: a key that makes a line long enough for the raw_lists path
PAD = b'"pad": "' + b"p" * RAW_LISTS_MIN + b'", '


def seen(body: bytes) -> tuple[dict | None, Stats]:
    recorder, stats = Recorder(), Stats()
    Decoder([recorder], stats).decode(body)
    return (recorder.docs[0] if recorder.docs else None), stats


def padded(body: bytes) -> bytes:
    assert body.startswith(b"{")
    return b"{" + PAD + body[1:]


def unpadded(doc: dict) -> dict:
    assert doc.pop("pad") == "p" * RAW_LISTS_MIN
    return doc


def with_elements_decoded(doc: dict) -> dict:
    xs = doc.get("xs")
    if isinstance(xs, list):
        assert all(type(x) is msgspec.Raw for x in xs)
        return {**doc, "xs": [msgspec.json.decode(x) for x in xs]}
    return doc


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(doc=st.dictionaries(st.sampled_from(["xs", "ys", "type", "a"]) | st.text(max_size=4),
                           json_values, max_size=6),
       long=st.booleans())
def test_doc_with_raw_lists_is_the_plain_doc_but_for_their_elements(doc, long):
    doc.setdefault("xs", [])
    doc.pop("pad", None)
    if long:
        doc = {"pad": "p" * RAW_LISTS_MIN, **doc}
    body = msgspec.json.encode(doc)
    got, stats = seen(body)
    if len(body) >= RAW_LISTS_MIN:
        assert with_elements_decoded(got) == msgspec.json.decode(body)
    else:  # a short line is decoded in full
        assert got == msgspec.json.decode(body)
        assert not any(type(x) is msgspec.Raw for v in got.values() if type(v) is list for x in v)
    assert list(got) == list(doc)  # key order too (milk flattens marks in it)
    assert stats.lines_decoded == 1 and stats.bad_lines == 0


def test_duplicate_keys_last_wins_and_non_arrays_are_decoded():
    assert unpadded(seen(padded(b'{"xs": [1, {"a": 2}], "xs": 3}'))[0]) == {"xs": 3}
    got, _ = seen(padded(b'{"xs": 3, "xs": [1, {"a": 2}], "ys": [[1], {"b": null}]}'))
    assert type(got["xs"][0]) is msgspec.Raw
    assert with_elements_decoded(unpadded(got)) == {"xs": [1, {"a": 2}], "ys": [[1], {"b": None}]}
    assert got["ys"] == [[1], {"b": None}]  # only the declared keys stay raw
    assert unpadded(seen(padded(b'{"xs": {"a": [1]}}'))[0]) == {"xs": {"a": [1]}}


def test_bad_lines_with_the_key_are_bad_as_before():
    for body in (b'{"xs": [1,', b'{"xs": [1e999], "ys": 1}',
                 b'{"xs": [' * 5000 + b"]" * 5000 + b"}", b'{"xs": [' + b"[" * 5000 + b"]" * 5000 + b"]}"):
        got, stats = seen(padded(body))
        if body.startswith(b'{"xs": [1e999]'):  # valid JSON: only the element is unreadable
            assert got["ys"] == 1 and len(got["xs"]) == 1 and stats.bad_lines == 0
            continue
        assert got is None and stats.bad_lines == 1 and stats.lines_decoded == 0
    got, stats = seen(b'["xs", "' + b"p" * RAW_LISTS_MIN + b'"]')  # not an object
    assert got is None and stats.bad_lines == 1 and stats.lines_decoded == 0


def test_bytes_that_are_not_utf8_in_a_string_are_left_out():
    """A tool's binary output in a string: its invalid bytes are left out and the line is
    decoded (a line lost there left its tool call without a result, an error); in the
    raw-lists path too. Not U+FFFD: a token a stray byte split must reach the redactor whole."""
    for body, pad in ((b'{"ys": "a \xff\xfe b", "n": 1}', False), (b'{"xs": ["\xc3("], "ys": "\xed\xa0\x80z"}', True)):
        got, stats = seen(padded(body) if pad else body)
        assert stats.bad_lines == 0 and stats.lines_decoded == 1
        if pad:
            got = unpadded(got)
            assert msgspec.json.decode(got["xs"][0]) == "(" and got["ys"] == "z"
        else:
            assert got == {"ys": "a  b", "n": 1}
    got, stats = seen(b'{"ys": "\xff", ')  # not UTF-8, and no JSON either
    assert got is None and stats.bad_lines == 1
