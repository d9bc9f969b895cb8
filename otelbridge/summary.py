"""What the person reading the CI log sees: trace links as traces appear, a waterfall per workflow
trace on stderr at exit, and the GitHub Actions step summary (Markdown).

:class:`Report` is a second sink of the tracker next to the span builder: it keeps, per workflow
trace, only what it draws (one small :class:`Bar` per workflow, phase and agent; at most
:data:`MAX_WORKFLOWS` workflows — the oldest are forgotten first — and :data:`MAX_AGENT_ROWS`
agents each, the rest folded into counts), so memory stays bounded however long the stream runs.

Untrusted text (workflow names, phase titles, agent labels, error texts) is escaped for where it
lands: :func:`terminal_text` for the waterfall and :func:`markdown_text` for the step summary,
both from :mod:`otelbridge.redact` (no escape sequences, no Markdown, HTML, link or table-cell
injection). Rows are ``rich.text.Text`` objects, never markup strings, so ``[red]`` in a
label is text.

Times: the records' epoch ns; durations are shown in s/ms/min. Tokens: ``workflow.agent.tokens``
per agent, ``workflow.usage.total_tokens`` per workflow (SPAN-MODEL.md attribute keys).

Environment read here: ``GITHUB_STEP_SUMMARY`` (the file the step summary is appended to).
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TextIO
from urllib.parse import quote

from rich.console import Console
from rich.text import Text

from . import redact
from .config import TRACE_ID_PLACEHOLDER, Config, ci_is_set
from .events import SpanRecord

#: Workflows kept for the waterfall (the oldest are dropped first, and counted).
MAX_WORKFLOWS = 50
#: Agent rows drawn per workflow; further agents are folded into one "more" row.
MAX_AGENT_ROWS = 200
#: Error texts listed under a waterfall.
MAX_ERRORS_SHOWN = 5
#: Width when stderr is not a terminal.
DEFAULT_WIDTH = 100
#: Trace ids remembered for printing each link once.
MAX_LINKED = 10_000

def terminal_text(text: str | None, limit: int = 120) -> str:
    """``text`` safe for a terminal (:func:`otelbridge.redact.terminal`: no escape sequences,
    control characters or bidirectional overrides, secrets redacted), at most ``limit`` chars."""
    return redact.terminal(text or "", limit)


def markdown_text(text: str | None, limit: int = 120) -> str:
    """``text`` safe inside a GitHub Markdown table cell (:func:`otelbridge.redact.markdown`:
    HTML entities and Markdown punctuation escaped, so no emphasis, link, raw HTML, autolink or
    ``|`` cell break can form)."""
    return redact.markdown(text or "", limit)


def trace_url(template: str | None, trace_id: int) -> str | None:
    """``template`` with ``{trace_id}`` replaced by the 32-hex-digit id (plain replacement: other
    braces, as in Grafana Explore URLs, stay as they are), or ``None`` without a template."""
    if not template:
        return None
    return template.replace(TRACE_ID_PLACEHOLDER, f"{trace_id:032x}")


def format_duration(ns: int) -> str:
    """``1234567890`` ns → ``"1.2s"``; under a second in ms, over a minute as ``"2m03s"``."""
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


def format_tokens(tokens: int | None) -> str:
    return "" if tokens is None else f"{tokens:,}"


# --------------------------------------------------------------------------- what is kept


@dataclass(slots=True)
class Bar:
    """One drawn row: a workflow, phase or agent. Times epoch ns; text already cleaned."""

    kind: str
    index: int
    label: str
    start_ns: int
    end_ns: int
    tokens: int | None = None
    status: str = ""
    error: str | None = None
    cached: bool = False
    incomplete: bool = False
    phase_index: int | None = None


@dataclass(slots=True)
class Workflow:
    """What the waterfall of one workflow run needs."""

    trace_id: int
    task_id: str
    root: Bar | None = None
    tool_uses: int | None = None
    phases: dict[int, Bar] = field(default_factory=dict)
    agents: list[Bar] = field(default_factory=list)
    more_agents: int = 0
    more_tokens: int = 0
    more_errors: int = 0

    def agent_count(self) -> int:
        return len(self.agents) + self.more_agents


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Collector:
    """Keeps what the waterfall draws from the tracker's records (a tracker ``emit`` sink)."""

    def __init__(self, max_workflows: int = MAX_WORKFLOWS, max_agents: int = MAX_AGENT_ROWS) -> None:
        self.max_workflows = max_workflows
        self.max_agents = max_agents
        self.workflows: OrderedDict[tuple, Workflow] = OrderedDict()
        self.dropped = 0
        self.errors = 0

    def emit(self, rec: SpanRecord) -> None:
        """Take one record; anything but a workflow's root, phase or agent is ignored. Never
        raises (it shares the tracker's emit with the span builder)."""
        try:
            self._take(rec)
        except Exception:
            self.errors += 1

    def _take(self, rec: SpanRecord) -> None:
        attrs = rec.attributes
        task_id = attrs.get("workflow.task_id")
        if task_id is None:
            return
        key = (rec.trace_id, attrs.get("gen_ai.conversation.id"), task_id)
        wf = self.workflows.get(key)
        if wf is None:
            if len(self.workflows) >= self.max_workflows:
                self.workflows.popitem(last=False)
                self.dropped += 1
            wf = self.workflows[key] = Workflow(rec.trace_id, str(task_id))
        op = attrs.get("gen_ai.operation.name")
        if op == "invoke_workflow":
            wf.root = Bar("workflow", 0, terminal_text(rec.name.partition(" ")[2] or rec.name),
                          rec.start_ns, rec.end_ns, _int(attrs.get("workflow.usage.total_tokens")),
                          str(attrs.get("workflow.status", "")), terminal_text(rec.error) if rec.error else None,
                          incomplete=attrs.get("workflow.status") == "incomplete")
            wf.tool_uses = _int(attrs.get("workflow.usage.tool_uses"))
        elif op == "invoke_agent" and "workflow.agent.index" in attrs:
            if len(wf.agents) >= self.max_agents:
                wf.more_agents += 1
                wf.more_tokens += _int(attrs.get("workflow.agent.tokens")) or 0
                wf.more_errors += rec.error is not None
                return
            cached = attrs.get("workflow.agent.cached") is True
            incomplete = rec.error_type == "incomplete"
            state = str(attrs.get("workflow.agent.state", ""))
            wf.agents.append(Bar(
                "agent", _int(attrs["workflow.agent.index"]) or 0,
                terminal_text(attrs.get("gen_ai.agent.name") or rec.name.partition(" ")[2]),
                rec.start_ns, rec.end_ns, _int(attrs.get("workflow.agent.tokens")),
                "incomplete" if incomplete else state,
                terminal_text(rec.error) if rec.error else None, cached, incomplete,
                _int(attrs.get("workflow.phase.index")),
            ))
        elif "workflow.phase.index" in attrs and op is None:
            index = _int(attrs["workflow.phase.index"]) or 0
            wf.phases[index] = Bar("phase", index,
                                   terminal_text(attrs.get("workflow.phase.title") or f"#{index}"),
                                   rec.start_ns, rec.end_ns)

    def finished(self) -> list[Workflow]:
        """The workflows whose root was seen, oldest first."""
        return [wf for wf in self.workflows.values() if wf.root is not None]


