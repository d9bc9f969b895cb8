"""One escaper per medium a person reads: :func:`terminal` (the waterfall and the trace links on
stderr, a CI job's log), :func:`markdown` (the GitHub step summary) and :func:`html` (the ``--report`` page).

Input is text already redacted (the finished spans' names, attributes and status descriptions:
:mod:`otelbridge.spans` is the redaction boundary); these functions only make it inert where it
lands. Every one first applies :func:`visible`: escape sequences, C0/C1 controls, line and
paragraph separators, bidirectional controls (Trojan Source), zero-width and other format
characters (Unicode category ``Cf``, tag characters included) cannot pass — escape sequences are
removed, controls and separators become a space, format characters are removed — so no output
clears a screen, sets a window title, reorders text or hides characters. Then the medium's own
syntax is escaped. ``limit``: at most that many characters of the visible text (``…`` marks a
cut).
"""

from __future__ import annotations

import re
from urllib.parse import quote

#: CSI / OSC / DCS-like / two-character ESC sequences (removed whole; an ESC before a space or
#: other intermediate byte goes alone, so that ``0<ESC> /home/ann`` does not become one word).
ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[0-~])?")
#: C0 and C1 controls (tab included), DEL, line/paragraph separators → a space.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: Every invisible character — removed here and, before redaction, from every exported string
#: (:mod:`otelbridge.redact`), so none can split a secret the views would then show joined:
#: the format characters (Unicode ``Cf``: soft hyphen, Arabic/Syriac marks, bidi marks,
#: embeddings, overrides and isolates, zero-width space/joiners, word joiner, invisible
#: operators, BOM, interlinear annotations, Egyptian/shorthand/musical format controls, tags)
#: and the other default-ignorable code points (combining grapheme joiner, Hangul fillers,
#: Khmer inherent vowels, Mongolian and other variation selectors, reserved ones).
INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
#: The invisible characters ``str.isprintable`` counts as printable (marks and fillers).
_PRINTABLE_INVISIBLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)


def plain(text: str) -> bool:
    """True when ``text`` holds no escape sequence, control, separator or invisible character
    (the common case, told without a regex for ASCII text)."""
    return text.isprintable() and (text.isascii() or _PRINTABLE_INVISIBLE.search(text) is None)


def visible(text: object, limit: int | None = None) -> str:
    """``text`` (``None`` → ``""``, anything else through ``str``) with nothing invisible or
    active left (see the module doc), cut to ``limit`` characters."""
    if text is None:
        return ""
    text = text if isinstance(text, str) else str(text)
    if not plain(text):
        text = ESCAPES.sub("", text)
        text = _CONTROLS.sub(" ", text)
        text = INVISIBLE.sub("", text)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


#: A CI runner's log commands: GitHub Actions' ``##[name]`` (found anywhere in a line),
#: ``::name::`` (at a line's start, after blanks), Azure Pipelines' ``##vso[``, TeamCity's
#: ``##teamcity[`` (its service messages).
_LOG_COMMAND = re.compile(r"#(?=#(?:vso|teamcity)?\[)|^([^\S\n]*):(?=:)", re.MULTILINE)


def inert_in_logs(text: str) -> str:
    """``text`` with no CI log command left in it: a space after the first ``#`` of ``##[`` /
    ``##vso[`` / ``##teamcity[`` and after a leading ``:`` of ``::`` — no step output, mask or annotation can be
    forged by a stream through our lines on stderr."""
    if "#" not in text and ":" not in text:
        return text
    return _LOG_COMMAND.sub(lambda m: "# " if m.group(1) is None else m.group(1) + ": ", text)


def one_line(text: str) -> str:
    """One line of ours on stderr: line breaks as spaces, :func:`inert_in_logs`."""
    if "\n" in text or "\r" in text:
        text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return inert_in_logs(text)


def terminal(text: object, limit: int | None = None) -> str:
    """For a terminal or a CI job's log: :func:`visible`, then :func:`inert_in_logs`. Hand the
    result to ``rich.text.Text`` (never to markup), so ``[red]`` is text."""
    return inert_in_logs(visible(text, limit))


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
#: ASCII punctuation with a meaning in GitHub-flavoured Markdown (emphasis, links, tables,
#: headings, lists, code, math ``$``, emoji ``:x:``, mentions ``@``, autolinks ``://``).
_MD_PUNCT = "\\`*_{}[]()#+-.!|~^$:@="
#: ... and a zero-width space after ``@`` and ``#``: GitHub links mentions and issue references
#: in the rendered text, where the backslash is gone (``\@user`` is still a mention)
_MD_TABLE = str.maketrans({**_MD_ENTITIES, **{c: "\\" + c for c in _MD_PUNCT},
                           "@": "\\@&#8203;", "#": "\\#&#8203;"})


def markdown(text: object, limit: int | None = None) -> str:
    """For GitHub Markdown (a table cell or running text, not a code span): :func:`visible`,
    then ``& < > " '`` as HTML entities and Markdown punctuation backslash-escaped: no link,
    image, raw HTML, mention, emphasis, heading or ``|`` cell break can form."""
    return visible(text, limit).translate(_MD_TABLE)


def html(text: object, limit: int | None = None) -> str:
    """For HTML text and double- or single-quoted attribute values: :func:`visible`, then
    ``& < > " '`` as character references."""
    from html import escape  # its entity table is not imported until a report is written

    return escape(visible(text, limit), quote=True)


def url(link: str | None) -> str | None:
    """``link`` fit for an ``href`` (after :func:`html`) or a Markdown link target: an
    ``http``/``https`` URL with spaces, quotes, angle brackets, backslashes, backticks,
    parentheses and anything invisible percent-encoded; ``None`` for any other scheme."""
    if not link or not re.match(r"(?i)https?://[^/?#\s]", link):
        return None
    return quote(link, safe=":/?#[]@!$&*+,;=%{}~-._")
