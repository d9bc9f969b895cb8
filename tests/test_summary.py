"""The waterfall (plain text, as a CI log shows it) and the step summary, from the tracker's real
records of the real workflow recording and of examples/cbc-workflow.jsonl. Expected values are
read from the recordings, never copied from our output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelbridge import dialects, summary
from otelbridge.clock import Clock
from otelbridge.config import Config
from otelbridge.ids import Ids
from otelbridge.lines import LineSplitter
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Tracker
from tests.conftest import EXAMPLES, WORKFLOW_PROBE, needs_fixtures, workflow_facts

MS = 1_000_000
CBC = EXAMPLES / "cbc-workflow.jsonl"


def collect(path: Path, collector: summary.Collector | None = None) -> summary.Collector:
    """Run ``path`` through decoder and tracker (stream clock, deterministic ids) into a collector."""
    collector = collector or summary.Collector()
    stats = Stats()
    tracker = Tracker(Context(emit=collector.emit, ids=Ids(True), clock=Clock("stream"), stats=stats))
    decoder = dialects.Decoder(dialects.load(), stats)

    def on_line(raw: bytes) -> None:
        for ev in decoder.decode(raw):
            tracker.handle(ev)

    splitter = LineSplitter(decoder.markers, on_line, stats)
    data = path.read_bytes()
    splitter.feed(data, len(data))
    splitter.close()
    tracker.finish()
    return collector


def facts(path: Path):
    """(agents, phases, task_updated, task_notification) of ``path``."""
    return workflow_facts(path)[1:]


class Parsed:
    """A rendered waterfall cut into rows, with the bar area located from the axis line."""

    def __init__(self, text: str) -> None:
        lines = [l for l in text.splitlines() if l.strip()]
        self.head = lines[0]
        axis = lines[1]
        self.bar_start = axis.index("0s")
        self.bar_end = len(axis.rstrip())
        self.bar_w = self.bar_end - self.bar_start
        self.rows = []
        for line in lines[2:]:
            if line.startswith("totals:"):
                self.totals = line
                break
            label = line[: self.bar_start].rstrip()
            bar = line[self.bar_start:self.bar_end]
            rest = line[self.bar_end:].split()
            cells = [i for i, ch in enumerate(bar) if ch != " "]
            self.rows.append({
                "label": label.strip(), "depth": (len(label) - len(label.lstrip())) // 2,
                "first": cells[0], "cells": len(cells), "glyphs": set(bar.strip()),
                "rest": rest, "line": line,
            })
        self.tail = lines[lines.index(self.totals) + 1:]


@needs_fixtures()
def test_waterfall_of_the_real_recording():
    agents, phases, updated, notified = facts(WORKFLOW_PROBE)
    collector = collect(WORKFLOW_PROBE)
    (wf,) = collector.finished()
    text = summary.render_text(collector, width=100)
    assert "\x1b" not in text  # no colour, no escapes in a CI log
    assert all(len(line) <= 100 for line in text.splitlines()[:-1])
    p = Parsed(text)

    end = updated["patch"]["end_time"] * MS
    start = end - notified["usage"]["duration_ms"] * MS
    total = end - start
    assert f"{wf.trace_id:032x}" in p.head and notified["status"] in p.head
    assert f"{notified['usage']['total_tokens']:,} tokens" in p.head

    # rows: workflow, its phase, then the agents ordered by start
    assert [r["depth"] for r in p.rows] == [0, 1] + [2] * len(agents)
    assert p.rows[1]["label"] == phases[0]["title"]
    by_start = sorted(agents, key=lambda a: a["startedAt"])
    for row, agent in zip(p.rows[2:], by_start):
        label = agent["label"]
        assert row["label"] == label or (row["label"].endswith("…") and label.startswith(row["label"][:-1]))
        a_start = agent["startedAt"] * MS
        a_dur = agent["durationMs"] * MS
        # bar position and width proportional to the shared time axis (±1 cell of rounding)
        assert abs(row["first"] - (a_start - start) * p.bar_w / total) <= 1
        assert abs(row["cells"] - a_dur * p.bar_w / total) <= 1
        assert f"{agent['tokens']:,}" in row["rest"] and row["rest"][-1] == "done"
        assert row["glyphs"] == {"█"}
    starts = [r["first"] for r in p.rows[2:]]
    assert starts == sorted(starts)
    # the workflow bar spans the whole axis; the phase spans its agents
    assert p.rows[0]["first"] == 0 and p.rows[0]["cells"] == p.bar_w
    phase_start = min(a["startedAt"] for a in agents) * MS
    phase_end = max(a["startedAt"] + a["durationMs"] for a in agents) * MS
    assert abs(p.rows[1]["cells"] - (phase_end - phase_start) * p.bar_w / total) <= 1
    assert f"{sum(a['tokens'] for a in agents):,}" in p.rows[1]["rest"]
    assert p.totals.startswith(f"totals: {len(phases)} phases, {len(agents)} agents (0 error, 0 cached")
    assert f"{notified['usage']['total_tokens']:,} tokens" in p.totals
    assert p.tail[-1] == f"trace {wf.trace_id:032x}"


def test_waterfall_statuses_of_the_cbc_example():
    agents, phases, updated, notified = facts(CBC)
    collector = collect(CBC)
    (wf,) = collector.finished()
    template = "http://localhost:16686/trace/{trace_id}"
    p = Parsed(summary.render_text(collector, width=120, template=template))
    end = updated["patch"]["end_time"] * MS
    start = end - notified["usage"]["duration_ms"] * MS
    total = end - start
    assert p.rows[0]["rest"][-1] == notified["status"] == "failed"
    by_label = {r["label"]: r for r in p.rows}
    for agent in agents:
        row = by_label[agent["label"]]
        if agent["state"] == "cached":
            assert row["cells"] == 1 and row["glyphs"] == {"·"} and row["rest"][-1] == "cached"
        else:
            assert row["rest"][-1] == ("error" if agent["state"] == "error" else "done")
            a_end = agent.get("endedAt") or agent["startedAt"] + agent["durationMs"]
            assert abs(row["cells"] - (a_end - agent["startedAt"]) * MS * p.bar_w / total) <= 1
    failed_phase = next(ph["title"] for ph in phases
                        if any(a["state"] == "error" and a["phaseIndex"] == ph["index"] for a in agents))
    assert by_label[failed_phase]["rest"][-1] == "error"
    errors = sum(a["state"] == "error" for a in agents)
    cached = sum(a["state"] == "cached" for a in agents)
    assert f"({errors} error, {cached} cached, 0 incomplete)" in p.totals
    assert any(notified["summary"] in line for line in p.tail)  # why it failed, in the log
    assert p.tail[-1] == f"trace {wf.trace_id:032x}  {template.replace('{trace_id}', f'{wf.trace_id:032x}')}"


def test_incomplete_run_is_marked():
    lines = [l for l in CBC.read_bytes().splitlines(keepends=True)
             if b"task_notification" not in l and b"task_updated" not in l]
    agents, *_ = facts(CBC)
    path = Path(__import__("tempfile").mkdtemp()) / "cut.jsonl"
    path.write_bytes(b"".join(lines))
    p = Parsed(summary.render_text(collect(path)))
    assert p.rows[0]["rest"][-1] == "incomplete" and "░" in p.rows[0]["glyphs"]
    still_running = [a for a in agents if a["state"] not in ("done", "error", "cached")]
    marked = [r for r in p.rows if r["depth"] == 2 and r["rest"][-1] == "incomplete"]
    assert len(marked) == len(still_running)


def test_untrusted_text_is_escaped(tmp_path):
    evil = "\x1b]8;;http://evil\x07c\x1b]8;;\x07\x1b[31m[b]x[/b]\u202e<i>|*a*"
    data = CBC.read_text().replace("search-web", json.dumps(evil)[1:-1])
    path = tmp_path / "evil.jsonl"
    path.write_text(data)
    collector = collect(path)
    text = summary.render_text(collector)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "c[b]x[/b]<i>|*a*" in text  # shown as text, not taken as markup
    md = summary.step_summary(collector)
    assert "<i>" not in md and "\x1b" not in md
    row = next(l for l in md.splitlines() if "x\\[" in l)
    assert row.count(" | ") == 4  # the label's "|" did not open a new cell
    assert r"c\[b\]x\[/b\]&lt;i&gt;\|\*a\*" in row


def test_collector_is_bounded():
    collector = summary.Collector(max_workflows=2, max_agents=1)
    for _ in range(3):
        collect(CBC, collector)  # random-free: same ids, same key → one workflow
    assert len(collector.workflows) == 1
    agents, *_ = facts(CBC)
    (wf,) = collector.workflows.values()
    assert len(wf.agents) == 1 and wf.agent_count() == 3 * len(agents)


def test_report_writes_step_summary(tmp_path):
    target = tmp_path / "step.md"
    target.write_text("# before\n")
    cfg = Config(summary="auto", trace_url_template="https://t.example/{trace_id}")
    said: list[str] = []
    report = summary.Report(cfg, said.append, env={"GITHUB_STEP_SUMMARY": str(target)},
                            stream=open("/dev/null", "w"))
    assert report.draw is False  # not a terminal and CI unset
    collect(CBC, report.collector)
    report.on_trace(5, "workflow x")
    report.on_trace(5, "workflow x")
    assert said == [f"trace workflow x: https://t.example/{5:032x}"]
    report.finish()
    md = target.read_text()
    assert md.startswith("# before\n")  # appended
    (wf,) = report.collector.finished()
    agents, phases, updated, notified = facts(CBC)
    assert f"[open trace](https://t.example/{wf.trace_id:032x})" in md
    assert f"{notified['usage']['total_tokens']:,} tokens" in md
    for agent in agents:
        assert summary.markdown_text(agent["label"]) in md
    assert "❌ failed" in md and "❌ error" in md


@pytest.mark.parametrize("mode,env,expected", [
    ("auto", {}, False), ("auto", {"CI": "true"}, True), ("auto", {"CI": "false"}, False),
    ("always", {}, True), ("never", {"CI": "true"}, False),
])
def test_summary_modes(mode, env, expected):
    report = summary.Report(Config(summary=mode), lambda s: None, env=env, stream=open("/dev/null", "w"))
    assert report.draw is expected
    assert (report.emit is not None) is expected


def test_collector_never_raises_on_odd_records():
    from otelbridge.events import SpanRecord

    collector = summary.Collector()
    odd = SpanRecord(name=None, trace_id=1, span_id=2, parent_span_id=None,  # type: ignore[arg-type]
                     start_ns=0, end_ns=0,
                     attributes={"workflow.task_id": "t", "gen_ai.operation.name": "invoke_workflow"})
    collector.emit(odd)
    assert collector.errors == 1


def test_terminal_gets_colour_and_its_width():
    import fcntl
    import os
    import pty
    import re
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 132, 0, 0))
    stream = os.fdopen(slave, "w", encoding="utf-8")
    report = summary.Report(Config(), lambda s: None, env={"TERM": "xterm-256color"}, stream=stream)
    assert report.draw is True  # auto: stderr is a terminal
    collect(CBC, report.collector)
    report.finish()
    stream.flush()
    out = b""
    while True:
        chunk = os.read(master, 65536)
        out += chunk
        if len(chunk) < 65536:
            break
    stream.close()
    os.close(master)
    text = out.decode()
    assert "\x1b[31m" in text or "\x1b[1;31m" in text  # error red
    assert "\x1b[2m" in text  # cached dim
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text).replace("\r", "")
    axis = next(line for line in plain.splitlines() if line.strip().startswith("0s"))
    at_100 = Parsed(summary.render_text(collect(CBC), width=100))
    # laid out for the terminal's 132 columns: the time axis got the 32 extra columns
    assert len(axis.rstrip()) - at_100.bar_end == 132 - 100
