"""The views read from the finished spans: real recordings through the real pipeline (decoder,
tracker, span builder, provider; ``--exporter none``) into the report's span processor.
Expected values are read from the recordings themselves, never copied from our output."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path

import pytest

from otelbridge import shown, summary, waterfall
from otelbridge.config import Config
from otelbridge.pipeline import Pipeline
from otelbridge.stats import Stats
from otelbridge.summary import Collector, Row
from otelbridge.views import Report
from tests.conftest import EXAMPLES, FIXTURES, needs_fixtures, workflow_facts

SESSION = EXAMPLES / "claude-code-session.jsonl"
CBC = EXAMPLES / "cbc-workflow.jsonl"
CAUDRA = EXAMPLES / "caudra-workflow.jsonl"
CAUDRA_TURNS = EXAMPLES / "caudra-session-turns.jsonl"
MILK = EXAMPLES / "milk-session.jsonl"
TEMPLATE = "https://tempo.example/trace/{trace_id}"


def run(*paths: Path, env: dict | None = None, **cfg) -> tuple[Report, list[str]]:
    """Each of ``paths`` a stream of its own into one pipeline, as ``replay`` does; the report
    finished (waterfall into a buffer, files per ``env``). Returns (report, lines said)."""
    said: list[str] = []
    config = Config(exporters=("none",), clock="stream", deterministic_ids=True,
                    summary="always", **cfg)
    report = Report(config, said.append, env=env or {}, stream=io.StringIO())
    pipeline = Pipeline(config, Stats(), report=report, stream_timers=True)
    for i, path in enumerate(paths):
        if i:
            pipeline.end_stream()
        pipeline.new_stream()
        data = path.read_bytes()
        pipeline.on_chunk(data, len(data))
    pipeline.end_stream()
    report.finish()
    return report, said


def model_calls(path: Path) -> dict[str, dict]:
    """Claude Code's model calls by ``message.id``: the usage of its assistant lines and of its
    streamed ``message_start``/``message_delta`` events (cumulative), the largest output."""
    calls: dict[str, dict] = {}
    current = None
    for line in path.read_text().splitlines():
        doc = json.loads(line)
        event = doc.get("event") or {}
        if doc.get("type") == "assistant" and doc["message"].get("usage"):
            key, usage = doc["message"]["id"], doc["message"]["usage"]
        elif event.get("type") == "message_start":
            current = key = event["message"]["id"]
            usage = event["message"]["usage"]
        elif event.get("type") == "message_delta" and current:
            key, usage = current, event["usage"]
        else:
            continue
        if usage["output_tokens"] >= calls.get(key, {"output_tokens": -1})["output_tokens"]:
            calls[key] = usage
    return calls


def last_result(path: Path) -> dict:
    return [json.loads(l) for l in path.read_text().splitlines() if '"type":"result"' in l.replace(" ", "")][-1]


def test_a_plain_session_gets_rows_tokens_cost_and_outputs(tmp_path):
    out = tmp_path / "out"
    report, _ = run(SESSION, env={"GITHUB_OUTPUT": str(out)})
    calls = model_calls(SESSION)
    want_in = sum(u["input_tokens"] + u.get("cache_read_input_tokens", 0)
                  + u.get("cache_creation_input_tokens", 0) for u in calls.values())
    want_out = sum(u["output_tokens"] for u in calls.values())
    lines = out.read_text().splitlines()
    (session,) = [r for t in report.collector.traces.values() for r in t.rows if r.kind == "session"]
    assert lines == [f"trace_id={session.trace_id:032x}", f"input_tokens={want_in}",
                     f"output_tokens={want_out}", "workflow_tokens=0",
                     f"total_cost_usd={last_result(SESSION)['total_cost_usd']!r}", "status=ok"]
    assert out.stat().st_mode & 0o777 == 0o600
    text = report.stream.getvalue()
    # rows named as the spans are: every model call, every turn, tools, sub-agents, the task
    names = [r.name for r in report.collector.traces[session.trace_id].rows]
    assert names.count("turn 1") == 1 and names.count("turn 2") == 1
    assert sum(n.startswith("chat ") for n in names) == len(calls)
    for name in set(names):  # at 100 columns, deep labels may end in …
        assert name[:24] in text
    assert f"total: 1 trace, {want_in:,} input tokens (with cache), {want_out:,} output tokens" in text


def test_outputs_and_step_summary_start_on_a_line_of_their_own(tmp_path):
    """Another step left its last line without a line end (``printf 'prev=1' >>
    $GITHUB_OUTPUT``): it and our first line stay apart."""
    out, step = tmp_path / "out", tmp_path / "summary.md"
    out.write_text("prev=1")
    step.write_text("## before")
    run(SESSION, env={"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(step)})
    lines = out.read_text().splitlines()
    assert lines[0] == "prev=1" and lines[1].startswith("trace_id=") and len(lines) == 7
    assert step.read_text().splitlines()[0] == "## before"
    assert step.read_text().splitlines()[1].startswith("### ")


def test_turn_cost_is_the_difference_of_the_cumulative_values():
    report, _ = run(SESSION)
    results = [json.loads(l) for l in SESSION.read_text().splitlines() if '"result"' in l
               and json.loads(l).get("type") == "result"]
    (trace,) = report.collector.traces.values()
    lines = {l.row.name: l for l in shown.select(trace, 100) if l.row is not None}
    first, second = (Decimal(repr(r["total_cost_usd"])) for r in results[:2])  # the 3rd repeats the 2nd
    assert lines["turn 1"].cost == first and lines["turn 2"].cost == second - first
    assert lines["invoke_agent claude-code"].cost == second


def test_turns_whose_results_came_late_show_no_cost_of_their_own():
    """claudecli-go-workflow-phased-2.1.270: both results at the very end, one total: turn 1
    showed all of it and turn 2 $0. Neither turn's own cost is known; the session keeps it."""
    phased = FIXTURES / "claude-code" / "claudecli-go-workflow-phased-2.1.270.jsonl"
    if not phased.exists():
        pytest.skip("shared fixtures not present")
    report, _ = run(phased)
    last = last_result(phased)
    (trace,) = [t for t in report.collector.traces.values()
                if any(r.name == "turn 1" for r in t.rows)]
    lines = {l.row.name: l for l in shown.select(trace, 100) if l.row is not None}
    assert lines["turn 1"].cost is None and lines["turn 2"].cost is None
    assert lines["invoke_agent claude-code"].cost == Decimal(repr(last["total_cost_usd"]))
    assert report.collector.totals().cost == Decimal(repr(last["total_cost_usd"]))


