"""The state budget: one bound on everything the tracker holds open. When it is full the least
recently active items are ended early (interrupted, ``otelbridge.reason``), children with their
parents, every span once, counted in ``stats.state_budget_ended`` and named on the stats line."""

from __future__ import annotations

from otelbridge.clock import Clock
from otelbridge.events import ModelCall, SessionStarted, ToolCall, ToolResult, TurnResult, WorkflowAgent, WorkflowProgress
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import REASON_STATE_BUDGET, Context, StateBudget, Tracker
from otelbridge.tracker.budget import ITEM_BYTES, SESSION_BYTES
from otelbridge.tracker.sessions import SessionTracker
from otelbridge.tracker.workflows import WorkflowTracker

T0 = 1_790_000_000_000_000_000  # epoch ns
MS = 1_000_000


def at(ms: int) -> int:
    return T0 + ms * MS


def make(part=SessionTracker, clock=None):
    records, stats = [], Stats()
    ctx = Context(emit=records.append, ids=Ids(deterministic=True),
                  clock=clock or Clock("stream", wall=lambda: T0), stats=stats)
    tracker = Tracker(ctx, [part(ctx)])
    return tracker, ctx, records, stats


def cut(rec) -> bool:
    """``rec`` carries the budget's ``interrupted`` event (at its end)."""
    return any(ev.name == "interrupted" and ev.attributes == {"otelbridge.reason": REASON_STATE_BUDGET}
               and ev.time_ns == rec.end_ns for ev in rec.events)


def inside(child, parent) -> None:
    assert child.parent_span_id == parent.span_id and child.trace_id == parent.trace_id
    assert parent.start_ns <= child.start_ns <= child.end_ns <= parent.end_ns, (child.name, parent.name)


def test_the_budget_ends_the_least_recently_active_items_first_until_within_its_limit():
    ended = []
    budget = StateBudget(Stats(), limit=25)
    for key in "abc":
        budget.charge(key, 10, lambda reason, k=key: ended.append((k, reason)))
    budget.touch("a")  # active again: now the most recent
    budget.charge("d", 10, lambda reason: ended.append(("d", reason)))
    assert budget.used == 40
    assert budget.settle() == 2
    assert ended == [("b", REASON_STATE_BUDGET), ("c", REASON_STATE_BUDGET)]
    assert budget.used == 20 and len(budget) == 2 and budget.oldest() == "a"
    budget.charge("a", 4, lambda reason: None)  # re-weighed, not added
    assert budget.used == 14 and budget.reweigh("a", 4) and not budget.reweigh("never charged", 9)
    assert budget.oldest() == "d" and budget.reweigh("d", 6, touch=False) and budget.oldest() == "d"
    budget.release("d")
    budget.release("never charged")
    assert budget.used == 4 and len(budget) == 1 and budget.settle() == 0


def test_a_full_budget_ends_the_least_recently_active_session_with_all_it_holds():
    tracker, ctx, records, stats = make()

    def session(i: int) -> None:
        tracker.handle(ModelCall(f"s{i}", at(10 * i), message_id=f"m{i}",
                                 tool_calls=[ToolCall(f"tu{i}", "Bash", '{"command": "ls"}')]))
        tracker.handle(ModelCall(f"s{i}", at(10 * i + 5), message_id=f"m{i}"))

    session(0)
    session(1)
    ctx.budget.limit = ctx.budget.used + 10  # room for two sessions like these
    # s0 and its model call are active again; its tool (unanswered since 0 ms) is not
    tracker.handle(ModelCall("s0", at(20), message_id="m0"))
    assert records == []
    session(2)
    # the least recently active first: s0's tool, then all s1 holds and s1 itself (its chat,
    # tool, turn and session span), until s2 fits: ended early, each once, each counted
    (tool0,) = [r for r in records if r.attributes["gen_ai.conversation.id"] == "s0"]
    assert tool0.attributes["gen_ai.tool.call.id"] == "tu0" and records[0] is tool0
    assert (tool0.start_ns, tool0.end_ns, tool0.error_type) == (at(0), at(20), "incomplete")
    records.remove(tool0)
    assert sorted(r.name for r in records) == ["chat model", "execute_tool Bash", "invoke_agent claude-code",
                                               "turn 1"]
    assert {r.attributes["gen_ai.conversation.id"] for r in records} == {"s1"}
    assert cut(tool0) and all(cut(r) for r in records) and stats.state_budget_ended == 5
    by = {r.name: r for r in records}
    tool, chat, turn, sess = (by["execute_tool Bash"], by["chat model"], by["turn 1"],
                              by["invoke_agent claude-code"])
    assert (tool.error_type, tool.error) == ("incomplete", REASON_STATE_BUDGET)
    assert tool.parent_span_id == chat.span_id and (tool.start_ns, tool.end_ns) == (at(10), at(15))
    inside(chat, turn)
    inside(turn, sess)
    assert (sess.start_ns, sess.end_ns, sess.error_type) == (at(10), at(15), "incomplete")
    assert ctx.budget.used <= ctx.budget.limit
    # late lines of the ended session are counted, not a new session
    tracker.handle(ToolResult("s1", at(40), tool_use_id="tu1"))
    assert stats.late_events_ignored == 1
    tracker.finish()
    rest = records[4:]
    assert sorted({r.attributes["gen_ai.conversation.id"] for r in rest}) == ["s0", "s2"]
    assert not any(cut(r) for r in rest) and stats.state_budget_ended == 5
    assert len(rest) == 7  # s0: chat, turn, session; s2: chat, tool, turn, session
    assert len({r.span_id for r in records + [tool0]}) == 12
    assert len(ctx.budget) == 0 and ctx.budget.used == 0


