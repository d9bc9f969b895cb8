"""Signals at any moment, start-up included, and the wrapped command's own exit status.

* SIGINT/SIGTERM in otelbridge's first ~150 ms: no traceback, nothing left running (neither the
  decoding process nor the wrapped command); pipe mode exits 128 + the signal, wrapper mode with
  the child's status once the child runs. Out of reach: a SIGINT while the interpreter itself
  starts (importing ``site``), or in otelbridge's lines before the one that installs its SIGINT
  handler (nothing can catch it yet), is CPython's to report — or to drop: raised in a weakref
  callback of importlib's module locks (``Exception ignored in``) or in a ``.pth`` line (site's
  ``Error processing line``), the ``KeyboardInterrupt`` is reported and the start goes on
  (python/cpython#95959). otelbridge then never had a signal: in wrapper mode it starts the
  command, and both run on. :func:`ended` tells that apart from a run of ours that does not end.
* Wrapper mode: a child that exits on its own (here from its TERM trap) gives its status to
  otelbridge and to the run span, even while a background process it started holds its stdout.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env
from tests.receivers import HttpReceiver

#: Seconds after the start at which the signal is sent: before Python runs our code, while it
#: imports, around the fork, around the child's start.
DELAYS = (0.0, 0.02, 0.04, 0.06, 0.1, 0.15)


def tagged_processes(mark: str) -> list[int]:
    """Pids of the processes whose environment carries ``mark`` (ours and what they started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def none_left(mark: str, within: float = 3.0) -> bool:
    """True once no process carries ``mark`` (the decoding process ends after its flush)."""
    until = time.monotonic() + within
    while tagged_processes(mark):
        if time.monotonic() > until:
            return False
        time.sleep(0.02)
    return True


#: ``otelbridge/__main__.py``'s line that installs its SIGINT handler: a ``KeyboardInterrupt``
#: raised at it or before it came before anything could catch it.
FIRST_HANDLER_LINE = 1 + ROOT.joinpath("otelbridge", "__main__.py").read_text().splitlines().index(
    "_signal.signal(_signal.SIGINT, _record)")


def before_our_code(err: bytes) -> bool:
    """The signal came before otelbridge could catch it: while CPython was still starting (its
    own fatal error importing ``site``, or a ``KeyboardInterrupt`` in frames of the
    interpreter's import machinery alone), or in otelbridge's package or ``__main__`` before
    :data:`FIRST_HANDLER_LINE` had run."""
    if b"Fatal Python error: init_import_site" in err:
        return True
    if b"Error processing line" in err:  # site's own report on a .pth file it was reading
        return True
    if b"KeyboardInterrupt" not in err:
        return False
    # frames in otelbridge's package (not the editable install's finder, which names it too)
    frames = [f for f in re.findall(rb'File "([^"]*)", line (\d+)', err) if b"/otelbridge/" in f[0]]
    if not frames:
        return True
    path, line = frames[-1]
    return path.endswith(b"otelbridge/__init__.py") or (
        path.endswith(b"otelbridge/__main__.py") and int(line) <= FIRST_HANDLER_LINE)


def swallowed_by_cpython(err: bytes) -> bool:
    """CPython's report of a ``KeyboardInterrupt`` it dropped while it started, before our code
    (see the module doc): it went on as if no signal had come."""
    return (b"KeyboardInterrupt" in err and before_our_code(err)
            and (b"Exception ignored in" in err or b"Error processing line" in err))


#: Seconds a signalled run has to end (its flush is bounded at 0.5 s).
ENDS_WITHIN_S = 10.0


def ended(proc: subprocess.Popen, within: float = ENDS_WITHIN_S) -> tuple[bytes, bytes, bool]:
    """The signalled run's stdout and stderr once it has ended, and whether its signal was lost:
    still running after ``within`` s, its process group is killed (nothing is left behind); that
    is no failure only when CPython dropped the signal while it started
    (:func:`swallowed_by_cpython`) — the run, and the command it wraps, run on as unsignalled."""
    try:
        out, err = proc.communicate(timeout=within)
        return out, err, False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    assert swallowed_by_cpython(err), f"still running {within} s after the signal: {err!r}"
    return out, err, True


#: The wrapped command of the early-signal tests: once its trap is set (it says ``up``), a
#: SIGINT or SIGTERM makes it exit 7.
WRAPPED = ["sh", "-c", "trap 'exit 7' INT TERM; echo up; while :; do sleep 0.05; done"]

#: ``python -c LOSES_SIGINT ARGS``: otelbridge as ``-m`` runs it, after a SIGINT to its process
#: group that CPython drops first — a signal in the interpreter's start-up that lands in a weakref
#: callback (importlib's module locks have one), the interleaving driven on purpose.
LOSES_SIGINT = """\
import os, runpy, signal, weakref
class Lock: pass
def cb(_ref):
    os.killpg(0, signal.SIGINT)  # its KeyboardInterrupt is raised here, reported and dropped
lock = Lock()
ref = weakref.ref(lock, cb)
del lock
runpy.run_module("otelbridge", run_name="__main__", alter_sys=True)
"""


def start(args: list[str], mark: str,
          run: tuple[str, ...] = ("-m", "otelbridge")) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *run, "--exporter", "none",
                             "--flush-timeout", "0.5", *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env(OTELBRIDGE_TEST_MARK=mark), cwd=ROOT,
                            start_new_session=True)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_early_signal_pipe_mode(signum):
    for delay in DELAYS:
        mark = uuid.uuid4().hex
        proc = start([], mark)
        time.sleep(delay)
        proc.send_signal(signum)
        out, err, lost = ended(proc)
        assert none_left(mark), delay
        if lost or before_our_code(err):
            continue
        # before Python has installed any handler the signal's default action ends the process
        assert proc.returncode in (128 + signum, -signum), (delay, proc.returncode, err)
        assert b"Traceback" not in err, (delay, err)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_early_signal_wrapper_mode(signum):
    """The signal goes to the whole process group, as a terminal's Ctrl-C or a CI runner's stop
    does: the child, once its trap is set (it says ``up``), exits 7 and otelbridge with it."""
    for delay in DELAYS:
        mark = uuid.uuid4().hex
        proc = start(["--", *WRAPPED], mark)
        time.sleep(delay)
        os.killpg(proc.pid, signum)
        out, err, lost = ended(proc)
        assert none_left(mark), delay
        if lost or before_our_code(err):
            continue
        assert b"Traceback" not in err, (delay, err)
        if out == b"up\n":  # the child ran with its trap: its status is ours
            assert proc.returncode == 7, (delay, proc.returncode, err)
        else:  # cut before the child could say so: killed by the signal, or never started
            assert proc.returncode in (7, 128 + signum, -signum), (delay, proc.returncode, err)


