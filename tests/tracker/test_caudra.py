"""Caudra tracker part with plain events in, span records out (seed 003; SPAN-MODEL.md)."""

from __future__ import annotations

from otelbridge.events import (
    AutomationFired,
    AutomationNotice,
    CaudraAgentMessage,
    CaudraLog,
    CaudraPhase,
    CaudraWorkflowLog,
    CaudraWorkflowSnapshot,
    GoalEvent,
    ToolCall,
    ToolResult,
    Usage,
)
from otelbridge.tracker import Parent
from otelbridge.tracker import caudra_agents
from otelbridge.tracker.caudra import RUN_INCOMPLETE, CaudraTracker

from .harness import by_name, make_ctx

SID = "sess-c"
S = 10**9
MS = 10**6
T = 1_790_000_000  # epoch seconds


def snap(status, history, logs=(), run_id="run-1", epoch=1, revision=1, name="review", ts=None):
    return CaudraWorkflowSnapshot(
        SID, ts, run_id=run_id, status=status, phase=history[-1][0] if history else None,
        revision=revision, name=name, epoch=epoch,
        phase_history=[CaudraPhase(t, s * S) for t, s in history],
        logs=[CaudraLog(at * S, m) for at, m in logs],
    )


def log(at, message, run_id="run-1", epoch=1, revision=None):
    return CaudraWorkflowLog(SID, None, run_id=run_id, epoch=epoch, revision=revision,
                             log=CaudraLog(at * S, message))


def agent(call_key, phase, ts, run_id="run-1", epoch=1, tool="toolu_1", msg="m1", usage=None, tools=0):
    return CaudraAgentMessage(SID, ts, run_id=run_id, epoch=epoch, call_key=call_key, phase=phase,
                              parent_tool_use_id=tool, role="assistant", model="model-x",
                              message_id=msg, usage=usage,
                              tool_calls=[ToolCall(f"{call_key}/{msg}/{n}", "Read") for n in range(tools)])


def test_phases_logs_and_grace_window():
    ctx, records, timers = make_ctx()
    tr = CaudraTracker(ctx)
    history = [("gather", T), ("analyze", T + 20), ("gather", T + 40)]
    tr.handle(snap("active", history[:1]))
    tr.handle(log(T + 12, "3 sources found", revision=2))
    tr.handle(snap("active", history[:2], logs=[(T + 12, "3 sources found")]))  # repeats the log
    tr.handle(log(T + 30, "analysis half done"))
    tr.handle(snap("completed", history, logs=[(T + 12, "3 sources found"), (T + 30, "analysis half done")],
                   ts=(T + 50) * S))
    assert records == [] and len(timers.pending) == 1  # terminal: the grace window is open
    assert timers.pending[0].delay == ctx.grace_s
    tr.handle(log(T + 45, "late line within the grace window"))
    assert timers.fire() == 1
    spans = by_name(records)
    (root,) = spans["invoke_workflow review"]
    gathers = sorted(spans["phase gather"], key=lambda r: r.start_ns)
    (analyze,) = spans["phase analyze"]
    assert len(records) == 4
    assert root.parent_span_id is None
    assert all(p.parent_span_id == root.span_id and p.trace_id == root.trace_id for p in gathers + [analyze])
    # each phase from its started_at to the next start; the last to the run's end
    assert (gathers[0].start_ns, gathers[0].end_ns) == (T * S, (T + 20) * S)
    assert (analyze.start_ns, analyze.end_ns) == ((T + 20) * S, (T + 40) * S)
    assert (gathers[1].start_ns, gathers[1].end_ns) == ((T + 40) * S, (T + 50) * S)
    assert (root.start_ns, root.end_ns) == (T * S, (T + 50) * S)
    assert [g.attributes["workflow.phase.index"] for g in gathers] == [0, 2]
    assert analyze.attributes["workflow.phase.title"] == "analyze"
    assert root.attributes["workflow.status"] == "completed"
    assert root.attributes["workflow.run_id"] == "run-1"
    assert root.attributes["workflow.name"] == "review"
    assert root.attributes["gen_ai.conversation.id"] == SID
    assert root.error is None
    # logs once each, at their time, on the phase running then
    assert [(e.name, e.time_ns, e.attributes["workflow.log.message"]) for e in gathers[0].events] == [
        ("workflow.log", (T + 12) * S, "3 sources found")]
    assert gathers[0].events[0].attributes["workflow.revision"] == 2
    assert [(e.time_ns, e.attributes["workflow.log.message"]) for e in analyze.events] == [
        ((T + 30) * S, "analysis half done")]
    assert [(e.time_ns, e.attributes["workflow.log.message"]) for e in gathers[1].events] == [
        ((T + 45) * S, "late line within the grace window")]
    # after the window: late events are counted, not applied
    tr.handle(log(T + 60, "too late"))
    tr.finish()
    assert len(records) == 4
    assert ctx.stats.late_events_ignored == 1


