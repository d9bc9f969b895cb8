"""What otelbridge says of an OTEL_* value it cannot take as written, each in one exact stderr
line: a protocol the specification does not name (``http``). Every byte passes, the wrapped
command runs, its status is otelbridge's; spans are checked at a real OTLP/HTTP receiver."""

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
