"""End to end: a model's name stays in every span though a file the agent read named it under a
key (content capture off, the default). A real recording, its Glob result's text replaced by a
YAML file that keys the session's own model, a cache and a variable by name, or that gives the
model as an API key's value (hidden there: a secret's place; not remembered, the stream naming it
its model); replayed to the file exporter."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, needs_fixtures, run_bridge

RECORDING = FIXTURES / "claude-code" / "custom-agent-2.1.6.jsonl"
MODEL = "claude-haiku-4-5-20251001"
KEYED = (f"models:\n    - key: {MODEL}\n      label: Haiku\ncache:\n  key: npm-cache-v2\n"
         "env:\n  CACHE_KEY=node-modules-v3\n")
AS_A_SECRET = f"default:\n  api_key: {MODEL}\n"


def _with_config(path, config: str) -> str:
    """The recording, its Glob call's result (the line whose result names pyproject.toml
    files) holding ``config`` instead."""
    out = []
    for line in RECORDING.read_text().splitlines():
        doc = json.loads(line)
        blocks = doc.get("message", {}).get("content")
        if doc["type"] == "user" and isinstance(blocks, list) and "pyproject.toml" in str(blocks[0].get("content")):
            blocks[0]["content"] = config
            line = json.dumps(doc)
        out.append(line)
    assert sum(config == json.loads(x)["message"]["content"][0].get("content", "")
               for x in out if json.loads(x)["type"] == "user") == 1
    path.write_text("\n".join(out) + "\n")
    return str(path)


@needs_fixtures()
@pytest.mark.parametrize("config", [KEYED, AS_A_SECRET])
def test_a_model_named_in_a_file_read_stays_in_every_span(tmp_path, config):
    out = tmp_path / "spans.jsonl"
    proc = run_bridge(["replay", "--exporter", "file", "--output", str(out), _with_config(tmp_path / "rec.jsonl", config)])
    assert proc.returncode == 0, proc.stderr
    spans = [span for line in out.read_text().splitlines() for rs in json.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for span in ss["spans"]]
    models = {(span["name"], a["key"], a["value"]["stringValue"]) for span in spans for a in span["attributes"]
              if a["key"].endswith(".model")}
    assert sorted(span["name"] for span in spans) == sorted(
        ["execute_tool Task", "execute_tool Glob", "turn 1", "invoke_agent claude-code"] + [f"chat {MODEL}"] * 3)
    assert models == {(f"chat {MODEL}", "gen_ai.request.model", MODEL), (f"chat {MODEL}", "gen_ai.response.model", MODEL),
                      ("turn 1", "gen_ai.request.model", MODEL), ("invoke_agent claude-code", "gen_ai.request.model", MODEL)}
    assert "REDACTED" not in out.read_text()
