"""Current Claude Code recordings (2.1.2xx) through the decoder and the tracker, in-process:
the tree SPAN-MODEL.md describes ("Turns", "Tasks", "Model calls that never reached a model",
"Time"). Every expected value is read from the recording line named beside it."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLES
from tests.tracker.recording import CLAUDE, MS, RECORDINGS, WALL, Run, iso_ns, lines

needs_fixtures = pytest.mark.skipif(not CLAUDE.is_dir(), reason="shared fixtures not present")

PHASED = CLAUDE / "claudecli-go-workflow-phased-2.1.270.jsonl"
WAKE = CLAUDE / "claudecli-go-bg-bash-wake-2.1.280.jsonl"
AGENT = CLAUDE / "claudecli-go-agent-subagent-2.1.87.jsonl"
NO_TS = CLAUDE / "claudecli-go-basic-thinking-2.1.68.jsonl"
API_ERROR = CLAUDE / "error-turn-invalid-model-2.1.206.jsonl"
EXPLORE = CLAUDE / "subagent-explore-2.1.178.jsonl"
TASK_TOOL = CLAUDE / "task-tool-2.1.6.jsonl"
ALL = (sorted(CLAUDE.glob("*.jsonl")) if CLAUDE.is_dir() else []) + sorted(RECORDINGS.glob("*.jsonl"))


def _line(doc: dict) -> str:
    """One stream-json line of session ``s``."""
    return json.dumps({"session_id": "s", **doc}) + "\n"


@needs_fixtures
def test_phased_workflow_deferred_results_pair_with_turns_in_order():
    L = lines(PHASED)
    run = Run(PHASED)
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    session = run.one("invoke_agent claude-code")
    # line 1 (init, no timestamp) opens turn 1 and takes the first timestamp (line 2)
    assert t1.start_ns == iso_ns(L[2]["timestamp"])
    # results 30 and 31 both come after turn 2's init (line 28): result 30 is turn 1's, deferred,
    # so turn 1 lasts its duration_ms (7594), not until line 30
    assert L[30]["result_index"] == 0 and L[31]["result_index"] == 1
    assert t1.end_ns - t1.start_ns == L[30]["duration_ms"] * MS
    assert t1.attributes["turn.result_index"] == 0 and t1.attributes["turn.result"] is True
    assert t2.attributes["turn.result_index"] == 1 and t2.attributes["result.duration_ms"] == L[31]["duration_ms"]
    # turn 2 is open when its result (line 31, no timestamp) comes: it ends at the stream clock,
    # line 29's timestamp, and starts no later than that − duration_ms
    assert t2.end_ns == iso_ns(L[29]["timestamp"])
    assert t2.start_ns <= t2.end_ns - L[31]["duration_ms"] * MS
    assert t1.error is None and t2.error is None and session.error is None
    # line 29's model call is turn 2's, not turn 1's
    (chat29,) = run.attr("gen_ai.response.id", L[29]["message"]["id"])
    assert chat29.parent_span_id == t2.span_id
    (chat11,) = run.attr("gen_ai.response.id", L[11]["message"]["id"])
    assert chat11.parent_span_id == t1.span_id and t1.start_ns <= chat11.start_ns <= t1.end_ns
    assert t1.parent_span_id == t2.parent_span_id == session.span_id
    # the session's cost is cumulative, and line 30 came after turn 2 began: both results carry
    # one total (and one modelUsage), turn 2's spend in turn 1's figure; neither turn's own
    # cost is known, the session's is the last value
    assert L[30]["total_cost_usd"] == L[31]["total_cost_usd"] and L[30]["modelUsage"] == L[31]["modelUsage"]
    assert L[31]["usage"]["output_tokens"] > 0  # turn 2 cost something
    assert "turn.cost_usd" not in t1.attributes and "turn.cost_usd" not in t2.attributes
    assert t2.attributes["result.total_cost_usd"] == session.attributes["result.total_cost_usd"] \
        == L[31]["total_cost_usd"]
    # the usage parts Claude Code adds: thinking tokens, the 1 h cache write (line 2)
    assert t1.attributes["gen_ai.usage.reasoning.output_tokens"] == \
        L[30]["usage"]["output_tokens_details"]["thinking_tokens"]
    # the session's usage is modelUsage's: its thinking tokens too, summed over the models
    assert session.attributes["gen_ai.usage.reasoning.output_tokens"] == \
        sum(m["thinkingTokens"] for m in L[31]["modelUsage"].values())
    (chat2,) = run.attr("gen_ai.response.id", L[2]["message"]["id"])
    assert chat2.attributes["anthropic.usage.cache_creation.ephemeral_1h_input_tokens"] == \
        L[2]["message"]["usage"]["cache_creation"]["ephemeral_1h_input_tokens"]


@needs_fixtures
def test_phased_workflow_tasks_of_a_workflow_agent_stay_under_the_session():
    L = lines(PHASED)
    run = Run(PHASED)
    session = run.one("invoke_agent claude-code")
    for n in (17, 18):  # owned_by_subagent local_bash tasks whose tool call is not in the stream
        (task,) = run.attr("task.id", L[n]["task_id"])
        assert task.name == f"task {L[n]['task_type']}"
        assert task.parent_span_id == session.span_id
        assert task.attributes["task.owned_by_subagent"] is L[n]["owned_by_subagent"] is True
        assert task.attributes["task.is_backgrounded"] is L[n]["is_backgrounded"] is False
    (tool,) = run.attr("gen_ai.tool.call.id", L[8]["tool_use_id"])
    assert tool.name == "execute_tool Workflow"
    # queued agents without agentId yet (line 10: sleeper-b) are keyed by index: one span each,
    # with the agentId a later snapshot (line 24) gives
    last = {e["label"]: e for e in L[24]["workflow_progress"] if e.get("type") == "workflow_agent"}
    queued = [e for e in L[10]["workflow_progress"] if e.get("type") == "workflow_agent" and not e.get("agentId")]
    assert [e["label"] for e in queued] == ["sleeper-b"]
    (b,) = run.named("invoke_agent sleeper-b")
    assert b.attributes["gen_ai.agent.id"] == last["sleeper-b"]["agentId"]
    assert run.one(f"invoke_workflow {L[8]['workflow_name']}")


@needs_fixtures
def test_phased_workflow_agent_ends_at_its_last_progress_when_duration_counts_from_later():
    """Claude Code counts ``durationMs`` from when an agent got its ``agentId`` (sleeper-b: line
    12, 1.2 s after its ``startedAt``): ``startedAt + durationMs`` would end it before line 21,
    which still shows it running, and before sleeper-a, which line 21 shows done."""
    L = lines(PHASED)
    run = Run(PHASED)
    agents = lambda n: {e["label"]: e for e in L[n]["workflow_progress"] if e.get("type") == "workflow_agent"}
    b21, b22, a21 = agents(21)["sleeper-b"], agents(22)["sleeper-b"], agents(21)["sleeper-a"]
    assert (b21["state"], b22["state"], a21["state"]) == ("progress", "done", "done")
    assert b22["startedAt"] + b22["durationMs"] < b22["lastProgressAt"]  # the case at hand
    assert b22["lastProgressAt"] == agents(12)["sleeper-b"]["lastProgressAt"] + b22["durationMs"]
    a, b = run.one("invoke_agent sleeper-a"), run.one("invoke_agent sleeper-b")
    assert b.start_ns == b22["startedAt"] * MS
    assert b.end_ns == b22["lastProgressAt"] * MS
    assert a.end_ns == a21["lastProgressAt"] * MS < b.end_ns
    sleep, join = run.one("phase Sleep"), run.one("phase Join")
    joiner = agents(22)["joiner"]
    assert sleep.end_ns == b.end_ns <= join.start_ns == joiner["startedAt"] * MS


@needs_fixtures
def test_tool_arguments_are_the_inputs_as_the_tools_got_them():
    """The Workflow tool's ``input`` (line 6) is a string of JSON cut at 200 characters; the
    line's ``wire_tool_inputs`` holds the object the tool got: that is the arguments. A string
    that holds a whole JSON document is that document, not a string of it."""
    L = lines(PHASED)
    run = Run(PHASED, capture_content=True)
    (use,) = [b for b in L[6]["message"]["content"] if b.get("type") == "tool_use"]
    assert isinstance(use["input"], str) and len(use["input"]) == 200
    with pytest.raises(ValueError):
        json.loads(use["input"])
    (tool,) = run.attr("gen_ai.tool.call.id", use["id"])
    assert tool.name == "execute_tool Workflow"
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == L[6]["wire_tool_inputs"][use["id"]]
    (skill,) = [b for b in L[3]["message"]["content"] if b.get("type") == "tool_use"]
    (tool,) = run.attr("gen_ai.tool.call.id", skill["id"])
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == skill["input"] \
        == L[3]["wire_tool_inputs"][skill["id"]]

    from otelbridge.dialects.claude_code import _arguments
    script = {"script": "export const meta = {\n  name: 'x' }"}
    assert json.loads(_arguments(json.dumps(script))) == script
    assert json.loads(_arguments('{"script": "cut sh')) == '{"script": "cut sh'
    assert json.loads(_arguments("ls -la")) == "ls -la"


@needs_fixtures
@pytest.mark.parametrize("path", [TASK_TOOL, AGENT, EXPLORE], ids=lambda p: p.name)
def test_a_subagent_is_known_by_the_agent_id_its_tools_result_names(path):
    """2.1.6 prints no task lines: the sub-agent's id is only in its Task tool's result
    (``tool_use_result.agentId``); later versions give it as the task's id too, the same."""
    L = lines(path)
    results = {n: d["tool_use_result"]["agentId"] for n, d in L.items()
               if isinstance(d.get("tool_use_result"), dict) and "agentId" in d["tool_use_result"]}
    (n, agent_id), = results.items()
    (block,) = [b for b in L[n]["message"]["content"] if b.get("type") == "tool_result"]
    run = Run(path)
    (agent,) = [r for r in run.records if r.name.startswith("invoke_agent ") and r.name != "invoke_agent claude-code"]
    assert agent.attributes["task.tool_use_id"] == block["tool_use_id"]
    assert agent.attributes["gen_ai.agent.id"] == agent_id


