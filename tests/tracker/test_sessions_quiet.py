"""A run that ends while another writes on: a session whose runs all ended ends when another
session's ``init`` comes (``follow`` never reaches the end of its input), and what it writes
after that goes on in a span of its own, linked to it. In-process, on real recordings."""

from __future__ import annotations

import json

from otelbridge import dialects
from otelbridge.clock import Clock
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Tracker

from tests.conftest import EXAMPLES, needs_fixtures
from tests.tracker.recording import CLAUDE, WALL

SESSION = (EXAMPLES / "claude-code-session.jsonl").read_bytes().splitlines(keepends=True)


def _feed(chunks: list[list[bytes]]):
    """The records emitted after each chunk of lines (the last: after ``finish``), and the stats."""
    records, stats = [], Stats()
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("stream", wall=lambda: WALL), stats=stats)
    tracker, decoder = Tracker(ctx), dialects.Decoder(dialects.load(), stats)
    seen = []
    for chunk in chunks:
        for raw in chunk:
            for ev in decoder.decode(raw):
                tracker.handle(ev)
        seen.append(list(records))
    tracker.finish()
    seen.append(list(records))
    return seen, stats


def _sid(lines: list[bytes]) -> str:
    return next(json.loads(l)["session_id"] for l in lines if b'"session_id"' in l)


@needs_fixtures()
def test_a_finished_session_ends_at_the_next_sessions_init():
    """Session A (the example's turns 1–2, both with their results) then session B's ``init``
    (a `claude -p` run after it, in the same file): A's span, with its tokens and cost, goes
    out at B's first line, not at the end of the input."""
    b = (CLAUDE / "custom-agent-2.1.6.jsonl").read_bytes().splitlines(keepends=True)
    assert _sid(SESSION) != _sid(b)
    seen, _ = _feed([SESSION, b[:2], b[2:]])
    a_spans = [r for r in seen[1] if r.name == "invoke_agent claude-code"
               and r.attributes["gen_ai.conversation.id"] == _sid(SESSION)]
    assert not any(r.name == "invoke_agent claude-code" for r in seen[0])  # A is still open
    (a,) = a_spans
    assert a.attributes["session.turns"] == 2 and a.error is None
    last = json.loads(SESSION[-1])
    assert a.attributes["gen_ai.usage.output_tokens"] > 0
    assert a.attributes["result.total_cost_usd"] == last["total_cost_usd"]
    # B's own span at the end of input, in a trace of its own
    (b_span,) = [r for r in seen[-1] if r.attributes.get("gen_ai.conversation.id") == _sid(b)
                 and r.name == "invoke_agent claude-code"]
    assert b_span.trace_id != a.trace_id


@needs_fixtures()
def test_a_session_that_writes_on_after_another_began_goes_on_in_a_span_of_its_own():
    """A's first turn ends (its result, line 28; its background Bash, line 30), B runs whole,
    then A's second turn comes (its lines interleaved with another run's): A's first span
    ended at B's ``init``; the second turn is ``turn 2`` under a span of its own in A's trace,
    linked to the first (``continues``)."""
    b = (CLAUDE / "custom-agent-2.1.6.jsonl").read_bytes().splitlines(keepends=True)
    seen, stats = _feed([SESSION[:30], b, SESSION[30:]])
    sid = _sid(SESSION)
    records = seen[-1]
    first, then = sorted((r for r in records if r.name == "invoke_agent claude-code"
                          and r.attributes["gen_ai.conversation.id"] == sid), key=lambda r: r.start_ns)
    assert first in seen[1]  # it went out at B's init
    assert first.trace_id == then.trace_id and first.span_id != then.span_id
    assert [(l.trace_id, l.span_id, l.attributes) for l in then.links] == [
        (first.trace_id, first.span_id, {"otelbridge.link": "continues"})]
    turns = {r.name: r for r in records if r.name.startswith("turn ") and r.trace_id == first.trace_id}
    assert set(turns) == {"turn 1", "turn 2"}
    assert turns["turn 1"].parent_span_id == first.span_id and turns["turn 2"].parent_span_id == then.span_id
    assert stats.late_events_ignored == 0
    assert len({(r.trace_id, r.span_id) for r in records}) == len(records)  # no span twice


@needs_fixtures()
def test_a_session_with_a_background_task_running_is_not_ended_by_the_next_init():
    """A result came while the session's background Bash still runs (its notification wakes
    a second turn): the run is not over, another session's ``init`` leaves it open."""
    wake = (CLAUDE / "claudecli-go-bg-bash-wake-2.1.280.jsonl").read_bytes().splitlines(keepends=True)
    b = (CLAUDE / "custom-agent-2.1.6.jsonl").read_bytes().splitlines(keepends=True)
    first_result = next(n for n, l in enumerate(wake, 1) if b'"type":"result"' in l)
    seen, _ = _feed([wake[:first_result], b[:2], wake[first_result:]])
    sid = _sid(wake)
    assert not any(r.attributes.get("gen_ai.conversation.id") == sid and r.name == "invoke_agent claude-code"
                   for r in seen[1])
    (session,) = [r for r in seen[-1] if r.attributes.get("gen_ai.conversation.id") == sid
                  and r.name == "invoke_agent claude-code"]
    assert session.attributes["session.turns"] == 2 and not session.links


def _line(**doc) -> bytes:
    return json.dumps(doc).encode() + b"\n"


