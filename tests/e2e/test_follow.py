"""``otelbridge follow``: a writer driven from the test appends, rotates and truncates the file;
a stop mid-workflow and a restart follow. Every workflow reaches the real OTLP receiver exactly
once and whole. Waits are bounded polls on observable state (receiver, offset file)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from decimal import Decimal

import pytest

from tests.conftest import EXAMPLES, FIXTURES, ROOT, clean_env, needs_fixtures, workflow_facts, workflow_spans
from tests.e2e.test_security import one_call_session
from tests.receivers import GrpcReceiver, HttpReceiver

CBC = EXAMPLES / "cbc-workflow.jsonl"
TEMPLATE = CBC.read_text()
_, AGENTS, PHASES, _, _ = workflow_facts(CBC)
SPANS_PER_WORKFLOW = 1 + len(PHASES) + len(AGENTS)


def workflow(name: str) -> str:
    """The example stream as task ``wf-{name}``: its own trace."""
    return TEMPLATE.replace("wf-task-01", f"wf-{name}")


def wait(predicate, timeout: float = 10.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def roots(rx) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in rx.received.spans():
        if s.name.startswith("invoke_workflow"):
            task = s.attributes["workflow.task_id"]
            counts[task] = counts.get(task, 0) + 1
    return counts


def start(log, state, rx, *extra, **env_vars):
    env = clean_env(OTEL_BSP_SCHEDULE_DELAY="50", **env_vars)
    return subprocess.Popen(
        [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state),
         "--poll-interval", "0.05", "--grace-period", "0", "--protocol", "grpc",
         "--endpoint", rx.endpoint, "--summary", "never", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
    )


def ready(proc) -> None:
    """Wait until ``proc`` catches SIGTERM (before, the signal's default would end it)."""
    def catches() -> bool:
        try:
            status = (f"/proc/{proc.pid}/status")
            caught = next(l for l in open(status) if l.startswith("SigCgt:")).split()[1]
        except (OSError, StopIteration):
            return False
        return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)

    wait(catches, what="its signal handlers")


def stop(proc) -> tuple[bytes, bytes]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    return out, err


def append(path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)


def empty_log(tmp_path):
    """An empty followed file and the state directory beside it."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text("")
    return log, state


def recording_lines(name: str) -> list[str]:
    """The lines, with their newlines, of a shared Claude Code recording."""
    return (FIXTURES / "claude-code" / name).read_text().splitlines(keepends=True)


def saved_offset(state):
    files = list(state.glob("follow-*.json"))
    if not files:
        return None
    try:
        return json.loads(files[0].read_text())
    except ValueError:
        return None


def test_rotation_truncation_and_restart(tmp_path):
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, workflow("A"))
            wait(lambda: "wf-A" in roots(rx), what="workflow A")

            os.rename(log, tmp_path / "agent.jsonl.1")  # rotation: a new file at the path
            wf_b = workflow("B")
            append(tmp_path / "agent.jsonl.1", "")  # the old file stays readable
            append(log, wf_b[: len(wf_b) // 2])  # a line cut in two writes
            time.sleep(0.15)
            append(log, wf_b[len(wf_b) // 2:])
            wait(lambda: "wf-B" in roots(rx), what="workflow B")

            size, ino = log.stat().st_size, log.stat().st_ino
            # (A's file, renamed, has B's size: the position names its file too); B's session
            # is open: a restart would read B again from its start, exporting up to its end
            before = wait(lambda: (saved_offset(state) or {}).get("read_to") == size
                          and saved_offset(state)["ino"] == ino and saved_offset(state),
                          what="the position at the end of B")
            assert before["offset"] == 0
            os.truncate(log, 0)  # copytruncate
            wait(lambda: (saved_offset(state) or {}).get("read_to") == 0, what="truncation seen")
            assert saved_offset(state)["ino"] == before["ino"]
            append(log, workflow("C"))
            wait(lambda: "wf-C" in roots(rx), what="workflow C")

            # a stop mid-workflow: D's first half only (its task_notification not yet written)
            wf_d = workflow("D")
            cut = wf_d.index('"subtype":"task_updated"')
            append(log, wf_d[:cut])
            time.sleep(0.3)
        finally:
            out, err = stop(proc)
        assert out == b""  # a sidecar: nothing on stdout
        assert b"1 workflow(s) still open at stop" in err
        state_file = next(state.glob("follow-*.json"))
        assert stat.S_IMODE(state_file.stat().st_mode) == 0o600
        assert "wf-D" not in roots(rx)

        proc = start(log, state, rx)  # restart: from the offset file, not from the end
        try:
            time.sleep(0.3)
            append(log, wf_d[cut:])
            wait(lambda: "wf-D" in roots(rx), what="workflow D after restart")
            time.sleep(0.3)  # anything traced twice would arrive by now
        finally:
            stop(proc)

    assert roots(rx) == {"wf-A": 1, "wf-B": 1, "wf-C": 1, "wf-D": 1}
    everything = rx.received.spans()
    assert len({(s.trace_id, s.span_id) for s in everything}) == len(everything)
    spans = workflow_spans(everything)
    assert len(spans) == 4 * SPANS_PER_WORKFLOW
    (d_root,) = [s for s in spans if s.name.startswith("invoke_workflow")
                 and s.attributes["workflow.task_id"] == "wf-D"]
    assert d_root.attributes["workflow.status"] == "failed"  # whole: its end came after restart
    d_agents = [s for s in spans if s.trace_id == d_root.trace_id and s.name.startswith("invoke_agent")]
    assert len(d_agents) == len(AGENTS)

    # the session the copies share: a complete turn per result line read (each copy has one;
    # D's was read by the second start), none traced twice. The stop ends the session (nothing
    # seen is dropped silently), so D's first half, cut by the stop, is one more turn ended
    # "incomplete" (README, follow: sessions are not held like workflows). Nothing dangles:
    # the session span each turn belongs to and each workflow root links to arrived too.
    turns = [s for s in everything if s.name.startswith("turn ")]
    complete = [t for t in turns if t.status_code != 2]
    cut = [t for t in turns if t.status_code == 2]
    assert len(complete) == 4 * TEMPLATE.count('"type":"result"') == 4
    assert [(t.attributes["error.type"], t.status_message) for t in cut] == [
        ("incomplete", "interrupted by SIGTERM before result")]
    arrived = {(s.trace_id, s.span_id) for s in everything}
    assert all((t.trace_id, t.parent_span_id) in arrived for t in turns)
    assert all(link in arrived for s in spans for link in s.links)


def test_starts_at_the_end_without_from_start(tmp_path):
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("old"))
    with GrpcReceiver() as rx:
        proc = start(log, state, rx)
        try:
            wait(lambda: saved_offset(state), what="first checkpoint")
            assert saved_offset(state)["offset"] == log.stat().st_size  # started at the end
            append(log, workflow("new"))
            wait(lambda: "wf-new" in roots(rx), what="the new workflow")
        finally:
            _, err = stop(proc)
    assert roots(rx) == {"wf-new": 1}
    # said once, at the start: a first try on a recording read nothing and said nothing
    said = [l for l in err.decode().splitlines() if "from its end" in l]
    assert said == [f"otelbridge: following {str(log)!r} from its end: the {len(workflow('old'))} bytes in it "
                    "now are not read (--from-start reads them)"], err


def test_a_file_that_appears_later_and_a_stop_mid_workflow_is_read_again_from_its_start(tmp_path):
    """The file does not exist at the first start; a workflow is cut by the stop: the next start
    reads it from the file's first line (the checkpoint made when the file appeared), exported
    once, whole, under its own name."""
    log, state = tmp_path / "cli.jsonl", tmp_path / "state"
    lines = workflow("late").splitlines(keepends=True)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx)
        try:
            assert b"waiting for" in proc.stderr.readline()  # running, the file new to it
            append(log, "".join(lines[:5]))
            wait(lambda: saved_offset(state), what="a checkpoint for the new file")
            assert saved_offset(state)["offset"] == 0
            time.sleep(0.3)
            stop(proc)
            append(log, "".join(lines[5:]))
            proc = start(log, state, rx)
            wait(lambda: roots(rx).get("wf-late"), what="the workflow")
            stop(proc)
        finally:
            if proc.poll() is None:  # a failed assertion never leaves a follower running
                proc.kill()
                proc.wait()
        spans = rx.received.spans()
    assert roots(rx) == {"wf-late": 1}
    assert len([s for s in spans if s.attributes.get("workflow.task_id") == "wf-late"]) == SPANS_PER_WORKFLOW
    (root,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    assert root.name != "invoke_workflow workflow"  # its task_started line was read


def test_a_stop_reads_what_was_written_since_the_last_poll(tmp_path):
    # a sidecar is stopped right after its agent wrote its last lines: they are read and traced,
    # not left for a poll that never comes (--poll-interval 30 s: only the stop's read sees them)
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("first"))
    session = (EXAMPLES / "claude-code-session.jsonl").read_text()
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", "--poll-interval", "30")
        wait(lambda: roots(rx).get("wf-first") == 1, what="the first workflow")
        append(log, session)
        stop(proc)
        wait(lambda: any(s.name == "invoke_agent claude-code" for s in rx.received.spans()),
             what="the session written before the stop")
    assert roots(rx) == {"wf-first": 1}


def test_what_a_dead_collector_did_not_take_is_read_again_by_the_next_start(tmp_path):
    """The collector is down while the follower reads two whole workflows and is stopped: the
    position stays where reading began, so the next start, with the collector up, exports both
    — once each — and then moves the position's export boundary to the end."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("a") + workflow("b"))
    with socket.socket() as sock:  # a port with nothing listening on it
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = clean_env(OTEL_BSP_SCHEDULE_DELAY="50")
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state),
         "--from-start", "--poll-interval", "0.05", "--grace-period", "0", "--protocol", "grpc",
         "--endpoint", dead, "--flush-timeout", "1", "--summary", "never"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        wait(lambda: saved_offset(state), what="the first checkpoint")
        time.sleep(1.5)  # both workflows read, their spans handed to the failing exporter
        _, err = stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert b"2 exported" not in err and b"dropped" in err, err
    assert saved_offset(state)["offset"] == 0
    with GrpcReceiver() as rx:
        proc = start(log, state, rx)
        try:
            wait(lambda: roots(rx) == {"wf-a": 1, "wf-b": 1}, what="both workflows")
            # (the workflows' session is open: read again from its start, exported up to the end)
            wait(lambda: saved_offset(state)["read_to"] == log.stat().st_size, what="the position at the end")
            assert saved_offset(state)["offset"] == 0
            stop(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert roots(rx) == {"wf-a": 1, "wf-b": 1}


def test_a_copytruncate_under_a_writer_that_keeps_its_offset_loses_no_line(tmp_path):
    """``cli > file`` under logrotate's ``copytruncate``: the writer's next line lands at its
    old offset, after a hole of NUL bytes as long as what was truncated. The hole is no line:
    every line of the second workflow is decoded, none counted bad."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    stats = tmp_path / "stats.json"
    writer = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with GrpcReceiver() as rx:
            proc = start(log, state, rx, "--from-start", "--stats-json", str(stats))
            try:
                os.write(writer, workflow("A").encode())
                wait(lambda: "wf-A" in roots(rx), what="workflow A")
                os.truncate(log, 0)
                time.sleep(0.3)  # the truncation seen
                second = workflow("B").encode()
                os.write(writer, second)  # at the writer's offset: after the hole
                assert log.stat().st_size == len(workflow("A")) + len(second)
                wait(lambda: "wf-B" in roots(rx), what="workflow B")
            finally:
                stop(proc)
    finally:
        os.close(writer)
    counts = json.loads(stats.read_text())
    assert counts["bad_lines"] == 0
    assert counts["lines"] == 2 * TEMPLATE.count("\n")
    assert roots(rx) == {"wf-A": 1, "wf-B": 1}


def test_a_copytruncate_the_file_outgrows_before_the_next_poll_is_still_seen(tmp_path):
    """Truncated, then written past our old position within one poll (a fast writer after
    logrotate's ``copytruncate``): the file only grew, but its first bytes changed. The new
    content is read from its start: no line cut in two, both workflows whole."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    stats = tmp_path / "stats.json"
    first, second = workflow("A"), workflow("B-a-longer-name-than-the-first")
    assert len(second) > len(first)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", "--stats-json", str(stats), "--poll-interval", "1")
        try:
            append(log, first)
            wait(lambda: "wf-A" in roots(rx), what="workflow A")
            with open(log, "r+") as fh:  # truncated and rewritten at once: one poll sees it grown
                fh.truncate(0)
                fh.write(second)
            assert log.stat().st_size > len(first)
            wait(lambda: "wf-B-a-longer-name-than-the-first" in roots(rx), what="workflow B")
        finally:
            stop(proc)
    counts = json.loads(stats.read_text())
    assert counts["bad_lines"] == 0
    assert counts["lines"] == first.count("\n") + second.count("\n")
    assert roots(rx) == {"wf-A": 1, "wf-B-a-longer-name-than-the-first": 1}
    assert len(workflow_spans(rx.received.spans())) == 2 * SPANS_PER_WORKFLOW


def stamps_ns(text: str) -> list[int]:
    """The ``timestamp`` of every line that has one, in epoch ns."""
    from datetime import datetime

    out = []
    for line in text.splitlines():
        stamp = json.loads(line).get("timestamp")
        if stamp:
            out.append(int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e9))
    return out


@needs_fixtures()
def test_a_new_file_at_the_path_is_a_stream_of_its_own(tmp_path):
    """A session of September is written, the file deleted, and one of August written at the
    path (a new writer): the first session ends with its file, and the second is dated by its
    own timestamps, not carried on the first one's clock."""
    sep = (FIXTURES / "claude-code" / "claudecli-go-bg-bash-wake-2.1.280.jsonl").read_text()
    aug = (FIXTURES / "claude-code" / "idea-planner-explore-subagent-2.1.224.jsonl").read_text()
    conv = {name: json.loads(text.splitlines()[0])["session_id"] for name, text in
            (("sep", sep), ("aug", aug))}
    log, state = empty_log(tmp_path)

    def session(name):
        return [s for s in rx.received.spans() if s.name == "invoke_agent claude-code"
                and s.attributes.get("gen_ai.conversation.id") == conv[name]]

    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, sep)
            wait(lambda: any(s.attributes.get("gen_ai.conversation.id") == conv["sep"]
                             for s in rx.received.spans()), what="the first session's spans")
            log.unlink()
            append(log, aug)
            wait(lambda: session("sep"), what="the first session, ended with its file")
        finally:
            stop(proc)
        wait(lambda: session("aug"), what="the second session")
    (first,), (second,) = session("sep"), session("aug")
    aug_stamps = stamps_ns(aug)
    assert min(aug_stamps) - 5 * 10**9 <= second.start_ns <= second.end_ns <= max(aug_stamps)
    assert first.start_ns >= min(stamps_ns(sep)) - 5 * 10**9
    children = [s for s in rx.received.spans() if s.trace_id == second.trace_id]
    assert len(children) > 3 and all(second.start_ns <= s.start_ns for s in children)