@needs_fixtures
def test_background_bash_hangs_off_its_tool_call_and_the_woken_turn_is_turn_2():
    L = lines(WAKE)
    run = Run(WAKE)
    (task,) = run.attr("task.id", L[6]["task_id"])
    (tool,) = run.attr("gen_ai.tool.call.id", L[6]["tool_use_id"])
    assert L[6]["is_backgrounded"] is True
    assert task.name == "task local_bash" and task.parent_span_id == tool.span_id
    assert task.attributes["task.is_backgrounded"] is True  # why it outlives its tool call
    assert "task.owned_by_subagent" not in task.attributes  # the stream did not say
    assert task.start_ns >= tool.start_ns == iso_ns(L[4]["timestamp"])
    assert tool.end_ns == iso_ns(L[7]["timestamp"])  # the tool answers at launch (line 7) ...
    assert task.end_ns == L[12]["patch"]["end_time"] * MS  # ... the task ends at end_time (line 12)
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    # turn 1 ends at its result (line 10, no timestamp: the stream clock, line 9's time)
    assert t1.end_ns == iso_ns(L[9]["timestamp"]) and t1.attributes["turn.result_index"] == 0
    # the notification (line 13) wakes turn 2 at the init of line 14; its result is line 17
    assert t2.attributes["turn.result_index"] == L[17]["result_index"] == 1
    # its init (line 14) and result (line 17) carry no timestamp: both take the stream clock,
    # which bounds them from below (the task's end_time, line 16's time). It starts at its init,
    # after the task that woke it ended, and lasts its duration_ms (past line 16: 1995 ms from
    # 21.743 s is 23.738 s), not pulled back to 31 ms before the task ended
    assert t2.start_ns == L[12]["patch"]["end_time"] * MS == task.end_ns
    assert t2.end_ns == t2.start_ns + L[17]["duration_ms"] * MS > iso_ns(L[16]["timestamp"])
    (chat15,) = run.attr("gen_ai.response.id", L[15]["message"]["id"])
    assert chat15.parent_span_id == t2.span_id
    assert len(run.named("task local_bash")) == 1  # one span for the task, none at session level


@needs_fixtures
def test_lines_before_the_first_timestamp_take_it():
    L = lines(AGENT)
    run = Run(AGENT)
    first = iso_ns(L[4]["timestamp"])  # lines 1-3 carry no timestamp
    (chat2,) = run.attr("gen_ai.response.id", L[2]["message"]["id"])
    # the turn's first model call starts with the turn (its result, line 12, at the stream
    # clock, line 10's time, − duration_ms), not at the first timestamp its untimed lines took:
    # it was asked for at the prompt
    turn = run.one("turn 1")
    assert chat2.start_ns == turn.start_ns == iso_ns(L[10]["timestamp"]) - L[12]["duration_ms"] * MS < first
    assert chat2.parent_span_id == turn.span_id
    (tool,) = run.attr("gen_ai.tool.call.id", L[3]["tool_use_id"])
    (agent,) = run.attr("task.id", L[3]["task_id"])
    assert tool.start_ns == first and agent.parent_span_id == tool.span_id
    assert tool.start_ns <= agent.start_ns and agent.end_ns <= tool.end_ns == iso_ns(L[10]["timestamp"])
    # nothing is dated from the wall clock of another day
    day = 24 * 3600 * 10**9
    assert all(abs(r.start_ns - first) < day and abs(r.end_ns - first) < day for r in run.records)


@needs_fixtures
def test_a_recording_without_any_timestamp_takes_the_wall_clock():
    L = lines(NO_TS)
    run = Run(NO_TS)
    turn = run.one("turn 1")
    assert turn.end_ns == WALL and turn.start_ns == WALL - L[5]["duration_ms"] * MS
    (chat,) = run.attr("gen_ai.response.id", L[2]["message"]["id"])
    assert chat.start_ns == WALL and chat.parent_span_id == turn.span_id


@needs_fixtures
def test_an_api_error_message_is_an_error_chat_never_a_synthetic_model():
    L = lines(API_ERROR)
    assert L[3]["message"]["model"] == "<synthetic>"
    run = Run(API_ERROR)
    (chat,) = run.attr("gen_ai.response.id", L[3]["message"]["id"])
    assert "<synthetic>" not in chat.name and "gen_ai.request.model" not in chat.attributes
    # no response came: no response model, no finish reason (its stop_sequence is the CLI's
    # filler): the error says what happened
    assert L[3]["message"]["stop_reason"] == "stop_sequence"
    assert not {"gen_ai.response.model", "gen_ai.response.finish_reasons"} & set(chat.attributes)
    assert chat.error_type == L[3]["error"] == "model_not_found"
    assert chat.error == L[3]["message"]["content"][0]["text"]


