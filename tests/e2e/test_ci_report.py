"""In a CI job, otelbridge as a real subprocess: a trace link as soon as a trace begins, the
waterfall at exit (CI set, stderr not a terminal: plain text), the step summary, the job
outputs and the HTML page — for a plain Claude Code run (pipe mode, ``--exporter none``), for
wrapper mode (the run span's trace) and with spans checked at a real OTLP receiver."""

from __future__ import annotations

import html
import json
import re
import socket

import pytest

from otelbridge.escape import markdown

from tests.conftest import EXAMPLES, FIXTURES, clean_env, roots, run_bridge, side_by_side, workflow_facts
from tests.receivers import HttpReceiver

SESSION = EXAMPLES / "claude-code-session.jsonl"
CBC = EXAMPLES / "cbc-workflow.jsonl"
TEMPLATE = "http://localhost:16686/trace/{trace_id}"


def outputs(path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    assert [l.split("=", 1)[0] for l in lines] == [
        "trace_id", "input_tokens", "output_tokens", "workflow_tokens", "total_cost_usd", "status"]
    return dict(l.split("=", 1) for l in lines)


def test_a_link_with_quotes_and_blanks_is_one_url_in_the_job_log(tmp_path):
    """A Grafana Explore template (JSON in its query): the link on stderr, as each trace starts
    and under its waterfall, is percent-encoded (braces and brackets too), so that a log's or a
    terminal's link detection, which stops at a quote, a blank or a brace, takes it whole."""
    template = 'https://grafana.example.com/explore?left={"queries":[{"query":"{trace_id}", "x": 1}]}'
    step = tmp_path / "summary.md"
    proc = run_bridge(["--exporter", "none", "--summary", "always", "--trace-url-template", template],
                      SESSION.read_bytes(), env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step)))
    assert proc.returncode == 0, proc.stderr
    (trace_id,) = re.findall(r"^trace ([0-9a-f]{32})  ", proc.stderr.decode(), re.M)
    url = ('https://grafana.example.com/explore?left=%7B%22queries%22:%5B%7B%22query%22:%22' + trace_id
           + '%22,%20%22x%22:%201%7D%5D%7D')
    err = proc.stderr.decode()
    assert f"otelbridge: trace session: {url} (not in the backend: exporter none)\n" in err
    assert f"trace {trace_id}  {url} (not in the backend: exporter none)\n" in err
    # (a Markdown link's target keeps braces and brackets: GitHub takes it whole)
    md_url = url.replace("%7B", "{").replace("%7D", "}").replace("%5B", "[").replace("%5D", "]")
    assert f"[open trace]({md_url})" in step.read_text()


def test_two_runs_of_a_job_are_told_apart_by_their_service_name(tmp_path):
    """Two steps of one job append to its summary page, one after the other without the steps'
    names: each heading names the run's service name (OTEL_SERVICE_NAME, or service.name in
    OTEL_RESOURCE_ATTRIBUTES: a matrix cell's), when one is set."""
    step = tmp_path / "summary.md"
    for n, service in enumerate(("agent (py3.11)", "", "agent-[3.12]")):
        page = tmp_path / f"report-{n}.html"
        proc = run_bridge(["--exporter", "none", "--report", str(page)], SESSION.read_bytes(),
                          env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step), OTEL_SERVICE_NAME=service))
        assert proc.returncode == 0, proc.stderr
        # the job log's waterfall and the page say it too
        named = f" ({service})" if service else ""
        assert f"\ntotal{named}: 1 trace, " in proc.stderr.decode()
        title = "otelbridge run report" + (f" — {html.escape(service)}" if service else "")
        assert f"<title>{title}</title>" in page.read_text()
    # the resource's service name, as the backend lists the traces under it
    proc = run_bridge(["--exporter", "none"], SESSION.read_bytes(),
                      env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step),
                                    OTEL_RESOURCE_ATTRIBUTES="service.name=agent-b,team=ci"))
    assert proc.returncode == 0, proc.stderr
    headings = [line.split(":", 1)[0] for line in step.read_text().splitlines() if line.startswith("### ")]
    assert headings == ["### ✅ otelbridge \\(" + markdown("agent (py3.11)") + "\\)", "### ✅ otelbridge",
                        "### ✅ otelbridge \\(" + markdown("agent-[3.12]") + "\\)",
                        "### ✅ otelbridge \\(" + markdown("agent-b") + "\\)"]


