"""The tee: read a fd, write every byte to the stream fd at once, then hand the chunk on.

Two ways to move the bytes, same behaviour:

* **zero-copy** (Linux, input a pipe, output a pipe or regular file): ``tee(2)`` (through
  ``ctypes``) duplicates what waits in the input pipe into a second pipe without consuming it,
  and ``os.splice`` moves the same bytes input → output inside the kernel. The second pipe is
  the decoding process's data pipe (``feed.fd``, :mod:`otelbridge.source.feed`: the bytes never
  enter this process), or, with no decoding process, a private pipe read back into the reused buffer
  for ``on_chunk``. Measured ≈ 0.8–1.0× GNU tee (bench/RESULTS.md).
* **plain** (everything else: macOS, Windows, terminals, ``>>`` files where ``splice`` refuses
  ``O_APPEND``): ``os.readv`` into one reused 1 MiB ``bytearray`` (no allocation per chunk — the
  measured cost of a Python tee is allocation, not syscalls) and ``os.write`` before anything
  else looks at the bytes. A zero-copy tee that meets ``EINVAL`` switches to this for good.

With a ``feed`` (:class:`Feed`: the decoding process's pipe, :class:`otelbridge.source.feed.DecoderFeed`)
the chunk goes there instead of to ``on_chunk``: by ``tee(2)`` straight into ``feed.fd`` while
the feed is :meth:`~Feed.direct` and takes it at once, else read by hand, passed through, and
given to :meth:`Feed.chunk`, which never waits either (it queues or skips). A regular file as
the input has no writer to keep up with: while the feed keeps a backlog the tee reads no more of
it, so every line of ``otelbridge < run.jsonl`` is decoded (the output then goes at the decoding
speed), unless the decoding process takes nothing for :data:`HOLD_STALL_MS`.

The copy runs on a thread of its own (:meth:`Tee.run`): it waits in ``poll`` for the input (a
regular file or ``/dev/null`` is always ready), for the output's room while a chunk waits for
it, for the feed's room while the feed keeps a backlog, and for :meth:`Tee.stop`. A write then
costs the wake-up and the copy's own system calls; the event loop, on the main thread, keeps
signals and the wrapped command. No write into a pipe blocks (``splice`` is non-blocking, a
plain read takes no more than the output pipe has room for), so a stuck reader never keeps
:meth:`Tee.stop` from ending the run; a socket or a terminal as the output can still hold a
plain write.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import fcntl
import os
import select
import stat
import sys
import threading
from collections.abc import Callable
from typing import Protocol

from ..messages import say
from ..stats import Stats
from . import CHUNK
from .early import PAGE, pipe_room

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)

#: How the tee ended.
EOF, EPIPE, STOPPED, READ_ERROR = "eof", "epipe", "stopped", "read-error"
#: The output refused the stream for another reason than a gone reader (ENOSPC, EIO, EFBIG):
#: :attr:`Tee.write_error` says which.
WRITE_ERROR = "write-error"
#: A step's result while the output is full (zero-copy path): wait until it is writable.
WAIT = "wait"
_NONBLOCK = getattr(os, "SPLICE_F_NONBLOCK", 2)
#: A file input waits for the decoding process at most this long (ms) without it taking a byte
#: (a set-up on a slow machine takes a second or two); then the stream goes on without waiting.
HOLD_STALL_MS = 5000
#: The plain path's first read (bytes): a pipe's default capacity; the buffer grows 4× a filled read.
FIRST_READ = 64 * 1024


def _is(fd: int, *tests: Callable[[int], bool]) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return any(t(mode) for t in tests)


def input_over(fd: int) -> bool:
    """True when reading ``fd`` can only meet its end, now: ``/dev/null``, a regular file read
    to its size, a pipe whose writers are gone with nothing left in it (``POLLHUP`` without
    ``POLLIN``). Anything else (a terminal, a socket, a pipe still open) may bring bytes: False."""
    try:
        st = os.fstat(fd)
        if stat.S_ISCHR(st.st_mode):
            return st.st_rdev == os.stat(os.devnull).st_rdev
        if stat.S_ISREG(st.st_mode):
            return st.st_size <= os.lseek(fd, 0, os.SEEK_CUR)
        if stat.S_ISFIFO(st.st_mode):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            events = poller.poll(0)
            return bool(events) and events[0][1] & (select.POLLIN | select.POLLHUP) == select.POLLHUP
    except (OSError, AttributeError):  # no poll (Windows), an fd that cannot seek
        pass
    return False


def widen_pipe(fd: int, size: int = CHUNK) -> None:
    """Best effort: raise a pipe's capacity (fewer, larger reads and writes). Linux only."""
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, _F_SETPIPE_SZ, size)
    except OSError:
        pass


