"""examples/github-actions.yml works as written and says only what is true: YAML that GitHub can
read, every otelbridge invocation parses with our own CLI (options and choices that exist),
otelbridge is installed from its repository (no index serves the name), the step outputs it
documents are exactly the ones written to GITHUB_OUTPUT, and the replay note holds."""

from __future__ import annotations

import re
import shlex

import click
import yaml

from otelbridge.cli import SUBCOMMANDS, run_command
from otelbridge.summary import Collector, job_outputs
from tests.conftest import EXAMPLES

EXAMPLE = EXAMPLES / "github-actions.yml"


def commands():
    """(step, words) of every command line of every step's ``run``."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    for job in doc["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                if line.strip():
                    yield step, shlex.split(line)


def invocations():
    for step, words in commands():
        if words[0] == "otelbridge":
            if ">" in words:
                words = words[: words.index(">")]
            yield step, words[1:]


def test_github_actions_example_parses():
    found = list(invocations())
    assert found, "the example runs otelbridge"
    for step, args in found:
        command = SUBCOMMANDS.get(args[0], run_command) if args else run_command
        if args and args[0] in SUBCOMMANDS:
            args = args[1:]
        ctx = command.make_context("otelbridge", list(args))  # raises on an unknown option
        assert isinstance(ctx, click.Context)
        if "--output" in args:
            assert "file" in ctx.params["exporter"].split(",")
        assert "{trace_id}" in step["env"]["OTELBRIDGE_TRACE_URL"]


def test_otelbridge_is_installed_from_its_repository():
    installs = [words for _, words in commands() if words[:4] == ["python", "-m", "pip", "install"]]
    targets = [w for words in installs for w in words[4:] if not w.startswith("-")]
    assert any("otelbridge" in t for t in targets)
    for target in targets:
        if "otelbridge" in target:  # a checkout or a git URL, never the bare name
            assert target.startswith(("./", "git+")), target
    doc = yaml.safe_load(EXAMPLE.read_text())
    paths = [s["with"]["path"] for s in doc["jobs"]["agent"]["steps"]
             if s.get("uses", "").startswith("actions/checkout") and "with" in s]
    assert any(f"./{p}" in targets for p in paths)


def test_documented_outputs_are_the_written_ones():
    text = EXAMPLE.read_text()
    documented = set(re.findall(r"steps\.agent\.outputs\.(\w+)", text))
    written = {line.split("=", 1)[0] for line in job_outputs(Collector()).splitlines()}
    assert documented == written
    doc = yaml.safe_load(text)
    (step,) = [s for s in doc["jobs"]["agent"]["steps"] if s.get("id") == "agent"]
    assert step["run"].split()[0] == "otelbridge"


def test_the_replay_note_holds():
    """Replay rebuilds the same workflow trace ids only from a run with --deterministic-ids."""
    text = EXAMPLE.read_text()
    assert "replay" in text and "--deterministic-ids" in text
    for _, args in invocations():
        ctx = run_command.make_context("otelbridge", list(args))
        assert ctx.params["deterministic_ids"] is True


def test_no_script_pastes_a_step_output():
    """A step output reaches a script through ``env``, never as ``${{ }}`` in its ``run``: the
    agent ran in the step that wrote them, could write ``GITHUB_OUTPUT`` too, and an expression
    in ``run`` is pasted into the script before the shell reads it."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    runs = [step.get("run", "") for job in doc["jobs"].values() for step in job["steps"]]
    assert runs and not any("${{" in run for run in runs)
    readme = (EXAMPLES.parent / "README.md").read_text()
    assert "$COST_USD" in readme and not re.search(r"run:[^\n]*\$\{\{", readme)
