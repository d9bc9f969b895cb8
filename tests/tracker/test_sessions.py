"""The session part of the tracker with plain events in and plain span records out."""

from __future__ import annotations

import pytest

from otelbridge.clock import Clock
from otelbridge.events import (
    LineSeq,
    ModelCall,
    SessionError,
    SessionMark,
    SessionStarted,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    TaskUpdated,
    TaskUsage,
    ToolCall,
    ToolResult,
    TurnResult,
    TurnStarted,
    Usage,
    UserMessage,
    WorkflowStarted,
)
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Parent, SpanRef, Tracker
from otelbridge.tracker.sessions import NO_RESULT, SessionTracker

S = "sess-1"
T0 = 1_790_000_000_000_000_000  # epoch ns
MS = 1_000_000


def at(ms: int) -> int:
    return T0 + ms * MS


class Run:
    """A session tracker on a stream clock, collecting records."""

    def __init__(self, **ctx_kw) -> None:
        self.records = []
        self.stats = Stats()
        self.ctx = Context(
            emit=self.records.append,
            ids=Ids(deterministic=True),
            clock=Clock("stream", wall=lambda: T0),
            stats=self.stats,
            **ctx_kw,
        )
        self.tracker = SessionTracker(self.ctx)

    def feed(self, *events) -> "Run":
        for ev in events:
            self.tracker.handle(ev)
        return self

    def finish(self) -> "Run":
        self.tracker.finish()
        return self

    def named(self, name: str):
        return [r for r in self.records if r.name == name]

    def one(self, name: str):
        (rec,) = self.named(name)
        return rec

    def by_id(self, span_id: int):
        (rec,) = [r for r in self.records if r.span_id == span_id]
        return rec


def anth(i, cr, cc, o) -> Usage:
    return Usage(i, o, cr, cc, anthropic=True)


def call(ms, mid, *, phase="line", ptu=None, usage=None, tools=(), model="m-1", **kw):
    return ModelCall(S, at(ms), phase=phase, message_id=mid, model=model, parent_tool_use_id=ptu,
                     usage=usage, tool_calls=list(tools), **kw)


def result(ms, *, usage=None, uuid=None, **kw):
    return TurnResult(S, at(ms), usage=usage, uuid=uuid, **kw)


def test_session_turn_chat_tool_tree_usage_and_times():
    run = Run().feed(
        SessionStarted(S, at(0), agent_name="claude-code", provider="anthropic", model="m-1", version="2.1"),
        call(100, "msg_1", phase="start", usage=anth(10, 1000, 200, 1)),
        call(200, "msg_1", usage=anth(10, 1000, 200, 3), tools=[ToolCall("tu_1", "Read", '{"p":1}')]),
        call(300, None, phase="delta", usage=Usage(None, 95, None, None), usage_final=True,
             stop_reason="tool_use"),
        call(350, "msg_1", usage=anth(99, 0, 0, 3)),  # a late snapshot never undoes the final usage
        ToolResult(S, at(500), tool_use_id="tu_1", content="file body"),
        call(600, "msg_2", usage=anth(5, 1200, 0, 7)),
        result(900, usage=anth(15, 2200, 200, 102), subtype="success", num_turns=2,
               duration_ms=950, total_cost_usd=0.5),
    ).finish()
    session = run.one("invoke_agent claude-code")
    turn = run.one("turn 1")
    chat1, chat2 = sorted(run.named("chat m-1"), key=lambda r: r.start_ns)
    tool = run.one("execute_tool Read")
    assert len(run.records) == 5
    # tree: session → turn → chat → tool
    assert session.parent_span_id is None
    assert turn.parent_span_id == session.span_id
    assert chat1.parent_span_id == chat2.parent_span_id == turn.span_id
    assert tool.parent_span_id == chat1.span_id
    assert {r.trace_id for r in run.records} == {session.trace_id}
    assert chat1.kind == "CLIENT" and tool.kind == "INTERNAL"
    # times (ns) from the events: chat 0..500 (asked for at the turn's start, its init's own
    # time 0, not at the result − duration before it: the CLI asks the model after it printed
    # its init; its first line at 100), tool 200..500 (the chat ends no earlier than its tool),
    # chat 2 asked for at the tool's result (500), turn starts at result − duration
    assert (chat1.start_ns, chat1.end_ns) == (at(0), at(500))
    assert (chat2.start_ns, chat2.end_ns) == (at(500), at(600))
    assert (tool.start_ns, tool.end_ns) == (at(200), at(500))
    assert (turn.start_ns, turn.end_ns) == (at(900 - 950), at(900))
    assert (session.start_ns, session.end_ns) == (at(-50), at(900))
    # usage: the delta's output is final; input counts both caches (Anthropic shape)
    assert chat1.attributes["gen_ai.usage.output_tokens"] == 95
    assert chat1.attributes["gen_ai.usage.input_tokens"] == 10 + 1000 + 200
    assert chat1.attributes["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert chat1.attributes["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert chat1.attributes["gen_ai.response.id"] == "msg_1"
    assert session.attributes["gen_ai.usage.input_tokens"] == 15 + 2200 + 200
    assert session.attributes["gen_ai.usage.output_tokens"] == 102
    assert session.attributes["result.total_cost_usd"] == 0.5
    assert session.attributes["gen_ai.provider.name"] == "anthropic"
    assert session.attributes["gen_ai.request.model"] == "m-1"
    assert session.attributes["gen_ai.conversation.id"] == S
    assert tool.attributes["gen_ai.tool.call.id"] == "tu_1"
    assert tool.attributes["gen_ai.tool.name"] == "Read"
    # content is opt-in
    assert not any("arguments" in k or "result" == k.split(".")[-1] for k in tool.attributes)
    assert session.error is None and tool.error is None
    assert run.stats.late_events_ignored == 0


def test_content_capture_exports_arguments_and_result():
    run = Run(capture_content=True).feed(
        call(0, "msg_1", tools=[ToolCall("tu_1", "Bash", '{"command":"ls"}')]),
        ToolResult(S, at(10), tool_use_id="tu_1", content="a.txt"),
        result(20),
    ).finish()
    tool = run.one("execute_tool Bash")
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"command":"ls"}'
    assert tool.attributes["gen_ai.tool.call.result"] == "a.txt"


