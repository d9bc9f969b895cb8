"""One bound on everything the tracker holds open: the :class:`StateBudget`.

Every open item (a session, a workflow run with its agents, a turn's tool call, a sub-agent, a
background task, the records held while the clock is pending) is charged an approximate weight
in bytes when it opens or grows and released when it ends. Items are kept in order of last
activity; when the sum passes the limit, :meth:`StateBudget.settle` ends the least recently
active items first (each item's own ``end(reason)``: a part ends it as interrupted, its children
with it) until the sum is within the limit again. What is ended this way is counted in
``stats.state_budget_ended`` (spans ended early) and named on the stats line.

Weights are estimates of resident bytes (CPython objects, held raw strings at one byte a
character), calibrated against the whole process tree in ``bench/state.py``; the default limit
keeps the tree under 256 MB whatever the stream (bench/RESULTS.md "State budget").
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

from ..events import SpanEvent, SpanRecord
from ..stats import Stats

#: The default limit in estimated bytes (bench/RESULTS.md "State budget").
DEFAULT_STATE_BYTES = 16 * 1024 * 1024
#: ``otelbridge.reason`` on spans the budget ended early.
REASON_STATE_BUDGET = "state budget full"

#: Estimated resident bytes of one open item of each kind, before its held strings (a slots
#: struct, its ids, the dict and registry entries that point to it, its budget entry).
SESSION_BYTES = 4_096
RUN_BYTES = 2_048
ITEM_BYTES = 1_024
#: one remembered key (closed ids, tool span ids, hints, workflow links)
REF_BYTES = 160

End = Callable[[str], None]


def text_bytes(*values: Any) -> int:
    """Estimated bytes of the strings among ``values`` (``None`` and others count 0)."""
    try:  # strings and ``None``, the common case: one C-level pass
        return len("".join(filter(None, values)))
    except TypeError:
        pass
    n = 0
    for v in values:
        if type(v) is str:
            n += len(v)
    return n


class StateBudget:
    """Open items by key (any hashable), least recently active first, with their weights.

    ``charge(key, weight, end)`` opens or re-weighs ``key`` and makes it the most recently
    active (``reweigh`` the same for a key already open: False when it is not; with
    ``touch=False`` it keeps its place); ``touch`` only makes it the most recent; ``release`` forgets it (the item ended on its own;
    unknown keys are ignored). :meth:`settle` ends items while over ``limit``. ``end`` must end
    the item (and release what it charged); it is called once, after the item left the budget.
    """

    __slots__ = ("limit", "stats", "used", "_items", "_settling")

    def __init__(self, stats: Stats, limit: int = DEFAULT_STATE_BYTES) -> None:
        self.limit = limit
        self.stats = stats
        self.used = 0
        self._items: OrderedDict[Hashable, tuple[int, End]] = OrderedDict()
        self._settling = False

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def charge(self, key: Hashable, weight: int, end: End) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.used -= old[0]
        self._items[key] = (weight, end)
        self.used += weight

    def reweigh(self, key: Hashable, weight: int, *, touch: bool = True) -> bool:
        old = self._items.get(key)
        if old is None:
            return False
        self.used += weight - old[0]
        self._items[key] = (weight, old[1])
        if touch:
            self._items.move_to_end(key)
        return True

    def touch(self, key: Hashable) -> None:
        if key in self._items:
            self._items.move_to_end(key)

    def release(self, key: Hashable) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.used -= old[0]

    def oldest(self) -> Hashable | None:
        """The least recently active key, or ``None`` when nothing is open."""
        return next(iter(self._items), None)

    def settle(self) -> int:
        """End the least recently active items until ``used <= limit``. Returns how many items
        were ended. Called between events (never while a part is inside a handler)."""
        if self._settling or self.used <= self.limit:
            return 0
        self._settling = True
        ended = 0
        try:
            while self.used > self.limit and self._items:
                _, (weight, end) = self._items.popitem(last=False)
                self.used -= weight
                ended += 1
                end(REASON_STATE_BUDGET)
        finally:
            self._settling = False
        return ended


@contextmanager
def interrupting(ctx: Any, reason: str) -> Iterator[None]:
    """While inside, every record ``ctx.emit`` gets was ended early by ``reason``: it carries an
    ``interrupted`` event with ``otelbridge.reason`` at its end (unless it has one already) and
    is counted in ``ctx.stats.state_budget_ended``."""
    emit = ctx.emit
    stats = ctx.stats

    def cut(rec: SpanRecord) -> None:
        for ev in rec.events:
            if ev.name == "interrupted" and ev.attributes.get("otelbridge.reason") == reason:
                break
        else:
            rec.events.append(SpanEvent("interrupted", rec.end_ns, {"otelbridge.reason": reason}))
        stats.state_budget_ended += 1
        emit(rec)

    ctx.emit = cut
    try:
        yield
    finally:
        ctx.emit = emit
