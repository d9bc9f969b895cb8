"""The workflow tracker with plain events in and plain records out (no OpenTelemetry)."""

from __future__ import annotations

import pytest

from otelbridge.clock import Clock
from otelbridge.events import (
    TaskNotification,
    TaskUpdated,
    TaskUsage,
    WorkflowAgent,
    WorkflowPhase,
    WorkflowProgress,
    WorkflowStarted,
)
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Parent, Tracker

MS = 1_000_000
T0 = 1_790_000_000_000  # epoch ms
S = "sess-1"


class FakeTimers:
    """call_later stand-in: the test decides when a window's time is up."""

    def __init__(self):
        self.pending = []

    def __call__(self, delay, fn):
        timer = [delay, fn, False]
        self.pending.append(timer)

        class Handle:
            def cancel(_self):
                timer[2] = True

        return Handle()

    def fire_all(self):
        for timer in list(self.pending):
            if not timer[2]:
                timer[1]()
        self.pending.clear()


def make(clock_mode="stream", timers=None, parent=None, deterministic=False):
    records = []
    stats = Stats()
    ctx = Context(
        emit=records.append,
        ids=Ids(deterministic),
        clock=Clock(clock_mode, wall=lambda: T0 * MS),
        stats=stats,
        call_later=timers,
        grace_s=5.0,
        parent=parent,
    )
    from otelbridge.tracker.workflows import WorkflowTracker

    return Tracker(ctx, [WorkflowTracker(ctx)]), records, stats


def agent(index, state, start_ms=None, phase=1, **kw):
    return WorkflowAgent(index=index, state=state, label=f"agent-{index}", phase_index=phase,
                         phase_title="P", started_at=start_ms, **kw)


def progress(task, agents, phases=(1,), ts_ms=None, newest_ms=None):
    return WorkflowProgress(S, ts_ms and ts_ms * MS, task_id=task,
                            phases=[WorkflowPhase(i, f"phase-{i}") for i in phases],
                            agents=agents, newest_ns=newest_ms and newest_ms * MS)


def names(records):
    return [r.name for r in records]


def test_happy_path_tree_times_and_exactly_once():
    tracker, records, _ = make(timers=FakeTimers())
    tracker.handle(WorkflowStarted(S, T0 * MS, task_id="t1", workflow_name="path:a/b/wf.js"))
    tracker.handle(progress("t1", [agent(1, "start", T0 + 10)], ts_ms=T0 + 10))
    assert records == []  # nothing terminal yet
    tracker.handle(progress("t1", [agent(1, "done", T0 + 10, duration_ms=500, tokens=42)], ts_ms=T0 + 600))
    assert names(records) == ["invoke_agent agent-1"]  # exported before the workflow ends
    tracker.handle(TaskUpdated(S, None, task_id="t1", status="completed", end_time_ns=(T0 + 700) * MS))
    tracker.handle(TaskNotification(S, None, task_id="t1", status="completed",
                                    usage=TaskUsage(100, 1, 690)))
    tracker.finish()
    assert names(records) == ["invoke_agent agent-1", "phase phase-1", "invoke_workflow wf.js"]
    ag, ph, root = records
    assert (ag.start_ns, ag.end_ns) == ((T0 + 10) * MS, (T0 + 510) * MS)
    assert ag.attributes["workflow.agent.tokens"] == 42
    assert ag.parent_span_id == ph.span_id and ph.parent_span_id == root.span_id
    assert root.parent_span_id is None
    assert (root.start_ns, root.end_ns) == ((T0 + 10) * MS, (T0 + 700) * MS)
    assert root.attributes["workflow.name"] == "path:a/b/wf.js"
    assert root.attributes["workflow.status"] == "completed"
    assert (ph.start_ns, ph.end_ns) == (ag.start_ns, ag.end_ns)
    tracker.finish()
    assert len(records) == 3  # finish twice ends nothing twice