def test_is_error_result_is_an_error_whatever_its_subtype_and_tool_errors():
    run = Run().feed(
        call(0, "msg_1", tools=[ToolCall("tu_1", "Bash")]),
        ToolResult(S, at(10), tool_use_id="tu_1", is_error=True, content="secret output"),
        result(20, subtype="success", is_error=True, terminal_reason="api_error", error="model not found"),
    ).finish()
    tool = run.one("execute_tool Bash")
    assert tool.error == "tool error" and tool.error_type == "tool_error"  # content stays out
    for rec in (run.one("turn 1"), run.one("invoke_agent claude-code")):
        assert rec.error == "model not found"
        assert rec.error_type == "api_error"
        assert rec.attributes["result.is_error"] is True


def test_sub_agent_nests_under_its_tool_and_merges_its_local_agent_task():
    """Two concurrent sub-agents; the notification comes before one's last line, twice."""
    run = Run().feed(
        call(0, "msg_1", tools=[ToolCall("tu_a", "Agent", subagent_type="Explore", description="find"),
                                ToolCall("tu_b", "Agent", subagent_type="general-purpose")]),
        TaskStarted(S, at(5), task_id="t-a", tool_use_id="tu_a", task_type="local_agent",
                    subagent_type="Explore", description="find"),
        UserMessage(S, at(10), parent_tool_use_id="tu_a"),
        UserMessage(S, at(11), parent_tool_use_id="tu_b"),
        call(20, "msg_a1", ptu="tu_a", usage=anth(1, 2, 3, 4), tools=[ToolCall("tu_a_glob", "Glob")]),
        call(21, "msg_b1", ptu="tu_b", usage=anth(5, 0, 0, 6), tools=[ToolCall("tu_b_bash", "Bash")]),
        ToolResult(S, at(30), tool_use_id="tu_a_glob", parent_tool_use_id="tu_a"),
        ToolResult(S, at(31), tool_use_id="tu_b_bash", parent_tool_use_id="tu_b"),
        TaskProgress(S, at(35), task_id="t-a", tool_use_id="tu_a", usage=TaskUsage(7, 1, 30)),
        TaskNotification(S, at(40), task_id="t-a", tool_use_id="tu_a", status="completed",
                         usage=TaskUsage(10, 1, 45)),
        call(50, "msg_a2", ptu="tu_a", usage=anth(1, 0, 0, 1)),  # after the notification
        TaskNotification(S, at(55), task_id="t-a", tool_use_id="tu_a", status="completed"),
        ToolResult(S, at(60), tool_use_id="tu_a"),
        ToolResult(S, at(70), tool_use_id="tu_b"),
        result(80),
    ).finish()
    explore = run.one("invoke_agent Explore")
    general = run.one("invoke_agent general-purpose")
    agent_tools = {r.attributes["gen_ai.tool.call.id"]: r for r in run.named("execute_tool Agent")}
    assert explore.parent_span_id == agent_tools["tu_a"].span_id
    assert general.parent_span_id == agent_tools["tu_b"].span_id
    # the sub-agent's own calls and tools stay under it; never mixed between the two
    glob, bash = run.one("execute_tool Glob"), run.one("execute_tool Bash")
    assert run.by_id(glob.parent_span_id).parent_span_id == explore.span_id
    assert run.by_id(bash.parent_span_id).parent_span_id == general.span_id
    explore_chats = [r for r in run.records if r.name.startswith("chat") and r.parent_span_id == explore.span_id]
    assert len(explore_chats) == 2
    # one span per sub-agent, with the task's fields; ends at its tool's result
    assert explore.attributes["gen_ai.agent.id"] == "t-a"
    assert explore.attributes["task.status"] == "completed"
    assert explore.attributes["task.usage.total_tokens"] == 10
    assert explore.attributes["gen_ai.agent.description"] == "find"
    assert explore.attributes["gen_ai.usage.output_tokens"] == 4 + 1
    assert (explore.start_ns, explore.end_ns) == (at(5), at(60))
    assert general.end_ns == at(70)
    assert run.stats.duplicate_notifications == 1
    assert len({r.span_id for r in run.records}) == len(run.records)