@needs_fixtures
def test_an_api_errors_turn_and_session_say_the_apis_message():
    """The result of an API error carries the API's message as its text (``result``) and a
    generic ``error`` ("This session could not be resumed…"): the turn and the session fail
    with the API's message."""
    L = lines(API_ERROR)
    assert L[4]["api_error_status"] == 404 and "could not be resumed" in L[4]["error"]
    run = Run(API_ERROR)
    turn, session = run.one("turn 1"), run.one("invoke_agent claude-code")
    assert turn.error == session.error == L[4]["result"]


@needs_fixtures
def test_an_api_error_chat_is_named_by_the_init_model(tmp_path):
    """The same line after an ``init`` naming the session's model: ``chat {that model}``."""
    raw = API_ERROR.read_bytes().splitlines()
    init = (b'{"type":"system","subtype":"init","model":"claude-nonexistent-9","claude_code_version":'
            b'"2.1.206","session_id":"265a9f5b-b1f5-4711-8684-fac7906c33a3"}')
    path = tmp_path / "with-init.jsonl"
    path.write_bytes(b"\n".join([init, *raw]) + b"\n")
    run = Run(path)
    (chat,) = [r for r in run.records if r.name.startswith("chat ")]
    assert chat.name == "chat claude-nonexistent-9" and chat.error_type == "model_not_found"


@needs_fixtures
def test_foreground_subagent_lies_inside_its_tool_call():
    L = lines(EXPLORE)
    run = Run(EXPLORE)
    (agent,) = run.attr("task.id", L[15]["task_id"])
    tool = run.by_id(agent.parent_span_id)
    assert tool.attributes["gen_ai.tool.call.id"] == L[15]["tool_use_id"]
    assert tool.start_ns <= agent.start_ns and agent.end_ns <= tool.end_ns


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_recording_gives_a_well_formed_tree(path):
    run = Run(path)
    ids = {r.span_id: r for r in run.records}
    assert len(ids) == len(run.records)  # every span once
    for r in run.records:
        assert r.end_ns >= r.start_ns
        assert "<synthetic>" not in r.name
        parent = ids.get(r.parent_span_id)
        # a turn holds its model calls (a tool call may outlive the call that asked for it;
        # background tasks may outlive everything)
        if parent is not None and parent.name.startswith("turn ") and r.name.startswith("chat "):
            assert parent.start_ns <= r.start_ns and r.end_ns <= parent.end_ns, (r.name, parent.name)
    incomplete = [r.name for r in run.records if r.error_type == "incomplete" and r.name.startswith("turn ")]
    assert len(incomplete) <= 1  # only the turn open at end of input


RESUME = RECORDINGS / "claudecli-go-task-notification-resume-2.1.280.jsonl"


def test_resumed_session_lines_before_the_first_timestamp_and_a_stale_notification():
    L = lines(RESUME)
    run = Run(RESUME)
    first = iso_ns(L[5]["timestamp"])  # lines 1-4 carry none
    # line 1: a task of the previous process, never started here: zero length, under the session
    (note,) = run.attr("task.id", L[1]["task_id"])
    session = run.one("invoke_agent claude-code")
    assert note.name == "task notification" and note.parent_span_id == session.span_id
    assert note.start_ns == note.end_ns == first
    assert note.attributes["task.status"] == L[1]["status"] == "stopped"
    # line 2 opens turn 1, whose num_turns-0 result (line 3) ends it at the first timestamp
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    assert t1.end_ns == first and t1.start_ns == first - L[3]["duration_ms"] * MS
    assert t1.attributes["turn.result_index"] == L[3]["result_index"] == 0
    # line 4 opens turn 2; its result (line 8) comes at the stream clock (line 7's time), and
    # the turn starts no later than that − its duration_ms
    end = iso_ns(L[7]["timestamp"])
    assert t2.end_ns == end and t2.start_ns == min(first, end - L[8]["duration_ms"] * MS)
    assert t2.attributes["turn.result_index"] == 1
    assert t2.attributes["gen_ai.usage.reasoning.output_tokens"] == \
        L[8]["usage"]["output_tokens_details"]["thinking_tokens"]
    # nothing from the wall clock of another day
    assert all(first - 10**9 <= r.start_ns <= r.end_ns <= iso_ns(L[7]["timestamp"]) for r in run.records)


@needs_fixtures
def test_a_recording_piped_in_a_minute_after_it_was_made_is_dated_by_its_own_timestamps():
    """``claude -p … > out.jsonl; otelbridge < out.jsonl``: the lines come at once, a minute
    after their timestamps. Lines without one (init, results, task lines) are dated in the
    stream's frame, so each turn holds its model calls and the session lasts as the stream
    says, not the wall clock's few milliseconds."""
    L = lines(WAKE)
    stamped = [iso_ns(d["timestamp"]) for d in L.values() if "timestamp" in d]
    first, last = min(stamped), max(stamped)
    run = Run(WAKE, mode="auto", arrival=lambda n: first + 60_000 * MS + n * MS)
    assert run.outside_parents() == []
    t1, session = run.one("turn 1"), run.one("invoke_agent claude-code")
    assert t1.end_ns - t1.start_ns == L[10]["duration_ms"] * MS
    assert first - 10**9 <= session.start_ns and session.end_ns - session.start_ns >= last - first
    assert all(first - 10**9 <= r.start_ns <= r.end_ns <= last + 10**9 for r in run.records)


@needs_fixtures
def test_a_first_timestamp_after_the_wait_moves_the_open_runs_to_the_streams_day():
    """A recording of another day paced at 0.1 s a line: its first timestamp (line 16) comes
    1.6 s after its first line, when ``auto`` has settled on the wall clock. The runs still
    open — the session, the turn, the Agent tool call and its sub-agent (line 15) — move to the
    recording's day with it, just before line 16, as far apart as they came (their lines were
    dated as they came, not by a stream clock standing still: the sub-agent's prompt moves
    nothing)."""
    L = lines(EXPLORE)
    run = Run(EXPLORE, mode="auto", arrival=lambda n: WALL + n * 100 * MS)
    assert run.outside_parents() == []
    agent, tool = run.one("invoke_agent Explore"), run.one("execute_tool Agent")
    assert agent.parent_span_id == tool.span_id
    ts16 = iso_ns(L[16]["timestamp"])
    # line 15 (task_started) came 0.1 s before line 16; line 14 (the Agent call) 0.2 s before
    assert L[16]["parent_tool_use_id"] == L[14]["message"]["content"][0]["id"]
    assert (tool.start_ns, agent.start_ns) == (ts16 - 200 * MS, ts16 - 100 * MS)
    assert agent.end_ns >= iso_ns(L[19]["timestamp"])
    assert all(abs(r.start_ns - ts16) < 60 * 10**9 for r in run.records)


def workflow_agents(run: Run) -> list:
    return [r for r in run.records if "workflow.agent.index" in r.attributes]


@needs_fixtures
@pytest.mark.parametrize("capture", [False, True], ids=["default", "capture-content"])
def test_a_workflow_agent_labelled_by_its_prompt_is_named_by_its_index_unless_content_is_captured(capture):
    """workflow-probe-2.1.206: the workflow gave its agents no label, so Claude Code labelled
    each by the start of its prompt — content: exported only with --capture-content."""
    probe = CLAUDE / "workflow-probe-2.1.206.jsonl"
    entries = {e["index"]: e for doc in lines(probe).values()
               for e in doc.get("workflow_progress") or () if e.get("type") == "workflow_agent"}
    agents = workflow_agents(Run(probe, capture_content=capture))
    assert len(agents) == len(entries) == 2
    for rec in agents:
        entry = entries[rec.attributes["workflow.agent.index"]]
        assert entry["promptPreview"].startswith(entry["label"])
        if capture:
            assert rec.name == f"invoke_agent {entry['label']}"
            assert rec.attributes["gen_ai.agent.name"] == entry["label"]
        else:
            assert rec.name == f"invoke_agent #{entry['index']}"
            assert "gen_ai.agent.name" not in rec.attributes
            assert not any(entry["label"] in str(v) for v in rec.attributes.values())


