"""The views of one run, built from the finished spans (:class:`otelbridge.summary.Collector`
ahead of the span builder, :meth:`Report.sink`): trace links at once, and at exit the waterfall on stderr
(:mod:`otelbridge.waterfall`), the GitHub step summary, the job outputs (``GITHUB_OUTPUT``) and the
HTML page (:mod:`otelbridge.report`). A view that fails is one line on stderr, never the run's
outcome."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from .config import Config, ci_is_set

if TYPE_CHECKING:
    from .events import SpanRecord


def _write_private(path: str, text: str) -> None:
    """``path`` made ``text`` alone, mode 0600 (:func:`otelbridge.files.open_private`)."""
    from .files import open_private

    with open_private(path) as fh:
        fh.write(text)


def append_private(path: str, text: str) -> None:
    """Append ``text`` to ``path`` (created with mode 0600) as lines of their own: a file whose
    last line has no line end (another step's ``printf 'x=1'``) gets one first; ``""``: nothing
    (the file is not even made)."""
    from .files import open_fd

    if not text:
        return

    try:
        fd = open_fd(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        if stat.S_ISFIFO(os.fstat(fd).st_mode):  # read-write, a FIFO never lacks a reader: it
            os.close(fd)  # would fill and hold the run; written to alone, one nobody reads is said
            fd = open_fd(path, os.O_WRONLY | os.O_APPEND)
    except PermissionError:  # writable, not readable: appended as it is
        fd = open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_size:
            with contextlib.suppress(OSError):
                if os.pread(fd, 1, st.st_size - 1) != b"\n":
                    text = "\n" + text
        fh.write(text if text.endswith("\n") else text + "\n")




def _size(path: str) -> int:
    """The size of the file at ``path``, bytes (0: none, or no regular file)."""
    try:
        st = os.stat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


class Report:
    """The views of one run: trace links at once (``write(line)`` prints one line of ours on
    stderr), at exit the waterfall on stderr, the step summary, the job outputs and the HTML
    page. :meth:`sink` puts its :class:`Collector` ahead of the span builder."""

    def __init__(self, cfg: Config, write: Callable[[str], None],
                 env: Mapping[str, str] | None = None, stream: TextIO | None = None) -> None:
        env = os.environ if env is None else env
        self.cfg = cfg
        self.template = cfg.trace_url_template
        self.write = write
        self.stream = stream
        self.env = env
        if cfg.summary == "always":
            self.draw = True
        elif cfg.summary == "never" or cfg.quiet:
            self.draw = False
        else:
            self.draw = _isatty(stream or sys.stderr) or ci_is_set(env)
        self.step_summary_path = env.get("GITHUB_STEP_SUMMARY") if cfg.summary != "never" else None
        #: where the job outputs go: ``--outputs``, ``GITHUB_OUTPUT``
        self.outputs_paths = list(dict.fromkeys(p for p in (cfg.outputs, env.get("GITHUB_OUTPUT")) if p))
        self.html_path = getattr(cfg, "report", None)
        wanted = (self.draw or self.step_summary_path or self.outputs_paths or self.html_path
                  or self.template)
        self.collector = None
        if wanted:  # the views' modules are imported only then
            from .summary import Collector

            self.collector = Collector(on_new_trace=self._link,
                                       not_exported=lambda trace_id: self.not_exported(trace_id))
        self._linked: OrderedDict[int, None] = OrderedDict()
        #: why no backend a link points at holds a trace, or ``None`` (the pipeline sets it)
        self.not_exported: Callable[[int], str | None] = lambda trace_id: None
        #: the service name the run was given, in each view (several runs of a job told apart;
        #: the pipeline sets it from the resource)
        self.service: str | None = None

    def sink(self, builder: Any) -> Callable[[SpanRecord], None]:
        """The ``emit`` that feeds ``builder`` (a :class:`~otelbridge.spans.SpanBuilder`): each
        record redacted once, read by the views, then built. The views read every span built,
        before the sampler decides (an unsampled ``TRACEPARENT`` or ``always_off`` sampler drops
        spans from the export, never from the run's own summary and outputs)."""
        collector = self.collector
        if collector is None:
            return builder.emit
        from .spans import redacted

        def emit(rec: SpanRecord) -> None:
            try:
                rec = redacted(rec)
            except Exception:  # the builder says why, and builds nothing
                builder.emit(rec)
                return
            collector.emit(rec)
            builder.emit_redacted(rec)

        return emit

    def on_trace(self, trace_id: int, label: str) -> None:
        """A trace begins (the tracker knows its root before any of its spans ends): its link
        now. ``label``'s first word says what it is (``session``, ``workflow``, ``run``)."""
        self._link(trace_id, label.partition(" ")[0])

    def _link(self, trace_id: int, what: str = "") -> None:
        if not self.template or trace_id in self._linked:
            return
        from . import escape
        from .summary import MAX_LINKED, link_note, logged_url

        self._linked[trace_id] = None
        if len(self._linked) > MAX_LINKED:
            self._linked.popitem(last=False)
        if not what and f"-{trace_id:032x}-" in (self.cfg.traceparent or ""):
            what = "from TRACEPARENT"  # (the spans of every session and workflow joined it)
        what = what if what in ("session", "workflow", "run", "from TRACEPARENT") else ""
        self.write(f"trace{' ' + what if what else ''}: {escape.visible(logged_url(self.template, trace_id))}"
                   + link_note(self.not_exported(trace_id)))

    def not_exported_at_all(self, why: str) -> None:
        """No trace reached the backend (``why``): every trace link the views show says so."""
        for trace in self.collector.traces.values() if self.collector is not None else ():
            trace.not_exported = trace.not_exported or why

    def finish(self, note: str | None = None) -> None:
        """At exit: every view on (``note``, for the step summary: why the stream made no span,
        or what its decoding skipped).
        Never raises: a view never changes the run's outcome."""
        collector = self.collector
        if collector is None:
            return
        from . import escape, redact, waterfall
        from .summary import job_outputs

        # a value found after a span had ended left that span's texts as they were: the views
        # are drawn now, with every value found in the run
        found = redact.current().found
        if found.markers:
            collector.hide(found.hide)
        service = self.service
        if self.draw and collector.traces:
            self._view("waterfall not drawn", lambda: waterfall.render(
                collector, waterfall.stderr_console(self.stream, self.env), self.template, service))
        if self.step_summary_path and (collector.traces or note):
            self._view(f"cannot append to GITHUB_STEP_SUMMARY {escape.terminal(self.step_summary_path, 200)!r}",
                       lambda: self._step_summary(waterfall.step_summary(
                           collector, self.template, _size(self.step_summary_path), service, note)))
        for path in self.outputs_paths:  # (--outputs: this run's file, written whole)
            ours = path == self.cfg.outputs
            self._view(f"cannot {'write' if ours else 'append to'} {'--outputs' if ours else 'GITHUB_OUTPUT'} "
                       f"{escape.terminal(path, 200)!r}",
                       lambda path=path, ours=ours: (_write_private if ours else append_private)(
                           path, job_outputs(collector)))
        if self.html_path:
            from .report import write_page

            self._view(f"cannot write --report {escape.terminal(self.html_path, 200)!r}",
                       lambda: write_page(self.html_path, collector, self.template, service))

    def _step_summary(self, text: str) -> None:
        """Append ``text``; none (GitHub's 1 MiB leaves no room) is said."""
        if text:
            append_private(self.step_summary_path, text)  # type: ignore[arg-type]
        else:
            self.write("GITHUB_STEP_SUMMARY holds nearly 1 MiB already, the most GitHub shows: "
                       "this run's summary is left out")

    def _view(self, failed: str, make: Callable[[], Any]) -> None:
        """``make()`` one view; its failure is one line (rich raises ``SystemExit`` when
        stderr's reader is gone)."""
        try:
            make()
        except OSError as exc:
            self.write(f"{failed}: {exc.strerror or exc}")
        except (Exception, SystemExit) as exc:
            self.write(f"{failed}: {type(exc).__name__}")


def _isatty(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
