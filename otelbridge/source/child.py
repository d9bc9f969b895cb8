"""Wrapper mode: ``otelbridge -- CMD ARGS...`` runs CMD with stdin and stderr inherited and its
stdout on a pipe that the tee reads.

CMD gets exactly fds 0, 1 and 2. It is started by :class:`subprocess.Popen` (``close_fds``:
``close_range`` in the child before ``exec``), not by the event loop: uvloop's spawn (libuv
``uv_spawn``) hands the child an inheritable duplicate of each of its stdio fds besides 0/1/2 —
one of them the stream pipe's write end, which a background process of CMD would then hold — and
libuv has no ``close_fds`` (MagicStack/uvloop ``handles/process.pyx`` ``_file_redirect_stdio``;
libuv/libuv#3716). Its exit is watched without a thread through a pidfd (Linux ≥ 5.3) on the
event loop, else by a daemon thread blocked in ``waitpid``.

Exit status: the child's, or ``128 + N`` when a signal N killed it (the shell's convention);
127 when CMD cannot be found, 126 when it cannot be executed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Collection, Mapping, Sequence


class ChildError(Exception):
    """CMD could not be started; ``status`` is the exit status to use (126 or 127), ``reason``
    ours (``command not found``, the system's ``strerror``), ``command`` the stream's own."""

    def __init__(self, command: str, reason: str, status: int) -> None:
        super().__init__(f"cannot run {command!r}: {reason}{_hint(command)}")
        self.command, self.reason, self.status = command, reason, status

    def describe(self, redact: Callable[[str], str]) -> str:
        """The message with ``redact`` applied to the command alone (a name such as
        ``rotate_token.sh`` may read as a key to the detector; the reason is not a value)."""
        shown = redact(self.command)
        return f"cannot run {shown!r}: {self.reason}{_hint(self.command, shown)}"


def exit_status(returncode: int) -> int:
    """A ``subprocess`` return code (negative for a signal) → a shell exit status."""
    return 128 - returncode if returncode < 0 else returncode


#: How often, as PID 1, the processes CMD left behind are reaped once they exit, in seconds.
REAP_S = 0.5


class Child:
    """The wrapped command's process: ``pid``, ``returncode`` (``None`` while it runs; negative
    for a signal, as :class:`subprocess.Popen`), :meth:`send_signal` and ``await``-able
    :meth:`wait`. Made by :func:`spawn` inside a running event loop."""

    def __init__(self, popen: subprocess.Popen, use_pidfd: bool = True, keep: Collection[int] = ()) -> None:
        self._popen = popen
        self.pid = popen.pid
        #: processes of ours another part reaps (the decoding process), and the child
        self._keep = frozenset((*keep, popen.pid))
        loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = loop.create_future()
        if not (use_pidfd and self._watch_pidfd(loop)):
            threading.Thread(target=self._wait_blocking, args=(loop,), daemon=True,
                             name="otelbridge-child-wait").start()
        if os.getpid() == 1:  # a container's init: orphans are handed to us, and only we reap them
            self._reap_orphans(loop)

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` unless the child has already been reaped (no stray pid is hit)."""
        try:
            self._popen.send_signal(signum)
        except ProcessLookupError:
            pass

    def keyboard_reaches(self) -> bool:
        """True when a terminal's keyboard signals (Ctrl-C: SIGINT) reach the child by
        themselves: it is in the foreground process group of our controlling terminal. False
        without a terminal (a CI job, a script, a container), when the child runs in a process
        group of its own, or where it cannot be told (not Unix)."""
        try:
            fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        except (OSError, AttributeError):  # no controlling terminal
            return False
        try:
            return os.tcgetpgrp(fd) == os.getpgid(self.pid)
        except (OSError, AttributeError):  # the child has gone, or no job control here
            return False
        finally:
            os.close(fd)

    def kill_tree(self) -> int:
        """SIGKILL the child, if it still runs, and the processes it started that are still
        its descendants (Linux ``/proc``; elsewhere the child alone): how many were killed."""
        if self.returncode is not None:
            return 0
        killed = 0
        for pid in [self.pid, *_descendants(self.pid)]:  # listed before any dies and is reparented
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        return killed

    async def wait(self) -> int:
        """The child's return code, once it has exited (it is reaped here)."""
        return await asyncio.shield(self._exited)

    def _done(self, returncode: int) -> None:
        if not self._exited.done():
            self._exited.set_result(returncode)

    def _watch_pidfd(self, loop: asyncio.AbstractEventLoop) -> bool:
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
            return False

        def readable() -> None:  # the pidfd is readable once the process has exited
            returncode = self._popen.poll()
            if returncode is not None:
                loop.remove_reader(pidfd)
                os.close(pidfd)
                self._done(returncode)

        try:
            loop.add_reader(pidfd, readable)
        except (OSError, ValueError, NotImplementedError):
            os.close(pidfd)
            return False
        return True

    def _reap_orphans(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reap each exited process but the child (its watcher reaps it, for its status) and the
        others of ours that are waited for (``keep``), then
        again in :data:`REAP_S`: as PID 1, the processes CMD left running are reparented to
        us, and each would stay a zombie, holding a pid, until this process ends. (A timer, as
        the event loop keeps SIGCHLD to itself.)"""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                break
            if info is None or info.si_pid in self._keep:
                break
            try:
                os.waitpid(info.si_pid, 0)
            except ChildProcessError:
                pass
        if self.returncode is None:
            loop.call_later(REAP_S, self._reap_orphans, loop)

    def _wait_blocking(self, loop: asyncio.AbstractEventLoop) -> None:
        returncode = self._popen.wait()
        try:
            loop.call_soon_threadsafe(self._done, returncode)
        except RuntimeError:  # the loop has closed: nobody waits any more
            pass


def _hint(name: str, shown: str | None = None) -> str:
    """For a command that looks like a recording (a file, or a ``.json``/``.jsonl``/``.txt``
    name): how to trace one instead of running it (naming it as ``shown``)."""
    if os.path.isfile(name) or name.endswith((".json", ".jsonl", ".txt")):
        shown = name if shown is None else shown
        return (f" (to trace a recording: otelbridge replay {shown}, or otelbridge < {shown}; "
                "a command to wrap goes after --)")
    return ""


def _descendants(pid: int) -> list[int]:
    """``pid``'s descendants, read from ``/proc/PID/task/*/children`` (``[]`` where it is
    missing)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids = [int(p) for p in fh.read().split()]
        except OSError:  # the thread or the process ended meanwhile
            continue
        for kid in kids:
            out += [kid, *_descendants(kid)]
    return out


