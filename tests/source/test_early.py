"""The tee's first bytes, passed while the rest is imported (otelbridge.source.early): only for
the tee without a wrapped command, and every byte so passed is still decoded and counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from otelbridge.cli import run_command
from otelbridge.source import early

ROOT = Path(__file__).resolve().parents[2]
CBC = ROOT / "examples" / "cbc-workflow.jsonl"


@pytest.mark.parametrize("args, plain", [
    ([], True),
    (["--exporter", "none", "-q"], True),
    (["--exporter=none", "--stats-json", "/tmp/x.json", "--capture-content"], True),
    (["--", "claude", "-p", "hi"], False),    # a wrapped command: stdin is the child's
    (["claude"], False),                      # a command without --
    (["--exporter", "none", "cat"], False),
    (["--help"], False), (["--version"], False), (["-h"], False),
    (["--exporter"], False),                  # a value missing: click says so, not us
    (["--unknown"], False),
])
def test_plain_tee_is_the_tee_without_a_command(args, plain):
    assert early.plain_tee(args) is plain


def test_the_option_sets_are_the_tees_options():
    values, flags = set(), set()
    for param in run_command.params:
        if not isinstance(param, click.Option) or param.name in ("help", "version"):
            continue
        (flags if param.is_flag else values).update(param.opts + param.secondary_opts)
    assert values == early.VALUE_OPTIONS
    assert flags == early.FLAG_OPTIONS


def _stats(args: list[str], data: bytes, tmp_path: Path, name: str) -> tuple[bytes, dict]:
    path = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, "-m", "otelbridge", *args, "--stats-json", str(path)],
                          input=data, capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(path.read_text())


def test_bytes_passed_before_the_tee_is_set_up_are_decoded_and_counted(tmp_path):
    """The whole recording arrives at once, before the tee is imported: it passes early (stdin
    and stdout are pipes), and the decoding process still sees every line of it."""
    data = CBC.read_bytes()
    out, live = _stats(["--exporter", "none", "--grace-period", "0"], data, tmp_path, "live")
    _, replay = _stats(["replay", "--exporter", "none", "--grace-period", "0", str(CBC)], b"",
                       tmp_path, "replay")
    assert out == data
    assert live["bytes"] == len(data) and live["lines"] == data.count(b"\n")
    assert live["lines_not_decoded"] == 0
    assert live["lines_decoded"] == replay["lines_decoded"] > 0
    assert live["spans_started"] == replay["spans_started"] > 0
