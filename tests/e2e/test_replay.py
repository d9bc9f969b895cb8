"""``otelbridge replay``: recorded streams → traces; same ids every time, by the SPAN-MODEL.md
deterministic-id rule (computed here with hashlib); nothing on stdout."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import socket
import subprocess
import sys
import time
import uuid

import pytest

from tests.conftest import (session_name, EXAMPLES, FIXTURES, ROOT, WORKFLOW_PROBE, clean_env, needs_fixtures,
                            run_bridge, session_span_count, side_by_side, workflow_facts)
from tests.receivers import GrpcReceiver

CBC = EXAMPLES / "cbc-workflow.jsonl"
MS = 1_000_000


def sha(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).digest()[:n].hex()


def expected_ids(path):
    """{(kind, key): (trace id, span id)} by SPAN-MODEL.md "Deterministic ids"."""
    started, agents, phases, _, _ = workflow_facts(path)
    trace = sha(f"otelbridge/1/{started['session_id']}/{started['task_id']}", 16)
    ids = {("workflow", started["task_id"]): sha(f"{trace}/workflow/{started['task_id']}", 8)}
    for ph in phases:
        ids[("phase", ph["index"])] = sha(f"{trace}/phase/{ph['index']}", 8)
    for ag in agents:
        ids[("agent", ag["index"])] = sha(f"{trace}/agent/{ag['index']}", 8)
    return trace, ids


def replay(files, *extra, delay: float = 0.0):
    with GrpcReceiver(delay=delay) as rx:
        proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint, *extra,
                           *map(str, files)])
        spans = rx.received.spans()
    return proc, spans


def test_replay_twice_gives_the_same_ids(tmp_path):
    files = [CBC] + ([WORKFLOW_PROBE] if WORKFLOW_PROBE.is_file() else [])
    (first, spans1), (second, spans2) = side_by_side(lambda: replay(files), lambda: replay(files))
    for proc in (first, second):
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == b""  # replay is not a tee

    for path in files:
        trace, ids = expected_ids(path)
        # the session's own trace: trace id by the rule for a session, its span the root
        started = workflow_facts(path)[0]
        session = [s for s in spans1 if s.trace_id == sha(f"otelbridge/1/{started['session_id']}", 16)]
        assert len(session) == session_span_count(path.read_bytes())
        (agent,) = [s for s in session if s.parent_span_id == ""]
        assert agent.name == session_name(path.read_bytes())
        assert agent.links == [(trace, ids[("workflow", started["task_id"])])]
        mine = [s for s in spans1 if s.trace_id == trace]
        got = {}
        for s in mine:
            op = s.attributes.get("gen_ai.operation.name")
            if op == "invoke_workflow":
                got[("workflow", s.attributes["workflow.task_id"])] = s.span_id
            elif op == "invoke_agent":
                got[("agent", s.attributes["workflow.agent.index"])] = s.span_id
            else:
                got[("phase", s.attributes["workflow.phase.index"])] = s.span_id
        assert got == ids
        assert len(mine) + len(session) == len([s for s in spans1 if s.attributes.get(
            "gen_ai.conversation.id") == started["session_id"]])  # nothing else of this stream

    # everything, both times: the same ids, parents, names and times
    rows1 = sorted((s.trace_id, s.span_id, s.parent_span_id, s.name, s.start_ns, s.end_ns) for s in spans1)
    rows2 = sorted((s.trace_id, s.span_id, s.parent_span_id, s.name, s.start_ns, s.end_ns) for s in spans2)
    assert len(rows1) == len({r[1] for r in rows1})
    assert rows1 == rows2


def test_replay_uses_stream_time_and_closes_each_file(tmp_path):
    """A file without its task_notification is closed at its own end, dated by its own stream:
    never by the replay's wall clock, never by the next file (one that shows the workflow
    again replaces it: :func:`test_a_workflow_a_log_cut_in_two_is_exported_once_as_the_later_file_shows_it`)."""
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(l for l in CBC.read_bytes().splitlines(keepends=True)
                             if b"task_updated" not in l and b"task_notification" not in l))
    proc, spans = replay([cut, EXAMPLES / "claude-code-session.jsonl"])
    assert proc.returncode == 0, proc.stderr
    (incomplete,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    assert incomplete.attributes["workflow.status"] == "incomplete"
    newest_ms = 0
    for line in cut.read_bytes().splitlines():
        doc = json.loads(line)
        for entry in doc.get("workflow_progress", []):
            for key in ("startedAt", "endedAt", "lastProgressAt", "queuedAt"):
                if isinstance(entry.get(key), int):
                    newest_ms = max(newest_ms, entry[key])
            if isinstance(entry.get("startedAt"), int) and isinstance(entry.get("durationMs"), int):
                newest_ms = max(newest_ms, entry["startedAt"] + entry["durationMs"])
    assert incomplete.end_ns == newest_ms * MS


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs /proc/self/mem")
def test_unreadable_file_is_reported_and_the_rest_replayed():
    # /proc/self/mem exists and passes the access check, but reading it at offset 0 fails (EIO)
    proc = run_bridge(["replay", "--exporter", "none", "--summary", "always", "/proc/self/mem", str(CBC)])
    assert proc.returncode == 1 and proc.stdout == b""
    assert b"cannot read '/proc/self/mem'" in proc.stderr
    started, _, _, _, notified = workflow_facts(CBC)
    head = (f"invoke_workflow {started['workflow_name'].removeprefix('path:')}  "
            f"{'error' if notified['status'] == 'failed' else 'ok'}")
    assert head.encode() in proc.stderr  # the other file was still replayed


def test_missing_file_and_directory_are_reported_and_the_rest_replayed(tmp_path):
    proc = run_bridge(["replay", "--exporter", "none", "--summary", "always",
                       str(tmp_path / "missing.jsonl"), str(tmp_path), str(CBC)])
    assert proc.returncode == 1 and proc.stdout == b""
    assert b"cannot read" in proc.stderr and b"No such file" in proc.stderr
    assert b"Is a directory" in proc.stderr
    started, _, _, _, notified = workflow_facts(CBC)
    head = (f"invoke_workflow {started['workflow_name'].removeprefix('path:')}  "
            f"{'error' if notified['status'] == 'failed' else 'ok'}")
    assert head.encode() in proc.stderr  # the readable file was still replayed


def test_progress_bar_on_a_terminal(tmp_path):
    big = tmp_path / "big.jsonl"
    filler = (json.dumps({"type": "stream_event", "pad": "x" * 900}) + "\n").encode()
    with open(big, "wb") as fh:
        fh.write(CBC.read_bytes())
        fh.write(filler * (9 * 1024 * 1024 // len(filler)))
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "otelbridge", "replay", "--exporter", "none",
                               "--summary", "never", str(big)],
                              stdout=subprocess.PIPE, stderr=slave, env=clean_env(TERM="xterm-256color"),
                              cwd=ROOT,
                              timeout=60)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"replay" in out and "MB".encode() in out  # the bar's label and its byte counter


def test_replay_never_outruns_the_exporter(tmp_path):
    """500 workflows with the same times all close at the end of the file: 3000 spans in a burst,
    more than the processor's 2048-span queue. Replay waits for the exporter: none is dropped."""
    text = CBC.read_text()
    many = tmp_path / "many.jsonl"
    many.write_text("".join(text.replace("wf-task-01", f"wf-{i}") for i in range(500)))
    proc, spans = replay([many], "--summary", "never", delay=0.05)  # a slow collector
    assert proc.returncode == 0, proc.stderr
    # the copies share one session: its span and one turn per copy's result
    expected = 500 * 6 + session_span_count(many.read_bytes())
    assert expected == 500 * 6 + 1 + 500
    assert len(spans) == expected and f"{expected} exported, 0 dropped".encode() in proc.stderr