def test_outputs_flag_writes_the_job_outputs_as_a_dotenv_file_for_gitlab(tmp_path):
    """GitLab CI has no GITHUB_OUTPUT: ``--outputs PATH`` writes the same lines, a dotenv file
    its ``artifacts:reports:dotenv`` hands to later jobs (this run's alone: a name twice may
    fail the report); with GITHUB_OUTPUT set too, both. An empty stream writes it too."""
    data = SESSION.read_bytes()
    dotenv, github = tmp_path / "otelbridge.env", tmp_path / "github-output"
    proc = run_bridge(["--exporter", "none", "--outputs", str(dotenv)], data,
                      env=clean_env(CI="true", GITLAB_CI="true"))
    assert proc.returncode == 0 and proc.stdout == data
    got = outputs(dotenv)
    assert dotenv.stat().st_mode & 0o777 == 0o600
    last = [json.loads(l) for l in data.splitlines() if b'"type":"result"' in l][-1]
    assert got["total_cost_usd"] == repr(last["total_cost_usd"]) and got["status"] == "ok"
    assert re.fullmatch(r"[0-9a-f]{32}", got["trace_id"]) and int(got["input_tokens"]) > 0
    assert all(re.fullmatch(r"[a-z_]+=[^\n]*", line) for line in dotenv.read_text().splitlines())
    proc = run_bridge(["--exporter", "none", "--outputs", str(dotenv)], data,
                      env=clean_env(CI="true", GITHUB_OUTPUT=str(github)))
    assert proc.returncode == 0
    assert {k: v for k, v in outputs(dotenv).items() if k != "trace_id"} == \
           {k: v for k, v in outputs(github).items() if k != "trace_id"} == \
           {k: v for k, v in got.items() if k != "trace_id"}
    assert outputs(dotenv)["trace_id"] == outputs(github)["trace_id"]  # (outputs(): six lines, once each)
    proc = run_bridge(["--exporter", "none", "--outputs", str(dotenv)], b"", env=clean_env(GITLAB_CI="true"))
    assert proc.returncode == 0 and outputs(dotenv) == {"trace_id": "", "input_tokens": "0", "output_tokens": "0",
                                                        "workflow_tokens": "0", "total_cost_usd": "0", "status": ""}


def test_under_an_unsampled_traceparent_the_lines_say_why_and_whose_trace():
    """A CI step's TRACEPARENT not sampled: the line that says nothing will be exported names the
    way out, and the link names the trace it is (the CI's, every span joined it; it read
    ``trace:`` with no word after it)."""
    ci_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    proc = run_bridge(["--exporter", "none", "--summary", "never", "--trace-url-template", TEMPLATE],
                      SESSION.read_bytes(), env=clean_env(TRACEPARENT=f"00-{ci_trace}-00f067aa0ba902b7-00"))
    assert proc.returncode == 0
    lines = proc.stderr.decode().splitlines()
    assert lines[0] == ("otelbridge: TRACEPARENT is not sampled: with the parent-based sampler nothing will "
                        "be exported (--no-traceparent: traces of its own)")
    assert lines[1] == (f"otelbridge: trace from TRACEPARENT: {TEMPLATE.replace('{trace_id}', ci_trace)} "
                        "(not in the backend: exporter none)")


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_stream_that_is_not_stream_json_is_said_on_the_summary_page(tmp_path, wrapped):
    """Claude Code run without ``--output-format stream-json`` prints text: the step summary says
    why nothing (or only the command's run) was traced and what to run, as stderr does (the
    summary said ✅ with no word of it, or nothing at all in pipe mode)."""
    text = tmp_path / "answer.txt"
    text.write_text("I fixed the failing test.\nAll 12 tests pass.\n")
    step = tmp_path / "summary.md"
    args = ["--exporter", "none", "--", "cat", str(text)] if wrapped else ["--exporter", "none"]
    proc = run_bridge(args, None if wrapped else text.read_bytes(),
                      env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step)))
    assert proc.returncode == 0 and proc.stdout == text.read_bytes()
    traced = "only the command's run was traced" if wrapped else "nothing was traced"
    said = (f"no line was of a stream otelbridge traces (stream-json of Claude Code, cbc, milk or Caudra, "
            f"one JSON object a line; Bernstein signals), so {traced} "
            "(for Claude Code: claude -p --output-format stream-json --verbose)")
    assert f"otelbridge: {said}; the input passed through\n" in proc.stderr.decode()
    lines = step.read_text().splitlines()
    assert lines[0] == ("### ⚠️ otelbridge: 1 trace, no token counts in the stream, 0 failed spans, status ok"
                        if wrapped else "### ⚠️ otelbridge: nothing traced")
    assert lines[2] == "> " + markdown(said)
    assert ("#### run cat — ok" in step.read_text()) is wrapped