def test_a_failed_sub_agents_answer_leaves_only_with_content_capture():
    def failed(capture_content: bool):
        return Run(capture_content=capture_content).feed(
            call(0, "msg_1", tools=[ToolCall("tu_a", "Agent", subagent_type="Explore")]),
            TaskStarted(S, at(5), task_id="t-a", tool_use_id="tu_a", task_type="local_agent",
                        subagent_type="Explore", description="read env"),
            TaskNotification(S, at(40), task_id="t-a", tool_use_id="tu_a", status="failed",
                             summary="The .env holds DJANGO_SECRET_KEY=k9x"),
            ToolResult(S, at(60), tool_use_id="tu_a"),
            result(80),
        ).finish().one("invoke_agent Explore")

    assert (failed(False).error, failed(False).error_type) == ("sub-agent failed", "agent_error")
    assert failed(True).error == "The .env holds DJANGO_SECRET_KEY=k9x"  # raw: spans.py redacts


def _failed_background_command(capture_content: bool):
    return Run(capture_content=capture_content).feed(
        call(0, "msg_1", tools=[ToolCall("tu_bg", "Bash")]),
        TaskProgress(S, at(2), task_id="t-bg", tool_use_id="tu_bg", usage=TaskUsage(0, 0, 1)),
        TaskStarted(S, at(5), task_id="t-bg", tool_use_id="tu_bg", task_type="local_bash",
                    description="mysql -pHunter2 db"),
        ToolResult(S, at(6), tool_use_id="tu_bg"),
        result(10),
        TaskUpdated(S, at(20), task_id="t-bg", status="failed", end_time_ns=at(19)),
        TaskNotification(S, at(21), task_id="t-bg", status="failed",
                         summary='Background command "mysql -pHunter2 db" failed (exit code 2)',
                         usage=TaskUsage(0, 0, 17)),
        TaskNotification(S, at(22), task_id="t-bg", status="failed"),
    ).finish()


def test_background_task_span_failed_and_progress_before_start():
    run = _failed_background_command(capture_content=False)
    task = run.one("task local_bash")
    session = run.one("invoke_agent claude-code")
    # its tool call is in the stream: under that execute_tool span, outliving it (SPAN-MODEL "Tasks")
    assert task.parent_span_id == run.one("execute_tool Bash").span_id
    assert (task.start_ns, task.end_ns) == (at(2), at(19))
    # a background command's description and summary hold the command: content, left out
    assert task.error == "task failed with exit code 2" and task.error_type == "task_failed"
    assert task.attributes["task.type"] == "local_bash" and "task.description" not in task.attributes
    assert run.stats.duplicate_notifications == 1
    assert session.end_ns == at(19)  # covers the background task


def test_background_command_and_its_summary_leave_with_content_capture():
    task = _failed_background_command(capture_content=True).one("task local_bash")
    assert task.attributes["task.description"] == "mysql -pHunter2 db"  # raw: spans.py redacts
    assert task.error == 'Background command "mysql -pHunter2 db" failed (exit code 2)'


