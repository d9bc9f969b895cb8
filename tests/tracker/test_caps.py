"""Memory is bounded by design, not by stream length: finished runs are released, open ones are
bounded by the state budget, and every cap counts when it is hit (agents per run, remembered
closed runs, the decoder's snapshot cache)."""

from __future__ import annotations

import json

from otelbridge import dialects
from otelbridge.clock import Clock
from otelbridge.dialects import claude_code, claude_code_workflow
from otelbridge.events import TaskNotification, WorkflowAgent, WorkflowProgress, WorkflowStarted
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Tracker
from otelbridge.tracker import workflows as wf
from tests.tracker.harness import Timers

T0 = 1_783_647_395_000 * 1_000_000


def make(**caps):
    records, stats = [], Stats()
    ctx = Context(emit=records.append, ids=Ids(False), clock=Clock("stream"), stats=stats)
    part = wf.WorkflowTracker(ctx, **caps)
    return Tracker(ctx, [part]), part, records, stats


def test_open_runs_are_bounded_by_the_state_budget_not_a_count():
    """Four never-ending runs under a budget that holds two: the two least recently active are
    ended early (interrupted, their spans counted), the two latest stay open."""
    tracker, part, records, stats = make()
    tracker.ctx.budget.limit = 2 * wf.RUN_BYTES + 100
    for task in ("a", "b", "c", "d"):
        tracker.handle(WorkflowStarted("s", T0, task_id=task))
    assert sorted(k[1] for k in part.runs) == ["c", "d"]
    assert [r.attributes["workflow.task_id"] for r in records] == ["a", "b"]
    assert all(r.events[-1].attributes == {"otelbridge.reason": "state budget full"} for r in records)
    assert stats.state_budget_ended == 2
    tracker.finish()
    assert len(records) == 4


def test_a_run_in_its_grace_window_is_closed_plainly_when_the_budget_needs_room():
    """A run that ended and only waits out its grace window is closed at once (its spans
    exported as they would be, not interrupted, not counted) when it is the least recently
    active."""
    records, stats = [], Stats()
    ctx = Context(emit=records.append, ids=Ids(False), clock=Clock("stream"), stats=stats,
                  call_later=Timers(), grace_s=5.0)
    part = wf.WorkflowTracker(ctx)
    tracker = Tracker(ctx, [part])
    ctx.budget.limit = 2 * wf.RUN_BYTES + 100
    for task in ("a", "b"):
        tracker.handle(WorkflowStarted("s", T0, task_id=task))
    tracker.handle(TaskNotification("s", T0 + 1, task_id="b", status="completed"))  # b: in grace
    tracker.handle(WorkflowStarted("s", T0 + 2, task_id="a"))  # a: active again
    tracker.handle(WorkflowStarted("s", T0 + 3, task_id="c"))
    assert sorted(k[1] for k in part.runs) == ["a", "c"]
    (root,) = records
    assert root.attributes["workflow.task_id"] == "b"
    assert root.attributes["workflow.status"] == "completed" and root.events == []
    assert stats.state_budget_ended == 0


