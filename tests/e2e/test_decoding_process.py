"""The decoding process (otelbridge/source/feed.py, otelbridge/modes/live.py): stages 2–5 run in
a forked process fed by the tee's pipe. What a user relies on: the stream never depends on it
(killed, it costs the traces only), it holds neither end of the stream, and where there is no
``fork`` the stream still passes, untraced, said once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otelbridge.source.feed import BACKLOG_LIMIT
from otelbridge.source.pipe import HOLD_STALL_MS
from tests.conftest import ROOT, clean_env, run_bridge
from tests.e2e.test_faults import Live, workflow_lines


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:  # a thread (the early tee's) may end between the listing and the read
            text = (task / "children").read_text().split()
        except FileNotFoundError:
            continue
        out += [int(p) for p in text]
    return out


def decoding_process(pid: int, within_s: float = 30.0) -> int:
    """The one child of the tee ``pid`` once its event loop runs (its fds are then its own:
    the first lines may pass before the tee forks it, and the fork is not yet the set-up)."""
    until = time.monotonic() + within_s
    while time.monotonic() < until:
        found = children(pid)
        if found:
            with contextlib.suppress(OSError):
                fds = {os.readlink(fd) for fd in Path(f"/proc/{found[0]}/fd").iterdir()}
                if "anon_inode:[eventpoll]" in fds:
                    break
        time.sleep(0.01)
    (decoder,) = found
    return decoder


@contextlib.contextmanager
def stopped(pid: int):
    """The process ``pid`` stopped (SIGSTOP: as busy as it can be) for the block, then let go on
    (it may have been killed meanwhile)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def test_the_decoding_process_is_a_child_holding_neither_end_of_the_stream():
    live = Live(["--exporter", "none"])
    try:
        live.send(workflow_lines("w0", agents=1, complete=False))
        live.wait_echo(2)
        decoder = decoding_process(live.proc.pid)
        fd_dir = Path(f"/proc/{decoder}/fd")
        held = {os.readlink(fd) for fd in fd_dir.iterdir() if fd.exists()}
        stream_in = os.readlink(f"/proc/self/fd/{live.proc.stdin.fileno()}")
        stream_out = os.readlink(f"/proc/self/fd/{live.proc.stdout.fileno()}")
    finally:
        live.close_and_wait()
    assert live.proc.returncode == 0
    assert stream_in.startswith("pipe:") and stream_out.startswith("pipe:")
    # neither end of the stream: a closed reader or writer is seen exactly as without us
    assert stream_in not in held and stream_out not in held
    assert "/dev/null" in held  # its stdin


def test_killed_decoding_process_costs_the_traces_never_the_stream():
    lines = workflow_lines("k1", agents=2)
    live = Live(["--exporter", "none"])
    live.send(lines[:2])
    live.wait_echo(2)
    decoder = decoding_process(live.proc.pid)
    os.kill(decoder, signal.SIGKILL)
    time.sleep(0.2)
    more = [b'{"type":"assistant","n":%d}\n' % i for i in range(2000)]
    live.send(lines[2:] + more)
    took = live.close_and_wait()
    assert live.output() == b"".join(lines + more)
    assert live.proc.returncode == 0
    err = live.stderr.decode()
    assert "decoding process ended with status -9" in err, err
    assert "Traceback" not in err
    assert took < 5


