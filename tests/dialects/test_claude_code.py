"""The claude_code dialect: seed 000 §5 shapes, open sets, hostile types."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbridge.dialects import RAW_LISTS_MIN, Decoder, LineInfo, claude_code, load, parse_timestamp
from otelbridge.events import TaskNotification, TaskProgress, TaskUpdated, WorkflowProgress, WorkflowStarted
from otelbridge.stats import Stats

MS = 1_000_000


def decode(obj_or_bytes):
    stats = Stats()
    dec = Decoder(load(["claude_code"]), stats)
    raw = obj_or_bytes if isinstance(obj_or_bytes, bytes) else msgspec.json.encode(obj_or_bytes)
    return dec.decode(raw), stats


def test_task_started_only_for_local_workflow():
    evs, _ = decode({"type": "system", "subtype": "task_started", "task_id": "t", "session_id": "s",
                     "task_type": "local_workflow", "workflow_name": "path:x.js", "prompt": "SCRIPT"})
    (ev,) = evs
    assert isinstance(ev, WorkflowStarted) and ev.task_id == "t" and ev.session_id == "s"
    assert ev.workflow_name == "path:x.js"
    evs, _ = decode({"type": "system", "subtype": "task_started", "task_id": "t", "task_type": "Bash"})
    assert not any(isinstance(e, WorkflowStarted) for e in evs)  # a background task, not a workflow


def test_progress_entries_real_fields_and_unknown_types_ignored():
    evs, _ = decode(b'{"type": "system", "subtype": "task_progress", "task_id": "t",'
                    b' "usage": {"total_tokens": 5, "duration_ms": 9},'
                    b' "workflow_progress": [{"type": "workflow_phase", "index": 1, "title": "A"},'
                    b' {"type": "future_entry", "index": 3},'
                    b' {"type": "workflow_agent", "index": 2, "state": "done", "startedAt": 1783647395366,'
                    b' "durationMs": 1403, "tokens": "12", "toolCalls": 2.0, "attempt": 1,'
                    b' "queuedAt": 1e30, "lastProgressAt": 1783647396769, "model": "m", "extra": {}}]}')
    (ev,) = evs
    assert isinstance(ev, WorkflowProgress)
    assert [p.title for p in ev.phases] == ["A"]
    (a,) = ev.agents
    assert a.index == 2 and a.started_ns == 1783647395366 * MS and a.duration_ms == 1403
    assert a.tokens == 12 and a.tool_calls == 2 and a.queued_ns is None
    assert ev.newest_ns == 1783647396769 * MS
    assert ev.usage.total_tokens == 5 and ev.usage.duration_ms == 9


def test_a_duration_of_more_than_30_years_is_no_duration():
    """Found by the state-machine test: an agent's start plus ``durationMs`` 7.4e12 (235 years)
    ended it past 2**63 ns. Durations are taken up to MAX_DURATION_MS, so a time plus or minus
    one stays within 0 .. 2**63 ns; a longer one is garbage, like a timestamp past 2100."""
    from otelbridge.wire import MAX_DURATION_MS

    for ms, kept in ((7_439_724_651_855, False), (MAX_DURATION_MS + 1, False), (MAX_DURATION_MS, True)):
        for entry in (b'{"type": "workflow_agent", "index": 0, "state": "done", "startedAt": 1783647385000,'
                      b' "durationMs": %d}' % ms,  # typed
                      b'{"type": "workflow_agent", "index": 0, "state": "done", "startedAt": 1783647385000,'
                      b' "durationMs": %d, "tokens": "12"}' % ms):  # lenient (a string count)
            evs, _ = decode(b'{"type": "system", "subtype": "task_progress", "task_id": "t",'
                            b' "usage": {"duration_ms": %d}, "workflow_progress": [%s]}' % (ms, entry))
            (ev,) = evs
            (a,) = ev.agents
            assert (a.duration_ms == ms) is kept and (ev.usage.duration_ms == ms) is kept
            assert kept or (a.duration_ms is None and ev.usage.duration_ms is None)
        (result,), _ = decode({"type": "result", "subtype": "success", "duration_ms": ms})
        assert (result.duration_ms == ms) is kept


def test_updated_and_notification():
    (u,), _ = decode({"type": "system", "subtype": "task_updated", "task_id": 7,
                      "patch": {"status": "completed", "end_time": 1783647398011}})
    assert isinstance(u, TaskUpdated) and u.task_id == "7" and u.end_time_ns == 1783647398011 * MS
    (n,), _ = decode({"type": "system", "subtype": "task_notification", "task_id": "t",
                      "status": "stopped", "usage": {"duration_ms": -5}})
    assert isinstance(n, TaskNotification) and n.status == "stopped" and n.usage.duration_ms is None


def test_not_json_objects_are_counted_bad_and_nothing_raises():
    for raw in (b"[1,2]", b'{"type": "system", "subtype": "task_progress", ...}', b">>> {}", b"null",
                b"[" * 100_000 + b"task_progress"):
        evs, stats = decode(raw)
        assert evs == [] and stats.bad_lines == 1


def test_line_timestamp_and_session_carried():
    stats = Stats()
    dec = Decoder(load(), stats)
    dec.decode(b'{"type":"system","subtype":"init","session_id":"abc"}')
    (ev,) = dec.decode(b'\xef\xbb\xbf{"type":"system","subtype":"task_updated","task_id":"t",'
                       b'"patch":{},"timestamp":"2026-07-10T01:36:32.197Z"}\r')
    assert ev.session_id == "abc"
    assert ev.ts_ns == parse_timestamp("2026-07-10T01:36:32.197Z") == 1783647392197 * MS


def test_parse_timestamp_rejects_garbage():
    assert parse_timestamp("2026-10-02T12:00:00.123+00:00") == 1790942400123 * MS
    # to the ns, as the stream gives it (datetime alone keeps µs)
    assert parse_timestamp("2026-10-02T12:00:01.123456789Z") == 1790942401_123456789
    assert parse_timestamp("2026-10-02T12:00:01.1234567+02:00") == 1790942401_123456700 - 2 * 3600 * 10**9
    assert parse_timestamp("2026-10-02T12:00:01.123456Z") == 1790942401_123456000
    assert parse_timestamp("2026-10-02T12:00:01,123456789Z") == 1790942401_123456789
    assert parse_timestamp("not a time") is None
    assert parse_timestamp("2026-10-02T12:00:00") is None  # no zone: ambiguous
    assert parse_timestamp(1e30) is None and parse_timestamp(True) is None


def test_a_line_with_only_a_timestamp_moves_the_stream_clock():
    """Envelope lines (a wrapper's ``status``) model nothing but still show the time."""
    from otelbridge.clock import Clock
    from otelbridge.events import StreamTime
    from otelbridge.ids import Ids
    from otelbridge.tracker import Context, Tracker

    (ev,), _ = decode({"type": "status", "data": {"message": "Connected"},
                       "timestamp": "2026-07-10T01:36:32.197Z"})
    assert isinstance(ev, StreamTime) and ev.ts_ns == 1783647392197 * MS
    clock = Clock("stream", wall=lambda: 1_800_000_000 * 10**9)
    Tracker(Context(emit=lambda r: None, ids=Ids(), clock=clock, stats=Stats())).handle(ev)
    assert clock.uses_stream and clock.now() == 1783647392197 * MS


# -- snapshots decoded by difference (raw_lists + typed entries) must read exactly as the
#    field-by-field path (_entry on decoded dicts) reads them, whatever the types on the wire

_hostile = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([1783647395366, 946_684_800_000, 4_102_444_800_000, 4_102_444_800_001, 2**62,
                     2**62 + 1, 1_000_000, 1_000_001, 0, -1]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e30, 12.0, 2.5, -0.0]),
    st.text(max_size=40), st.sampled_from(["12", " 7 ", "x" * 4097, "y" * 257, "z" * 33, "é" * 300]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)

