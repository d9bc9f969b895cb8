"""The claude_code dialect: seed 000 §5 shapes, open sets, hostile types."""

from __future__ import annotations

import msgspec

from otelbridge.dialects import Decoder, load, parse_timestamp
from otelbridge.events import TaskNotification, TaskUpdated, WorkflowProgress, WorkflowStarted
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
