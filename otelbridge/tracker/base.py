"""What the tracker's parts share: the :class:`Context`, span refs, bounded registries, the
:class:`Part` protocol and attribute helpers. A leaf: it imports no tracker module, so every part
imports from here and ``tracker/__init__`` imports the parts without a cycle.

Strings are carried raw: the span builder (``otelbridge.spans``) redacts every string whole and
then caps it, span names included.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from ..clock import SKEW_NS, Clock
from ..config import DEFAULT_GRACE_S
from ..events import COUNTS, Event, SpanEvent, SpanRecord, Usage
from ..ids import Ids
from ..stats import Stats
from .budget import ITEM_BYTES, REF_BYTES, StateBudget, interrupting, text_bytes

CallLater = Callable[[float, Callable[[], None]], Any]

#: Span refs remembered per registry (sessions, workflow roots); the oldest are forgotten.
MAX_REFS = 10_000

#: A session span as ``follow``'s offset file keeps it: (session id, trace id, span id, turns,
#: :data:`Counted`, :data:`Said` or ``None``; in memory, :meth:`~.state.Session.cut_counts`).
SessionRef = tuple[str, int, int, int, "float | None", float, "tuple[int, ...] | None", "Said | None", "tuple[tuple[tuple[int, ...], ...], tuple[tuple[str, tuple[int, ...]], ...]] | None"]
#: What a session's ``init`` said: its agent's name, provider, model and CLI version.
Said = tuple["str | None", "str | None", "str | None", "str | None"]
#: What a session's last result counted: its ``total_cost_usd`` and
#: :attr:`~.state.Session.cost_base` (USD on the session's scale; ``None``, ``0.0``: no cost),
#: and its process's tokens as its span counted them (:meth:`~.state.Session.process_tokens`:
#: the ``modelUsage`` counts, then those of the model calls after them; an earlier version kept
#: input and output alone; ``None``: none), by which the first result of a new process is known
#: (:func:`~.results.counted_again`) and the tokens of the span that goes on are its own.
Counted = tuple["float | None", float, "tuple[int, ...] | None"]
NOTHING_COUNTED: Counted = (None, 0.0, None)


def counted_parts(tokens: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A :data:`Counted` token tuple's ``modelUsage`` counts, the calls' after them, and their
    sum (:data:`~otelbridge.events.COUNTS` order; a shorter tuple: the first ones)."""
    n = len(COUNTS)
    usage, after = tokens[:n], tokens[n:2 * n]
    return usage, after, tuple(u + (after[i] if i < len(after) else 0) for i, u in enumerate(usage))


def usage_of(counts: tuple[int, ...]) -> Usage:
    """The :class:`~otelbridge.events.Usage` of ``counts`` (:data:`~otelbridge.events.COUNTS`
    order, as :meth:`~otelbridge.events.Usage.counts` gives them)."""
    return Usage(**dict(zip(COUNTS, counts)))


#: Session events held until a session span takes them, per session and in all (memory bound).
MAX_SESSION_EVENTS = 10_000


def usage_attributes(usage: Usage | None) -> dict[str, int]:
    """``gen_ai.usage.*`` of ``usage`` by docs/span-model.md: for the Anthropic shape
    ``gen_ai.usage.input_tokens`` = input + cache read + cache creation (other shapes as given);
    the cache parts also under their own keys. Absent fields are left out."""
    if usage is None:
        return {}
    pairs = (
        ("gen_ai.usage.input_tokens", usage.gen_ai_input_tokens()),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_creation),
    )
    return {key: value for key, value in pairs if value is not None}


#: Estimated bytes a :class:`Recent` set holds at most (ids are raw strings of up to 64 Ki
#: characters: a count alone does not bound them).
RECENT_BYTES = 4 * 1024 * 1024


def key_bytes(key: Hashable) -> int:
    """Estimated bytes of a remembered key (a string, or a tuple of strings and ``None``)."""
    return REF_BYTES + (text_bytes(*key) if isinstance(key, tuple) else text_bytes(key))


class Recent:
    """A set that remembers at most ``limit`` keys and :data:`RECENT_BYTES` of them (``bytes``:
    their estimated size now), forgetting the oldest first (closed runs, emitted firings: enough
    to recognise late events without growing with the stream)."""

    __slots__ = ("limit", "bytes", "_keys")

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.bytes = 0
        self._keys: OrderedDict[Hashable, int] = OrderedDict()

    def add(self, key: Hashable) -> None:
        if key in self._keys:
            return
        size = self._keys[key] = key_bytes(key)
        self.bytes += size
        while len(self._keys) > self.limit or self.bytes > RECENT_BYTES:
            self.bytes -= self._keys.popitem(last=False)[1]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


