"""Trace and span ids for the tracker: random, or deterministic (docs/span-model.md, last section).

Deterministic rule (``--deterministic-ids``, always in ``replay``):

* trace id = first 16 bytes of ``sha256("otelbridge/1/{session_id}/{task_id}")`` for a workflow,
  ``sha256("otelbridge/1/{session_id}")`` for a session;
* span id = first 8 bytes of ``sha256("{trace_id:032x}/{kind}/{key}")``.

With a ``salt`` (``follow``: a random word kept with the file's position, so that the lines a
restart reads again make the same spans, and another file's others)
both hashes begin with it: ``otelbridge/1/{salt}/…``, ``{salt}/{trace_id:032x}/…`` (a trace id
given from outside, a ``TRACEPARENT``'s or a continued session's, still gets other span ids).

With a ``TRACEPARENT`` parent the trace id is the parent's; span ids stay deterministic.
Ids are ints, as OpenTelemetry's ``SpanContext`` holds them; zero is never returned.
"""

from __future__ import annotations

import hashlib
import os


class _Urandom:
    """Random ints from ``os.urandom``, read 4 KiB at a time (one system call per 512 span
    ids instead of one each) and split into 64-bit words once. Thread-safe without a lock
    (``list.pop`` is atomic; a refill race discards fresh words, never repeats one); a forked
    child starts with no words, so it never repeats its parent's ids."""

    SIZE = 4096

    def __init__(self) -> None:
        self._words: list[int] = []
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._words = []

    def _word(self) -> int:
        try:
            return self._words.pop()
        except IndexError:
            self._words = words = memoryview(os.urandom(self.SIZE)).cast("Q").tolist()
            return words.pop()

    def nonzero(self, nbytes: int) -> int:
        """A uniformly random ``nbytes``-byte unsigned int other than zero (``nbytes`` a
        multiple of 8)."""
        while True:
            value = self._word()
            for _ in range(nbytes // 8 - 1):
                value = value << 64 | self._word()
            if value:
                return value


_URANDOM = _Urandom()


class Ids:
    """Allocates ids. ``deterministic`` switches from random (``os.urandom``) to the sha256
    rule, ``salt`` (a word) into its trace ids."""

    __slots__ = ("deterministic", "_rand", "_trace", "_prefix", "_seed", "_salt")

    def __init__(self, deterministic: bool = False, salt: str = "") -> None:
        self.deterministic = deterministic
        self._seed = f"otelbridge/1/{salt}/" if salt else "otelbridge/1/"
        self._salt = f"{salt}/" if salt else ""
        self._rand = _URANDOM if not deterministic else None
        #: the last trace's id and the sha256 state of ``"{trace_id:032x}/"`` (a trace's span
        #: ids come together: each then hashes only its ``kind/key``)
        self._trace = -1
        self._prefix = hashlib.sha256()

    def trace_id(self, session_id: str | None, task_id: str | None = None) -> int:
        """A trace id for a workflow run (``task_id`` given) or a session."""
        if self._rand is not None:
            return self._rand.nonzero(16)
        seed = self._seed + (session_id or "") + (f"/{task_id}" if task_id is not None else "")
        return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:16], "big") or 1

    def unique_trace_id(self) -> int:
        """A random trace id in either mode: for a root that no stream id names (the wrapper's
        run of a command, whose command line every run of it shares)."""
        return _URANDOM.nonzero(16)

    def span_id(self, trace_id: int, kind: str, key: str) -> int:
        """A span id for the span of ``kind`` (``workflow``, ``phase``, ``agent``, ...) and ``key``
        (its identity within the trace) in trace ``trace_id``."""
        if self._rand is not None:
            return self._rand.nonzero(8)
        if trace_id != self._trace:
            self._trace, self._prefix = trace_id, hashlib.sha256(f"{self._salt}{trace_id:032x}/".encode())
        h = self._prefix.copy()
        h.update(f"{kind}/{key}".encode())
        return int.from_bytes(h.digest()[:8], "big") or 1