def _run(sid: str, mid: str, cost: float | None, *, uuid: str, model_usage: bool = True, inp: int = 100,
         out: int = 10) -> list[bytes]:
    """One `claude -p` run of session ``sid``: its init, a model call and its result."""
    result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "duration_ms": 1000,
              "result": "done", "session_id": sid, "uuid": uuid,
              "usage": {"input_tokens": inp, "output_tokens": out}}
    if cost is not None:
        result["total_cost_usd"] = cost
    if model_usage:
        result["modelUsage"] = {"m1": {"inputTokens": inp, "outputTokens": out}}
    return [_line(type="system", subtype="init", session_id=sid, model="m1", claude_code_version="2.1.280",
                  cwd="/repo"),
            _line(type="assistant", session_id=sid, message={
                "id": mid, "model": "m1", "role": "assistant", "content": [{"type": "text", "text": "hi"}],
                "usage": {"input_tokens": inp, "output_tokens": 1}}),
            _line(**result)]


def test_a_span_that_goes_on_keeps_the_run_it_goes_on_from():
    """A runs, B's init ends it, then A writes again: a repeated result of A's (its ``uuid``)
    is known as one, and A's next turn costs the difference from A's last cumulative cost;
    a line of A that shows no run (a notice) makes no error and keeps A's name and model."""
    a1 = _run("A", "a1", 0.10, uuid="ra1")
    b = _run("B", "b1", 0.05, uuid="rb1")
    a2 = _run("A", "a2", 0.25, uuid="ra2")
    notice = _line(type="system", subtype="informational", content="a hook said so", level="info",
                   session_id="A")
    seen, stats = _feed([a1, b, [a1[-1], *a2, notice]])  # (A's first result again, then its next run)
    spans = [r for r in seen[-1] if r.attributes.get("gen_ai.conversation.id") == "A"]
    first, then = sorted((r for r in spans if r.name.startswith("invoke_agent")), key=lambda r: r.start_ns)
    assert stats.duplicate_results == 1
    turns = sorted((r for r in spans if r.name.startswith("turn ")), key=lambda r: r.start_ns)
    assert [t.name for t in turns] == ["turn 1", "turn 2"]
    assert turns[1].attributes["turn.cost_usd"] == 0.15
    assert then.name == first.name == "invoke_agent claude-code"
    assert then.attributes["gen_ai.request.model"] == "m1" and then.attributes["gen_ai.agent.version"] == "2.1.280"
    assert then.error is None and first.error is None
    # a session gone on with no run of its own: its span is no error either
    seen, _ = _feed([a1, b, [notice]])
    then = [r for r in seen[-1] if r.attributes.get("gen_ai.conversation.id") == "A"
            and r.name.startswith("invoke_agent")][-1]
    assert then.links and then.error is None


def test_a_caudra_session_whose_runtime_outlives_its_runs_is_not_ended_by_the_next_init():
    """Caudra's init lists its runtimes: automations fire between runs, under the session
    span, which stays open when another session's init comes."""
    init = _line(type="system", subtype="init", session_id="C", model="m1", cwd="/repo", automations=True)
    result = _line(type="result", subtype="success", is_error=False, num_turns=1, duration_ms=10, result="ok",
                   session_id="C", usage={"input_tokens": 1, "output_tokens": 1})
    turn = _line(type="system", subtype="turn_start", run_id=1, session_id="C")
    fired = _line(type="system", subtype="automation_fired", fire_id="f1", automation="watch", trigger="idle",
                  trigger_index=0, status="completed", queued_at=1_790_000_000_000,
                  started_at=1_790_000_000_100, finished_at=1_790_000_001_000, session_id="C")
    seen, _ = _feed([[init, turn, result], _run("B", "b1", 0.05, uuid="rb1"), [fired]])
    assert not any(r.attributes.get("gen_ai.conversation.id") == "C" and r.name.startswith("invoke_agent")
                   for r in seen[1])
    (session,) = [r for r in seen[-1] if r.name == "invoke_agent caudra"]
    (automation,) = [r for r in seen[-1] if r.name == "automation watch"]
    assert automation.parent_span_id == session.span_id and not session.links


@needs_fixtures()
def test_a_session_whose_workflow_is_in_its_grace_window_ends_once_the_workflow_has():
    """Claude Code 2.1.270 runs a workflow, then the next `claude -p` run begins at once (a
    worker's loop): at its ``init`` the workflow still waits out its grace window, so the first
    session is not ended there; it ends at the first line after the window closed, with its
    cost, not only at the end of the input (which ``follow`` never reaches)."""
    from tests.tracker.harness import Timers

    text = (CLAUDE / "claudecli-go-workflow-phased-2.1.270.jsonl").read_bytes()
    a_lines = text.splitlines(keepends=True)
    b_lines = text.replace(_sid(a_lines).encode(), b"b-session").replace(b"wr4ugqun6", b"wr-b").splitlines(keepends=True)
    records, stats, timers = [], Stats(), Timers()
    ctx = Context(emit=records.append, ids=Ids(True), clock=Clock("stream", wall=lambda: WALL), stats=stats,
                  call_later=timers, grace_s=5.0)
    tracker, decoder = Tracker(ctx), dialects.Decoder(dialects.load(), stats)

    def feed(raw_lines):
        for raw in raw_lines:
            for ev in decoder.decode(raw):
                tracker.handle(ev)

    def sessions():
        return [r for r in records if r.name == "invoke_agent claude-code"]

    feed(a_lines + b_lines[:1])  # A, then B's init
    assert tracker.open_workflows() == 1 and sessions() == []  # A's workflow waits out its window
    assert timers.fire() >= 1 and tracker.open_workflows() == 0
    assert sessions() == []  # (nothing has come since)
    feed(b_lines[1:2])
    (a,) = sessions()
    result = json.loads(a_lines[-1])
    assert a.attributes["gen_ai.conversation.id"] == _sid(a_lines)
    assert a.attributes["result.total_cost_usd"] == result["total_cost_usd"] and a.error is None
