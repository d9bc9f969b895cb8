"""End to end on our Caudra example stream (written from seed 003): otelbridge as a subprocess,
spans at a real OTLP receiver; every expected value is read from the stream itself."""

from __future__ import annotations

import json

import pytest

from tests.conftest import session_name, EXAMPLES, clean_env, run_bridge, sent, spans_of_trace, workflow_spans
from tests.e2e.live import feed_live
from tests.receivers import GrpcReceiver

EXAMPLE = EXAMPLES / "caudra-workflow.jsonl"
S = 10**9
MS = 10**6
TERMINAL = {"completed", "finished", "failed", "stopped", "interrupted"}


def stream_facts():
    """Runs, agents and firings as the stream states them, with the stream clock (the newest
    time shown so far) at each line, in ns."""
    latest = 0
    runs: dict[str, dict] = {}
    agents: dict[tuple, dict] = {}
    fired = []
    for raw in EXAMPLE.read_bytes().splitlines():
        doc = json.loads(raw)
        ev = doc.get("event") or {}
        shown = [p["started_at"] * S for p in ev.get("phase_history", [])]
        shown += [entry["at"] * S for entry in ev.get("logs", [])]
        if ev.get("kind") == "log":
            shown.append(ev["at"] * S)
        if doc.get("subtype") == "automation_fired":
            shown += [doc[k] * MS for k in ("queued_at", "started_at", "finished_at") if doc.get(k)]
        latest = max([latest] + shown)
        if doc.get("subtype") == "workflow":
            run = runs.setdefault(str(ev["run_id"]), {"logs": set(), "epochs": []})
            if doc["workflow_epoch"] not in run["epochs"]:
                run["epochs"].append(doc["workflow_epoch"])
            if ev["kind"] == "snapshot":
                run.update(name=ev["name"], history=ev["phase_history"], revision=ev["revision"])
                run["logs"] |= {(e["at"] * S, e["message"]) for e in ev["logs"]}
                if ev["status"] in TERMINAL and "end" not in run:
                    run["end"] = latest
                if ev["status"] == "paused" and run.get("status") != "paused":
                    run.setdefault("paused", []).append(latest)
                run["status"] = ev["status"]
            else:
                run["logs"].add((ev["at"] * S, ev["message"]))
        elif "workflow_run_id" in doc:
            key = (str(doc["workflow_run_id"]), doc["workflow_epoch"], str(doc["workflow_call_key"]))
            a = agents.setdefault(key, {"start": latest, "usage": {}, "tools": 0, "phase": doc["workflow_phase"],
                                        "tool_use_id": doc["parent_tool_use_id"], "calls": {}})
            a["end"] = latest
            msg = doc["message"]
            if "usage" in msg:
                a["usage"][msg["id"]] = msg["usage"]
            a["tools"] += sum(1 for b in msg["content"] if b.get("type") == "tool_use")
            for b in msg["content"]:  # tool calls: from their tool_use's line to their result's
                if b.get("type") == "tool_use":
                    a["calls"][b["id"]] = {"name": b["name"], "start": latest}
                elif b.get("type") == "tool_result":
                    a["calls"][b["tool_use_id"]].update(end=latest, error=b.get("is_error", False))
        elif doc.get("subtype") == "automation_fired":
            fired.append((doc, latest))
    return runs, agents, fired, latest


def session_facts():
    """The session as the stream states it: its id and its turns (``turn_start`` … ``result``)."""
    docs = [json.loads(raw) for raw in EXAMPLE.read_bytes().splitlines()]
    (sid,) = {d["session_id"] for d in docs if "session_id" in d}
    results = sum(1 for d in docs if d["type"] == "result")
    assert results == sum(1 for d in docs if d.get("subtype") == "turn_start")  # no turn left open
    return sid, results


def stream_start(span, spans) -> int:
    """Where ``span`` starts in the stream's terms: its start as sent, or 1 µs later when an
    instant among its descendants (sent as the microsecond that ends at it) made it start then."""
    below = [span]
    for s in below:
        below += [c for c in spans if c.parent_span_id == s.span_id]
    earliest = min(s.start_ns for s in below)
    assert span.start_ns == earliest
    instants = [s for s in below if s.end_ns - s.start_ns == 1_000 and s.start_ns == earliest]
    return span.start_ns + (1_000 if instants else 0)


