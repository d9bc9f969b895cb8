"""Turns, tasks and the pending clock by the contract's rules (SPAN-MODEL.md "Turns", "Tasks",
"Time"), with events as the decoder makes them from the protocol's lines."""

from __future__ import annotations

from otelbridge.clock import WAIT_NS, Clock
from otelbridge.events import (
    SessionStarted,
    StreamTime,
    TaskNotification,
    TaskStarted,
    TaskUpdated,
    ToolCall,
    ToolResult,
    TurnResult,
)
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Tracker
from otelbridge.tracker.sessions import NO_RESULT
from tests.tracker.harness import Timers
from tests.tracker.test_sessions import MS, S, Run, at, call, result

WALL = 1_800_000_000 * 10**9


def init(ms, model="m-1", **kw):
    return SessionStarted(S, at(ms) if ms is not None else None, agent_name="claude-code",
                          model=model, **kw)


def test_three_inits_without_results_wait_and_only_the_open_turn_is_incomplete():
    run = Run().feed(
        init(0), call(100, "msg_1"),
        init(1_000), call(1_100, "msg_2"),  # woken by a task notification
        init(2_000), call(2_100, "msg_3"),
    ).finish()
    t1, t2, t3 = run.one("turn 1"), run.one("turn 2"), run.one("turn 3")
    # closed by the next init, no result by the session's end: end at the next turn's start
    assert (t1.start_ns, t1.end_ns) == (at(0), at(1_000)) and t1.error is None
    assert (t2.start_ns, t2.end_ns) == (at(1_000), at(2_000)) and t2.error is None
    assert t1.attributes["turn.result"] is False and t2.attributes["turn.result"] is False
    assert t3.error == NO_RESULT and t3.error_type == "incomplete"
    chats = {r.attributes["gen_ai.response.id"]: r for r in run.records if r.name.startswith("chat")}
    assert [chats[m].parent_span_id for m in ("msg_1", "msg_2", "msg_3")] == [t1.span_id, t2.span_id, t3.span_id]


def test_a_result_pairs_with_the_oldest_turn_without_one():
    run = Run().feed(
        init(0), call(100, "msg_1"),
        init(5_000), call(5_100, "msg_2"),
        result(6_000, duration_ms=700, result_index=3),  # turn 1's, deferred
        result(6_001, duration_ms=900, result_index=4),  # turn 2's, its own turn is open
    ).finish()
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    assert (t1.start_ns, t1.end_ns) == (at(0), at(700))  # start + duration_ms
    assert (t2.start_ns, t2.end_ns) == (at(5_000), at(6_001))
    # result_index is recorded, not used to pair (a resumed session need not count from 0)
    assert (t1.attributes["turn.result_index"], t2.attributes["turn.result_index"]) == (3, 4)
    assert t1.error is t2.error is None


def test_older_streams_open_a_turn_at_the_first_top_level_line_after_a_result():
    run = Run().feed(
        init(0), call(100, "msg_1"), result(200, duration_ms=200),
        call(300, "msg_2"), result(400, duration_ms=100),
    ).finish()
    t2 = run.one("turn 2")
    assert (t2.start_ns, t2.end_ns) == (at(300), at(400))


def test_a_mid_session_init_that_changes_model_version_or_cwd():
    run = Run().feed(
        init(0, version="2.1.270", cwd="/a"), result(10),
        init(20, model="m-2", version="2.1.271", cwd="/b"), result(30),
    ).finish()
    session = run.one("invoke_agent claude-code")
    assert session.attributes["gen_ai.request.model"] == "m-1"  # the first init's
    (changed,) = [e for e in session.events if e.name == "session.changed"]
    assert changed.time_ns == at(20)
    assert changed.attributes == {"gen_ai.request.model": "m-2", "gen_ai.agent.version": "2.1.271",
                                  "session.cwd_changed": True}  # the path itself never leaves
    assert "session.cwd" not in session.attributes
    assert run.one("turn 2").attributes["gen_ai.request.model"] == "m-2"
    assert run.one("turn 1").attributes["gen_ai.request.model"] == "m-1"  # every turn: its own