def test_root_start_is_end_time_minus_duration_and_never_after_a_child():
    tracker, records, _ = make()
    tracker.handle(WorkflowStarted(S, (T0 + 50) * MS, task_id="t"))
    tracker.handle(progress("t", [agent(1, "done", T0 + 400, duration_ms=100)]))
    tracker.handle(TaskUpdated(S, None, task_id="t", end_time_ns=(T0 + 1000) * MS))
    tracker.handle(TaskNotification(S, None, task_id="t", status="completed",
                                    usage=TaskUsage(duration_ms=700)))
    tracker.finish()
    root = records[-1]
    assert root.start_ns == (T0 + 300) * MS
    # a duration that would put the root after its child is clamped to the child
    tracker2, records2, _ = make()
    tracker2.handle(progress("t", [agent(1, "done", T0 + 100, duration_ms=100)]))
    tracker2.handle(TaskUpdated(S, None, task_id="t", end_time_ns=(T0 + 1000) * MS))
    tracker2.handle(TaskNotification(S, None, task_id="t", status="completed",
                                     usage=TaskUsage(duration_ms=10)))
    tracker2.finish()
    assert records2[-1].start_ns == (T0 + 100) * MS


def test_a_duration_longer_than_the_epoch_is_not_used_for_the_root_start():
    """Found by the state-machine test: end_time − duration_ms < 0 would start the root before
    1970; such a duration is no duration, the root starts at task_started."""
    tracker, records, _ = make()
    tracker.handle(WorkflowStarted(S, (T0 + 50) * MS, task_id="t"))
    tracker.handle(TaskUpdated(S, None, task_id="t", end_time_ns=T0 * MS))
    tracker.handle(TaskNotification(S, None, task_id="t", status="completed",
                                    usage=TaskUsage(duration_ms=T0 + 1)))
    tracker.finish()
    root = records[-1]
    assert root.start_ns == (T0 + 50) * MS and root.end_ns >= root.start_ns


def test_grace_window_applies_late_progress_then_closes_once():
    timers = FakeTimers()
    tracker, records, stats = make(timers=timers)
    tracker.handle(WorkflowStarted(S, T0 * MS, task_id="t"))
    tracker.handle(progress("t", [agent(1, "start", T0), agent(2, "start", T0)], ts_ms=T0))
    tracker.handle(TaskUpdated(S, None, task_id="t", status="killed", end_time_ns=(T0 + 900) * MS))
    tracker.handle(TaskNotification(S, None, task_id="t", status="stopped"))
    assert len(timers.pending) == 1 and timers.pending[0][0] == 5.0
    # cbc superset: agents flip to error after the notification (seed 000 §4.1)
    tracker.handle(progress("t", [agent(1, "error", T0, error="subagent aborted: user cancel"),
                                  agent(2, "start", T0)], ts_ms=T0 + 950))
    assert names(records) == ["invoke_agent agent-1"]
    # wound down by the stop: interrupted with cbc's text, not an error of its own (as agent 2)
    assert records[0].error is None and records[0].attributes["workflow.agent.state"] == "error"
    assert [(e.name, e.attributes["otelbridge.reason"]) for e in records[0].events] == [
        ("interrupted", "subagent aborted: user cancel")]
    timers.fire_all()
    by_name = {r.name: r for r in records}
    assert len(records) == 4
    # agent 2 never reached a terminal state: stopped run → ended at the run end, interrupted
    a2 = by_name["invoke_agent agent-2"]
    assert a2.error is None and [e.name for e in a2.events] == ["interrupted"]
    assert a2.end_ns == (T0 + 900) * MS
    root = by_name["invoke_workflow workflow"]
    assert root.attributes["workflow.status"] == "stopped" and root.error is None
    assert [e.name for e in root.events] == ["interrupted"]
    # after the window: counted, not applied
    tracker.handle(progress("t", [agent(2, "error", T0)]))
    tracker.handle(TaskNotification(S, None, task_id="t", status="stopped"))
    assert len(records) == 4
    assert stats.late_events_ignored == 1 and stats.duplicate_notifications == 1
    tracker.finish()
    assert len(records) == 4


def test_duplicate_notification_in_window_is_counted_and_ignored():
    timers = FakeTimers()
    tracker, records, stats = make(timers=timers)
    tracker.handle(progress("t", [agent(1, "done", T0, duration_ms=5)]))
    tracker.handle(TaskNotification(S, None, task_id="t", status="completed"))
    tracker.handle(TaskNotification(S, None, task_id="t", status="failed"))
    timers.fire_all()
    assert stats.duplicate_notifications == 1
    assert records[-1].attributes["workflow.status"] == "completed"


