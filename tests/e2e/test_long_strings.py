"""Strings longer than the decoder holds (``wire.MAX_HELD_CHARS``, 64 Ki characters) through a
real ``replay``: each is redacted on its whole length before it is cut to that bound, so a
value that only the words after it mark as a secret stays hidden wherever the cut falls, and
one too long to scan (over 256 Ki characters) never leaves. The lines are a real Claude Code
recording's (init, a ``tool_use``, a ``user`` line with a ``tool_result`` block and its
``tool_use_result``, the result), their tool calls' input and output made long."""

from __future__ import annotations

import copy
import json

from tests.conftest import FIXTURES, needs_fixtures, run_bridge

RECORDING = FIXTURES / "claude-code" / "claudecli-go-bg-bash-wake-2.1.280.jsonl"
HELD = 65_536  # wire.MAX_HELD_CHARS
SECRET = "Kx9mQzPw7Lm2"
#: marked as a password only by the words after it: alone, ``use "X"`` is no secret
VALUE = f'use "{SECRET}"'
AFTER = " as the password. Then rotate it."
LIMIT = 100_000  # --max-attribute-length: above the held bound, so that bound is what cuts


def _lines() -> tuple[dict, dict, dict, dict]:
    lines = [json.loads(l) for l in RECORDING.read_text().splitlines()]
    tool_use = next(l for l in lines if l["type"] == "assistant"
                    and l["message"]["content"][0]["type"] == "tool_use")
    result = next(l for l in lines if l["type"] == "user" and "tool_use_result" in l)
    return lines[0], tool_use, result, next(l for l in lines if l["type"] == "result")


def _call(tool_use: dict, result: dict, n: int, name: str, args: dict, output: str,
          summary: dict) -> list[dict]:
    """The recording's tool call and its result, as call ``n`` of ``name``."""
    use, res = copy.deepcopy(tool_use), copy.deepcopy(result)
    call_id = f"toolu_long{n:02d}"
    use["message"]["id"] = f"msg_long{n:02d}"
    use["message"]["content"][0].update(id=call_id, name=name, input=args)
    block = res["message"]["content"][0]
    block.update(tool_use_id=call_id, content=output)
    res["tool_use_result"] = summary
    return [use, res]


def read_output(space_at: int) -> str:
    """A file as ``Read`` gives it (numbered lines), ~73 K characters, the space after
    :data:`VALUE` at offset ``space_at``."""
    out, i = "", 1
    while len(out) < space_at - 300:
        out += f"{i:6}\u2192The staging database is described in the runbook, section {i}.\n"
        i += 1
    start = f"{i:6}\u2192To log in "
    pad = space_at - len(out) - len(start) - len(VALUE)
    out += f"{i:6}\u2192" + "x" * (pad % 2) + "x " * (pad // 2) + "To log in " + VALUE + AFTER + "\n"
    assert out.index(VALUE) + len(VALUE) == space_at
    while len(out) < 73_000:
        i += 1
        out += f"{i:6}\u2192More notes about the staging cluster, line {i}.\n"
    return out


def held(text: str) -> str:
    """What may leave of a long tool output: line ends as spaces, :data:`VALUE` hidden, then
    cut before its last whitespace within the held bound."""
    text = text.replace("\n", " ").replace(SECRET, "[REDACTED:secret]")
    return text[: text.rfind(" ", 0, HELD + 1)]


def replay(tmp_path, lines: list[dict]) -> dict[str, dict]:
    """``replay --capture-content`` of ``lines`` into an OTLP/JSON file: each ``execute_tool``
    span's string attributes by its call id, and the file's text."""
    stream, out = tmp_path / "run.jsonl", tmp_path / "spans.jsonl"
    stream.write_text("".join(json.dumps(l) + "\n" for l in lines))
    proc = run_bridge(["replay", "--capture-content", "--max-attribute-length", str(LIMIT),
                       "--exporter", "file", "--output", str(out), str(stream)])
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert SECRET not in text  # nowhere: no attribute, event or name holds it
    calls: dict[str, dict] = {}
    for line in text.splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: a["value"].get("stringValue") for a in span.get("attributes", [])}
                    if span["name"].startswith("execute_tool"):
                        calls[attrs["gen_ai.tool.call.id"]] = attrs
    return calls


