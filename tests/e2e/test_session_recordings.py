"""Every Claude Code and milk recording and our own examples through the pipeline in process (no
process boundary is the point: the stream's bytes of every recording are checked through a real
process in test_conformance), spans at a real OTLP receiver, expectations derived from each
file's own lines."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import session_name, EXAMPLES, FIXTURES, export_in_process, sent
from tests.receivers import HttpReceiver

MS = 1_000_000

RECORDINGS = sorted((FIXTURES / "claude-code").glob("*.jsonl")) + sorted((FIXTURES / "milk").glob("*.jsonl"))
OWN = [EXAMPLES / "claude-code-session.jsonl", EXAMPLES / "milk-session.jsonl", EXAMPLES / "cbc-workflow.jsonl",
       EXAMPLES / "caudra-session-turns.jsonl"]
FILES = RECORDINGS + OWN


def docs(path: Path) -> list[dict]:
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def milk(doc: dict) -> bool:
    return isinstance(doc.get("seq"), int)


class Facts:
    """What a recording says, read from its lines (not from our output)."""

    def __init__(self, path: Path) -> None:
        lines = docs(path)
        self.milk = any(milk(d) for d in lines)
        self.results = []
        #: per result: the usage of its turn's top-level model calls (each message's last line)
        self.calls_usage: list[dict] = []
        #: per result: a notice with prevent_continuation stopped its turn before any model call
        self.stopped: list[bool] = []
        calls: dict[str, dict] = {}
        stopped = False
        for d in lines:
            if d.get("type") == "assistant" and not d.get("parent_tool_use_id"):
                calls[d["message"]["id"]] = d["message"].get("usage") or {}
            if d.get("subtype") == "informational" and d.get("prevent_continuation") is True:
                stopped = True
            if d.get("type") == "result":
                if self.results and d.get("uuid") and d.get("uuid") == self.results[-1].get("uuid"):
                    continue  # a duplicated result
                self.results.append(d)
                self.calls_usage.append(_summed(calls.values()))
                self.stopped.append(stopped and not calls)
                calls, stopped = {}, False
        self.inits = [d for d in lines if d.get("type") == "system" and d.get("subtype") == "init"]
        self.messages: dict[str, str | None] = {}  # message id → parent_tool_use_id
        self.tools: dict[str, tuple[str, str]] = {}  # tool id → (name, message id)
        self.errors: set[str] = set()
        self.answered: set[str] = set()
        self.nested: set[str] = set()
        #: Agent tool id → (input with cache, output) of its sub-agent's last call, which only
        #: the tool's result summary (``tool_use_result.usage``) shows
        self.last_calls: dict[str, tuple[int, int]] = {}
        printed: dict[str, tuple] = {}  # sub-agent → its last printed call's input counts
        for d in lines:
            ptu = d.get("parent_tool_use_id")
            if d.get("type") == "stream_event" and d["event"].get("type") == "message_start":
                self.messages.setdefault(d["event"]["message"]["id"], ptu)
            if d.get("type") == "assistant":
                msg = d["message"]
                self.messages.setdefault(msg["id"], ptu)
                if ptu:
                    self.nested.add(ptu)
                    u = msg.get("usage") or {}
                    printed[ptu] = tuple(u.get(k) for k in _COUNTS if k != "output_tokens")
                for block in msg.get("content", []):
                    if block.get("type") == "tool_use":
                        self.tools[block["id"]] = (block["name"], msg["id"])
            if d.get("type") == "user":
                content = d["message"].get("content")
                blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
                    if isinstance(content, list) else []
                summary_error = isinstance(d.get("tool_use_result"), dict) and d["tool_use_result"].get("is_error") is True
                for b in blocks:
                    self.answered.add(b["tool_use_id"])
                    if b.get("is_error") is True or summary_error:
                        self.errors.add(b["tool_use_id"])
                if ptu and not blocks:
                    self.nested.add(ptu)  # a sub-agent's prompt line
                summary = d.get("tool_use_result")
                if isinstance(summary, dict) and summary.get("agentId") and isinstance(summary.get("usage"), dict):
                    u = summary["usage"]
                    if printed.get(blocks[0]["tool_use_id"]) != tuple(u.get(k) for k in _COUNTS if k != "output_tokens"):
                        self.last_calls[blocks[0]["tool_use_id"]] = (
                            sum(u.get(k, 0) for k in _COUNTS if k != "output_tokens"), u["output_tokens"])
        self.errors &= set(self.tools)

    def session_usage(self) -> tuple[int, int]:
        """(gen_ai input, output) of the session: the last non-empty ``modelUsage`` (milk
        ``model_usage``) summed over models, else summed over the results' ``usage``; input
        counts the cache (Claude Code's and milk's ``input_tokens`` leave it out)."""
        with_models = [r.get("modelUsage") or r.get("model_usage") for r in self.results
                       if r.get("modelUsage") or r.get("model_usage")]
        if with_models:
            rows = [{"input_tokens": u.get("inputTokens", u.get("input_tokens", 0)),
                     "cache_read": u.get("cacheReadInputTokens", u.get("cache_read", 0)),
                     "cache_creation": u.get("cacheCreationInputTokens", u.get("cache_creation", 0)),
                     "output_tokens": u.get("outputTokens", u.get("output_tokens", 0))}
                    for u in with_models[-1].values()]
        else:
            # a result that says 0 for every count (an interrupted turn): its calls' usage
            rows = [calls if not _tokens(r.get("usage") or {}) and _tokens(calls) else r.get("usage") or {}
                    for r, calls in zip(self.results, self.calls_usage)]
        total_in = total_out = 0
        for u in rows:
            total_in += (u.get("input_tokens", 0) + u.get("cache_read_input_tokens", u.get("cache_read", 0))
                         + u.get("cache_creation_input_tokens", u.get("cache_creation", 0)))
            total_out += u.get("output_tokens", 0)
        return total_in, total_out


_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _summed(usages) -> dict:
    """Claude Code usage objects summed, count by count."""
    return {k: sum(u.get(k, 0) or 0 for u in usages) for k in _COUNTS}


def _tokens(usage: dict) -> bool:
    return any(usage.get(k) for k in _COUNTS)


def export(path: Path, **flags):
    """The spans of ``path`` at a real OTLP receiver; every span built exported, none dropped."""
    data = path.read_bytes()
    with HttpReceiver() as rx:
        stats, all_exported = export_in_process(data, rx.endpoint, **flags)
        spans = rx.received.spans()
    assert all_exported
    assert stats.lines == data.count(b"\n")
    assert len(spans) == stats.spans_exported == stats.spans_started > 0
    assert stats.spans_dropped == 0
    return spans


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_session_tree(path: Path):
    facts = Facts(path)
    spans = export(path)
    (session,) = [s for s in spans if s.parent_span_id == "" and s.name.startswith("invoke_agent")]
    trace = [s for s in spans if s.trace_id == session.trace_id]
    by_id = {s.span_id: s for s in trace}
    assert len(by_id) == len(trace)  # every span once
    assert all(s.end_ns >= s.start_ns for s in spans)

    def kind(s):
        return s.name.split(" ", 1)[0]

    def ancestors(s):
        while s.parent_span_id in by_id:
            s = by_id[s.parent_span_id]
            yield s

    # session name: milk's init.agent.name; claude-code when the init names it; else agent
    agent = session_name(path.read_bytes()).removeprefix("invoke_agent ")
    assert session.name == f"invoke_agent {agent}"
    assert session.attributes["gen_ai.operation.name"] == "invoke_agent"

    # one turn per result, under the session, numbered from 1
    turns = sorted((s for s in trace if kind(s) == "turn"), key=lambda s: s.attributes["turn.number"])
    assert [t.name for t in turns] == [f"turn {n}" for n in range(1, len(facts.results) + 1)]
    assert all(t.parent_span_id == session.span_id for t in turns)
    for turn, res, stopped in zip(turns, facts.results, facts.stopped):
        assert turn.attributes["result.is_error"] is res.get("is_error", False)
        assert (turn.status_code == 2) is (res.get("is_error") is True or stopped)
        # what started it: a background task's notification woke it (Claude Code 2.1.2xx)
        assert turn.attributes.get("result.origin.kind") == (res.get("origin") or {}).get("kind")
    last = facts.results[-1]
    # (or its last turn's, when a notice stopped that turn before any model call)
    assert (session.status_code == 2) is (last.get("is_error") is True or facts.stopped[-1])
    assert session.attributes.get("result.subtype") == last.get("subtype")

    # usage: the session's is the CLI's own total (input including the cache)
    if any(r.get("usage") or r.get("modelUsage") or r.get("model_usage") for r in facts.results):
        want_in, want_out = facts.session_usage()
        assert session.attributes["gen_ai.usage.input_tokens"] == want_in
        assert session.attributes["gen_ai.usage.output_tokens"] == want_out
    else:
        assert "gen_ai.usage.input_tokens" not in session.attributes
    model_usage = last.get("modelUsage") or last.get("model_usage") or {}
    assert sorted(e[2]["gen_ai.response.model"] for e in session.events if e[0] == "model_usage") == sorted(model_usage)

    # model calls: one chat span per message id; top-level under a turn, nested under its sub-agent
    chats = {s.attributes["gen_ai.response.id"]: s for s in trace
             if kind(s) == "chat" and "gen_ai.response.id" in s.attributes}
    assert set(chats) == set(facts.messages)
    # ... and one, without a response id, for each top-level call whose output streamed (milk's
    # deltas) and no assistant line completed before the result: cut, under its turn
    cut, streaming = [], False
    for d in docs(path):
        if d.get("parent_tool_use_id") is not None:
            continue
        if d["type"] == "stream_event" and "seq" in d and \
                d["event"].get("type") in ("content_block_delta", "tool_args_delta"):
            streaming = True
        elif d["type"] in ("assistant", "result"):
            if d["type"] == "result" and streaming:
                cut.append(ns(d["ts"]))
            streaming = False
    agents = {s.attributes["task.tool_use_id"]: s for s in trace
              if kind(s) == "invoke_agent" and s is not session}
    # ... and one under a sub-agent for its last call, which only its Agent tool's result shows
    # (``tool_use_result.usage``), unless the sub-agent's last printed call had its input counts
    summed = [s for s in trace if kind(s) == "chat" and "gen_ai.response.id" not in s.attributes
              and kind(by_id[s.parent_span_id]) == "invoke_agent"]
    assert sorted((s.parent_span_id, s.attributes["gen_ai.usage.input_tokens"],
                   s.attributes["gen_ai.usage.output_tokens"]) for s in summed) == sorted(
        (agents[ptu].span_id, n_in, n_out) for ptu, (n_in, n_out) in facts.last_calls.items())
    for s in summed:  # ending at the tool's result, zero-length when calls were not printed
        tool_span = by_id[by_id[s.parent_span_id].parent_span_id]
        assert s.end_ns == tool_span.end_ns and s.start_ns <= s.end_ns
    partial = [s for s in trace if kind(s) == "chat" and "gen_ai.response.id" not in s.attributes
               and s not in summed]
    assert sorted(s.end_ns for s in partial) == cut
    for s in partial:
        assert kind(by_id[s.parent_span_id]) == "turn" and [e[0] for e in s.events] == ["interrupted"]
    assert all(c.kind == 3 for c in chats.values())  # CLIENT
    for mid, ptu in facts.messages.items():
        parent = by_id[chats[mid].parent_span_id]
        if ptu is None:
            assert kind(parent) == "turn"
        else:
            assert parent is agents[ptu]

    # every turn with a model call names a model: its init's, else (2.1.206 prints no init before
    # its second turn) the one its first call asked
    for turn in turns:
        calls = sorted((c for c in chats.values() if c.parent_span_id == turn.span_id), key=lambda c: c.start_ns)
        if calls:
            assert turn.attributes.get("gen_ai.request.model") in {
                c.attributes.get("gen_ai.request.model") for c in calls} | {i.get("model") for i in facts.inits}, turn.name

    # tools: paired by id, under the call that asked; ERROR exactly for is_error results
    tools = [s for s in trace if kind(s) == "execute_tool"]
    assert Counter(s.attributes["gen_ai.tool.call.id"] for s in tools) == Counter(list(facts.tools))
    for tool in tools:
        name, mid = facts.tools[tool.attributes["gen_ai.tool.call.id"]]
        assert tool.name == f"execute_tool {name}"
        assert tool.parent_span_id == chats[mid].span_id
        assert (tool.status_code == 2) is (tool.attributes["gen_ai.tool.call.id"] in facts.errors)

    # sub-agents: one span per nested tool use, under that tool's span; their own tools below it
    assert Counter(s.attributes["task.tool_use_id"] for s in trace if kind(s) == "invoke_agent" and s is not session) == Counter(facts.nested)
    tool_by_call = {s.attributes["gen_ai.tool.call.id"]: s for s in tools}
    for ptu, span in agents.items():
        assert span.parent_span_id == tool_by_call[ptu].span_id
    for tool in tools:
        mid = facts.tools[tool.attributes["gen_ai.tool.call.id"]][1]
        ptu = facts.messages[mid]
        if ptu is not None:
            assert tool_by_call[ptu] in list(ancestors(tool))

    # content is opt-in
    assert not any(k.startswith(("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.output"))
                   for s in spans for k in s.attributes)


def ns(ts: str) -> int:
    from datetime import datetime

    parsed = datetime.fromisoformat(ts)
    return int(parsed.timestamp()) * 1_000_000_000 + parsed.microsecond * 1000


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
@pytest.mark.parametrize("path", sorted((FIXTURES / "milk").glob("*.jsonl")) + [EXAMPLES / "milk-session.jsonl"],
                         ids=lambda p: p.name)
def test_milk_times_from_ts_and_session_events(path: Path):
    lines = docs(path)
    spans = export(path)
    by_resp = {s.attributes.get("gen_ai.response.id"): s for s in spans}
    (session,) = [s for s in spans if s.parent_span_id == ""]
    init, res = lines[0], lines[-1]
    assert session.start_ns == ns(init["ts"])
    assert session.end_ns == ns(res["ts"])
    assert session.attributes["gen_ai.provider.name"] == init["agent"]["provider"]
    assert session.attributes["gen_ai.request.model"] == init["agent"]["model"]  # its first, switch or not
    assert session.attributes["gen_ai.agent.version"] == init["milk_version"]
    # each model call is the agent's that was current: the init's, then each agent_switch's
    agent = init["agent"]
    for d in lines:
        if d.get("subtype") == "agent_switch":
            agent = d["agent"]
        elif d["type"] == "assistant" and "parent_tool_use_id" not in d:
            chat = by_resp[d["message"]["id"]]
            assert (chat.attributes["gen_ai.provider.name"], chat.attributes["gen_ai.request.model"]) == \
                (agent["provider"], agent["model"]), d["seq"]
        elif d["type"] == "assistant":  # a sub-agent's line names its agent, and no model
            chat = by_resp[d["message"]["id"]]
            assert "gen_ai.request.model" not in chat.attributes and chat.name == "chat model"
            sub = next(s for s in spans if s.span_id == chat.parent_span_id)
            assert sub.name == f"invoke_agent {d['agent']}" and sub.attributes["gen_ai.agent.name"] == d["agent"]
            # its calls', and its own: an agent_switch after it ended is not its provider
            assert sub.attributes["gen_ai.provider.name"] == chat.attributes["gen_ai.provider.name"] \
                == agent["provider"], d["seq"]
    # a chat starts when it was asked for: at the prompt, the last tool result or the previous
    # call's last line before its first line (the session's start for the first); a tool ends
    # at its result's ts
    # (each scope apart: the top level from the session's start, a sub-agent from its first
    # line; a tool result counts for the scope that called the tool)
    asked, owner, seen = {None: ns(init["ts"])}, {}, set()
    for d in lines:
        t, scope = ns(d["ts"]), d.get("parent_tool_use_id")
        blocks = d["message"]["content"] if d["type"] in ("user", "assistant") else []
        if d["type"] == "user":
            for b in blocks:
                if b.get("type") == "tool_result" and b["tool_use_id"] in owner:
                    of = owner[b["tool_use_id"]]
                    asked[of] = max(asked[of], t)
        elif d["type"] == "assistant":
            asked.setdefault(scope, t)
            mid = d["message"]["id"]
            if mid not in seen:
                seen.add(mid)
                assert by_resp[mid].start_ns == min(asked[scope], t)
            asked[scope] = max(asked[scope], t)
            owner.update((b["id"], scope) for b in blocks if b.get("type") == "tool_use")
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name.startswith("execute_tool")}
    for d in lines:
        if d["type"] == "user":
            for b in d["message"]["content"]:
                if b.get("type") == "tool_result" and b["tool_use_id"] in tools:
                    assert tools[b["tool_use_id"]].end_ns == ns(d["ts"])
    # seq gaps, system/error, route, agent_switch, warnings as events on the session span
    events = Counter(e[0] for e in session.events)
    seqs = [d["seq"] for d in lines]
    gaps = sum(1 for i in range(1, len(seqs)) if seqs[i] != max(seqs[:i]) + 1)  # (after the highest)
    assert events["seq_gap"] == gaps
    assert events["exception"] == sum(1 for d in lines if d.get("subtype") == "error")
    assert events["route"] == sum(1 for d in lines if d.get("subtype") == "route")
    assert events["agent_switch"] == sum(1 for d in lines if d.get("subtype") == "agent_switch")
    assert events["warning"] == len(init["warnings"])
    assert events["route_history"] == (1 if res.get("route_history") else 0)
    for name, when, attrs in session.events:
        if name == "exception":
            (err,) = [d for d in lines if d.get("subtype") == "error"]
            assert when == ns(err["ts"])
            assert attrs["exception.message"] == err["message"]
            assert attrs["exception.recoverable"] is err["recoverable"]
    if res.get("usage"):
        assert session.attributes["gen_ai.usage.cache_read.input_tokens"] == res["usage"]["cache_read"]
    # an interrupted result (not an error) marks its turn so, at the result; no other turn
    marks = [(s.name, e[1]) for s in spans for e in s.events if e[0] == "interrupted" and s.name.startswith("turn ")]
    assert marks == ([("turn 1", ns(res["ts"]))] if res["subtype"] == "interrupted" else [])
    # the call whose output was streaming when it was interrupted (no assistant line came): cut
    streamed = [s for s in spans if s.name.startswith("chat ") and "gen_ai.response.id" not in s.attributes]
    if res["subtype"] == "interrupted":
        (call,) = streamed
        first_delta = next(d for d in lines if d["type"] == "stream_event")
        assert call.start_ns <= ns(first_delta["ts"]) and call.end_ns == ns(res["ts"])
        assert call.attributes["gen_ai.request.model"] == init["agent"]["model"]
        assert [(e[0], e[1]) for e in call.events] == [("interrupted", ns(res["ts"]))]
    else:
        assert streamed == []


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_background_task_and_local_agent_merge_in_example():
    path = EXAMPLES / "claude-code-session.jsonl"
    lines = docs(path)
    spans = export(path, deterministic_ids=True)
    (session,) = [s for s in spans if s.parent_span_id == ""]
    started = {d["task_id"]: d for d in lines if d.get("subtype") == "task_started"}
    # the local_agent task is the Explore sub-agent's span (one span), not a task span
    agent_task = next(d for d in started.values() if d["task_type"] == "local_agent")
    (explore,) = [s for s in spans if s.attributes.get("gen_ai.agent.id") == agent_task["task_id"]]
    assert explore.name == f"invoke_agent {agent_task['subagent_type']}"
    last_note = [d for d in lines if d.get("subtype") == "task_notification" and d["task_id"] == agent_task["task_id"]][-1]
    assert explore.attributes["task.usage.total_tokens"] == last_note["usage"]["total_tokens"]
    # the background Bash task (line 10): its tool call (line 7) is in the stream, so the task
    # span is under that execute_tool span, failed, ending at end_time (line 29) after the tool
    bash = next(d for d in started.values() if d["task_type"] != "local_agent")
    (task,) = [s for s in spans if s.name.startswith("task ")]
    updated = next(d for d in lines if d.get("subtype") == "task_updated" and d["task_id"] == bash["task_id"])
    assert task.name == f"task {bash['task_type']}"
    (tool,) = [s for s in spans if s.attributes.get("gen_ai.tool.call.id") == bash["tool_use_id"]]
    assert task.parent_span_id == tool.span_id and task.start_ns >= tool.start_ns
    assert task.end_ns > tool.end_ns  # background work outlives its tool call
    assert task.status_code == 2 and task.attributes["task.status"] == "failed"
    assert task.end_ns == updated["patch"]["end_time"] * MS
    assert session.end_ns >= task.end_ns


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_caudra_turn_start_and_result_run():
    path = EXAMPLES / "caudra-session-turns.jsonl"
    lines = docs(path)
    spans = export(path)
    starts = [d for d in lines if d.get("subtype") == "turn_start"]
    results = [d for d in lines if d.get("type") == "result"]
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: s.attributes["turn.number"])
    assert len(turns) == len(starts) == len(results) == 2
    for turn, start, res in zip(turns, starts, results):
        assert turn.attributes["turn.run_id"] == str(start["run_id"]) == str(res["run"]["run_id"])
        assert turn.attributes["turn.automatic"] is start["automatic"]
        assert turn.attributes["turn.task_event_ids.count"] == len(start["task_event_ids"])
        assert turn.attributes["turn.automation_events.count"] == len(start["automation_events"])
        assert turn.attributes["result.run_id"] == str(res["run"]["run_id"])
        assert turn.attributes["result.background_active"] == res["background_active"]
    # run 2 started by itself (automatic: its task's events woke it): it lasts its duration_ms
    # from where it opened, after run 1 ended, not pulled back inside run 1
    assert starts[1]["automatic"] is True and "timestamp" not in results[1]
    assert turns[0].end_ns <= turns[1].start_ns
    assert turns[1].end_ns - turns[1].start_ns == results[1]["duration_ms"] * 1_000_000


PHASED = FIXTURES / "claude-code" / "claudecli-go-workflow-phased-2.1.270.jsonl"
RESUME = EXAMPLES.parent / "tests" / "recordings" / "claudecli-go-task-notification-resume-2.1.280.jsonl"


def _iso_ns(text: str) -> int:
    from otelbridge.dialects import parse_timestamp

    return parse_timestamp(text)


@pytest.mark.skipif(not PHASED.exists(), reason="../shared/fixtures not present")
def test_piped_recording_deferred_results_and_lines_before_the_first_timestamp():
    """A recording piped in (live ``auto`` clock): turn 1 lasts its result's duration_ms although
    both results (lines 30, 31) come after turn 2's init (line 28), and line 1 (no timestamp)
    takes line 2's, less the time between the two lines' arrivals (the clock's wait for a
    timestamp bounds it)."""
    from otelbridge.clock import WAIT_NS

    lines = {n: json.loads(raw) for n, raw in enumerate(PHASED.read_bytes().splitlines(), 1)}
    spans = export(PHASED)
    (t1,) = [s for s in spans if s.name == "turn 1"]
    (t2,) = [s for s in spans if s.name == "turn 2"]
    assert 0 <= _iso_ns(lines[2]["timestamp"]) - t1.start_ns < WAIT_NS
    assert t1.end_ns - t1.start_ns == lines[30]["duration_ms"] * MS
    assert (t1.attributes["turn.result_index"], t2.attributes["turn.result_index"]) == (0, 1)
    (chat29,) = [s for s in spans if s.attributes.get("gen_ai.response.id") == lines[29]["message"]["id"]]
    assert chat29.parent_span_id == t2.span_id


def test_piped_resumed_session_is_dated_by_its_own_first_timestamp():
    lines = {n: json.loads(raw) for n, raw in enumerate(RESUME.read_bytes().splitlines(), 1)}
    spans = export(RESUME)
    from otelbridge.clock import WAIT_NS

    first = _iso_ns(lines[5]["timestamp"])  # lines 1-4 carry none
    (note,) = [s for s in spans if s.name == "task notification"]
    # just before the first timestamp, as its line came before line 5: not today's wall clock
    assert (note.start_ns, note.end_ns) == sent(note.end_ns, note.end_ns) and 0 <= first - note.end_ns < WAIT_NS
    session = [s for s in spans if s.parent_span_id == ""]
    assert len(session) == 1 and note.parent_span_id == session[0].span_id
    assert all(abs(s.start_ns - first) < 60 * 10**9 for s in spans)


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_captured_output_messages_fit_the_default_cap_whole_parts_first():
    """task-tool-2.1.6 asks for up to 19 tools in one message: at the default cap (256) each
    model call's output message is still exported, valid JSON, its first parts whole (a tool
    call's id matches its ``execute_tool`` span), the rest left out."""
    path = FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl"
    blocks: dict[str, list] = {}
    for doc in docs(path):
        if doc.get("type") == "assistant":
            blocks.setdefault(doc["message"]["id"], []).extend(doc["message"]["content"])
    spans = export(path, capture_content=True)
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name.startswith("execute_tool ")}
    chats = {s.attributes["gen_ai.response.id"]: s for s in spans
             if s.name.startswith("chat ") and "gen_ai.response.id" in s.attributes}
    # the sub-agent's last call, known from its tool's result only: no output to show
    (summed,) = [s for s in spans if s.name.startswith("chat ") and "gen_ai.response.id" not in s.attributes]
    assert "gen_ai.output.messages" not in summed.attributes
    assert max(sum(b["type"] == "tool_use" for b in v) for v in blocks.values()) == 19
    for mid, chat in chats.items():
        text = chat.attributes["gen_ai.output.messages"]
        assert len(text) <= 256
        (message,) = json.loads(text)
        uses = [b for b in blocks[mid] if b["type"] == "tool_use"]
        assert message["finish_reason"] == ("tool_call" if uses else "stop")
        calls = [p for p in message["parts"] if p["type"] == "tool_call"]
        assert 1 <= len(calls) <= len(uses) or (not uses and not calls)
        for part, use in zip(calls, uses):  # the first ones, whole, in order
            assert part == {"type": "tool_call", "id": use["id"], "name": use["name"]}
            assert tools[use["id"]].parent_span_id == chat.span_id


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_piped_lines_without_timestamps_are_exported_without_waiting_for_a_next_line():
    """A live pipe, a CLI that prints no timestamps (2.1.6): the spans its first lines end go out
    once the clock's one-second wait for a timestamp is over, while the agent is still at work
    and prints nothing more; not only when its next line comes."""
    from tests.e2e.live import feed_live

    data = (FIXTURES / "claude-code" / "custom-agent-2.1.6.jsonl").read_bytes()
    head = b"".join(data.splitlines(keepends=True)[:5])  # up to the Task tool's result

    with HttpReceiver() as rx:
        def tool_span_arrived():
            spans = rx.received.wait_for(1, timeout=10)
            assert [s.name for s in spans] == ["execute_tool Task"], "the tool's span waited for a next line"

        code, out, err = feed_live(["--endpoint", rx.endpoint, "--summary", "never"],
                                   [(0.0, head), (tool_span_arrived, data[len(head):])], 0.0)
        spans = rx.received.wait_for(7, timeout=5)
    assert code == 0 and out == data, err
    assert len(spans) == 7


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_live_a_turn_s_first_model_call_goes_out_when_a_third_is_coming():
    """Live, a line is dated when it came: the turn's first model call is not held for the
    turn's result (which may come minutes later, after the tools of later calls), it goes out
    once the turn shows a third call coming: its second asks for tools."""
    from tests.e2e.live import feed_live

    data = (FIXTURES / "claude-code" / "custom-agent-2.1.6.jsonl").read_bytes()
    head = b"".join(data.splitlines(keepends=True)[:7])  # line 7: the second call's tool_use

    with HttpReceiver() as rx:
        def first_call_arrived():
            wait = rx.received.wait_for(2, timeout=10)
            assert sorted(s.name for s in wait) == ["chat claude-haiku-4-5-20251001", "execute_tool Task"]

        code, out, err = feed_live(["--endpoint", rx.endpoint, "--summary", "never"],
                                   [(0.0, head), (first_call_arrived, data[len(head):])], 0.0)
        spans = rx.received.wait_for(7, timeout=5)
    assert code == 0 and out == data, err
    (turn,) = [s for s in spans if s.name == "turn 1"]
    (first,) = [s for s in spans if s.attributes.get("gen_ai.response.id") == "msg_01BS4YvduKDmDmjo642RAgzx"]
    assert turn.start_ns <= first.start_ns <= first.end_ns <= turn.end_ns


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_live_what_is_open_at_end_of_input_ran_until_then():
    """Live, a CLI that dies mid-tool (its output ends 1.5 s after the tool call, no result):
    the tool, its turn and session ran until the stream ended, not 0 ms to their last line."""
    from tests.e2e.live import feed_live

    data = (FIXTURES / "claude-code" / "custom-agent-2.1.6.jsonl").read_bytes()
    head = b"".join(data.splitlines(keepends=True)[:4])  # line 4: the Task tool call, unanswered
    with HttpReceiver() as rx:
        code, out, err = feed_live(["--endpoint", rx.endpoint, "--summary", "never"], [(0.0, head)], 1.5)
        spans = {s.name: s for s in rx.received.wait_for(4, timeout=5)}
    assert code == 0 and out == head, err
    tool, turn, session = spans["execute_tool Task"], spans["turn 1"], spans["invoke_agent claude-code"]
    assert tool.end_ns - tool.start_ns >= 1_000_000_000  # (1.5 s of wall time, less start-up)
    assert tool.end_ns <= turn.end_ns <= session.end_ns
    assert (tool.status_code, turn.status_code, session.status_code) == (2, 2, 2)


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_a_turn_s_last_model_call_whose_lines_show_no_time_ends_with_the_turn():
    """Claude Code 2.1.206's second turn (a background workflow's notification woke it): no
    line of its one model call carries a timestamp, so in the stream's clock the call's lines
    all take the time its turn began. Its result (``duration_ms``, ``ttft_ms``) follows the
    call's final message: the call ends with the turn, not 0 ms at its start. A call whose
    lines are dated keeps its own end (milk dates every line)."""
    path = FIXTURES / "claude-code" / "workflow-probe-2.1.206.jsonl"
    spans = export(path, clock="stream", deterministic_ids=True)
    (turn,) = [s for s in spans if s.name == "turn 2"]
    (chat,) = [s for s in spans if s.parent_span_id == turn.span_id and s.name.startswith("chat ")]
    result = [json.loads(l) for l in path.read_text().splitlines() if '"type":"result"' in l][-1]
    assert turn.end_ns - turn.start_ns == result["duration_ms"] * 1_000_000
    assert (chat.start_ns, chat.end_ns) == (turn.start_ns, turn.end_ns)

    milk_path = FIXTURES / "milk" / "basic_turn.jsonl"
    docs_ = [json.loads(l) for l in milk_path.read_text().splitlines()]
    (call,) = [s for s in export(milk_path, clock="stream", deterministic_ids=True) if s.name.startswith("chat ")]
    last_line = max(ns(d["ts"]) for d in docs_ if d.get("type") in ("assistant", "stream_event"))
    assert call.end_ns == last_line  # its last line's own time, before the result's


