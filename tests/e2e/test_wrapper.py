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

from tests.conftest import WORKFLOW_PROBE, clean_env, run_bridge, session_span_count, workflow_facts

BRIDGE = [sys.executable, "-m", "otelbridge"]


def test_exit_status_and_stream_of_child():
    proc = run_bridge(["--exporter", "none", "--", sys.executable, "-c",
                       "import sys; sys.stdout.write('a\\nb'); sys.exit(3)"])
    assert proc.returncode == 3
    assert proc.stdout == b"a\nb"


def test_killed_child_gives_128_plus_signal():
    proc = run_bridge(["--exporter", "none", "--", sys.executable, "-c",
                       "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert proc.returncode == 128 + signal.SIGKILL


def test_missing_command_is_127_with_one_line():
    proc = run_bridge(["--exporter", "none", "--", "definitely-not-a-command-xyz"])
    assert proc.returncode == 127
    assert b"command not found" in proc.stderr
    assert proc.stdout == b""


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


def start_wrapped(new_session=False):
    proc = subprocess.Popen(
        [*BRIDGE, "--exporter", "none", "--", sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
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


def test_ctrl_c_at_terminal_reaches_child_exactly_once():
    """A terminal's Ctrl-C signals the whole foreground process group; otelbridge must not
    forward a second copy, and must keep passing the child's output until it exits."""
    proc = start_wrapped(new_session=True)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGTERM)  # then end it: forwarded, child reports what it saw
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
    flush = 1.0
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
    proc = run_bridge(["--endpoint", f"http://127.0.0.1:{port}", "--flush-timeout", "0.5",
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
        stdin=subprocess.DEVNULL, capture_output=True, env=clean_env(), timeout=30,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert proc.returncode == 5, proc.stderr
    assert sorted(int(fd) for fd in proc.stdout.split()) == [0, 1, 2]
    assert "uvloop" not in proc.stderr.decode()