def test_caudra_example_at_receiver():
    data = EXAMPLE.read_bytes()
    runs, agents, fired, latest = stream_facts()
    sid, n_turns = session_facts()
    n_phases = sum(len(r["history"]) for r in runs.values())
    n_workflow = len(runs) + n_phases + len(agents)
    # the workflow traces; the session's trace: its span, its turns, the firings (its children)
    n_tools = sum(len(a["calls"]) for a in agents.values())
    expected = n_workflow + n_tools + 1 + n_turns + len(fired)
    with GrpcReceiver() as rx:
        proc = run_bridge(["--protocol", "grpc", "--endpoint", rx.endpoint, "--clock", "stream",
                           "--deterministic-ids"], data)
        everything = rx.received.wait_for(expected, timeout=5)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data
    spans = workflow_spans(everything)
    assert len(spans) == n_workflow + n_tools == 3 + 5 + 3 + 2  # runs, phases, agents, their tools

    roots = {s.attributes["workflow.run_id"]: s for s in spans if s.name.startswith("invoke_workflow")}
    assert set(roots) == set(runs)
    for run_id, run in runs.items():
        root = roots[run_id]
        assert root.name == f"invoke_workflow {run['name']}"
        assert root.parent_span_id == ""
        assert root.attributes["workflow.name"] == run["name"]
        assert root.attributes["workflow.revision"] == run["revision"]
        assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
        phases = sorted((s for s in spans if s.name.startswith("phase ") and s.trace_id == root.trace_id),
                        key=lambda s: s.start_ns)
        history = run["history"]
        assert [p.name for p in phases] == [f"phase {h['title']}" for h in history]
        assert all(p.parent_span_id == root.span_id for p in phases)
        end = run.get("end", latest)  # terminal snapshot's time, else end of input
        assert stream_start(root, spans) == history[0]["started_at"] * S
        assert root.end_ns == end
        for i, (p, h) in enumerate(zip(phases, history)):
            assert stream_start(p, spans) == h["started_at"] * S
            assert p.end_ns == (history[i + 1]["started_at"] * S if i + 1 < len(history) else end)
            assert p.attributes["workflow.phase.index"] == i
            # log lines: once each, at their time, on the phase running then
            want = sorted((at, m) for at, m in run["logs"] if p.start_ns <= at < p.end_ns
                          or (i + 1 == len(history) and at == p.end_ns))
            assert [(t, a["workflow.log.message"]) for n, t, a in p.events if n == "workflow.log"] == want
        status = run["status"]
        if status == "completed":
            assert root.attributes["workflow.status"] == "completed" and root.status_code == 0
        elif status == "failed":
            assert root.attributes["workflow.status"] == "failed"
            assert (root.status_code, root.status_message) == (2, "workflow failed")
            assert root.attributes["error.type"] == "workflow_failed"
        elif status == "paused":  # still paused at end of input: not an error
            assert root.attributes["workflow.status"] == "paused" and root.status_code == 0
        pauses = [t for n, t, _ in root.events if n == "paused"]
        assert pauses == run.get("paused", [])
        resumed = [(a["workflow.epoch"]) for n, _, a in root.events if n == "resumed"]
        assert resumed == run["epochs"][1:]

    # agents: under the phase of their workflow_phase running when they started
    agent_spans = [s for s in spans if s.name == "invoke_agent subagent"]
    assert len(agent_spans) == len(agents)
    by_id = {s.span_id: s for s in spans}
    for span in agent_spans:
        key = (span.attributes["workflow.run_id"], span.attributes["workflow.epoch"],
               span.attributes["workflow.call_key"])
        a = agents[key]
        parent = by_id[span.parent_span_id]
        assert parent.name == f"phase {a['phase']}"
        assert parent.start_ns <= a["start"] < parent.end_ns
        assert (stream_start(span, spans), span.end_ns) == (a["start"], a["end"])
        usages = a["usage"].values()
        assert span.attributes["gen_ai.usage.input_tokens"] == sum(
            u["input_tokens"] + u.get("cache_read_input_tokens", 0) for u in usages)
        assert span.attributes["gen_ai.usage.output_tokens"] == sum(u["output_tokens"] for u in usages)
        assert span.attributes["workflow.agent.tool_calls"] == a["tools"] == len(a["calls"])
        assert span.attributes["workflow.tool_use_id"] == a["tool_use_id"]
        tools = [s for s in spans if s.parent_span_id == span.span_id]
        assert sorted(t.attributes["gen_ai.tool.call.id"] for t in tools) == sorted(a["calls"])
        for tool in tools:
            call = a["calls"][tool.attributes["gen_ai.tool.call.id"]]
            assert tool.name == f"execute_tool {call['name']}" and tool.trace_id == span.trace_id
            assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
            assert tool.attributes["gen_ai.tool.name"] == call["name"]
            assert "gen_ai.tool.call.arguments" not in tool.attributes  # content: not captured
            if "end" in call:
                assert (tool.start_ns, tool.end_ns) == sent(call["start"], call["end"])
                assert tool.status_code == (2 if call["error"] else 0)
            else:  # no tool_result when its run ended: ERROR at its agent's last line
                assert (tool.start_ns, tool.end_ns) == sent(call["start"], a["end"])
                assert (tool.status_code, tool.attributes["error.type"], tool.status_message) == (
                    2, "incomplete", "no tool_result when the workflow ended")
    assert sum(1 for s in spans if s.name.startswith("execute_tool ") and s.status_code == 2) == 1
    # the re-entered phase got its own agent: two "gather" parents in run-1
    gather_parents = {s.parent_span_id for s in agent_spans if by_id[s.parent_span_id].name == "phase gather"}
    assert len(gather_parents) == 2

    # automations: children of the session span, ms times, ERROR when failed
    session_trace = spans_of_trace(everything, "invoke_agent ")
    (session,) = [s for s in session_trace if s.name == session_name(data)]
    assert session.attributes["gen_ai.conversation.id"] == sid
    autos = [s for s in everything if s.name.startswith("automation ")]
    assert len(autos) == len(fired) == 2
    assert {(s.trace_id, s.parent_span_id) for s in autos} == {(session.trace_id, session.span_id)}
    for doc, _ in fired:
        (span,) = [s for s in autos if s.attributes["automation.fire_id"] == doc["fire_id"]]
        assert span.name == f"automation {doc['automation']}"
        # (no finished_at: no end the stream tells, no length: an instant)
        assert (span.start_ns, span.end_ns) == sent((doc["started_at"] or doc["queued_at"]) * MS,
                                                    (doc["finished_at"] or doc["started_at"] or doc["queued_at"]) * MS)
        assert span.end_ns <= session.end_ns  # a child lies inside its parent
        assert span.attributes["automation.status"] == doc["status"]
        assert span.attributes["automation.repeats"] == doc["repeats"]
        assert span.attributes["automation.attempts"] == doc["attempts"]
        if doc["status"] == "failed":
            assert (span.status_code, span.status_message) == (2, doc["error"]["message"])
            assert span.attributes["automation.error.kind"] == doc["error"]["kind"]
            assert span.attributes["automation.error.line"] == doc["error"]["line"]
            assert span.attributes["automation.error.column"] == doc["error"]["column"]
            # its notice came before the firing: an event on the firing's span
            assert [a["automation.notice.text"] for n, _, a in span.events if n == "automation_notice"] == [
                "lint is red"]
        else:
            assert span.status_code == 0

    # the session's trace holds the session span, its turns and the firings; the workflow
    # agents' lines are the workflow traces' agents (above), not session sub-agents
    assert sorted(s.name for s in session_trace) == sorted(
        [session_name(data)] + [f"turn {n}" for n in range(1, n_turns + 1)] + [s.name for s in autos])
    assert len(everything) == expected == 11 + 2 + 1 + 1 + 2
    assert f"{expected} exported, 0 dropped".encode() in proc.stderr
    # workflow traces and the session's trace: linked both ways (SPAN-MODEL.md)
    assert sorted(session.links) == sorted((r.trace_id, r.span_id) for r in roots.values())
    assert all(r.links == [(session.trace_id, session.span_id)] for r in roots.values())


