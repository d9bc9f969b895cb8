"""The tee's side of the decoding process: fork it, feed it the stream, tell it the end, and take
its exit status. (Its own side, stages 2–5: :mod:`otelbridge.modes.live`.)

Between the tee and the decoder there are two buffers, both here:

* the **data pipe** (1 MiB, the kernel's): the tee ``tee(2)`` s each chunk into it, zero-copy
  and non-blocking (``source/pipe.py``);
* the **backlog** (:data:`BACKLOG_LIMIT`, 10 MiB, this process's): when the pipe is full (the
  decoding process is setting up, or busy encoding OTLP) the tee passes the chunk through by
  hand and keeps a copy here, written as the pipe drains. Beyond it a chunk is only described:
  a :class:`~otelbridge.lines.Gap` (bytes, newlines), so that the decoder counts every line it
  never saw (``lines_not_decoded``). The tee never waits, but on a regular file as its input
  (``source/pipe.py``: nothing upstream to keep up with, it reads on as the backlog drains).

Two more pipes carry JSON lines, no stream bytes:

* **control** (tee → decoder): ``{"gap": [offset, nbytes, newlines, ends_with_newline]}`` (a gap
  at data-pipe byte ``offset``, written before any data after it), ``{"pid": N}`` (the wrapped
  command), ``{"full": true}`` (the data pipe was full and a backlog began: a decoder pausing
  at a trickle reads at once, before a burst outgrows the backlog),
  ``{"end": {"reason", "exit_code", "bytes", "deadline"}}`` (``deadline``: the run's
  :class:`~otelbridge.deadline.Deadline`, ``time.monotonic()`` seconds). The end is written at
  the end of input, before the backlog, so that the decoder learns the deadline however far
  behind it is;
* **result** (decoder → tee): ``{"ready": [traceparent, under_parent] | null}`` once set up (the
  wrapper waits for it: the child's ``TRACEPARENT`` names the run span), ``{"exit": N}`` last.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import sys
import time
from collections import deque
from typing import TYPE_CHECKING

from ..deadline import TAIL_BYTES, Deadline
from ..lines import Gap, LinePosition, queue_gap
from ..messages import say
from . import HANDLED_SIGNALS
from .arrivals import Arrivals
from .pipe import CHUNK, input_over, widen_pipe

if TYPE_CHECKING:
    from ..config import Config
    from ..stats import Stats
    from .early import EarlyTee

#: Bytes the tee keeps for the decoding process while its pipe is full (10 MiB); beyond, gaps.
#: With the pipe, 11 MiB of a burst is kept for decoding: a live CLI's bursts are far smaller,
#: and ``otelbridge replay`` decodes a recording whole.
BACKLOG_LIMIT = 10 * 1024 * 1024
#: Seconds the tee waits for the decoding process beyond the deadline before it stops it.
EXIT_MARGIN_S = 2.0
#: At most this long (seconds) the wrapper waits for the decoder's set-up (imports, exporters:
#: no network) before it starts the command without a ``TRACEPARENT``.
SETUP_TIMEOUT_S = 30.0
#: Exit status of a decoding process that failed (the tee then uses its own).
EXIT_SOFTWARE = 70


#: Said on the control pipe as a backlog begins.
FULL_MESSAGE = {"full": True}


def _gap_message(offset: int, gap: Gap) -> dict:
    return {"gap": [offset, gap.nbytes, gap.newlines, gap.ends_with_newline]}


class DecoderFeed:
    """The :class:`~otelbridge.source.pipe.Feed` of the tee's ``Tee``: ``fd`` is the data
    pipe's write end (non-blocking); what it cannot take at once waits in the backlog, written
    whenever the pipe has room (the tee watches it: :meth:`waiting_on`), in order with the gaps.
    No data goes into the data pipe while a control message waits for the control pipe's room:
    a gap is known to the decoder before any data after it, however far behind it is."""

    def __init__(self, cfg: Config, pid: int, data_w: int, ctl_w: int, res_r: int,
                 arrivals: Arrivals) -> None:
        self.cfg = cfg
        #: when each chunk passed, for the decoding process's clock
        self._arrivals = arrivals
        self.pid = pid
        self.fd = data_w
        self._ctl = ctl_w
        self._res = res_r
        self._res_buf = b""
        self._eof = False
        self._messages: list[dict] = []
        self._pending: deque[bytes] = deque()  # control messages not yet written (pipe full)
        #: bytes written into the data pipe so far (a gap's offset)
        self.offset = 0
        self._backlog: deque[memoryview | Gap] = deque()
        self._backlog_bytes = 0
        self._gone = False
        #: where the chunks passed by hand are in the stream's lines (see LinePosition)
        self._position = LinePosition(cfg.max_line)
        #: bytes passed before the tee took over, already in the data pipe (:mod:`.early`)
        self.passed_early = 0

    @classmethod
    def start(cls, cfg: Config, close_in_child: tuple[int, ...] = (),
              early: EarlyTee | None = None) -> DecoderFeed | None:
        """Fork the decoding process; ``None`` where ``fork`` is missing or fails (the stream
        then passes untraced). ``close_in_child``: fds it must not hold (the stream's output).
        ``early``: the stopped :class:`~otelbridge.source.early.EarlyTee` whose pipe, holding
        the bytes it passed, becomes the data pipe."""
        if not hasattr(os, "fork"):
            return None
        # stdin already over with nothing in it: the decoding process sets up only if it must
        over = not cfg.command and (early is None or not early.passed) and input_over(0)
        arrivals = Arrivals()  # shared with the decoding process: made before the fork
        for offset, ns in early.marks if early is not None else ():
            arrivals.passed(offset, ns)
        data = (early.data_r, early.data_w) if early is not None else os.pipe()
        fds = [*data, *os.pipe(), *os.pipe()]  # non-inheritable: never the wrapped command's
        data_r, data_w, ctl_r, ctl_w, res_r, res_w = fds
        widen_pipe(data_w, CHUNK)
        # what the tee imported so far stays shared with the decoding process: out of reach of
        # the garbage collector, whose passes would otherwise copy every page they touch
        gc.freeze()
        # held across the fork: the decoding process ignores them before one can reach it (a
        # process group's signal at this instant would run the tee's handler in it)
        signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
        try:
            pid = os.fork()
        except OSError:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
            for fd in fds:
                os.close(fd)
            return None
        if pid == 0:  # the decoding process: never returns
            # the tee decides on SIGINT/SIGTERM and tells it (a terminal's Ctrl-C reaches both)
            for signum in HANDLED_SIGNALS:
                signal.signal(signum, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
            code = EXIT_SOFTWARE
            try:
                for fd in (data_w, ctl_w, res_r, *close_in_child):
                    os.close(fd)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)  # the stream's input is the tee's alone
                os.close(null)
                from ..modes.live import serve

                code = serve(cfg, data_r, ctl_r, res_w, over, arrivals)
            except BaseException as exc:  # noqa: BLE001 - nothing may escape into the tee's code
                with contextlib.suppress(Exception):
                    sys.stderr.write(f"otelbridge: decoding process failed: {exc!r}\n")
                    sys.stderr.flush()
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)  # one that came meanwhile runs now
        for fd in (data_r, ctl_r, res_w):
            os.close(fd)
        os.set_blocking(data_w, False)
        os.set_blocking(ctl_w, False)
        feed = cls(cfg, pid, data_w, ctl_w, res_r, arrivals)
        if early is not None and early.passed:
            feed.fed(early.passed)
            feed.passed_early = early.passed
        return feed

    # -- control messages

    def _send(self, message: dict) -> None:
        """Queue one control message and write what the pipe takes now (never waits)."""
        self._pending.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self._write_pending()

    def _write_pending(self, until: Deadline | None = None) -> None:
        """Write the waiting control messages while the pipe takes them; with ``until``,
        waiting for its room until then (a decoding process that reads nothing more is killed
        after it anyway)."""
        while self._pending:
            data = self._pending[0]
            try:
                n = os.write(self._ctl, data)
            except BlockingIOError:
                wait = until.remaining() if until is not None else 0.0
                if wait <= 0:
                    return
                select.select([], [self._ctl], [], min(wait, 1.0))
                continue
            except InterruptedError:
                continue
            except OSError:  # the decoding process is gone: nothing to tell
                self._pending.clear()
                return
            if n == len(data):
                self._pending.popleft()
            else:
                self._pending[0] = data[n:]

    # -- the Feed

    def direct(self) -> bool:
        return not self._backlog and not self._pending and not self._gone

    def passing(self) -> None:
        self._arrivals.passed(self.offset)

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
        self._arrivals.passed(self.offset + self._backlog_bytes)  # where its bytes will be
        start = 0
        if not self._backlog and not self._pending:
            start = self._write(memoryview(buf)[:n])
            if start == n:
                return
        size = n - start
        if self._backlog_bytes + size <= BACKLOG_LIMIT:
            if not self._backlog:
                self._send(FULL_MESSAGE)
            self._backlog.append(memoryview(bytes(buf[start:n])))
            self._backlog_bytes += size
        else:
            self._skip(Gap.of(buf, start, n))

    def _skip(self, gap: Gap) -> None:
        """A gap after what is queued (merged with a gap queued last: while control messages
        wait, gaps after them are one), or sent at once."""
        self._position.skipped(gap)
        if not self._backlog and not self._pending:
            self._send(_gap_message(self.offset, gap))
            return
        self._backlog_bytes -= queue_gap(self._backlog, gap)

    def _write(self, data: memoryview) -> int:
        try:
            n = os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:  # the decoding process is gone: pass through, feed nothing more
            self._gone = True
            self._backlog.clear()
            say("the decoding process is gone; the stream passes on, untraced from here")
            return len(data)
        self.offset += n
        return n

    def waiting_on(self) -> int | None:
        if self._gone:
            return None
        if self._pending:
            return self._ctl
        return self.fd if self._backlog else None

    def drain(self) -> bool:
        """Write the waiting control messages, then the backlog, while the pipes take them;
        True when nothing waits."""
        self._write_pending()
        while self._backlog and not self._gone and not self._pending:
            item = self._backlog[0]
            if isinstance(item, Gap):
                self._send(_gap_message(self.offset, item))
                self._backlog.popleft()
                continue
            n = self._write(item)
            if self._gone:  # the decoding process is gone: nothing more to write
                break
            if n == 0:
                return False
            self._backlog_bytes -= n
            if n < len(item):
                self._backlog[0] = item[n:]
            else:
                self._backlog.popleft()
        return not self._pending and (not self._backlog or self._gone)

    def _drain_until(self, deadline: Deadline, keep: int = 0) -> None:
        """The end: write the backlog, waiting for the pipes until ``deadline``; what is left
        then becomes gaps, but for its last ``keep`` bytes."""
        while not self.drain():
            wait, fd = deadline.remaining(), self.waiting_on()
            if fd is None or wait <= 0 or not select.select([], [fd], [], wait)[1]:
                break
        while self._backlog and self._backlog_bytes > keep:
            item = self._backlog[0]
            if isinstance(item, Gap):
                self._send(_gap_message(self.offset, self._backlog.popleft()))
                continue
            cut = min(len(item), self._backlog_bytes - keep)
            self._send(_gap_message(self.offset, Gap.of(item[:cut].tobytes())))
            self._backlog_bytes -= cut
            if cut < len(item):
                self._backlog[0] = item[cut:]
            else:
                self._backlog.popleft()

    def set_pid(self, pid: int) -> None:
        """The wrapped command's pid, for the run span."""
        self._send({"pid": pid})

    # -- results

    def _read_messages(self, deadline: Deadline) -> bool:
        """Read result messages until ``deadline``; False at EOF (then :attr:`_eof`) or time-out."""
        if not select.select([self._res], [], [], deadline.remaining())[0]:
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
            with contextlib.suppress(ValueError):
                self._messages.append(json.loads(line))
        return True

    def _seen(self, *keys: str) -> bool:
        return any(key in msg for msg in self._messages for key in keys)

    def _wait_for(self, key: str, deadline: Deadline) -> tuple[bool, object]:
        while True:
            for msg in self._messages:
                if key in msg:
                    return True, msg[key]
            if not self._read_messages(deadline):
                return False, None

    def run_link(self) -> tuple[str, bool] | None:
        """Wait for the set-up (at most :data:`SETUP_TIMEOUT_S`): the run span's W3C
        ``traceparent`` and whether ``TRACESTATE`` goes with it, for the wrapped command's
        environment; ``None`` without a run span (set-up failed)."""
        found, link = self._wait_for("ready", Deadline.after(SETUP_TIMEOUT_S))
        return (str(link[0]), bool(link[1])) if found and link else None

    def end(self, reason: str | None, exit_code: int, stats: Stats, deadline: Deadline) -> int:
        """End of the stream: send the end (``stats.bytes``: what passed; ``deadline``: created
        at the end of input), write the backlog until decoding's share of it
        (:meth:`~otelbridge.deadline.Deadline.for_decoding`), then its last
        :data:`~otelbridge.deadline.TAIL_BYTES` (the rest: gaps), close the data pipe, wait for
        the decoding process (until the later of the two + :data:`EXIT_MARGIN_S`; one not yet set
        up gets :data:`SETUP_TIMEOUT_S` to set up, then that margin from then at least) and return the
        exit status it settled on (``exit_code``, or 1 with ``--fail-on-export-error`` and lost
        spans). One that failed or hangs (then killed) is said on stderr; ``exit_code`` then
        stands — 1 with ``--fail-on-export-error`` — and ``--stats-json`` gets this process's
        counts."""
        self._send({"end": {"reason": reason, "exit_code": exit_code, "bytes": stats.bytes,
                            "deadline": deadline.at}})
        decoding = deadline.for_decoding()
        self._drain_until(decoding, keep=TAIL_BYTES)
        limit = Deadline(max(deadline.at, decoding.at)).later_by(EXIT_MARGIN_S)
        self._drain_until(limit)  # (past its share, the decoding process reads on at once)
        os.close(self.fd)
        self._write_pending(until=limit)
        os.close(self._ctl)
        self._read_messages(Deadline(time.monotonic()))
        if not self._seen("ready", "exit"):
            # not set up when the input ended (a short run): the set-up has an allowance of its
            # own, then the same margin from when it was set up (no more: a decoding process
            # stuck after it, on a stderr nobody reads, is not waited for 30 s)
            set_up_by = limit.later_by(SETUP_TIMEOUT_S)
            while not self._seen("ready", "exit") and self._read_messages(set_up_by):
                pass
            now = time.monotonic()
            limit = Deadline(max(limit.at, now + EXIT_MARGIN_S) if self._seen("ready", "exit") else now)
        found, code = self._wait_for("exit", limit)
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
