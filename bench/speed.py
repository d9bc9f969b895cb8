"""The speed rows (bench/RESULTS.md, "Speed"): what tracing costs, as ratios in one run.

    .venv/bin/python bench/speed.py all [--runs 3] [--tree /tmp/before]

* ``trace``   — ``otelbridge replay --exporter none`` (every line decoded, every span built) on the
  bench mix and on two workflow-heavy streams — one snapshot of 50 finished agents a workflow
  (the fewest bytes a span: the worst case), and workflows as Claude Code emits them (every
  snapshot repeats every agent) — against :mod:`bench.decode_ref` (decodes every line with
  orjson, nothing else). CPU seconds (user + sys, ``wait4``) and wall; ratio = reference /
  otelbridge. The ``built`` span count is printed so that two trees can be compared.
* ``rate``    — a live stream of 200 KB/s in 200 writes/s through otelbridge exporting OTLP/gRPC, then
  OTLP/HTTP (the default), to the Go-built collector: CPU of the tee's process and the decoding process summed (``/proc/PID/stat``
  from 2 s after the start to the stream's end: the set-up is not counted), in cores; GNU tee
  in the same run.
* ``startup`` — first line through, and exit on empty input (wall, ms), otelbridge with
  ``--exporter none`` and with OTLP/gRPC, GNU tee in the same run. Each tree's ``otelbridge``
  is byte-compiled first, as an installed package is (pip compiles at install); with
  ``--no-bytecode`` its ``__pycache__`` is removed and none is written (``PYTHONDONTWRITEBYTECODE``):
  every run compiles the modules it imports, as an editable install does under that variable.
  With ``--installed`` each tree is installed from a wheel into a fresh venv and run by its
  console script, as a user runs it (the editable install's finder costs ~10 ms at every start).
* ``export``  — CPU µs per span sent over OTLP/gRPC and OTLP/HTTP (all of otelbridge's processes):
  replay of the workflow stream to the Go-built collector minus the same replay with
  ``--exporter none``, per span; the floors, on the same spans in one process: the SDK's encoder alone (``encode_spans`` +
  ``SerializeToString``), and the SDK's gRPC exporter's ``export`` in batches of 512 (the
  encoder, gRPC's call and its threads) — what is left above it is otelbridge's.
* ``sessions`` — what a real run costs: CPU of ``replay --exporter none`` (the decoding
  process's work, start-up included) on each real recording of ``../shared/fixtures`` (Claude Code,
  milk), and on an empty file in the same run (the start-up alone); medians, trees alternated.
* ``live``    — the live tee, ``--exporter none``, fed the mix at a paced rate (MB/s): lines
  skipped (``lines_not_decoded``); the highest rate of ``--live-rates`` with none skipped. Each
  rate twice: from otelbridge's first instant, and after a 1 s lead-in (set up, as in a run).

Every row but ``startup --no-bytecode`` first byte-compiles each tree's ``otelbridge``, as pip
does at install: without it a run under ``PYTHONDONTWRITEBYTECODE`` compiles every module it
imports (~90 ms a run here), or those changed since the last compile.

``--tree DIR`` runs otelbridge from another source tree (``git archive REV | tar -x -C DIR``):
a before in the same run, alternated with the worktree (the "after"). Run by hand, never in the
tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import memory  # noqa: E402
from bench import run as bench  # noqa: E402
from bench import streams  # noqa: E402

PY = sys.executable
DECODE_REF = [PY, str(ROOT / "bench" / "decode_ref.py")]
TICK = os.sysconf("SC_CLK_TCK")


def _env(tree: Path | None) -> dict:
    env = dict(bench.ENV)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def _cwd(tree: Path | None) -> Path:
    return tree if tree is not None else ROOT


def timed_cpu(argv: list[str], *, env: dict | None = None, cwd: Path | None = None,
              stdin=subprocess.DEVNULL) -> tuple[float, float]:
    """Run ``argv`` to its end: (wall s, CPU s of it and every child it waited for)."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env or bench.ENV, cwd=cwd or ROOT)
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{argv}: exit status {proc.returncode}")
    return wall, ru.ru_utime + ru.ru_stime


