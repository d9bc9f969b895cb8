"""The state budget in a real ``otelbridge replay`` process: a bounded stream that only opens
state (a new session on every line, never ending) fills the default budget; what it ends early is
counted in ``--stats-json`` and named on the stats line, and every span still ends once."""

from __future__ import annotations

import json
import subprocess
import sys

from otelbridge.tracker.budget import DEFAULT_STATE_BYTES, ITEM_BYTES, SESSION_BYTES


def test_a_stream_of_ever_new_sessions_fills_the_default_budget(tmp_path):
    # each open session weighs at least SESSION_BYTES + ITEM_BYTES (its open turn): at most
    # this many fit, so the stream opens more than twice as many
    fit = DEFAULT_STATE_BYTES // (SESSION_BYTES + ITEM_BYTES)
    n = 2 * fit + 500
    path = tmp_path / "sessions.jsonl"
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"type": "system", "subtype": "init", "session_id": f"s{i:06d}",
                                 "model": "claude-opus-4-8", "timestamp": f"2026-07-10T08:00:{i % 60:02d}.000Z"}))
            fh.write("\n")
    stats_path = tmp_path / "stats.json"
    proc = subprocess.run([sys.executable, "-m", "otelbridge", "replay", "--exporter", "none",
                           "--stats-json", str(stats_path), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    st = json.loads(stats_path.read_text())
    assert st["lines_decoded"] == n
    assert st["spans_started"] == 2 * n  # a session span and its turn each, every one ended once
    ended = st["state_budget_ended"]
    # whole sessions were ended early (the session with its open turn), the oldest at least
    # until the rest fit
    assert ended % 2 == 0 and 2 * (n - fit) <= ended < 2 * n
    assert f"; {ended} ended early (state budget)" in proc.stderr
