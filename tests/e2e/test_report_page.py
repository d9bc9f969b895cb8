"""``--report PATH`` rendered by headless Debian chromium (tests/chromium.py: DevTools protocol on
a pipe, no script in the page): what a person would see. A row per span with its bar laid out
on the time axis (boxes measured by the browser, pixels of the screenshot counted), hostile
labels shown as text, nothing run. otelbridge itself runs as a real subprocess."""

from __future__ import annotations

import json

import pytest

from tests.chromium import Chromium, binary, png_pixels
from tests.conftest import EXAMPLES, FIXTURES, clean_env, needs_fixtures, run_bridge, workflow_facts

pytestmark = pytest.mark.skipif(binary() is None, reason="chromium is not installed (.ci/run installs it)")

CBC = EXAMPLES / "cbc-workflow.jsonl"
HOSTILE_LABEL = "<img src=x onerror=\"document.title='pwned'\">"
HOSTILE_WORKFLOW = "<script>document.title='pwned'</script>"
TEMPLATE = "http://localhost:16686/trace/{trace_id}"
OK, ERROR = (0x2F, 0x9E, 0x6E), (0xDD, 0x33, 0x33)  # the page's bar colours


def hostile_stream() -> bytes:
    """The cbc workflow with its first agent's label and the workflow's name made hostile."""
    out = []
    for line in CBC.read_text().splitlines():
        doc = json.loads(line)
        for entry in doc.get("workflow_progress") or ():
            if entry.get("type") == "workflow_agent" and entry.get("index") == 1:
                entry["label"] = HOSTILE_LABEL
        if "workflow_name" in doc:
            doc["workflow_name"] = HOSTILE_WORKFLOW
        out.append(json.dumps(doc))
    return ("\n".join(out) + "\n").encode()


def test_the_page_shows_rows_laid_out_and_runs_nothing(tmp_path):
    page = tmp_path / "report.html"
    data = hostile_stream()
    proc = run_bridge(["--exporter", "none", "--report", str(page), "--trace-url-template", TEMPLATE],
                      data, env=clean_env())
    assert proc.returncode == 0 and proc.stdout == data
    assert page.stat().st_mode & 0o777 == 0o600
    source = page.read_text()
    assert "<script" not in source and "src=" not in source.replace("src=x", "")
    _, agents, phases, _, _ = workflow_facts(CBC)
    with Chromium() as browser:
        browser.open(page)
        assert browser.query("img, script, iframe, object, embed") == []  # nothing became an element
        (title,) = browser.query("title")
        assert browser.html(title) == "<title>otelbridge run report</title>"  # nothing ran
        sections = browser.query("section.trace")
        assert len(sections) == 2  # the workflow's trace and the session's
        bars = browser.query("section.trace .row .bar")
        spans = 1 + len(phases) + len(agents) + 2  # workflow, phases, agents; session and turn
        assert len(bars) == spans
        boxes = [browser.box(b) for b in bars]
        assert all(w >= 1 and h >= 5 for _, _, w, h in boxes)  # every bar drawn
        labels = {browser.html(n): browser.box(n) for n in browser.query(".row > span:first-child")}
        shown = [(html, box) for html, box in labels.items() if "onerror" in html]
        (hostile_html, hostile_box), = shown
        assert "&lt;img src=x onerror=" in hostile_html and hostile_box[2] > 50  # text, visible
        assert any("&lt;script&gt;" in html for html in labels)
        # bars are placed on the time axis: a later phase's bar starts further right
        by_label = {}
        for n in browser.query("section.trace .row"):
            inner = browser.html(n)
            for phase in phases:
                if f">phase {phase['title']}<" in inner:
                    by_label[phase["title"]] = browser.box(browser.call(
                        "DOM.querySelector", nodeId=n, selector=".bar")["nodeId"])[0]
        order = sorted(phases, key=lambda p: by_label[p["title"]])
        assert [p["title"] for p in order] == [p["title"] for p in phases] and len(set(by_label.values())) == len(phases)
        png = browser.screenshot()
    width, height, rows = png_pixels(png)
    assert width >= 1000 and height > 300
    bpp = len(rows[0]) // width
    colours = {}
    for row in rows:
        for x in range(0, len(row), bpp):
            px = tuple(row[x:x + 3])
            if px in (OK, ERROR):
                colours[px] = colours.get(px, 0) + 1
    assert colours.get(OK, 0) > 1000 and colours.get(ERROR, 0) > 500  # bars painted, failures red


@needs_fixtures()
@pytest.mark.parametrize("width", [1400, 700])
def test_every_bar_is_drawn_inside_its_track_also_at_the_trace_s_end_and_in_a_narrow_window(tmp_path, width):
    """task-tool-2.1.6 has no timestamps: most of its spans take no time at the trace's end. Each
    keeps a mark inside its track (a bar at 100 % was clipped by the track); in a 700 px window
    the track keeps its width. A cut status has its full text as the cell's title."""
    recording = FIXTURES / "claude-code" / "task-tool-2.1.6.jsonl"
    page = tmp_path / "report.html"
    data = recording.read_bytes()
    proc = run_bridge(["--exporter", "none", "--report", str(page)], data, env=clean_env())
    assert proc.returncode == 0 and proc.stdout == data
    with Chromium(width=width) as browser:
        browser.open(page)
        rows = len(browser.query("section.trace .row:not(.head):not(.more)"))
        tracks = [browser.box(n) for n in browser.query("section.trace .row .track")]  # (a query
        bars = [browser.box(n) for n in browser.query("section.trace .row .bar")]  # renews ids)
        assert rows == len(tracks) == len(bars) > 40
        for (tx, _, tw, _), (bx, _, bw, bh) in zip(tracks, bars):
            assert tw >= 60 and bw >= 1 and bh >= 5
            assert tx - 0.5 <= bx and bx + bw <= tx + tw + 0.5, (tx, tw, bx, bw)
        statuses = [browser.html(n) for n in browser.query("section.trace .row .status")]
        assert statuses and all('title="' in s for s in statuses)



@needs_fixtures()
@pytest.mark.parametrize("width", [1920, 700])
def test_each_status_is_shown_whole_in_its_cell(tmp_path, width):
    """An interrupted Claude Code run's statuses (``error_during_execution``, ``aborted_streaming``)
    are read whole in the page, a long one on two lines of its cell, not cut with an ellipsis."""
    page = tmp_path / "report.html"
    data = (FIXTURES / "claude-code" / "interrupt-2.1.276.jsonl").read_bytes()
    proc = run_bridge(["--exporter", "none", "--report", str(page)], data, env=clean_env())
    assert proc.returncode == 0 and proc.stdout == data
    shown = {}
    with Chromium(width=width) as browser:
        browser.open(page)
        for node in browser.query("section.trace .row .status"):
            x, _, w, _ = browser.box(node)
            (text,) = browser.call("DOM.describeNode", nodeId=node, depth=1)["node"]["children"]
            quads = browser.call("DOM.getContentQuads", backendNodeId=text["backendNodeId"])["quads"]
            shown[text["nodeValue"]] = max(q[i] for q in quads for i in (0, 2, 4, 6)) <= x + w + 0.5
    assert {"error_during_execution", "aborted_streaming"} <= set(shown)
    assert [status for status, whole in shown.items() if not whole] == []