# --------------------------------------------------------------------------- rows


@dataclass(slots=True)
class Row:
    """A bar placed in the waterfall: depth 0 workflow, 1 phase or phase-less agent, 2 agent."""

    bar: Bar
    depth: int
    status: str
    tokens: int | None


def rows(wf: Workflow) -> list[Row]:
    """The workflow, then phases by start (ties: index), each followed by its agents by start;
    agents without a (known) phase are placed among the phases by their start."""
    assert wf.root is not None
    out = [Row(wf.root, 0, wf.root.status, wf.root.tokens
               if wf.root.tokens is not None else sum(a.tokens or 0 for a in wf.agents))]
    members: dict[int, list[Bar]] = {}
    loose: list[Bar] = []
    for agent in wf.agents:
        if agent.phase_index is not None and agent.phase_index in wf.phases:
            members.setdefault(agent.phase_index, []).append(agent)
        else:
            loose.append(agent)
    top: list[tuple[int, int, int, Bar]] = [(p.start_ns, 0, p.index, p) for p in wf.phases.values()]
    top += [(a.start_ns, 1, a.index, a) for a in loose]
    for _, _, _, bar in sorted(top, key=lambda t: t[:3]):
        if bar.kind == "agent":
            out.append(Row(bar, 1, _agent_status(bar), bar.tokens))
            continue
        agents = sorted(members.get(bar.index, []), key=lambda a: (a.start_ns, a.index))
        tokens = sum(a.tokens or 0 for a in agents) if any(a.tokens is not None for a in agents) else None
        if any(a.error and not a.incomplete for a in agents):
            status = "error"
        elif any(a.incomplete for a in agents):
            status = "incomplete"
        else:
            status = "done" if agents else ""
        out.append(Row(bar, 1, status, tokens))
        out.extend(Row(a, 2, _agent_status(a), a.tokens) for a in agents)
    return out


