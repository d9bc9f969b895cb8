"""Our own lines on stderr (stdout belongs to the stream alone)."""

from __future__ import annotations

import sys

from .escape import one_line


def say(message: str) -> None:
    """One line of ours on stderr, ``otelbridge: MESSAGE``; a closed stderr costs the message
    only."""
    try:
        sys.stderr.write(f"otelbridge: {one_line(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
