"""Token totals of streams whose results give no ``modelUsage`` (Claude Code before it gave one,
Caudra, CLIs that copy Claude Code's lines): a turn's result counts the turn's own model calls,
with their final output (a call's lines give a snapshot taken at its start), its sub-agents
count their calls apart, and the session span, the totals and the job outputs are that sum.

Every shared recording that counts tokens gives ``modelUsage``: here each is taken with it
removed from its results (every other line byte for byte), as such a CLI prints it, and run
through ``otelbridge replay`` or ``follow`` as a process. Expectations are read from the
recording's own lines: its results' ``usage``, its sub-agents' lines and their ``Agent`` tool's
result (``tool_use_result.usage``: the sub-agent's last call, which no line prints)."""

from __future__ import annotations

import json
from decimal import Context, Decimal
from pathlib import Path

from tests.conftest import EXAMPLES, FIXTURES, clean_env, needs_fixtures, run_bridge
from tests.e2e.test_file_exporter import read_otlp_json_lines
from tests.e2e.test_follow import stopped_and_restarted

CC = FIXTURES / "claude-code"
#: the input counts of an Anthropic-shaped usage (``gen_ai.usage.input_tokens`` is their sum)
INPUTS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
#: one turn: a main-agent call that runs an Explore sub-agent (its lines 3-10), then another
AGENT = "claudecli-go-agent-subagent-2.1.87.jsonl"


def without_model_usage(text: str) -> list[str]:
    """The lines of ``text`` (with their newlines), its results without ``modelUsage``."""
    lines = []
    for line in text.splitlines(keepends=True):
        doc = parsed(line)
        if doc is not None and doc.get("type") == "result" and "modelUsage" in doc:
            del doc["modelUsage"]
            line = json.dumps(doc) + "\n"
        lines.append(line)
    return lines


def parsed(line: str) -> dict | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def docs(lines: list[str]) -> list[dict]:
    return [d for d in map(parsed, lines) if d is not None]


def inputs(usage: dict) -> int:
    return sum(usage.get(k, 0) for k in INPUTS)


def stream_says(lines: list[str]) -> tuple[int, int]:
    """(input with cache, output) the stream reports: its results' ``usage`` summed (each its
    turn's top-level calls), and its sub-agents' calls: per message the largest output its
    lines showed; the last from its ``Agent`` tool's result, the same call as the last one
    printed when their input counts are equal (then with its final output)."""
    found = docs(lines)
    results = [d["usage"] for d in found if d.get("type") == "result" and d.get("usage")]
    calls: dict[str, list] = {}  # message id → [input counts, output]
    last: dict[str, str] = {}  # a sub-agent's tool call → its last message printed
    for d in found:
        if d.get("type") == "assistant" and d.get("parent_tool_use_id") and d["message"].get("usage"):
            usage, mid = d["message"]["usage"], d["message"]["id"]
            seen = calls.setdefault(mid, [tuple(usage.get(k, 0) for k in INPUTS), 0])
            seen[1] = max(seen[1], usage["output_tokens"])
            last[d["parent_tool_use_id"]] = mid
        summary = d.get("tool_use_result")
        if isinstance(summary, dict) and summary.get("agentId") and isinstance(summary.get("usage"), dict):
            (tool_id,) = [b["tool_use_id"] for b in d["message"]["content"] if b.get("type") == "tool_result"]
            usage = summary["usage"]
            key, mid = tuple(usage.get(k, 0) for k in INPUTS), last.get(tool_id)
            if mid is None or calls[mid][0] != key:
                mid = f"last call of {tool_id}"
                calls[mid] = [key, 0]
            calls[mid][1] = max(calls[mid][1], usage["output_tokens"])
    return (sum(map(inputs, results)) + sum(sum(c[0]) for c in calls.values()),
            sum(u["output_tokens"] for u in results) + sum(c[1] for c in calls.values()))


def replay(tmp_path: Path, *paths: Path, env: dict | None = None):
    """``otelbridge replay`` of ``paths`` as a process: (its job outputs, the spans it wrote
    to a file, its stderr)."""
    out, spans, step = tmp_path / "outputs", tmp_path / "spans.jsonl", tmp_path / "step.md"
    for f in (out, spans, step):
        f.unlink(missing_ok=True)
    proc = run_bridge(["replay", "--exporter", "file", "--output", str(spans), "--summary", "always",
                       *map(str, paths)],
                      env=clean_env(GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(step), **(env or {})))
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    return outputs, read_otlp_json_lines(spans).spans(), proc.stderr.decode()


