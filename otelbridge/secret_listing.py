"""A file's text as a tool shows it, each line behind a prefix: Claude Code's Read numbers every
line (``     1→`` in older CLIs, ``1\\t`` since), ``grep -n`` puts the file and the line's number
before it (``app/.env:3:``, ``3:``), a diff a ``+``, ``-`` or blank, a quoted reply ``> ``. The
rules that read a line's start — a secret's name alone on its line and its value on the next, a
Markdown table, a table row's label (the patterns of :data:`otelbridge.secret_labels.PROSE_PATTERNS`
compiled with ``re.M``) — find nothing there: the prefix stands before the heading, the ``|``
and the value. :class:`Listing` reads such a text again without its prefixes and puts what
those rules replaced back behind them (``1\\t## Admin password`` / ``2\\t`` / ``3\\tX``).

A text is a listing when its second line starts with a prefix, and so do half of its lines or
more (its first line's may follow a title: ``invoke_agent 1\\t…``); a diff, when it starts as
one or holds a hunk's ``@@``. The test costs one match for any other text with a line end.
"""

from __future__ import annotations

import re

from .secret_html import HTML_PATTERNS
from .secret_labels import PROSE_PATTERNS
from .secret_tables import TABLE_PATTERNS
from .secret_patterns import Needles, Pattern

#: A line's prefix: a Read's number (``     1→``, ``1\t``), grep -n's (a file's name, then the
#: number: ``app/.env:3:``, ``3:``), a quoted reply's ``>``; also in a JSON string (``1\\t``)
_PREFIX = r"(?:[ \t]*+\d{1,7}+(?:\u2192|\t|\\t)|(?:[^\s:\\]{1,200}+:)?\d{1,7}+:|>[ \t]?)"
#: ... the first line's, after a title (``invoke_agent``, ``{"command":"``) or not
_FIRST = re.compile(r".{0,200}?(?<![^\s\"'])" + _PREFIX)
#: ... a line's after its line end (real, or escaped: a JSON string)
_FOLLOWING = {eol: re.compile(re.escape(eol) + _PREFIX) for eol in ("\n", "\\n")}
_LINE_PREFIX = re.compile(_PREFIX)
#: ... a diff's line: its first character
_DIFF_LINE = re.compile(r"[+ -]")


def _prefix(text: str, eol: str) -> re.Pattern[str] | None:
    """The regex of the prefix each line of ``text`` starts with (a listing, a diff), lines
    ending in ``eol``, or None."""
    if text.startswith(("diff --git", "@@ ", "--- ")) or eol + "@@ " in text:
        return _DIFF_LINE
    following = _FOLLOWING[eol]
    if following.match(text, text.find(eol)) is None:  # (the second line: one match, for any text)
        return None
    return _LINE_PREFIX if len(following.findall(text)) * 2 >= text.count(eol) else None


class Listing(Pattern):
    """``patterns`` (rules that read a line's start) applied to a listing's text without its
    lines' prefixes (:func:`_prefix`); what they replace is replaced in the text, behind the
    same prefixes. A text that is no listing is left as it is."""

    __slots__ = ("inner", "_needles")

    def __init__(self, patterns: tuple[Pattern, ...]) -> None:
        super().__init__("secret", r"(?!)", (), (("\n", "\\n"),))
        self.inner = patterns
        self._needles: Needles | None = None  # (made at the first listing)

    def __repr__(self) -> str:
        return f"Listing({len(self.inner)} patterns)"

    def sub(self, text: str, found: list[str] | None = None) -> str:
        eol = "\n" if "\n" in text else "\\n"
        prefix = _prefix(text, eol)
        if prefix is None:
            return text
        lines = text.split(eol)
        cuts = [m.end() if (m := (_FIRST if i == 0 and prefix is _LINE_PREFIX else prefix).match(line)) is not None
                else 0 for i, line in enumerate(lines)]
        bare = out = eol.join(line[cut:] for line, cut in zip(lines, cuts))
        needles = self._needles
        if needles is None:
            needles = self._needles = Needles(self.inner)
        values: list[str] = []
        for i in needles.wanted(bare):
            out = self.inner[i].sub(out, values)
        if out == bare:
            return text
        if found is not None:
            found += values
        redacted = out.split(eol)
        if len(redacted) == len(lines):
            return eol.join(line[:cut] + new for line, cut, new in zip(lines, cuts, redacted))
        # (a match took a line's end, the lines no longer pair: each value where the text holds it whole)
        for value in sorted(values, key=len, reverse=True):
            text = text.replace(value, f"[REDACTED:{self.kind}]")
        return text


#: The rules of Markdown and HTML, then a listing's reading by those of a line's start
PAGE_PATTERNS = (*PROSE_PATTERNS, *TABLE_PATTERNS, *HTML_PATTERNS,
                 Listing(tuple(p for p in (*PROSE_PATTERNS, *TABLE_PATTERNS) if p._flags & re.M)))
