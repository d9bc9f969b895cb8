"""End to end: Bernstein signals (seed 004) alone and mixed into a cbc workflow stream, and
``--dialect`` restricting recognition. otelbridge runs as a subprocess, spans land at a real
OTLP receiver; the expected signals are found in the input by the seed's grammar, written here
as a regular expression independent of the decoder."""

from __future__ import annotations

import json
import posixpath
import re

import pytest

from tests.conftest import session_name, EXAMPLES, clean_env, export_in_process, run_bridge, session_span_count, spans_of_trace
from tests.receivers import GrpcReceiver, HttpReceiver

SIGNALS = EXAMPLES / "bernstein-signals.txt"
CBC = EXAMPLES / "cbc-workflow.jsonl"
GRAMMAR = re.compile(rb"^BERNSTEIN:(COMPLETED|FAILED|QUESTION|PLAN_DRAFT|PLAN_READY|BLOCKED)(?: (\{.*\}))?$")


def signals_in(data: bytes) -> list[tuple[str, dict]]:
    out = []
    for line in data.splitlines():
        m = GRAMMAR.match(line)
        if not m:
            continue
        payload = json.loads(m.group(2)) if m.group(2) else {}
        if isinstance(payload, dict):
            out.append((m.group(1).decode(), payload))
    return out


def export(data: bytes, *args: str, expect: int, env: dict | None = None, receiver=GrpcReceiver):
    with receiver() as rx:
        proto = "grpc" if receiver is GrpcReceiver else "http/protobuf"
        proc = run_bridge(["--protocol", proto, "--endpoint", rx.endpoint, *args], data, env=env)
        # the process has flushed before it exits: nothing more arrives when none is expected
        spans = rx.received.wait_for(expect, timeout=5 if expect else 0)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data  # every byte through, unchanged
    return proc, spans


def decode_here(data: bytes, *, expect: int, **flags):
    """``data``'s spans through the pipeline in this process (which dialects decode what: no
    process boundary is the point), at a real OTLP receiver."""
    with HttpReceiver() as rx:
        stats, all_exported = export_in_process(data, rx.endpoint, **flags)
        spans = rx.received.spans()
    assert all_exported and stats.spans_exported == stats.spans_started == len(spans) == expect
    return spans


def test_example_signals_on_run_stdin():
    data = SIGNALS.read_bytes()
    sigs = signals_in(data)
    assert [k for k, _ in sigs] == ["PLAN_DRAFT", "PLAN_READY", "QUESTION", "BLOCKED", "FAILED"]
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    env = clean_env(TRACEPARENT=f"00-{trace_id}-{parent_id}-01")
    proc, spans = export(data, expect=1, env=env, receiver=HttpReceiver)
    (run,) = spans
    assert run.name == "run stdin"
    assert (run.trace_id, run.parent_span_id) == (trace_id, parent_id)
    assert [n for n, _, _ in run.events] == [f"bernstein.{k.lower()}" for k, _ in sigs]
    for (name, t, attrs), (kind, payload) in zip(run.events, sigs):
        assert run.start_ns <= t <= run.end_ns
        for field in ("reason", "hint", "question", "id", "path", "options"):
            if payload.get(field) is not None:
                assert attrs[f"bernstein.{field}"] == payload[field]
        assert "bernstein.markdown" not in attrs  # plan content is opt-in
    # FAILED is terminal: the run ends at it, ERROR with its reason
    failed_reason = sigs[-1][1]["reason"]
    assert (run.status_code, run.status_message) == (2, f"FAILED: {failed_reason}")
    assert run.attributes["error.type"] == "run_failed"
    assert run.attributes["bernstein.terminal_signal"] == "FAILED"
    assert run.end_ns == run.events[-1][1]
    # off-grammar lines are plain output, not bad lines
    assert b" 0 bad" in proc.stderr


def test_missing_terminal_signal_is_marked_not_failed(tmp_path):
    data = b'working\nBERNSTEIN:QUESTION {"question":"Proceed?","options":null,"id":null}\nbye\n'
    stats = tmp_path / "stats.json"
    _, spans = export(data, "--stats-json", str(stats), expect=1)
    (run,) = spans
    assert run.status_code == 0
    assert run.attributes["bernstein.terminal_signal"] == "none"
    assert [n for n, _, _ in run.events] == ["bernstein.question", "MissingTerminalSignal"]
    assert json.loads(stats.read_text())["bernstein_runs_without_terminal"] == 1


def test_plain_output_makes_no_span():
    data = b"hello\nBERNSTEIN:done\n  BERNSTEIN:COMPLETED\nbye\n"
    with GrpcReceiver() as rx:
        proc = run_bridge(["--protocol", "grpc", "--endpoint", rx.endpoint], data)
        assert proc.returncode == 0 and proc.stdout == data
        assert b"spans 0 built, 0 exported" in proc.stderr
        assert rx.received.spans() == []


def mixed_stream() -> tuple[bytes, list[bytes], list[bytes]]:
    """The cbc example with the Bernstein example's lines interleaved one for one."""
    cbc = CBC.read_bytes().splitlines()
    bern = SIGNALS.read_bytes().splitlines()
    out = []
    for i in range(max(len(cbc), len(bern))):
        out += cbc[i:i + 1] + bern[i:i + 1]
    return b"\n".join(out) + b"\n", cbc, bern


def cbc_span_count(cbc: list[bytes]) -> int:
    last = [json.loads(l) for l in cbc if b'"task_progress"' in l][-1]["workflow_progress"]
    return 1 + len(last)  # root + phases + agents


