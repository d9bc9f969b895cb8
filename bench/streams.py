"""Deterministic reference streams for the benchmark, written to files.

* ``mix``   — a realistic Claude Code stream-json session: ``stream_event`` text deltas,
  ``assistant`` and ``user`` (tool result) lines, and workflows whose ``task_progress`` snapshots
  carry 1–50 agents, closed by ``task_updated`` + ``task_notification`` (the cbc workflow protocol §5). Default
  200 MB.
* ``long``  — one line of 100 MB (a huge tool result), newline-terminated.
* ``tiny``  — 10⁶ lines of about 60 bytes.

Same arguments → byte-identical file (``random.Random(seed)``, fixed epoch). Usage::

    python bench/streams.py mix  /tmp/mix.jsonl  [--mb 200]
    python bench/streams.py long /tmp/long.jsonl [--mb 100]
    python bench/streams.py tiny /tmp/tiny.jsonl [--lines 1000000]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator

SESSION = "5e55a0b2-9c1d-4d8e-a1f0-7b3c2d1e0f00"
EPOCH_MS = 1_783_647_395_000  # 2026-07-10, the recordings' era
WORDS = ("the", "agent", "reads", "file", "tool", "result", "phase", "workflow", "alpha", "beta",
         "token", "cache", "stream", "json", "delta", "span", "trace", "export", "line", "byte")


def _dumps(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _delta(rng: random.Random) -> bytes:
    return _dumps({
        "type": "stream_event",
        "event": {"type": "content_block_delta", "index": 0,
                  "delta": {"type": "text_delta", "text": _text(rng, rng.randint(1, 12))}},
        "session_id": SESSION, "parent_tool_use_id": None, "uuid": _uuid(rng),
    })


def _assistant(rng: random.Random, msg_id: str) -> bytes:
    return _dumps({
        "type": "assistant",
        "message": {"model": "claude-opus-4-8", "id": msg_id, "type": "message",
                    "role": "assistant",
                    "content": [{"type": "text", "text": _text(rng, rng.randint(20, 200))}],
                    "usage": {"input_tokens": rng.randint(1, 9000), "output_tokens": rng.randint(1, 900),
                              "cache_read_input_tokens": rng.randint(0, 40000)}},
        "parent_tool_use_id": None, "session_id": SESSION, "uuid": _uuid(rng),
    })


def _user(rng: random.Random, tool_id: str) -> bytes:
    return _dumps({
        "type": "user",
        "message": {"role": "user", "content": [{
            "tool_use_id": tool_id, "type": "tool_result",
            "content": _text(rng, rng.randint(50, 1500))}]},
        "parent_tool_use_id": None, "session_id": SESSION, "uuid": _uuid(rng),
    })


def _workflow(rng: random.Random, n: int, t0: int) -> Iterator[bytes]:
    """One workflow run: started, snapshots of 1..50 agents growing and finishing, the end."""
    task_id = f"wf{n:07d}"
    tool_id = f"toolu_{n:020d}"
    total = rng.randint(1, 50)
    yield _dumps({"type": "system", "subtype": "task_started", "task_id": task_id,
                  "tool_use_id": tool_id, "description": "bench workflow",
                  "task_type": "local_workflow", "workflow_name": f"bench-{n % 7}",
                  "uuid": _uuid(rng), "session_id": SESSION})
    agents: list[dict] = []
    t = t0
    while True:
        t += rng.randint(50, 500)
        if len(agents) < total:
            for _ in range(rng.randint(1, min(8, total - len(agents)))):
                i = len(agents) + 1
                agents.append({"type": "workflow_agent", "index": i, "label": f"agent {i}: {_text(rng, 4)}",
                               "phaseIndex": 1 + (i - 1) // 10, "phaseTitle": f"Phase {1 + (i - 1) // 10}",
                               "agentId": f"a{rng.getrandbits(60):015x}", "model": "claude-opus-4-8",
                               "state": "start", "startedAt": t, "queuedAt": t - 1, "attempt": 1,
                               "lastProgressAt": t, "tokens": 0, "toolCalls": 0})
        for a in agents:
            if a["state"] == "start":
                a["tokens"] += rng.randint(10, 900)
                a["lastProgressAt"] = t
                if rng.random() < 0.3:
                    a["state"] = rng.choice(("done", "done", "done", "error", "cached"))
                    a["durationMs"] = t - a["startedAt"]
        phases = sorted({a["phaseIndex"] for a in agents})
        entries = [{"type": "workflow_phase", "index": p, "title": f"Phase {p}"} for p in phases] + agents
        yield _dumps({"type": "system", "subtype": "task_progress", "task_id": task_id,
                      "tool_use_id": tool_id, "description": "bench workflow",
                      "usage": {"total_tokens": sum(a["tokens"] for a in agents), "tool_uses": 0,
                                "duration_ms": t - t0},
                      "workflow_progress": entries, "uuid": _uuid(rng), "session_id": SESSION})
        if len(agents) == total and all(a["state"] != "start" for a in agents):
            break
        for _ in range(rng.randint(2, 20)):
            yield _delta(rng)
    yield _dumps({"type": "system", "subtype": "task_updated", "task_id": task_id,
                  "patch": {"status": "completed", "end_time": t + 1}, "session_id": SESSION})
    yield _dumps({"type": "system", "subtype": "task_notification", "task_id": task_id,
                  "status": "completed", "summary": "bench workflow",
                  "usage": {"total_tokens": sum(a["tokens"] for a in agents), "tool_uses": 0,
                            "duration_ms": t + 1 - t0},
                  "session_id": SESSION})


def mix(size: int, seed: int = 5) -> Iterator[bytes]:
    """Lines of the realistic mix until ``size`` bytes (the last line may overshoot)."""
    rng = random.Random(seed)
    written = 0
    n = 0
    t = EPOCH_MS
    while written < size:
        roll = rng.random()
        if roll < 0.02:
            n += 1
            lines = list(_workflow(rng, n, t))
        elif roll < 0.12:
            lines = [_assistant(rng, f"msg_{n:08d}{rng.getrandbits(32):08x}")]
        elif roll < 0.20:
            lines = [_user(rng, f"toolu_{rng.getrandbits(64):020d}")]
        else:
            lines = [_delta(rng) for _ in range(rng.randint(5, 40))]
        t += rng.randint(10, 2000)
        for line in lines:
            written += len(line)
            yield line


def long_line(size: int) -> Iterator[bytes]:
    """One JSON line of ``size`` bytes (a tool result), in 1 MiB pieces, ending in ``\\n``."""
    head = b'{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"'
    tail = b'"}]},"session_id":"' + SESSION.encode() + b'"}\n'
    body = size - len(head) - len(tail)
    piece = (b"0123456789abcdef" * 65536)
    yield head
    while body > 0:
        yield piece[:body]
        body -= len(piece)
    yield tail


def tiny(count: int) -> Iterator[bytes]:
    """``count`` lines of ~60 bytes: short stream events no dialect wants."""
    for i in range(count):
        yield b'{"type":"stream_event","event":{"type":"ping"},"n":%9d}\n' % i


def write(kind: str, path: str, *, mb: int | None = None, lines: int | None = None) -> int:
    """Write stream ``kind`` to ``path``; returns the byte count."""
    if kind == "mix":
        gen = mix((mb or 200) * 1_000_000)
    elif kind == "long":
        gen = long_line((mb or 100) * 1_000_000)
    elif kind == "tiny":
        gen = tiny(lines or 1_000_000)
    else:
        raise ValueError(f"unknown stream {kind!r}: use mix, long or tiny")
    total = 0
    with open(path, "wb") as fh:
        for chunk in gen:
            fh.write(chunk)
            total += len(chunk)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("mix", "long", "tiny"))
    ap.add_argument("path")
    ap.add_argument("--mb", type=int)
    ap.add_argument("--lines", type=int)
    args = ap.parse_args()
    print(write(args.kind, args.path, mb=args.mb, lines=args.lines))


if __name__ == "__main__":
    main()
