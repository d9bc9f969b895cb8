"""Bernstein tracker part: signals → ``run stdin`` (pipe mode) or the ``run {cmd}`` record
(wrapper mode), by seed 004 and SPAN-MODEL.md."""

from __future__ import annotations

from otelbridge.events import BernsteinSignal, SpanRecord
from otelbridge.tracker import Parent, SpanRef
from otelbridge.tracker.bernstein import MISSING_TERMINAL, BernsteinTracker

from .harness import make_ctx

WALL = 1_800_000_000 * 10**9
MS = 10**6


def sig(kind, ts_ms=None, **kw):
    return BernsteinSignal("sess-b", ts_ms and ts_ms * MS, kind=kind, **kw)


def test_no_signal_no_span():
    ctx, records, _ = make_ctx(wall_ns=WALL)
    tr = BernsteinTracker(ctx)
    tr.finish()
    assert records == []
    assert ctx.stats.bernstein_runs_without_terminal == 0


def test_pipe_run_ends_at_its_terminal_signal():
    ctx, records, _ = make_ctx(wall_ns=WALL)
    tr = BernsteinTracker(ctx)
    tr.handle(sig("QUESTION", question="Apply migration?", options=["yes", "no"], question_id="q-001"))
    tr.handle(sig("PLAN_DRAFT", markdown="# Plan\n- step 1", path=None))
    tr.handle(sig("PLAN_READY", path=".sdd/plans/p.md"))
    tr.handle(sig("BLOCKED", reason="needs creds", hint="run login"))
    assert records == []
    tr.handle(sig("FAILED", reason="exit 2"))
    (run,) = records  # emitted at once
    assert run.name == "run stdin"
    assert run.parent_span_id is None
    assert (run.start_ns, run.end_ns) == (WALL, WALL)  # the wall clock: construction to signal
    assert (run.error, run.error_type) == ("FAILED: exit 2", "run_failed")
    assert run.attributes == {"bernstein.terminal_signal": "FAILED", "gen_ai.conversation.id": "sess-b"}
    assert [(e.name, e.attributes) for e in run.events] == [
        ("bernstein.question", {"bernstein.question": "Apply migration?", "bernstein.id": "q-001",
                                "bernstein.options": ["yes", "no"]}),
        ("bernstein.plan_draft", {}),  # markdown is content: opt-in
        ("bernstein.plan_ready", {"bernstein.path": ".sdd/plans/p.md"}),
        ("bernstein.blocked", {"bernstein.reason": "needs creds", "bernstein.hint": "run login"}),
        ("bernstein.failed", {"bernstein.reason": "exit 2"}),
    ]
    tr.finish()
    assert len(records) == 1


def test_missing_terminal_is_marked_not_failed():
    ctx, records, _ = make_ctx(wall_ns=WALL, capture_content=True)
    tr = BernsteinTracker(ctx)
    tr.handle(sig("PLAN_DRAFT", markdown="# Plan\x1b[31m"))
    tr.finish()
    (run,) = records
    assert run.error is None
    assert run.attributes["bernstein.terminal_signal"] == "none"
    assert [e.name for e in run.events] == ["bernstein.plan_draft", MISSING_TERMINAL]
    assert run.events[0].attributes == {"bernstein.markdown": "# Plan\x1b[31m"}  # raw: spans.py cleans
    assert ctx.stats.bernstein_runs_without_terminal == 1


