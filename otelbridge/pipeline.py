"""Stages 2–5 wired together for one stream: lines → dialects → tracker → spans → export
(:class:`Pipeline`), plus what every mode's runner shares: the wrapper's run span, the counts
line and exit status. The runners, one per mode: :mod:`otelbridge.modes.live` (the decoding
process of the tee), :mod:`otelbridge.modes.replay`, :mod:`otelbridge.modes.follow`. In every
mode one thread touches the tracker.
"""

from __future__ import annotations

import functools
import logging
import os
import posixpath
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from . import dialects, redact
from .clock import Clock, StreamTimers
from .config import Config
from .deadline import Deadline
from .environment import for_the_sdk
from .events import CaudraAgentMessage, ModelCall, SessionMark, SessionStarted, SpanRecord
from .ids import Ids
from .lines import LineSplitter
from .messages import say, silenced
from .stats import Stats, counts_and_exit_code, not_decoded, nothing_traced
from .tracker import Context, Parent, SpanRef, Tracker

if TYPE_CHECKING:
    from .export import Exporters
    from .views import Report

log = logging.getLogger("otelbridge")

MAX_ARGS = 64
#: Lines of a tool's output that is a secret bare remembered (a key file's lines, a token's one)
MAX_SECRET_LINES = 8


def _learn(text: str, is_json: bool, keep: bool) -> None:
    """Content as it arrives, read by the redactor for the secrets it shows (it remembers them:
    :mod:`otelbridge.found_secrets`); ``keep``: it is exported later (``--capture-content``),
    so its reading stays in the redactor's cache."""
    safe = redact.current()
    if is_json:
        safe.json_text(text, safe.max_length)
    else:
        safe.learn(text, keep)


#: Events that name the model a session or a call runs on: its id is spared by the redactor's
#: memory of found secrets (:meth:`~otelbridge.found_secrets.FoundSecrets.spare`)
_NAMING_A_MODEL = frozenset((SessionStarted, ModelCall, SessionMark, CaudraAgentMessage))


#: A line number a file tool or ``cat -n`` puts before each line (``     1→``, ``     1\t``)
_LINE_NUMBER = re.compile(r"\A[ \t]*\d+(?:\u2192|\t)")


def _remember(text: str) -> None:
    """A tool's output that is a secret bare (or what a tool writes into a file named for a
    secret): its first lines, without a line number, remembered as values the redactor hides
    wherever they come again (the model's prose repeating it)."""
    lines = text.strip().splitlines()[:MAX_SECRET_LINES]
    redact.current().found.learn([_LINE_NUMBER.sub("", line) for line in lines], "secret")


class SpanSink(Protocol):
    """Where finished span records go: the span builder (stage 5), the report (trace links,
    waterfall, step summary), and the runners' filters in front of them."""

    def emit(self, rec: SpanRecord) -> None: ...


class FanOut:
    """One :class:`SpanSink` that hands each record to every sink's ``emit`` in order."""

    def __init__(self, *emits: Callable[[SpanRecord], None]) -> None:
        self.emits = emits

    def emit(self, rec: SpanRecord) -> None:
        for emit in self.emits:
            emit(rec)


class WaitForExporters:
    """A sink last in line for producers that can wait (``replay``, ``follow``): after each
    record, room in the exporters' queues (:meth:`Exporters.wait_for_room`, never past
    ``deadline()``; asked again only when the room it gave is used up, a record being at most
    one span)."""

    def __init__(self, exporters: Exporters,
                 deadline: Callable[[], Deadline | None] = lambda: None) -> None:
        self.exporters = exporters
        self.deadline = deadline
        self.room = 0

    def emit(self, rec: SpanRecord) -> None:
        if self.room > 0:
            self.room -= 1
        else:
            self.room = self.exporters.wait_for_room(deadline=self.deadline)


class PaceExporters:
    """A sink last in line for the live decoder: after each record, a short wait while a healthy
    exporter's queue is nearly full (:meth:`Exporters.pace`), never past ``deadline()`` — so a
    burst, or the spans that end a run, are exported rather than dropped."""

    def __init__(self, exporters: Exporters, deadline: Callable[[], Deadline | None]) -> None:
        self.exporters = exporters
        self.deadline = deadline
        self.room = 0

    def emit(self, rec: SpanRecord) -> None:
        if self.room > 0:  # (see :meth:`Exporters.pace`: asked again when the room is used up)
            self.room -= 1
        else:
            self.room = self.exporters.pace(self.deadline())


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


