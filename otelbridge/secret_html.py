"""Secrets under a name in HTML, as an agent writes a page or a report it sums up what it set in,
or a tool's output shows one (:mod:`otelbridge.secrets` applies :data:`HTML_PATTERNS` after the
Markdown labels of :mod:`otelbridge.secret_labels`): a table's row of a name cell and a value
cell (``<td>Password</td><td>X</td>``, ``<th>API key</th><td>X</td>``), a definition
(``<dt>API key</dt><dd>X</dd>``), a bold name before its value (``<b>Password:</b> X``,
``<strong>Token</strong>: X``), and a table whose header names a column for a secret (``<th>Token</th>``),
then a row's cell in that column, in its first 16 rows.

The name is read as a Markdown label's (the secret's word ends it: ``<td>Token endpoint</td>``
names no secret), the value judged as after one: a word that looks generated, or one a person
picked with a sign; after a password's name (not ``Forgot password``) also one with a capital
and a small letter, or a weak password of the list (``changeme``); a value in ``<code>`` too.
The value is the cell's or the definition's whole text: ``<td>Password</td><td>see the
vault</td>``, ``<dd>Rotated monthly.</dd>`` stay; after a bold name, one word, after blanks,
``&nbsp;``, ``<br>`` or one line's end. Tags are read in any case (``<TD>``, ``<B>``), with
attributes or not (``<b class="k">``, ``<code class="s">``).
"""

from __future__ import annotations

from .secret_labels import (_CELL_WORD, _CLASS_NAME, _NAMED_VALUE, _NEXT_WORDS, _NOT_A_NAME, _NOT_A_REFERENCE,
                            _NOT_A_SETTING, _PASSWORD_LABEL, _SECRET_COLUMN, _STRONG, _WEAK_PASSWORDS)
from .secret_patterns import Pattern

#: Blanks between tags, also escaped line ends (a page inside a JSON string)
_GAP = r"(?:\s|\\[nrt])*+"
#: A tag's attributes, up to its ``>`` (``<td class="mono">``)
_ATTRS = r"(?:\s[^<>]{0,200}+)?>"
#: Tags' names in any case (``<TD>``, ``<B>``: an old page's or a generator's), a ``<code>``
#: around a value with its attributes or not (``<code class="s">``)
_CODE = r"(?:<(?i:code)" + _ATTRS + ")?"
_END_CODE = r"(?:</(?i:code)>)?"
#: ... what stands between a bold name and its value: blanks, ``&nbsp;``, ``<br>``, one line's end
_BREAK = r"(?:[ \t]|&nbsp;|<(?i:br)[ \t]*+/?>)*+"
_BREAKS = _BREAK + r"(?:(?:\r?\n|(?:\\+r)?\\+n)" + _BREAK + ")?+"
#: A secret's name: a password's (group ``pw``) or another secret's, in ``<b>``/``<code>`` or not,
#: a ``:`` after it
_NAME = (r"(?:<(?i:b|strong|code|em)>)?[ \t]*+(?:(?P<pw>" + _PASSWORD_LABEL + r")|" + _SECRET_COLUMN + r")(?![\w.-])"
         r"[ \t]*+:?[ \t]*+(?:</(?i:b|strong|code|em)>)?[ \t]*+:?")
#: ... its value, as after a Markdown label: generated-looking, or picked with a sign; after a
#: password's name also with a capital and a small letter, or a weak password
_VALUE = r"(?!\[REDACTED:)" + _NOT_A_REFERENCE + "(?:" + _NAMED_VALUE + ")"
#: ... a cell's or a definition's whole text, up to its closing tag (``</code>`` before it)
_WHOLE = r"(?=[ \t]*+" + _END_CODE + _GAP + r"</(?i:t[dh]|dd)>)"

