"""The decoding process of the live tee (pipe and wrapper modes): stages 2–5 in a process of
their own, fed by the tee's process through the data pipe (:mod:`otelbridge.source.feed` is the
tee's side, and says what crosses the pipes).

Why a process: the tee must pass bytes at ``tee``'s speed with no added latency, while decoding,
span building and OTLP encoding hold a Python GIL for milliseconds at a time. Here they hold
this process's GIL only; the tee's process imports nothing of OpenTelemetry.

One thread runs an event loop: the data pipe is read chunk by chunk (the control pipe after each
read, so that a gap is known before the data after it), each chunk is decoded at once, and grace
windows fire as timers of the same loop — the tracker is touched by that thread only. The SDK
exports on its own thread; after each span built the decoder waits while a healthy exporter's
queue is three quarters full (a burst is exported, not dropped), and the pipe and the tee's
backlog absorb the wait.

The end: the tee's end message carries the run's :class:`~otelbridge.deadline.Deadline`. From
its decoding share on (half of it, at least a second), what still comes is counted as not decoded (the counts add up: lines =
decoded + not wanted + bad + overlong + not decoded) so that ending the spans and the flush get
the rest — all but its last lines (:data:`~otelbridge.deadline.TAIL_LINES`), decoded at the end:
a run's last lines hold its result, which the job outputs and the session's status come from. The process ignores
SIGINT/SIGTERM (from its fork on): the tee decides, and tells it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..config import Config
from ..environment import NUMERIC_ENV, TLS_FILES, for_the_sdk
from ..deadline import TAIL_BYTES, TAIL_LINES, TAIL_S, Deadline
from ..lines import Gap
from ..messages import say
from ..source import REASON_DOWNSTREAM_CLOSED, REASON_TEE_GONE
from ..source.arrivals import ArrivalClock, Arrivals
from ..stats import Stats, counts_and_exit_code
from .loop import install_loop

if TYPE_CHECKING:
    from ..pipeline import Pipeline

log = logging.getLogger("otelbridge")

#: Bytes read from the data pipe at once (128 KiB, a few hundred lines, into one reused buffer:
#: a new bytes object a read is what costs): the end's decoding share is looked at between reads, so a
#: read decoded past it stays small next to the end's budget.
READ_SIZE = 128 * 1024

#: A read smaller than this (a live CLI's trickle, not a burst) pauses reading for up to
#: :data:`PAUSE_S`: one wake-up then takes what many writes brought (the tee writes each at
#: once; only the decoding waits, and its lines keep the times they passed the tee at:
#: :mod:`otelbridge.source.arrivals`). So does a read after a pause that did not fill the
#: buffer: what the pause brought is the trickle's, and reading at once would only catch the
#: next write alone. A burst fills every read and is never paused.
SMALL_READ = 16 * 1024
#: Seconds reading pauses after a small read at most (the end of input resumes it at once, and
#: so does a burst: the tee says when the data pipe was full): spans leave at most this much
#: later ...
PAUSE_S = 0.25
#: ... no longer than the stream's recent rate takes to bring this many bytes (a fraction
#: of the 1 MiB pipe: a pause never makes the tee keep a backlog) ...
PAUSE_BYTES = 128 * 1024
#: ... nor this many chunks: each ``tee(2)`` chunk, however small, takes one of the pipe's 256
#: slots, so that many tiny writes fill it long before its bytes do.
PAUSE_CHUNKS = 64

#: Once the end has come, reads are decoded in pieces of this many bytes, the end's decoding
#: share looked at between them.
END_PIECE = 4096

#: Said once on stderr when the first line is lost to a gap.
BEHIND_MESSAGE = (
    "decoding fell behind the stream; parts of it were skipped unread (counted as not decoded) "
    "— traces may be incomplete; for recordings use `otelbridge replay`"
)


class Control:
    """The decoding process's reading of the control pipe (messages: see source/feed.py)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""
        #: (data-pipe offset, gap), in offset order: the tee writes them in stream order
        self.gaps: deque[tuple[int, Gap]] = deque()
        self.skipped = 0  # bytes of all gaps
        self.pid: int | None = None
        self.end: dict | None = None
        self.full = False  # the data pipe was full (a backlog began) since the last read
        self.eof = False
        os.set_blocking(fd, False)

    def drain(self, wait: bool = False) -> None:
        """Read what the control pipe holds; with ``wait``, until its end."""
        while not self.eof:
            if wait:
                select.select([self.fd], [], [])
            try:
                data = os.read(self.fd, 65536)
            except (BlockingIOError, InterruptedError):
                if not wait:
                    return
                continue
            if not data:
                self.eof = True
                break
            self.buf += data
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                self._apply(line)

    def _apply(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if "gap" in msg:
            offset, nbytes, newlines, ends = msg["gap"]
            self.gaps.append((int(offset), Gap(int(nbytes), int(newlines), bool(ends))))
            self.skipped += int(nbytes)
        elif "pid" in msg:
            self.pid = int(msg["pid"])
        elif "end" in msg:
            self.end = msg["end"]
        elif "full" in msg:
            self.full = True


#: ``OTEL_*`` variables the set-up never speaks about (:mod:`otelbridge.config` checks them in the
#: tee's process, or the SDK takes any value): any other one set (headers, certificates, the
#: resource, ...) is read, and possibly said unusable, as the exporters are made.
CHECKED_ENV = frozenset({
    "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
    *(f"OTEL_EXPORTER_OTLP{kind}_{name}" for kind in ("", "_TRACES")
      for name in ("ENDPOINT", "PROTOCOL", "INSECURE", "TIMEOUT", "COMPRESSION",
                   *(tls for tls, _ in TLS_FILES))),
    *(name for name, _, _ in NUMERIC_ENV),
})


def silent_setup(cfg: Config, env: Mapping[str, str]) -> bool:
    """True when setting up stages 2–5 for a run with no input would say and write nothing but
    what :func:`~otelbridge.stats.counts_and_exit_code` does: no wrapped command (its run span),
    no ``file`` exporter (it creates ``--output``), the default redaction (else a warning), no
    ``TRACEPARENT`` (checked), no HTML page, job outputs or step summary (written for an empty
    run too), no ``OTEL_*`` variable beyond :data:`CHECKED_ENV`."""
    return (not cfg.command and "file" not in cfg.exporters and cfg.default_redaction
            and not cfg.traceparent and not cfg.report and not cfg.outputs and not env.get("GITHUB_OUTPUT")
            and not (cfg.summary != "never" and env.get("GITHUB_STEP_SUMMARY"))
            and not any(k.startswith("OTEL_") and k not in CHECKED_ENV for k in env))


class LiveDecoder:
    """Stages 2–5 for the live stream: the :class:`Pipeline` (``None`` until :meth:`set_up`, or
    when the set-up failed: lines are then counted, nothing decoded), the gaps, and the end's
    decoding share. The first chunk or gap sets it up if :meth:`set_up` was not called;
    ``on_ready(pipeline)`` is called once it is."""

    def __init__(self, cfg: Config, stats: Stats,
                 call_later: Callable[[float, Callable[[], None]], object],
                 on_ready: Callable[[Pipeline | None], None] = lambda _: None,
                 clock: ArrivalClock | None = None) -> None:
        self.cfg = cfg
        self.stats = stats
        self._call_later = call_later
        self._on_ready = on_ready
        #: the wall clock of the pipeline's :class:`~otelbridge.clock.Clock`
        self.clock = clock if clock is not None else ArrivalClock()
        #: decoding's share of the deadline: chunks from then on are counted as not decoded, and no wait
        #: for the exporters goes past it (at the end it moves to the deadline itself)
        self.cut: Deadline | None = None
        self._warned = False
        self.ready = False
        self.pipeline: Pipeline | None = None
        #: the last lines come past the decoding share (:data:`TAIL_LINES`, :data:`TAIL_BYTES`
        #: at most), decoded at :meth:`end`
        self._tail = bytearray()

    def set_up(self) -> None:
        """Build the pipeline (once): imports, redaction, the exporters, the run span. A
        failure is one line on stderr; the lines are then counted only."""
        if self.ready:
            return
        self.ready = True
        cfg = self.cfg
        for_the_sdk(cfg.ignored_env, cfg.replaced_env)  # the SDK reads some as it is imported
        from ..export_logging import configure_logging
        from ..pipeline import PaceExporters, Pipeline
        from ..views import Report

        try:
            configure_logging()
            self.pipeline = Pipeline(
                cfg, self.stats, report=Report(cfg, say), call_later=self._call_later,
                last=lambda exporters: PaceExporters(exporters, lambda: self.cut), wall=self.clock)
        except Exception as exc:  # a bug: an exporter that cannot be made is left out by Exporters
            log.warning("cannot set up tracing, passing the stream through only (its lines "
                        "counted as not decoded): %s", exc)
            self._warned = True  # not behind: the line above says why nothing is decoded
        self._on_ready(self.pipeline)

    def chunk(self, data: bytes | bytearray, n: int) -> None:
        """``data[:n]``, the stream's next bytes (``data`` is reused after the call)."""
        if self.cut is None:
            self._decode(data, n)
            return
        # the end has come: in pieces, so that its share's end is seen within one (a read of
        # short lines decoded on a loaded machine could take seconds), then kept for the end
        for start in range(0, n, END_PIECE):
            piece = bytes(data[start:min(n, start + END_PIECE)])
            if self.cut.passed():
                self._keep(piece)
            else:
                self._decode(piece, len(piece))

    def _keep(self, data: bytes) -> None:
        """Past decoding's share: ``data`` kept for the end if among the last lines, else a gap."""
        tail = self._tail
        tail += data
        over, at = max(0, len(tail) - TAIL_BYTES), len(tail) - 1  # (a last "\n" ends no line)
        for _ in range(TAIL_LINES):
            at = tail.rfind(b"\n", 0, at)
            if at < 0:
                break
        over = max(over, at + 1)
        if over:
            self._skip(Gap.of(tail, 0, over))
            del tail[:over]

    def _decode(self, data: bytes | bytearray, n: int) -> None:
        self.set_up()
        if self.pipeline is not None:
            self.pipeline.on_chunk(data, n)
        else:
            self._undecoded(Gap.of(data, 0, n))

    def gap(self, gap: Gap) -> None:
        if self._tail:  # (the bytes kept come before it: not decoded either)
            self._skip(Gap.of(self._tail))
            self._tail = bytearray()
        self._skip(gap)

    def _skip(self, gap: Gap) -> None:
        self.set_up()
        before = self.stats.lines_not_decoded
        if self.pipeline is not None:
            self.pipeline.splitter.gap(gap)
        else:
            self._undecoded(gap)
        # said once, and only when a line was lost (a gap inside an overlong line loses none)
        if not self._warned and self.stats.lines_not_decoded > before:
            self._warned = True
            say(BEHIND_MESSAGE)

    def _undecoded(self, gap: Gap) -> None:
        """Without a pipeline (its set-up failed): ``gap``'s lines counted as not decoded."""
        self.stats.lines += gap.newlines
        self.stats.lines_not_decoded += gap.newlines
        self.stats.bytes_not_decoded += gap.nbytes - gap.newlines

    def set_pid(self, pid: int) -> None:
        if self.pipeline is not None and self.pipeline.run is not None:
            self.pipeline.run.pid = pid

    def settle(self) -> None:
        """The input is over: set up if nothing did yet, unless the set-up would be silent
        (:func:`silent_setup`) — then the end of a run with no input is the counts line alone."""
        if not silent_setup(self.cfg, os.environ):
            self.set_up()

    def end(self, reason: str | None, exit_code: int, deadline: Deadline) -> int:
        """Every open span ended (the run span with ``exit_code``), the flush by ``deadline``,
        the report and counts: the run's exit status."""
        pipeline = self.pipeline
        tail, self._tail = self._tail, bytearray()
        if pipeline is None:  # the set-up failed, or nothing came (settle)
            if tail:
                self._skip(Gap.of(tail))
            return counts_and_exit_code(self.cfg, self.stats, None, exit_code, not self.ready, live=True,
                                        reader_left=reason == REASON_DOWNSTREAM_CLOSED)
        until = time.monotonic() + TAIL_S  # (the tee stops a process past its margin)
        *whole, last = bytes(tail).split(b"\n")
        lines = [line + b"\n" for line in whole] + ([last] if last else [])
        for i, line in enumerate(lines):
            if time.monotonic() >= until:  # the rest not decoded either
                self._skip(Gap.of(b"".join(lines[i:])))
                break
            pipeline.on_chunk(line, len(line))
        self.cut = deadline  # no more chunks: ending the spans may wait for the exporters till then
        pipeline.exit_code = exit_code
        pipeline.end_stream(reason)
        return pipeline.report_and_exit_code(exit_code, pipeline.exporters.shutdown(deadline),
                                             reader_left=reason == REASON_DOWNSTREAM_CLOSED)


#: Seconds after the set-up that its garbage is collected (:func:`_give_back_memory`).
REST_AFTER_S = 1.0


def _give_back_memory() -> None:
    """After the set-up: the garbage of the imports collected and the heap's free pages given
    back to the system (glibc's ``malloc_trim``; a no-op elsewhere) — memory at rest."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def serve(cfg: Config, data_fd: int, ctl_fd: int, result_fd: int, input_over: bool,
          arrivals: Arrivals) -> int:
    """The decoding process's body: decode what comes on ``data_fd`` (gaps, the pid and the end
    from ``ctl_fd``; when each byte passed the tee from ``arrivals``) until its end, then end
    every span, flush by the deadline, report, write ``{"exit": N}`` to ``result_fd`` and return
    N. It sets up at once, writing ``{"ready": ...}`` (the wrapper waits for it), unless
    ``input_over`` (the tee's input held nothing and had ended when it forked): then at the
    first byte, or at the end (:meth:`LiveDecoder.settle`)."""
    install_loop()
    return asyncio.run(_serve(cfg, data_fd, ctl_fd, result_fd, input_over, arrivals))


async def _serve(cfg: Config, data_fd: int, ctl_fd: int, result_fd: int, input_over: bool,
                 arrivals: Arrivals) -> int:
    loop = asyncio.get_running_loop()

    def write_result(message: dict) -> None:
        try:
            os.write(result_fd, json.dumps(message).encode() + b"\n")
        except OSError:
            pass

    stats = Stats()
    ready_at = time.monotonic()

    def on_ready(pipeline: Pipeline | None) -> None:
        nonlocal ready_at
        ready_at = time.monotonic()
        write_result({"ready": pipeline.run_link() if pipeline is not None else None})
        loop.call_later(REST_AFTER_S, _give_back_memory)  # a run over by then never pays it

    clock = ArrivalClock()
    decoder = LiveDecoder(cfg, stats, loop.call_later, on_ready, clock)
    if not input_over or cfg.command:
        decoder.set_up()
    control = Control(ctl_fd)
    offset = 0
    pid_set: int | None = None
    data_over = loop.create_future()

    def read_control() -> None:
        nonlocal pid_set
        control.drain()
        if control.pid is not None and control.pid != pid_set:
            pid_set = control.pid
            decoder.set_pid(pid_set)
        if decoder.cut is None and control.end is not None and "deadline" in control.end:
            decoder.cut = Deadline(float(control.end["deadline"])).for_decoding()

    buf = bytearray(READ_SIZE)

    def apply(data: bytes | bytearray, n: int) -> None:
        """``data[:n]`` follows data-pipe byte ``offset``: decode it piece by piece, each dated by
        when it passed the tee, with the gaps known up to its end in their places (a gap at an
        offset comes before the data from that offset on)."""
        pos = 0
        pieces = arrivals.pieces(offset, offset + n) if n else ((offset, None),)
        for piece_end, passed_ns in pieces:
            clock.at = passed_ns
            pos = take(data, pos, piece_end - offset)
        clock.at = None

    def take(data: bytes | bytearray, pos: int, upto: int) -> int:
        """Decode ``data[pos:upto]`` and the gaps up to its end; returns ``upto``."""
        end = offset + upto
        while control.gaps and control.gaps[0][0] <= end:
            at = max(control.gaps[0][0] - offset, 0)
            if at > pos:
                decoder.chunk(data[pos:at], at - pos)
                pos = at
            decoder.gap(control.gaps.popleft()[1])
        if pos < upto:
            decoder.chunk(data[pos:upto], upto - pos) if pos else decoder.chunk(data, upto)
        return upto

    paused: asyncio.TimerHandle | None = None
    since, since_bytes = time.monotonic(), 0  # the stream's rate since the last pause began
    since_chunks = arrivals.chunks()
    reading = False  # the data pipe is watched by the loop (not while paused)

    def watch(on: bool) -> None:
        nonlocal reading
        if on != reading:
            if on:
                loop.add_reader(data_fd, on_data)
            else:
                loop.remove_reader(data_fd)
            reading = on

    def resume() -> None:
        """The pause is over (or the end came): read what came meanwhile now, without a round
        trip through the loop's watch (at a trickle, something has come)."""
        nonlocal paused
        if paused is not None:
            paused.cancel()
            paused = None
            on_data(after_pause=True)

    def on_data(after_pause: bool = False) -> None:
        nonlocal offset, paused, since, since_bytes, since_chunks
        try:
            n = os.readv(data_fd, [buf])
        except (BlockingIOError, InterruptedError):
            watch(True)  # nothing yet: woken when something comes
            return
        read_control()  # after the read: every gap before the data just read is known now
        if not n:
            watch(False)
            if not data_over.done():
                data_over.set_result(None)
            return
        apply(buf, n)
        offset += n
        since_bytes += n
        burst, control.full = control.full, False
        if control.end is None and not burst and (
                n < SMALL_READ or (after_pause and n < len(buf))):
            now = time.monotonic()
            took = max(now - since, 1e-3)
            chunks = arrivals.chunks()
            pause = min(PAUSE_S, PAUSE_BYTES * took / since_bytes,
                        PAUSE_CHUNKS * took / max(chunks - since_chunks, 1))
            since, since_bytes, since_chunks = now, 0, chunks
            watch(False)
            paused = loop.call_later(pause, resume)
        else:
            watch(True)

    def on_control() -> None:
        read_control()
        if control.end is not None or control.full:  # the end, or a burst: read at once
            resume()  # (the read consumes ``full``: no pause right after a burst)
        if control.eof:
            loop.remove_reader(ctl_fd)

    watch(True)
    loop.add_reader(ctl_fd, on_control)
    await data_over
    if not control.eof:
        loop.remove_reader(ctl_fd)
    control.drain(wait=True)
    read_control()
    apply(b"", 0)  # the gaps after the last byte
    decoder.settle()
    end = control.end
    if end is None:  # the tee's process is gone without a word (killed)
        say("the tee's process ended unexpectedly; ending every span")
        reason, exit_code = REASON_TEE_GONE, 128 + signal.SIGKILL
        deadline = Deadline.after(cfg.flush_timeout_s)
        stats.bytes = offset + control.skipped  # what it had read, as far as we know
    else:
        reason, exit_code = end.get("reason"), int(end.get("exit_code", 0))
        # bytes passed through; after EPIPE the last chunk was read (and fed) but not delivered:
        # counted as read, so that the lines never outnumber the bytes
        stats.bytes = max(int(end.get("bytes", 0)), offset + control.skipped)
        deadline = Deadline(float(end.get("deadline", time.monotonic() + cfg.flush_timeout_s)))
        # the input ended while we were setting up: the set-up is not part of the flush budget
        deadline = deadline.later_by(max(0.0, ready_at - (deadline.at - cfg.flush_timeout_s)))
    code = decoder.end(reason, exit_code, deadline)
    write_result({"exit": code})
    return code