def test_several_results_make_turns_and_a_duplicate_is_ignored():
    run = Run().feed(
        SessionStarted(S, at(0), agent_name="claude-code"),
        call(10, "msg_1"),
        result(20, usage=anth(1, 10, 100, 5), uuid="r1", total_cost_usd=0.1),
        SessionStarted(S, at(30), agent_name="claude-code"),  # init mid-session: a new turn
        call(40, "msg_2"),
        result(50, usage=anth(2, 20, 0, 6), uuid="r2", total_cost_usd=0.3),
        result(51, usage=anth(2, 20, 0, 6), uuid="r2", total_cost_usd=0.3),
    ).finish()
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    session = run.one("invoke_agent claude-code")
    assert (t2.start_ns, t2.end_ns) == (at(30), at(50))
    assert t1.attributes["gen_ai.usage.input_tokens"] == 111
    assert t2.attributes["gen_ai.usage.input_tokens"] == 22
    assert session.attributes["gen_ai.usage.input_tokens"] == 111 + 22  # the sum over results
    assert session.attributes["gen_ai.usage.output_tokens"] == 11
    assert session.attributes["result.total_cost_usd"] == 0.3  # cumulative: the last one
    assert session.attributes["session.turns"] == 2
    assert session.end_ns == at(50)
    assert run.stats.duplicate_results == 1
    assert not run.named("turn 3")


def test_end_of_input_without_result_ends_everything_once_with_errors():
    run = Run().feed(
        call(0, "msg_1", tools=[ToolCall("tu_1", "Bash"), ToolCall("tu_a", "Agent")]),
        call(5, "msg_s", ptu="tu_a"),
        TaskStarted(S, at(6), task_id="t-x", task_type="local_bash"),
    ).finish()
    assert {r.name for r in run.records} == {
        "invoke_agent claude-code", "turn 1", "chat m-1", "execute_tool Bash", "execute_tool Agent",
        "invoke_agent subagent", "task local_bash",
    }
    assert len(run.records) == 8 and len({r.span_id for r in run.records}) == 8
    assert run.one("invoke_agent claude-code").error == NO_RESULT
    assert run.one("turn 1").error == NO_RESULT
    assert run.one("execute_tool Bash").error_type == "incomplete"
    assert run.one("invoke_agent subagent").error_type == "incomplete"
    assert run.one("task local_bash").error_type == "incomplete"
    assert all(r.end_ns >= r.start_ns for r in run.records)
    run.finish()  # a second finish emits nothing more
    assert len(run.records) == 8


def test_milk_seq_gaps_marks_exception_and_final_result():
    run = Run().feed(
        SessionStarted(S, at(0), agent_name="coder", provider="local", model="qwen"),
        LineSeq(S, at(0), seq=0),
        LineSeq(S, at(1), seq=1),
        LineSeq(S, at(2), seq=3),
        LineSeq(S, at(3), seq=2),
        SessionMark(S, at(4), name="agent_switch", attributes={"reason": "esc\x1b[31m"}, model="claude"),
        SessionError(S, at(5), message="provider failed", error_type="milk.system_error", recoverable=False),
        call(6, "msg_1", model=None),
        result(7, usage=Usage(10, 2, 5, 1), final=True,
               model_usage={"qwen": Usage(10, 2, 5, 1)}),
        LineSeq(S, at(8), seq=4),
    )
    session = run.one("invoke_agent coder")  # emitted at the final result, before finish()
    gaps = [e for e in session.events if e.name == "seq_gap"]
    assert [(e.attributes["seq.expected"], e.attributes["seq.received"], e.attributes["seq.kind"])
            for e in gaps] == [(2, 3, "missing"), (4, 2, "reordered")]
    (switch,) = [e for e in session.events if e.name == "agent_switch"]
    assert switch.attributes == {"reason": "esc\x1b[31m"}  # raw: the span builder cleans it
    (exc,) = [e for e in session.events if e.name == "exception"]
    assert exc.time_ns == at(5)
    assert exc.attributes == {"exception.message": "provider failed",
                              "exception.type": "milk.system_error", "exception.recoverable": False}
    assert run.one("chat claude").attributes["gen_ai.request.model"] == "claude"  # after the switch
    assert session.attributes["gen_ai.request.model"] == "qwen"  # the session keeps its first
    # milk usage as given (not Anthropic-shaped): input is not summed with the cache
    assert session.attributes["gen_ai.usage.input_tokens"] == 10
    (mu,) = [e for e in session.events if e.name == "model_usage"]
    assert mu.attributes["gen_ai.response.model"] == "qwen"
    assert mu.attributes["gen_ai.usage.cache_read.input_tokens"] == 5
    assert run.stats.seq_gaps == 2 and run.stats.late_events_ignored == 1
    count = len(run.records)
    run.finish()
    assert len(run.records) == count


