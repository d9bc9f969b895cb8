"""The secret detector's engine: a :class:`Pattern` (a regular expression compiled at its first
use, a needle pre-test, required substrings, a precheck) and :class:`Needles`, which finds in one
pass which patterns can match a text. The forms themselves are :mod:`otelbridge.secrets`."""

from __future__ import annotations

import re
import threading
from typing import Callable, Iterator

from .literals import literal_database

try:  # optional: wheels for Linux x86-64 (pyproject.toml); plain ``in`` tests do the same work
    import hyperscan
except ImportError:  # pragma: no cover - depends on the platform
    hyperscan = None


class Pattern:
    """One redaction rule: matches of ``regex`` become ``[REDACTED:{kind}]``; the text of the
    group named ``keep`` (a label such as ``Authorization: ``), if any, is kept before it.
    ``regex`` is given as source (compiled at its first use: a run pays only for the patterns
    its strings need, ≤ 1.5 ms each) or compiled. Treat as immutable."""

    __slots__ = ("kind", "needles", "requires", "_source", "_flags", "_regex", "_pre_source",
                 "_pre", "passes")

    def __init__(self, kind: str, regex: str | re.Pattern[str], needles: tuple[str, ...] = (),
                 requires: tuple[tuple[str, ...], ...] = (), flags: int = 0,
                 precheck: str | Callable[[str], bool] | None = None, passes: int = 1) -> None:
        self.kind = kind
        #: passes at most, while one changes the text: a match that needs an earlier part of
        #: the text again (a program's name before each of its flags) finds the next one
        self.passes = passes
        #: lower-case ASCII substrings one of which every match contains (a cheap pre-test, in
        #: any case); empty: none
        self.needles = needles
        #: groups of substrings: every match also contains one substring of each group
        #: (``:`` or ``=``; a line end), tested in any case
        self.requires = requires
        compiled = not isinstance(regex, str)
        self._source = regex.pattern if compiled else regex
        self._flags = regex.flags if compiled else flags
        self._regex: re.Pattern[str] | None = regex if compiled else None
        #: a regex that finds something in every text ``regex`` matches in, searched first:
        #: cheaper where ``regex`` tries a long alternation at every position; or a function
        #: that says whether ``regex`` may match (where even a precheck's scan costs)
        self._pre_source = precheck
        self._pre: re.Pattern[str] | None = None

    @classmethod
    def of(cls, kind: str, needles: tuple[str, ...], regex: str, flags: int = 0,
           requires: tuple[tuple[str, ...], ...] = (), precheck: str | Callable[[str], bool] | None = None,
           passes: int = 1) -> "Pattern":
        return cls(kind, regex, needles, requires, flags, precheck, passes)

    @property
    def regex(self) -> re.Pattern[str]:
        regex = self._regex
        if regex is None:  # two threads may both compile it: the same pattern either way
            regex = self._regex = re.compile(self._source, self._flags)
        return regex

    def __repr__(self) -> str:
        return f"Pattern({self.kind!r}, {self._source!r})"

    def sub(self, text: str, found: list[str] | None = None) -> str:
        """``text`` with each match as this pattern's marker; each text replaced is appended
        to ``found`` when given."""
        if not self._admits(text):
            return text
        marker = f"[REDACTED:{self.kind}]"
        if "keep" in self.regex.groupindex or found is not None:
            return replace(self.regex, text, marker, self.passes, found=found)
        return self.regex.sub(marker, text)

    def _admits(self, text: str) -> bool:
        """False when the precheck finds nothing: no match possible."""
        if self._pre_source is None:
            return True
        if callable(self._pre_source):
            return self._pre_source(text)
        pre = self._pre
        if pre is None:
            pre = self._pre = re.compile(self._pre_source)
        return pre.search(text) is not None


