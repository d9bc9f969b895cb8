"""otelbridge/export_processes.py in process: which runs get export processes, span records
crossing to them by pickle, the SDK's first failure said once for all, and an
:class:`ExportProcesses` forked from the test process exporting to a real OTLP/HTTP receiver.

The pool is forked here with the HTTP exporter: the test process may already run gRPC servers
(tests/receivers.py), and a gRPC channel in a child forked from a process whose gRPC core has
threads is not something the SDK supports; otelbridge forks before any gRPC channel or thread
exists, which the subprocess tests (tests/e2e/test_export_processes.py) cover with gRPC."""

from __future__ import annotations

import logging
import contextlib
import os
import threading
import time
import pickle
import signal

import pytest

from otelbridge import export_processes
from otelbridge.config import Config
from otelbridge.events import SpanEvent, SpanLink, SpanRecord
from otelbridge.export import _OnceFilter
from otelbridge.export_processes import ExportProcesses, count_for
from otelbridge.stats import Stats
from tests.receivers import HttpReceiver

TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736  # 128 bits: more than any 64-bit integer
T0 = 1_783_647_391_931_000_000  # epoch ns


# --------------------------------------------------------------------------- one failure line


def sdk_warning(text: str) -> logging.LogRecord:
    return logging.LogRecord("opentelemetry.exporter.otlp.proto.grpc.exporter", logging.WARNING,
                             __file__, 1, text, None, None)


@pytest.mark.parametrize("first", [0, 1])
def test_once_filters_sharing_a_token_let_exactly_one_first_message_through(first):
    token_r, token_w = os.pipe()
    os.write(token_w, b"!")
    os.close(token_w)
    try:
        filters = [_OnceFilter(), _OnceFilter()]  # one per export process
        for f in filters:
            f.token_fd = token_r
        order = [filters[first], filters[1 - first]]
        passed = [f.filter(sdk_warning(f"Failed to export span batch {i}")) for i, f in enumerate(order)]
        assert passed == [True, False]
        # later messages of either are counted, never said
        assert [f.filter(sdk_warning("again")) for f in order] == [False, False]
        assert (order[0].suppressed, order[1].suppressed) == (1, 2)
        # our own warnings are not the SDK's: they always pass
        ours = logging.LogRecord("otelbridge", logging.WARNING, __file__, 1, "ours", None, None)
        assert all(f.filter(ours) for f in filters)
    finally:
        os.close(token_r)


def test_once_filter_without_a_token_says_its_first_message():
    f = _OnceFilter()
    first = sdk_warning("Failed to export span batch\nsecond line")
    assert f.filter(first) and not f.filter(sdk_warning("again"))
    assert "\n" not in first.getMessage() and "suppressed" in first.getMessage()


# --------------------------------------------------------------------------- records by pickle


def test_span_records_cross_by_pickle_equal():
    rec = SpanRecord(
        name="invoke_agent Explore", trace_id=TRACE, span_id=0xF1DA7AACC45676C4,
        parent_span_id=0x00F067AA0BA902B7, start_ns=T0, end_ns=T0 + 4_839_000_000,
        attributes={"gen_ai.agent.name": "Explore", "workflow.agent.tokens": 8926,
                    "result.total_cost_usd": 0.174175, "result.is_error": False,
                    "gen_ai.response.finish_reasons": ["end_turn"]},
        kind="CLIENT", parent_remote=True, error="tool failed", error_type="tool_error",
        events=[SpanEvent("gen_ai.choice", T0 + 1, {"index": 0}), SpanEvent("interrupted", T0 + 2)],
        links=[SpanLink(TRACE - 1, 0xAEDEA69A2BA66C58, {"link.kind": "spawned_by"})],
    )
    back = pickle.loads(pickle.dumps([rec], protocol=5))[0]
    assert back == rec
    assert back.trace_id == TRACE and back.links[0].trace_id == TRACE - 1
    assert type(back.events[0]) is SpanEvent and type(back.links[0]) is SpanLink
    root = SpanRecord("run claude", TRACE, 1, None, T0, T0, {})
    assert pickle.loads(pickle.dumps(root, protocol=5)) == root


# --------------------------------------------------------------------------- how many


