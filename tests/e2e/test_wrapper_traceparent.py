"""Wrapper mode end to end: the ``run {cmd}`` span, TRACEPARENT in (CI span) and out (the child
sees our run span), at a real OTLP receiver with otelbridge as a subprocess."""

from __future__ import annotations

import os
import sys
from pathlib import Path


from tests.conftest import EXAMPLES, WORKFLOW_PROBE, clean_env, needs_fixtures, run_bridge
from tests.receivers import GrpcReceiver, HttpReceiver

CHILD = """\
import os, sys
open(sys.argv[1], "w").write(os.environ.get("TRACEPARENT", "") + "\\n" + os.environ.get("TRACESTATE", ""))
if sys.argv[2] != "-":
    sys.stdout.buffer.write(open(sys.argv[2], "rb").read())
sys.exit(int(sys.argv[3]))
"""

CI_TRACE, CI_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


def wrap(tmp_path: Path, stream: str, exit_code: int, env: dict, receiver_cls=HttpReceiver, expect=1):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    seen = tmp_path / "seen.txt"
    argv = [sys.executable, str(child), str(seen), stream, str(exit_code)]
    with receiver_cls() as rx:
        protocol = "grpc" if receiver_cls is GrpcReceiver else "http/protobuf"
        proc = run_bridge(["--protocol", protocol, "--endpoint", rx.endpoint, "--", *argv], env=env)
        spans = rx.received.wait_for(expect, timeout=5)
    traceparent, tracestate = seen.read_text().split("\n")
    return proc, spans, traceparent, tracestate, argv


def test_traceparent_in_and_out_with_a_session(tmp_path):
    stream = EXAMPLES / "milk-session.jsonl"
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01", TRACESTATE="vendor=ci")
    proc, spans, traceparent, tracestate, argv = wrap(tmp_path, str(stream), 0, env, GrpcReceiver)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == stream.read_bytes()
    (run,) = [s for s in spans if s.name.startswith("run ")]
    (session,) = [s for s in spans if s.name == "invoke_agent coder"]
    # in: the CI span is the parent, its trace is ours
    assert run.name == f"run {os.path.basename(sys.executable)}"
    assert (run.trace_id, run.parent_span_id) == (CI_TRACE, CI_SPAN)
    assert {s.trace_id for s in spans} == {CI_TRACE}
    assert session.parent_span_id == run.span_id
    assert run.trace_state == "vendor=ci"
    # out: the child saw a traceparent naming our run span, in our trace, sampled
    assert traceparent == f"00-{CI_TRACE}-{run.span_id}-01"
    assert tracestate == "vendor=ci"
    assert run.attributes["process.command"] == argv[0]
    # a command line is content (``claude -p "<prompt>"``): its arguments only with
    # --capture-content; without it their count
    assert "process.command_args" not in run.attributes
    assert run.attributes["process.args_count"] == len(argv)
    assert run.attributes["process.exit.code"] == 0
    assert isinstance(run.attributes["process.pid"], int) and run.attributes["process.pid"] > 0
    assert run.status_code == 0
    assert run.start_ns <= run.end_ns