def test_a_turn_an_older_stream_opens_carries_the_sessions_model():
    run = Run().feed(init(0), call(100, "msg_1"), result(200), call(300, "msg_2"), result(400)).finish()
    assert [run.one(f"turn {n}").attributes["gen_ai.request.model"] for n in (1, 2)] == ["m-1", "m-1"]


def test_a_foreground_task_owned_by_a_subagent_is_its_tool_call():
    run = Run().feed(
        init(0), call(100, "msg_1", tools=[ToolCall("tu_b", "Bash")]),
        TaskStarted(S, at(110), task_id="t1", tool_use_id="tu_b", task_type="local_bash",
                    description="sleep 1", owned_by_subagent=True, is_backgrounded=False),
        TaskNotification(S, at(1_100), task_id="t1", tool_use_id="tu_b", status="completed"),
        ToolResult(S, at(1_120), tool_use_id="tu_b"),
        result(1_200),
    ).finish()
    assert not [r for r in run.records if r.name.startswith("task ")]  # no second span
    tool = run.one("execute_tool Bash")
    assert (tool.start_ns, tool.end_ns) == (at(100), at(1_120))
    assert tool.attributes["task.id"] == "t1" and tool.attributes["task.type"] == "local_bash"
    assert tool.attributes["task.owned_by_subagent"] is True
    assert tool.attributes["task.status"] == "completed"


def test_a_notification_for_a_task_never_started_is_a_zero_length_span():
    run = Run().feed(
        TaskNotification(S, at(50), task_id="old", status="completed"),  # a previous process's
        TaskNotification(S, at(60), task_id="older", status="completed"),
        init(100), result(200),
    ).finish()
    session = run.one("invoke_agent claude-code")
    spans = run.named("task notification")
    assert [(r.start_ns, r.end_ns) for r in spans] == [(at(50), at(50)), (at(60), at(60))]
    assert all(r.parent_span_id == session.span_id for r in spans)


def test_a_background_task_starts_no_earlier_than_its_tool_call():
    run = Run().feed(
        init(0), call(100, "msg_1", tools=[ToolCall("tu_bg", "Bash")]),
        TaskStarted(S, None, task_id="bg", tool_use_id="tu_bg", task_type="local_bash",
                    is_backgrounded=True),
        ToolResult(S, at(150), tool_use_id="tu_bg"),
        result(300),
        TaskUpdated(S, None, task_id="bg", status="completed", end_time_ns=at(5_000)),
        TaskNotification(S, None, task_id="bg", status="completed"),
    ).finish()
    task, tool = run.one("task local_bash"), run.one("execute_tool Bash")
    assert task.parent_span_id == tool.span_id
    assert task.start_ns == at(100) and task.end_ns == at(5_000)


# ------------------------------------------------------------------ the pending clock


def tracker(mode, wall, timers=None):
    records = []
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock(mode, wall=wall), stats=Stats(),
                  call_later=timers)
    return Tracker(ctx), records


def test_replay_holds_spans_until_the_first_timestamp_and_dates_earlier_lines_with_it():
    """A resumed session: a stale notification, init and a ``num_turns: 0`` result carry no
    timestamp; the first timestamp comes later."""
    tr, records = tracker("stream", lambda: WALL)
    tr.handle(TaskNotification(S, None, task_id="stale", status="completed"))
    tr.handle(init(None))
    tr.handle(TurnResult(S, None, num_turns=0, duration_ms=0))
    assert records == []  # held: the clock is pending
    tr.handle(init(None))
    tr.handle(call(1_000, "msg_1"))  # the first timestamp
    assert [r.name for r in records] == ["task notification", "turn 1"]
    assert all(r.start_ns == r.end_ns == at(1_000) for r in records)
    tr.handle(result(1_500, duration_ms=500))
    tr.finish()
    session = [r for r in records if r.name == "invoke_agent claude-code"][0]
    assert session.start_ns == at(1_000) and session.end_ns == at(1_500)
    assert all(r.start_ns >= at(1_000) for r in records)


