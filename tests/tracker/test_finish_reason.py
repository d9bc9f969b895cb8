"""``Tracker.finish(reason=...)``: spans cut short say why; parts with a plain ``finish(self)``
still work."""

from __future__ import annotations

from otelbridge.clock import Clock
from otelbridge.events import TaskNotification, WorkflowAgent, WorkflowProgress, WorkflowStarted
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import REASON_DOWNSTREAM_CLOSED, Context, Tracker, interrupted_by
from otelbridge.tracker.workflows import NO_TERMINAL_AT_EOF, RUN_INCOMPLETE, WorkflowTracker

T0 = 1_783_647_395_000 * 1_000_000
MS = 1_000_000


def tracker_with(parts_extra=()):
    records = []
    ctx = Context(emit=records.append, ids=Ids(False), clock=Clock("stream"), stats=Stats())
    tracker = Tracker(ctx, [WorkflowTracker(ctx), *parts_extra])
    return tracker, records


def open_run(tracker, task="t1"):
    tracker.handle(WorkflowStarted("s", T0, task_id=task, workflow_name="wf"))
    tracker.handle(WorkflowProgress("s", T0 + 5 * MS, task_id=task, agents=[
        WorkflowAgent(1, state="start", label="a1", started_ns=T0 + MS),
        WorkflowAgent(2, state="done", label="a2", started_ns=T0 + MS, ended_ns=T0 + 3 * MS),
    ]))


def test_downstream_closed_marks_every_span_cut_short():
    tracker, records = tracker_with()
    open_run(tracker)
    tracker.finish(reason=REASON_DOWNSTREAM_CLOSED)
    by_name = {r.name: r for r in records}
    root, running, done = by_name["invoke_workflow wf"], by_name["invoke_agent a1"], by_name["invoke_agent a2"]
    assert root.error == "downstream closed before task_notification"
    assert root.attributes["workflow.status"] == "incomplete"
    assert [(e.name, e.attributes) for e in root.events] == [
        ("interrupted", {"otelbridge.reason": "downstream closed"})]
    assert running.error == "no terminal state: downstream closed"
    assert [e.name for e in running.events] == ["interrupted"]
    assert running.events[0].time_ns == running.end_ns == T0 + 5 * MS  # the stream clock's latest
    assert done.events == [] and done.error is None  # it had ended by itself: not cut short


def test_signal_reason_names_the_signal_and_plain_eof_is_unchanged():
    tracker, records = tracker_with()
    open_run(tracker)
    tracker.finish(reason=interrupted_by(15))
    assert {r.name: r.error for r in records}["invoke_workflow wf"] == (
        "interrupted by SIGTERM before task_notification")

    tracker, records = tracker_with()
    open_run(tracker)
    tracker.finish()
    errors = {r.name: r.error for r in records}
    assert errors["invoke_workflow wf"] == RUN_INCOMPLETE
    assert errors["invoke_agent a1"] == NO_TERMINAL_AT_EOF
    assert all(r.events == [] for r in records)


def test_notified_run_is_not_marked_interrupted():
    tracker, records = tracker_with()
    open_run(tracker)
    tracker.handle(TaskNotification("s", T0 + 9 * MS, task_id="t1", status="completed"))
    tracker.finish(reason=interrupted_by(2))
    root = next(r for r in records if r.name == "invoke_workflow wf")
    assert root.error is None and root.events == []


def test_parts_without_reason_still_finish():
    class Old:
        finished = 0

        def handle(self, ev):
            pass

        def finish(self):
            self.finished += 1

    old = Old()
    tracker, _ = tracker_with([old])
    tracker.finish(reason=REASON_DOWNSTREAM_CLOSED)
    tracker.finish()
    assert old.finished == 2