@needs_fixtures()
def test_under_a_traceparent_a_workflow_is_under_the_run_span_as_its_session_is(tmp_path):
    """A CI step's TRACEPARENT puts the wrapped run's spans in the CI trace: the workflow the
    run's Claude Code started is under the run span, as its session is (it was under the CI
    span beside the run: two roots in a backend that holds no span of the CI's)."""
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01")
    proc, spans, *_ = wrap(tmp_path, str(WORKFLOW_PROBE), 0, env, expect=12)
    assert proc.returncode == 0 and proc.stdout == WORKFLOW_PROBE.read_bytes()
    assert len(spans) == 12  # (the recording's 11, and the run)
    (run,) = [s for s in spans if s.name.startswith("run ")]
    (session,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    (workflow,) = [s for s in spans if s.name.startswith("invoke_workflow ")]
    assert {s.trace_id for s in spans} == {CI_TRACE} and run.parent_span_id == CI_SPAN
    assert session.parent_span_id == workflow.parent_span_id == run.span_id
    assert [s.name for s in spans if s.parent_span_id == CI_SPAN] == [run.name]


def test_traceparent_out_without_a_parent_and_no_stream(tmp_path):
    """A CLI that prints no stream-json still gets its run span; a non-zero exit is an error."""
    env = clean_env(OTEL_LOGS_EXPORTER="console")
    proc, spans, traceparent, tracestate, _ = wrap(tmp_path, "-", 3, env)
    assert proc.returncode == 3
    assert proc.stdout == b""
    (run,) = spans
    assert run.parent_span_id == ""
    version, trace_id, span_id, flags = traceparent.split("-")
    assert (version, trace_id, span_id, flags) == ("00", run.trace_id, run.span_id, "01")
    assert tracestate == ""
    assert run.status_code == 2 and run.attributes["process.exit.code"] == 3
    assert "exit status 3" in run.status_message
    # the child environment asks for a console exporter: one warning line on stderr
    warnings = [line for line in proc.stderr.decode().splitlines() if "console exporter" in line]
    assert len(warnings) == 1 and "OTEL_LOGS_EXPORTER" in warnings[0]


def test_no_traceparent_flag_ignores_the_ci_span(tmp_path):
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01")
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    with HttpReceiver() as rx:
        proc = run_bridge(["--endpoint", rx.endpoint, "--no-traceparent", "--", sys.executable, str(child),
                           str(tmp_path / "seen.txt"), "-", "0"], env=env)
        (run,) = rx.received.wait_for(1, timeout=5)
    assert proc.returncode == 0, proc.stderr
    assert run.trace_id != CI_TRACE and run.parent_span_id == ""
    assert (tmp_path / "seen.txt").read_text().startswith(f"00-{run.trace_id}-{run.span_id}-")


def test_an_unsampled_run_tells_the_child_so(tmp_path):
    """The sampler says no (``always_off``): the child's ``TRACEPARENT`` names the run span with
    the sampled flag off, and nothing is exported."""
    stream = EXAMPLES / "milk-session.jsonl"
    env = clean_env(OTEL_TRACES_SAMPLER="always_off")
    proc, spans, traceparent, _, _ = wrap(tmp_path, str(stream), 0, env, expect=0)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == stream.read_bytes()
    version, trace_id, span_id, flags = traceparent.split("-")
    assert (version, flags, len(trace_id), len(span_id)) == ("00", "00", 32, 16)
    assert spans == []


def test_a_carrier_the_sdk_refuses_is_one_line_of_ours(tmp_path):
    """A traceparent over the SDK's 512 characters, a tracestate with a member that is no W3C
    one: one line each that says what follows, none of the SDK's (which quote the values)."""
    stream = EXAMPLES / "milk-session.jsonl"
    long_parent = f"00-{CI_TRACE}-{CI_SPAN}-01-" + "x" * 600
    env = clean_env(TRACEPARENT=long_parent, TRACESTATE="vendor=ci")
    proc, spans, traceparent, _, _ = wrap(tmp_path, str(stream), 0, env, expect=2)
    err = proc.stderr.decode().splitlines()
    assert [l for l in err if "TRACEPARENT" in l] == [
        "otelbridge: TRACEPARENT is not a valid W3C traceparent; ignoring it"], err
    assert not any("512" in l or "opentelemetry" in l for l in err), err
    assert CI_TRACE not in {s.trace_id for s in spans}  # a trace of its own

    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01", TRACESTATE="vendor=ci,bad member!!")
    proc, spans, traceparent, tracestate, _ = wrap(tmp_path, str(stream), 0, env, expect=2)
    err = proc.stderr.decode().splitlines()
    (said,) = [l for l in err if "TRACESTATE" in l]
    assert "not a valid W3C tracestate" in said and "joins TRACEPARENT's without it" in said
    assert not any("bad member" in l for l in err), err
    (run,) = [s for s in spans if s.name.startswith("run ")]
    assert (run.trace_id, run.parent_span_id) == (CI_TRACE, CI_SPAN)
    assert run.trace_state == ""


def test_a_tracestate_member_holding_a_secret_is_left_out_of_the_spans(tmp_path):
    """Every span carries the parent's tracestate: a member the redactor would change is left
    out (said once), the others kept; the child still gets the variable as it was given."""
    stream = EXAMPLES / "milk-session.jsonl"
    token = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"
    given = f"auth=hunter2secret99,rojo=00f067aa0ba902b7,gh={token}"
    env = clean_env(TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01", TRACESTATE=given)
    proc, spans, traceparent, tracestate, _ = wrap(tmp_path, str(stream), 0, env, expect=2)
    err = proc.stderr.decode().splitlines()
    assert [l for l in err if "TRACESTATE" in l] == [
        "otelbridge: TRACESTATE: 2 of its 3 members hold a secret and are left out of the spans"], err
    assert spans and {s.trace_state for s in spans} == {"rojo=00f067aa0ba902b7"}
    assert tracestate == given
    assert b"hunter2secret99" not in proc.stderr and token.encode() not in proc.stderr



def test_without_an_exporter_the_child_keeps_the_carrier_it_was_given(tmp_path):
    """``--exporter none`` and ``OTEL_SDK_DISABLED=true``: the run span goes nowhere, so the child
    does not get it as its parent (its own telemetry would name a span no backend holds); it
    gets the ``TRACEPARENT``/``TRACESTATE`` otelbridge was given, or none."""
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    seen = tmp_path / "seen.txt"
    argv = ["--", sys.executable, str(child), str(seen), "-", "0"]
    given = f"00-{CI_TRACE}-{CI_SPAN}-01"
    for flags, env in ((["--exporter", "none"], clean_env(TRACEPARENT=given, TRACESTATE="vendor=ci")),
                       ([], clean_env(OTEL_SDK_DISABLED="true", TRACEPARENT=given, TRACESTATE="vendor=ci")),
                       (["--exporter", "none"], clean_env())):
        proc = run_bridge([*flags, "--summary", "never", *argv], env=env)
        assert proc.returncode == 0, proc.stderr
        assert seen.read_text().split("\n") == [env.get("TRACEPARENT", ""), env.get("TRACESTATE", "")]
        seen.unlink()