def test_workflow_link_and_parents_wrapper_and_traceparent():
    parent = Parent(0xABC, 0xDEF)
    run = Run(parent=parent).feed(
        WorkflowStarted(S, at(0), task_id="wf-1"),
        TaskNotification(S, at(1), task_id="wf-1", status="completed"),  # a workflow's: not a task
        result(2),
    ).finish()
    session = run.one("invoke_agent claude-code")
    assert session.trace_id == parent.trace_id
    assert (session.parent_span_id, session.parent_remote) == (parent.span_id, True)
    ref = run.ctx.workflow_ref(S, "wf-1")
    assert [(l.trace_id, l.span_id) for l in session.links] == [(ref.trace_id, ref.span_id)]
    assert not [r for r in run.records if r.name.startswith("task")]

    wrapped = Run()
    wrapped.ctx.run = SpanRef(0x123, 0x456)
    wrapped.feed(result(0)).finish()
    session = wrapped.one("invoke_agent claude-code")
    assert (session.trace_id, session.parent_span_id, session.parent_remote) == (0x123, 0x456, False)


def test_clock_switch_to_stream_moves_earlier_times():
    """A recording piped in: lines without a timestamp come first (wall clock, 'today'), then a
    line with its own old timestamp switches the clock; nothing mixes the two."""
    wall = T0 + 400 * 24 * 3600 * 10**9
    records = []
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("auto", wall=lambda: wall),
                  stats=Stats())
    tracker = SessionTracker(ctx)
    tracker.handle(ModelCall(S, None, message_id="msg_1", tool_calls=[ToolCall("tu", "Bash")]))
    tracker.handle(ToolResult(S, at(100), tool_use_id="tu"))
    tracker.handle(TurnResult(S, None))
    tracker.finish()
    assert len(records) == 4
    for rec in records:
        assert at(0) <= rec.start_ns <= rec.end_ns <= at(100), rec.name


def test_clock_switch_to_stream_moves_a_sub_agent_s_tool_call_too():
    """As above, with a sub-agent: its ``Agent`` call came untimed (wall clock, 'today'), its
    own lines with old timestamps. Every span, the sub-agent's too, lies in the stream's time,
    and the sub-agent inside its tool call."""
    wall = T0 + 400 * 24 * 3600 * 10**9
    records = []
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("auto", wall=lambda: wall),
                  stats=Stats())
    tracker = SessionTracker(ctx)
    tracker.handle(ModelCall(S, None, message_id="msg_1",
                             tool_calls=[ToolCall("tu_a", "Agent", subagent_type="Explore")]))
    tracker.handle(UserMessage(S, at(10), parent_tool_use_id="tu_a"))
    tracker.handle(call(20, "msg_a1", ptu="tu_a"))
    tracker.handle(ToolResult(S, at(100), tool_use_id="tu_a"))
    tracker.handle(TurnResult(S, at(110)))
    tracker.finish()
    for rec in records:
        assert at(0) <= rec.start_ns <= rec.end_ns <= at(110), rec.name
    (tool,) = [r for r in records if r.name == "execute_tool Agent"]
    (agent,) = [r for r in records if r.name == "invoke_agent Explore"]
    assert agent.parent_span_id == tool.span_id and tool.start_ns <= agent.start_ns


def test_tracker_runs_the_session_part_by_default():
    records = []
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("stream", wall=lambda: T0), stats=Stats())
    tracker = Tracker(ctx)
    tracker.handle(TurnResult(S, at(0)))
    tracker.finish()
    assert [r.name for r in records] == ["turn 1", "invoke_agent claude-code"]


