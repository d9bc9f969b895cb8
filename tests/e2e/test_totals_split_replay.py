"""A recording cut in two files at every line, replayed as ``otelbridge replay p1 p2``: the job
outputs' ``input_tokens``, ``output_tokens`` and ``total_cost_usd`` are those of the whole file's
replay, each token counted once over the session's two spans (docs/reference.md). Without a
``modelUsage`` the second span counts the cut turn's result less what the first counted of it
(its calls before the cut, one cut across seen again); it counted that span's calls again (turn
1's 64,057 input tokens twice, cut between its last call and its result) or left the result's
output for its calls' first snapshots (169 output tokens of 333). Each replay is a process."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, clean_env, needs_fixtures, run_bridge
from tests.e2e.test_totals_without_model_usage import CC, docs, stream_says, without_model_usage

#: a turn whose call starts a background shell, the result, then a turn it woke (its own init)
WAKE = "claudecli-go-bg-bash-wake-2.1.280.jsonl"
#: two Caudra runs, each opened by its turn_start; the first of two calls
CAUDRA = EXAMPLES / "caudra-session-turns.jsonl"


def job_totals(directory: Path, *parts: list[str]) -> tuple[int, int, str]:
    """``otelbridge replay`` of ``parts`` (each a file's lines) as a process: its job outputs'
    (input_tokens, output_tokens, total_cost_usd)."""
    directory.mkdir()
    paths = []
    for i, lines in enumerate(parts, start=1):
        paths.append(directory / f"p{i}.jsonl")
        paths[-1].write_text("".join(lines))
    out = directory / "outputs"
    proc = run_bridge(["replay", "--exporter", "none", *map(str, paths)], env=clean_env(GITHUB_OUTPUT=str(out)))
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    return int(outputs["input_tokens"]), int(outputs["output_tokens"]), outputs["total_cost_usd"]


def wrong_cuts(tmp_path: Path, name: str, lines: list[str]) -> tuple[tuple[int, int, str], dict]:
    """The whole file's totals, and each cut (the first file's line count, 1 to N-1) whose two
    files' totals differ from them, with those totals (two replays at a time)."""
    whole = job_totals(tmp_path / f"{name}-whole", lines)
    with ThreadPoolExecutor(max_workers=2) as pool:
        split = pool.map(lambda n: (n, job_totals(tmp_path / f"{name}-{n}", lines[:n], lines[n:])),
                         range(1, len(lines)))
        return whole, {n: got for n, got in split if got != whole}


@pytest.mark.parametrize("path", [
    pytest.param(CC / WAKE, marks=needs_fixtures(), id="bg-bash-wake"),
    pytest.param(CAUDRA, id="caudra-session-turns"),
])
def test_every_cut_of_a_stream_without_model_usage_counts_as_the_whole(tmp_path, path):
    """Without ``modelUsage`` the whole file counts its results' ``usage`` (97,094 / 333 and
    3,153 / 40), and so do its two files at every cut: they said 161,151 / 339 (cut between the
    wake recording's last call of turn 1 and its result, line 9), 97,094 / 169 (after line 5:
    turn 1's calls' snapshots for its result), 128,504 / 173 (after line 3: a call cut across,
    counted in both), and 5,163 / 72 for Caudra cut after line 5."""
    lines = without_model_usage(path.read_text())
    assert not any("modelUsage" in d for d in docs(lines))
    whole, wrong = wrong_cuts(tmp_path, path.stem, lines)
    cost = [d for d in docs(lines) if d.get("type") == "result"][-1]["total_cost_usd"]
    assert whole == (*stream_says(lines), str(cost))
    assert whole[:2] in ((97094, 333), (3153, 40))
    assert wrong == {}


@needs_fixtures()
def test_every_cut_of_every_claude_code_recording_counts_as_the_whole(tmp_path):
    """Each Claude Code recording as it is, at every cut: the totals of the whole file (the
    wake recording's 98,027 / 347, its ``modelUsage``). The interrupted turn's result counts
    nothing (0 for every count, an empty ``modelUsage``), so its session counts its one call:
    cut across that call (lines 15 to 27), both files counted it, 66,440 / 4 for 33,220 / 2."""
    recordings = sorted(CC.glob("*.jsonl"))
    assert len(recordings) == 13
    wrong, wholes = {}, {}
    for path in recordings:
        lines = path.read_text().splitlines(keepends=True)
        wholes[path.name], cuts = wrong_cuts(tmp_path, path.stem, lines)
        if cuts:
            wrong[path.name] = cuts
    assert wholes[WAKE] == (98027, 347, "0.025752")
    assert wholes["interrupt-2.1.276.jsonl"][:2] == (33220, 2)
    assert wrong == {}
