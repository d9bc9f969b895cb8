"""Experiment (run by hand, not product code): does moving span building + OTLP encoding/export
into a process of its own reach 20,000 agent spans/s end to end to a local gRPC receiver?

    .venv/bin/python bench/exporter_process.py --runs 3

Three variants, alternated round by round on the same stream (``bench.run.workflow_stream``,
1,000 workflows × 50 agents: 52,001 spans with the session span), each to a fresh
``bench.run.Receiver`` (tests/receivers.py GrpcReceiver in its own process):

* ``product`` — ``bench.run.spans_end_to_end``: otelbridge as a subprocess (tee + decoding
  process), timed from launch to exit (start-up included, as ``bench/run.py spans`` reports it);
* ``single`` — this script, one process: the product's ``Pipeline`` (line splitting, decoding,
  tracker, redaction, ``SpanBuilder``, ``Exporters`` with BatchSpanProcessor + OTLP/gRPC, paced by
  ``Exporters.pace`` after each line as ``LiveFront`` does) fed the file in 64 KiB chunks;
* ``split`` — process A: the same ``Pipeline`` with ``--exporter none`` whose tracker emits
  each ``SpanRecord`` into a batch; a batch (``--batch`` records) is pickled and written to a
  pipe (4-byte length + pickle protocol 5; msgspec cannot carry the 128-bit trace ids).
  Process B: ``Pipeline`` with OTLP/gRPC; unpickles and hands every record to the pipeline's
  ``emit`` (SpanBuilder + report, as in the product), ``Exporters.pace`` after each batch;
  at end of input ``Exporters.shutdown`` (the flush).

``single`` and ``split`` are timed from "go" (both set up) until B/the process has flushed
(every span confirmed exported); the receiver's count is checked afterwards. CPU seconds per
process come from ``resource.getrusage`` (go → done) in the roles and ``/proc/<pid>/stat`` for
the receiver. Grace windows (``--grace-period 0`` in the product) are timed by the stream clock
(``Pipeline.stream_timers``): they close at the next line, as they would in the product.
``splitN`` runs N B processes, A handing its batches to each in turn. ``--costs`` times each
stage alone (µs per span).

Measured 2026-11-29 on the 2-core machine (two alternating runs of 3 rounds, medians, agent
spans/s): product 11,829 / 12,564; single 12,616 / 12,511; split 13,727 / 13,111; split2
20,717 / 19,824; split3 21,762. Per span (CPU, go → done): single 75 µs; A 12 µs (pickle
3–4 µs, 200 bytes, and ~75 % of A's wall time blocked writing to B), B 66–68 µs, of which
its main thread 22 µs (unpickle 5–10, build + report ~12–17) and the BatchSpanProcessor's
export thread ~45 µs (``encode_spans`` 38 µs, gRPC send ~8 µs); receiver 3–4 µs. One B is
one GIL at ~100 % of a core: ≤ ~15k spans/s. Set-up (OpenTelemetry + gRPC imports, each
process ~0.25 s, started one after another here) is outside the go → done times.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHUNK = 1 << 16
HEADER = struct.Struct("<I")
TICK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- roles (subprocesses)


def _cpu() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime, time.thread_time()


def _pipeline(exporter: str | None, endpoint: str | None, emit=None):
    """The product's Pipeline as the decoding process builds it (report included), with
    grace windows on the stream clock; ``emit`` replaces where span records go."""
    from otelbridge import config
    from otelbridge.pipeline import Pipeline
    from otelbridge.stats import Stats
    from otelbridge.summary import Report
    from otelbridge.app import say

    if exporter == "none":
        cfg = config.build(exporter="none", protocol=None, quiet=True, grace_s=0.0)
    else:
        cfg = config.build(exporter=None, protocol="grpc", endpoint=endpoint, quiet=True,
                           grace_s=0.0, flush_timeout_s=60.0)
    stats = Stats()
    pipeline = Pipeline.build(cfg, stats, None, Report(cfg, say))
    pipeline.stream_timers = True
    if emit is not None:
        pipeline.emit = emit
    pipeline.new_stream()  # the tracker takes pipeline.emit and the stream timers
    return pipeline, stats


def _ready_then_go(info: dict) -> None:
    print(json.dumps({"ready": True, **info}), flush=True)
    sys.stdin.readline()


def _feed(pipeline, path: str) -> None:
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            pipeline.on_chunk(chunk, len(chunk))
    pipeline.end_stream(None)


def _flush_and_report(pipeline, stats, proc0: float, main0: float, extra: dict) -> None:
    """Flush the exporters (bounded, 60 s) and print this role's last JSON line: CPU seconds
    since "go" (process: every thread; main thread alone), span and export counts."""
    t = time.perf_counter()
    ok = pipeline.exporters.shutdown(60.0)
    proc1, main1 = _cpu()
    print(json.dumps({"done": True, "flush_s": time.perf_counter() - t, "cpu_s": proc1 - proc0,
                      "main_thread_cpu_s": main1 - main0, "spans": stats.spans_started,
                      "exported": stats.spans_exported, "dropped": stats.spans_dropped,
                      "all_exported": ok, **extra}), flush=True)


def role_single(path: str, endpoint: str) -> None:
    pipeline, stats = _pipeline(None, endpoint)
    pipeline.after_line = pipeline.exporters.pace
    _ready_then_go({})
    proc0, main0 = _cpu()
    t = time.perf_counter()
    _feed(pipeline, path)
    _flush_and_report(pipeline, stats, proc0, main0, {"feed_s": time.perf_counter() - t})


def role_a(path: str, wfds: list[int], batch_size: int) -> None:
    outs = [os.fdopen(fd, "wb", buffering=0) for fd in wfds]
    batch: list = []
    acc = {"pickle_s": 0.0, "write_s": 0.0, "batches": 0, "bytes": 0, "records": 0}

    def send() -> None:
        t = time.perf_counter()
        data = pickle.dumps(batch, protocol=5)
        t1 = time.perf_counter()
        out = outs[acc["batches"] % len(outs)]  # batches in turn to each B
        view = memoryview(HEADER.pack(len(data)) + data)
        while view:
            view = view[out.write(view):]
        acc["write_s"] += time.perf_counter() - t1
        acc["pickle_s"] += t1 - t
        acc["batches"] += 1
        acc["bytes"] += len(data)
        acc["records"] += len(batch)
        batch.clear()

    def emit(rec) -> None:
        batch.append(rec)
        if len(batch) >= batch_size:
            send()

    pipeline, stats = _pipeline("none", None, emit)
    _ready_then_go({})
    proc0, main0 = _cpu()
    t = time.perf_counter()
    _feed(pipeline, path)
    if batch:
        send()
    for out in outs:
        out.close()  # B sees the end of input
    proc1, main1 = _cpu()
    print(json.dumps({"done": True, "wall_s": time.perf_counter() - t, "cpu_s": proc1 - proc0,
                      "main_thread_cpu_s": main1 - main0, **acc}), flush=True)


def role_b(rfd: int, endpoint: str) -> None:
    inp = os.fdopen(rfd, "rb", buffering=1 << 20)
    pipeline, stats = _pipeline(None, endpoint)
    emit, pace = pipeline.emit, pipeline.exporters.pace
    acc = {"read_wait_s": 0.0, "unpickle_s": 0.0, "emit_s": 0.0, "pace_s": 0.0, "records": 0}
    _ready_then_go({})
    proc0, main0 = _cpu()
    t_start = time.perf_counter()
    while True:
        t = time.perf_counter()
        head = inp.read(HEADER.size)
        if len(head) < HEADER.size:
            break
        data = inp.read(HEADER.unpack(head)[0])
        t1 = time.perf_counter()
        records = pickle.loads(data)
        t2 = time.perf_counter()
        for rec in records:
            emit(rec)
        t3 = time.perf_counter()
        pace()
        acc["read_wait_s"] += t1 - t
        acc["unpickle_s"] += t2 - t1
        acc["emit_s"] += t3 - t2
        acc["pace_s"] += time.perf_counter() - t3
        acc["records"] += len(records)
    _flush_and_report(pipeline, stats, proc0, main0, {"until_eof_s": time.perf_counter() - t_start, **acc})


def costs(path: Path) -> dict:
    """µs per span of each stage alone, in this process, one after another (no other thread
    competing): A's decode + track + redact, pickle and unpickle of 256-record batches, span
    building (the pipeline's emit into a processor that keeps the span), the SDK's
    ``encode_spans`` and ``SerializeToString`` per 512-span batch, and the OTLP/gRPC exporter's
    ``export()`` (encoding included) to a local receiver."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import SpanProcessor

    from bench.run import Receiver

    def timed(fn):
        t = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t

    records: list = []
    pipeline, _ = _pipeline("none", None, records.append)
    _, t_track = timed(lambda: _feed(pipeline, str(path)))
    n = len(records)
    blobs, t_pickle = timed(lambda: [pickle.dumps(records[i:i + 256], protocol=5) for i in range(0, n, 256)])
    back, t_unpickle = timed(lambda: [r for b in blobs for r in pickle.loads(b)])
    spans: list = []

    class Keep(SpanProcessor):
        def on_end(self, span) -> None:
            spans.append(span)

    with Receiver() as rx:
        pipeline, _ = _pipeline(None, rx.endpoint)
        pipeline.exporters.provider._active_span_processor._span_processors = (Keep(),)
        _, t_build = timed(lambda: [pipeline.emit(r) for r in back])
        batches = [spans[i:i + 512] for i in range(0, len(spans), 512)]
        msgs, t_encode = timed(lambda: [encode_spans(b) for b in batches])
        _, t_serialize = timed(lambda: [m.SerializeToString() for m in msgs])
        exporter = pipeline.exporters.counted[0].inner
        _, t_export = timed(lambda: [exporter.export(b) for b in batches])
        got = rx.count()
    us = {k: round(v / n * 1e6, 1) for k, v in (
        ("A_decode_track_redact", t_track), ("pickle", t_pickle), ("unpickle", t_unpickle),
        ("build_emit", t_build), ("encode_spans", t_encode), ("serialize", t_serialize),
        ("grpc_export_incl_encode", t_export))}
    return {"spans": n, "received": got, "pickled_bytes_per_span": round(sum(map(len, blobs)) / n),
            "us_per_span": us}


# --------------------------------------------------------------------------- harness


def _proc_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def _start(args: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
    from bench.run import ENV, PY

    proc = subprocess.Popen([PY, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env=ENV, pass_fds=pass_fds)
    line = json.loads(proc.stdout.readline())
    assert line.get("ready"), line
    return proc


def _finish(proc: subprocess.Popen) -> dict:
    line = json.loads(proc.stdout.readline())
    proc.wait()
    return line


def run_product(path: Path, workflows: int, agents: int) -> dict:
    from bench.run import spans_end_to_end

    r = spans_end_to_end(path.parent, workflows, agents)
    return {"variant": "product", "agent_spans_per_s": r["agent_spans_per_s"], "seconds": r["seconds"],
            "received": r["spans_received"], "expected": r["spans_sent"]}


def run_single(path: Path, workflows: int, agents: int) -> dict:
    from bench.run import Receiver

    expected = workflows * (agents + 2) + 1
    with Receiver() as rx:
        t_launch = time.perf_counter()
        proc = _start(["single", str(path), rx.endpoint])
        rx0 = _proc_cpu(rx.proc.pid)
        t = time.perf_counter()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        res = _finish(proc)
        took = time.perf_counter() - t
        rx_cpu = _proc_cpu(rx.proc.pid) - rx0
        got = rx.count()
    return {"variant": "single", "agent_spans_per_s": workflows * agents * got / expected / took,
            "seconds": took, "with_setup_s": time.perf_counter() - t_launch, "received": got,
            "expected": expected, "cpu": {"process": res["cpu_s"], "receiver": rx_cpu},
            "detail": res}


def run_split(path: Path, workflows: int, agents: int, batch: int, bs: int = 1) -> dict:
    import fcntl

    from bench.run import Receiver

    expected = workflows * (agents + 2) + 1
    with Receiver() as rx:
        pipes = [os.pipe() for _ in range(bs)]
        for _, w in pipes:
            try:
                fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: 1 MiB, as the tee widens its pipe
            except OSError:
                pass
        t_launch = time.perf_counter()
        b_procs = [_start(["b", str(r), rx.endpoint], pass_fds=(r,)) for r, _ in pipes]
        ws = tuple(w for _, w in pipes)
        a = _start(["a", str(path), ",".join(map(str, ws)), str(batch)], pass_fds=ws)
        for fds in pipes:
            os.close(fds[0])
            os.close(fds[1])
        rx0 = _proc_cpu(rx.proc.pid)
        t = time.perf_counter()
        for p in (*b_procs, a):
            p.stdin.write("go\n")
            p.stdin.flush()
        res_a = _finish(a)
        res_bs = [_finish(b) for b in b_procs]
        res_b = {k: sum(r[k] for r in res_bs) for k, v in res_bs[0].items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool)}
        took = time.perf_counter() - t
        rx_cpu = _proc_cpu(rx.proc.pid) - rx0
        got = rx.count()
    return {"variant": "split" if bs == 1 else f"split{bs}", "agent_spans_per_s": workflows * agents * got / expected / took,
            "seconds": took, "with_setup_s": time.perf_counter() - t_launch, "received": got,
            "expected": expected,
            "cpu": {"A": res_a["cpu_s"], "B" if bs == 1 else f"{bs} Bs": res_b["cpu_s"], "receiver": rx_cpu},
            "A": res_a, "B": res_b}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="rounds; each runs every variant once")
    ap.add_argument("--workflows", type=int, default=1000)
    ap.add_argument("--agents", type=int, default=50)
    ap.add_argument("--batch", type=int, default=256, help="span records per pickled batch (split)")
    ap.add_argument("--variants", default="product,single,split",
                    help="of product, single, split, splitN (A and N B processes, batches in turn)")
    ap.add_argument("--dir", default="/tmp/otelbridge-bench")
    ap.add_argument("--json", help="also write every run's result here")
    ap.add_argument("--costs", action="store_true", help="also time each stage alone (µs per span)")
    args = ap.parse_args()
    from bench.run import workflow_stream

    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"workflows-{args.workflows}x{args.agents}.jsonl"
    if not path.exists():
        workflow_stream(path, args.workflows, args.agents)
    runners = {"product": lambda: run_product(path, args.workflows, args.agents),
               "single": lambda: run_single(path, args.workflows, args.agents),
               "split": lambda: run_split(path, args.workflows, args.agents, args.batch)}
    order = args.variants.split(",")
    for v in order:  # splitN: A and N B processes
        if v.startswith("split") and v[5:].isdigit():
            runners[v] = lambda bs=int(v[5:]): run_split(path, args.workflows, args.agents, args.batch, bs)
    results: dict[str, list[dict]] = {v: [] for v in order}
    for i in range(args.runs):
        for v in order[i % len(order):] + order[:i % len(order)]:  # rotate the order each round
            res = runners[v]()
            results[v].append(res)
            print(json.dumps(res), file=sys.stderr, flush=True)
    if args.costs:
        results["costs"] = [costs(path)]
        print(json.dumps(results["costs"][0]), file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"| variant | agent spans/s (median of {args.runs}) | runs | spans received | CPU per process, go → done (median) |")
    print("|---|---|---|---|---|")
    for v in order:
        rows = results[v]
        rates = sorted(r["agent_spans_per_s"] for r in rows)
        got = f"{min(r['received'] for r in rows)}/{rows[0]['expected']}"
        cpu = ""
        if rows[0].get("cpu"):
            med = {k: statistics.median(r["cpu"][k] for r in rows) for k in rows[0]["cpu"]}
            if "B" in rows[0]:  # B's main thread (unpickle, build, queue) vs the export threads
                med["B main thread(s)"] = statistics.median(r["B"]["main_thread_cpu_s"] for r in rows)
            elif "detail" in rows[0]:
                med["main thread"] = statistics.median(r["detail"]["main_thread_cpu_s"] for r in rows)
            cpu = ", ".join(f"{k} {v:.2f} s ({v / rows[0]['expected'] * 1e6:.0f} µs/span)" for k, v in med.items())
        print(f"| {v} | **{statistics.median(rates):,.0f}** | {', '.join(f'{x:,.0f}' for x in rates)} | {got} | {cpu} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("single", "a", "b"):
        role, rest = sys.argv[1], sys.argv[2:]
        if role == "single":
            role_single(rest[0], rest[1])
        elif role == "a":
            role_a(rest[0], [int(fd) for fd in rest[1].split(",")], int(rest[2]))
        else:
            role_b(int(rest[0]), rest[1])
    else:
        main()