def test_replay_waits_within_a_small_export_queue(tmp_path):
    """``OTEL_BSP_MAX_QUEUE_SIZE=64``, far below the spans replay lets wait by default: the
    wait fits the queue, so a slow collector gets every span of a 3000-span burst."""
    text = CBC.read_text()
    many = tmp_path / "many.jsonl"
    many.write_text("".join(text.replace("wf-task-01", f"wf-{i}") for i in range(500)))
    with GrpcReceiver(delay=0.02) as rx:
        proc = run_bridge(["replay", "--summary", "never", "--protocol", "grpc", "--endpoint", rx.endpoint,
                           str(many)], env=clean_env(OTEL_BSP_MAX_QUEUE_SIZE="64",
                                                     OTEL_BSP_MAX_EXPORT_BATCH_SIZE="16"))
        spans = rx.received.spans()
    assert proc.returncode == 0, proc.stderr
    expected = 500 * 6 + 1 + 500
    assert len(spans) == expected and len({s.span_id for s in spans}) == expected
    assert f"{expected} exported, 0 dropped".encode() in proc.stderr, proc.stderr
    assert b"queue is full" not in proc.stderr


def test_replay_to_a_dead_collector_with_a_small_queue_does_not_wait_on_each_failed_export(tmp_path):
    """``OTEL_BSP_MAX_QUEUE_SIZE=16`` and a collector that refuses: once an export has failed,
    replay waits no more for that exporter (each failed batch counted as progress made it wait
    an export's whole retry time per 16 spans). It ends in seconds, every span counted
    as dropped."""
    text = CBC.read_text()
    many = tmp_path / "many.jsonl"
    many.write_text("".join(text.replace("wf-task-01", f"wf-{i}") for i in range(200)))
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()  # (nothing listens there: refused)
    started = time.monotonic()
    proc = run_bridge(["replay", "--summary", "never", "--endpoint", f"http://127.0.0.1:{port}",
                       "--flush-timeout", "1", str(many)],
                      env=clean_env(OTEL_BSP_MAX_QUEUE_SIZE="16", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="16",
                                    OTEL_EXPORTER_OTLP_TIMEOUT="1000"), timeout=120)
    took = time.monotonic() - started
    expected = 200 * 6 + 1 + 200
    assert proc.returncode == 0, proc.stderr
    assert f"spans {expected} built, 0 exported, {expected} dropped".encode() in proc.stderr, proc.stderr
    assert took < 15, took  # (2 s here)