def workflow_heavy(directory: Path) -> Path:
    """1,000 workflows of 50 agents (52,001 spans), made by bench/run.py."""
    path = directory / "workflows-1000x50.jsonl"
    if not path.exists():
        bench.workflow_stream(path, 1000, 50)
    return path


def workflow_snapshots(directory: Path) -> Path:
    """30 workflows of 50 agents as Claude Code emits them: every ``task_progress`` repeats every
    agent so far (86 MB, 1,681 spans), made by bench/run.py."""
    path = directory / "workflow-snapshots-30x50.jsonl"
    if not path.exists():
        bench.workflow_snapshot_stream(path, 30, 50)
    return path


def _replay(path: Path, tree: Path | None, extra: list[str] = ()) -> tuple[float, float, int]:
    with tempfile.NamedTemporaryFile(suffix=".json") as st:
        wall, cpu = timed_cpu([PY, "-m", "otelbridge", "replay", "-q", "--stats-json", st.name,
                               *extra, str(path)], env=_env(tree), cwd=_cwd(tree))
        built = json.loads(Path(st.name).read_text()).get("spans_started")
    return wall, cpu, built


def trace(paths: list[Path], runs: int, trees: dict[str, Path | None]) -> list[dict]:
    rows = []
    for path in paths:
        ref_w, ref_c = [], []
        got: dict[str, dict] = {name: {"wall": [], "cpu": [], "built": None} for name in trees}
        for _ in range(runs):
            w, c = timed_cpu(DECODE_REF + [str(path)])
            ref_w.append(w)
            ref_c.append(c)
            for name, tree in trees.items():
                w, c, built = _replay(path, tree, ["--exporter", "none"])
                got[name]["wall"].append(w)
                got[name]["cpu"].append(c)
                got[name]["built"] = built
        row = {"stream": path.name, "MB": path.stat().st_size / 1e6,
               "ref_cpu_s": statistics.median(ref_c), "ref_wall_s": statistics.median(ref_w)}
        for name, g in got.items():
            cpu, wall = statistics.median(g["cpu"]), statistics.median(g["wall"])
            row[name] = {"cpu_s": cpu, "wall_s": wall, "built": g["built"],
                         "ratio_cpu": row["ref_cpu_s"] / cpu, "ratio_wall": row["ref_wall_s"] / wall,
                         "MBps": row["MB"] / wall}
        rows.append(row)
        print(row, file=sys.stderr)
    return rows


# --------------------------------------------------------------------------- real sessions

FIXTURES = ROOT.parent / "shared" / "fixtures"


def sessions(runs: int, trees: dict[str, Path | None]) -> list[dict]:
    """CPU s of replay on each real recording (and on an empty file), median of ``runs``."""
    paths = [Path(os.devnull), *sorted((FIXTURES / "claude-code").glob("*.jsonl")),
             *sorted((FIXTURES / "milk").glob("*.jsonl"))]
    rows = []
    for path in paths:
        got: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(runs):
            for name, tree in trees.items():
                got[name].append(_replay(path, tree, ["--exporter", "none"])[1])
        row = {"recording": "(empty)" if str(path) == os.devnull else path.name, "KB": path.stat().st_size / 1e3,
               **{name: statistics.median(v) for name, v in got.items()}}
        rows.append(row)
        print(row, file=sys.stderr)
    return rows


# --------------------------------------------------------------------------- live rate

PACED = textwrap.dedent("""
    import os, sys, time
    rate, writes, seconds, path = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    data = open(path, "rb").read()
    time.sleep(float(sys.argv[5]) if len(sys.argv) > 5 else 0.0)  # a lead-in: nothing written
    per = int(rate / writes)
    pos, t0, n = 0, time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        end = data.find(b"\\n", pos + per)
        end = len(data) if end < 0 else end + 1
        if pos >= len(data):
            pos, end = 0, data.find(b"\\n", per) + 1
        os.write(1, data[pos:end])
        pos = end
        n += 1
        delay = t0 + n / writes - time.monotonic()
        if delay > 0:
            time.sleep(delay)
""")


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total


