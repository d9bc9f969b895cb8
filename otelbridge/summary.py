"""What a person sees of a run, built from the finished spans as exported: trace links as traces
begin, a waterfall per trace on stderr at exit, the GitHub Actions step summary, the job outputs
(``GITHUB_OUTPUT``) and the ``--report`` HTML page (:mod:`otelbridge.report`).

:class:`Collector` is a span sink ahead of the span builder (:meth:`otelbridge.views.Report.sink`):
it reads every finished record as :func:`otelbridge.spans.redacted` returned it — names, attributes
and status descriptions redacted, the very record the builder then builds — so every view shows
what leaves, for every dialect and mode alike, and sees every span the run built, whether the
sampler keeps it or not (the views are the run's own, not an export). What it keeps is bounded: one small
:class:`Row` per span up to :data:`MAX_ROWS` (beyond that only the structure — runs, sessions,
turns, workflows, phases — and failed spans, the rest counted), at most :data:`MAX_TRACES`
traces (the oldest are dropped first, their totals kept).

Totals (:class:`Totals`): input tokens (``gen_ai.usage.input_tokens``: input with cache read and
creation) and output tokens. A session span whose usage is its own total (``session.usage.source``:
``modelUsage``, the CLI's count of every model call of the session, sub-agents included; else
``results``, its turns' results' and its sub-agents' calls; else ``calls``) is the authority for
its own turns in its conversation (``gen_ai.conversation.id`` in its trace; a workflow's spans,
in its trace under ``TRACEPARENT``, are not its own): it replaces what that conversation's spans
added since its span before ended (a span before without such a total keeps its calls'); a
second session span of the conversation (it went on after a ``follow`` stop or another
session's ``init``, or in a later file of a ``replay``) carries its own turns' count, added to
the first's, and one without such a total adds its own calls'. Elsewhere usage is summed over
the spans that carry it and none of whose children did (each model call once, sessions and turns
not again on top): a model call's lines carry partial usage (the first streamed snapshot's
``output_tokens``), so the session's total, from its results, counts in their place. Cost is ``result.total_cost_usd``,
cumulative per session (the tracker adds a resuming process's to the ones before): the
session's last value (its spans', else its last turn's), summed over sessions (a conversation's
spans in a trace are one session), as exact decimals of the values the stream gave; a session span
with tokens and no cost (milk gives none; Claude Code's result of an interrupted turn counted
neither) makes it unknown (:attr:`Totals.cost_unknown`), which the views say rather than ``$0``.
Workflow agents report one total each, input and output together (``workflow.agent.tokens``):
their sum, or their workflow's own total (``workflow.usage.total_tokens``) once it ends, is
``workflow_tokens``, kept apart from the input/output counts (a workflow is a trace of its own).

Drawing: :mod:`otelbridge.waterfall` (stderr, step summary) and :mod:`otelbridge.report` (HTML),
from :func:`otelbridge.shown.select` (which rows of a trace are shown); text is escaped for where it lands
(:mod:`otelbridge.escape`). Times: span times in epoch ns.
The views themselves, and the environment they read (``GITHUB_STEP_SUMMARY``, ``GITHUB_OUTPUT``,
``NO_COLOR``, ``CI``): :mod:`otelbridge.views`.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from . import redact
from .config import TRACE_ID_PLACEHOLDER
from .events import SpanRecord

#: Rows kept in all (~200 bytes each); beyond, only structural and failed spans, to twice this.
MAX_ROWS = 20_000
#: Traces kept for the views (the oldest are dropped first; their totals still count).
MAX_TRACES = 200
#: Trace ids remembered for printing each link once.
MAX_LINKED = 10_000
#: Spans awaiting their parent's end, remembered for the token rule (see :class:`Totals`).
MAX_PENDING = 100_000

#: Kinds of row that give a run its shape: kept and shown before model calls and tools.
STRUCTURAL = frozenset(("run", "workflow", "phase", "session", "turn"))
#: Kinds whose error makes the whole run's status ``error`` (a failed tool call does not).
DECISIVE = frozenset(("run", "workflow", "session", "turn"))
#: ``session.usage.source`` values: the session span's tokens are its own total (the CLI's
#: ``modelUsage``; else its results' usage and its sub-agents' calls; else its calls').
USAGE_SOURCES = frozenset(("modelUsage", "results", "calls"))


def trace_url(template: str | None, trace_id: int) -> str | None:
    """``template`` with ``{trace_id}`` replaced by the 32-hex-digit id, redacted as every
    string we show is (the link lands in a CI job's log), or ``None``. Credentials before the
    host (``https://u:p@…``) and a query parameter whose value is a secret (``?token=…``) are
    left out, not marked: the link still opens (the backend asks who you are)."""
    if not template:
        return None
    url = redact.current().scrub(template.replace(TRACE_ID_PLACEHOLDER, f"{trace_id:032x}"))
    return _REDACTED_PARAM.sub(_param_gone, _REDACTED_USER.sub(r"\1", url))


def logged_url(template: str | None, trace_id: int) -> str | None:
    """:func:`trace_url` as a job's log shows it: percent-encoded when it is ``http(s)``
    (:func:`otelbridge.escape.url`; past the host also ``{}[]``: a quote, a blank or a brace
    ends a log's or a terminal's link), else as it is."""
    from .escape import url

    link = trace_url(template, trace_id)
    encoded = url(link)
    if encoded is None:
        return link
    host = _ORIGIN.match(encoded).end()  # type: ignore[union-attr]  (url() checked the scheme)
    return encoded[:host] + encoded[host:].translate(_BRACKETS)


#: A URL's scheme and host (an IPv6 host's brackets stay); what :func:`logged_url` encodes past
#: them, beyond what a Markdown or HTML link needs
_ORIGIN = re.compile(r"[^:]*://[^/?#]*")
_BRACKETS = str.maketrans({"{": "%7B", "}": "%7D", "[": "%5B", "]": "%5D"})


#: A link's user part redacted; a query parameter whose value is (holds) a marker
_REDACTED_USER = re.compile(r"\A([A-Za-z][\w+.-]*://)\[REDACTED:\w+\]@")
_REDACTED_PARAM = re.compile(r"([?&])[^&#?]*\[REDACTED:\w+\][^&#]*(&?)")


def _param_gone(param: re.Match[str]) -> str:
    """What stands for a query parameter left out: the ``?`` or ``&`` before it when others
    follow, else nothing."""
    return param.group(1) if param.group(2) else ""


def link_note(not_exported: str | None) -> str:
    """What follows a trace link whose trace no backend will hold: ``" (not in the backend:
    sampled out)"``; ``""`` when it is exported."""
    return f" (not in the backend: {not_exported})" if not_exported else ""


def format_duration(ns: int) -> str:
    """``1234567890`` ns → ``"1.2s"``; under a second in ms, over a minute ``"2m03s"``."""
    ms = max(ns, 0) / 1e6
    if ms < 1000:
        return f"{ms:.0f}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(int(round(ms / 1000)), 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def plural(n: int, noun: str) -> str:
    """``"1 failed span"``, ``"2 failed spans"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def format_count(n: int | None) -> str:
    """``1234`` → ``"1.2k"``, ``12345678`` → ``"12M"``; ``None`` → ``""``."""
    if n is None:
        return ""
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(n)


def format_cost(cost: Decimal | None) -> str:
    """``Decimal("0.01234")`` → ``"$0.0123"``; ``None`` → ``""``."""
    if cost is None:
        return ""
    return f"${cost:.4f}" if cost < 10 else f"${cost:.2f}"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


#: Significant digits a cost keeps: a double's 15 (``0.11752375000000001``, the CLI's own sum
#: of floats, is ``0.11752375``)
_COST_DIGITS = Context(prec=15)
#: Dollars no run costs: a larger ``total_cost_usd`` is taken for garbage, not summed.
MAX_COST = Decimal(10) ** 9


def _decimal(value: Any) -> Decimal | None:
    """A cost as the stream wrote it, to 15 significant digits: ``0.0141`` →
    ``Decimal("0.0141")`` (``repr`` of a float is its shortest round-trip form), and the sum of
    such costs exact. ``None`` for what is no cost in dollars: not a number, not finite,
    negative, or :data:`MAX_COST` or more (written out, ``1e308`` would take 309 digits)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        result = _COST_DIGITS.create_decimal(repr(value))
    except InvalidOperation:
        return None
    return result if result.is_finite() and 0 <= result < MAX_COST else None


# --------------------------------------------------------------------------- what is kept


@dataclass(slots=True)
class Row:
    """One finished span as the views need it. ``name``, ``error`` and ``status`` are the
    exported (redacted, not yet escaped) texts; times epoch ns; ``cost`` the span's
    ``result.total_cost_usd`` (cumulative per session)."""

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status: str = "ok"
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    #: a sub-agent's tokens as its task reports them, input and output together
    #: (``task.usage.total_tokens``): shown where its own calls' are not, counted nowhere (its
    #: session's total holds them)
    task_tokens: int | None = None
    cost: Decimal | None = None
    #: a turn's own cost (``turn.cost_usd``: its result's less the one before, as the tracker
    #: knew it; none when its result came late)
    turn_cost: Decimal | None = None
    #: ``gen_ai.conversation.id``; ``authority``: a session span carrying its own total
    #: (:data:`USAGE_SOURCES`); ``in_workflow``: a span of a workflow run (``workflow.task_id``,
    #: Caudra's ``workflow.run_id``), whose tokens no session's total holds in input and output
    conversation: str | None = None
    authority: bool = False
    in_workflow: bool = False
    #: the other traces its links point at (a workflow's session, a session's workflows)
    linked: tuple[int, ...] = ()

    @property
    def duration_ns(self) -> int:
        return max(self.end_ns - self.start_ns, 0)


def kind_of(name: str, attrs: Mapping[str, Any]) -> str:
    """``run`` | ``workflow`` | ``phase`` | ``session`` | ``turn`` | ``chat`` | ``tool`` |
    ``agent`` | ``task`` | ``other``, from a span's name and attributes (SPAN-MODEL names)."""
    op = attrs.get("gen_ai.operation.name")
    if op == "invoke_workflow":
        return "workflow"
    if op == "chat":
        return "chat"
    if op == "execute_tool":
        return "tool"
    if name.startswith("turn "):
        return "turn"
    if op == "invoke_agent":
        return "session" if "session.turns" in attrs else "agent"
    if "workflow.phase.index" in attrs:
        return "phase"
    if name.startswith("run ") and ("process.exit.code" in attrs or name == "run stdin"):
        return "run"
    if name.startswith("task "):
        return "task"
    return "other"


def row_of(rec: SpanRecord) -> Row:
    """The :class:`Row` of a finished (redacted) span record."""
    attrs = rec.attributes
    kind = kind_of(rec.name, attrs)
    start = rec.start_ns if isinstance(rec.start_ns, int) else 0
    row = Row(rec.trace_id, rec.span_id,
              rec.parent_span_id if not rec.parent_remote else None,
              rec.name, kind, start, max(rec.end_ns if isinstance(rec.end_ns, int) else 0, start),
              input_tokens=_int(attrs.get("gen_ai.usage.input_tokens")),
              output_tokens=_int(attrs.get("gen_ai.usage.output_tokens")),
              total_tokens=_int(attrs.get("workflow.usage.total_tokens", attrs.get("workflow.agent.tokens"))),
              task_tokens=_int(attrs.get("task.usage.total_tokens")) if kind == "agent" else None,
              cost=_decimal(attrs.get("result.total_cost_usd")),
              turn_cost=_decimal(attrs.get("turn.cost_usd")) if kind == "turn" else None,
              conversation=_str(attrs.get("gen_ai.conversation.id")),
              authority=kind == "session" and attrs.get("session.usage.source") in USAGE_SOURCES,
              in_workflow="workflow.task_id" in attrs or "workflow.run_id" in attrs,
              linked=tuple({link.trace_id for link in rec.links} - {rec.trace_id}) if rec.links else ())
    if rec.error is not None:
        row.error = rec.error or "error"
        row.status = str(rec.error_type or attrs.get("error.type") or "error")
    elif kind == "workflow" and attrs.get("workflow.status"):
        row.status = str(attrs["workflow.status"])
    elif attrs.get("workflow.agent.cached") is True:
        row.status = "cached"
    return row


@dataclass
class Totals:
    """Input/output tokens, cost and whether anything decisive failed, over the spans taken."""

    input_tokens: int = 0
    output_tokens: int = 0
    #: workflows' tokens, input and output together (their agents' totals)
    workflow_tokens: int = 0
    #: (trace, conversation) (else session span) ids → its ``result.total_cost_usd`` (the
    #: session's last value)
    session_cost: dict[tuple[int, Any], Decimal] = field(default_factory=dict)
    #: ... its last turn's value, for sessions whose spans have none (yet)
    turn_cost: dict[tuple[int, Any], Decimal] = field(default_factory=dict)
    #: ... the sessions whose spans carried tokens and no cost (milk gives none; Claude Code's
    #: result of an interrupted turn counts neither)
    uncosted: set[tuple[int, Any]] = field(default_factory=set)
    errors: int = 0
    failed: bool = False
    #: a span taken carried a token count (else the stream showed none: not the same as 0)
    counted: bool = False

    @property
    def cost(self) -> Decimal:
        return sum(self.session_cost.values(), Decimal(0)) + sum(
            (v for k, v in self.turn_cost.items() if k not in self.session_cost), Decimal(0))

    @property
    def cost_unknown(self) -> bool:
        """Some session's tokens came with no cost of its own: :attr:`cost` is not all of it."""
        return any(k not in self.session_cost and k not in self.turn_cost for k in self.uncosted)

    def add(self, other: "Totals") -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.workflow_tokens += other.workflow_tokens
        self.session_cost.update(other.session_cost)
        self.turn_cost.update(other.turn_cost)
        self.uncosted |= other.uncosted
        self.errors += other.errors
        self.failed |= other.failed
        self.counted |= other.counted


@dataclass
class Trace:
    """The rows of one trace and its totals. ``not_kept``: spans beyond :data:`MAX_ROWS`."""

    trace_id: int
    rows: list[Row] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    not_kept: int = 0
    #: why no backend a trace link points at holds it (``"sampled out"``), ``None`` when one does
    not_exported: str | None = None
    #: the other traces its spans link to
    linked: set[int] = field(default_factory=set)

    @property
    def start_ns(self) -> int:
        return min((r.start_ns for r in self.rows), default=0)

    @property
    def end_ns(self) -> int:
        return max((r.end_ns for r in self.rows), default=0)

    def root(self) -> Row | None:
        """The span without a parent in this trace that started first (the run, session or
        workflow)."""
        ids = {r.span_id for r in self.rows}
        roots = [r for r in self.rows if r.parent_id is None or r.parent_id not in ids]
        return min(roots, key=lambda r: (r.kind not in STRUCTURAL, r.start_ns), default=None)


class Collector:
    """The finished spans of a run, as :class:`Trace` objects (a span sink: ``emit`` takes each
    redacted record). ``on_new_trace(trace_id)`` is called for each trace's first span,
    ``not_exported(trace_id)`` says why no backend will hold it (:attr:`Trace.not_exported`). Never
    raises."""

    def __init__(self, max_rows: int = MAX_ROWS, max_traces: int = MAX_TRACES,
                 on_new_trace: Callable[[int], None] | None = None,
                 not_exported: Callable[[int], str | None] | None = None) -> None:
        self.max_rows = max_rows
        self.max_traces = max_traces
        self.on_new_trace = on_new_trace
        self.not_exported = not_exported
        self.traces: OrderedDict[int, Trace] = OrderedDict()
        self.rows = 0
        self.dropped_traces = 0
        self.dropped = Totals()
        self.errors = 0
        #: (trace, span) ids whose some child carried (or covered) usage
        self._covered: OrderedDict[tuple[int, int], None] = OrderedDict()
        #: (trace, conversation) → (input, output) its spans added since its last session span
        #: that brought the CLI's count of its own turns (which replaces them)
        self._counted: OrderedDict[tuple[int, str | None], tuple[int, int]] = OrderedDict()
        #: workflow trace → its agents' tokens so far, until the workflow's own total ends it
        self._agent_tokens: OrderedDict[int, int] = OrderedDict()

    def emit(self, rec: SpanRecord) -> None:
        try:
            self.take(row_of(rec))
        except Exception:  # a view never costs the run anything
            self.errors += 1

    def hide(self, hide: Callable[[str], str]) -> None:
        """Each kept row's name and error text through ``hide`` (the values the redactor found
        after the row was taken)."""
        for trace in self.traces.values():
            for row in trace.rows:
                row.name = hide(row.name)
                if row.error:
                    row.error = hide(row.error)

    def take(self, row: Row) -> None:
        """Account for ``row`` and keep it (within the bounds)."""
        trace = self.traces.get(row.trace_id)
        if trace is None:
            if len(self.traces) >= self.max_traces:
                _, old = self.traces.popitem(last=False)
                self.rows -= len(old.rows)
                self.dropped.add(old.totals)
                self.dropped_traces += 1
            trace = self.traces[row.trace_id] = Trace(row.trace_id)
            if self.not_exported is not None:
                trace.not_exported = self.not_exported(row.trace_id)
            if self.on_new_trace is not None:
                self.on_new_trace(row.trace_id)
        self._account(trace.totals, row)
        trace.linked.update(row.linked)
        if self.rows < self.max_rows or (
                self.rows < 2 * self.max_rows and (row.kind in STRUCTURAL or row.error)):
            trace.rows.append(row)
            self.rows += 1
        else:
            trace.not_kept += 1

    def _account(self, totals: Totals, row: Row) -> None:
        key = (row.trace_id, row.span_id)
        # a model call's usage is its own: the sub-agents its tools ran count theirs apart
        covered = self._covered.pop(key, False) is None and row.kind != "chat"
        usage = row.input_tokens is not None or row.output_tokens is not None
        totals.counted |= usage
        conv = (row.trace_id, row.conversation)
        if row.authority:  # (replacing its own calls', counted as they ended)
            got_in, got_out = self._counted.pop(conv, (0, 0))
            totals.input_tokens += (row.input_tokens or 0) - got_in
            totals.output_tokens += (row.output_tokens or 0) - got_out
        elif usage and not covered:
            if not row.in_workflow:  # (one with TRACEPARENT shares its session's trace)
                got_in, got_out = self._counted.pop(conv, (0, 0))
                _bounded(self._counted, conv, (got_in + (row.input_tokens or 0), got_out + (row.output_tokens or 0)))
            totals.input_tokens += row.input_tokens or 0
            totals.output_tokens += row.output_tokens or 0
        elif row.total_tokens is not None and not covered and row.kind in ("workflow", "agent"):
            so_far = self._agent_tokens.pop(row.trace_id, 0)
            if row.kind == "workflow":  # its own total replaces what its agents added
                totals.workflow_tokens += row.total_tokens - so_far
            else:
                _bounded(self._agent_tokens, row.trace_id, so_far + row.total_tokens)
                totals.workflow_tokens += row.total_tokens
        if row.kind == "session" and not row.authority:  # (its calls are its own: a later span's
            self._counted.pop(conv, None)  # total, of its own turns, does not replace them)
        if (usage or covered) and row.parent_id is not None:
            _bounded(self._covered, (row.trace_id, row.parent_id), None)
        if row.kind == "session" and row.cost is None and usage:
            totals.uncosted.add(conv if row.conversation else key)
        if row.cost is not None:  # (a conversation's spans: one session's)
            if row.kind == "session":
                totals.session_cost[conv if row.conversation else key] = row.cost
            elif row.kind == "turn" and row.parent_id is not None:
                totals.turn_cost[conv if row.conversation else (row.trace_id, row.parent_id)] = row.cost
        if row.error:
            totals.errors += 1
            totals.failed |= row.kind in DECISIVE

    def totals(self) -> Totals:
        """The run's totals: every trace's, dropped ones included."""
        out = Totals()
        out.add(self.dropped)
        for trace in self.traces.values():
            out.add(trace.totals)
        return out

    def main_trace(self) -> int | None:
        """The run's trace: the wrapper's (or ``run stdin``) run span's, else the first
        session's, else the first workflow's, else the first trace's."""
        for kind in ("run", "session", "workflow"):
            found = [(r.start_ns, t.trace_id) for t in self.traces.values() for r in t.rows
                     if r.kind == kind]
            if found:
                return min(found)[1]
        return next(iter(self.traces), None)


def _bounded(table: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    """``table[key] = value``, the oldest entry dropped beyond :data:`MAX_PENDING`."""
    table[key] = value
    if len(table) > MAX_PENDING:
        table.popitem(last=False)


# --------------------------------------------------------------------------- job outputs


def job_outputs(collector: Collector) -> str:
    """The ``GITHUB_OUTPUT`` lines: ``trace_id``, ``input_tokens``, ``output_tokens``,
    ``workflow_tokens``, ``total_cost_usd`` (exact sum of the stream's values, ``0`` without
    any) and ``status`` (empty, as ``trace_id``, when no span was built: nothing ran that the
    stream showed, so nothing is ``ok``)."""
    t = collector.totals()
    main = collector.main_trace()
    cost = t.cost
    return (f"trace_id={main:032x}\n" if main is not None else "trace_id=\n") + (
        f"input_tokens={t.input_tokens}\noutput_tokens={t.output_tokens}\n"
        f"workflow_tokens={t.workflow_tokens}\n"
        f"total_cost_usd={format(cost.normalize(), 'f') if cost else 0}\n"
        f"status={'' if main is None else 'error' if t.failed else 'ok'}\n")
