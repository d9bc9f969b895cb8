"""What an OTLP exporter's failure says went wrong (exporters.failure_cause), from the SDK's own
log lines as its OTLP/HTTP (urllib3) and OTLP/gRPC exporters write them."""

from __future__ import annotations

import pytest

from otelbridge.exporters import failure_cause


@pytest.mark.parametrize("message, cause", [
    ("Transient error HTTPConnectionPool(host='no-such-host.invalid', port=4318): Max retries exceeded "
     "with url: /v1/traces (Caused by NameResolutionError(\"HTTPConnection(host='no-such-host.invalid', "
     "port=4318): Failed to resolve 'no-such-host.invalid' ([Errno -2] Name or service not known)\"))",
     "the host name is not found"),
    ("Transient error StatusCode.UNAVAILABLE encountered while exporting traces to no-such-host.invalid:4317, "
     "retrying in 1.15s. Error details: errors resolving no-such-host.invalid:4317: [field:hostname lookup "
     "error:address lookup failed for no-such-host.invalid:4317: Domain name not found]",
     "the host name is not found"),
    ("Transient error StatusCode.UNAVAILABLE encountered while exporting traces to 127.0.0.1:4399, retrying "
     "in 1.03s. Error details: failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:4399: "
     "Failed to connect to remote host: Connection refused", "connection refused: is a collector listening there?"),
    ("Failed to export spans batch code: 404, reason: Not Found",
     "HTTP 404: no OTLP receiver at that path"),  # (how the path was made: the exporter's hint)
    ("Failed to export spans batch code: 503, reason: Service Unavailable",
     "HTTP 503: the collector is unavailable (overloaded or starting)"),
    ("Failed to export spans batch code: 500, reason: Internal Server Error", "HTTP 500 from the collector"),
    ("Failed to export traces to 127.0.0.1:4317, error code: StatusCode.PERMISSION_DENIED",
     "gRPC PERMISSION_DENIED: the credentials are refused (OTEL_EXPORTER_OTLP_HEADERS)"),
    ("Transient error StatusCode.UNAVAILABLE encountered while exporting traces to 127.0.0.1:4317, "
     "retrying in 1.0s.", None),  # a status that names no cause
    ("Exception while exporting Span batch.", None),
    # the transport's own refusal of an answer that is no OTLP receiver's: said as it is
    ("Failed to export spans batch: the endpoint answered with a web page (text/html), not an OTLP response: "
     "is it a user interface's port? OTLP/HTTP is usually on port 4318",
     "the endpoint answered with a web page (text/html), not an OTLP response: is it a user interface's "
     "port? OTLP/HTTP is usually on port 4318"),
])
def test_an_export_failure_is_said_by_its_cause(message, cause):
    assert failure_cause(message) == cause


def test_a_closed_connection_names_both_protocols_ports():
    """gRPC's and urllib3's words for a peer that closed the connection: the same cause, which
    does not guess the protocol (any listener that is no OTLP receiver does it too)."""
    grpc = ("Transient error StatusCode.UNAVAILABLE encountered while exporting traces to 127.0.0.1:14397, "
            "retrying in 0.9s. Error details: Socket closed")
    http = "Transient error ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))"
    assert failure_cause(grpc) == failure_cause(http) == (
        "the other end closed the connection: an OTLP receiver of another protocol? (OTLP/gRPC is "
        "usually on port 4317, OTLP/HTTP on 4318: --protocol)")


NO_ANSWER = ("(OTEL_EXPORTER_OTLP_TIMEOUT): is a collector listening and answering there, or a firewall dropping the "
             "packets?")


@pytest.mark.parametrize("message, cause", [
    # nothing took the connection (its SYN dropped): urllib3's error, which the SDK's line after
    # its retries does not carry (the exporter reads it from the transport), also through requests
    ("HTTPConnectionPool(host='127.0.0.1', port=56997): Max retries exceeded with url: /v1/traces (Caused by "
     "ConnectTimeoutError(<HTTPConnection(host='127.0.0.1', port=56997) at 0x7f706f259d10>, 'Connection to "
     "127.0.0.1 timed out. (connect timeout=1.5)'))",
     "no connection within 1.5 s (OTEL_EXPORTER_OTLP_TIMEOUT): is a collector listening at that address, or a "
     "firewall dropping the packets?"),
    # connected (a listener that never reads): the SDK's line names it
    ("Failed to export spans batch code: None, reason: HTTPConnectionPool(host='127.0.0.1', port=40277): Read "
     "timed out. (read timeout=1.498804017582529)",
     "connected, but no answer within 1.5 s (OTEL_EXPORTER_OTLP_TIMEOUT): is the collector stuck or overloaded, "
     "or is another program on that port?"),
    # gRPC's deadline says neither
    ("Failed to export traces to 127.0.0.1:40277, error code: StatusCode.DEADLINE_EXCEEDED, error details: "
     "Deadline Exceeded", f"no answer within 1.5 s {NO_ANSWER}"),
])
def test_a_timeout_says_how_long_and_what_to_check(message, cause):
    assert failure_cause(message, 1.5) == cause
    assert failure_cause(message) == cause.replace("within 1.5 s", "within the timeout")