def _workflow_line(event: dict) -> bytes:
    doc = {"type": "system", "subtype": "workflow", "event": event, "session_id": "sess-live",
           "workflow_run_id": event["run_id"], "workflow_epoch": 1, "workflow_call_key": 0,
           "workflow_phase": "build"}
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("lands", [True, False])
def test_caudra_grace_window_in_real_time(lands):
    """The late log lands while the window is open (a long one, cut short by the end of input);
    once it has closed in real time (0.2 s; its spans reached the receiver, whatever the
    machine's load) it is ignored and counted."""
    t = 1_790_000_000
    history = [{"title": "build", "started_at": t}]
    done = b"".join([
        _workflow_line({"kind": "snapshot", "run_id": 42, "name": "ci", "status": "active", "phase": "build",
                        "revision": 1, "phase_history": history, "logs": []}),
        _workflow_line({"kind": "snapshot", "run_id": 42, "name": "ci", "status": "finished", "phase": "build",
                        "revision": 2, "phase_history": history, "logs": [{"at": t + 5, "message": "built"}]}),
    ])
    late = _workflow_line({"kind": "log", "run_id": 42, "at": t + 6, "message": "artifacts uploaded", "revision": 3})
    with GrpcReceiver() as rx:
        def window_closed():
            assert len(rx.received.wait_for(2, timeout=25)) == 2, "the run never closed"

        code, out, err = feed_live(["--protocol", "grpc", "--endpoint", rx.endpoint, "--clock", "stream",
                                    "--grace-period", "60" if lands else "0.2"],
                                   [(0.0, done), (0.1 if lands else window_closed, late)], 0.0)
        spans = rx.received.wait_for(2, timeout=5)
    assert code == 0, err
    assert out == done + late
    (root,) = [s for s in spans if s.name == "invoke_workflow ci"]
    (phase,) = [s for s in spans if s.name == "phase build"]
    assert root.attributes["workflow.run_id"] == "42"
    assert root.attributes["workflow.status"] == "completed"  # "finished" is done
    logs = [(t_ns, a["workflow.log.message"]) for n, t_ns, a in phase.events]
    if lands:
        assert logs == [((t + 5) * S, "built"), ((t + 6) * S, "artifacts uploaded")]
        assert b"0 late events ignored" in err
    else:
        assert logs == [((t + 5) * S, "built")]
        assert b"1 late events ignored" in err