@needs_fixtures()
def test_a_secret_the_words_after_it_mark_stays_hidden_where_the_held_cut_falls(tmp_path):
    init, tool_use, result, end = _lines()
    outputs = {1: read_output(65_534),  # the cut right after the value: cut first, it would leave bare
               2: read_output(65_530)}  # redacted whole, the marker itself fits the bound
    lines = [init]
    for n, text in outputs.items():
        lines += _call(tool_use, result, n, "Read", {"file_path": f"/srv/runbook-{n}.txt"}, text,
                       {"type": "text", "file": {"filePath": f"/srv/runbook-{n}.txt", "content": text,
                                                 "numLines": text.count("\n"), "startLine": 1,
                                                 "totalLines": text.count("\n")}})
    calls = replay(tmp_path, [*lines, end])
    first, second = (calls[f"toolu_long{n:02d}"]["gen_ai.tool.call.result"] for n in (1, 2))
    assert first == held(outputs[1]) and first.endswith("To log in use")
    assert second == held(outputs[2]) and second.endswith('To log in use "[REDACTED:secret]"')


@needs_fixtures()
def test_a_write_of_a_long_file_is_held_as_json_redacted_before_its_cut(tmp_path):
    init, tool_use, result, end = _lines()
    path = "/srv/notes.txt"
    overhead = len(json.dumps({"file_path": path, "content": ""}, separators=(",", ":")))
    # the content's cut to the longest length that fits the held bound (its two quotes escaped
    # in JSON) falls right after VALUE
    space_at = HELD - overhead - 2
    pad = space_at - len(VALUE)
    content = "x" * (pad % 2) + "x " * (pad // 2) + VALUE + AFTER
    content += " More notes about the staging cluster." * 400
    assert content.index(VALUE) + len(VALUE) == space_at
    lines = [init, *_call(tool_use, result, 1, "Write", {"file_path": path, "content": content},
                          "File created successfully at: /srv/notes.txt",
                          {"type": "create", "filePath": path, "content": content})]
    args = replay(tmp_path, [*lines, end])["toolu_long01"]["gen_ai.tool.call.arguments"]
    redacted, keep = content.replace(SECRET, "[REDACTED:secret]"), HELD

    def doc(n: int) -> dict:
        return {"file_path": path, "content": redacted[:n - 1] + "…"}

    # redacted whole, then its string cut (``…``) to the longest length whose JSON (quotes
    # escaped) fits the bound
    while len(json.dumps(doc(keep), separators=(",", ":"), ensure_ascii=False)) > HELD:
        keep -= 1
    assert json.loads(args) == doc(keep) and args.endswith('use \\"[REDACTED:sec…"}')


@needs_fixtures()
def test_an_output_too_long_to_scan_never_leaves(tmp_path):
    init, tool_use, result, end = _lines()
    first = "build step 1: compiling module alpha with the release profile\n"
    output = "".join(f"build step {i}: compiling module alpha with the release profile\n"
                     for i in range(1, 4_560))
    assert 256 * 1024 < len(output) < 300_000
    lines = [init, *_call(tool_use, result, 1, "Bash", {"command": "make release"}, output,
                          {"stdout": output, "stderr": "", "interrupted": False, "isImage": False,
                           "noOutputExpected": False})]
    call = replay(tmp_path, [*lines, end])["toolu_long01"]
    assert call["gen_ai.tool.call.result"] == "[REDACTED:too_long]"
    assert call["gen_ai.tool.call.arguments"] == '{"command":"make release"}'
    assert first.strip() not in (tmp_path / "spans.jsonl").read_text()