def test_terminal_state_is_final_and_vanished_agents_are_kept():
    tracker, records, _ = make()
    tracker.handle(progress("t", [agent(1, "done", T0, duration_ms=10), agent(2, "start", T0)],
                            ts_ms=T0 + 20))
    # agent 1 goes "backwards", agent 2 disappears from the snapshot
    tracker.handle(progress("t", [agent(1, "start", T0)], ts_ms=T0 + 40))
    by_name = {r.name: r for r in records}
    assert by_name["invoke_agent agent-1"].attributes["workflow.agent.state"] == "done"
    a2 = by_name["invoke_agent agent-2"]
    assert a2.attributes["workflow.agent.vanished"] is True
    assert a2.end_ns == (T0 + 40) * MS
    tracker.finish()
    assert sum(r.name == "invoke_agent agent-1" for r in records) == 1


def test_progress_before_started_adopts_started_fields():
    tracker, records, _ = make()
    tracker.handle(progress("t", [agent(1, "cached", T0 + 5)]))
    tracker.handle(WorkflowStarted(S, T0 * MS, task_id="t", workflow_name="late-name",
                                   tool_use_id="toolu_1", description="d"))
    tracker.handle(TaskNotification(S, None, task_id="t", status="completed"))
    tracker.finish()
    root = records[-1]
    assert root.name == "invoke_workflow late-name"
    assert root.attributes["workflow.tool_use_id"] == "toolu_1"
    cached = records[0]
    assert cached.attributes["workflow.agent.cached"] is True
    assert cached.start_ns == cached.end_ns == (T0 + 5) * MS


def test_end_of_input_marks_incomplete_and_agents_in_error():
    tracker, records, _ = make()
    tracker.handle(WorkflowStarted(S, T0 * MS, task_id="t"))
    tracker.handle(progress("t", [agent(1, "start", T0)], newest_ms=T0 + 3000))
    tracker.finish()
    ag, ph, root = records
    assert ag.error == "no terminal state at end of input"
    assert ag.end_ns == (T0 + 3000) * MS  # the stream clock's latest time
    assert root.attributes["workflow.status"] == "incomplete"
    assert root.error == "stream ended before task_notification"
    assert all(r.end_ns >= r.start_ns for r in records)


def test_phase_without_agents_ends_where_next_phase_starts():
    tracker, records, _ = make()
    tracker.handle(progress("t", [], phases=(1,), ts_ms=T0))
    tracker.handle(progress("t", [agent(1, "done", T0 + 500, phase=2, duration_ms=100)],
                            phases=(1, 2), ts_ms=T0 + 500))
    tracker.handle(TaskNotification(S, (T0 + 700) * MS, task_id="t", status="completed"))
    tracker.finish()
    phases = {r.name: r for r in records if r.name.startswith("phase")}
    assert phases["phase phase-1"].start_ns == T0 * MS
    assert phases["phase phase-1"].end_ns == phases["phase phase-2"].start_ns == (T0 + 500) * MS