def test_paused_resumed_and_paused_at_end_of_input():
    ctx, records, timers = make_ctx()
    tr = CaudraTracker(ctx)
    tr.handle(snap("active", [("draft", T)]))
    tr.handle(snap("paused", [("draft", T)], logs=[(T + 5, "waiting")], revision=2))
    assert timers.pending == []  # paused is not terminal
    tr.handle(snap("active", [("draft", T), ("edit", T + 100)], epoch=2, revision=3))
    tr.handle(snap("paused", [("draft", T), ("edit", T + 100)], logs=[(T + 110, "again")], epoch=2, revision=4))
    tr.finish()
    (root,) = by_name(records)["invoke_workflow review"]
    assert root.attributes["workflow.status"] == "paused"
    assert root.error is None
    assert root.attributes["workflow.epoch"] == 2 and root.attributes["workflow.revision"] == 4
    events = [(e.name, e.time_ns, e.attributes) for e in root.events]
    assert events == [
        ("paused", (T + 5) * S, {"workflow.revision": 2}),
        ("resumed", (T + 100) * S, {"workflow.epoch": 2}),
        ("paused", (T + 110) * S, {"workflow.revision": 4}),
    ]
    assert root.end_ns == (T + 110) * S  # the clock at end of input (the stream clock here)


def test_open_run_at_end_of_input_is_incomplete():
    ctx, records, _ = make_ctx()
    tr = CaudraTracker(ctx)
    tr.handle(snap("active", [("plan", T)]))
    tr.finish()
    (root,) = by_name(records)["invoke_workflow review"]
    assert root.attributes["workflow.status"] == "incomplete"
    assert (root.error, root.error_type) == (RUN_INCOMPLETE, "incomplete")


def test_terminal_statuses():
    for status, want, error, interrupted in [
        ("finished", "completed", None, False),
        ("failed", "failed", "budget exhausted", False),
        ("stopped", "stopped", None, True),
        ("interrupted", "stopped", None, True),
    ]:
        ctx, records, timers = make_ctx()
        tr = CaudraTracker(ctx)
        s = snap(status, [("only", T)], ts=(T + 3) * S)
        s.error = "budget exhausted" if status == "failed" else None
        tr.handle(s)
        assert len(timers.pending) == 1, status
        timers.fire()
        (root,) = by_name(records)["invoke_workflow review"]
        assert root.attributes["workflow.status"] == want
        assert root.error == error
        assert root.error_type == ("workflow_failed" if error else None)
        got = [(e.name, e.time_ns, e.attributes) for e in root.events]
        assert got == ([("interrupted", (T + 3) * S, {"workflow.status": status})] if interrupted else [])