def test_a_workflow_open_at_a_stop_after_its_file_was_deleted_is_exported(tmp_path):
    """Its grace window still running at the stop, a workflow would be left to the next start
    — but its file is gone from the path, so no start can read it again: it is exported now."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("gone"))
    env = clean_env(OTEL_BSP_SCHEDULE_DELAY="50")
    with GrpcReceiver() as rx:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state),
             "--from-start", "--poll-interval", "0.05", "--grace-period", "60", "--protocol",
             "grpc", "--endpoint", rx.endpoint, "--summary", "never"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        try:
            wait(lambda: saved_offset(state), what="the first checkpoint")
            time.sleep(0.5)  # read: the workflow in its 60 s grace window
            log.unlink()
            time.sleep(0.2)
        finally:
            _, err = stop(proc)
        wait(lambda: roots(rx).get("wf-gone"), what="the workflow")
    assert b"no longer at" in err, err
    assert roots(rx) == {"wf-gone": 1}
    assert len(workflow_spans(rx.received.spans())) == SPANS_PER_WORKFLOW


@needs_fixtures()
def test_a_restart_mid_session_exports_again_only_what_the_stop_cut_short(tmp_path):
    """A sidecar stopped mid-session while a workflow is open, then started again: the next
    start reads again from before the workflow (to trace it whole) but exports nothing that had
    ended before the stop — each model call and tool call that ended arrives once; the one the
    stop ended arrives once more when it ends."""
    lines = recording_lines("claudecli-go-workflow-phased-2.1.270.jsonl")
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, "".join(lines[:16]))  # the workflow started (line 8), not ended
            wait(lambda: any(s.name.startswith("chat ") for s in rx.received.spans()),
                 what="the first model calls")
            time.sleep(0.3)
        finally:
            _, err = stop(proc)
        assert b"1 workflow(s) still open at stop" in err, err
        proc = start(log, state, rx)
        try:
            append(log, "".join(lines[16:]))
            wait(lambda: roots_by_name(rx), what="the workflow after the restart")
            time.sleep(0.5)
        finally:
            stop(proc)
        spans = rx.received.spans()
    chats = [s for s in spans if s.name.startswith("chat ")]
    want = {json.loads(l)["message"]["id"] for l in lines if json.loads(l).get("type") == "assistant"}
    assert {s.attributes["gen_ai.response.id"] for s in chats} == want
    # the last model call read before the stop was still open (its turn had no result yet):
    # the stop ended it, and it ends again after the restart; every other call arrives once (the
    # turn's first too: the stream shows its prompt, so it does not wait for the turn's start)
    open_at_stop = [json.loads(l)["message"]["id"] for l in lines[:16]
                    if json.loads(l).get("type") == "assistant"][-1]
    counts = {m: sum(s.attributes["gen_ai.response.id"] == m for s in chats) for m in want}
    assert counts == {m: 2 if m == open_at_stop else 1 for m in want}
    tools = [s.attributes["gen_ai.tool.call.id"] for s in spans if s.name.startswith("execute_tool ")]
    assert len(tools) == len(set(tools)) > 0
    assert len([s for s in spans if s.name.startswith("invoke_workflow")]) == 1


def roots_by_name(rx) -> bool:
    return any(s.name.startswith("invoke_workflow") for s in rx.received.spans())


@needs_fixtures()
def test_a_session_a_dead_collector_did_not_take_is_read_again_by_the_next_start(tmp_path):
    """A session alone (no workflow: every point is a checkpoint) read while the collector is
    down: its turn and session spans are handed on only at the stop, after checkpoints past its
    lines. The stop's failed export leaves the position at the last checkpoint saved, the
    first, where the run began."""
    rec = FIXTURES / "claude-code" / "claudecli-go-basic-thinking-2.1.68.jsonl"
    log, state = tmp_path / "run.jsonl", tmp_path / "state"
    log.write_bytes(rec.read_bytes())
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state),
         "--from-start", "--poll-interval", "0.05", "--grace-period", "0", "--endpoint", dead,
         "--flush-timeout", "1", "--summary", "never"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(OTEL_BSP_SCHEDULE_DELAY="50"),
        cwd=ROOT)
    try:
        wait(lambda: saved_offset(state), what="the first checkpoint")
        time.sleep(1.5)
        _, err = stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert b"the follow position stays at the last point whose spans were all exported" in err, err
    assert saved_offset(state)["offset"] == 0
    with GrpcReceiver() as rx:
        proc = start(log, state, rx)
        try:
            # (read again from the session's start: what was read before is not exported twice)
            wait(lambda: saved_offset(state)["read_to"] == log.stat().st_size, what="the whole file read")
        finally:
            stop(proc)  # the session's spans leave at the stop, as at the first one
        wait(lambda: any(s.name == "invoke_agent claude-code" for s in rx.received.spans()),
             what="the session")
        names = [s.name for s in rx.received.spans()]
    assert names.count("invoke_agent claude-code") == 1 and names.count("turn 1") == 1


@needs_fixtures()
def test_a_collector_lost_after_a_saved_point_makes_the_next_start_read_again_from_that_point(tmp_path):
    """A sidecar traces two runs (a real recording) into its collector and saves its position
    (the second run's first line: its session is open), then the collector goes away while a
    third run is read: its spans are lost, and the second's session span (ended by the third's
    ``init``). The position stays where it was saved, not where the sidecar began: the next
    start, collector back, reads the second run again without exporting what had arrived and
    sends the rest, so each span of the file arrives once over both collectors, none without
    its parent."""
    log, state = empty_log(tmp_path)
    runs = back_to_back("claudecli-go-bg-bash-wake-2.1.280.jsonl", 3)
    with GrpcReceiver() as before:
        proc = start(log, state, before, "--from-start", "--flush-timeout", "1")
        try:
            append(log, runs[0] + runs[1])
            wait(lambda: (saved_offset(state) or {}).get("read_to") == log.stat().st_size,
                 what="two runs exported and saved")
            saved = saved_offset(state)
            assert saved["offset"] == len(runs[0].encode())  # (the second run's session is open)
            before.server.stop(0)  # the collector goes away
            append(log, runs[2])
            time.sleep(1.0)
            err = stop(proc)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        arrived = before.received.spans()
    assert b"the follow position stays at the last point whose spans were all exported" in err, err
    # (the stop came before the collector was back: it says the next start sends them)
    assert (f"exported (byte {saved['offset']} of {str(log)!r}), read again from there by the next "
            "start").encode() in err, err
    assert saved_offset(state)["offset"] == saved["offset"]
    assert saved_offset(state)["read_to"] == saved["read_to"]
    with GrpcReceiver() as after:
        err = restart_with_the_rest(log, state, after, "")
        spans = arrived + after.received.spans()
        with HttpReceiver() as whole:
            replay_into(whole, log)
            want = whole.received.spans()
    assert (f"following {str(log)!r} from byte {saved['offset']}, its saved position (up to byte "
            f"{saved['read_to']} it only rebuilds what was open: those bytes' spans had all arrived)").encode() in err, err
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans) and all(s.parent_span_id in ids for s in spans if s.parent_span_id)
    assert tree_names(spans) == tree_names(want)


def through_an_outage(log, state, before: str, during, after) -> tuple[dict, list, bytes]:
    """``follow --from-start`` (OTLP/HTTP, an export given up after 1 s) reads ``before`` into a
    collector and saves its position; the collector goes away while ``during`` is written (or
    done: a callable), and is back on the same address as ``after`` is; once the position is
    past where it was, a stop. The position saved before the outage, the spans both collectors
    received, stderr."""
    with HttpReceiver() as first:
        proc = start(log, state, first, "--from-start", "--flush-timeout", "1", "--protocol", "http/protobuf",
                     OTEL_EXPORTER_OTLP_TIMEOUT="1000")
        try:
            append(log, before)
            wait(lambda: (saved_offset(state) or {}).get("read_to") == log.stat().st_size, what="a saved position")
            saved = saved_offset(state)
        except BaseException:
            proc.kill()
            raise
    try:
        during() if callable(during) else append(log, during)
        time.sleep(2.5)
        assert saved_offset(state) == saved  # (its spans lost: no position past them)
        with HttpReceiver(port=first.port) as back:
            after() if callable(after) else append(log, after)
            wait(lambda: (saved_offset(state)["ino"], saved_offset(state)["offset"]) != (saved["ino"], saved["offset"]),
                 timeout=20, what="the position past the outage")
            err = stop(proc)[1]
            return saved, first.received.spans() + back.received.spans(), err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@needs_fixtures()
@pytest.mark.parametrize("then", ["written", "quiet"])
def test_a_collector_back_after_a_lost_export_gets_what_was_lost_without_a_restart(tmp_path, then):
    """A sidecar traces two runs (a real recording) and saves its position; the collector goes
    away while a third run is read (its spans are lost), then comes back on the same address, as
    a fourth is written or with nothing more written (it is probed). The sidecar reads again
    from the saved position at once, not at its next start: the position reaches the file's end,
    and every span of the file has arrived, none without its parent."""
    log, state = empty_log(tmp_path)
    runs = back_to_back("claudecli-go-bg-bash-wake-2.1.280.jsonl", 4)[:4 if then == "written" else 3]
    saved, spans, err = through_an_outage(log, state, runs[0] + runs[1], runs[2], "".join(runs[3:]))
    assert saved["offset"] == len(runs[0].encode())  # (the second run's session is open)
    assert b"read again from there once the collector takes spans again" in err, err
    assert b"again from the last point whose spans were all exported" in err, err
    assert saved_offset(state)["read_to"] == log.stat().st_size
    with HttpReceiver() as whole:
        replay_into(whole, log)
        want = whole.received.spans()
    assert_whole_by_shape(spans, want)
    sessions: dict[str, set[int]] = {}  # (a span sent twice is the same span: its id)
    for s in spans:
        if s.name == "invoke_agent claude-code":
            sessions.setdefault(s.attributes["gen_ai.conversation.id"], set()).add(s.span_id)
    assert len(sessions) == len(runs) and all(len(ids) == 1 for ids in sessions.values()), sessions


@needs_fixtures()
def test_a_file_rotated_during_a_collector_s_outage_is_read_again_with_the_same_ids(tmp_path):
    """The collector goes away, the agent's file is rotated (renamed, a new one at the path)
    and a run written to the new one; the collector comes back as another is. The run that
    reads again from the saved position, in the rotated file, reads the new file with the
    word its ids were made with before: no span names a parent that never came, no session
    arrives under two ids, and every span of both files has arrived."""
    log, state = empty_log(tmp_path)
    runs = back_to_back("claudecli-go-bg-bash-wake-2.1.280.jsonl", 4)
    old = log.with_name(log.name + ".1")

    def rotate():
        log.rename(old)
        log.write_text(runs[2])
        time.sleep(0.5)  # (read, and its spans lost, before the collector is back)

    _, spans, err = through_an_outage(log, state, runs[0] + runs[1], rotate, runs[3])
    assert b"again from the last point whose spans were all exported" in err, err
    with HttpReceiver() as whole:
        for path in (old, log):
            replay_into(whole, path)
        want = whole.received.spans()
    assert_whole_by_shape(spans, want)
    sessions: dict[str, set[int]] = {}
    for s in spans:
        if s.name == "invoke_agent claude-code":
            sessions.setdefault(s.attributes["gen_ai.conversation.id"], set()).add(s.span_id)
    assert len(sessions) == 4 and all(len(ids) == 1 for ids in sessions.values()), sessions


def test_a_secret_found_before_a_lost_export_stays_hidden_in_what_is_read_again(tmp_path):
    """Session A's command shows a password; B's ``init`` ends A, and the position is saved at
    B. The collector goes away while C is read, and is back as D fails, its error text (which
    is exported) saying the password bare. The run that reads again from B after the outage
    never read A, and hides the password all the same: a secret found once stays hidden for
    the process's life."""
    secret = "Zq8vK2mP9xL4wR"
    a = one_call_session("sess-a", "Bash", {"command": f"export DB_PASSWORD={secret} && ./migrate"},
                         "connection refused", {"subtype": "success", "is_error": True, "result": "could not connect"})
    b, c = (one_call_session(f"sess-{x}", "Bash", {"command": "ls"}, "app\n",
                             {"subtype": "success", "is_error": False, "result": "done"}) for x in "bc")
    d = one_call_session("sess-d", "Bash", {"command": "./migrate"}, "refused",
                         {"subtype": "success", "is_error": True, "result": f"login failed for {secret} at db01"})
    log, state = empty_log(tmp_path)
    saved, spans, err = through_an_outage(log, state, (a + b).decode(), c.decode(), d.decode())
    assert saved["offset"] == len(a)  # (A ended: not read again)
    assert b"again from the last point whose spans were all exported" in err, err
    said = [s.status_message for s in spans if s.name == "invoke_agent claude-code" and "db01" in s.status_message]
    assert said and set(said) == {"login failed for [REDACTED:secret] at db01"}
    assert secret not in json.dumps([(s.name, s.attributes, s.status_message) for s in spans], default=str)