#: where the SDK warns about a carrier it refuses (a traceparent over 512 characters, a bad
#: tracestate member)
_CARRIER_LOGGERS = ("opentelemetry.trace.propagation.tracecontext", "opentelemetry.trace.span")


def parse_traceparent(cfg: Config):
    """``TRACEPARENT``/``TRACESTATE`` → (:class:`Parent`, SpanContext) or (None, None)."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not cfg.traceparent:
        return None, None
    carrier = {"traceparent": cfg.traceparent}
    if cfg.tracestate:
        carrier["tracestate"] = cfg.tracestate
    with silenced(*_CARRIER_LOGGERS):  # said below, with what follows
        ctx = TraceContextTextMapPropagator().extract(carrier)
    span_ctx = trace.get_current_span(ctx).get_span_context()
    if not span_ctx.is_valid:
        say("TRACEPARENT is not a valid W3C traceparent; ignoring it")
        return None, None
    if cfg.tracestate and cfg.tracestate.strip() and not span_ctx.trace_state:
        say("TRACESTATE is not a valid W3C tracestate (at most 32 distinct key=value members); "
            "the trace joins TRACEPARENT's without it")
    state = span_ctx.trace_state
    # every span carries it: a member the redactor would change (auth=<secret>) is left out
    kept = [(k, v) for k, v in state.items() if redact.current().scan(f"{k}={v}") == f"{k}={v}"]
    if len(kept) < len(state):
        say(f"TRACESTATE: {len(state) - len(kept)} of its {len(state)} members hold a secret "
            "and are left out of the spans")
        span_ctx = trace.SpanContext(span_ctx.trace_id, span_ctx.span_id, span_ctx.is_remote,
                                     span_ctx.trace_flags, trace.TraceState(kept))
    return Parent(span_ctx.trace_id, span_ctx.span_id), span_ctx


@dataclass
class RunSpan:
    """The wrapper's ``run {basename of CMD}`` span ("wrapped process"): ids allocated before the
    child starts (the child's ``TRACEPARENT`` names it), ``process.*`` attributes (raw: the span
    builder redacts them, and names the span from the redacted command); ERROR on a non-zero exit
    status. Times in epoch ns: the wall clock's, widened to cover its children (:meth:`cover`);
    when the stream is dated by its own clock (a recording piped through), the children's span
    alone, so that the run never stretches from the recording's day to today's."""

    argv: tuple[str, ...]
    ref: SpanRef
    parent: Parent | None
    start_ns: int = field(default_factory=time.time_ns)
    pid: int | None = None
    #: ``--capture-content``: the arguments are exported (they carry prompts: ``claude -p "..."``)
    capture_content: bool = False
    #: (earliest start, latest end) of its children so far, epoch ns
    children: tuple[int, int] | None = None

    def cover(self, rec: SpanRecord) -> None:
        """Note a child's times (a record whose parent is this span)."""
        lo, hi = self.children or (rec.start_ns, rec.end_ns)
        self.children = (min(lo, rec.start_ns), max(hi, rec.end_ns))

    def traceparent(self, sampled: bool) -> str:
        """The W3C ``traceparent`` of this span, for the child's environment."""
        return f"00-{self.ref.trace_id:032x}-{self.ref.span_id:016x}-{'01' if sampled else '00'}"

    def record(self, exit_code: int, stream_clock: bool = False, reason: str | None = None) -> SpanRecord:
        """The span at the end; ``stream_clock``: the stream was dated by its own clock;
        ``reason``: why the run was cut short (its status description says it before the
        exit status: ``killed by SIGKILL (exit status 137)``)."""
        argv = self.argv[:MAX_ARGS]
        attrs: dict = {
            "process.command": argv[0],
            "process.args_count": len(self.argv),
            "process.exit.code": exit_code,
        }
        if self.capture_content:  # a command line is content: `claude -p "<prompt>"`
            attrs["process.command_args"] = list(argv)
        if self.pid is not None:
            attrs["process.pid"] = self.pid
        base = posixpath.basename(self.argv[0].replace("\\", "/").rstrip("/")) or self.argv[0]
        start, end = self.start_ns, max(time.time_ns(), self.start_ns)
        if self.children is not None:
            lo, hi = self.children
            start, end = (lo, hi) if stream_clock else (min(start, lo), max(end, hi))
        rec = SpanRecord(
            name=f"run {base}",
            trace_id=self.ref.trace_id,
            span_id=self.ref.span_id,
            parent_span_id=self.parent.span_id if self.parent is not None else None,
            parent_remote=self.parent is not None,
            start_ns=start,
            end_ns=end,
            attributes=attrs,
        )
        if exit_code != 0:
            said = f"exit status {exit_code}"
            rec.error, rec.error_type = f"{reason} ({said})" if reason else said, "process_exit"
        return rec


