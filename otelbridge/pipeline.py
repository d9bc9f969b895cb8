"""Stages 2–5 wired together (lines → dialects → tracker → spans → export) for the three ways a
stream comes: live (:class:`LiveFront`, in the decoding process or on a thread of the tee's),
:func:`replay` of recordings and :func:`follow` of a growing file.

Threads. :class:`LiveFront`'s one handoff thread builds the :class:`Pipeline` (OpenTelemetry
imports, exporters, redaction, report), then splits lines, decodes, tracks, builds spans and
fires the grace-window timers. ``replay`` and ``follow`` have no passthrough to protect: they run
the :class:`Pipeline` synchronously (replay on the main thread, paced by the exporters; follow on
its event loop) and decode every line. In every mode the tracker is touched by one thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import posixpath
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from . import dialects, redact
from .app import install_loop, say
from .clock import Clock, StreamTimers
from .config import Config, without
from .events import SpanRecord
from .handoff import BEHIND_MESSAGE, DEFAULT_LIMIT, SETUP_TIMEOUT_S, Handoff
from .ids import Ids
from .lines import Gap, LinePosition, LineSplitter
from .stats import Stats
from .tracker import Context, Parent, SpanRef, Tracker

if TYPE_CHECKING:  # imported where used: set-up runs on the handoff's thread
    from .export import Exporters
    from .spans import SpanBuilder
    from .summary import Report

log = logging.getLogger("otelbridge")

EXIT_EXPORT_FAILED = 1
MAX_ARGS = 64

#: GIL switch interval, seconds, for the tee's thread when decoding shares its process (no
#: ``fork``): decoding, span building and OTLP encoding hold the GIL for milliseconds
#: (../shared/MEASURED.md; Python's default is 5 ms) and every wait for it delays the stream.
SWITCH_INTERVAL_S = 0.0001


def install_redaction(cfg: Config) -> None:
    """Make ``cfg``'s redaction the process-wide one (every ``redact.clean`` call uses it);
    warn once on stderr when the default patterns are off."""
    redact.install(
        redact.Redactor.build(
            cfg.redact_patterns,
            defaults=cfg.default_redaction,
            max_length=cfg.max_attribute_length,
        )
    )
    if not cfg.default_redaction:
        say("warning: --no-default-redaction: secrets in the stream (tokens, keys, e-mails) are "
            "exported as they are; use it for local debugging only")


def parse_traceparent(cfg: Config):
    """``TRACEPARENT``/``TRACESTATE`` → (:class:`Parent`, SpanContext) or (None, None)."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not cfg.traceparent:
        return None, None
    carrier = {"traceparent": cfg.traceparent}
    if cfg.tracestate:
        carrier["tracestate"] = cfg.tracestate
    ctx = TraceContextTextMapPropagator().extract(carrier)
    span_ctx = trace.get_current_span(ctx).get_span_context()
    if not span_ctx.is_valid:
        say("TRACEPARENT is not a valid W3C traceparent; ignoring it")
        return None, None
    return Parent(span_ctx.trace_id, span_ctx.span_id), span_ctx


def feed_lines(splitter: LineSplitter, stats: Stats, buf: bytearray, n: int) -> None:
    """``splitter.feed(buf, n)``; a splitter bug costs the chunk's decoding (counted), never the
    stream, which was already written."""
    try:
        splitter.feed(buf, n)
    except Exception as exc:
        stats.bad_lines += 1
        log.warning("chunk not decoded: %s", exc)