def write_all(fd: int, data: memoryview) -> None:
    """Write all of ``data`` to ``fd``; waits when ``fd`` is non-blocking and full.

    Raises ``BrokenPipeError`` when the reader has gone.
    """
    while data:
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        except InterruptedError:
            continue
        data = data[written:]


def _load_tee() -> Callable[[int, int, int, int], int] | None:
    """libc's ``tee(2)`` as a ctypes function, or ``None`` where it (or ``os.splice``) is missing."""
    if not sys.platform.startswith("linux") or not hasattr(os, "splice"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).tee
    except (OSError, AttributeError):
        return None
    # no argtypes: the fds pass as C ints, the length and flags as the ctypes values made once
    # below (checking argtypes on every call is most of a call's cost)
    fn.restype = ctypes.c_ssize_t
    return fn


_TEE = _load_tee()
_TEE_NONBLOCK, _TEE_BLOCK = ctypes.c_uint(_NONBLOCK), ctypes.c_uint(0)


def zero_copy_possible(fd_in: int, fd_out: int) -> bool:
    """True when the zero-copy path can run: Linux ``tee(2)``/``splice``, input a pipe, output a
    pipe or regular file."""
    return (
        _TEE is not None
        and _is(fd_in, stat.S_ISFIFO)
        and _is(fd_out, stat.S_ISFIFO, stat.S_ISREG)
    )


class Feed(Protocol):
    """Where the tee's chunks go when decoding is in another process (see the module doc)."""

    #: a non-blocking pipe that ``tee(2)`` may fill directly
    fd: int

    def direct(self) -> bool:
        """True when the next chunk may go straight into :attr:`fd` (nothing queued before it)."""

    def passing(self) -> None:
        """The next chunk passes now and goes straight into :attr:`fd` (said before it does)."""

    def fed(self, n: int) -> None:
        """``n`` more bytes went into :attr:`fd` by ``tee(2)``."""

    def chunk(self, buf: bytearray, n: int) -> None:
        """``buf[:n]`` was passed through by hand: take it without waiting."""

    def waiting_on(self) -> int | None:
        """The pipe whose room what waits needs (the tee then watches it for room); ``None``
        when nothing waits."""

    def drain(self) -> None:
        """Write what waits, as far as the pipes take it now."""