@pytest.mark.parametrize("exporters", [("console",), ("file",), ("none",), ("otlp", "console")])
def test_no_processes_unless_otlp_is_the_only_exporter(exporters):
    assert count_for(Config(exporters=exporters, output="/dev/null", export_processes=3)) == 0


def test_an_explicit_count_is_honoured(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert count_for(Config(export_processes=0)) == 0
    assert count_for(Config(export_processes=5)) == 5


@pytest.mark.parametrize(("cpus", "expected"), [(1, 0), (2, 2), (32, 2)])
def test_the_default_follows_the_cpus_this_process_may_use(monkeypatch, cpus, expected):
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # the machine's; taskset allows fewer
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    assert count_for(Config()) == expected


@pytest.mark.parametrize(("cpu_max", "expected"), [("max 100000\n", 4.0), ("25000 100000\n", 0.25),
                                                   ("300000 100000\n", 3.0), ("garbled\n", 4.0)])
def test_a_cgroup_cpu_quota_lowers_the_usable_cpus(tmp_path, monkeypatch, cpu_max, expected):
    """A Kubernetes ``cpu`` limit is a cgroup v2 quota (``cpu.max``: quota and period in µs)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    path = tmp_path / "cpu.max"
    path.write_text(cpu_max)
    assert export_processes.usable_cpus(str(path)) == expected
    assert export_processes.usable_cpus(str(tmp_path / "absent")) == 4


def test_no_processes_without_fork(monkeypatch):
    monkeypatch.delattr(os, "fork")
    assert count_for(Config(export_processes=2)) == 0


# --------------------------------------------------------------------------- a pool in process


def records(count: int, prefix: str = "agent") -> list[SpanRecord]:
    """``count`` root-less spans of one trace under one parent, 1 ms apart."""
    return [SpanRecord(f"invoke_agent {prefix}-{i}", TRACE, 0x1000 + i, 0x0FFF,
                       T0 + i * 1_000_000, T0 + i * 1_000_000 + 500, {"workflow.agent.index": i},
                       events=[SpanEvent("step", T0 + i * 1_000_000 + 1, {"n": i})],
                       links=[SpanLink(TRACE + 1, 0x2000 + i)])
            for i in range(count)]


def start_pool(rx, count: int, stats: Stats, at: int | None = 0) -> ExportProcesses:
    """``count`` export processes; ``at``: ``--export-processes-at`` (0: they take every span)."""
    cfg = Config(protocol="http/protobuf", endpoint=rx.endpoint, flush_timeout_s=5.0,
                 export_processes=count, export_processes_at=at)
    pool = ExportProcesses.start(cfg, stats, count)
    assert pool is not None and len(pool.processes) == count
    return pool


def reaped(pool: ExportProcesses) -> bool:
    """Every export process is gone (not even a zombie of ours)."""
    for proc in pool.processes:
        try:
            os.waitpid(proc.pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return True


def test_a_pool_exports_what_it_is_given_and_merges_its_counts():
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 2, stats)
        given = records(300)  # a full batch (256) goes to one process, the rest to the other
        for rec in given:
            pool.emit(rec)
        assert pool.shutdown(10) is True
        spans = rx.received.wait_for(len(given), timeout=2)
    assert [p.sent for p in pool.processes] == [export_processes.BATCH_RECORDS,
                                                len(given) - export_processes.BATCH_RECORDS]
    assert reaped(pool)
    assert (stats.spans_started, stats.spans_exported, stats.spans_dropped) == (300, 300, 0)
    assert pool.describe_failure() is None
    assert sorted((s.name, s.span_id, s.start_ns, s.end_ns) for s in spans) == sorted(
        (r.name, f"{r.span_id:016x}", r.start_ns, r.end_ns) for r in given)
    assert {s.trace_id for s in spans} == {f"{TRACE:032x}"}
    assert {s.parent_span_id for s in spans} == {f"{0x0FFF:016x}"}
    by_name = {s.name: s for s in spans}
    assert by_name["invoke_agent agent-7"].events == [("step", T0 + 7_000_000 + 1, {"n": 7})]
    assert by_name["invoke_agent agent-7"].links == [(f"{TRACE + 1:032x}", f"{0x2007:016x}")]
    assert len({s.resource["service.instance.id"] for s in spans}) == 1


def test_a_frame_larger_than_the_exporter_queue_is_paced_not_dropped(monkeypatch):
    # the processes read the queue size from the environment they are forked with
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "64")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "32")
    monkeypatch.setattr(export_processes, "BATCH_RECORDS", 10_000)
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 1, stats)
        for rec in records(1000):
            pool.emit(rec)
        pool.flush()  # one frame of 1000 records: 15 times the queue
        assert pool.processes[0].sent == 1000
        assert pool.shutdown(10) is True
        spans = rx.received.wait_for(1000, timeout=2)
    assert reaped(pool)
    assert len(spans) == stats.spans_exported == 1000 and stats.spans_dropped == 0


def test_a_stopped_process_is_given_up_and_the_decoding_process_exports_the_rest(monkeypatch):
    monkeypatch.setattr(export_processes, "STALL_S", 0.2)
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 1, stats)
        (proc,) = pool.processes
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            # more than the pipe holds (1 MiB): a frame is begun and cannot be finished
            given = records(12_000, prefix="x" * 100)
            for i, rec in enumerate(given):
                pool.emit(rec)
                if i % 16 == 0:
                    pool.pace()  # as the decoding thread does after each line
            pool.flush()
            assert not proc.alive  # a half-written frame: given up (and stopped for good)
            assert pool._to_local and pool._local is not None
            all_exported = pool.shutdown(5)
        finally:
            if not reaped(pool):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
        spans = rx.received.wait_for(len(given) - proc.sent, timeout=5)
        assert reaped(pool)
    # what the stopped process held is lost; everything after it was exported from here
    assert all_exported is False and proc.sent > 0
    assert pool.undelivered == 0
    assert len(spans) == stats.spans_exported == len(given) - proc.sent
    assert stats.spans_started == len(given)
    assert stats.spans_dropped == proc.sent
    got_ids = {s.span_id for s in spans}  # the records after the loss, the last one included
    assert {f"{r.span_id:016x}" for r in given[proc.sent:]} == got_ids
    assert "did not finish" in pool.describe_failure()


def test_a_frame_begun_after_the_deadline_is_finished_while_its_process_reads(monkeypatch):
    """Past ``pace_until`` (the end of a run) a full pipe drops a *new* batch, but a frame
    already begun is finished as long as its process reads again within the stall limit:
    a healthy process is never given up for being busy."""
    monkeypatch.setattr(export_processes, "STALL_S", 2.0)
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 1, stats)
        (proc,) = pool.processes
        os.kill(proc.pid, signal.SIGSTOP)
        resume = threading.Timer(0.4, os.kill, (proc.pid, signal.SIGCONT))
        try:
            given = records(6_000, prefix="y" * 200)  # ~2.7 MB of frames: more than the pipe
            written_whole = 0
            for rec in given:
                pool.emit(rec)
                if proc.sent > written_whole and not resume.is_alive() and resume.ident is None:
                    pool.pace_until = time.monotonic()  # the end: no more waiting for room
                    resume.start()
                written_whole = proc.sent
            pool.flush()
            assert proc.alive  # it was stopped mid-frame, then read again: not given up
            pool.shutdown(5)
        finally:
            resume.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
        spans = rx.received.wait_for(stats.spans_exported, timeout=5)
        assert reaped(pool)
    # past the deadline nothing waits: new batches find the pipe full and are not delivered,
    # and the process's own queue overflows — all counted; what it confirmed arrived
    assert "did not finish" not in (pool.describe_failure() or "")
    assert stats.spans_started == len(given)
    assert 0 < len(spans) == stats.spans_exported <= proc.sent
    assert stats.spans_dropped == len(given) - stats.spans_exported


def test_what_a_killed_process_had_exported_still_counts_as_exported(monkeypatch):
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 1, stats)
        (proc,) = pool.processes
        first = records(600, prefix="early")
        for rec in first:
            pool.emit(rec)
        pool.flush()
        rx.received.wait_for(len(first), timeout=10)  # confirmed before the kill
        deadline = time.monotonic() + 5
        while pool._shared.progress(0)[2] < len(first) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        time.sleep(0.3)  # gone (a zombie): its pipe has no reader — the next write finds out
        later = records(300, prefix="late")
        for rec in later:
            pool.emit(rec)
        pool.flush()
        assert pool._to_local
        assert not os.path.exists(f"/proc/{proc.pid}")  # reaped when found dead, not at the end
        assert pool.shutdown(5) is True  # nothing lost: the rest went out from here
        spans = rx.received.wait_for(len(first) + len(later), timeout=5)
        assert reaped(pool)
    assert not proc.alive and pool._to_local
    assert len(spans) == stats.spans_exported == stats.spans_started == len(first) + len(later)
    assert stats.spans_dropped == 0


# --------------------------------------------------------------------------- on demand


def test_the_decoding_process_exports_until_its_queue_is_half_full(monkeypatch):
    """Default ``--export-processes-at``: half the queue (here 128 of 256). A load the local
    exporter keeps up with never reaches the processes; the counts are this process's."""
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "256")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "64")
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 2, stats, at=None)
        assert pool.at == 128
        given = records(100)  # fewer than 128: the queue cannot reach the mark
        for rec in given:
            pool.emit(rec)
        assert pool._to_local
        assert pool.shutdown(10) is True
        spans = rx.received.wait_for(len(given), timeout=2)
    assert reaped(pool)
    assert [p.sent for p in pool.processes] == [0, 0]
    assert (stats.spans_started, stats.spans_exported, stats.spans_dropped) == (100, 100, 0)
    assert stats.spans_to_export_processes == 0
    assert sorted(s.span_id for s in spans) == sorted(f"{r.span_id:016x}" for r in given)


