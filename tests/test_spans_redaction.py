"""otelbridge.spans as the one redaction boundary: a record of raw text leaves sanitised,
redacted on its whole length, then capped; span names are built from redacted values; strings
too long to scan are dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbridge import redact
from otelbridge.events import SpanEvent, SpanLink, SpanRecord
from otelbridge.spans import PresetIdGenerator, SpanBuilder
from otelbridge.stats import Stats
from tests.conftest import FIXTURES, needs_fixtures

KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt"


@pytest.fixture(params=["emit", "once"])
def path(request):
    """Both ways into the builder: ``emit`` (it redacts), or ``emit_redacted`` after
    :func:`redacted` (a sink that hands the same record to the reports)."""
    return request.param


def build(rec: SpanRecord, redactor: redact.Redactor, path: str, *, once: bool = False):
    """The one span ``rec`` makes; ``once``: redacted by the caller, built by
    ``emit_redacted`` (a sink that hands the same record to the reports)."""
    from otelbridge.spans import redacted

    previous = redact.install(redactor)
    try:
        ids = PresetIdGenerator()
        provider = TracerProvider(id_generator=ids, shutdown_on_exit=False)
        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        builder = SpanBuilder(provider, ids, Stats())
        if once or path == "once":
            builder.emit_redacted(redacted(rec))
        else:
            builder.emit(rec)
        (span,) = memory.get_finished_spans()
        return span
    finally:
        redact.install(previous)


def test_uncleaned_record_leaves_clean(path):
    rec = SpanRecord(
        name="execute_tool \x1b[31mBash " + KEY + " " + "x" * 100,
        trace_id=0x1234, span_id=0x56, parent_span_id=None, start_ns=10, end_ns=20,
        attributes={"gen_ai.tool.name": "Bash\n" + KEY, "process.command_args": ["/home/ann/bin/x", "--mail",
                    "ann@example.com"], "gen_ai.usage.input_tokens": 12, "ok": True},
    )
    rec.events.append(SpanEvent("note\x07", 15, {"text": "y" * 300}))
    rec.links.append(SpanLink(0x99, 0x98, {"why": "Bearer abcdefghijkl"}))
    rec.error, rec.error_type = "failed: " + KEY, "tool_error"
    span = build(rec, redact.Redactor.build(max_length=100), path)
    assert span.name == ("execute_tool Bash [REDACTED:anthropic_key] " + "x" * 100)[:63] + "…"
    assert len(span.name) == redact.SPAN_NAME_MAX
    assert span.attributes["gen_ai.tool.name"] == "Bash [REDACTED:anthropic_key]"
    assert tuple(span.attributes["process.command_args"]) == ("~/bin/x", "--mail", "[REDACTED:email]")
    assert span.attributes["gen_ai.usage.input_tokens"] == 12 and span.attributes["ok"] is True
    (event,) = span.events
    assert event.name == "note " and event.attributes["text"] == "y" * 99 + "…"
    assert span.links[0].attributes["why"] == "Bearer [REDACTED:bearer]"
    assert span.status.description == "failed: [REDACTED:anthropic_key]"
    assert span.attributes["error.type"] == "tool_error"


def test_already_clean_record_is_unchanged(path):
    label = redact.span_name("invoke_agent", "build token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "#1")
    attrs = {"gen_ai.agent.name": redact.clean("mail ann@example.com at /home/ann/x")}
    rec = SpanRecord(name=label, trace_id=1, span_id=2, parent_span_id=None, start_ns=1, end_ns=2,
                     attributes=dict(attrs))
    span = build(rec, redact.Redactor(), path)
    assert span.name == label == "invoke_agent build token [REDACTED:jwt]"
    assert dict(span.attributes) == attrs


# --------------------------------------------------------------------------- one boundary

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi/Zq3vT8yLm2Nw5Rk9Pd4Hs7Jf\n"
       "1Gb6Cx0VaUe+Ri8Tq3dum/mykeymaterialnotrealZZ+Xw==\n-----END RSA PRIVATE KEY-----")
GHP = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0123"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def raw_record(name: str, **attrs) -> SpanRecord:
    """A record as the tracker makes it: raw text, nothing cut."""
    return SpanRecord(name=name, trace_id=0x77, span_id=0x78, parent_span_id=None, start_ns=1,
                      end_ns=2, attributes=dict(attrs))


def pieces(secret: str, n: int = 6) -> set[str]:
    """Every piece of ``secret`` ``n`` characters long."""
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def assert_no_piece(secret: str, *texts: str) -> None:
    for text in texts:
        found = [p for p in pieces(secret) if p in text]
        assert not found, (text, found)


@pytest.mark.parametrize("workflow_name,expected", [
    # a path whose "directory" holds a PEM block with '/' in it: the basename of the raw value
    # would be 'mykeymaterialnotrealZZ+Xw==\n-----END RSA PRIVATE KEY-----/run.workflow.js'
    ("path:/tmp/x/" + PEM + "/run.workflow.js", "invoke_workflow run.workflow.js"),
    ("path:/srv/Bearer abcdefghijklmnop/deploy.js", "invoke_workflow Bearer [REDACTED:bearer]"),
    ("deploy Authorization: Bearer abcdefghijklmnop", "invoke_workflow deploy Authorization: [REDACTED:authorization]"),
    ("path:flows/release.workflow.js", "invoke_workflow release.workflow.js"),
])
def test_workflow_span_name_is_built_from_the_redacted_value(path, workflow_name, expected):
    from otelbridge.tracker.workflows import workflow_display_name

    rec = raw_record("invoke_workflow " + workflow_display_name(workflow_name),
                     **{"workflow.name": workflow_name, "gen_ai.operation.name": "invoke_workflow"})
    span = build(rec, redact.Redactor(), path)
    assert span.name == expected
    assert_no_piece("MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi/Zq3vT8yLm2Nw5Rk9Pd4Hs7Jf1Gb6Cx0VaUe+Ri8Tq3dum/mykey"
                    "materialnotrealZZ+Xw==", span.name, span.attributes["workflow.name"])
    assert "abcdefghijklmnop" not in span.name + span.attributes["workflow.name"]


def test_run_span_name_is_the_basename_of_the_redacted_command(path):
    rec = raw_record("run Xw==", **{"process.command": "/opt/" + PEM + "/bin/claude"})
    span = build(rec, redact.Redactor(), path)
    assert span.name == "run claude"
    assert span.attributes["process.command"] == "/opt/[REDACTED:private_key]/bin/claude"


def agent_record(label: str) -> SpanRecord:
    """A workflow agent's record as the tracker makes it (name from the raw label)."""
    from otelbridge.tracker.base import span_name

    return raw_record(span_name("invoke_agent", label, "#1"), **{"gen_ai.agent.name": label})