def test_an_empty_stream_is_said_on_the_summary_page(tmp_path):
    """A CLI that fails before its first line (``stream-json`` without ``--verbose``) prints
    nothing on stdout: in pipe mode the step summary says so, as stderr does (it was left
    unwritten, and stderr had the counts line alone). Wrapped, its run span says how it ended
    (a command not found is said once, not again as an empty stream)."""
    step = tmp_path / "summary.md"
    proc = run_bridge(["--exporter", "none"], b"", env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step)))
    assert proc.returncode == 0 and proc.stdout == b""
    said = "the input was empty, so nothing was traced (for Claude Code: claude -p --output-format stream-json --verbose)"
    assert proc.stderr.decode().splitlines()[-1] == f"otelbridge: {said}"
    lines = step.read_text().splitlines()
    assert lines[0] == "### ⚠️ otelbridge: nothing traced" and lines[2] == "> " + markdown(said)
    wrapped = tmp_path / "wrapped.md"
    proc = run_bridge(["--exporter", "none", "--", "no-such-command-xyz"], None,
                      env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(wrapped)))
    assert proc.returncode == 127 and b"empty" not in proc.stderr and b"printed nothing" not in proc.stderr
    text = wrapped.read_text()
    assert "nothing traced" not in text and markdown("command not found (exit status 127)") in text