def test_a_session_of_automation_firings_alone_has_no_run_and_no_error():
    """Caudra's init says its runtimes are attached; its runs begin with their turn_start. A
    session whose stream showed only firings (an SDK session the client left to its automations)
    has no turn, and its end without a result is no error; it lasts as long as its firings."""
    sid, t0 = "cs-automations", 1_791_280_800_000
    lines = [{"type": "system", "subtype": "init", "cwd": "/repo", "model": "m1", "automations": True,
              "session_id": sid}]
    for n, (status, started, finished) in enumerate([("completed", t0 + 100, t0 + 30_000),
                                                     ("rate_limited", None, None)]):
        lines.append({"type": "system", "subtype": "automation_fired", "fire_id": f"f{n}",
                      "automation": f"a{n}", "trigger": "schedule", "trigger_index": 0, "status": status,
                      "reason": None, "error": None, "queued_at": t0 + 1000 * n, "started_at": started,
                      "finished_at": finished, "session_id": sid})
    data = "".join(json.dumps(l) + "\n" for l in lines).encode()
    with GrpcReceiver() as rx:
        proc = run_bridge(["--protocol", "grpc", "--endpoint", rx.endpoint, "--clock", "stream"], data)
        spans = rx.received.wait_for(3, timeout=5)
    assert proc.returncode == 0 and proc.stdout == data
    # the runtimes its init lists name the CLI: no other CLI's init has them
    assert sorted(s.name for s in spans) == ["automation a0", "automation a1", "invoke_agent caudra"]
    (session,) = [s for s in spans if s.name == "invoke_agent caudra"]
    assert session.attributes["gen_ai.agent.name"] == "caudra"
    assert "gen_ai.provider.name" not in session.attributes  # its model may be any provider's
    assert session.status_code == 0
    assert session.end_ns == (t0 + 30_000) * 1_000_000  # its longest firing's end
    (rate_limited,) = [s for s in spans if s.name == "automation a1"]
    assert (rate_limited.start_ns, rate_limited.end_ns) == sent((t0 + 1000) * 1_000_000, (t0 + 1000) * 1_000_000)  # it never ran


