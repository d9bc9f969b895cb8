"""otelbridge.spans as the last gate of what may leave: a record a tracker part forgot to
clean still leaves sanitised, redacted and capped."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbridge import redact
from otelbridge.events import SpanEvent, SpanLink, SpanRecord
from otelbridge.spans import PresetIdGenerator, SpanBuilder
from otelbridge.stats import Stats
from tests.test_spans import LiveSpanProcessor

KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt"


@pytest.fixture(params=["built", "sdk"])
def path(request):
    """Both ways the builder makes a span: built directly, or through ``Tracer.start_span``
    (when a processor wants the live span)."""
    return request.param


def build(rec: SpanRecord, redactor: redact.Redactor, path: str):
    previous = redact.install(redactor)
    try:
        ids = PresetIdGenerator()
        provider = TracerProvider(id_generator=ids, shutdown_on_exit=False)
        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        if path == "sdk":
            provider.add_span_processor(LiveSpanProcessor())
        SpanBuilder(provider, ids, Stats()).emit(rec)
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