#: A row's name cell then its value cell; a definition's term then its description; a bold name
#: then its value, one word (up to a tag, a blank or a line's end)
_LABELLED = (
    r"(?P<keep>(?:<(?P<c>(?i:t[dh]))" + _ATTRS + _GAP + r"|<(?i:dt)" + _ATTRS + _GAP + r"(?P<d>)|<(?P<b>(?i:b|strong))"
    + _ATTRS + r"[ \t]*+)"
    + _NAME + r"(?(c)" + _GAP + r"</(?i:t[dh])>" + _GAP + r"<(?i:td)" + _ATTRS + _GAP + _CODE
    + r"|(?(d)" + _GAP + r"</(?i:dt)>" + _GAP + r"<(?i:dd)" + _ATTRS + _GAP + _CODE
    + r"|</(?i:b|strong)>[ \t]*+:?" + _BREAKS + _CODE + ")))" + _VALUE + r"(?(b)(?=[.,;)]?(?:\s|<|\\+[nrt\"]|\"|\Z))|" + _WHOLE + ")"
)

#: A cell of any text (its tags too), bounded: what a row holds before the column wanted
_CELL = r"<(?i:t[dh])" + _ATTRS + r"(?:[^<]|<(?!/?(?i:t[dhr])[\s>]))" + r"{0,300}+</(?i:t[dh])>" + _GAP
#: ... a row of them, up to its end, and what may stand between rows (``<thead>``, ``</tbody>``)
_ROW = r"<(?i:tr)" + _ATTRS + _GAP + r"(?:" + _CELL + r"){0,12}+</(?i:tr)>" + _GAP
_BETWEEN = r"(?:</?(?i:thead|tbody|tfoot)" + _ATTRS + _GAP + r")*+"


def _column(column: str, value: str) -> str:
    """The regex of a table's cell under a header cell ``<th>column</th>`` (the first six
    columns), in the first 16 rows after the header's, the cell's text ``value``."""
    return (
        r"(?P<keep><(?i:tr)" + _ATTRS + _GAP + r"(?:"
        + "|".join(
            r"(?:" + _CELL + "){%d}" % n + r"<(?i:th)" + _ATTRS + r"[ \t]*+(?:<(?i:b|strong)>)?[ \t]*+" + column
            + r"[ \t]*+(?:</(?i:b|strong)>)?[ \t]*+</(?i:th)>" + _GAP + r"(?:" + _CELL + r"){0,12}+</(?i:tr)>" + _GAP
            + _BETWEEN + r"(?:" + _ROW + _BETWEEN + r"){0,15}?<(?i:tr)" + _ATTRS + _GAP
            + r"(?:" + _CELL + "){%d}" % n + r"<(?i:td)" + _ATTRS + r"[ \t]*+" + _CODE
            for n in range(6))
        + r"))(?!\[REDACTED:)" + value + _WHOLE
    )


#: ... a password's column: 8 characters or more with a letter and a digit, no name, class or
#: setting, or a weak password; another secret's: also a sign, or capitals, small letters and
#: two digits (as a Markdown table's: such a column also lists names and ids)
_HTML_CELL = r"[^\s<>`|\\:]"
_HTML_CELL_VALUE = (r"(?=" + _HTML_CELL + "{8})" + _NOT_A_NAME + r"(?![$%{<~-])" + _NOT_A_SETTING
                    + r"(?!" + _CLASS_NAME + _WHOLE.removeprefix("(?=") + r"(?=" + _HTML_CELL
                    + r"*[0-9])(?=" + _HTML_CELL + r"*[A-Za-z])")
_PASSWORD_CELL = r"(?:" + _HTML_CELL_VALUE + _HTML_CELL + r"{8,}+|" + _WEAK_PASSWORDS + ")"
_SECRET_CELL = _HTML_CELL_VALUE + _STRONG.replace(_CELL_WORD, _HTML_CELL) + _HTML_CELL + r"{8,}+"


HTML_PATTERNS = (
    Pattern.of("secret", _NEXT_WORDS, _LABELLED, requires=(("</td>", "</th>", "</dt>", "</b>", "</strong>"),)),
    Pattern.of("secret", ("pass", "pw"), _column(_PASSWORD_LABEL + r"(?![\w.-])", _PASSWORD_CELL),
               requires=(("<th",), ("<td",)), passes=16),
    Pattern.of("secret", ("secret", "token", "key", "credential"), _column(_SECRET_COLUMN + r"(?![\w.-])", _SECRET_CELL),
               requires=(("<th",), ("<td",)), passes=16),
)