def test_long_recording_closes_runs_as_its_clock_passes(tmp_path):
    """1100 workflows one after another (each 20 s of stream time later): grace windows close by
    the stream clock, so the tracker never holds them all (its cap is 1000 open runs)."""
    import re

    text = CBC.read_text()
    shifted = (re.sub(r"\b1790000\d{6}\b", lambda m: str(int(m.group(0)) + i * 20_000), text)
               .replace("wf-task-01", f"wf-{i}") for i in range(1100))
    long = tmp_path / "long.jsonl"
    long.write_text("".join(shifted))
    stats = tmp_path / "stats.json"
    proc = run_bridge(["replay", "--exporter", "file", "--output", str(tmp_path / "o.jsonl"),
                       "--summary", "never", "--stats-json", str(stats), str(long)])
    assert proc.returncode == 0, proc.stderr
    counts = json.loads(stats.read_text())
    assert counts["state_budget_ended"] == 0
    roots = sum(line.count('"invoke_workflow ') for line in (tmp_path / "o.jsonl").read_text().splitlines())
    assert roots == 1100


def test_replay_dash_reads_stdin():
    """``otelbridge replay -``: the recording on stdin gives the same spans as the file."""
    def from_stdin():
        with GrpcReceiver() as rx, open(CBC, "rb") as stdin:
            proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint, "-"], stdin=stdin)
            return proc, rx.received.spans()

    (from_file, spans_file), (from_stdin, spans_stdin) = side_by_side(lambda: replay([CBC]), from_stdin)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == b""
    rows = [sorted((s.trace_id, s.span_id, s.parent_span_id, s.name, s.start_ns, s.end_ns)
                   for s in spans) for spans in (spans_file, spans_stdin)]
    assert from_file.returncode == 0 and len(rows[0]) > session_span_count(CBC.read_bytes())
    assert rows[0] == rows[1]  # the same ids, parents, names and stream times


@needs_fixtures()
def test_a_recording_without_timestamps_replayed_again_is_the_same_spans_resource_redacted(tmp_path):
    """Two replays of a recording with no timestamp: the same spans, dated by the file's
    modification time (they were dated as each replay read them), under one
    service.instance.id (each replay drew a random one); the resource's strings redacted by the
    run's own --redact (it was made before that redactor was installed)."""
    path = tmp_path / "thinking.jsonl"
    path.write_bytes((FIXTURES / "claude-code" / "claudecli-go-basic-thinking-2.1.68.jsonl").read_bytes())
    mtime = 1_780_000_000_123_456_789
    os.utime(path, ns=(mtime, mtime))
    env = {**clean_env(), "OTEL_RESOURCE_ATTRIBUTES": "team=zzteam123"}
    runs = []
    for _ in range(2):
        with GrpcReceiver() as rx:
            proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint, "--redact", r"zzteam\d+",
                               str(path)], env=env)
            assert proc.returncode == 0, proc.stderr
            runs.append(rx.received.spans())
    first, second = ([(s.span_id, s.name, s.start_ns, s.end_ns, tuple(sorted(s.resource.items()))) for s in spans]
                     for spans in runs)
    assert first and sorted(first) == sorted(second)
    assert {s.end_ns for s in runs[0]} == {mtime}
    resource = runs[0][0].resource
    assert resource["team"] == "[REDACTED:custom]"
    assert uuid.UUID(resource["service.instance.id"]).version == 5


