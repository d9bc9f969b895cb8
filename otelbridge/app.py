"""The pipeline of one run: source → lines → dialects → tracker → spans → export, on uvloop.

:func:`run` is what the ``otelbridge`` command calls. It owns the process-level concerns: the
stream fd (fd 1 is handed to the stream alone; anything else that writes to fd 1 or
``sys.stdout`` lands on stderr), signals, the exit status and the bounded shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import signal
import sys
import time
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from . import dialects, redact
from .clock import Clock
from .config import Config
from .export import Exporters, configure_logging
from .ids import Ids
from .lines import LineSplitter
from .source import pipe
from .source.child import ChildError, exit_status, spawn
from .spans import SpanBuilder
from .events import SpanRecord
from .stats import Stats
from .tracker import Context, Parent, SpanRef, Tracker

log = logging.getLogger("otelbridge")

EXIT_EPIPE = 128 + signal.SIGPIPE
EXIT_EXPORT_FAILED = 1
#: Variables that, set to ``console``, make an OpenTelemetry SDK in the child print on stdout.
CHILD_EXPORTER_VARS = ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER")
MAX_ARGS = 64


def say(message: str) -> None:
    """One line of ours on stderr."""
    try:
        sys.stderr.write(f"otelbridge: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def parse_traceparent(cfg: Config):
    """``TRACEPARENT``/``TRACESTATE`` → (:class:`Parent`, SpanContext) or (None, None)."""
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

    def traceparent(self, sampled: bool) -> str:
        """The W3C ``traceparent`` of this span, for the child's environment."""
        return f"00-{self.ref.trace_id:032x}-{self.ref.span_id:016x}-{'01' if sampled else '00'}"

    def record(self, exit_code: int) -> SpanRecord:
        argv = self.argv[:MAX_ARGS]
        attrs = {
            "process.command": redact.clean(argv[0]),
            "process.command_args": [redact.clean(a) for a in argv],
            "process.exit.code": exit_code,
        }
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


def child_environment(cfg: Config, run: RunSpan, sampled: bool) -> dict[str, str]:
    """The child's environment: ours, with ``TRACEPARENT`` set to the run span (and
    ``TRACESTATE`` kept only when it came with the parent we use)."""
    env = dict(os.environ)
    env["TRACEPARENT"] = run.traceparent(sampled)
    if cfg.tracestate and run.parent is not None:
        env["TRACESTATE"] = cfg.tracestate
    else:
        env.pop("TRACESTATE", None)
    return env


