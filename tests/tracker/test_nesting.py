"""Every recording, every span: a child lies inside its parent (SPAN-MODEL.md "Time"), except
background work (a ``task`` span or sub-agent under its ``execute_tool`` span), which may end
after it. Decoder and tracker in-process; the records as the tracker emits them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, FIXTURES, fixture_files, needs_fixtures
from tests.tracker.recording import RECORDINGS, Run

ALL = [*fixture_files(), *sorted(RECORDINGS.glob("*.jsonl")), *sorted(EXAMPLES.glob("*.jsonl"))]


def outside(run: Run) -> list[str]:
    by_id = {(r.trace_id, r.span_id): r for r in run.records}
    bad = []
    for rec in run.records:
        parent = by_id.get((rec.trace_id, rec.parent_span_id))
        if parent is None or rec.parent_remote:
            continue
        background = parent.attributes.get("gen_ai.operation.name") == "execute_tool" and (
            rec.name.startswith("task ") or rec.attributes.get("gen_ai.operation.name") == "invoke_agent")
        if rec.start_ns < parent.start_ns or (rec.end_ns > parent.end_ns and not background):
            bad.append(f"{rec.name} [{rec.start_ns}, {rec.end_ns}] outside {parent.name} "
                       f"[{parent.start_ns}, {parent.end_ns}]")
    return bad


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_children_lie_inside_their_parents(path: Path):
    run = Run(path)
    assert all(r.start_ns <= r.end_ns for r in run.records)
    assert outside(run) == []


def test_a_turn_cut_mid_call_covers_its_calls(tmp_path):
    # the example's first 20 lines: turn 1's sonnet call (msg_main_1, lines 2-4) asks for Bash and two
    # Agent calls; the sub-agents' lines run to line 20 (timestamp 1.2 s after line 3), no result
    source = EXAMPLES / "claude-code-session.jsonl"
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(source.read_bytes().splitlines(keepends=True)[:20]))
    run = Run(cut)
    turn = run.one("turn 1")
    assert turn.error == "stream ended before result"
    tools = [r for r in run.records if r.parent_span_id is not None
             and r.attributes.get("gen_ai.operation.name") == "execute_tool"]
    latest = max(r.end_ns for r in tools)
    assert latest > turn.start_ns  # the calls ran: the turn is not zero-length
    (chat,) = [r for r in run.named("chat claude-sonnet-4-6")]
    assert turn.end_ns >= chat.end_ns >= max(r.end_ns for r in tools if r.parent_span_id == chat.span_id)
    assert turn.end_ns == latest


EDGE = FIXTURES / "edge"


@needs_fixtures()
def test_an_error_result_saying_success_is_not_described_as_success(tmp_path):
    # result-success-but-is-error.jsonl line 1: subtype "success", is_error true, no text
    run = Run(EDGE / "result-success-but-is-error.jsonl")
    for rec in (run.one("turn 1"), run.one("invoke_agent claude-code")):
        assert rec.error == "result is_error" and rec.error_type == "result_error"
    # the same line with a result text: that text describes the failure
    with_text = tmp_path / "r.jsonl"
    with_text.write_text('{"type":"result","subtype":"success","session_id":"sess-1","is_error":true,'
                         '"result":"API Error: 529 overloaded"}\n')
    assert Run(with_text).one("turn 1").error == "API Error: 529 overloaded"


@needs_fixtures()
def test_a_turn_lasts_at_least_its_results_duration():
    # workflow-probe-2.1.206.jsonl: line 33 (turn 1's result, duration_ms 4839) and line 50
    # (turn 2's, duration_ms 1590)
    from tests.conftest import WORKFLOW_PROBE
    from tests.tracker.recording import MS, lines

    doc = lines(WORKFLOW_PROBE)
    run = Run(WORKFLOW_PROBE)
    for name, n in (("turn 1", 33), ("turn 2", 50)):
        turn = run.one(name)
        assert turn.end_ns - turn.start_ns >= doc[n]["duration_ms"] * MS
    assert run.one("turn 2").end_ns - run.one("turn 2").start_ns == 1590 * MS


def test_a_notification_for_a_task_never_started_is_named_by_its_task_type(tmp_path):
    # the resume recording's line 1 (a task of the previous process) with the task_type a
    # notification may carry: the span is named by it (SPAN-MODEL.md "Tasks")
    source = RECORDINGS / "claudecli-go-task-notification-resume-2.1.280.jsonl"
    raw = source.read_text().splitlines(keepends=True)
    doc = json.loads(raw[0])
    doc["task_type"] = "local_bash"
    path = tmp_path / "typed.jsonl"
    path.write_text(json.dumps(doc) + "\n" + "".join(raw[1:]))
    (note,) = Run(path).attr("task.id", doc["task_id"])
    assert note.name == "task local_bash" and note.attributes["task.type"] == "local_bash"
    assert note.start_ns == note.end_ns
    (plain,) = Run(source).attr("task.id", doc["task_id"])  # without it: "task notification"
    assert plain.name == "task notification" and "task.type" not in plain.attributes
