"""The otelbridge benchmark: throughput against GNU tee, added latency per line,
memory growth, agent spans/s. Run by hand, never in the test suite; numbers go to RESULTS.md.

    .venv/bin/python bench/run.py all --pairs 5      # prints the table bench/RESULTS.md shows

Streams come from :mod:`bench.streams` (deterministic, cached in ``--dir``). Throughput runs
``cat FILE | X | cat >/dev/null`` with X = ``tee /dev/null`` and X = otelbridge alternately on the
same file (``--pairs`` pairs) and reports medians; the "receiver" rows export to a local OTLP/gRPC
receiver (``tests/receivers.py``) in its own process. Latency: a timestamping emitter → X → a
reader, through pipes, while workflows of 50 agents are exported to the receiver. Memory: the
peak of otelbridge's processes (the tee's and the decoding process) on a stream minus on empty
input, as the sum of their ``VmHWM`` and as their summed ``Pss``; at rest, beside the Go-built
collector, also their resident pages counted once (:mod:`bench.memory`).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import memory, streams  # noqa: E402
from bench.memory import proc_kb, tree  # noqa: E402

PY = sys.executable
OB = [PY, "-m", "otelbridge"]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "TRACEPARENT"}
#: where otelbridge runs (``python -m`` finds the package there first): ``--tree`` changes it
CWD = ROOT

RECEIVER = textwrap.dedent("""
    import sys
    from tests.receivers import GrpcReceiver, HttpReceiver
    rx = (HttpReceiver if sys.argv[1] == "http" else GrpcReceiver)().__enter__()
    print(rx.endpoint, flush=True)
    for line in sys.stdin:          # "count" → how many spans arrived so far
        with rx.received.lock:
            n = sum(len(ss.spans) for r in rx.received.requests
                    for rs in r.resource_spans for ss in rs.scope_spans)
        print(n, flush=True)
""")


class Receiver:
    """A local OTLP receiver (``kind``: ``grpc`` or ``http``) in its own process (so it never
    shares our GIL)."""

    def __init__(self, kind: str = "grpc") -> None:
        self.kind = kind

    def __enter__(self) -> "Receiver":
        self.proc = subprocess.Popen([PY, "-c", RECEIVER, self.kind], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=CWD, env=ENV)
        self.endpoint = self.proc.stdout.readline().strip()
        return self

    def count(self) -> int:
        self.proc.stdin.write("count\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()


def ensure(kind: str, directory: Path) -> Path:
    path = directory / f"{kind}.jsonl"
    if not path.exists():
        streams.write(kind, str(path))
    return path


def timed(shell: str) -> float:
    t = time.perf_counter()
    subprocess.run(["bash", "-o", "pipefail", "-c", shell], check=True, env=ENV, cwd=CWD)
    return time.perf_counter() - t


def ob_cmd(args: list[str]) -> str:
    return " ".join(OB + ["-q"] + args)


# --------------------------------------------------------------------------- throughput


def pipeline_times(path: Path, middle: list[str]) -> tuple[float, float]:
    """``cat FILE | MIDDLE | reader``: seconds until the reader saw the end of the stream, and
    until MIDDLE (and everything it started) had exited. The reader is this process (1 MiB
    reads, bytes counted), the same for tee and otelbridge."""
    t = time.perf_counter()
    src = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    mid = subprocess.Popen(middle, stdin=src.stdout, stdout=subprocess.PIPE, env=ENV, cwd=CWD)
    src.stdout.close()
    got = 0
    while chunk := os.read(mid.stdout.fileno(), 1 << 20):
        got += len(chunk)
    eof = time.perf_counter() - t
    mid.stdout.close()
    mid.wait()
    src.wait()
    done = time.perf_counter() - t
    if got != path.stat().st_size or mid.returncode != 0:
        raise SystemExit(f"{middle[0]}: {got} bytes out of {path.stat().st_size}, status {mid.returncode}")
    return eof, done


def throughput(path: Path, pairs: int, args: list[str]) -> dict:
    """Medians of ``pairs`` alternating runs of tee and otelbridge on the same file: the time
    until the downstream reader saw the end of the stream (what the pipeline's consumer waits
    for) and until otelbridge exited (decoding what it held, ending spans, flushing); also the
    median share of the stream's bytes skipped because decoding fell behind (``--stats-json``)."""
    size = path.stat().st_size
    stats_path = path.parent / f"stats-{os.getpid()}.json"
    tee, ob_eof, ob_exit, skipped, decoded = [], [], [], [], []
    for _ in range(pairs):
        tee.append(pipeline_times(path, ["tee", "/dev/null"])[1])
        eof, done = pipeline_times(path, OB + ["-q", *args, "--stats-json", str(stats_path)])
        ob_eof.append(eof)
        ob_exit.append(done)
        st = json.loads(stats_path.read_text())
        skipped.append((st["bytes_not_decoded"] + st["lines_not_decoded"]) / size)
        decoded.append(st["lines_decoded"])
    stats_path.unlink()
    mt, me, mx = statistics.median(tee), statistics.median(ob_eof), statistics.median(ob_exit)
    return {"stream": path.stem, "bytes": size, "tee_s": mt, "ob_eof_s": me, "ob_s": mx,
            "tee_MBps": size / mt / 1e6, "ob_MBps": size / mx / 1e6, "ratio_eof": mt / me,
            "ratio": mt / mx, "skipped_share": statistics.median(skipped),
            "lines_decoded": statistics.median(decoded)}


