"""Export processes (``--export-processes N``, otelbridge/export_processes.py) end to end:
otelbridge as a subprocess, spans at a real OTLP receiver. The same spans in every mode; honest
counts and a bounded end when a collector is down or an export process is killed or stopped."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, FIXTURES, WORKFLOW_PROBE, clean_env, needs_fixtures, run_bridge
from tests.e2e.test_faults import Live, free_port, spans_of, stats_line, workflow_lines
from tests.e2e.test_wrapper_traceparent import CHILD
from tests.receivers import GrpcReceiver, HttpReceiver

#: two real recordings: a workflow (phase, agents, a second turn) and a sub-agent task
RECORDINGS = [WORKFLOW_PROBE, FIXTURES / "claude-code" / "subagent-explore-2.1.178.jsonl"]
CI_TRACE, CI_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
#: the processes' exporters wait this long before a scheduled export (ms): nothing leaves a
#: process before its shutdown, so what a killed or stopped process held never reached the receiver
NO_SCHEDULED_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "60000"}
#: the export processes take every span from the first (by default the decoding process exports
#: until 1024 spans wait in its queue, which a small recording never reaches)
ALL = ["--export-processes-at", "0"]


def comparable(span) -> tuple:
    """Everything of an exported span that must not depend on the export mode. The resource's
    ``service.instance.id`` is new each run (the SDK's ``Resource.create``); it is checked to be one
    per run by :func:`check_run` instead."""
    resource = {k: v for k, v in span.resource.items() if k != "service.instance.id"}
    return (span.name, span.trace_id, span.span_id, span.parent_span_id, span.kind, span.start_ns,
            span.end_ns, json.dumps(span.attributes, sort_keys=True), span.status_code,
            span.status_message, json.dumps(span.events, sort_keys=True), tuple(span.links),
            json.dumps(resource, sort_keys=True), span.trace_state, span.scope,
            span.dropped_attributes, span.dropped_events, span.dropped_links)


def export(tmp_path: Path, data: bytes, args: list[str], receiver_cls=GrpcReceiver,
           env: dict | None = None, expect: int = 1):
    """Run otelbridge on ``data`` to a fresh receiver; (process, spans, stats-json)."""
    stats_path = tmp_path / f"stats-{time.monotonic_ns()}.json"
    protocol = "grpc" if receiver_cls is GrpcReceiver else "http/protobuf"
    with receiver_cls() as rx:
        proc = run_bridge(["--protocol", protocol, "--endpoint", rx.endpoint, "--stats-json",
                           str(stats_path), *args], data, env=env, timeout=30)
        spans = rx.received.wait_for(expect, timeout=2)
    return proc, spans, json.loads(stats_path.read_text())


def check_run(proc, spans, stats, data: bytes | None) -> None:
    """What every healthy run gives: exit 0, passthrough, counts equal to what arrived, one
    ``service.instance.id``."""
    assert proc.returncode == 0, proc.stderr
    if data is not None:
        assert proc.stdout == data
    assert stats["spans_started"] == stats["spans_exported"] == len(spans)
    assert stats["spans_dropped"] == 0
    assert len({s.span_id for s in spans}) == len(spans)
    assert len({s.resource.get("service.instance.id") for s in spans}) == 1
    assert b"Traceback" not in proc.stderr


# --------------------------------------------------------------------------- parity


@needs_fixtures()
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name)
def test_same_spans_in_process_and_with_1_or_3_processes_grpc_and_http(tmp_path, recording):
    data = recording.read_bytes()
    runs = {}
    for mode, receiver_cls, args in (
            ("0", GrpcReceiver, []),
            ("1", GrpcReceiver, ALL),
            ("3", GrpcReceiver, ALL),
            ("2-http", HttpReceiver, ALL),
            ("2-on-demand", GrpcReceiver, []),  # the default: this process keeps up alone
            ("2-at-5", GrpcReceiver, ["--export-processes-at", "5"])):  # both, split mid-run
        n = mode.split("-")[0]
        proc, spans, stats = export(tmp_path, data, ["--deterministic-ids", "--export-processes", n,
                                                     *args], receiver_cls)
        check_run(proc, spans, stats, data)
        to_processes = stats["spans_to_export_processes"]
        if mode in ("0", "2-on-demand"):
            assert to_processes == 0, mode
        elif mode == "2-at-5":  # the first spans waited here; the batch processor waits 1 s
            assert 0 < to_processes < len(spans) - 4, (mode, to_processes, len(spans))
        else:
            assert to_processes == len(spans), mode
        runs[mode] = sorted(comparable(s) for s in spans)
    in_process = runs.pop("0")
    # the recording's spans are there (not an empty agreement): sub-agents / the workflow tree
    names = {row[0].split(" ", 1)[0] for row in in_process}
    assert {"invoke_agent", "turn", "chat"} <= names
    assert any(row[3] == "" for row in in_process)  # a root
    for mode, rows in runs.items():
        assert rows == in_process, mode


# --------------------------------------------------------------------------- TRACEPARENT


@needs_fixtures()
def test_traceparent_pipe_mode_with_processes(tmp_path):
    data = WORKFLOW_PROBE.read_bytes()
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01", TRACESTATE="vendor=ci")
    proc, spans, stats = export(tmp_path, data, ["--deterministic-ids", "--export-processes", "2",
                                                 *ALL], env=env)
    check_run(proc, spans, stats, data)
    assert stats["spans_to_export_processes"] == len(spans)
    ids = {s.span_id for s in spans}
    top = [s for s in spans if s.parent_span_id not in ids]
    assert {s.name.split(" ", 1)[0] for s in top} == {"invoke_agent", "invoke_workflow"}
    assert {s.parent_span_id for s in top} == {CI_SPAN}
    assert {s.trace_id for s in spans} == {CI_TRACE}
    assert {s.trace_state for s in spans} == {"vendor=ci"}
    # and the same spans as the decoding process exports itself
    base, base_spans, _ = export(tmp_path, data, ["--deterministic-ids", "--export-processes", "0"],
                                 env=env)
    assert base.returncode == 0
    assert sorted(map(comparable, spans)) == sorted(map(comparable, base_spans))


@needs_fixtures()
def test_unsampled_traceparent_pipe_mode_exports_nothing(tmp_path):
    data = WORKFLOW_PROBE.read_bytes()
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-00")
    proc, spans, stats = export(tmp_path, data, ["--export-processes", "2", *ALL], env=env, expect=1)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    assert spans == []
    assert stats["spans_exported"] == stats["spans_dropped"] == 0
    assert stats["spans_started"] > 0  # the records were built, and sampled out
    assert stats["spans_sampled_out"] == stats["spans_started"]  # counted by the processes
    err = proc.stderr.decode()
    assert f"0 dropped, {stats['spans_started']} sampled out;" in err
    assert "TRACEPARENT is not sampled" in err
    assert "Traceback" not in err and "export incomplete" not in err


def wrap(tmp_path: Path, env: dict, processes: str, expect: int):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    seen = tmp_path / "seen.txt"
    stream = EXAMPLES / "milk-session.jsonl"
    argv = [sys.executable, str(child), str(seen), str(stream), "0"]
    proc, spans, stats = export(tmp_path, b"", ["--export-processes", processes, *ALL, "--", *argv],
                                env=env, expect=expect)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == stream.read_bytes()
    return spans, stats, seen.read_text().split("\n")


def test_traceparent_wrapper_mode_with_processes(tmp_path):
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01", TRACESTATE="vendor=ci")
    spans, stats, (traceparent, tracestate) = wrap(tmp_path, env, "2", 2)
    (run,) = [s for s in spans if s.name.startswith("run ")]
    (session,) = [s for s in spans if s.name == "invoke_agent coder"]
    assert (run.trace_id, run.parent_span_id) == (CI_TRACE, CI_SPAN)
    assert session.parent_span_id == run.span_id
    assert {s.trace_id for s in spans} == {CI_TRACE}
    assert {s.trace_state for s in spans} == {"vendor=ci"}
    assert traceparent == f"00-{CI_TRACE}-{run.span_id}-01" and tracestate == "vendor=ci"
    assert stats["spans_started"] == stats["spans_exported"] == len(spans)
    assert stats["spans_dropped"] == 0


def test_unsampled_traceparent_wrapper_mode_exports_nothing(tmp_path):
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-00")
    spans, stats, (traceparent, _) = wrap(tmp_path, env, "2", 1)
    assert spans == []
    assert stats["spans_exported"] == stats["spans_dropped"] == 0
    # the child is told the decision: same trace, not sampled
    version, trace_id, _, flags = traceparent.split("-")
    assert (version, trace_id, flags) == ("00", CI_TRACE, "00")


# --------------------------------------------------------------------------- faults


def workflows(count: int) -> list[bytes]:
    return [line for i in range(count) for line in workflow_lines(f"w{i}")]


@pytest.mark.parametrize("fail_flag,at", [(False, "0"), (True, "0"), (False, "50")],
                         ids=["default", "fail-on-export-error", "this-process-too"])
def test_collector_down_one_failure_line_for_all_processes(fail_flag, at):
    # 100 workflows: 401 span records, more than one batch (256): both processes export (and
    # with --export-processes-at 50, this process exports the first 50 itself)
    lines = workflows(100)
    data = b"".join(lines)
    args = ["--protocol", "grpc", "--endpoint", f"http://127.0.0.1:{free_port()}",
            "--export-processes", "2", "--export-processes-at", at, "--flush-timeout", "1",
            "--grace-period", "0"]
    live = Live(args + (["--fail-on-export-error"] if fail_flag else []),
                env=clean_env(OTEL_EXPORTER_OTLP_TIMEOUT="2"))
    live.send(lines)
    live.wait_echo(len(lines))
    took = live.close_and_wait(timeout=15)
    assert live.proc.returncode == (1 if fail_flag else 0), live.stderr
    assert live.output() == data
    assert took <= 1.0 + 1.0
    err = live.stderr.decode().splitlines()
    assert len([l for l in err if "further export messages suppressed" in l]) == 1, err
    built = spans_of(2, 100)
    assert f"spans {built} built, 0 exported, {built} dropped" in stats_line(live.stderr)
    assert "Traceback" not in live.stderr.decode()


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (every thread's ``children`` list)."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def export_processes_of(bridge_pid: int, count: int, timeout: float = 10) -> tuple[int, list[int]]:
    """(the decoding process, the export processes: its children); otelbridge's decoding process
    is its one child in pipe mode. Waits until ``count`` export processes exist."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        decoding = children(bridge_pid)
        if len(decoding) == 1:
            found = children(decoding[0])
            if len(found) == count:
                return decoding[0], found
        time.sleep(0.02)
    raise AssertionError(f"no {count} export processes under {bridge_pid}")


def gone(pid: int, timeout: float = 2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.02)
    return False


def feed_and_hurt(tmp_path: Path, signum: int, fail_flag: bool, flush: float = 2.0):
    """A slow stream of 40 workflows to 2 export processes; ``signum`` to one of them after 15."""
    stats_path = tmp_path / "stats.json"
    with GrpcReceiver() as rx:
        args = ["--protocol", "grpc", "--endpoint", rx.endpoint, "--export-processes", "2", *ALL,
                "--flush-timeout", str(flush), "--grace-period", "0", "--stats-json", str(stats_path)]
        live = Live(args + (["--fail-on-export-error"] if fail_flag else []),
                    env=clean_env(**NO_SCHEDULED_EXPORT))
        decoding, pids = export_processes_of(live.proc.pid, 2)
        try:
            for i in range(40):
                live.send(workflow_lines(f"w{i}"))
                if i == 15:
                    time.sleep(0.1)  # both processes have had batches (idle flushes)
                    os.kill(pids[0], signum)
                time.sleep(0.01)
            live.wait_echo(len(live.sent))
            took = live.close_and_wait(timeout=20)
        finally:
            left = [pid for pid in pids if not gone(pid)]
            for pid in left:  # never leave one behind, whatever failed
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        received = rx.received.wait_for(1, timeout=1)
    stats = json.loads(stats_path.read_text())
    assert live.proc.returncode == (1 if fail_flag else 0), live.stderr
    assert live.output() == b"".join(l for _, l in live.sent)
    total = spans_of(2, 40)
    assert stats["spans_dropped"] > 0
    assert stats["spans_exported"] == len(received) > 0
    assert stats["spans_exported"] + stats["spans_dropped"] == total
    assert stats["spans_started"] == total  # built: every record the stream implies
    err = live.stderr.decode()
    assert "Traceback" not in err
    problems = [l for l in err.splitlines() if "export incomplete" in l]
    assert len(problems) == 1 and "export process" in problems[0], err
    assert left == []  # the export processes were gone once otelbridge had exited
    assert gone(decoding)
    return took


@pytest.mark.parametrize("fail_flag", [False, True], ids=["default", "fail-on-export-error"])
def test_an_export_process_killed_mid_run(tmp_path, fail_flag):
    feed_and_hurt(tmp_path, signal.SIGKILL, fail_flag)


def test_a_stopped_export_process_is_killed_at_the_deadline(tmp_path):
    took = feed_and_hurt(tmp_path, signal.SIGSTOP, False, flush=1.0)
    # the end frame is written (or waits at most STALL_S), the unanswered process killed at
    # --flush-timeout + RESULT_MARGIN_S
    assert took <= 1.0 + 1.5


def ended(pid: int) -> bool:
    """``pid`` has exited: gone, or a zombie not yet reaped by whoever inherited it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_export_processes_of_a_killed_decoding_process_export_what_they_hold_and_exit():
    with GrpcReceiver() as rx:
        live = Live(["--protocol", "grpc", "--endpoint", rx.endpoint, "--export-processes", "2", *ALL,
                     "--flush-timeout", "1", "--grace-period", "0"])
        decoding, pids = export_processes_of(live.proc.pid, 2)
        try:
            for i in range(20):
                live.send(workflow_lines(f"w{i}"))
                time.sleep(0.01)
            live.wait_echo(len(live.sent))
            time.sleep(0.2)  # the decoding thread went idle: every record went to a process
            os.kill(decoding, signal.SIGKILL)
            deadline = time.monotonic() + 1.0 + 1.0  # --flush-timeout + a margin
            while not all(map(ended, pids)) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert all(map(ended, pids))
            live.send(workflow_lines("after"))  # the stream still passes
            live.close_and_wait(timeout=10)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        # every workflow's spans (root, phase, 2 agents) were exported by the orphaned processes;
        # the session span was still open in the killed process
        spans = rx.received.wait_for(20 * 4, timeout=1)
    assert len(spans) == 20 * 4
    assert sum(s.name.startswith("invoke_workflow ") for s in spans) == 20
    assert live.proc.returncode == 0
    assert live.output() == b"".join(l for _, l in live.sent)
    assert "decoding process" in live.stderr.decode()


# --------------------------------------------------------------------------- replay and CLI


@needs_fixtures()
def test_replay_with_processes_gives_the_same_spans():
    results = {}
    for mode, args in (("0", []), ("2", []), ("2-all", ALL)):
        n = mode.split("-")[0]
        with GrpcReceiver() as rx:
            proc = run_bridge(["replay", "--exporter", "otlp", "--protocol", "grpc", "--endpoint",
                               rx.endpoint, "--export-processes", n, *args, *map(str, RECORDINGS)],
                              timeout=30)
            spans = rx.received.wait_for(1, timeout=2)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == b""
        assert len({s.resource.get("service.instance.id") for s in spans}) == 1
        results[mode] = sorted(map(comparable, spans))
    assert results["0"] and results["2"] == results["0"] and results["2-all"] == results["0"]


@needs_fixtures()
def test_the_options_from_the_environment(tmp_path):
    """A sidecar's settings come from its environment (a container spec): the processes take
    every span with OTELBRIDGE_EXPORT_PROCESSES_AT=0, and none exist with
    OTELBRIDGE_EXPORT_PROCESSES=0; a flag wins over its variable."""
    data = WORKFLOW_PROBE.read_bytes()
    runs = {}
    for name, args, env in (
            ("at-0", [], {"OTELBRIDGE_EXPORT_PROCESSES_AT": "0"}),
            ("none", [], {"OTELBRIDGE_EXPORT_PROCESSES": "0", "OTELBRIDGE_EXPORT_PROCESSES_AT": "0"}),
            ("flag", ["--export-processes-at", "0"], {"OTELBRIDGE_EXPORT_PROCESSES": "0",
                                                      "OTELBRIDGE_EXPORT_PROCESSES_AT": "9"})):
        proc, spans, stats = export(tmp_path, data, ["--deterministic-ids", *args], env=clean_env(**env))
        check_run(proc, spans, stats, data)
        runs[name] = (stats["spans_to_export_processes"], len(spans))
    assert runs["at-0"][0] == runs["at-0"][1] > 0
    assert runs["none"][0] == 0 and runs["none"][1] == runs["at-0"][1]
    assert runs["flag"][0] == 0  # no processes (the variable), so nothing to take over
    # a bad value in the environment never costs the stream: said, ignored (a flag is checked)
    for var, value, span in (("OTELBRIDGE_EXPORT_PROCESSES", "x", "0 to 16"),
                             ("OTELBRIDGE_EXPORT_PROCESSES", "17", "0 to 16"),
                             ("OTELBRIDGE_EXPORT_PROCESSES_AT", "-3", "0 or more")):
        bad = run_bridge(["--exporter", "none", "-q"], data, env=clean_env(**{var: value}),
                         timeout=20)
        assert bad.returncode == 0 and bad.stdout == data
        assert bad.stderr.decode().splitlines() == [
            f"otelbridge: {var}={value!r} is not a whole number from {span}; ignored"]
    shown = run_bridge(["--help"], timeout=20).stdout
    assert b"OTELBRIDGE_EXPORT_PROCESSES" in shown and b"OTELBRIDGE_EXPORT_PROCESSES_AT" in shown


def test_help_lists_the_option_and_17_is_a_usage_error():
    proc = run_bridge(["--help"], timeout=20)
    assert proc.returncode == 0 and b"--export-processes" in proc.stdout
    bad = run_bridge(["--export-processes", "17"], b"", timeout=20)
    assert bad.returncode == 2
    assert b"--export-processes" in bad.stderr and bad.stdout == b""


def test_the_option_where_it_does_not_apply_is_said_once_and_the_stream_still_passes(tmp_path):
    data = WORKFLOW_PROBE.read_bytes() if WORKFLOW_PROBE.exists() else b'{"type":"system"}\n'
    proc = run_bridge(["--exporter", "console", "--export-processes", "2", "-q"], data, timeout=30)
    assert proc.returncode == 0 and proc.stdout == data
    notes = [l for l in proc.stderr.decode().splitlines() if "--export-processes" in l]
    assert notes == ["otelbridge: --export-processes applies only when otlp is the only exporter; "
                     "ignored"]
    quiet = run_bridge(["--exporter", "none", "-q"], data, timeout=30)
    assert b"--export-processes" not in quiet.stderr
    # each note names what was given, the environment's settings included
    for args, env, note in (
            (["--exporter", "console", "--export-processes-at", "5"], {},
             "--export-processes-at applies only when otlp is the only exporter; ignored"),
            (["--exporter", "console"], {"OTELBRIDGE_EXPORT_PROCESSES": "3",
                                         "OTELBRIDGE_EXPORT_PROCESSES_AT": "5"},
             "--export-processes and --export-processes-at apply only when otlp is the only "
             "exporter; ignored"),
            (["--export-processes", "0", "--export-processes-at", "5", "--endpoint",
              f"http://127.0.0.1:{free_port()}", "--flush-timeout", "0"], {},
             "--export-processes-at applies only with export processes (--export-processes is 0); "
             "ignored")):
        proc = run_bridge([*args, "-q"], data, env=clean_env(**env), timeout=30)
        assert proc.returncode == 0 and proc.stdout == data
        notes = [l for l in proc.stderr.decode().splitlines() if "--export-processes" in l]
        assert notes == ["otelbridge: " + note], (args, env, proc.stderr)


def test_follow_says_it_ignores_the_option(tmp_path):
    path = tmp_path / "stream.jsonl"
    path.write_bytes(b"")
    proc = subprocess.Popen([sys.executable, "-m", "otelbridge", "follow", "--exporter", "otlp",
                             "--endpoint", f"http://127.0.0.1:{free_port()}", "--flush-timeout", "0",
                             "--export-processes", "2", "--export-processes-at", "0",
                             "--state-dir", str(tmp_path / "state"), str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and out == b""
    assert err.decode().count("--export-processes and --export-processes-at are ignored") == 1


def test_replay_waits_for_a_slow_collector_in_every_process(tmp_path):
    """replay promises no queue overflow: its export processes wait for their exporters as long
    as those make progress (a 0.5 s collector, a 64-span queue: pacing alone would drop)."""
    path = tmp_path / "burst.jsonl"
    path.write_bytes(b"".join(line for w in range(30) for line in workflow_lines(f"r{w}", 10)))
    expected = spans_of(10, 30)
    env = clean_env(OTEL_BSP_MAX_QUEUE_SIZE="64", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="32",
                    OTEL_BSP_SCHEDULE_DELAY="50")
    stats_path = tmp_path / "stats.json"
    with GrpcReceiver(delay=0.5) as rx:
        proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint,
                           "--export-processes", "2", "--flush-timeout", "30",
                           "--stats-json", str(stats_path), str(path)], env=env, timeout=60)
        spans = rx.received.wait_for(expected, timeout=5)
    stats = json.loads(stats_path.read_text())
    assert proc.returncode == 0, proc.stderr
    assert b"Queue full" not in proc.stderr
    assert len(spans) == len({s.span_id for s in spans}) == expected
    assert (stats["spans_started"], stats["spans_exported"], stats["spans_dropped"]) == (expected, expected, 0)
    # the decoding process exported until 32 spans waited (half its 64-span queue); the
    # processes took the rest
    assert 32 <= expected - stats["spans_to_export_processes"] < expected


def test_export_processes_of_a_killed_replay_stop_waiting_and_exit(tmp_path):
    """``replay``'s processes wait for a slow collector as long as it makes progress — for their
    parent. Once it is killed, what they still hold (thousands of records in their pipes) is
    flushed within ``--flush-timeout`` and they exit, as the live tee's processes do; they went on
    waiting at the collector's pace (here ~64 spans/s each: more than a minute)."""
    path = tmp_path / "burst.jsonl"
    path.write_bytes(b"".join(line for w in range(300) for line in workflow_lines(f"k{w}", 20)))
    env = clean_env(OTEL_BSP_MAX_QUEUE_SIZE="64", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="32",
                    OTEL_BSP_SCHEDULE_DELAY="50")
    with GrpcReceiver(delay=0.5) as rx:
        replay = subprocess.Popen([sys.executable, "-m", "otelbridge", "replay", "--protocol", "grpc",
                                   "--endpoint", rx.endpoint, "--flush-timeout", "1",
                                   "--export-processes", "2", *ALL, str(path)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        pids: list[int] = []
        try:
            deadline = time.monotonic() + 10
            while len(pids) < 2 and time.monotonic() < deadline:
                pids = children(replay.pid)
                time.sleep(0.02)
            assert len(pids) == 2
            time.sleep(1.5)  # the file is read, its records wait in the processes' pipes
            replay.kill()
            replay.wait(5)
            deadline = time.monotonic() + 1.0 + 3.0  # --flush-timeout + a margin
            while not all(map(ended, pids)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert all(map(ended, pids))
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_replay_against_a_blackholed_collector_ends_with_every_process_answering(tmp_path):
    """A collector that accepts and never answers: replay's processes wait for their exporters
    only until the end the parent sets (the shared deadline), then flush within
    --flush-timeout and report — none is killed as "did not finish", every span is counted."""
    path = tmp_path / "burst.jsonl"
    path.write_bytes(b"".join(line for w in range(40) for line in workflow_lines(f"b{w}", 10)))
    expected = spans_of(10, 40)
    env = clean_env(OTEL_BSP_MAX_QUEUE_SIZE="64", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="32",
                    OTEL_BSP_SCHEDULE_DELAY="50", OTEL_EXPORTER_OTLP_TIMEOUT="2")
    stats_path = tmp_path / "stats.json"
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)  # the kernel completes handshakes; nobody reads or answers
    try:
        t = time.monotonic()
        proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint",
                           f"http://127.0.0.1:{hole.getsockname()[1]}", "--export-processes", "2",
                           *ALL, "--flush-timeout", "1", "--stats-json", str(stats_path),
                           str(path)], env=env, timeout=120)
        took = time.monotonic() - t
    finally:
        hole.close()
    stats = json.loads(stats_path.read_text())
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "did not finish" not in err and "Traceback" not in err
    assert stats["spans_started"] == expected
    assert stats["spans_exported"] == 0 and stats["spans_dropped"] == expected
    assert took < 60, took