def test_a_session_event_before_the_first_timestamp_moves_to_it_once():
    """A second ``init`` naming another model, before any timestamp: its ``session.changed``
    event is dated with the pending lines and moves with them when the clock settles — once
    (it moved twice: a whole shift before the session's start, where the span builder put it)."""
    tr, records = tracker("stream", lambda: WALL)
    tr.handle(init(None))
    tr.handle(TurnResult(S, None, num_turns=1, duration_ms=10))
    tr.handle(init(None, model="m-2"))
    tr.handle(call(1_000, "msg_2", model="m-2"))  # the first timestamp
    tr.handle(result(1_500, duration_ms=500))
    tr.finish()
    (session,) = [r for r in records if r.name == "invoke_agent claude-code"]
    assert [(e.name, e.time_ns) for e in session.events] == [("session.changed", at(1_000))]


def test_live_auto_waits_one_second_then_settles_on_the_wall_clock():
    now = [WALL]
    timers = Timers()
    tr, records = tracker("auto", lambda: now[0], timers)
    tr.handle(TaskNotification(S, None, task_id="stale", status="completed"))
    assert records == [] and [t.delay for t in timers.pending] == [WAIT_NS / 1e9]
    now[0] += WAIT_NS  # a second of wall time, no timestamp
    timers.fire()
    assert [(r.name, r.start_ns) for r in records] == [("task notification", WALL)]
    tr.handle(TaskNotification(S, None, task_id="later", status="completed"))
    assert records[-1].start_ns == WALL + WAIT_NS  # settled: the wall clock at arrival


def test_live_auto_whose_timer_fires_before_the_wait_is_over_checks_again():
    """The loop's timer may fire a little early, and the wait counts from the first dated line,
    which comes after the timer was set: the held records still go out once the second has
    passed, with no further line (an agent thinking for minutes sends none)."""
    now = [WALL]
    timers = Timers()
    tr, records = tracker("auto", lambda: now[0], timers)
    tr.handle(TaskNotification(S, None, task_id="stale", status="completed"))
    now[0] += WAIT_NS - 2_000_000  # the timer fires 2 ms early
    timers.fire()
    assert records == [] and [round(t.delay, 4) for t in timers.pending] == [0.003]  # 2 ms + 1
    now[0] += 3_000_000
    timers.fire()
    assert [(r.name, r.start_ns) for r in records] == [("task notification", WALL)]
    assert timers.pending == []


def test_live_auto_with_a_recording_piped_in_moves_to_its_first_timestamp():
    tr, records = tracker("auto", lambda: WALL, Timers())
    tr.handle(TaskNotification(S, None, task_id="stale", status="completed"))
    tr.handle(StreamTime(S, at(0)))  # far from the wall clock: the stream clock
    assert [(r.name, r.start_ns) for r in records] == [("task notification", at(0))]


def test_live_auto_with_timestamps_near_the_wall_clock_dates_lines_in_the_streams_frame():
    """A live CLI's first timestamp 2 ms off its arrival: the pending line moves by those
    2 ms, so it lies before that line in the stream's own frame."""
    tr, records = tracker("auto", lambda: WALL, Timers())
    tr.handle(TaskNotification(S, None, task_id="stale", status="completed"))
    tr.handle(StreamTime(S, WALL + 2 * MS))
    assert [(r.name, r.start_ns) for r in records] == [("task notification", WALL + 2 * MS)]