class Pipeline:
    """Stages 2–5 for one run, complete when constructed: redaction installed, the exporters
    and span builder made, the sinks wired, the first stream's line splitter, decoder and
    tracker ready — and, with ``cfg.command``, the wrapper's run span allocated.

    ``report``: trace links, waterfall, step summary (a second sink). ``call_later(delay_s, fn)``
    schedules grace windows in real time (``None``: they close at the end of input);
    ``stream_timers``: they run on the stream's own clock instead (``replay``). ``last``: the
    sink after the builder and report, made from the exporters (:class:`WaitForExporters`,
    :class:`PaceExporters`). ``hold``: wraps the sinks (``follow`` holds a workflow's records
    until it ends). ``wall``: the clock's wall time, epoch ns (live: when the bytes being decoded
    passed the tee, :class:`~otelbridge.source.arrivals.ArrivalClock`). ``keep_redaction``: the
    redactor a pipeline before installed goes on (``follow``'s run after a lost export)."""

    def __init__(self, cfg: Config, stats: Stats, *, report: Report | None = None,
                 call_later: Callable[[float, Callable[[], None]], Any] | None = None,
                 stream_timers: bool = False,
                 last: Callable[[Exporters], SpanSink] | None = None,
                 hold: Callable[[SpanSink], SpanSink] | None = None,
                 wall: Callable[[], int] = time.time_ns,
                 instance_id: str | None = None, keep_redaction: bool = False) -> None:
        from .export import Exporters
        from .resource import named_service
        from .spans import SpanBuilder

        self.cfg = cfg
        self.stats = stats
        if not keep_redaction:  # (kept: what the installed one found stays hidden)
            install_redaction(cfg)
        self.parent, span_ctx = parse_traceparent(cfg)
        self.exporters: Exporters = Exporters(cfg, stats, instance_id=instance_id)
        self.builder = SpanBuilder(
            self.exporters.provider, self.exporters.ids, stats,
            trace_state=span_ctx.trace_state if span_ctx is not None else None,
            remote_parent_flags=span_ctx.trace_flags if span_ctx is not None else None,
            limits=self.exporters.limits,
        )
        self._remote_ctx = span_ctx
        if span_ctx is not None and not span_ctx.trace_flags.sampled:
            say("TRACEPARENT is not sampled: with the parent-based sampler nothing will be exported "
                "(--no-traceparent: traces of its own)")
        self.report = report
        if report is not None:
            report.not_exported = self.not_exported
            report.service = named_service(self.exporters.provider.resource)
        # the views read every record ahead of the builder, sampled or not
        emits = [report.sink(self.builder) if report is not None else self.builder.emit]
        if last is not None and self.exporters.paths:  # (nothing to wait for without exporters)
            emits.append(last(self.exporters).emit)
        sink: SpanSink = self.builder if emits == [self.builder.emit] else FanOut(*emits)
        self.sink: SpanSink = hold(sink) if hold is not None else sink
        self._call_later = call_later
        self._stream_timers = stream_timers
        self._wall = wall
        self.exit_code = 0
        self.timers: StreamTimers | None = None
        self.splitter: LineSplitter | None = None
        #: called with each offered line's offset in the input (bytes) before it is decoded
        self.before_line: Callable[[int], None] | None = None
        self.run: RunSpan | None = None
        self.new_stream()
        if cfg.command:
            self.run = self._start_run(tuple(cfg.command))

    def _start_run(self, argv: tuple[str, ...]) -> RunSpan:
        """Allocate the wrapper's run span (before the child starts) and make it the parent of
        every session span."""
        ctx = self.tracker.ctx
        # random even with --deterministic-ids: runs of one command line must not share a trace
        trace_id = ctx.parent.trace_id if ctx.parent is not None else ctx.ids.unique_trace_id()
        ref = SpanRef(trace_id, ctx.ids.span_id(trace_id, "run", argv[0]))
        ctx.run = ref
        if self.report is not None:
            self.report.on_trace(trace_id, "run")
        return RunSpan(argv, ref, ctx.parent, capture_content=self.cfg.capture_content)

    def run_link(self) -> tuple[str, bool] | None:
        """What the wrapped command's environment gets: the run span's W3C ``traceparent``
        (sampled as its spans will be) and whether ``TRACESTATE`` goes with it; ``None``
        without a run span, or when no exporter will send it anywhere (``--exporter none``,
        ``OTEL_SDK_DISABLED``): the child's own telemetry would name a parent no backend holds,
        so it keeps the carrier it would have had without otelbridge."""
        if self.run is None or self.stats.not_exported_reason:
            return None
        if self._remote_ctx is not None:  # under TRACEPARENT: its decision
            sampled = self._remote_ctx.trace_flags.sampled
        else:  # the provider's sampler decides by trace id (every built-in sampler does)
            result = self.exporters.provider.sampler.should_sample(
                None, self.run.ref.trace_id, self.run.record(0).name)
            sampled = result.decision.is_sampled()
        return self.run.traceparent(sampled), self.run.parent is not None

    def not_exported(self, trace_id: int) -> str | None:
        """Why no backend a trace link points at will hold the trace ``trace_id`` (no exporter,
        ``OTEL_SDK_DISABLED``, ``file``/``console`` only, sampled out), or ``None``."""
        if self.stats.not_exported_reason:
            return self.stats.not_exported_reason
        if not self.exporters.backends:
            return "no OTLP exporter"
        if not self.builder.sampled(trace_id, self._remote_ctx):
            return "sampled out"
        return None

    def new_stream(self, wall: Callable[[], int] | None = None) -> None:
        """Fresh stages 2–4 (clock, tracker, decoder, line splitter) for the next stream, on the
        same exporters and report (``replay`` calls it once per file); ``wall``: the stream's
        wall clock (epoch ns; default the pipeline's)."""
        cfg = self.cfg
        clock = Clock(cfg.clock, wall=wall or self._wall)
        self.timers = StreamTimers(clock) if self._stream_timers else None
        self.tracker = Tracker(
            Context(
                emit=self._emit_under_run if cfg.command else self.sink.emit,
                ids=Ids(cfg.deterministic_ids),
                clock=clock,
                stats=self.stats,
                call_later=self.timers.call_later if self.timers is not None else self._call_later,
                grace_s=cfg.grace_s,
                parent=self.parent,
                capture_content=cfg.capture_content,
                on_trace=self.report.on_trace if self.report is not None else None,
                learn=functools.partial(_learn, keep=cfg.capture_content),
                remember=_remember,
                line_at=lambda: self.splitter.at,
            )
        )
        self.decoder = dialects.Decoder(dialects.load(list(cfg.dialects) or None), self.stats)
        self.splitter = None
        self.new_lines()

    def derive_ids(self, salt: str) -> None:
        """The stream's ids from now on derived with ``salt`` (:class:`~otelbridge.ids.Ids`):
        ``follow`` reading a file again after a restart makes the same spans. Before its first
        line."""
        self.tracker.ctx.ids = Ids(True, salt)

    def holding(self) -> bool:
        """Whether records wait for the stream's first timestamp (the clock still pending)."""
        return not self.tracker.ctx.clock.settled

    def settle_clock(self) -> None:
        """A clock still pending (no timestamp yet, its wait not over) settles now, on the wall
        clock: the records it held go out."""
        self.tracker.ctx.clock.settle()

    def _emit_under_run(self, rec: SpanRecord) -> None:
        """The sink, for a wrapped command: the run span learns its children's times."""
        run = self.run
        if run is not None and rec.parent_span_id == run.ref.span_id:
            run.cover(rec)
        self.sink.emit(rec)

    def new_lines(self) -> None:
        """A fresh line splitter (a followed file was truncated, a new stream): the old one's
        last line without ``\\n`` is dropped. Line offsets go on from the old splitter's (the
        tracker's sessions keep theirs)."""
        old = self.splitter
        self.splitter = LineSplitter(self.decoder.markers, self.on_line, self.stats, self.cfg.max_line,
                                     fed=old.fed if old is not None else 0)

    def on_line(self, raw: bytes) -> None:
        if self.before_line is not None:
            self.before_line(self.splitter.at)
        timers = self.timers
        for event in self.decoder.decode(raw):
            if timers is not None and timers.pending:
                # a window whose end the line's own time is past closes before the line
                # applies: a snapshot after a grace window is late, not a stretch of the run
                timers.run_due(event.ts_ns if event.ts_ns is not None else getattr(event, "newest_ns", None))
            try:
                # (the exact type, once per event: isinstance of a tuple of structs costs ~0.6 µs)
                if type(event) in _NAMING_A_MODEL and event.model:
                    redact.current().found.spare(event.model)
                self.tracker.handle(event)
            except Exception as exc:  # a tracker bug costs one event, never the stream
                self.stats.bad_lines += 1
                log.warning("event %s not applied: %s", type(event).__name__, exc)
        if self.timers is not None:
            self.timers.run_due()

    def on_chunk(self, buf: bytes | bytearray, n: int) -> None:
        """Stage 2 on ``buf[:n]``; a splitter bug costs the chunk's decoding (counted), never
        the stream, which was already written."""
        try:
            self.splitter.feed(buf, n)
        except Exception as exc:
            self.stats.bad_lines += 1
            log.warning("chunk not decoded: %s", exc)

    def end_stream(self, reason: str | None = None, *, last_line: bool = True) -> None:
        """End of one stream's input: its last line, every open span ended. ``reason`` (see
        :meth:`Tracker.finish`): why the run was cut short, ``None`` at plain end of input.
        ``last_line=False``: a last line without ``\n`` is left unread (a followed file's line
        still being written, which the next start reads whole)."""
        try:
            if last_line:
                self.splitter.close()
            if self.timers is not None:
                self.timers.run_all()
            self.tracker.finish(reason=reason)
        except Exception as exc:
            log.warning("closing spans failed: %s", exc)
        if self.run is not None:
            rec = self.run.record(self.exit_code, self.tracker.ctx.clock.uses_stream, reason)
            self.tracker.ctx.decorate_process(rec)
            self.sink.emit(rec)

    def report_and_exit_code(self, code: int, all_exported: bool, tee: bool = True,
                             read_again: bool = False, reader_left: bool = False) -> int:
        """After the flush: the waterfall/step summary, the counts line, ``--stats-json``,
        and the exit status (``--fail-on-export-error`` turns 0 into 1 when spans were lost);
        ``tee``: the input was passed through (not ``replay``'s or ``follow``'s file), up to
        where the stream's reader left when ``reader_left``;
        ``read_again``: ``follow`` read only what a run before traced, or left what it read
        to the next start (``--handover``)."""
        if self.report is not None:
            note = None if read_again else nothing_traced(self.cfg, self.stats, tee) or not_decoded(self.stats)
            if self.exporters.backend_got_none():
                self.report.not_exported_at_all("export failed")
                # (the heading's mark is the run's: a summary page read alone must not say ✅)
                lost = "No span reached the backend: export failed (the job log says why)."
                note = f"{note} {lost}" if note else lost
            self.report.finish(note)
        return counts_and_exit_code(self.cfg, self.stats, self.exporters.describe_failure(),
                                    code, all_exported, tee, read_again, live=tee,
                                    reader_left=reader_left)


def private_stdout(cfg: Config) -> None:
    """fd 1 and ``sys.stdout`` point at stderr (``replay`` and ``follow`` never write to
    stdout); logging set up for stderr; the environment values said unusable are dropped before
    the SDK is imported (it reads some at import)."""
    for_the_sdk(cfg.ignored_env, cfg.replaced_env)
    from .export_logging import configure_logging

    os.dup2(2, 1)
    sys.stdout = sys.stderr
    configure_logging()