def test_a_workflow_agents_tool_output_that_is_a_secret_is_hidden_where_it_shows_again():
    """A workflow agent's ``vault kv get -field=password`` prints a password bare: its tool
    span carries no output (content is not captured), and the run's log line that repeats the
    password, and the next agent's tool arguments, show it as ``[REDACTED:secret]``."""
    t, secret = 1_790_000_000, "Tr0ub4dor-horse-staple"
    history = [{"title": "deploy", "started_at": t}]

    def agent(kind, content, n=1):
        msg = {"role": kind, "content": content}
        if kind == "assistant":
            msg.update(id=f"msg_{n}", model="m1", usage={"input_tokens": 10, "output_tokens": 2})
        return {"type": kind, "message": msg, "parent_tool_use_id": f"toolu_wf_{n}", "workflow_run_id": "r1",
                "workflow_epoch": 1, "workflow_call_key": n, "workflow_phase": "deploy", "session_id": "sess-v"}

    command = "vault kv get -field=password secret/db"
    lines = [
        {"type": "system", "subtype": "workflow", "session_id": "sess-v", "workflow_run_id": "r1",
         "event": {"kind": "snapshot", "run_id": "r1", "name": "deploy", "status": "active", "revision": 1,
                   "phase_history": history, "logs": []}},
        agent("assistant", [{"type": "tool_use", "id": "toolu_v", "name": "Bash", "input": {"command": command}}]),
        agent("user", [{"type": "tool_result", "tool_use_id": "toolu_v", "content": secret}]),
        agent("assistant", [{"type": "tool_use", "id": "toolu_p", "name": "Bash",
                             "input": {"command": f"psql postgres://app@db/app -c 'select 1' # {secret}"}}], 2),
        agent("user", [{"type": "tool_result", "tool_use_id": "toolu_p", "content": "1", "is_error": True}], 2),
        {"type": "system", "subtype": "workflow", "session_id": "sess-v", "workflow_run_id": "r1",
         "event": {"kind": "snapshot", "run_id": "r1", "name": "deploy", "status": "completed", "revision": 2,
                   "phase_history": history, "logs": [{"at": t + 9, "message": f"deployed with {secret}"}]}},
    ]
    data = "".join(json.dumps(l) + "\n" for l in lines).encode()
    with GrpcReceiver() as rx:
        proc = run_bridge(["--protocol", "grpc", "--endpoint", rx.endpoint, "--clock", "stream",
                           "--capture-content"], data)
        spans = rx.received.wait_for(6, timeout=5)
    assert proc.returncode == 0 and proc.stdout == data
    everything = json.dumps([[s.name, s.attributes, s.events, s.status_message] for s in spans], default=str)
    assert secret not in everything
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name == "execute_tool Bash"}
    assert json.loads(tools["toolu_v"].attributes["gen_ai.tool.call.arguments"]) == {"command": command}
    assert tools["toolu_v"].attributes["gen_ai.tool.call.result"] == "[REDACTED:secret]"
    assert "[REDACTED:secret]" in tools["toolu_p"].attributes["gen_ai.tool.call.arguments"]
    assert (tools["toolu_p"].status_code, tools["toolu_p"].attributes["error.type"]) == (2, "tool_error")
    (phase,) = [s for s in spans if s.name == "phase deploy"]
    assert [a["workflow.log.message"] for _, _, a in phase.events] == ["deployed with [REDACTED:secret]"]


@pytest.mark.parametrize("example", ["caudra-workflow.jsonl", "caudra-session-turns.jsonl"])
def test_dialect_caudra_alone_traces_its_sessions_as_all_dialects_do(tmp_path, example):
    """``--dialect caudra`` (a CI job narrowing decoding to the CLI it runs) traces a Caudra
    run whole: its sessions are Claude Code's stream-json, decoded with it. The spans and the
    job outputs (tokens, cost) are those of all dialects."""
    data = (EXAMPLES / example).read_bytes()
    runs = {}
    for name, extra in (("caudra", ["--dialect", "caudra"]), ("all", [])):
        out, spans = tmp_path / f"{name}.out", tmp_path / f"{name}.jsonl"
        proc = run_bridge(["--exporter", "file", "--output", str(spans), "--deterministic-ids", *extra],
                          data, env=clean_env(GITHUB_OUTPUT=str(out)))
        assert proc.returncode == 0 and proc.stdout == data, proc.stderr
        got = [(s["name"], s["spanId"], s.get("parentSpanId"), s["startTimeUnixNano"], s["endTimeUnixNano"],
                json.dumps(s.get("attributes"), sort_keys=True))
               for line in spans.read_text().splitlines() for rs in json.loads(line)["resourceSpans"]
               for ss in rs["scopeSpans"] for s in ss["spans"]]
        runs[name] = (sorted(got), out.read_text())
    assert runs["caudra"] == runs["all"]
    assert any(name.startswith("turn ") for name, *_ in runs["all"][0])
    assert "total_cost_usd=0\n" not in runs["all"][1]