@dataclass
class RunSpan:
    """The wrapper's ``run {basename of CMD}`` span (SPAN-MODEL.md, "wrapped process"): ids
    allocated before the child starts (the child's ``TRACEPARENT`` names it), wall-clock times
    in epoch ns, ``process.*`` attributes; ERROR on a non-zero exit status."""

    argv: tuple[str, ...]
    ref: SpanRef
    parent: Parent | None
    start_ns: int = field(default_factory=time.time_ns)
    pid: int | None = None
    #: ``--capture-content``: the arguments are exported (they carry prompts: ``claude -p "..."``)
    capture_content: bool = False

    def traceparent(self, sampled: bool) -> str:
        """The W3C ``traceparent`` of this span, for the child's environment."""
        return f"00-{self.ref.trace_id:032x}-{self.ref.span_id:016x}-{'01' if sampled else '00'}"

    def record(self, exit_code: int) -> SpanRecord:
        argv = self.argv[:MAX_ARGS]
        attrs: dict = {
            "process.command": redact.clean(argv[0]),
            "process.args_count": len(self.argv),
            "process.exit.code": exit_code,
        }
        if self.capture_content:  # a command line is content: `claude -p "<prompt>"`
            attrs["process.command_args"] = [redact.clean(a) for a in argv]
        if self.pid is not None:
            attrs["process.pid"] = self.pid
        base = posixpath.basename(self.argv[0].replace("\\", "/").rstrip("/")) or self.argv[0]
        rec = SpanRecord(
            name=redact.span_name("run", base, "command"),
            trace_id=self.ref.trace_id,
            span_id=self.ref.span_id,
            parent_span_id=self.parent.span_id if self.parent is not None else None,
            parent_remote=self.parent is not None,
            start_ns=self.start_ns,
            end_ns=max(time.time_ns(), self.start_ns),
            attributes=attrs,
        )
        if exit_code != 0:
            rec.error, rec.error_type = f"exit status {exit_code}", "process_exit"
        return rec