def replace(regex: re.Pattern[str], text: str, marker: str, passes: int = 1,
            view: Callable[[str], str] | None = None, found: list[str] | None = None) -> str:
    """``text`` with each match of ``regex`` (after its group ``keep``, if it took part) as
    ``marker``. ``passes`` > 1: where a match was replaced, ``regex`` is tried again at its
    start, anchored, until one finds nothing (a program's name before each of its flags: the
    next flag). ``view``: ``regex`` reads ``view(text)``, a text of the same length, instead.
    ``found``: each text replaced is appended to it."""
    starts: list[int] | None = None
    keep = "keep" in regex.groupindex
    for _ in range(passes):
        seen = text if view is None else view(text)
        matches = (regex.finditer(seen) if starts is None
                   else [m for m in map(regex.match, (seen,) * len(starts), starts) if m is not None])
        parts: list[str] = []
        done = shift = 0
        starts = []
        for m in matches:
            start = m.start()
            if start < done:  # tried again inside another's match: that one was found first
                continue
            cut, end = max(m.end("keep") if keep else -1, start), m.end()
            if found is not None:
                found.append(text[cut:end])
            parts += (text[done:cut], marker)
            starts.append(start + shift)
            shift += len(marker) - (end - cut)
            done = end
        if not parts:
            break
        text = "".join(parts) + text[done:]
    return text


#: A quote, also an escaped one (an argv inside a JSON string); blanks, also escaped line ends
_QUOTE = r"\\*[\"']"
_BLANKS = r"(?:\s|\\[nrt])*+"
#: Two quoted elements or more, comma-separated: an argv array or tuple (JSON, Python's repr,
#: either escaped); an element in its own quotes (``"it's"`` among ``'``-quoted ones)
_ARGV = re.compile(r"(?:(?P<a>" + _QUOTE + r")(?:(?!(?P=a))[^\r\n])*+(?P=a)" + _BLANKS + "," + _BLANKS
                   + r")+(?P<b>" + _QUOTE + r")(?:(?!(?P=b))[^\r\n])*+(?P=b)")
#: An element quoted whole (its quote: group ``q``, its text: ``text``); with a separator, the
#: parts of an argv
_ELEMENT = r"(?P<q>" + _QUOTE + r")(?P<text>(?:(?!(?P=q))[^\r\n])*+)(?P=q)"
_ARGV_PART = re.compile(_ELEMENT + "|" + _BLANKS + "," + _BLANKS)
#: What a command line would read as a word's end in an element's text
_WORD_BREAKS = str.maketrans(" \t|;&", "_____")


def _as_command_line(argv: str) -> str:
    """An argv array's text as a command line of the same length: quotes and separators as
    blanks, an element's blanks and shell operators as ``_`` (each element one word)."""
    return _ARGV_PART.sub(_element_as_word, argv)


def _element_as_word(part: re.Match[str]) -> str:
    quote = part.group("q")
    if quote is None:
        return " " * len(part.group())
    return " " * len(quote) + part.group("text").translate(_WORD_BREAKS) + " " * len(quote)