@needs_fixtures
@pytest.mark.parametrize("preview", [
    lambda p: p[:30] + "…",                       # a preview cut before the label ends
    lambda p: p.replace(" ", "  ", 3),             # blanks the label has as one
    lambda p: p.replace(" ", "\n", 1),             # a line end where the label has a space
    lambda p: p[:1].lower() + p[1:],               # another case
], ids=["cut", "double-space", "line-end", "case"])
def test_a_label_that_is_the_prompt_spelt_otherwise_is_still_not_exported(tmp_path, preview):
    """The label Claude Code made of the prompt is content even where the preview differs from
    it in blanks, case or length: not the span's name, not an attribute."""
    src = CLAUDE / "workflow-probe-2.1.206.jsonl"
    out, labels = [], set()
    for raw in src.read_bytes().splitlines():
        try:
            doc = json.loads(raw)
        except ValueError:
            out.append(raw.decode())
            continue
        for e in (doc.get("workflow_progress") or ()) if isinstance(doc, dict) else ():
            if e.get("type") == "workflow_agent" and e.get("promptPreview"):
                e["promptPreview"] = preview(e["promptPreview"])
                labels.add(e["label"])
        out.append(json.dumps(doc))
    path = tmp_path / "probe.jsonl"
    path.write_text("\n".join(out) + "\n")
    agents = workflow_agents(Run(path))
    assert len(agents) == 2 and len(labels) == 2
    assert sorted(r.name for r in agents) == sorted(f"invoke_agent #{r.attributes['workflow.agent.index']}"
                                                    for r in agents)
    for rec in agents:
        assert "gen_ai.agent.name" not in rec.attributes
        assert not any(label in str(v) for v in rec.attributes.values() for label in labels)


@needs_fixtures
def test_a_workflow_agents_own_label_is_its_name():
    entries = {e["index"]: e for doc in lines(PHASED).values()
               for e in doc.get("workflow_progress") or () if e.get("type") == "workflow_agent"}
    agents = workflow_agents(Run(PHASED))
    assert sorted(r.name for r in agents) == sorted(f"invoke_agent {e['label']}" for e in entries.values())
    assert {r.attributes["gen_ai.agent.name"] for r in agents} == {"sleeper-a", "sleeper-b", "joiner"}


@needs_fixtures
def test_a_sub_agent_read_from_the_middle_of_its_stream_is_one_sub_agent(tmp_path):
    """idea-planner from its 4th line on (``follow`` starting at a file's end mid-run): the
    ``Agent`` tool call and its ``task_started`` are unseen; the task's progress lines name the
    sub-agent type, so its lines, progress and notification make one ``invoke_agent Explore``
    span, ended by its notification — no ``task`` span left without an end."""
    path = CLAUDE / "idea-planner-explore-subagent-2.1.224.jsonl"
    L = lines(path)
    assert L[3]["subtype"] == "task_started" and L[4]["subtype"] == "task_progress"
    cut = tmp_path / "from-line-4.jsonl"
    cut.write_bytes(b"\n".join(path.read_bytes().splitlines()[3:]) + b"\n")
    run = Run(cut)
    (agent,) = [r for r in run.records if r.name.startswith("invoke_agent ") and r.name != "invoke_agent claude-code"]
    assert agent.name == f"invoke_agent {L[4]['subagent_type']}"
    assert agent.error is None
    assert not [r for r in run.records if r.name.startswith("task ")]


@needs_fixtures
def test_a_turns_one_model_call_takes_its_results_output_tokens():
    """An assistant line's usage is a snapshot taken at its start (``output_tokens: 3`` for a
    call whose result says 997): a turn's one model call takes the result's count. Turns of
    several calls keep each call's own (the stream does not say how they share it)."""
    L = lines(NO_TS)
    (result,) = [l for l in L.values() if l.get("type") == "result"]
    snapshots = {l["message"]["usage"]["output_tokens"] for l in L.values() if l.get("type") == "assistant"}
    assert max(snapshots) < result["usage"]["output_tokens"] == 997
    run = Run(NO_TS)
    (chat,) = [r for r in run.records if r.name.startswith("chat ")]
    assert chat.attributes["gen_ai.usage.output_tokens"] == 997
    assert chat.attributes["gen_ai.usage.input_tokens"] == run.one("turn 1").attributes["gen_ai.usage.input_tokens"]
    # the phased recording: turn 1 made three calls, which keep their lines' own counts (3 + 16
    # + 41 of its result's 600); turn 2's one call takes its result's 12 (its line said 8)
    L = lines(PHASED)
    run = Run(PHASED)
    chats = {}
    for name in ("turn 1", "turn 2"):
        turn = run.one(name)
        chats[name] = [r for r in run.records if r.name.startswith("chat ") and r.parent_span_id == turn.span_id]
    assert len(chats["turn 1"]) == 3
    for chat in chats["turn 1"]:
        mid = chat.attributes["gen_ai.response.id"]
        said = [l["message"]["usage"]["output_tokens"] for l in L.values()
                if l.get("type") == "assistant" and l["message"]["id"] == mid]
        assert chat.attributes["gen_ai.usage.output_tokens"] == max(said)
    (last,) = chats["turn 2"]
    assert L[31]["result_index"] == 1
    assert last.attributes["gen_ai.usage.output_tokens"] == L[31]["usage"]["output_tokens"] == 12


@needs_fixtures
def test_a_turns_cost_is_the_difference_without_float_noise():
    """The bg-bash-wake recording's turn 2 cost 0.0046249 USD: the difference of the cumulative
    costs is exported as that, not 0.004624900000000001."""
    L = lines(WAKE)
    costs = [l["total_cost_usd"] for l in L.values() if l.get("type") == "result"]
    assert len(costs) == 2 and costs[1] - costs[0] != round(costs[1] - costs[0], 12)
    assert Run(WAKE).one("turn 2").attributes["turn.cost_usd"] == round(costs[1] - costs[0], 12) == 0.0046249


@needs_fixtures
def test_turns_without_timestamps_on_their_results_follow_one_another():
    """workflow-probe: neither result carries a timestamp, and the stream clock stands still
    while the workflow's notification wakes turn 2 (its result says origin task-notification).
    Each turn lasts its duration_ms; the woken turn from when it opened, so it begins after
    turn 1 ended and after the workflow that woke it ended (it was pulled back 349 ms into turn
    1 and 1.59 s before that workflow's end). Turn 1, a prompt's, is pulled back as before."""
    path = CLAUDE / "workflow-probe-2.1.206.jsonl"
    L = lines(path)
    results = [n for n, l in L.items() if l.get("type") == "result"]
    assert len(results) == 2 and not any("timestamp" in L[n] for n in results)
    run = Run(path)
    t1, t2 = run.one("turn 1"), run.one("turn 2")
    (workflow,) = [r for r in run.records if r.name.startswith("invoke_workflow")]
    assert t1.end_ns - t1.start_ns == L[results[0]]["duration_ms"] * MS
    assert t2.end_ns - t2.start_ns == L[results[1]]["duration_ms"] * MS
    assert t1.end_ns <= t2.start_ns and workflow.end_ns <= t2.start_ns
    assert L[results[1]]["origin"]["kind"] == "task-notification" and "origin" not in L[results[0]]