def rate(middle: list[str], path: Path, seconds: float, bps: float = 200_000, writes: int = 200,
         env: dict | None = None, cwd: Path | None = None) -> float:
    """Cores used by ``middle`` (and its children) on a paced stream, from 2 s in to the end."""
    src = subprocess.Popen([PY, "-c", PACED, str(bps), str(writes), str(seconds + 2), str(path)],
                           stdout=subprocess.PIPE)
    mid = subprocess.Popen(middle, stdin=src.stdout, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, env=env or bench.ENV, cwd=cwd or ROOT)
    sink = subprocess.Popen(["cat"], stdin=mid.stdout, stdout=subprocess.DEVNULL)  # a pipe, as in use
    src.stdout.close()
    mid.stdout.close()
    time.sleep(2.0)
    pids = memory.tree(mid.pid)
    c0, t0 = _cpu_ticks(pids), time.monotonic()
    time.sleep(seconds - 0.2)
    pids = memory.tree(mid.pid)
    c1, t1 = _cpu_ticks(pids), time.monotonic()
    src.wait()
    mid.wait()
    sink.wait()
    return (c1 - c0) / TICK / (t1 - t0)


def rates(path: Path, runs: int, seconds: float, trees: dict[str, Path | None],
          protocol: str = "grpc") -> dict:
    """:func:`rate` of GNU tee and each tree, ``runs`` times alternated, exporting over
    ``protocol`` to the Go-built collector (:class:`bench.memory.Collector`)."""
    out: dict[str, list[float]] = {"tee": []}
    with memory.Collector() as rx:
        endpoint = rx.grpc_endpoint if protocol == "grpc" else rx.endpoint
        for _ in range(runs):
            out["tee"].append(rate(["tee", "/dev/null"], path, seconds))
            for name, tree in trees.items():
                argv = [PY, "-m", "otelbridge", "-q", "--protocol", protocol, "--endpoint", endpoint]
                out.setdefault(name, []).append(rate(argv, path, seconds, env=_env(tree), cwd=_cwd(tree)))
    row = {k: statistics.median(v) for k, v in out.items()} | {"runs": out}
    print(row, file=sys.stderr)
    return row


# --------------------------------------------------------------------------- start-up

