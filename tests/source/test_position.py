"""The offset file's session references: what ``save_position`` writes loads back as it was,
and an earlier version's shorter references load with their defaults."""

from __future__ import annotations

import json

from otelbridge.source.position import Position, load_position, save_position

SAID = ("claude-code", "anthropic", "claude-haiku-4-5", "2.1.280")


def test_a_reference_with_every_token_count_loads_back_as_saved(tmp_path):
    ref = ("sid", 7 << 100, 9 << 40, 3, 0.0257, 0.01, (961, 347, 90040, 7026, 235, 0, 0, 12, 5, 0, 0, 0, 0, 0), SAID)
    pos = Position(1, 2, 300, 400, ("w1",), (ref,), (ref,), "salt", True)
    save_position(tmp_path / "f.json", pos, tmp_path / "agent.jsonl", "4096:ab")
    assert load_position(tmp_path / "f.json") == (pos, "4096:ab")


def test_an_earlier_version_s_references_load_with_their_defaults(tmp_path):
    doc = {"dev": 1, "ino": 2, "offset": 300, "sessions": [["a", 5, 6, 2]],
           "continued": [["b", 5, 7, 1, 0.5, 0.25, [961, 347], None]]}
    (tmp_path / "f.json").write_text(json.dumps(doc))
    pos, _ = load_position(tmp_path / "f.json")
    assert pos.sessions == (("a", 5, 6, 2, None, 0.0, None, None),)
    assert pos.continued == (("b", 5, 7, 1, 0.5, 0.25, (961, 347), None),)
