"""The one "finish by" of a run's end: created once, at the end of input, from
``--flush-timeout``, and passed to each stage's close or flush (decoding, ending the spans, the
exporters' shutdown), which each take what :meth:`Deadline.remaining` says."""

from __future__ import annotations

import time
from typing import NamedTuple


#: Decoding what the input's end left waiting gets at least this long (seconds), whatever
#: ``--flush-timeout`` says (0: do not wait for a collector): the last lines hold the result, and
#: the job outputs and summary come from it.
DECODE_FLOOR_S = 1.0
#: What decoding's share leaves is not decoded but for its last :data:`TAIL_LINES` lines, at
#: most this many bytes (1 MiB: a result line that long still fits): a run's last lines, its
#: result among them (the job outputs come from it). The tee writes them after the share, the
#: decoding process decodes them at the end, for :data:`TAIL_S` at most.
TAIL_BYTES = 1024 * 1024
TAIL_LINES = 16
#: Seconds the decoding process gives those last lines (half the tee's margin for its end).
TAIL_S = 1.0


class Deadline(NamedTuple):
    """An instant on ``time.monotonic()`` (seconds). On Linux that is ``CLOCK_MONOTONIC``, one
    clock for every process of the machine, so :attr:`at` may cross a pipe to the decoding
    process as it is. (A ``NamedTuple``: immutable, and made far faster at import than a
    dataclass.)"""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """``seconds`` from now."""
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left, never below 0."""
        return max(0.0, self.at - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def for_decoding(self) -> Deadline:
        """Decoding's share of the end: half of what is left from now (the rest is for ending
        the spans and the flush), but at least :data:`DECODE_FLOOR_S`, past the deadline if
        need be (the flush then gets nothing)."""
        now = time.monotonic()
        return Deadline(now + max(max(0.0, self.at - now) / 2, DECODE_FLOOR_S))

    def later_by(self, seconds: float) -> Deadline:
        return Deadline(self.at + seconds)