def test_caudra_turn_start_opens_and_names_the_turn_and_a_missing_result_is_incomplete():
    run = Run().feed(
        TurnStarted(S, at(0), run_id="1", automatic=False, task_events=0),
        call(10, "msg_1"),
        result(20, run_id="1", background_active=1),
        TurnStarted(S, at(30), run_id="2", automatic=True, task_events=1),
        call(40, "msg_2"),
        TurnStarted(S, at(50), run_id="3", automatic=True),  # run 2 never got its result
        result(60, run_id="3"),
    ).finish()
    t1, t2, t3 = (run.one(f"turn {n}") for n in (1, 2, 3))
    assert (t1.start_ns, t1.attributes["turn.run_id"], t1.attributes["turn.automatic"]) == (at(0), "1", False)
    assert t1.attributes["result.run_id"] == "1" and t1.attributes["result.background_active"] == 1
    assert (t2.start_ns, t2.end_ns, t2.attributes["turn.run_id"]) == (at(30), at(40), "2")
    assert t2.error_type == "incomplete" and t2.attributes["turn.task_event_ids.count"] == 1
    assert t2.error == "the next run began before its result"  # not "stream ended": it went on
    assert (t3.start_ns, t3.end_ns, t3.error) == (at(50), at(60), None)
    chats = {r.attributes["gen_ai.response.id"]: r for r in run.named("chat m-1")}
    assert (chats["msg_1"].parent_span_id, chats["msg_2"].parent_span_id) == (t1.span_id, t2.span_id)


def test_a_session_seen_only_through_workflows_and_tasks_is_not_an_error():
    run = Run().feed(
        WorkflowStarted(S, at(0), task_id="wf-1"),
        TaskStarted(S, at(1), task_id="t-1", task_type="local_bash"),
        TaskNotification(S, at(5), task_id="t-1", status="completed"),
    ).finish()
    session = run.one("invoke_agent claude-code")
    assert session.error is None and (session.start_ns, session.end_ns) == (at(0), at(5))
    assert run.one("task local_bash").parent_span_id == session.span_id


def test_an_interrupted_turns_zero_usage_takes_its_model_calls_sum():
    """Claude Code's result of an interrupted turn says 0 for every count: the turn and the
    session carry what its model calls reported instead, as the totals count them. A result
    that reports tokens is kept as it is."""
    run = Run().feed(
        call(0, "msg_1", usage=anth(100, 33000, 120, 2)),
        result(10, usage=anth(0, 0, 0, 0), is_error=True, subtype="error_during_execution"),
        call(20, "msg_2", usage=anth(5, 0, 0, 1)),
        result(30, usage=anth(7, 0, 0, 3)),
    ).finish()
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    session = run.one("invoke_agent claude-code")
    assert (t1.attributes["gen_ai.usage.input_tokens"], t1.attributes["gen_ai.usage.output_tokens"]) == (33220, 2)
    assert (t2.attributes["gen_ai.usage.input_tokens"], t2.attributes["gen_ai.usage.output_tokens"]) == (7, 3)
    assert (session.attributes["gen_ai.usage.input_tokens"], session.attributes["gen_ai.usage.output_tokens"]) == (33227, 5)


def test_a_cumulative_cost_that_falls_keeps_the_previous_value():
    """Claude Code's cost is cumulative; an interrupted turn's result says 0 (and 0 tokens,
    while its call reported 6): the session keeps what the run had cost (not $0), and the
    turn's own cost is unknown, not 0."""
    run = Run().feed(
        call(0, "msg_1", usage=anth(10, 0, 0, 2)),
        result(10, usage=anth(10, 0, 0, 2), total_cost_usd=0.0123),
        call(20, "msg_2", usage=anth(5, 0, 0, 1)),
        result(30, usage=anth(0, 0, 0, 0), total_cost_usd=0.0, is_error=True),
    ).finish()
    t2, session = run.one("turn 2"), run.one("invoke_agent claude-code")
    assert "turn.cost_usd" not in t2.attributes
    assert session.attributes["result.total_cost_usd"] == 0.0123 == session.attributes["session.cost_usd"]


def test_the_sessions_ended_are_remembered_within_the_state_bound():
    """Each ended session is remembered (late lines ignored, ``replay``'s next file goes on with
    it), by an id the stream chose: sessions of 60,000-character ids are not all kept."""
    from otelbridge.tracker.base import RECENT_BYTES

    run = Run()
    ids = [f"{i:05d}" + "s" * 60_000 for i in range(100)]
    for i, sid in enumerate(ids):
        run.feed(SessionStarted(sid, at(i), agent_name="claude-code"),
                 TurnResult(sid, at(i), is_error=False, final=True))
    ended = run.tracker.ended
    assert 0 < len(ended) < len(ids) and ended.bytes <= RECENT_BYTES
    assert ids[-1] in ended and ids[0] not in ended  # the newest kept, the oldest let go
    assert ended[ids[-1]][:2] == (ids[-1], run.named("invoke_agent claude-code")[-1].trace_id)