@needs_fixtures()
def test_a_workflow_left_to_the_next_start_is_exported_when_it_ends_while_read_again(tmp_path):
    """Stopped in a workflow's grace window (5 s), the next start with ``--grace-period 0`` reads
    the stretch again: the workflow ends while it is being read again (3 MB of other lines
    follow it), and it is exported — the last run held it, it did not export it."""
    lines = recording_lines("workflow-probe-2.1.206.jsonl")
    pad = "".join('{"type":"keep_alive","pad":"%s"}\n' % ("x" * 1000) for _ in range(3000))
    log, state = tmp_path / "run.jsonl", tmp_path / "state"
    log.write_text("".join(lines[:39]) + pad + "".join(lines[39:45]))
    task = next(json.loads(l)["task_id"] for l in lines if '"task_started"' in l)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", "--grace-period", "5")
        try:
            wait(lambda: (saved_offset(state) or {}).get("offset") is not None, what="a checkpoint")
            time.sleep(1.5)
        finally:
            _, err = stop(proc)
        assert b"still open at stop" in err, err
        assert saved_offset(state)["read_to"] == log.stat().st_size
        proc = start(log, state, rx)  # --grace-period 0
        try:
            wait(lambda: roots(rx).get(task), what="the workflow")
            time.sleep(0.3)
        finally:
            stop(proc)
    assert roots(rx) == {task: 1}


def test_a_start_whose_saved_file_is_gone_says_what_is_not_read(tmp_path):
    """The file the offset file names was rotated and deleted while the sidecar was away, a new
    one at the path: the start says what it cannot read (past the saved byte), then reads the
    new file from its start."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("a"))
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            wait(lambda: (saved_offset(state) or {}).get("read_to") == log.stat().st_size, what="the position")
        finally:
            stop(proc)
        offset = saved_offset(state)["offset"]
        new = log.with_name("agent.jsonl.new")  # (made first: it cannot take the old one's inode)
        new.write_text(workflow("bb"))
        log.rename(log.with_name("agent.jsonl.1"))
        log.with_name("agent.jsonl.1").unlink()
        new.rename(log)
        proc = start(log, state, rx)
        try:
            wait(lambda: roots(rx).get("wf-bb"), what="workflow bb")
        finally:
            err = stop(proc)[1]
    assert (f"the file followed before is no longer at {str(log)!r} nor beside it (rotated and deleted?): "
            f"what it held past byte {offset}, if anything, is not read").encode() in err, err


def test_another_file_at_the_same_inode_is_read_from_its_start(tmp_path):
    """While the sidecar was away the file was written anew at the same inode (rewritten in
    place here; deleted and created, a filesystem may reuse the inode): its start differs from
    the one the offset file remembers, so it is read from its start, not from the old offset."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("a"))
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            wait(lambda: roots(rx).get("wf-a"), what="workflow a")
            wait(lambda: (saved_offset(state) or {}).get("read_to") == log.stat().st_size,
                 what="the position at the end")
        finally:
            stop(proc)
        ino = log.stat().st_ino
        with open(log, "r+") as fh:  # the same inode, another file's bytes
            fh.truncate(0)
            fh.write(workflow("bb") + workflow("cc"))
        assert log.stat().st_ino == ino
        proc = start(log, state, rx)
        try:
            wait(lambda: roots(rx).get("wf-cc"), what="workflow cc")
            time.sleep(0.3)
        finally:
            stop(proc)
    assert roots(rx) == {"wf-a": 1, "wf-bb": 1, "wf-cc": 1}


def test_a_state_directory_it_cannot_write_is_said_once_and_the_workflows_still_go(tmp_path):
    """A sidecar on a read-only root file system: the offset file cannot be saved. Said once
    (it was said at every poll: ~15,000 lines an hour), while every workflow is still traced."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "not-a-dir"
    state.write_text("")  # a directory cannot be made here: every save fails
    log.write_text("")
    with GrpcReceiver() as rx:
        proc = start(log, state / "state", rx, "--from-start")
        try:
            for name in ("a", "b", "c"):
                append(log, workflow(name))
                wait(lambda: f"wf-{name}" in roots(rx), what=f"workflow {name}")
            time.sleep(0.5)  # ten polls more, each of them once a failing save
        finally:
            _, err = stop(proc)
    assert roots(rx) == {"wf-a": 1, "wf-b": 1, "wf-c": 1}
    said = [l for l in err.decode().splitlines() if "cannot save follow position" in l]
    assert len(said) == 1, err
    assert said[0].endswith("a restart cannot resume from here (set --state-dir to a writable directory)")


def test_a_hangup_stops_follow_as_sigterm_does_and_the_cut_session_says_by_what(tmp_path):
    """SIGHUP (a closed terminal, a supervisor's reload) killed follow at once: no flush, 4 of
    14 spans, and the offset already past the open session. Now it stops as on SIGTERM, and
    what the stop ends says so, in place of "stream ended before result"."""
    log, state = empty_log(tmp_path)
    lines = (EXAMPLES / "claude-code-session.jsonl").read_text().splitlines(keepends=True)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, "".join(lines[:20]))  # turn 1 open, no result yet
            wait(lambda: any(s.name.startswith("chat ") for s in rx.received.spans()), what="a model call")
        finally:
            proc.send_signal(signal.SIGHUP)
            _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        spans = {s.name: s for s in rx.received.spans()}
    for name in ("invoke_agent claude-code", "turn 1"):
        assert spans[name].status_message == "interrupted by SIGHUP before result"
        name_, _, attributes = spans[name].events[-1]
        assert (name_, attributes) == ("interrupted", {"otelbridge.reason": "interrupted by SIGHUP"})


def end(proc, how: str) -> None:
    """Stop ``proc`` as a sidecar's end comes: ``SIGTERM`` (a stop) or ``SIGKILL`` (a kill)."""
    if how == "SIGKILL":
        proc.kill()
        proc.communicate(timeout=20)
    else:
        stop(proc)


def restart_with_the_rest(log, state, rx, rest: str, *extra, timeout: float = 10.0) -> bytes:
    """The agent writes ``rest`` while the sidecar is down; it starts again and reads it all
    (its position's export boundary at the file's end) within ``timeout`` s, then is stopped:
    its stderr."""
    append(log, rest)
    proc = start(log, state, rx, *extra)
    try:
        size = log.stat().st_size
        wait(lambda: saved_offset(state)["read_to"] == size, timeout, what="the rest read")
    finally:
        err = stop(proc)[1]
    return err


def stopped_and_restarted(tmp_path, lines: list[str], cut: int, until, *extra, how: str = "SIGTERM",
                          between=lambda log, state, rx: None, said: list | None = None) -> list:
    """``follow --from-start`` reads ``lines[:cut]`` as one write until ``until(spans)``, is
    stopped (``how``: SIGTERM, or killed), ``between(log, state dir, receiver)`` is called, and
    it is started again after the agent wrote the rest: the spans received (the restart's
    stderr appended to ``said``)."""
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", *extra)
        try:
            append(log, "".join(lines[:cut]))
            wait(lambda: until(rx.received.spans()), what="the spans before the stop")
        finally:
            end(proc, how)
        between(log, state, rx)
        err = restart_with_the_rest(log, state, rx, "".join(lines[cut:]), *extra)
        if said is not None:
            said.append(err)
        return rx.received.spans()


def replay_into(receiver, path) -> None:
    """``otelbridge replay`` of ``path`` to ``receiver``: the spans a follow must deliver."""
    replay = subprocess.run([sys.executable, "-m", "otelbridge", "replay", "--endpoint", receiver.endpoint,
                             "--summary", "never", str(path)],
                            env=clean_env(), cwd=ROOT, capture_output=True, timeout=60)
    assert replay.returncode == 0, replay.stderr


def assert_whole_without_orphans(spans, want) -> None:
    """Every span of ``want`` (a replay's, deterministic ids) is among ``spans``, and none of
    ``spans`` names a parent that never arrived."""
    ids = {s.span_id for s in spans}
    assert all(s.parent_span_id in ids for s in spans if s.parent_span_id)  # no orphan
    assert {(s.span_id, s.name) for s in want} <= {(s.span_id, s.name) for s in spans}  # nothing lost


def assert_whole_by_shape(spans, want) -> None:
    """As :func:`assert_whole_without_orphans` where a stop came: the session that goes on
    after it, and its spans, have ids of their own, so every (name, parent's name) of ``want``
    is among ``spans``'."""
    ids = {s.span_id for s in spans}
    assert all(s.parent_span_id in ids for s in spans if s.parent_span_id)  # no orphan
    assert set(tree_names(want)) <= set(tree_names(spans))


def tree_names(spans) -> list[tuple[str, str]]:
    """(span name, its parent's name or "") for every span, sorted: the shape of the traces."""
    by_id = {s.span_id: s for s in spans}
    return sorted((s.name, by_id[s.parent_span_id].name if s.parent_span_id in by_id else "")
                  for s in spans)


@needs_fixtures()
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_restart_mid_turn_reads_the_turn_again_from_its_first_line(tmp_path, how):
    """A sidecar stopped (or killed) mid-turn, the agent writing on: the next start reads again
    from before the open turn (the position waits while a turn is open), so the turn's rest is
    traced under its own session, turn, tool call and sub-agent — nothing lost, no span whose
    parent never arrives. The deterministic ids make the spans sent twice after a kill the same
    spans (after a stop, the session going on has spans of its own)."""
    path = FIXTURES / "claude-code" / "idea-planner-explore-subagent-2.1.224.jsonl"
    lines = path.read_text().splitlines(keepends=True)  # the Agent's sub-agent runs lines 3–9
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx, HttpReceiver() as ref:
        replay_into(ref, path)
        proc = start(log, state, rx, "--from-start", "--deterministic-ids")
        try:
            append(log, "".join(lines[:6]))  # mid-turn: the sub-agent's Bash call ended, itself open
            wait(lambda: (saved_offset(state) or {}).get("offset") == 0 and rx.received.spans(),
                 what="the spans of the calls that ended")
        finally:
            end(proc, how)
        assert saved_offset(state)["offset"] == 0  # the turn opened at the first line
        append(log, "".join(lines[6:]))
        proc = start(log, state, rx, "--deterministic-ids")
        try:
            wait(lambda: any(s.name == "turn 1" and not s.events for s in rx.received.spans()),
                 what="the turn, ended by its result")
        finally:
            stop(proc)
        spans, want = rx.received.spans(), ref.received.spans()
    (assert_whole_without_orphans if how == "SIGKILL" else assert_whole_by_shape)(spans, want)
    assert set(tree_names(spans)) == set(tree_names(want))  # no other span: no "invoke_agent subagent"


@needs_fixtures()
def test_a_file_rotated_while_stopped_is_read_to_its_end_first(tmp_path):
    """Stopped, the agent writes on, its log is rotated (renamed in the same directory) and a
    new file begun: the next start reads the rest of the old file from the saved position
    (found by its inode), then the new file: no session is lost."""
    claude = FIXTURES / "claude-code"
    first = (claude / "claudecli-go-bg-bash-wake-2.1.280.jsonl").read_text()
    while_down = (claude / "subagent-general-purpose.jsonl").read_text()
    new_file = (claude / "claudecli-go-agent-subagent-2.1.87.jsonl").read_text()
    sid = {name: json.loads(text.splitlines()[0])["session_id"]
           for name, text in (("first", first), ("down", while_down), ("new", new_file))}
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, first)
            wait(lambda: (saved_offset(state) or {}).get("read_to") == len(first.encode()),
                 what="the first session read and exported")
        finally:
            stop(proc)
        append(log, while_down)
        log.rename(tmp_path / "agent.jsonl.1")
        log.write_text(new_file)
        proc = start(log, state, rx)
        try:
            wait(lambda: {s.attributes.get("gen_ai.conversation.id") for s in rx.received.spans()
                          if s.name == "turn 1"} >= {sid["down"], sid["new"]}, what="both sessions' turns")
        finally:
            _, err = stop(proc)
        spans = rx.received.spans()
    assert b"agent.jsonl.1' holds the rest of the file followed before" in err, err
    down = [s for s in spans if s.attributes.get("gen_ai.conversation.id") == sid["down"]]
    assert "invoke_agent general-purpose" in {s.name for s in down}
    assert len([s for s in down if s.name == "invoke_agent claude-code"]) == 1  # read once


@needs_fixtures()
def test_a_stop_while_a_line_is_being_written_leaves_it_to_the_next_start(tmp_path):
    """Stopped while the agent is half-way through a line: that line is not read as a bad one
    (the counts say 0 bad), and the next start, the line whole by then, traces it: every span
    of a replay arrives, none whose parent never arrives."""
    path = FIXTURES / "claude-code" / "custom-agent-2.1.6.jsonl"
    data = path.read_bytes()
    cut = sum(len(line) for line in data.splitlines(keepends=True)[:5]) + 300  # inside line 6
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_bytes(b"")
    with GrpcReceiver() as rx, HttpReceiver() as ref:
        replay_into(ref, path)
        proc = start(log, state, rx, "--from-start", "--deterministic-ids")
        try:
            with open(log, "ab") as fh:
                fh.write(data[:cut])
            wait(lambda: any(s.name.startswith("execute_tool") for s in rx.received.spans()),
                 what="the first tool call, ended by its result on line 5")
        finally:
            _, first_err = stop(proc)
        with open(log, "ab") as fh:
            fh.write(data[cut:])
        proc = start(log, state, rx, "--deterministic-ids")
        try:
            wait(lambda: any(s.name == "turn 1" and not s.events for s in rx.received.spans()),
                 what="the turn, ended by its result")
        finally:
            _, err = stop(proc)
        spans, want = rx.received.spans(), ref.received.spans()
    assert b" 5 lines, 5 decoded, " in first_err and b" 0 bad, " in first_err, first_err
    assert b" 0 bad, " in err, err
    assert_whole_by_shape(spans, want)


@needs_fixtures()
@pytest.mark.parametrize("cut,how", [(43, "SIGTERM"), (50, "SIGKILL"), (40, "SIGKILL")],
                         ids=["mid-turn-after-the-workflow-SIGTERM", "after-the-last-result-SIGKILL",
                              "between-turns-SIGKILL"])