def _text(limit: int, ok: bool):
    """Strings up to ``limit`` characters (some 2-byte), or just over it."""
    lengths = st.sampled_from([0, 1, limit - 1, limit] if ok else [limit + 1, limit + 300])
    return st.builds(lambda n, c: c * n, lengths, st.sampled_from(["a", "é"]))


_GOOD_COUNT = st.one_of(st.sampled_from([0, 12, 2**62]), st.integers(0, 10**6))
_BAD_COUNT = st.sampled_from([-1, 2**62 + 1, 2**64, "12", " 7 ", 12.0, 2.5, True, None, 1e30])
_GOOD_EPOCH = st.sampled_from([1783647395366, 946_684_800_000, 4_102_444_800_000])
_BAD_EPOCH = st.sampled_from([946_684_799_999, 4_102_444_800_001, 1e30, "1783647395366",
                              1783647395366.5, None, False])
_KINDS = {"count": (_GOOD_COUNT, _BAD_COUNT), "epoch": (_GOOD_EPOCH, _BAD_EPOCH)}
for _n in (32, 256, 4096):
    _KINDS[_n] = (_text(_n, True), st.one_of(_text(_n, False), _hostile))
_FIELDS = {
    "agentId": 256, "state": 32, "label": 4096, "phaseIndex": "count", "phaseTitle": 4096,
    "startedAt": "epoch", "queuedAt": "epoch", "endedAt": "epoch", "lastProgressAt": "epoch",
    "durationMs": "count", "tokens": "count", "toolCalls": "count", "attempt": "count",
    "model": 256, "error": 4096, "resultPreview": 4096, "promptPreview": 4096, "title": 4096,
}
_INDEX = (st.integers(min_value=0, max_value=30) | st.just(1_000_000),
          st.sampled_from([1_000_001, -1, 1.0, "2", None, True]))


