"""A tracker :class:`Context` for unit tests: records collected in a list, deterministic ids,
the stream clock, and grace timers that fire only when the test says so."""

from __future__ import annotations

from dataclasses import dataclass, field

from otelbridge.clock import Clock
from otelbridge.events import SpanRecord
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context


@dataclass
class Timer:
    delay: float
    fn: object
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class Timers:
    """``call_later`` stand-in: remembers each timer; :meth:`fire` runs the live ones."""

    pending: list[Timer] = field(default_factory=list)

    def __call__(self, delay: float, fn) -> Timer:
        timer = Timer(delay, fn)
        self.pending.append(timer)
        return timer

    def fire(self) -> int:
        live = [t for t in self.pending if not t.cancelled]
        self.pending = []
        for t in live:
            t.fn()
        return len(live)


def make_ctx(*, wall_ns: int = 1_800_000_000 * 10**9, **kw) -> tuple[Context, list[SpanRecord], Timers]:
    records: list[SpanRecord] = []
    timers = Timers()
    ctx = Context(
        emit=records.append,
        ids=Ids(deterministic=True),
        clock=Clock("auto", wall=lambda: wall_ns),
        stats=Stats(),
        call_later=timers,
        **kw,
    )
    return ctx, records, timers


def by_name(records: list[SpanRecord]) -> dict[str, list[SpanRecord]]:
    out: dict[str, list[SpanRecord]] = {}
    for r in records:
        out.setdefault(r.name, []).append(r)
    return out
