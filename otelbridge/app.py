"""The pipeline of one run: source → lines → dialects → tracker → spans → export, on uvloop.

:func:`run` is what the ``otelbridge`` command calls. It owns the process-level concerns: the
stream fd (fd 1 is handed to the stream alone; anything else that writes to fd 1 or
``sys.stdout`` lands on stderr), signals, the exit status and the bounded shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from dataclasses import dataclass

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
from .stats import Stats
from .tracker import Context, Parent, Tracker

log = logging.getLogger("otelbridge")

EXIT_EPIPE = 128 + signal.SIGPIPE
EXIT_EXPORT_FAILED = 1


def say(message: str) -> None:
    """One line of ours on stderr."""
    try:
        sys.stderr.write(f"otelbridge: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


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
class Pipeline:
    """Stages 2–5 wired together for one stream."""

    cfg: Config
    stats: Stats
    exporters: Exporters
    tracker: Tracker
    decoder: dialects.Decoder
    splitter: LineSplitter

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
        pipeline = cls(cfg, stats, exporters, tracker, decoder, None)  # type: ignore[arg-type]
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
        return self.exporters.shutdown(self.cfg.flush_timeout_s)


async def _main(cfg: Config, stream_fd: int) -> int:
    loop = asyncio.get_running_loop()
    stats = Stats()
    pipeline = Pipeline.build(cfg, stats, loop.call_later)
    proc = None
    if cfg.command:
        try:
            proc, fd_in = await spawn(cfg.command)
        except ChildError as exc:
            say(str(exc))
            pipeline.finish()
            return exc.status
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
            say(f"cannot write --stats-json {cfg.stats_json!r}: {exc.strerror or exc}")
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
    install_redaction(cfg)
    install_loop()
    try:
        return asyncio.run(_main(cfg, stream_fd))
    except KeyboardInterrupt:
        return 130
