"""The waterfall on stderr (rich, plain text when not a terminal) and the GitHub step summary
(Markdown), drawn from a :class:`otelbridge.summary.Collector`.

Each trace: a head line (root span name, status, duration, tokens, cost, errors, trace id), a
time axis, one line per shown span (:func:`otelbridge.shown.select`: label indented by depth,
a bar on the shared time axis, duration, tokens in/out, cost, status), "… N more" lines for
what is folded, the failed spans' texts and the trace link. Then one totals line for the run.
Untrusted text goes through :func:`otelbridge.escape.terminal` into ``rich.text.Text`` (never
markup) and :func:`otelbridge.escape.markdown` into the summary.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.text import Text

from . import escape
from .shown import Line, more_text, select, tokens_text, totals_text, trace_head
from .summary import Collector, Row, Trace, format_cost, format_duration, link_note, logged_url, plural, trace_url

#: Rows drawn per trace on stderr and in the step summary (the rest folded).
TERMINAL_ROWS = 40
MARKDOWN_ROWS = 60
#: Cells of the step summary's timeline column (a code span: monospaced)
MARKDOWN_BAR = 24
#: Traces drawn on stderr and in the step summary (GitHub refuses a summary over 1 MiB): the
#: failed ones first, then the latest; the rest are counted.
MAX_TRACES_SHOWN = 20
#: Failed spans whose text is listed under a trace.
MAX_ERRORS_SHOWN = 5
#: What GitHub takes of a step's summary, bytes (beyond it, it shows none of it), and ours at
#: most: half of it (other runs and the step's own lines may share it).
STEP_SUMMARY_LIMIT = 1024 * 1024
STEP_SUMMARY_MAX = STEP_SUMMARY_LIMIT // 2
#: Width when stderr is not a terminal.
DEFAULT_WIDTH = 100

_DUR_W, _TOK_W, _COST_W, _STATUS_W = 7, 10, 8, 16
#: the status column widens up to this for a long one (``error_during_execution``)
_STATUS_MAX = 24


@dataclass(frozen=True, slots=True)
class Glyphs:
    full: str = "█"
    point: str = "·"
    ellipsis: str = "…"


_ASCII = Glyphs("#", ".", "...")


def _style(line: Line, depth0: bool) -> str:
    row = line.row
    if row is None:
        return "dim"
    if row.error:
        return "red"
    if row.status in ("cached", "stopped", "paused"):
        return "yellow" if row.status != "cached" else "dim"
    return "green" if depth0 else "cyan"


def _failed(trace: Trace, lines_: list[Line]) -> tuple[dict[str, list[str]], int]:
    """(the texts of the failed rows among ``lines_`` shown, at most :data:`MAX_ERRORS_SHOWN`
    rows, each text once with the names of its rows — a session, its turn and a call often
    fail with one text; how many of the trace's failed spans are not: folded away or over the
    bound). Texts and names as exported, not yet escaped."""
    failed = [l.row for l in lines_ if l.row is not None and l.row.error][:MAX_ERRORS_SHOWN]
    named: dict[str, list[str]] = {}
    for row in failed:
        named.setdefault(row.error, []).append(row.name)
    return named, max(trace.totals.errors - len(failed), 0)


def trace_lines(trace: Trace, width: int, template: str | None = None,
                glyphs: Glyphs = Glyphs(), budget: int = TERMINAL_ROWS) -> tuple[list[Text], list[Text]]:
    """The lines of one trace's waterfall: (its head and table, ``width`` columns wide, to be
    cropped; the failed spans' texts, once per text, and the trace id and link, never to be
    cropped)."""
    root, facts = trace_head(trace)
    lines_ = select(trace, budget)
    labels = ["  " * l.depth + (escape.terminal(l.row.name, 80) if l.row else more_text(l)) for l in lines_]
    name_w = max(16, min(max((len(s) for s in labels), default=16), width * 7 // 20))
    status_w = min(_STATUS_MAX, max([_STATUS_W] + [len(l.row.status) for l in lines_ if l.row]))
    bar_w = max(10, width - name_w - _DUR_W - _TOK_W - _COST_W - status_w - 5)
    t0, t1 = trace.start_ns, trace.end_ns
    span = max(t1 - t0, 1)
    out: list[Text] = []
    head = Text()
    head.append(escape.terminal(root.name if root else "?", 80), style="bold")
    head.append(f"  {facts}", style="red" if trace.totals.failed else "")
    out.append(head)
    end_label = format_duration(span)
    axis = Text(" " * (name_w + 1))
    axis.append("0s".ljust(bar_w - len(end_label)) + end_label, style="dim")
    axis.append(" " + "time".rjust(_DUR_W) + " " + "in/out tok".rjust(_TOK_W) + " "
                + "cost".rjust(_COST_W) + " status", style="dim")
    out.append(axis)
    for line, label in zip(lines_, labels):
        text = Text()
        if len(label) > name_w:
            label = label[: name_w - len(glyphs.ellipsis)] + glyphs.ellipsis
        row = line.row
        style = _style(line, line.depth == 0)
        if row is None:
            text.append(label, style="dim")
            out.append(text)
            continue
        text.append(label.ljust(name_w) + " ", style="bold" if line.depth == 0 else "")
        c0, cells, point = bar(row, t0, span, bar_w)
        glyph = glyphs.point if point else glyphs.full
        text.append(" " * c0)
        text.append(glyph * cells, style=style)
        text.append(" " * (bar_w - c0 - cells) + " ")
        text.append(format_duration(row.duration_ns).rjust(_DUR_W) + " ")
        text.append(tokens_text(row).rjust(_TOK_W) + " ")
        text.append(format_cost(line.cost).rjust(_COST_W) + " ")
        text.append(escape.terminal(row.status, status_w), style=style)
        out.append(text)
    named, more = _failed(trace, lines_)
    notes = [Text(f"  error {', '.join(escape.terminal(n, 60) for n in names)}: {escape.terminal(error, 300)}",
                  style="red") for error, names in named.items()]
    if more:
        notes.append(Text(f"  … {more} more failed", style="red"))
    url = logged_url(template, trace.trace_id)
    notes.append(Text(f"trace {trace.trace_id:032x}" + (f"  {escape.terminal(url)}" if url else "")
                      + link_note(trace.not_exported)))
    return out, notes


def bar(row: Row, t0: int, span: int, width: int) -> tuple[int, int, bool]:
    """Where ``row`` stands on a time axis of ``width`` cells from ``t0`` over ``span`` ns:
    (first cell, cells, whether it is a point: no duration), within the axis."""
    def col(ns: int) -> int:
        return min(max(round((ns - t0) * width / span), 0), width)

    c0, c1 = col(row.start_ns), col(row.end_ns)
    if row.end_ns <= row.start_ns:
        return min(c0, width - 1), 1, True
    cells = max(1, c1 - c0)
    return min(c0, width - cells), cells, False


def stderr_console(stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> Console:
    """A rich console on stderr: colour only on a terminal without ``NO_COLOR``; its width,
    else :data:`DEFAULT_WIDTH`."""
    stream = stream or sys.stderr
    env = os.environ if env is None else env
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    width = DEFAULT_WIDTH
    if tty:
        try:
            width = os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
        if width <= 0:  # a pty nobody sized (some CI runners)
            width = DEFAULT_WIDTH
    return Console(file=stream, width=width, color_system="auto" if tty and not env.get("NO_COLOR") else None,
                   force_terminal=tty, highlight=False, emoji=False, markup=False, soft_wrap=False)


def shown_traces(collector: Collector, most: int = MAX_TRACES_SHOWN) -> tuple[list[Trace], int]:
    """(the traces to draw in their order — failed ones first, then the latest, at most
    ``most`` — and how many others there are, dropped ones included)."""
    traces = list(collector.traces.values())
    order = sorted(range(len(traces)), key=lambda i: (not traces[i].totals.failed, -i))[:most]
    return [traces[i] for i in sorted(order)], len(traces) - len(order) + collector.dropped_traces


def render(collector: Collector, console: Console, template: str | None = None,
           service: str | None = None) -> int:
    """Every kept trace's waterfall, then the totals line (naming ``service``, the run's service
    name, when given), on ``console``; returns how many traces were drawn."""
    utf = (console.encoding or "").lower().replace("-", "").startswith("utf")
    glyphs = Glyphs() if utf else _ASCII
    traces, others = shown_traces(collector)
    for trace in traces:
        console.print()
        table, notes = trace_lines(trace, console.width, template, glyphs)
        for line in table:
            console.print(line, no_wrap=True, overflow="crop", crop=True)
        for line in notes:  # whole: the terminal may wrap an error's text or the link
            console.print(line, soft_wrap=True)
    if others:
        console.print(Text(f"({others} other traces not drawn)", style="dim"))
    named = f" ({escape.terminal(service, 80)})" if service else ""
    console.print(Text(f"total{named}: " + totals_text(collector), style="bold"), soft_wrap=True)
    return len(traces)


def render_text(collector: Collector, width: int = DEFAULT_WIDTH, template: str | None = None) -> str:
    """The waterfalls as plain text, as a CI log shows them."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False, markup=False, soft_wrap=False)
    render(collector, console, template)
    return buf.getvalue()


