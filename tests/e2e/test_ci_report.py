"""In a CI job: the trace link as soon as the trace exists, the waterfall at exit (CI set, stderr
not a terminal: plain text), the step summary appended when GITHUB_STEP_SUMMARY is set."""

from __future__ import annotations

from tests.conftest import EXAMPLES, clean_env, run_bridge, workflow_facts
from tests.receivers import HttpReceiver

CBC = EXAMPLES / "cbc-workflow.jsonl"
TEMPLATE = "http://localhost:16686/trace/{trace_id}"


def test_ci_log_and_step_summary(tmp_path):
    step = tmp_path / "summary.md"
    data = CBC.read_bytes()
    started, agents, phases, _, notified = workflow_facts(CBC)
    with HttpReceiver() as rx:
        env = clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step), OTELBRIDGE_TRACE_URL=TEMPLATE)
        proc = run_bridge(["--endpoint", rx.endpoint], data, env=env)
        spans = rx.received.wait_for(1 + len(phases) + len(agents), timeout=5)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    (root,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    url = TEMPLATE.replace("{trace_id}", root.trace_id)
    err = proc.stderr.decode()
    assert "\x1b" not in err  # not a terminal: no colour
    link_at = err.index(f"otelbridge: trace workflow {started['task_id']}: {url}")
    waterfall_at = err.index(f"trace {root.trace_id}")
    assert link_at < waterfall_at  # printed when the trace began, again in the summary
    assert err.count(url) == 2
    for agent in agents:
        assert agent["label"] in err
    md = step.read_text()
    assert f"[open trace]({url})" in md
    assert f"trace `{root.trace_id}`" in md
    assert f"{notified['usage']['total_tokens']:,} tokens" in md
    assert md.count("\n| ") == 1 + 1 + len(phases) + len(agents)  # header + workflow + rows


def test_no_summary_without_ci_or_terminal(tmp_path):
    proc = run_bridge([], CBC.read_bytes(), env=clean_env(OTEL_SDK_DISABLED="true"))
    assert b"totals:" not in proc.stderr
    proc = run_bridge(["--summary", "never"], CBC.read_bytes(),
                      env=clean_env(CI="true", OTEL_SDK_DISABLED="true",
                                    GITHUB_STEP_SUMMARY=str(tmp_path / "s.md")))
    assert b"totals:" not in proc.stderr and not (tmp_path / "s.md").exists()


def test_template_without_placeholder_is_refused():
    proc = run_bridge(["--trace-url-template", "http://x/trace"], b"")
    assert proc.returncode == 2 and b"{trace_id}" in proc.stderr