def test_agent_cap_per_run_counts():
    tracker, part, records, stats = make(max_agents=3)
    agents = [WorkflowAgent(i, state="start", started_at=T0 // 1_000_000 + i) for i in range(5)]
    tracker.handle(WorkflowProgress("s", T0, task_id="t", agents=agents))
    tracker.handle(WorkflowProgress("s", T0 + 1, task_id="t", agents=agents))
    assert len(part.runs[("s", "t")].agents) == 3
    assert stats.agents_capped == 4  # two agents refused in each of two snapshots


def test_finished_runs_are_released_and_remembered_boundedly():
    tracker, part, records, stats = make()
    part.table.closed.limit = 5
    for n in range(20):
        task = f"t{n}"
        tracker.handle(WorkflowStarted("s", T0, task_id=task))
        tracker.handle(TaskNotification("s", T0 + 1, task_id=task, status="completed"))
    tracker.finish()
    assert part.runs == {} and part.table.open == {}
    assert len(part.table.closed) == 5
    tracker.handle(TaskNotification("s", T0 + 2, task_id="t19", status="completed"))
    assert stats.duplicate_notifications == 1  # still remembered: counted, not a new run


def test_snapshot_cache_is_bounded(monkeypatch):
    decoder = dialects.Decoder([claude_code.ClaudeCode()], Stats())
    cache = decoder.json_dialects[0]._entries
    for n in range(claude_code_workflow.MAX_CACHED_TASKS + 50):
        line = json.dumps({"type": "system", "subtype": "task_progress", "task_id": f"t{n}",
                           "workflow_progress": [{"type": "workflow_agent", "index": 1, "state": "start"}],
                           "description": "d" * dialects.RAW_LISTS_MIN})  # read by difference
        assert len(decoder.decode(line.encode())) == 1
    assert len(cache._tasks) == claude_code_workflow.MAX_CACHED_TASKS
    big = json.dumps({"type": "system", "subtype": "task_progress", "task_id": "big", "workflow_progress": [
        {"type": "workflow_agent", "index": i, "state": "start"}
        for i in range(claude_code_workflow.MAX_CACHED_ENTRIES + 500)]})
    (ev,) = decoder.decode(big.encode())
    assert len(ev.agents) == claude_code_workflow.MAX_CACHED_ENTRIES + 500  # all decoded
    raw, decoded = cache._tasks["big"]
    assert len(raw) == len(decoded) == claude_code_workflow.MAX_CACHED_ENTRIES  # not all remembered
    preview = "p" * 10_000  # long entries: bounded by their bytes too
    wide = json.dumps({"type": "system", "subtype": "task_progress", "task_id": "wide", "workflow_progress": [
        {"type": "workflow_agent", "index": i, "state": "start", "promptPreview": preview} for i in range(100)]})
    (ev,) = decoder.decode(wide.encode())
    assert len(ev.agents) == 100  # all decoded
    raw, decoded = cache._tasks["wide"]
    assert len(raw) == len(decoded) == claude_code_workflow.MAX_CACHED_BYTES // len(bytes(raw[0]))
    assert sum(map(len, raw)) <= claude_code_workflow.MAX_CACHED_BYTES


def test_unchanged_entries_decode_once_changed_ones_again():
    decoder = dialects.Decoder([claude_code.ClaudeCode()], Stats())

    def snapshot(tokens):
        return json.dumps({"type": "system", "subtype": "task_progress", "task_id": "t", "workflow_progress": [
            {"type": "workflow_agent", "index": 1, "state": "done", "tokens": 5},
            {"type": "workflow_agent", "index": 2, "state": "start", "tokens": tokens}],
            "description": "d" * dialects.RAW_LISTS_MIN}).encode()  # long enough to be read by difference

    (first,) = decoder.decode(snapshot(1))
    (second,) = decoder.decode(snapshot(2))
    assert second.agents[0] is first.agents[0]  # unchanged: the same decoded agent
    assert second.agents[1] is not first.agents[1]
    assert [a.tokens for a in second.agents] == [5, 2]


def test_session_events_for_sessions_never_seen_stay_bounded():
    """Caudra goal events for a new session id on every line (no session span ever takes
    them): what is held stays bounded by MAX_SESSION_EVENTS in all, not one list per session
    id forever; what had to be let go is counted."""
    from otelbridge.events import GoalEvent
    from otelbridge.tracker import MAX_SESSION_EVENTS
    from otelbridge.tracker.caudra import CaudraTracker

    records, stats = [], Stats()
    ctx = Context(emit=records.append, ids=Ids(False), clock=Clock("stream"), stats=stats)
    ctx.budget.limit = 1 << 30  # the count caps alone (the state budget: test_budget.py)
    tracker = Tracker(ctx, [CaudraTracker(ctx)])
    n = MAX_SESSION_EVENTS + 5_000
    for i in range(n):
        tracker.handle(GoalEvent(f"s{i}", T0 + i, kind="evaluation"))
    assert ctx.pending_session_events() <= MAX_SESSION_EVENTS
    assert len(ctx._session_events) <= MAX_SESSION_EVENTS
    assert stats.session_events_capped == n - ctx.pending_session_events()
    # the latest session still gets its event
    assert [e.name for e in ctx.take_session_events(f"s{n - 1}")] == ["goal.evaluation"]


def test_notices_waiting_for_their_firing_stay_bounded():
    """automation_notice lines repeating one fire_id whose automation never fires: the notices
    held for it are bounded; past the bound they go to the session (itself capped, counted)."""
    from otelbridge.events import AutomationNotice
    from otelbridge.tracker import MAX_SESSION_EVENTS
    from otelbridge.tracker import caudra

    records, stats = [], Stats()
    ctx = Context(emit=records.append, ids=Ids(False), clock=Clock("stream"), stats=stats)
    ctx.budget.limit = 1 << 30  # the count caps alone (the state budget: test_budget.py)
    part = caudra.CaudraTracker(ctx)
    tracker = Tracker(ctx, [part])
    n = caudra.MAX_PENDING_NOTICE_EVENTS + MAX_SESSION_EVENTS + 3
    for i in range(n):
        tracker.handle(AutomationNotice("s1", T0 + i, automation="w", fire_id="F1", text="t"))
    held = sum(len(v) for v in part._notices.values())
    assert held == caudra.MAX_PENDING_NOTICE_EVENTS
    assert ctx.pending_session_events() == MAX_SESSION_EVENTS
    assert stats.session_events_capped == n - held - MAX_SESSION_EVENTS
