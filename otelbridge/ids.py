"""Trace and span ids for the tracker: random, or deterministic (SPAN-MODEL.md, last section).

Deterministic rule (``--deterministic-ids``, always in ``replay``):

* trace id = first 16 bytes of ``sha256("otelbridge/1/{session_id}/{task_id}")`` for a workflow,
  ``sha256("otelbridge/1/{session_id}")`` for a session;
* span id = first 8 bytes of ``sha256("{trace_id:032x}/{kind}/{key}")``.

With a ``TRACEPARENT`` parent the trace id is the parent's; span ids stay deterministic.
Ids are ints, as OpenTelemetry's ``SpanContext`` holds them; zero is never returned.
"""

from __future__ import annotations

import hashlib
import random


class Ids:
    """Allocates ids. ``deterministic`` switches from random to the sha256 rule."""

    __slots__ = ("deterministic", "_rand")

    def __init__(self, deterministic: bool = False) -> None:
        self.deterministic = deterministic
        self._rand = random.SystemRandom() if not deterministic else None

    def trace_id(self, session_id: str | None, task_id: str | None = None) -> int:
        """A trace id for a workflow run (``task_id`` given) or a session."""
        if self._rand is not None:
            return self._nonzero(lambda: self._rand.getrandbits(128))
        seed = f"otelbridge/1/{session_id or ''}" + (f"/{task_id}" if task_id is not None else "")
        return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:16], "big") or 1

    def span_id(self, trace_id: int, kind: str, key: str) -> int:
        """A span id for the span of ``kind`` (``workflow``, ``phase``, ``agent``, ...) and ``key``
        (its identity within the trace) in trace ``trace_id``."""
        if self._rand is not None:
            return self._nonzero(lambda: self._rand.getrandbits(64))
        seed = f"{trace_id:032x}/{kind}/{key}"
        return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big") or 1

    @staticmethod
    def _nonzero(draw) -> int:
        value = 0
        while value == 0:
            value = draw()
        return value
