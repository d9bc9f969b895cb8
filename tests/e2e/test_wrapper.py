"""Wrapper mode (``otelbridge -- CMD``): exit status, signal forwarding, Ctrl-C exactly once,
and a bounded exit with no collector or a blackholed one."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from tests.conftest import AT_TERMINAL, ROOT, WORKFLOW_PROBE, clean_env, run_bridge, session_span_count, workflow_facts

BRIDGE = [sys.executable, "-m", "otelbridge"]


def test_exit_status_and_stream_of_child():
    proc = run_bridge(["--exporter", "none", "--", sys.executable, "-c",
                       "import sys; sys.stdout.write('a\\nb'); sys.exit(3)"])
    assert proc.returncode == 3
    assert proc.stdout == b"a\nb"


def test_a_command_without_dashes_keeps_its_own_options():
    """``otelbridge claude -p …``, the ``--`` forgotten: the first argument that is not one of
    otelbridge's options starts the command, and what follows is the command's (``-q`` and
    ``--exporter`` are otelbridge's options too): it ran instead of a usage error."""
    proc = run_bridge(["--exporter", "none", "--summary", "never", sys.executable, "-c",
                       "import sys; print(sys.argv[1:])", "-q", "--exporter", "x"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"['-q', '--exporter', 'x']\n"
    assert b"spans 1 built" in proc.stderr  # its run span: wrapper mode


def test_killed_child_gives_128_plus_signal():
    proc = run_bridge(["--exporter", "none", "--", sys.executable, "-c",
                       "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert proc.returncode == 128 + signal.SIGKILL


@pytest.mark.parametrize("name", ["definitely-not-a-command-xyz", ""])
def test_missing_command_is_127_with_one_line(name):
    proc = run_bridge(["--exporter", "none", "--", name])
    assert proc.returncode == 127
    assert f"cannot run '{name}': command not found".encode() in proc.stderr
    assert proc.stdout == b""
    assert b"replay" not in proc.stderr  # no hint for what is not a recording


@pytest.mark.parametrize("executable, status, reason", [(False, 127, "command not found"),
                                                        (True, 126, "permission denied")])
def test_a_command_that_cannot_run_says_why_in_its_run_span(tmp_path, executable, status, reason):
    """The run span of a command that never ran says why, as stderr does (its status, the
    summary and the report read it): not the exit status alone."""
    from tests.receivers import HttpReceiver

    command = str(tmp_path / "claude") if executable else "claudee-not-installed"
    if executable:
        (tmp_path / "claude").write_text("#!/bin/sh\n")  # not executable
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, "--", command, "-p", "x"], env=clean_env())
        (span,) = rx.received.wait_for(1, timeout=10)
    assert proc.returncode == status
    assert f"cannot run '{command}': {reason}".encode() in proc.stderr
    assert span.name == f"run {command.rsplit('/', 1)[-1]}" and span.status_code == 2
    assert span.status_message == f"{reason} (exit status {status})"
    assert span.attributes["error.type"] == "process_exit" and span.attributes["process.exit.code"] == status


def test_a_command_that_cannot_run_is_named_redacted():
    proc = run_bridge(["--exporter", "none", "--", "API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrSt ./x"])
    assert proc.returncode == 127
    assert b"cannot run 'API_KEY=[REDACTED:api_key] ./x': command not found" in proc.stderr
    assert b"AbCdEfGh" not in proc.stderr


def test_a_command_named_like_a_key_keeps_its_reason(tmp_path):
    """``rotate_token.sh': permission denied`` reads as a key and its value to the detector:
    the command is redacted alone, so the reason stays."""
    script = tmp_path / "rotate_token.sh"
    script.write_text("#!/bin/sh\n")  # not executable
    proc = run_bridge(["--exporter", "none", "--", str(script)])
    assert proc.returncode == 126
    assert f"cannot run '{script}': permission denied".encode() in proc.stderr


def test_a_recording_given_as_the_command_gets_a_hint():
    proc = run_bridge(["--exporter", "none", "examples/cbc-workflow.jsonl"])  # not executable
    assert proc.returncode == 126 and proc.stdout == b""
    assert (b"cannot run 'examples/cbc-workflow.jsonl': permission denied (to trace a recording: "
            b"otelbridge replay examples/cbc-workflow.jsonl, or otelbridge < examples/cbc-workflow.jsonl"
            in proc.stderr)


CHILD = textwrap.dedent("""
    import signal, sys, time
    seen = []
    def on(sig, frame):
        seen.append(sig)
        if sig == signal.SIGTERM:
            sys.stdout.write("SIGINT=%d SIGTERM=1\\n" % seen.count(signal.SIGINT))
            sys.stdout.flush()
            sys.exit(7)
    signal.signal(signal.SIGTERM, on)
    signal.signal(signal.SIGINT, on)
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    deadline = time.time() + 20
    while time.time() < deadline:
        time.sleep(0.01)
    sys.exit(9)
""")


def start_wrapped(new_session=False, terminal=None):
    argv = [*BRIDGE, "--exporter", "none", "--", sys.executable, "-c", CHILD]
    if terminal is not None:
        argv = [*AT_TERMINAL, *argv]
    proc = subprocess.Popen(
        argv, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
        start_new_session=new_session,
    )
    assert proc.stdout.readline() == b"ready\n"
    return proc


def test_sigterm_is_forwarded_to_child():
    proc = start_wrapped()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert out == b"SIGINT=0 SIGTERM=1\n"
    assert proc.returncode == 7


def test_ctrl_c_at_a_terminal_reaches_child_exactly_once():
    """A terminal's Ctrl-C signals its whole foreground process group (here: a real pty's line
    discipline, from the INTR character); otelbridge must not forward a second copy, and must
    keep passing the child's output until it exits."""
    master, slave = os.openpty()
    try:
        proc = start_wrapped(terminal=slave)
        os.write(master, b"\x03")  # Ctrl-C typed at the terminal
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGTERM)  # then end it: forwarded, child reports what it saw
        out, _ = proc.communicate(timeout=20)
    finally:
        os.close(master)
        os.close(slave)
    assert out == b"SIGINT=1 SIGTERM=1\n"
    assert proc.returncode == 7


def test_sigint_without_a_terminal_is_forwarded():
    """SIGINT sent to otelbridge alone (a script, an orchestrator; no terminal) is forwarded:
    the child sees it once, as it would without otelbridge in between."""
    proc = start_wrapped(new_session=True)  # a new session: no controlling terminal
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert out == b"SIGINT=1 SIGTERM=1\n"
    assert proc.returncode == 7


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
@pytest.mark.parametrize("collector", ["refused", "blackhole"])
def test_dead_collector_bounded_exit_stream_intact(protocol, collector):
    data = WORKFLOW_PROBE.read_bytes() if WORKFLOW_PROBE.is_file() else b""
    if not data:
        pytest.skip("../shared/fixtures not present")
    hole = None
    if collector == "blackhole":  # accepts connections (kernel backlog), never answers
        hole = socket.socket()
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        port = hole.getsockname()[1]
    else:
        port = _closed_port()
    flush = 0.5
    try:
        proc = subprocess.Popen(
            [*BRIDGE, "--protocol", protocol, "--endpoint", f"http://127.0.0.1:{port}",
             "--flush-timeout", str(flush), "--", "cat"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
        )
        proc.stdin.write(data)
        proc.stdin.close()
        out = proc.stdout.read()  # the stream ends with the input...
        t_end = time.monotonic()
        proc.wait(timeout=30)
        elapsed = time.monotonic() - t_end  # ...then at most the flush timeout + 1 s
        err = proc.stderr.read()
    finally:
        if hole is not None:
            hole.close()
    assert out == data
    assert proc.returncode == 0, err  # export failure never fails the pipeline
    assert elapsed < flush + 1.0, elapsed
    # every span the stream implies was dropped: the workflow's (root, phase, agents), the
    # session's (span, turns, calls, tools) and the wrapper's run span
    _, agents, phases, _, _ = workflow_facts(WORKFLOW_PROBE)
    count = 1 + len(phases) + len(agents) + session_span_count(data) + 1
    assert count == 4 + 7 + 1
    assert f"0 exported, {count} dropped".encode() in err
    assert b"Traceback" not in err


def test_fail_on_export_error_opt_in():
    port = _closed_port()
    proc = run_bridge(["--endpoint", f"http://127.0.0.1:{port}", "--flush-timeout", "0.2",
                       "--fail-on-export-error", "--", sys.executable, "-c",
                       "print('{\"type\":\"system\",\"subtype\":\"task_progress\",\"task_id\":\"t\","
                       "\"workflow_progress\":[]}')"])
    assert proc.returncode == 1
    assert b"not confirmed" in proc.stderr


@pytest.mark.parametrize("capture", [False, True])
def test_command_line_is_content(capture):
    """``otelbridge -- claude -p "<prompt>"``: the arguments carry the prompt, so they leave only
    with --capture-content (redacted even then); the command and the count always."""
    from tests.receivers import HttpReceiver

    argv = [sys.executable, "-c", "print('{}')", "secret prompt ghp_" + "a" * 36]
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, *(["--capture-content"] if capture else []),
                           "--", *argv])
        spans = rx.received.spans()
    assert proc.returncode == 0, proc.stderr
    (run,) = [s for s in spans if s.name.startswith("run ")]
    assert run.attributes["process.command"] == sys.executable
    assert run.attributes["process.args_count"] == len(argv)
    if capture:
        assert run.attributes["process.command_args"][:3] == argv[:3]
        assert run.attributes["process.command_args"][3] == "secret prompt [REDACTED:github_token]"
    else:
        assert "process.command_args" not in run.attributes
        assert "secret prompt" not in repr(spans)


# ------------------------------------------------------------ fds the wrapped command inherits

#: ``python -c BOOT ARGS``: otelbridge booted the ways its spawn can differ — the loop (uvloop,
#: or asyncio's own where uvloop is missing), decoding in a process or on a thread (no fork),
#: and the child's exit watched by a pidfd or, where ``os.pidfd_open`` is missing, a thread.
BOOTS = {
    "uvloop": "",
    "no-uvloop": "import sys; sys.modules['uvloop'] = None; ",
    "no-fork": "import os; del os.fork; ",
    "no-pidfd": "import os; del os.pidfd_open; ",
}


@pytest.mark.parametrize("boot", sorted(BOOTS))
def test_wrapped_command_gets_exactly_fds_0_1_2(boot):
    """Nothing of ours leaks into CMD (uvloop's spawn gave it inheritable copies of 0/1/2, one
    the stream pipe's write end): the shell lists its own fds, then exits with a status of its
    own, which must still be ours."""
    script = BOOTS[boot] + "from otelbridge.__main__ import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", script, "--exporter", "none", "--",
         "sh", "-c", "ls /proc/$$/fd; exit 5"],
        stdin=subprocess.DEVNULL, capture_output=True, env=clean_env(), timeout=30, cwd=ROOT,
    )
    assert proc.returncode == 5, proc.stderr
    assert sorted(int(fd) for fd in proc.stdout.split()) == [0, 1, 2]
    assert "uvloop" not in proc.stderr.decode()