def test_cost_is_summed_exactly_over_sessions(tmp_path):
    out = tmp_path / "out"
    run(SESSION, CAUDRA_TURNS, env={"GITHUB_OUTPUT": str(out)})
    costs = [Decimal(repr(last_result(p)["total_cost_usd"])) for p in (SESSION, CAUDRA_TURNS)]
    got = dict(l.split("=", 1) for l in out.read_text().splitlines())
    assert Decimal(got["total_cost_usd"]) == sum(costs)
    assert got["total_cost_usd"] == str(sum(costs))  # no float noise (0.0201, not 0.02009…)


def test_workflows_draw_phases_and_agents_with_their_tokens():
    report, _ = run(CBC)
    started, agents, phases, _, notified = workflow_facts(CBC)
    text = report.stream.getvalue()
    (wf,) = [t for t in report.collector.traces.values() if t.root().kind == "workflow"]
    rows = [l.row for l in shown.select(wf, 100)]
    assert [r.kind for r in rows].count("phase") == len(phases)
    assert [r.kind for r in rows].count("agent") == len(agents)
    assert wf.root().total_tokens == notified["usage"]["total_tokens"]
    for agent in agents:
        assert f"invoke_agent {agent['label']}" in text
    failed = [a for a in agents if a["state"] == "error"]
    assert failed and all(a["error"] in text for a in failed)
    # the heading names the count: beside a session's in/out tokens it is not one of them
    head = shown.trace_head(wf)[1]
    assert f"{notified['usage']['total_tokens']:,} workflow tokens" in head and head in text


