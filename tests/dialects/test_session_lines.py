"""Decoding session lines: Claude Code (claude_code.py) and milk (milk.py), through the Decoder
registry, with lines written from the protocol documents."""

from __future__ import annotations

import json

from otelbridge import dialects
from otelbridge.events import (
    StreamTime,
    LineSeq,
    ModelCall,
    SessionError,
    SessionMark,
    SessionStarted,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    ToolResult,
    TurnResult,
    TurnStarted,
    UserMessage,
)
from otelbridge.lines import LineSplitter
from otelbridge.stats import Stats

MILK_ENV = {"session_id": "sess_1", "seq": 4, "ts": "2026-10-02T12:00:01.250Z"}
TS_NS = 1_790_942_401_250_000_000  # 2026-10-02T12:00:01.250Z


def decode(doc: dict, names=None):
    decoder = dialects.Decoder(dialects.load(names), Stats())
    return decoder.decode(json.dumps(doc).encode())


def test_claude_code_assistant_user_result_and_stream_events():
    (call,) = decode({
        "type": "assistant", "session_id": "s", "parent_tool_use_id": "tu_parent",
        "message": {"id": "msg_1", "model": "claude-x", "stop_reason": None, "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "tu_1", "name": "Agent",
             "input": {"subagent_type": "Explore", "description": "look"}}],
            "usage": {"input_tokens": 3, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 20,
                      "output_tokens": 4}}})
    assert isinstance(call, ModelCall) and call.phase == "line"
    assert (call.message_id, call.model, call.parent_tool_use_id) == ("msg_1", "claude-x", "tu_parent")
    assert call.usage.anthropic and call.usage.gen_ai_input_tokens() == 33
    (tool,) = call.tool_calls
    assert (tool.id, tool.name, tool.subagent_type, tool.description) == ("tu_1", "Agent", "Explore", "look")
    assert json.loads(tool.arguments) == {"subagent_type": "Explore", "description": "look"}

    results = decode({"type": "user", "session_id": "s", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "x"},
        {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "y"}], "is_error": True}]}})
    assert [(r.tool_use_id, r.is_error, r.content) for r in results] == [("a", False, "x"), ("b", True, "y")]
    (prompt,) = decode({"type": "user", "session_id": "s", "parent_tool_use_id": "tu_1",
                        "message": {"content": [{"type": "text", "text": "go"}]}})
    assert isinstance(prompt, UserMessage) and prompt.parent_tool_use_id == "tu_1"

    (start,) = decode({"type": "stream_event", "session_id": "s", "event": {
        "type": "message_start", "message": {"id": "msg_2", "model": "m", "usage": {"input_tokens": 1}}}})
    assert (start.phase, start.message_id) == ("start", "msg_2")
    (delta,) = decode({"type": "stream_event", "session_id": "s", "event": {
        "type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}})
    assert (delta.phase, delta.usage_final, delta.stop_reason, delta.usage.output_tokens) == (
        "delta", True, "end_turn", 9)
    assert decode({"type": "stream_event", "session_id": "s", "event": {
        "type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}}) == []

    (res,) = decode({"type": "result", "subtype": "success", "is_error": True, "session_id": "s",
                     "num_turns": 2, "duration_ms": 10, "total_cost_usd": 0.25, "errors": ["boom"],
                     "usage": {"input_tokens": 1, "output_tokens": 2},
                     "modelUsage": {"m": {"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3,
                                          "cacheCreationInputTokens": 4, "costUSD": 0.25}}})
    assert isinstance(res, TurnResult)
    assert (res.subtype, res.is_error, res.num_turns, res.error, res.final) == ("success", True, 2, "boom", False)
    assert res.model_usage["m"].gen_ai_input_tokens() == 8 and res.model_usage["m"].cost_usd == 0.25

    (init,) = decode({"type": "system", "subtype": "init", "session_id": "s", "model": "m",
                      "claude_code_version": "2.1.6"})
    assert isinstance(init, SessionStarted)
    assert (init.agent_name, init.provider, init.model, init.version) == ("claude-code", "anthropic", "m", "2.1.6")


def test_claude_code_non_workflow_tasks():
    (started,) = decode({"type": "system", "subtype": "task_started", "session_id": "s", "task_id": "t",
                         "tool_use_id": "tu", "task_type": "local_agent", "subagent_type": "Explore"})
    assert isinstance(started, TaskStarted) and started.subagent_type == "Explore"
    (progress,) = decode({"type": "system", "subtype": "task_progress", "session_id": "s", "task_id": "t",
                          "usage": {"total_tokens": 5}})
    assert isinstance(progress, TaskProgress) and progress.usage.total_tokens == 5
    (note,) = decode({"type": "system", "subtype": "task_notification", "session_id": "s", "task_id": "t",
                      "tool_use_id": "tu", "status": "completed"})
    assert isinstance(note, TaskNotification) and note.tool_use_id == "tu"


def test_milk_envelope_lines_and_shared_parsers():
    out = decode({"type": "system", "subtype": "init", **MILK_ENV,
                  "agent": {"name": "qwen-local", "provider": "local", "model": "qwen"},
                  "milk_version": "0.9.0", "warnings": ["w1"]})
    assert [type(e) for e in out] == [LineSeq, SessionStarted, SessionMark]
    seq, init, warn = out
    assert (seq.seq, seq.ts_ns, seq.session_id) == (4, TS_NS, "sess_1")
    assert (init.agent_name, init.provider, init.model, init.version) == ("qwen-local", "local", "qwen", "0.9.0")
    assert (warn.name, warn.attributes) == ("warning", {"message": "w1"})

    # milk's user tool_result: parent_tool_use_id is the answered tool; the summary's is_error counts
    _, result = decode({"type": "user", **MILK_ENV, "parent_tool_use_id": "toolu_1",
                        "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]},
                        "tool_use_result": {"is_error": True}})
    assert isinstance(result, ToolResult) and (result.tool_use_id, result.is_error) == ("toolu_1", True)

    out = decode({"type": "result", "subtype": "interrupted", **MILK_ENV, "is_error": False,
                  "route_history": [{"turn": 0, "target": "primary"}],
                  "model_usage": {"q": {"input_tokens": 5, "output_tokens": 1, "cache_read": 7, "cache_creation": 0}}})
    assert [type(e) for e in out] == [LineSeq, SessionMark, TurnResult]  # the result last: it ends the session
    res = out[-1]
    assert res.final and res.usage is None and res.subtype == "interrupted"
    q = res.model_usage["q"]
    # milk's input_tokens leaves the cache out: GenAI input adds it
    assert (q.input_tokens, q.cache_read, q.gen_ai_input_tokens()) == (5, 7, 12)
    assert out[1].attributes == {"targets": ["primary"], "count": 1}

    _, err = decode({"type": "system", "subtype": "error", **MILK_ENV, "message": "boom", "recoverable": False})
    assert isinstance(err, SessionError) and (err.message, err.recoverable) == ("boom", False)
    _, switch = decode({"type": "system", "subtype": "agent_switch", **MILK_ENV,
                        "agent": {"name": "claude", "provider": "claude-cli", "model": "sonnet"},
                        "reason": "escalate"})
    assert (switch.model, switch.provider) == ("sonnet", "claude-cli")
    assert switch.attributes == {"gen_ai.agent.name": "claude", "gen_ai.provider.name": "claude-cli",
                                 "gen_ai.request.model": "sonnet", "reason": "escalate"}
    # the catalog's notices: session marks of their own names, their fields as attributes
    _, denied = decode({"type": "system", "subtype": "permission_denied", **MILK_ENV, "tool_use_id": "toolu_1",
                        "tool_name": "bash", "reason": "denied by policy"})
    assert (denied.name, denied.attributes) == (
        "permission_denied", {"tool_use_id": "toolu_1", "tool_name": "bash", "reason": "denied by policy"})
    _, note = decode({"type": "system", "subtype": "notification", **MILK_ENV, "text": "agent running"})
    assert (note.name, note.attributes) == ("notification", {"text": "agent running"})
    # unknown types and subtypes: only the seq
    assert [type(e) for e in decode({"type": "brand_new", **MILK_ENV})] == [LineSeq]


def test_milk_lines_are_not_decoded_twice_and_tasks_are_the_claude_family():
    doc = {"type": "assistant", **MILK_ENV, "message": {"id": "m", "content": []}}
    assert [type(e) for e in decode(doc)] == [LineSeq, ModelCall]
    # claude_code leaves milk's lines to milk.py: only the line's own time reaches the clock
    assert [type(e) for e in decode(doc, ["claude_code"])] == [StreamTime]
    task = {"type": "system", "subtype": "task_started", **MILK_ENV, "task_id": "t", "task_type": "Bash"}
    assert [type(e) for e in decode(task)] == [TaskStarted, LineSeq]


def test_content_block_deltas_are_not_offered_by_the_splitter():
    """The bulk of a Claude Code stream never reaches the JSON decoder."""
    markers = dialects.Decoder(dialects.load(["claude_code"]), Stats()).markers
    delta = json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": "hello"}}, "session_id": "s",
                        "parent_tool_use_id": None, "uuid": "u"}).encode()
    wanted = [json.dumps(d).encode() for d in (
        {"type": "assistant", "message": {}}, {"type": "user", "message": {}},
        {"type": "result", "subtype": "success"}, {"type": "system", "subtype": "init"},
        {"type": "stream_event", "event": {"type": "message_delta"}},
        {"type": "stream_event", "event": {"type": "message_start"}})]
    offered = []
    splitter = LineSplitter(markers, offered.append, Stats())
    data = b"\n".join([delta] * 50 + wanted + [delta]) + b"\n"
    splitter.feed(data, len(data))
    assert offered == wanted


def test_caudra_turn_start_and_result_run():
    (start,) = decode({"type": "system", "subtype": "turn_start", "session_id": "s", "run_id": 3,
                       "automatic": True, "task_event_ids": ["a", "b"], "workflow_events": [],
                       "automation_events": [{"automation": "x", "fire_id": "f", "seq": 0}]})
    assert isinstance(start, TurnStarted)
    assert (start.run_id, start.automatic, start.task_events, start.workflow_events, start.automation_events) == (
        "3", True, 2, 0, 1)
    (res,) = decode({"type": "result", "subtype": "success", "session_id": "s", "background_active": 2,
                     "run": {"run_id": "r-9"}})
    assert (res.run_id, res.background_active) == ("r-9", 2)


def test_an_api_error_message_names_no_model_and_keeps_its_error():
    """Claude Code's text for a failed call: ``model: "<synthetic>"`` or ``is_api_error_message``
    (then sometimes without ``message.id`` or ``model``: the line's ``uuid`` names the call)."""
    from otelbridge.dialects import LineInfo
    from otelbridge.dialects.claude_code import parse_assistant

    info = LineInfo("s", None)
    (ev,) = parse_assistant({"type": "assistant", "error": "authentication_failed", "is_api_error_message": True,
                             "uuid": "u-1", "message": {"model": "<synthetic>", "content": [
                                 {"type": "text", "text": "Not logged in"}]}}, info)
    assert (ev.model, ev.message_id, ev.api_error, ev.api_error_text) == (
        None, "u-1", "authentication_failed", "Not logged in")
    (ev,) = parse_assistant({"type": "assistant", "is_api_error_message": True,
                             "message": {"id": "m-1", "content": []}}, info)
    assert (ev.model, ev.message_id, ev.api_error) == (None, "m-1", "api_error")
    (ok,) = parse_assistant({"type": "assistant", "message": {"id": "m-2", "model": "claude-x"}}, info)
    assert (ok.model, ok.api_error) == ("claude-x", None)