def test_agents_under_the_right_phase_of_the_right_run():
    ctx, records, timers = make_ctx()
    tr = CaudraTracker(ctx)
    # an agent line before its run's first snapshot still creates the run
    tr.handle(agent("0", "gather", (T + 1) * S, msg="a", tools=1,
                    usage=Usage(input_tokens=10, output_tokens=2, cache_read=100, anthropic=True)))
    tr.handle(snap("active", [("gather", T)]))
    tr.handle(snap("active", [("gather", T)], run_id="other", name="other"))
    tr.handle(agent("0", "gather", (T + 2) * S, msg="a", tools=1,  # same message again: usage once
                    usage=Usage(input_tokens=10, output_tokens=2, cache_read=100, anthropic=True)))
    tr.handle(agent("0", "gather", (T + 4) * S, msg="b", usage=Usage(input_tokens=5, output_tokens=1)))
    tr.handle(agent("9", "gather", (T + 3) * S, run_id="other", tool="toolu_o"))
    history = [("gather", T), ("analyze", T + 10), ("gather", T + 20)]
    tr.handle(snap("active", history, epoch=2))
    tr.handle(agent("1", "analyze", (T + 11) * S, tool="toolu_2"))
    tr.handle(agent("0", "gather", (T + 21) * S, epoch=2, tool="toolu_3"))  # replayed call, new epoch
    tr.handle(agent("5", "nowhere", (T + 22) * S, tool="toolu_4"))
    tr.handle(snap("completed", history, epoch=2, ts=(T + 30) * S))
    tr.handle(snap("completed", [("gather", T)], run_id="other", name="other", ts=(T + 30) * S))
    timers.fire()
    spans = by_name(records)
    (root,) = spans["invoke_workflow review"]
    (other,) = spans["invoke_workflow other"]
    phases = {(r.attributes["workflow.phase.title"], r.attributes["workflow.phase.index"]): r
              for r in spans["phase gather"] + spans["phase analyze"] if r.trace_id == root.trace_id}
    agents = {(r.attributes["workflow.epoch"], r.attributes["workflow.call_key"]): r
              for r in spans["invoke_agent subagent"]}
    assert len(agents) == 5
    a0 = agents[(1, "0")]
    assert a0.parent_span_id == phases[("gather", 0)].span_id
    assert (a0.start_ns, a0.end_ns) == ((T + 1) * S, (T + 4) * S)
    assert a0.attributes["gen_ai.usage.input_tokens"] == 10 + 100 + 5
    assert a0.attributes["gen_ai.usage.output_tokens"] == 3
    assert a0.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert a0.attributes["workflow.agent.tool_calls"] == 1  # the same message again: its tool call once
    assert a0.attributes["workflow.tool_use_id"] == "toolu_1"
    assert a0.attributes["gen_ai.request.model"] == "model-x"
    assert a0.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agents[(1, "1")].parent_span_id == phases[("analyze", 1)].span_id
    assert agents[(2, "0")].parent_span_id == phases[("gather", 2)].span_id  # the re-entered phase
    assert agents[(1, "5")].parent_span_id == root.span_id  # no phase of that title
    o = agents[(1, "9")]
    assert o.trace_id == other.trace_id != root.trace_id
    (other_phase,) = [r for r in spans["phase gather"] if r.trace_id == other.trace_id]
    assert o.parent_span_id == other_phase.span_id
    assert all(a.trace_id == root.trace_id for k, a in agents.items() if k != (1, "9"))


def test_an_agents_tool_calls_are_its_children_each_once_within_the_caps(monkeypatch):
    """A ``tool_use`` opens a call once (a line repeated does not open it again, nor its result
    end it twice), a result for no call of the agent is ignored, calls past the cap are
    counted, not spanned; what the open calls hold leaves the run's weight when they end; a
    call still open when the input is cut says why."""
    monkeypatch.setattr(caudra_agents, "MAX_TOOLS_PER_AGENT", 3)
    ctx, records, _ = make_ctx()
    tr = CaudraTracker(ctx)

    def calls(ts, *ids, args="{}"):
        ev = agent("0", "gather", ts * S)
        ev.tool_calls = [ToolCall(i, "Read", args) for i in ids]
        return ev

    def results(ts, *ids, error=False):
        ev = agent("0", "gather", ts * S)
        ev.role, ev.tool_results = "user", [ToolResult(SID, None, tool_use_id=i, is_error=error) for i in ids]
        return ev

    tr.handle(snap("active", [("gather", T)]))
    (run,) = tr.runs.values()
    tr.handle(calls(T + 1, "a", "b", args="x" * 5000))
    held = run.held_chars
    tr.handle(calls(T + 1, "a"))  # the same line again
    tr.handle(results(T + 2, "a"))
    tr.handle(results(T + 3, "a", "nobody", error=True))  # again, and an id of no call
    assert run.held_chars < held
    tr.handle(calls(T + 4, "c", "d"))  # "d": past the cap of 3 calls an agent keeps
    tr.handle(results(T + 5, "c", error=True))
    tr.finish(reason="interrupted by SIGTERM")
    tools = {r.attributes["gen_ai.tool.call.id"]: r for r in records if r.name == "execute_tool Read"}
    assert sorted(tools) == ["a", "b", "c"] and ctx.stats.session_items_capped == 1
    (a_span,) = [r for r in records if r.name == "invoke_agent subagent"]
    assert {t.parent_span_id for t in tools.values()} == {a_span.span_id}
    assert (tools["a"].start_ns, tools["a"].end_ns, tools["a"].error) == ((T + 1) * S, (T + 2) * S, None)
    assert (tools["c"].error, tools["c"].error_type) == ("tool error", "tool_error")
    assert (tools["b"].end_ns, tools["b"].error, tools["b"].error_type) == (
        a_span.end_ns, "no tool_result: interrupted by SIGTERM", "incomplete")
    assert a_span.attributes["workflow.agent.tool_calls"] == 4  # each tool_use once