def test_a_session_full_of_unanswered_tools_loses_its_oldest_tools_not_itself():
    tracker, ctx, records, stats = make()
    tracker.handle(SessionStarted("s", at(0), model="claude-opus-4-8"))
    for i in range(4):
        tracker.handle(ModelCall("s", at(i + 1), message_id=f"m{i}", tool_calls=[ToolCall(f"tu{i}", "Read", "x" * 100)]))
    ctx.budget.limit = ctx.budget.used + 10
    for i in range(4, 7):
        tracker.handle(ModelCall("s", at(i + 1), message_id=f"m{i}", tool_calls=[ToolCall(f"tu{i}", "Read", "x" * 100)]))
    ended = [r for r in records if cut(r)]
    # a chat ends when its scope's next call starts (not the budget's doing); the oldest tools go:
    # each new call adds a tool and a remembered tool id (REF_BYTES) to the session's weight
    assert [r.attributes["gen_ai.tool.call.id"] for r in ended] == ["tu0", "tu1", "tu2", "tu3"]
    assert [r.end_ns for r in ended] == [at(5), at(5), at(6), at(7)]  # the session's last activity then
    assert all(not cut(r) for r in records if r.name == "chat model")
    assert stats.state_budget_ended == 4
    tracker.handle(ToolResult("s", at(20), tool_use_id="tu5"))
    tracker.handle(TurnResult("s", at(21)))
    assert any(r.name == "execute_tool Read" and r.attributes["gen_ai.tool.call.id"] == "tu5" and r.error is None
               for r in records)
    tracker.finish()
    (sess,) = [r for r in records if r.name.startswith("invoke_agent")]
    assert sess.error is None and not cut(sess) and sess.end_ns == at(21)
    assert stats.state_budget_ended == 4


def test_ending_a_tool_ends_the_subagent_it_started_first_inside_it():
    tracker, ctx, records, stats = make()
    tracker.handle(ModelCall("s", at(0), message_id="m1", tool_calls=[ToolCall("tu", "Agent", subagent_type="x")]))
    tracker.handle(ModelCall("s", at(3), message_id="m2", parent_tool_use_id="tu"))
    chat_m1 = ITEM_BYTES + len("m1")  # the chat's weight: its id (no model, no text)
    ctx.budget.limit = ctx.budget.used - chat_m1 - 1  # the chat m1 and then the tool must go
    tracker.handle(ModelCall("s", at(5), message_id="m2", parent_tool_use_id="tu"))
    by = {r.name: r for r in records}
    assert sorted(by) == ["chat model", "execute_tool Agent", "invoke_agent x"]
    assert len(records) == 4  # both chats
    tool, agent = by["execute_tool Agent"], by["invoke_agent x"]
    inside(agent, tool)
    (m2,) = [r for r in records if r.attributes.get("gen_ai.response.id") == "m2"]
    inside(m2, agent)
    assert (agent.end_ns, tool.end_ns) == (at(5), at(5))
    assert all(cut(r) for r in records) and stats.state_budget_ended == 4


