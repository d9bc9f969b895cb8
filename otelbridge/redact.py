"""What may leave: every string otelbridge exports, shows or writes passes through here.

The stream carries secrets and untrusted text (the cbc workflow protocol §9: the reply to
``initialize`` holds ``account.token``, a JWT, the enterprise id and the user's email;
``workflow_name``, ``label`` and ``resultPreview`` may hold user input or model output). Traces
travel to backends many people read, so every exported string is, in this order:

1. **sanitised** — ANSI escape sequences removed; C0/C1 control characters become spaces
   (newlines too, after step 2, where ``key: value`` ends at the line's end); Unicode bidi
   overrides and zero-width characters removed;
2. **redacted** — each match of :data:`DEFAULT_PATTERNS` (unless ``--no-default-redaction``) and
   of every ``--redact REGEX`` is replaced by a marker naming its kind, ``[REDACTED:jwt]``;
3. **home directories** shown as ``~`` (``/home/NAME``, ``/Users/NAME``, ``/root``,
   ``C:\\Users\\NAME``), and every value a pattern replaced earlier in the run replaced by its
   marker wherever it appears (:mod:`otelbridge.found_secrets`);
4. **capped** — at most ``max_length`` characters (``--max-attribute-length``, default 256, and
   ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``; :data:`VOCABULARY` and span names at 64 at the
   least); a cut string ends in ``…``.

Redaction runs on the whole string *before* the cap: a cap never leaves a secret's prefix. A string
longer than :data:`SCAN_MAX_CHARS` never leaves (:meth:`Redactor.scan` gives ``None``). Each
distinct string is scanned once (a bounded cache). The detector is :mod:`otelbridge.secrets`.

:func:`clean` and :func:`span_name` use the :class:`Redactor` :func:`install` sets at start. The
span builder (``otelbridge.spans``) is the one boundary: every name, attribute, event, link and
status description of a span record passes through it. Text for people goes through
:func:`terminal` (waterfall) or :func:`markdown` (step summary); endpoints we print through
:func:`endpoint`; log lines through :func:`message`; files we write are opened with
:func:`open_private` (mode 0600).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from typing import Any
from urllib.parse import unquote

from .escape import ESCAPES, INVISIBLE, plain
from .found_secrets import FoundSecrets, unescaped
from .json_doc import JSON_ATTRIBUTES, MAX_DEPTH, decode_pairs, depth, fit, from_context, string_pairs
from .json_doc import cap as _cap
from .json_doc import strings as _json_strings
from .secret_patterns import Needles, Pattern, PatternError, custom_pattern
from .secret_keys import FLAG_VALUE, secret_numbers
from .secrets import DEFAULT_PATTERNS, names_a_secret

__all__ = ["DEFAULT_PATTERNS", "Pattern", "PatternError", "custom_pattern"]  # re-exported

#: C0/C1 control characters except tab and line ends, and the Unicode line/paragraph
#: separators → a space (line ends become spaces after redaction: ``key: value`` ends there).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
_LINE_ENDS = re.compile(r"[\r\n]")

#: Default cap for exported strings, in characters.
DEFAULT_MAX_LENGTH = 256
#: Cap for span names, in characters (real agent labels are the first words of their prompt).
SPAN_NAME_MAX = 64
#: Attributes the views classify spans by (operation, state, usage source): a lower
#: ``max_length`` cuts them at :data:`SPAN_NAME_MAX` (what is exported: the SDK's limit).
VOCABULARY = frozenset({"gen_ai.operation.name", "session.usage.source", "workflow.status",
                        "workflow.agent.state"})
#: Cap for one line of ours on stderr, in characters.
MESSAGE_MAX = 1000


#: Home directories → ``~`` (a path segment that starts the path, not ``/var/home``).
_HOME = (
    re.compile(r"(?<![\w~/.-])(?:/home|/Users)/[^/\s\"'<>:;,|]+"),
    re.compile(r"(?<![\w~/.-])/root(?=/|\Z|[\s\"'<>:;,|])"),
    re.compile(r"\b[A-Za-z]:\\Users\\[^\\\s\"'<>:;,|]+", re.I),
)


def _sanitise(text: str) -> str:
    """``text`` without escape sequences, invisible characters and controls other than tab,
    ``\\r`` and ``\\n`` (which :meth:`Redactor.scan` turns into spaces after redaction)."""
    if plain(text):
        return text
    if "\x1b" in text:
        text = ESCAPES.sub("", text)
    text = _CONTROL.sub(" ", text)
    # every invisible character (bidi controls, zero-width, tags, fillers...): what a view
    # would hide must not split a secret the detector then misses
    return INVISIBLE.sub("", text)


def home(text: str, lowered: str | None = None) -> str:
    """``text`` with home directories shown as ``~`` (``/home/ann/x`` → ``~/x``)."""
    if "/" not in text and "\\" not in text:  # every home directory form has one
        return text
    lowered = text.lower() if lowered is None else lowered
    if any(n in lowered for n in ("/home/", "/users/", "/root", ":\\users\\")):
        for rx in _HOME:
            text = rx.sub("~", text)
    return text


#: Strings longer than this (characters) are not scanned but dropped from export (``None``,
#: :data:`DROPPED`): a scan costs ~0.3 µs a character on prose full of key words, ~5 µs on
#: ``pass:a`` lines (``bench/redaction.py``): at most ~1.2 s a string, linear in its length.
SCAN_MAX_CHARS = 256 << 10
#: What :meth:`Redactor.clean` gives for a string it did not scan.
DROPPED = "[REDACTED:too_long]"
#: The scan cache: at most this many strings, of at most this many characters in all (keys
#: and results), the oldest forgotten first; longer strings than
#: :data:`MEMO_MAX_CHARS` are scanned each time.
MEMO_ENTRIES = 8192
MEMO_TOTAL_CHARS = 4 << 20
MEMO_MAX_CHARS = 256 << 10


class _Memo:
    """Text → its scanned form, bounded by :data:`MEMO_ENTRIES` and :data:`MEMO_TOTAL_CHARS`,
    the oldest entries forgotten first. A hit is one ``dict`` lookup (labels, model names and
    keys repeat on every span). Safe to share between threads (a lost race costs a rescan, never a wrong answer)."""

    __slots__ = ("items", "chars")

    def __init__(self) -> None:
        self.items: dict[str, str] = {}
        self.chars = 0

    def put(self, text: str, out: str) -> None:
        size = len(text) + len(out)
        if len(text) > MEMO_MAX_CHARS or text in self.items:
            return
        items = self.items
        while items and (len(items) >= MEMO_ENTRIES or self.chars + size > MEMO_TOTAL_CHARS):
            # the oldest eighth in one pass: a dict's first live entry is found by stepping over
            # the slots of those popped before it, so one at a time costs O(entries) each
            try:
                for old in list(islice(items, max(1, len(items) >> 3))):
                    self.chars -= len(old) + len(items.pop(old, ""))
            except RuntimeError:  # another thread changed it: its own put made room
                break
        items[text] = out
        self.chars += size


class Redactor:
    """What may leave, immutable (:meth:`build`): ``patterns`` in order; ``max_length`` caps :meth:`clean`."""

    __slots__ = ("patterns", "max_length", "only_defaults", "found", "_known", "_memo", "_needles",
                 "_keys", "_flags", "_probes")

    def __init__(self, patterns: tuple[Pattern, ...] = DEFAULT_PATTERNS,
                 max_length: int = DEFAULT_MAX_LENGTH) -> None:
        self.patterns = patterns
        self.max_length = max_length
        #: the default patterns and no others (none of them needs the words before a string's
        #: first word to find a secret after it; a ``--redact`` regex may)
        self.only_defaults = patterns == DEFAULT_PATTERNS
        #: each distinct string is scanned once: its sanitised and redacted form (:class:`_Memo`)
        self._memo = _Memo()
        #: which patterns can match a text, in one pass (:class:`Needles`), made at the first scan
        self._needles: Needles | None = None
        #: attribute keys known to be clean (at most :data:`MEMO_ENTRIES`)
        self._keys: set[str] = set()
        #: the default patterns apply: so does the flag rule of sequences (:func:`_flag_values`)
        self._flags = set(DEFAULT_PATTERNS) <= set(patterns)
        #: every value redacted so far, hidden in every string after (:mod:`otelbridge.found_secrets`)
        self.found = FoundSecrets(" ".join(f"[REDACTED:{p.kind}]" for p in patterns),
                                  lambda value: "[REDACTED:" in self._detect(value))
        #: its values (a dict: empty, the common case, is one C call to tell)
        self._known = self.found.markers
        #: (JSON key, listed) → whether digits under it are redacted (:meth:`_names_a_secret_key`)
        self._probes: dict[tuple[str, bool], bool] = dict(_COUNTED) if self.only_defaults else {}

    @classmethod
    def build(
        cls,
        extra: Iterable[str] = (),
        *,
        defaults: bool = True,
        max_length: int | None = None,
    ) -> "Redactor":
        """Default patterns (unless ``defaults`` is false) plus each ``--redact`` regex in
        ``extra``; ``max_length`` defaults to :data:`DEFAULT_MAX_LENGTH`.
        Raises :class:`PatternError` on a bad regex."""
        patterns = (DEFAULT_PATTERNS if defaults else ()) + tuple(custom_pattern(r) for r in extra)
        return cls(patterns, max_length if max_length is not None else DEFAULT_MAX_LENGTH)

    def redact(self, text: str, learn: bool = True) -> str:
        """``text`` with every pattern's matches as markers, home directories as ``~``, then every
        value found so far (:attr:`found`, which learns this text's matches and its ``unescaped``
        view's unless ``learn`` is false); no sanitising, no cap, no length bound (:meth:`scan`)."""
        if learn and (view := unescaped(text)) is not None:
            self._detect(view, [])
        text = home(self._detect(text, [] if learn else None))
        # (after home: the text a cache hit's is hidden in, so the same either way)
        return self.found.hide(text) if self._known else text

    def _detect(self, text: str, matched: list[str] | None = None) -> str:
        """``text`` with every pattern's matches replaced by markers; each text replaced is
        learnt (:attr:`found`) when ``matched`` is a list (a scratch one, left empty)."""
        patterns = self.patterns
        needles = self._needles
        if needles is None:
            needles = self._needles = Needles(patterns)
        for i in needles.wanted(text):
            text = patterns[i].sub(text, matched)
            if matched:
                self.found.learn(matched, patterns[i].kind)
                matched.clear()
        return text

    def scan(self, text: str, keep: bool = True) -> str | None:
        """``text`` sanitised and redacted (:meth:`redact`) whole, not capped; ``None`` when over
        :data:`SCAN_MAX_CHARS` (drop it). Each distinct string is scanned once while the cache
        (:class:`_Memo`) holds it; one it made by joining lines is its own scan (joined, it
        may read as a form its lines kept apart). ``keep`` false: neither enters the cache (a
        string read once, whose entry would only push others out of it)."""
        out = self._memo.items.get(text)
        if out is None:
            if len(text) > SCAN_MAX_CHARS:
                return None
            out = self.redact(_sanitise(text))
            put = self._memo.put if keep else (lambda _text, _out: None)
            if "\n" in out or "\r" in out:
                put(out := _LINE_ENDS.sub(" ", out), out)
            put(text, out)
        elif self._known:  # scanned before a value it holds was found elsewhere
            out = self.found.hide(out)
        return out

    def learn(self, text: str, keep: bool = False) -> None:
        """Read ``text`` for the secrets it shows (:attr:`found` remembers them) as :meth:`scan`
        would; ``keep``: its reading stays in the cache (content exported later, with
        ``--capture-content``; content never exported would only push that out of it)."""
        if keep:
            self.scan(text)
        elif len(text) <= SCAN_MAX_CHARS and self._memo.items.get(text) is None:
            text = _sanitise(text)
            if (view := unescaped(text)) is not None:
                self._detect(view, [])
            self._detect(text, [])

    def scrub(self, text: str) -> str:
        """:meth:`scan`, with :data:`DROPPED` for a string too long to scan."""
        return DROPPED if (out := self.scan(text)) is None else out

    def clean(self, text: Any, limit: int | None = None) -> str:
        """``text`` sanitised, redacted, home directories as ``~``, at most ``limit``
        characters (default: this redactor's ``max_length``; a cut string ends in ``…``), the
        cut made after redaction. Non-strings are converted with ``str`` first; ``None`` gives
        ``""``; a string too long to scan gives :data:`DROPPED`."""
        if text is None:
            return ""
        if not isinstance(text, str):
            text = str(text)
        text = self.scrub(text)
        return _cap(text, self.max_length if limit is None else min(limit, self.max_length))

    def span_name(self, prefix: str, text: str | None, fallback: str) -> str:
        """``"{prefix} {text}"`` with ``text`` sanitised and redacted (``fallback`` when
        nothing is left), the whole name at most :data:`SPAN_NAME_MAX` characters (whatever
        ``max_length`` is)."""
        body = self.scan(text or "")
        body = (body or "").strip() or fallback
        return _cap(f"{prefix} {body}", SPAN_NAME_MAX)

    def operation_name(self, op: str, subject: str) -> str:
        """``"{op} {subject}"`` with ``subject`` alone sanitised and redacted (:data:`DROPPED`
        when too long to scan), at most :data:`SPAN_NAME_MAX` characters: a span name whose
        first word, ``op``, is ours."""
        body = self.scan(subject)
        return _cap(f"{op} {DROPPED if body is None else body}", SPAN_NAME_MAX)

    def name(self, text: str) -> str:
        """A span or event name made safe: sanitised, redacted on its whole length, then at
        most :data:`SPAN_NAME_MAX` characters. Idempotent on :meth:`span_name` output."""
        return _cap(self.scrub(text), SPAN_NAME_MAX)

    def json_text(self, text: str, limit: int) -> str | None:
        """A JSON document's text (:data:`JSON_ATTRIBUTES`) as it may leave: every string in
        it sanitised and redacted on its whole length (one too long to scan left out), then the
        document's text redacted as a whole where that leaves it JSON, for what only the
        strings around a value tell (``{"password": "x"}``, ``["--token", "x"]``: a string
        that pass changes as it would alone keeps its own redaction; a document too long for
        that pass, each member alone), then fitted to ``limit`` characters
        (:func:`otelbridge.json_doc.fit`: its long strings cut to one length, then the last
        items of its first list of several left out); ``None`` when nothing fits or it nests deeper than
        :data:`~otelbridge.json_doc.MAX_DEPTH`. Keys are sanitised and redacted as strings are.
        Text that is not JSON is treated as any string (:meth:`clean`)."""
        import msgspec

        try:
            doc = msgspec.json.decode(text)
        except msgspec.DecodeError:
            scanned = self.scan(text)
            return None if scanned is None else _cap(scanned, limit)
        if depth(doc) > MAX_DEPTH:
            return None
        doc = _json_strings(doc, self.scan, self.scrub)  # keys too: an invisible character splits none
        return fit(self._in_context(secret_numbers(doc, self._names_a_secret_key)), limit)

    def _in_context(self, doc: Any) -> Any:
        """``doc`` (decoded JSON, its strings redacted) after its text's pass; where a match ran
        past a string's closing quote (no value: the result is no JSON), each member of an
        object, or each object or list in a list, is passed alone instead."""
        import msgspec

        out = msgspec.json.encode(doc).decode()
        if len(out) <= SCAN_MAX_CHARS:  # (longer: its parts, each alone)
            whole = self.redact(out, learn=False)  # (what it finds is learnt where it is kept)
            if whole == out:
                return doc
            try:
                kept = from_context(doc, decode_pairs(whole), self._alone)
            except ValueError:  # no JSON: a match ran past a string's end
                pass
            else:
                self.found.learn_changes(string_pairs(doc, kept))
                return kept
        if isinstance(doc, dict) and len(doc) > 1:
            members: dict[str, Any] = {}
            for key, value in doc.items():
                members.update(self._in_context({key: value}))
            return members
        if isinstance(doc, dict):  # (its keys were redacted alone before: json_text)
            return {k: self._in_context(v) if isinstance(v, (dict, list)) else v for k, v in doc.items()}
        if isinstance(doc, list):
            return [self._in_context(v) if isinstance(v, (dict, list)) else v for v in doc]
        return doc

    def _alone(self, text: str) -> str | None:
        """What the document's pass makes of the JSON string ``text`` with no document around
        it (``None``: no longer one JSON string)."""
        import msgspec

        try:
            out = msgspec.json.decode(self.redact(msgspec.json.encode(text).decode(), learn=False))
        except msgspec.DecodeError:
            return None
        return out if isinstance(out, str) else None

    def _names_a_secret_key(self, key: str, listed: bool) -> bool:
        """Whether a JSON value under ``key`` is redacted when it is a string of digits, or
        (``listed``) a list of one (a number under such a key is a secret too:
        ``{"password": 98765432}``, ``{"passwords": [98765432]}``)."""
        known = self._probes.get((key, listed))
        if known is None:
            probe = ('{"%s": ["%s"]}' if listed else '{"%s": "%s"}') % (key.replace('"', ""), "86420975")
            # (not learnt: the probe's digits are no one's secret)
            known = len(probe) <= SCAN_MAX_CHARS and "[REDACTED:" in self._detect(_sanitise(probe))
            if len(self._probes) < MEMO_ENTRIES:
                self._probes[(key, listed)] = known
        return known

    def _named(self, key: str) -> bool:
        """Whether the attribute ``key`` may name what its value is: a dotted part of it names
        a secret (``input.password``, ``password.value``; a number under it would be one), or
        it is the ``value`` of a name/value pair (``env.value`` beside ``env.name``)."""
        parts = str(key).split(".")
        return parts[-1] in ("value", "Value") or any(self._names_a_secret_key(p, False) for p in parts)

    def _under_its_name(self, key: str, value: str | int | float,
                        attrs: Mapping[str, Any]) -> str | int | float:
        """``value`` as the JSON pass leaves it in the object its dotted ``key`` flattened
        (``{"password": "…"}``, ``{"password": {"value": 98765432}}``, ``{"env": {"name":
        "GITHUB_TOKEN", "value": "…"}}`` with its ``name`` from ``attrs``: hidden;
        ``{"pass_rate": "0.95"}``: kept); a string too long to scan as it is."""
        *outer, name = str(key).split(".")
        if isinstance(value, str):
            scanned = self.scan(value)
            if scanned is None:
                return value
            value = scanned
        inner: dict[str, Any] = {name: value}
        if name in ("value", "Value") and outer:
            pair = attrs.get(".".join((*outer, "name" if name == "value" else "Name")))
            if isinstance(pair, str):
                inner["name" if name == "value" else "Name"] = pair
        doc: Any = inner
        for part in reversed(outer):
            doc = {part: doc}
        doc = self._in_context(secret_numbers(doc, self._names_a_secret_key))
        for part in outer:
            doc = doc.get(part) if isinstance(doc, dict) else None
        return doc.get(name, value) if isinstance(doc, dict) else value

    def attributes(self, attrs: Mapping[str, Any] | None) -> dict[str, Any]:
        """``attrs`` with every key cleaned as a name, every string value — and every string in
        a sequence value — sanitised and redacted on its whole length, then capped at
        ``max_length`` (:data:`VOCABULARY`'s at :data:`SPAN_NAME_MAX` at the least); a string too
        long to scan is left out (an attribute) or dropped from its sequence; a string or number
        under a key that may name a secret (``env.GITHUB_TOKEN``) as in the JSON object it
        flattened (:meth:`_under_its_name`). Numbers and booleans as they are."""
        out: dict[str, Any] = {}
        if not attrs:
            return out
        scan, limit, keys = self.scan, self.max_length, self._keys
        known = self._memo.items if not self._known else {}  # (scan hides what was found since)
        for key, value in attrs.items():
            kind = type(value)  # exact types first: one test for the common values
            if key not in keys and (kind is str or kind is int or kind is float) and value != "" \
                    and self._named(key):  # (a key from the stream: env.API_TOKEN)
                value = self._under_its_name(key, value, attrs)
                kind = type(value)
            if kind in _NUMBERS:
                pass
            elif kind is str or isinstance(value, str):
                if key in JSON_ATTRIBUTES:
                    value = self.json_text(value, limit)
                    if value is None:
                        continue
                else:
                    value = known.get(value) or scan(value)
                    if value is None:
                        continue
                    if len(value) > limit:
                        value = _cap(value, max(limit, SPAN_NAME_MAX) if key in VOCABULARY else limit)
            elif isinstance(value, (list, tuple)):
                value = [v for v in (_cap(scan(v) or "", limit) if isinstance(v, str) else v
                                     for v in (_flag_values(value, self.redact, self.found)
                                               if self._flags else value))
                         if v != ""]
            if key not in keys:  # attribute keys are few and mostly ours: remembered when clean
                safe_key = self.name(str(key))
                if safe_key == key and len(keys) < MEMO_ENTRIES and not self._named(key):
                    keys.add(key)
                key = safe_key
            out[key] = value
        return out


_NUMBERS = frozenset({int, bool, float})
#: Our keys' parts with a key word that name no secret, as the default rules' probe says (its
#: first run compiles the key/value rules: most of a short session's CPU)
_COUNTED = tuple(((p, False), False) for p in ("input_tokens", "output_tokens", "total_tokens", "tokens",
                 "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", "event_key", "call_key"))
#: Join a command line's arguments for the one-string rules: a space, as typed, or where an
#: argument holds one, a character they also take for whitespace (some rules' needles then miss).
_ARG_SEPS = (" ", "\x1f")


def _flag_values(args: list[Any] | tuple[Any, ...], redact: Callable[[str], str],
                 found: FoundSecrets) -> list[Any] | tuple[Any, ...]:
    """``args`` (a command line, or any sequence) with what an argument holds only through the
    ones before it replaced by a marker, which each element alone cannot tell: the argument
    after a flag that names a secret (``--password X``, ``--api-key X``:
    :func:`~otelbridge.secrets.names_a_secret`), unless it is a flag itself, and what ``redact``
    finds in the line the arguments make (``sshpass -p X``, ``curl -u u:X``, ``mysql -pX``).
    A value hidden after its flag is remembered in ``found``."""
    out = list(args)
    for i, a in enumerate(args[:-1]):
        if isinstance(a, str) and names_a_secret(a) and isinstance(out[i + 1], str) \
                and not out[i + 1].startswith("-"):
            found.learn((out[i + 1],), "secret")
            out[i + 1] = FLAG_VALUE
    sep = next((s for s in _ARG_SEPS if all(type(a) is str and s not in a for a in out)), None)
    # (a line too long to scan is not joined: its arguments are each scanned, or dropped)
    if sep is not None and 1 < len(out) <= 64 and sum(map(len, out)) + len(out) <= SCAN_MAX_CHARS:
        parts = redact(sep.join(out)).split(sep)
        if len(parts) == len(out):  # (a rule that took several arguments: each alone decides)
            out = parts
    return out if out != list(args) else args


_current = Redactor()


def install(redactor: Redactor) -> Redactor:
    """Make ``redactor`` the process-wide one used by :func:`clean`, :func:`span_name`,
    :func:`terminal`, :func:`markdown` and :func:`message`; returns the previous one (tests restore it)."""
    global _current
    previous, _current = _current, redactor
    return previous


def current() -> Redactor:
    """The process-wide :class:`Redactor`."""
    return _current


def clean(text: Any, limit: int | None = None) -> str:
    """:meth:`Redactor.clean` of the installed redactor: every exported string goes through
    this (attributes, event attributes, status descriptions)."""
    return _current.clean(text, limit)


def span_name(prefix: str, text: str | None, fallback: str) -> str:
    """:meth:`Redactor.span_name` of the installed redactor: every span name goes through this."""
    return _current.span_name(prefix, text, fallback)


# --------------------------------------------------------------------------- text for people


def terminal(text: Any, limit: int | None = None, *, markup: bool = False) -> str:
    """Untrusted text for a terminal (the waterfall): :func:`clean` — no escape sequences, no
    control characters, secrets redacted. With ``markup=True`` also escaped for rich console
    markup (``[bold]`` in a label shows literally); pass ``markup=False`` text to
    ``rich.text.Text``."""
    text = clean(text, limit)
    if markup:
        from rich.markup import escape

        text = escape(text)
    return text


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
#: ASCII punctuation with a meaning in GitHub-flavoured Markdown (emphasis, links, tables,
#: headings, lists, code, math ``$``, emoji ``:x:``, mentions ``@``, autolinks ``://``).
_MD_PUNCT = set("\\`*_{}[]()#+-.!|~^$:@")


def markdown(text: Any, limit: int | None = None) -> str:
    """Untrusted text for Markdown with inline HTML (the GitHub step summary): :func:`clean`,
    then ``& < > " '`` as HTML entities and Markdown punctuation backslash-escaped, so the text
    renders literally — no links, images, HTML, mentions, table breaks or headings. Safe in a
    table cell and in running text (not inside a code span: use plain :func:`clean` there)."""
    out = []
    for ch in clean(text, limit):
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch in _MD_PUNCT:
            out.append("\\" + ch)
        elif ch == "\t":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


# --------------------------------------------------------------------------- our own messages


#: The ``@`` that ends a URL's ``user:pass`` (a password may hold ``@ / ? #`` and blanks: the
#: last ``@`` with a host after it); before it, a user without ``? #``, ``:`` and a password, or
#: a token alone (``https://host/?next=a@b`` has no credentials)
_USERINFO_END = re.compile(r"@(?=[A-Za-z0-9.\[\]:%_-]*(?:[/?#]|\Z))")
_USERINFO = re.compile(r"/*(?:[^?#:@]*:.*|[^/?#:]*)\Z", re.S)


def endpoint(url: str | None, secrets: Iterable[str] = ()) -> str:
    """An endpoint fit to print: without ``user:pass@``, query string or fragment
    (``https://u:p@host:4318/v1/traces?key=x`` → ``https://host:4318/v1/traces``), then as
    :func:`message` shows a line with ``secrets`` (a token pasted as the endpoint is redacted)."""
    if not url:
        return ""
    # by text: a URL parser that cannot parse it (``[::1``) or reads ``dns:///u:p@host`` as a path
    scheme, sep, rest = url.partition("://")
    if not sep:  # host:port, as gRPC takes it
        scheme, rest = "", url
    lead = rest[:len(rest) - len(rest.lstrip("/"))]  # dns:///host keeps its third slash
    ends = [m.end() for m in _USERINFO_END.finditer(rest) if _USERINFO.match(rest, 0, m.start())]
    if ends:  # the credentials first: a password's '#' or '?' is no fragment or query
        rest = rest[ends[-1]:]
    host, slash, path = rest.split("?", 1)[0].split("#", 1)[0].lstrip("/").partition("/")
    return message(scheme + sep + lead + host + slash + _PATH_TOKEN.sub("[REDACTED:path]", path), secrets)


#: An endpoint's path segment holding a run of 16 or more of ``\w+=``, two digits and two letters
#: among them: a token (a Sumo Logic source's URL has one; not ``ap-southeast-2``, ``prometheus2024``)
_PATH_TOKEN = re.compile(r"(?<![^/])(?=[^/]*?(?=(?:[A-Za-z+=_]*\d){2})(?=(?:[\d+=_]*[A-Za-z]){2})[\w+=]{16})(?!\[REDACTED:)[^/]+(?![^/])")


_URL_TAIL = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*")
#: a path's query without the scheme and host (the HTTP exporter's ``url: /v1/traces?code=...``)
_PATH_QUERY = re.compile(r"((?<![\w.~%+/:-])/[\w.~%+/-]*)\?[^\s'\"]*")
#: ``user:pass@host`` without a scheme (how the gRPC exporter names its target)
_BARE_USERINFO = re.compile(r"(?<![\w.:/@-])(?!REDACTED:)[\w.~%+-]+:[^\s/@]+@(?=[A-Za-z0-9.\[-])")


def header_secrets(*values: str | None) -> list[str]:
    """The strings to mask from ``OTEL_EXPORTER_OTLP_*HEADERS`` values (``k=v,k2=v2``): each
    whole value, each ``k=v`` item, each ``v`` raw and URL-decoded, and each word of 8+
    characters in ``v`` (``Bearer TOKEN`` → ``TOKEN``); longest first."""
    found: set[str] = set()
    for raw in values:
        if not raw or not raw.strip():
            continue
        found.add(raw.strip())
        for item in raw.split(","):
            item = item.strip()
            found.add(item)
            value = item.partition("=")[2].strip()
            for v in (value, unquote(value)):
                found.add(v)
                found.update(w for w in v.split() if len(w) >= 8)
    return sorted((s for s in found if len(s) >= 4), key=len, reverse=True)


def message(text: str, secrets: Iterable[str] = ()) -> str:
    """One line of ours (or of a library's log record) fit for stderr: each of ``secrets``
    (see :func:`header_secrets`) replaced by ``[REDACTED:header]``, query strings and
    credentials cut from URLs, then :func:`clean` at :data:`MESSAGE_MAX` characters."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "[REDACTED:header]")
    text = _PATH_QUERY.sub(r"\1", _URL_TAIL.sub(r"\1", text))
    text = _BARE_USERINFO.sub("[REDACTED:url_credentials]@", text)
    return _cap(_current.scrub(text), MESSAGE_MAX)


# --------------------------------------------------------------------------- files we write