def test_plain_session_pipe_mode_gets_every_view(tmp_path):
    """The issue's trial: `--exporter none --summary always --trace-url-template` on a plain
    Claude Code stream gives a link, a waterfall, a step summary, outputs and a page."""
    step, out, page = tmp_path / "summary.md", tmp_path / "out", tmp_path / "report.html"
    data = SESSION.read_bytes()
    env = clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step), GITHUB_OUTPUT=str(out))
    proc = run_bridge(["--exporter", "none", "--summary", "always", "--report", str(page),
                       "--trace-url-template", TEMPLATE], data, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    got = outputs(out)
    trace_id = got["trace_id"]
    url = TEMPLATE.replace("{trace_id}", trace_id)
    err = proc.stderr.decode()
    assert "\x1b" not in err
    note = " (not in the backend: exporter none)"  # the link's id is the run's; no span left
    assert err.index(f"otelbridge: trace session: {url}{note}\n") < err.index(f"trace {trace_id}  {url}{note}\n")
    last = [json.loads(l) for l in data.splitlines() if b'"type":"result"' in l][-1]
    assert got["total_cost_usd"] == repr(last["total_cost_usd"]) and got["status"] == "ok"
    assert int(got["input_tokens"]) > 0 and int(got["output_tokens"]) > 0
    assert f"{int(got['input_tokens']):,} input tokens" in err
    for name in ("invoke_agent claude-code", "turn 1", "turn 2", "task local_bash"):
        assert name in err
    md = step.read_text()
    assert f"[open trace]({url}) \\(not in the backend\\: exporter none\\)\n" in md  # markdown
    assert "turn 1" in md
    html = page.read_text()
    assert f'href="{url}" rel="noreferrer noopener">open trace</a>{note}' in html and "turn 2" in html
    assert page.stat().st_mode & 0o777 == 0o600


def test_wrapper_mode_links_and_outputs_the_run_span(tmp_path):
    out = tmp_path / "out"
    data = CBC.read_bytes()
    with HttpReceiver() as rx:
        env = clean_env(CI="true", GITHUB_OUTPUT=str(out), OTELBRIDGE_TRACE_URL=TEMPLATE)
        proc = run_bridge(["--endpoint", rx.endpoint, "--", "sh", "-c", f'cat "{CBC}"; exit 3'],
                          env=env)
        agents, phases = workflow_facts(CBC)[1:3]
        spans = rx.received.wait_for(1 + 1 + len(phases) + len(agents), timeout=10)
    assert proc.returncode == 3 and proc.stdout == data
    (run,) = roots(spans, "run sh")
    got = outputs(out)
    assert got["trace_id"] == run.trace_id
    assert got["status"] == "error"  # the run exited 3 and the workflow failed
    err = proc.stderr.decode()
    url = TEMPLATE.replace("{trace_id}", run.trace_id)
    assert err.count(f"otelbridge: trace run: {url}\n") == 1  # at start, before the waterfall
    assert "not in the backend" not in err
    assert err.index(f"otelbridge: trace run: {url}") < err.index("run sh  error")
    (wf,) = roots(spans, "invoke_workflow")
    assert f"otelbridge: trace workflow: {TEMPLATE.replace('{trace_id}', wf.trace_id)}" in err
    for agent in agents:
        assert f"invoke_agent {agent['label']}" in err


@pytest.mark.parametrize("how, why", [
    (dict(OTEL_TRACES_SAMPLER="always_off"), "sampled out"),
    (dict(OTEL_TRACES_SAMPLER="parentbased_always_on",
          TRACEPARENT="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"), "sampled out"),
    (dict(OTEL_SDK_DISABLED="true"), "OTEL_SDK_DISABLED"),
    (dict(OTEL_TRACES_EXPORTER="console"), "no OTLP exporter"),
])
def test_a_link_to_a_trace_no_backend_holds_says_why(tmp_path, how, why):
    """A trace link leads nowhere when the trace is sampled out or not sent over OTLP: each
    place that shows it says so, and the receiver indeed holds none of its spans."""
    step = tmp_path / "summary.md"
    with HttpReceiver() as rx:
        env = clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step), OTELBRIDGE_TRACE_URL=TEMPLATE,
                        OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, **how)
        proc = run_bridge(["--summary", "always"], SESSION.read_bytes(), env=env)
        assert proc.returncode == 0
        assert rx.received.spans() == []
    err = proc.stderr.decode()
    (line,) = [l for l in err.splitlines() if l.startswith(("otelbridge: trace session: ",
                                                             "otelbridge: trace from TRACEPARENT: "))]
    url = line.split(": ")[-2].split(" ")[0]
    assert line.endswith(f"{url} (not in the backend: {why})")
    assert f"  {url} (not in the backend: {why})\n" in err
    assert f"[open trace]({url}){markdown(f' (not in the backend: {why})')}\n" in step.read_text()


def test_links_to_a_collector_that_took_no_span_say_so_at_exit(tmp_path):
    """A dead endpoint: the link printed as the trace began could not know; the waterfall and
    the step summary at exit, after the flush, say that no span reached the backend."""
    step = tmp_path / "summary.md"
    with socket.socket() as s:  # a port nobody listens on: refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step), OTELBRIDGE_TRACE_URL=TEMPLATE)
    proc = run_bridge(["--endpoint", f"http://127.0.0.1:{port}", "--flush-timeout", "0.5",
                       "--summary", "always"], SESSION.read_bytes(), env=env)
    assert proc.returncode == 0 and proc.stdout == SESSION.read_bytes()
    err = proc.stderr.decode()
    (line,) = [l for l in err.splitlines() if l.startswith("otelbridge: trace session: ")]
    url = line.split(": ", 2)[2]
    assert "not in the backend" not in url  # at the start it was on its way
    assert f"  {url} (not in the backend: export failed)\n" in err
    assert f"[open trace]({url}){markdown(' (not in the backend: export failed)')}\n" in step.read_text()
    assert "spans 18 built, 0 exported, 18 dropped" in err
    # the summary page, read alone, warns under a heading that does not say ✅
    heading, _, note = step.read_text().splitlines()[:3]
    assert heading.startswith("### ⚠️ otelbridge: ") and "status ok" in heading
    assert note == "> " + markdown("No span reached the backend: export failed (the job log says why).")


