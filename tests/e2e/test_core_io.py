"""Core I/O promises: regular files and /dev/null as stdin/stdout, python -m, sampler, and agents
exported while their workflow still runs."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import (session_name, EXAMPLES, FIXTURES, clean_env, needs_fixtures, run_bridge, sent,
                            session_span_count, side_by_side, spans_of_trace)
from tests.receivers import HttpReceiver

EXAMPLE = EXAMPLES / "cbc-workflow.jsonl"
EMITTER = Path(__file__).with_name("emitter.py")


def test_regular_file_stdin_and_stdout(tmp_path):
    out = tmp_path / "out.jsonl"
    with open(EXAMPLE, "rb") as fin, open(out, "wb") as fout:
        proc = subprocess.run([sys.executable, "-m", "otelbridge", "--exporter", "none"],
                              stdin=fin, stdout=fout, stderr=subprocess.PIPE, env=clean_env(),
                              timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == EXAMPLE.read_bytes()


@needs_fixtures()
def test_a_result_over_max_line_passes_and_is_said_with_its_remedy(tmp_path):
    """A session's result line longer than ``--max-line``: every byte passes; the session and its
    turn end incomplete (the result was not read), and one line says why and what to raise."""
    lines = (FIXTURES / "claude-code" / "subagent-explore-2.1.178.jsonl").read_bytes().splitlines(keepends=True)
    (last,) = [i for i, line in enumerate(lines) if b'"type":"result"' in line]
    result = json.loads(lines[last])
    result["result"] += " and more" * 2_000  # (a final answer of 19 KB)
    lines[last] = json.dumps(result).encode() + b"\n"
    data = b"".join(lines)
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, "--max-line", "16384"], data, env=clean_env())
        spans = rx.received.spans()  # (flushed before it exited)
    assert proc.returncode == 0 and proc.stdout == data
    err = proc.stderr.decode()
    assert ", 1 overlong;" in err
    said = ("1 line was longer than --max-line (16,384 bytes): {}not decoded (what a tool, turn or "
            "session left open there ended incomplete); raise --max-line to trace what it held\n")
    assert "otelbridge: " + said.format("passed through, ") in err
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert session.status_code == 2 and session.attributes["error.type"] == "incomplete"
    # replay passes nothing through (nor does follow): it says so
    path = tmp_path / "long.jsonl"
    path.write_bytes(data)
    proc = run_bridge(["replay", "--exporter", "none", "--max-line", "16384", str(path)], b"", env=clean_env())
    assert proc.returncode == 0 and "otelbridge: " + said.format("") in proc.stderr.decode()


def test_dev_null_stdin_and_stdout():
    with open("/dev/null", "rb") as fin, open("/dev/null", "wb") as fout:
        proc = subprocess.run([sys.executable, "-m", "otelbridge", "--exporter", "none"],
                              stdin=fin, stdout=fout, stderr=subprocess.PIPE, env=clean_env(),
                              timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b"0 bytes" in proc.stderr


def test_a_closed_stdout_or_stdin_is_said_and_exits_1_as_cat_does():
    """``>&-`` / ``<&-``: the stream has nowhere to go / nothing to read — one stderr line,
    exit status 1 (cat and tee do the same); spans are still made from what was read."""
    shells = {"stdout": f"exec >&-; exec {sys.executable} -m otelbridge --exporter none < {EXAMPLE}",
              "stdin": f"exec <&-; exec {sys.executable} -m otelbridge --exporter none"}
    runs = side_by_side(*(functools.partial(subprocess.run, ["sh", "-c", shell], capture_output=True,
                                            env=clean_env(), timeout=60) for shell in shells.values()))
    said = {}
    for what, proc in zip(shells, runs):
        assert proc.returncode == 1, proc.stderr
        said[what] = err = proc.stderr.decode()
        assert f"otelbridge: {what} closed at start" in err and "Traceback" not in err
    assert "spans 8 built" in said["stdout"]  # the example was read and decoded all the same


def test_a_closed_stdout_in_wrapper_mode_gives_the_failed_commands_status_and_says_so():
    proc = subprocess.run(["sh", "-c", f"exec >&-; exec {sys.executable} -m otelbridge --exporter "
                           f"none -- sh -c 'cat {EXAMPLE}; exit 3'"], capture_output=True,
                          env=clean_env(), timeout=60)
    assert proc.returncode == 3, proc.stderr
    (line,) = [l for l in proc.stderr.decode().splitlines() if "closed at start" in l]
    assert line.endswith("exit status 1, or the command's when it fails")


def test_a_full_disk_is_said_and_exits_1_as_cat_does():
    """stdout on /dev/full (ENOSPC): not a closed pipe (no 141, nothing said) — one stderr line
    with the error, exit status 1, in pipe mode (file and pipe input) and wrapper mode."""
    runs = (["--exporter", "none"], ["--exporter", "none", "--", "cat", str(EXAMPLE)])
    with open("/dev/full", "wb") as full:
        for args in runs:
            with open(EXAMPLE, "rb") as fin:
                proc = subprocess.run([sys.executable, "-m", "otelbridge", *args], stdin=fin,
                                      stdout=full, stderr=subprocess.PIPE, env=clean_env(), timeout=60)
            err = proc.stderr.decode().splitlines()
            assert proc.returncode == 1, (args, err)
            assert [l for l in err if "cannot write" in l] == [
                "otelbridge: cannot write the stream to stdout: No space left on device; "
                "the rest of it is lost"], err
        proc = subprocess.run(["sh", "-c", f"cat {EXAMPLE} | {sys.executable} -m otelbridge "
                                           "--exporter none"],
                              stdout=full, stderr=subprocess.PIPE, env=clean_env(), timeout=60)
    assert proc.returncode == 1 and b"No space left on device" in proc.stderr, proc.stderr


def test_sampler_always_off_exports_nothing_but_passes_through():
    data = EXAMPLE.read_bytes()
    with HttpReceiver() as rx:
        proc = run_bridge([], data, env=clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint,
                                                  OTEL_TRACES_SAMPLER="always_off"))
        assert proc.returncode == 0 and proc.stdout == data
        assert rx.received.spans() == []
    # counted as sampled out, not as dropped: built = exported + dropped + sampled out
    counts = re.search(r"spans (\d+) built, 0 exported, 0 dropped, (\d+) sampled out;",
                       proc.stderr.decode())
    assert counts is not None and int(counts[1]) == int(counts[2]) > 0, proc.stderr


def test_example_stream_tree():
    """Our own example (examples/cbc-workflow.jsonl): failed run, cached agent, agent in error."""
    data = EXAMPLE.read_bytes()
    lines = [json.loads(l) for l in data.splitlines()]
    last = [l for l in lines if l.get("subtype") == "task_progress"][-1]["workflow_progress"]
    agents = {a["label"]: a for a in last if a["type"] == "workflow_agent"}
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint], data)
        everything = rx.received.spans()
    assert proc.returncode == 0 and proc.stdout == data
    spans = spans_of_trace(everything, "invoke_workflow ")
    by_name = {s.name: s for s in spans}
    assert len(spans) == 1 + 2 + len(agents)
    # the rest is the session's own trace: its span and the turn its one result closes
    assert len(everything) == len(spans) + session_span_count(data) == len(spans) + 2
    session = spans_of_trace(everything, "invoke_agent ")
    (agent,) = [s for s in session if s.name == session_name(data)]
    (turn,) = [s for s in session if s.name == "turn 1"]
    assert turn.parent_span_id == agent.span_id
    assert agent.attributes["gen_ai.conversation.id"] == lines[0]["session_id"]
    root = by_name["invoke_workflow deep-research.workflow.js"]
    assert root.status_code == 2 and root.attributes["error.type"] == "workflow_failed"
    cached = by_name["invoke_agent read-papers"]
    assert cached.attributes["workflow.agent.cached"] is True  # (no length: an instant)
    assert (cached.start_ns, cached.end_ns) == sent(cached.end_ns, cached.end_ns)
    err = by_name["invoke_agent write-report"]
    assert err.status_code == 2 and err.status_message == agents["write-report"]["error"]
    assert err.end_ns == agents["write-report"]["endedAt"] * 1_000_000
    gather, synth = by_name["phase Gather"], by_name["phase Synthesize"]
    assert by_name["invoke_agent search-web"].parent_span_id == gather.span_id
    assert err.parent_span_id == synth.span_id
    assert gather.start_ns == agents["search-web"]["startedAt"] * 1_000_000
    assert gather.end_ns == agents["search-web"]["endedAt"] * 1_000_000
    assert root.links == [(agent.trace_id, agent.span_id)] and agent.links == [(root.trace_id, root.span_id)]


def test_terminal_agent_exported_while_workflow_runs(tmp_path):
    base = {"type": "system", "task_id": "t", "session_id": "s"}
    done = {"type": "workflow_agent", "index": 1, "state": "done", "startedAt": "$NOW-50",
            "durationMs": 40, "label": "early"}
    script = [
        [0, {**base, "subtype": "task_progress", "workflow_progress": [done]}],
        # the workflow ends only once the test has seen the agent at the receiver
        [f"wait:{tmp_path / 'gate'}", {**base, "subtype": "task_notification", "status": "completed"}],
    ]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(script))
    with HttpReceiver() as rx:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "--endpoint", rx.endpoint, "--",
             sys.executable, str(EMITTER), str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=clean_env(OTEL_BSP_SCHEDULE_DELAY="200"))  # a batch leaves 0.2 s after its first span
        try:
            early = rx.received.wait_for(1, timeout=20)
            still_running = proc.poll() is None
        finally:
            (tmp_path / "gate").touch()
        proc.communicate(timeout=30)
        final = rx.received.spans()
    assert still_running
    assert [s.name for s in early] == ["invoke_agent early"]
    # at the end: the workflow, and (wrapper mode) the run span and the session span under it
    run_name = f"run {os.path.basename(sys.executable)}"
    assert sorted(s.name for s in final) == sorted(
        ["invoke_agent early", "invoke_workflow workflow", "invoke_agent claude-code", run_name])
    by_name = {s.name: s for s in final}
    run, session = by_name[run_name], by_name["invoke_agent claude-code"]
    assert (session.trace_id, session.parent_span_id) == (run.trace_id, run.span_id)
    assert run.parent_span_id == "" and run.attributes["process.exit.code"] == 0
    assert session.attributes["gen_ai.conversation.id"] == "s"
    assert session.status_code == 0  # seen only through a workflow: no error


def test_closed_or_gone_stderr_never_changes_status_or_stream(tmp_path):
    """``2>&-`` and a stderr reader that has gone cost our messages only: the exit status is
    still the child's and stdout is still the stream."""
    import os

    data = EXAMPLE.read_bytes()
    script = f"import sys; sys.stdout.write(open({str(EXAMPLE)!r}).read()); sys.exit(3)"
    argv = [sys.executable, "-m", "otelbridge", "--exporter", "none", "--summary", "always",
            "--", sys.executable, "-c", script]
    closed = subprocess.run(argv, stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2),
                            env=clean_env(), timeout=60)
    assert (closed.returncode, closed.stdout) == (3, data)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader of our stderr is gone before we write to it
    try:
        gone = subprocess.run(argv, stdout=subprocess.PIPE, stderr=write_end, env=clean_env(),
                              timeout=60)
    finally:
        os.close(write_end)
    assert (gone.returncode, gone.stdout) == (3, data)


def test_closed_stderr_in_pipe_mode_with_both_ends_pipes_exits_0(tmp_path):
    """``cat rec | otelbridge 2>&- | consumer``: stdin and stdout pipes (the early tee runs), fd 2
    closed. No pipe of ours may take fd 2 (the event loop refuses to close fds 0–2: the process
    aborted, exit 134)."""
    import os

    data = EXAMPLE.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "otelbridge", "--exporter", "none"], input=data,
                          stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2),
                          env=clean_env(), timeout=60)
    assert (proc.returncode, proc.stdout) == (0, data)