class ViewPattern(Pattern):
    """``pattern`` (a command line's rule, with a ``keep`` group) applied to :meth:`parts` of
    a text read through :meth:`view`, a text of the same length: what the rule matches there
    is replaced in the text, so one rule serves another form of the same command.
    ``precheck``: as :class:`Pattern`'s, searched in the text itself. Subclasses give
    :meth:`parts`, :meth:`view` and ``holds``, what a text must also hold."""

    __slots__ = ("inner",)
    holds: tuple[str, ...] = ()

    def __init__(self, pattern: Pattern, precheck: str | None = None) -> None:
        # a needle of words ("create secret") is its first word: the view's words are quoted
        needles = tuple(dict.fromkeys(n.split()[0] for n in pattern.needles))
        super().__init__(pattern.kind, pattern._source, needles, pattern.requires + (self.holds,),
                         pattern._flags, precheck, pattern.passes)
        self.inner = pattern

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    def parts(self, text: str) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each part the view applies to, in order, none overlapping."""
        raise NotImplementedError

    @staticmethod
    def view(part: str) -> str:
        raise NotImplementedError

    def sub(self, text: str, found: list[str] | None = None) -> str:
        if not self._admits(text):
            return text
        rule, marker, passes = self.inner.regex, f"[REDACTED:{self.kind}]", self.passes
        out, done = [], 0
        for start, end in self.parts(text):
            seen = text[start:end]
            redacted = replace(rule, seen, marker, passes, self.view, found)
            if redacted is not seen:
                out += (text[done:start], redacted)
                done = end
        return "".join(out) + text[done:] if out else text


class InArgv(ViewPattern):
    """A command line's rule applied to argv arrays: ``["sshpass", "-p", "X"]`` is read as
    ``sshpass -p X`` (quotes and separators as blanks, each element one word)."""

    __slots__ = ()
    holds = (",",)
    view = staticmethod(_as_command_line)

    def parts(self, text: str) -> Iterator[tuple[int, int]]:
        return (m.span() for m in _ARGV.finditer(text))


#: A line end, real or escaped (a file's text inside JSON); a line's text up to one
_EOL = r"(?:\r?\n|(?:\\r)?\\n)"
_LINE_TEXT = r"(?:[^\r\n\\]|\\++(?![nr]))*+"
#: A line's number as a file reader shows it (``    24→``, ``24\t``)
_LINE_NUMBER = r"(?:[ \t]*+\d{1,7}+(?:→|\t|\\t))?+"
#: A YAML block sequence of two items or more at one indent, each ``- item`` on its own line
#: (numbered too), blank and comment lines between them; group ``i``: the indent
_YAML_ITEMS = re.compile(r"(?:^|(?<=\\n))" + _LINE_NUMBER + r"(?P<i>[ \t]*+)-[ \t]++" + _LINE_TEXT
                         + r"(?:(?:" + _EOL + _LINE_NUMBER + r"[ \t]*+(?:#" + _LINE_TEXT + r")?(?=" + _EOL + r"))*+"
                         + _EOL + _LINE_NUMBER + r"(?P=i)-[ \t]++" + _LINE_TEXT + r")++", re.M)
#: One line of a sequence: its line end, number and indent (``lead``), then an item's dash and
#: text, or a blank or comment line's text
_YAML_LINE = re.compile(r"(?P<lead>(?:" + _EOL + r"|^)" + _LINE_NUMBER + r"[ \t]*+)(?:(?P<dash>-[ \t]++)(?P<item>"
                        + _LINE_TEXT + r")|" + _LINE_TEXT + ")")
#: An item quoted whole (also escaped quotes), then what follows it (a comment)
_QUOTED_ITEM = re.compile(_ELEMENT)
#: A comment after an unquoted item
_ITEM_COMMENT = re.compile(r"[ \t]++#")


def _item_as_word(line: re.Match[str]) -> str:
    """One line of a sequence as part of a command line of the same length: its line end,
    indent and dash, a comment or a blank line as blanks; a quoted item as one word
    (:func:`_element_as_word`), an unquoted one of several words (a list's prose:
    ``- Prompt for the token``) led by ``|``, which no flag takes for its value."""
    item = line.group("item")
    if item is None:
        return " " * len(line.group())
    out = " " * (len(line.group("lead")) + len(line.group("dash")))
    quoted = _QUOTED_ITEM.match(item)
    if quoted is not None:
        return out + _element_as_word(quoted) + " " * (len(item) - quoted.end())
    comment = _ITEM_COMMENT.search(item)
    text = item if comment is None else item[:comment.start()]
    words = text.rstrip()
    if (" " in words or "\t" in words) and not words.startswith("-"):
        words = "|" + words[1:]
    return out + words + " " * (len(item) - len(words))


def _items_as_command_line(items: str) -> str:
    """A YAML block sequence's text as a command line of the same length (:func:`_item_as_word`)."""
    return _YAML_LINE.sub(_item_as_word, items)


class InYamlList(ViewPattern):
    """A command line's rule applied to a YAML block sequence (a container's ``args:``):
    ``- --client-secret`` then ``- X`` is read as ``--client-secret X``."""

    __slots__ = ()
    holds = ("\n", "\\n")
    view = staticmethod(_items_as_command_line)

    def parts(self, text: str) -> Iterator[tuple[int, int]]:
        return (m.span() for m in _YAML_ITEMS.finditer(text))


