"""Token totals against the recordings' own numbers: a session's last ``result.modelUsage`` (the
CLI's cumulative total, every model) is the authority; model calls count only where no such total
covers them. Real recordings through the real pipeline (``--exporter none``) into the views."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, needs_fixtures
from otelbridge import shown
from tests.test_summary import CBC, run

CC = FIXTURES / "claude-code"
#: recordings whose assistant lines carry partial usage (the first streamed snapshot's output)
PARTIAL = ["claudecli-go-basic-thinking-2.1.68.jsonl", "subagent-explore-2.1.178.jsonl",
           "task-tool-2.1.6.jsonl", "claudecli-go-agent-subagent-2.1.87.jsonl",
           "workflow-probe-2.1.206.jsonl", "claudecli-go-workflow-phased-2.1.270.jsonl"]


def docs(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def model_usage_total(path: Path) -> tuple[int, int]:
    """(input with cache, output) summed over the models of the last result's ``modelUsage``."""
    last = [d for d in docs(path) if d.get("type") == "result" and d.get("modelUsage")][-1]
    usage = last["modelUsage"].values()
    return (sum(u["inputTokens"] + u["cacheReadInputTokens"] + u["cacheCreationInputTokens"]
                for u in usage), sum(u["outputTokens"] for u in usage))