def test_agent_span_name_is_redacted_on_its_whole_length(path):
    # a YAML value before its secret-named key, the key followed by an ideographic space
    span = build(agent_record('- value: "hunter2xyz"\n  name: API_TOKEN\u3000'), redact.Redactor(), path)
    assert "hunter2xyz" not in span.name + span.attributes["gen_ai.agent.name"]
    assert span.name == 'invoke_agent - value: "[REDACTED:secret]"   name: API_TOKEN'


def test_a_custom_pattern_sees_the_agent_span_name_whole(path):
    safe = redact.Redactor.build(extra=[r"^invoke_agent d\S*"])
    span = build(agent_record("deploy-prod-eu"), safe, path)
    assert span.name == "[REDACTED:custom]"
    assert span.attributes["gen_ai.agent.name"] == "deploy-prod-eu"


@pytest.mark.parametrize("name,attributes,regex,expected", [
    # a regex anchored at a string's start hides the label in its attribute: in the name too
    ("invoke_agent deploy-prod", {"gen_ai.agent.name": "deploy-prod"}, r"^deploy\S*", "invoke_agent [REDACTED:custom]"),
    ("execute_tool deploy-prod", {"gen_ai.tool.name": "deploy-prod"}, r"^deploy\S*", "execute_tool [REDACTED:custom]"),
    # ... and one that reads the operation sees names made of an attribute's display form
    ("invoke_workflow wf", {"workflow.name": "internal release"}, r"^invoke_workflow \S+",
     "[REDACTED:custom] release"),
    ("run tool", {"process.command": "./secret-internal-tool"}, r"^run \S+", "[REDACTED:custom]"),
])
@pytest.mark.parametrize("defaults", [True, False])
def test_a_custom_pattern_sees_a_name_s_subject_and_the_whole_name(path, name, attributes, regex, expected,
                                                                   defaults):
    span = build(raw_record(name, **attributes), redact.Redactor.build(extra=[regex], defaults=defaults), path)
    assert span.name == expected


