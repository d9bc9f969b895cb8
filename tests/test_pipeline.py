"""Stages 2–5 in process (no process boundary is the point here): a :class:`Pipeline` complete
when constructed, its span sinks (the :class:`SpanSink` seam), the export path's own accounting
and the run's one :class:`Deadline`."""

from __future__ import annotations

import threading

import pytest
import time

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelbridge.config import build
from otelbridge.deadline import Deadline
from otelbridge.events import SpanRecord
from otelbridge.export import CountingExporter, Exporters
from otelbridge.pipeline import Pipeline, SpanSink
from otelbridge.stats import Stats
from tests.conftest import EXAMPLES, workflow_facts

CBC = EXAMPLES / "cbc-workflow.jsonl"


class Keep:
    """A :class:`SpanSink` in front of the pipeline's own sinks: keeps every record."""

    def __init__(self, sink: SpanSink) -> None:
        self.sink = sink
        self.records: list[SpanRecord] = []

    def emit(self, rec: SpanRecord) -> None:
        self.records.append(rec)
        self.sink.emit(rec)


def test_a_recording_through_the_pipeline_in_process():
    stats = Stats()
    cfg = build(exporter="none", protocol=None, clock="stream", deterministic_ids=True)
    pipeline = Pipeline(cfg, stats, hold=Keep)
    data = CBC.read_bytes()
    for start in range(0, len(data), 4096):  # chunks that cut lines
        chunk = data[start:start + 4096]
        pipeline.on_chunk(chunk, len(chunk))
    pipeline.end_stream()
    records = pipeline.sink.records
    started, agents, phases, _, _ = workflow_facts(CBC)
    assert stats.lines == data.count(b"\n")
    assert 0 < stats.lines_decoded <= stats.lines  # the rest: lines no dialect wants
    assert (stats.lines_not_decoded, stats.bad_lines, stats.overlong_lines) == (0, 0, 0)
    assert stats.spans_started == len(records) > 0
    by_id = {r.span_id: r for r in records}
    assert len(by_id) == len(records)  # no span twice
    workflow = [r for r in records if r.attributes.get("gen_ai.operation.name") == "invoke_workflow"]
    assert [r.attributes["workflow.task_id"] for r in workflow] == [started["task_id"]]
    agent_spans = [r for r in records if r.attributes.get("workflow.agent.index") is not None
                   and r.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert len(agent_spans) == len(agents)
    for r in agent_spans:  # every agent under a span of its own trace
        assert r.parent_span_id in by_id and by_id[r.parent_span_id].trace_id == r.trace_id
        assert 0 < r.start_ns <= r.end_ns
    assert pipeline.run is None  # no command: no run span


def test_a_command_gets_its_run_span_at_construction():
    cfg = build(exporter="console", protocol=None, command=("claude", "-p", "hi"))
    pipeline = Pipeline(cfg, Stats())
    traceparent, under_parent = pipeline.run_link()
    assert traceparent == f"00-{pipeline.run.ref.trace_id:032x}-{pipeline.run.ref.span_id:016x}-01"
    assert under_parent is False
    # with no exporter the run span goes nowhere: the command is not told to hang from it
    none = Pipeline(build(exporter="none", protocol=None, command=("claude", "-p", "hi")), Stats())
    assert none.run is not None and none.run_link() is None


class Blocking(SpanExporter):
    """An exporter that holds its first export until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.spans = 0

    def export(self, spans):
        self.release.wait(5)
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.release.set()


def held_path(exporters: Exporters, then: int, kind: type[Blocking] | None = None):
    """A :class:`Blocking` exporter's path (a queue of 8) added to ``exporters``: one span
    taken for an export that is held, then ``then`` more spans ended. Returns (the exporter,
    the path). ``kind``: a :class:`Blocking` of another kind."""
    from otelbridge.export import ExportPath

    blocking = (kind or Blocking)()
    path = ExportPath(CountingExporter(blocking, "test"), limit=8, schedule_delay_ms=10)
    exporters.paths.append(path)
    exporters.provider.add_span_processor(path)
    tracer = exporters.provider.get_tracer("t")
    tracer.start_span("first").end()
    until = time.monotonic() + 5
    while path.exporter.taken == 0 and time.monotonic() < until:  # the export is held
        time.sleep(0.01)
    for i in range(then):
        tracer.start_span(f"s{i}").end()
    return blocking, path


def test_export_path_keeps_its_own_queue_length_and_counts_what_the_full_queue_let_go(monkeypatch):
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    stats = Stats()
    exporters = Exporters(build(exporter="none", protocol=None), stats)
    blocking, path = held_path(exporters, then=20)
    assert path.handed == 21
    assert path.waiting() == 8 and path.overflowed == 20 - 8
    blocking.release.set()
    assert exporters.shutdown(Deadline.after(5)) is False
    assert stats.spans_exported == blocking.spans == 1 + 8
    assert stats.spans_dropped == 21 - 9  # built = exported + dropped
    assert "12 of them let go by a full queue" in exporters.describe_failure()


class FailingFirst(Blocking):
    """:class:`Blocking`, whose held first export fails (the collector was down)."""

    def export(self, spans):
        first = self.spans == 0
        super().export(spans)
        return SpanExportResult.FAILURE if first else SpanExportResult.SUCCESS


def test_a_recovery_says_the_spans_the_full_queue_let_go_in_the_outage_as_lost(monkeypatch, caplog):
    """An export that fails while more spans end than the queue holds: when the next export
    succeeds, the recovery counts every span the outage cost, the failed export's (1) and
    those the full queue let go (12), as the exit line does."""
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    stats = Stats()
    exporters = Exporters(build(exporter="none", protocol=None), stats)
    failing, path = held_path(exporters, then=20, kind=FailingFirst)
    path.exporter.failed_because("Failed to export span batch code: 503")  # (as the SDK logs it)
    with caplog.at_level("WARNING"):
        failing.release.set()
        exporters.shutdown(Deadline.after(5))
    said = [r.getMessage() for r in caplog.records if "recovered" in r.getMessage()]
    assert said == ["export to test recovered: spans are taken again (13 spans lost before)"]
    assert stats.spans_dropped == 13 and "12 of them let go by a full queue" in exporters.describe_failure()


def test_the_exporters_say_how_many_spans_fit_before_they_must_be_asked_again(monkeypatch):
    """``wait_for_room`` and ``pace`` return the room left (each span adds at most one to a
    queue); the replay and live sinks ask again only when it is used up."""
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    from otelbridge.pipeline import PaceExporters, WaitForExporters

    exporters = Exporters(build(exporter="none", protocol=None), Stats())
    assert exporters.wait_for_room() == 1024 and exporters.pace() >= 1024  # no exporter
    blocking, path = held_path(exporters, then=5)
    assert exporters.pending() == 6 and path.waiting() == 5
    assert exporters.wait_for_room(high=7) == 1
    assert exporters.wait_for_room(high=10) == 1  # the bound shrinks to fit the queue of 8: 7
    assert exporters.pace(high=0.75) == 6 - 5  # 6 of 8 may wait
    rec = SpanRecord("x", 1, 2, None, 1, 2, {})
    replay, live = WaitForExporters(exporters), PaceExporters(exporters, lambda: None)
    replay.emit(rec)
    live.emit(rec)
    assert (replay.room, live.room) == (7 - 6, 1)
    replay.emit(rec)
    live.emit(rec)
    assert (replay.room, live.room) == (0, 0)
    replay.emit(rec)
    live.emit(rec)  # the room used up: asked again (nothing was added, so the same room)
    assert (replay.room, live.room) == (1, 1)
    blocking.release.set()
    exporters.shutdown(Deadline.after(5))


def test_deadline_shares_what_is_left():
    deadline = Deadline.after(2.0)
    assert 1.9 < deadline.remaining() <= 2.0 and not deadline.passed()
    half = deadline.for_decoding()
    assert 0.9 < half.remaining() <= 1.0 and half.at < deadline.at
    # decoding gets at least DECODE_FLOOR_S, past a shorter deadline (--flush-timeout 0)
    from otelbridge.deadline import DECODE_FLOOR_S

    for short in (Deadline.after(0.0), Deadline.after(0.5), Deadline(time.monotonic() - 1)):
        floor = short.for_decoding()
        assert DECODE_FLOOR_S - 0.1 < floor.remaining() <= DECODE_FLOOR_S and floor.at > short.at
    assert Deadline(time.monotonic() - 1).remaining() == 0.0
    assert deadline.later_by(3).at == deadline.at + 3


def _run_through(command: tuple[str, ...], path, clock: str):
    cfg = build(exporter="none", protocol=None, clock=clock, deterministic_ids=True, command=command)
    pipeline = Pipeline(cfg, Stats(), hold=Keep)
    data = path.read_bytes()
    pipeline.on_chunk(data, len(data))
    pipeline.end_stream()
    records = pipeline.sink.records
    (run,) = [r for r in records if r.name.startswith("run ")]
    children = [r for r in records if r.parent_span_id == run.span_id]
    return run, children


def test_a_recording_piped_through_the_wrapper_dates_its_run_span_by_the_stream():
    # examples/claude-code-session.jsonl is dated 2026-07 by its own timestamps: on the stream
    # clock the run span is its session's span, not months from the recording to today
    run, children = _run_through(("cat", "x.jsonl"), EXAMPLES / "claude-code-session.jsonl", "auto")
    assert [c.name for c in children] == ["invoke_agent claude-code"]
    (session,) = children
    assert (run.start_ns, run.end_ns) == (session.start_ns, session.end_ns)
    assert run.name == "run cat" and run.attributes["process.command"] == "cat"


def test_a_run_span_on_the_wall_clock_covers_its_children():
    run, children = _run_through(("claude",), EXAMPLES / "claude-code-session.jsonl", "wall")
    assert children
    assert all(run.start_ns <= c.start_ns and c.end_ns <= run.end_ns for c in children)


SESSION = EXAMPLES / "claude-code-session.jsonl"


def _through(cfg, stats: Stats) -> tuple[Pipeline, bool]:
    """SESSION through a pipeline made from ``cfg``; (the pipeline, what the shutdown said)."""
    pipeline = Pipeline(cfg, stats, hold=Keep)
    data = SESSION.read_bytes()
    pipeline.on_chunk(data, len(data))
    pipeline.end_stream()
    return pipeline, pipeline.exporters.shutdown(Deadline.after(5))


@pytest.mark.parametrize("flags,env,reason,all_exported", [
    ({"exporter": "none"}, {}, "exporter none", True),
    ({"exporter": None}, {"OTEL_TRACES_EXPORTER": "zipkin"}, "no usable exporter", False),
    ({"exporter": "file", "output": "/nonexistent-dir/traces.jsonl"}, {}, "no usable exporter", False),
])
def test_spans_no_exporter_took_are_counted_with_the_reason(flags, env, reason, all_exported):
    stats = Stats()
    cfg = build(protocol=None, env=env, clock="stream", deterministic_ids=True, **flags)
    pipeline, ok = _through(cfg, stats)
    built = len(pipeline.sink.records)
    assert built == stats.spans_started == 18  # the reports see every span
    assert (stats.spans_exported, stats.spans_dropped, stats.spans_sampled_out) == (0, 0, 0)
    assert stats.spans_not_exported == built and stats.not_exported_reason == reason
    assert ok is all_exported  # an exporter asked for and left out loses the run's spans
    assert stats.as_dict()["spans_not_exported_reason"] == reason
    assert f"spans 18 built, 0 exported, 0 dropped, 18 not exported ({reason});" in stats.line()


def test_spans_sampled_out_are_not_counted_again_as_not_exported(monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")  # read as the provider is made
    stats = Stats()
    cfg = build(exporter="none", protocol=None, clock="stream", deterministic_ids=True)
    _, ok = _through(cfg, stats)
    assert ok
    assert stats.spans_started == stats.spans_sampled_out == 18
    assert stats.spans_not_exported == 0 and stats.as_dict()["spans_not_exported_reason"] is None
    assert ", 18 sampled out; " in stats.line() and "not exported" not in stats.line()


def test_an_exporter_that_cannot_be_set_up_leaves_the_others_exporting(tmp_path):
    from tests.receivers import HttpReceiver

    stats = Stats()
    with HttpReceiver() as rx:
        cfg = build(exporter="otlp,file", protocol="http/protobuf", env={}, endpoint=rx.endpoint,
                    output=str(tmp_path / "missing-dir" / "traces.jsonl"), clock="stream",
                    deterministic_ids=True)
        pipeline, ok = _through(cfg, stats)
        received = rx.received.spans()
    assert len(received) == stats.spans_started == stats.spans_exported == 18
    assert (stats.spans_dropped, stats.spans_not_exported) == (0, 0)
    assert not ok  # the file got none of them
    assert pipeline.exporters.left_out == ["file"]
    assert pipeline.exporters.describe_failure() == (
        "export incomplete (file not set up: it took none of the 18 spans)")


@pytest.mark.parametrize("via", ["flag", "env"])
@pytest.mark.parametrize("suffix", ["?tenant=a", "/?tenant=a", "/v1/traces?tenant=a"])
def test_an_http_endpoints_query_stays_after_the_path(suffix, via, monkeypatch):
    """``--endpoint`` and ``OTEL_EXPORTER_OTLP_ENDPOINT`` are base URLs over OTLP/HTTP:
    ``/v1/traces`` goes into the path, not after the query string."""
    from tests.receivers import HttpReceiver

    stats = Stats()
    with HttpReceiver() as rx:
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            monkeypatch.delenv(name, raising=False)
        if via == "env":
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint + suffix)
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint + suffix} if via == "env" else {}
        cfg = build(exporter="otlp", protocol="http/protobuf", env=env, clock="stream",
                    endpoint=rx.endpoint + suffix if via == "flag" else None, deterministic_ids=True)
        _, ok = _through(cfg, stats)
        received = rx.received.spans()
        queries = set(rx.received.queries)
    assert ok and len(received) == stats.spans_exported == 18
    assert queries == {"tenant=a"}


def test_a_live_decoder_whose_set_up_fails_counts_its_lines_as_not_decoded(monkeypatch):
    """A set-up that raises is a bug (an exporter that cannot be made is left out instead): the
    stream's lines are then counted as not decoded, never as not wanted, and the run is one
    whose spans were lost. The failing Pipeline stands in for that bug."""
    import otelbridge.export_logging
    import otelbridge.pipeline
    from otelbridge.modes.live import LiveDecoder

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(otelbridge.pipeline, "Pipeline", broken)
    monkeypatch.setattr(otelbridge.export_logging, "configure_logging", lambda: None)
    stats = Stats()
    cfg = build(exporter="none", protocol=None, fail_on_export_error=True)
    decoder = LiveDecoder(cfg, stats, call_later=lambda delay, fn: None)
    data = SESSION.read_bytes()
    half = data.index(b"\n", len(data) // 2) + 1
    decoder.chunk(data, half)
    decoder.chunk(data[half:], len(data) - half)
    assert decoder.pipeline is None
    assert stats.lines == stats.lines_not_decoded == data.count(b"\n") == 34
    assert stats.bytes_not_decoded == len(data) - 34
    assert (stats.lines_decoded, stats.lines_not_wanted, stats.spans_started) == (0, 0, 0)
    assert decoder.end(None, 0, Deadline.after(1)) == 1  # --fail-on-export-error: nothing exported
