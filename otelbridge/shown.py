"""What a view shows of a trace (:mod:`otelbridge.summary` keeps it): which rows, within a
budget (:func:`select`), and the texts of rows, folds and totals. Times epoch ns."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, replace
from decimal import Decimal

from .summary import STRUCTURAL, Collector, Row, Totals, Trace, format_count, format_cost, format_duration, plural


@dataclass(slots=True)
class Line:
    """One shown line of a trace: a row at ``depth``, or (``row`` None) ``more`` spans not shown
    under the line above's parent, with their tokens and errors."""

    depth: int
    row: Row | None = None
    more: int = 0
    more_tokens: int = 0
    more_errors: int = 0
    cost: Decimal | None = None


def select(trace: Trace, budget: int) -> list[Line]:
    """:func:`_select`'s lines with the most spans chosen whose lines (the ``… N more`` ones
    too) are at most ``budget`` (a binary search: ~log2(budget) selections), else one span's."""
    lines = _select(trace, budget)
    if len(lines) <= budget:
        return lines
    low, high, best = 1, budget - 1, None
    while low <= high:
        mid = (low + high) // 2
        tried = _select(trace, mid)
        if len(tried) <= budget:
            low, best = mid + 1, tried
        else:
            high = mid - 1
    return best if best is not None else _select(trace, 1)


def _select(trace: Trace, budget: int) -> list[Line]:
    """The lines of ``trace`` in tree order (children by start), ``budget`` spans chosen:
    the roots, every failed span, then structural spans (runs, sessions, turns, workflows,
    phases), then the slowest (among equally slow, the most tokens: a recording without times
    has every call and tool at 0 ms), each with its ancestors; hidden children are folded into one
    "… N more" line under their parent. Turn rows carry their own cost (``turn.cost_usd``:
    the tracker's difference from the previous result's cumulative value). When the trace has more rows than ``budget``, a run of
    like siblings is one row first (:func:`grouped`)."""
    rows = trace.rows if len(trace.rows) <= budget else grouped(trace.rows)
    by_id = {r.span_id: r for r in rows}
    children: dict[int | None, list[Row]] = {}
    for r in rows:
        children.setdefault(r.parent_id if r.parent_id in by_id else None, []).append(r)
    for kids in children.values():
        kids.sort(key=lambda r: (r.start_ns, r.end_ns))
    # rows under each span id, its own included. Rows may share an id (a recording concatenated
    # with itself, replayed under deterministic ids): an id's rows count once each, and its
    # subtree is walked once, not once per row
    rows_of = Counter(r.span_id for r in rows)
    size: dict[int, int] = {}

    def subtree(r: Row) -> int:
        stack, order = [r.span_id], []
        while stack:
            span_id = stack.pop()
            if span_id in size:
                continue
            size[span_id] = 0
            order.append(span_id)
            stack.extend(c.span_id for c in children.get(span_id, ()))
        for span_id in reversed(order):
            kids = {c.span_id for c in children.get(span_id, ())}
            size[span_id] = rows_of[span_id] + sum(size[k] for k in kids)
        return size[r.span_id]

    for root in children.get(None, ()):
        subtree(root)
    keep: set[int] = set()
    ranked = sorted(rows, key=lambda r: (
        0 if r.parent_id not in by_id else 1 if r.error else 2 if r.kind in STRUCTURAL else 3,
        -r.duration_ns, -_tokens(r), r.start_ns))
    for r in ranked:
        if len(keep) >= budget:
            break
        node: Row | None = r
        while node is not None and node.span_id not in keep:
            keep.add(node.span_id)
            node = by_id.get(node.parent_id) if node.parent_id is not None else None
    lines: list[Line] = []
    stack: list[Line | tuple[Row, int]] = []

    def push_children(parent_id: int | None, depth: int) -> None:
        kids = children.get(parent_id, [])
        hidden = [k for k in kids if k.span_id not in keep]
        if len(hidden) == 1 and size.get(hidden[0].span_id, 1) == 1:
            keep.add(hidden[0].span_id)  # a row of its own takes no more room than "… 1 more"
            hidden = []
        if hidden:  # popped after the shown children
            stack.append(Line(depth, more=sum(size.get(i, 1) for i in {k.span_id for k in hidden}),
                              more_tokens=sum((k.input_tokens or 0) + (k.output_tokens or 0)
                                              for k in hidden),
                              more_errors=sum(1 for k in hidden if k.error)))
        stack.extend((k, depth) for k in reversed(kids) if k.span_id in keep)

    push_children(None, 0)
    expanded: set[int] = set()  # a span id's children go under its first row alone
    while stack:
        item = stack.pop()
        if isinstance(item, Line):
            lines.append(item)
            continue
        row, depth = item
        lines.append(Line(depth, row, cost=row.turn_cost if row.kind == "turn" else row.cost))
        if row.span_id not in expanded:
            expanded.add(row.span_id)
            push_children(row.span_id, depth + 1)
    if trace.not_kept:
        lines.append(Line(0, more=trace.not_kept))
    return lines