@needs_fixtures()
def test_a_session_a_file_before_showed_goes_on_in_its_trace_with_ids_of_its_own(tmp_path):
    """A recording cut in two after its first result (a log rotated, or ``--resume`` saved
    apart): the second file's session goes on as a span of its own in the same trace, linked
    to the first, its turn ``turn 2`` — not the first file's ids again (a backend would hold one
    of two spans, parents crossed) — and the totals are the CLI's own, counted once."""
    path = FIXTURES / "claude-code" / "claudecli-go-bg-bash-wake-2.1.280.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    cut = 1 + next(i for i, l in enumerate(lines) if json.loads(l).get("type") == "result")
    first, then = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes(b"".join(lines[:cut]))
    then.write_bytes(b"".join(lines[cut:]))
    outputs = {}
    for name, files in (("whole", [path]), ("split", [first, then])):
        out = tmp_path / f"{name}.out"
        with GrpcReceiver() as rx:
            proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint, *map(str, files)],
                              env=clean_env(GITHUB_OUTPUT=str(out)))
            spans = rx.received.spans()
        assert proc.returncode == 0, proc.stderr
        outputs[name] = dict(l.split("=", 1) for l in out.read_text().splitlines())
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans)
    sessions = sorted((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.start_ns)
    assert len(sessions) == 2 and sessions[0].trace_id == sessions[1].trace_id
    assert sessions[1].links == [(sessions[0].trace_id, sessions[0].span_id)]
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: s.start_ns)
    assert [(t.name, t.parent_span_id) for t in turns] == [("turn 1", sessions[0].span_id),
                                                          ("turn 2", sessions[1].span_id)]
    last = [json.loads(l) for l in lines if json.loads(l).get("type") == "result"][-1]
    assert outputs["split"]["total_cost_usd"] == outputs["whole"]["total_cost_usd"] == str(last["total_cost_usd"])
    assert (outputs["split"]["input_tokens"], outputs["split"]["output_tokens"]) == (
        outputs["whole"]["input_tokens"], outputs["whole"]["output_tokens"])


@needs_fixtures()
def test_a_milk_session_its_result_ended_goes_on_in_a_later_file_with_ids_of_its_own(tmp_path):
    """milk's result ends its session; a later file of the same session id (a resumed run) is
    still a second session span in the trace, linked to the first, its turn numbered on."""
    first = FIXTURES / "milk" / "basic_turn.jsonl"
    sid = json.loads(first.read_text().splitlines()[0])["session_id"]
    then = tmp_path / "resumed.jsonl"
    other = FIXTURES / "milk" / "tool_use_turn.jsonl"
    theirs = json.loads(other.read_text().splitlines()[0])["session_id"]
    then.write_text(other.read_text().replace(theirs, sid))
    with GrpcReceiver() as rx:
        proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint, str(first), str(then)])
        spans = rx.received.spans()
    assert proc.returncode == 0, proc.stderr
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans)
    sessions = sorted((s for s in spans if s.attributes.get("gen_ai.operation.name") == "invoke_agent"
                       and s.parent_span_id == ""), key=lambda s: s.start_ns)
    assert len(sessions) == 2 and sessions[1].links == [(sessions[0].trace_id, sessions[0].span_id)]
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: s.start_ns)
    assert [(t.name, t.parent_span_id) for t in turns] == [("turn 1", sessions[0].span_id),
                                                          ("turn 2", sessions[1].span_id)]