def tokens(outputs: dict) -> tuple[int, int]:
    return int(outputs["input_tokens"]), int(outputs["output_tokens"])


def usage_of(span) -> tuple[int, int]:
    return span.attributes["gen_ai.usage.input_tokens"], span.attributes["gen_ai.usage.output_tokens"]


def summed(spans) -> tuple[int, int]:
    """The sum of ``spans``' usage (what the collector's token metric adds up)."""
    return tuple(map(sum, zip(*map(usage_of, spans))))  # type: ignore[return-value]


def written(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


@needs_fixtures()
def test_job_outputs_and_the_session_span_are_the_results_and_the_sub_agents_calls(tmp_path):
    """Every recording whose CLI counted tokens (its last result gives ``modelUsage``), without
    that count: the job outputs, the session span (its ``gen_ai.usage.*``, what the collector's
    token metric adds) and the totals line are its results' usage and its sub-agents' calls;
    the cost stays its last ``total_cost_usd``. They were the model calls' sum, whose output
    counts are snapshots from each call's start (the job's ``output_tokens`` 77 where the result
    says 127 in the 2.1.87 recording, 30 where it says 619 in subagent-general-purpose), and the
    session span left the sub-agents out (47,903 input tokens of subagent-explore's 63,435)."""
    recordings = [p for p in sorted(CC.glob("*.jsonl"))
                  if [d for d in docs(p.read_text().splitlines()) if d.get("type") == "result"][-1].get("modelUsage")]
    assert len(recordings) == 10
    wrong = {}
    for path in recordings:
        lines = without_model_usage(path.read_text())
        want = stream_says(lines)
        outputs, spans, said = replay(tmp_path, written(tmp_path, path.name, lines))
        (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
        cost = [d for d in docs(lines) if d.get("type") == "result"][-1]["total_cost_usd"]
        got = (tokens(outputs), usage_of(session), session.attributes.get("session.usage.source"),
               Decimal(outputs["total_cost_usd"]))
        # (a cost to a double's 15 significant digits: 0.11752375000000001 is 0.11752375)
        if got != (want, want, "results", Context(prec=15).create_decimal(repr(cost))) or \
                f"{want[0]:,} input tokens (with cache), {want[1]:,} output tokens" not in said:
            wrong[path.name] = (got, want)
    assert wrong == {}


@needs_fixtures()
def test_a_turn_counts_its_result_not_its_calls_first_snapshots(tmp_path):
    """The 2.1.87 recording without ``modelUsage``: its main agent made two model calls, whose
    lines (2 and 11) say 41 and 1 output tokens, snapshots from their start; its result (line
    12) says the turn's calls made 127. Its Explore sub-agent's first call (line 7) says 8, its
    last (its ``Agent`` tool's result, line 10) 27. The turn's row, the session's and the
    totals said 127, 127 and 77: the turn says 127, the session, the heading, the step summary
    and the job output 127 + 8 + 27 = 162."""
    lines = without_model_usage((CC / AGENT).read_text())
    found = dict(enumerate(map(parsed, lines), start=1))
    assert [found[n]["message"]["usage"]["output_tokens"] for n in (2, 11, 7)] == [41, 1, 8]
    assert found[10]["tool_use_result"]["usage"]["output_tokens"] == 27
    assert found[12]["type"] == "result" and found[12]["usage"]["output_tokens"] == 127
    want_in = inputs(found[12]["usage"]) + inputs(found[7]["message"]["usage"]) + inputs(
        found[10]["tool_use_result"]["usage"])
    outputs, spans, said = replay(tmp_path, written(tmp_path, AGENT, lines))
    assert tokens(outputs) == (want_in, 162) == (81745, 162)
    (turn,) = [s for s in spans if s.name == "turn 1"]
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert usage_of(turn) == (inputs(found[12]["usage"]), 127) and usage_of(session) == (81745, 162)
    assert "invoke_agent claude-code  ok · 9.5s · 81,745 in / 162 out tokens · $0.1034" in said
    step = (tmp_path / "step.md").read_text()
    assert "81,745 in / 162 out tokens" in step and " | 82k/162 | " in step and " | 40k/127 | " in step


@needs_fixtures()
def test_a_session_resumed_in_a_later_file_counts_each_process_results_once(tmp_path):
    """A worker's two runs of one session in two files of a ``replay`` (the 2.1.87 recording,
    then subagent-general-purpose made its second process): a span each, the second going on
    from the first. A result's ``usage`` is its own turn's (unlike ``modelUsage`` it does not
    run on across a process's turns), so each span counts its own: the spans' sum, the totals
    and the job outputs are both files' results and sub-agents, each once."""
    first = without_model_usage((CC / AGENT).read_text())
    sid = next(d["session_id"] for d in docs(first) if d.get("session_id"))
    text = (CC / "subagent-general-purpose.jsonl").read_text()
    own = next(d["session_id"] for d in docs(text.splitlines()) if d.get("session_id"))
    second = without_model_usage(text.replace(own, sid))
    want = tuple(a + b for a, b in zip(stream_says(first), stream_says(second)))
    outputs, spans, _ = replay(tmp_path, written(tmp_path, "run-1.jsonl", first),
                               written(tmp_path, "run-2.jsonl", second))
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 2 and sum(len(s.links) for s in sessions) == 1
    assert tokens(outputs) == want == (81745 + 83603, 162 + 624)
    assert summed(sessions) == want


@needs_fixtures()
def test_a_turn_cut_across_two_files_counts_its_result_less_what_the_first_counted(tmp_path):
    """The 2.1.87 recording cut in two files mid-turn (after its sub-agent's first tool
    result, line 8): the first file's span ends with the turn cut, its calls so far counted
    (lines 2 and 7); the turn's result, in the second file, counts line 2's call too. The second
    span counts that result less line 2's call: the totals and the spans' sum are the whole
    stream's, each token once, but for the sub-agent's last call, which its tool's result gives
    on line 10 (the second file does not know the tool call of the first, nor whether that call
    is one the first counted: it errs low). They said 176 output tokens (the second file's only
    call took the result's 127, on top of line 2's 41), then 50 (its call's snapshot, 1, for
    the result's 127 less 41)."""
    lines = without_model_usage((CC / AGENT).read_text())
    found = dict(enumerate(map(parsed, lines), start=1))
    last = found[10]["tool_use_result"]["usage"]
    want = tuple(a - b for a, b in zip(stream_says(lines), (inputs(last), last["output_tokens"])))
    outputs, spans, _ = replay(tmp_path, written(tmp_path, "a.jsonl", lines[:8]),
                               written(tmp_path, "b.jsonl", lines[8:]))
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 2
    assert tokens(outputs) == summed(sessions) == want == (81745 - 21798, 162 - 27)


@needs_fixtures()
def test_a_session_a_follow_stop_cut_mid_turn_counts_each_token_once_over_its_spans(tmp_path):
    """``follow`` stopped mid-turn (after line 8 of the 2.1.87 recording without
    ``modelUsage``: both model calls open, the sub-agent's too) and started again: the first
    session span counts the calls the stop ended; the one it goes on in reads the turn again
    from its first line and counts its result and its sub-agent less what the first counted.
    Their sum (what the collector's token metric adds) is the stream's own total, each token
    once; it was 80,000 / 176 (the first span's calls, then the whole turn's result again)."""
    lines = without_model_usage((CC / AGENT).read_text())
    spans = stopped_and_restarted(tmp_path, lines, 8, lambda spans: any(
        s.name == "execute_tool Read" for s in spans))
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 2 and sum(len(s.links) for s in sessions) == 1
    assert summed(sessions) == stream_says(lines) == (81745, 162)


def test_a_workflow_in_its_session_s_trace_keeps_its_agents_tokens(tmp_path):
    """With ``TRACEPARENT`` every trace is one: a Caudra workflow's agents (whose tokens its
    session's result does not count) share their session's trace and conversation. The session
    span's total stands for its own spans alone: the job outputs still count the agents' calls
    (6,590 / 97 in its example) with the session's result (2,000 / 300), as without it."""
    lines = (EXAMPLES / "caudra-workflow.jsonl").read_text().splitlines(keepends=True)
    want = stream_says(lines)
    alone, _, _ = replay(tmp_path, EXAMPLES / "caudra-workflow.jsonl")
    one_trace, spans, _ = replay(tmp_path, EXAMPLES / "caudra-workflow.jsonl",
                                 env={"TRACEPARENT": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
    assert len({s.trace_id for s in spans}) == 1
    assert tokens(alone) == tokens(one_trace) == want == (8590, 397)
