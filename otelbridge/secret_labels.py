"""Secrets under a label of words (:mod:`otelbridge.secrets` adds :data:`LABEL_PATTERNS` to its
forms): what a program prints for people or a JSON document keys in words, rather than a
variable's name — ``Access Key: X`` / ``Secret Key: Y`` (MinIO's ``mc admin user svcacct add``),
``API Key: X``, ``api key = X``, ``{"API Key": "X"}``, ``Client Secret: X``, ``Refresh Token: X``.

A label is an adjective the key words of :mod:`otelbridge.secret_keys` also read joined
(``ACCESS_KEY``, ``clientSecret``) and its noun, one blank between them; its value is read as a
key's is (:func:`~otelbridge.secret_keys._key_value`: to the line's end after ``: ``, to its
closing quote when quoted). Not ``Access Key ID`` (an id names the key), nor a word before the
adjective that makes it another thing (``primary key: id``: ``primary`` is not an adjective here).
"""

from __future__ import annotations

from .secret_keys import _key_value
from .secret_patterns import Pattern
from .secret_tokens import AFTER_ESCAPE

#: The labels, case-blind: one blank between the words; nothing of a word before (but an
#: escape's letter: a line of text inside JSON) or after
_LABEL = (
    r"(?:(?<![\w.-])|" + AFTER_ESCAPE + r")(?i:"
    r"(?:secret(?:[ ]access)?|access|api|private|client|account|master|encryption|signing|session|auth"
    r"|app(?:lication)?|license|subscription|shared|storage|service[ ]account)[ ]key(?![ ]?(?i:id)\b)"
    r"|(?:access|auth|api|refresh|bearer|session|personal[ ]access|bot|app|id)[ ]token"
    r"|(?:client|app(?:lication)?|api|shared|webhook|signing)[ ]secret"
    r"|(?:app|application|db|database|admin|root|user|account)[ ]password"
    r")(?![\w-])"
)

LABEL_PATTERNS = (
    Pattern.of("secret", ("key", "token", "secret", "password"), _key_value(_LABEL),
               requires=((" ",), (":", "=")),
               # (a key's closing quote, blanks, line ends, escaped ones, "is": then : or =)
               precheck=r"(?i)(?:key|token|secret|password)\\*[\"']?(?:\s|\\+[rn]|is|was)*[:=]"),
)