def test_a_run_ended_by_the_budget_ends_its_agents_inside_it():
    tracker, ctx, records, stats = make(WorkflowTracker)

    def run(task: str, t: int) -> None:
        agents = [WorkflowAgent(i, state="running", started_at=at(t + i) // MS, phase_index=1, phase_title="P")
                  for i in range(3)]
        tracker.handle(WorkflowProgress("s", at(t + 5), task_id=task, agents=agents))

    run("a", 0)
    ctx.budget.limit = ctx.budget.used + 10
    run("b", 10)
    (root,) = [r for r in records if r.name.startswith("invoke_workflow")]
    assert root.attributes["workflow.task_id"] == "a" and root.attributes["workflow.status"] == "incomplete"
    (phase,) = [r for r in records if r.name == "phase P"]
    agents = [r for r in records if r.name.startswith("invoke_agent")]
    assert len(agents) == 3 and len(records) == 5
    inside(phase, root)
    for a in agents:
        inside(a, phase)
        assert a.error_type == "incomplete"
    assert all(cut(r) for r in records) and stats.state_budget_ended == 5
    assert ("s", "b") in tracker.parts[0].runs


def test_held_records_settle_the_clock_when_they_are_the_oldest_state():
    """Before the stream's first timestamp finished records are held: when the budget needs
    room they go out on the wall clock (nothing ended early, nothing counted)."""
    wall = at(1_000)
    tracker, ctx, records, stats = make(clock=Clock("auto", wall=lambda: wall))
    tracker.handle(TurnResult("s", None))
    assert records == [] and not ctx.clock.settled
    ctx.budget.limit = ctx.budget.used + ITEM_BYTES  # a chat (ITEM_BYTES + its id) is over by 1
    tracker.handle(ModelCall("s", None, message_id="m"))
    assert ctx.clock.settled
    assert [(r.name, r.end_ns) for r in records] == [("turn 1", wall)]
    assert stats.state_budget_ended == 0


def test_the_stats_line_names_what_the_budget_ended():
    assert "; 7 ended early (state budget)" in Stats(state_budget_ended=7).line()
    assert "state budget" not in Stats().line()


def test_a_sessions_weight_counts_what_it_remembers():
    tracker, ctx, records, stats = make()
    tracker.handle(SessionStarted("s", at(0)))
    before = ctx.budget.used
    assert before >= SESSION_BYTES
    for i in range(10):  # answered tools: their ids are remembered by the session
        tracker.handle(ModelCall("s", at(i + 1), message_id=f"m{i}", tool_calls=[ToolCall(f"t{i}", "Read")]))
        tracker.handle(ToolResult("s", at(i + 1), tool_use_id=f"t{i}"))
    tracker.handle(ModelCall("s", at(20), message_id="m-last"))
    chat = ITEM_BYTES + len("m-last")
    assert ctx.budget.used - chat > before


def test_remembered_closed_ids_are_bounded_by_their_size_too():
    from otelbridge.tracker.base import RECENT_BYTES, REF_BYTES, Recent

    recent = Recent(limit=10_000)
    long_id = 65_536
    for i in range(200):
        recent.add(f"{i:05d}" + "x" * (long_id - 5))
    fit = RECENT_BYTES // (REF_BYTES + long_id)
    assert len(recent) == fit and recent.bytes == fit * (REF_BYTES + long_id)
    assert f"{199:05d}" + "x" * (long_id - 5) in recent and f"{0:05d}" + "x" * (long_id - 5) not in recent
    recent.add(("s", "t"))  # a tuple key: its strings count
    assert recent.bytes <= RECENT_BYTES and ("s", "t") in recent


def test_remembered_ids_and_hints_are_bounded_by_their_size_too():
    from otelbridge.tracker.base import RECENT_BYTES, REF_BYTES, Refs, remember

    hints = Refs()
    remember(hints, "t1", ("Explore", "d" * 1000))
    remember(hints, "t1", ("Explore", "d" * 10))  # replaced: counted once, at its new size
    assert hints.bytes == REF_BYTES + 2 + len("Explore") + 10
    assert hints.pop("t1") == ("Explore", "d" * 10) and hints.bytes == 0 and hints.pop("t1", None) is None
    for i in range(100):
        remember(hints, f"t{i:03d}", (None, "d" * 65_536), cap=10_000)
    fit = RECENT_BYTES // (REF_BYTES + 4 + 65_536)
    assert len(hints) == fit and list(hints)[0] == f"t{100 - fit:03d}" and hints.bytes <= RECENT_BYTES


def test_held_session_events_and_notices_are_let_go_oldest_first_and_counted():
    from otelbridge.events import AutomationNotice, GoalEvent
    from otelbridge.tracker.caudra import CaudraTracker

    tracker, ctx, records, stats = make(CaudraTracker)
    tracker.handle(GoalEvent("s1", at(0), kind="evaluation"))
    tracker.handle(AutomationNotice("s1", at(1), automation="w", fire_id="F1", text="t" * 2000))
    tracker.handle(GoalEvent("s2", at(2), kind="evaluation"))
    ctx.budget.limit = ctx.budget.used  # one more event like it: the oldest (s1's) must go
    tracker.handle(GoalEvent("s2", at(3), kind="evaluation"))
    assert stats.session_events_capped == 1 and ctx.take_session_events("s1") == []
    ctx.budget.limit = ctx.budget.used  # next: the notices waiting for F1
    tracker.handle(GoalEvent("s2", at(4), kind="evaluation"))
    assert stats.session_events_capped == 2 and tracker.parts[0]._notices == {}
    assert [e.time_ns for e in ctx.take_session_events("s2")] == [at(2), at(3), at(4)]
    assert stats.state_budget_ended == 0 and records == []  # let go, not spans ended
