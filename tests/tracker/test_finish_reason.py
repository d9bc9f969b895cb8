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
        WorkflowAgent(1, state="start", label="a1", started_at=T0 // MS + 1),
        WorkflowAgent(2, state="done", label="a2", started_at=T0 // MS + 1, ended_at=T0 // MS + 3),
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


# --------------------------------------------------------------------------- the other parts


def test_session_part_marks_the_session_and_what_it_cut_short():
    from otelbridge.events import ModelCall, ToolCall, ToolResult, TurnResult
    from otelbridge.tracker.sessions import NO_RESULT, SessionTracker

    records = []
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("stream"), stats=Stats())
    part = SessionTracker(ctx)
    part.handle(ModelCall("s", T0, phase="line", message_id="m1", model="m",
                          tool_calls=[ToolCall("tu_done", "Read"), ToolCall("tu_open", "Bash")]))
    part.handle(ToolResult("s", T0 + 2 * MS, tool_use_id="tu_done"))
    part.handle(TurnResult("s", T0 + 3 * MS))  # turn 1 ends by itself
    part.handle(ModelCall("s", T0 + 4 * MS, phase="line", message_id="m2", model="m",
                          tool_calls=[ToolCall("tu_cut", "Bash")]))
    Tracker(ctx, [part]).finish(reason=REASON_DOWNSTREAM_CLOSED)
    cut = {(r.name, r.span_id) for r in records
           if [(e.name, e.attributes) for e in r.events]
           == [("interrupted", {"otelbridge.reason": "downstream closed"})]}
    by_name = {}
    for r in records:
        by_name.setdefault(r.name, []).append(r)
    session = by_name["invoke_agent claude-code"][0]
    open_turn = next(r for r in by_name["turn 2"])
    open_tool = next(r for r in by_name["execute_tool Bash"]
                     if r.attributes["gen_ai.tool.call.id"] == "tu_cut")
    assert cut == {(session.name, session.span_id), (open_turn.name, open_turn.span_id),
                   (open_tool.name, open_tool.span_id)}
    # the stream did not end: the run was cut short, and the status says by what
    assert NO_RESULT == "stream ended before result"
    assert session.error == open_turn.error == "downstream closed before result"
    assert session.error_type == open_turn.error_type == "incomplete"
    assert open_tool.error == "no tool_result: downstream closed" and open_tool.error_type == "incomplete"
    for name in ("turn 1", "execute_tool Read", "chat m"):
        assert all(e.name != "interrupted" for r in by_name[name] for e in r.events), name
    assert all(r.events[-1].time_ns == r.end_ns for r in records if (r.name, r.span_id) in cut)

    records.clear()
    part.finish(reason=REASON_DOWNSTREAM_CLOSED)  # everything ended once: nothing more
    assert records == []


def test_session_part_plain_eof_adds_no_interrupted_event():
    from otelbridge.events import ModelCall
    from otelbridge.tracker.sessions import SessionTracker

    records = []
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("stream"), stats=Stats())
    part = SessionTracker(ctx)
    part.handle(ModelCall("s", T0, phase="line", message_id="m1", model="m"))
    Tracker(ctx, [part]).finish()
    assert records and all(e.name != "interrupted" for r in records for e in r.events)


def test_caudra_open_root_says_why_it_was_cut_short():
    from otelbridge.events import CaudraPhase, CaudraWorkflowSnapshot
    from otelbridge.tracker.caudra import RUN_INCOMPLETE, CaudraTracker

    def caudra_run():
        records = []
        ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("stream"), stats=Stats())
        part = CaudraTracker(ctx)
        part.handle(CaudraWorkflowSnapshot("s", T0, run_id="r1", status="active", phase="plan",
                                           revision=1, name="review", epoch=1,
                                           phase_history=[CaudraPhase("plan", T0)]))
        return Tracker(ctx, [part]), records

    tracker, records = caudra_run()
    tracker.finish(reason=interrupted_by(15))
    (root,) = [r for r in records if r.name == "invoke_workflow review"]
    assert RUN_INCOMPLETE == "stream ended before a terminal workflow status"  # at plain EOF
    assert root.error == "interrupted by SIGTERM before a terminal workflow status"
    assert [(e.name, e.attributes, e.time_ns) for e in root.events] == [
        ("interrupted", {"otelbridge.reason": "interrupted by SIGTERM"}, root.end_ns)]

    tracker, records = caudra_run()
    tracker.finish()
    assert all(e.name != "interrupted" for r in records for e in r.events)


def test_bernstein_run_without_terminal_says_why_it_was_cut_short():
    from otelbridge.events import BernsteinSignal
    from otelbridge.tracker.bernstein import BernsteinTracker

    records = []
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("stream"), stats=Stats())
    part = BernsteinTracker(ctx)
    part.handle(BernsteinSignal("s", T0, kind="PLAN_DRAFT"))
    Tracker(ctx, [part]).finish(reason=REASON_DOWNSTREAM_CLOSED)
    (run,) = records
    assert run.events[-1].name == "interrupted"
    assert run.events[-1].attributes == {"otelbridge.reason": "downstream closed"}
    assert run.events[-1].time_ns == run.end_ns