def test_the_processes_take_the_rest_of_the_run_once_spans_wait(monkeypatch):
    """``--export-processes-at 10``: the batch processor exports when 512 spans wait (or after
    its 5 s delay), so the 10th span waits and every later one goes to the processes — for the
    rest of the run, even once the local queue has drained."""
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "5000")
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 2, stats, at=10)
        assert pool.at == 10
        given = records(400)
        for rec in given[:300]:
            pool.emit(rec)
        assert not pool._to_local
        assert pool._local[0].queued() == 10
        pool._local[0].provider.force_flush()  # drained: the processes keep the spans
        assert pool._local[0].queued() == 0
        for rec in given[300:]:
            pool.emit(rec)
        assert pool.shutdown(10) is True
        spans = rx.received.wait_for(len(given), timeout=5)
    assert reaped(pool)
    assert sum(p.sent for p in pool.processes) == stats.spans_to_export_processes == 390
    assert all(p.sent > 0 for p in pool.processes)  # a full batch each, then the rest
    assert (stats.spans_started, stats.spans_exported, stats.spans_dropped) == (400, 400, 0)
    assert sorted(s.span_id for s in spans) == sorted(f"{r.span_id:016x}" for r in given)
    assert len({s.resource["service.instance.id"] for s in spans}) == 1