@needs_fixtures
def test_a_model_call_cut_by_an_interrupt_is_an_error():
    """interrupt-2.1.276: the message's stream began (message_start) and never ended (no
    message_delta) before the interrupt; the result says aborted_streaming; the turn carries
    an ``interrupted`` event where the user line says the user stopped it. The call is ERROR
    too, not OK under an ERROR turn; the model answered (its message_start names it), so it
    keeps gen_ai.response.model. Calls whose stream ended stay OK (workflow-probe)."""
    path = CLAUDE / "interrupt-2.1.276.jsonl"
    L = lines(path)
    (result,) = [l for l in L.values() if l.get("type") == "result"]
    assert result["is_error"] and result["terminal_reason"] == "aborted_streaming"
    run = Run(path)
    (chat,) = [r for r in run.records if r.name.startswith("chat ")]
    assert chat.error_type == "aborted_streaming" and "did not finish" in chat.error
    (start,) = [l for l in L.values() if l.get("type") == "stream_event"
                and l["event"]["type"] == "message_start"]
    assert chat.attributes["gen_ai.response.model"] == start["event"]["message"]["model"]
    turn = run.one("turn 1")
    assert turn.error_type == result["subtype"]
    # the user stopped it: its user line says so, the turn's interrupted event when
    (said,) = [l for l in L.values() if l.get("type") == "user"
               and "[Request interrupted by user]" in json.dumps(l["message"])]
    assert [(e.name, e.time_ns, e.attributes) for e in turn.events] == [
        ("interrupted", iso_ns(said["timestamp"]), {"otelbridge.reason": "interrupted by the user"})]
    # ERROR as the result says, described by what happened, not by the CLI's diagnostic text
    session = run.one("invoke_agent claude-code")
    assert result["errors"][0].startswith("[ede_diagnostic]")
    for span in (turn, session):
        assert (span.error, span.error_type) == ("interrupted by the user", "error_during_execution")
    assert [e.name for e in session.events if e.name == "interrupted"] == ["interrupted"]
    probe = Run(CLAUDE / "workflow-probe-2.1.206.jsonl")
    chats = [r for r in probe.records if r.name.startswith("chat ")]
    assert chats and all(c.error is None for c in chats)


@needs_fixtures
def test_an_interrupted_turn_carries_its_calls_tokens_and_no_cost_its_result_did_not_count():
    """interrupt-2.1.276: the result (line 30) says 0 for every token, an empty modelUsage and
    ``total_cost_usd`` 0, while the one model call (lines 15, 22, 28) sent 33,220 input tokens:
    the CLI counted nothing of the turn. Its tokens are the call's; its 0 is no cost either."""
    path = CLAUDE / "interrupt-2.1.276.jsonl"
    L = lines(path)
    assert L[30]["total_cost_usd"] == 0 and L[30]["modelUsage"] == {}
    assert not any(v for k, v in L[30]["usage"].items() if k.endswith("tokens"))
    usage = L[28]["message"]["usage"]
    run = Run(path)
    assert len(run.records) == 3
    for span in (run.one("turn 1"), run.one("invoke_agent claude-code")):
        assert span.attributes["gen_ai.usage.input_tokens"] == (
            usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]) == 33220
        assert span.attributes["gen_ai.usage.output_tokens"] == usage["output_tokens"] == 2
        assert not {"result.total_cost_usd", "turn.cost_usd", "session.cost_usd"} & set(span.attributes)
        assert span.attributes["result.subtype"] == "error_during_execution"


@needs_fixtures
def test_a_run_cut_off_keeps_the_tokens_its_lines_reported(tmp_path):
    """The phased recording's first 16 lines (a CI job killed mid-run): no result, no
    notification. The turn and the session carry what their model calls reported, the workflow
    what its last progress line said, instead of nothing (or 0) beside a summary that showed
    the tokens."""
    L = lines(PHASED)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(PHASED.read_bytes().splitlines(keepends=True)[:16]))
    run = Run(cut)
    turn, session = run.one("turn 1"), run.one("invoke_agent claude-code")
    assert turn.error_type == session.error_type == "incomplete"
    chats = [r for r in run.records if r.name.startswith("chat ")]
    assert len(chats) == 3
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        total = sum(c.attributes[key] for c in chats)
        assert total > 0 and turn.attributes[key] == session.attributes[key] == total
    (root,) = [r for r in run.records if r.name.startswith("invoke_workflow")]
    usage = L[16]["usage"]
    assert L[16]["subtype"] == "task_progress" and "workflow_progress" not in L[16]
    assert root.attributes["workflow.usage.total_tokens"] == usage["total_tokens"] == 59398
    assert root.attributes["workflow.usage.tool_uses"] == usage["tool_uses"]


@needs_fixtures
def test_a_prompt_a_hook_blocked_is_said_on_the_session_without_its_text():
    """hook-blocked-prompt-2.1.284: the CLI's result says success (0 turns) after a
    system/informational notice that the hook blocked the prompt (prevent_continuation). The
    session carries that notice as an event, level and prevent_continuation; not its text,
    which holds the prompt and the hook's command. The turn it stopped failed: no model call
    ran (a CI job that did nothing is not ``ok``); so did the session whose last turn it is (its
    span was ``ok`` over its only turn's error: the trace's root read as a success)."""
    path = CLAUDE / "hook-blocked-prompt-2.1.284.jsonl"
    L = lines(path)
    (notice,) = [l for l in L.values() if l.get("subtype") == "informational"]
    run = Run(path)
    session = run.one("invoke_agent claude-code")
    (event,) = [e for e in session.events if e.name == "informational"]
    assert notice["level"] == "warning" and notice["prevent_continuation"] is True
    assert event.attributes == {"informational.level": "warning",
                                "informational.prevent_continuation": True}
    assert not any("BLOCKME" in str(v) for r in run.records for v in r.attributes.values())
    assert not any("BLOCKME" in str(v) for e in session.events for v in e.attributes.values())
    (result,) = [l for l in L.values() if "num_turns" in l]
    assert result["is_error"] is False and result["num_turns"] == 0
    turn = run.one("turn 1")
    assert (turn.error, turn.error_type) == ("stopped before any model call (prevent_continuation)",
                                             "prevent_continuation")
    assert (session.error, session.error_type) == (turn.error, "prevent_continuation") and len(run.records) == 2


@needs_fixtures
def test_a_session_whose_next_turn_ran_after_a_blocked_prompt_is_ok(tmp_path):
    """A prompt a hook blocked, then one that ran (the next turn of the same session): the
    blocked turn failed, the session is its last result's, a success."""
    blocked = (CLAUDE / "hook-blocked-prompt-2.1.284.jsonl").read_text().splitlines()
    sid = json.loads(blocked[0])["session_id"]
    ran = [json.loads(l) for l in (CLAUDE / "claudecli-go-basic-thinking-2.1.68.jsonl").read_text().splitlines()]
    for doc in ran:
        if "session_id" in doc:
            doc["session_id"] = sid
    path = tmp_path / "blocked-then-ran.jsonl"
    path.write_text("\n".join(blocked + [json.dumps(d) for d in ran]) + "\n")
    run = Run(path)
    assert run.one("turn 1").error_type == "prevent_continuation" and run.one("turn 2").error is None
    session = run.one("invoke_agent claude-code")
    assert (session.error, session.error_type) == (None, None)


