"""``--report PATH``: one self-contained HTML page of the run, built from a
:class:`otelbridge.summary.Collector` (the finished spans as exported).

The page has inline CSS only — no script, no external asset, and a Content-Security-Policy of
``default-src 'none'`` — so it works offline and as a CI artifact, and nothing in it can run.
Per trace: the root span's name and facts, the trace id and link, a time axis and one row per
shown span (:func:`otelbridge.shown.select`, :data:`HTML_ROWS` per trace): the name indented
by depth, a bar placed on the axis (``left``/``width`` in percent of the trace's duration; a
bar at the end kept inside its track),
duration, tokens in/out, cost and status; then every failed span's text, whole as exported
(redacted, capped). Every text goes through :func:`otelbridge.escape.html`; links only when
``http``/``https`` (:func:`otelbridge.escape.url`). Written with mode 0600.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from . import __version__, escape
from .shown import more_text, select, tokens_text, totals_text, trace_head
from .summary import Collector, Trace, format_cost, format_duration, link_note, trace_url

#: Rows drawn per trace (the rest folded into "… N more").
HTML_ROWS = 2000

_CSS = """
:root{color-scheme:light dark;--ok:#2f9e6e;--err:#d33;--dim:#8a8f98;--line:#8883}
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:110rem}
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1.1rem;margin:1.8rem 0 .2rem}
.facts,.id{color:var(--dim)}.id{font:12px ui-monospace,monospace}
.row{display:grid;grid-template-columns:minmax(14rem,26%) minmax(8rem,1fr) 5rem 7rem 5.5rem 8rem;
 gap:.6rem;align-items:center;border-bottom:1px solid var(--line);min-height:1.5rem}
.row>span{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.num{text-align:right;font-variant-numeric:tabular-nums}
.head{color:var(--dim);font-size:12px}
.track{position:relative;height:.9rem;background:#8881}
.bar{position:absolute;top:0;bottom:0;min-width:2px;background:var(--ok);border-radius:2px}
.bar.error{background:var(--err)}.bar.cached,.bar.stopped,.bar.paused{background:#c90}
.more{color:var(--dim);font-style:italic}
.status.error{color:var(--err);font-weight:600}
.row>span.status{white-space:normal;overflow-wrap:anywhere}
.errors{margin:.6rem 0 0;padding-left:1.2rem}
.errors pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0 .6rem;
 font:12px ui-monospace,monospace}
@media (max-width:60rem){body{margin:.8rem;font-size:12px}
 .row{grid-template-columns:minmax(8rem,30%) minmax(6rem,1fr) 4rem 5.5rem 4.5rem 6rem;gap:.4rem}}
"""


def _pct(value: float) -> str:
    return f"{max(0.0, min(value, 100.0)):.3f}%"


def _left(value: float) -> str:
    """A bar's ``left``: at most its track's width less the bar's 2 px (a span at the trace's
    end keeps a mark inside the track, whose overflow is hidden)."""
    return f"min({_pct(value)},calc(100% - 2px))"


def trace_section(trace: Trace, template: str | None, names: Mapping[int, str] | None = None) -> list[str]:
    """The HTML lines of one trace; ``names``: the root span's name of each trace on the page (a
    linked one is a link to its section)."""
    h = escape.html
    root, facts = trace_head(trace)
    t0, t1 = trace.start_ns, trace.end_ns
    span = max(t1 - t0, 1)
    out = [f'<section class="trace" id="t{trace.trace_id:032x}">',
           f"<h2>{h(root.name if root else '?')}</h2>",
           f'<p class="facts">{h(facts)}</p>']
    link = escape.url(trace_url(template, trace.trace_id))
    ident = f'<span class="id">trace {trace.trace_id:032x}</span>'
    if link:
        ident += (f' · <a href="{h(link)}" rel="noreferrer noopener">open trace</a>'
                  f'{h(link_note(trace.not_exported))}')
    out.append(f"<p>{ident}</p>")
    if trace.linked:
        names = names or {}
        linked = [f'<a href="#t{t:032x}">{h(names[t])}</a>' if t in names
                  else f'<span class="id">trace {t:032x}</span>' for t in sorted(trace.linked)]
        out.append(f'<p class="facts">linked: {", ".join(linked)}</p>')
    out.append('<div class="row head"><span>span</span><span>0s … '
               f'{h(format_duration(span))}</span><span class="num">time</span>'
               '<span class="num">tokens in/out</span><span class="num">cost</span><span>status</span></div>')
    lines = select(trace, HTML_ROWS)
    for line in lines:
        pad = f' style="padding-left:{line.depth * 1.1:.1f}rem"'
        row = line.row
        if row is None:
            out.append(f'<div class="row more"><span{pad}>{h(more_text(line))}</span>'
                       "<span></span><span></span><span></span><span></span><span></span></div>")
            continue
        state = "error" if row.error else row.status if row.status in ("cached", "stopped", "paused") else "ok"
        left = (row.start_ns - t0) * 100 / span
        width = row.duration_ns * 100 / span
        out.append(
            f'<div class="row"><span{pad} title="{h(row.name)}">{h(row.name)}</span>'
            f'<span class="track"><span class="bar {state}" style="left:{_left(left)};'
            f'width:{_pct(width)}"></span></span>'
            f'<span class="num">{h(format_duration(row.duration_ns))}</span>'
            f'<span class="num">{h(tokens_text(row))}</span>'
            f'<span class="num">{h(format_cost(line.cost))}</span>'
            f'<span class="status {state}" title="{h(row.status)}">{h(row.status)}</span></div>')
    failed = [l.row for l in lines if l.row is not None and l.row.error]
    if failed:
        out.append('<ul class="errors">')
        out.extend(f"<li><b>{h(r.name)}</b><pre>{h(r.error)}</pre></li>" for r in failed)
        out.append("</ul>")
    out.append("</section>")
    return out


def page(collector: Collector, template: str | None = None, service: str | None = None) -> str:
    """The whole HTML document (its title names ``service``, the run's service name, if given)."""
    h = escape.html
    title = "otelbridge run report" + (f" — {h(service, 80)}" if service else "")
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{title}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="facts">{h(totals_text(collector))} · written '
        f"{h(time.strftime('%Y-%m-%d %H:%M:%S %Z'))} by otelbridge {h(__version__)}</p>",
    ]
    names = {t.trace_id: root.name for t in collector.traces.values() if (root := t.root()) is not None}
    for trace in collector.traces.values():
        out.extend(trace_section(trace, template, names))
    if collector.dropped_traces:
        out.append(f'<p class="more">{collector.dropped_traces} earlier traces not shown.</p>')
    if not collector.traces:
        out.append('<p class="more">No spans were built from the stream.</p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write_page(path: str, collector: Collector, template: str | None = None,
               service: str | None = None) -> None:
    """Write :func:`page` to ``path``, created or truncated, mode 0600. ``OSError`` as raised."""
    data = page(collector, template, service).encode("utf-8")
    from .files import open_fd

    fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
