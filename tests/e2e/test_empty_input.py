"""A run whose input is over before the tee forks (``< /dev/null``, an empty pipe or file): the
decoding process sets up only when the set-up has something to say or write
(``modes/live.py``: ``silent_setup``); the counts line, ``--stats-json`` and every set-up
problem are what a full set-up gives."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, clean_env, run_bridge

COUNTS = (b"otelbridge: 0 bytes, 0 lines, 0 decoded, 0 not wanted, 0 not decoded (behind), "
          b"0 bad, 0 overlong; spans 0 built, 0 exported, 0 dropped")
DEAD = "http://127.0.0.1:9"  # nothing listens: an export would fail
#: ... and the line that says why nothing was traced (a CLI that failed before its first line)
EMPTY = (b"otelbridge: the input was empty, so nothing was traced "
         b"(for Claude Code: claude -p --output-format stream-json --verbose)")


def plain_env(**extra: str) -> dict[str, str]:
    """:func:`clean_env` without a CI runner's ``GITHUB_*`` files (job outputs are written for an
    empty run too: a set-up that speaks)."""
    return {k: v for k, v in clean_env(**extra).items() if not k.startswith("GITHUB_")}


@pytest.mark.parametrize("stdin", ["devnull", "pipe"])
@pytest.mark.parametrize("exporter", [["--exporter", "none"], ["--protocol", "grpc", "--endpoint", DEAD]])
def test_an_empty_run_says_its_counts_and_writes_its_stats(tmp_path, stdin, exporter):
    stats_path = tmp_path / "stats.json"
    args = [*exporter, "--fail-on-export-error", "--stats-json", str(stats_path)]
    if stdin == "devnull":
        proc = run_bridge(args, stdin=subprocess.DEVNULL, env=plain_env())
    else:
        proc = run_bridge(args, b"", env=plain_env())
    assert proc.returncode == 0, proc.stderr  # nothing to export: nothing lost
    assert proc.stdout == b""
    assert proc.stderr.splitlines() == [COUNTS + b"; 0 late events ignored", EMPTY]
    stats = json.loads(stats_path.read_text())
    assert (stats["bytes"], stats["lines"], stats["spans_started"], stats["lines_not_wanted"]) == (0, 0, 0, 0)


@pytest.mark.parametrize("args, env, said", [
    (["--exporter", "file", "--output", "/nonexistent-dir/traces.jsonl"], {},
     b"cannot open --output '/nonexistent-dir/traces.jsonl': No such file or directory"),
    (["--protocol", "grpc", "--endpoint", "https://127.0.0.1:9"],
     {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent-ca.pem"}, b"/nonexistent-ca.pem"),
    (["--exporter", "none", "--no-default-redaction"], {}, b"warning: --no-default-redaction"),
    (["--exporter", "none"], {"TRACEPARENT": "00-not-a-traceparent"}, b"TRACEPARENT is not a valid"),
])
def test_an_empty_run_still_says_a_set_up_problem(args, env, said):
    proc = run_bridge(args, stdin=subprocess.DEVNULL, env=plain_env(**env))
    assert proc.returncode == 0, proc.stderr
    assert said in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[lines.index(EMPTY) - 1].startswith(COUNTS)


def test_an_empty_run_writes_its_job_outputs(tmp_path):
    outputs = tmp_path / "github_output"
    proc = run_bridge(["--exporter", "none"], stdin=subprocess.DEVNULL,
                      env=clean_env(GITHUB_OUTPUT=str(outputs)))
    assert proc.returncode == 0, proc.stderr
    assert outputs.read_text().splitlines() == [
        "trace_id=", "input_tokens=0", "output_tokens=0", "workflow_tokens=0", "total_cost_usd=0", "status="]


SEEN = """
import os, sys
out, real_exit = sys.argv[1], os._exit
def _exit(code):
    if os.getpid() != TEE:  # the decoding process: what it imported
        open(out, "w").write("\\n".join(sorted(sys.modules)))
    real_exit(code)
