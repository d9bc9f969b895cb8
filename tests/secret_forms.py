"""Checking one secret form: a text, what the redactor makes of it, and the same in the places a
stream carries it (a JSON string; a Claude Code ``tool_use`` line's Bash ``command``)."""

from __future__ import annotations

import json

from otelbridge import redact


def check(text: str, expected: str | None, *, in_tool_use: bool = False) -> None:
    """``text`` redacted as ``expected`` (``None``: unchanged) by the test's redactor; where it
    is changed, or ``in_tool_use``, also inside a JSON string by a fresh redactor (nothing
    remembered from the text itself); ``in_tool_use``: also in a Bash call's line."""
    want = text if expected is None else expected
    assert redact.current().redact(text) == want
    if expected is None and not in_tool_use:
        return
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    assert redact.Redactor().redact(escaped) == json.dumps(want, ensure_ascii=False)[1:-1], escaped
    if in_tool_use:
        line = json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": text}}]}})
        assert redact.Redactor().redact(line) == line.replace(json.dumps(text)[1:-1], json.dumps(want)[1:-1])
