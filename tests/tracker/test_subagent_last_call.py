"""A sub-agent's last model call, which Claude Code never prints as a line: its Agent tool's
result gives its usage (``tool_use_result.usage``), its model (``resolvedModel``) and how many
tool calls the sub-agent made (``totalToolUseCount``). Every expected value is read from the
recording line named beside it."""

from __future__ import annotations

import json

import pytest

from tests.tracker.recording import CLAUDE, Run, iso_ns, lines

pytestmark = pytest.mark.skipif(not CLAUDE.is_dir(), reason="shared fixtures not present")

AGENT = CLAUDE / "claudecli-go-agent-subagent-2.1.87.jsonl"
GENERAL = CLAUDE / "subagent-general-purpose.jsonl"
IDEA = CLAUDE / "idea-planner-explore-subagent-2.1.224.jsonl"


def _input(usage: dict) -> int:
    return usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]


def _chats(run: Run, agent) -> list:
    return sorted((r for r in run.records if r.parent_span_id == agent.span_id and r.name.startswith("chat ")),
                  key=lambda r: r.start_ns)


def _edited(tmp_path, path, n: int, edit) -> tuple:
    """``path`` with line ``n`` (1-based) changed by ``edit(doc)``; (new path, its lines)."""
    raw = path.read_bytes().splitlines(keepends=True)
    doc = json.loads(raw[n - 1])
    edit(doc)
    raw[n - 1] = json.dumps(doc).encode() + b"\n"
    out = tmp_path / path.name
    out.write_bytes(b"".join(raw))
    return out, lines(out)


def test_the_last_call_runs_from_the_sub_agents_last_tool_result_to_its_agent_tools_result():
    L = lines(AGENT)
    summary = L[10]["tool_use_result"]  # the Agent tool's result (line 10)
    run = Run(AGENT)
    agent = run.one("invoke_agent Explore")
    printed, last = _chats(run, agent)
    assert printed.attributes["gen_ai.response.id"] == L[7]["message"]["id"]  # its one printed call
    assert "gen_ai.response.id" not in last.attributes  # (the stream never gave its id)
    # asked for when the Read tool's result came back (line 8), done when the Agent tool answered
    assert last.start_ns == iso_ns(L[8]["timestamp"])
    assert last.end_ns == iso_ns(L[10]["timestamp"]) == run.one("execute_tool Agent").end_ns
    assert last.attributes["gen_ai.usage.input_tokens"] == _input(summary["usage"]) == 21798
    assert last.attributes["gen_ai.usage.output_tokens"] == summary["usage"]["output_tokens"] == 27
    assert last.attributes["gen_ai.request.model"] == L[7]["message"]["model"]
    assert last.name == f"chat {L[7]['message']['model']}" and last.kind == "CLIENT"
    # the sub-agent's tokens are its calls', both
    assert agent.attributes["gen_ai.usage.output_tokens"] == L[7]["message"]["usage"]["output_tokens"] + 27
    assert agent.attributes["gen_ai.usage.input_tokens"] == _input(L[7]["message"]["usage"]) + 21798


def test_a_sub_agent_none_of_whose_lines_were_printed_gets_its_one_call_by_its_resolved_model():
    L = lines(GENERAL)
    summary = L[28]["tool_use_result"]
    assert summary["totalToolUseCount"] == 0
    run = Run(GENERAL)
    agent = run.one("invoke_agent general-purpose")
    (call,) = _chats(run, agent)
    assert call.name == f"chat {summary['resolvedModel']}"
    assert call.start_ns == agent.start_ns == iso_ns(L[25]["timestamp"])  # its prompt (line 25)
    assert call.end_ns == iso_ns(L[28]["timestamp"])
    assert call.attributes["gen_ai.usage.input_tokens"] == _input(summary["usage"])
    assert call.attributes["gen_ai.usage.output_tokens"] == summary["usage"]["output_tokens"]