class Tee:
    """Copies ``fd_in`` to ``fd_out`` and calls ``on_chunk(buf, n)`` after each write — or, with
    a ``feed``, hands the same bytes to it (see the module doc).

    :meth:`run` returns one of :data:`EOF`, :data:`EPIPE` (``fd_out``'s reader is gone),
    :data:`STOPPED` (:meth:`stop` was called), :data:`READ_ERROR` or :data:`WRITE_ERROR`. ``on_chunk`` must not raise
    (the caller guards it); the passthrough never depends on it. ``zero_copy``: ``None`` picks
    the zero-copy path where :func:`zero_copy_possible`, ``False`` forces plain read/write.
    ``mode`` tells which path ran (``"zero-copy"`` or ``"plain"``).
    """

    def __init__(
        self,
        fd_in: int,
        fd_out: int,
        on_chunk: Callable[[bytearray, int], None],
        stats: Stats,
        chunk: int = CHUNK,
        zero_copy: bool | None = None,
        feed: Feed | None = None,
    ) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.on_chunk = on_chunk if feed is None else feed.chunk
        self.feed = feed
        self.stats = stats
        self._size = chunk
        #: the chunk buffer: empty until a read needs it, then grown (to at most ``chunk``) as
        #: reads fill it: a CLI's writes are small, and the zero-copy path hands most chunks on
        #: without it (a bytearray's pages are all written when it is made)
        self.buf = bytearray()
        self.view = memoryview(self.buf)
        self.zero_copy = zero_copy
        self.mode = "plain"
        self._copy: tuple[int, int] | None = None  # (read fd, write fd) of the private pipe
        self._hand = True  # the current chunk is in ``buf`` (not only in the feed's pipe)
        self._left = 0  # bytes of the current chunk not yet spliced to the output
        self._out_size = 0  # the output pipe's capacity (plain path), 0 when not a pipe
        self._wake: tuple[int, int] | None = None  # (read, write): stop() wakes the copy's poll
        self._stopped = False
        #: why the output refused the stream, when :meth:`run` returned :data:`WRITE_ERROR`
        self.write_error: OSError | None = None

    def _write_failed(self, exc: OSError) -> str:
        """:data:`EPIPE` when the reader is gone, else :data:`WRITE_ERROR` (kept)."""
        if exc.errno == errno.EPIPE:
            return EPIPE
        self.write_error = exc
        return WRITE_ERROR

    def stop(self) -> None:
        """End the copy after the current chunk (called on the event loop's thread)."""
        self._stopped = True
        if self._wake is not None:
            try:
                os.write(self._wake[1], b"x")
            except OSError:  # the copy has ended and closed it
                pass

    # -- plain read/write

    def _step_plain(self, writable: bool = False) -> str | None:
        """Read, write and hand on one chunk; a result string ends the copy. Into a pipe, no
        more is read than it takes now, so that the write never blocks: :data:`WAIT` while
        it is full (the caller waits for its room and calls again with ``writable``: ``poll``
        saw a free page)."""
        view = self.view or self._grow(FIRST_READ)
        if self._out_size:
            try:
                room = pipe_room(self.fd_out, self._out_size)
            except OSError:
                room = len(view)
            if not room:
                if not writable:
                    return WAIT
                room = PAGE  # a page fits in the free one poll saw (pipe_room keeps a margin)
            view = view[:room]
        try:
            n = os.readv(self.fd_in, [view])
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return READ_ERROR
        if n == 0:
            return EOF
        try:
            write_all(self.fd_out, self.view[:n])
        except OSError as exc:  # BrokenPipeError, a full disk, ...
            return self._write_failed(exc)
        self.stats.bytes += n
        self._hand = True  # in ``buf``, handed to the feed: the copy loop looks at what waits
        self.on_chunk(self.buf, n)
        if n == len(view) == len(self.buf) < self._size:  # filled: larger reads from now on
            self._grow(4 * n)
        return None

    def _grow(self, size: int) -> memoryview:
        """A new buffer of ``size`` bytes (at most the chunk size); the old one's bytes were handed on."""
        self.buf = bytearray(min(size, self._size))
        self.view = memoryview(self.buf)
        return self.view

    # -- zero-copy: tee(2) + splice, then read the private copy

    def _open_copy(self) -> None:
        r, w = os.pipe2(os.O_CLOEXEC)
        widen_pipe(w, self._size)
        try:
            cap = fcntl.fcntl(w, _F_GETPIPE_SZ)
        except OSError:
            cap = 65536
        self._span = ctypes.c_size_t(min(cap, self._size))  # converted once, not per call
        self._copy = (r, w)
        self.mode = "zero-copy"

    def _close_copy(self) -> None:
        if self._copy is not None:
            for fd in self._copy:
                os.close(fd)
            self._copy = None
        self.mode = "plain"

    def _step_zero_copy(self) -> str | None:
        copy_r, copy_w = self._copy  # type: ignore[misc]
        feed = self.feed
        if feed is not None and feed.direct():  # straight into the decoding process's pipe
            feed.passing()
            n = _TEE(self.fd_in, feed.fd, self._span, _TEE_NONBLOCK)  # type: ignore[misc]
            if n > 0:
                feed.fed(n)
                self._chunk = self._left = n
                self._hand = False
                return self._push()
            if n == 0:
                return EOF
            err = ctypes.get_errno()
            if err == errno.EINTR:
                return None
            if err == errno.EINVAL:
                self._close_copy()
                return self._step_plain()
            # EAGAIN: the feed is full (the input is readable); EPIPE: its reader is gone —
            # the private copy below hands the chunk to feed.chunk, which decides
        n = _TEE(self.fd_in, copy_w, self._span, _TEE_BLOCK)  # type: ignore[misc]
        if n < 0:
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.EINTR):
                return None
            if err == errno.EINVAL:
                self._close_copy()
                return self._step_plain()
            return READ_ERROR
        if n == 0:
            return EOF  # readable and nothing to duplicate: every writer has gone
        got = 0
        view = self.view if len(self.view) >= n else self._grow(self._size)
        while got < n:  # the copy is already in the private pipe: these reads never wait
            step = os.readv(copy_r, [view[got:n]])
            if step <= 0:
                return READ_ERROR
            got += step
        self._chunk = self._left = n
        self._hand = True
        return self._push()

    def _push(self) -> str | None:
        """Splice the rest of the current chunk to the output without blocking: :data:`WAIT`
        when the output is full (the caller waits for its room and calls again), so a stuck
        reader never keeps :meth:`stop` from ending the run."""
        n = self._chunk
        try:
            while self._left:
                try:
                    self._left -= os.splice(self.fd_in, self.fd_out, self._left, flags=_NONBLOCK)
                except InterruptedError:
                    pass
                except BlockingIOError:
                    return WAIT
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                return self._write_failed(exc)
            # splice refuses this output (an O_APPEND file, say): finish by hand, then go plain
            done = n - self._left
            if len(self.view) < n:
                self._grow(self._size)
            while self._left:
                step = os.readv(self.fd_in, [self.view[n - self._left:n]])
                if step <= 0:
                    return READ_ERROR
                self._left -= step
            try:
                write_all(self.fd_out, self.view[done:n])
            except OSError as exc:
                return self._write_failed(exc)
            self._close_copy()
        self.stats.bytes += n
        if self._hand:  # read into buf (else tee(2) put it into the feed's pipe already)
            self.on_chunk(self.buf, n)
        return None

    # -- driving

    def _step(self) -> str | None:
        return self._step_plain() if self._copy is None else self._step_zero_copy()

    async def run(self) -> str:
        """Copy until the end (see the class doc for the result), on a thread of its own: the
        event loop stays free for signals and the wrapped command, and each write costs one
        ``poll`` and the copy's own system calls, not a pass through the loop."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()

        def settle(result: str | None, exc: BaseException | None) -> None:
            if exc is not None:
                done.set_exception(exc)
            else:
                done.set_result(result)  # type: ignore[arg-type]

        def copy() -> None:
            try:
                result, exc = self._copy_all(), None
            except BaseException as err:  # noqa: BLE001 - raised again by run, on the loop
                result, exc = None, err
            loop.call_soon_threadsafe(settle, result, exc)

        self._wake = os.pipe()
        try:
            try:
                threading.Thread(target=copy, name="otelbridge-tee", daemon=True).start()
            except RuntimeError:  # no thread to be had (a process limit): the stream still passes
                say("could not start a thread for the copy; copying on the main thread "
                    "(signals take effect at the end of input)")
                return self._copy_all()
            return await done
        finally:
            for fd in self._wake:
                os.close(fd)
            self._wake = None

    def _copy_all(self) -> str:
        widen_pipe(self.fd_in)
        widen_pipe(self.fd_out)
        if _is(self.fd_out, stat.S_ISFIFO):
            try:
                self._out_size = fcntl.fcntl(self.fd_out, _F_GETPIPE_SZ)
            except OSError:  # no F_GETPIPE_SZ: plain writes may block
                pass
        try:
            if self.zero_copy is not False and zero_copy_possible(self.fd_in, self.fd_out):
                self._open_copy()
            return self._copy_polled()
        finally:
            self._close_copy()

    def _copy_polled(self) -> str:
        """Wait for the input (or, while a chunk waits for room, the output), the feed's room
        while it keeps a backlog, and :meth:`stop`; copy; again. The usual round (only the
        input ready) runs the fewest steps: at a CLI's pace each round starts with cold caches."""
        feed = self.feed
        fd_in, stop_r = self.fd_in, self._wake[0]  # type: ignore[index]
        poller = select.poll()
        poller.register(stop_r, select.POLLIN)
        poller.register(fd_in, select.POLLIN)
        poll, step = poller.poll, self._step
        if self._stopped:  # stopped before the copy began
            return STOPPED
        waiting = False  # the current chunk waits for the output's room
        feeding: int | None = None  # the feed's pipe watched for room: what it holds waits
        # a file (``otelbridge < run.jsonl``) has no writer to keep up with: while the feed
        # holds a backlog, the input waits for it, so that every line is decoded
        hold = feed is not None and _is(fd_in, stat.S_ISREG)
        held = False  # the input waits until the feed drains
        watched = [True]  # the input is in the poll set: neither waiting nor held

        def watch_input() -> None:
            on = not waiting and not held
            if on != watched[0]:
                if on:
                    poller.register(fd_in, select.POLLIN)
                else:
                    poller.unregister(fd_in)
                watched[0] = on

        while True:
            ready = poll(HOLD_STALL_MS if held else None)
            if not ready:  # held, and the feed took nothing for that long: the stream goes on
                hold = held = False
                watch_input()
                continue
            if len(ready) == 1 and ready[0][0] == fd_in:
                result = step()
                if result is None and not self._hand:
                    continue
            else:
                fds = [fd for fd, _ in ready]
                if stop_r in fds:
                    return STOPPED
                if feeding is not None and feeding in fds:
                    feed.drain()  # type: ignore[union-attr]
                if waiting:  # a chunk spliced in part (zero-copy), or none read yet (plain)
                    if self.fd_out not in fds:
                        result = WAIT
                    else:
                        result = self._push() if self._left else self._step_plain(writable=True)
                else:
                    result = step() if fd_in in fds else None
            if self._stopped:
                return STOPPED
            if result == WAIT:
                if not waiting:
                    waiting = True
                    watch_input()
                    poller.register(self.fd_out, select.POLLOUT)
            elif result is not None:
                return result
            elif waiting:
                poller.unregister(self.fd_out)
                waiting = False
                watch_input()
            if feed is not None:
                wanted = feed.waiting_on()
                if wanted != feeding:
                    if feeding is not None:
                        poller.unregister(feeding)
                    if wanted is not None:
                        poller.register(wanted, select.POLLOUT)
                    feeding = wanted
                if hold and held != (feeding is not None):
                    held = feeding is not None
                    watch_input()