def test_phases_listed_up_front_without_agents_begin_after_the_phase_before():
    """cbc and Claude Code list every phase from the first snapshot on: an agent-less phase
    (work without agents, or never reached) is not drawn from the workflow's start: it runs
    from the phase before it to the next phase, or the run's end."""
    tracker, records, _ = make()
    tracker.handle(progress("t", [agent(1, "start", T0 + 100)], phases=(1, 2, 3, 4), ts_ms=T0 + 100))
    tracker.handle(progress("t", [agent(1, "done", T0 + 100, duration_ms=1000),
                                  agent(2, "error", T0 + 3000, phase=3, duration_ms=500)],
                            phases=(1, 2, 3, 4), ts_ms=T0 + 3500))
    tracker.handle(TaskUpdated(S, None, task_id="t", status="failed", end_time_ns=(T0 + 4000) * MS))
    tracker.handle(TaskNotification(S, (T0 + 4000) * MS, task_id="t", status="failed"))
    tracker.finish()
    got = {r.name: (r.start_ns // MS - T0, r.end_ns // MS - T0) for r in records if r.name.startswith("phase")}
    assert got == {
        "phase phase-1": (100, 1100),
        "phase phase-2": (1100, 3000),  # between the phase before and the next one's start
        "phase phase-3": (3000, 3500),
        "phase phase-4": (3500, 4000),  # never reached: from the last phase's end, not 100..4000
    }


def test_an_agent_less_phase_between_overlapping_phases_is_zero_length_at_the_next_start():
    """Phase 1's last agent ends after phase 3's first began: phase 2 (no agents) is drawn
    where phase 3 starts, not from phase 1's end over all of phase 3 to the run's end."""
    tracker, records, _ = make()
    tracker.handle(progress("t", [agent(1, "done", T0 + 100, duration_ms=2000),
                                  agent(2, "done", T0 + 1500, phase=3, duration_ms=1000)],
                            phases=(1, 2, 3), ts_ms=T0 + 2500))
    tracker.handle(TaskNotification(S, (T0 + 3000) * MS, task_id="t", status="completed"))
    tracker.finish()
    got = {r.name: (r.start_ns // MS - T0, r.end_ns // MS - T0) for r in records if r.name.startswith("phase")}
    assert got == {"phase phase-1": (100, 2100), "phase phase-2": (1500, 1500), "phase phase-3": (1500, 2500)}

def test_failed_workflow_and_agent_error_status():
    tracker, records, _ = make()
    tracker.handle(progress("t", [agent(1, "error", T0, duration_ms=3, error="boom\x1b[31m")]))
    tracker.handle(TaskNotification(S, None, task_id="t", status="failed", summary="it failed"))
    tracker.finish()
    ag, root = records[0], records[-1]
    assert ag.error == "boom\x1b[31m" and ag.error_type == "agent_error"  # raw: spans.py cleans
    assert root.error == "workflow failed" and root.error_type == "workflow_failed"  # summary: content


def test_runs_keyed_by_session_and_task():
    tracker, records, _ = make(deterministic=True)
    for sid in ("s1", "s2"):
        tracker.handle(WorkflowProgress(sid, T0 * MS, task_id="same", agents=[agent(1, "done", T0, duration_ms=1)]))
    tracker.finish()
    roots = [r for r in records if r.name.startswith("invoke_workflow")]
    assert len(roots) == 2 and roots[0].trace_id != roots[1].trace_id


def test_traceparent_parent_for_roots():
    parent = Parent(trace_id=0xABC, span_id=0xDEF)
    tracker, records, _ = make(parent=parent)
    tracker.handle(progress("t", [agent(1, "done", T0, duration_ms=1)]))
    tracker.finish()
    root = records[-1]
    assert root.trace_id == 0xABC and root.parent_span_id == 0xDEF and root.parent_remote
    assert all(r.trace_id == 0xABC for r in records)


@pytest.mark.parametrize("cap", [1])
def test_caps_are_counted(cap):
    records, stats = [], Stats()
    from otelbridge.tracker.workflows import WorkflowTracker

    ctx = Context(emit=records.append, ids=Ids(), clock=Clock("stream"), stats=stats)
    part = WorkflowTracker(ctx, max_agents=cap)
    part.handle(progress("a", [agent(1, "start", T0), agent(2, "start", T0)]))
    part.handle(progress("b", [agent(1, "start", T0)]))
    part.finish()
    assert stats.agents_capped == 1
    assert sum(r.name.startswith("invoke_workflow") for r in records) == 2
    assert sum(r.name.startswith("invoke_agent") for r in records) == 2


def test_a_settling_clock_moves_every_time_of_an_open_run_inherited_fields_too():
    from otelbridge.tracker.base import shift_all
    from otelbridge.tracker.workflows import _Phase, _Run

    run = _Run(key=(None, "w"), session_id=None, trace_id=1, span_id=2, first_seen_ns=1_000,
               task_id="w", started_ns=2_000)
    run.phases[1] = _Phase(index=1, span_id=3, title=None, first_seen_ns=3_000)
    shift_all([run], 500)
    assert (run.first_seen_ns, run.started_ns, run.phases[1].first_seen_ns) == (1_500, 2_500, 3_500)
    assert run.notified_ns is None and run.trace_id == 1  # unset times and other ints stay