#: A shell word quoted whole that is a flag: ``mysql '-pX' db``, ``xfreerdp "/p:X"``, also at a
#: JSON string's end
_QUOTED_FLAG = re.compile(r"(?<![^\s=])(?P<q>\\*[\"'])(?P<text>[-/](?:(?!(?P=q))[^\r\n])*+)(?P=q)"
                          r"(?=[\s;|&)]|\\[nrt]|\\*\"|\Z)")  # (a shell's word: not an argv's element)


def _flags_unquoted(text: str) -> str:
    """``text`` with each flag quoted whole as a plain word of the same length (its quotes as
    blanks, its blanks as ``_``)."""
    return _QUOTED_FLAG.sub(_element_as_word, text)


#: Characters before a quoted flag where its program's name may stand (the command-line rules
#: look 300 back at most)
COMMAND_BEFORE = 400


class WithFlagsUnquoted(ViewPattern):
    """``pattern`` applied to a command line whose flags are quoted whole (``mysql '-pX'``,
    ``7z a "-pX Y"``) as if they were not."""

    __slots__ = ()
    view = staticmethod(_flags_unquoted)
    holds = (" '-", ' "-', ' \\"-', " '/", ' "/', ' \\"/', "='-", '="-', "\t'-", '\t"-')

    def __init__(self, pattern: Pattern) -> None:
        super().__init__(pattern, precheck=_QUOTED_FLAG.pattern)

    def parts(self, text: str) -> Iterator[tuple[int, int]]:
        """The command around each quoted flag: from its line's start (a real or escaped line
        end), at most :data:`COMMAND_BEFORE` characters back to a blank, to the flag's end."""
        done = 0
        for m in _QUOTED_FLAG.finditer(text):
            escaped = text.rfind("\\n", 0, m.start())
            line = max(text.rfind("\n", 0, m.start()) + 1, escaped + 2 if escaped >= 0 else 0)
            start = max(line, m.start() - COMMAND_BEFORE)
            if start > line:  # (from a blank: not inside a word)
                start = max(text.rfind(" ", line, start), line)
            yield max(start, done), m.end()
            done = m.end()


def _collect(needle: int, _start: int, _end: int, _flags: int, found: list[int]) -> None:
    found.append(needle)


#: The non-ASCII letters ``re`` matches to an ASCII one in a case-blind regex (Kelvin sign,
#: long s, dotted and dotless i) → that letter: the needle pass reads a text with them folded,
#: so that a key spelt with them (``api_\u212aey``) still admits the patterns that redact it.
_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _folded(text: str) -> str:
    """A text beyond ASCII as the needle pass reads it: :data:`_FOLDS`' letters folded, then
    lower-cased (Cyrillic's and Greek's capitals too: Hyperscan folds ASCII letters alone).
    Only its literals matter, not its length. (``str.translate`` of every such text cost
    ~150–300 µs for 1.5 KB; a test for each of the four letters, then ``lower``, ~10.)"""
    if "\u0130" in text or "\u0131" in text or "\u017f" in text or "\u212a" in text:
        text = text.translate(_FOLDS)
    return text.lower()


def _one_case(literal: str) -> bool:
    """Whether a text read as :func:`_folded` reads it holds ``literal`` in every case it was
    written in: its letters beyond ASCII have no case, or are small ones that capitals lower-case
    to (not Greek's sigma at its end, which a word's end makes final). An ASCII letter in any:
    Hyperscan's caseless flag."""
    return not literal.endswith(("σ", "ς")) and all(c.isascii() or c.lower() == c.upper()
                                                     or c == c.upper().lower() for c in literal)

#: Sets of literals found that :class:`Needles` remembers the admitted patterns of, at most.
MAX_CANDIDATE_SETS = 4096