def _agent_status(bar: Bar) -> str:
    return "cached" if bar.cached else bar.status


def _style(row: Row) -> str:
    if row.bar.cached or row.status == "cached":
        return "dim"
    if row.status in ("error", "failed") or (row.bar.error and not row.bar.incomplete):
        return "red"
    if row.status == "incomplete" or row.bar.incomplete:
        return "yellow"
    if row.status == "stopped":
        return "yellow"
    return "green" if row.depth == 0 else "cyan"


# --------------------------------------------------------------------------- waterfall


@dataclass(frozen=True, slots=True)
class Glyphs:
    full: str = "█"
    incomplete: str = "░"
    point: str = "·"
    ellipsis: str = "…"


_ASCII = Glyphs("#", "~", ".", "...")

_DUR_W, _TOK_W, _STATUS_W = 8, 11, 10


def waterfall(wf: Workflow, width: int, template: str | None = None,
              glyphs: Glyphs = Glyphs()) -> list[Text]:
    """The lines of one workflow's waterfall, ``width`` columns wide.

    Line 1: name, status, duration, tokens, trace id; line 2: the time axis; then one line per
    row of :func:`rows`: label, bar (start/end columns proportional to the shared time axis; a
    zero-length cached agent is one point), duration, tokens, status; then the totals, the error
    texts and the trace link.
    """
    root = wf.root
    assert root is not None
    table = rows(wf)
    name_w = max(12, min(max(len(r.bar.label) + 2 * r.depth for r in table), width // 4))
    bar_w = max(10, width - name_w - _DUR_W - _TOK_W - _STATUS_W - 4)
    t0 = root.start_ns
    span = max(root.end_ns - t0, 1)

    def col(ns: int) -> int:
        return min(max(round((ns - t0) * bar_w / span), 0), bar_w)

    lines: list[Text] = []
    head = Text()
    head.append(f"{root.label}", style="bold")
    head.append(f"  {root.status}", style=_style(table[0]))
    head.append(f"  {format_duration(root.end_ns - root.start_ns)}")
    if table[0].tokens is not None:
        head.append(f"  {format_tokens(table[0].tokens)} tokens")
    head.append(f"  trace {wf.trace_id:032x}", style="dim")
    lines.append(head)
    axis = Text(" " * name_w + " ")
    end_label = format_duration(span)
    axis.append("0s".ljust(bar_w - len(end_label)) + end_label, style="dim")
    lines.append(axis)

    for row in table:
        bar = row.bar
        line = Text()
        label = ("  " * row.depth + bar.label)
        if len(label) > name_w:
            label = label[: name_w - len(glyphs.ellipsis)] + glyphs.ellipsis
        line.append(label.ljust(name_w) + " ", style="bold" if row.depth < 2 else "")
        c0, c1 = col(bar.start_ns), col(bar.end_ns)
        if bar.cached or bar.end_ns <= bar.start_ns:
            c0 = min(c0, bar_w - 1)
            cells, glyph = 1, glyphs.point
        else:
            cells = max(1, c1 - c0)
            c0 = min(c0, bar_w - cells)
            glyph = glyphs.incomplete if (bar.incomplete or row.status == "incomplete") else glyphs.full
        style = _style(row)
        line.append(" " * c0)
        line.append(glyph * cells, style=style)
        line.append(" " * (bar_w - c0 - cells) + " ")
        line.append(format_duration(bar.end_ns - bar.start_ns).rjust(_DUR_W) + " ")
        tokens = format_tokens(row.tokens)
        line.append((tokens + " tok" if tokens else "").rjust(_TOK_W) + " ")
        line.append(row.status[:_STATUS_W], style=style)
        lines.append(line)
    if wf.more_agents:
        lines.append(Text(f"  {glyphs.ellipsis} {wf.more_agents} more agents not drawn "
                          f"({format_tokens(wf.more_tokens)} tokens, {wf.more_errors} errors)",
                          style="dim"))

    errors = sum(1 for a in wf.agents if a.error and not a.incomplete) + wf.more_errors
    cached = sum(1 for a in wf.agents if a.cached)
    incomplete = sum(1 for a in wf.agents if a.incomplete)
    totals = (f"totals: {len(wf.phases)} phases, {wf.agent_count()} agents "
              f"({errors} error, {cached} cached, {incomplete} incomplete)")
    if table[0].tokens is not None:
        totals += f", {format_tokens(table[0].tokens)} tokens"
    if wf.tool_uses is not None:
        totals += f", {wf.tool_uses} tool uses"
    totals += f", {format_duration(root.end_ns - root.start_ns)}"
    lines.append(Text(totals))
    failures = [(root.label, root.error)] if root.error else []
    failures += [(a.label, a.error) for a in wf.agents if a.error]
    for label, error in failures[:MAX_ERRORS_SHOWN]:
        lines.append(Text(f"  error {label}: {error}", style="red"))
    if len(failures) > MAX_ERRORS_SHOWN:
        lines.append(Text(f"  {len(failures) - MAX_ERRORS_SHOWN} more errors", style="red"))
    url = trace_url(template, wf.trace_id)
    lines.append(Text(f"trace {wf.trace_id:032x}" + (f"  {url}" if url else "")))  # never cropped
    return lines


def stderr_console(stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> Console:
    """A rich console on stderr: colour only when it is a terminal (and ``NO_COLOR`` is unset),
    width from the terminal, else :data:`DEFAULT_WIDTH`."""
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


def render(collector: Collector, console: Console, template: str | None = None) -> int:
    """Print every finished workflow's waterfall on ``console``; returns how many were drawn."""
    utf = (console.encoding or "").lower().replace("-", "").startswith("utf")
    glyphs = Glyphs() if utf else _ASCII
    drawn = collector.finished()
    for wf in drawn:
        console.print()
        lines = waterfall(wf, console.width, template, glyphs)
        for line in lines[:-1]:
            console.print(line, no_wrap=True, overflow="crop", crop=True)
        console.print(lines[-1], soft_wrap=True)  # the link: whole, the terminal may wrap it
    if collector.dropped:
        console.print(Text(f"({collector.dropped} earlier workflows not drawn)", style="dim"))
    return len(drawn)


def render_text(collector: Collector, width: int = DEFAULT_WIDTH, template: str | None = None) -> str:
    """The waterfalls as plain text (no colour), as a CI log shows them."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False, markup=False, soft_wrap=False)
    render(collector, console, template)
    return buf.getvalue()


# --------------------------------------------------------------------------- step summary


def _md_link(url: str) -> str:
    """``url`` safe as a Markdown link target: spaces, parentheses and angle brackets encoded."""
    return quote(url, safe=":/?#[]@!$&'*+,;=%{}~")


def step_summary(collector: Collector, template: str | None = None) -> str:
    """The GitHub Actions step summary (Markdown) of every finished workflow."""
    out: list[str] = []
    for wf in collector.finished():
        root = wf.root
        assert root is not None
        table = rows(wf)
        icon = "❌" if root.error else ("⚠️" if root.status in ("stopped", "incomplete") else "✅")
        out.append(f"### {icon} otelbridge: {markdown_text(root.label)} — {markdown_text(root.status)}")
        out.append("")
        out.append("| span | start | duration | tokens | status |")
        out.append("|---|---:|---:|---:|---|")
        for row in table:
            bar = row.bar
            label = {0: "**workflow** ", 1: "phase " if bar.kind == "phase" else "agent ",
                     2: "↳ agent "}[row.depth] + markdown_text(bar.label)
            status = markdown_text(row.status)
            if row.status in ("error", "failed") or (bar.error and not bar.incomplete):
                status = f"❌ {status}"
            out.append(f"| {label} | +{format_duration(bar.start_ns - root.start_ns)} | "
                       f"{format_duration(bar.end_ns - bar.start_ns)} | "
                       f"{format_tokens(row.tokens)} | {status} |")
        if wf.more_agents:
            out.append(f"| … {wf.more_agents} more agents | | | {format_tokens(wf.more_tokens)} | |")
        out.append("")
        errors = sum(1 for a in wf.agents if a.error and not a.incomplete) + wf.more_errors
        line = (f"**Totals:** {len(wf.phases)} phases · {wf.agent_count()} agents · {errors} errors · "
                f"{format_tokens(table[0].tokens) or 0} tokens · "
                f"{format_duration(root.end_ns - root.start_ns)} · trace `{wf.trace_id:032x}`")
        url = trace_url(template, wf.trace_id)
        if url:
            line += f" · [open trace]({_md_link(url)})"
        out.append(line)
        if root.error:
            out.append("")
            out.append(f"> {markdown_text(root.error, 300)}")
        out.append("")
    if collector.dropped:
        out.append(f"_{collector.dropped} earlier workflows not shown._")
        out.append("")
    return "\n".join(out)


def append_step_summary(path: str, text: str) -> None:
    """Append ``text`` to ``path`` (``GITHUB_STEP_SUMMARY``), creating it with mode 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")


# --------------------------------------------------------------------------- the report


class Report:
    """The reports of one run: trace links at once, waterfall and step summary at exit.

    ``write(line)`` prints one line of ours on stderr (``app.say``).
    """

    def __init__(self, cfg: Config, write: Callable[[str], None],
                 env: Mapping[str, str] | None = None, stream: TextIO | None = None) -> None:
        env = os.environ if env is None else env
        self.template = cfg.trace_url_template
        self.write = write
        self.stream = stream
        self.env = env
        stream_tty = _isatty(stream or sys.stderr)
        if cfg.summary == "always":
            self.draw = True
        elif cfg.summary == "never" or cfg.quiet:
            self.draw = False
        else:
            self.draw = stream_tty or ci_is_set(env)
        self.step_summary_path = env.get("GITHUB_STEP_SUMMARY") if cfg.summary != "never" else None
        self.collector = Collector() if (self.draw or self.step_summary_path) else None
        self._linked: OrderedDict[int, None] = OrderedDict()

    @property
    def emit(self) -> Callable[[SpanRecord], None] | None:
        """The record sink, or ``None`` when nothing will be drawn (no cost per record then)."""
        return self.collector.emit if self.collector is not None else None

    def on_trace(self, trace_id: int, label: str) -> None:
        """A new trace's root is known: print its link once (with a template)."""
        if not self.template or trace_id in self._linked:
            return
        self._linked[trace_id] = None
        if len(self._linked) > MAX_LINKED:
            self._linked.popitem(last=False)
        self.write(f"trace {terminal_text(label, 80)}: {trace_url(self.template, trace_id)}")

    def finish(self) -> None:
        """At exit: the waterfalls on stderr, the step summary appended. Never raises."""
        if self.collector is None:
            return
        if self.draw:
            try:
                render(self.collector, stderr_console(self.stream, self.env), self.template)
            except (Exception, SystemExit) as exc:  # a report never changes the run's outcome
                # (rich raises SystemExit(1) when stderr's reader has gone)
                self.write(f"waterfall not drawn: {exc}")
        if self.step_summary_path and self.collector.finished():
            try:
                append_step_summary(self.step_summary_path, step_summary(self.collector, self.template))
            except OSError as exc:
                self.write(f"cannot append to GITHUB_STEP_SUMMARY {self.step_summary_path!r}: "
                           f"{exc.strerror}")


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