def startup(pairs: int, args: list[str]) -> dict:
    """Seconds from start to the first line passed through, and to exit after an immediate end
    of input (interpreter, imports, set-up, shutdown: part of every throughput time)."""
    first, done = [], []
    for _ in range(pairs):
        t = time.perf_counter()
        proc = subprocess.Popen(OB + ["-q"] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env=ENV, cwd=CWD)
        proc.stdin.write(b'{"type":"stream_event"}\n')
        proc.stdin.flush()
        proc.stdout.readline()
        first.append(time.perf_counter() - t)
        proc.stdin.close()
        proc.wait()
        done.append(time.perf_counter() - t)
    return {"first_byte_s": statistics.median(first), "exit_s": statistics.median(done)}


# --------------------------------------------------------------------------- memory


# --------------------------------------------------------------------------- latency

EMITTER = textwrap.dedent("""
    import json, sys, time
    rate, seconds, wf_every = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    out = sys.stdout.buffer
    epoch = 1783647395000
    def workflow(n):
        agents = [{"type": "workflow_agent", "index": i, "label": f"agent {i}", "phaseIndex": 1,
                   "agentId": f"a{i}", "state": "done", "startedAt": epoch + i, "durationMs": 5}
                  for i in range(1, 51)]
        base = {"type": "system", "task_id": f"w{n}", "session_id": "lat"}
        return b"".join(json.dumps(d).encode() + b"\\n" for d in (
            {**base, "subtype": "task_started", "task_type": "local_workflow", "workflow_name": "lat"},
            {**base, "subtype": "task_progress", "workflow_progress":
                [{"type": "workflow_phase", "index": 1, "title": "Run"}] + agents},
            {**base, "subtype": "task_updated", "patch": {"status": "completed", "end_time": epoch + 100}},
            {**base, "subtype": "task_notification", "status": "completed", "usage": {"duration_ms": 100}}))
    out.write(b'{"type":"stream_event","warmup":true}\\n'); out.flush()
    time.sleep(2.0)  # let the middle process start up: startup is not per-line latency
    start = time.monotonic()
    next_wf, n, i = start, 0, 0
    while (now := time.monotonic()) - start < seconds:
        if wf_every and now >= next_wf:
            n += 1
            out.write(workflow(n)); out.flush()
            next_wf += wf_every
        out.write(b'{"type":"stream_event","t":%d,"i":%d}\\n' % (time.monotonic_ns(), i)); out.flush()
        i += 1
        time.sleep(max(0.0, start + i / rate - time.monotonic()))
""")

READER = textwrap.dedent("""
    import sys, time, json
    lat = []
    for line in sys.stdin.buffer:
        now = time.monotonic_ns()
        k = line.find(b'"t":')
        if k >= 0 and line.startswith(b'{"type":"stream_event"'):
            lat.append(now - int(line[k + 4:line.index(b",", k)]))
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1000
    print(json.dumps({"n": len(lat), "p50_us": q(0.50), "p99_us": q(0.99), "max_us": lat[-1] / 1000}))
""")