def test_a_sigint_cpython_drops_while_it_starts_is_told_apart_from_a_hang():
    """The early-signal tests' rare hang, driven: the group's SIGINT comes while CPython runs a
    weakref callback before otelbridge's code, and CPython drops it. otelbridge cannot know of
    it: it starts the command, and both run on (what a terminal's user would see; a second
    Ctrl-C ends them). :func:`ended` says so and kills the group, instead of failing as a hang
    of ours (it raised ``TimeoutExpired`` there)."""
    mark = uuid.uuid4().hex
    proc = start(["--", *WRAPPED], mark, run=("-c", LOSES_SIGINT))
    out, err, lost = ended(proc, within=3)
    assert lost, err
    assert b"Exception ignored in" in err and b"KeyboardInterrupt" in err, err
    assert out == b"up\n"  # the command started after the signal, and ran on
    assert none_left(mark)


#: ``python -c SIGNAL_AS_THE_LOOP_LETS_GO SIGNUM ARGS``: otelbridge whose event loop, as it lets
#: go of signal SIGNUM at the end (uvloop puts its default back then), gets it at that instant —
#: sent to the main thread, where a process's signal lands.
SIGNAL_AS_THE_LOOP_LETS_GO = """\
import os, runpy, signal, sys, threading, types, uvloop
import otelbridge.modes.loop

SIGNUM = int(sys.argv.pop(1))

class Loop(uvloop.Loop):
    def remove_signal_handler(self, sig):
        removed = super().remove_signal_handler(sig)
        if sig == SIGNUM and os.getpid() == TEE:
            signal.pthread_kill(threading.main_thread().ident, SIGNUM)
        return removed

class Policy(uvloop.EventLoopPolicy):
    def _loop_factory(self):
        return Loop()

TEE = os.getpid()
otelbridge.modes.loop.uvloop = types.SimpleNamespace(EventLoopPolicy=Policy)
runpy.run_module("otelbridge", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_signal_as_the_loop_lets_go_of_it_at_the_end_is_a_late_signal(signum):
    """At the end of input the event loop's signal handlers make way for a plain one (the end
    blocks the loop), and uvloop's removal puts each signal's default back for a moment: a
    signal right then killed the tee (SIGTERM), or raised KeyboardInterrupt in it (SIGINT: exit
    130 with no end said, the decoding process "ended unexpectedly"). Held across the
    hand-over, it is a late signal: pipe mode exits 128 + N after its flush."""
    line = b'{"type":"system","subtype":"init","session_id":"s-late","model":"m","tools":[]}\n'
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_AS_THE_LOOP_LETS_GO, str(int(signum)), "--exporter",
         "none", "--flush-timeout", "0.5"],
        input=line, capture_output=True, env=clean_env(), cwd=ROOT, timeout=30)
    assert done.stdout == line
    assert done.returncode == 128 + signum, done.stderr
    assert b"ended unexpectedly" not in done.stderr, done.stderr


@pytest.mark.parametrize("script,status", [
    ("trap 'exit 99' TERM; echo up; sleep 2 2>/dev/null & wait", 99),  # exits from its trap
    ("echo up; sleep 2 2>/dev/null & exit 0", 0),  # had exited before the signal came
], ids=["trap", "gone-before"])
def test_wrapper_keeps_the_childs_own_status_while_a_background_process_holds_stdout(script, status):
    """SIGTERM to otelbridge is forwarded; the child exits on its own while its background
    ``sleep`` still holds the pipe: otelbridge exits with the child's status at once (not held
    until the background process ends) and the run span records it."""
    with HttpReceiver() as rx:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "--endpoint", rx.endpoint, "--flush-timeout", "2",
             "--", "sh", "-c", script],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
        try:
            assert proc.stdout.readline() == b"up\n"
            time.sleep(0.2)
            t = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(10)
            took = time.monotonic() - t
        finally:
            if proc.poll() is None:
                proc.kill()
        (run,) = rx.received.wait_for(1, timeout=5)
        err = proc.stderr.read()
    assert code == status, err
    assert took < 1.5
    assert run.name == "run sh"
    assert run.attributes["process.exit.code"] == status


def test_sighup_is_handled_as_sigterm_in_both_modes():
    """``kill -HUP`` (a closed terminal, a supervisor's reload) to otelbridge alone: wrapper mode
    forwards it and returns the child's status — the child is not left running, reparented;
    pipe mode ends its spans as interrupted, flushes, and exits 128 + SIGHUP."""
    mark = uuid.uuid4().hex
    wrapper = start(["--", "sh", "-c", "echo up; exec sleep 45"], mark)
    assert wrapper.stdout.readline() == b"up\n"
    wrapper.send_signal(signal.SIGHUP)
    _, err = wrapper.communicate(timeout=10)
    assert wrapper.returncode == 128 + signal.SIGHUP, err  # the child's: killed by the HUP
    assert b"ended unexpectedly" not in err, err
    assert none_left(mark), "the wrapped sleep was left running"

    line = b'{"type":"system","subtype":"init","session_id":"s-hup","model":"m","tools":[]}\n'
    with HttpReceiver() as rx:
        pipe = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "--endpoint", rx.endpoint, "--flush-timeout", "2"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=clean_env(), cwd=ROOT)
        pipe.stdin.write(line)
        pipe.stdin.flush()
        assert pipe.stdout.readline() == line
        pipe.send_signal(signal.SIGHUP)
        _, err = pipe.communicate(timeout=10)
        spans = rx.received.wait_for(1, timeout=5)
    assert pipe.returncode == 128 + signal.SIGHUP, err
    assert b"ended unexpectedly" not in err, err
    reasons = {e[2].get("otelbridge.reason") for s in spans for e in s.events if e[0] == "interrupted"}
    assert reasons == {"interrupted by SIGHUP"}, spans