def stopped_decoder_run(tmp_path, size: int):
    """Stream ``size`` bytes of 50-agent snapshots while the decoding process is stopped
    (SIGSTOP: as busy as it can be), then let it go on. Returns (stats, seconds until every
    byte had come out while it was stopped, the stream data, Live)."""
    started, snapshot = workflow_lines("st", agents=50, complete=False)
    body = snapshot * (size // len(snapshot))
    stats_path = tmp_path / "stats.json"
    live = Live(["--exporter", "none", "--stats-json", str(stats_path)])
    live.send([started])
    live.wait_echo(1)
    with stopped(decoding_process(live.proc.pid)):
        t = time.monotonic()
        live.proc.stdin.write(body)
        live.proc.stdin.flush()
        live.wait_echo(1 + body.count(b"\n"), timeout=20)
        through = time.monotonic() - t
    live.close_and_wait()
    assert live.proc.returncode == 0, live.stderr
    assert live.output() == started + body
    return json.loads(stats_path.read_text()), through, body, snapshot


def test_a_stopped_decoding_process_never_stalls_the_stream_its_backlog_is_decoded_later(tmp_path):
    stats, through, body, snapshot = stopped_decoder_run(tmp_path, 6_000_000)
    lines = 1 + body.count(b"\n")
    assert through < 5  # passed while the decoding process could not take a byte
    assert stats["lines"] == lines
    assert (stats["lines_decoded"], stats["lines_not_decoded"]) == (lines, 0)  # all kept for it


def test_past_the_backlog_the_stream_still_flows_and_what_was_skipped_is_counted(tmp_path):
    stats, through, body, snapshot = stopped_decoder_run(tmp_path, 40_000_000)
    lines = 1 + body.count(b"\n")
    assert through < 15
    assert stats["lines"] == lines
    assert stats["lines_decoded"] + stats["lines_not_decoded"] == lines
    # the tee's backlog and the 1 MiB pipe were kept (+ the chunk being read); the rest not
    kept = stats["lines_decoded"] * len(snapshot)
    assert BACKLOG_LIMIT <= kept <= BACKLOG_LIMIT + 2 * 2**20
    assert stats["bytes_not_decoded"] == stats["lines_not_decoded"] * (len(snapshot) - 1)


@pytest.mark.parametrize("size,max_line", [(20_000_000, None), (30 * 2**20, 64 * 2**20)],
                         ids=["over-max-line", "max-line-above-the-backlog"])
def test_a_line_longer_than_the_backlog_does_not_push_out_the_lines_after_it(tmp_path, size, max_line):
    """A line longer than the tee's 10 MiB backlog piped in at once, then a real recording: the
    recording decodes as it does alone — the big line's bytes are skipped once it is over
    --max-line or cut, never kept in the lines' place."""
    with_big, alone = big_line_then_recording(tmp_path, size, max_line, piped=True)
    # the big line: overlong, or (under a higher --max-line) cut by a gap and not decoded
    assert with_big["overlong_lines"] + with_big["lines_not_decoded"] == 1
    assert with_big["lines_decoded"] == alone["lines_decoded"] > 0
    assert with_big["spans_started"] == alone["spans_started"] > 0


@pytest.mark.parametrize("size,max_line", [(20_000_000, None), (30 * 2**20, 64 * 2**20)],
                         ids=["over-max-line", "max-line-above-the-backlog"])
def test_a_file_as_the_input_is_decoded_whole_though_read_faster_than_decoding(tmp_path, size, max_line):
    """The same stream as a file (``otelbridge < run.jsonl``), read at disk speed: nothing
    upstream waits on it, so the tee reads on only as decoding takes it — the line under
    --max-line is decoded whole, not cut; one over it is overlong."""
    with_big, alone = big_line_then_recording(tmp_path, size, max_line, piped=False)
    assert (with_big["overlong_lines"], with_big["lines_not_decoded"]) == (0 if max_line else 1, 0)
    assert with_big["lines_decoded"] == alone["lines_decoded"] + (1 if max_line else 0)
    stats_path = tmp_path / "replay.json"
    args = ["--max-line", str(max_line)] if max_line else []
    replay = run_bridge(["replay", "--exporter", "none", *args, "--stats-json", str(stats_path),
                         str(tmp_path / "big-then-recording.jsonl")])
    assert replay.returncode == 0, replay.stderr
    replayed = json.loads(stats_path.read_text())
    assert with_big["spans_started"] == replayed["spans_started"] >= alone["spans_started"] > 0


def big_line_then_recording(tmp_path, size: int, max_line: int | None, piped: bool):
    """A ``size``-byte ``task_progress`` line then a real recording, through the tee (piped in
    while the decoding process is stopped, so that the tee is surely ahead of it; or as its
    stdin file), and the recording alone: their ``--stats-json``."""
    recording = ROOT / "examples" / "cbc-workflow.jsonl"
    big = b'{"type":"system","subtype":"task_progress","task_id":"x","d":"' + b"a" * size + b'"}\n'
    path = tmp_path / "big-then-recording.jsonl"
    path.write_bytes(big + recording.read_bytes())
    args = ["--exporter", "none"] + (["--max-line", str(max_line)] if max_line else [])
    results = []
    for src in (path, recording):
        stats_path = tmp_path / f"{src.stem}.json"
        if piped and src == path:
            live = Live([*args, "--stats-json", str(stats_path)])
            with stopped(decoding_process(live.proc.pid)):
                live.proc.stdin.write(src.read_bytes())
                live.proc.stdin.flush()
                live.wait_echo(src.read_bytes().count(b"\n"), timeout=30)
            live.close_and_wait()
            assert live.proc.returncode == 0, live.stderr
            assert live.output() == src.read_bytes()
        elif piped:
            proc = run_bridge([*args, "--stats-json", str(stats_path)], src.read_bytes())
        else:
            with open(src, "rb") as stdin:
                proc = run_bridge([*args, "--stats-json", str(stats_path)], stdin=stdin)
        if not (piped and src == path):
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout == src.read_bytes()
        results.append(json.loads(stats_path.read_text()))
    return results


def test_a_file_as_the_input_waits_for_a_stopped_decoding_process_5_s_at_most(tmp_path):
    """A file of 50-agent snapshots (decoding takes seconds) while the decoding process is
    stopped: the tee holds the file back for it 5 s (HOLD_STALL_MS), then passes the rest
    without it — every byte, the lines it skipped counted."""
    started, snapshot = workflow_lines("fs", agents=50, complete=False)
    data = started + snapshot * (40_000_000 // len(snapshot))
    path = tmp_path / "snapshots.jsonl"
    path.write_bytes(data)
    stats_path = tmp_path / "stats.json"
    out = tmp_path / "out.jsonl"
    with open(path, "rb") as stdin, open(out, "wb") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "otelbridge", "--exporter", "none",
                                 "--stats-json", str(stats_path)], stdin=stdin, stdout=stdout,
                                stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
        with stopped(decoding_process(proc.pid)):
            t = time.monotonic()
            while out.stat().st_size < len(data) and time.monotonic() - t < 30:
                time.sleep(0.05)
            through = time.monotonic() - t
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.read_bytes() == data
    assert HOLD_STALL_MS / 1000 - 0.5 <= through < 15  # held back while it could take a byte
    stats = json.loads(stats_path.read_text())
    assert stats["lines"] == data.count(b"\n")
    assert stats["lines_decoded"] + stats["lines_not_decoded"] == stats["lines"]
    assert stats["lines_not_decoded"] > 0


def test_stdout_opened_for_appending_still_feeds_decoding_after_a_backlog(tmp_path):
    """``>> log``: splice refuses an O_APPEND file, so the tee goes on by plain reads and writes;
    a backlog kept while decoding is busy (here: stopped) is still written as the data pipe
    drains, so the lines after it are decoded while the stream goes on, not skipped."""
    from tests.receivers import HttpReceiver

    out = tmp_path / "out.jsonl"
    filler = b'{"type":"stream_event","event":{"type":"ping"},"pad":"' + b"x" * 200 + b'"}\n'
    burst = filler * (3 * 2**20 // len(filler))  # 3 MiB: more than the data pipe holds
    lines = workflow_lines("ap", agents=1)
    with HttpReceiver() as rx, open(out, "ab") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "-q", "--endpoint", rx.endpoint],
            stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.PIPE, cwd=ROOT,
            env=clean_env(OTEL_BSP_SCHEDULE_DELAY="100"))
        try:
            proc.stdin.write(filler)
            proc.stdin.flush()
            decoder = decoding_process(proc.pid)
            time.sleep(0.5)  # set up
            with stopped(decoder):
                proc.stdin.write(burst)
                proc.stdin.flush()
                time.sleep(0.5)  # passed: the data pipe full, the rest kept in the backlog
            proc.stdin.write(b"".join(lines))
            proc.stdin.flush()
            spans = rx.received.wait_for(1, timeout=20)  # while the stream goes on
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)
    assert any(s.name == "invoke_agent ap-agent-1" for s in spans), [s.name for s in spans]
    assert out.read_bytes() == filler + burst + b"".join(lines)