def latency(middle: list[str], rate: float, seconds: float, wf_every: float) -> dict:
    """emitter | middle | reader, as three processes joined by pipes."""
    emitter = subprocess.Popen([PY, "-c", EMITTER, str(rate), str(seconds), str(wf_every)],
                               stdout=subprocess.PIPE)
    mid = subprocess.Popen(middle, stdin=emitter.stdout, stdout=subprocess.PIPE, env=ENV, cwd=CWD)
    reader = subprocess.Popen([PY, "-c", READER], stdin=mid.stdout, stdout=subprocess.PIPE, text=True)
    emitter.stdout.close()
    mid.stdout.close()
    out = reader.communicate()[0]
    emitter.wait()
    mid.wait()
    return json.loads(out)


# --------------------------------------------------------------------------- spans/s


def spans_in_process(workflows: int = 400, agents: int = 50) -> dict:
    """Agent spans/s through tracker + span builder (SDK spans, no exporter), events pre-decoded."""
    from otelbridge import config
    from otelbridge.clock import Clock
    from otelbridge.events import TaskNotification, TaskUpdated, WorkflowAgent, WorkflowProgress, WorkflowStarted
    from otelbridge.export import Exporters
    from otelbridge.ids import Ids
    from otelbridge.spans import SpanBuilder
    from otelbridge.stats import Stats
    from otelbridge.tracker import Context, Tracker

    stats = Stats()
    exporters = Exporters(config.build(exporter="none", protocol=None), stats)
    builder = SpanBuilder(exporters.provider, exporters.ids, stats)
    tracker = Tracker(Context(emit=builder.emit, ids=Ids(False), clock=Clock("stream"), stats=stats))
    t0 = streams.EPOCH_MS * 1_000_000
    events = []
    for w in range(workflows):
        task = f"t{w}"
        events.append(WorkflowStarted("s", t0, task_id=task, workflow_name="bench"))
        events.append(WorkflowProgress("s", t0 + 10, task_id=task, agents=[
            WorkflowAgent(i, agent_id=f"a{i}", state="done", label=f"agent {i}", phase_index=1,
                          started_at=streams.EPOCH_MS + i, ended_at=streams.EPOCH_MS + 1000 + i, tokens=100, model="m")
            for i in range(agents)]))
        events.append(TaskUpdated("s", t0 + 2000, task_id=task, status="completed", end_time_ns=t0 + 2000))
        events.append(TaskNotification("s", t0 + 2000, task_id=task, status="completed"))
    t = time.perf_counter()
    for ev in events:
        tracker.handle(ev)
    tracker.finish()
    took = time.perf_counter() - t
    return {"agent_spans": workflows * agents, "spans": stats.spans_started, "seconds": took,
            "agent_spans_per_s": workflows * agents / took}


def workflow_stream(path: Path, workflows: int, agents: int = 50) -> None:
    epoch = streams.EPOCH_MS
    with open(path, "wb") as fh:
        for w in range(workflows):
            base = {"type": "system", "task_id": f"w{w}", "session_id": "e2e"}
            entries = [{"type": "workflow_phase", "index": 1, "title": "Run"}] + [
                {"type": "workflow_agent", "index": i, "label": f"agent {i}", "phaseIndex": 1,
                 "agentId": f"a{i}", "state": "done", "startedAt": epoch + i, "durationMs": 5,
                 "tokens": 100, "model": "claude-opus-4-8"} for i in range(1, agents + 1)]
            for doc in ({**base, "subtype": "task_started", "task_type": "local_workflow", "workflow_name": "e2e"},
                        {**base, "subtype": "task_progress", "workflow_progress": entries},
                        {**base, "subtype": "task_updated", "patch": {"status": "completed", "end_time": epoch + 100}},
                        {**base, "subtype": "task_notification", "status": "completed", "usage": {"duration_ms": 100}}):
                fh.write(json.dumps(doc, separators=(",", ":")).encode() + b"\n")


