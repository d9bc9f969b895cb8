"""A blackholed collector: a 127.0.0.1 port that takes connections and never answers, or one
whose connections are never taken (no SYN-ACK, as behind a firewall that drops them). The run
ends when it did before (at the export's timeout, or at --flush-timeout when that comes first)
and stderr says, in one line each, what happened and what to check; stdout is the stream's."""

from __future__ import annotations

import contextlib
import re
import socket
import time
from collections.abc import Iterator

import pytest

from tests.conftest import FIXTURES, clean_env, needs_fixtures, run_bridge

RECORDING = FIXTURES / "claude-code" / "subagent-explore-2.1.178.jsonl"
#: the spans ``replay`` builds of it
REPLAYED = 9

TAKEN = ("connected, but no answer within 1 s (OTEL_EXPORTER_OTLP_TIMEOUT): is the collector stuck or "
         "overloaded, or is another program on that port?")
DROPPED = ("no connection within 1 s (OTEL_EXPORTER_OTLP_TIMEOUT): is a collector listening at that address, "
           "or a firewall dropping the packets?")
SILENT = ("no answer within 1 s (OTEL_EXPORTER_OTLP_TIMEOUT): is a collector listening and answering there, or a firewall "
          "dropping the packets?")

pytestmark = needs_fixtures()


@contextlib.contextmanager
def blackhole(taken: bool) -> Iterator[str]:
    """The URL of a port that listens and never accepts. ``taken``: the kernel completes the
    handshakes (a queue of 64), nothing reads or answers; else its queue (of one) is filled
    first, so that a connection's SYN gets no answer."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64 if taken else 0)
    with contextlib.ExitStack() as held:
        held.callback(hole.close)
        if not taken:
            held.enter_context(socket.create_connection(hole.getsockname()))
        yield f"http://127.0.0.1:{hole.getsockname()[1]}"


@pytest.mark.parametrize("protocol, taken, cause, extra", [
    ("http/protobuf", True, TAKEN, {}), ("http/protobuf", False, DROPPED, {}),
    # a netrc file: the exporter sends through requests, not urllib3 alone
    ("http/protobuf", False, DROPPED, {"NETRC": "/dev/null"}), ("grpc", False, SILENT, {}),
], ids=["http-taken", "http-dropped", "http-dropped-requests", "grpc-dropped"])
def test_replay_to_a_blackhole_says_what_to_check_by_the_export_timeout(protocol, taken, cause, extra):
    """OTEL_EXPORTER_OTLP_TIMEOUT=1000: the export gives up after 1 s and the run ends then, not
    at --flush-timeout (20 s); its failure is said as it happens and at exit, with the timeout
    and what to check (over HTTP, whether the connection was taken: a collector stuck, or
    nothing answering at all; before, a dropped connection was said with no cause at all)."""
    with blackhole(taken) as url:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=url, OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
                        OTEL_EXPORTER_OTLP_TIMEOUT="1000", **extra)
        start = time.monotonic()
        proc = run_bridge(["replay", "-q", "--flush-timeout", "20", str(RECORDING)], env=env)
        took = time.monotonic() - start
    assert proc.returncode == 0 and proc.stdout == b""  # replay writes nothing to stdout
    assert proc.stderr.decode().splitlines() == [
        f"otelbridge: export to {url} failed: {cause} (further export messages suppressed)",
        f"otelbridge: export incomplete ({url}: {REPLAYED} of {REPLAYED} not confirmed; {cause})"]
    assert took < 12, took  # (~1.5 s: the export's timeout, not --flush-timeout)


def test_a_blackhole_that_outlasts_the_flush_says_what_to_check_when_it_runs_out():
    """The export's own timeout (10 s by default) longer than --flush-timeout (2 s): the exit
    is not held for it; the line says no answer came, and what to check (it said "no answer yet"
    alone). Pipe mode: every byte passes."""
    data = RECORDING.read_bytes()
    with blackhole(taken=False) as url:
        start = time.monotonic()
        proc = run_bridge(["-q", "--flush-timeout", "2"], data, env=clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=url))
        took = time.monotonic() - start
    assert proc.returncode == 0 and proc.stdout == data
    (line,) = proc.stderr.decode().splitlines()
    assert re.fullmatch(
        rf"otelbridge: export incomplete \({re.escape(url)}: (\d+) of \1 not confirmed; no answer yet when "
        r"--flush-timeout \(2 s\) ran out: is a collector listening and answering there, or a firewall dropping the packets\?\)",
        line), line
    assert took < 9, took  # (~2.5 s: --flush-timeout, not the export's 10 s)