def test_a_stopped_decoding_process_costs_flush_timeout_and_a_margin_not_more():
    live = Live(["--exporter", "none", "--flush-timeout", "0.3"])
    live.send(workflow_lines("stop", agents=1, complete=False))
    live.wait_echo(2)
    time.sleep(0.5)  # set up: it said so
    with stopped(decoding_process(live.proc.pid)):
        took = live.close_and_wait(timeout=20)
    err = live.stderr.decode()
    assert took < 0.3 + 2 + 1.5, took  # --flush-timeout + EXIT_MARGIN_S (+ slack for this machine)
    assert "did not finish in time" in err and "ended with status -9" in err
    assert live.proc.returncode == 0


def test_a_killed_decoding_process_fails_the_run_with_fail_on_export_error(tmp_path):
    stats_path = tmp_path / "stats.json"
    live = Live(["--exporter", "none", "--fail-on-export-error", "--stats-json", str(stats_path)])
    lines = workflow_lines("kf", agents=1)
    live.send(lines[:2])
    live.wait_echo(2)
    decoder = decoding_process(live.proc.pid)
    os.kill(decoder, signal.SIGKILL)
    time.sleep(0.2)
    live.send(lines[2:])
    live.close_and_wait()
    assert live.output() == b"".join(lines)
    assert live.proc.returncode == 1
    assert json.loads(stats_path.read_text())["bytes"] == len(b"".join(lines))
    assert "the decoding process is gone" in live.stderr.decode()