@pytest.mark.parametrize(
    "dialects, want_run, want_workflow",
    # (caudra decodes with claude_code, which reads its sessions: cbc's workflow too)
    [((), True, True), (("bernstein",), True, False), (("claude_code",), False, True),
     (("caudra",), False, True), (("milk",), False, False), (("claude_code", "bernstein"), True, True)],
)
def test_mixed_stream_and_dialect_restriction(dialects, want_run, want_workflow):
    data, cbc, bern = mixed_stream()
    n_workflow = cbc_span_count(cbc)
    # the claude_code dialect also decodes the cbc lines' session (SPAN-MODEL.md: its own trace)
    n_session = session_span_count(b"\n".join(cbc))
    assert n_session == 2  # the session span and its one turn (one result, no model calls)
    expect = (1 if want_run else 0) + (n_workflow + n_session if want_workflow else 0)
    spans = decode_here(data, expect=expect, deterministic_ids=True, dialects=dialects)
    assert len(spans) == expect
    runs = [s for s in spans if s.name == "run stdin"]
    workflow = spans_of_trace(spans, "invoke_workflow ") if want_workflow else []
    session = spans_of_trace(spans, "invoke_agent ") if want_workflow else []
    assert len(runs) == (1 if want_run else 0)
    assert len(workflow) == (n_workflow if want_workflow else 0)
    assert len(session) == (n_session if want_workflow else 0)
    if want_run:
        (run,) = runs
        assert [n for n, _, _ in run.events] == [f"bernstein.{k.lower()}" for k, _ in signals_in(data)]
        assert run.trace_id not in {s.trace_id for s in workflow + session}
    if want_workflow:
        started = json.loads(next(l for l in cbc if b'"task_started"' in l))
        (root,) = [s for s in workflow if s.name.startswith("invoke_workflow")]
        assert root.attributes["workflow.task_id"] == started["task_id"]
        # cbc's path:<basename> form: the raw value kept, the span named by the basename
        assert started["workflow_name"].startswith("path:")
        assert root.attributes["workflow.name"] == started["workflow_name"]
        assert root.name == "invoke_workflow " + posixpath.basename(started["workflow_name"][len("path:"):])
        (agent,) = [s for s in session if s.name == session_name(b"\n".join(cbc))]
        assert agent.attributes["gen_ai.conversation.id"] == started["session_id"]
        assert root.links == [(agent.trace_id, agent.span_id)] and agent.links == [(root.trace_id, root.span_id)]
        # the interleaved plain lines change nothing of the workflow and session traces: same as
        # the cbc lines alone
        alone = decode_here(b"\n".join(cbc) + b"\n", expect=n_workflow + n_session, deterministic_ids=True,
                            dialects=("claude_code",))
        key = lambda s: (s.span_id, s.name, s.parent_span_id, s.start_ns, s.end_ns, s.status_code)  # noqa: E731
        assert sorted(map(key, workflow + session)) == sorted(map(key, alone))


def test_unknown_dialect_is_a_usage_error():
    proc = run_bridge(["--dialect", "nope"], b"")
    assert proc.returncode == 2
    assert b"unknown dialect 'nope'" in proc.stderr
    assert b"caudra" in proc.stderr and b"bernstein" in proc.stderr


def test_recordings_of_other_clis_make_no_caudra_or_bernstein_spans():
    """Every shared recording (Claude Code, milk, Cursor, Codex, Gemini, edge cases), one after
    the other in one stream: ``--dialect caudra --dialect bernstein`` makes the spans
    ``claude_code`` alone makes (Caudra's sessions are its stream-json), not one more."""
    from tests.conftest import fixture_files

    files = fixture_files()
    if not files:
        pytest.skip("../shared/fixtures not present")
    data = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in files)
    built = []
    for dialects in (("caudra", "bernstein"), ("claude_code",)):
        with HttpReceiver() as rx:
            stats, _ = export_in_process(data, rx.endpoint, deterministic_ids=True, dialects=dialects)
            built.append(sorted((s.name, s.span_id, s.parent_span_id, s.status_code)
                                for s in rx.received.spans()))
    assert built[0] == built[1] and len(built[0]) > 100


def test_runs_no_session_names_get_traces_of_their_own_with_deterministic_ids():
    """Signals carry no id: with ``--deterministic-ids`` a ``run stdin`` of one stream and one of
    another (even the same signal) must not share the trace derived from nothing, nor a span
    id; within one stream the second run is a trace of its own too."""
    runs = []
    for data, expect in ((SIGNALS.read_bytes(), 1), (b"BERNSTEIN:COMPLETED\n", 1),
                         (b"BERNSTEIN:COMPLETED\n", 1),
                         (b"BERNSTEIN:COMPLETED\nBERNSTEIN:FAILED {\"reason\":\"x\"}\n", 2)):
        _, spans = export(data, "--deterministic-ids", expect=expect, env=clean_env())
        runs.append(spans)
    last = runs[-1]
    assert [len(r) for r in runs] == [1, 1, 1, 2] and all(s.name == "run stdin" for r in runs for s in r)
    trace_ids = [s.trace_id for r in runs for s in r]
    assert len(set(trace_ids)) == 5  # five runs, five traces
    assert len({s.span_id for r in runs for s in r}) == 5
    assert [s.attributes["bernstein.terminal_signal"] for s in last] == ["COMPLETED", "FAILED"]