def test_a_turn_cut_off_before_the_first_result_counts_in_the_session():
    """Caudra's next run began before run 1's result: turn 1 carries what its model call
    reported, and the session its turns' sum, as the totals count them, though no result had
    come when turn 1 was cut off."""
    run = Run().feed(
        TurnStarted(S, at(0), run_id="1", automatic=False, task_events=0),
        call(10, "msg_1", usage=anth(10, 0, 0, 1)),
        TurnStarted(S, at(30), run_id="2", automatic=True, task_events=0),
        call(40, "msg_2", usage=anth(20, 0, 0, 2)),
        result(60, run_id="2", usage=anth(20, 0, 0, 2)),
    ).finish()
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    session = run.one("invoke_agent claude-code")
    tokens = lambda r: (r.attributes["gen_ai.usage.input_tokens"], r.attributes["gen_ai.usage.output_tokens"])
    assert (tokens(t1), tokens(t2), tokens(session)) == ((10, 1), (20, 2), (30, 3))
    assert t1.error_type == "incomplete"


@pytest.mark.parametrize("subtype", ["ok", "OK", "Success", "success_with_warnings", "succeeded", "okay",
                                     "completed", " success"])
def test_an_error_result_named_ok_is_described_as_an_error_not_as_ok(subtype):
    """``is_error: true`` with a subtype that says success (``ok``): the turn and the session
    are ERROR typed ``result_error``, so no view shows a failed row as ``ok``."""
    run = Run().feed(call(0, "msg_1"), result(10, is_error=True, subtype=subtype)).finish()
    for name in ("turn 1", "invoke_agent claude-code"):
        rec = run.one(name)
        assert (rec.error, rec.error_type) == ("result is_error", "result_error"), name


@pytest.mark.parametrize("kw, interrupted", [
    ({"subtype": "interrupted", "stop_reason": "interrupted"}, True),  # milk's user stop
    ({"subtype": "success", "stop_reason": "interrupted"}, True),
    ({"subtype": "success", "stop_reason": "end_turn"}, False),
    ({"subtype": "error_during_execution", "is_error": True, "stop_reason": "interrupted"}, False),
])
def test_a_tool_open_at_an_interrupted_result_is_interrupted_not_failed(kw, interrupted):
    """ADR-0050: ``interrupted`` is no error subtype; the tool the stop cut ends with the turn,
    with an ``interrupted`` event; a turn that ended otherwise leaves it ERROR ``incomplete``."""
    run = Run().feed(
        SessionStarted(S, at(0), agent_name="coder", provider="local", model="qwen"),
        call(1000, "m1", tools=[ToolCall("t1", "bash", '{"command":"go test ./..."}')]),
        result(30050, num_turns=1, duration_ms=30050, **kw),
    ).finish()
    tool = run.one("execute_tool bash")
    assert (tool.start_ns, tool.end_ns) == (at(1000), at(30050))
    if interrupted:
        assert (tool.error, tool.error_type) == (None, None)
        assert [(e.name, e.time_ns) for e in tool.events] == [("interrupted", at(30050))]
        assert run.one("turn 1").error is None
    else:
        assert (tool.error, tool.error_type) == ("no tool_result before the turn's result", "incomplete")
        assert tool.events == []


@pytest.mark.parametrize("seqs, events", [
    ((0, 2, 1, 3, 4), [(1, 2, "missing"), (3, 1, "reordered")]),  # a swapped pair: nothing lost
    ((0, 1, 4, 2, 3, 5), [(2, 4, "missing"), (5, 2, "reordered"), (5, 3, "reordered")]),
    ((0, 1, 2, 3), []),
])
def test_milk_seq_a_late_line_does_not_make_the_next_one_missing(seqs, events):
    """ADR-0050: ``seq`` rises by one a line; a line below the highest seen is late, and the
    one after the highest is expected next."""
    run = Run().feed(SessionStarted(S, at(0), agent_name="coder", provider="local", model="qwen"),
                     *(LineSeq(S, at(i), seq=n) for i, n in enumerate(seqs))).finish()
    gaps = [e for e in run.one("invoke_agent coder").events if e.name == "seq_gap"]
    assert [(e.attributes["seq.expected"], e.attributes["seq.received"], e.attributes["seq.kind"])
            for e in gaps] == events
    assert run.stats.seq_gaps == len(events)