def test_a_restart_exports_each_workflow_once_and_the_session_with_its_turns(tmp_path, cut, how):
    """The session stays open across turns: the position keeps its first line while it is
    (reading up to the checkpoint again without exporting), so that a sidecar killed after a
    turn still sends the session span its turns hang from, and numbers the next turn 2; a
    workflow exported before a stop is not exported again when it ends past what was read."""
    lines = recording_lines("workflow-probe-2.1.206.jsonl")
    task = next(json.loads(l)["task_id"] for l in lines if '"task_started"' in l)
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx, HttpReceiver() as ref:
        replay_into(ref, FIXTURES / "claude-code" / "workflow-probe-2.1.206.jsonl")
        proc = start(log, state, rx, "--from-start", "--deterministic-ids")
        try:
            append(log, "".join(lines[:cut]))
            wait(lambda: roots(rx).get(task), what="the workflow")
            if how == "SIGKILL":  # the turns that ended are exported and the position saved
                size = log.stat().st_size
                wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="a checkpoint")
                # where the session began: its first line (the two before are another tool's)
                assert saved_offset(state)["offset"] == len("".join(lines[:2]).encode())
                assert ['"session_id"' in line for line in lines[:3]] == [False, False, True]
        finally:
            end(proc, how)
        restart_with_the_rest(log, state, rx, "".join(lines[cut:]), "--deterministic-ids")
        spans, want = rx.received.spans(), ref.received.spans()
    assert roots(rx) == {task: 1}
    assert_whole_without_orphans(spans, want)
    assert {s.name for s in spans if s.name.startswith("turn ")} == {"turn 1", "turn 2"}


@needs_fixtures()
@pytest.mark.parametrize("ids", [(), ("--deterministic-ids",)], ids=["random-ids", "deterministic-ids"])
def test_a_session_that_goes_on_after_a_stop_numbers_its_turns_on_in_its_trace(tmp_path, ids):
    """A sidecar stopped between two turns (a rolling restart) ends the session it follows
    (exported with its first turn); the agent writes on. The next start's session is a span
    of its own in the same trace, linked to the ended one, and its turn is ``turn 2`` (it was a
    second ``turn 1`` in a trace of its own, or, with deterministic ids, the first turn's ids)."""
    lines = recording_lines("workflow-probe-2.1.206.jsonl")
    sid = next(json.loads(l)["session_id"] for l in lines if "\"session_id\"" in l)
    # turn 1 ended (its result), the workflow too: the stop comes after a quiet point
    spans = stopped_and_restarted(tmp_path, lines, 40, lambda spans: any(
        s.name == "turn 1" for s in spans), *ids)
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: s.start_ns)
    assert [t.name for t in turns] == ["turn 1", "turn 2"]
    first, then = sorted((s for s in spans if s.name == "invoke_agent claude-code"
                          and s.attributes.get("gen_ai.conversation.id") == sid), key=lambda s: s.start_ns)
    assert [t.parent_span_id for t in turns] == [first.span_id, then.span_id]
    assert first.trace_id == then.trace_id == turns[0].trace_id == turns[1].trace_id
    assert first.span_id != then.span_id
    assert then.links == [(first.trace_id, first.span_id)]
    assert (first.attributes["session.turns"], then.attributes["session.turns"]) == (1, 2)
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans)  # no span sent twice
    # turn 1's cost is its result's; turn 2's result gives the session's running total, less
    # the one before the stop, which the offset file kept (the span before holds that result)
    totals = [Decimal(str(json.loads(l)["total_cost_usd"])) for l in lines if '"type":"result"' in l.replace(" ", "")]
    assert [Decimal(str(t.attributes["result.total_cost_usd"])) for t in turns] == totals
    assert [Decimal(str(t.attributes["turn.cost_usd"])) for t in turns] == [totals[0], totals[1] - totals[0]]
    # (each session span's own share: their sum is what the run cost, counted once)
    assert [Decimal(str(s.attributes["session.cost_usd"])) for s in (first, then)] == [
        totals[0], totals[1] - totals[0]]


@needs_fixtures()
def test_a_session_stopped_before_its_first_result_counts_its_whole_cost_in_the_span_it_goes_on_in(tmp_path):
    """A stop in a session's first turn, before any result: the ended span reported no cost,
    so the span it goes on in counts the whole of it (``session.cost_usd``: the session spans'
    sum is what the run cost), and the turn that comes again whole costs its result's total."""
    lines = recording_lines("claudecli-go-bg-bash-wake-2.1.280.jsonl")
    first_result = next(i for i, l in enumerate(lines) if '"type":"result"' in l.replace(" ", ""))
    spans = stopped_and_restarted(tmp_path, lines, first_result - 2,
                                  lambda spans: any(s.name.startswith("execute_tool") for s in spans))
    totals = [Decimal(str(json.loads(l)["total_cost_usd"])) for l in lines if '"type":"result"' in l.replace(" ", "")]
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 2
    assert sum(Decimal(str(s.attributes.get("session.cost_usd", 0))) for s in sessions) == totals[-1]
    (then,) = [s for s in sessions if s.links]
    turns = sorted((s for s in spans if s.name.startswith("turn ") and s.parent_span_id == then.span_id),
                   key=lambda s: s.name)
    assert [Decimal(str(t.attributes["turn.cost_usd"])) for t in turns] == [totals[0], totals[1] - totals[0]]


@needs_fixtures()
def test_a_session_that_goes_on_after_a_stop_carries_its_own_turns_tokens(tmp_path):
    """A stop between a session's two turns (its background task ended, nothing open): the
    span it goes on in carries the tokens of its own turn, not the process's count so far, so
    the session spans' ``gen_ai.usage.*`` (what the collector's token metric adds up) sum to
    the process's total, each token once."""
    lines = recording_lines("claudecli-go-bg-bash-wake-2.1.280.jsonl")
    inits = [i for i, l in enumerate(lines) if '"subtype":"init"' in l.replace(" ", "")]
    spans = stopped_and_restarted(tmp_path, lines, inits[1], lambda spans: any(s.name == "turn 1" for s in spans))
    last = [json.loads(l) for l in lines if '"type":"result"' in l.replace(" ", "")][-1]["modelUsage"].values()
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 2 and sum(len(s.links) for s in sessions) == 1
    assert sum(s.attributes["gen_ai.usage.output_tokens"] for s in sessions) == sum(u["outputTokens"] for u in last)
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in sessions) == sum(
        u["inputTokens"] + u["cacheReadInputTokens"] + u["cacheCreationInputTokens"] for u in last)
    assert sum(s.attributes["gen_ai.usage.cache_read.input_tokens"] for s in sessions) == sum(
        u["cacheReadInputTokens"] for u in last)


@needs_fixtures()
def test_a_session_span_a_stop_ended_before_its_init_names_the_model_its_calls_asked_for(tmp_path):
    """Claude Code 2.1.206 prints its ``init`` only in the second turn: a stop in the first ends
    the session span before it. That span names the model its calls asked for (the
    collector's metrics filed its cost and tokens under model ``unknown``), as the span it goes
    on in does after the ``init``."""
    lines = recording_lines("workflow-probe-2.1.206.jsonl")
    init = next(i for i, l in enumerate(lines) if '"subtype":"init"' in l.replace(" ", ""))
    spans = stopped_and_restarted(tmp_path, lines, 33, lambda spans: any(s.name.startswith("chat") for s in spans))
    assert init > 33
    model = json.loads(lines[init])["model"]
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 2 and [s.attributes.get("gen_ai.request.model") for s in sessions] == [model, model]


@needs_fixtures()
def test_a_session_resumed_in_a_new_process_and_stopped_counts_each_dollar_once(tmp_path):
    """A session's run, then a new process resuming it (its first total below the last), a stop
    while that process's workflow runs (the restart reads its first turn again), then the rest
    and another run: the session's spans' ``session.cost_usd`` add up to what both processes
    spent, and the last ``result.total_cost_usd`` is that sum."""
    first, resumed, other = (recording_lines(name) for name in (
        "idea-planner-explore-subagent-2.1.224.jsonl", "workflow-probe-2.1.206.jsonl",
        "claudecli-go-basic-thinking-2.1.68.jsonl"))
    sid = next(json.loads(l)["session_id"] for l in first if '"session_id"' in l)
    theirs = next(json.loads(l)["session_id"] for l in resumed if '"session_id"' in l)
    resumed = [l.replace(theirs, sid) for l in resumed]
    results = [i for i, l in enumerate(resumed) if '"type":"result"' in l.replace(" ", "")]
    lines = first + resumed + other
    spans = stopped_and_restarted(tmp_path, lines, len(first) + results[0] + 1,
                                  lambda spans: any(s.name == "turn 2" for s in spans))

    def spent(run):
        return Decimal(str([json.loads(l) for l in run if '"type":"result"' in l.replace(" ", "")][-1]["total_cost_usd"]))

    mine = sorted((s for s in spans if s.name == "invoke_agent claude-code"
                   and s.attributes["gen_ai.conversation.id"] == sid), key=lambda s: s.attributes["session.turns"])
    assert len(mine) == 2 and any(link[1] == mine[0].span_id for link in mine[1].links)
    assert sum(Decimal(str(s.attributes["session.cost_usd"])) for s in mine) == spent(first) + spent(resumed)
    assert Decimal(str(mine[-1].attributes["result.total_cost_usd"])) == spent(first) + spent(resumed)


@needs_fixtures()
def test_a_resumed_session_another_run_ended_before_a_stop_counts_each_dollar_once(tmp_path):
    """A session's run and a new process resuming it, another session's run, all written at
    once, and a stop in the middle of that last run: the restart reads the resumed process
    again (a workflow of it was open at the stop's point), its results among them. Read again,
    they are not a new process; the session's spans' ``session.cost_usd`` add up to what both
    processes spent, and their last ``result.total_cost_usd`` is that sum."""
    first, resumed, other = (recording_lines(name) for name in (
        "idea-planner-explore-subagent-2.1.224.jsonl", "workflow-probe-2.1.206.jsonl", "task-tool-2.1.6.jsonl"))
    sid = next(json.loads(l)["session_id"] for l in first if '"session_id"' in l)
    theirs = next(json.loads(l)["session_id"] for l in resumed if '"session_id"' in l)
    lines = first + [l.replace(theirs, sid) for l in resumed] + other
    spans = stopped_and_restarted(tmp_path, lines, len(first) + len(resumed) + 30,
                                  lambda spans: any(s.name.startswith("turn ") for s in spans))

    def spent(run):
        return Decimal(str([json.loads(l) for l in run if '"type":"result"' in l.replace(" ", "")][-1]["total_cost_usd"]))

    mine = [s for s in spans if s.name == "invoke_agent claude-code" and s.attributes["gen_ai.conversation.id"] == sid]
    assert sum(Decimal(str(s.attributes.get("session.cost_usd", 0))) for s in mine) == spent(first) + spent(resumed)
    assert max(Decimal(str(s.attributes["result.total_cost_usd"])) for s in mine) == spent(first) + spent(resumed)


@needs_fixtures()
def test_a_kill_while_a_resumed_session_s_workflow_runs_leaves_no_span_without_its_parent(tmp_path):
    """Session X's run, session Y's (its ``init`` ends X's span), then X resumed, killed while a
    workflow of it runs: the restart reads from before X's first span, which takes its own ids
    again, and the span X goes on in takes the ids derived from it, as before the kill. Every
    parent and every link names a span that arrived."""
    x, y, resumed, z = (recording_lines(name) for name in (
        "idea-planner-explore-subagent-2.1.224.jsonl", "claudecli-go-basic-thinking-2.1.68.jsonl",
        "workflow-probe-2.1.206.jsonl", "claudecli-go-basic-thinking-2.1.68.jsonl"))
    sid = next(json.loads(l)["session_id"] for l in x if '"session_id"' in l)
    theirs = next(json.loads(l)["session_id"] for l in resumed if '"session_id"' in l)
    y_sid = next(json.loads(l)["session_id"] for l in y if '"session_id"' in l)
    resumed = [l.replace(theirs, sid) for l in resumed]
    z = [l.replace(y_sid, y_sid[:-6] + "zzzzzz") for l in z]
    started = next(i for i, l in enumerate(resumed) if '"task_started"' in l)
    ended = next(i for i, l in enumerate(resumed) if '"task_notification"' in l)
    cut = (started + ended) // 2  # (the workflow runs)
    lines = x + y + resumed + z
    size = len("".join(lines[:len(x) + len(y) + cut]).encode())

    def read_and_saved(spans) -> bool:  # (X's first span ended, the position at the end)
        return (any(s.name == "invoke_agent claude-code" for s in spans)
                and (saved_offset(tmp_path / "state") or {}).get("read_to") == size)

    spans = stopped_and_restarted(tmp_path, lines, len(x) + len(y) + cut, read_and_saved, how="SIGKILL")
    ids = {s.span_id for s in spans}
    assert [s.name for s in spans if s.parent_span_id and s.parent_span_id not in ids] == []
    assert [(s.name, link) for s in spans for link in s.links if link[1] not in ids] == []
    assert len([s for s in spans if s.name.startswith("invoke_workflow")]) == 1


