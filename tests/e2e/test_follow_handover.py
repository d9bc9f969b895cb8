"""``otelbridge follow --handover``: a rollout hands the file over from one ``follow`` process to
the next (the next one waits on the lock of the same state directory) while the agent writes
on, each stop mid-turn. The runs together must export what one uninterrupted ``follow`` of the
file exports: the same spans, ids and parents, each once, no span ended "interrupted", each
session's tokens once. Real ``follow`` processes, SIGTERM, a real OTLP receiver, real
recordings; waits are bounded polls on the offset file and stderr."""

from __future__ import annotations

import json
import signal
import threading

import pytest

from tests.conftest import needs_fixtures
from tests.e2e.test_follow import append, empty_log, recording_lines, saved_offset, start, stop, tree_names, wait
from tests.receivers import GrpcReceiver

WAITING = b"another otelbridge follows"
TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")


def beside(tmp_path, name: str):
    """An empty followed file and its state directory in ``tmp_path / name``."""
    (tmp_path / name).mkdir()
    return empty_log(tmp_path / name)


def read_and_exported(state, log) -> None:
    """Wait until the run holding ``state`` has read ``log`` to its end and its spans arrived
    (the offset file's export boundary is the file's size)."""
    size = log.stat().st_size
    wait(lambda: (saved_offset(state) or {}).get("read_to") == size, 20, what=f"byte {size} read and exported")


def followed_whole(tmp_path, parts: list[str], *ids: str) -> list:
    """One uninterrupted ``follow --from-start`` of the file written in ``parts``, stopped at
    its end: the spans it exports."""
    log, state = beside(tmp_path, "whole")
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", *ids)
        try:
            for part in parts:
                append(log, part)
                read_and_exported(state, log)
        finally:
            stop(proc)
        return rx.received.spans()


def handed_over(tmp_path, parts: list[str], *ids: str) -> tuple[list, list[bytes], dict]:
    """The file written in ``parts``, each read by a ``follow`` of its own: every run but the
    last has ``--handover`` and is stopped (SIGTERM) while the next waits on the lock, the next
    part written only after the stop (the agent writes on); the last is stopped at the file's
    end. The spans exported, each run's stderr, and the offset file the first stop saved."""
    log, state = beside(tmp_path, "handover")
    said: list[list[bytes]] = []
    first_stop: dict = {}
    with GrpcReceiver() as rx:
        procs, readers = [], []
        try:
            for n, part in enumerate(parts):
                last = n == len(parts) - 1
                proc = start(log, state, rx, "--from-start", *ids, *(() if last else ("--handover",)))
                procs.append(proc)
                lines: list[bytes] = []
                said.append(lines)
                readers.append(threading.Thread(
                    target=lambda p=proc, out=lines: out.extend(iter(p.stderr.readline, b"")), daemon=True))
                readers[-1].start()
                if n:  # (the run before holds the lock until it has stopped)
                    wait(lambda: any(WAITING in line for line in lines), what="the next run waiting")
                    procs[n - 1].send_signal(signal.SIGTERM)
                    assert procs[n - 1].wait(timeout=20) == 0
                    first_stop = first_stop or saved_offset(state)
                append(log, part)
                read_and_exported(state, log)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=20)
            for reader in readers:  # (each stderr read to its end)
                reader.join(timeout=5)
        assert procs[-1].returncode == 0
        return rx.received.spans(), [b"".join(lines) for lines in said], first_stop


def by_content(spans) -> list[tuple]:
    """Each span as (trace id, span id, parent span id, name, status code and text, attributes),
    sorted: what a backend shows of it but its times."""
    return sorted((s.trace_id, s.span_id, s.parent_span_id, s.name, s.status_code, s.status_message,
                   json.dumps(s.attributes, sort_keys=True, default=str)) for s in spans)


def by_shape(spans) -> list[tuple]:
    """As :func:`by_content` with ids replaced by the parent's name (random ids differ between
    two followings of one file; what hangs from what does not)."""
    by_id = {s.span_id: s for s in spans}
    return sorted((s.name, by_id[s.parent_span_id].name if s.parent_span_id in by_id else "",
                   s.status_code, s.status_message, json.dumps(s.attributes, sort_keys=True, default=str),
                   len(s.links)) for s in spans)


def sessions(spans) -> list:
    return [s for s in spans if s.attributes.get("session.turns") is not None]