@needs_fixtures
def test_with_capture_content_a_blocked_prompt_s_turn_says_what_the_hook_said():
    """With --capture-content the notice's text (content: the hook's command and message, the
    prompt) is the notice event's ``informational.content`` and follows the turn's error."""
    path = CLAUDE / "hook-blocked-prompt-2.1.284.jsonl"
    (notice,) = [l for l in lines(path).values() if l.get("subtype") == "informational"]
    run = Run(path, capture_content=True)
    (event,) = [e for e in run.one("invoke_agent claude-code").events if e.name == "informational"]
    assert event.attributes["informational.content"] == notice["content"]
    turn = run.one("turn 1")
    assert turn.error == f"stopped before any model call (prevent_continuation): {notice['content']}"
    assert "blocked by probe hook" in turn.error and turn.error_type == "prevent_continuation"


def test_a_prompts_turn_without_result_timestamp_ends_at_the_result_and_never_past_the_next_turn(tmp_path):
    """A turn a prompt opened (no origin) whose result has no timestamp and a duration_ms longer
    than its lines show (the CLI counts from when it took the prompt, maybe queued): it ends
    at the result's time and starts duration_ms before, as the contract says. Extended to its
    start + duration_ms it ran 58 s into the turn after it, and into the future live."""
    init = {"type": "system", "subtype": "init", "model": "m", "claude_code_version": "2.1.280"}
    usage = {"input_tokens": 10, "output_tokens": 5}
    path = tmp_path / "queued.jsonl"
    path.write_text("".join([
        _line(init),
        _line({"type": "user", "message": {"role": "user", "content": "go"}, "timestamp": "2026-06-01T12:00:00Z"}),
        _line({"type": "assistant", "message": {"id": "m1", "model": "m", "content": [], "usage": usage},
              "timestamp": "2026-06-01T12:00:01Z"}),
        _line({"type": "result", "subtype": "success", "duration_ms": 1500, "usage": usage}),
        _line(init),
        _line({"type": "user", "message": {"role": "user", "content": "again"}, "timestamp": "2026-06-01T12:00:02Z"}),
        _line({"type": "assistant", "message": {"id": "m2", "model": "m", "content": [], "usage": usage},
              "timestamp": "2026-06-01T12:00:03Z"}),
        _line({"type": "result", "subtype": "success", "duration_ms": 60000, "usage": usage}),
        _line(init),
        _line({"type": "user", "message": {"role": "user", "content": "more"}, "timestamp": "2026-06-01T12:00:04Z"}),
        _line({"type": "assistant", "message": {"id": "m3", "model": "m", "content": [], "usage": usage},
              "timestamp": "2026-06-01T12:00:05Z"}),
        _line({"type": "result", "subtype": "success", "duration_ms": 1000, "usage": usage}),
    ]))
    run = Run(path)
    t2, t3 = run.one("turn 2"), run.one("turn 3")
    at = iso_ns("2026-06-01T12:00:03Z")  # the stream clock when turn 2's result came
    assert (t2.start_ns, t2.end_ns) == (at - 60_000 * MS, at)
    assert t2.end_ns <= t3.start_ns


def test_a_deferred_results_one_call_takes_its_output_tokens_too(tmp_path):
    """Both results at the end (the phased recording's shape): turn 1 was closed by the next
    init before its result came. Its one call was ended then, keeping its first line's
    snapshot (3 of 997 output tokens); it now ends with its turn's result, which settles it."""
    init = {"type": "system", "subtype": "init", "model": "m", "claude_code_version": "2.1.280"}
    path = tmp_path / "deferred.jsonl"
    path.write_text("".join([
        _line(init),
        _line({"type": "assistant", "message": {"id": "m1", "model": "m", "content": [],
                                               "usage": {"input_tokens": 10, "output_tokens": 3}},
              "timestamp": "2026-06-01T12:00:01Z"}),
        _line(init),
        _line({"type": "assistant", "message": {"id": "m2", "model": "m", "content": [],
                                               "usage": {"input_tokens": 20, "output_tokens": 2}},
              "timestamp": "2026-06-01T12:00:03Z"}),
        _line({"type": "result", "subtype": "success", "duration_ms": 1500, "result_index": 0,
              "usage": {"input_tokens": 10, "output_tokens": 997}}),
        _line({"type": "result", "subtype": "success", "duration_ms": 1000, "result_index": 1,
              "usage": {"input_tokens": 20, "output_tokens": 50}}),
    ]))
    run = Run(path)
    for name, mid, out in (("turn 1", "m1", 997), ("turn 2", "m2", 50)):
        turn = run.one(name)
        (chat,) = run.attr("gen_ai.response.id", mid)
        assert chat.parent_span_id == turn.span_id
        assert chat.attributes["gen_ai.usage.output_tokens"] == turn.attributes["gen_ai.usage.output_tokens"] == out
        assert turn.start_ns <= chat.start_ns <= chat.end_ns <= turn.end_ns


@needs_fixtures
def test_a_woken_turn_is_its_duration_long_when_the_clock_went_on_after_it_opened(tmp_path):
    """bg-bash-wake without the task's end_time: turn 2 opens at the stream clock of 03.130 s
    (nothing in between carries a time) and its lines come 20 s later. It lasted its 1995 ms
    up to its result, not from 03.130: the turn and its call do not show the background
    sleep as the model's time."""
    L = lines(WAKE)
    docs = [json.loads(raw) for raw in WAKE.read_bytes().splitlines()]
    for d in docs:
        if d.get("subtype") == "task_updated":
            d.get("patch", {}).pop("end_time", None)
    path = tmp_path / "no-end-time.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    run = Run(path)
    t2 = run.one("turn 2")
    (chat,) = [r for r in run.records if r.name.startswith("chat ") and r.parent_span_id == t2.span_id]
    assert t2.end_ns == iso_ns(L[16]["timestamp"])
    assert t2.end_ns - t2.start_ns == L[17]["duration_ms"] * MS
    assert t2.start_ns <= chat.start_ns <= chat.end_ns <= t2.end_ns


@needs_fixtures
def test_a_milk_turns_one_call_takes_its_results_counts():
    """milk's assistant lines carry no usage: the one call of basic_turn had the result's
    output tokens and no input (a half of the counts); it takes both from its turn's result."""
    path = CLAUDE.parent / "milk" / "basic_turn.jsonl"
    run = Run(path)
    turn = run.one("turn 1")
    (chat,) = [r for r in run.records if r.name.startswith("chat ")]
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert chat.attributes[key] == turn.attributes[key] > 0


@needs_fixtures
def test_a_task_updated_completed_ends_the_task_when_the_stream_stops_before_its_notification(tmp_path):
    """bg-bash-wake cut after line 12 (a job killed then): the task_updated says completed, with
    its end_time; only the notification is missing. The task is not ERROR 'no terminal state'."""
    L = lines(WAKE)
    assert L[12]["subtype"] == "task_updated" and L[12]["patch"]["status"] == "completed"
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(WAKE.read_bytes().splitlines(keepends=True)[:12]))
    (task,) = [r for r in Run(cut).records if r.name == "task local_bash"]
    assert task.error is None and task.attributes["task.status"] == "completed"
    assert task.end_ns == L[12]["patch"]["end_time"] * MS