@pytest.mark.parametrize("cap", [64, 256, 1024])
@pytest.mark.parametrize("secret,form", [
    (GHP, "{}"), (AWS, "aws_secret_access_key={}"), ("correct horse battery staple", 'password: "{}"'),
    (PEM, "{}"), ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "{}"),
])
def test_a_secret_straddling_a_cut_leaves_nothing_of_itself(path, cap, secret, form):
    """The cap is applied after redaction: a secret across character ``cap`` (of names at 64,
    attributes, events, links and status at ``max_length``) is gone whole."""
    text = "x" * (cap - 12) + " " + form.format(secret) + " tail"
    rec = raw_record("execute_tool " + text[13:] if cap == 64 else "execute_tool t",
                     **{"gen_ai.tool.name": text, "list": [text, "ok"]})
    rec.events.append(SpanEvent("gen_ai.tool.message", 1, {"content": text}))
    rec.links.append(SpanLink(0x99, 0x98, {"why": text}))
    rec.error, rec.error_type = text, text
    span = build(rec, redact.Redactor.build(max_length=cap), path)
    strings = [span.name, span.status.description, span.attributes["gen_ai.tool.name"],
               span.attributes["error.type"], *span.attributes["list"],
               span.events[0].attributes["content"], span.links[0].attributes["why"]]
    for s in strings:
        assert len(s) <= cap
    assert_no_piece(secret.replace("\n", " "), *strings)
    assert span.attributes["gen_ai.tool.name"] == redact.Redactor.build(max_length=cap).clean(text)


def test_json_escaped_content_is_redacted(path):
    args = json.dumps({"command": 'curl -d "{\\"password\\": \\"correct horse\\"}" -H "Authorization: Bearer '
                                  'tok_live_9f8e7d6c5b4a3210ffee"', "env": {"AWS_SESSION_TOKEN": "FwoGZXIvYXdzEJr//wEaDM3Q+x=="}})
    rec = raw_record("execute_tool Bash", **{"gen_ai.tool.call.arguments": args})
    span = build(rec, redact.Redactor.build(max_length=4096), path)
    out = span.attributes["gen_ai.tool.call.arguments"]
    for secret in ("correct horse", "tok_live_9f8e7d6c5b4a3210ffee", "FwoGZXIvYXdzEJr"):
        assert secret not in out
    assert out.count("[REDACTED:") == 3 and '\\"command\\"' not in out and '"command"' in out


def test_strings_too_long_to_scan_are_dropped_not_exported(path, monkeypatch):
    monkeypatch.setattr(redact, "SCAN_MAX_CHARS", 1_000)
    huge = "password=" + "s" * 1_000
    rec = raw_record("invoke_workflow s", **{"workflow.name": huge, "workflow.status": "failed", "n": 1})
    rec.events.append(SpanEvent("e", 1, {"big": huge, "small": "ok"}))
    rec.error, rec.error_type = huge, "workflow_failed"
    span = build(rec, redact.Redactor(), path)
    assert span.name == "invoke_workflow [REDACTED:too_long]"
    assert dict(span.attributes) == {"workflow.status": "failed", "n": 1, "error.type": "workflow_failed"}
    assert dict(span.events[0].attributes) == {"small": "ok"}
    assert span.status.description == redact.DROPPED