@needs_fixtures()
def test_a_session_a_stop_cut_mid_turn_goes_on_in_its_trace(tmp_path):
    """Stopped mid-turn with no quiet point read (the lines came in one write): the restart
    reads the session again from its first line; its span is a new one in the same trace,
    linked to the ended one, and the turn the stop cut comes again whole under it as
    ``turn 2`` (the cut one, ``interrupted``, stays under the first)."""
    spans = stopped_and_restarted(tmp_path, recording_lines("workflow-probe-2.1.206.jsonl"), 43,
                                  lambda spans: any(s.name.startswith("invoke_workflow") for s in spans))
    sessions = sorted((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.end_ns)
    first, then = sessions
    by_parent = {p: sorted(s.name for s in spans if s.name.startswith("turn ") and s.parent_span_id == p)
                 for p in (first.span_id, then.span_id)}
    assert by_parent == {first.span_id: ["turn 1", "turn 2"], then.span_id: ["turn 2"]}
    assert first.trace_id == then.trace_id
    # (not the workflow the first links: exported before the stop, it is not again)
    assert then.links == [(first.trace_id, first.span_id)] and len(first.links) == 1
    (cut,) = [s for s in spans if s.name == "turn 2" and s.parent_span_id == first.span_id]
    assert [e[0] for e in cut.events] == ["interrupted"]


def test_a_caudra_session_a_stop_cut_mid_turn_goes_on_as_the_agent_its_init_named(tmp_path):
    """A Caudra session prints its ``init`` once: stopped with its second turn open, the next
    start reads on from after the first turn, past that ``init``; the span the session goes on
    in still names its agent, provider and model as the ``init`` said (the offset file keeps
    them), not a default agent's."""
    lines = (EXAMPLES / "caudra-session-turns.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, l in enumerate(lines) if '"turn_start"' in l and i > 1) + 2
    spans = stopped_and_restarted(tmp_path, lines, cut, lambda spans: any(s.name == "turn 1" for s in spans))
    with HttpReceiver() as whole:
        replay_into(whole, tmp_path / "agent.jsonl")
        (want,) = [s for s in whole.received.spans() if not s.parent_span_id]

    def said(span):
        return span.name, {k: v for k, v in span.attributes.items() if k.startswith(("gen_ai.agent", "gen_ai.provider",
                                                                                     "gen_ai.request"))}

    sessions = [s for s in spans if not s.parent_span_id]
    assert len(sessions) == 2 and [s for s in sessions if s.links]  # (the stop cut it in two)
    assert {said(s)[0] for s in sessions} == {said(want)[0]} and want.name != "invoke_agent claude-code"
    assert all(said(s) == said(want) for s in sessions)


@needs_fixtures()
def test_a_stop_while_the_clock_holds_records_resumes_after_the_runs_that_ended(tmp_path):
    """Back-to-back runs of a recording without timestamps, read with ``--clock stream``: their
    records wait for a timestamp that never comes, so no checkpoint finds the lines quiet. A
    stop hands the held records on and ends the open session: its position is the end of what
    was read (nothing was open there), so the next start reads none of it again and makes no
    second span, without children, for the session the stop ended."""
    log, state = empty_log(tmp_path)
    runs = back_to_back("claudecli-go-basic-thinking-2.1.68.jsonl", 3)
    log.write_text("".join(runs[:2]))
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", "--clock", "stream")
        ready(proc)
        stop(proc)  # (a stop reads what the file holds first: no checkpoint is saved before)
        saved = saved_offset(state)
        assert saved["offset"] == saved["read_to"] == log.stat().st_size
        append(log, runs[2])
        proc = start(log, state, rx, "--clock", "stream")
        ready(proc)
        stop(proc)
        spans = rx.received.spans()
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert len(sessions) == 3 and all(any(t.parent_span_id == s.span_id for t in spans) for s in sessions)
    assert sorted(session_ids(sessions)) == sorted(json.loads(r.partition("\n")[0])["session_id"] for r in runs)


def test_an_offset_file_of_an_earlier_version_is_read(tmp_path):
    """Offset files written before sessions carried their turn count (three ids a session):
    read, not "damaged" (which would read the file again from its start)."""
    from otelbridge.source.position import offset_file

    log, state = empty_log(tmp_path)
    append(log, TEMPLATE)
    st = log.stat()
    state.mkdir(mode=0o700)
    offset_file(state, log).write_text(json.dumps({
        "path": str(log), "dev": st.st_dev, "ino": st.st_ino, "offset": st.st_size, "read_to": st.st_size,
        "workflows": [], "sessions": [["sess-1", 1, 2]], "head": ""}))
    with GrpcReceiver() as rx:
        proc = start(log, state, rx)
        try:
            append(log, workflow("after"))
            wait(lambda: roots(rx), what="the workflow written after")
        finally:
            _, err = stop(proc)
    assert roots(rx) == {"wf-after": 1}
    assert b"cannot read the follow position" not in err, err


def test_a_stop_as_it_starts_still_reads_the_file_once(tmp_path):
    """A SIGTERM while ``follow`` starts (a kubelet stopping the sidecar of an agent that
    failed at once) is recorded, then acted on: the file is read once, its spans exported and
    the position saved, exit status 0. The signal
    is sent by the process itself after the handlers of ``otelbridge.__main__`` are set and
    before ``main`` runs (the window a real signal may fall in)."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("early"))
    with GrpcReceiver() as rx:
        code = ("import os, signal, sys; import otelbridge.__main__ as m; "
                "os.kill(os.getpid(), signal.SIGTERM); m.main(sys.argv[1:])")
        proc = subprocess.run(
            [sys.executable, "-c", code, "follow", str(log), "--state-dir", str(state), "--from-start",
             "--grace-period", "0", "--protocol", "grpc", "--endpoint", rx.endpoint, "--summary", "never"],
            capture_output=True, env=clean_env(), cwd=ROOT, timeout=30)
        assert proc.returncode == 0, proc.stderr
        wait(lambda: roots(rx).get("wf-early"), what="the workflow")
    assert saved_offset(state)["read_to"] == log.stat().st_size


@pytest.mark.parametrize("damage", ["", '"sessions": "x"', '"sessions": [[]]', '"continued": [["sid"]]',
                                    '"offset": 1e400', '"workflows": 7', '"head": "99999999999999:00"'],
                         ids=["empty", "sessions-a-string", "a-session-empty", "a-session-short",
                              "offset-infinite", "workflows-a-number", "head-too-long"])
def test_an_offset_file_it_cannot_read_is_said_and_the_file_read_from_its_start(tmp_path, damage):
    """A damaged offset file (empty: a disk that filled up; JSON of another shape: written by
    hand, another tool) is said in one line, and the file is read from its start — not from its
    end, as a first run without ``--from-start`` is, which would lose what the agent wrote while
    the sidecar was away; never a crash at every start."""
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_text(workflow("kept"))
    state.mkdir()
    from otelbridge.source.position import offset_file
    st = log.stat()
    offset_file(state, log).write_text(damage and f'{{"dev": {st.st_dev}, "ino": {st.st_ino}, "offset": 0, {damage}}}')
    with GrpcReceiver() as rx:
        proc = start(log, state, rx)
        try:
            wait(lambda: roots(rx).get("wf-kept"), what="the workflow written before")
        finally:
            _, err = stop(proc)
    said = [l for l in err.decode().splitlines() if "read from its start" in l]
    assert len(said) == 1 and ("follow position" in said[0] or "not the file the last run left" in said[0]), err
    assert "Traceback" not in err.decode() and roots(rx) == {"wf-kept": 1}


@needs_fixtures()
def test_a_kill_after_a_workflow_ended_in_one_read_with_the_next_turn_exports_it_once(tmp_path):
    """workflow-probe: the workflow's end and the next turn's ``init`` come in one read, so no
    moment with nothing open follows the workflow; the offset file still records it once its
    spans are exported, and a restart after a kill does not export it again."""
    lines = recording_lines("workflow-probe-2.1.206.jsonl")
    task = next(json.loads(l)["task_id"] for l in lines if '"task_started"' in l)
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, "".join(lines[:38]))
            time.sleep(0.3)
            append(log, "".join(lines[38:45]))  # its end, then the next turn opens
            wait(lambda: roots(rx).get(task), what="the workflow")
            wait(lambda: task in (saved_offset(state) or {}).get("workflows", ()), what="it recorded")
        finally:
            end(proc, "SIGKILL")
        restart_with_the_rest(log, state, rx, "".join(lines[45:]))
        assert roots(rx) == {task: 1}


@needs_fixtures()
def test_a_kill_once_the_position_is_saved_loses_nothing_of_a_stream_without_timestamps(tmp_path):
    """task-tool-2.1.6 has no timestamp: its records wait a second for one. No checkpoint is
    taken while they wait (they are not handed on yet), so a position saved past them means
    they are exported: killed then, the restart loses none of them."""
    path = FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl"
    log, state = tmp_path / "agent.jsonl", tmp_path / "state"
    log.write_bytes(path.read_bytes())
    size = log.stat().st_size
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="the position")
        finally:
            end(proc, "SIGKILL")
        ended = {s.name for s in rx.received.spans()}
        proc = start(log, state, rx)
        try:
            time.sleep(0.5)  # (the file read again; the session goes at the stop)
        finally:
            stop(proc)
        names = [s.name for s in rx.received.spans()]
    assert "turn 1" in ended  # exported before the position was saved
    assert names.count("invoke_agent claude-code") == 1 and names.count("turn 1") == 1


@needs_fixtures()
def test_after_a_stop_a_background_task_comes_again_with_its_tool_call(tmp_path):
    """bg-bash-wake stopped while its background Bash task runs: the restart reads the turn
    again without exporting what had ended — the task's tool call among it. With random ids
    (the default) the task, ended when it really ends, is under the session's new span: its
    tool call comes again with it, so no span names a parent that never arrived."""
    spans = stopped_and_restarted(tmp_path, recording_lines("claudecli-go-bg-bash-wake-2.1.280.jsonl"), 10,
                                  lambda spans: any(s.name == "turn 1" for s in spans))
    ids = {(s.trace_id, s.span_id) for s in spans}
    assert [s.name for s in spans if s.parent_span_id and (s.trace_id, s.parent_span_id) not in ids] == []
    tasks = [s for s in spans if s.name == "task local_bash"]
    assert len(tasks) == 2  # cut by the stop, then whole
    assert {next(p.name for p in spans if p.span_id == t.parent_span_id) for t in tasks} == {"execute_tool Bash"}


@needs_fixtures()
def test_after_a_kill_the_session_comes_with_the_ids_its_exported_turns_name(tmp_path):
    """Random ids (the default): killed after turn 1 was exported, the sidecar had not sent the
    session span turn 1 hangs from. The offset file keeps that session's ids, and the restart,
    reading the session again, gives its span those ids: turn 1 finds its parent."""
    lines = recording_lines("claudecli-go-bg-bash-wake-2.1.280.jsonl")
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, "".join(lines[:13]))  # turn 1 and its task ended, turn 2 not begun
            size = log.stat().st_size
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="a checkpoint")
            assert saved_offset(state)["sessions"]  # open, not exported: its ids kept
        finally:
            end(proc, "SIGKILL")
        restart_with_the_rest(log, state, rx, "".join(lines[13:]))
        spans = rx.received.spans()
    ids = {(s.trace_id, s.span_id) for s in spans}
    assert [s.name for s in spans if s.parent_span_id and (s.trace_id, s.parent_span_id) not in ids] == []
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert sorted(s.name for s in spans if s.parent_span_id == session.span_id) == ["turn 1", "turn 2"]


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_path_that_is_no_regular_file_is_said_and_follow_exits_2(tmp_path, kind):
    """A named pipe at PATH blocked follow in its open() (no writer), deaf to SIGTERM, until a
    SIGKILL: it is refused at once, as a directory is."""
    path = tmp_path / "agent.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    proc = subprocess.run([sys.executable, "-m", "otelbridge", "follow", str(path), "--state-dir",
                           str(tmp_path / "state"), "--exporter", "none", "--summary", "never"],
                          capture_output=True, env=clean_env(), cwd=ROOT, timeout=60)
    assert proc.returncode == 2, proc.stderr
    said = f"{path} is not a regular file" if kind == "fifo" else f"File '{path}' is a directory"
    assert said.encode() in proc.stderr
    assert proc.stdout == b""


@needs_fixtures()
def test_a_session_whose_turns_all_ended_is_not_interrupted_by_the_stop(tmp_path):
    """A `claude -p` run printed its result; the kubelet then stops the sidecar (its normal
    end). Nothing was cut short: the session span carries no ``interrupted`` event and is not
    an error (every such run showed one)."""
    lines = recording_lines("subagent-explore-2.1.178.jsonl")
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        read_then_stopped(log, state, rx, lines)
        spans = rx.received.spans()
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert session.events and all(e[0] != "interrupted" for e in session.events)
    assert session.status_code != 2 and not any(e[0] == "interrupted" for s in spans for e in s.events)


@needs_fixtures()
def test_a_finished_session_goes_out_when_the_next_run_writes_not_at_the_stop(tmp_path):
    """A worker runs one `claude -p` after another into the file the sidecar follows, which
    no end of input ever reaches: each session's span, with its tokens and cost, arrives when
    the next run's ``init`` comes, while follow goes on."""
    first = recording_lines("subagent-explore-2.1.178.jsonl")
    second = recording_lines("custom-agent-2.1.6.jsonl")
    sid = next(json.loads(l)["session_id"] for l in first if "\"session_id\"" in l)
    log, state = empty_log(tmp_path)

    def root(rx):
        return [s for s in rx.received.spans() if s.name == "invoke_agent claude-code"
                and s.attributes.get("gen_ai.conversation.id") == sid]

    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, "".join(first))
            wait(lambda: any(s.name == "turn 1" for s in rx.received.spans()), what="turn 1")
            assert not root(rx)  # its run may go on: no end of input says otherwise
            append(log, "".join(second[:2]))  # the next run's first lines (its init)
            (session,) = wait(lambda: root(rx), what="the first session's span")
            assert proc.poll() is None  # still following
        finally:
            stop(proc)
    result = json.loads(next(l for l in first if '"type":"result"' in l))
    assert session.attributes["result.total_cost_usd"] == result["total_cost_usd"]
    assert session.status_code != 2 and all(e[0] != "interrupted" for e in session.events)


def one_run(sid: str, n: int) -> str:
    """Run ``n`` of session ``sid``, as `claude -p` (``--resume`` after the first) writes it."""
    return "".join(json.dumps(l) + "\n" for l in [
        {"type": "system", "subtype": "init", "session_id": sid, "model": "m1", "claude_code_version": "2.1.280"},
        {"type": "assistant", "session_id": sid, "message": {"id": f"{sid}-m{n}", "model": "m1", "role": "assistant",
                                                             "content": [{"type": "text", "text": "hi"}]}},
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "duration_ms": 5,
         "result": "ok", "session_id": sid, "uuid": f"{sid}-r{n}", "total_cost_usd": 0.1 * n}])