@needs_fixtures()
@pytest.mark.parametrize("name", PARTIAL)
def test_totals_outputs_and_session_row_are_the_cli_total(name, tmp_path):
    path = CC / name
    want_in, want_out = model_usage_total(path)
    out, step = tmp_path / "out", tmp_path / "step"
    report, _ = run(path, env={"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(step)})
    got = dict(l.split("=", 1) for l in out.read_text().splitlines())
    assert (int(got["input_tokens"]), int(got["output_tokens"])) == (want_in, want_out)
    totals = report.collector.totals()
    assert (totals.input_tokens, totals.output_tokens) == (want_in, want_out)
    (session,) = [r for t in report.collector.traces.values() for r in t.rows if r.kind == "session"]
    assert (session.input_tokens, session.output_tokens) == (want_in, want_out)
    assert f"{want_in:,} in / {want_out:,} out tokens" in step.read_text()
    assert f"{want_out:,} output tokens" in report.stream.getvalue()


@needs_fixtures()
def test_a_result_without_model_usage_leaves_the_model_calls_counted(tmp_path):
    # interrupt-2.1.276: the interrupted turn's result has empty modelUsage and zero usage,
    # its assistant lines showed the tokens actually spent
    path = CC / "interrupt-2.1.276.jsonl"
    last: dict[str, dict] = {}
    for d in docs(path):
        if d.get("type") == "assistant" and d["message"].get("usage"):
            last[d["message"]["id"]] = d["message"]["usage"]
    want_in = sum(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
                  for u in last.values())
    report, _ = run(path)
    totals = report.collector.totals()
    assert want_in > 0 and totals.input_tokens == want_in
    assert totals.output_tokens == sum(u["output_tokens"] for u in last.values())


@needs_fixtures()
def test_a_cost_the_stream_did_not_count_is_unknown_not_free(tmp_path):
    """interrupt-2.1.276: its result says ``total_cost_usd`` 0 and counted none of the 33,220
    input tokens its model call sent: the CI log says the cost is unknown, never $0.0000; beside
    a run whose result gave one (custom-agent-2.1.6, $0.03736735), that one and "+ unknown"."""
    path = CC / "interrupt-2.1.276.jsonl"
    out, step = tmp_path / "out", tmp_path / "step"
    report, _ = run(path, env={"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(step)})
    assert shown.totals_text(report.collector) == (
        "1 trace, 33,220 input tokens (with cache), 2 output tokens, cost unknown, 3 failed spans, status error")
    (trace,) = report.collector.traces.values()
    assert shown.trace_head(trace)[1] == "error · 3.3s · 33,220 in / 2 out tokens · cost unknown · 3 failed spans"
    assert "$0" not in report.stream.getvalue() and "\\$0" not in step.read_text()
    assert "cost unknown" in step.read_text().splitlines()[0]
    other = CC / "custom-agent-2.1.6.jsonl"
    assert docs(other)[-1]["total_cost_usd"] == 0.03736735
    report, _ = run(path, other)
    assert ", $0.0374 + unknown, " in shown.totals_text(report.collector)


@needs_fixtures()
@pytest.mark.parametrize("name, split", [("subagent-explore-2.1.178.jsonl", 538),
                                         ("claudecli-go-bg-bash-wake-2.1.280.jsonl", 168),
                                         ("idea-planner-explore-subagent-2.1.224.jsonl", 255),
                                         ("custom-agent-2.1.6.jsonl", None)])
def test_a_model_call_carries_the_largest_usage_its_lines_or_its_result_showed(name, split):
    """Its lines' largest, or the final usage its turn's result gives the last call
    (``usage.iterations``, matched by the input counts); in a turn of two calls whose inputs add
    up to the result's, the first made the rest of the result's output."""
    path = CC / name
    best: dict[str, int] = {}
    inputs: dict[str, tuple] = {}
    turn: list[str] = []  # the top-level calls since the last result
    key = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    splits = []
    nested: dict[str, str] = {}  # sub-agent → its last printed call
    for d in docs(path):
        if d.get("type") == "assistant" and d["message"].get("usage"):
            mid, usage = d["message"]["id"], d["message"]["usage"]
            best[mid] = max(best.get(mid, -1), usage["output_tokens"])
            inputs[mid] = tuple(usage.get(k) for k in key)
            if not d.get("parent_tool_use_id"):
                turn += [mid] if mid not in turn else []
            else:
                nested[d["parent_tool_use_id"]] = mid
        summary = d.get("tool_use_result")
        if isinstance(summary, dict) and isinstance(summary.get("usage"), dict) and summary.get("agentId"):
            # the sub-agent's last call, printed in no line: its Agent tool's result gives it
            (tool_id,) = [b["tool_use_id"] for b in d["message"]["content"] if b.get("type") == "tool_result"]
            mid = nested.get(tool_id)
            if mid is None or inputs[mid] != tuple(summary["usage"].get(k) for k in key):
                mid = f"last call of {tool_id}"
            best[mid] = max(best.get(mid, -1), summary["usage"]["output_tokens"])
        if d.get("type") == "result":
            steps = d["usage"].get("iterations")
            if steps:
                (mid,) = [m for m in turn if inputs[m] == tuple(steps[-1].get(k) for k in key)]
                best[mid] = max(best[mid], steps[-1]["output_tokens"])
                if len(turn) == 2 and mid == turn[1] and \
                        sum(map(sum, (inputs[m] for m in turn))) == sum(d["usage"][k] for k in key):
                    rest = d["usage"]["output_tokens"] - steps[-1]["output_tokens"]
                    best[turn[0]] = max(best[turn[0]], rest)
                    splits.append(rest)
            turn = []
    assert splits == ([split] if split else [])
    report, _ = run(path)
    chats = [r for t in report.collector.traces.values() for r in t.rows if r.kind == "chat"]
    assert len(chats) == len(best)
    assert sorted(r.output_tokens for r in chats) == sorted(best.values())


ERROR_TURN = CC / "error-turn-invalid-model-2.1.206.jsonl"
UNSAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


@needs_fixtures()
@pytest.mark.parametrize("how", ["traceparent", "always_off"])
def test_views_read_spans_the_sampler_drops(how, tmp_path, monkeypatch):
    # the failed session's result (is_error) and the session span's trace id must reach the
    # outputs and the step summary even when no span is sampled for export
    cfg = {}
    if how == "traceparent":
        cfg["traceparent"] = UNSAMPLED
    else:
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    out, step = tmp_path / "out", tmp_path / "step"
    report, _ = run(ERROR_TURN, env={"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(step)}, **cfg)
    got = dict(l.split("=", 1) for l in out.read_text().splitlines())
    result = [d for d in docs(ERROR_TURN) if d.get("type") == "result"][-1]
    assert result["is_error"] is True and got["status"] == "error"
    (session,) = [r for t in report.collector.traces.values() for r in t.rows if r.kind == "session"]
    assert session.parent_id is None and session.error
    want_trace = UNSAMPLED.split("-")[1] if how == "traceparent" else f"{session.trace_id:032x}"
    assert got["trace_id"] == want_trace == f"{session.trace_id:032x}"
    assert "turn 1" in step.read_text()


MILK = FIXTURES / "milk"


def milk_input(usage: dict) -> int:
    return usage["input_tokens"] + usage["cache_read"] + usage["cache_creation"]


@needs_fixtures()
def test_milk_input_counts_the_cache_and_model_usage_alone_counts(tmp_path):
    # basic_turn.jsonl line 7: usage 1234 in + 8000 cache_read + 200 cache_creation, 567 out
    path = MILK / "basic_turn.jsonl"
    (result,) = [d for d in docs(path) if d.get("type") == "result"]
    report, _ = run(path)
    rows = {r.kind: r for t in report.collector.traces.values() for r in t.rows}
    assert rows["turn"].input_tokens == milk_input(result["usage"]) == 9434
    assert rows["session"].input_tokens == milk_input(result["usage"])
    totals = report.collector.totals()
    assert (totals.input_tokens, totals.output_tokens) == (9434, result["usage"]["output_tokens"])
    # interrupted_result.jsonl line 4: no usage, model_usage 500/20: the session's total
    path = MILK / "interrupted_result.jsonl"
    (result,) = [d for d in docs(path) if d.get("type") == "result"]
    (usage,) = result["model_usage"].values()
    report, _ = run(path)
    totals = report.collector.totals()
    assert (totals.input_tokens, totals.output_tokens) == (milk_input(usage), usage["output_tokens"]) == (500, 20)
    # ... and its one turn's: the per-model usage less what earlier results covered (none)
    rows = {r.kind: r for t in report.collector.traces.values() for r in t.rows}
    assert (rows["turn"].input_tokens, rows["turn"].output_tokens) == (500, 20)
    assert (rows["session"].input_tokens, rows["session"].output_tokens) == (500, 20)


def workflow_tokens(path: Path) -> int:
    """The last ``usage.total_tokens`` of each workflow task (a task whose lines carry
    ``workflow_progress``), summed."""
    workflows = {d["task_id"] for d in docs(path) if d.get("workflow_progress")}
    last = {d["task_id"]: d["usage"]["total_tokens"] for d in docs(path)
            if d.get("task_id") in workflows and isinstance(d.get("usage"), dict)}
    return sum(last.values())


@needs_fixtures()
@pytest.mark.parametrize("path", [CC / "claudecli-go-workflow-phased-2.1.270.jsonl",
                                  CC / "workflow-probe-2.1.206.jsonl", CBC],
                         ids=lambda p: p.name)
def test_workflow_tokens_are_the_workflows_own_totals_kept_apart_from_input_and_output(path, tmp_path):
    """A workflow's agents report one total each (input and output together): the run's totals,
    the trace's head line and the job outputs show the workflow's own total, and the
    input/output counts stay the sessions' alone."""
    want = workflow_tokens(path)
    out = tmp_path / "out"
    report, _ = run(path, env={"GITHUB_OUTPUT": str(out)})
    totals = report.collector.totals()
    assert want > 0 and totals.workflow_tokens == want
    got = dict(l.split("=", 1) for l in out.read_text().splitlines())
    assert int(got["workflow_tokens"]) == want
    sessions = [r for t in report.collector.traces.values() for r in t.rows if r.kind == "session"]
    assert totals.input_tokens == sum(r.input_tokens or 0 for r in sessions)
    text = report.stream.getvalue()
    (head,) = [l for l in text.splitlines() if l.startswith("invoke_workflow ") and " · " in l]
    assert head.endswith(f" · {want:,} workflow tokens") or f" · {want:,} workflow tokens · " in head
    assert f"{want:,} workflow tokens (input and output together)" in text


@needs_fixtures()
@pytest.mark.parametrize("name,cut", [("task-tool-2.1.6.jsonl", 70), ("subagent-explore-2.1.178.jsonl", 20)])
def test_a_run_cut_off_with_its_sub_agents_counts_every_model_call_once(name, cut, tmp_path):
    """A CI job killed while the top-level call that ran sub-agents was open: that call ends at
    the end of input, after its tools and sub-agents. The totals used to leave it out (its
    tools' sub-agents "covered" it), and the session carried no usage. Now the totals, the job
    outputs and the session row are every model call's, counted once."""
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"".join((CC / name).read_bytes().splitlines(keepends=True)[:cut]))
    last: dict[str, dict] = {}
    for d in docs(path):
        if d.get("type") == "assistant" and d["message"].get("usage"):
            usage = d["message"]["usage"]
            prev = last.get(d["message"]["id"])
            last[d["message"]["id"]] = usage if prev is None or usage["output_tokens"] >= prev["output_tokens"] else prev
    assert not any(d.get("type") == "result" for d in docs(path))
    want_in = sum(u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
                  for u in last.values())
    want_out = sum(u["output_tokens"] for u in last.values())
    out = tmp_path / "out"
    report, _ = run(path, env={"GITHUB_OUTPUT": str(out)})
    rows = [r for t in report.collector.traces.values() for r in t.rows]
    assert sum(1 for r in rows if r.kind == "agent") >= 1  # a sub-agent ran
    totals = report.collector.totals()
    assert (totals.input_tokens, totals.output_tokens) == (want_in, want_out)
    (session,) = [r for r in rows if r.kind == "session"]
    assert (session.input_tokens, session.output_tokens) == (want_in, want_out)
    got = dict(l.split("=", 1) for l in out.read_text().splitlines())
    assert (int(got["input_tokens"]), int(got["output_tokens"])) == (want_in, want_out)


def test_a_session_that_goes_on_without_a_total_of_its_own_adds_its_tokens(tmp_path):
    """Session A's result carries the CLI's total (``modelUsage``); B's init ends A; A writes
    again, its result with ``usage`` alone (as milk's error result): the job outputs count
    A's first total, B's, and A's second run on top (they dropped it, the conversation's
    first total being taken for the whole)."""
    def run_lines(sid, mid, inp, out, model_usage):
        result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                  "duration_ms": 1000, "result": "ok", "session_id": sid, "uuid": f"r-{mid}",
                  "usage": {"input_tokens": inp, "output_tokens": out}}
        if model_usage:
            result["modelUsage"] = {"m1": {"inputTokens": inp, "outputTokens": out}}
        return [{"type": "system", "subtype": "init", "session_id": sid, "model": "m1",
                 "claude_code_version": "2.1.280"},
                {"type": "assistant", "session_id": sid, "message": {
                    "id": mid, "model": "m1", "role": "assistant", "content": [{"type": "text", "text": "hi"}],
                    "usage": {"input_tokens": inp, "output_tokens": 1}}},
                result]
    stream = tmp_path / "runs.jsonl"
    lines = run_lines("A", "a1", 110, 55, True) + run_lines("B", "b1", 1000, 100, True) \
        + run_lines("A", "a2", 7000, 900, False)
    stream.write_text("".join(json.dumps(l) + "\n" for l in lines))
    out = tmp_path / "out"
    run(stream, env={"GITHUB_OUTPUT": str(out)})
    got = dict(l.split("=", 1) for l in out.read_text().splitlines())
    assert (int(got["input_tokens"]), int(got["output_tokens"])) == (110 + 1000 + 7000, 55 + 100 + 900)