def test_attribute_keys_from_the_stream_are_cleaned(path):
    rec = raw_record("hook", **{"hook.\x1b[31mx": "v", "hook.sk-ant-api03-AbCdEfGhIjKlMnOpQrSt": "w"})
    span = build(rec, redact.Redactor(), path)
    assert sorted(span.attributes) == ["hook.[REDACTED:anthropic_key]", "hook.x"]


def test_redacted_is_idempotent_and_leaves_the_record_alone():
    from otelbridge.spans import redacted

    rec = raw_record("invoke_workflow x", **{"workflow.name": "path:/a/" + GHP + "/f.js", "n": 3})
    rec.error = "failed: " + AWS
    once = redacted(rec, redact.Redactor())
    assert redacted(once, redact.Redactor()) == once
    assert rec.attributes["workflow.name"].endswith(GHP + "/f.js") and rec.error.endswith(AWS)
    assert once.name == "invoke_workflow f.js" and once.error == "failed: [REDACTED:aws_secret_key]"


def test_emit_redacted_builds_what_emit_builds(path):
    """A sink that redacts once (for the span and the reports) gets the same span."""
    rec = raw_record("invoke_workflow x", **{"workflow.name": "path:/a/" + GHP + "/f.js", "n": 3})
    rec.error = "failed: password=hunter22"
    via_emit = build(rec, redact.Redactor(), path)
    via_redacted = build(rec, redact.Redactor(), path, once=True)
    assert via_redacted.name == via_emit.name == "invoke_workflow f.js"
    assert dict(via_redacted.attributes) == dict(via_emit.attributes)
    assert via_redacted.status.description == via_emit.status.description == "failed: password=[REDACTED:secret]"


@needs_fixtures()
def test_default_patterns_find_the_same_in_a_name_s_subject_alone():
    """The default patterns scan an operation's subject on its own (one scan of a label its
    attribute repeats): over every corpus form and recording string, after every operation,
    that gives the name the whole name's scan gives."""
    from bench.redaction import recording_strings
    from otelbridge.spans import OPERATIONS, _name

    forms = Path(__file__).parent / "data" / "secret-forms.jsonl"
    texts = [json.loads(line)["text"] for line in forms.read_text().splitlines() if line.strip()]
    texts += recording_strings(FIXTURES)
    assert len(texts) > 2_500
    whole, alone = redact.Redactor.build(), redact.Redactor.build()
    assert alone.only_defaults and not redact.Redactor.build(extra=["x"]).only_defaults
    differ = [(op, text) for op in sorted(OPERATIONS - {"invoke_workflow", "run"}) for text in texts
              if _name(raw_record(f"{op} {text}"), alone) != whole.name(f"{op} {text}")]
    assert differ == []


def test_a_tool_span_with_arguments_nesting_too_deep_is_built_without_them(path):
    """A tool input nested 400 deep overflowed the stack in the JSON walk: the span was lost
    ("span not redacted, not built"). Now the arguments alone are left out."""
    deep = json.dumps({"x": json.loads("[" * 400 + "]" * 400)})
    rec = SpanRecord(name="execute_tool Bash", trace_id=0x1234, span_id=0x56, parent_span_id=None,
                     start_ns=10, end_ns=20,
                     attributes={"gen_ai.tool.name": "Bash", "gen_ai.tool.call.arguments": deep})
    span = build(rec, redact.Redactor.build(max_length=1000), path)
    assert span.name == "execute_tool Bash" and span.attributes["gen_ai.tool.name"] == "Bash"
    assert "gen_ai.tool.call.arguments" not in span.attributes
