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
import time

from . import dialects
from .clock import Clock
from .config import Config
from .handoff import Handoff
from .ids import Ids
from .lines import LineSplitter
from .source import pipe
from .source.child import ChildError, exit_status, spawn
from .stats import Stats
from .tracker import REASON_DOWNSTREAM_CLOSED, Context, Parent, Tracker, interrupted_by

log = logging.getLogger("otelbridge")

EXIT_EPIPE = 128 + signal.SIGPIPE
EXIT_EXPORT_FAILED = 1

#: At most this long (seconds) the end of a run waits for the tracing set-up (imports, exporter
#: construction: no network) still running on the handoff's thread.
SETUP_TIMEOUT_S = 30.0

#: GIL switch interval, seconds. Decoding, span building and OTLP encoding run on other threads
#: and hold the GIL for milliseconds (../shared/MEASURED.md); with Python's default 5 ms each wait for it
#: delays the passthrough by as much. 0.1 ms keeps the added latency near 1 ms (bench/RESULTS.md).
SWITCH_INTERVAL_S = 0.0001


def say(message: str) -> None:
    """One line of ours on stderr."""
    try:
        sys.stderr.write(f"otelbridge: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


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


class Pipeline:
    """Stages 2–5 for one stream. The splitter runs on the tee's thread from the first byte;
    the rest — tracker, span builder, exporters, and with them the OpenTelemetry imports and the
    exporter's set-up (30–110 ms measured) — is built on the :class:`Handoff`'s thread, which then
    applies the lines (and the grace-window timers): the first bytes never wait for it, the
    lines that arrive meanwhile wait in the handoff."""

    def __init__(self, cfg: Config, stats: Stats) -> None:
        self.cfg = cfg
        self.stats = stats
        self.handoff = Handoff()
        self.decoder = dialects.Decoder(dialects.load(list(cfg.dialects) or None), stats)
        self.splitter = LineSplitter(self.decoder.markers, self.handoff.put, stats, cfg.max_line)
        self.exporters = None
        self.tracker: Tracker | None = None
        self.handoff.start(self.on_line, self._end_spans, setup=self._build)

    def _build(self) -> None:
        from .export import Exporters, configure_logging
        from .spans import SpanBuilder

        configure_logging()
        cfg = self.cfg
        exporters = Exporters(cfg, self.stats)
        parent, span_ctx = parse_traceparent(cfg)
        builder = SpanBuilder(
            exporters.provider,
            exporters.ids,
            self.stats,
            trace_state=span_ctx.trace_state if span_ctx is not None else None,
            remote_parent_flags=span_ctx.trace_flags if span_ctx is not None else None,
        )
        if span_ctx is not None and not span_ctx.trace_flags.sampled:
            say("TRACEPARENT is not sampled: with the parent-based sampler nothing will be recorded")
        self.tracker = Tracker(
            Context(
                emit=builder.emit,
                ids=Ids(cfg.deterministic_ids),
                clock=Clock(cfg.clock),
                stats=self.stats,
                call_later=self.handoff.call_later,
                grace_s=cfg.grace_s,
                parent=parent,
                capture_content=cfg.capture_content,
            )
        )
        self.exporters = exporters

    def _end_spans(self, reason: str | None) -> None:
        if self.tracker is not None:
            self.tracker.finish(reason=reason)

    def on_line(self, raw: bytes) -> None:
        if self.tracker is None:  # set-up failed (logged once): pass through, decode nothing
            return
        for event in self.decoder.decode(raw):
            try:
                self.tracker.handle(event)
            except Exception as exc:  # a tracker bug costs one event, never the stream
                self.stats.bad_lines += 1
                log.warning("event %s not applied: %s", type(event).__name__, exc)
        self.exporters.wait_for_room()  # on the decoding thread: bursts exported, not dropped

    def on_chunk(self, buf: bytearray, n: int) -> None:
        try:
            self.splitter.feed(buf, n)
        except Exception as exc:
            self.stats.bad_lines += 1
            log.warning("chunk not decoded: %s", exc)

    def finish(self, reason: str | None = None) -> bool:
        """End of input (or of the run, for ``reason``: see :meth:`Tracker.finish`): last line,
        every open span ended, bounded flush. True if all exported.

        The lines still waiting in the handoff (at most its limit) are applied first; that and
        the flush together take at most ``--flush-timeout``."""
        try:
            self.splitter.close()
        except Exception as exc:
            log.warning("last line not decoded: %s", exc)
        self.handoff.ready.wait(SETUP_TIMEOUT_S)  # set-up is not part of the flush budget
        budget = self.cfg.flush_timeout_s
        started = time.monotonic()
        if self.exporters is not None:  # pacing (Exporters.wait_for_room): half the budget at most
            self.exporters.pace_until = started + budget / 2
        if not self.handoff.close(reason, timeout=budget):
            log.warning("decoding did not finish within --flush-timeout; flushing what ended")
        if self.exporters is None:
            return False
        return self.exporters.shutdown(max(0.0, budget - (time.monotonic() - started)))

    def describe_failure(self) -> str | None:
        """The exporters' one line about lost spans, or ``None``."""
        return self.exporters.describe_failure() if self.exporters is not None else None


async def _main(cfg: Config, stream_fd: int) -> int:
    loop = asyncio.get_running_loop()
    stats = Stats()
    pipeline = Pipeline(cfg, stats)
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
    if outcome == pipe.EPIPE:
        # stop reading: the writer (our stdin's, or the child) sees the closed pipe as it would
        # without us — EPIPE/SIGPIPE at its next write
        os.close(fd_in)
        fd_in = -1
    if proc is not None:
        code = exit_status(await proc.wait())
        if fd_in >= 0:
            os.close(fd_in)
    elif got_signal:
        code = 128 + got_signal[0]
    elif outcome == pipe.EPIPE:
        code = EXIT_EPIPE
    else:
        code = 0
    if got_signal:
        reason = interrupted_by(got_signal[0])
    elif outcome == pipe.EPIPE:
        reason = REASON_DOWNSTREAM_CLOSED
    else:
        reason = None

    # a second Ctrl-C from here on changes nothing: the flush below is bounded anyway
    all_exported = pipeline.finish(reason)
    if not cfg.quiet:
        say(stats.line()[len("otelbridge: "):])
        problem = pipeline.describe_failure()
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
    install_loop()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        return asyncio.run(_main(cfg, stream_fd))
    except KeyboardInterrupt:
        return 130