def test_step_summary_has_a_row_per_shown_span_and_the_link(tmp_path):
    step = tmp_path / "summary.md"
    report, _ = run(CAUDRA, env={"GITHUB_STEP_SUMMARY": str(step)}, trace_url_template=TEMPLATE)
    md = step.read_text()
    spans = sum(len(t.rows) for t in report.collector.traces.values())
    assert md.count("\n| ") - len(report.collector.traces) == spans  # a header per table
    for trace_id in report.collector.traces:
        assert f"[open trace]({TEMPLATE.replace('{trace_id}', f'{trace_id:032x}')})" in md


def test_long_sessions_fold_but_keep_the_slowest_and_the_failed():
    collector = Collector()
    ms = 1_000_000
    collector.take(Row(1, 1, None, "invoke_agent claude-code", "session", 0, 10_000 * ms))
    for i in range(500):
        slow = 300 * ms if i == 123 else ms
        row = Row(1, 100 + i, 1, f"turn {i + 1}", "turn", i * 10 * ms, i * 10 * ms + slow,
                  input_tokens=10, output_tokens=1)
        if i == 400:
            row.error, row.status = "boom", "error_during_execution"
        collector.take(row)
    (trace,) = collector.traces.values()
    lines = shown.select(trace, 40)
    names = [l.row.name for l in lines if l.row is not None]
    (more,) = [l for l in lines if l.row is None]
    assert len(lines) == 40  # the "… N more" line among them
    assert len(names) == 39 and "turn 124" in names and "turn 401" in names
    assert more.more == 501 - 39 and more.more_tokens == 11 * more.more and more.more_errors == 0
    text = waterfall.render_text(collector)
    assert f"… {more.more} more" in text and "error turn 401: boom" in text
    assert len(text.splitlines()) < 60


def test_rows_beyond_the_bound_are_counted_not_kept():
    collector = Collector(max_rows=10)
    for i in range(30):
        collector.take(Row(1, i + 2, 1, f"chat m{i}", "chat", i, i + 1, input_tokens=5, output_tokens=1))
    (trace,) = collector.traces.values()
    assert len(trace.rows) == 10 and trace.not_kept == 20
    assert collector.totals().input_tokens == 150  # totals count every span


def test_every_dialect_is_drawn():
    for path in (MILK, CAUDRA_TURNS, CAUDRA):
        report, _ = run(path)
        text = report.stream.getvalue()
        for trace in report.collector.traces.values():
            assert f"trace {trace.trace_id:032x}" in text
            for line in shown.select(trace, waterfall.TERMINAL_ROWS):
                if line.row is not None:
                    assert line.row.name[:20] in text


def test_links_once_per_trace_without_untrusted_text():
    report, said = run(CAUDRA, trace_url_template=TEMPLATE)
    links = [s for s in said if s.startswith("trace")]
    assert len(links) == len(report.collector.traces) == len(set(links))
    assert all(s.split(": ")[0] in ("trace session", "trace workflow", "trace run", "trace") for s in links)


def test_many_traces_draw_the_failed_and_the_latest():
    collector = Collector()
    for t in range(50):
        row = Row(t + 1, 1, None, f"invoke_workflow w{t}", "workflow", t, t + 1)
        if t == 3:
            row.error, row.status = "failed", "workflow_failed"
        collector.take(row)
    traces, others = waterfall.shown_traces(collector)
    names = [t.root().name for t in traces]
    assert len(names) == waterfall.MAX_TRACES_SHOWN and others == 50 - len(names)
    assert names[0] == "invoke_workflow w3" and names[-1] == "invoke_workflow w49"
    assert "invoke_workflow w30" not in names and "invoke_workflow w31" in names
    assert f"_{others} other traces not shown._" in waterfall.step_summary(collector)
    assert f"({others} other traces not drawn)" in waterfall.render_text(collector)