def step_summary(collector: Collector, template: str | None = None, used: int = 0,
                 service: str | None = None, note: str | None = None) -> str:
    """The GitHub Actions step summary (Markdown): the totals, then per trace a table; at most
    :data:`STEP_SUMMARY_MAX` bytes, and what the summary's ``used`` bytes leave of
    :data:`STEP_SUMMARY_LIMIT` (a trace that does not fit is counted with those not shown;
    ``""`` when not even the heading fits). ``service``: the run's service name, in the heading
    (several runs of a job, each its own, are told apart on its summary page); ``note``: why the
    stream made no span (:func:`otelbridge.stats.nothing_traced`) or what its decoding skipped
    (:func:`otelbridge.stats.not_decoded`), under the heading."""
    md = escape.markdown
    t = collector.totals()
    named = f" \\({md(service, 80)}\\)" if service else ""
    mark = "⚠️" if note and not t.failed else "❌" if t.failed else "✅"
    heading = md(totals_text(collector)) if collector.traces else "nothing traced"
    out = [f"### {mark} otelbridge{named}: {heading}", ""] + ([f"> {md(note)}", ""] if note else [])
    size = len("\n".join(out).encode()) + 200  # (room for the line counting those not shown)
    if used + size > STEP_SUMMARY_LIMIT:  # (no room: even a heading would hide the whole)
        return ""
    traces, others = shown_traces(collector)
    for n, trace in enumerate(traces):
        block = _trace_block(trace, template)
        size += len(block.encode()) + 1
        if size > min(STEP_SUMMARY_MAX, STEP_SUMMARY_LIMIT - used):
            others += len(traces) - n
            break
        out.append(block)
    if others:
        out.append(f"_{plural(others, 'other trace')} not shown._")
        out.append("")
    return "\n".join(out)