async def spawn(argv: Sequence[str], env: Mapping[str, str] | None = None,
                use_pidfd: bool = True, keep: Collection[int] = ()) -> tuple[Child, int]:
    """Start ``argv`` with its stdout on a new pipe and no fd of ours but 0/1/2; return the
    :class:`Child` and the pipe's read fd. ``use_pidfd=False`` watches its exit from a thread
    (the path where pidfds are missing); ``keep``: processes of ours that are waited for
    elsewhere, which the child, as PID 1, leaves to be reaped there.

    Raises :class:`ChildError` when the command cannot be started.
    """
    if not argv[0]:  # (exec would search PATH's directories and say "permission denied")
        raise ChildError(argv[0], "command not found", 127)
    read_fd, write_fd = os.pipe()
    try:
        popen = subprocess.Popen(
            list(argv), stdin=None, stdout=write_fd, stderr=None,
            env=dict(env) if env is not None else None, close_fds=True,
        )
    except FileNotFoundError:
        os.close(read_fd)
        raise ChildError(argv[0], "command not found", 127) from None
    except PermissionError:
        os.close(read_fd)
        raise ChildError(argv[0], "permission denied", 126) from None
    except OSError as exc:
        os.close(read_fd)
        raise ChildError(argv[0], exc.strerror or "cannot execute", 126) from None
    finally:
        os.close(write_fd)
    return Child(popen, use_pidfd, keep), read_fd
