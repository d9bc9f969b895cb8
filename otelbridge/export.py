"""Stage 5: the TracerProvider, its exporters, export accounting and the bounded shutdown.

* ``otlp`` and ``file`` — made by :mod:`otelbridge.exporters` (the SDK's ``OTLPSpanExporter``
  by :attr:`Config.protocol`; ``--endpoint`` overrides the environment's endpoint, for HTTP as
  the base URL; OTLP/JSON lines in ``--output``, created with mode 0600).
* ``console`` — the SDK's ``ConsoleSpanExporter`` pointed at **stderr** (its default is stdout,
  which belongs to the stream).
* ``none`` — spans are built (so counts and summaries work) but not exported.

An exporter that cannot be made (a file that cannot be opened, a value the SDK refuses) is one
line on stderr and left out (:attr:`Exporters.left_out`): the others, or none, go on, and spans
are still built for the reports. Spans no exporter took because there is none are counted as
``spans_not_exported`` with the reason (``exporter none``, ``no usable exporter``).

The resource: :mod:`otelbridge.resource` (``cicd.*`` and ``vcs.*`` attributes in CI).

Nothing secret reaches stderr: every log record (ours and the SDK's) passes
:mod:`otelbridge.export_logging`'s filters
— the values of ``OTEL_EXPORTER_OTLP_HEADERS``/``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` (auth tokens)
masked, URL credentials and query strings cut, one line — and every endpoint we name goes
through :func:`otelbridge.redact.endpoint`. TLS (``https://`` endpoints,
``OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE``, ``_CLIENT_CERTIFICATE``, ``_CLIENT_KEY``) is the
exporters' own: ``--endpoint`` passes only the endpoint, so they still read those variables.

Spans an exporter cannot take (its queue of ``OTEL_BSP_MAX_QUEUE_SIZE`` full) are dropped and
counted (:class:`ExportPath`, :meth:`Exporters.shutdown`). Shutdown is bounded: :meth:`Exporters.shutdown` gives
``provider.shutdown()`` until the run's :class:`~otelbridge.deadline.Deadline` in a daemon thread (the SDK's own shutdown can block 7–30 s on a dead endpoint
and ``force_flush`` ignores its timeout), then reports what was confirmed exported.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)

from . import redact
from .config import Config
from .environment import SCHEDULE_DELAY_MS, default_endpoint, endpoint_used, sampler, without
from .exporters import (OtlpJsonFileExporter, answered, export_timeout_s, failure_cause, otlp_exporter, path_hint,
                        refused_hint)
from .deadline import Deadline
from .escape import inert_in_logs, one_line
from .export_logging import exporting, header_secrets_in
from .resource import make_resource
from .spans import PresetIdGenerator
from .stats import EXPORTER_NONE, NO_USABLE_EXPORTER, Stats

log = logging.getLogger("otelbridge")


#: The least a local exporter (file, console) is given at shutdown, in seconds.
LOCAL_FLUSH_S = 1.0


class CountingExporter(SpanExporter):
    """Delegates to ``inner`` and counts spans whose export was confirmed (``exported``) or
    failed (``failed``). Exceptions from ``inner`` are caught and counted as failures."""

    #: An export running longer than this (seconds) marks the exporter as stuck.
    STUCK_S = 1.0

    def __init__(self, inner: SpanExporter, label: str, local: bool = False,
                 hints: Mapping[str, str] | None = None, timeout_s: float | None = None) -> None:
        self.inner = inner
        self.label = label
        #: each export's timeout (seconds), which a timeout's cause names
        self.timeout_s = timeout_s
        #: it writes here (a file, stderr): no collector to wait for
        self.local = local
        #: said after a cause that begins with the key: a refused connection (a proxy between,
        #: or why ``label`` is the default endpoint), a 404 (how the URL's path was made)
        self.hints = hints or {}
        #: why its last export failed, as :func:`~otelbridge.exporters.failure_cause` says it
        #: (the SDK logs it on the exporting thread); ``None``: none did, or for no known cause
        self.cause: str | None = None
        #: the SDK said an export of it failed (with a known cause or not)
        self.refused = False
        self.exported = 0
        self.failed = 0
        self._lock = threading.Lock()
        #: spans taken for export (exported, failed or in progress)
        self.taken = 0
        #: spans its full queue let go before an export took them (counted by its path)
        self.overflowed = 0
        self._last_ok = True
        self._busy_since: float | None = None
        #: an export succeeded after the SDK said one failed (said once)
        self.recovered = False
        self._lost_said = 0  # (:attr:`failed` and :attr:`overflowed` when the last recovery was said)
        #: a collector's partial success was said (once)
        self.rejection_said = False
        #: it lost spans (a failed export, a rejection, a full queue); and no export has
        #: succeeded since (:meth:`probe`)
        self.lost_any = self.losing = False
        self._probed = 0.0  # (monotonic s)

    def failed_because(self, message: str) -> str | None:
        """The SDK said an export of this exporter failed (``message``): kept as :attr:`cause`;
        the cause said as a user acts on it (with its :attr:`hints`), ``None`` when it is no
        known failure."""
        self.refused = True
        cause = failure_cause(message, self.timeout_s)
        status, error = getattr(answered, "status", None), getattr(answered, "error", None)
        if cause is None and status is not None and status >= 400:  # (retried: the SDK names none)
            cause = failure_cause(f"code: {status}")
        if cause is None and error is not None:  # (a connection that timed out, retried: likewise)
            cause = failure_cause(str(error), self.timeout_s)
        self.cause = cause or self.cause  # (the exit line's: the hint below is said once)
        hint = next((h for start, h in self.hints.items() if h and cause and cause.startswith(start)), None)
        return f"{cause} ({hint})" if hint else cause

    def healthy(self) -> bool:
        """True when the last export succeeded and none has been running for :data:`STUCK_S`."""
        busy = self._busy_since
        return self._last_ok and (busy is None or time.monotonic() - busy < self.STUCK_S)

    def busy(self) -> bool:
        """An export is waiting for its answer now."""
        return self._busy_since is not None

    def waiting_s(self) -> float:
        """How long the export running now has waited for its answer, in seconds (0: none runs)."""
        busy = self._busy_since
        return 0.0 if busy is None else time.monotonic() - busy

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._busy_since = time.monotonic()
        with self._lock:
            self.taken += len(spans)
        exporting.current = self
        answered.status = answered.rejected = answered.error = None
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # never let an exporter bug escape into the SDK thread
            raised = f"raised {type(exc).__name__}" + (
                f" ({exc.strerror})" if isinstance(exc, OSError) and exc.strerror else "")
            if self.cause != raised:  # (said once: a full disk fails every batch after)
                log.warning("export to %s %s", self.label, raised)
            self.cause = raised
            result = SpanExportResult.FAILURE
        finally:
            exporting.current = None
        self._busy_since = None
        self._last_ok = result == SpanExportResult.SUCCESS
        rejected = self._partial_success(len(spans)) if self._last_ok else 0
        with self._lock:
            if result == SpanExportResult.SUCCESS:
                self.exported += len(spans) - rejected
                self.failed += rejected
            else:
                self.failed += len(spans)
            self.losing = bool(rejected) or result != SpanExportResult.SUCCESS
            self.lost_any |= self.losing
        if self._last_ok and self.refused and not self.recovered:  # (the failure was said)
            self.recovered = True  # (said at each recovery, with what was lost since the last)
            gone = self.failed + self.overflowed  # (a full queue's too: the outage cost them)
            lost, self._lost_said = gone - self._lost_said, gone
            log.warning("export to %s recovered: spans are taken again (%s lost before)", self.label,
                        f"{lost} span{'s' * (lost != 1)}" if lost else "none")
        elif not self._last_ok:
            self.recovered = False
        return result

    def probe(self) -> None:
        """After a loss, with no export running: an export of no span on a thread of its own, at
        most once a second (a collector back, and nothing left to send, is known only so)."""
        if self.losing and not self.busy() and time.monotonic() - self._probed >= 1.0:
            self._probed = time.monotonic()
            threading.Thread(target=self.export, args=((),), name="otelbridge-probe", daemon=True).start()

    def _partial_success(self, sent: int) -> int:
        """How many of ``sent`` spans the collector's answer rejected (its partial success:
        ``answered.rejected``); the first rejection or warning is said, its message kept as
        :attr:`cause` (an OTLP client does not send rejected spans again)."""
        answer = getattr(answered, "rejected", None)
        if answer is None:
            return 0
        # (the collector's text, which may quote the spans: redacted whole, then cut)
        rejected, said = min(answer[0], sent), one_line(redact.message(answer[1]))[:200]
        if rejected:
            self.cause = f"the collector rejected {rejected} of {sent} spans" + (f": {said}" if said else "")
        if not self.rejection_said:
            self.rejection_said = True
            log.warning("export to %s: %s", self.label,
                        self.cause if rejected else f"the collector took every span but warned: {said}")
        return rejected

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


#: the sampled bit of a span's trace flags (an int test: the flags' ``sampled`` property costs
#: a call per span and processor)
_SAMPLED = 0x01


class _EndCounter(SpanProcessor):
    """Counts sampled spans handed to the exporters (``on_end`` is only called for those)."""

    def __init__(self) -> None:
        self.ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        if span.context.trace_flags & _SAMPLED:  # a recorded, unsampled span is not exported
            self.ended += 1


def _endpoint_label(cfg: Config) -> str:
    """The endpoint as we name it on stderr: no credentials, no query string, no secret in its
    path (a token, a header's value), one line of at most ``redact.MESSAGE_MAX`` characters."""
    env = {k: v for k, v in os.environ.items() if k not in cfg.ignored_env}
    return redact.endpoint(endpoint_used(cfg.endpoint, env)[0] or default_endpoint(cfg.protocol),
                           header_secrets_in(env))


def queue_size(env: Mapping[str, str] | None = None) -> int:
    """Spans one exporter may have waiting: ``OTEL_BSP_MAX_QUEUE_SIZE``, else the SDK's 2048 (a
    value that is not a positive whole number is ignored, as the SDK ignores it)."""
    env = os.environ if env is None else env
    try:
        size = int(env.get("OTEL_BSP_MAX_QUEUE_SIZE", "") or DEFAULT_QUEUE_SIZE)
    except ValueError:
        return DEFAULT_QUEUE_SIZE
    return size if size > 0 else DEFAULT_QUEUE_SIZE


#: The SDK's default ``OTEL_BSP_MAX_QUEUE_SIZE``.
DEFAULT_QUEUE_SIZE = 2048


class ExportPath(SpanProcessor):
    """One exporter's path: the SDK's ``BatchSpanProcessor`` (a queue of ``limit`` spans) in
    front of a :class:`CountingExporter`, with the queue's length kept here rather than read from
    the processor's private state: spans handed in, minus those taken by an export, minus those
    the full queue let go (the SDK then drops its *oldest* span, so the spans that end a run
    survive a burst). What never reaches the exporter is counted where it matters: ``ended`` −
    ``exported`` (:meth:`Exporters.shutdown`)."""

    def __init__(self, exporter: CountingExporter, limit: int,
                 schedule_delay_ms: int | None = None) -> None:
        self.exporter = exporter
        self.limit = limit
        self.handed = 0
        self._batch = BatchSpanProcessor(exporter, max_queue_size=limit,
                                         schedule_delay_millis=schedule_delay_ms)

    @property
    def overflowed(self) -> int:
        """Spans the full queue let go."""
        return self.exporter.overflowed

    def waiting(self) -> int:
        """Spans in the batch processor's queue (not yet taken by an export)."""
        return max(0, self.handed - self.exporter.taken - self.overflowed)

    def unsettled(self) -> int:
        """Spans in the queue or being exported."""
        return max(0, self.handed - self.overflowed - self.exporter.exported - self.exporter.failed)

    def on_end(self, span: ReadableSpan) -> None:
        if not span.context.trace_flags & _SAMPLED:  # never exported
            return
        if self.handed - self.exporter.taken - self.overflowed >= self.limit:  # waiting()
            self.exporter.overflowed += 1
            self.exporter.lost_any = self.exporter.losing = True
        self.handed += 1
        self._batch.on_end(span)

    def shutdown(self) -> None:
        self._batch.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._batch.force_flush(timeout_millis)


class Exporters:
    """Owns the provider and one :class:`ExportPath` per configured exporter for one run.

    Counts: ``ended`` (sampled spans handed to the exporters) = exported + dropped, per exporter;
    :meth:`shutdown` writes the slowest exporter's into ``stats`` — or, with no exporter,
    ``ended`` as ``spans_not_exported`` (its reason is set as the exporters are made).
    ``resource``: the spans' (default: :func:`~otelbridge.resource.make_resource`'s, with
    ``instance_id`` as its ``service.instance.id``)."""

    def __init__(self, cfg: Config, stats: Stats, resource: Resource | None = None,
                 instance_id: str | None = None) -> None:
        with without(cfg.ignored_env):  # values said unusable at start are not the SDK's to read
            self._make(cfg, stats, resource or make_resource(instance_id=instance_id))

    def _make(self, cfg: Config, stats: Stats, resource: Resource) -> None:
        self.cfg = cfg
        self.stats = stats
        self.ids = PresetIdGenerator()
        #: the span limits the provider applies (``OTEL_SPAN_*``, ``OTEL_ATTRIBUTE_*``)
        self.limits = SpanLimits()
        self.provider = TracerProvider(
            resource=resource, id_generator=self.ids,
            span_limits=self.limits, shutdown_on_exit=False, sampler=sampler(os.environ),
        )
        self.counter = _EndCounter()
        self.provider.add_span_processor(self.counter)
        self.paths: list[ExportPath] = []
        #: exporters asked for that could not be made (the start said why)
        self.left_out: list[str] = list(cfg.exporters_left_out)
        delay = None if os.environ.get("OTEL_BSP_SCHEDULE_DELAY") else SCHEDULE_DELAY_MS
        limit = queue_size()
        for name in cfg.exporters:
            if name == "none":
                continue
            try:
                exp = self._exporter(name, cfg)
            except Exception as exc:  # the stream and the reports go on; this exporter is out
                self.left_out.append(name)
                what = (f"open --output {cfg.output!r}" if name == "file" else f"set up the {name} exporter")
                others = [n for n in cfg.exporters if n not in self.left_out and n != "none"]
                log.error("cannot %s: %s; %s", what,
                          exc.strerror if isinstance(exc, OSError) and exc.strerror else exc,
                          f"it is left out, using {','.join(others)}" if others else
                          "spans are built for the reports but not exported")
                continue
            path = ExportPath(exp, limit, delay)
            self.paths.append(path)
            self.provider.add_span_processor(path)
        #: the paths to a backend (OTLP), not to a file or stderr
        self.backends = [p for p in self.paths if not p.exporter.local]
        stats.not_exported_reason = None if self.paths else (
            NO_USABLE_EXPORTER if self.left_out else EXPORTER_NONE)

    @staticmethod
    def _exporter(name: str, cfg: Config) -> CountingExporter:
        """The exporter ``name`` (``otlp``, ``console``, ``file``), counted. Raises what making it
        raises (``OSError`` for a file that cannot be opened, the SDK's errors for a value it
        refuses)."""
        if name == "otlp":
            return CountingExporter(otlp_exporter(cfg), _endpoint_label(cfg), hints={
                "connection refused": refused_hint(cfg), "HTTP 404": path_hint(cfg)},
                timeout_s=export_timeout_s(cfg))
        if name == "console":
            # stderr is a CI job's log: no log command may pass through a span's JSON
            return CountingExporter(ConsoleSpanExporter(
                out=sys.stderr, formatter=lambda span: inert_in_logs(span.to_json() + os.linesep)),
                "console", local=True)
        if name == "file":
            return CountingExporter(OtlpJsonFileExporter(cfg.output), cfg.output, local=True)
        raise ValueError(f"unknown exporter {name!r}")

    def pace(self, deadline: Deadline | None = None, limit_s: float = 0.2,
             high: float = 0.75) -> int:
        """Pace the live span producer (the decoding process — never the tee) so that a burst
        is exported rather than dropped: while a *healthy* exporter has more than ``high`` of
        its queue waiting, wait, at most ``limit_s`` and never past ``deadline``. An exporter
        that failed last time or is stuck (:meth:`CountingExporter.healthy`) is never waited
        for: what does not fit is dropped and counted. Returns how many more spans can be
        handed in before any queue can pass ``high`` (each span adds at most one to a queue):
        until then the producer need not call again."""
        until = time.monotonic() + limit_s
        if deadline is not None:
            until = min(until, deadline.at)
        while any(p.waiting() > high * p.limit and p.exporter.healthy() for p in self.paths):
            if time.monotonic() >= until:
                return 0
            time.sleep(0.002)
        return max(0, min((int(high * p.limit) - p.waiting() for p in self.paths), default=1 << 30))

    def handed(self) -> int:
        """Spans handed to the exporters so far (sampled, ended)."""
        return self.counter.ended

    def confirmed(self, handed: int) -> bool | None:
        """Whether the first ``handed`` spans (:meth:`handed` then) are exported: True once every
        exporter confirmed them, ``None`` while on their way, False once any lost a span."""
        if any(p.exporter.failed or p.overflowed for p in self.paths):
            return False
        return True if all(p.exporter.exported >= handed for p in self.paths) else None

    def taking_again(self) -> bool:
        """Some exporter lost spans, and each that did has had an export succeed since (what
        was lost can be sent again); else those with none waiting are probed
        (:meth:`CountingExporter.probe`: OTLP's, not a file's)."""
        lost = [p for p in self.paths if p.exporter.lost_any]
        if lost and not any(p.exporter.losing or not p.exporter.healthy() for p in lost):
            return True
        for p in lost:
            if not p.exporter.local and p.waiting() == 0:
                p.exporter.probe()
        return False

    def backend_got_none(self) -> bool:
        """After :meth:`shutdown`: spans were handed to OTLP exporters and none confirmed one
        (a dead or refusing collector, a wrong endpoint)."""
        return (bool(self.backends) and self.counter.ended > 0
                and all(p.exporter.exported == 0 for p in self.backends))

    def pending(self) -> int:
        """Spans the slowest exporter has not settled yet (waiting or being exported)."""
        return max((p.unsettled() for p in self.paths), default=0)

    def wait_for_room(self, high: int = 1024, low: int = 256, stall_s: float = 5.0,
                      deadline: Callable[[], Deadline | None] = lambda: None) -> int:
        """Back-pressure for producers that can wait (``replay``, ``follow``): with more than
        ``high`` spans pending, wait until at most ``low`` are, or until ``stall_s`` pass without
        any progress (a dead collector: then go on; what does not fit is dropped and counted),
        never past ``deadline()`` (asked as it waits: a ``follow`` stop's, set by a signal). An
        exporter whose last export failed is not waited for: what it cannot take is dropped.
        Both bounds shrink to fit the smallest queue (``OTEL_BSP_MAX_QUEUE_SIZE``): a queue
        never holds more than is pending, so none overflows while its exporter makes progress.
        Returns how many more spans can be handed in before more than ``high`` can be pending
        (each span adds at most one): until then the producer need not call again."""
        smallest = min((p.limit for p in self.paths), default=high + 1)
        high = min(high, smallest - 1)  # (the span handed in after the room is used up fits too)
        low = min(low, high // 4)

        def unsettled() -> int:  # (an exporter whose last export failed is not waited for)
            return max((p.unsettled() for p in self.paths if p.exporter.healthy()), default=0)

        pending = unsettled()
        if pending <= high:
            return high - pending
        stalled_at = time.monotonic() + stall_s
        while pending > low and time.monotonic() < stalled_at:
            stop = deadline()
            if stop is not None and stop.passed():
                break
            time.sleep(0.002)
            now = unsettled()
            if now < pending:
                stalled_at = time.monotonic() + stall_s
            pending = now
        return max(0, high - pending)

    def shutdown(self, deadline: Deadline) -> bool:
        """Flush and shut down by ``deadline``; fill the export counts in ``stats``.
        Returns True when every ended span was confirmed exported by every exporter."""
        done = threading.Event()

        def _run() -> None:
            try:
                self.provider.shutdown()
            except Exception:
                pass
            done.set()

        threading.Thread(target=_run, name="otelbridge-shutdown", daemon=True).start()
        wait = deadline.remaining()
        if any(p.exporter.local for p in self.paths):
            # a file or stderr needs no collector: it writes what was built, also with
            # --flush-timeout 0 (a file holding spans the counts call dropped misleads)
            wait = max(wait, LOCAL_FLUSH_S)
        done.wait(wait)
        ended = self.counter.ended
        if not self.paths:  # sampled spans handed to no exporter: there is none
            self.stats.spans_exported = self.stats.spans_dropped = 0
            self.stats.spans_not_exported += ended
        else:
            exported = min(p.exporter.exported for p in self.paths)
            self.stats.spans_exported = exported
            self.stats.spans_dropped = max(ended - exported, 0)
        # an exporter asked for and left out confirmed none of them
        return self.stats.spans_dropped == 0 and not (self.left_out and ended)

    def describe_failure(self) -> str | None:
        """One line naming the exporters that lost spans, or ``None``."""
        ended = self.counter.ended
        parts = [f"{redact.message(name)[:40]} not set up: it took none of the {ended} spans"
                 for name in self.left_out if ended]
        for p in self.paths:
            if p.exporter.exported < ended:
                part = f"{p.exporter.label}: {ended - p.exporter.exported} of {ended} not confirmed"
                if p.overflowed:
                    part += f", {p.overflowed} of them let go by a full queue"
                if p.exporter.busy():  # a silent collector, or a refused connection retried
                    part += "; still retrying" if p.exporter.refused else "; no answer yet"
                    part += f" when --flush-timeout ({self.cfg.flush_timeout_s:g} s) ran out"
                    # (nothing ever answered though the export waited: no collector there, or the
                    # packets dropped on the way; the export's timeout, not reached, names no cause)
                    silent = not (p.exporter.refused or p.exporter.exported)
                    if silent and p.exporter.waiting_s() >= p.exporter.STUCK_S:
                        part += ": is a collector listening and answering there, or a firewall dropping the packets?"
                if p.exporter.cause is not None:  # (the collector may take spans again by now)
                    back = p.exporter.recovered and p.exporter.healthy()
                    part += f"; {'lost before it recovered: ' * back}{p.exporter.cause}"
                parts.append(part)
        return "export incomplete (" + "; ".join(parts) + ")" if parts else None
