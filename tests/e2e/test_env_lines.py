"""What otelbridge says of an OTEL_* value it cannot take as written, each in one exact stderr
line: a protocol the specification does not name (``http``), a ``%`` that begins no escape in
the headers or the resource attributes (never their values: they may be secrets), a resource
attribute item that is not ``key=value`` (by its place). Every byte passes, the wrapped command
runs, its status is otelbridge's; spans are checked at a real OTLP/HTTP receiver."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES, clean_env, run_bridge
from tests.receivers import HttpReceiver

CBC = EXAMPLES / "cbc-workflow.jsonl"
DATA = CBC.read_bytes()
SPANS = 9  # the run span and the 8 cbc-workflow.jsonl gives

PROTOCOLS = "(grpc, http/protobuf, http/json; OTLP over HTTP is http/protobuf or http/json)"


def run_wrapped(variables: dict[str, str]):
    """otelbridge wrapping a command that prints the example and exits 7, exporting to a real
    receiver with ``variables`` set: (the run, the spans received, the requests' headers)."""
    with HttpReceiver() as rx:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=rx.endpoint, OTEL_BSP_SCHEDULE_DELAY="50", **variables)
        proc = run_bridge(["-q", "--", "sh", "-c", f'cat "{CBC}"; exit 7'], env=env)
        spans = rx.received.wait_for(SPANS, timeout=10)
    assert proc.stdout == DATA  # every byte, unchanged
    assert proc.returncode == 7  # the command's status
    return proc, spans, rx.received.headers


def sent(headers: list[dict], name: str) -> set:
    """The values of the header ``name`` (any case) the requests carried."""
    return {v for h in headers for k, v in h.items() if k.lower() == name}


@pytest.mark.parametrize("variables, line, content_type", [
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http"},
     f"OTEL_EXPORTER_OTLP_PROTOCOL='http' is not an OTLP protocol {PROTOCOLS}; using http/protobuf (the default)",
     "application/x-protobuf"),
    ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "HTTP", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
     f"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='HTTP' is not an OTLP protocol {PROTOCOLS}; using http/json "
     "(OTEL_EXPORTER_OTLP_PROTOCOL)", "application/json"),
])
def test_http_alone_is_no_protocol_and_what_is_used_is_said(variables, line, content_type):
    """``http`` is none of the specification's values (the Python SDK refuses it at start): it
    is ignored as any other such value, the next variable or the default used, and said (it was
    read as http/protobuf unsaid)."""
    proc, spans, headers = run_wrapped(variables)
    assert proc.stderr.decode().splitlines() == [f"otelbridge: {line}"]
    assert len(spans) == SPANS
    assert sent(headers, "content-type") == {content_type}


def test_a_bad_escape_in_a_header_is_said_by_its_name_and_the_header_sent_as_written():
    """W3C Baggage writes a ``%`` itself as ``%25``; ``%ZZ`` escapes nothing. The header goes
    out as written (the SDK's reading; the collector may well expect that value), the line says
    which header and how to write it, and never its value."""
    secret = "Tok3nValue%ZZ9f8e7d6c"
    proc, spans, headers = run_wrapped({"OTEL_EXPORTER_OTLP_HEADERS": f"x-team=core,x-api-key={secret}"})
    assert proc.stderr.decode().splitlines() == [
        "otelbridge: OTEL_EXPORTER_OTLP_HEADERS: header 'x-api-key': a % in its value begins no %XX escape, "
        "sent as written (a % itself is written %25)"]
    assert len(spans) == SPANS
    assert sent(headers, "x-api-key") == {secret} and sent(headers, "x-team") == {"core"}


def test_a_bad_escape_in_a_resource_attribute_is_said_by_its_key_and_place():
    """The value is kept as written (the Python and Go SDKs keep it; the specification would
    drop the whole variable, ``service.name`` with it); the line names the attribute by its key
    and place, never its value."""
    proc, spans, _ = run_wrapped({"OTEL_RESOURCE_ATTRIBUTES": "service.name=agents,db.pass=hunter2%zz42,team=core"})
    assert proc.stderr.decode().splitlines() == [
        "otelbridge: OTEL_RESOURCE_ATTRIBUTES: attribute 'db.pass' (item 2 of 3): a % in its value begins no "
        "%XX escape, kept as written (a % itself is written %25)"]
    resource = spans[0].resource
    assert resource["service.name"] == "agents" and resource["team"] == "core"
    assert "db.pass" in resource  # (its value redacted, as a key naming a secret has it)


def test_a_resource_attribute_item_that_is_not_key_value_is_said_by_its_place():
    """An item without ``=`` (a comma inside a value, a secret pasted there) or with an empty
    key is skipped, the others used; the line says which item, by its place, and never quotes
    it (the SDK's warning did, per item and per read, naming neither the variable nor the place)."""
    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    proc, spans, _ = run_wrapped({"OTEL_RESOURCE_ATTRIBUTES": f"team=core,token:{secret},=orphan,region=eu,"})
    assert proc.stderr.decode().splitlines() == [
        "otelbridge: OTEL_RESOURCE_ATTRIBUTES: item 2 of 5: not key=value (a comma in a value is written %2C), "
        "skipped; item 3 of 5: an empty key, skipped; the others are used"]
    assert secret not in proc.stderr.decode() and "orphan" not in proc.stderr.decode()
    resource = spans[0].resource
    assert resource["team"] == "core" and resource["region"] == "eu"
    assert not any(secret in str(v) or "orphan" in str(v) for v in resource.values())
