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
  thread of the SDK exists. They ignore SIGINT/SIGTERM (their parent decides), keep no file
  descriptor but their own pipes and 0–2, give back what they inherited of the stream's queued
  chunks, build their exporter on their first batch (an idle process holds no channel or
  thread), and never return: ``os._exit``.
* **on demand** (``--export-processes-at SPANS``): once they are forked, the forking process
  builds exporters of its own, which build and export the spans while fewer than ``SPANS``
  (default and at most: half the batch processor's queue, 1024 of 2048) wait in their queue — a
  CLI's usual load, where the processes stay idle (memory: bench/RESULTS.md). The first time
  that many wait, the processes take every later span, for the rest of the run (what is queued
  here is exported from here); 0: the processes take every span from the first. In ``replay``
  (*patient*) the spans of an export in progress count as waiting too, so that this process
  never holds more than ``SPANS`` for its end to flush (as ``wait_for_room`` bounds it in
  process). ``stats.spans_to_export_processes`` counts what they took.
* **frames** (parent → each process, a 1 MiB pipe): 4-byte little-endian length + a pickle
  (protocol 5; the 128-bit ids rule out msgspec) of ``("spans", [SpanRecord, ...])`` or
  ``("end", deadline)`` — ``deadline`` on ``time.monotonic()``, which is one clock for all
  processes of the machine (Linux ``CLOCK_MONOTONIC``). Batches of up to :data:`BATCH_RECORDS`
  go to the process least behind (the fewest unread bytes in its pipe, ``FIONREAD``; in turn
  where that is unknown): sampling is decided per trace by the same sampler in every
  process (the built-in samplers decide by trace id and parent alone), so any process may take
  any span. Batches are sent when full, when the decoding thread goes idle (:meth:`flush`) and
  after a line once :data:`FLUSH_AFTER_S` old (:meth:`pace`).
* **back-pressure**: a process waits for its exporter's queue every few spans —
  ``Exporters.pace`` (at most 0.2 s at a time), or in ``replay`` (*patient*)
  ``Exporters.wait_for_room`` (as long as the exporter makes progress); its pipe then fills and
  the parent's write waits before it begins a frame — at most :data:`STALL_S`
  (:data:`PATIENT_STALL_S`) without any byte taken by any process, and never past
  :attr:`ExportProcesses.pace_until` — then that batch is dropped and counted
  (``spans_dropped``). A frame begun is finished as long as its process keeps reading (frames
  are length-prefixed). A process that has died (``EPIPE``) or stopped reading mid-frame for
  the stall limit (it is then killed) is written to no more, said on stderr when it happens;
  when none is left, the parent builds and exports the rest itself (it has no SDK thread or
  channel of its own until then, so that is safe).
* **shared memory** (8 bytes + 24 a process, anonymous ``MAP_SHARED``): the deadline
  (:attr:`ExportProcesses.pace_until`; the processes stop waiting there too) and each
  process's progress — spans built, ended, confirmed exported — written as it goes.
* **results** (each process → parent, one shared pipe): one JSON line at the end, ``{"index": k,
  "built": .., "ended": .., "exporters": [[label, exported], ...]}``, merged by
  :meth:`ExportProcesses.shutdown` into the run's :class:`~otelbridge.stats.Stats`. A process that
  has not answered by the deadline (+ :data:`RESULT_MARGIN_S`) is killed; of what was sent to
  it, what its shared progress says was confirmed counts as exported, the rest as dropped.
* The SDK's first export-failure message is said once for all processes: a one-byte token in a
  pipe, taken by the first to speak (:func:`otelbridge.export.share_first_message`).

A process whose parent was killed (it is given to another: ``os.getppid()`` changes) stops
waiting for its exporter — ``replay``'s too — builds what its pipe still holds, flushes, and exits
within ``--flush-timeout`` of seeing it.
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
import threading
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
#: The same for ``replay`` (*patient*: its processes wait for their exporters as long as those
#: make progress, up to ``Exporters.wait_for_room``'s 5 s without any).
PATIENT_STALL_S = 7.0
#: Seconds past the shutdown deadline the parent waits for the processes' results.
RESULT_MARGIN_S = 0.5
#: Capacity asked for each frame pipe (Linux; the unprivileged maximum by default).
PIPE_SIZE = 1024 * 1024
_HEADER = struct.Struct("<I")
_DEADLINE = struct.Struct("d")
_PROGRESS = struct.Struct("qqq")  # built, ended, exported
_FIONREAD_INT = struct.Struct("i")
_FIONREAD_BUF = bytes(_FIONREAD_INT.size)


def usable_cpus(cpu_max: str = "/sys/fs/cgroup/cpu.max") -> float:
    """CPUs this process may use: those it may run on (``sched_getaffinity``: ``taskset``, a
    cpuset), or fewer under a cgroup v2 CPU quota (``cpu.max``: a Kubernetes ``cpu`` limit)."""
    try:
        cpus: float = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        with open(cpu_max) as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            cpus = min(cpus, int(quota) / int(period))
    except (OSError, ValueError):
        pass
    return cpus


def default_count() -> int:
    """Export processes when ``--export-processes`` is not given: 2 where 2 or more CPUs are
    usable (:func:`usable_cpus`; measured: one process encodes ~15,000 spans/s, two ~20,000/s
    on 2 cores), else 0."""
    return 2 if usable_cpus() >= 2 else 0


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


class _Shared:
    """Memory shared with the forked processes (anonymous ``MAP_SHARED``): the
    ``time.monotonic()`` instant no wait may pass (``inf`` until set), and each process's
    progress — spans built, ended (handed to its exporter), confirmed exported — written as it
    goes, so that what a killed process had exported is still known."""

    def __init__(self, count: int) -> None:
        self._map = mmap.mmap(-1, _DEADLINE.size + count * _PROGRESS.size)
        self.set_deadline(float("inf"))

    def set_deadline(self, value: float) -> None:
        _DEADLINE.pack_into(self._map, 0, value)

    def deadline(self) -> float:
        return _DEADLINE.unpack_from(self._map, 0)[0]

    def _at(self, index: int) -> int:
        return _DEADLINE.size + index * _PROGRESS.size

    def progress(self, index: int) -> tuple[int, int, int]:
        """(built, ended, exported) of process ``index``, as it last wrote them."""
        return _PROGRESS.unpack_from(self._map, self._at(index))

    def set_built_ended(self, index: int, built: int, ended: int) -> None:
        struct.pack_into("qq", self._map, self._at(index), built, ended)

    def set_exported(self, index: int, exported: int) -> None:
        struct.pack_into("q", self._map, self._at(index) + 16, exported)


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
    decision), :meth:`emit_sink`, :meth:`pace`, :meth:`flush`, :attr:`pace_until`,
    :meth:`wait_for_room`, :meth:`shutdown`, :meth:`describe_failure`.

    Thread-safe: the decoding thread emits while, after a ``--flush-timeout`` it overran, the
    main thread may already shut down; frames are written under one lock, and records that come
    after the shutdown began are counted as not delivered."""

    def __init__(self, cfg: Config, stats: Stats, provider: Any, ids: Any, count: int,
                 patient: bool = False, builder_options: Mapping[str, Any] | None = None) -> None:
        self.cfg = cfg
        self.stats = stats
        self.provider = provider
        self.ids = ids
        self.patient = patient
        self.builder_options = dict(builder_options or {})
        self.processes: list[_Process] = []
        self._batch: list[SpanRecord] = []
        self._batch_since = 0.0
        self._turn = 0
        self._shared = _Shared(count)
        self._lock = threading.RLock()
        self._closed = False
        #: records never delivered to a process (pipe stalled, the process died, or they came
        #: after the shutdown began)
        self.undelivered = 0
        self._results_fd = -1
        self._problem: str | None = None
        #: exporters and span builder of this process (``Exporters``, ``SpanBuilder``): they
        #: take the spans until :attr:`at` wait in their queue, and again once no export
        #: process is left; ``None`` until needed
        self._local: tuple[Any, Any] | None = None
        #: spans waiting in the local exporter's queue at which the processes take over
        self.at = 0
        #: the spans go to this process's exporters (before the processes took over, or after
        #: the last was lost)
        self._to_local = False
        self._token_fd = -1

    # ------------------------------------------------------------------ start (parent)

    @classmethod
    def start(cls, cfg: Config, stats: Stats, count: int,
              builder_options: Mapping[str, Any] | None = None,
              patient: bool = False) -> "ExportProcesses | None":
        """Fork ``count`` export processes for ``cfg`` (``config.export_processes_apply``); each
        builds its spans with ``SpanBuilder(provider, ids, stats, **builder_options)``. Then,
        unless ``cfg.export_processes_at`` is 0, this process builds its own exporters, which
        take the spans until that many (default and at most: half their queue) wait in their
        queue; the processes take the rest of the run (see the module doc).
        ``patient`` (``replay``): the processes wait for their exporters as long as those make
        progress, and so do the writes here. ``None`` when no process could be forked (the
        caller exports in process). Raises ``ValueError`` on ``OTEL_BSP_*`` values the SDK's
        batch processor refuses, as building it in process would."""
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

        from . import export
        from .spans import PresetIdGenerator

        export.import_otlp_exporter(cfg)  # imported once, shared by the forked processes
        BatchSpanProcessor(SpanExporter()).shutdown()  # refused settings: refused here, once
        ids = PresetIdGenerator()
        provider = TracerProvider(resource=export.make_resource(), id_generator=ids,
                                  shutdown_on_exit=False)
        pool = cls(cfg, stats, provider, ids, count, patient, builder_options)
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
                _child(cfg, index, frames_r, results_w, token_r, pool._shared, keep,
                       pool.builder_options, resource, patient)
            os.close(frames_r)
            os.set_blocking(frames_w, False)
            pool.processes.append(_Process(index, pid, frames_w))
        os.close(results_w)
        if not pool.processes:
            os.close(token_r)
            os.close(results_r)
            return None
        pool._token_fd = token_r
        if cfg.export_processes_at != 0:  # every process is forked: threads are safe from here
            exporters, _ = pool._local_exporters()
            half = max(1, exporters.smallest_queue() // 2)
            at = cfg.export_processes_at
            if at is not None and at > half:
                log.warning("--export-processes-at %d is more than half the export queue; %d is "
                            "used (OTEL_BSP_MAX_QUEUE_SIZE sets the queue)", at, half)
            pool.at = half if at is None else min(at, half)
            pool._to_local = True
        return pool

    # ------------------------------------------------------------------ the span sink

    def emit_sink(self, builder: Any):
        """Where the pipeline's span records go: :meth:`emit` (``builder`` is for sampling only)."""
        return self.emit

    def emit(self, rec: SpanRecord) -> None:
        """Build and export one finished span record here while this process's exporters
        keep up (fewer than :attr:`at` spans waiting) and after the last export process is lost
        (:meth:`_fall_back`); else queue it for the processes: a full batch is written at
        once."""
        with self._lock:
            if self._closed:
                self.undelivered += 1
                return
            if self._to_local:
                exporters, builder = self._local
                builder.emit(rec)
                # in ``replay`` the spans being exported count too: its end flushes them all
                waiting = exporters.pending() if self.patient else exporters.queued()
                if self.at and waiting >= self.at and self._alive():
                    self._to_local = False  # for the rest of the run: the processes
                    log.debug("%d spans wait to be exported: the export processes take over",
                              self.at)
                return
            batch = self._batch
            if not batch:
                self._batch_since = time.monotonic()
            batch.append(rec)
            if len(batch) >= BATCH_RECORDS:
                self._flush_locked()

    def pace(self) -> None:
        """After a line: while this process's exporters take the spans, wait for them
        (``Exporters.pace``); else write the batch once :data:`FLUSH_AFTER_S` old (spans keep
        flowing while lines do) — the processes wait for their own exporters."""
        if self._to_local:
            self._local[0].pace()
        elif self._batch and time.monotonic() - self._batch_since >= FLUSH_AFTER_S:
            self.flush()

    def flush(self) -> None:
        """Write the batch to the process least behind (see the module doc on waiting)."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        if self._send(pickle.dumps(("spans", batch), protocol=5), len(batch)):
            return
        if not self._alive() and not self._closed:
            self._fall_back()
            emit = self._local[1].emit
            for rec in batch:
                emit(rec)
        else:
            self.undelivered += len(batch)

    def _alive(self) -> bool:
        return any(p.alive for p in self.processes)

    def _local_exporters(self) -> tuple[Any, Any]:
        """This process's exporters and span builder, built on first use (safe: every export
        process is forked by then, and this process forks no more). They share the run's
        resource and say the SDK's first export failure once with the processes."""
        if self._local is None:
            from .export import Exporters, share_first_message
            from .spans import SpanBuilder

            share_first_message(self._token_fd)
            exporters = Exporters(self.cfg, Stats(), self.provider.resource)
            exporters.pace_until = self.pace_until
            builder = SpanBuilder(exporters.provider, exporters.ids, self.stats,
                                  **self.builder_options)
            self._local = (exporters, builder)
        return self._local

    def _fall_back(self) -> None:
        """No export process is left: build and export here from now on."""
        self._local_exporters()
        self._to_local = True
        log.warning("no export process left; exporting from the decoding process")

    @property
    def pace_until(self) -> float:
        """Writes (and the processes' pacing) never wait past this ``time.monotonic()``
        instant."""
        return self._shared.deadline()

    @pace_until.setter
    def pace_until(self, value: float) -> None:
        self._shared.set_deadline(value)
        if self._local is not None:
            self._local[0].pace_until = value

    def wait_for_room(self, *args: Any, **kwargs: Any) -> None:
        """``replay``'s back-pressure: the processes wait for their exporters (*patient*) and
        the writes here wait for the processes; while this process's exporters have the spans
        and no process can take over, they are waited for."""
        if self._to_local and not (self.at and self._alive()):
            self._local[0].wait_for_room(*args, **kwargs)

    # ------------------------------------------------------------------ writing frames

    def _stall_s(self) -> float:
        return PATIENT_STALL_S if self.patient else STALL_S

    def _send(self, payload: bytes, records: int) -> bool:
        """Write one frame whole to a living process, the least behind first; True when written.
        Waits while every pipe is full — at most the stall limit without any byte taken, and
        never past :attr:`pace_until` — before a frame is begun; a frame begun is finished
        (:meth:`_finish`)."""
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
            limit = min(stalled_since + self._stall_s(), self.pace_until)
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
            self._lost(proc, "ended")
            return 0

    def _finish(self, proc: _Process, rest: memoryview) -> bool:
        """The rest of a frame begun on ``proc``: it must go there (the frames are length-
        prefixed), so this waits as long as ``proc`` keeps reading — whatever
        :attr:`pace_until` says — and gives it up only after the stall limit without a byte
        taken (it is then stopped: its pipe holds half a frame). False when ``proc`` is lost."""
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
            limit = stalled_since + self._stall_s()
            if now >= limit:
                self._lost(proc, "stopped reading")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                return False
            with contextlib.suppress(InterruptedError):
                select.select([], [proc.fd], [], limit - now)
        return True

    def _lost(self, proc: _Process, why: str) -> None:
        """``proc`` is written to no more; said once, when it happens."""
        if not proc.alive:
            return
        proc.alive = False
        with contextlib.suppress(OSError):
            os.close(proc.fd)
        with contextlib.suppress(ChildProcessError):  # dead: no zombie until the end
            os.waitpid(proc.pid, os.WNOHANG)
        left = sum(p.alive for p in self.processes)
        held = "; the spans it held are counted as dropped" if proc.sent else ", holding no spans"
        log.warning("export process %d %s%s%s", proc.index, why, held,
                    f" ({left} left)" if left else "")

    # ------------------------------------------------------------------ the end

    def shutdown(self, timeout_s: float) -> bool:
        """Write the last batch, tell every process to flush within ``timeout_s``, wait for their
        results (killing those that do not answer in time) and fill the export counts in
        ``stats`` (``spans_started``: built by the processes that answered, plus the records
        lost with a process or never delivered, which also count as dropped). True when every
        span was confirmed exported. In ``replay`` (*patient*) the end waits first for the
        processes to build what they were sent (:meth:`_drain`)."""
        if self.patient:
            with self._lock:
                self._flush_locked()
            self._drain()
        deadline = time.monotonic() + timeout_s
        self.pace_until = min(self.pace_until, deadline)
        with self._lock:
            self._flush_locked()
            self._closed = True
            end = pickle.dumps(("end", deadline), protocol=5)
            for proc in self.processes:
                if proc.alive and self._finish(proc, memoryview(_HEADER.pack(len(end)) + end)):
                    with contextlib.suppress(OSError):
                        os.close(proc.fd)
        local = None
        if self._local is not None:  # flushes while the processes flush
            local = self._local[0]
            local.shutdown(max(0.0, deadline - time.monotonic()))
        self._collect(deadline + RESULT_MARGIN_S)
        return self._merge(local)

    def _drain(self) -> None:
        """``replay``: wait while a living process has span records it was sent but has not built
        (its pipe and read buffer hold thousands), as long as the processes make progress (spans
        built or exported) — at most :data:`PATIENT_STALL_S` without any. They are what replay's
        waiting for the collector covers in process, not the end's ``--flush-timeout``."""
        last = None
        stalled_since = time.monotonic()
        while True:
            alive = [p for p in self.processes if p.alive]
            progress = [self._shared.progress(p.index) for p in alive]
            if all(built >= p.sent for p, (built, _, _) in zip(alive, progress)):
                return
            now = time.monotonic()
            if progress != last:
                last, stalled_since = progress, now
            elif now - stalled_since >= PATIENT_STALL_S:
                return
            time.sleep(0.01)

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

    def _merge(self, local: Any = None) -> bool:
        """The processes' results (and this process's exporters' counts) → ``stats`` and the
        failure line; True when nothing was lost. A process that did not answer counts what it had
        confirmed exported (its shared progress) as exported, the rest of what it was sent as
        built and dropped."""
        built = ended = exported = 0
        lost_by_label: dict[str, int] = {}
        unanswered = 0
        for proc in self.processes:
            res = proc.result
            if res is None:  # what it confirmed was ended and exported; the rest is lost
                confirmed = min(self._shared.progress(proc.index)[2], proc.sent)
                ended += confirmed
                exported += confirmed
                built += proc.sent
                unanswered += proc.sent - confirmed
                continue
            built += int(res.get("built", 0))
            p_ended = int(res.get("ended", 0))
            ended += p_ended
            confirmed_by = [int(n) for _, n in res.get("exporters", ())]
            exported += min(confirmed_by) if confirmed_by else 0
            for label, n in res.get("exporters", ()):
                if int(n) < p_ended:
                    lost_by_label[label] = lost_by_label.get(label, 0) + p_ended - int(n)
        if local is not None:  # what was exported from this process
            l_ended = local.counter.ended
            ended += l_ended
            exported += min((c.exported for c in local.counted), default=0)
            for c in local.counted:
                if c.exported < l_ended:
                    lost_by_label[c.label] = lost_by_label.get(c.label, 0) + l_ended - c.exported
        # every record handed to this stage counts as built, as the in-process builder counts
        # each record it is given: those a killed or stopped process took with it, and those no
        # process took, are built and dropped (else "N built" < exported + dropped)
        self.stats.spans_started += built + self.undelivered
        self.stats.spans_to_export_processes += sum(p.sent for p in self.processes)
        self.stats.spans_sampled_out += sum(int((p.result or {}).get("sampled_out", 0))
                                            for p in self.processes)
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