def warn_console_exporters(env: dict[str, str]) -> None:
    """One stderr line when the child's environment asks an OpenTelemetry SDK for a ``console``
    exporter: the child would print its telemetry into the stream (its stdout)."""
    asked = [
        name for name in CHILD_EXPORTER_VARS
        if "console" in [p.strip().lower() for p in env.get(name, "").split(",")]
    ]
    if asked:
        say(
            f"{', '.join(asked)} asks for a console exporter: the child would write its telemetry "
            "into the stream on stdout; set it to otlp (or unset it) for the child"
        )


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

    def start_run(self, argv: tuple[str, ...]) -> RunSpan:
        """Allocate the wrapper's run span (before the child starts) and make it the parent of
        every session span."""
        ctx = self.tracker.ctx
        if ctx.parent is not None:
            trace_id = ctx.parent.trace_id
        else:
            trace_id = ctx.ids.trace_id("run", " ".join(argv))
        ref = SpanRef(trace_id, ctx.ids.span_id(trace_id, "run", argv[0]))
        ctx.run = ref
        self.run = RunSpan(tuple(argv), ref, ctx.parent)
        return self.run

    def run_sampled(self) -> bool:
        """The sampling decision for the run span's trace (made once, as its spans will get)."""
        if self.run is None or self.builder is None:
            return True
        probe = SpanRecord(self.run.record(0).name, self.run.ref.trace_id, self.run.ref.span_id,
                           None, 0, 0, {})
        return self.builder._trace_flags(probe).sampled

    @classmethod
    def build(cls, cfg: Config, stats: Stats, call_later) -> "Pipeline":
        exporters = Exporters(cfg, stats)
        parent, span_ctx = parse_traceparent(cfg)
        builder = SpanBuilder(
            exporters.provider,
            exporters.ids,
            stats,
            trace_state=span_ctx.trace_state if span_ctx is not None else None,
            remote_parent_flags=span_ctx.trace_flags if span_ctx is not None else None,
        )
        if span_ctx is not None and not span_ctx.trace_flags.sampled:
            say("TRACEPARENT is not sampled: with the parent-based sampler nothing will be recorded")
        tracker = Tracker(
            Context(
                emit=builder.emit,
                ids=Ids(cfg.deterministic_ids),
                clock=Clock(cfg.clock),
                stats=stats,
                call_later=call_later,
                grace_s=cfg.grace_s,
                parent=parent,
                capture_content=cfg.capture_content,
            )
        )
        decoder = dialects.Decoder(dialects.load(list(cfg.dialects) or None), stats)
        pipeline = cls(cfg, stats, exporters, tracker, decoder, None, builder)  # type: ignore[arg-type]
        pipeline.splitter = LineSplitter(decoder.markers, pipeline.on_line, stats, cfg.max_line)
        return pipeline

    def on_line(self, raw: bytes) -> None:
        for event in self.decoder.decode(raw):
            try:
                self.tracker.handle(event)
            except Exception as exc:  # a tracker bug costs one event, never the stream
                self.stats.bad_lines += 1
                log.warning("event %s not applied: %s", type(event).__name__, exc)

    def on_chunk(self, buf: bytearray, n: int) -> None:
        try:
            self.splitter.feed(buf, n)
        except Exception as exc:
            self.stats.bad_lines += 1
            log.warning("chunk not decoded: %s", exc)

    def finish(self) -> bool:
        """End of input: last line, every open span ended, bounded flush. True if all exported."""
        try:
            self.splitter.close()
            self.tracker.finish()
        except Exception as exc:
            log.warning("closing spans failed: %s", exc)
        if self.run is not None and self.builder is not None:
            self.builder.emit(self.run.record(self.exit_code))
        return self.exporters.shutdown(self.cfg.flush_timeout_s)


async def _main(cfg: Config, stream_fd: int) -> int:
    loop = asyncio.get_running_loop()
    stats = Stats()
    pipeline = Pipeline.build(cfg, stats, loop.call_later)
    proc = None
    if cfg.command:
        run = pipeline.start_run(tuple(cfg.command))
        env = child_environment(cfg, run, pipeline.run_sampled())
        warn_console_exporters(env)
        try:
            proc, fd_in = await spawn(cfg.command, env)
        except ChildError as exc:
            say(str(exc))
            pipeline.exit_code = exc.status
            pipeline.finish()
            return exc.status
        run.pid = proc.pid
    else:
        fd_in = 0
    tee = pipe.Tee(fd_in, stream_fd, pipeline.on_chunk, stats)
    got_signal: list[int] = []

    def on_signal(signum: int) -> None:
        got_signal.append(signum)
        if proc is not None:
            # Ctrl-C at a terminal already reached the child's process group: forward only TERM
            if signum == signal.SIGTERM and proc.returncode is None:
                try:
                    proc.send_signal(signum)
                except ProcessLookupError:
                    pass
        else:
            tee.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, on_signal, signum)
        except (NotImplementedError, RuntimeError):
            pass

    outcome = await tee.run()
    if proc is not None:
        if outcome == pipe.EPIPE:
            os.close(fd_in)  # the child sees the closed pipe, as it would without us
            fd_in = -1
        code = exit_status(await proc.wait())
        if fd_in >= 0:
            os.close(fd_in)
    elif got_signal:
        code = 128 + got_signal[0]
    elif outcome == pipe.EPIPE:
        code = EXIT_EPIPE
    else:
        code = 0

    pipeline.exit_code = code
    all_exported = pipeline.finish()
    if not cfg.quiet:
        say(stats.line()[len("otelbridge: "):])
        problem = pipeline.exporters.describe_failure()
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


def install_loop() -> None:
    """uvloop where available (not on Windows), else the standard asyncio loop."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def run(cfg: Config) -> int:
    """Run one otelbridge process to completion and return its exit status.

    fd 1 is moved to a private descriptor for the stream; fd 1 and ``sys.stdout`` then point at
    stderr, so nothing but the stream can ever reach the stream's reader.
    """
    stream_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    configure_logging()
    install_loop()
    try:
        return asyncio.run(_main(cfg, stream_fd))
    except KeyboardInterrupt:
        return 130
