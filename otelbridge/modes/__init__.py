"""One runner per mode, each wiring a source to a :class:`otelbridge.pipeline.Pipeline`:
:mod:`.live` (the tee's decoding process: pipe and wrapper modes), :mod:`.replay` (recordings),
:mod:`.follow` (a file a CLI writes)."""

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
