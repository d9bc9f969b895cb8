"""One escaper per medium: control, escape, bidi, zero-width and tag characters put into every
text field of real recordings (hypothesis) are found live in no output — waterfall, step
summary, job outputs, HTML page — and the medium's own syntax never forms from them."""

from __future__ import annotations

import io
import json
import re
import unicodedata
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otelbridge import escape, report, waterfall
from otelbridge.config import Config
from otelbridge.pipeline import Pipeline
from otelbridge.stats import Stats
from otelbridge.summary import job_outputs
from otelbridge.views import Report
from tests.conftest import EXAMPLES

STREAMS = [EXAMPLES / n for n in ("claude-code-session.jsonl", "cbc-workflow.jsonl",
                                  "caudra-workflow.jsonl", "milk-session.jsonl")]
#: The stream fields that carry free text into span names, attributes and status texts.
TEXT_KEYS = {"model", "text", "title", "name", "status", "description", "label", "phaseTitle",
             "message", "summary", "result", "subagent_type", "task_type", "terminal_reason",
             "workflow_name", "error", "stop_reason", "automation", "reason", "content", "phase",
             "state_outcome", "verdict"}
CONTROLS = [chr(c) for c in (*range(0x00, 0x20), *range(0x7f, 0xa0))]
BIDI = list("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
ZERO_WIDTH = list("\u00ad\u200b\u200c\u200d\u2060\ufeff\u2028\u2029")
TAGS = [chr(c) for c in (0xE0001, 0xE0020, 0xE0041, 0xE007F)]
SEQUENCES = ["\x1b[2J", "\x1b[H", "\x1b]0;pwned\x07", "\x1b]8;;http://evil/\x1b\\", "\x1bc"]
SYNTAX = list("<>&\"'|[]()*_`#!:@\\") + ["<img src=x onerror=alert(1)>", "](javascript:x)"]
MARK = "Zq"

pieces = st.sampled_from(CONTROLS + BIDI + ZERO_WIDTH + TAGS + SEQUENCES + SYNTAX + ["a", " "])
texts = st.lists(pieces, min_size=1, max_size=12).map(lambda p: MARK + "".join(p) + MARK)


def invisible(ch: str) -> bool:
    """A character that must never be live in what a person reads (newline aside)."""
    return ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def poisoned(path, text: str) -> bytes:
    def walk(node):
        if isinstance(node, dict):
            return {k: text if k in TEXT_KEYS and isinstance(v, str) else walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(json.dumps(walk(json.loads(line))).encode())
        except ValueError:
            out.append(line)
    return b"\n".join(out) + b"\n"


def views(text: str) -> dict[str, str]:
    cfg = Config(exporters=("none",), clock="stream", deterministic_ids=True, summary="always",
                 trace_url_template="https://x.example/t/{trace_id}")
    rep = Report(cfg, lambda s: None, env={}, stream=io.StringIO())
    pipeline = Pipeline(cfg, Stats(), report=rep, stream_timers=True)
    for i, path in enumerate(STREAMS):
        if i:
            pipeline.end_stream()
        pipeline.new_stream()
        data = poisoned(path, text)
        pipeline.on_chunk(data, len(data))
    pipeline.end_stream()
    c = rep.collector
    return {"terminal": waterfall.render_text(c, 160, cfg.trace_url_template),
            "markdown": waterfall.step_summary(c, cfg.trace_url_template),
            "outputs": job_outputs(c), "html": report.page(c, cfg.trace_url_template)}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)

    def handle_data(self, data):
        self.text.append(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
@example(MARK + "".join(SYNTAX + SEQUENCES + BIDI + ZERO_WIDTH + TAGS + CONTROLS) + MARK)
def test_no_dangerous_character_is_live_in_any_output(text):
    out = views(text)
    assert MARK in out["terminal"] and MARK in out["markdown"] and MARK in out["html"]
    for medium, rendered in out.items():
        live = sorted({f"U+{ord(ch):04X}" for ch in rendered if invisible(ch)})
        assert not live, (medium, live)
    # HTML: only our own elements and attributes; the text shows as text
    parser = Tags()
    parser.feed(out["html"])
    assert parser.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p",
                           "section", "div", "span", "a", "ul", "li", "b", "pre"}
    assert parser.attrs <= {"lang", "charset", "http-equiv", "content", "name", "id", "class",
                            "style", "title", "href", "rel"}
    # Markdown: no raw HTML, every table line has its 8 cell borders and no more
    md = out["markdown"]
    assert "<" not in md
    for line in md.splitlines():
        if line.startswith("| "):
            assert len(re.findall(r"(?<!\\)\|", line)) == 8, line


@given(st.text(max_size=40))
def test_each_escaper_leaves_nothing_invisible(text):
    for fn in (escape.terminal, escape.markdown, escape.html):
        assert not any(invisible(ch) or ch == "\n" for ch in fn(text))
    assert "<" not in escape.html(text) and "<" not in escape.markdown(text)


def test_the_format_class_covers_every_format_character():
    """Every Unicode ``Cf`` character of this Python is removed (the table is not stale)."""
    missed = [hex(c) for c in range(0x110000)
              if unicodedata.category(chr(c)) in ("Cf", "Cc", "Zl", "Zp") and escape.visible(chr(c)).strip()]
    assert missed == []


def test_urls_only_http():
    assert escape.url("javascript:alert(1)") is None
    assert escape.url("data:text/html,x") is None
    assert escape.url('https://g.example/explore?left={"q":"a b"}') == (
        "https://g.example/explore?left={%22q%22:%22a%20b%22}")


@pytest.mark.parametrize("text, expected", [
    ("##[set-output name=deploy]true", "# #[set-output name=deploy]true"),
    ("ok ##[add-mask]word", "ok # #[add-mask]word"),
    ("x ##vso[task.setvariable variable=a]b", "x # #vso[task.setvariable variable=a]b"),
    ("Bash ##teamcity[setParameter name='env.LD_PRELOAD' value='/tmp/x.so']",
     "Bash # #teamcity[setParameter name='env.LD_PRELOAD' value='/tmp/x.so']"),
    ("  ::add-mask::abc", "  : :add-mask::abc"),
    ("###[x", "## #[x"),
    ("a::b, issue #12 [x], https://h/#frag", "a::b, issue #12 [x], https://h/#frag"),
])
def test_ci_log_commands_are_made_inert(text, expected):
    assert escape.terminal(text) == escape.inert_in_logs(text) == expected


@pytest.mark.parametrize("text", ["ping @octocat about #123", "@org/team, see owner/repo#45 and GH-7 @a"])
def test_no_mention_or_issue_reference_forms_in_markdown(text):
    """GitHub links mentions and issue references in the rendered text, after the Markdown's
    escapes are gone (``\\@user`` is still a mention): the text as rendered (CommonMark, here
    markdown-it) has something invisible between ``@``/``#`` and what follows."""
    import markdown_it

    (inline,) = markdown_it.MarkdownIt("commonmark").parseInline(escape.markdown(text))
    rendered = "".join(t.content for t in inline.children)
    assert rendered.replace("\u200b", "") == text
    assert not re.search(r"[@#][\w-]", rendered), rendered