# ----------------------------------------------- signals while the child or its heirs hold on

def _interrupted(spans) -> list[tuple[str, str]]:
    return [(s.name, e[2].get("otelbridge.reason")) for s in spans for e in s.events
            if e[0] == "interrupted"]


def test_sigterm_with_orphan_holding_stdout_ends_after_child(tmp_path):
    """SIGTERM kills the shell; its background ``sleep`` still holds the stream's write end.
    The run ends once the shell has gone (not when the sleep ends): exit 143, stream closed."""
    pidfile = tmp_path / "orphan.pid"
    err = open(tmp_path / "stderr", "wb")  # the orphan inherits stderr too: not a pipe here
    proc = subprocess.Popen(
        [*BRIDGE, "--exporter", "none", "--", "sh", "-c",
         f"sleep 30 & echo $! > {pidfile}; echo ready; wait"],
        stdout=subprocess.PIPE, stderr=err, env=clean_env(), start_new_session=True,
    )
    try:
        assert proc.stdout.readline() == b"ready\n"  # the orphan's pid is written by now
        orphan = int(pidfile.read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.stdout.read() == b""  # the stream's end reaches our reader
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM
        os.kill(orphan, 0)  # the orphan still runs: the run did not wait for it
    finally:
        proc.kill()
        proc.wait()
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except (ValueError, OSError):
            pass


STUBBORN = textwrap.dedent("""
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import subprocess
    grandchild = subprocess.Popen(["sleep", "30"], stdout=subprocess.DEVNULL)
    open(sys.argv[2], "w").write(f"{os.getpid()} {grandchild.pid}")
    sys.stdout.buffer.write(open(sys.argv[1], "rb").read()); sys.stdout.flush()
    time.sleep(30)
""")


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (killed, not yet reaped by its new parent)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_second_signal_ends_run_while_child_ignores_it(signum, tmp_path):
    """The child ignores the signal (SIGTERM forwarded, SIGINT taken for a terminal's that
    reached it already) and holds a workflow open: the run waits for it — until a second
    signal, which is never ignored: the run ends (exit 128+N) and every open span of the
    stream is ended as interrupted and exported."""
    from tests.e2e.test_faults import SESSION_SPAN, spans_of, workflow_lines
    from tests.receivers import GrpcReceiver

    data = b"".join(workflow_lines("held", agents=2, complete=False))
    (tmp_path / "stream").write_bytes(data)
    pidfile = tmp_path / "child.pid"
    with GrpcReceiver() as rx:
        proc = subprocess.Popen(
            [*BRIDGE, "--protocol", "grpc", "--endpoint", rx.endpoint, "--flush-timeout", "5",
             "--", sys.executable, "-c", STUBBORN, str(tmp_path / "stream"), str(pidfile)],
            stdout=subprocess.PIPE, stderr=open(tmp_path / "stderr", "wb"), env=clean_env(),
            start_new_session=True,
        )
        try:
            assert proc.stdout.read(len(data)) == data
            proc.send_signal(signum)
            with pytest.raises(subprocess.TimeoutExpired):  # the first: the child decides
                proc.wait(timeout=0.5)
            proc.send_signal(signum)
            proc.wait(timeout=15)
            assert proc.stdout.read() == b""
            spans = rx.received.wait_for(spans_of(2) + 1, timeout=5)
        finally:
            proc.kill()
            proc.wait()
        child, grandchild = (int(p) for p in pidfile.read_text().split())
        # the child that ignored both signals does not outlive the run, nor what it started
        alive = [pid for pid in (child, grandchild) if _running(pid)]
        for pid in alive:
            os.kill(pid, signal.SIGKILL)
    stderr = (tmp_path / "stderr").read_text()
    assert alive == [], stderr
    assert proc.returncode == 128 + signum, stderr
    name = signal.Signals(signum).name
    assert f"the wrapped command ignored {name}; killed it (pid {child})" in stderr
    assert len(spans) == spans_of(2) + 1  # the workflow's, the session's, the run's
    reason = f"interrupted by {signal.Signals(signum).name}"
    assert sorted(_interrupted(spans)) == sorted(
        [("invoke_workflow wf-held", reason), (SESSION_SPAN, reason)]
        + [(f"invoke_agent held-agent-{i}", reason) for i in (1, 2)])
    run = next(s for s in spans if s.name.startswith("run "))
    assert run.attributes["process.exit.code"] == 128 + signum


SLOW_TO_STOP = textwrap.dedent("""
    import signal, sys, time
    got = []
    signal.signal(signal.SIGTERM, lambda *a: got.append(1))
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    while not got:
        time.sleep(0.01)
    time.sleep(0.5)  # a clean shutdown takes a while
    sys.stdout.write("stopped cleanly\\n"); sys.stdout.flush()
    sys.exit(42)
""")


def test_a_signal_sent_to_the_process_and_its_group_is_one_signal():
    """``timeout`` sends its signal to otelbridge and then to its process group: the same
    SIGTERM arrives twice within microseconds. That is one signal, not a second one: the child
    is not killed while it stops, its last line passes and its status is the run's."""
    proc = subprocess.Popen([*BRIDGE, "--exporter", "none", "--", sys.executable, "-c", SLOW_TO_STOP],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
                            start_new_session=True)
    assert proc.stdout.readline() == b"ready\n"
    os.kill(proc.pid, signal.SIGTERM)
    os.killpg(proc.pid, signal.SIGTERM)  # the group: otelbridge, the child, the decoding process
    out, err = proc.communicate(timeout=20)
    assert out == b"stopped cleanly\n" and proc.returncode == 42, err
    assert b"killed it" not in err


def test_a_command_killed_by_a_signal_says_so_on_its_run_and_open_spans(tmp_path):
    """The wrapped command dies of SIGKILL (the OOM killer, a CI timeout's), no signal to
    otelbridge: its status is 137, as a shell's; the run span says it was killed, not that it
    exited 137, and the spans it left open say why they end early."""
    from tests.receivers import HttpReceiver

    head = tmp_path / "head.jsonl"  # a turn begun: its init and first model call, no result
    head.write_bytes(b"".join(WORKFLOW_PROBE.read_bytes().splitlines(keepends=True)[:5]))
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, "--summary", "never", "--", "sh", "-c",
                           f'cat "{head}"; kill -9 $$'], env=clean_env())
        spans = rx.received.wait_for(3, timeout=10)
    assert proc.returncode == 128 + signal.SIGKILL
    assert proc.stdout == head.read_bytes()
    (run,) = [s for s in spans if s.name == "run sh"]
    assert run.status_message == "killed by SIGKILL (exit status 137)"
    assert run.attributes["process.exit.code"] == 137
    cut = _interrupted(spans)
    assert cut and all(reason == "killed by SIGKILL" for _, reason in cut), cut
    assert any(name.startswith("turn ") for name, _ in cut), cut