@needs_fixtures
def test_a_sub_agent_begins_at_its_first_line_when_the_clock_stood_still_at_its_tool_call():
    """subagent-general-purpose: nothing between the ToolSearch result (line 9) and the
    sub-agent's prompt (line 25) carries a timestamp, so its Agent tool call (line 23) and
    task_started (line 24) stand at line 9's time, 7.7 s before it began. The sub-agent's span
    and its Agent tool call's start at its prompt (the call starts the sub-agent at once); the
    tool's result (line 28) says it ran totalDurationMs (1853 ms). The model call that asked for
    it keeps its start (asked for after line 9's tool result)."""
    path = CLAUDE / "subagent-general-purpose.jsonl"
    L = lines(path)
    call = L[23]["message"]["content"][0]
    assert call["name"] == "Agent" and L[25]["parent_tool_use_id"] == call["id"]
    assert all("timestamp" not in L[n] for n in range(10, 25))
    run = Run(path)
    agent = run.one("invoke_agent general-purpose")
    tool = run.one("execute_tool Agent")
    assert tool.start_ns == agent.start_ns == iso_ns(L[25]["timestamp"])
    assert agent.parent_span_id == tool.span_id
    chat = run.by_id(tool.parent_span_id)
    assert chat.start_ns == iso_ns(L[9]["timestamp"]) and chat.end_ns >= tool.end_ns
    assert agent.end_ns == tool.end_ns == iso_ns(L[28]["timestamp"])
    ran = L[28]["tool_use_result"]["totalDurationMs"]
    assert abs((agent.end_ns - agent.start_ns) - ran * MS) <= 2 * MS


@needs_fixtures
def _with_iterations(path) -> bool:
    return any((d.get("usage") or {}).get("iterations") for d in lines(path).values()
               if d.get("type") == "result")


@pytest.mark.parametrize("path", [p for p in ALL if _with_iterations(p)], ids=lambda p: p.name)
def test_a_turns_last_model_call_takes_its_final_output_tokens_from_the_result(path):
    """A model call's lines carry the usage snapshot of its start (``output_tokens`` 1 or 2);
    the result's ``usage.iterations`` ends with the turn's last call's final usage. The call
    whose lines show the same input counts takes its output tokens (a result may come after
    the next turn's calls: all calls so far are candidates)."""
    L = lines(path)
    run = Run(path)
    calls: dict[str, dict] = {}
    checked = 0
    for n in sorted(L):
        doc = L[n]
        if doc.get("type") == "assistant" and not doc.get("parent_tool_use_id"):
            calls[doc["message"]["id"]] = doc["message"].get("usage") or {}
        if doc.get("type") != "result":
            continue
        steps = (doc.get("usage") or {}).get("iterations") or []
        if steps and steps[-1].get("type") == "message":
            last = steps[-1]
            key = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            same = [m for m, u in calls.items() if all(u.get(k) == last.get(k) for k in key)]
            assert len(same) == 1, n
            (chat,) = run.attr("gen_ai.response.id", same[0])
            shown = max(last["output_tokens"], calls.pop(same[0]).get("output_tokens") or 0)
            assert chat.attributes["gen_ai.usage.output_tokens"] == shown
            checked += 1
    assert checked


@pytest.mark.parametrize("after_result", [False, True], ids=["stop-hook", "after-the-result"])
def test_a_notice_after_a_model_call_fails_nothing_and_opens_no_turn(tmp_path, after_result):
    """prevent_continuation after the turn's model call (a Stop hook) fails no span: the turn
    did its work. After the last result (no turn open) it is an event on the session, not a
    turn of its own cut off at the end of input."""
    usage = {"input_tokens": 10, "output_tokens": 5}
    notice = _line({"type": "system", "subtype": "informational", "content": "Stop hook",
                    "level": "warning", "prevent_continuation": True})
    result = _line({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 10,
                    "usage": usage})
    path = tmp_path / "notice.jsonl"
    path.write_text("".join([
        _line({"type": "system", "subtype": "init", "model": "m", "claude_code_version": "2.1.284"}),
        _line({"type": "assistant", "message": {"id": "m1", "model": "m", "content": [], "usage": usage}}),
        *((result, notice) if after_result else (notice, result)),
    ]))
    run = Run(path)
    assert [r.name for r in run.records if r.name.startswith("turn")] == ["turn 1"]
    assert all(r.error is None for r in run.records)
    assert [e.name for e in run.one("invoke_agent claude-code").events] == ["informational"]


GENERAL = CLAUDE / "subagent-general-purpose.jsonl"
PROBE = CLAUDE / "workflow-probe-2.1.206.jsonl"


def _outputs(run: Run) -> dict[str, list]:
    """``{gen_ai.response.id: gen_ai.output.messages decoded}`` of the run's model calls."""
    return {r.attributes["gen_ai.response.id"]: json.loads(r.attributes["gen_ai.output.messages"])
            for r in run.records if r.name.startswith("chat ") and "gen_ai.output.messages" in r.attributes}


@needs_fixtures
def test_output_messages_carry_text_tool_calls_and_a_finish_reason():
    """The GenAI conventions' output message: its text, a ``tool_call`` part per tool the call
    asked for (id and name: the arguments are on the tool's own span) and the ``finish_reason``
    they require."""
    L = lines(GENERAL)
    out = _outputs(Run(GENERAL, capture_content=True))
    calls = {}
    for n, d in L.items():
        if d.get("type") == "assistant":
            calls.setdefault(d["message"]["id"], []).extend(d["message"]["content"])
    assert set(out) == {mid for mid, blocks in calls.items()
                        if any(b["type"] in ("text", "tool_use") for b in blocks)}
    for mid, blocks in calls.items():
        if mid not in out:
            continue
        (message,) = out[mid]
        uses = [b for b in blocks if b["type"] == "tool_use"]
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        want = ([{"type": "text", "content": "\n".join(texts)}] if texts else []) + [
            {"type": "tool_call", "id": b["id"], "name": b["name"]} for b in uses]
        assert message == {"role": "assistant", "parts": want,
                           "finish_reason": "tool_call" if uses else "stop"}
    assert any(not any(p["type"] == "text" for p in m[0]["parts"]) for m in out.values())  # a tool call alone

    # the stream's own stop_reason (message_delta), mapped: tool_use → tool_call, end_turn → stop
    L = lines(PROBE)
    out = _outputs(Run(PROBE, capture_content=True))
    mid, checked = None, 0
    for n, d in L.items():
        event = d.get("event") or {}
        if d.get("type") == "stream_event" and event.get("type") == "message_start":
            mid = event["message"]["id"]
        if d.get("type") == "stream_event" and event.get("type") == "message_delta" and mid in out:
            reason = event["delta"]["stop_reason"]
            assert out[mid][0]["finish_reason"] == {"tool_use": "tool_call", "end_turn": "stop"}[reason]
            checked += 1
    assert checked == 3

    # an API error's message (the CLI's own, stop_sequence) is an error
    (chat,) = [r for r in Run(API_ERROR, capture_content=True).records if r.name.startswith("chat")]
    (message,) = json.loads(chat.attributes["gen_ai.output.messages"])
    assert message["finish_reason"] == "error"


@needs_fixtures
@pytest.mark.parametrize("path", [GENERAL, WAKE, PHASED, EXPLORE, NO_TS], ids=lambda p: p.name)
def test_a_turns_last_model_call_stops_for_its_results_stop_reason(path):
    """Claude Code prints ``stop_reason: null`` on each assistant line; the result's is the last
    message's: the turn's last call carries it as ``gen_ai.response.finish_reasons``, the calls
    before it (which asked for tools) none."""
    L = lines(path)
    assert all(d["message"].get("stop_reason") is None for d in L.values() if d.get("type") == "assistant")
    results = [d for d in L.values() if d.get("type") == "result"]
    run = Run(path)
    checked = 0
    for n, result in enumerate(results, 1):
        turn = run.one(f"turn {n}")
        chats = sorted((r for r in run.records if r.name.startswith("chat ") and r.parent_span_id == turn.span_id),
                       key=lambda r: (r.end_ns, r.start_ns))
        assert chats
        *before, last = chats
        want = [result["stop_reason"]] if result.get("stop_reason") else None  # 2.1.68: null
        assert last.attributes.get("gen_ai.response.finish_reasons") == want
        assert all("gen_ai.response.finish_reasons" not in c.attributes for c in before)
        checked += 1
    assert checked == len(results) > 0
    assert path == NO_TS or all(r["stop_reason"] == "end_turn" for r in results)