def test_a_session_the_next_run_ended_that_writes_again_after_a_stop_goes_on_in_its_trace(tmp_path):
    """Session A ran, B's init ended it (its span went out), the sidecar was stopped (a rolling
    restart), then A writes again (a resumed session): after the restart A's new turn is
    ``turn 2`` under a span of its own in A's trace, linked to the ended one; no span comes
    twice (its ids were the ended span's again)."""
    run = one_run
    lines = (run("A", 1) + run("B", 1) + run("A", 2)).splitlines(keepends=True)
    spans = stopped_and_restarted(tmp_path, lines, 6, lambda spans: sum(
        s.name == "invoke_agent claude-code" for s in spans) == 1)
    a = sorted((s for s in spans if s.attributes.get("gen_ai.conversation.id") == "A"), key=lambda s: s.start_ns)
    first, then = [s for s in a if s.name == "invoke_agent claude-code"]
    assert first.trace_id == then.trace_id and first.span_id != then.span_id
    assert then.links == [(first.trace_id, first.span_id)]
    assert [s.name for s in a if s.name.startswith("turn ")] == ["turn 1", "turn 2"]
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans)  # no span sent twice


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_session_resumed_after_two_restarts_goes_on_in_a_span_of_its_own(tmp_path, how):
    """A and B run, the sidecar stops; C runs, it stops (or is killed) again; then A is resumed
    (`claude -p --resume`): A's new run is ``turn 2`` in a span of its own, linked to A's first,
    never A's first ids again (each restart remembers the sessions the runs before ended)."""
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        for n, (text, stop_how) in enumerate([(one_run("A", 1) + one_run("B", 1), "SIGTERM"),
                                              (one_run("C", 1), how), (one_run("A", 2), "SIGTERM")]):
            append(log, text)
            proc = start(log, state, rx, *(("--from-start",) if n == 0 else ()))
            try:
                size = log.stat().st_size
                wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="the file read")
                if stop_how == "SIGKILL":  # (C's turn out first: its session is still open)
                    wait(lambda: any(s.name == "turn 1" and s.attributes.get("gen_ai.conversation.id") == "C"
                                     for s in rx.received.spans()), what="C's turn exported")
            finally:
                end(proc, stop_how)
        spans = rx.received.spans()
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans), "a span sent twice"
    a = sorted((s for s in spans if s.attributes.get("gen_ai.conversation.id") == "A"), key=lambda s: s.start_ns)
    first, then = [s for s in a if s.name.startswith("invoke_agent")]
    assert then.links == [(first.trace_id, first.span_id)] and first.trace_id == then.trace_id
    assert [s.name for s in a if s.name.startswith("turn ")] == ["turn 1", "turn 2"]


@needs_fixtures()
def test_a_kill_mid_turn_makes_the_same_spans_again_and_none_without_its_parent(tmp_path):
    """`claude -p` is one turn, open until its result: a kill mid-turn left the next start to
    read the file from its start with new ids, and the spans exported before the kill (model
    and tool calls) hung from a turn and a sub-agent never exported: 13 spans of a second trace
    without their parents. The file's ids are derived from a word its position keeps: the
    restart makes the same spans, so every parent arrives, and what comes twice (exported
    after the last checkpoint saved) is the same span."""
    spans = stopped_and_restarted(
        tmp_path, recording_lines("task-tool-2.1.6.jsonl"), 40,
        lambda spans: sum(s.name.startswith("execute_tool ") for s in spans) >= 3, how="SIGKILL")
    ids = {(s.trace_id, s.span_id) for s in spans}
    assert [s.name for s in spans if s.parent_span_id and (s.trace_id, s.parent_span_id) not in ids] == []
    assert len({s.trace_id for s in spans}) == 1
    assert len(ids) == 49  # the recording's spans, each once or the same twice
    assert all(len({(s.name, s.parent_span_id) for s in spans if (s.trace_id, s.span_id) == i}) == 1 for i in ids)


@needs_fixtures()
def test_a_kill_mid_turn_after_a_checkpoint_sends_nothing_twice(tmp_path):
    """The position is saved mid-turn too (the lines read again make the same spans): a kill
    after it, and the restart reads the turn again from its first line without exporting up to
    there — each span arrives exactly once."""
    lines = recording_lines("task-tool-2.1.6.jsonl")
    written = len("".join(lines[:40]).encode())

    def saved_mid_turn(log, state, rx):  # the session's first line: its init (a hook's output before)
        assert '"subtype": "init"' in lines[1]
        assert saved_offset(state)["offset"] == len(lines[0].encode())

    spans = stopped_and_restarted(
        tmp_path, lines, 40, lambda spans: sum(s.name.startswith("execute_tool ") for s in spans) >= 3
        and (saved_offset(tmp_path / "state") or {}).get("read_to") == written,
        how="SIGKILL", between=saved_mid_turn)
    ids = {(s.trace_id, s.span_id) for s in spans}
    assert len(spans) == len(ids) == 49  # the recording's spans, each once
    assert [s.name for s in spans if s.parent_span_id and (s.trace_id, s.parent_span_id) not in ids] == []


@needs_fixtures()
def test_after_a_kill_the_workflow_and_its_session_link_to_spans_that_arrived(tmp_path):
    """Killed while its workflow runs: the restart made the workflow and the session with new
    trace ids, and each linked to the other's that never came. The same spans again now."""
    spans = stopped_and_restarted(tmp_path, recording_lines("claudecli-go-workflow-phased-2.1.270.jsonl"), 29,
                                  lambda spans: any(s.name.startswith("chat ") for s in spans), how="SIGKILL")
    arrived = {(s.trace_id, s.span_id) for s in spans}
    (root,) = {(s.trace_id, s.span_id, tuple(s.links)) for s in spans if s.name.startswith("invoke_workflow")}
    (session,) = {(s.trace_id, s.span_id, tuple(s.links)) for s in spans if s.name == "invoke_agent claude-code"}
    assert root[2] == (session[:2],) and session[2] == (root[:2],)  # both ways
    assert all(link in arrived for s in spans for link in s.links) and len(arrived) == len(
        {(s.trace_id, s.span_id, s.name) for s in spans})


@needs_fixtures()
def test_a_session_goes_on_after_two_stops_with_nothing_read_between(tmp_path):
    """A rolling restart twice while the agent is idle between turns: the run between the stops
    reads nothing, and it kept no word of the session the first stop ended — the second turn
    came as a second `turn 1` in a new trace."""
    def idle_run(log, state, rx):
        proc = start(log, state, rx)
        ready(proc)
        stop(proc)

    lines = recording_lines("workflow-probe-2.1.206.jsonl")
    spans = stopped_and_restarted(tmp_path, lines, 41, lambda spans: any(s.name == "turn 1" for s in spans),
                                  between=idle_run)
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: s.start_ns)
    assert [t.name for t in turns] == ["turn 1", "turn 2"]
    first, then = sorted((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.start_ns)
    assert then.trace_id == first.trace_id and then.links[0] == (first.trace_id, first.span_id)


@needs_fixtures()
@pytest.mark.parametrize("ids", [(), ("--deterministic-ids",)], ids=["random-ids", "deterministic-ids"])
def test_after_a_stop_while_a_workflow_runs_its_session_links_to_the_workflow_that_comes(tmp_path, ids):
    """Stopped while a workflow runs: the session span exported then links to the workflow,
    which the next start exports whole when it ends — under the ids that link names (it took
    new ones, and the link pointed at a span that never came)."""
    spans = stopped_and_restarted(tmp_path, recording_lines("claudecli-go-workflow-phased-2.1.270.jsonl"), 20,
                                  lambda spans: any(s.name.startswith("chat ") for s in spans), *ids)
    arrived = {(s.trace_id, s.span_id) for s in spans}
    (root,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    first = min((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.start_ns)
    assert (root.trace_id, root.span_id) in first.links
    assert all(link in arrived for s in spans for link in s.links)
    assert len(arrived) == len(spans)  # none sent twice


@needs_fixtures()
def test_a_file_truncated_while_follow_was_killed_is_new_and_said(tmp_path):
    """Killed, then the file truncated (copytruncate) and written on before the restart: it is
    read from its start as new (its lines make spans of their own), not with the ids the lines
    before the cut made — `turn 1` came again under turn 1's id."""
    said: list[bytes] = []

    def truncate(log, state, rx):
        os.truncate(log, 0)

    spans = stopped_and_restarted(tmp_path, recording_lines("claudecli-go-bg-bash-wake-2.1.280.jsonl"), 10,
                                  lambda spans: any(s.name == "turn 1" for s in spans), how="SIGKILL",
                                  between=truncate, said=said)
    by_id: dict = {}
    for s in spans:
        by_id.setdefault((s.trace_id, s.span_id), set()).add((s.name, s.parent_span_id))
    assert all(len(v) == 1 for v in by_id.values()), {k: v for k, v in by_id.items() if len(v) > 1}
    assert b"is not the file the last run left (truncated or written anew while stopped)" in said[0]


@needs_fixtures()
@pytest.mark.parametrize("ids", [(), ("--deterministic-ids",)], ids=["random-ids", "deterministic-ids"])
def test_a_session_stopped_twice_mid_turn_takes_a_span_of_its_own_each_time(tmp_path, ids):
    """Two rolling restarts in one session, a turn open at the second: the third run took the
    second's session span id (its turns counted the same) with other contents, linked to
    itself, and the spans the second stop cut came again under their ids."""
    lines = recording_lines("workflow-probe-2.1.206.jsonl")

    def second_run(log, state, rx):
        proc = start(log, state, rx, *ids)
        try:
            append(log, "".join(lines[33:38]))
            size = log.stat().st_size
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="the lines read")
        finally:
            stop(proc)

    spans = stopped_and_restarted(tmp_path, lines[:33] + lines[38:], 33,
                                  lambda spans: any(s.name == "turn 1" for s in spans), *ids, between=second_run)
    contents: dict = {}
    for s in spans:
        contents.setdefault((s.trace_id, s.span_id), set()).add((s.name, s.parent_span_id, s.status_code))
    assert {k: v for k, v in contents.items() if len(v) > 1} == {}
    assert [s.name for s in spans if s.parent_span_id and (s.trace_id, s.parent_span_id) not in contents] == []
    sessions = sorted((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.start_ns)
    assert len({s.span_id for s in sessions}) == 3 and len({s.trace_id for s in sessions}) == 1
    assert all((s.trace_id, s.span_id) not in s.links for s in spans)


@needs_fixtures()
def test_an_idle_run_between_stops_while_a_workflow_is_held_exports_no_empty_session(tmp_path):
    """Stopped while a workflow runs, then a run that reads nothing new (the agent idle through
    a rolling restart), then the rest: the idle run read the held workflow's lines again and
    exported an empty session of its own at its stop (no turn, the workflow linked to it) and
    the turn the first stop had cut, again."""
    sent = []

    def idle_run(log, state, rx):
        before = saved_offset(state)
        sent.append(len(rx.received.spans()))
        proc = start(log, state, rx)
        ready(proc)
        stop(proc)
        sent.append(len(rx.received.spans()))
        assert saved_offset(state) == before

    spans = stopped_and_restarted(tmp_path, recording_lines("claudecli-go-workflow-phased-2.1.270.jsonl"), 20,
                                  lambda spans: any(s.name.startswith("chat ") for s in spans),
                                  between=idle_run)
    sessions = sorted((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.start_ns)
    (first,) = [s for s in sessions if not any(link[1] == t.span_id for t in sessions for link in s.links)]
    (then,) = [s for s in sessions if s is not first]
    assert (first.attributes["session.turns"], then.attributes["session.turns"]) == (1, 2)
    assert (first.trace_id, first.span_id) in then.links
    assert sent[0] == sent[1] > 0
    arrived = {(s.trace_id, s.span_id) for s in spans}
    assert all(link in arrived for s in spans for link in s.links)


@needs_fixtures()
def test_a_workflow_a_stop_left_in_its_grace_window_links_to_the_session_span_exported(tmp_path):
    """The agent has finished; the sidecar stops while the workflow waits out its grace period
    (left to the next start). The restart reads no new line of the session: its workflow comes
    then, linked to the session span the stop exported, not to one that would go on."""
    lines = recording_lines("workflow-probe-2.1.206.jsonl")
    task = next(json.loads(l)["task_id"] for l in lines if '"task_started"' in l)
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", "--grace-period", "60")
        try:
            append(log, "".join(lines))
            wait(lambda: any(s.name == "turn 2" for s in rx.received.spans()), what="the session's turns")
        finally:
            err = stop(proc)[1]
        assert b"1 workflow(s) still open at stop" in err, err
        proc = start(log, state, rx)  # nothing new in the file: it reads again what the stop left
        try:
            ready(proc)
            wait(lambda: roots(rx).get(task), what="the workflow")
        finally:
            stop(proc)
        spans = rx.received.spans()
    (workflow,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    assert workflow.attributes["workflow.task_id"] == task
    (link,) = workflow.links  # its session's span
    (session,) = [s for s in spans if (s.trace_id, s.span_id) == link]
    assert session.name == "invoke_agent claude-code"


@needs_fixtures()
def test_a_restart_that_reads_only_what_the_run_before_traced_says_no_stream_is_missing(tmp_path):
    """Stopped mid-turn, started again with nothing new in the file: it reads the open turn's
    lines again and exports none of them (the stop did); that is no file without a stream,
    which the line for an input that holds none would say."""
    lines = recording_lines("subagent-explore-2.1.178.jsonl")
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, "".join(lines[:12]))
            size = log.stat().st_size
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="the lines read")
        finally:
            stop(proc)
        cut = len(rx.received.spans())
        assert cut > 0  # the session and its turn, cut by the stop
        proc = start(log, state, rx)
        ready(proc)
        err = stop(proc)[1].decode()  # (a stop reads the file to its end)
    assert "spans 0 built" in err and " 12 lines, " in err, err
    assert "nothing was traced" not in err and "no session" not in err, err
    assert len(rx.received.spans()) == cut


def backlog(log, runs: int = 120) -> list[str]:
    """Write ``runs`` runs of a tool-heavy Claude Code session to ``log`` (210 KB each), each
    its own session id: their ids."""
    text = "".join(recording_lines("task-tool-2.1.6.jsonl"))
    sid = json.loads(text.partition("\n")[0])["session_id"]
    sids = [f"{sid[:-6]}{i:06d}" for i in range(runs)]
    log.write_text("".join(text.replace(sid, each) for each in sids))
    return sids


@needs_fixtures()
def test_a_stop_behind_a_backlog_reads_for_its_budget_and_the_next_start_reads_the_rest(tmp_path):
    """The kubelet stops a sidecar still reading a ``--from-start`` backlog (120 runs of a
    tool-heavy Claude Code session, 25 MB: seconds of decoding). It reads on for half of
    ``--flush-timeout``, at least 1 s, not to the file's end, which could outlast the pod's
    grace period and end in a kill; it says what it left, and the next start traces the rest:
    every run's session span arrives, none twice."""
    log, state = empty_log(tmp_path)
    sids = backlog(log)
    size = log.stat().st_size
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", "--flush-timeout", "2")
        ready(proc)
        err = stop(proc)[1].decode()
        left = int(re.search(r"stopped with (\d+) bytes of '[^']+' not read yet: the next start "
                             r"reads them", err).group(1))
        read_to = saved_offset(state)["read_to"]
        assert 0 < read_to <= size - left < size
        restart_with_the_rest(log, state, rx, "", timeout=120)
        spans = rx.received.spans()
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    assert {s.attributes["gen_ai.conversation.id"] for s in sessions} == set(sids)
    assert len({s.span_id for s in spans}) == len(spans)


@needs_fixtures()
def test_a_backlog_being_read_saves_its_position_before_its_end(tmp_path):
    """A sidecar killed while it reads a ``--from-start`` backlog (25 MB, seconds of decoding)
    has saved where it got to, each second: the next start does not read it all again."""
    log, state = empty_log(tmp_path)
    backlog(log)
    size = log.stat().st_size
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            saved = wait(lambda: (saved_offset(state) or {}).get("read_to"), 60, what="a position saved")
        finally:
            end(proc, "SIGKILL")
    assert 0 < saved < size


@needs_fixtures()
@pytest.mark.parametrize("when", ["rotated while stopped", "renamed at the stop"])
def test_a_stop_behind_a_backlog_in_a_rotated_file_leaves_its_rest_to_the_next_start(tmp_path, when):
    """The backlog lies in a file rotated away (``mv agent.jsonl agent.jsonl.1``, a new file at
    the path): while stopped, or as the stop comes. The stop's reading ends with its budget
    there, before the new file; it names the rotated file as the one left; the next start
    reads its rest, then the new file: every session, none twice but the one the stop cut
    (its span, and one that goes on from it), no span id twice."""
    log, state = empty_log(tmp_path)
    rotated = log.with_name(log.name + ".1")
    with GrpcReceiver() as rx:
        if when == "rotated while stopped":
            proc = start(log, state, rx, "--from-start", "--flush-timeout", "2")
            ready(proc)
            stop(proc)
            sids = backlog(log)
            log.rename(rotated)
            later = backlog(log, 1)  # (its id: the first of the backlog's, a session of its own file)
            proc = start(log, state, rx, "--flush-timeout", "2")
        else:
            sids = backlog(log)
            later = []
            proc = start(log, state, rx, "--from-start", "--flush-timeout", "2")
        ready(proc)
        if when == "renamed at the stop":  # (once it reads: its position saved, each second)
            wait(lambda: (saved_offset(state) or {}).get("read_to"), 60, what="reading begun")
            log.rename(rotated)
        err = stop(proc)[1].decode()
        assert "not read yet: the next start reads them" in err and repr(str(rotated)) in err, err
        proc = start(log, state, rx, "--flush-timeout", "2")
        try:
            wait(lambda: (saved_offset(state) or {}).get("ino") == (log.stat().st_ino if log.exists() else -1)
                 or (not later and not (saved_offset(state) or {}).get("stopped", True)
                     and saved_offset(state)["read_to"] == rotated.stat().st_size), 120, what="the rest read")
            time.sleep(1)
        finally:
            stop(proc)
        spans = rx.received.spans()
    sessions = [s for s in spans if s.name == "invoke_agent claude-code"]
    ended = {s.span_id: s for s in sessions}
    # (one goes on from the span the stop ended, linked to it, in its trace)
    went_on = [s for s in sessions if s.links]
    assert len(went_on) <= 1 and all(ended[s.links[0][1]].attributes["gen_ai.conversation.id"]
                                     == s.attributes["gen_ai.conversation.id"] for s in went_on)
    ids = [s.attributes["gen_ai.conversation.id"] for s in sessions if not s.links]
    assert sorted(ids) == sorted(sids + later)
    assert len({s.span_id for s in spans}) == len(spans)


def small_runs(first: int, n: int) -> list[str]:
    """``n`` small `claude -p` runs one after another (init, a Bash call, its result, an answer,
    the result), sessions ``s-{first}`` …: their lines."""
    lines = []
    for i in range(first, first + n):
        sid = f"s-{i:08d}"
        lines += [json.dumps(d) + "\n" for d in (
            {"type": "system", "subtype": "init", "session_id": sid, "model": "claude-sonnet-4-5", "cwd": "/x"},
            {"type": "assistant", "session_id": sid, "parent_tool_use_id": None, "message": {
                "id": f"m1-{i}", "model": "claude-sonnet-4-5", "role": "assistant", "usage": {"input_tokens": 10, "output_tokens": 5},
                "content": [{"type": "tool_use", "id": f"tu-{i}", "name": "Bash", "input": {"command": "true"}}]}},
            {"type": "user", "session_id": sid, "parent_tool_use_id": None, "message": {
                "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu-{i}", "content": "ok"}]}},
            {"type": "assistant", "session_id": sid, "parent_tool_use_id": None, "message": {
                "id": f"m2-{i}", "model": "claude-sonnet-4-5", "role": "assistant", "usage": {"input_tokens": 20, "output_tokens": 7},
                "content": [{"type": "text", "text": "done"}]}},
            {"type": "result", "subtype": "success", "is_error": False, "session_id": sid, "num_turns": 2,
             "duration_ms": 300, "usage": {"input_tokens": 30, "output_tokens": 12}, "result": "done"})]
    return lines


def test_a_session_a_stop_cut_goes_on_in_a_span_of_its_own_after_a_thousand_runs(tmp_path):
    """1,200 runs went by (each ended at the next run's ``init``, a session always open), then a
    stop cut the next one mid-turn: the next start goes on with it in a span of its own, linked
    to the one the stop ended; none of its spans comes twice (the sessions the stop ended are
    kept first among those remembered)."""
    log, state = empty_log(tmp_path)
    cut = small_runs(1200, 1)
    with GrpcReceiver() as rx:
        log.write_text("".join(small_runs(0, 1200) + cut[:2]))
        proc = start(log, state, rx, "--from-start")
        try:
            size = log.stat().st_size
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, 120, what="the runs read")
        finally:
            stop(proc)
        err = restart_with_the_rest(log, state, rx, "".join(cut[2:]), timeout=120)
        spans = rx.received.spans()
    assert len({s.span_id for s in spans}) == len(spans), err
    sessions = [s for s in spans if s.name.startswith("invoke_agent ")
                and s.attributes["gen_ai.conversation.id"] == "s-00001200"]
    assert len(sessions) == 2 and sessions[1].links == [(sessions[0].trace_id, sessions[0].span_id)]