def test_job_output_cost_is_plain_decimal_notation(tmp_path):
    # a session whose cumulative cost ends at 10 (a whole number) and one at 1e-07: GITHUB_OUTPUT
    # carries positional decimals a shell or a YAML expression reads, never 1E+1 or 1E-7
    init = '{"type":"system","subtype":"init","session_id":"%s","model":"m","timestamp":"2026-07-10T00:00:00Z"}'
    res = ('{"type":"result","subtype":"success","is_error":false,"duration_ms":5,"num_turns":1,'
           '"session_id":"%s","total_cost_usd":%s,"usage":{"input_tokens":1,"output_tokens":1},'
           '"timestamp":"2026-07-10T00:00:01Z"}')
    # no cost in dollars (1e308 would be 309 digits, a negative would lower the total): none
    for cost, want in (("10", "10"), ("1e-07", "0.0000001"), ("0.1234500", "0.12345"),
                       ("999999999.5", "999999999.5"), ("1e308", "0"), ("1e9", "0"), ("-5", "0")):
        path = tmp_path / f"s{cost}.jsonl"
        path.write_text(init % "s1" + "\n" + res % ("s1", cost) + "\n")
        out = tmp_path / f"out{cost}"
        run(path, env={"GITHUB_OUTPUT": str(out)})
        assert f"total_cost_usd={want}" in out.read_text().splitlines()


@needs_fixtures()
def test_job_output_cost_drops_a_float_s_noise(tmp_path):
    """The 13 Claude Code recordings in one stream: one of them writes its cost as
    0.11752375000000001 (the CLI's own float sum); the job's total is the sum of each session's
    last cost, each to a double's 15 significant digits."""
    from decimal import Context
    recordings = sorted((FIXTURES / "claude-code").glob("*.jsonl"))
    stream = b"".join(p.read_bytes() for p in recordings)
    assert b'"total_cost_usd":0.11752375000000001' in stream
    path = tmp_path / "all.jsonl"
    path.write_bytes(stream)
    out = tmp_path / "out"
    run(path, env={"GITHUB_OUTPUT": str(out)})
    last: dict[str, str] = {}
    for line in stream.splitlines():
        doc = json.loads(line) if line.strip().startswith(b"{") else {}
        if doc.get("type") == "result" and "total_cost_usd" in doc:
            last[doc["session_id"]] = repr(doc["total_cost_usd"])
    want = sum((Context(prec=15).create_decimal(v) for v in last.values()), Decimal(0))
    got = dict(line.split("=", 1) for line in out.read_text().splitlines())["total_cost_usd"]
    assert got == format(want.normalize(), "f") and len(got) < 12, got


def test_rows_sharing_span_ids_are_counted_once_per_row_not_walked_again():
    """A recording concatenated with itself, replayed (deterministic ids): its copies' spans
    share ids. A folded line counts at most the rows there are (the walk of each shared id's
    subtree once per row multiplied them: 928,783 "more" in a trace of 14,000 rows)."""
    from otelbridge.shown import select
    from otelbridge.summary import Trace

    rows = [Row(1, 1, None, "invoke_agent claude-code", "session", 0, 100)]
    for copy in range(30):  # each copy: the same turn, chat and tool ids under the session
        rows += [Row(1, 2, 1, "turn 1", "turn", copy, 50 + copy),
                 Row(1, 3, 2, "chat m", "chat", copy, 10 + copy),
                 Row(1, 4, 3, "execute_tool Bash", "tool", copy, 5 + copy)]
    lines = select(Trace(1, rows), budget=2)
    folded = sum(l.more for l in lines if l.row is None)
    shown = sum(1 for l in lines if l.row is not None)
    assert folded > 0 and shown + folded <= len(rows)


