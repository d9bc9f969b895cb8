"""A session that a new process takes up (``claude -p --resume``, a worker's next run) in the
stream it wrote before: Claude Code counts ``total_cost_usd`` and ``modelUsage`` per process, so
the new process's counts begin again at 0. Real recordings joined as a worker's file holds them
(the second's session id made the first's), spans at a real OTLP receiver, expectations
derived from the files' own results."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from tests.conftest import FIXTURES, clean_env, needs_fixtures, run_bridge
from tests.e2e.test_session_recordings import export

BG = "claudecli-go-bg-bash-wake-2.1.280.jsonl"  # two results (a background task woke it)
THINKING = "claudecli-go-basic-thinking-2.1.68.jsonl"  # one result, more output tokens
OTHER = "custom-agent-2.1.6.jsonl"
PHASED = "claudecli-go-workflow-phased-2.1.270.jsonl"  # two results of equal totals, indices 0 and 1


def run(name: str, sid: str | None = None) -> tuple[str, str]:
    """A recording's text (its session id made ``sid``) and its own session id."""
    text = (FIXTURES / "claude-code" / name).read_text()
    own = next(json.loads(l)["session_id"] for l in text.splitlines() if '"session_id"' in l)
    return (text.replace(own, sid) if sid else text), own


def results(text: str) -> list[dict]:
    return [d for d in map(json.loads, text.splitlines()) if d.get("type") == "result"]


def output_tokens(result: dict) -> int:
    return sum(u["outputTokens"] for u in result["modelUsage"].values())


def costs(spans, name: str) -> list[Decimal]:
    """``name`` of the turns, by their number (``turn {n}``)."""
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: int(s.name.split()[1]))
    return [Decimal(str(s.attributes[name])) for s in turns]


@needs_fixtures()
@pytest.mark.parametrize("first, then", [(BG, THINKING), (THINKING, BG)], ids=["cost falls", "tokens fall"])
def test_a_session_a_new_process_resumes_adds_its_counts_to_those_before(tmp_path, first, then):
    """Process 1 then process 2 of one session, back to back: one session span whose
    ``result.total_cost_usd`` is the sum of both processes' last totals, and whose output
    tokens are both processes' ``modelUsage``; each turn's ``turn.cost_usd`` is its own cost,
    the second process's first turn its whole total (not 0, nor less the first's). The new
    process is known by a count below the last one's: the cost (``cost falls``), or the
    tokens when its cost alone has not fallen (``tokens fall``)."""
    one, sid = run(first)
    two, _ = run(then, sid)
    path = tmp_path / "worker.jsonl"
    path.write_text(one + two)
    spans = export(path, deterministic_ids=True)
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    want = []
    for text in (one, two):  # each process's totals count from 0
        totals = [Decimal(str(r["total_cost_usd"])) for r in results(text)]
        want += [b - a for a, b in zip([Decimal(0), *totals], totals)]
    assert costs(spans, "turn.cost_usd") == want
    last_one, last_two = results(one)[-1], results(two)[-1]
    assert Decimal(str(session.attributes["result.total_cost_usd"])) == (
        Decimal(str(last_one["total_cost_usd"])) + Decimal(str(last_two["total_cost_usd"])))
    assert session.attributes["gen_ai.usage.output_tokens"] == output_tokens(last_one) + output_tokens(last_two)
    assert session.attributes["result.duration_api_ms"] == max(
        r["duration_api_ms"] for r in results(one)) + max(r["duration_api_ms"] for r in results(two))


@needs_fixtures()
def test_a_session_resumed_after_another_session_ran_goes_on_from_its_total(tmp_path):
    """A worker runs session A, then session B, then resumes A in a new process: A's first span
    ends at B's ``init``, and the span it goes on in adds the new process's cost to A's
    total; its turn costs what the new process reported, not 0 (a total below A's)."""
    a, sid = run(BG)
    b, _ = run(OTHER)
    again, _ = run(THINKING, sid)
    path = tmp_path / "worker.jsonl"
    path.write_text(a + b + again)
    spans = export(path, deterministic_ids=True)
    mine = sorted((s for s in spans if s.name == "invoke_agent claude-code"
                   and s.attributes["gen_ai.conversation.id"] == sid), key=lambda s: s.start_ns)
    first, then = mine
    assert then.links[0][1] == first.span_id
    a_total, again_total = (Decimal(str(results(t)[-1]["total_cost_usd"])) for t in (a, again))
    assert Decimal(str(first.attributes["result.total_cost_usd"])) == a_total
    assert Decimal(str(then.attributes["result.total_cost_usd"])) == a_total + again_total
    (turn,) = [s for s in spans if s.name.startswith("turn ") and s.parent_span_id == then.span_id]
    assert Decimal(str(turn.attributes["turn.cost_usd"])) == again_total


