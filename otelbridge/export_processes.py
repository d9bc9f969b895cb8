"""Stage 5 in processes of its own: span records built into spans and exported over OTLP by
``N`` processes forked from the decoding process (or from ``replay``).

Why: the SDK's OTLP encoding (``encode_spans``) costs ~38 µs a 12-attribute agent span, span
building ~12 µs, the gRPC send ~8 µs, and decoding + tracking ~9 µs — all on one GIL, a ceiling of
~15,000 spans/s in one process (bench/RESULTS.md). The tracker hands finished
:class:`~otelbridge.events.SpanRecord` s on; here they are pickled in batches to ``N`` export
processes that each run the real stage 4b and 5 — :class:`~otelbridge.spans.SpanBuilder`
(redaction, limits, sampler) and :class:`~otelbridge.export.Exporters` (the SDK's
``BatchSpanProcessor`` and ``OTLPSpanExporter``) — on their own GIL.

How:

* :meth:`ExportProcesses.start` forks the ``N`` processes once the OpenTelemetry SDK and the OTLP
  exporter's module are imported (shared copy-on-write) and before any exporter, channel or
  thread of the SDK exists (each process builds its own). They ignore SIGINT/SIGTERM (their parent
  decides), keep no file descriptor but their own pipes and 0–2, and never return: ``os._exit``.
* **frames** (parent → each process, a 1 MiB pipe): 4-byte little-endian length + a pickle
  (protocol 5; the 128-bit ids rule out msgspec) of ``("spans", [SpanRecord, ...])`` or
  ``("end", deadline)`` — ``deadline`` on ``time.monotonic()``, which is one clock for all
  processes of the machine (Linux ``CLOCK_MONOTONIC``). Batches of up to :data:`BATCH_RECORDS`
  go to the process least behind (the fewest unread bytes in its pipe, ``FIONREAD``; in turn
  where that is unknown): sampling is decided per trace by the same sampler in every
  process (the built-in samplers decide by trace id and parent alone), so any process may take
  any span. Batches are sent when full, when the decoding thread goes idle (:meth:`flush`) and
  after a line once :data:`FLUSH_AFTER_S` old (:meth:`pace`).
* **back-pressure**: a process paces itself on its exporter's queue (``Exporters.pace``); its
  pipe then fills and the parent's write waits — at most :data:`STALL_S` without any byte taken
  by any process, and never past :attr:`ExportProcesses.pace_until` (shared with the processes
  in 8 bytes of shared memory, so that their pacing stops there too). A batch that cannot be
  written then is dropped and counted (``spans_dropped``); a process that died is written to no
  more.
* **results** (each process → parent, one shared pipe): one JSON line at the end, ``{"index": k,
  "built": .., "ended": .., "exporters": [[label, exported], ...]}``, merged by
  :meth:`ExportProcesses.shutdown` into the run's :class:`~otelbridge.stats.Stats`. A process that
  has not answered by the deadline (+ :data:`RESULT_MARGIN_S`) is killed; what was sent to it
  counts as dropped.
* The SDK's first export-failure message is said once for all processes: a one-byte token in a
  pipe, taken by the first to speak (:func:`otelbridge.export.share_first_message`).

A process that sees its pipe end without an ``end`` frame (its parent was killed) flushes within
``--flush-timeout`` and exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import mmap
import os
import pickle
import select
import signal
import struct
import termios
import time
from collections.abc import Mapping
from typing import Any

from .config import Config, export_processes_apply
from .events import SpanRecord
from .stats import Stats

log = logging.getLogger("otelbridge")

#: Records a frame carries at most (a 50-agent workflow is ~52; ~200 bytes each pickled).
BATCH_RECORDS = 256
#: A batch waits at most this long (seconds) after its first record while lines keep coming.
FLUSH_AFTER_S = 0.01
#: An export process paces itself on its exporter's queue (``Exporters.pace``) every this many
#: spans: a frame may hold more than the queue (``OTEL_BSP_MAX_QUEUE_SIZE``) takes.
PACE_EVERY = 16
#: Seconds a write may wait with no process taking any byte before its batch is dropped.
STALL_S = 1.0
#: Seconds past the shutdown deadline the parent waits for the processes' results.
RESULT_MARGIN_S = 0.5
#: Capacity asked for each frame pipe (Linux; the unprivileged maximum by default).
PIPE_SIZE = 1024 * 1024
_HEADER = struct.Struct("<I")
_DEADLINE = struct.Struct("d")
_FIONREAD_INT = struct.Struct("i")
_FIONREAD_BUF = bytes(_FIONREAD_INT.size)


def default_count() -> int:
    """Export processes when ``--export-processes`` is not given: 2 on a machine with 2 or more
    CPUs (measured: one process encodes ~15,000 spans/s, two ~20,000/s on 2 cores), else 0."""
    return 2 if (os.cpu_count() or 1) >= 2 else 0


def count_for(cfg: Config) -> int:
    """How many export processes ``cfg`` gets: 0 unless
    :func:`~otelbridge.config.export_processes_apply`, else ``cfg.export_processes`` or
    :func:`default_count`."""
    if not export_processes_apply(cfg):
        return 0
    return default_count() if cfg.export_processes is None else cfg.export_processes


def _unread(proc: "_Process") -> int:
    """Bytes in ``proc``'s frame pipe it has not read yet (``FIONREAD``; 0 where unknown)."""
    try:
        return _FIONREAD_INT.unpack(fcntl.ioctl(proc.fd, termios.FIONREAD, _FIONREAD_BUF))[0]
    except (OSError, AttributeError):
        return 0


