"""Secrets found once, hidden everywhere after: a value the detector redacted in one string is
redacted wherever it appears again in the run, even where nothing around it says it is one —
the model's prose repeating it (``I'll set the password to Zq8v…``), a tool's output echoing it
bare (``echo $DB_PASSWORD`` → the value), a later file showing it under another name.

The detector reads each string's shape alone; this is its memory across strings. From each text
a pattern replaced, the candidates (:func:`candidates`: the text, the value it begins with, that
value after its ``key=``/``user:``, each also decoded as JSON, a shell, a URL or base64 would)
that could be a secret and that the detector would not find alone are remembered
(:func:`how_hidden`), none a path, placeholder, identifier or file name: one that could be
generated (8 characters or more, no blank, a letter and a digit) is hidden wherever it stands,
inside a longer word too; one a person may have picked, short (4 to 7 characters, a letter and
a digit or a sign: ``hunter2``, ``p@ss``) or with blanks (a passphrase, ``a b c``, ``correct
horse``; not prose's words after a label, ``ask the admin``: :data:`_PROSE`), only as a whole word or words (not inside ``hunter2x``): shorter, it is as often part
of a word as a secret, and a password said once under its label and echoed bare in a tool's
result leaks as surely as a long one. Only the value a match begins with as a word of its own:
a rule's match may run on past it (to a line's end, over ``,host=…``), and what follows is
ordinary text (a host, a version, a model's name) that hidden everywhere would damage every
later span (the whole match is remembered too, hidden only where the same words come again). A
value the detector finds by its shape (an e-mail, a vendor token) needs no memory and would
only crowd the others out. At most :data:`MAX_VALUES` values are kept, the latest found or met
again (a ``follow`` process lives for days); a value is hidden by exact match, in any string
redacted after it was found (and in the rest of the string it was found in)."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable, Iterable
from urllib.parse import unquote

#: Shortest value hidden wherever it stands, inside a longer word too, in characters: shorter
#: ones are as often part of a word as a secret.
MIN_CHARS = 8
#: Shortest value hidden as a whole word (a password a person picked, ``hunter2``; one with
#: blanks, ``a b c``, counts its blanks): shorter ones are as often a word of prose.
MIN_WORD_CHARS = 4
#: Longest value with blanks remembered, in characters (a passphrase; a match that ran on over
#: a line of prose is no value to look for in every later string)
MAX_SPACED_CHARS = 128
#: Values remembered at most (the latest found or met again are kept; a run finds a few); with
#: all of them a string costs ~4 µs more, 4 ms for one of 256 Ki characters
#: (``bench/redaction.py``).
MAX_VALUES = 64
#: Names spared at most (:meth:`FoundSecrets.spare`: a run's models, a few), the latest kept
MAX_SPARED = 64
#: Longest value remembered, in characters (a PEM key block is ~3 Ki): what is kept stays
#: bounded (at most :data:`MAX_VALUES` × this).
MAX_CHARS = 8192
#: Quotes, blanks and brackets around a match, and the punctuation after it, are not part of
#: its value (``'X'``, ``The password is: X.``).
_AROUND = " \t\r\n\"'`.,;:()[]{}<>"
#: What ends the value a match begins with where a rule's match runs on (a cookie list,
#: ``a=X&b=Y``, ``X,host=…``, a YAML list, the rest of a line)
_SEPARATORS = re.compile(r"[\s,;&|]+|\\[nrt]")
#: A key or user before a value (``sid=X``, ``deploy:X``)
_LABELLED = re.compile(r"^[^=:\s]+[=:](?=[^=])")  # (not base64's padding: ``YW5u==``)
#: Text that names a value rather than being one: a path, a placeholder (``$DB01_PASS``,
#: ``$password``, ``${X}``: the detector's own; ``$uperS3cret99`` is a value), a reference in code
#: (``process.env.GH_TOKEN2``), an identifier (``deploy_ed25519``, ``DB01_PASS``), a file name
_NAMES_A_VALUE = re.compile(
    r"[/~]|(?-i:\$(?:[A-Z0-9_]*+|[a-z_][a-z0-9_]*+)$)|\.\.?/|.*\$[({]"
    r"|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$|[a-z][a-z0-9]*(?:_[a-z0-9]+)+$|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"
    r"|.*\.(?:json|ya?ml|toml|ini|env|pem|key|pub|crt|txt|sh|py|js|ts|go|rs|rb|php|cfg|conf|log)$", re.I)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}")
_MARKER = re.compile(r"\[REDACTED:(\w+)\]")


def candidates(match: str) -> list[str]:
    """The values a text a pattern replaced may hold: the text itself, and the value it begins
    with (up to a separator: :data:`_SEPARATORS`; a rule's match may run on past it), or that
    value's text after its ``key=``, ``user:`` or ``user/``, and one led by ``$`` without it (a
    search for it drops a regex's ``$``: ``grep -rn uperS3cret99``); each trimmed of quotes, brackets
    and the punctuation after it, and each also as it reads with JSON's or a shell's escapes
    read, URL-decoded, base64-decoded (a Kubernetes secret's data, a Basic credential's
    ``user:X``), and with JSON's escapes written (the same value inside a JSON string)."""
    first = next((p for p in (p.strip(_AROUND) for p in _SEPARATORS.split(match)) if p), "")
    found = dict.fromkeys([match.strip(_AROUND), first])
    if _LABELLED.match(first):
        found[_LABELLED.sub("", first, count=1).strip(_AROUND)] = None
    if first.count("/") == 1 and first[0] not in "/~.":
        found[first.partition("/")[2]] = None  # sqlplus's and a credential's user/X
    for value in list(found):
        if value.startswith("$"):  # (searched for, a regex's $ is dropped or escaped: uperS3cret99)
            found[value[1:]] = None
    for value in list(found):
        for other in _decoded(value):
            found[other] = None
            if ":" in other:
                found[other.partition(":")[2]] = None
    for value in list(found):
        if not value.isascii() or '"' in value or "\\" in value:
            found[json.dumps(value)[1:-1]] = found[json.dumps(value, ensure_ascii=False)[1:-1]] = None
        if "/" in value:  # (JSON may escape a solidus too: PHP's json_encode, Go's for </)
            found[json.dumps(value)[1:-1].replace("/", "\\/")] = None
    return [v for v in found if v]


def _decoded(value: str) -> list[str]:
    """``value`` with JSON's escapes read, with a shell's backslashes read, URL-decoded, and
    base64-decoded where it is base64 of printable text: those that differ from it."""
    out = []
    if "\\" in value:
        try:
            out.append(json.loads(f'"{value}"'))
        except ValueError:
            pass
        out.append(re.sub(r"\\(.)", r"\1", value))
    if "%" in value:
        out.append(unquote(value))
    if len(value) % 4 == 0 and _BASE64.fullmatch(value):
        try:
            text = base64.b64decode(value, validate=True).decode()
        except ValueError:
            pass
        else:
            if text.isprintable():
                out.append(text)
    return [v for v in out if v != value]


#: A value a person picked, short or with blanks: letters, digits, blanks and the signs people
#: put in passwords, not first a comment's ``#`` or a tag's ``!``; no quote, bracket, ``=``,
#: ``:``, ``,``, ``;``, ``/`` or ``\\`` (what a match that ran on over code or a list holds:
#: ``config.get("password``, ``Server=db``, ``not set; real=…``)
_PICKED = re.compile(r"(?![#!])[\w \t!@#$%^&*+?~.-]++\Z")
#: ... a sign in a short one, after its first character (``p@ss``, ``abc!``; not a name's ``_ - .``)
_SIGN = re.compile(r".[!@#$%^&*+?~]")
#: A word of prose's grammar: a value with blanks that holds one, and no digit or sign, is what
#: a model wrote after a label (``password: ask the admin``, ``Password: same as prod``), not a
#: passphrase (``correct horse battery staple``); remembered, it would hide those words in every
#: later string. One with a digit or a sign (``corr3ct horse``) is remembered whatever its words
_PROSE = re.compile(r"(?i)(?<![\w'])(?:the|an|as|is|are|be|to|of|in|on|at|by|for|from|with|and|or|not|no|see|ask|same"
                    r"|use|set|your|our|my|its|it|this|that|below|above|here|there|none|via|per|than|if|when)(?![\w'])")
#: Where a value hidden as a whole word may stand: no letter, digit or ``_`` on either side
_WORD = r"(?<!\w){}(?!\w)"
#: How :func:`how_hidden` says a value is hidden
ANYWHERE, WHOLE_WORD = "anywhere", "whole word"


def how_hidden(value: str, reserved: str = "") -> str | None:
    """How ``value`` is hidden once found: :data:`ANYWHERE` where it may be a generated secret
    (:data:`MIN_CHARS` to :data:`MAX_CHARS` characters, no blank, a letter and a digit),
    :data:`WHOLE_WORD` where a person may have picked it (:data:`MIN_WORD_CHARS` characters or
    more, of :data:`_PICKED`'s characters: without a blank, a letter and a digit or a sign; with
    blanks, at most :data:`MAX_SPACED_CHARS`, a letter or a digit), else ``None``: nothing that
    names a value rather than being one (:data:`_NAMES_A_VALUE`: a path, a placeholder, an
    identifier, a file name), no marker, no part of ``reserved`` (the markers' text: hiding it
    would write a marker into a marker)."""
    if not MIN_WORD_CHARS <= len(value) <= MAX_CHARS or "[REDACTED:" in value or value in reserved:
        return None
    if "\0" in value or value != value.strip() or _NAMES_A_VALUE.match(value):
        return None
    letter = any(c.isalpha() for c in value)
    digit = any(c.isdigit() for c in value)
    if any(c.isspace() for c in value):
        if len(value) > MAX_SPACED_CHARS or _PICKED.match(value) is None:
            return None
        if not digit and _SIGN.search(value) is None and _PROSE.search(value) is not None:
            return None  # (prose after a label: "ask the admin", "same as prod")
        return WHOLE_WORD if letter or digit else None
    if letter and digit and len(value) >= MIN_CHARS:
        return ANYWHERE
    if _PICKED.match(value) is None:
        return None
    return WHOLE_WORD if letter and (digit or _SIGN.search(value) is not None) else None


def replaced(before: str, after: str) -> list[tuple[str, str]]:
    """``(value, kind)`` for each marker in ``after`` (``before`` with some of its text
    replaced by markers) where ``before`` held ``value``, each marker aligned at the next
    place the text after it is found; ``[]`` when ``after`` is not such a text."""
    pieces = _MARKER.split(after)  # text, kind, text, kind, ..., text
    first, last = pieces[0], pieces[-1]
    if not (before.startswith(first) and before.endswith(last)) or len(first) + len(last) > len(before):
        return []
    out, pos = [], len(first)
    for k in range(1, len(pieces), 2):
        follows = pieces[k + 1]
        end = len(before) - len(last) if k + 2 == len(pieces) else before.find(follows, pos)
        if end < pos:
            return out
        out.append((before[pos:end], pieces[k]))
        pos = end + len(follows)
    return out


class FoundSecrets:
    """The values found so far → their markers (``[REDACTED:{kind}]``). Hiding tests each
    value as a substring (one hidden as a whole word, then by a regex where it is one) (``bench/redaction.py``: ~0.05 µs a value on a short string, 2 ms a
    value on 256 Ki characters of prose; a multi-literal search such as Hyperscan's scans faster,
    but building it again for each value found costs more than it saves at this size). Safe to
    share between threads."""

    __slots__ = ("markers", "reserved", "found_alone", "learnt", "_words", "_order", "_spared", "_lock")

    def __init__(self, reserved: str = "", found_alone: Callable[[str], bool] = lambda _: False) -> None:
        #: text no value may be part of (:func:`how_hidden`)
        self.reserved = reserved
        #: whether the detector finds a value with nothing around it (then it needs no memory)
        self.found_alone = found_alone
        #: value → marker, the oldest first (this one dict for the object's life: its truth
        #: tells a caller in one C call whether anything is known)
        self.markers: dict[str, str] = {}
        #: values learnt so far, forgotten ones too (a caller compares it before and after)
        self.learnt = 0
        #: value hidden as a whole word → the regex that finds it so
        self._words: dict[str, re.Pattern[str]] = {}
        #: (value, marker, its whole word's regex or None), the longest first: a value inside a
        #: longer one must not leave the rest of it
        self._order: tuple[tuple[str, str, re.Pattern[str] | None], ...] = ()
        #: names never remembered (:meth:`spare`), the oldest first
        self._spared: dict[str, None] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.markers)

    def learn(self, matches: Iterable[str], kind: str) -> int:
        """Remember under ``kind`` each value worth it (:func:`how_hidden`, not found alone) of
        each text in ``matches`` (:func:`candidates`); one met again becomes the latest; the
        oldest beyond :data:`MAX_VALUES` are forgotten. Returns how many were new."""
        new = 0
        markers, words = self.markers, self._words
        for value in (v for match in matches for v in candidates(match)):
            if value in markers:
                with self._lock:
                    if value in markers:
                        markers[value] = markers.pop(value)
                continue
            how = how_hidden(value, self.reserved)
            if how is None or value in self._spared or self.found_alone(value):
                continue
            with self._lock:
                if len(markers) >= MAX_VALUES:
                    words.pop(old := next(iter(markers)), None)
                    del markers[old]
                markers[value] = f"[REDACTED:{kind}]"
                if how == WHOLE_WORD:
                    words[value] = re.compile(_WORD.format(re.escape(value)))
                self.learnt += 1
                self._order = tuple((v, m, words.get(v)) for v, m in sorted(markers.items(), key=lambda item: -len(item[0])))
            new += 1
        return new

    def spare(self, name: str) -> None:
        """Never remember ``name``, and forget it if it was: a model's id the stream itself gives
        (the session's, a call's) is the span's name and its ``gen_ai.*.model`` by design, no
        secret; a rule that took it for one in a file (``api_key: claude-sonnet-4-6``) hides it
        there, and remembered it would hide it in every later span. Only that exact value: a
        text that holds more is learnt as before. The latest :data:`MAX_SPARED` are kept. (A
        string the redactor scanned while the value was remembered keeps that reading while its
        cache holds the string: the pipeline spares a model as the event naming it arrives,
        before the spans that carry it are built.)"""
        if not name or name in self._spared:
            return
        with self._lock:
            if len(self._spared) >= MAX_SPARED:
                del self._spared[next(iter(self._spared))]
            self._spared[name] = None
            if self.markers.pop(name, None) is not None:
                self._words.pop(name, None)
                self._order = tuple(item for item in self._order if item[0] != name)

    def learn_changes(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Remember what each ``(before, after)`` pair's markers replaced (:func:`replaced`):
        a value a JSON document's pass found through its neighbours. Returns how many were new."""
        return sum(self.learn((value,), kind) for before, after in pairs if before != after
                   for value, kind in replaced(before, after))

    def hide(self, text: str) -> str:
        """``text`` with every remembered value replaced by its marker; a value met here
        becomes the latest (the last forgotten)."""
        markers = self.markers
        for value, marker, word in self._order:
            if value in text:
                if word is None:
                    text = text.replace(value, marker)
                else:
                    text, n = word.subn(marker, text)
                    if not n:
                        continue
                with self._lock:
                    if value in markers:
                        markers[value] = markers.pop(value)
        return text


#: A JSON escape of a printable ASCII character (Gson writes ``=`` and ``'`` so, Go's encoder
#: ``<``, ``>`` and ``&``): JSON inside a text, whose secrets only read whole unescaped
_ASCII_ESCAPE = re.compile(r"\\u00([2-7][0-9a-fA-F])")


def unescaped(text: str) -> str | None:
    """``text`` with each ``\\u00XX`` escape of a printable ASCII character as that character
    (``DB_PASSWORD\\u003dx`` → ``DB_PASSWORD=x``), or ``None`` when it has none; the detector
    reads this view for values to remember, then hides them in ``text`` itself."""
    if "\\u00" not in text:
        return None
    view = _ASCII_ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)
    return view if view != text else None