@needs_fixtures()
def test_a_session_resumed_twice_with_another_between_counts_each_process_once(tmp_path):
    """Session A in three processes, session B between the second and the third: the third
    process's first total is above the second's own (its cost has not fallen), but below
    what A counted in all (and its tokens fell): it is a new process all the same, and its
    turns cost what it reported."""
    a, sid = run(BG)
    resumed, _ = run(THINKING, sid)
    b, _ = run(OTHER)
    third, _ = run(BG, sid)
    path = tmp_path / "worker.jsonl"
    path.write_text(a + resumed + b + third)
    spans = export(path, deterministic_ids=True)
    first, then = sorted((s for s in spans if s.name == "invoke_agent claude-code"
                          and s.attributes["gen_ai.conversation.id"] == sid), key=lambda s: s.start_ns)
    finals = [Decimal(str(results(t)[-1]["total_cost_usd"])) for t in (a, resumed, third)]
    assert Decimal(str(first.attributes["result.total_cost_usd"])) == finals[0] + finals[1]
    assert Decimal(str(then.attributes["result.total_cost_usd"])) == sum(finals)
    totals = [Decimal(str(r["total_cost_usd"])) for r in results(third)]
    assert costs([s for s in spans if s.parent_span_id == then.span_id], "turn.cost_usd") == [
        b - a for a, b in zip([Decimal(0), *totals], totals)]