def test_without_a_link_the_trace_line_still_says_no_span_reached_the_backend(tmp_path):
    """No trace link set: the waterfall's trace line and the step summary's say what the exit
    line says, that the collector took none of it (they said nothing there without a link)."""
    step = tmp_path / "summary.md"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run_bridge(["--endpoint", f"http://127.0.0.1:{port}", "--flush-timeout", "0.5",
                       "--summary", "always"], SESSION.read_bytes(),
                      env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step)))
    assert proc.returncode == 0 and proc.stdout == SESSION.read_bytes()
    (line,) = [l for l in proc.stderr.decode().splitlines() if l.startswith("trace ")]
    assert re.fullmatch(r"trace [0-9a-f]{32} \(not in the backend: export failed\)", line), line
    (md_line,) = [l for l in step.read_text().splitlines() if l.startswith("trace `")]
    assert md_line == f"trace `{line.split()[1]}`" + markdown(" (not in the backend: export failed)")


@pytest.mark.skipif(not (FIXTURES / "claude-code").is_dir(), reason="shared fixtures not present")
def test_a_ratio_sampler_notes_exactly_the_traces_the_backend_lacks():
    """traceidratio 0.5 over the Claude Code recordings (replay: deterministic ids): the links
    without a note are exactly the traces whose spans reached the receiver."""
    files = sorted(str(p) for p in (FIXTURES / "claude-code").glob("*.jsonl"))
    with HttpReceiver() as rx:
        env = clean_env(OTEL_TRACES_SAMPLER="traceidratio", OTEL_TRACES_SAMPLER_ARG="0.5",
                        OTELBRIDGE_TRACE_URL=TEMPLATE, OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint)
        proc = run_bridge(["replay", *files], env=env)
        assert proc.returncode == 0, proc.stderr
        received = {s.trace_id for s in rx.received.spans()}
    links = [l for l in proc.stderr.decode().splitlines() if l.startswith("otelbridge: trace")]
    linked = {l.split("/trace/")[1][:32]: l.endswith("(not in the backend: sampled out)") for l in links}
    assert len(linked) == len(links) >= 10
    assert {t for t, out in linked.items() if not out} == received
    assert 0 < len(received) < len(linked)


def test_no_views_without_ci_terminal_or_files(tmp_path):
    plain, never = side_by_side(
        lambda: run_bridge(["--exporter", "none"], CBC.read_bytes(), env=clean_env()),
        lambda: run_bridge(["--summary", "never", "--exporter", "none"], CBC.read_bytes(),
                           env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(tmp_path / "s.md"))))
    assert b"total:" not in plain.stderr
    assert b"total:" not in never.stderr and not (tmp_path / "s.md").exists()


def test_template_without_placeholder_is_refused():
    proc = run_bridge(["--trace-url-template", "http://x/trace"], b"")
    assert proc.returncode == 2 and b"{trace_id}" in proc.stderr