@dataclass
class Pipeline:
    """Stages 2–5 wired together for one stream."""

    cfg: Config
    stats: Stats
    exporters: Exporters
    tracker: Tracker
    decoder: dialects.Decoder
    splitter: LineSplitter
    builder: SpanBuilder | None = None
    run: RunSpan | None = None
    exit_code: int = 0
    report: Report | None = None
    emit: Callable[[SpanRecord], None] | None = None
    call_later: Any = None
    parent: Parent | None = None
    #: replay: grace windows timed by the stream clock (see clock.StreamTimers)
    stream_timers: bool = False
    timers: StreamTimers | None = None
    #: called after each decoded line (the live decoding thread: ``Exporters.pace``)
    after_line: Callable[[], None] | None = None

    def start_run(self, argv: tuple[str, ...]) -> RunSpan:
        """Allocate the wrapper's run span (before the child starts) and make it the parent of
        every session span."""
        ctx = self.tracker.ctx
        trace_id = ctx.root_trace_id("run", " ".join(argv))
        ref = SpanRef(trace_id, ctx.ids.span_id(trace_id, "run", argv[0]))
        ctx.run = ref
        if self.report is not None:
            self.report.on_trace(trace_id, "run")
        self.run = RunSpan(tuple(argv), ref, ctx.parent, capture_content=self.cfg.capture_content)
        return self.run

    def run_sampled(self) -> bool:
        """The sampling decision for the run span's trace (made once, as its spans will get)."""
        if self.run is None or self.builder is None:
            return True
        probe = SpanRecord(self.run.record(0).name, self.run.ref.trace_id, self.run.ref.span_id,
                           None, 0, 0, {})
        return self.builder._trace_flags(probe).sampled

    @classmethod
    def build(cls, cfg: Config, stats: Stats, call_later, report: Report | None = None,
              processes: int = 0, patient: bool = False) -> "Pipeline":
        """Stages 2–5 for ``cfg``; ``call_later`` schedules grace windows (``None``: they close at
        end of input); ``report`` (trace links, waterfall, step summary) is a second sink.
        ``processes``: spans are built and exported by that many processes forked here
        (:mod:`otelbridge.export_processes`; ``count_for(cfg)`` says how many; 0 or a failed
        fork: in this process); ``patient`` (``replay``): they wait for their exporters as
        long as those make progress."""
        with without(cfg.ignored_env):  # values said unusable: the SDK must not read them
            return cls._build(cfg, stats, call_later, report, processes, patient)

    @classmethod
    def _build(cls, cfg: Config, stats: Stats, call_later, report: Report | None,
               processes: int, patient: bool) -> "Pipeline":
        from .export import Exporters
        from .spans import SpanBuilder

        install_redaction(cfg)
        parent, span_ctx = parse_traceparent(cfg)
        options = {
            "trace_state": span_ctx.trace_state if span_ctx is not None else None,
            "remote_parent_flags": span_ctx.trace_flags if span_ctx is not None else None,
        }
        exporters = None
        if report is not None and report.wants_spans:
            processes = 0  # the views read the spans on this process's provider
        if processes:
            from .export_processes import ExportProcesses

            exporters = ExportProcesses.start(cfg, stats, processes, options, patient=patient)
        if exporters is None:
            exporters = Exporters(cfg, stats)
        builder = SpanBuilder(exporters.provider, exporters.ids, stats, **options)
        if span_ctx is not None and not span_ctx.trace_flags.sampled:
            say("TRACEPARENT is not sampled: with the parent-based sampler nothing will be recorded")
        pipeline = cls(cfg, stats, exporters, None, None, None, builder)  # type: ignore[arg-type]
        pipeline.report = report
        if report is not None:
            report.attach(exporters.provider)
        pipeline.emit = exporters.emit_sink(builder)
        pipeline.call_later = call_later
        pipeline.parent = parent
        pipeline.new_stream()
        return pipeline

    def new_stream(self) -> None:
        """Fresh stages 2–4 (clock, tracker, decoder, line splitter) for the next stream, on the
        same exporters and reports (``replay`` calls it once per file)."""
        cfg = self.cfg
        clock = Clock(cfg.clock)
        self.timers = StreamTimers(clock) if self.stream_timers else None
        self.tracker = Tracker(
            Context(
                emit=self.emit,
                ids=Ids(cfg.deterministic_ids),
                clock=clock,
                stats=self.stats,
                call_later=self.timers.call_later if self.timers is not None else self.call_later,
                grace_s=cfg.grace_s,
                parent=self.parent,
                capture_content=cfg.capture_content,
                on_trace=self.report.on_trace if self.report is not None else None,
            )
        )
        self.decoder = dialects.Decoder(dialects.load(list(cfg.dialects) or None), self.stats)
        self.new_lines(keep_partial=False)

    def new_lines(self, keep_partial: bool) -> None:
        """A fresh line splitter (a followed file was rotated or truncated); with
        ``keep_partial`` the old splitter's last line without ``\\n`` is offered first."""
        if keep_partial and self.splitter is not None:
            self.splitter.close()
        self.splitter = LineSplitter(self.decoder.markers, self.on_line, self.stats, self.cfg.max_line)

    def on_line(self, raw: bytes) -> None:
        for event in self.decoder.decode(raw):
            try:
                self.tracker.handle(event)
            except Exception as exc:  # a tracker bug costs one event, never the stream
                self.stats.bad_lines += 1
                log.warning("event %s not applied: %s", type(event).__name__, exc)
        if self.timers is not None:
            self.timers.run_due()
        if self.after_line is not None:
            self.after_line()

    def on_chunk(self, buf: bytes | bytearray, n: int) -> None:
        feed_lines(self.splitter, self.stats, buf, n)

    def end_stream(self, reason: str | None = None) -> None:
        """End of one stream's input: its last line, every open span ended. ``reason`` (see
        :meth:`Tracker.finish`): why the run was cut short, ``None`` at plain end of input."""
        try:
            self.splitter.close()
            if self.timers is not None:
                self.timers.run_all()
            self.tracker.finish(reason=reason)
        except Exception as exc:
            log.warning("closing spans failed: %s", exc)
        if self.run is not None:
            rec = self.run.record(self.exit_code)
            self.tracker.ctx.decorate_process(rec)
            self.emit(rec)

    def report_and_exit_code(self, code: int, all_exported: bool) -> int:
        """After the flush: the waterfall/step summary, the counts line, ``--stats-json``,
        and the exit status (``--fail-on-export-error`` turns 0 into 1 when spans were lost)."""
        if self.report is not None:
            self.report.finish()
        return counts_and_exit_code(self.cfg, self.stats, self.exporters.describe_failure(),
                                    code, all_exported)