def test_the_tees_process_forks_before_it_imports_any_decoding_stage(tmp_path):
    """Start-up is part of every throughput time (bench/RESULTS.md): the tee's process imports
    what it needs to move bytes and fork — not the dialects, event vocabulary, tracker,
    redaction, span builder, OpenTelemetry or rich; the decoding process imports those."""
    seen = tmp_path / "modules.txt"
    boot = ("import os, sys\n"
            "real = os.fork\n"
            "def fork():\n"
            f"    if not os.path.exists({str(seen)!r}):  # the first fork: the tee's process\n"
            f"        open({str(seen)!r}, 'w').write('\\n'.join(sorted(sys.modules)))\n"
            "    return real()\n"
            "os.fork = fork\n"
            "from otelbridge.__main__ import main\n"
            "main(['--exporter', 'otlp', '--endpoint', 'http://127.0.0.1:9', '-q',\n"
            "      '--flush-timeout', '0'])\n")
    data = b'{"type":"system","subtype":"init","session_id":"s"}\n'
    proc = subprocess.run([sys.executable, "-c", boot], input=data, capture_output=True,
                          env=clean_env(), cwd=ROOT, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    modules = set(seen.read_text().split("\n"))
    assert "otelbridge.source.feed" in modules and "otelbridge.cli" in modules  # it did record
    heavy = {"otelbridge.dialects", "otelbridge.events", "otelbridge.tracker", "otelbridge.redact",
             "otelbridge.pipeline", "otelbridge.spans", "otelbridge.export", "opentelemetry",
             "rich", "grpc"}
    assert heavy & modules == set()


def test_without_fork_the_stream_passes_untraced_and_says_so(tmp_path):
    """No ``fork`` (Windows) or a failed one: every byte passes, the exit status is ours, the
    lines are counted, and one line on stderr says the stream is not traced."""
    lines = b"".join(workflow_lines("nf", agents=1))
    stats_path = tmp_path / "stats.json"
    proc = run_bridge(["--exporter", "none", "--stats-json", str(stats_path)], lines, no_fork=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == lines
    assert proc.stderr.count(b"passes through untraced") == 1
    stats = json.loads(stats_path.read_text())
    n = lines.count(b"\n")
    assert (stats["bytes"], stats["lines"], stats["lines_not_decoded"], stats["spans_started"]) == (
        len(lines), n, n, 0)


SLOW_READER = (
    "import os, sys, time\n"
    "out = open(sys.argv[1], 'wb')\n"
    "while data := os.read(0, 262144):\n"
    "    out.write(data)\n"
    "    time.sleep(0.002)\n"
)


def slow_reader_run(tmp_path, data: bytes, kill_decoder_after_s: float | None = None):
    """``otelbridge --exporter none -- cat FILE`` (``data``) into a reader that takes 256 KiB
    every 2 ms, so that chunks wait for the output while the decoding process keeps a backlog;
    with ``kill_decoder_after_s``, the decoding process is killed then. Returns (exit status,
    what the reader got, stats, stderr)."""
    src, out, stats = tmp_path / "in.jsonl", tmp_path / "out", tmp_path / "stats.json"
    src.write_bytes(data)
    reader = subprocess.Popen([sys.executable, "-c", SLOW_READER, str(out)], stdin=subprocess.PIPE)
    proc = subprocess.Popen([sys.executable, "-m", "otelbridge", "--exporter", "none", "--stats-json",
                             str(stats), "--", "cat", str(src)], stdout=reader.stdin,
                            stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
    reader.stdin.close()
    if kill_decoder_after_s is not None:
        decoder = decoding_process(proc.pid)
        time.sleep(kill_decoder_after_s)
        os.kill(decoder, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    reader.wait(30)
    got = out.read_bytes()
    return proc.returncode, got, json.loads(stats.read_text()) if stats.exists() else None, err.decode()


def repeated_recording(times: int) -> bytes:
    from tests.conftest import FIXTURES

    path = FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl"
    if not path.is_file():
        pytest.skip("../shared/fixtures not present")
    return path.read_bytes() * times


def test_a_slow_reader_and_a_backlog_together_lose_no_byte_and_count_every_line(tmp_path):
    """The output makes chunks wait while the data pipe is full: a chunk waiting for the output
    is finished before the next is read — every byte counted once, every line decoded or counted
    as not decoded, none torn into bad lines."""
    data = repeated_recording(100)  # 21 MB, 7,800 lines
    code, got, stats, err = slow_reader_run(tmp_path, data)
    assert code == 0, err
    assert got == data
    lines = data.count(b"\n")
    assert (stats["bytes"], stats["lines"], stats["bad_lines"]) == (len(data), lines, 0)
    assert stats["lines_decoded"] + stats["lines_not_decoded"] == lines


def test_a_decoding_process_killed_while_a_backlog_is_kept_costs_the_traces_only(tmp_path):
    data = repeated_recording(200)  # 42 MB
    code, got, stats, err = slow_reader_run(tmp_path, data, kill_decoder_after_s=0.3)
    assert code == 0, err
    assert got == data
    assert "Traceback" not in err
    assert "decoding process" in err


#: a session without timestamps: init, one model call, its result
INIT = b'{"type":"system","subtype":"init","session_id":"s1","model":"claude-opus-4-8","tools":[]}\n'
REPLY = (b'{"type":"assistant","session_id":"s1","message":{"id":"m1","model":"claude-opus-4-8",'
         b'"role":"assistant","content":[{"type":"text","text":"hi"}],'
         b'"usage":{"input_tokens":5,"output_tokens":7}}}\n')
RESULT = (b'{"type":"result","subtype":"success","session_id":"s1","is_error":false,"num_turns":1,'
          b'"result":"ok","usage":{"input_tokens":5,"output_tokens":7}}\n')


def _chat_and_session(live: Live, rx):
    """The run ended, its spans at ``rx``: (the model call's span, the session's)."""
    live.close_and_wait()
    spans = rx.received.wait_for(3, timeout=10)
    assert live.proc.returncode == 0, live.stderr
    by_name = {s.name: s for s in spans}
    return by_name["chat claude-opus-4-8"], by_name["invoke_agent agent"]


def test_a_line_is_dated_when_it_passed_not_when_decoding_reached_it():
    """``--clock wall`` dates a line without a timestamp of its own by when it passed the tee:
    while the decoding process is stopped (as if far behind) and thousands of small writes pass,
    the lines still get the times they passed at, not the time decoding reached them."""
    from tests.receivers import HttpReceiver

    with HttpReceiver() as rx:
        live = Live(["--clock", "wall", "--endpoint", rx.endpoint],
                    env=clean_env(OTEL_BSP_SCHEDULE_DELAY="100"))
        live.send([INIT])
        live.wait_echo(1)
        with stopped(decoding_process(live.proc.pid)):
            reply_ns = time.time_ns()
            live.send([REPLY])
            # thousands of chunks: far more than the data pipe has slots, and than the ring
            # would hold at a record a chunk
            for _ in range(3000):
                live.send([b'{"type":"rate_limit_event"}\n'])
                time.sleep(0.0002)
            result_ns = time.time_ns()
            live.send([RESULT])
            live.wait_echo(3003)
            time.sleep(1.0)  # decoding reaches the lines at least a second after they passed
        chat, agent = _chat_and_session(live, rx)
    # passed right after the times taken before sending (a pipe and a poll away; a chunk within
    # RECORD_EVERY_NS of the last record takes its time), far less than the second the stopped
    # decoding process added
    from otelbridge.source.arrivals import RECORD_EVERY_NS

    # the reply is the call's one line: it ends the call (which starts when it was asked for)
    assert -RECORD_EVERY_NS <= chat.end_ns - reply_ns < 200_000_000
    assert -RECORD_EVERY_NS <= agent.end_ns - result_ns < 200_000_000


def test_lines_of_the_first_second_are_dated_when_they_passed_under_clock_auto():
    """The default ``--clock auto`` waits up to a second for a timestamp before it settles on
    the wall clock; a stream without one (a Claude Code run's first lines) still dates each line
    of that second when it passed, not all of them at the first line's time."""
    from otelbridge.source.arrivals import RECORD_EVERY_NS
    from tests.receivers import HttpReceiver

    with HttpReceiver() as rx:
        live = Live(["--endpoint", rx.endpoint], env=clean_env(OTEL_BSP_SCHEDULE_DELAY="100"))
        init_ns = time.time_ns()
        live.send([INIT])
        live.wait_echo(1)
        time.sleep(0.5)
        reply_ns = time.time_ns()
        live.send([REPLY])
        live.wait_echo(2)
        time.sleep(0.2)
        result_ns = time.time_ns()
        live.send([RESULT])
        chat, agent = _chat_and_session(live, rx)
    assert -RECORD_EVERY_NS <= agent.start_ns - init_ns < 200_000_000
    assert -RECORD_EVERY_NS <= chat.end_ns - reply_ns < 200_000_000
    assert -RECORD_EVERY_NS <= agent.end_ns - result_ns < 200_000_000
    assert chat.end_ns - agent.start_ns >= 400_000_000  # not the first line's time
    assert agent.start_ns <= chat.start_ns < chat.end_ns  # asked for at the turn's start