@pytest.mark.parametrize("query,kept", [
    ("?orgId=1&token=abcdef123456", "?orgId=1"), ("?token=abcdef123456&orgId=1", "?orgId=1"),
    ("?token=abcdef123456", ""), ("?a=1&api_key=abcd1234secret&b=2#x", "?a=1&b=2#x"),
])
def test_a_trace_link_shows_no_credential_of_its_template_and_still_opens(query, kept):
    """The link lands in a CI job's log: a template's user:password and a query parameter with
    a secret value are left out (a marker in their place made a link that cannot open), the
    rest of the link kept as written."""
    from otelbridge.summary import trace_url

    link = trace_url("https://ci:Pw9xQ7zL@jaeger.example/trace/{trace_id}" + query, 5)
    assert link == "https://jaeger.example/trace/00000000000000000000000000000005" + kept
    grafana = "https://grafana.example/explore?orgId=1&left=%7B%22query%22:%22{trace_id}%22%7D"
    assert trace_url(grafana, 1) == grafana.replace("{trace_id}", f"{1:032x}")


def _fifty_failed_of_a_hundred_tools() -> Collector:
    """A session of 100 tool calls, every other one failed (more than a waterfall draws)."""
    collector = Collector()
    ms = 1_000_000
    collector.take(Row(1, 1, None, "invoke_agent claude-code", "session", 0, 10_000 * ms))
    for i in range(100):
        row = Row(1, 100 + i, 1, f"execute_tool Bash {i}", "tool", i * 10 * ms, i * 10 * ms + ms)
        if i % 2:
            row.error, row.status = f"exit {i}", "tool_error"
        collector.take(row)
    return collector


def test_failed_spans_beyond_those_drawn_are_counted_in_more_failed():
    collector = _fifty_failed_of_a_hundred_tools()
    (trace,) = collector.traces.values()
    assert trace.totals.errors == 50
    text = waterfall.render_text(collector)
    shown = text.count("  error execute_tool Bash ")
    assert shown == waterfall.MAX_ERRORS_SHOWN
    assert f"… {50 - shown} more failed" in text


def test_the_step_summary_counts_the_failed_spans_whose_texts_it_does_not_show():
    collector = _fifty_failed_of_a_hundred_tools()
    md = waterfall.step_summary(collector)
    shown = md.count("> **execute\\_tool Bash ")
    assert shown == waterfall.MAX_ERRORS_SHOWN
    assert f"> … {50 - shown} more failed" in md


@needs_fixtures()
def test_the_report_page_links_a_workflow_s_section_and_its_session_s_both_ways():
    """workflow-phased-2.1.270: the session starts a workflow, its own trace; the spans link
    both ways, and so do the page's two sections (a link to the other's anchor)."""
    from otelbridge import report as page_of
    rep, _ = run(FIXTURES / "claude-code" / "claudecli-go-workflow-phased-2.1.270.jsonl")
    traces = list(rep.collector.traces.values())
    by_root = {t.root().name: t for t in traces}
    session, workflow = by_root["invoke_agent claude-code"], by_root["invoke_workflow sleep-join"]
    assert session.linked == {workflow.trace_id} and workflow.linked == {session.trace_id}
    html = page_of.page(rep.collector)
    assert (f'linked: <a href="#t{workflow.trace_id:032x}">invoke_workflow sleep-join</a>' in html
            and f'<section class="trace" id="t{workflow.trace_id:032x}">' in html)
    assert (f'linked: <a href="#t{session.trace_id:032x}">invoke_agent claude-code</a>' in html
            and f'<section class="trace" id="t{session.trace_id:032x}">' in html)