def test_replay_gives_a_deterministic_live_run_its_workflow_ids(tmp_path):
    """What examples/github-actions.yml says: after a wrapped run with --deterministic-ids,
    `replay` of its stream rebuilds each workflow trace with the same trace and span ids."""
    live, again = tmp_path / "live.jsonl", tmp_path / "replay.jsonl"
    proc = run_bridge(["--exporter", "file", "--output", str(live), "--deterministic-ids", "--",
                       "cat", str(CBC)], env=clean_env())
    assert proc.returncode == 0
    stream = tmp_path / "stream.jsonl"
    stream.write_bytes(proc.stdout)
    replay = run_bridge(["replay", "--exporter", "file", "--output", str(again), str(stream)],
                        env=clean_env())
    assert replay.returncode == 0

    def workflow_ids(path):
        spans = [s for line in path.read_text().splitlines()
                 for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        traces = {s["traceId"] for s in spans if s["name"].startswith("invoke_workflow")}
        return {(s["traceId"], s["spanId"], s["name"]) for s in spans if s["traceId"] in traces}

    ids = workflow_ids(live)
    assert len(ids) == 1 + len(workflow_facts(CBC)[2]) + len(workflow_facts(CBC)[1])
    assert workflow_ids(again) == ids


def test_each_wrapped_run_of_one_command_gets_a_trace_of_its_own(tmp_path):
    """With --deterministic-ids a command line names no run: two CI runs of the same
    `claude -p "…"` must not land in one trace (their job outputs would link to it)."""
    got = []
    for n in range(2):
        out = tmp_path / f"out{n}"
        proc = run_bridge(["--exporter", "none", "--deterministic-ids", "--", "cat", str(CBC)],
                          env=clean_env(GITHUB_OUTPUT=str(out)))
        assert proc.returncode == 0 and proc.stdout == CBC.read_bytes()
        got.append(outputs(out)["trace_id"])
    assert got[0] != got[1] and all(len(t) == 32 and int(t, 16) for t in got)


def test_replay_dash_reads_stdin(tmp_path):
    out = tmp_path / "out"
    data = CBC.read_bytes()
    proc, from_file = side_by_side(
        lambda: run_bridge(["replay", "--exporter", "none", "-"], data, env=clean_env(GITHUB_OUTPUT=str(out))),
        lambda: run_bridge(["replay", "--exporter", "none", str(CBC)],
                           env=clean_env(GITHUB_OUTPUT=str(tmp_path / "out2"))))
    assert proc.returncode == 0 == from_file.returncode and proc.stdout == b""
    assert b"9 decoded" in proc.stderr and b"spans 8 built" in proc.stderr
    assert out.read_text() == (tmp_path / "out2").read_text()  # the same deterministic trace


def test_terminal_escapes_in_the_stream_never_reach_the_log(tmp_path):
    """A task_notification status (and a workflow name, an agent label) carrying clear-screen,
    cursor-home, window-title and bidi sequences: the log, step summary and outputs show none."""
    hostile = "\x1b[2J\x1b[H\x1b]0;pwned\x07\u202eevil\u200b"
    lines = []
    for line in CBC.read_text().splitlines():
        doc = json.loads(line)
        if doc.get("subtype") == "task_notification":
            doc["status"] = hostile
        if "workflow_name" in doc:
            doc["workflow_name"] = hostile
        for entry in doc.get("workflow_progress") or ():
            if entry.get("type") == "workflow_agent":
                entry["label"] = hostile
        lines.append(json.dumps(doc))
    data = ("\n".join(lines) + "\n").encode()
    step, out = tmp_path / "s.md", tmp_path / "out"
    proc = run_bridge(["--exporter", "none", "--summary", "always", "--trace-url-template", TEMPLATE],
                      data, env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step), GITHUB_OUTPUT=str(out)))
    assert proc.returncode == 0 and proc.stdout == data
    err = proc.stderr.decode()
    assert "invoke_workflow evil" in err  # the text is there, its controls are not
    for text in (err, step.read_text(), out.read_text()):
        assert not any(c in text for c in "\x1b\x07\u202e\u200b")