class _SharedDeadline:
    """A ``time.monotonic()`` instant in 8 bytes of memory shared with the forked processes
    (anonymous ``MAP_SHARED``); ``inf`` until set."""

    def __init__(self) -> None:
        self._map = mmap.mmap(-1, _DEADLINE.size)
        self.set(float("inf"))

    def set(self, value: float) -> None:
        _DEADLINE.pack_into(self._map, 0, value)

    def get(self) -> float:
        return _DEADLINE.unpack_from(self._map, 0)[0]


class _Process:
    """The parent's handle on one export process."""

    def __init__(self, index: int, pid: int, fd: int) -> None:
        self.index = index
        self.pid = pid
        self.fd = fd  # the frame pipe's write end, non-blocking
        self.sent = 0  # records written to it
        self.alive = True
        self.result: dict | None = None


class ExportProcesses:
    """Stage 5 across ``N`` forked processes (see the module doc). Takes the place of
    :class:`~otelbridge.export.Exporters` in a :class:`~otelbridge.pipeline.Pipeline`, with its
    interface: ``provider``/``ids`` (a provider without processors, for the run span's sampling
    decision), :meth:`emit` as the span sink, :meth:`pace`, :meth:`flush`, :attr:`pace_until`,
    :meth:`pending`, :meth:`wait_for_room`, :meth:`shutdown`, :meth:`describe_failure`."""

    def __init__(self, cfg: Config, stats: Stats, provider: Any, ids: Any) -> None:
        self.cfg = cfg
        self.stats = stats
        self.provider = provider
        self.ids = ids
        self.processes: list[_Process] = []
        self._batch: list[SpanRecord] = []
        self._batch_since = 0.0
        self._turn = 0
        self._deadline = _SharedDeadline()
        #: records never delivered to a process (pipe stalled past STALL_S, or the process died)
        self.undelivered = 0
        self._results_fd = -1
        self._problem: str | None = None
        self._all_exported = True

    # ------------------------------------------------------------------ start (parent)

    @classmethod
    def start(cls, cfg: Config, stats: Stats, count: int,
              builder_options: Mapping[str, Any] | None = None) -> "ExportProcesses | None":
        """Fork ``count`` export processes for ``cfg`` (``config.export_processes_apply``); each
        builds its spans with ``SpanBuilder(provider, ids, stats, **builder_options)``. ``None``
        when no process could be forked (the caller exports in process)."""
        from opentelemetry.sdk.trace import TracerProvider

        from . import export
        from .spans import PresetIdGenerator

        export.import_otlp_exporter(cfg)  # imported once, shared by the forked processes
        ids = PresetIdGenerator()
        provider = TracerProvider(resource=export.make_resource(), id_generator=ids,
                                  shutdown_on_exit=False)
        pool = cls(cfg, stats, provider, ids)
        # the run's resource, taken before forking: the SDK renews ``service.instance.id`` in a
        # forked child's providers (``TracerProvider._handle_fork``); one run is one instance
        resource = provider.resource
        results_r, results_w = os.pipe()
        token_r, token_w = os.pipe()
        os.write(token_w, b"!")  # the first process to say an export failure takes it
        os.close(token_w)
        pool._results_fd = results_r
        for index in range(count):
            frames_r, frames_w = os.pipe()
            with contextlib.suppress(OSError, AttributeError):
                fcntl.fcntl(frames_w, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
            try:
                pid = os.fork()
            except OSError as exc:
                os.close(frames_r)
                os.close(frames_w)
                log.warning("cannot fork an export process: %s", exc.strerror)
                break
            if pid == 0:
                keep = {0, 1, 2, frames_r, results_w, token_r}
                _child(cfg, index, frames_r, results_w, token_r, pool._deadline, keep,
                       dict(builder_options or {}), resource)
            os.close(frames_r)
            os.set_blocking(frames_w, False)
            pool.processes.append(_Process(index, pid, frames_w))
        os.close(results_w)
        os.close(token_r)
        if not pool.processes:
            os.close(results_r)
            return None
        return pool

    # ------------------------------------------------------------------ the span sink

    def emit_sink(self, builder: Any):
        """Where the pipeline's span records go: :meth:`emit` (``builder`` is for sampling only)."""
        return self.emit

    def emit(self, rec: SpanRecord) -> None:
        """Queue one finished span record; a full batch is written at once."""
        batch = self._batch
        if not batch:
            self._batch_since = time.monotonic()
        batch.append(rec)
        if len(batch) >= BATCH_RECORDS:
            self.flush()

    def pace(self) -> None:
        """After a line: write the batch once :data:`FLUSH_AFTER_S` old (spans keep flowing
        while lines do). The waiting for the exporters happens in the processes."""
        if self._batch and time.monotonic() - self._batch_since >= FLUSH_AFTER_S:
            self.flush()

    def flush(self) -> None:
        """Write the batch to the next process that takes it (see the module doc on waiting)."""
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        if not self._send(pickle.dumps(("spans", batch), protocol=5), len(batch)):
            self.undelivered += len(batch)

    @property
    def pace_until(self) -> float:
        """Writes (and the processes' pacing) never wait past this ``time.monotonic()``
        instant."""
        return self._deadline.get()

    @pace_until.setter
    def pace_until(self, value: float) -> None:
        self._deadline.set(value)

    def pending(self) -> int:
        """Records queued here, not yet written (the processes' queues are theirs)."""
        return len(self._batch)

    def wait_for_room(self, *args: Any, **kwargs: Any) -> None:
        """``replay``'s back-pressure: writes already wait while the processes are busy."""

    # ------------------------------------------------------------------ writing frames

    def _send(self, payload: bytes, records: int) -> bool:
        """Write one frame to a living process, in turn; True when written whole."""
        frame = memoryview(_HEADER.pack(len(payload)) + payload)
        live = [p for p in self.processes if p.alive]
        if not live:
            return False
        order = live[self._turn % len(live):] + live[:self._turn % len(live)]
        self._turn += 1
        order.sort(key=_unread)  # the least behind first (stable: in turn when unknown)
        stalled_since = time.monotonic()
        while True:
            for proc in order:  # the first that takes any of it gets all of it
                if not proc.alive:
                    continue
                written = self._write(proc, frame)
                if written:
                    if written < len(frame) and not self._finish(proc, frame[written:]):
                        return False
                    proc.sent += records
                    return True
            order = [p for p in order if p.alive]
            if not order:
                return False
            now = time.monotonic()
            limit = min(stalled_since + STALL_S, self.pace_until)
            if now >= limit:
                return False
            with contextlib.suppress(InterruptedError):
                select.select([], [p.fd for p in order], [], limit - now)

    def _write(self, proc: _Process, data: memoryview) -> int:
        try:
            return os.write(proc.fd, data)
        except BlockingIOError:
            return 0
        except OSError:  # EPIPE: the process is gone
            self._lost(proc)
            return 0

    def _finish(self, proc: _Process, rest: memoryview) -> bool:
        """The rest of a frame begun on ``proc``: it must go there (the frames are length-
        prefixed). False when ``proc`` stalled past the limit or died (it is then written to no
        more: its pipe holds half a frame)."""
        stalled_since = time.monotonic()
        while rest:
            n = self._write(proc, rest)
            if not proc.alive:
                return False
            if n:
                rest = rest[n:]
                stalled_since = time.monotonic()
                continue
            now = time.monotonic()
            limit = min(stalled_since + STALL_S, self.pace_until)
            if now >= limit:
                log.warning("an export process stopped reading; its spans are dropped")
                self._lost(proc)
                return False
            with contextlib.suppress(InterruptedError):
                select.select([], [proc.fd], [], limit - now)
        return True

    def _lost(self, proc: _Process) -> None:
        proc.alive = False
        with contextlib.suppress(OSError):
            os.close(proc.fd)

    # ------------------------------------------------------------------ the end

    def shutdown(self, timeout_s: float) -> bool:
        """Write the last batch, tell every process to flush within ``timeout_s``, wait for their
        results (killing those that do not answer in time) and fill the export counts in
        ``stats`` (``spans_started``: built by the processes that answered, plus the records
        lost with a process or never delivered, which also count as dropped). True when every
        span was confirmed exported."""
        deadline = time.monotonic() + timeout_s
        self.pace_until = min(self.pace_until, deadline)
        self.flush()
        end = pickle.dumps(("end", deadline), protocol=5)
        for proc in self.processes:
            if proc.alive:
                if not self._finish(proc, memoryview(_HEADER.pack(len(end)) + end)):
                    continue
                with contextlib.suppress(OSError):
                    os.close(proc.fd)
        self._collect(deadline + RESULT_MARGIN_S)
        return self._merge()

    def _collect(self, until: float) -> None:
        """Read the processes' result lines until all have answered or ``until``; kill and reap
        the rest."""
        buf = b""
        waiting = {p.index: p for p in self.processes}
        while waiting:
            left = until - time.monotonic()
            if left <= 0:
                break
            with contextlib.suppress(InterruptedError):
                ready, _, _ = select.select([self._results_fd], [], [], left)
                if not ready:
                    continue
            try:
                data = os.read(self._results_fd, 65536)
            except InterruptedError:
                continue
            if not data:  # every process has exited
                break
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    msg = json.loads(line)
                    proc = waiting.pop(int(msg["index"]))
                    proc.result = msg
        os.close(self._results_fd)
        for proc in waiting.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        for proc in self.processes:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(proc.pid, 0)

    def _merge(self) -> bool:
        """The processes' results → ``stats`` and the failure line; True when nothing was lost."""
        built = ended = exported = 0
        lost_by_label: dict[str, int] = {}
        unanswered = 0
        for proc in self.processes:
            res = proc.result
            if res is None:
                unanswered += proc.sent
                continue
            built += int(res.get("built", 0))
            p_ended = int(res.get("ended", 0))
            ended += p_ended
            confirmed = [int(n) for _, n in res.get("exporters", ())]
            exported += min(confirmed) if confirmed else 0
            for label, n in res.get("exporters", ()):
                if int(n) < p_ended:
                    lost_by_label[label] = lost_by_label.get(label, 0) + p_ended - int(n)
        # every record handed to this stage counts as built, as the in-process builder counts
        # each record it is given: those a killed or stopped process took with it, and those no
        # process took, are built and dropped (else "N built" < exported + dropped)
        self.stats.spans_started += built + unanswered + self.undelivered
        self.stats.spans_exported = exported
        self.stats.spans_dropped = max(ended - exported, 0) + self.undelivered + unanswered
        parts = [f"{label}: {n} of {ended} not confirmed" for label, n in lost_by_label.items()]
        if self.undelivered:
            parts.append(f"{self.undelivered} span records not delivered to an export process")
        if unanswered:
            parts.append(f"{unanswered} span records with an export process that did not finish")
        self._problem = "export incomplete (" + "; ".join(parts) + ")" if parts else None
        return self.stats.spans_dropped == 0

    def describe_failure(self) -> str | None:
        """One line naming what was lost (after :meth:`shutdown`), or ``None``."""
        return self._problem


# --------------------------------------------------------------------------- an export process


def _close_all_but(keep: set[int]) -> None:
    """Close every file descriptor but ``keep``: the stream's pipes, the decoding process's
    control and result pipes and the other processes' frame pipes are not ours to hold."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _child(cfg: Config, index: int, frames_fd: int, results_fd: int, token_fd: int,
           deadline: _SharedDeadline, keep: set[int], builder_options: dict,
           resource: Any = None) -> None:
    """An export process's body; never returns."""
    code = 70
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _close_all_but(keep)
        code = serve(cfg, index, frames_fd, results_fd, token_fd, deadline, builder_options,
                     resource)
    except BaseException as exc:  # never back into the parent's stack
        with contextlib.suppress(Exception):
            log.warning("export process %d failed: %s", index, exc)
    finally:
        os._exit(code)


def serve(cfg: Config, index: int, frames_fd: int, results_fd: int, token_fd: int,
          deadline: _SharedDeadline, builder_options: dict, resource: Any = None) -> int:
    """Build and export the spans of every frame on ``frames_fd`` until an ``end`` frame (or the
    pipe's end: then within ``--flush-timeout``), then write this process's result line.
    ``resource``: the parent's (one ``service.instance.id`` for the run, whichever process
    exports a span); ``None``: made here."""
    from .export import Exporters, share_first_message
    from .spans import SpanBuilder

    share_first_message(token_fd)
    stats = Stats()
    exporters = Exporters(cfg, stats, resource)
    builder = SpanBuilder(exporters.provider, exporters.ids, stats, **builder_options)
    reader = os.fdopen(frames_fd, "rb", buffering=PIPE_SIZE)
    end_at = None
    while True:
        header = reader.read(_HEADER.size)
        if len(header) < _HEADER.size:
            break
        payload = reader.read(_HEADER.unpack(header)[0])
        try:
            kind, body = pickle.loads(payload)
        except Exception as exc:  # a frame cut short: its parent died mid-write
            log.warning("export process %d: frame not read: %s", index, exc)
            break
        if kind == "end":
            end_at = float(body)
            break
        exporters.pace_until = deadline.get()
        emit, pace = builder.emit, exporters.pace
        for i, rec in enumerate(body):
            if not i % PACE_EVERY:  # a frame may hold more spans than the exporter's queue
                pace()
            emit(rec)
    if end_at is None:
        end_at = time.monotonic() + cfg.flush_timeout_s
    exporters.shutdown(max(0.0, end_at - time.monotonic()))
    result = {
        "index": index,
        "built": stats.spans_started,
        "ended": exporters.counter.ended,
        "exporters": [[c.label, c.exported] for c in exporters.counted],
    }
    with contextlib.suppress(OSError):
        os.write(results_fd, json.dumps(result).encode() + b"\n")
    return 0