TEE = os.getpid()
os._exit = _exit
from otelbridge.__main__ import main
main(sys.argv[2:])
"""


@pytest.mark.parametrize("data, set_up", [(b"", False), (b'{"type":"system"}\n', True)])
def test_the_decoding_process_sets_up_only_for_input(tmp_path, data, set_up):
    seen = tmp_path / "modules.txt"
    proc = subprocess.run([sys.executable, "-c", SEEN, str(seen), "--protocol", "grpc",
                           "--endpoint", DEAD, "-q", "--flush-timeout", "0"],
                          input=data, capture_output=True, env=plain_env(), cwd=ROOT, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    modules = set(seen.read_text().split("\n"))
    assert "otelbridge.modes.live" in modules  # it did record
    stages = {"otelbridge.pipeline", "otelbridge.tracker", "opentelemetry.sdk.trace",
              "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"}
    assert (stages & modules) == (stages if set_up else set())


NOT_A_STREAM = (b"otelbridge: no line was of a stream otelbridge traces (stream-json of Claude Code, cbc, "
                b"milk or Caudra, one JSON object a line; Bernstein signals), so nothing was traced "
                b"(for Claude Code: claude -p --output-format stream-json --verbose); the input passed "
                b"through\n")


NOTHING_SHOWN = (b"otelbridge: the lines decoded showed no session, turn or workflow (stream-json of "
                 b"Claude Code, cbc, milk or Caudra, one JSON object a line; Bernstein signals), so "
                 b"nothing was traced; the input passed through\n")
PRETTY = NOT_A_STREAM.replace(b"(for Claude Code: claude -p --output-format stream-json --verbose)",
                              b"(1 line not valid JSON)")


@pytest.mark.parametrize(("data", "said"), [
    (b"hello\nworld\n", NOT_A_STREAM),  # claude -p without --output-format stream-json
    (b'{"type":"thread.started","thread_id":"t1"}\n{"type":"turn.completed"}\n', NOT_A_STREAM),  # Codex's
    # ... with an error item, a line a dialect decodes (its type's name is shared) into no span
    (b'{"type":"thread.started","thread_id":"t1"}\n{"type":"error","message":"stream error"}\n', NOTHING_SHOWN),
    (b'{\n  "type": "result",\n  "subtype": "success",\n  "result": "ok"\n}\n', PRETTY),  # pretty-printed
    (b"", EMPTY + b"\n"),  # a CLI that failed before its first line
    ((ROOT / "examples" / "cbc-workflow.jsonl").read_bytes(), None),
])
def test_a_run_in_which_no_line_was_of_a_stream_it_reads_says_so(data, said):
    """A new user's first try often pipes the wrong output (plain text, another CLI's JSON): the
    counts line alone ("0 decoded, 2 not wanted") did not say why nothing was traced. Lines a
    dialect decoded into no span, and lines not valid JSON, are said as such."""
    proc = run_bridge(["--exporter", "none"], data, env=plain_env())
    assert proc.returncode == 0 and proc.stdout == data
    assert proc.stderr.count(b"\n") == (1 if said is None else 2)
    assert said is None or said in proc.stderr, proc.stderr


def test_a_dialect_filter_that_leaves_no_line_says_so():
    """``--dialect milk`` on Claude Code's stream: the lines were of a stream otelbridge reads,
    but not of the dialect asked for; the hint is that, not Claude Code's flags."""
    data = (ROOT / "examples" / "claude-code-session.jsonl").read_bytes()
    proc = run_bridge(["--exporter", "none", "--dialect", "milk"], data, env=plain_env())
    assert proc.returncode == 0 and proc.stdout == data
    assert proc.stderr.splitlines()[-1] == (
        b"otelbridge: no line was of a stream otelbridge traces (--dialect milk only), so nothing was "
        b"traced (another --dialect?); the input passed through")


@pytest.mark.parametrize(("data", "said"), [
    (b'{"type":"thread.started","thread_id":"t1"}\n{"type":"turn.completed"}\n', True),
    (b"hello\nworld\n", True),
    ((ROOT / "examples" / "bernstein-signals.txt").read_bytes(), False),  # events of the run span
])
def test_a_wrapped_command_that_printed_no_stream_says_only_its_run_was_traced(data, said):
    """Wrapper mode builds the command's run span whatever it printed: not "nothing was traced";
    and Bernstein signals, which the run span carries, are a stream it traces."""
    proc = run_bridge(["--exporter", "none", "--", sys.executable, "-c",
                       f"import sys; sys.stdout.buffer.write({data!r})"], b"", env=plain_env())
    assert proc.returncode == 0 and proc.stdout == data
    only_run = NOT_A_STREAM.replace(b"so nothing was traced", b"so only the command's run was traced")
    assert (only_run in proc.stderr) is said
    assert b" 1 built, " in proc.stderr


def test_replay_of_a_file_that_is_no_stream_says_so_without_a_passthrough(tmp_path):
    """``replay`` writes nothing to stdout: the line saying nothing was traced does not claim
    the input passed through."""
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"hello\nworld\n")
    proc = run_bridge(["replay", "--exporter", "none", str(notes)], env=plain_env())
    assert proc.returncode == 0 and proc.stdout == b""
    assert proc.stderr.splitlines()[-1] == NOT_A_STREAM.rstrip(b"\n").replace(b"; the input passed through", b"")


@pytest.mark.parametrize("name", ["missing.jsonl", "empty.jsonl"])
def test_replay_of_a_missing_or_empty_file_does_not_say_the_input_was_empty(tmp_path, name):
    """"The input was empty" is the live stream's (a CLI that failed before its first line);
    ``replay`` says what it could not read (and ``follow``, what a run before read), and a
    step summary is not told "nothing traced" with a hint for Claude Code's flags."""
    (tmp_path / "empty.jsonl").write_bytes(b"")
    step = tmp_path / "summary.md"
    proc = run_bridge(["replay", "--exporter", "none", str(tmp_path / name)],
                      env=clean_env(CI="true", GITHUB_STEP_SUMMARY=str(step)))
    assert proc.returncode == (1 if name == "missing.jsonl" else 0)
    assert b"empty" not in proc.stderr and b"nothing was traced" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(COUNTS)
    assert not step.exists() or "nothing traced" not in step.read_text()


def test_a_reader_that_leaves_early_is_not_told_the_input_passed_through():
    """``otelbridge < notes | head -1``: the line saying nothing was traced says the input passed
    through only up to where its reader closed the stream (the rest did not)."""
    proc = subprocess.Popen([sys.executable, "-m", "otelbridge", "--exporter", "none"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=plain_env(), cwd=ROOT)
    proc.stdin.write(b"hello\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b"hello\n"
    proc.stdout.close()
    try:  # go on writing until otelbridge stops reading
        for _ in range(10_000):
            proc.stdin.write(b"world\n" * 1000)
            proc.stdin.flush()
    except BrokenPipeError:
        pass
    assert proc.wait(15) == 141
    last = proc.stderr.read().splitlines()[-1]
    assert last == NOT_A_STREAM.rstrip(b"\n").replace(
        b"the input passed through", b"the input passed through until its reader closed the stream")