@st.composite
def _entry(draw):
    """A well-typed entry within every limit, or one with exactly one field off them."""
    kind = draw(st.sampled_from(["workflow_agent", "workflow_agent", "workflow_phase", "future"]))
    keys = draw(st.lists(st.sampled_from(list(_FIELDS)), unique=True, max_size=8))
    entry = {"type": kind, "index": draw(_INDEX[0])}
    for key in keys:
        entry[key] = draw(_KINDS[_FIELDS[key]][0])
    if draw(st.booleans()):  # one field off the typed shape (or the index, or the type)
        key = draw(st.sampled_from(["index", "type", *_FIELDS]))
        if key == "index":
            entry[key] = draw(_INDEX[1])
        elif key == "type":
            entry[key] = draw(st.sampled_from([3, None, "workflow_agentx"]))
        else:
            entry[key] = draw(_KINDS[_FIELDS[key]][1])
    return entry


_entries = st.one_of(_entry(), _entry(), _entry(), _hostile)


#: makes a snapshot line long enough to be read by difference (dialects.RAW_LISTS_MIN)
LONG = "d" * RAW_LISTS_MIN


def _dict_path(doc: dict) -> list:
    """The reference: claude_code's field-by-field reading of a fully decoded line."""
    return claude_code.ClaudeCode().decode(doc, LineInfo(None, None))


@settings(max_examples=300, deadline=None)
@given(snapshots=st.lists(st.lists(_entries, max_size=6), min_size=1, max_size=4),
       repeat=st.lists(st.booleans(), min_size=4, max_size=4))
def test_snapshots_by_difference_read_as_field_by_field(snapshots, repeat):
    decoder = Decoder([claude_code.ClaudeCode()], Stats())
    previous: list = []
    for entries, again in zip(snapshots, repeat):
        if again:  # unchanged entries of the snapshot before, so the cache is hit
            entries = previous + entries
        previous = entries
        line = msgspec.json.encode({"type": "system", "subtype": "task_progress", "task_id": "t", "description": LONG,
                                    "workflow_progress": entries})
        assert decoder.decode(line) == _dict_path(msgspec.json.decode(line))


_EDGES = {
    "count": [0, 12, 2**62, -1, 2**62 + 1, 2**64, "12", " 7 ", 12.0, 2.5, True, None, 1e30],
    "epoch": [1783647395366, 946_684_800_000, 4_102_444_800_000, 946_684_799_999,
              4_102_444_800_001, 1e30, "1783647395366", 1783647395366.5, None, False],
}
for _n in (32, 256, 4096):
    _EDGES[_n] = ["", "a" * _n, "é" * _n, "a" * (_n + 1), "é" * (_n + 1), None, 5, ["a"], {"a": 1}]


def test_every_field_at_and_off_its_limits_reads_as_field_by_field():
    entries = [{"type": "workflow_agent", "index": 1, key: value}
               for key, kind in _FIELDS.items() for value in _EDGES[kind]]
    entries += [{"type": kind, "index": index, "title": "T"}
                for kind in ("workflow_agent", "workflow_phase")
                for index in (0, 1_000_000, 1_000_001, -1, 1.0, "2", None, True)]
    decoder = Decoder([claude_code.ClaudeCode()], Stats())
    for entry in entries:
        line = msgspec.json.encode({"type": "system", "subtype": "task_progress", "task_id": "t", "description": LONG,
                                    "workflow_progress": [entry]})
        assert decoder.decode(line) == _dict_path(msgspec.json.decode(line)), entry


def test_wrong_types_in_a_snapshot_entry_still_read_field_by_field():
    line = (b'{"type":"system","subtype":"task_progress","task_id":"t","description":"' + LONG.encode()
            + b'","workflow_progress":[{"type":"workflow_agent","index":1,"tokens":"12","toolCalls":2.0,"startedAt":1e30,'
            b'"state":"done","label":null,"model":' + b'"' + b"m" * 300 + b'"},'
            b'{"type":"workflow_agent","index":2,"tokens":5,"startedAt":1783647395366,"state":"start"},'
            b'{"type":"workflow_agent","index":1.0,"state":"x"},'
            b'{"index":3,"type":"workflow_agent","type":"workflow_phase","title":"P"}]}')
    (ev,) = Decoder([claude_code.ClaudeCode()], Stats()).decode(line)
    first, second, third = ev.agents
    assert (first.tokens, first.tool_calls, first.started_ns, first.label) == (12, 2, None, None)
    assert first.model == "m" * 300  # held whole: the span builder caps exported text
    assert (second.tokens, second.started_ns) == (5, 1783647395366 * MS)
    assert third.index == 1 and third.state == "x"  # a float index is truncated, as as_int does
    assert [(p.index, p.title) for p in ev.phases] == [(3, "P")]  # duplicate key: the last wins
    assert ev.newest_ns == 1783647395366 * MS