def put_attributes(attrs: dict[str, Any], pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Add each ``(key, value)`` of ``pairs`` whose value is not ``None`` to ``attrs`` (raw:
    the span builder redacts and caps every string). Returns ``attrs``."""
    for key, value in pairs:
        if value is not None:
            attrs[key] = value
    return attrs


def span_name(prefix: str, text: str | None, fallback: str) -> str:
    """``"{prefix} {text}"``, or ``"{prefix} {fallback}"`` when ``text`` is empty or blank. Raw:
    the span builder redacts and caps every span name."""
    body = text.strip() if text else ""
    return f"{prefix} {body or fallback}"


class RunBase(msgspec.Struct):
    """What every tracked run (a root span) has: its key, session, ids and first-seen time."""

    key: tuple[str | None, str]
    session_id: str | None
    trace_id: int
    span_id: int
    first_seen_ns: int


R = TypeVar("R", bound=RunBase)


class RunTable(Generic[R]):
    """The open runs of one tracker part by key, and the keys of recently closed ones (events
    for those are late: counted in ``stats.late_events_ignored``).

    Every open run is charged to ``ctx.budget`` with ``weigh(run)`` (estimated bytes, see
    :mod:`.budget`): at :meth:`create`, and again at :meth:`recharge` for each run looked up
    with :meth:`lookup` since (the part calls it after each event). When the budget ends a run,
    ``close(run, reason=...)`` (the part's own closing) ends it: as interrupted when it had not
    ended yet, plainly when it only waited out its grace window (``run.timer`` set)."""

    def __init__(self, ctx: "Context", close: Callable[..., None],
                 weigh: Callable[[R], int]) -> None:
        self.ctx = ctx
        self.open: dict[tuple[str | None, str], R] = {}
        self.closed = Recent()
        self._close = close
        self._weigh = weigh
        self._touched: dict[tuple[str | None, str], None] = {}

    def create(self, key: tuple[str | None, str], trace_key: str, label: str,
               make: Callable[[int], R], trace_id: int | None = None) -> R | None:
        """A new run for ``key`` made by ``make(trace_id)`` (trace id given, else from
        :meth:`Context.root_trace_id` with ``trace_key``), or ``None`` when ``key`` was closed
        already. ``ctx.on_trace(trace_id, label)`` is told."""
        if key in self.closed:
            self.ctx.stats.late_events_ignored += 1
            return None
        if trace_id is None:
            trace_id = self.ctx.root_trace_id(key[0], trace_key)
        run = make(trace_id)
        self.open[key] = run
        self._touched[key] = None
        if self.ctx.on_trace is not None:
            self.ctx.on_trace(trace_id, label)
        return run

    def lookup(self, key: tuple[str | None, str]) -> R | None:
        """The open run of ``key`` (``None`` if none), marked active for :meth:`recharge`."""
        run = self.open.get(key)
        if run is not None:
            self._touched[key] = None
        return run

    def recharge(self) -> None:
        """Charge each run looked up or created since the last call at its weight now, as the
        most recently active."""
        budget = self.ctx.budget
        for key in self._touched:
            run = self.open.get(key)
            if run is not None:
                ident, weight = ("run", id(self), key), self._weigh(run)
                if not budget.reweigh(ident, weight):
                    budget.charge(ident, weight, lambda reason, run=run: self._end_early(run, reason))
        self._touched.clear()

    def _end_early(self, run: R, reason: str) -> None:
        if self.open.get(run.key) is not run:
            return
        if getattr(run, "timer", None) is not None:  # ended; only its grace window was left
            self._close(run)
            return
        with interrupting(self.ctx, reason):
            self._close(run, reason=reason)

    def close(self, run: R) -> None:
        """Forget ``run`` (and its budget charge) and remember its key as closed (its grace
        timer, if any, is cancelled by ``run.timer.cancel()``)."""
        timer = getattr(run, "timer", None)
        if timer is not None:
            try:
                timer.cancel()
            except Exception:
                pass
        self.open.pop(run.key, None)
        self._touched.pop(run.key, None)
        self.closed.add(run.key)
        self.ctx.budget.release(("run", id(self), run.key))


class Parent(msgspec.Struct):
    """A remote parent span (``TRACEPARENT``): its trace id and span id, as ints."""

    trace_id: int
    span_id: int


class SpanRef(msgspec.Struct):
    """Where a span is (or will be): trace id and span id, allocated before the span ends."""

    trace_id: int
    span_id: int


class Context(msgspec.Struct):
    """What every part of the tracker shares.

    ``emit`` receives each finished record (the span builder, the summary, tests);
    ``call_later(delay_s, fn)`` schedules real-time work such as a grace window's end (``None``
    in replay: windows then close at :meth:`Tracker.finish`); ``parent`` is the ``TRACEPARENT``
    span, if any.
    """

    emit: Callable[[SpanRecord], None]
    ids: Ids
    clock: Clock
    stats: Stats
    call_later: CallLater | None = None
    grace_s: float = DEFAULT_GRACE_S
    parent: Parent | None = None
    capture_content: bool = False
    #: called with (trace_id, label) when a new trace's root is first known (trace links)
    on_trace: Callable[[int, str], None] | None = None
    #: called with each model output, tool call's arguments and tool output (``(text,
    #: is_json)``) as its line arrives: what a secret shows there is known before any span
    #: holding it is built (a tool's span ends before its call's message's span), also where
    #: it is not exported (a command's or a file's secret, then a status description that
    #: repeats it)
    learn: Callable[[str, bool], None] | None = None
    #: called with a tool's output that is a secret bare (its command reads one:
    #: :mod:`otelbridge.secret_commands`): its values are hidden wherever they come again
    remember: Callable[[str], None] | None = None
    #: the wrapper's ``run {cmd}`` span (wrapper mode): parent of every session span; ``None``
    #: in pipe mode, where Bernstein signals get a ``run stdin`` span of their own
    run: SpanRef | None = None
    #: called with the ``run {cmd}`` record just before it is emitted (see
    #: :meth:`decorate_process`): Bernstein signals add their events and terminal status
    process_hooks: list[Callable[[SpanRecord], None]] = msgspec.field(default_factory=list)
    #: ``follow``: whether the lines now decoded are read again (what a run before read)
    replaying: Callable[[], bool] | None = None
    #: where the line being decoded begins in the input, bytes (``follow`` resumes at the
    #: first line of the oldest session open)
    line_at: Callable[[], int] | None = None
    #: the one bound on what every part holds open (:mod:`.budget`); made with ``stats`` when
    #: not given
    budget: StateBudget = None  # type: ignore[assignment]
    _sessions: Refs = msgspec.field(default_factory=lambda: Refs())
    #: session id → (the span a stop ended, its turns): a session that goes on after a restart
    _continued: dict[str, tuple[SpanRef, int]] = msgspec.field(default_factory=dict)
    #: session id → that span as kept (what it counted, what its ``init`` said)
    _refs: dict[str, SessionRef] = msgspec.field(default_factory=dict)
    #: task ids of the workflows a run before exported (the ended session span links them)
    _linked_before: frozenset[str] = frozenset()
    _session_events: dict[str | None, list[SpanEvent]] = msgspec.field(default_factory=dict)
    _session_events_held: int = 0
    _session_event_bytes: dict[str | None, int] = msgspec.field(default_factory=dict)
    #: session id → where the line of its first event held begins (:attr:`line_at`)
    _session_event_lines: dict[str | None, int] = msgspec.field(default_factory=dict)
    _workflows: Refs = msgspec.field(default_factory=lambda: Refs())
    #: session id → the latest end of a child span another part emitted under it
    _covered: Refs = msgspec.field(default_factory=lambda: Refs())
    #: session id → its ``gen_ai.provider.name`` (set by the session part; the workflows it
    #: starts name it on their agents)
    providers: Refs = msgspec.field(default_factory=lambda: Refs())

    def __post_init__(self) -> None:
        if self.budget is None:
            self.budget = StateBudget(self.stats)

    def own_time(self, ts_ns: int | None) -> bool:
        """Whether a line's time is its own: its timestamp, or a clock that moves (wall, live
        ``auto``, and the pending lines before the stream's first timestamp, which lie before
        it); not the stream clock after a timestamp, which stands still until the next one (an
        untimed line's time is then where the clock stood: a bound from below)."""
        return ts_ns is not None or not self.clock.uses_stream

    def root_trace_id(self, session_id: str | None, key: str | None) -> int:
        """The trace id of a new root: the ``TRACEPARENT`` trace when there is one, else a new
        trace (deterministic from ``session_id``/``key`` with ``--deterministic-ids``; random
        when both are ``None``: no stream id names the root, and every such root of every
        stream would share the trace derived from nothing)."""
        if self.parent is not None:
            return self.parent.trace_id
        if session_id is None and key is None:
            return self.ids.unique_trace_id()
        return self.ids.trace_id(session_id, key)

    def root_parent(self) -> tuple[int | None, bool]:
        """``(parent_span_id, parent_remote)`` for a root span: none, or under a ``TRACEPARENT``
        (whose trace it is then in) the wrapper's ``run`` span, which the process that printed
        it is, else the ``TRACEPARENT`` span."""
        if self.parent is not None:
            if self.run is not None:
                return self.run.span_id, False
            return self.parent.span_id, True
        return None, False

    def session_event(self, session_id: str | None, event: SpanEvent) -> None:
        """Hold ``event`` for the span of session ``session_id`` (Caudra goal events, automation
        notices): the part that emits the session span takes them with
        :meth:`take_session_events`. At most :data:`MAX_SESSION_EVENTS` in all: an event for a
        session not held yet makes room by letting go of the sessions held longest (a stream of
        ever new session ids no span takes must not grow memory); an event for a held session
        beyond the bound is refused. Both counted in ``stats.session_events_capped``. The events
        held for a session are charged to the state budget; when it ends them they are let go
        (counted the same way)."""
        held = self._session_events.get(session_id)
        if held is None:
            while self._session_events_held >= MAX_SESSION_EVENTS and self._session_events:
                self._drop_session_events(next(iter(self._session_events)))
            held = self._session_events[session_id] = []
            self._session_event_lines[session_id] = self.line_at() if self.line_at is not None else 0
        if self._session_events_held >= MAX_SESSION_EVENTS:
            self.stats.session_events_capped += 1
            return
        held.append(event)
        self._session_events_held += 1
        weight = self._session_event_bytes.get(session_id, 0) + event_bytes(event)
        self._session_event_bytes[session_id] = weight
        self.budget.charge(("session events", id(self), session_id), weight,
                           lambda _reason: self._drop_session_events(session_id))

    def _drop_session_events(self, session_id: str | None) -> None:
        self.stats.session_events_capped += len(self.take_session_events(session_id))

    def take_session_events(self, session_id: str | None) -> list[SpanEvent]:
        """The events held for session ``session_id`` (in arrival order), removed."""
        events = self._session_events.pop(session_id, [])
        self._session_events_held -= len(events)
        self._session_event_bytes.pop(session_id, None)
        self._session_event_lines.pop(session_id, None)
        self.budget.release(("session events", id(self), session_id))
        return events

    def rebase(self, shift: int) -> None:
        """The clock settled: the session events held so far, and the ends told by
        :meth:`cover_session`, move by ``shift`` ns."""
        for events in self._session_events.values():
            for ev in events:
                ev.time_ns += shift
        for key in self._covered:
            self._covered[key] += shift

    def cover_session(self, session_id: str | None, end_ns: int) -> None:
        """A child of session ``session_id``'s span that another part emitted (a Caudra
        automation firing) ends at ``end_ns``: the session span ends no earlier."""
        remember(self._covered, session_id, max(self._covered.get(session_id) or end_ns, end_ns))

    def session_covered(self, session_id: str | None) -> int:
        """The latest end :meth:`cover_session` was told for ``session_id`` (0: none), forgotten."""
        return self._covered.pop(session_id, None) or 0

    def pending_session_events(self) -> int:
        """How many session events no session span has taken yet."""
        return sum(len(v) for v in self._session_events.values())

    def held_since(self) -> int | None:
        """Where the line of the oldest session event held begins (:attr:`line_at`); ``None``:
        none held."""
        return min(self._session_event_lines.values(), default=None)

    def decorate_process(self, rec: SpanRecord) -> None:
        """Let every process hook amend the ``run {cmd}`` record ``rec`` before it is emitted.
        The wrapper span's owner calls this once; a failing hook costs its own changes only."""
        for hook in self.process_hooks:
            try:
                hook(rec)
            except Exception:
                self.stats.bad_lines += 1

    def session_ref(self, session_id: str | None) -> SpanRef:
        """The session span's ids for ``session_id``, allocated once and shared by every part
        (workflow roots link to it; tasks and automations are its children). In wrapper mode
        the session lives in the run span's trace, else in the ``TRACEPARENT`` trace, else in
        its own."""
        ref = self._sessions.get(session_id)
        if ref is None:
            before = self._continued.get(session_id) if session_id else None
            if before is not None:  # in the trace it began in, a span of its own (one a stop)
                trace_id = before[0].trace_id
                key = f"{session_id}#{before[0].span_id:016x}"
                ref = SpanRef(trace_id, self.ids.span_id(trace_id, "session", key))
            else:
                trace_id = self.run.trace_id if self.run is not None else self.root_trace_id(session_id, None)
                ref = SpanRef(trace_id, self.ids.span_id(trace_id, "session", session_id or ""))
            remember(self._sessions, session_id, ref)
        return ref

    def session_link(self, session_id: str | None) -> SpanRef:
        """The session span a workflow starting now links to: :meth:`session_ref`'s; one a
        session a stop ended started before the stop (``follow`` reads its lines again) links to
        the ended span, which holds its tool call (the span the session would go on in comes
        only with a line past them)."""
        before = self._continued.get(session_id) if session_id else None
        if before is not None and self.replaying is not None and self.replaying():
            return before[0]
        return self.session_ref(session_id)

    def resume_sessions(self, refs: tuple[SessionRef, ...]) -> None:
        """Sessions read again whose spans were not exported (``follow`` after a kill): each
        takes its ids again, so that what was exported under it finds its parent."""
        for sid, trace_id, span_id, *_ in refs:
            remember(self._sessions, sid, SpanRef(trace_id, span_id))

    def continue_sessions(self, refs: tuple[SessionRef, ...], workflows: tuple[str, ...] = ()) -> None:
        """Sessions a stop ended (exported) after ``turns`` turns, which may go on (``follow``
        after a stop): one seen again is a span of its own in the same trace, linked to the
        ended one (:meth:`continues`), its turns numbered on, its cost counted on from that
        span's (:meth:`ref_before`); it does not link again the ``workflows`` (task ids) a run
        before exported (:meth:`linked_before`)."""
        for ref in refs[-MAX_REFS:]:
            sid, trace_id, span_id, turns = ref[:4]
            self._continued[sid] = (SpanRef(trace_id, span_id), turns)
            self._refs[sid] = ref
        self._linked_before = frozenset(workflows)

    def ref_before(self, session_id: str | None) -> SessionRef | None:
        """The span a session goes on from as kept: what it counted and what its ``init`` said
        (a ``follow`` restart may read on past that ``init``)."""
        return self._refs.get(session_id) if session_id else None

    def went_quiet(self, session_id: str, ref: SpanRef, turns: int) -> None:
        """Session ``session_id`` (span ``ref``, after ``turns`` turns) ended before the end of
        input, its runs all done: one line of it after this goes on in a span of its own in
        the same trace, linked to ``ref`` (:meth:`continues`), as after a stop."""
        self._continued[session_id] = (ref, turns)
        self._sessions.pop(session_id, None)

    def linked_before(self, task_id: str) -> bool:
        """Whether a run before exported workflow ``task_id`` (linked from a span it ended)."""
        return task_id in self._linked_before

    def continues(self, session_id: str | None) -> tuple[SpanRef, int] | None:
        """The span a stop ended and its turns, of a session that goes on after a restart."""
        return self._continued.get(session_id) if session_id else None

    def workflow_ref(self, session_id: str | None, task_id: str) -> SpanRef:
        """The workflow root's ids for ``(session_id, task_id)``, allocated once: its own trace,
        or the ``TRACEPARENT`` trace (the session span links to it)."""
        key = (session_id, task_id)
        ref = self._workflows.get(key)
        if ref is None:
            trace_id = self.root_trace_id(session_id, task_id)
            ref = SpanRef(trace_id, self.ids.span_id(trace_id, "workflow", task_id))
            remember(self._workflows, key, ref)
        return ref


def event_bytes(event: SpanEvent) -> int:
    """Estimated bytes of a held span event with the raw strings it holds."""
    return ITEM_BYTES + text_bytes(event.name, *event.attributes.values())


class Refs(OrderedDict):
    """An ordered map that knows the estimated bytes of its entries (``bytes``: each key by
    :func:`key_bytes`, plus the strings of a value that is a string or a tuple): the registries
    :func:`remember` bounds."""

    _missing = object()

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self._sizes: dict[Any, int] = {}

    def __setitem__(self, key: Any, value: Any) -> None:
        size = key_bytes(key) + (text_bytes(*value) if isinstance(value, tuple) else text_bytes(value))
        self.bytes += size - self._sizes.get(key, 0)
        self._sizes[key] = size
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.bytes -= self._sizes.pop(key)

    def pop(self, key: Any, default: Any = _missing) -> Any:
        if key in self:
            self.bytes -= self._sizes.pop(key)
            return super().pop(key)
        if default is Refs._missing:
            raise KeyError(key)
        return default

    def popitem(self, last: bool = True) -> tuple[Any, Any]:
        key, value = super().popitem(last)
        self.bytes -= self._sizes.pop(key)
        return key, value


def remember(registry: Refs, key: Any, value: Any = None, cap: int = MAX_REFS) -> None:
    """``registry[key] = value``, forgetting the oldest entries beyond ``cap`` entries or
    :data:`RECENT_BYTES` (ids are raw strings): a bounded map, as :class:`Recent` is a bounded
    set."""
    registry[key] = value
    while len(registry) > cap or registry.bytes > RECENT_BYTES:
        registry.popitem(last=False)


class Part(Protocol):
    """One tracked concern: takes the events it knows, ends all at :meth:`finish`.

    ``reason`` is ``None`` at plain end of input, else why the run was cut short (see
    ``Tracker.finish``): a part puts it on the spans it ends early.
    """

    def handle(self, ev: Event) -> None: ...

    def finish(self, *, reason: str | None = None) -> None: ...

    def rebase(self, shift: int) -> None:
        """The clock settled (``Clock.on_settle``): every time the part took from the clock's
        anchor and still holds moves by ``shift`` ns (0 when it settled on the wall clock)."""


def interrupted_event(at_ns: int, reason: str) -> SpanEvent:
    """The event on a span cut short by ``reason``: ``interrupted`` at ``at_ns`` (epoch ns)
    with ``otelbridge.reason``."""
    return SpanEvent("interrupted", at_ns, {"otelbridge.reason": reason})


def shift_all(objs: Iterable[Any], shift: int) -> None:
    """:func:`shift_times` over ``objs`` (a part's open runs), each object once."""
    if shift:
        seen: set[int] = set()
        for obj in objs:
            shift_times(obj, shift, seen)


def _fields(obj: Any) -> tuple[str, ...]:
    """The fields of a state object, inherited ones too (a subclass's ``__slots__`` holds only
    its own): a ``msgspec.Struct``'s, else its class's ``__slots__``."""
    return getattr(type(obj), "__struct_fields__", None) or getattr(type(obj), "__slots__", ())


def collapse_wall_times(obj: Any, wall: int, to: int) -> None:
    """Set every ``*_ns`` time of a state object that is a wall-clock time (within
    :data:`~otelbridge.clock.SKEW_NS` of ``wall``) to ``to``; the stream's own times stay."""
    for name in _fields(obj):
        if name.endswith("_ns"):
            value = getattr(obj, name, None)
            if isinstance(value, int) and value and abs(value - wall) <= SKEW_NS:
                setattr(obj, name, to)


def shift_times(obj: Any, shift: int, seen: set[int] | None = None) -> None:
    """Move every ``*_ns`` integer of ``obj`` (a ``msgspec.Struct``: all its fields; another
    object: its class's ``__slots__``), and of the structs it holds in attributes, lists and dict
    values, by ``shift`` ns, each object once. The clock
    settled on the stream (``Part.rebase``): times taken from its anchor move with it."""
    if seen is None:
        seen = set()
    if id(obj) in seen:
        return
    seen.add(id(obj))
    for name in _fields(obj):
        value = getattr(obj, name, None)
        if name.endswith("_ns"):
            if isinstance(value, int) and not isinstance(value, bool) and value:
                setattr(obj, name, value + shift)
        elif isinstance(value, dict):
            for item in value.values():
                if hasattr(type(item), "__slots__"):
                    shift_times(item, shift, seen)
        elif isinstance(value, list):
            for item in value:
                if hasattr(type(item), "__slots__"):
                    shift_times(item, shift, seen)
        elif hasattr(type(value), "__struct_fields__"):
            shift_times(value, shift, seen)
