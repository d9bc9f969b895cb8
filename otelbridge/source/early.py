"""The first bytes, before the rest is imported: a plain tee's process starts passing stdin to
stdout at once, on a thread, while the interpreter imports the CLI, the event loop and the tee
(~70 ms); each chunk is also written into what becomes the decoding process's data pipe, so
nothing is lost to decoding.

It runs only where nothing can go differently: the tee without a wrapped command (no argument
that is not an option of :data:`VALUE_OPTIONS`/:data:`FLAG_OPTIONS`, no ``--``, no help), stdin
and stdout both pipes, ``fork`` available. It stops at the end of input, at an error (the tee
then meets the same condition itself), once the data pipe holds :data:`LIMIT` bytes (the rest
waits in stdin's pipe for the tee), or when :meth:`EarlyTee.stop` is called — before the tee
forks the decoding process and takes over fd 1. It never blocks on stdout: it reads no more
than stdout's pipe has room for (``FIONREAD``, Linux), so a stuck reader never holds it. Only C
modules are used: nothing here may cost start-up time.
"""

from __future__ import annotations

import _thread
import fcntl
import os
import select
import stat
import sys
import termios
import time

#: The tee's options that take a value (``--opt VALUE``), as ``otelbridge.cli`` defines them.
VALUE_OPTIONS = frozenset({
    "--exporter", "--protocol", "--endpoint", "--output", "--flush-timeout", "--grace-period",
    "--max-line", "--dialect", "--redact", "--max-attribute-length", "--summary", "--report", "--outputs",
    "--trace-url-template", "--stats-json", "--clock",
})
#: The tee's options without a value.
FLAG_OPTIONS = frozenset({
    "--capture-content", "--no-default-redaction", "--fail-on-export-error", "--no-traceparent",
    "-q", "--quiet", "--deterministic-ids",
})
#: Bytes passed early at most: well within the data pipe (1 MiB), which nobody reads yet.
LIMIT = 512 * 1024
READ = 64 * 1024
PAGE = 4096
#: At most one mark of when a chunk passed each 5 ms (in ns): the decoding process's clock keeps
#: no finer record (``source/arrivals.py``), and a burst of tiny writes keeps a short list.
MARK_EVERY_NS = 5_000_000
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


def options_end(args: list[str]) -> int:
    """Index of the first argument of ``args`` that is not an option of the tee (``--opt=VALUE``
    or ``--opt VALUE`` for :data:`VALUE_OPTIONS`, a :data:`FLAG_OPTIONS` flag); ``len(args)``
    when every one is, one more when the last option lacks its value."""
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, _ = arg.partition("=")
        if name in VALUE_OPTIONS:
            i += 1 if eq else 2
        elif arg in FLAG_OPTIONS:
            i += 1
        else:
            return i
    return i


def plain_tee(args: list[str]) -> bool:
    """True when ``args`` is the tee without a wrapped command: options of the tee, nothing else."""
    return options_end(args) == len(args)


def pipe_room(fd: int, size: int) -> int:
    """Bytes the pipe ``fd`` (of capacity ``size``) takes now without blocking: whole free
    pages, less one kept spare for a partly read first page. Raises ``OSError`` (no
    ``FIONREAD``)."""
    unread = int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
    return max(0, (size - unread) // PAGE - 2) * PAGE


def _fifo(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


class EarlyTee:
    """stdin → stdout and → ``data_w`` (the data pipe), on a thread, until :meth:`stop`.
    ``passed``: bytes passed (and in the data pipe)."""

    def __init__(self) -> None:
        self.data_r, self.data_w = os.pipe()
        try:
            fcntl.fcntl(self.data_w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
            capacity = fcntl.fcntl(self.data_w, F_GETPIPE_SZ)
        except OSError:
            capacity = 65536
        self.limit = min(LIMIT, capacity - READ)
        self._out_size = fcntl.fcntl(1, F_GETPIPE_SZ)  # OSError: no early tee
        self.passed = 0
        #: (offset, epoch ns) of chunks as they passed, one each 5 ms at most (for the decoding
        #: process's clock: :mod:`otelbridge.source.arrivals`)
        self.marks: list[tuple[int, int]] = []
        self._stop_r, self._stop_w = os.pipe()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        _thread.start_new_thread(self._run, ())


    def _run(self) -> None:
        buf = bytearray(READ)
        view = memoryview(buf)
        try:
            while self.passed + READ <= self.limit:
                room = pipe_room(1, self._out_size)  # a stuck reader never holds this thread
                if not room:  # stdout is full: wait for its reader (or for stop)
                    if self._stop_r in select.select([self._stop_r], [1], [])[0]:
                        return
                    continue
                if self._stop_r in select.select([0, self._stop_r], [], [])[0]:
                    return
                n = os.readv(0, [view[:min(room, READ)]])
                if n <= 0:
                    return  # the end of input: the tee meets it too
                now = time.time_ns()
                if not self.marks or now - self.marks[-1][1] >= MARK_EVERY_NS:
                    self.marks.append((self.passed, now))
                for fd in (1, self.data_w):  # the stream first; neither can block
                    chunk = view[:n]
                    while chunk:
                        chunk = chunk[os.write(fd, chunk):]
                self.passed += n
        except OSError:
            return  # a reader gone, a read error: the tee meets it itself
        finally:
            view.release()
            self._done.release()

    def stop(self) -> None:
        """Stop and wait for the thread (it finishes the chunk it holds)."""
        os.write(self._stop_w, b"x")
        self._done.acquire()
        os.close(self._stop_r)
        os.close(self._stop_w)


def start(args: list[str]) -> EarlyTee | None:
    """An :class:`EarlyTee` when it can run for ``args`` (see the module doc), else ``None``."""
    if not (hasattr(os, "fork") and sys.platform.startswith("linux") and plain_tee(args)
            and _fifo(0) and _fifo(1)):
        return None
    try:
        return EarlyTee()
    except (OSError, RuntimeError):
        return None