def test_an_entry_with_a_number_out_of_range_is_skipped_not_the_snapshot():
    (ev,) = Decoder([claude_code.ClaudeCode()], Stats()).decode(
        b'{"type":"system","subtype":"task_progress","task_id":"t","description":"' + LONG.encode()
        + b'","workflow_progress":[{"type":"workflow_agent","index":1,"tokens":1e999},{"type":"workflow_agent","index":2}]}')
    assert [a.index for a in ev.agents] == [2]


def test_a_number_out_of_range_costs_its_field_not_the_line():
    """``1e400`` and a 4,400-digit integer are valid JSON that msgspec cannot hold: the result
    still counts (its turn, cost and status), those fields as not given."""
    from otelbridge.events import TurnResult

    stats = Stats()
    (ev,) = Decoder(load(), stats).decode(
        b'{"type":"result","subtype":"success","is_error":false,"duration_ms":1e400,'
        b'"num_turns":1,"session_id":"s","total_cost_usd":0.5,"usage":{"input_tokens":10,'
        b'"output_tokens":' + b"9" * 4400 + b'}}')
    assert isinstance(ev, TurnResult) and stats.bad_lines == 0 and stats.lines_decoded == 1
    assert (ev.total_cost_usd, ev.duration_ms, ev.num_turns) == (0.5, None, 1)
    assert (ev.usage.input_tokens, ev.usage.output_tokens) == (10, None)


def test_workflow_progress_that_is_not_a_list_is_a_plain_task_progress():
    (ev,) = Decoder([claude_code.ClaudeCode()], Stats()).decode(
        b'{"type":"system","subtype":"task_progress","task_id":"t","workflow_progress":{"a":1},'
        b'"description":"Running tests"}')
    assert isinstance(ev, TaskProgress) and (ev.task_id, ev.description) == ("t", "Running tests")


def test_a_tool_input_over_the_held_bound_stays_json_redacted_before_its_cut():
    """A Write of a 72 KB file is held as JSON within the bound (cut as text, it would be no
    JSON): its strings sanitised and redacted on their whole length first, then cut to one
    length; a list of 40,000 short strings keeps as many first items as fit."""
    from otelbridge.wire import MAX_HELD_CHARS

    content = "hello world\n" * 6000 + "ghp_" + "a1B2c3D4e5" * 4
    line = {"type": "assistant", "session_id": "s", "message": {"id": "m1", "model": "m", "content": [
        {"type": "tool_use", "id": "tu_w", "name": "Write", "input": {"file_path": "/repo/a.txt", "content": content}},
        {"type": "tool_use", "id": "tu_many", "name": "Bash", "input": {"args": ["ab"] * 40_000}}]}}
    (call,), _ = decode(line)
    write, many = call.tool_calls
    assert len(write.arguments) <= MAX_HELD_CHARS and len(many.arguments) <= MAX_HELD_CHARS
    got = msgspec.json.decode(write.arguments)
    assert got["file_path"] == "/repo/a.txt"
    kept = len(got["content"]) - 1  # line ends made spaces, then cut (ending in …)
    assert got["content"] == ("hello world " * 6000)[:kept] + "…" and kept > 60_000
    args = msgspec.json.decode(many.arguments)["args"]
    assert args == ["ab"] * len(args) and 10_000 < len(args) < 40_000


@pytest.mark.parametrize(("cost", "read"), [("0.25", 0.25), ("0", 0.0), ("-10", None), ("1e308", 1e308),
                                            ("true", None), ('"0.5"', None)])
def test_a_cost_below_zero_or_not_a_number_is_no_cost(cost, read):
    """A session's ``total_cost_usd`` and a model's ``costUSD`` as the stream gives them; a
    negative one (a broken stream) is none: it would reach the job's outputs as a cost."""
    from otelbridge.events import TurnResult

    (ev,) = Decoder(load(), Stats()).decode(
        b'{"type":"result","subtype":"success","is_error":false,"session_id":"s","total_cost_usd":'
        + cost.encode() + b',"modelUsage":{"m":{"inputTokens":1,"outputTokens":1,"costUSD":' + cost.encode() + b'}}}')
    assert isinstance(ev, TurnResult)
    assert ev.total_cost_usd == read and ev.model_usage["m"].cost_usd == read
