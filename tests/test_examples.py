"""examples/github-actions.yml stays valid: YAML that GitHub can read, and every otelbridge
invocation in it parses with our own CLI (options and choices that exist)."""

from __future__ import annotations

import shlex

import click
import yaml

from otelbridge.cli import SUBCOMMANDS, run_command
from tests.conftest import EXAMPLES


def invocations():
    doc = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    for job in doc["jobs"].values():
        for step in job["steps"]:
            script = step.get("run", "")
            words = shlex.split(script.replace("\n", " "))
            if words and words[0] == "otelbridge":
                yield step, words[1:]


def test_github_actions_example_parses():
    found = list(invocations())
    assert found, "the example runs otelbridge"
    for step, args in found:
        if ">" in args:
            args = args[: args.index(">")]
        command = SUBCOMMANDS.get(args[0], run_command) if args else run_command
        if args and args[0] in SUBCOMMANDS:
            args = args[1:]
        ctx = command.make_context("otelbridge", list(args))  # raises on an unknown option
        assert isinstance(ctx, click.Context)
        if "--output" in args:
            assert "file" in ctx.params["exporter"].split(",")
        assert "{trace_id}" in step["env"]["OTELBRIDGE_TRACE_URL"]