def test_a_tool_of_a_turn_closed_by_init_still_ends_at_its_result():
    run = Run().feed(
        init(0), call(100, "msg_1", tools=[ToolCall("tu_1", "Bash")]),
        init(1_000),
        ToolResult(S, at(1_500), tool_use_id="tu_1"),
        result(2_000, duration_ms=1_600), result(2_100, duration_ms=500),
    ).finish()
    tool, t1 = run.one("execute_tool Bash"), run.one("turn 1")
    assert (tool.start_ns, tool.end_ns) == (at(100), at(1_500)) and tool.error is None
    assert (t1.start_ns, t1.end_ns) == (at(0), at(1_600))  # deferred: start + duration_ms


def test_the_main_agents_foreground_bash_is_its_tool_call_too():
    """As allbin/claudecli-go's task_notification_fold recording (2.1.280) prints a foreground
    Bash: task_started (is_backgrounded false, no owned_by_subagent), task_notification, then
    the tool_result."""
    run = Run().feed(
        init(0), call(100, "msg_1", tools=[ToolCall("tu_fg", "Bash")]),
        TaskStarted(S, None, task_id="fg", tool_use_id="tu_fg", task_type="local_bash",
                    description="sleep 12", is_backgrounded=False),
        TaskNotification(S, None, task_id="fg", tool_use_id="tu_fg", status="completed"),
        ToolResult(S, at(12_100), tool_use_id="tu_fg"),
        result(12_200),
    ).finish()
    assert not [r for r in run.records if r.name.startswith("task ")]
    tool = run.one("execute_tool Bash")
    assert tool.attributes["task.id"] == "fg" and tool.attributes["task.status"] == "completed"
    assert "task.owned_by_subagent" not in tool.attributes


def test_a_failed_foreground_tasks_exit_code_is_its_tool_calls_status():
    """The notification comes before the tool's result: the exit code its summary reports is
    the status text of the ``execute_tool`` span; the command in the summary is not."""
    run = Run().feed(
        init(0), call(100, "msg_1", tools=[ToolCall("tu_fg", "Bash")]),
        TaskStarted(S, at(110), task_id="fg", tool_use_id="tu_fg", task_type="local_bash",
                    description="make deploy", is_backgrounded=False),
        TaskNotification(S, at(900), task_id="fg", tool_use_id="tu_fg", status="failed",
                         summary='Command "make deploy TOKEN=x" failed with exit code 2'),
        ToolResult(S, at(1_000), tool_use_id="tu_fg", is_error=True, content="Exit code 2"),
        result(1_100),
    ).finish()
    tool = run.one("execute_tool Bash")
    assert tool.error == "task failed with exit code 2" and tool.error_type == "tool_error"
    assert tool.attributes["task.status"] == "failed"
    assert "make deploy" not in repr(tool)


def test_a_foreground_task_whose_tool_answers_first_becomes_a_span_under_it():
    run = Run().feed(
        init(0), call(100, "msg_1", tools=[ToolCall("tu_mv", "Bash")]),
        TaskStarted(S, at(110), task_id="mv", tool_use_id="tu_mv", task_type="local_bash",
                    is_backgrounded=False),
        ToolResult(S, at(2_000), tool_use_id="tu_mv"),  # moved to the background
        result(2_100),
        TaskNotification(S, at(9_000), task_id="mv", tool_use_id="tu_mv", status="completed"),
    ).finish()
    tool, task = run.one("execute_tool Bash"), run.one("task local_bash")
    assert "task.id" not in tool.attributes and tool.end_ns == at(2_000)
    assert task.parent_span_id == tool.span_id
    assert (task.start_ns, task.end_ns) == (at(100), at(9_000))
    assert run.stats.duplicate_notifications == 0


def test_session_events_held_for_the_session_span_move_with_the_clock():
    from otelbridge.events import GoalEvent

    tr, records = tracker("stream", lambda: WALL)
    tr.handle(GoalEvent(S, None, kind="evaluating"))  # Caudra goal event, no timestamp
    tr.handle(init(None))
    tr.handle(result(500))  # the first timestamp
    tr.finish()
    (session,) = [r for r in records if r.name == "invoke_agent claude-code"]
    (goal,) = [e for e in session.events if e.name == "goal.evaluating"]
    assert goal.time_ns == at(500)