def _release_inherited() -> None:
    """Give the memory freed since the fork back to the system (glibc ``malloc_trim``): the
    parent's queued chunks (dropped by ``handoff._forget``) were copies this process would
    otherwise keep. Nothing where that call does not exist."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)


def _child(cfg: Config, index: int, frames_fd: int, results_fd: int, token_fd: int,
           shared: _Shared, keep: set[int], builder_options: dict, resource: Any = None,
           patient: bool = False) -> None:
    """An export process's body; never returns."""
    code = 70
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _close_all_but(keep)
        _release_inherited()
        code = serve(cfg, index, frames_fd, results_fd, token_fd, shared, builder_options,
                     resource, patient)
    except BaseException as exc:  # never back into the parent's stack
        with contextlib.suppress(Exception):
            log.warning("export process %d failed: %s", index, exc)
    finally:
        os._exit(code)


def serve(cfg: Config, index: int, frames_fd: int, results_fd: int, token_fd: int,
          shared: _Shared, builder_options: dict, resource: Any = None,
          patient: bool = False) -> int:
    """Build and export the spans of every frame on ``frames_fd`` until an ``end`` frame (or the
    pipe's end: then within ``--flush-timeout``), then write this process's result line.
    ``resource``: the parent's (one ``service.instance.id`` for the run, whichever process
    exports a span); ``None``: made here. Waits for the exporter's queue every few spans (a
    quarter of the queue, at most :data:`PACE_EVERY`): ``Exporters.pace`` (at most 0.2 s,
    never past the shared deadline), or, ``patient``, ``Exporters.wait_for_room`` (as long as
    the exporter makes progress). Progress goes to ``shared`` as it happens."""
    from .export import Exporters, share_first_message
    from .spans import SpanBuilder

    share_first_message(token_fd)
    stats = Stats()
    made: list[tuple[Any, Any, Any, int]] = []
    parent = os.getppid()
    #: once the parent is gone (killed: this process was given to another), all that is left is
    #: over by this ``time.monotonic()`` instant, a ``--flush-timeout`` from when it was seen
    orphaned_end: list[float] = []

    def orphaned() -> bool:
        if not orphaned_end and os.getppid() != parent:
            orphaned_end.append(time.monotonic() + cfg.flush_timeout_s)
        return bool(orphaned_end)

    def make() -> tuple[Any, Any, Any, int]:
        """(exporters, emit, wait, step), made for the first frame of spans: a process that
        never gets one (the decoding process kept up) holds no exporter, channel or thread."""
        exporters = Exporters(cfg, stats, resource)
        # no wait passes the end the parent sets (shared), nor, orphaned, the process's own
        exporters.deadline_source = lambda: min([shared.deadline(), *orphaned_end])
        builder = SpanBuilder(exporters.provider, exporters.ids, stats, **builder_options)
        counted = exporters.counted

        def exported() -> None:  # the exporter threads: what is confirmed, as it is
            shared.set_exported(index, min((c.exported for c in counted), default=0))

        for c in counted:
            c.on_export = exported
        queue = exporters.smallest_queue()

        def wait() -> None:  # patient only for a parent that waits for it
            if patient and not orphaned():
                exporters.wait_for_room(high=max(1, queue // 2), low=max(1, queue // 8))
            else:
                orphaned()
                exporters.pace()
        return exporters, builder.emit, wait, max(1, min(PACE_EVERY, queue // 4))

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
        if not made:
            made.append(make())
        exporters, emit, wait, step = made[0]
        for i, rec in enumerate(body):
            if not i % step:  # a frame may hold more spans than the exporter's queue
                wait()
            emit(rec)
        shared.set_built_ended(index, stats.spans_started, exporters.counter.ended)
    result = {"index": index, "built": stats.spans_started, "ended": 0, "exporters": [],
              "sampled_out": stats.spans_sampled_out}
    if made:
        exporters = made[0][0]
        if end_at is None:
            end_at = orphaned_end[0] if orphaned() else time.monotonic() + cfg.flush_timeout_s
        exporters.shutdown(max(0.0, end_at - time.monotonic()))
        result["ended"] = exporters.counter.ended
        result["exporters"] = [[c.label, c.exported] for c in exporters.counted]
    with contextlib.suppress(OSError):
        os.write(results_fd, json.dumps(result).encode() + b"\n")
    return 0