@needs_fixtures
def test_a_turns_first_call_starts_at_its_prompt_when_the_stream_shows_it():
    """2.1.280 prints the prompt (line 2, timed) after its untimed init: the first call was
    asked for then — not at the turn's start, which its result puts earlier — read whole or
    line by line alike."""
    L = lines(WAKE)
    run = Run(WAKE)
    turn = run.one("turn 1")
    (chat,) = run.attr("gen_ai.response.id", L[3]["message"]["id"])
    assert turn.start_ns < chat.start_ns == iso_ns(L[2]["timestamp"]) < iso_ns(L[3]["timestamp"])


def test_only_a_turns_first_call_moves_with_its_start():
    """Caudra's example: the turn's lines before its first timestamp (the tool result) take it;
    its result moves the turn's start earlier. The first call moves with it; the second, asked
    for at the tool's result, stays there and does not overlap the first."""
    path = EXAMPLES / "caudra-session-turns.jsonl"
    L = lines(path)
    run = Run(path)
    turn = run.one("turn 1")
    (first,) = run.attr("gen_ai.response.id", L[3]["message"]["id"])
    (second,) = run.attr("gen_ai.response.id", L[5]["message"]["id"])
    tool_result = iso_ns(L[4]["timestamp"])
    assert first.start_ns == turn.start_ns < tool_result
    assert second.start_ns == tool_result >= first.end_ns


def test_a_turn_after_time_idle_starts_duration_ms_before_its_result_not_at_the_last_time_shown(tmp_path):
    """Claude Code's ``init`` has no timestamp: a follow-up prompt's turn, or a second run's
    session in the same pipe, took the last time shown — the previous turn's end, a minute
    before. Its start is its result's time − duration_ms (it was stretched over the idle
    minute, its model call with it), and a session that turn opened begins with it."""
    init = {"type": "system", "subtype": "init", "model": "m", "claude_code_version": "2.1.280"}
    usage = {"input_tokens": 10, "output_tokens": 5}

    def turn(sid: str, prompt_at: str, answer_at: str, duration_ms: int) -> list[str]:
        return [_line({**init, "session_id": sid}),
                _line({"type": "user", "session_id": sid, "timestamp": prompt_at,
                       "message": {"role": "user", "content": "go"}}),
                _line({"type": "assistant", "session_id": sid, "timestamp": answer_at,
                       "message": {"id": f"m-{answer_at}", "model": "m", "content": [], "usage": usage}}),
                _line({"type": "result", "session_id": sid, "subtype": "success",
                       "duration_ms": duration_ms, "usage": usage})]

    path = tmp_path / "idle.jsonl"
    path.write_text("".join(turn("s1", "2026-06-01T12:00:00Z", "2026-06-01T12:00:01Z", 1500)
                            + turn("s1", "2026-06-01T12:01:00Z", "2026-06-01T12:01:02Z", 2500)
                            + turn("s2", "2026-06-01T12:03:00Z", "2026-06-01T12:03:01Z", 1200)))
    run = Run(path)
    first, follow_up, second = sorted(run.named("turn 1") + run.named("turn 2"), key=lambda r: r.start_ns)
    assert (follow_up.start_ns, follow_up.end_ns) == (
        iso_ns("2026-06-01T12:01:02Z") - 2500 * MS, iso_ns("2026-06-01T12:01:02Z"))
    (chat,) = [r for r in run.named("chat m") if r.parent_span_id == follow_up.span_id]
    assert chat.start_ns >= follow_up.start_ns
    assert (second.start_ns, second.end_ns) == (
        iso_ns("2026-06-01T12:03:01Z") - 1200 * MS, iso_ns("2026-06-01T12:03:01Z"))
    sessions = sorted(run.named("invoke_agent claude-code"), key=lambda r: r.start_ns)
    assert [s.start_ns for s in sessions] == [first.start_ns, second.start_ns]


@needs_fixtures
def test_a_later_result_read_without_the_one_before_gives_no_turn_cost(tmp_path):
    """``follow`` resumed after a stop reads a session from its second turn: the result's
    ``total_cost_usd`` is the session's so far, and without the result before it (its
    ``result_index`` says it is not the first) the turn's own cost is not known — not the
    session's whole cost."""
    raw = WAKE.read_bytes().splitlines(keepends=True)
    whole = Run(WAKE)
    assert round(whole.one("turn 2").attributes["turn.cost_usd"], 7) == round(0.025752 - 0.0211271, 7)
    cut = tmp_path / "from-turn-2.jsonl"
    cut.write_bytes(b"".join(raw[10:]))
    (turn,) = [r for r in Run(cut).records if r.name.startswith("turn ")]
    assert turn.attributes["result.total_cost_usd"] == 0.025752
    assert "turn.cost_usd" not in turn.attributes


@needs_fixtures
@pytest.mark.parametrize("path", [PHASED, CLAUDE / "workflow-probe-2.1.206.jsonl", WAKE])
def test_a_sessions_turn_counts_and_durations_are_its_results_summed(path):
    """Each result's ``num_turns``/``duration_ms`` are its turn's: the session's are their sums
    (its other ``result.*`` the last result's). ``duration_api_ms`` is the process's so far, as
    ``total_cost_usd`` is (a turn of one 1.9 s model call says 6,216 after 4,344): the session's
    is the last, not a sum that counted the first turn's API time twice."""
    results = [doc for doc in lines(path).values() if doc.get("type") == "result"]
    assert len(results) == 2
    run = Run(path)
    session, turns = run.one("invoke_agent claude-code"), [run.one("turn 1"), run.one("turn 2")]
    for key in ("num_turns", "duration_ms", "duration_api_ms"):
        assert [t.attributes[f"result.{key}"] for t in turns] == [r[key] for r in results]
    for key in ("num_turns", "duration_ms"):
        assert session.attributes[f"result.{key}"] == sum(r[key] for r in results)
    assert results[0]["duration_api_ms"] <= results[1]["duration_api_ms"]
    assert session.attributes["result.duration_api_ms"] == results[-1]["duration_api_ms"]
    assert session.attributes["session.turns"] == 2
    assert session.attributes["result.total_cost_usd"] == results[-1]["total_cost_usd"]
    assert session.attributes["result.subtype"] == results[-1]["subtype"]


@needs_fixtures
@pytest.mark.parametrize("path", [CLAUDE / "workflow-probe-2.1.206.jsonl", CLAUDE / "subagent-explore-2.1.178.jsonl",
                                  CLAUDE / "hook-blocked-prompt-2.1.284.jsonl"])
def test_every_session_turn_sub_agent_and_model_call_names_its_provider(path):
    """``gen_ai.provider.name`` (required on GenAI ``invoke_agent`` and ``chat`` spans) on each:
    a turn before the session's first ``init`` (2.1.206 prints none until its second turn) and
    its model calls had none, nor had a sub-agent."""
    run = Run(path)
    spans = [r for r in run.records if r.attributes.get("gen_ai.operation.name") in ("invoke_agent", "chat")]
    assert spans and {r.name.split(" ")[0] for r in spans} >= {"invoke_agent"}
    assert [r.name for r in spans if r.attributes.get("gen_ai.provider.name") != "anthropic"] == []
