"""A query's output whose header names a column for a secret, as a client prints it: psql's
aligned table (cells between ``|``, a ``----+----`` line under the header, no border; its first
16 rows) and CSV shown from its header on (``cat``, ``head``, a Read of the file: AWS's
credentials file, a spreadsheet's export; its first 3 rows). A row's cell in that column (the
first six) is the secret when it looks like one, as under a Markdown table's header
(:mod:`otelbridge.secret_labels`, which also reads MySQL's boxed tables): under a password's
name a word of 8 characters or more with a letter and a digit, or a weak password; under a
token's, a key's or a secret's, one with a sign, or with capitals, small letters and two digits.
Columns of numbers (``token_count``, ``input_tokens``) stay.
"""

from __future__ import annotations

import re

from .secret_labels import (_CELL_VALUE, _CELL_WORD, _PASSWORD_COLUMN, _PASSWORD_WORDS, _SECRET_COLUMN,
                            _SECRET_WORDS, _STRONG, _WEAK_PASSWORDS)
from .secret_patterns import Pattern

#: A line end, real or JSON-escaped (a tool's output inside a JSON string); a line's text
_EOL = r"(?:\r?\n|(?:\\r)?\\n)"
_LINE = r"(?:[^\r\n\\]++|\\(?![rn]))*+"
#: Where a line begins
_BOL = r"(?:^|(?<=\n)|(?<=\\n))"
#: The end of a cell: blanks (a closing quote), then the next separator, the line's end or the text's
_END = r"(?=[ \t]*+%s(?:%s|\r?\n|\\[rn]|\Z))"


def _psql(column: str, value: str) -> str:
    """psql's aligned output: the header names ``column`` (the ``n``-th cell), the ``---+---``
    line, then a row's ``n``-th cell, ``value``; a single column (dashes alone under its name):
    its first row's."""
    return (r"(?P<keep>" + _BOL + "(?:" + "|".join(
        r"(?:[^|\r\n\\]*+\|){%d}[ \t]*+" % n + column + r"[ \t]*+(?:\|" + _LINE + ")?" + _EOL
        + r"[ \t]*+-++(?:\+-++)++[ \t]*+" + _EOL + r"(?:" + _LINE + _EOL + r"){0,15}?"
        + r"(?:[^|\r\n\\]*+\|){%d}[ \t]*+" % n
        for n in range(6)) + r"|[ \t]*+" + column + r"[ \t]*+" + _EOL + r"[ \t]*+-++[ \t]*+" + _EOL
        + r"[ \t]*+))(?!\[REDACTED:)" + value + _END % ("", r"\|"))


def _csv(column: str, value: str) -> str:
    """CSV: one of the text's first three lines (after a prompt or a document's opening quote)
    a header that names ``column`` among names (the ``n``-th field, quoted or not; a file shown
    whole, its first rows), then one of the next three rows' ``n``-th field, ``value`` (quoted
    or not); a header and a row of one field are no CSV."""
    return (r"(?P<keep>\A(?:" + _LINE + _EOL + r"){0,2}?(?:[^\r\n\\]{0,200}?(?<=[\s\"']))?(?:" + "|".join(
        r"(?:" + _NAME_FIELD + r",){%d}[ \t]*+\"?" % n + column + r"\"?[ \t]*+"
        + ("(?:," + _LINE + ")?" if n else "," + _LINE) + _EOL
        + r"(?:" + _LINE + _EOL + r"){0,2}?" + r"(?:[^,\r\n\\]*+,){%d}[ \t]*+(?:\\*\")?" % n
        + ("" if n else r"(?=[^,\r\n\\]*+,)")
        for n in range(6)) + r"))(?!\[REDACTED:)" + value.replace(_CELL_WORD, _FIELD_WORD)
            + _END % (r"(?:\\*\")?", ","))


#: A CSV header's field: a column's name (words, quoted or not)
_NAME_FIELD = r"[ \t]*+\"?[A-Za-z][\w .()/-]{0,60}+\"?[ \t]*+"
#: A CSV field's word: as a table cell's, but a comma ends it and a ``|`` is no separator
_FIELD_WORD = r"[^,`\s\\\"]"
#: Under a password's name: a word of 8 or more with a letter and a digit, or a weak password
_PASSWORD_VALUE = "(?:" + _CELL_VALUE + _CELL_WORD + "{8,}+|" + _WEAK_PASSWORDS + ")"
#: Under a token's, a key's or a secret's: also a sign, or capitals, small letters and two digits
_SECRET_VALUE = _CELL_VALUE + _STRONG + _CELL_WORD + "{8,}+"

TABLE_PATTERNS = tuple(
    Pattern.of("secret", words, form(column, value), flags=re.M, passes=16, requires=(separator, ("\n", "\\n")))
    for form, separator in ((_psql, ("-+-", "\n--", "\\n--")), (_csv, (",",)))
    for words, column, value in ((_PASSWORD_WORDS, _PASSWORD_COLUMN, _PASSWORD_VALUE),
                                 (_SECRET_WORDS, _SECRET_COLUMN, _SECRET_VALUE))
)