@needs_fixtures()
def test_a_sub_agent_whose_calls_are_not_in_the_stream_shows_its_one_calls_tokens():
    """subagent-general-purpose: none of the sub-agent's own lines are in the stream; its
    Agent tool's result gives its one (last) call's usage, which its row shows; its task's
    ``total_tokens`` (``task_notification``) is kept beside; the totals stay the session's own."""
    path = FIXTURES / "claude-code" / "subagent-general-purpose.jsonl"
    reported = [json.loads(l)["usage"]["total_tokens"] for l in path.read_text().splitlines()
                if '"task_notification"' in l and '"usage"' in l]
    (call,) = [json.loads(l)["tool_use_result"]["usage"] for l in path.read_text().splitlines()
               if '"agentId"' in l and '"tool_use_result"' in l]
    report, _ = run(path)
    (trace,) = report.collector.traces.values()
    (agent,) = [r for r in trace.rows if r.name.startswith("invoke_agent general-purpose")]
    assert agent.task_tokens == reported[0] == 10197
    assert agent.input_tokens == call["input_tokens"] + call["cache_creation_input_tokens"] == 10196
    assert agent.output_tokens == call["output_tokens"] == 5
    assert shown.tokens_text(agent) == "10k/5"
    last = last_result(path)
    totals = report.collector.totals()
    assert totals.workflow_tokens == 0
    assert totals.input_tokens == sum(u["inputTokens"] + u["cacheReadInputTokens"] + u["cacheCreationInputTokens"]
                                      for u in last["modelUsage"].values())


@needs_fixtures()
def test_a_folded_trace_without_times_keeps_the_calls_with_the_most_tokens():
    """task-tool-2.1.6 has no timestamps: every call and tool is 0 ms, so "the slowest" was the
    first in order, and the main agent's last model call (27k tokens) was folded away behind 19
    identical Read rows. Among equally slow rows, the most tokens are kept first."""
    path = FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl"
    report, _ = run(path)
    (trace,) = report.collector.traces.values()
    lines = shown.select(trace, 16)
    ids = {l.row.span_id for l in lines if l.row is not None}
    assert any(l.more for l in lines)  # folded
    assert all(r.duration_ns == 0 for r in trace.rows if r.kind in ("chat", "tool"))
    turn = next(r for r in trace.rows if r.name == "turn 1")
    main_calls = [r for r in trace.rows if r.kind == "chat" and r.parent_id == turn.span_id]
    assert [shown.tokens_text(r) for r in main_calls] == ["24k/157", "27k/4"]
    assert all(r.span_id in ids for r in main_calls)
    folded_calls = [r for r in trace.rows if r.kind == "chat" and r.span_id not in ids]
    assert all(shown._tokens(r) <= min(shown._tokens(c) for c in main_calls) for r in folded_calls)


@needs_fixtures()
def test_the_total_says_when_the_stream_showed_no_token_count():
    """Cursor's lines carry no usage: its total says so rather than "0 input tokens"; a stream
    with counts, and a workflow's own total, say their numbers."""
    cursor, _ = run(FIXTURES / "other-dialects" / "cursor-full-session.jsonl")
    assert shown.totals_text(cursor.collector) == \
        "1 trace, no token counts in the stream, 0 failed spans, status ok"
    session, _ = run(SESSION)
    assert shown.totals_text(session.collector).startswith(
        "1 trace, 6,627 input tokens (with cache), 198 output tokens, $0.0141")
    cbc, _ = run(CBC)
    assert shown.totals_text(cbc.collector).startswith(
        "2 traces, 7,000 workflow tokens (input and output together), ")


@needs_fixtures()
def test_a_failed_span_s_text_is_shown_whole_once_for_the_spans_it_failed():
    """An API error fails the session, its turn and its call with one text: one line names the
    three and gives the text whole (a CI log of 100 columns wraps it; it was cut there, three
    times)."""
    path = FIXTURES / "claude-code" / "error-turn-invalid-model-2.1.206.jsonl"
    report, _ = run(path)
    text = waterfall.render_text(report.collector, width=100)
    errors = [line for line in text.splitlines() if line.startswith("  error ")]
    message = last_result(path)["result"]
    assert errors == [f"  error invoke_agent claude-code, turn 1, chat model: {message}"]
    assert len(errors[0]) > 100