class Needles:
    """Which of ``patterns`` can match a text. With Hyperscan (SIMD multi-literal search, ~1 µs
    whatever the length) one pass finds every needle and every required substring (both case
    blind: a required one found in another case only admits a pattern whose regex then finds
    nothing); each distinct set found is resolved to the patterns it admits once. Without it,
    one ``in`` test per needle, then per admitted pattern's required substring, on the
    lower-cased text. Thread-safe."""

    def __init__(self, patterns: tuple[Pattern, ...]) -> None:
        admits: dict[str, list[int]] = {}
        for i, pattern in enumerate(patterns):
            for needle in pattern.needles:
                admits.setdefault(needle, []).append(i)
        self.patterns = patterns
        self.needles = tuple(admits)
        self.admits = [tuple(v) for v in admits.values()]
        self.always = tuple(i for i, p in enumerate(patterns) if not p.needles)
        #: what Hyperscan looks for: the needles (match id = index in ``needles``), then each
        #: required substring, lower-cased, that is not one of them
        literals = {n: i for i, n in enumerate(self.needles)}
        for pattern in patterns:
            for group in pattern.requires:
                for r in group:
                    literals.setdefault(r.lower(), len(literals))
        #: each pattern's required substrings, lower-cased (tested as the needles are)
        self._requires = [tuple(tuple(r.lower() for r in g) for g in p.requires) for p in patterns]
        #: a required substring → its match id
        self._id = {r: literals[r.lower()] for p in patterns for g in p.requires for r in g}
        #: the match ids found (sorted) → the patterns they admit, requirements met
        self._resolved: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._db = None
        self._lock = threading.Lock()
        # (a literal beyond ASCII only in one case: Hyperscan folds ASCII letters alone)
        if hyperscan is not None and literals and all(_one_case(s) and "\0" not in s for s in literals):
            try:
                self._db = literal_database(
                    tuple(s.encode() for s in literals),
                    hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_CASELESS)
            except hyperscan.error:  # pragma: no cover - a CPU it does not run on
                pass

    def wanted(self, text: str) -> tuple[int, ...]:
        """Indices of the patterns that can match ``text``, in order."""
        if not text.isascii():
            text = _folded(text)
        if self._db is None:
            lowered = text.lower()
            admitted = set(self.always)
            for i, needle in enumerate(self.needles):
                if needle in lowered:
                    admitted.update(self.admits[i])
            requires = self._requires
            return tuple(i for i in sorted(admitted)
                         if all(any(r in lowered for r in group) for group in requires[i]))
        found: list[int] = []
        with self._lock:  # a Hyperscan database's scratch space serves one scan at a time
            self._db.scan(text.encode("utf-8", "surrogatepass"),
                          match_event_handler=_collect, context=found)
        found.sort()
        key = tuple(found)
        out = self._resolved.get(key)
        if out is None:
            out = self._resolve(key)
            if len(self._resolved) < MAX_CANDIDATE_SETS:
                self._resolved[key] = out
        return out

    def _resolve(self, found: tuple[int, ...]) -> tuple[int, ...]:
        admitted = set(self.always)
        needles = len(self.needles)
        for i in found:
            if i < needles:
                admitted.update(self.admits[i])
        present, ids, patterns = set(found), self._id, self.patterns
        return tuple(i for i in sorted(admitted)
                     if all(any(ids[r] in present for r in group) for group in patterns[i].requires))


class PatternError(ValueError):
    """A ``--redact`` regex that cannot be used; the message says which and why."""


def custom_pattern(regex: str) -> Pattern:
    """``--redact REGEX`` → a :class:`Pattern` of kind ``custom`` (a group named ``keep``,
    e.g. ``(?P<keep>ticket=)[0-9]+``, is kept before the marker).

    Raises :class:`PatternError` when ``regex`` does not compile or matches the empty string
    (it would put a marker between every two characters)."""
    try:
        compiled = re.compile(regex)
    except re.error as exc:
        # (the regex is not quoted: it may hold the very secret it is to hide)
        raise PatternError(f"--redact: not a valid regular expression: {exc}") from None
    if compiled.fullmatch("") is not None:
        raise PatternError("--redact: a regex that matches the empty string")
    return Pattern("custom", compiled)
