"""The event loop of the modes that run one (the tee and its decoding process, follow): uvloop
where available. Its own module so that ``replay``, which runs none, imports neither."""

from __future__ import annotations

import asyncio

try:  # imported with the tee, before the fork: the decoding process shares it, imports it not again
    import uvloop
except ImportError:  # not on Windows
    uvloop = None


def install_loop() -> None:
    """uvloop where available (not on Windows), else the standard asyncio loop."""
    if uvloop is not None:
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