@needs_fixtures()
def test_a_low_attribute_length_limit_cuts_what_is_exported_not_what_the_job_outputs_count(tmp_path):
    """``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=5``: the collector gets every string at most 5
    characters (the SDK's limit), while the job outputs, which classify spans by their
    operation and the session's usage source, give the same totals as without it."""
    path = FIXTURES / "claude-code" / "claudecli-go-workflow-phased-2.1.270.jsonl"
    outputs, received = {}, {}
    for limit in ("", "5"):
        out = tmp_path / f"out{limit}"
        with GrpcReceiver() as rx:
            proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint, str(path)],
                              env=clean_env(GITHUB_OUTPUT=str(out), OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=limit))
            received[limit] = rx.received.spans()
        assert proc.returncode == 0, proc.stderr
        outputs[limit] = dict(l.split("=", 1) for l in out.read_text().splitlines())
        said = [l for l in proc.stderr.decode().splitlines() if "LENGTH_LIMIT" in l]
        # the SDK's own warning, which names no variable, said once as a user acts on it
        assert said == ([] if not limit else [
            "otelbridge: a span's string is longer than OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT (or "
            "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) allows: it is cut on export (the views show operation "
            "and state names whole)"]), proc.stderr
    assert outputs["5"] == outputs[""]
    assert (outputs["5"]["input_tokens"], outputs["5"]["output_tokens"], outputs["5"]["workflow_tokens"]) == (
        "379803", "1000", "88904")
    assert len(received["5"]) == len(received[""]) == 17
    ops = {s.attributes.get("gen_ai.operation.name") for s in received["5"]} - {None}
    assert ops == {"chat", "invok", "execu"}
    assert all(len(v) <= 5 for s in received["5"] for v in s.attributes.values() if isinstance(v, str))


def _stopped_workflow(late_ms: int) -> bytes:
    """A cbc run stopped at +3 s (§4.1) whose agent's wind-down flip comes ``late_ms`` after
    the stop, in a snapshot line without a timestamp of its own (its ``endedAt`` is its time)."""
    t0 = 1_790_000_000_000
    agent = {"type": "workflow_agent", "index": 1, "agentId": "v2:1", "startedAt": t0 + 100,
             "label": "worker-1", "phaseIndex": 1}
    phase = {"type": "workflow_phase", "index": 1, "title": "Build"}
    head = {"task_id": "wf-g", "session_id": "s-g"}
    lines = [
        {"type": "system", "subtype": "task_started", **head, "tool_use_id": "toolu_w",
         "task_type": "local_workflow", "workflow_name": "build"},
        {"type": "system", "subtype": "task_progress", **head, "tool_use_id": "toolu_w",
         "workflow_progress": [phase, {**agent, "state": "start"}]},
        {"type": "system", "subtype": "task_updated", **head,
         "patch": {"status": "killed", "end_time": t0 + 3000}},
        {"type": "system", "subtype": "task_notification", **head, "status": "stopped",
         "usage": {"total_tokens": 10, "tool_uses": 0, "duration_ms": 2900}},
        {"type": "system", "subtype": "task_progress", **head, "tool_use_id": "toolu_w",
         "workflow_progress": [phase, {**agent, "state": "error", "endedAt": t0 + 3000 + late_ms,
                                       "error": "subagent aborted: user cancel"}]},
    ]
    return b"".join(json.dumps(d).encode() + b"\n" for d in lines)


@pytest.mark.parametrize("late_ms, lands", [(2_000, True), (57_000, False)])
def test_a_snapshot_past_the_grace_window_in_stream_time_is_late_in_replay(tmp_path, late_ms, lands):
    """``--grace-period`` (5 s) is of the stream's time in replay: a snapshot whose own time is
    past the window is ignored and counted, and moves neither the run nor its session's end."""
    path = tmp_path / "stopped.jsonl"
    path.write_bytes(_stopped_workflow(late_ms))
    proc, spans = replay([path])
    assert proc.returncode == 0, proc.stderr
    assert f"{0 if lands else 1} late events ignored".encode() in proc.stderr
    by_name = {s.name: s for s in spans}
    agent, root = by_name["invoke_agent worker-1"], by_name["invoke_workflow build"]
    stop = (1_790_000_000_000 + 3000) * MS
    assert agent.start_ns == (1_790_000_000_000 + 100) * MS
    assert agent.status_code == 0  # unset: a stop's wind-down is no failure
    (event,) = [e for e in agent.events if e[0] == "interrupted"]
    if lands:
        assert agent.end_ns == root.end_ns == stop + late_ms * MS
        assert event[2] == {"otelbridge.reason": "subagent aborted: user cancel"}
    else:
        assert agent.end_ns == root.end_ns == stop
    assert by_name["invoke_agent claude-code"].end_ns == root.end_ns


