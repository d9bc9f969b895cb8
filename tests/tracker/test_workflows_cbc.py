"""cbc supersets in the workflow tracker part, with plain events: ``path:<basename>`` naming
(seed 000 §7) and the late ``error`` flip after ``stopped`` within the grace window (§4.1, §6)."""

from __future__ import annotations

import pytest

from otelbridge.events import (
    TaskNotification, TaskUpdated, WorkflowAgent, WorkflowProgress, WorkflowStarted,
)
from otelbridge.tracker.workflows import WorkflowTracker, workflow_display_name

from .harness import make_ctx

MS = 10**6
T0 = 1_790_000_000_000


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("path:deep-research.workflow.js", "deep-research.workflow.js"),
        ("path:flows/nightly/audit.workflow.js", "audit.workflow.js"),
        ("path:C:\\flows\\audit.js", "audit.js"),
        ("path:flows/", "flows"),
        ("path:", "path:"),
        ("deep-research", "deep-research"),  # Claude Code: meta.name as is
        (None, "workflow"),
    ],
)
def test_display_name(raw, shown):
    assert workflow_display_name(raw) == shown


def agent(index, state, **kw):
    return WorkflowAgent(index=index, agent_id=f"v2:{index:064d}", state=state, label=f"a{index}",
                         phase_index=1, started_at=T0 + index, **kw)


def test_late_abort_within_window_then_window_closes():
    ctx, records, timers = make_ctx()
    tr = WorkflowTracker(ctx)
    tr.handle(WorkflowStarted("s", None, task_id="t", workflow_name="path:x/y.workflow.js"))
    tr.handle(WorkflowProgress("s", None, task_id="t", agents=[agent(1, "start"), agent(2, "start")]))
    tr.handle(TaskNotification("s", T0 * MS + 5000 * MS, task_id="t", status="stopped"))
    assert records == [] and len(timers.pending) == 1
    tr.handle(WorkflowProgress("s", None, task_id="t", agents=[
        agent(1, "error", error="subagent aborted: user cancel", ended_at=T0 + 6000),
        agent(2, "start")]))
    (a1,) = records  # a terminal agent is exported at once
    # the stop's abort: interrupted with cbc's text at the agent's end, not a failure
    assert (a1.error, a1.error_type) == (None, None)
    assert [(e.name, e.time_ns, e.attributes["otelbridge.reason"]) for e in a1.events] == [
        ("interrupted", (T0 + 6000) * MS, "subagent aborted: user cancel")]
    assert a1.attributes["gen_ai.agent.id"] == f"v2:{1:064d}"
    timers.fire()
    names = sorted(r.name for r in records)
    assert names == ["invoke_agent a1", "invoke_agent a2", "invoke_workflow y.workflow.js", "phase #1"]
    a2 = next(r for r in records if r.name == "invoke_agent a2")
    assert a2.error is None and [e.name for e in a2.events] == ["interrupted"]
    tr.handle(WorkflowProgress("s", None, task_id="t", agents=[agent(2, "error", error="late")]))
    assert len(records) == 4 and ctx.stats.late_events_ignored == 1


def test_abort_flip_between_killed_and_stopped_is_an_interrupt_too():
    """§4.1: ``task_updated`` ``killed``, then the agents wind down; a flip that comes before
    ``task_notification`` ``stopped`` is read as one after it (one stop, one reading)."""
    ctx, records, timers = make_ctx()
    tr = WorkflowTracker(ctx)
    tr.handle(WorkflowStarted("s", None, task_id="t", workflow_name="review"))
    tr.handle(WorkflowProgress("s", None, task_id="t", agents=[agent(1, "start"), agent(2, "start")]))
    tr.handle(TaskUpdated("s", None, task_id="t", status="killed", end_time_ns=(T0 + 5000) * MS))
    tr.handle(WorkflowProgress("s", None, task_id="t", agents=[
        agent(1, "error", error="subagent aborted: user cancel", ended_at=T0 + 5010),
        agent(2, "start")]))
    tr.handle(TaskNotification("s", (T0 + 5020) * MS, task_id="t", status="stopped"))
    tr.handle(WorkflowProgress("s", None, task_id="t", agents=[
        agent(1, "error", error="subagent aborted: user cancel", ended_at=T0 + 5010),
        agent(2, "error", error="subagent aborted: user cancel", ended_at=T0 + 5030)]))
    timers.fire()
    by_name = {r.name: r for r in records}
    for name, end in (("invoke_agent a1", T0 + 5010), ("invoke_agent a2", T0 + 5030)):
        rec = by_name[name]
        assert (rec.error, rec.error_type, rec.end_ns) == (None, None, end * MS)
        assert [(e.name, e.attributes["otelbridge.reason"]) for e in rec.events] == [
            ("interrupted", "subagent aborted: user cancel")]
    assert by_name["invoke_workflow review"].attributes["workflow.status"] == "stopped"


def test_failed_agent_before_a_kill_stays_failed():
    """An agent that failed while the run went on is an error; a later kill does not change it."""
    ctx, records, timers = make_ctx()
    tr = WorkflowTracker(ctx)
    tr.handle(WorkflowStarted("s", None, task_id="t", workflow_name="review"))
    tr.handle(WorkflowProgress("s", None, task_id="t", agents=[
        agent(1, "error", error="tool crashed", ended_at=T0 + 100), agent(2, "start")]))
    tr.handle(TaskUpdated("s", None, task_id="t", status="killed", end_time_ns=(T0 + 5000) * MS))
    tr.handle(TaskNotification("s", (T0 + 5020) * MS, task_id="t", status="stopped"))
    timers.fire()
    a1 = next(r for r in records if r.name == "invoke_agent a1")
    assert (a1.error, a1.error_type) == ("tool crashed", "agent_error")
