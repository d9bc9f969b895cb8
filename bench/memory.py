"""Memory of otelbridge's processes, read from ``/proc`` (Linux): peaks on a stream and the
footprint at rest. Used by :mod:`bench.run` (``memory``, ``rest``) and :mod:`bench.state`.

Sizes are kB as ``/proc`` gives them unless a name ends in ``_MB``. ``Pss`` counts a page shared
by N processes as 1/N in each: otelbridge's figure depends on who else maps the same files. At
rest it is therefore measured beside the project's Go-built collector (``.tools/bin``, see
``collector-config/build.sh``), which shares no file with a Python process, as in a CI job or a
container where otelbridge is the only Python process.
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLLECTOR = ROOT / ".tools" / "bin" / "otelcol-otelbridge"
#: a real session through otelbridge before it rests (a CodeBuddy workflow recording)
SESSION = ROOT / "examples" / "cbc-workflow.jsonl"


def proc_kb(pid: int, name: str, key: str) -> int:
    """The ``key:`` line of ``/proc/PID/NAME`` in kB (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/{name}") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants, as listed now."""
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [q for p in fh.read().split() for q in tree(int(p))]
    except OSError:
        pass
    return out


def max_rss_kb(path: Path | None, cmd: list[str], env: dict, cwd: Path) -> tuple[int, int]:
    """Peak memory of otelbridge (``cmd``: its argv) — the tee's process and the decoding
    process it forks — on ``path`` (``None``: empty input), two ways: the sum of each process's
    high-water mark (``VmHWM``: exact peaks, but a page shared by forked processes counts in
    each, and peaks at different times add up — an upper bound), and the highest sum of their
    proportional set sizes (``Pss``: a shared page counted once) seen in samples every 5 ms
    until they exit."""
    src = subprocess.Popen(["cat", str(path) if path else "/dev/null"], stdout=subprocess.PIPE)
    ob = subprocess.Popen(cmd, stdin=src.stdout, stdout=subprocess.PIPE, env=env, cwd=cwd)
    sink = subprocess.Popen(["cat"], stdin=ob.stdout, stdout=subprocess.DEVNULL)
    src.stdout.close()
    ob.stdout.close()
    peaks: dict[int, int] = {}
    pss = 0
    while ob.poll() is None:
        pids = tree(ob.pid)
        for pid in pids:
            peaks[pid] = max(peaks.get(pid, 0), proc_kb(pid, "status", "VmHWM"))
        pss = max(pss, sum(proc_kb(pid, "smaps_rollup", "Pss") for pid in pids))
        time.sleep(0.005)
    sink.wait()
    src.wait()
    return sum(peaks.values()), pss


def growth(paths: list[Path], cmd: list[str], env: dict, cwd: Path, repeat: int = 3) -> list[dict]:
    """Per stream in ``paths``: the peak (:func:`max_rss_kb`, median of ``repeat``) minus the
    peak on empty input, in MB."""
    idle_runs = [max_rss_kb(None, cmd, env, cwd) for _ in range(repeat)]
    idle = statistics.median(r[0] for r in idle_runs)
    idle_pss = statistics.median(r[1] for r in idle_runs)
    rows = []
    for path in paths:
        runs = [max_rss_kb(path, cmd, env, cwd) for _ in range(repeat)]
        peak = statistics.median(r[0] for r in runs)
        peak_pss = statistics.median(r[1] for r in runs)
        rows.append({"stream": path.stem, "idle_MB": idle / 1024, "peak_MB": peak / 1024,
                     "growth_MB": (peak - idle) / 1024, "pss_growth_MB": (peak_pss - idle_pss) / 1024})
    return rows


def distinct_kb(pids: list[int]) -> int | None:
    """The resident pages of ``pids`` counted once each (by physical frame, from
    ``/proc/PID/pagemap``), in kB: what their ``Pss`` would sum to if no other process mapped
    the same pages. ``None`` without the privilege to read frame numbers (root)."""
    frames: set[int] = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
                for line in maps:
                    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                    if line.rstrip().endswith("[vsyscall]"):
                        continue
                    pagemap.seek(lo // PAGE * 8)
                    entries = memoryview(pagemap.read((hi - lo) // PAGE * 8)).cast("Q")
                    frames.update(e & PFN for e in entries if e & PRESENT)
        except OSError:
            continue
    if frames == {0}:
        return None  # frame numbers hidden: not root
    return len(frames) * PAGE // 1024


PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT, PFN = 1 << 63, (1 << 55) - 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    """The Go-built collector as an OTLP receiver on 127.0.0.1 (``endpoint``: HTTP,
    ``grpc_endpoint``: gRPC) that drops what it gets
    (debug exporter, basic verbosity); :meth:`count` is the spans it accepted (its own
    ``otelcol_receiver_accepted_spans`` metric). Raises ``SystemExit`` when not built."""

    def __enter__(self) -> "Collector":
        if not COLLECTOR.is_file():
            raise SystemExit(f"{COLLECTOR} not built: run bash collector-config/build.sh")
        self.dir = tempfile.TemporaryDirectory(prefix="otelbridge-bench-")
        grpc, otlp, metrics = _free_port(), _free_port(), _free_port()
        config = Path(self.dir.name) / "otelcol.yaml"
        config.write_text(
            "receivers: {otlp: {protocols: {grpc: {endpoint: 127.0.0.1:%d}, http: {endpoint: 127.0.0.1:%d}}}}\n"
            "exporters: {debug: {verbosity: basic}}\n"
            "service:\n"
            "  pipelines: {traces: {receivers: [otlp], exporters: [debug]}}\n"
            "  telemetry: {metrics: {readers: [{pull: {exporter: {prometheus: "
            "{host: 127.0.0.1, port: %d}}}}]}}\n" % (grpc, otlp, metrics))
        self.log = open(Path(self.dir.name) / "otelcol.log", "wb")
        self.proc = subprocess.Popen([str(COLLECTOR), f"--config={config}"], stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.endpoint = f"http://127.0.0.1:{otlp}"
        self.grpc_endpoint = f"http://127.0.0.1:{grpc}"
        self.metrics = f"http://127.0.0.1:{metrics}/metrics"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                self.count()
                return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise SystemExit("the collector did not start: " + (Path(self.dir.name) / "otelcol.log").read_text()[-2000:])

    def count(self) -> int:
        with urllib.request.urlopen(self.metrics, timeout=5) as resp:
            text = resp.read().decode()
        return int(sum(float(m) for m in re.findall(
            r"^otelcol_receiver_accepted_spans(?:_total)?\{[^}]*\} (\S+)$", text, re.M)))

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self.dir.cleanup()


def at_rest(cmd: list[str], env: dict, cwd: Path, protocol: str = "http/protobuf", repeat: int = 3,
            settle_s: float = 3.0) -> dict:
    """otelbridge (``cmd``: its argv without an endpoint) at rest, exporting over ``protocol``
    (``http/protobuf``, the default, or ``grpc``) to the Go-built collector (:class:`Collector`): a short traced session
    (:data:`SESSION`) through it, its stdout a pipe to ``cat``, stdin then left open and idle for
    ``settle_s``; its processes,
    their summed ``VmRSS``, summed ``Pss`` and :func:`distinct_kb` (``alone_MB``: their ``Pss``
    had they no page in common with another process, such as this script's interpreter) in MB,
    medians of ``repeat`` runs, and the spans the collector accepted per run."""
    session = SESSION.read_bytes()
    rows = []
    with Collector() as rx:
        for _ in range(repeat):
            before = rx.count()
            endpoint = rx.grpc_endpoint if protocol == "grpc" else rx.endpoint
            ob = subprocess.Popen(cmd + ["--protocol", protocol, "--endpoint", endpoint], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env, cwd=cwd)
            sink = subprocess.Popen(["cat"], stdin=ob.stdout, stdout=subprocess.DEVNULL)  # a pipe, as in use
            ob.stdout.close()
            ob.stdin.write(session)
            ob.stdin.flush()
            time.sleep(settle_s)
            pids = tree(ob.pid)
            rows.append((len(pids), sum(proc_kb(p, "status", "VmRSS") for p in pids),
                         sum(proc_kb(p, "smaps_rollup", "Pss") for p in pids), distinct_kb(pids)))
            ob.stdin.close()
            ob.wait()
            sink.wait()
            rows[-1] += (rx.count() - before,)
    alone = [r[3] for r in rows if r[3] is not None]
    return {"processes": statistics.median(r[0] for r in rows),
            "rss_MB": statistics.median(r[1] for r in rows) / 1024,
            "pss_MB": statistics.median(r[2] for r in rows) / 1024,
            "alone_MB": statistics.median(alone) / 1024 if alone else None,
            "spans_received": statistics.median(r[4] for r in rows)}
