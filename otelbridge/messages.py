"""Our own lines on stderr (stdout belongs to the stream alone)."""

from __future__ import annotations

import contextlib
import logging
import select
import sys
from collections.abc import Iterator

from .escape import one_line

#: Seconds a line of ours waits for room on stderr: a pipe nobody reads must not hold the run
#: (past its flush deadline, or forever once it has ended).
ROOM_WAIT_S = 1.0
#: Characters of a line of ours at most (a value echoed from the environment can be long).
LINE_MAX = 2000


def say(message: str) -> None:
    """One line of ours on stderr, ``otelbridge: MESSAGE``; a closed stderr, or one with no room
    for :data:`ROOM_WAIT_S`, costs the message only."""
    try:
        if not _room(sys.stderr):
            return
        line = one_line(message)
        if len(line) > LINE_MAX:
            line = line[:LINE_MAX - 1] + "…"
        sys.stderr.write(f"otelbridge: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _room(stream) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``stream`` takes a line now or within :data:`ROOM_WAIT_S` (a pipe: at least
    ``PIPE_BUF`` bytes free, so a short line is written whole without blocking)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return True  # not a file (a test's buffer): it never blocks
    try:
        return bool(select.select([], [fd], [], ROOM_WAIT_S)[1])
    except (OSError, ValueError):
        return True


@contextlib.contextmanager
def silenced(*loggers: str) -> Iterator[None]:
    """The library ``loggers`` off for the duration: where we say a value's problem ourselves,
    in one line that names the variable, instead of their warnings, which quote the value."""
    quiet = [logging.getLogger(name) for name in loggers]
    for logger in quiet:
        logger.disabled = True
    try:
        yield
    finally:
        for logger in quiet:
            logger.disabled = False