def _pid_namespace() -> bool:
    """Whether this test may start a process as PID 1 of a new PID namespace (``unshare``)."""
    try:
        return subprocess.run(["unshare", "-pf", "--mount-proc", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _pid_namespace(), reason="no unshare of a PID namespace here")
@pytest.mark.parametrize("exporter", ["none", "otlp"])
def test_as_pid_1_the_processes_the_command_left_are_reaped(tmp_path, exporter):
    """A container's entrypoint (``ENTRYPOINT ["otelbridge"]``, the wrapped Kubernetes Job):
    otelbridge is PID 1, so the processes the command started and left running are handed to
    it when their parent exits. Each that exits is reaped (none stays a zombie, holding a pid),
    the command's own status still comes through, and the stream passes whole."""
    zombies = tmp_path / "zombies"
    script = textwrap.dedent(f"""
        import glob, subprocess, sys, time
        for _ in range(5):  # each sleeps on after its shell exits: an orphan, then a zombie
            subprocess.run(["sh", "-c", "sleep 0.2 &"])
        sys.stdout.write("line\\n")
        time.sleep(1.6)
        states = [open(p).read().rsplit(")", 1)[1].split()[0] for p in glob.glob("/proc/[0-9]*/stat")]
        open({str(zombies)!r}, "w").write(str(states.count("Z")))
        sys.exit(3)
    """)
    proc = subprocess.run(["unshare", "-pf", "--mount-proc", *BRIDGE, "--exporter", exporter,
                           "--endpoint", "http://127.0.0.1:9", "--flush-timeout", "0.2", "--summary", "never",
                           "--", sys.executable, "-c", script],
                          capture_output=True, env=clean_env(), cwd=ROOT, timeout=60)
    assert proc.returncode == 3 and proc.stdout == b"line\n", proc.stderr
    assert zombies.read_text() == "0"