def test_the_console_exporter_writes_no_ci_log_command(tmp_path):
    """``--exporter console`` prints spans' JSON on stderr, a CI job's log: a workflow name and
    an agent label holding ``##vso[``/``##[`` commands stay inert there too."""
    lines = []
    for line in CBC.read_text().splitlines():
        doc = json.loads(line)
        if "workflow_name" in doc:
            doc["workflow_name"] = "##vso[task.complete result=Succeeded]done"
        for entry in doc.get("workflow_progress") or ():
            if entry.get("type") == "workflow_agent":
                entry["label"] = "##[add-mask]everything"
        lines.append(json.dumps(doc))
    data = ("\n".join(lines) + "\n").encode()
    proc = run_bridge(["--exporter", "console", "--summary", "never"], data,
                      env=clean_env(CI="true"))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == data
    assert '"name": "invoke_workflow # #vso[task.complete result=Succeeded]done"' in err
    assert "##vso[" not in err and "##[" not in err


def test_flush_timeout_0_still_decodes_the_last_lines(tmp_path):
    """`--flush-timeout 0` (no collector to wait for) with the recording as stdin, a file: the
    whole input passed before decoding was set up, and "half of 0 s" to decode what was held
    decoded none of it: the job outputs said status ok with no trace and no cost. Decoding what
    the end holds gets at least a second: the outputs are the run's. Counted lines add up."""
    out, stats_path = tmp_path / "out", tmp_path / "stats.json"
    data = SESSION.read_bytes()
    with open(SESSION, "rb") as stdin:
        proc = run_bridge(["--exporter", "none", "--flush-timeout", "0", "--stats-json", str(stats_path)],
                          env=clean_env(GITHUB_OUTPUT=str(out)), stdin=stdin)
    assert proc.returncode == 0 and proc.stdout == data, proc.stderr
    stats = json.loads(stats_path.read_text())
    assert stats["lines"] == data.count(b"\n") and stats["lines_not_decoded"] == 0
    got = outputs(out)
    last = [json.loads(l) for l in data.splitlines() if b'"type":"result"' in l][-1]
    assert got["status"] == "ok" and got["total_cost_usd"] == repr(last["total_cost_usd"])
    assert len(got["trace_id"]) == 32