def workflow_snapshot_stream(path: Path, workflows: int, agents: int = 50, wave: int = 10) -> None:
    """Workflows of ``agents`` agents as Claude Code's workflow tool emits them (the shape of
    the recording ``claudecli-go-workflow-phased-2.1.270.jsonl``): snapshot replacement — every
    ``task_progress`` repeats every agent so far — one snapshot per agent's start, progress and
    end; agents run ``wave`` at a time, one phase a wave; entries carry prompt and result
    previews as real ones do."""
    epoch = streams.EPOCH_MS
    prompt = ("Read the files under src/ that the plan names, then run the focused tests with "
              "`pytest -q tests/unit` (timeout 300000 ms, in the foreground) and report each "
              "failure with its file, line and the assertion that failed. Nothing else.")
    with open(path, "wb") as fh:
        def write(doc: dict) -> None:
            fh.write(json.dumps(doc, separators=(",", ":")).encode() + b"\n")

        for w in range(workflows):
            t0 = epoch + w * 600_000
            base = {"type": "system", "task_id": f"w{w}", "session_id": "snapshots",
                    "tool_use_id": f"toolu_w{w}"}
            write({**base, "subtype": "task_started", "task_type": "local_workflow",
                   "workflow_name": "review", "description": "Review: checks"})
            phases = [{"type": "workflow_phase", "index": p + 1, "title": f"Wave {p + 1}"}
                      for p in range((agents + wave - 1) // wave)]
            shown: list[dict] = []
            for first in range(0, agents, wave):
                batch = []
                for i in range(first + 1, min(first + wave, agents) + 1):
                    start = t0 + i * 1_000
                    agent = {"type": "workflow_agent", "index": i, "label": f"check-{i}",
                             "phaseIndex": first // wave + 1, "phaseTitle": f"Wave {first // wave + 1}",
                             "agentId": f"a{w:04x}{i:012x}", "model": "claude-opus-5[1m]",
                             "state": "start", "startedAt": start, "queuedAt": start - 3,
                             "attempt": 1, "promptPreview": f"{prompt} (part {i})", "promptFramed": False}
                    shown.append(agent)
                    batch.append(agent)
                    write({**base, "subtype": "task_progress", "description": f"Start: check-{i}",
                           "workflow_progress": phases[:first // wave + 1] + shown})
                for step, key in ((0, "progress"), (1, "done")):
                    for agent in batch:
                        agent.update(state=key, lastProgressAt=agent["startedAt"] + 40_000 + step * 20_000,
                                     lastToolName="Bash", lastToolSummary="pytest -q tests/unit",
                                     toolCalls=2 + step, tokens=20_000 + 9_000 * step)
                        if key == "done":
                            agent.update(durationMs=60_000, resultPreview=f"4 failures in part {agent['index']}")
                        write({**base, "subtype": "task_progress", "description": f"{key}: {agent['label']}",
                               "usage": {"total_tokens": 30_000 * agent["index"], "tool_uses": 3 * agent["index"],
                                         "duration_ms": agent["lastProgressAt"] - t0},
                               "workflow_progress": phases[:first // wave + 1] + shown})
            end = t0 + agents * 1_000 + 120_000
            write({**base, "subtype": "task_updated", "patch": {"status": "completed", "end_time": end}})
            write({**base, "subtype": "task_notification", "status": "completed",
                   "usage": {"duration_ms": end - t0}})


def spans_end_to_end(directory: Path, workflows: int = 1000, agents: int = 50,
                     extra: list[str] | None = None) -> dict:
    """Agent spans/s from a stream through otelbridge (``extra``: more flags) to a local gRPC
    receiver, from launch until otelbridge has exited with every span confirmed."""
    path = directory / f"workflows-{workflows}x{agents}.jsonl"
    if not path.exists():
        workflow_stream(path, workflows, agents)
    total = workflows * (agents + 2) + 1  # and the session span
    with Receiver() as rx:
        t = time.perf_counter()
        with open(path, "rb") as stdin:
            out = subprocess.run(OB + ["--protocol", "grpc", "--endpoint", rx.endpoint, "--grace-period", "0",
                                       "--flush-timeout", "60", *(extra or [])], stdin=stdin,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, cwd=CWD)
        took = time.perf_counter() - t  # otelbridge has exited: its flush is over
        got = rx.count()
    agent_got = (got - 1) * agents / (agents + 2)
    return {"agent_spans": workflows * agents, "spans_sent": total, "spans_received": got,
            "seconds": took, "agent_spans_per_s": agent_got / took,
            "stderr": out.stderr.decode().strip().splitlines()[-1:]}


SUSTAIN_EMITTER = textwrap.dedent("""
    import sys, time
    path, per_s, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    out = sys.stdout.buffer
    with open(path, "rb") as fh:
        lines = fh.readlines()
    groups = [b"".join(lines[i:i + 4]) for i in range(0, len(lines), 4)]  # one workflow each
    time.sleep(1.0)  # otelbridge's start-up is not part of the rate
    sys.stderr.write("go\\n"); sys.stderr.flush()
    start = time.monotonic()
    n = int(per_s * seconds)
    for i in range(n):
        out.write(groups[i % len(groups)]); out.flush()
        time.sleep(max(0.0, start + (i + 1) / per_s - time.monotonic()))
""")


def spans_sustained(directory: Path, rate: float, seconds: float = 10.0, agents: int = 50) -> dict:
    """A live stream offering ``rate`` agent spans/s for ``seconds`` (50-agent workflows written
    one at a time, paced, after a 1 s start-up pause) → otelbridge → a local gRPC receiver.
    The receiver's count is read when the stream starts + 2 s and when it ends: the received
    rate over that window; then the totals once otelbridge has exited (every span confirmed),
    how long it took after the stream's end (its drain), and what it skipped or dropped. Memory:
    the tree's summed ``VmRSS`` and ``Pss`` when the stream starts (set up, idle) and their
    highest values until otelbridge exits (sampled every 50 ms): the growth under that load."""
    workflows = int(rate * seconds / agents)
    path = directory / f"sustain-{workflows}x{agents}.jsonl"
    if not path.exists():
        workflow_stream(path, workflows, agents)
    stats_path = directory / "sustain-stats.json"
    with Receiver() as rx:
        emitter = subprocess.Popen([PY, "-c", SUSTAIN_EMITTER, str(path), str(rate / agents), str(seconds)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ob = subprocess.Popen(OB + ["-q", "--protocol", "grpc", "--endpoint", rx.endpoint, "--grace-period", "0",
                                    "--flush-timeout", "30", "--stats-json", str(stats_path)],
                              stdin=emitter.stdout, stdout=subprocess.DEVNULL, env=ENV, cwd=CWD)
        emitter.stdout.close()
        emitter.stderr.readline()  # "go"
        t0 = time.monotonic()

        def tree_kb() -> tuple[int, int]:
            pids = tree(ob.pid)
            return (sum(proc_kb(p, "status", "VmRSS") for p in pids),
                    sum(proc_kb(p, "smaps_rollup", "Pss") for p in pids))

        at_start = tree_kb()
        peak = list(at_start)

        def sample() -> None:
            while ob.poll() is None:
                now = tree_kb()
                peak[0], peak[1] = max(peak[0], now[0]), max(peak[1], now[1])
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        time.sleep(2.0)
        c0, w0 = rx.count(), time.monotonic()
        emitter.wait()
        c1, w1 = rx.count(), time.monotonic()
        ob.wait()
        drain = time.monotonic() - w1
        got = rx.count()
        sampler.join()
    st = json.loads(stats_path.read_text())
    sent = workflows * (agents + 2) + 1
    return {"offered_agent_spans_per_s": rate, "seconds": w1 - t0, "spans_sent": sent, "spans_received": got,
            "received_agent_spans_per_s": (c1 - c0) / (w1 - w0) * agents / (agents + 2),
            "drain_s": drain, "lines_not_decoded": st["lines_not_decoded"], "spans_dropped": st["spans_dropped"],
            "rss_growth_MB": (peak[0] - at_start[0]) / 1024, "pss_growth_MB": (peak[1] - at_start[1]) / 1024}


#: offered rates (agent spans/s) of the sustained runs
SUSTAIN_RATES = (20000, 25000, 30000)


def median_run(measure, runs: int) -> dict:
    """``measure()`` ``runs`` times; the run with the median ``agent_spans_per_s``, with every
    run's rate under ``runs_per_s``."""
    return _median([measure() for _ in range(max(runs, 1))])


def _median(rows: list[dict]) -> dict:
    rows = sorted(rows, key=lambda r: r["agent_spans_per_s"])
    return {**rows[len(rows) // 2], "runs_per_s": [round(r["agent_spans_per_s"]) for r in rows]}


# --------------------------------------------------------------------------- report


def report(results: dict) -> str:
    lines = ["| measure | otelbridge | GNU tee | ratio / target |", "|---|---|---|---|"]
    for row in results.get("throughput", []):
        lines.append(f"| throughput {row['stream']} ({row['bytes'] / 1e6:.0f} MB), {row['exporter']}: "
                     f"stream's end downstream | {row['ob_eof_s']:.3f} s | {row['tee_s']:.3f} s "
                     f"({row['tee_MBps']:.0f} MB/s) | **{row['ratio_eof']:.2f}×** "
                     + ("(≥ 0.9×, goal 1.0×) |" if row['stream'] == "mix" else "(bar on the mix only; goal 1.0×) |"))
        lines.append(f"| — same runs, until otelbridge exited ({row['skipped_share']:.0%} of the bytes "
                     f"skipped behind, {row['lines_decoded']:,.0f} lines decoded) | "
                     f"{row['ob_s']:.3f} s ({row['ob_MBps']:.0f} MB/s) | {row['tee_s']:.3f} s | "
                     f"**{row['ratio']:.2f}×** |")
    for key, label in (("startup", "--exporter none"), ("startup_otlp", "OTLP/gRPC")):
        st = results.get(key)
        if st:
            lines.append(f"| start-up, {label}: first line through / exit after one line | "
                         f"{st['first_byte_s'] * 1000:.0f} ms / {st['exit_s'] * 1000:.0f} ms | – | "
                         f"part of every throughput time |")
    lat = results.get("latency")
    if lat:
        ob, tee = lat["otelbridge"], lat["tee"]
        lines.append(f"| latency per line p50 / p99 ({ob['n']} lines, 50-agent workflows exported) | "
                     f"{ob['p50_us']:.0f} / {ob['p99_us']:.0f} µs | {tee['p50_us']:.0f} / {tee['p99_us']:.0f} µs | "
                     f"added p50 {ob['p50_us'] - tee['p50_us']:.0f} µs, **p99 {ob['p99_us'] - tee['p99_us']:.0f} µs** (≤ 1000) |")
    for row in results.get("memory", []):
        lines.append(f"| memory growth, {row['stream']}, {row.get('exporter', '--exporter none')} | "
                     f"{row['peak_MB']:.1f} MB peak − {row['idle_MB']:.1f} MB idle "
                     f"= **{row['growth_MB']:.1f} MB** (PSS: {row.get('pss_growth_MB', float('nan')):.1f} MB) "
                     f"| – | ≤ 32 MB |")
    for key, over, bar in (("rest", "OTLP/HTTP", "2, ≤ 50 MB"), ("rest_grpc", "OTLP/gRPC", "2")):
        rest = results.get(key)
        if rest:
            alone = f"{rest['alone_MB']:.1f} MB" if rest["alone_MB"] is not None else "– (not root)"
            lines.append(f"| at rest after a short session, {over} to the Go-built collector: processes, "
                         f"summed RSS / PSS / pages counted once | **{rest['processes']:.0f}** processes, "
                         f"{rest['rss_MB']:.1f} / {rest['pss_MB']:.1f} / **{alone}** | – | {bar} |")
    sp = results.get("spans")
    if sp:
        lines.append(f"| agent spans/s, tracker + span builder, median of {len(sp['runs_per_s'])} | "
                     f"**{sp['agent_spans_per_s']:,.0f}/s** ({sp['agent_spans']} in {sp['seconds']:.2f} s) | – | ≥ 50 000/s |")
    for row in results.get("sustained", []):
        lines.append(f"| sustained: a live stream offering {row['offered_agent_spans_per_s']:,.0f} agent spans/s "
                     f"for {row['seconds']:.0f} s → local gRPC receiver | received at **{row['received_agent_spans_per_s']:,.0f}/s**; "
                     f"{row['spans_received']}/{row['spans_sent']} spans, {row['lines_not_decoded']} lines skipped, "
                     f"{row['spans_dropped']} dropped; exit {row['drain_s']:.2f} s after the stream's end; "
                     f"memory growth "
                     f"{row.get('rss_growth_MB', float('nan')):.1f} MB (PSS {row.get('pss_growth_MB', float('nan')):.1f} MB) "
                     f"| – | ≥ 10 000/s |")
    for e2e in results.get("e2e", []):
        lines.append(f"| agent spans/s, end to end to a local gRPC receiver (the decoding process "
                     f"exports), median of "
                     f"{len(e2e['runs_per_s'])} ({', '.join(f'{r:,}' for r in e2e['runs_per_s'])}) | "
                     f"**{e2e['agent_spans_per_s']:,.0f}/s** "
                     f"({e2e['spans_received']}/{e2e['spans_sent']} spans in {e2e['seconds']:.2f} s) | – | ≥ 10 000/s |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description="otelbridge benchmark")
    ap.add_argument("what", choices=("all", "throughput", "latency", "memory", "rest", "spans", "e2e"))
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/otelbridge-bench")
    ap.add_argument("--streams", default="mix,long,tiny")
    ap.add_argument("--seconds", type=float, default=10.0, help="latency run length")
    ap.add_argument("--rate", type=float, default=1000.0, help="latency: lines per second")
    ap.add_argument("--spans-runs", type=int, default=3, help="spans/s: runs of each row (median shown)")
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--tree", help="run otelbridge from this source tree instead (e.g. `git archive "
                                   "REV | tar -x -C DIR`: a before in the same run)")
    args = ap.parse_args()
    if args.tree:
        global CWD
        CWD = Path(args.tree).resolve()
        ENV["PYTHONPATH"] = str(CWD)
    # byte-compiled as pip does at install: under PYTHONDONTWRITEBYTECODE a run would compile
    # every module it imports (~90 ms), or those changed since the last compile
    compileall.compile_dir(CWD / "otelbridge", quiet=1)
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    kinds = args.streams.split(",")
    if args.what in ("all", "throughput"):
        results["throughput"] = []
        for kind in kinds:
            path = ensure(kind, directory)
            row = throughput(path, args.pairs, ["--exporter", "none"])
            results["throughput"].append({**row, "exporter": "--exporter none"})
            print(row, file=sys.stderr)
        results["startup"] = startup(args.pairs, ["--exporter", "none"])
        print(results["startup"], file=sys.stderr)
        with Receiver() as rx:
            results["startup_otlp"] = startup(args.pairs, ["--protocol", "grpc", "--endpoint", rx.endpoint])
            print(results["startup_otlp"], file=sys.stderr)
            row = throughput(ensure("mix", directory), args.pairs,
                             ["--protocol", "grpc", "--endpoint", rx.endpoint])
            results["throughput"].append({**row, "exporter": "OTLP/gRPC to a local receiver"})
            print(row, file=sys.stderr)
    if args.what in ("all", "latency"):
        with Receiver() as rx:
            ob = latency(OB + ["-q", "--protocol", "grpc", "--endpoint", rx.endpoint, "--grace-period", "0"],
                         args.rate, args.seconds, 0.1)
            ob["spans_received"] = rx.count()
        tee = latency(["tee", "/dev/null"], args.rate, args.seconds, 0.1)
        results["latency"] = {"otelbridge": ob, "tee": tee}
        print(results["latency"], file=sys.stderr)
    if args.what in ("all", "memory"):
        results["memory"] = memory.growth([ensure("mix", directory), ensure("long", directory)],
                                          OB + ["-q", "--exporter", "none"], ENV, CWD)
        with Receiver() as rx:
            results["memory"] += [
                {**row, "exporter": "OTLP/gRPC"} for row in
                memory.growth([ensure("mix", directory)],
                              OB + ["-q", "--protocol", "grpc", "--endpoint", rx.endpoint], ENV, CWD)]
        print(results["memory"], file=sys.stderr)
    if args.what in ("all", "rest"):
        results["rest"] = memory.at_rest(OB + ["-q"], ENV, CWD)
        print(results["rest"], file=sys.stderr)
        results["rest_grpc"] = memory.at_rest(OB + ["-q"], ENV, CWD, "grpc")
        print(results["rest_grpc"], file=sys.stderr)
    if args.what in ("all", "spans"):
        results["spans"] = median_run(spans_in_process, args.spans_runs)
        print(results["spans"], file=sys.stderr)
    if args.what in ("all", "spans", "e2e"):
        results["e2e"] = [median_run(lambda: spans_end_to_end(directory), args.spans_runs)]
        print(results["e2e"], file=sys.stderr)
    if args.what in ("all", "spans"):
        results["sustained"] = [spans_sustained(directory, rate) for rate in SUSTAIN_RATES]
        print(results["sustained"], file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(report(results))


if __name__ == "__main__":
    main()