def _trace_block(trace: Trace, template: str | None) -> str:
    """One trace in the step summary: its heading, its table, its link and its failures."""
    md = escape.markdown
    root, facts = trace_head(trace)
    out = [f"#### {md(root.name if root else '?', 120)} — {md(facts)}", "",
           f"| span | 0s – {md(format_duration(trace.end_ns - trace.start_ns))} | start | duration "
           "| tokens in/out | cost | status |",
           "|---|---|---:|---:|---:|---:|---|"]
    t0, span = trace.start_ns, max(trace.end_ns - trace.start_ns, 1)
    lines_ = select(trace, MARKDOWN_ROWS)
    for line in lines_:
        indent = "&nbsp;&nbsp;" * line.depth
        row = line.row
        if row is None:
            out.append(f"| {indent}{md(more_text(line))} | | | | | | |")
            continue
        status = ("❌ " if row.error else "") + md(row.status, 40)
        c0, cells, point = bar(row, t0, span, MARKDOWN_BAR)
        timeline = "░" * c0 + ("▏" if point else "█" * cells) + "░" * (MARKDOWN_BAR - c0 - cells)
        out.append(f"| {indent}{md(row.name, 120)} | `{timeline}` | +{format_duration(row.start_ns - t0)} | "
                   f"{format_duration(row.duration_ns)} | {md(tokens_text(row))} | "
                   f"{md(format_cost(line.cost))} | {status} |")
    out.append("")
    line = f"trace `{trace.trace_id:032x}`"
    link = escape.url(trace_url(template, trace.trace_id))
    if link:
        line += f" · [open trace]({link})"
    out.append(line + md(link_note(trace.not_exported)))
    named, more = _failed(trace, lines_)
    for error, names in named.items():
        out.append(f"> **{', '.join(md(n, 120) for n in names)}**: {md(error, 500)}")
        out.append("")
    if more:
        out.append(f"> … {more} more failed")
        out.append("")
    out.append("")
    return "\n".join(out)

