"""A query's output whose header names a column for a secret, as a client prints it: psql's
aligned table (a ``----+----`` line under the header; one column: dashes alone), MySQL's boxed
one (``+----+`` borders), and delimited text (CSV, ``;``, a tab: ``mysql -B``, an export, AWS's
credentials file) whose header is names alone. Rows are read while they have the header's
number of cells, 16 at most; a cell in a secret's column is the secret when it looks like one,
as under a Markdown table's header (:mod:`otelbridge.secret_labels`): under a password's name a
word of 8 characters or more with a letter and a digit, or a weak password; under a token's, a
key's or a secret's, one with a sign, or with capitals, small letters and two digits. Columns
of numbers (``token_count``, ``input_tokens``) stay; code and prose are no header (a name holds
no ``(``, ``:``, ``.`` or ``'``).

The rule reads lines in Python (:class:`QueryTable`), not by one regex: a regex that tries
every line as a header and reads rows after each costs seconds on 200 KB of header-shaped lines.
"""

from __future__ import annotations

import re

from .secret_labels import (_CELL_VALUE, _CELL_WORD, _PASSWORD_COLUMN, _PASSWORD_WORDS, _SECRET_COLUMN,
                            _SECRET_WORDS, _STRONG, _WEAK_PASSWORDS)
from .secret_patterns import Pattern

#: Rows read under a header, at most
MAX_ROWS = 16
#: A column's name: whole cell text, a password's or another secret's
_PASSWORD_NAME = re.compile(_PASSWORD_COLUMN)
_SECRET_NAME = re.compile(_SECRET_COLUMN)
#: ... its value, the cell's whole text
_PASSWORD_VALUE = re.compile("(?:" + _CELL_VALUE + _CELL_WORD + "{8,}+|" + _WEAK_PASSWORDS + ")")
_SECRET_VALUE = re.compile(_CELL_VALUE + _STRONG + _CELL_WORD + "{8,}+")
#: psql's line under its header (several columns), MySQL's border
_PSQL_RULE = re.compile(r"[ \t]*+-++(?:\+-++)++[ \t]*+")
_DASHES = re.compile(r"[ \t]*+-{3,}+[ \t]*+")
_BORDER = re.compile(r"[ \t]*+\+(?:-++\+)++[ \t]*+(?:\\*\")?")
#: ... the border above its header, which may end a line that starts a JSON string's text
_TOP = re.compile(r"(?:\A|[\s\"])[ \t]*+\+(?:-++\+)++[ \t]*+\Z")
#: A delimited header's name: words, no code's or prose's marks
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_ /-]{0,40}+")
#: What stands before a delimited header on its line: up to its last blank or quote
_LEAD = re.compile(r"\A.*[\s\"]")
#: A cell's text: its blanks and quotes (also escaped: a JSON string's) around its value
_CELL = re.compile(r"(\s*+(?:\\*\")?)(.*?)((?:\\*\")?\s*+)", re.S)
_WORDS = tuple(sorted(set(_PASSWORD_WORDS + _SECRET_WORDS)))


def _bare(name: str) -> str:
    """A header cell's name without its blanks and quotes (also a JSON string's escaped ones)."""
    return name.strip().strip('"\\').strip()


def _columns(names: list[str]) -> dict[int, re.Pattern[str]]:
    """The cells of a header that name a secret's column → the regex its values must match."""
    out = {}
    for i, name in enumerate(names):
        name = _bare(name)
        if _PASSWORD_NAME.fullmatch(name):
            out[i] = _PASSWORD_VALUE
        elif _SECRET_NAME.fullmatch(name):
            out[i] = _SECRET_VALUE
    return out


class QueryTable(Pattern):
    """The rule of this module's text, as a :class:`~otelbridge.secret_patterns.Pattern`: its
    ``sub`` replaces each secret cell's value by ``[REDACTED:secret]``, its blanks and quotes
    kept."""

    __slots__ = ()

    def __init__(self) -> None:
        # (re.M: a rule of a line's start, which a listing's reading without prefixes runs too)
        super().__init__("secret", r"(?!)", _WORDS, (("\n", "\\n"),), re.M)

    def __repr__(self) -> str:
        return "QueryTable()"

    def sub(self, text: str, found: list[str] | None = None) -> str:
        eol = "\n" if "\n" in text else "\\n"
        lines = text.split(eol)
        changed, i = False, 0
        while i + 1 < len(lines):
            table = self._table(lines, i, "\\t" if eol == "\\n" else "\t") \
                if any(word in lines[i].lower() for word in _WORDS) else None
            if table is None:
                i += 1
                continue
            # (its rows are no header: each line is read once, as a header or as a row)
            i, redacted = self._redact(lines, *table, found)
            changed |= redacted
        return eol.join(lines) if changed else text

    @staticmethod
    def _table(lines: list[str], i: int, tab: str) -> tuple[int, str, int, dict] | None:
        """The table whose header is line ``i``: (its first row's line, the cells' separator,
        the number of separators a row holds, its secret columns), or ``None``."""
        line, below = lines[i], lines[i + 1]
        if _PSQL_RULE.fullmatch(below) and line.count("|") == below.count("+"):
            sep, first = "|", i + 2
        elif _DASHES.fullmatch(below) and "|" not in line:
            sep, first = "|", i + 2  # (one column: its name over dashes)
        elif _BORDER.fullmatch(below) and i > 0 and _TOP.search(lines[i - 1]):
            sep, first = "|", i + 2  # MySQL's: | id | password | between borders
        else:
            for sep in (",", ";", tab):
                names = line.split(sep)
                if not _NAME.fullmatch(_bare(names[0])):
                    names[0] = _LEAD.sub("", names[0])  # (after a prompt, a name or a JSON string's quote)
                if len(names) > 1 and all(_NAME.fullmatch(_bare(n)) for n in names):
                    break
            else:
                return None
            first = i + 1
        columns = _columns(names if first == i + 1 else line.split(sep))
        return (first, sep, line.count(sep), columns) if columns else None

    @staticmethod
    def _redact(lines: list[str], first: int, sep: str, count: int, columns: dict,
                found: list[str] | None) -> tuple[int, bool]:
        """Each row's secret cells from line ``first`` on, while a row has ``count``
        separators: the line after the last row read, and whether a cell changed."""
        changed, n = False, first
        for n in range(first, min(first + MAX_ROWS, len(lines))):
            row = lines[n]
            if row.count(sep) != count or _BORDER.fullmatch(row):
                return n, changed
            cells = row.split(sep)
            for j, value_re in columns.items():
                lead, value, trail = _CELL.fullmatch(cells[j]).groups()  # type: ignore[union-attr]
                if value and not value.startswith("[REDACTED:") and value_re.fullmatch(value):
                    cells[j] = f"{lead}[REDACTED:secret]{trail}"
                    if found is not None:
                        found.append(value)
                    changed = True
            lines[n] = sep.join(cells)
        return max(n + 1, first), changed


TABLE_PATTERNS = (QueryTable(),)
