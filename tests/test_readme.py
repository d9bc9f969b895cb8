"""README.md and docs/*.md say what the code does: the options table is the CLI's options, every
otelbridge command line in the README parses with the CLI, the job outputs it lists are the ones
written, the test command is the one CI runs, and no user doc points at internal material."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click

from otelbridge.cli import SUBCOMMANDS, run_command
from otelbridge.summary import Collector, job_outputs

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest"


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def long_options(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) for o in p.opts if o.startswith("--")}


def test_options_table_is_the_clis_options():
    rows = [ln for ln in section("Options").splitlines() if ln.startswith("| `-")]
    in_table = {re.match(r"\| `(?:-\w, )?(--[\w-]+)", ln).group(1) for ln in rows}
    shared = long_options(run_command) | long_options(SUBCOMMANDS["replay"])
    assert in_table == shared - {"--help", "--version"}
    # follow's own options are in its paragraph, --version in the table's lead
    for option in long_options(SUBCOMMANDS["follow"]) - shared - {"--help"}:
        assert f"`{option}`" in section("Replay and follow"), option
    assert "`--version`" in section("Options")


def test_options_table_defaults_are_the_clis():
    rows = {re.match(r"\| `(?:-\w, )?(--[\w-]+)", ln).group(1): ln.split(" | ")[1]
            for ln in section("Options").splitlines() if ln.startswith("| `-")}
    for param in run_command.params:
        if isinstance(param, click.Option) and isinstance(param.default, (int, float)) \
                and not isinstance(param.default, bool):
            shown = rows[param.opts[-1]].split()[0]
            assert float(shown) == param.default, (param.opts, shown)
        if isinstance(param.default, str):
            assert rows[param.opts[-1]] == param.default, param.opts
        said = re.search(r"\[default: ([^\]]+)\]", param.help or "")
        if said:  # a default the help states in words ($VARIABLE or value)
            assert rows[param.opts[-1]].replace("`", "") == said.group(1), param.opts


def readme_invocations():
    """Every otelbridge command line in the README's shell and console blocks, as argv."""
    for block in re.findall(r"```(?:sh|console)\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.removeprefix("$ ").split(" # ")[0]
            words = shlex.split(line)
            for i, word in enumerate(words):
                if word.endswith("otelbridge") and not word.startswith(("./", "git+")):
                    argv = words[i + 1:]
                    for stop in ("<", ">", "|", "&&"):
                        if stop in argv and "--" not in argv[: argv.index(stop)]:
                            argv = argv[: argv.index(stop)]
                    yield argv


def test_every_readme_command_line_parses():
    found = list(readme_invocations())
    assert len(found) >= 6
    for argv in found:
        command = SUBCOMMANDS.get(argv[0], run_command) if argv else run_command
        args = argv[1:] if argv and argv[0] in SUBCOMMANDS else argv
        command.make_context("otelbridge", list(args))  # raises on an unknown option or value


def test_job_outputs_listed_are_the_ones_written():
    rows = re.findall(r"^  \| `(\w+)` \|", section("In CI"), re.M)
    written = [ln.split("=", 1)[0] for ln in job_outputs(Collector()).splitlines()]
    assert rows == written


def test_run_the_tests_is_the_command_ci_runs():
    assert f"```sh\n{TEST_COMMAND}\n```" in section("Run the tests")
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == TEST_COMMAND


def test_user_docs_hold_no_internal_references():
    internal = re.compile(r"\.\./shared|SPAN-MODEL\.md|\bissue \d|\bseed \d{3}|\bcommit [0-9a-f]{7}"
                          r"|\b[0-9a-f]{7,10}\b")
    for name, text in {"README.md": README, **DOCS}.items():
        found = [m.group(0) for m in internal.finditer(text) if m.group(0) != "8388608"]
        assert not found, (name, found)


def test_doc_links_resolve():
    for name, text in {"README.md": README, **{f"docs/{k}": v for k, v in DOCS.items()}}.items():
        base = (ROOT / name).parent
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not target.startswith(("http://", "https://")):
                assert (base / target).exists(), (name, target)


def test_the_replay_example_prints_what_the_readme_shows():
    """The "exactly this" block: its command run as written (deterministic ids) prints the
    block's lines on stderr, the waterfall and counts as a user sees them."""
    import subprocess
    import sys

    block = README.split("```console\n", 1)[1].split("\n```", 1)[0].splitlines()
    command = []
    while block and (block[0].startswith("$ ") or command and command[-1].endswith("\\")):
        command.append(block.pop(0).removeprefix("$ "))
    argv = shlex.split(" ".join(c.removesuffix("\\") for c in command))
    assert argv[:2] == [".venv/bin/otelbridge", "replay"]
    proc = subprocess.run([sys.executable, "-m", "otelbridge", *argv[1:]], cwd=ROOT,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == block