@pytest.mark.skipif(not RECORDINGS, reason="../shared/fixtures not present")
def test_live_a_two_call_turn_s_first_call_carries_the_rest_of_its_result_s_output():
    """Live (lines dated as they come), Claude Code 2.1.280's turn of two calls: the first
    call's lines say 4 output tokens (a snapshot from its start); its result's 218 less the
    second call's final 50 (``usage.iterations``) are its 168, at a real OTLP receiver."""
    from tests.e2e.live import feed_live

    path = FIXTURES / "claude-code" / "claudecli-go-bg-bash-wake-2.1.280.jsonl"
    data = path.read_bytes()
    lines = [json.loads(l) for l in data.splitlines()]
    (first_mid, second_mid) = dict.fromkeys(
        d["message"]["id"] for d in lines[:lines.index(next(d for d in lines if d["type"] == "result"))]
        if d["type"] == "assistant")
    result = next(d for d in lines if d["type"] == "result")
    with HttpReceiver() as rx:
        code, out, err = feed_live(["--endpoint", rx.endpoint, "--summary", "never"], [(0.0, data)], 0.0)
        spans = rx.received.wait_for(8, timeout=5)
    assert code == 0 and out == data, err
    chats = {s.attributes.get("gen_ai.response.id"): s for s in spans if s.name.startswith("chat")}
    last = result["usage"]["iterations"][-1]["output_tokens"]
    assert (chats[first_mid].attributes["gen_ai.usage.output_tokens"],
            chats[second_mid].attributes["gen_ai.usage.output_tokens"]) == (
        result["usage"]["output_tokens"] - last, last) == (168, 50)


def test_caudra_subscription_cost_is_exported_beside_the_money_owed(tmp_path):
    """Caudra: a run a subscription covers owes nothing (``total_cost_usd: 0``); its list price
    is ``subscription_cost_usd``, exported as given on its turn and its session, never added."""
    lines = docs(EXAMPLES / "caudra-session-turns.jsonl")
    results = [d for d in lines if d.get("type") == "result"]
    for i, res in enumerate(results, 1):
        res["total_cost_usd"], res["subscription_cost_usd"] = 0, 0.25 * i
    path = tmp_path / "subscription.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    spans = export(path)
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: s.attributes["turn.number"])
    assert [t.attributes["result.subscription_cost_usd"] for t in turns] == [0.25, 0.5]
    assert [t.attributes["result.total_cost_usd"] for t in turns] == [0.0, 0.0]
    (session,) = [s for s in spans if s.parent_span_id == "" and s.name.startswith("invoke_agent")]
    assert (session.attributes["result.subscription_cost_usd"], session.attributes["result.total_cost_usd"]) == (0.5, 0.0)
