"""The --report page as written: mode 0600 (also over an existing file), self-contained (no
script, no external reference, a content security policy), every row with its bar placed on the
trace's time axis, long traces folded."""

from __future__ import annotations

import re

from otelbridge import report
from otelbridge.summary import Collector, Row

MS = 1_000_000


def collector() -> Collector:
    c = Collector()
    c.take(Row(7, 1, None, "invoke_agent claude-code", "session", 0, 1000 * MS))
    for i in range(3000):
        c.take(Row(7, 10 + i, 1, f"execute_tool Bash {i}", "tool", i * MS // 4, i * MS // 4 + MS))
    c.take(Row(7, 2, 1, "turn 1", "turn", 250 * MS, 750 * MS, error="boom <b>", status="error"))
    return c


def test_mode_0600_even_over_an_existing_file(tmp_path):
    path = tmp_path / "r.html"
    path.write_text("old")
    path.chmod(0o644)
    report.write_page(str(path), collector())
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text().startswith("<!doctype html>")


def test_self_contained_rows_on_the_time_axis_and_folded():
    html = report.page(collector(), "https://t.example/{trace_id}")
    assert "<script" not in html and "src=" not in html and "@import" not in html
    assert "default-src 'none'" in html
    assert re.findall(r'https?://[^"\s<]+', html) == ["https://t.example/" + f"{7:032x}"]
    bars = re.findall(r'class="bar (\w+)" style="left:min\(([\d.]+)%,calc\(100% - 2px\)\);width:([\d.]+)%"', html)
    assert len(bars) == report.HTML_ROWS - 1  # and the "… N more" line
    assert ("error", "25.000", "50.000") in bars  # turn 1: 250–750 ms of 1000 ms
    assert ("ok", "0.000", "100.000") in bars
    folded = 1 + 3000 + 1 - (report.HTML_ROWS - 1)
    assert f"… {folded} more" in html
    assert "boom &lt;b&gt;" in html and "<b>boom" not in html