def counts_and_exit_code(cfg: Config, stats: Stats, problem: str | None, code: int,
                         all_exported: bool) -> int:
    """The counts line and ``problem`` (lost spans) on stderr unless ``--quiet``,
    ``--stats-json``, and the exit status (``--fail-on-export-error`` turns 0 into 1 when spans
    were lost)."""
    if not cfg.quiet:
        say(stats.line()[len("otelbridge: "):])
        if problem:
            say(problem)
    if cfg.stats_json:
        try:
            stats.write_json(cfg.stats_json)
        except OSError as exc:
            say(f"cannot write --stats-json {cfg.stats_json!r}: {exc.strerror}")
    if cfg.fail_on_export_error and not all_exported and code == 0:
        code = EXIT_EXPORT_FAILED
    return code


class LiveFront:
    """The decoding side of the live tee (pipe and wrapper modes): a :class:`Handoff` whose one
    thread builds the :class:`Pipeline` (``setup``: OpenTelemetry imports, exporters, redaction,
    report — 30–110 ms measured, while the first bytes already pass), then applies the chunks
    (line splitting, decoding, tracking, spans) and the gaps, the grace-window timers
    (``Handoff.call_later``) and at last :meth:`Pipeline.end_stream`.

    It runs in the decoding process (:mod:`otelbridge.worker`, fed by the tee's pipe: ``put``)
    or, where there is no ``fork``, in the tee's own process (:meth:`on_chunk`: ``offer``, and a
    gap for a chunk that does not fit). ``limit``: bytes of chunks the handoff holds. ``on_ready(link)`` is called on the handoff's thread once
    set up (see :meth:`run_link`). The decoding thread alone is paced by the exporters
    (``Exporters.pace``).
    """

    def __init__(self, cfg: Config, stats: Stats,
                 on_ready: Callable[[tuple[str, bool] | None], None] | None = None,
                 limit: int = DEFAULT_LIMIT, processes: int = 0) -> None:
        self.cfg = cfg
        self.stats = stats
        self.processes = processes
        self.handoff = Handoff(stats, limit)
        self._on_ready = on_ready
        self._warned = False
        self._position = LinePosition(cfg.max_line)  # the tee's side (on_chunk)
        #: ``time.monotonic()`` by which the end is over (see :meth:`ending`); ``None`` before
        self._deadline: float | None = None
        #: the decoding thread had not finished by the deadline (see :meth:`finish`)
        self._abandoned = False
        #: built on the handoff's thread; ``None`` until then, and if the set-up failed
        self.pipeline: Pipeline | None = None
        self.handoff.start(self._on_item, self._end, setup=self._build, on_idle=self._idle)

    def _build(self) -> None:
        try:
            with without(self.cfg.ignored_env):  # the SDK reads some as it is imported
                from .export import configure_logging
                from .summary import Report
            configure_logging()
            pipeline = Pipeline.build(self.cfg, self.stats, self._call_later, Report(self.cfg, say),
                                      processes=self.processes)
            if self.cfg.command:
                pipeline.start_run(tuple(self.cfg.command))
            pipeline.after_line = pipeline.exporters.pace  # bursts exported, not dropped
            self.pipeline = pipeline
        finally:
            if self._on_ready is not None:
                self._on_ready(self._link())

    def _idle(self) -> None:
        """The decoding thread has nothing to do: span records waiting for a batch go out."""
        if self.pipeline is not None:
            self.pipeline.exporters.flush()

    def _call_later(self, delay_s: float, fn: Callable[[], None]):
        """``Handoff.call_later``, paced like a line: a grace window that closes ends a whole
        workflow at once (hundreds of spans), and many may close after one chunk."""
        def fire() -> None:
            fn()
            if self.pipeline is not None and self.pipeline.after_line is not None:
                self.pipeline.after_line()

        return self.handoff.call_later(delay_s, fire)

    def run_link(self) -> tuple[str, bool] | None:
        """What the wrapped command's environment gets (:func:`child_environment`): the run
        span's W3C ``traceparent`` and whether ``TRACESTATE`` goes with it; ``None`` when there is
        no run span (set-up failed, or pipe mode). Waits for the set-up (:meth:`ready`)."""
        self.ready()
        return self._link()

    def _link(self) -> tuple[str, bool] | None:
        pipeline = self.pipeline
        if pipeline is None or pipeline.run is None:
            return None
        return pipeline.run.traceparent(pipeline.run_sampled()), pipeline.run.parent is not None

    def _on_item(self, item: bytes | Gap) -> None:
        pipeline = self.pipeline
        if isinstance(item, Gap):
            before = self.stats.lines_not_decoded
            if pipeline is not None:
                pipeline.splitter.gap(item)
            else:
                self.stats.lines += item.newlines
            # said once, and only when a line was lost (a gap inside an overlong line loses none)
            if not self._warned and self.stats.lines_not_decoded > before:
                self._warned = True
                say(BEHIND_MESSAGE)
        elif pipeline is not None:
            pipeline.on_chunk(item, len(item))
        else:  # set-up failed (logged once): lines are counted, nothing is decoded
            self.stats.lines += item.count(b"\n")

    def _end(self, reason: str | None) -> None:
        if self.pipeline is not None:
            self.pipeline.end_stream(reason)

    def on_chunk(self, buf: bytearray, n: int) -> None:
        """The tee's callback after each write (in process): a copy of the chunk for the
        decoding thread, or — when it has fallen :data:`~otelbridge.handoff.DEFAULT_LIMIT`
        bytes behind, or the chunk lies inside a line decoding drops anyway — a gap in its place.
        Never waits."""
        if self._position.undecodable(buf, n) or not self.handoff.offer(bytes(buf[:n])):
            gap = Gap.of(buf, 0, n)
            self._position.skipped(gap)
            self.handoff.gap(gap)

    def set_pid(self, pid: int) -> None:
        """The wrapped command's pid, for the run span."""
        pipeline = self.ready()
        if pipeline is not None and pipeline.run is not None:
            pipeline.run.pid = pid

    def ready(self) -> Pipeline | None:
        """Wait for the set-up (at most :data:`SETUP_TIMEOUT_S`): the pipeline, or ``None``."""
        self.handoff.ready.wait(SETUP_TIMEOUT_S)
        return self.pipeline

    def ending(self, deadline: float) -> None:
        """The end of input is known (in the decoding process: as soon as the tee's end message
        comes, while decoding may still be behind) and all must be over by ``deadline``
        (``time.monotonic()``; moved on by the time the set-up still takes: set-up is not part of
        the flush budget). Decoding gets half of what is left: pacing (``Exporters.pace``, the
        export processes' writes) stops waiting then, and what the handoff still holds or is
        given from then on is counted as not decoded (:meth:`Handoff.cut_at`); ending the spans
        and the flush get the rest (:meth:`finish`). Only the first call counts."""
        if self._deadline is not None:
            return
        before = time.monotonic()
        pipeline = self.ready()
        now = time.monotonic()
        self._deadline = deadline + (now - before)
        cut = now + max(0.0, self._deadline - now) / 2
        if pipeline is not None:
            pipeline.exporters.pace_until = cut
        self.handoff.cut_at(cut)

    def finish(self, reason: str | None = None, exit_code: int = 0,
               deadline: float | None = None) -> bool:
        """End of input (or of the run, for ``reason``: see :meth:`Tracker.finish`): last line,
        every open span ended (the run span with ``exit_code``), bounded flush. True if all
        exported. All of it is over by ``deadline`` (``time.monotonic()``; default
        ``--flush-timeout`` from now), as :meth:`ending` shares it out: the
        chunks still waiting in the handoff are applied until half-way, the rest counted as not
        decoded. The decoding thread is done before this returns (the counts are final) unless
        it is stuck past the deadline: then the counts printed are one snapshot (see
        :meth:`report_and_exit_code`) and the spans it still held open are not ended."""
        if deadline is None:
            deadline = time.monotonic() + self.cfg.flush_timeout_s
        self.ending(deadline)
        pipeline = self.pipeline
        if pipeline is not None:
            pipeline.exit_code = exit_code
        deadline = self._deadline  # set by ending(), possibly earlier and moved by the set-up
        if not self.handoff.close(reason, timeout=max(0.0, deadline - time.monotonic())):
            self._abandoned = True
            say("decoding did not end within --flush-timeout; the counts are those of that moment "
                "and spans it still held open were not ended")
        if pipeline is None:
            return False
        return pipeline.exporters.shutdown(max(0.0, deadline - time.monotonic()))

    def report_and_exit_code(self, code: int, all_exported: bool) -> int:
        """After :meth:`finish`: as :meth:`Pipeline.report_and_exit_code` (counts only when the
        set-up failed, or — one snapshot for the line and ``--stats-json`` — when the decoding
        thread did not end in time: the report, fed by that thread, is left out)."""
        if self.pipeline is None or self._abandoned:
            problem = self.pipeline.exporters.describe_failure() if self.pipeline else None
            return counts_and_exit_code(self.cfg, replace(self.stats), problem, code,
                                        all_exported)
        return self.pipeline.report_and_exit_code(code, all_exported)

    def end(self, reason: str | None, exit_code: int, deadline: float | None = None) -> int:
        """:meth:`finish`, then :meth:`report_and_exit_code`: the process's exit status."""
        return self.report_and_exit_code(exit_code, self.finish(reason, exit_code, deadline))