def cut(name: str, *at: int) -> list[str]:
    """The lines of recording ``name`` in parts, cut before each line number of ``at``."""
    lines = recording_lines(name)
    bounds = [0, *at, len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]


# each cut mid-turn: turn 1 with its workflow running, then turn 2 (turn 1 and the workflow
# exported); a foreground sub-agent running; a background Bash task running, its tool answered
HANDOVERS = {
    "workflow-then-next-turn": ("workflow-probe-2.1.206.jsonl", 20, 43),
    "subagent-running": ("idea-planner-explore-subagent-2.1.224.jsonl", 6),
    "background-task-running": ("claudecli-go-bg-bash-wake-2.1.280.jsonl", 8),
}


@needs_fixtures()
@pytest.mark.parametrize("recording", list(HANDOVERS), ids=list(HANDOVERS))
def test_follows_handing_over_mid_turn_export_the_trace_one_follow_exports(tmp_path, recording):
    """Runs of ``follow --handover`` stopped mid-turn, each while the next waits, the agent
    writing on: together, with ids derived from the stream, exactly the spans one uninterrupted
    follow exports (ids, parents, names, status, attributes; each span once), none ended
    ERROR "interrupted", the session span once with its tokens. A stop leaves the position
    before the open session's first line, not a stop's (the next run rebuilds what was open)."""
    name, *at = HANDOVERS[recording]
    parts = cut(name, *at)
    want = followed_whole(tmp_path, parts, "--deterministic-ids")
    spans, said, first_stop = handed_over(tmp_path, parts, "--deterministic-ids")
    assert len({s.span_id for s in spans}) == len(spans)  # none twice
    assert by_content(spans) == by_content(want)
    assert not [s for s in spans if "interrupted" in s.status_message or s.events and any(
        e[0] == "interrupted" for e in s.events)]
    (session,) = sessions(spans)
    assert [session.attributes[k] for k in TOKENS] == [sessions(want)[0].attributes[k] for k in TOKENS]
    assert session.attributes["gen_ai.usage.output_tokens"] > 0
    # the first stop's position: read again from no later than the session's first line, up
    # to where it read, the open session's ids kept (not a stop's, which ended it)
    lines = recording_lines(name)
    session_at = next(i for i, line in enumerate(lines) if '"session_id"' in line)
    assert first_stop["stopped"] is False and first_stop["read_to"] == len(parts[0].encode())
    assert first_stop["offset"] <= len("".join(lines[:session_at]).encode())
    assert [ref[0] for ref in first_stop["sessions"]] == [session.attributes["gen_ai.conversation.id"]]
    assert first_stop["continued"] == []
    for run in said[:-1]:
        assert b"--handover: 1 session(s) (1 with a turn open) left open for the next start" in run, run
        assert b"so nothing was traced" not in run, run


@needs_fixtures()
def test_follows_handing_over_with_ids_of_their_own_make_one_trace_too(tmp_path):
    """Without ``--deterministic-ids`` ``follow`` derives ids from a random word its offset file
    keeps: the run after a handover makes the same ids for what it rebuilds, so the trace has
    one follow's shape and attributes, no span twice and no parent missing."""
    parts = cut("workflow-probe-2.1.206.jsonl", 20, 43)
    want = followed_whole(tmp_path, parts)
    spans, _, _ = handed_over(tmp_path, parts)
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans)
    assert all(s.parent_span_id in ids for s in spans if s.parent_span_id)  # no parent missing
    assert by_shape(spans) == by_shape(want)
    assert len(sessions(spans)) == 1 and tree_names(spans) == tree_names(want)


@needs_fixtures()
def test_a_handover_of_a_file_no_start_can_read_again_ends_what_is_open(tmp_path):
    """``--handover`` with the file deleted (no next start can read it again): what is open ends
    as at any stop, exported, and stderr says why."""
    lines = recording_lines("claudecli-go-bg-bash-wake-2.1.280.jsonl")
    log, state = empty_log(tmp_path)
    with GrpcReceiver() as rx:
        proc = start(log, state, rx, "--from-start", "--handover")
        try:
            append(log, "".join(lines[:8]))
            read_and_exported(state, log)
            log.unlink()
        finally:
            _, err = stop(proc)
        spans = rx.received.spans()
    assert b"--handover: the file followed is no longer at" in err, err
    (session,) = sessions(spans)
    turn = next(s for s in spans if s.name == "turn 1")
    assert (turn.status_code, turn.status_message) == (2, "interrupted by SIGTERM before result")
    assert session.attributes["session.turns"] == 1