def test_a_value_found_after_a_span_ended_is_hidden_in_every_view(tmp_path):
    """Turn 1 fails with a value nothing marks as secret; turn 2's tool then shows it as a
    password. The turn's span had left before (as documented), but the views are drawn at
    exit: the step summary, the HTML page and the waterfall show the value's marker."""
    secret, sid, model = "Xk9mP2qR7vL4nT8wZ3", "sess-late", "claude-sonnet-4-5"

    def assistant(mid: str, content: list) -> dict:
        return {"type": "assistant", "session_id": sid, "message": {
            "id": mid, "model": model, "role": "assistant", "content": content,
            "usage": {"input_tokens": 10, "output_tokens": 5}}}

    lines = [
        {"type": "system", "subtype": "init", "session_id": sid, "model": model, "tools": ["Bash"]},
        assistant("msg_1", [{"type": "text", "text": "Calling the upstream."}]),
        {"type": "result", "subtype": "success", "is_error": True, "session_id": sid, "num_turns": 1,
         "duration_ms": 10, "result": f"Upstream rejected request id {secret}"},
        {"type": "system", "subtype": "init", "session_id": sid, "model": model, "tools": ["Bash"]},
        assistant("msg_2", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat .env"}}]),
        {"type": "user", "session_id": sid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": f"DB_PASSWORD={secret}\n"}]}},
        {"type": "result", "subtype": "success", "is_error": False, "session_id": sid, "num_turns": 1,
         "duration_ms": 10, "result": "done"},
    ]
    for n, line in enumerate(lines):  # dated: no record waits for the stream's first time
        line["timestamp"] = f"2026-12-06T08:00:{n:02d}.000Z"
    stream = tmp_path / "late.jsonl"
    stream.write_text("".join(json.dumps(l) + "\n" for l in lines))
    summary, page = tmp_path / "summary.md", tmp_path / "report.html"
    proc = run_bridge(["replay", "--exporter", "none", "--summary", "always", "--report", str(page), str(stream)],
                      env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(summary)))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    assert "Upstream rejected request id [REDACTED:secret]" in err
    assert markdown("Upstream rejected request id [REDACTED:secret]") in summary.read_text()
    assert "Upstream rejected request id [REDACTED:secret]" in page.read_text()
    for text in (err, summary.read_text(), page.read_text()):
        assert secret not in text


def deep_sessions(sessions: int = 20, depth: int = 58) -> bytes:
    """``sessions`` Claude Code sessions, each a chain of ``depth`` nested sub-agents whose
    model, tool and agent names are all ``#`` and ``@`` (each of which Markdown escapes into 9
    bytes), the deepest row indented ``depth`` times: the most step summary a stream makes."""
    lines = []
    for s in range(sessions):
        sid = f"sess-{s}"
        lines.append({"type": "system", "subtype": "init", "cwd": "/r", "model": "m",
                      "claude_code_version": "2.1.220", "session_id": sid})
        for d in range(depth):
            name = f"{d:02d}" + "#" * 80
            lines.append({"type": "assistant", "session_id": sid,
                          "parent_tool_use_id": f"a{s}_{d - 1}" if d else None,
                          "message": {"id": f"m{s}_{d}", "model": "@" * 80, "usage": {"input_tokens": 1, "output_tokens": 1},
                                      "content": [{"type": "tool_use", "id": f"a{s}_{d}", "name": name,
                                                   "input": {"subagent_type": name, "description": "d", "prompt": "p"}}]}})
        lines.append({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                      "session_id": sid, "usage": {"input_tokens": 1, "output_tokens": 1}})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def test_a_step_summary_stays_within_what_github_takes(tmp_path):
    """GitHub shows no step summary over 1 MiB. Twenty deep sessions of names Markdown escapes
    at 9 bytes a character would write 1.2 MB: it stays at most 512 KiB, the traces that do not
    fit counted with those not shown, and each trace it shows whole."""
    step = tmp_path / "summary.md"
    data = deep_sessions()
    proc = run_bridge(["--exporter", "none"], data, env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step)))
    assert proc.returncode == 0 and proc.stdout == data
    text = step.read_text()
    assert 256 * 1024 < len(text.encode()) <= 512 * 1024
    shown = text.count("\ntrace `")
    (others,) = re.findall(r"^_(\d+) other traces? not shown\._$", text, re.MULTILINE)
    assert shown + int(others) == 20 and shown >= 2
    assert text.count("\n#### ") == shown


def test_runs_that_share_a_step_summary_stay_within_what_github_takes_together(tmp_path):
    """Three runs in one step append to one summary: each takes what the ones before left of
    GitHub's 1 MiB, so the step's summary stays within it, each run's heading in it."""
    step = tmp_path / "summary.md"
    step.write_text("# the step's own heading\n")
    data = deep_sessions()
    for _ in range(3):
        proc = run_bridge(["--exporter", "none"], data, env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step)))
        assert proc.returncode == 0 and proc.stdout == data
    text = step.read_text()
    assert 1024 * 1024 - 64 * 1024 < len(text.encode()) <= 1024 * 1024
    assert text.count("otelbridge: 20 traces") == 3 and len(re.findall(r"^_\d+ other traces? not shown\._$", text, re.M)) == 3


def test_a_step_summary_github_would_no_longer_show_gets_nothing_more(tmp_path):
    """The step's summary already holds nearly 1 MiB: a heading more would take it past what
    GitHub shows, and hide the step's own lines too; nothing is added, the rest of the run is
    as ever."""
    step = tmp_path / "summary.md"
    step.write_text("x" * (1024 * 1024 - 100) + "\n")
    data = SESSION.read_bytes()
    out = tmp_path / "out"
    proc = run_bridge(["--exporter", "none"], data, env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step),
                                                                  GITHUB_OUTPUT=str(out)))
    assert proc.returncode == 0 and proc.stdout == data
    assert step.stat().st_size == 1024 * 1024 - 99 and "total_cost_usd=" in out.read_text()
    assert ("otelbridge: GITHUB_STEP_SUMMARY holds nearly 1 MiB already, the most GitHub shows: this "
            "run's summary is left out") in proc.stderr.decode().splitlines()