def fan_out(*sinks: Callable[[SpanRecord], None] | None) -> Callable[[SpanRecord], None]:
    """One ``emit`` that calls every given sink in order (``None`` entries skipped); the only
    sink itself when there is one, so the common case costs no extra call."""
    live = [s for s in sinks if s is not None]
    if len(live) == 1:
        return live[0]

    def emit(rec: SpanRecord) -> None:
        for sink in live:
            sink(rec)

    return emit


PROGRESS_MIN_BYTES = 8 * 1024 * 1024


def _private_stdout(cfg: Config) -> None:
    """fd 1 and ``sys.stdout`` point at stderr: replay and follow never write to stdout (nor
    start a process: the environment values said unusable are dropped)."""
    for name in cfg.ignored_env:
        os.environ.pop(name, None)
    from .export import configure_logging

    os.dup2(2, 1)
    sys.stdout = sys.stderr
    configure_logging()


def _progress(total: int):
    """A rich progress bar on stderr for ``total`` bytes, or ``None`` (not a terminal, small)."""
    if total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    from .waterfall import stderr_console

    return Progress("replay", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    TimeRemainingColumn(), console=stderr_console(), transient=True,
                    redirect_stdout=False, redirect_stderr=True)


def replay(cfg: Config, files: list) -> int:
    """``otelbridge replay FILE...``: each file a stream of its own (fresh clock, tracker and
    decoder; grace windows timed by its stream clock, all closed at its end), all into one set
    of exporters and one report; span production waits for the exporters (no queue overflow).
    ``cfg`` comes with ``clock="stream"`` and ``deterministic_ids=True``. Returns the exit
    status: 0, 1 when a file could not be read (the others are still replayed) or when
    ``--fail-on-export-error`` and spans were lost."""
    from .source.replay import read_file

    _private_stdout(cfg)
    from .summary import Report

    stats = Stats()
    from .export_processes import count_for

    pipeline = Pipeline.build(cfg, stats, None, Report(cfg, say), processes=count_for(cfg),
                              patient=True)
    # grace windows in stream time; a file can wait: never outrun the exporters
    pipeline.stream_timers = True
    pipeline.emit = fan_out(pipeline.emit, lambda rec: pipeline.exporters.wait_for_room())
    pipeline.new_stream()
    sizes = []
    for path in files:
        try:
            sizes.append(os.path.getsize(path))
        except OSError:
            sizes.append(0)
    progress = _progress(sum(sizes))
    code = 0

    def on_chunk(buf: bytearray, n: int) -> None:
        stats.bytes += n
        pipeline.on_chunk(buf, n)

    with progress if progress is not None else contextlib.nullcontext():
        task = progress.add_task("replay", total=sum(sizes)) if progress is not None else None
        if progress is not None:
            progress.refresh()  # drawn at once, however fast the replay
        advance = (lambda n: progress.advance(task, n)) if progress is not None else None
        for i, path in enumerate(files):
            if i:
                pipeline.new_stream()
            try:
                read_file(path, on_chunk, advance)
            except OSError as exc:
                say(f"cannot read {str(path)!r}: {exc.strerror}")
                code = 1
            pipeline.end_stream()
    all_exported = pipeline.exporters.shutdown(cfg.flush_timeout_s)
    return pipeline.report_and_exit_code(code, all_exported)