def test_traceparent_parents_the_run():
    ctx, records, timers = make_ctx(parent=Parent(trace_id=0xABC, span_id=0xDEF))
    tr = CaudraTracker(ctx)
    tr.handle(snap("completed", [("x", T)]))
    timers.fire()
    (root,) = by_name(records)["invoke_workflow review"]
    assert (root.trace_id, root.parent_span_id, root.parent_remote) == (0xABC, 0xDEF, True)


def fired(fire_id, status="completed", started=T * 1000 + 4, finished=T * 1000 + 11, **kw):
    return AutomationFired(SID, None, fire_id=fire_id, automation="deploy-watch", status=status,
                           queued_ns=T * 1000 * MS, started_ns=started and started * MS,
                           finished_ns=finished and finished * MS, **kw)


def test_automation_spans_are_session_children():
    ctx, records, _ = make_ctx()
    tr = CaudraTracker(ctx)
    tr.handle(AutomationNotice(SID, None, automation="deploy-watch", fire_id="f2", text="lint is red"))
    tr.handle(fired("f1", repeats=3, attempts=1, trigger="schedule", trigger_index=0, reason=None))
    tr.handle(AutomationNotice(SID, None, automation="deploy-watch", fire_id="f1", text="deploy finished"))
    tr.handle(fired("f2", status="failed", started=None, finished=None, error_kind="script",
                    error_message="undefined variable", error_line=3, error_column=7))
    tr.handle(AutomationNotice(SID, None, automation="x", fire_id="never", text="orphan"))
    tr.handle(AutomationNotice(SID, None, automation="x", fire_id=None, text="arming failed"))
    session = ctx.session_ref(SID)
    f1, f2 = records
    for r in (f1, f2):
        assert r.name == "automation deploy-watch"
        assert (r.trace_id, r.parent_span_id) == (session.trace_id, session.span_id)
    assert (f1.start_ns, f1.end_ns) == ((T * 1000 + 4) * MS, (T * 1000 + 11) * MS)
    assert f1.error is None
    assert f1.attributes["automation.repeats"] == 3 and f1.attributes["automation.attempts"] == 1
    assert f1.attributes["automation.trigger"] == "schedule" and f1.attributes["automation.trigger_index"] == 0
    assert "automation.reason" not in f1.attributes
    # started_at null → queued_at; finished_at null → no end the stream tells: zero-length (not
    # the newest time the stream showed, which is another firing's: f1's finished_at)
    assert (f2.start_ns, f2.end_ns) == (T * 1000 * MS, T * 1000 * MS)
    # the session span ends no earlier than its latest firing
    assert ctx.session_covered(SID) == f1.end_ns
    assert (f2.error, f2.error_type) == ("undefined variable", "script")
    assert (f2.attributes["automation.error.line"], f2.attributes["automation.error.column"]) == (3, 7)
    # a notice before its firing lands on the firing's span
    assert [(e.name, e.attributes["automation.notice.text"]) for e in f2.events] == [("automation_notice", "lint is red")]
    tr.finish()
    # the others are session events: after the firing, without a firing, or whose firing never came
    texts = [e.attributes["automation.notice.text"] for e in ctx.take_session_events(SID)]
    assert texts == ["deploy finished", "arming failed", "orphan"]


def test_goal_events_go_to_the_session():
    ctx, _, _ = make_ctx()
    tr = CaudraTracker(ctx)
    tr.handle(GoalEvent(SID, 1_790_000_000_000 * MS, kind="evaluation",
                        fields={"verdict": "not_met", "cost": 0.0054, "applied": True, "condition": "tests pass"},
                        usage=Usage(input_tokens=1200, output_tokens=80)))
    (ev,) = ctx.take_session_events(SID)
    assert ev.name == "goal.evaluation" and ev.time_ns == 1_790_000_000_000 * MS
    assert ev.attributes == {"goal.kind": "evaluation", "goal.verdict": "not_met", "goal.cost": 0.0054,
                             "goal.applied": True, "gen_ai.usage.input_tokens": 1200,
                             "gen_ai.usage.output_tokens": 80}
    assert ctx.take_session_events(SID) == []
    ctx, _, _ = make_ctx(capture_content=True)
    CaudraTracker(ctx).handle(GoalEvent(SID, None, kind="finished", fields={"condition": "tests pass"}))
    (ev,) = ctx.take_session_events(SID)
    assert ev.attributes["goal.condition"] == "tests pass"