@pytest.mark.parametrize("active", [0, 1, None])
def test_a_background_sub_agent_ends_at_a_result_that_says_no_background_task_is_active(active):
    """Caudra answers a background ``task`` call at launch and prints no notification: its
    next result's ``background_active: 0`` says the sub-agent is done (ended at its last line,
    no error); a count above 0, or none, leaves it open to the end of input."""
    run = Run().feed(
        SessionStarted(S, at(0), agent_name="caudra", provider="anthropic", model="m-1"),
        call(1000, "m1", tools=[ToolCall("tu_t", "task", '{"background":true}')]),
        ToolResult(S, at(1500), tool_use_id="tu_t", content="started implement-x"),
        call(2000, "m2"),
        result(2500, subtype="success", duration_ms=2500, background_active=1),
        call(5000, "s1", ptu="tu_t", model="m-2"),
        call(9000, "s2", ptu="tu_t", model="m-2"),
        result(12000, subtype="success", duration_ms=2000, background_active=active),
    )
    agents = [r for r in run.records if r.name.startswith("invoke_agent") and r.parent_span_id]
    if active == 0:
        (agent,) = agents  # emitted at the result, before the end of input
        assert (agent.error, agent.end_ns) == (None, at(9000))
        assert agent.parent_span_id == run.one("execute_tool task").span_id
    else:
        assert agents == []
        run.finish()
        agent = next(r for r in run.records if r.name.startswith("invoke_agent") and r.parent_span_id)
        assert agent.error == "no terminal state at end of input"


def test_a_sub_agent_an_interrupted_result_cut_ends_with_it_interrupted_not_failed():
    """milk: the user stops a turn whose ``task`` tool runs a nested agent, itself in a tool:
    the tool, the agent and the agent's tool end at the result with ``interrupted``, no error."""
    run = Run().feed(
        SessionStarted(S, at(0), agent_name="coder", provider="local", model="qwen"),
        call(1000, "m1", tools=[ToolCall("t1", "task", '{"prompt":"test it"}')]),
        call(2000, "s1", ptu="t1", tools=[ToolCall("t2", "bash", '{"command":"go test"}')]),
        result(9200, subtype="interrupted", stop_reason="interrupted", duration_ms=9200),
    ).finish()
    for name in ("execute_tool task", "invoke_agent subagent", "execute_tool bash"):
        rec = run.one(name)
        assert (rec.error, rec.error_type, rec.end_ns) == (None, None, at(9200)), name
        assert [(e.name, e.time_ns) for e in rec.events] == [("interrupted", at(9200))], name
    agent = run.one("invoke_agent subagent")
    assert agent.parent_span_id == run.one("execute_tool task").span_id
    (inner,) = [r for r in run.named("chat m-1") if r.parent_span_id == agent.span_id]
    assert run.one("execute_tool bash").parent_span_id == inner.span_id


def test_a_two_call_turn_s_first_call_held_for_its_output_goes_out_after_the_hold_without_a_result():
    """2.1.27x prints a turn's result after the background work it started: the first call,
    held for the result that would tell its output, goes out when the hold is over (its
    lines' count); a call whose lines give no input counts (milk's) is not held at all."""
    from otelbridge.tracker.calls import FIRST_CALL_HOLD_S

    from .harness import Timers

    timers = Timers()
    run = Run(call_later=timers).feed(
        SessionStarted(S, at(0), agent_name="claude-code", provider="anthropic", model="m-1"),
        call(1000, "msg_1", usage=anth(3, 100, 20, 4), tools=[ToolCall("tu_w", "Workflow")]),
        ToolResult(S, at(1100), tool_use_id="tu_w", content="started"),
        call(1500, "msg_2", usage=anth(2, 120, 0, 1)),
    )
    assert run.named("chat m-1") == []  # held: the result could tell its output
    assert [t.delay for t in timers.pending if t.delay == FIRST_CALL_HOLD_S] == [FIRST_CALL_HOLD_S]
    timers.fire()
    (first,) = run.named("chat m-1")
    assert (first.attributes["gen_ai.response.id"], first.attributes["gen_ai.usage.output_tokens"]) == ("msg_1", 4)
    # milk: no usage on its lines, nothing to split: the first call goes out when the second starts
    milk = Run(call_later=Timers()).feed(
        SessionStarted(S, at(0), agent_name="coder", provider="local", model="qwen"),
        call(1000, "m1", tools=[ToolCall("t1", "bash")]),
        ToolResult(S, at(1100), tool_use_id="t1", content="ok"),
        call(1500, "m2"),
    )
    assert [r.attributes["gen_ai.response.id"] for r in milk.named("chat m-1")] == ["m1"]