def test_the_mark_is_at_most_half_the_queue(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "64")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "32")
    with HttpReceiver() as rx:
        pool = start_pool(rx, 1, Stats(), at=5000)  # would let the queue overflow first
        assert pool.at == 32
        said = [r.getMessage() for r in caplog.records if "--export-processes-at" in r.getMessage()]
        assert said == ["--export-processes-at 5000 is more than half the export queue; 32 is "
                        "used (OTEL_BSP_MAX_QUEUE_SIZE sets the queue)"]
        assert pool.shutdown(5) is True
        assert reaped(pool)


def test_in_replay_the_spans_being_exported_count_toward_the_mark(monkeypatch):
    """``replay`` (*patient*) must flush at its end what its exporters hold, within
    ``--flush-timeout``, as its in-process ``wait_for_room`` bounds it (1024 pending). The spans
    of an export in progress are held too: counted only once queued, the decoding process held
    the mark plus a batch in flight (1536 by default: a 2 s collector then lost 512 spans at the
    end of a replay that exported all of them with ``--export-processes 0`` or ``-at 0``)."""
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "64")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8")
    stats = Stats()
    with HttpReceiver(delay=1.0) as rx:
        cfg = Config(protocol="http/protobuf", endpoint=rx.endpoint, flush_timeout_s=5.0,
                     export_processes=2)
        pool = ExportProcesses.start(cfg, stats, 2, patient=True)
        assert pool is not None and pool.at == 32
        local = pool._local[0]
        given = records(100)
        for rec in given[:8]:  # a full batch: the local exporter takes it and waits on the collector
            pool.emit(rec)
        deadline = time.monotonic() + 5
        while local.queued() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert local.queued() == 0 and local.pending() == 8
        for rec in given[8:]:
            pool.emit(rec)
        assert not pool._to_local
        assert local.pending() <= pool.at  # not 8 in flight + 32 queued
        assert pool.shutdown(15) is True
        spans = rx.received.wait_for(len(given), timeout=5)
    assert reaped(pool)
    assert (stats.spans_started, stats.spans_exported, stats.spans_dropped) == (100, 100, 0)
    assert stats.spans_to_export_processes == 100 - pool.at
    assert sorted(s.span_id for s in spans) == sorted(f"{r.span_id:016x}" for r in given)