def test_when_the_stream_showed_fewer_tool_calls_than_the_sub_agent_made_the_call_is_an_instant(tmp_path):
    """Claude Code forwards only some sub-agent lines at times: the last call then began at an
    unknown time after the lines shown, and is put where the stream shows it, at its end."""
    path, L = _edited(tmp_path, AGENT, 10, lambda d: d["tool_use_result"].update(totalToolUseCount=3))
    run = Run(path)
    _, last = _chats(run, run.one("invoke_agent Explore"))
    assert last.start_ns == last.end_ns == iso_ns(L[10]["timestamp"])
    assert last.attributes["gen_ai.usage.output_tokens"] == 27


def test_a_printed_last_call_takes_the_summarys_output_and_is_not_repeated(tmp_path):
    """When the summary's input counts are those of the sub-agent's last printed call, it is that
    call: its output is the summary's (a line's is a snapshot from its start), and no other."""
    L = lines(AGENT)
    printed_usage = {k: L[7]["message"]["usage"][k]
                     for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")}
    path, L = _edited(tmp_path, AGENT, 10, lambda d: d["tool_use_result"]["usage"].update(printed_usage))
    run = Run(path)
    agent = run.one("invoke_agent Explore")
    (call,) = _chats(run, agent)
    assert call.attributes["gen_ai.response.id"] == L[7]["message"]["id"]
    assert L[7]["message"]["usage"]["output_tokens"] == 8
    assert call.attributes["gen_ai.usage.output_tokens"] == L[10]["tool_use_result"]["usage"]["output_tokens"] == 27
    assert agent.attributes["gen_ai.usage.output_tokens"] == 27


def test_a_repeated_agent_result_builds_the_last_call_once(tmp_path):
    """The Agent tool's result line twice, before the task's notification (the sub-agent still
    open): one last call, its tokens once."""
    raw = AGENT.read_bytes().splitlines(keepends=True)
    path = tmp_path / AGENT.name
    path.write_bytes(b"".join(raw[:8] + [raw[9], raw[9], raw[8]] + raw[10:]))  # lines 1-8, 10, 10, 9, 11-
    run = Run(path)
    agent = run.one("invoke_agent Explore")
    chats = _chats(run, agent)
    assert len(chats) == 2 and len({c.span_id for c in run.records}) == len(run.records)
    assert agent.attributes["gen_ai.usage.output_tokens"] == 8 + 27
    assert run.stats.duplicate_results == 0  # (a tool result, not a turn's)


@pytest.mark.parametrize(("drop", "model"), [
    ((6, 7, 8), None),  # 2.1.87 gives no resolvedModel: not the session's model (it ran haiku)
])
def test_the_last_calls_model_is_none_the_stream_did_not_name(tmp_path, drop, model):
    raw = AGENT.read_bytes().splitlines(keepends=True)
    path = tmp_path / AGENT.name
    path.write_bytes(b"".join(line for n, line in enumerate(raw, 1) if n not in drop))
    run = Run(path)
    (call,) = _chats(run, run.one("invoke_agent Explore"))
    assert call.attributes.get("gen_ai.request.model") == model
    assert call.name == "chat model"


def test_a_resolved_model_is_named_as_the_calls_name_it(tmp_path):
    """``resolvedModel`` tags a 1M-context run (``claude-opus-5[1m]``); the calls' lines name the
    model (``claude-opus-5``): the last call is named as they are, also with none of them
    printed (lines 4-7 left out)."""
    L = lines(IDEA)
    (summary,) = [d["tool_use_result"] for d in L.values() if isinstance(d.get("tool_use_result"), dict)]
    assert summary["resolvedModel"] == "claude-opus-5[1m]" and L[5]["message"]["model"] == "claude-opus-5"
    raw = IDEA.read_bytes().splitlines(keepends=True)
    path = tmp_path / IDEA.name
    path.write_bytes(b"".join(line for n, line in enumerate(raw, 1) if n not in (4, 5, 6, 7)))
    run = Run(path)
    (call,) = _chats(run, run.one("invoke_agent Explore"))
    assert call.name == "chat claude-opus-5" and call.attributes["gen_ai.request.model"] == "claude-opus-5"


TASK_TOOL = CLAUDE / "task-tool-2.1.6.jsonl"


def _without(tmp_path, path, drop) -> tuple:
    """``path`` without the lines numbered in ``drop`` (1-based); (new path, the original's lines)."""
    raw = path.read_bytes().splitlines(keepends=True)
    out = tmp_path / path.name
    out.write_bytes(b"".join(line for n, line in enumerate(raw, 1) if n not in drop))
    return out, lines(path)


@pytest.mark.parametrize(("path", "drop", "tool_line", "result_line", "name", "model"), [
    # 2.1.224 with its task lines (3, 4, 7, 8, 9) and the sub-agent's own (5, 6) left out:
    # recent Claude Code forwards only some of a sub-agent's lines, at times none
    (IDEA, range(3, 10), 2, 10, "invoke_agent Explore", "chat claude-opus-5"),
    # 2.1.6 prints no task lines: its 71 sub-agent lines (5-75) left out; no resolvedModel
    (TASK_TOOL, range(5, 76), 4, 76, "invoke_agent Explore", "chat model"),
], ids=["2.1.224", "2.1.6"])
def test_a_sub_agent_the_stream_shows_no_line_of_is_made_from_its_agent_tools_result(
        tmp_path, path, drop, tool_line, result_line, name, model):
    """Only the Agent tool's call and result tell of the sub-agent: it is a span all the same,
    under the tool's span, with its last model call's usage, which no other span holds."""
    path, L = _without(tmp_path, path, set(drop))
    summary = L[result_line]["tool_use_result"]
    (call_id,) = [b["id"] for b in L[tool_line]["message"]["content"] if b.get("type") == "tool_use"]
    run = Run(path)
    assert len(run.records) == 7  # session, turn, two calls, the tool, the sub-agent and its call
    tool = run.one(f"execute_tool {L[tool_line]['message']['content'][-1]['name']}")
    agent = run.one(name)
    assert agent.parent_span_id == tool.span_id and agent.error is None
    assert (agent.start_ns, agent.end_ns) == (tool.start_ns, tool.end_ns)
    assert agent.attributes["gen_ai.agent.id"] == summary["agentId"]
    assert agent.attributes["task.tool_use_id"] == call_id
    (call,) = _chats(run, agent)
    assert call.name == model and "gen_ai.response.id" not in call.attributes
    # it made tool calls the stream did not show: its last call's start is unknown
    assert summary["totalToolUseCount"] > 0 and call.start_ns == call.end_ns == tool.end_ns
    for span in (call, agent):
        assert span.attributes["gen_ai.usage.input_tokens"] == _input(summary["usage"])
        assert span.attributes["gen_ai.usage.output_tokens"] == summary["usage"]["output_tokens"]


def test_an_agent_tool_that_failed_to_start_is_no_sub_agent():
    """custom-agent-2.1.6: the Task tool's result is an error text (no such agent type), no
    summary: a tool call that failed, nothing more."""
    run = Run(CLAUDE / "custom-agent-2.1.6.jsonl")
    assert not [r for r in run.records if r.name.startswith("invoke_agent ") and r.parent_span_id is not None]
    assert run.one("execute_tool Task").error_type == "tool_error"


def test_the_summary_counts_an_unseen_sub_agents_last_call_once(tmp_path):
    """2.1.224 without the sub-agent's task and own lines (3-9): with its result (line 12) the
    session's ``modelUsage`` is the total; cut off before it, every model call counts, the
    sub-agent's last call (its Agent tool's result, line 10) among them, once."""
    from tests.test_summary import run as summarise
    from tests.test_summary_usage import model_usage_total

    L = lines(IDEA)
    path, _ = _without(tmp_path, IDEA, set(range(3, 10)))
    report, _ = summarise(path)
    totals = report.collector.totals()
    assert (totals.input_tokens, totals.output_tokens) == model_usage_total(IDEA) == (166585, 998)
    path, _ = _without(tmp_path, IDEA, set(range(3, 10)) | {12})
    report, _ = summarise(path)
    totals = report.collector.totals()
    top = {L[n]["message"]["id"]: L[n]["message"]["usage"] for n in (2, 11)}  # one line each
    last = L[10]["tool_use_result"]["usage"]
    assert totals.input_tokens == sum(map(_input, top.values())) + _input(last) == 75525 + 23420
    assert totals.output_tokens == sum(u["output_tokens"] for u in top.values()) + last["output_tokens"] == 3 + 151
