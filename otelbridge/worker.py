"""The decoding process: stages 2–5 (lines → dialects → tracker → spans → export) in a process of
their own, fed by the tee through a pipe.

Why a process: the tee must pass bytes at ``tee``'s speed with no added latency, and decoding,
span building and OTLP encoding hold a Python GIL for milliseconds at a time
(../shared/MEASURED.md). In one process the two share that GIL; the passthrough then runs at a
fraction of its speed and its p99 latency follows the decoder's (bench/RESULTS.md). Here the
tee's process imports nothing of OpenTelemetry and never runs Python per line.

How (POSIX; where there is no ``fork`` the decoding runs on a thread of the tee's process,
:class:`otelbridge.pipeline.LiveFront`, as before):

* :meth:`Worker.start` forks before the event loop starts. The decoding process keeps neither the
  stream's input nor its output open (a closed reader or writer is seen exactly as without us),
  ignores SIGINT/SIGTERM (the tee decides; it is told on the control pipe) and runs
  :func:`serve` until the end, then ``os._exit`` s with the run's exit status.
* **data pipe** (1 MiB): the tee ``tee(2)`` s each chunk into it, zero-copy and non-blocking
  (``source/pipe.py``). When it is full (the decoding process is busy: msgspec and OTLP encoding
  hold its GIL for milliseconds, its set-up takes 100 ms) the tee passes the chunk through by
  hand and queues a copy here (:data:`BACKLOG_LIMIT` bytes at most, written as the pipe drains);
  beyond that the chunk is only described:
* **control pipe** (tee → decoding process), JSON lines: ``{"gap": [offset, nbytes, newlines,
  ends_with_newline]}`` (a :class:`~otelbridge.lines.Gap` at data-pipe byte ``offset``),
  ``{"pid": N}`` (the wrapped command), ``{"end": {"reason": .., "exit_code": .., "bytes": ..,
  "deadline": ..}}`` (``deadline``: the end of input + ``--flush-timeout``, on
  ``time.monotonic()`` — one clock for all processes of the machine, Linux ``CLOCK_MONOTONIC``).
  A gap message is written before any data that follows the gap, and the decoding process reads
  the control pipe after each data read, so a gap is always known before the data after it is
  applied. The end is written at the end of input, before the backlog: the decoding process
  reads the control pipe while it waits for its decoding thread too, so that it shares the
  flush budget out from the end of input, however far behind it is
  (:meth:`otelbridge.pipeline.LiveFront.ending`).
* **result pipe** (decoding process → tee), JSON lines: ``{"ready": [traceparent,
  under_parent] | null}`` once set up (the wrapper waits for it before starting the command: its
  ``TRACEPARENT`` names the run span), ``{"exit": N}`` at the very end.

The decoding process's reader thread puts chunks into the :class:`~otelbridge.handoff.Handoff`
(:data:`HANDOFF_LIMIT`), waiting when it is full; the pipe then fills, the tee's backlog grows,
and past it the tee skips (counted, said once). Buffers in all: 10 + 2 + 1 MiB.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import sys
import time
from collections import deque
from typing import TYPE_CHECKING

from .lines import Gap, LinePosition, queue_gap
from .source.pipe import CHUNK, widen_pipe

if TYPE_CHECKING:
    from .config import Config
    from .stats import Stats

#: Seconds the tee waits for the decoding process beyond ``--flush-timeout`` before it gives up
#: (and beyond ``handoff.SETUP_TIMEOUT_S`` too while it has not said it is set up).
EXIT_MARGIN_S = 2.0
#: Exit status of a decoding process that failed (the tee then uses its own).
EXIT_SOFTWARE = 70
#: Bytes the tee keeps for the decoding process while its pipe is full (10 MiB); beyond, gaps.
#: With the pipe and :data:`HANDOFF_LIMIT`, 13 MiB of a burst is kept for decoding, 11 MiB of it
#: from the first byte (before the decoding process reads): a live CLI's bursts are far smaller,
#: and ``otelbridge replay`` decodes a recording whole. (16 + 4 MiB kept 8 MB more in every mode
#: on the benchmark's firehose.)
BACKLOG_LIMIT = 10 * 1024 * 1024
#: Bytes the decoding process's reader queues for its decoding thread (2 MiB): the backlog is
#: the buffer; this one only lets the reader drain the pipe while the decoder runs Python code.
HANDOFF_LIMIT = 2 * 1024 * 1024
#: Seconds between the reader's looks at the control pipe while its decoding thread is behind
#: (the handoff full): the end message starts the end at once.
END_POLL_S = 0.05


class Worker:
    """The tee's handle on the decoding process (see the module doc), and the
    :class:`~otelbridge.source.pipe.Feed` of its ``Tee``: ``fd`` is the data pipe's write end
    (non-blocking); what it cannot take at once waits in a bounded backlog, written whenever the
    pipe has room (the event loop watches it), in order with the gaps."""

    def __init__(self, cfg: Config, pid: int, data_w: int, ctl_w: int, res_r: int) -> None:
        self.cfg = cfg
        self.pid = pid
        self.fd = data_w
        self._ctl = ctl_w
        self._res = res_r
        self._res_buf = b""
        self._eof = False
        self._messages: list[dict] = []
        self._pending: list[bytes] = []  # control messages not yet written (pipe full)
        #: bytes written into the data pipe so far (a gap's offset)
        self.offset = 0
        self._backlog: deque[memoryview | Gap] = deque()
        self._backlog_bytes = 0
        self._watching = False
        self._gone = False
        #: where the chunks passed by hand are in the stream's lines (see LinePosition)
        self._position = LinePosition(cfg.max_line)

    @classmethod
    def start(cls, cfg: Config, close_in_child: tuple[int, ...] = ()) -> "Worker | None":
        """Fork the decoding process; ``None`` where ``fork`` is missing or fails (the caller
        decodes in process). ``close_in_child``: fds the decoding process must not hold (the
        stream's output)."""
        if not hasattr(os, "fork"):
            return None
        fds = [*os.pipe(), *os.pipe(), *os.pipe()]  # non-inheritable: never the wrapped command's
        data_r, data_w, ctl_r, ctl_w, res_r, res_w = fds
        widen_pipe(data_w, CHUNK)
        try:
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            return None
        if pid == 0:  # the decoding process: never returns
            code = EXIT_SOFTWARE
            try:
                for fd in (data_w, ctl_w, res_r, *close_in_child):
                    os.close(fd)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)  # the stream's input is the tee's alone
                os.close(null)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                code = serve(cfg, data_r, ctl_r, res_w)
            except BaseException as exc:  # noqa: BLE001 - nothing may escape into the tee's code
                try:
                    sys.stderr.write(f"otelbridge: decoding process failed: {exc!r}\n")
                    sys.stderr.flush()
                except Exception:
                    pass
            finally:
                os._exit(code)
        for fd in (data_r, ctl_r, res_w):
            os.close(fd)
        os.set_blocking(data_w, False)
        os.set_blocking(ctl_w, False)
        return cls(cfg, pid, data_w, ctl_w, res_r)

    # -- the tee's side

    def _send(self, message: dict) -> None:
        """Queue one control message and write what the pipe takes now (never waits)."""
        self._pending.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self._write_pending(wait=False)

    def _write_pending(self, wait: bool) -> None:
        while self._pending:
            data = self._pending[0]
            try:
                n = os.write(self._ctl, data)
            except BlockingIOError:
                if not wait:
                    return
                select.select([], [self._ctl], [], 1.0)
                continue
            except InterruptedError:
                continue
            except OSError:  # the decoding process is gone: nothing to tell
                self._pending.clear()
                return
            if n == len(data):
                self._pending.pop(0)
            else:
                self._pending[0] = data[n:]

    # -- the Feed

    def direct(self) -> bool:
        return not self._backlog and not self._gone

    def fed(self, n: int) -> None:
        self.offset += n
        self._position.unseen()

    def chunk(self, buf: bytearray, n: int) -> None:
        """``buf[:n]`` passed through by hand: into the pipe what it takes now, the rest to the
        backlog, or — past :data:`BACKLOG_LIMIT` — a gap. A chunk inside a line decoding drops
        anyway (longer than ``--max-line``, or cut by a gap) is a gap at once: it never takes the
        backlog's room from the lines after it. Never waits."""
        if self._gone:
            return
        if self._position.undecodable(buf, n):
            self._skip(Gap(n, 0, False))
            return
        start = 0
        if not self._backlog:
            start = self._write(memoryview(buf)[:n])
            if start == n:
                return
        size = n - start
        if self._backlog_bytes + size <= BACKLOG_LIMIT:
            self._backlog.append(memoryview(bytes(buf[start:n])))
            self._backlog_bytes += size
            self._watch()
        else:
            self._skip(Gap.of(buf, start, n))

    def _skip(self, gap: Gap) -> None:
        """A gap after what is queued (merged with a gap queued last), or sent at once."""
        self._position.skipped(gap)
        if not self._backlog:
            self._send({"gap": [self.offset, gap.nbytes, gap.newlines, gap.ends_with_newline]})
            return
        self._backlog_bytes -= queue_gap(self._backlog, gap)
        self._watch()

    def _write(self, data: memoryview) -> int:
        try:
            n = os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:  # the decoding process is gone: pass through, feed nothing more
            from .app import say

            self._gone = True
            self._backlog.clear()
            say("the decoding process is gone; the stream passes on, untraced from here")
            return len(data)
        self.offset += n
        return n

    def _watch(self) -> None:
        if not self._watching and self._backlog:
            try:
                asyncio.get_running_loop().add_writer(self.fd, self._drain)
                self._watching = True
            except RuntimeError:  # no loop (the end): drain_backlog does it
                pass

    def _drain(self) -> bool:
        """Write the backlog while the pipe takes it; True when it is empty."""
        while self._backlog and not self._gone:
            item = self._backlog[0]
            if isinstance(item, Gap):
                self._send({"gap": [self.offset, item.nbytes, item.newlines, item.ends_with_newline]})
                self._backlog.popleft()
                continue
            n = self._write(item)
            if n == 0:
                return False
            self._backlog_bytes -= n
            if n < len(item):
                self._backlog[0] = item[n:]
            else:
                self._backlog.popleft()
        if self._watching:
            asyncio.get_running_loop().remove_writer(self.fd)
            self._watching = False
        return True

    def _drain_until(self, deadline: float) -> None:
        """The end: write the backlog, waiting for the pipe until ``deadline`` (monotonic); what
        is left then becomes gaps."""
        if self._watching:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().remove_writer(self.fd)
            self._watching = False
        while not self._drain():
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([], [self.fd], [], wait)[1]:
                break
        while self._backlog:
            item = self._backlog.popleft()
            gap = item if isinstance(item, Gap) else Gap.of(item.tobytes())
            self._send({"gap": [self.offset, gap.nbytes, gap.newlines, gap.ends_with_newline]})
        self._backlog_bytes = 0

    def set_pid(self, pid: int) -> None:
        """The wrapped command's pid, for the run span."""
        self._send({"pid": pid})

    def _read_messages(self, deadline: float) -> bool:
        """Read result messages until ``deadline`` (monotonic); False at EOF (then
        :attr:`_eof`) or time-out."""
        wait = max(0.0, deadline - time.monotonic())
        if not select.select([self._res], [], [], wait)[0]:
            return False
        try:
            data = os.read(self._res, 65536)
        except InterruptedError:
            return True
        if not data:
            self._eof = True
            return False
        self._res_buf += data
        *lines, self._res_buf = self._res_buf.split(b"\n")
        for line in lines:
            try:
                self._messages.append(json.loads(line))
            except ValueError:
                pass
        return True

    def _wait_for(self, key: str, timeout: float) -> tuple[bool, object]:
        deadline = time.monotonic() + timeout
        while True:
            for msg in self._messages:
                if key in msg:
                    return True, msg[key]
            if not self._read_messages(deadline):
                return False, None

    def run_link(self) -> tuple[str, bool] | None:
        """Wait for the set-up (at most ``handoff.SETUP_TIMEOUT_S``): as
        :meth:`otelbridge.pipeline.LiveFront.run_link`."""
        from .handoff import SETUP_TIMEOUT_S

        found, link = self._wait_for("ready", SETUP_TIMEOUT_S)
        return (str(link[0]), bool(link[1])) if found and link else None

    def end(self, reason: str | None, exit_code: int, stats: Stats) -> int:
        """End of the stream: close the data pipe, send the end (``stats.bytes``: what passed),
        wait for the decoding process (bounded: ``--flush-timeout`` + :data:`EXIT_MARGIN_S`, plus
        the set-up's time if it has not said it is set up) and return the exit status it settled
        on (``exit_code``, or 1 with ``--fail-on-export-error`` and lost spans). One that failed
        or hangs (then killed) is said on stderr; ``exit_code`` then stands — 1 with
        ``--fail-on-export-error`` (its spans are lost) — and ``--stats-json`` gets this
        process's counts."""
        from .app import say
        from .handoff import SETUP_TIMEOUT_S

        started = time.monotonic()
        budget = self.cfg.flush_timeout_s
        # the end first (its deadline counts from now), then the backlog: what the decoding
        # process has not taken yet, until half-way, then as gaps
        self._send({"end": {"reason": reason, "exit_code": exit_code, "bytes": stats.bytes,
                            "deadline": started + budget}})
        self._drain_until(started + budget / 2)
        os.close(self.fd)
        os.set_blocking(self._ctl, True)
        self._write_pending(wait=True)
        os.close(self._ctl)
        self._read_messages(time.monotonic())  # has it said it is set up?
        set_up = any("ready" in msg for msg in self._messages)
        limit = started + budget + EXIT_MARGIN_S + (0.0 if set_up else SETUP_TIMEOUT_S)
        found, code = self._wait_for("exit", limit - time.monotonic())
        if not found and not self._eof:  # still running after the limit: stuck
            say("the decoding process did not finish in time; stopping it (spans may be lost)")
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        status = _reap(self.pid)  # it has said its last word (or was killed): it is exiting
        if found and isinstance(code, int):
            return code
        say(f"the decoding process ended with status {status}; its counts and the spans it had "
            "not exported are lost")
        if self.cfg.stats_json:
            with contextlib.suppress(OSError):
                stats.write_json(self.cfg.stats_json)
        if self.cfg.fail_on_export_error and exit_code == 0:
            return 1
        return exit_code