@needs_fixtures()
def test_a_session_cut_across_two_replayed_files_counts_its_second_turn_from_the_first(tmp_path):
    """``otelbridge replay`` of a log cut in two between a session's turns (a rotation): the
    second file's turn goes on in a span of its own and costs its total less the first file's
    last (the same process's running total), not nothing."""
    import subprocess
    import sys

    from tests.conftest import ROOT, clean_env
    from tests.receivers import HttpReceiver

    text, _ = run(BG)
    lines = text.splitlines(keepends=True)
    cut = next(i for i, l in enumerate(lines) if '"type":"result"' in l.replace(" ", "")) + 1
    one, two = tmp_path / "agent.jsonl.1", tmp_path / "agent.jsonl"
    one.write_text("".join(lines[:cut]))
    two.write_text("".join(lines[cut:]))
    with HttpReceiver() as rx:
        done = subprocess.run([sys.executable, "-m", "otelbridge", "replay", "--endpoint", rx.endpoint,
                               "--summary", "never", str(one), str(two)],
                              env=clean_env(), cwd=ROOT, capture_output=True, timeout=60)
        spans = rx.received.spans()
    assert done.returncode == 0, done.stderr
    totals = [Decimal(str(r["total_cost_usd"])) for r in results(text)]
    assert costs(spans, "turn.cost_usd") == [totals[0], totals[1] - totals[0]]
    first, then = sorted((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.start_ns)
    assert then.links[0][1] == first.span_id


def replayed(tmp_path, *texts: str):
    """``otelbridge replay`` of ``texts`` as files, in order, to a real receiver: the spans."""
    import subprocess
    import sys

    from tests.conftest import ROOT, clean_env
    from tests.receivers import HttpReceiver

    paths = []
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"run-{i}.jsonl")
        paths[-1].write_text(text)
    with HttpReceiver() as rx:
        done = subprocess.run([sys.executable, "-m", "otelbridge", "replay", "--endpoint", rx.endpoint,
                               "--summary", "never", *map(str, paths)],
                              env=clean_env(), cwd=ROOT, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return rx.received.spans()


@needs_fixtures()
def test_a_new_process_in_a_later_file_is_known_by_its_tokens_though_its_cost_rose(tmp_path):
    """``replay`` of two runs' files, the second resuming the first's session in a new process
    whose first total is above the first's: its tokens fell (the file before's are carried
    over), so its turn costs its whole total, and the session's total adds both processes'."""
    one, sid = run(THINKING)
    two, _ = run(BG, sid)
    spans = replayed(tmp_path, one, two)
    first_total = Decimal(str(results(one)[-1]["total_cost_usd"]))
    totals = [Decimal(str(r["total_cost_usd"])) for r in results(two)]
    assert costs(spans, "turn.cost_usd") == [first_total, totals[0], totals[1] - totals[0]]
    (then,) = [s for s in spans if s.name == "invoke_agent claude-code" and s.links]  # (it goes on)
    assert Decimal(str(then.attributes["result.total_cost_usd"])) == first_total + totals[-1]
    assert Decimal(str(then.attributes["session.cost_usd"])) == totals[-1]


@needs_fixtures()
@pytest.mark.parametrize("shape", ["one stream", "three files"])
def test_session_spans_own_costs_add_up_to_what_every_process_spent(tmp_path, shape):
    """A, then B, then A resumed in a new process: the session spans' ``session.cost_usd``
    (what each span's own turns cost: the collector's cost metric sums it) add up to the three
    processes' last totals, though A's second span's ``result.total_cost_usd`` runs on from its
    first span's."""
    a, sid = run(BG)
    b, _ = run(OTHER)
    again, _ = run(THINKING, sid)
    if shape == "one stream":
        path = tmp_path / "worker.jsonl"
        path.write_text(a + b + again)
        spans = export(path, deterministic_ids=True)
    else:
        spans = replayed(tmp_path, a, b, again)
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 3
    assert sum(Decimal(str(s.attributes["session.cost_usd"])) for s in sessions) == sum(
        Decimal(str(results(t)[-1]["total_cost_usd"])) for t in (a, b, again))


def process_tokens(text: str) -> tuple[int, int]:
    """A process's input tokens as GenAI counts them (input, cache read and cache creation)
    and output tokens: its last result's ``modelUsage``, summed over models."""
    usage = results(text)[-1]["modelUsage"].values()
    return (sum(u["inputTokens"] + u["cacheReadInputTokens"] + u["cacheCreationInputTokens"] for u in usage),
            sum(u["outputTokens"] for u in usage))


@needs_fixtures()
def test_a_session_resumed_after_another_counts_each_process_s_tokens_once_in_the_job_and_the_spans(tmp_path):
    """A worker runs session A, then B, then resumes A in a new process, piped through
    otelbridge in a CI job: the job's ``input_tokens``/``output_tokens`` are the three
    processes' own (A's second process added to its first, not in its place), and so is the
    sum over the session spans' ``gen_ai.usage.*`` (what the collector's token metric adds up):
    each span carries its own turns' tokens."""
    a, sid = run(BG)
    b, _ = run(OTHER)
    again, _ = run(THINKING, sid)
    path = tmp_path / "worker.jsonl"
    path.write_text(a + b + again)
    want = tuple(map(sum, zip(*(process_tokens(t) for t in (a, b, again)))))
    out = tmp_path / "outputs"
    proc = run_bridge(["--exporter", "none", "--summary", "never"], path.read_bytes(),
                      env=clean_env(CI="true", GITHUB_OUTPUT=str(out)))
    assert proc.returncode == 0, proc.stderr
    got = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert (int(got["input_tokens"]), int(got["output_tokens"])) == want
    sessions = [s for s in export(path, deterministic_ids=True) if s.name.startswith("invoke_agent")]
    assert len(sessions) == 3  # (A's two spans and B's)
    assert (sum(s.attributes["gen_ai.usage.input_tokens"] for s in sessions),
            sum(s.attributes["gen_ai.usage.output_tokens"] for s in sessions)) == want


def cut_and_replayed(tmp_path, lines: list[str], at: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """``lines`` cut in two files at ``at`` and replayed: the job's ``input_tokens`` and
    ``output_tokens`` (``--exporter none``, ``GITHUB_OUTPUT``), and the sums of the two session
    spans' ``gen_ai.usage.*`` at a real receiver (what the collector's token metric adds)."""
    parts = tmp_path / "agent.jsonl.1", tmp_path / "agent.jsonl"
    parts[0].write_text("".join(lines[:at]))
    parts[1].write_text("".join(lines[at:]))
    out = tmp_path / "outputs"
    proc = run_bridge(["replay", "--exporter", "none", "--summary", "never", *map(str, parts)],
                      env=clean_env(CI="true", GITHUB_OUTPUT=str(out)))
    assert proc.returncode == 0, proc.stderr
    got = dict(line.split("=", 1) for line in out.read_text().splitlines())
    sessions = [s for s in replayed(tmp_path, *(p.read_text() for p in parts)) if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 2
    return ((int(got["input_tokens"]), int(got["output_tokens"])),
            (sum(s.attributes["gen_ai.usage.input_tokens"] for s in sessions),
             sum(s.attributes["gen_ai.usage.output_tokens"] for s in sessions)))


@needs_fixtures()
@pytest.mark.parametrize("cut", ["before its first result", "in its second turn"])
def test_a_session_cut_across_two_replayed_files_counts_each_token_once(tmp_path, cut):
    """``replay`` of one process's log cut in two mid-turn: the first file's session span
    carries the model calls read before the cut (no result covered them yet), and the span that
    goes on counts its own turns from there, not those calls again, so the job's
    ``input_tokens``/``output_tokens`` and the sum over the session spans are the process's
    last ``modelUsage``."""
    text = (FIXTURES / "claude-code" / "workflow-probe-2.1.206.jsonl").read_text()
    lines = text.splitlines(keepends=True)
    kinds = [json.loads(l)["type"] for l in lines]
    calls = [i for i, kind in enumerate(kinds) if kind == "assistant"]
    at = (calls[0] if cut == "before its first result" else calls[-1]) + 1  # (just after a call)
    assert kinds.index("result") > at if cut == "before its first result" else kinds.index("result") < at
    job, spans = cut_and_replayed(tmp_path, lines, at)
    assert job == spans == process_tokens(text)


@needs_fixtures()
def test_a_new_process_cut_across_two_replayed_files_before_its_first_result_counts_each_token_once(tmp_path):
    """A worker's log: a session's run, then a new process resuming it, cut in two after that
    process's first model call (before its first result): the first file's span carries that
    call, and the span that goes on counts the new process from after it, so the job's totals
    and the session spans' sums are both processes' own, each token once."""
    one, sid = run(BG)
    two, _ = run(THINKING, sid)
    lines = (one + two).splitlines(keepends=True)
    kinds = [json.loads(l)["type"] for l in lines]
    at = next(i for i in range(len(one.splitlines()), len(lines)) if kinds[i] == "assistant") + 1
    assert "result" not in kinds[len(one.splitlines()):at]
    job, spans = cut_and_replayed(tmp_path, lines, at)
    assert job == spans == tuple(map(sum, zip(process_tokens(one), process_tokens(two))))


def session_totals(spans) -> tuple[Decimal, int]:
    """The one session span's ``result.total_cost_usd`` and output tokens."""
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    return Decimal(str(session.attributes["result.total_cost_usd"])), session.attributes["gen_ai.usage.output_tokens"]


@needs_fixtures()
def test_a_new_process_whose_every_count_rose_is_known_by_its_result_index(tmp_path):
    """The same run twice in one session, as a worker's ``claude -p`` then ``claude -p
    --resume`` of the same work (the second's uuids its own, as a new process's are): no
    count of the second's first result is below the last one's; its ``result_index`` 0, not
    above the last one's 1, tells the new process. The session adds both processes' totals."""
    one, sid = run(PHASED)
    two = re.sub(r'"uuid":"([0-9a-f]{8})', lambda m: f'"uuid":"{int(m[1], 16) ^ 1:08x}', one)
    assert [r["result_index"] for r in results(one + two)] == [0, 1, 0, 1]
    path = tmp_path / "worker.jsonl"
    path.write_text(one + two)
    last = results(one)[-1]
    assert session_totals(export(path, deterministic_ids=True)) == (
        2 * Decimal(str(last["total_cost_usd"])), 2 * output_tokens(last))
