"""The tee: read a fd, write every byte to the stream fd at once, then hand the chunk on.

Reads go into one reused 1 MiB ``bytearray`` with ``os.readv`` (no allocation per chunk: the
measured cost of a Python tee is allocation, not syscalls) and are written out with ``os.write``
before anything else looks at them. Pipes, sockets and terminals are watched with the event
loop's ``add_reader``; a regular file or a character device such as ``/dev/null`` (which epoll
refuses, and which uvloop's ``connect_read_pipe`` aborts the process on) is read in a plain loop
that yields to the event loop between chunks.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import stat
from collections.abc import Callable

from ..stats import Stats

CHUNK = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)

#: How the tee ended.
EOF, EPIPE, STOPPED, READ_ERROR = "eof", "epipe", "stopped", "read-error"


def pollable(fd: int) -> bool:
    """True when ``fd`` is a FIFO, socket or terminal (the loop can watch it)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


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


class Tee:
    """Copies ``fd_in`` to ``fd_out`` and calls ``on_chunk(buf, n)`` after each write.

    :meth:`run` returns one of :data:`EOF`, :data:`EPIPE` (``fd_out``'s reader is gone),
    :data:`STOPPED` (:meth:`stop` was called) or :data:`READ_ERROR`. ``on_chunk`` must not raise
    (the caller guards it); the passthrough never depends on it.
    """

    def __init__(
        self,
        fd_in: int,
        fd_out: int,
        on_chunk: Callable[[bytearray, int], None],
        stats: Stats,
        chunk: int = CHUNK,
    ) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.on_chunk = on_chunk
        self.stats = stats
        self.buf = bytearray(chunk)
        self.view = memoryview(self.buf)
        self._done: asyncio.Future[str] | None = None
        self._stopped = False

    def stop(self) -> None:
        """End the copy after the current chunk."""
        self._stopped = True
        if self._done is not None and not self._done.done():
            self._done.set_result(STOPPED)

    def _step(self) -> str | None:
        """Read, write and hand on one chunk; a result string ends the copy."""
        try:
            n = os.readv(self.fd_in, [self.buf])
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return READ_ERROR
        if n == 0:
            return EOF
        try:
            write_all(self.fd_out, self.view[:n])
        except BrokenPipeError:
            return EPIPE
        except OSError:
            return EPIPE
        self.stats.bytes += n
        self.on_chunk(self.buf, n)
        return None

    async def run(self) -> str:
        widen_pipe(self.fd_in)
        widen_pipe(self.fd_out)
        if pollable(self.fd_in):
            return await self._run_polled()
        return await self._run_plain()

    async def _run_polled(self) -> str:
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()

        def readable() -> None:
            result = self._step()
            if result is not None and not self._done.done():
                self._done.set_result(result)

        loop.add_reader(self.fd_in, readable)
        try:
            return await self._done
        finally:
            loop.remove_reader(self.fd_in)

    async def _run_plain(self) -> str:
        while not self._stopped:
            result = self._step()
            if result is not None:
                return result
            await asyncio.sleep(0)
        return STOPPED
