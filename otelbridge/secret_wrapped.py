"""A token hard-wrapped across two lines: a terminal, a CLI or a model wrapping its output at a
fixed width cuts a long key at the line's end (``sk-ant-api03-…`` to column 80, its tail
starting the next line). The patterns before find the first part (a vendor's prefix, a label, a
key, also cut short) and leave its marker ending the line; :data:`WRAPPED_PATTERNS`, last of
:data:`otelbridge.secrets.DEFAULT_PATTERNS`, take the tail after it.

The tail is read only where the marker ends its line, nothing between them (a wrap leaves no
blank), and the next line starts, unindented, with a word that looks generated: 16 characters or
more with capitals, small letters and digits, 24 or more of small letters and digits, 20 or more
of hex digits or capitals and digits, or 8 or more of capitals, small letters and two digits
(the last of a wrapped key is often short) — no name, words run together, UUID, path or
sentence: ``Store it safely.``, ``OPENAI_API_KEY=…``, ``ResetPassword2024``, ``./deploy.sh``,
``OAuth2Token`` on the next line stay, and so do a commit's SHA, a SHA-256, npm's integrity, an
Anthropic id, an Ethereum address and an image's base64. A tail of fewer than 8 characters is left (nothing in its
shape tells it from the next word), and so is one a pattern's marker does not end the line
before: a key none of them finds cut (``the key is X``, its first part alone).
"""

from __future__ import annotations

import re

from .secret_labels import _NOT_A_NAME
from .secret_patterns import Pattern

#: A line's end, real or escaped (a document's string, also escaped again)
_EOL = r"(?:\r?\n|(?:\\+r)?\\+n)"
#: ... the tail (base64's padding after it), not a name nor words run together (``ResetPassword2024``, ``TokenRefreshHandler``):
#: as :data:`_GENERATED` reads a word, no UUID (an id after a line's secret), or 8 characters or
#: more with two capitals, a small letter and two digits, no run of five small letters
#: (``Version2024Qa``)
_WORD = r"[\w+/-]"
#: ... nor a digest or an id a line starts with: a git commit's SHA (40 hex digits), a SHA-256
#: (64, as ``sha256sum`` prints it), npm's integrity (``sha512-…``), Anthropic's ids (``msg_01…``,
#: ``req_01…``, ``toolu_01…``), an Ethereum address (``0x…``), an image's base64 (PNG's
#: ``iVBORw0KGgo``, GIF's ``R0lGOD``): taken, each would be learned and hidden in every string
#: after (``Merged <sha> into main``)
_NOT_AN_ID = (r"(?![0-9a-f]{40}(?![\w+/=-])|[0-9a-f]{64}(?![\w+/=-])|sha(?:1|256|384|512)-"
              r"|(?:msg|req|toolu|srvtoolu|file|batch|msgbatch|compl)_01|0x[0-9a-fA-F]|iVBORw0KGgo|R0lGOD)")
_TAIL = (_NOT_A_NAME + _NOT_AN_ID + r"(?!" + _WORD + r"*?(?:[A-Z][a-z]{3,}+){2})"
         r"(?:(?=" + _WORD + r"*[0-9])(?=" + _WORD + r"*[A-Z])(?=" + _WORD + r"*[a-z])" + _WORD + r"{16,}+"
         r"|(?=[a-z]*[0-9])(?=[0-9]*[a-z])(?:[a-f0-9]{20,}+(?![a-z0-9])|[a-z0-9]{24,}+)"
         r"|(?=[A-Z]*[0-9])(?=[0-9]*[A-Z])[A-Z0-9]{20,}+"
         r"|(?!" + _WORD + r"*?[a-z]{5})(?=(?:" + _WORD + r"*?[A-Z]){2})(?=" + _WORD + r"*?[a-z])(?=(?:" + _WORD
         + r"*?[0-9]){2})" + _WORD + r"{8,}+)={0,2}")
#: ... where it ends: a blank, a line's end, a quote, a sentence's or a list's mark, the end
_TAIL_END = r"(?=[.,;)\]}]?(?:\s|\\+[nrt\"']|[\"'`]|\Z))"
_WRAPPED = (r"(?P<keep>\[REDACTED:(?!email\])[a-z0-9_]++\]" + _EOL + r")(?!\[REDACTED:)" + _TAIL + _TAIL_END)

_after_marker = re.compile(r"\[REDACTED:[a-z0-9_]++\]" + _EOL + r"[\w+/=-]{8}")


def _marker_ends_a_line(text: str) -> bool:
    """... for :data:`_WRAPPED`: a marker before a line's end and 8 characters of a word (the
    marker is the patterns' before: no needle of the text as it came tells of it)."""
    return "[REDACTED:" in text and _after_marker.search(text) is not None


WRAPPED_PATTERNS = (
    Pattern.of("secret", (), _WRAPPED, requires=(("\n", "\\n"),), precheck=_marker_ends_a_line),
)