def test_consecutive_runs_on_one_pipe_and_timestamps():
    ctx, records, _ = make_ctx(wall_ns=WALL, parent=Parent(0x1234, 0x5678))
    tr = BernsteinTracker(ctx)
    # lines with their own times (older than the wall clock: a recording) date the signals
    tr.handle(sig("COMPLETED", ts_ms=1_790_000_000_000))
    tr.handle(sig("QUESTION", ts_ms=1_790_000_005_000, question="more?"))
    tr.handle(sig("COMPLETED", ts_ms=1_790_000_009_000))
    tr.handle(sig("COMPLETED", ts_ms=1_790_000_010_000))
    tr.finish()
    first, second, third = records
    assert first.start_ns == first.end_ns == 1_790_000_000_000 * MS  # never after its first signal
    assert (second.start_ns, second.end_ns) == (1_790_000_000_000 * MS, 1_790_000_009_000 * MS)
    assert (third.start_ns, third.end_ns) == (1_790_000_009_000 * MS, 1_790_000_010_000 * MS)
    assert [e.name for e in second.events] == ["bernstein.question", "bernstein.completed"]
    for r in records:
        assert (r.trace_id, r.parent_span_id, r.parent_remote) == (0x1234, 0x5678, True)
        assert r.attributes["bernstein.terminal_signal"] == "COMPLETED" and r.error is None
    assert len({r.span_id for r in records}) == 3


def test_wrapper_mode_decorates_the_process_span():
    ctx, records, _ = make_ctx(wall_ns=WALL)
    ctx.run = SpanRef(0x99, 0x77)
    tr = BernsteinTracker(ctx)
    tr.handle(sig("QUESTION", question="go?"))
    tr.handle(sig("FAILED", reason="exit 3"))
    tr.handle(sig("COMPLETED"))  # a second terminal: recorded, counted, does not flip the status
    tr.finish()
    assert records == []  # the wrapper span's owner emits it
    rec = SpanRecord("run my-cli", 0x99, 0x77, None, WALL - 5, WALL + 5, {"process.exit.code": 0})
    ctx.decorate_process(rec)
    assert (rec.error, rec.error_type) == ("FAILED: exit 3", "run_failed")
    assert rec.attributes == {"process.exit.code": 0, "bernstein.terminal_signal": "FAILED"}
    assert [e.name for e in rec.events] == ["bernstein.question", "bernstein.failed", "bernstein.completed"]
    assert ctx.stats.duplicate_notifications == 1
    # an exit error already set by the owner is kept
    ctx2, _, _ = make_ctx(wall_ns=WALL)
    ctx2.run = SpanRef(1, 2)
    tr2 = BernsteinTracker(ctx2)
    tr2.handle(sig("BLOCKED", reason="waiting"))
    rec2 = SpanRecord("run x", 1, 2, None, WALL, WALL, {}, error="exit status 1", error_type="exit")
    ctx2.decorate_process(rec2)
    assert (rec2.error, rec2.error_type) == ("exit status 1", "exit")
    assert rec2.attributes["bernstein.terminal_signal"] == "none"
    assert [e.name for e in rec2.events] == ["bernstein.blocked", MISSING_TERMINAL]


def test_wrapper_mode_a_failed_run_after_a_completed_one_fails_the_process_span():
    """A command that runs its CLI twice: the second run's ``FAILED`` is not hidden by the
    first's ``COMPLETED`` (pipe mode fails that run's own ``run stdin`` span)."""
    ctx, records, _ = make_ctx(wall_ns=WALL)
    ctx.run = SpanRef(0x99, 0x77)
    tr = BernsteinTracker(ctx)
    tr.handle(sig("COMPLETED"))
    tr.handle(sig("FAILED", reason="exit 2"))
    tr.handle(sig("FAILED", reason="exit 3"))
    tr.finish()
    rec = SpanRecord("run my-cli", 0x99, 0x77, None, WALL - 5, WALL + 5, {"process.exit.code": 0})
    ctx.decorate_process(rec)
    assert (rec.error, rec.error_type) == ("FAILED: exit 2", "run_failed")
    assert rec.attributes["bernstein.terminal_signal"] == "FAILED"
    assert [e.name for e in rec.events] == ["bernstein.completed", "bernstein.failed", "bernstein.failed"]
    assert ctx.stats.duplicate_notifications == 1


def test_wrapper_without_signals_is_left_alone():
    ctx, _, _ = make_ctx(wall_ns=WALL)
    ctx.run = SpanRef(1, 2)
    BernsteinTracker(ctx)
    rec = SpanRecord("run x", 1, 2, None, WALL, WALL, {})
    ctx.decorate_process(rec)
    assert rec.attributes == {} and rec.events == [] and rec.error is None