@needs_fixtures()
def test_a_run_of_like_tool_calls_is_one_row_when_the_trace_is_folded():
    """task-tool-2.1.6's sub-agent reads 19 files in one model call, then 8: in a waterfall of
    40 rows those Read rows pushed the agent's own model calls (and the main agent's last) out
    into "… N more". A run of 3 or more like siblings is one row when the trace does not fit,
    each kept whole when it does."""
    path = FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl"
    report, _ = run(path)
    (trace,) = report.collector.traces.values()
    lines = shown.select(trace, waterfall.TERMINAL_ROWS)
    assert not any(l.more for l in lines)  # nothing folded
    names = [l.row.name for l in lines]
    assert names.count("execute_tool Read \u00d719") == names.count("execute_tool Read \u00d78") == 1
    assert "execute_tool Glob \u00d74" in names and "execute_tool Read" not in names
    chats = [r for r in trace.rows if r.kind == "chat"]
    assert sum(l.row.kind == "chat" for l in lines) == len(chats)  # every model call shown
    # the failed tool calls stay rows of their own; a trace that fits is not grouped
    assert sum(l.row.name == "execute_tool Bash" and l.row.error is not None for l in lines) == 2
    everything = shown.select(trace, len(trace.rows))
    assert [l.row.span_id for l in everything] and len(everything) == len(trace.rows)
    (reads,) = [l.row for l in lines if l.row.name == "execute_tool Read \u00d719"]
    grouped = [r for r in trace.rows if r.name == "execute_tool Read" and r.parent_id == reads.parent_id
               and r.start_ns >= reads.start_ns]
    assert (reads.start_ns, reads.end_ns) == (min(r.start_ns for r in grouped), max(r.end_ns for r in grouped))


@needs_fixtures()
def test_the_step_summary_draws_each_row_on_the_trace_s_time_line():
    """The workflow of workflow-phased-2.1.270 (timestamps: 1m36s): its root fills the timeline
    column, the join phase (its last second) stands at its end, each cell 1/24 of the run."""
    rep, _ = run(FIXTURES / "claude-code" / "claudecli-go-workflow-phased-2.1.270.jsonl")
    md = waterfall.step_summary(rep.collector)
    (workflow,) = [t for t in rep.collector.traces.values() if t.root().name == "invoke_workflow sleep-join"]
    cells = {}
    for line in md.splitlines():
        parts = [p.strip() for p in line.split(" | ")]
        if len(parts) == 7 and parts[1].startswith("`"):
            cells[parts[0].replace("&nbsp;", "").replace("\\", "").lstrip("| ")] = parts[1].strip("`")
    assert cells["invoke_workflow sleep-join"] == "█" * waterfall.MARKDOWN_BAR
    (join,) = [r for r in workflow.rows if r.name == "phase Join"]
    span = workflow.end_ns - workflow.start_ns
    assert (workflow.end_ns - join.start_ns) * waterfall.MARKDOWN_BAR < span  # its last cell
    assert cells["phase Join"] == "░" * (waterfall.MARKDOWN_BAR - 1) + "█"
    assert f"| span | 0s – {summary.format_duration(span)} | start |" in md


@needs_fixtures()
def test_a_turn_shows_its_own_cost_when_the_turns_before_it_are_not_in_view():
    """After a `follow` restart the views see turn 2 without turn 1 (exported by the run
    before): the turn's cost is the exported `turn.cost_usd`, not the difference from a turn the
    view happened to see (turn 2 showed the session's running total, $0.2226)."""
    rep, _ = run(FIXTURES / "claude-code" / "workflow-probe-2.1.206.jsonl")
    (trace,) = [t for t in rep.collector.traces.values() if t.root().name == "invoke_agent claude-code"]
    later = Collector()
    for row in trace.rows:
        if row.name != "turn 1" and row.parent_id != next(r.span_id for r in trace.rows if r.name == "turn 1"):
            later.take(row)
    (seen,) = later.traces.values()
    (line,) = [l for l in shown.select(seen, 40) if l.row is not None and l.row.name == "turn 2"]
    (turn2,) = [r for r in trace.rows if r.name == "turn 2"]
    assert line.cost == turn2.turn_cost == Decimal("0.0484615")


