"""What may leave: every string otelbridge exports, shows or writes passes through here.

The stream carries secrets and untrusted text (seed 000 §9: the reply to ``initialize`` holds
``account.token``, a JWT, the enterprise id and the user's email; ``workflow_name``, ``label`` and
``resultPreview`` may hold user input or model output). Traces travel to backends many people
read, so every exported string is, in this order:

1. **sanitised** — ANSI escape sequences removed; C0/C1 control characters (newlines included)
   become spaces; Unicode bidi overrides and zero-width characters removed;
2. **redacted** — each match of :data:`DEFAULT_PATTERNS` (unless ``--no-default-redaction``) and
   of every ``--redact REGEX`` is replaced by a marker naming its kind, ``[REDACTED:jwt]``;
3. **home directories** shown as ``~`` (``/home/NAME``, ``/Users/NAME``, ``/root``,
   ``C:\\Users\\NAME``);
4. **capped** — at most ``max_length`` characters (``--max-attribute-length``, default 256, and
   ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``); a cut string ends in ``…``. Span names at 64.

Redaction runs on the whole string *before* the cap, so a cap can never cut a secret in half and
leave a prefix the patterns no longer recognise.

Call sites stay simple: :func:`clean` and :func:`span_name` use the process-wide
:class:`Redactor` that :func:`install` sets once at startup (``otelbridge.app``). The span
builder (``otelbridge.spans``) passes every name, attribute, event, link and status description
through it once more, so a tracker part that forgets a call cannot leak (``clean`` is idempotent). Text for
people goes through :func:`terminal` (waterfall) or :func:`markdown` (GitHub step summary);
endpoints we print through :func:`endpoint`; log lines through :func:`message`; files we write
are opened with :func:`open_private` (mode 0600).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import unquote, urlsplit, urlunsplit

#: CSI / OSC / other ESC sequences.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
#: C0/C1 control characters except tab, and the Unicode line/paragraph separators → a space.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
#: Bidi embeddings/overrides/isolates and zero-width characters (Trojan Source) → removed.
_INVISIBLE = re.compile(r"[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")

#: Default cap for exported strings, in characters.
DEFAULT_MAX_LENGTH = 256
#: Cap for span names, in characters (issue 8: real agent labels are the prompt's first words).
SPAN_NAME_MAX = 64
#: Cap for one line of ours on stderr, in characters.
MESSAGE_MAX = 1000


@dataclass(frozen=True, slots=True)
class Pattern:
    """One redaction rule: matches of ``regex`` become ``[REDACTED:{kind}]``; the text of the
    group named ``keep`` (a label such as ``Authorization: ``), if any, is kept before it."""

    kind: str
    regex: re.Pattern[str]
    #: lower-case substrings one of which every match contains (a cheap pre-test); empty: none
    needles: tuple[str, ...] = ()

    @classmethod
    def of(cls, kind: str, needles: tuple[str, ...], regex: str, flags: int = 0) -> "Pattern":
        return cls(kind, re.compile(regex, flags), needles)

    def wanted(self, lowered: str) -> bool:
        """Whether ``lowered`` (the text in lower case) can hold a match."""
        return not self.needles or any(n in lowered for n in self.needles)

    def sub(self, text: str) -> str:
        marker = f"[REDACTED:{self.kind}]"
        if "keep" not in self.regex.groupindex:
            return self.regex.sub(marker, text)
        return self.regex.sub(lambda m: (m.group("keep") or "") + marker, text)


#: A value in ``key: value`` / ``"key": "value"`` / ``key=value`` text.
_ASSIGN = r"""["']?\s*[:=]\s*["']?"""

#: AWS access key id prefixes (user, temporary, role, ... keys), lower case.
_AWS_PREFIXES = ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka")

#: The default patterns, in the order they apply (earlier kinds win on overlapping text).
DEFAULT_PATTERNS: tuple[Pattern, ...] = (
    # PEM/PGP private key blocks; an unterminated block (a cut preview) runs to the end
    Pattern.of(
        "private_key",
        ("private key",),
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        re.S,
    ),
    # user:pass@ (or token@) in URLs: scheme and host are kept
    Pattern.of("url_credentials", ("://",), r"(?P<keep>\b[a-z][a-z0-9+.-]*://)[^\s/?#@\[\]]+(?=@)", re.I),
    # Authorization: <scheme> <value>, "authorization": "...", authorization=...
    Pattern.of(
        "authorization",
        ("authorization",),
        r"(?P<keep>\b(?:proxy-)?authorization" + _ASSIGN + r")"
        r"(?!\[REDACTED:)(?:(?:bearer|basic|token|digest|negotiate)\s+)?[^\s\"',;]+",
        re.I,
    ),
    Pattern.of("bearer", ("bearer",), r"(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}", re.I),
    # JWTs (a base64url JSON header starts with eyJ), also cut ones of one or two segments
    Pattern.of("jwt", ("eyj",), r"eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){0,2}"),
    Pattern.of("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{8,}"),
    Pattern.of("api_key", ("sk-",), r"\bsk-[A-Za-z0-9_-]{16,}"),
    Pattern.of(
        "aws_access_key",
        _AWS_PREFIXES,
        r"(?<![A-Z0-9])(?:" + "|".join(p.upper() for p in _AWS_PREFIXES) + r")[A-Z0-9]{16}",
    ),
    Pattern.of(
        "aws_secret_key",
        ("aws_secret_access_key",),
        r"(?P<keep>\baws_secret_access_key" + _ASSIGN + r")[A-Za-z0-9/+=]{40}\b",
        re.I,
    ),
    Pattern.of(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    # password: x, "token": "x", api_key=x, client_secret=x ...
    Pattern.of(
        "secret",
        ("password", "passwd", "pwd", "secret", "key", "token"),
        r"(?P<keep>\b(?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?token|"
        r"auth[_-]?token|refresh[_-]?token|token)" + _ASSIGN + r")(?!\[REDACTED:)[^\s\"',;&]{4,}",
        re.I,
    ),
    Pattern.of("email", ("@",), r"\b[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]{2,}"),
)

#: Home directories → ``~`` (a path segment that starts the path, not ``/var/home``).
_HOME = (
    re.compile(r"(?<![\w~/.-])(?:/home|/Users)/[^/\s\"'<>:;,|]+"),
    re.compile(r"(?<![\w~/.-])/root(?=/|\Z|[\s\"'<>:;,|])"),
    re.compile(r"\b[A-Za-z]:\\Users\\[^\\\s\"'<>:;,|]+", re.I),
)


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
        raise PatternError(f"--redact {regex!r} is not a valid regular expression: {exc}") from None
    if compiled.fullmatch("") is not None:
        raise PatternError(f"--redact {regex!r} matches the empty string")
    return Pattern("custom", compiled)


def _sanitise(text: str) -> str:
    if text.isprintable():  # no control, separator or format character: nothing to do
        return text
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = _CONTROL.sub(" ", text)
    return _INVISIBLE.sub("", text)


def _cap(text: str, limit: int) -> str:
    if len(text) > limit:
        return text[: max(limit - 1, 0)] + "…"
    return text


def home(text: str, lowered: str | None = None) -> str:
    """``text`` with home directories shown as ``~`` (``/home/ann/x`` → ``~/x``)."""
    lowered = text.lower() if lowered is None else lowered
    if any(n in lowered for n in ("/home/", "/users/", "/root", ":\\users\\")):
        for rx in _HOME:
            text = rx.sub("~", text)
    return text


#: :meth:`Redactor.scrub` remembers strings up to this long (characters), this many at most.
MEMO_MAX_CHARS = 256
MEMO_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class Redactor:
    """One configuration of what may leave. Immutable; build with :meth:`build`.

    ``patterns`` apply in order; ``max_length`` caps :meth:`clean` (characters).
    """

    patterns: tuple[Pattern, ...] = DEFAULT_PATTERNS
    max_length: int = DEFAULT_MAX_LENGTH
    #: short strings already scrubbed → their sanitised and redacted form
    #: (:data:`MEMO_MAX_CHARS`, :data:`MEMO_ENTRIES`): labels, model names and ids repeat on
    #: every span, and the span builder cleans what the tracker already cleaned
    _memo: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

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

    def redact(self, text: str) -> str:
        """``text`` with every pattern's matches replaced by markers, and home directories as
        ``~``; no sanitising, no cap."""
        lowered = text.lower()
        for pattern in self.patterns:
            if pattern.wanted(lowered):
                text = pattern.sub(text)
        return home(text, lowered)

    def scrub(self, text: str) -> str:
        """``text`` sanitised and redacted (:meth:`redact`), not capped. Strings of at most
        :data:`MEMO_MAX_CHARS` characters are remembered (at most :data:`MEMO_ENTRIES`, then
        forgotten all at once): the same text always gives the same result, computed once."""
        if len(text) > MEMO_MAX_CHARS:
            return self.redact(_sanitise(text))
        memo = self._memo
        out = memo.get(text)
        if out is None:
            out = self.redact(_sanitise(text))
            if len(memo) >= MEMO_ENTRIES:
                memo.clear()
            memo[text] = out
        return out

    def clean(self, text: Any, limit: int | None = None) -> str:
        """``text`` sanitised, redacted, home directories as ``~``, at most ``limit``
        characters (default: this redactor's ``max_length``; a cut string ends in ``…``).
        Non-strings are converted with ``str`` first; ``None`` gives ``""``."""
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
        body = self.scrub(text or "").strip() or fallback
        return _cap(f"{prefix} {body}", SPAN_NAME_MAX)

    def name(self, text: str) -> str:
        """A finished span name made safe again: sanitised, redacted, at most
        :data:`SPAN_NAME_MAX` characters. Idempotent on :meth:`span_name` output."""
        return _cap(self.scrub(text), SPAN_NAME_MAX)

    def attributes(self, attrs: Mapping[str, Any] | None) -> dict[str, Any]:
        """``attrs`` with every string value, and every string in a sequence value, passed
        through :meth:`clean`; numbers and booleans as they are. Keys are ours and kept."""
        out: dict[str, Any] = {}
        if not attrs:
            return out
        memo, limit = self._memo, self.max_length
        for key, value in attrs.items():
            if isinstance(value, str):
                value = memo.get(value) or self.scrub(value)  # scrub's memo, looked up here
                if len(value) > limit:
                    value = _cap(value, limit)
            elif isinstance(value, (list, tuple)):
                value = [self.clean(v) if isinstance(v, str) else v for v in value]
            out[key] = value
        return out


_current = Redactor()


def install(redactor: Redactor) -> Redactor:
    """Make ``redactor`` the process-wide one used by :func:`clean`, :func:`span_name`,
    :func:`terminal`, :func:`markdown` and :func:`message`; returns the previous one (tests
    restore it)."""
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


def endpoint(url: str | None) -> str:
    """An endpoint fit to print: without ``user:pass@``, query string or fragment
    (``https://u:p@host:4318/v1/traces?key=x`` → ``https://host:4318/v1/traces``)."""
    if not url:
        return ""
    if "://" in url:
        try:
            parts = urlsplit(url)
            netloc = parts.netloc.rpartition("@")[2]
            url = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        except ValueError:
            url = url.split("?", 1)[0].split("#", 1)[0]
    else:  # host:port, as gRPC takes it
        url = url.rpartition("@")[2].split("?", 1)[0].split("#", 1)[0]
    return _sanitise(url)


_URL_TAIL = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*")
#: ``user:pass@host`` without a scheme (how the gRPC exporter names its target)
_BARE_USERINFO = re.compile(r"(?<![\w.:/@-])[\w.~%+-]+:[^\s/@]+@(?=[A-Za-z0-9.\[-])")


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
    text = _BARE_USERINFO.sub("[REDACTED:url_credentials]@", _URL_TAIL.sub(r"\1", text))
    return _cap(_current.scrub(text), MESSAGE_MAX)


# --------------------------------------------------------------------------- files we write


def open_private(path: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8") -> IO:
    """Open ``path`` for writing (``mode`` ``w``, ``a``, ``wb`` or ``ab``) with permissions
    0600: created so, and an existing regular file tightened to 0600 before it is truncated
    (``w``) or appended to (``a``). FIFOs and character devices (``/dev/stderr``) are left
    as they are. Raises ``OSError`` (``PermissionError`` when an existing file is not ours to
    ``chmod``) and ``ValueError`` on another ``mode``."""
    if mode not in ("w", "a", "wb", "ab"):
        raise ValueError(f"open_private mode must be w, a, wb or ab, not {mode!r}")
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    if "a" in mode:
        flags |= os.O_APPEND
    fd = os.open(path, flags, 0o600)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if stat.S_IMODE(st.st_mode) & 0o177:
                os.fchmod(fd, 0o600)
            if "w" in mode:
                os.ftruncate(fd, 0)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
    except BaseException:
        os.close(fd)
        raise