def _reap(pid: int) -> int | None:
    """Wait for ``pid``; its exit status (negative: killed by that signal), ``None`` if it was
    not ours to wait for."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)


# --------------------------------------------------------------------------- the decoding process


class _Control:
    """The decoding process's reading of the control pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""
        #: (data-pipe offset, gap), in offset order: the tee writes them in stream order
        self.gaps: deque[tuple[int, Gap]] = deque()
        self.skipped = 0  # bytes of all gaps
        self.pid: int | None = None
        self.end: dict | None = None
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


def serve(cfg: Config, data_fd: int, ctl_fd: int, result_fd: int) -> int:
    """The decoding process's body: decode what comes on ``data_fd`` (gaps, the pid and the end
    from ``ctl_fd``) until the tee's end message, then end every span, flush (bounded), report,
    write ``{"exit": N}`` to ``result_fd`` and return N."""
    from .app import say
    from .pipeline import LiveFront
    from .stats import Stats
    from .source import REASON_TEE_GONE

    def write_result(message: dict) -> None:
        try:
            os.write(result_fd, json.dumps(message).encode() + b"\n")
        except OSError:
            pass

    # Python's default GIL switch interval (5 ms) here: the reader (this thread) may wait that
    # long for the decoding thread — the tee's backlog absorbs it — and the decoding, span
    # building and OTLP encoding threads switch less (end to end 5.6 → 5.0 s for 52,001 spans)
    stats = Stats()
    front = LiveFront(cfg, stats, on_ready=lambda link: write_result({"ready": link}),
                      limit=HANDOFF_LIMIT)
    control = _Control(ctl_fd)
    offset = 0
    pid_set = None

    def read_control() -> None:
        """Read the control pipe; the end message (which comes at the end of input, while the
        data may still be behind) starts the end (:meth:`LiveFront.ending`)."""
        control.drain()
        if control.end is not None and "deadline" in control.end:
            front.ending(float(control.end["deadline"]))

    def put(chunk: bytes) -> None:
        """Queue ``chunk`` in the handoff, reading the control pipe while it waits for room."""
        while not front.handoff.put(chunk, timeout=END_POLL_S):
            read_control()

    def apply(data: bytes) -> None:
        """``data`` follows data-pipe byte ``offset``: queue it, with the gaps known up to its
        end in their places (a gap at an offset comes before the data from that offset on)."""
        pos, end = 0, offset + len(data)
        while control.gaps and control.gaps[0][0] <= end:
            at = max(control.gaps[0][0] - offset, 0)
            if at > pos:
                put(data[pos:at])
                pos = at
            front.handoff.gap(control.gaps.popleft()[1])
        if pos < len(data):
            put(data[pos:] if pos else data)

    while True:
        try:
            data = os.read(data_fd, CHUNK)
        except InterruptedError:
            continue
        read_control()  # after the read: every gap before the data just read is known now
        if control.pid is not None and control.pid != pid_set:
            pid_set = control.pid
            front.set_pid(pid_set)
        if not data:
            break
        apply(data)
        offset += len(data)
    control.drain(wait=True)
    if control.pid is not None and control.pid != pid_set:
        front.set_pid(control.pid)
    apply(b"")  # the gaps after the last byte
    end = control.end
    if end is None:  # the tee's process is gone without a word (killed)
        say("the tee's process ended unexpectedly; ending every span")
        reason, exit_code = REASON_TEE_GONE, 128 + signal.SIGKILL
        deadline = time.monotonic() + cfg.flush_timeout_s
        stats.bytes = offset + control.skipped  # what it had read, as far as we know
    else:
        reason, exit_code = end.get("reason"), int(end.get("exit_code", 0))
        # bytes passed through; after EPIPE the last chunk was read (and fed) but not delivered:
        # counted as read, so that the lines never outnumber the bytes
        stats.bytes = max(int(end.get("bytes", 0)), offset + control.skipped)
        deadline = float(end.get("deadline", time.monotonic() + cfg.flush_timeout_s))
    code = front.end(reason, exit_code, deadline=deadline)
    write_result({"exit": code})
    return code
