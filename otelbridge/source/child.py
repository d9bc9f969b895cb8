"""Wrapper mode: ``otelbridge -- CMD ARGS...`` runs CMD with stdin and stderr inherited and its
stdout on a pipe that the tee reads.

Exit status: the child's, or ``128 + N`` when a signal N killed it (the shell's convention);
127 when CMD cannot be found, 126 when it cannot be executed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence


class ChildError(Exception):
    """CMD could not be started; ``status`` is the exit status to use (126 or 127)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def exit_status(returncode: int) -> int:
    """An ``asyncio`` return code (negative for a signal) → a shell exit status."""
    return 128 - returncode if returncode < 0 else returncode


async def spawn(
    argv: Sequence[str], env: Mapping[str, str] | None = None
) -> tuple[asyncio.subprocess.Process, int]:
    """Start ``argv`` with its stdout on a new pipe; return the process and the pipe's read fd.

    Raises :class:`ChildError` when the command cannot be started.
    """
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=None, stdout=write_fd, stderr=None, env=dict(env) if env else None
        )
    except FileNotFoundError:
        os.close(read_fd)
        raise ChildError(f"cannot run {argv[0]!r}: command not found", 127) from None
    except PermissionError:
        os.close(read_fd)
        raise ChildError(f"cannot run {argv[0]!r}: permission denied", 126) from None
    except OSError as exc:
        os.close(read_fd)
        raise ChildError(f"cannot run {argv[0]!r}: {exc.strerror}", 126) from None
    finally:
        os.close(write_fd)
    return proc, read_fd