@needs_fixtures()
def test_the_step_summary_says_each_failed_text_once_as_the_waterfall_does():
    """task-tool-2.1.6: two Bash calls fail with one text; the waterfall says it once, the
    step summary said it twice."""
    rep, _ = run(FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl")
    md = waterfall.step_summary(rep.collector)
    said = [l for l in md.splitlines() if l.startswith("> **")]
    assert said == ["> **execute\\_tool Bash, execute\\_tool Bash**: tool error"]
    assert "  error execute_tool Bash, execute_tool Bash: tool error" in waterfall.render_text(rep.collector)


def test_a_long_status_is_shown_whole_in_the_waterfall_s_last_column():
    """Claude Code's result subtypes (``error_during_execution``, 22 characters) are longer than
    the status column: the last column, it runs on to the line's end rather than being cut."""
    collector = Collector()
    ms = 1_000_000
    collector.take(Row(1, 1, None, "invoke_agent claude-code", "session", 0, 10_000 * ms))
    row = Row(1, 2, 1, "turn 1", "turn", 0, 9_000 * ms, input_tokens=10, output_tokens=1)
    row.error, row.status = "interrupted by the user", "error_during_execution"
    collector.take(row)
    (line,) = [l for l in waterfall.render_text(collector, width=100).splitlines() if l.startswith("  turn 1")]
    assert line.endswith(" error_during_execution") and len(line) <= 100


@needs_fixtures()
@pytest.mark.parametrize("name", ["task-tool-2.1.6.jsonl", "claudecli-go-workflow-phased-2.1.270.jsonl"])
def test_one_row_is_never_folded_into_a_line_of_its_own(name):
    """"… 1 more" in place of a row without children saves no room: the row is shown; and the
    ``… N more`` lines count in the rows a view has room for."""
    report, _ = run(FIXTURES / "claude-code" / name)
    for trace in report.collector.traces.values():
        for budget in range(4, 24):
            lines = shown.select(trace, budget)
            assert not [l for l in lines if l.row is None and l.more == 1], (name, budget)
            assert len(lines) <= budget or len(lines) == len(shown.select(trace, 1)), (name, budget)


def test_a_stream_decoding_fell_behind_on_says_so_under_the_step_summary_heading(tmp_path):
    """A live stream whose second half decoding skipped (a gap, as the tee hands one over):
    the step summary's totals miss it, and a line under its heading says so; a stream read
    whole has none."""
    from otelbridge.lines import Gap

    data = SESSION.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    for gap in (True, False):
        step = tmp_path / f"summary-{gap}.md"
        config = Config(exporters=("none",), clock="stream", deterministic_ids=True, summary="always")
        report = Report(config, lambda line: None, env={"GITHUB_STEP_SUMMARY": str(step)}, stream=io.StringIO())
        stats = Stats()
        pipeline = Pipeline(config, stats, report=report, stream_timers=True)
        pipeline.on_chunk(data, cut if gap else len(data))
        if gap:
            pipeline.splitter.gap(Gap.of(data, cut))
        pipeline.end_stream()
        pipeline.report_and_exit_code(0, True)
        skipped = data.count(b"\n", cut) if gap else 0
        assert stats.lines_not_decoded == skipped and stats.lines == data.count(b"\n")
        heading, blank, note = step.read_text().splitlines()[:3]
        assert heading.startswith("### ") and blank == ""
        assert (note == f"> decoding fell behind the stream and skipped {skipped} lines unread, so "
                "these traces and totals may be incomplete") is gap