def test_replay_ends_once_the_processes_took_in_what_they_were_sent(monkeypatch):
    """``replay`` (*patient*) waits for the collector as long as it makes progress; the span
    records a process was sent but has not built yet (its pipe and read buffer hold thousands)
    are part of that wait, not of the ``--flush-timeout`` of the end: they were killed with it
    (a 2 s collector: 4553 of 6601 spans lost, none with ``--export-processes 0``)."""
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "64")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "32")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    stats = Stats()
    with HttpReceiver(delay=0.25) as rx:  # 128 spans/s a process
        cfg = Config(protocol="http/protobuf", endpoint=rx.endpoint, flush_timeout_s=5.0,
                     export_processes=2, export_processes_at=0)
        pool = ExportProcesses.start(cfg, stats, 2, patient=True)
        assert pool is not None
        given = records(1000)
        for rec in given:  # the writes never wait: the pipes take it all
            pool.emit(rec)
            pool.wait_for_room()
        assert pool.shutdown(2) is True  # ~500 a process: 4 s, more than the 2 s of the end
        spans = rx.received.wait_for(len(given), timeout=5)
    assert reaped(pool)
    assert (stats.spans_started, stats.spans_exported, stats.spans_dropped) == (1000, 1000, 0)
    assert pool.describe_failure() is None
    assert sorted(s.span_id for s in spans) == sorted(f"{r.span_id:016x}" for r in given)


def test_a_process_lost_before_it_held_anything_is_said_so(caplog):
    stats = Stats()
    with HttpReceiver() as rx:
        pool = start_pool(rx, 2, stats)
        first = pool.processes[0]  # the first batch's turn (no pipe holds anything yet)
        os.kill(first.pid, signal.SIGKILL)
        time.sleep(0.3)  # gone: its pipe has no reader
        given = records(10)
        for rec in given:
            pool.emit(rec)
        pool.flush()
        assert not first.alive and pool.processes[1].sent == len(given)
        assert pool.shutdown(10) is True
        spans = rx.received.wait_for(len(given), timeout=2)
    assert reaped(pool)
    assert len(spans) == stats.spans_exported == len(given) and stats.spans_dropped == 0
    lost = [r.getMessage() for r in caplog.records if "export process 0" in r.getMessage()]
    assert lost == ["export process 0 ended, holding no spans (1 left)"]


def test_counts_add_up_when_one_process_answered_with_losses_and_another_not_at_all():
    """The merge of the counts (``_merge``): built = exported + dropped, whatever mix of
    processes answered. One answered having exported 600 of its 1000 spans; one was killed
    unanswered after confirming 300 of the 500 it was sent (its shared progress); 50 records
    reached no process."""
    stats = Stats()
    pool = ExportProcesses(Config(), stats, None, None, 2)
    answered, killed = export_processes._Process(0, 0, -1), export_processes._Process(1, 0, -1)
    answered.sent, answered.result = 1000, {"index": 0, "built": 1000, "ended": 1000,
                                            "exporters": [["collector", 600]]}
    killed.sent = 500
    pool._shared.set_exported(1, 300)
    pool.processes = [answered, killed]
    pool.undelivered = 50
    assert pool._merge() is False
    assert stats.spans_started == 1000 + 500 + 50
    assert stats.spans_exported == 600 + 300
    assert stats.spans_dropped == 400 + 200 + 50
    assert stats.spans_started == stats.spans_exported + stats.spans_dropped
    assert stats.spans_to_export_processes == 1500
    failure = pool.describe_failure()
    assert "collector: 400 of 1300 not confirmed" in failure and "200 span records" in failure