def _startup(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
    proc.stdin.write(b'{"type":"stream_event"}\n')
    proc.stdin.flush()
    proc.stdout.readline()
    first = time.perf_counter() - t
    proc.stdin.close()
    proc.wait()
    t = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
    return first, time.perf_counter() - t


def _bytecode(trees: dict[str, Path | None], cached: bool) -> None:
    """Each tree's ``otelbridge`` byte-compiled (``cached``) or without any ``__pycache__``."""
    import compileall
    import shutil

    for tree in trees.values():
        package = _cwd(tree) / "otelbridge"
        if cached:
            compileall.compile_dir(package, quiet=1)
        else:
            for cache in package.rglob("__pycache__"):
                shutil.rmtree(cache)


def installed(name: str, tree: Path | None, directory: Path) -> Path:
    """The tree's otelbridge installed as a user installs it: a wheel (built by pip) into a fresh
    venv in ``directory``, byte-compiled by pip, its dependencies found in this interpreter's
    environment (a ``.pth`` line: no editable finder, nothing imported at start). Returns the
    venv's ``otelbridge`` console script."""
    import shutil
    import sysconfig

    venv = directory / f"installed-{name}"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([PY, "-m", "venv", str(venv)], check=True)
    wheels = venv / "wheels"
    source = venv / "source"  # a copy: setuptools writes build/ into the tree it builds
    shutil.copytree(_cwd(tree), source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".tools", "build", "__pycache__", "*.egg-info", "tests", "bench"))
    subprocess.run([PY, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
                   check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    *map(str, wheels.glob("otelbridge-*.whl"))], check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "otelbridge-bench-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin" / "otelbridge"


def startup(runs: int, trees: dict[str, Path | None], bytecode: bool = True,
            install_in: Path | None = None) -> dict:
    """First line through and exit on empty input, ms. With ``install_in``, each tree is
    :func:`installed` there and run by its console script; else by ``python -m otelbridge`` from
    its source (this venv's ``site`` runs the editable install's finder at every start)."""
    _bytecode(trees, bytecode)
    out: dict[str, dict[str, list[float]]] = {}
    with bench.Receiver() as rx:
        cases: dict[str, tuple[list[str], Path | None, bool]] = {"tee": (["tee", "/dev/null"], None, False)}
        for name, tree in trees.items():
            if install_in is not None:
                command, source = [str(installed(name, tree, install_in))], False
            else:
                command, source = [PY, "-m", "otelbridge"], True
            cases[f"{name} none"] = (command + ["-q", "--exporter", "none"], tree, source)
            cases[f"{name} otlp"] = (command + ["-q", "--protocol", "grpc", "--endpoint", rx.endpoint],
                                     tree, source)
        for _ in range(runs):
            for case, (argv, tree, source) in cases.items():
                env = (_env(tree) if source else dict(bench.ENV)) | (
                    {} if bytecode else {"PYTHONDONTWRITEBYTECODE": "1"})
                first, empty = _startup(argv, env, _cwd(tree) if source else install_in or ROOT)
                out.setdefault(case, {"first_ms": [], "empty_ms": []})
                out[case]["first_ms"].append(first * 1e3)
                out[case]["empty_ms"].append(empty * 1e3)
    row = {case: {k: statistics.median(v) for k, v in d.items()} for case, d in out.items()}
    print(row, file=sys.stderr)
    return row


# --------------------------------------------------------------------------- export cost

ENCODER_FLOOR = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from otelbridge.config import Config
    from otelbridge.pipeline import Pipeline
    from otelbridge.stats import Stats
    import otelbridge.export as export
    mem = InMemorySpanExporter()
    cfg = Config(exporters=("none",), clock="stream", deterministic_ids=True)
    p = Pipeline(cfg, Stats())
    p.exporters.provider.add_span_processor(SimpleSpanProcessor(mem))
    data = open(sys.argv[1], "rb").read()
    p.on_chunk(data, len(data)); p.end_stream()
    spans = list(mem.get_finished_spans())
    t = time.process_time()
    for i in range(0, len(spans), 512):
        encode_spans(spans[i:i + 512]).SerializeToString()
    encoder = (time.process_time() - t) / len(spans) * 1e6
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    exporter = OTLPSpanExporter(endpoint=sys.argv[3], insecure=True)
    exporter.export(spans[:8])  # the channel connected
    t = time.process_time()  # this process's every thread: gRPC's own included
    for i in range(0, len(spans), 512):
        exporter.export(spans[i:i + 512])
    print(encoder, (time.process_time() - t) / len(spans) * 1e6, len(spans))
""")


def export_cost(path: Path, runs: int, trees: dict[str, Path | None]) -> dict:
    """CPU µs per span exported (all of otelbridge's processes), over OTLP/gRPC and over
    OTLP/HTTP (the default) to the Go-built collector: each tree's replay of ``path`` exporting
    minus the same replay with ``--exporter none``, per span built; medians of ``runs``."""
    out: dict[str, dict] = {}
    with memory.Collector() as collector, bench.Receiver() as rx:
        for _ in range(runs):
            for name, tree in trees.items():
                _, none_cpu, built = _replay(path, tree, ["--exporter", "none"])
                for protocol, endpoint in (("grpc", collector.grpc_endpoint), ("http/protobuf", collector.endpoint)):
                    _, otlp_cpu, _ = _replay(path, tree, ["--protocol", protocol, "--endpoint", endpoint])
                    d = out.setdefault(f"{name} {protocol}", {"us_per_span": [], "built": built})
                    d["us_per_span"].append((otlp_cpu - none_cpu) / built * 1e6)
        floor = subprocess.run([PY, "-c", ENCODER_FLOOR, str(path), str(ROOT), rx.endpoint],
                               capture_output=True, text=True, env=bench.ENV, cwd=ROOT)
    row = {name: {"us_per_span": statistics.median(d["us_per_span"]), "runs": d["us_per_span"],
                  "built": d["built"]} for name, d in out.items()}
    if floor.returncode == 0:
        encoder, exporter, _ = floor.stdout.split()
        row["encoder_floor_us"], row["sdk_exporter_floor_us"] = float(encoder), float(exporter)
    else:
        row["floor_error"] = floor.stderr[-300:]
    print(row, file=sys.stderr)
    return row


# --------------------------------------------------------------------------- live, no skip

def live(path: Path, mbps: list[float], tree: Path | None, seconds: float = 4.0,
         lead_in_s: float = 0.0) -> list[dict]:
    """The live tee on the mix at each rate: lines not decoded. With ``lead_in_s``, the stream
    begins that long after otelbridge starts (its decoding process set up, as in a CLI's run);
    without, at full rate from the first byte (the set-up's ~0.1 s is then a burst to keep)."""
    rows = []
    for r in mbps:
        with tempfile.NamedTemporaryFile(suffix=".json") as st:
            writes = 1000
            src = subprocess.Popen([PY, "-c", PACED, str(r * 1e6), str(writes), str(seconds), str(path),
                                    str(lead_in_s)], stdout=subprocess.PIPE)
            mid = subprocess.Popen([PY, "-m", "otelbridge", "-q", "--exporter", "none", "--stats-json",
                                    st.name], stdin=src.stdout, stdout=subprocess.PIPE,
                                   env=_env(tree), cwd=_cwd(tree))
            sink = subprocess.Popen(["cat"], stdin=mid.stdout, stdout=subprocess.DEVNULL)  # as in use
            src.stdout.close()
            mid.stdout.close()
            src.wait()
            mid.wait()
            sink.wait()
            s = json.loads(Path(st.name).read_text())
        row = {"MBps_offered": r, "lead_in_s": lead_in_s, "MBps_sent": s["bytes"] / seconds / 1e6,
               "lines": s["lines"], "not_decoded": s["lines_not_decoded"]}
        rows.append(row)
        print(row, file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("all", "trace", "sessions", "rate", "startup", "export", "live"))
    ap.add_argument("--runs", type=int, default=3, help="runs of each row (startup: at least 5)")
    ap.add_argument("--dir", default="/tmp/otelbridge-bench")
    ap.add_argument("--tree", help="a before: another source tree, alternated with this one")
    ap.add_argument("--seconds", type=float, default=20.0, help="rate: measured seconds")
    ap.add_argument("--live-rates", default="50,100,150,200")
    ap.add_argument("--mix-mb", type=int, default=200)
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="startup: no byte-compiled otelbridge (every run compiles its modules)")
    ap.add_argument("--installed", action="store_true",
                    help="startup: each tree installed from a wheel into a fresh venv, run by its "
                         "console script (as users run it)")
    args = ap.parse_args()
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    trees: dict[str, Path | None] = {}
    if args.tree:
        trees["before"] = Path(args.tree).resolve()
    trees["after"] = None
    def mix() -> Path:
        path = directory / ("mix.jsonl" if args.mix_mb == 200 else f"mix-{args.mix_mb}.jsonl")
        if not path.exists():
            streams.write("mix", str(path), mb=args.mix_mb)
        return path

    _bytecode(trees, True)  # (startup --no-bytecode removes it for its own row)
    results: dict = {}
    if args.what in ("all", "trace"):
        results["trace"] = trace([mix(), workflow_heavy(directory), workflow_snapshots(directory)],
                                 args.runs, trees)
    if args.what in ("all", "sessions"):
        results["sessions"] = sessions(args.runs, trees)
    if args.what in ("all", "startup"):
        with tempfile.TemporaryDirectory(dir=directory) as venvs:  # this run's own
            results["startup"] = startup(max(args.runs, 5), trees, not args.no_bytecode,
                                         Path(venvs) if args.installed else None)
        _bytecode(trees, True)
    if args.what in ("all", "rate"):
        results["rate"] = rates(mix(), args.runs, args.seconds, trees, "grpc")
        results["rate_http"] = rates(mix(), args.runs, args.seconds, trees, "http/protobuf")
    if args.what in ("all", "export"):
        results["export"] = export_cost(workflow_heavy(directory), args.runs, trees)
    if args.what in ("all", "live"):
        rates_ = [float(x) for x in args.live_rates.split(",")]
        results["live"] = {name: live(mix(), rates_, tree) + live(mix(), rates_, tree, lead_in_s=1.0)
                           for name, tree in trees.items()}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