class HoldUntilClosed:
    """``follow``: a workflow's records (those with ``workflow.task_id``) are passed to ``sink``
    only when its root record comes, i.e. when the run has ended. At a stop mid-workflow,
    :meth:`discard` drops the held ones: the next start re-reads that workflow from the offset
    file's checkpoint and exports it once, whole. Other records pass at once."""

    def __init__(self, sink: Callable[[SpanRecord], None]) -> None:
        self.sink = sink
        self.held: dict[tuple, list[SpanRecord]] = {}
        #: stopping: the workflows ended by the stop are held too (then discarded)
        self.stopping = False

    def emit(self, rec: SpanRecord) -> None:
        attrs = rec.attributes
        task_id = attrs.get("workflow.task_id")
        if task_id is None:
            self.sink(rec)
            return
        key = (rec.trace_id, attrs.get("gen_ai.conversation.id"), task_id)
        if self.stopping or attrs.get("gen_ai.operation.name") != "invoke_workflow":
            self.held.setdefault(key, []).append(rec)
            return
        for held in self.held.pop(key, ()):
            self.sink(held)
        self.sink(rec)

    def discard(self) -> int:
        """Drop every held record; returns how many."""
        count = sum(len(v) for v in self.held.values())
        self.held.clear()
        return count


def follow(cfg: Config, path, state_dir, *, from_start: bool = False, poll_s: float = 0.25) -> int:
    """``otelbridge follow PATH``: trace what a CLI writes to PATH until SIGTERM/SIGINT.

    Exit status 0 (or 1 with ``--fail-on-export-error`` and lost spans); 2 when PATH is not a
    regular file. Workflows still open at the stop are not exported: the offset file makes the
    next start read them again from their first line (see :mod:`otelbridge.source.follow`)."""
    from .source.follow import TRUNCATED, Follower, offset_file

    _private_stdout(cfg)
    from .summary import Report

    install_loop()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        stats = Stats()
        pipeline = Pipeline.build(cfg, stats, loop.call_later, Report(cfg, say))
        hold = HoldUntilClosed(pipeline.emit)
        pipeline.emit = hold.emit
        pipeline.new_stream()

        def on_chunk(buf: bytearray, n: int) -> None:
            stats.bytes += n
            pipeline.on_chunk(buf, n)

        def on_switch(kind: str) -> None:
            # truncated: the partial line before the cut is gone; rotated: the old file's last
            # line, even without "\n", is complete
            pipeline.new_lines(keep_partial=kind != TRUNCATED)

        follower = Follower(
            path, on_chunk, state_file=offset_file(state_dir, path), from_start=from_start,
            poll_s=poll_s, on_switch=on_switch,
            is_quiet=lambda: pipeline.tracker.open_workflows() == 0, say=say,
        )
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(signum, follower.stop)
            except (NotImplementedError, RuntimeError):
                pass
        code = 0
        try:
            await follower.run()
        except IsADirectoryError as exc:
            say(str(exc))
            code = 2
        open_runs = pipeline.tracker.open_workflows()
        # sessions, turns and tasks end now (exported: nothing seen is dropped silently);
        # workflows cut by the stop are discarded and read again from the checkpoint
        hold.stopping = True
        pipeline.end_stream()
        dropped = hold.discard()
        if open_runs:
            say(f"{open_runs} workflow(s) still open at stop: not exported now, the next "
                f"start reads them again ({dropped} held spans dropped)")
        all_exported = pipeline.exporters.shutdown(cfg.flush_timeout_s)
        return pipeline.report_and_exit_code(code, all_exported)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return 130