def test_a_kill_soon_after_a_rotation_loses_none_of_the_old_file(tmp_path):
    """The file rotates, the sidecar goes on to the new one, and is killed before the old
    file's spans left (a 3 s batch delay): the position was not moved to the new file yet, so
    the next start reads the old file again (found by its inode) and its sessions arrive."""
    log, state = empty_log(tmp_path)
    rotated = log.with_name(log.name + ".1")
    env = clean_env(OTEL_BSP_SCHEDULE_DELAY="3000")
    with GrpcReceiver() as rx:
        argv = [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state),
                "--poll-interval", "0.05", "--grace-period", "0", "--protocol", "grpc",
                "--endpoint", rx.endpoint, "--summary", "never"]
        proc = subprocess.Popen([*argv, "--from-start"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, cwd=ROOT)
        try:
            ready(proc)
            append(log, "".join(small_runs(0, 50)))
            time.sleep(1)
            log.rename(rotated)
            log.write_text("".join(small_runs(50, 10)))
            time.sleep(1)  # (it has gone on to the new file: it polls every 0.05 s)
        finally:
            end(proc, "SIGKILL")
        assert rx.received.spans() == []  # (none of the old file's had left)
        restart_with_the_rest(log, state, rx, "", timeout=30)
        spans = rx.received.spans()
    sessions = {s.attributes["gen_ai.conversation.id"] for s in spans if s.name.startswith("invoke_agent ")}
    assert sessions == {f"s-{i:08d}" for i in range(60)}
    assert len({s.span_id for s in spans}) == len(spans)


def test_a_backlog_waits_for_room_in_the_export_queue_and_loses_no_span(tmp_path):
    """``--from-start`` on 1,200 runs written before it starts: read as fast as a file is, its
    6,000 spans come faster than a collector takes them. It waits for room in the export queue
    (2,048 spans), as ``replay`` does, and drops none."""
    log, state = empty_log(tmp_path)
    log.write_text("".join(small_runs(0, 1200)))
    size = log.stat().st_size
    with GrpcReceiver() as rx:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state),
             "--poll-interval", "0.05", "--grace-period", "0", "--protocol", "grpc", "--endpoint", rx.endpoint,
             "--summary", "never", "--from-start"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=clean_env(OTEL_BSP_SCHEDULE_DELAY="50"), cwd=ROOT)
        try:
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, 120, what="the runs read")
        finally:
            err = stop(proc)[1].decode()
        spans = rx.received.spans()
    assert "queue is full" not in err and len(spans) == 6000, err
    assert "spans 6000 built, 6000 exported, 0 dropped" in err


def back_to_back(name: str, runs: int) -> list[str]:
    """``runs`` copies of a Claude Code recording as a worker writes them one after another:
    each its own session and task ids, each an hour after the one before (its ISO and epoch-ms
    times moved): the copies' texts."""
    text = "".join(recording_lines(name))
    sid = next(json.loads(l)["session_id"] for l in text.splitlines() if '"session_id"' in l)
    copies = []
    for i in range(runs):
        copy = text.replace(sid, f"{sid[:-6]}{i:06d}")
        copy = re.sub(r'"task_id": ?"([^"]+)"', lambda m: m.group(0).replace(m.group(1), f"{m.group(1)}-{i}"), copy)
        copy = re.sub(r'T(\d\d):(\d\d:\d\d)', lambda m: f"T{int(m.group(1)) + i:02d}:{m.group(2)}", copy)
        copy = re.sub(r'\b1[78]\d{11}\b', lambda m: str(int(m.group(0)) + i * 3_600_000), copy)
        copies.append(copy)
    return copies


@needs_fixtures()
@pytest.mark.parametrize("name", ["task-tool-2.1.6.jsonl", "claudecli-go-bg-bash-wake-2.1.280.jsonl"])
def test_after_a_kill_between_back_to_back_runs_the_restart_reads_from_the_open_session_only(tmp_path, name):
    """A worker writes one `claude -p` run after another (a real recording, each run its own
    session): one session is always open, each ended by the next run's ``init``. Killed once
    all is read and exported, the sidecar's position is the open session's first line (its
    ``init``: what comes before it makes no span), not the file's start: the restart reads
    only that run again. Every session arrives once, no span twice, none without its parent,
    each as a replay of the file makes it; dated as it (a recording with timestamps: the
    session read again begins at the stream's time where it began, though its ``init`` has
    none)."""
    log, state = empty_log(tmp_path)
    runs = back_to_back(name, 7)
    log.write_text("".join(runs[:6]))
    size = log.stat().st_size
    last = size - len(runs[5].encode())
    init = log.read_bytes().rindex(b"\n", 0, log.read_bytes().index(b'"init"', last)) + 1
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, 60, what="the runs read")
            saved = saved_offset(state)
        finally:
            end(proc, "SIGKILL")
        assert (saved["offset"], saved["read_to"]) == (init, size)  # the sixth run's init
        assert [ref[0] for ref in saved["sessions"]] == [json.loads(runs[5].partition("\n")[0])["session_id"]]
        restart_with_the_rest(log, state, rx, runs[6], timeout=60)
        spans = rx.received.spans()
        assert saved_offset(state)["offset"] == log.stat().st_size  # (the stop's: nothing open)
        with HttpReceiver() as whole:
            replay_into(whole, log)
            want = whole.received.spans()
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans) and all(s.parent_span_id in ids for s in spans if s.parent_span_id)
    assert tree_names(spans) == tree_names(want)  # the file's spans, each once
    assert len([s for s in spans if s.name == "invoke_agent claude-code"]) == 7
    if "timestamp" in runs[0]:
        def times(spans):
            return sorted((s.attributes.get("gen_ai.conversation.id", ""), s.name, s.start_ns, s.end_ns)
                          for s in spans)

        assert times(spans) == times(want)


@needs_fixtures()
def test_a_stop_mid_turn_after_runs_read_in_one_chunk_reads_again_only_the_open_turn(tmp_path):
    """Six back-to-back runs of a real recording and most of a seventh, read as one backlog (in
    one chunk: no checkpoint falls between two runs), then a stop with the seventh's turn open:
    the position is the last line start before which nothing was open — the seventh run's
    ``init``, where its turn opens, after the SessionStart hook's output — not the last
    checkpoint that found nothing open (the file's start: the stream has no timestamps, and
    its records wait for the clock as it is read). The restart reads again only the open turn;
    every session arrives, the cut one going on in a span of its own, none of the others twice."""
    log, state = empty_log(tmp_path)
    runs = back_to_back("task-tool-2.1.6.jsonl", 8)
    seventh = runs[6].splitlines(keepends=True)
    init = next(i for i, line in enumerate(seventh) if '"init"' in line)
    turn_opens = len(("".join(runs[:6]) + "".join(seventh[:init])).encode())
    with GrpcReceiver() as rx:
        read_then_stopped(log, state, rx, [*runs[:6], *seventh[:30]])
        saved = saved_offset(state)
        assert (saved["offset"], saved["read_to"]) == (turn_opens, log.stat().st_size)
        err = restart_with_the_rest(log, state, rx, "".join(seventh[30:]) + runs[7], timeout=60)
        spans = rx.received.spans()
        with HttpReceiver() as whole:
            replay_into(whole, log)
            want = whole.received.spans()
    assert b"Traceback" not in err
    assert_whole_by_shape(spans, want)
    def sessions(spans):
        return sorted(s.attributes["gen_ai.conversation.id"] for s in spans if s.name == "invoke_agent claude-code")

    cut = json.loads(runs[6].partition("\n")[0])["session_id"]
    assert len(sessions(want)) == 8
    assert sessions(spans) == sorted([*sessions(want), cut])  # the cut one in two spans
    assert len({s.span_id for s in spans}) == len(spans)


