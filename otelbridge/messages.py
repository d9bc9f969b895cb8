"""Our own lines on stderr (stdout belongs to the stream alone)."""

from __future__ import annotations

import sys

from .escape import inert_in_logs


def say(message: str) -> None:
    """One line of ours on stderr, ``otelbridge: MESSAGE``; a closed stderr costs the message
    only."""
    try:
        sys.stderr.write(f"otelbridge: {inert_in_logs(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