def _workflow_spans(spans) -> dict:
    """{span id: (name, parent, status, message, attributes, start, end)} of a workflow's spans,
    without ``gen_ai.provider.name``: its agents take it from the session's ``init``, which a
    second file does not show."""
    return {s.span_id: (s.name, s.parent_span_id, s.status_code, s.status_message,
                        {k: v for k, v in s.attributes.items() if k != "gen_ai.provider.name"},
                        s.start_ns, s.end_ns)
            for s in spans if "workflow.task_id" in s.attributes}


@needs_fixtures()
@pytest.mark.parametrize("name", ["claudecli-go-workflow-phased-2.1.270.jsonl", "workflow-probe-2.1.206.jsonl"])
def test_a_workflow_a_log_cut_in_two_is_exported_once_as_the_later_file_shows_it(tmp_path, name):
    """A recording cut at every line from its workflow's ``task_started`` to its last
    ``workflow_progress``: the first file ends the workflow incomplete, the second rebuilds it
    from its snapshots with the same ids. Exported is one reading, the later, with the name the
    first file's ``task_started`` gave: the workflow's spans are the whole file's (ids, parents,
    status, attributes, times), and no span id comes twice."""
    path = FIXTURES / "claude-code" / name
    lines = path.read_bytes().splitlines(keepends=True)
    docs = [json.loads(line) for line in lines]
    begin = next(i for i, d in enumerate(docs) if d.get("task_type") == "local_workflow")
    last = max(i for i, d in enumerate(docs) if "workflow_progress" in json.dumps(d))
    proc, spans = replay([path])
    assert proc.returncode == 0, proc.stderr
    whole = _workflow_spans(spans)
    assert len(whole) >= 4 and any(v[0].startswith("invoke_workflow ") and v[0] != "invoke_workflow workflow"
                                   for v in whole.values())
    first, then = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for cut in range(begin + 1, last + 1):
        first.write_bytes(b"".join(lines[:cut]))
        then.write_bytes(b"".join(lines[cut:]))
        proc, spans = replay([first, then])
        assert proc.returncode == 0, proc.stderr
        ids = [(s.trace_id, s.span_id) for s in spans]
        assert len(ids) == len(set(ids)), cut
        assert _workflow_spans(spans) == whole, cut


@needs_fixtures()
def test_a_session_a_log_cut_in_two_goes_on_in_is_no_error_where_it_was_cut(tmp_path):
    """workflow-phased cut at every line (both its results come last): the first file ends its
    session and turn before their result, and what was open in them, the second goes on with
    them. No span is an error, the run's status is ``ok`` as the whole file's; the same first
    file followed by another session's file ends them ``stream ended before result``, an
    error. (Not cut between the workflow's last snapshot and its notification: the second file
    cannot rebuild the workflow, which stays as the first left it, ``incomplete``.)"""
    path = FIXTURES / "claude-code" / "claudecli-go-workflow-phased-2.1.270.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    docs = [json.loads(line) for line in lines]
    last = max(i for i, d in enumerate(docs) if "workflow_progress" in json.dumps(d))
    notified = next(i for i, d in enumerate(docs) if d.get("subtype") == "task_notification"
                    and d.get("task_id") == docs[last].get("task_id"))
    first, then, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "out"
    for cut in (*range(2, last + 1), *range(notified + 1, len(lines) - 1)):
        first.write_bytes(b"".join(lines[:cut]))
        then.write_bytes(b"".join(lines[cut:]))
        out.unlink(missing_ok=True)
        with GrpcReceiver() as rx:
            proc = run_bridge(["replay", "--protocol", "grpc", "--endpoint", rx.endpoint, str(first), str(then)],
                              env=clean_env(GITHUB_OUTPUT=str(out)))
            spans = rx.received.spans()
        assert proc.returncode == 0, proc.stderr
        assert [(s.name, s.status_message) for s in spans if s.status_code == 2] == [], cut
        assert "status=ok" in out.read_text().splitlines(), cut
        sessions = sorted((s for s in spans if s.name == "invoke_agent claude-code"), key=lambda s: s.start_ns)
        assert len(sessions) == 2 and (sessions[0].trace_id, sessions[0].span_id) in sessions[1].links, cut
    first.write_bytes(b"".join(lines[:10]))
    proc, spans = replay([first, EXAMPLES / "claude-code-session.jsonl"])
    cut_off = sorted(s.name for s in spans if s.status_message == "stream ended before result")
    assert cut_off == ["invoke_agent claude-code", "turn 1"]
