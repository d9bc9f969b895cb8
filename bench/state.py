"""Peak memory of otelbridge on state-only streams: streams that only ever open state and never
end it (the tracker's state budget, ``otelbridge/tracker/budget.py``, is what bounds them).
Run by hand, never in the test suite; numbers go to RESULTS.md "State budget".

    .venv/bin/python bench/state.py [--mb 200] [--rate 4] [--kinds agents,tools,ids,big] [--otlp] [--tree DIR]

Streams (deterministic, written once to ``--dir``, each ``--mb`` MB):

* ``agents`` — never-ending workflow agents across ever new runs: ``task_progress`` snapshots
  of 50 agents in state ``start`` (label and a 1 KiB ``prompt_preview``), a new ``task_id`` each;
* ``tools``  — unanswered ``tool_use`` across sessions: assistant lines of 20 tool calls with
  2 KiB of input each, a new session every 500 lines, no ``tool_result`` ever;
* ``ids``    — ever new ids: each line a new session (``system/init``), a background task
  (``task_started``) and a sub-agent task of a new id, none ever ending;
* ``big``    — held raw strings: tool calls whose input is 60 KiB, never answered.

For each stream, ``FILE written at --rate MB/s | otelbridge --exporter none`` (and with ``--otlp``: exporting to a
local OTLP/gRPC receiver in its own process) runs while the summed ``VmRSS`` of otelbridge's
process tree is sampled every 20 ms; reported: its peak, the peak at empty input, and the
``state_budget_ended`` count of ``--stats-json``. ``--tree DIR`` runs otelbridge from another
checkout (``PYTHONPATH=DIR``: the code before the budget, for comparison).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import memory  # noqa: E402
from bench.run import ENV, PY, Receiver  # noqa: E402

EPOCH_MS = 1_783_647_395_000
KINDS = ("agents", "tools", "ids", "big")


def _dumps(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _lines(kind: str):
    n = 0
    while True:
        n += 1
        ts = EPOCH_MS + n
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts / 1000)) + f".{ts % 1000:03d}Z"
        if kind == "agents":
            agents = [{"type": "workflow_agent", "index": i, "state": "start", "label": f"agent {i} of run {n}",
                       "agent_id": f"a{n}-{i}", "started_at": ts, "prompt_preview": f"{n}:{i} " + "p" * 1024}
                      for i in range(50)]
            yield _dumps({"type": "system", "subtype": "task_progress", "task_id": f"wf{n:09d}",
                          "tool_use_id": f"toolu_wf{n}", "description": "never ends",
                          "workflow_progress": agents, "session_id": "s-agents", "timestamp": iso})
        elif kind in ("tools", "big"):
            size, calls = (61_440, 1) if kind == "big" else (2_048, 20)
            content = [{"type": "tool_use", "id": f"toolu_{n}_{i}", "name": "Bash",
                        "input": {"command": f"{n}/{i} " + "x" * size}} for i in range(calls)]
            yield _dumps({"type": "assistant", "message": {"model": "claude-opus-4-8", "id": f"msg_{n}",
                          "type": "message", "role": "assistant", "content": content},
                          "parent_tool_use_id": None, "session_id": f"s-{kind}-{n // 500}",
                          "timestamp": iso})
        else:
            sid = f"s-ids-{n:09d}"
            yield _dumps({"type": "system", "subtype": "init", "session_id": sid, "model": "claude-opus-4-8",
                          "cwd": "/w", "tools": [], "claude_code_version": "2.1.200", "timestamp": iso})
            yield _dumps({"type": "system", "subtype": "task_started", "task_id": f"bg{n}",
                          "task_type": "local_bash", "description": "d" * 200, "session_id": sid,
                          "timestamp": iso})
            yield _dumps({"type": "system", "subtype": "task_started", "task_id": f"ag{n}",
                          "task_type": "local_agent", "tool_use_id": f"toolu_ag{n}", "description": "a" * 200,
                          "session_id": sid, "timestamp": iso})


def ensure(kind: str, mb: int, directory: Path) -> Path:
    path = directory / f"state-{kind}-{mb}.jsonl"
    if not path.exists():
        limit = mb * 1_000_000
        written = 0
        with open(path, "wb") as fh:
            for line in _lines(kind):
                fh.write(line)
                written += len(line)
                if written >= limit:
                    break
    return path


#: writes FILE to stdout at RATE MB/s, a line at a time (decoding keeps up: nothing is skipped)
PACER = """
import sys, time
rate = float(sys.argv[2]) * 1e6
out = sys.stdout.buffer
t0, sent = time.monotonic(), 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        out.write(line)
        sent += len(line)
        ahead = sent / rate - (time.monotonic() - t0)
        if ahead > 0.01:
            out.flush()
            time.sleep(ahead)
out.flush()
"""


def run(path: Path | None, args: list[str], tree: str | None, rate: float) -> dict:
    """Peak summed VmRSS (MB) of otelbridge's tree on ``pacer path RATE | otelbridge ARGS``;
    seconds; stats."""
    env = dict(ENV)
    if tree:
        env["PYTHONPATH"] = tree
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = Path(tmp) / "stats.json"
        t0 = time.monotonic()
        src = subprocess.Popen([PY, "-c", PACER, str(path) if path else "/dev/null", str(rate)],
                               stdout=subprocess.PIPE)
        ob = subprocess.Popen([PY, "-m", "otelbridge", "-q", "--stats-json", str(stats_path)] + args,
                              stdin=src.stdout, stdout=subprocess.DEVNULL, env=env, cwd=tree or ROOT)
        src.stdout.close()
        peak = [0]

        def sample() -> None:
            while ob.poll() is None:
                peak[0] = max(peak[0], sum(memory.proc_kb(p, "status", "VmRSS") for p in memory.tree(ob.pid)))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        ob.wait()
        src.wait()
        sampler.join()
        st = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    return {"peak_MB": peak[0] / 1024, "seconds": time.monotonic() - t0,
            "state_budget_ended": st.get("state_budget_ended"), "spans": st.get("spans_started"),
            "lines": st.get("lines"), "not_decoded": st.get("lines_not_decoded"), "status": ob.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "otelbridge-bench")
    ap.add_argument("--rate", type=float, default=4.0, help="MB/s the stream is written at")
    ap.add_argument("--otlp", action="store_true", help="also export to a local OTLP/gRPC receiver")
    ap.add_argument("--tree", help="run otelbridge from this checkout instead")
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    modes = [("none", ["--exporter", "none"])]
    rx = Receiver().__enter__() if a.otlp else None
    try:
        if rx is not None:
            modes.append(("otlp", ["--protocol", "grpc", "--endpoint", rx.endpoint, "--flush-timeout", "30"]))
        for mode, args in modes:
            idle = run(None, args, a.tree, a.rate)
            print(f"{mode:5} {'idle':7} peak {idle['peak_MB']:6.1f} MB", flush=True)
            for kind in a.kinds.split(","):
                r = run(ensure(kind, a.mb, a.dir), args, a.tree, a.rate)
                print(f"{mode:5} {kind:7} peak {r['peak_MB']:6.1f} MB  {r['seconds']:6.1f} s  lines {r['lines']}  "
                      f"not decoded {r['not_decoded']}  spans {r['spans']}  ended early (state budget) {r['state_budget_ended']}  "
                      f"status {r['status']}", flush=True)
    finally:
        if rx is not None:
            rx.__exit__(None, None, None)


if __name__ == "__main__":
    main()