def test_a_stop_behind_a_backlog_and_a_slow_collector_ends_in_its_budget(tmp_path):
    """A sidecar catching up a backlog (3,000 runs) while its collector answers each export of
    64 spans after 0.9 s: it waits for room in the export queue, export after export. A
    SIGTERM in such a wait ends it all the same within its budget — half of
    ``--flush-timeout`` to read, then the flush — not after the wait for the chunk being
    decoded (a minute: the kubelet's SIGKILL), and it says what it left to the next start."""
    log, state = empty_log(tmp_path)
    log.write_text("".join(small_runs(0, 3000)))
    with GrpcReceiver(delay=0.9) as rx:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state), "--from-start",
             "--protocol", "grpc", "--endpoint", rx.endpoint, "--flush-timeout", "2", "--summary", "never"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(OTEL_BSP_MAX_EXPORT_BATCH_SIZE="64"),
            cwd=ROOT)
        ready(proc)
        time.sleep(1.5)  # (its first thousand spans wait in the queue: it waits for room)
        proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - stopped
    assert proc.returncode == 0, err
    assert took < 8, (took, err)  # 1 s of reading, 2 s of flush, and the process's own end
    assert re.search(rb"stopped with \d+ bytes of .* not read yet", err), err


def copytruncate(log) -> None:
    """logrotate's ``copytruncate``: the file copied to ``<name>.1``, then truncated."""
    shutil.copy(log, log.with_name(log.name + ".1"))
    os.truncate(log, 0)


def session_ids(spans) -> list[str]:
    return sorted(s.attributes["gen_ai.conversation.id"] for s in spans if s.name.startswith("invoke_agent "))


def read_then_stopped(log, state, rx, lines: list[str]) -> None:
    """``follow --from-start`` reads ``lines`` as the agent writes them, exports them, and is
    stopped."""
    proc = start(log, state, rx, "--from-start")
    try:
        append(log, "".join(lines))
        size = log.stat().st_size
        wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="the lines read")
    finally:
        stop(proc)


def test_a_copytruncate_while_stopped_reads_the_rest_from_the_copy_first(tmp_path):
    """The sidecar is stopped; the agent writes 10 more runs and begins another; logrotate's
    ``copytruncate`` copies the file to ``agent.jsonl.1`` and truncates it; the agent ends that
    run and writes 9 more. The next start reads the copy's rest (found by its first bytes),
    then the file, as one stream: all 30 runs arrive, none twice, the one the cut went through
    whole, in one session span with its result."""
    log, state = empty_log(tmp_path)
    cut = small_runs(20, 1)
    with GrpcReceiver() as rx:
        read_then_stopped(log, state, rx, small_runs(0, 10))
        append(log, "".join(small_runs(10, 10) + cut[:2]))
        copytruncate(log)
        err = restart_with_the_rest(log, state, rx, "".join(cut[2:] + small_runs(21, 9)))
        spans = rx.received.spans()
    assert session_ids(spans) == [f"s-{i:08d}" for i in range(30)], err
    (through,) = [s for s in spans if s.name.startswith("invoke_agent ")
                  and s.attributes["gen_ai.conversation.id"] == "s-00000020"]
    assert through.status_code != 2 and through.attributes["session.turns"] == 1
    assert len({s.span_id for s in spans}) == len(spans)
    assert b"agent.jsonl.1' holds the rest of the file followed before" in err, err


@contextlib.contextmanager
def right_after_a_poll(log, state, rx, lines: list[str]):
    """``follow --from-start``, polling every 2 s, reads ``lines`` as the agent writes them; the
    block runs right after that poll (the next is 2 s away); then it is stopped."""
    proc = start(log, state, rx, "--from-start", "--poll-interval", "2")
    try:
        append(log, "".join(lines))
        size = log.stat().st_size
        wait(lambda: (saved_offset(state) or {}).get("read_to") == size, what="the first lines read")
        yield proc
    finally:
        stop(proc)


def test_a_copytruncate_between_two_polls_reads_what_was_not_read_yet_from_the_copy(tmp_path):
    """Within one poll (here 2 s) the agent writes 10 runs, logrotate copies and truncates the
    file, and the agent writes 10 more: the 10 written before the cut, never read from the
    file, are read from the copy, then the file from its start. All 30 arrive, none twice."""
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        with right_after_a_poll(log, state, rx, small_runs(0, 10)):
            append(log, "".join(small_runs(10, 10)))
            copytruncate(log)
            append(log, "".join(small_runs(20, 10)))
            wait(lambda: len(session_ids(rx.received.spans())) >= 29, what="the runs after the cut")
        spans = rx.received.spans()
    assert session_ids(spans) == [f"s-{i:08d}" for i in range(30)]
    assert len({s.span_id for s in spans}) == len(spans)


def test_two_rotations_while_stopped_read_every_file_rotated_oldest_first(tmp_path):
    """While the sidecar is stopped the file is rotated twice (``agent.jsonl`` → ``.1`` → ``.2``,
    logrotate's ``rotate 5``): the next start reads the rest of the file it followed (now
    ``.2``), then ``.1``, written after it, then the new file. All 25 runs arrive, none twice;
    files beside them not named as logrotate names its rotations (a backup, a summary) are no
    rotations."""
    log, state = empty_log(tmp_path)
    one, two = log.with_name(log.name + ".1"), log.with_name(log.name + ".2")
    with GrpcReceiver() as rx:
        read_then_stopped(log, state, rx, small_runs(0, 10))
        append(log, "".join(small_runs(10, 5)))
        time.sleep(0.05)  # (each file last written at a time of its own)
        log.rename(one)
        log.write_text("".join(small_runs(15, 5)))
        time.sleep(0.05)
        one.rename(two)
        log.rename(one)
        for other in ("agent.jsonl.bak", "agent.jsonl.summary", "agent.jsonl.1.old"):
            log.with_name(other).write_text("".join(small_runs(100, 2)))
        err = restart_with_the_rest(log, state, rx, "".join(small_runs(20, 5)))
        spans = rx.received.spans()
    assert session_ids(spans) == [f"s-{i:08d}" for i in range(25)], err
    assert len({s.span_id for s in spans}) == len(spans)
    assert b"agent.jsonl.2' holds the rest of the file followed before" in err and b"then '" in err, err


def test_two_rotations_between_two_polls_read_the_file_in_between(tmp_path):
    """Within one poll (here 2 s) the file is rotated twice: the old file is read to its end,
    then the file rotated after it, then the new one. All 15 runs arrive, none twice."""
    log, state = empty_log(tmp_path)
    one, two = log.with_name(log.name + ".1"), log.with_name(log.name + ".2")
    with GrpcReceiver() as rx:
        with right_after_a_poll(log, state, rx, small_runs(0, 5)):
            log.rename(one)
            log.write_text("".join(small_runs(5, 5)))
            time.sleep(0.05)
            one.rename(two)
            log.rename(one)
            log.write_text("".join(small_runs(10, 5)))
            wait(lambda: len(session_ids(rx.received.spans())) >= 14, what="the runs after the rotations")
        spans = rx.received.spans()
    assert session_ids(spans) == [f"s-{i:08d}" for i in range(15)]
    assert len({s.span_id for s in spans}) == len(spans)


def test_after_a_kill_mid_run_the_restart_reads_from_the_open_run_only(tmp_path):
    """50 back-to-back runs, then the next one's first lines (a tool call running: a turn open,
    as a sidecar killed at any moment finds it): its position is that run's first line, not
    the file's start, and the restart loses nothing and sends nothing twice."""
    log, state = empty_log(tmp_path)
    open_run = small_runs(50, 1)
    before = "".join(small_runs(0, 50))
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        try:
            append(log, before + "".join(open_run[:2]))
            size = log.stat().st_size
            wait(lambda: (saved_offset(state) or {}).get("read_to") == size, 30, what="the runs read")
            saved = saved_offset(state)
        finally:
            end(proc, "SIGKILL")
        assert saved["offset"] == len(before.encode())
        restart_with_the_rest(log, state, rx, "".join(open_run[2:] + small_runs(51, 1)))
        spans = rx.received.spans()
    assert session_ids(spans) == [f"s-{i:08d}" for i in range(52)]
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans) and all(s.parent_span_id in ids for s in spans if s.parent_span_id)


@needs_fixtures()
def test_a_writer_that_goes_on_in_the_renamed_file_after_logrotate_create_loses_no_line(tmp_path):
    """logrotate's ``create``: PATH renamed to ``agent.jsonl.1``, an empty PATH made, while the
    CLI keeps its descriptor (a shell redirect) and writes the rest of its run to the renamed
    file. Every span of the run arrives, as a replay of it gives them; none ends in error."""
    lines = recording_lines("subagent-explore-2.1.178.jsonl")
    log, state = empty_log(tmp_path)
    (tmp_path / "want").mkdir()
    whole = tmp_path / "want" / "whole.jsonl"
    whole.write_text("".join(lines))
    cut = 18
    with GrpcReceiver() as rx, HttpReceiver() as want_rx:
        proc = start(log, state, rx, "--from-start")
        try:
            wait(lambda: any(os.path.realpath(f"/proc/{proc.pid}/fd/{fd}") == str(log)
                             for fd in os.listdir(f"/proc/{proc.pid}/fd")), what="the file open")
            with open(log, "a") as writer:  # the CLI's stdout, opened once
                writer.write("".join(lines[:cut]))
                writer.flush()
                log.rename(tmp_path / "agent.jsonl.1")
                log.write_text("")  # logrotate's create
                time.sleep(0.3)  # several polls see the empty new file
                for line in lines[cut:]:
                    writer.write(line)
                    writer.flush()
            wait(lambda: any(s.name == "turn 1" for s in rx.received.spans()), what="the turn, at its result")
        finally:
            _, err = stop(proc)
        replay_into(want_rx, whole)
        want = want_rx.received.spans()
        spans = rx.received.spans()
    assert len(want) > 5 and sorted(tree_names(spans)) == sorted(tree_names(want)), err
    assert [s.name for s in spans if s.status_code == 2] == []
    session = next(s for s in spans if s.name.startswith("invoke_agent claude"))
    assert session.attributes["result.total_cost_usd"] == json.loads(lines[-1])["total_cost_usd"]


def test_a_second_follow_of_the_file_waits_for_the_first_to_stop_and_goes_on_from_it(tmp_path):
    """A rollout's new pod starts while the old one still follows the shared file with the same
    state directory: the second waits (said once), the first traces what comes; when the first
    stops, the second goes on from its saved position. Every workflow reaches the receiver
    once (both exported all of them before)."""
    log, state = empty_log(tmp_path)
    said: list[bytes] = []
    with GrpcReceiver() as rx:
        first = start(log, state, rx, "--from-start")
        second = None
        try:
            append(log, workflow("A"))
            wait(lambda: "wf-A" in roots(rx), what="workflow A, from the first")  # (it holds the lock)
            second = start(log, state, rx, "--from-start")
            threading.Thread(target=lambda: said.extend(iter(second.stderr.readline, b"")), daemon=True).start()
            wait(lambda: any(b"another otelbridge follows" in l for l in said), what="the second waiting")
            append(log, workflow("B"))
            wait(lambda: "wf-B" in roots(rx), what="workflow B, from the first")
            _, first_err = stop(first)
            append(log, workflow("C"))
            wait(lambda: "wf-C" in roots(rx), what="workflow C, from the second")
            time.sleep(0.3)  # a copy the first would have sent
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=20)
    assert second.returncode == 0 and roots(rx) == {"wf-A": 1, "wf-B": 1, "wf-C": 1}
    spans = rx.received.spans()
    assert len({s.span_id for s in spans}) == len(spans) > 3 * SPANS_PER_WORKFLOW  # none twice
    (line,) = [l.decode() for l in said if b"another otelbridge follows" in l]
    assert line.rstrip().endswith("(two would trace every line twice)")
    assert b"another otelbridge" not in first_err


def test_a_container_runtime_s_log_is_said_while_it_runs_not_only_at_the_stop(tmp_path):
    """A sidecar pointed at the kubelet's log of the agent's container (each line
    ``TIME stdout F {...}``, CRI) traces nothing: said once while it runs, after the first
    lines (a sidecar runs for a pod's life), not only at its stop."""
    log, state = empty_log(tmp_path)
    lines = recording_lines("claudecli-go-bg-bash-wake-2.1.280.jsonl")
    cri = "".join(f"2026-12-07T18:20:{i % 60:02d}.123456789Z stdout F {line}" for i, line in enumerate(lines))
    said: list[bytes] = []
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start")
        reader = threading.Thread(target=lambda: said.extend(iter(proc.stderr.readline, b"")), daemon=True)
        reader.start()
        try:
            append(log, cri)
            wait(lambda: any(b"so far is JSON" in l for l in said), what="the line saying so")
            append(log, cri)  # (more of the same says nothing more)
            time.sleep(0.3)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
            reader.join(timeout=5)
    assert proc.returncode == 0 and rx.received.spans() == []
    (line,) = [l.decode() for l in said if b"so far is JSON" in l]
    assert line.startswith(f"otelbridge: no line of {str(log)!r} so far is JSON (")
    assert "not a container runtime's log of it" in line