#: Like siblings in a row that :func:`grouped` shows as one, at least.
GROUP_LEAST = 3


def grouped(rows: list[Row]) -> list[Row]:
    """``rows`` with each run of :data:`GROUP_LEAST` or more consecutive siblings (by start)
    that have no children, did not fail and share a name, as one row ``{name} ×{n}``: the
    first's ids, from the first's start to the last's end, their tokens summed (19 file reads
    of one model call: one row, not 19 that push the calls around them out of a fold)."""
    parents = {r.parent_id for r in rows}
    ids = {r.span_id for r in rows}
    siblings: dict[int | None, list[Row]] = {}
    for r in rows:
        siblings.setdefault(r.parent_id if r.parent_id in ids else None, []).append(r)
    out: list[Row] = list(siblings.pop(None, ()))
    for kids in siblings.values():
        kids.sort(key=lambda r: (r.start_ns, r.end_ns))
        # (a row with children or an error is a group of its own: its span id never equals a name)
        for _, run in itertools.groupby(kids, key=lambda r: r.span_id if r.span_id in parents or r.error
                                        else r.name):
            rows_ = list(run)
            out.extend(rows_ if len(rows_) < GROUP_LEAST else (_one_row(rows_),))
    return out


def _one_row(run: list[Row]) -> Row:
    def total(field: str) -> int | None:
        values = [getattr(r, field) for r in run if getattr(r, field) is not None]
        return sum(values) if values else None

    return replace(run[0], name=f"{run[0].name} \u00d7{len(run)}", end_ns=max(r.end_ns for r in run),
                   input_tokens=total("input_tokens"), output_tokens=total("output_tokens"),
                   total_tokens=total("total_tokens"), task_tokens=total("task_tokens"))


def _tokens(row: Row) -> int:
    """``row``'s tokens, however it reports them (0: none)."""
    return ((row.input_tokens or 0) + (row.output_tokens or 0)) or row.total_tokens or row.task_tokens or 0


def tokens_text(row: Row) -> str:
    """``"3.8k/116"`` (input with cache / output), or a workflow's or sub-agent's total
    ``"7.0k"`` (input and output together, as it reports them)."""
    if row.input_tokens is not None or row.output_tokens is not None:
        return f"{format_count(row.input_tokens or 0)}/{format_count(row.output_tokens or 0)}"
    return format_count(row.total_tokens if row.total_tokens is not None else row.task_tokens)


def more_text(line: Line) -> str:
    """``"… 12 more (3.4k tokens, 1 failed)"``."""
    extra = []
    if line.more_tokens:
        extra.append(f"{format_count(line.more_tokens)} tokens")
    if line.more_errors:
        extra.append(f"{line.more_errors} failed")
    return f"… {line.more} more" + (f" ({', '.join(extra)})" if extra else "")


def cost_text(t: Totals) -> str | None:
    """What ``t`` cost as the stream gave it, ``+ unknown`` when a session's tokens came with no
    cost (``cost unknown`` when none did: ``$0.0000`` would say its model calls were free);
    ``None`` when the stream gave no cost and counted no session's tokens."""
    known = bool(t.session_cost or t.turn_cost)
    if t.cost_unknown:
        return f"{format_cost(t.cost)} + unknown" if known else "cost unknown"
    return format_cost(t.cost) if known else None


def trace_head(trace: Trace) -> tuple[Row | None, str]:
    """(the trace's root row, its one-line facts: status, duration, tokens, cost, errors)."""
    root = trace.root()
    t = trace.totals
    parts = ["error" if t.failed else "ok", format_duration(trace.end_ns - trace.start_ns)]
    if t.input_tokens or t.output_tokens:
        parts.append(f"{t.input_tokens:,} in / {t.output_tokens:,} out tokens")
    if t.workflow_tokens:
        parts.append(f"{t.workflow_tokens:,} workflow tokens")
    cost = cost_text(t)
    if cost:
        parts.append(cost)
    if t.errors:
        parts.append(plural(t.errors, "failed span"))
    return root, " · ".join(parts)


def totals_text(collector: Collector) -> str:
    """One line over the whole run."""
    t = collector.totals()
    traces = len(collector.traces) + collector.dropped_traces
    text = f"{traces} trace{'s' if traces != 1 else ''}"
    if t.counted:
        text += f", {t.input_tokens:,} input tokens (with cache), {t.output_tokens:,} output tokens"
    if t.workflow_tokens:
        text += f", {t.workflow_tokens:,} workflow tokens (input and output together)"
    elif not t.counted:  # (not 0: the stream showed none)
        text += ", no token counts in the stream"
    cost = cost_text(t)
    if cost:
        text += f", {cost}"
    return text + f", {plural(t.errors, 'failed span')}, status {'error' if t.failed else 'ok'}"


