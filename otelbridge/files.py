"""Files otelbridge writes for its user (the ``--output`` spans, ``--stats-json``, the report
page, the CI job's files): opened without waiting for a FIFO's reader, private (mode 0600)."""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

def open_fd(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """``os.open(path, flags, mode)`` for a file we write, which never waits for a FIFO's reader
    (opening one for writing would: the run's end held until a reader came) — ``OSError``
    ``ENXIO`` "a FIFO nobody reads" instead. The fd returned is blocking."""
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO nobody reads", str(path)) from None
        raise
    os.set_blocking(fd, True)  # non-blocking was for the open alone
    return fd


def open_private(path: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8") -> IO:
    """Open ``path`` for writing (``mode`` ``w``, ``a``, ``wb`` or ``ab``) with permissions
    0600: created so, and an existing regular file tightened to 0600 before it is truncated
    (``w``) or appended to (``a``). FIFOs and character devices (``/dev/stderr``) are left
    as they are; a FIFO that nobody reads is not waited for (``OSError`` ``ENXIO``, "a FIFO
    nobody reads"). Raises ``OSError`` (``PermissionError`` when an existing file is not ours
    to ``chmod``) and ``ValueError`` on another ``mode``."""
    if mode not in ("w", "a", "wb", "ab"):
        raise ValueError(f"open_private mode must be w, a, wb or ab, not {mode!r}")
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    if "a" in mode:
        flags |= os.O_APPEND
    fd = open_fd(path, flags)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if stat.S_IMODE(st.st_mode) & 0o177:
                os.fchmod(fd, 0o600)
            if "w" in mode:
                os.ftruncate(fd, 0)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
    except BaseException:
        os.close(fd)
        raise
