"""The Bernstein signal grammar (seed 004 "Grammar"), applied exactly."""

from __future__ import annotations

import pytest

from otelbridge.dialects import Decoder, LineInfo, load
from otelbridge.dialects.bernstein import DIALECT, parse
from otelbridge.events import BernsteinSignal
from otelbridge.stats import Stats

INFO = LineInfo("sess-1", None)


@pytest.mark.parametrize(
    "line, kind, payload",
    [
        (b"BERNSTEIN:COMPLETED", "COMPLETED", {}),
        (b"BERNSTEIN:COMPLETED\n", "COMPLETED", {}),
        (b"BERNSTEIN:COMPLETED\r\n", "COMPLETED", {}),
        (b"BERNSTEIN:COMPLETED {}", "COMPLETED", {}),
        (b'BERNSTEIN:FAILED {"reason":"exit 2"}', "FAILED", {"reason": "exit 2"}),
        (b'BERNSTEIN:QUESTION {"question":"Apply migration?","options":["yes","no"],"id":"q-001"}',
         "QUESTION", {"question": "Apply migration?", "options": ["yes", "no"], "id": "q-001"}),
        (b'BERNSTEIN:PLAN_READY {"path": ".sdd/plans/x.md"}', "PLAN_READY", {"path": ".sdd/plans/x.md"}),
        (b'BERNSTEIN:BLOCKED {"reason":"no creds","hint":null}', "BLOCKED", {"reason": "no creds", "hint": None}),
        ('BERNSTEIN:PLAN_DRAFT {"markdown":"# Plan ✓"}'.encode(), "PLAN_DRAFT", {"markdown": "# Plan ✓"}),
    ],
)
def test_on_grammar(line, kind, payload):
    assert parse(line) == (kind, payload)


@pytest.mark.parametrize(
    "line",
    [
        b"bernstein:COMPLETED",  # prefix is case-sensitive
        b"BERNSTEIN COMPLETED",  # colon included
        b" BERNSTEIN:COMPLETED",  # the line starts with the prefix
        b"echo BERNSTEIN:COMPLETED",
        b"BERNSTEIN:completed",  # kind is ALL-CAPS
        b"BERNSTEIN:DONE",  # not a canonical kind
        b"BERNSTEIN:",
        b"BERNSTEIN:COMPLETED ",  # a separator without a payload
        b"BERNSTEIN:COMPLETED  {}",  # one space, not two
        b"BERNSTEIN:COMPLETED\t{}",
        b"BERNSTEIN:COMPLETED []",  # never an array
        b"BERNSTEIN:COMPLETED null",  # never null
        b"BERNSTEIN:COMPLETED 1",  # never a scalar
        b'BERNSTEIN:COMPLETED "done"',
        b"BERNSTEIN:FAILED {reason: 1}",  # not JSON
        b'BERNSTEIN:FAILED {"reason":"x"} trailing',
        b"BERNSTEIN:COMPLETED{}",
        b"BERNSTEIN:\xff\xfe",
    ],
)
def test_off_grammar_is_plain_output(line):
    assert parse(line) is None
    # plain output that mentions the prefix: no event, not a bad line; without it: not ours
    assert DIALECT.decode_raw(line, INFO) == ([] if b"BERNSTEIN:" in line else None)


def test_payload_fields_typed():
    (ev,) = DIALECT.decode_raw(
        b'BERNSTEIN:QUESTION {"question":"Apply?","options":["yes",2,"no"],"id":"q-1","extra":{"a":1}}', INFO
    )
    assert isinstance(ev, BernsteinSignal)
    assert (ev.kind, ev.question, ev.options, ev.question_id) == ("QUESTION", "Apply?", ["yes", "no"], "q-1")
    assert ev.session_id == "sess-1"
    (ev,) = DIALECT.decode_raw(b'BERNSTEIN:FAILED {"reason":42}', INFO)
    assert ev.kind == "FAILED" and ev.reason is None  # wrong type: absent
    (ev,) = DIALECT.decode_raw(b'BERNSTEIN:QUESTION {"question":"q","options":null,"id":null}', INFO)
    assert ev.options is None and ev.question_id is None


def test_decoder_routes_raw_lines_and_counts():
    stats = Stats()
    decoder = Decoder(load(["bernstein"]), stats)
    assert decoder.markers == (b"BERNSTEIN:",)
    (ev,) = decoder.decode(b'BERNSTEIN:BLOCKED {"reason":"waiting","hint":"run login"}')
    assert (ev.kind, ev.reason, ev.hint) == ("BLOCKED", "waiting", "run login")
    assert decoder.decode(b"BERNSTEIN:COMPLETED []") == []  # plain output
    assert decoder.decode(b"not json, no signal") == []  # nobody's line: counted bad
    assert (stats.lines_decoded, stats.bad_lines) == (1, 1)
    assert DIALECT.decode_raw(b"plain", INFO) is None
    # a JSON line that mentions the prefix is not a signal
    assert decoder.decode(b'{"type":"assistant","text":"BERNSTEIN:COMPLETED"}') == []


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from otelbridge.dialects.bernstein import KINDS  # noqa: E402

_json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
_payloads = st.dictionaries(st.text(max_size=10), _json_scalars | st.lists(_json_scalars, max_size=3), max_size=5)


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), payload=_payloads | st.none())
def test_round_trip_of_the_wire_format(kind, payload):
    """What a producer's ``format_signal`` writes (seed 004: ``BERNSTEIN:<KIND>`` or
    ``BERNSTEIN:<KIND> <json>``, one line) parses back to the same kind and payload."""
    import json

    line = f"BERNSTEIN:{kind}" if payload is None else f"BERNSTEIN:{kind} {json.dumps(payload)}"
    assert "\n" not in line
    assert parse(line.encode() + b"\n") == (kind, payload or {})


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=80))
def test_arbitrary_bytes_never_raise(raw):
    result = DIALECT.decode_raw(b"BERNSTEIN:" + raw, INFO)
    assert result == [] or (len(result) == 1 and result[0].kind in KINDS)
    if b"BERNSTEIN:" not in raw:
        assert DIALECT.decode_raw(raw, INFO) is None  # not this dialect's line
