"""Feeding otelbridge a live pipe in real time: parts of the stream written with pauses between
them, so grace windows open and close by the wall clock as they do in production."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Callable

from tests.conftest import ROOT, clean_env


def feed_live(args: list[str], parts: list[tuple[float | Callable[[], object], bytes]], close_after_s: float):
    """Run ``python -m otelbridge ARGS``; write each ``(at, data)`` of ``parts`` at ``at`` seconds
    after the start, or, when ``at`` is a callable, once ``at()`` has returned (a condition the
    test waits for, e.g. spans at a receiver, so the order does not depend on machine load);
    close stdin at ``close_after_s`` (or right after the last part, whichever is later).
    Spans leave 0.1 s after they end (``OTEL_BSP_SCHEDULE_DELAY``, not the 1 s default), so a
    condition waiting for them at a receiver waits no longer than that.
    Returns (returncode, stdout, stderr). Bounded: the process must end within 30 s."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbridge", *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=clean_env(OTEL_BSP_SCHEDULE_DELAY="100"), cwd=ROOT,
    )
    started = time.monotonic()
    try:
        for at, data in [*parts, (close_after_s, b"")]:
            if callable(at):
                at()
            else:
                time.sleep(max(0.0, at - (time.monotonic() - started)))
            proc.stdin.write(data)
            proc.stdin.flush()
        out, err = proc.communicate(timeout=30)  # closes stdin: end of input
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err
