"""Short secrets where the text leaves no doubt a value follows (:mod:`otelbridge.secrets` adds
:data:`SHORT_PATTERNS` to its forms): a secret's name marked as Markdown marks a name (bold,
italic or code: ``**Password**: X``, ``**API key:** X``, ``\\`DB_PASSWORD\\` = \\`X\\```, ``The
\\`DB_PASSWORD\\` is \\`X\\```), a table row's name cell (``| DB_PASS | X |``) or a label of
words (``API key: X``), then a word of 7 to 64 characters a person or a tool may have picked:
a letter and a digit, and a sign (``Kx8#mq2``) or capitals and small letters mixed with two
digits, one between letters (``Pq8vLm3nPw``, ``Aa1tbl2``).

:mod:`otelbridge.secret_labels` asks more of a value there (12 characters, or a sign and 8):
its names are also documentation's, and what it takes is remembered and hidden everywhere
after. The shape here is still no word of prose, a version, an algorithm or a class
(``see below``, ``required``, ``Ed25519``, ``Python3``, ``HS256``, ``OAuth2``, ``v1.2.3``,
``PBKDF2SHA256PasswordHasher``): letters then digits alone, the commonest names' shape, are not
taken. Also a PIN said so (``PIN: 4821``), a shell variable ending in ``_SALT``, ``_PEPPER``
or ``_SIGNING`` (``HMAC_SALT=X``, ``JWT_SIGNING=X``), and a passphrase in quotes after ``the
passphrase is`` (blanks in it: ``'corr3ct horse'``).
"""

from __future__ import annotations

import re

from .secret_labels import (_CLASS_NAME, _LABEL, _MD_NAME, _MD_WORDS, _NOT_A_NAME, _NOT_A_REFERENCE, _NOT_A_SETTING, _SEPARATOR,
                            _W, _YEAR, _followed_by)
from .secret_patterns import Pattern

#: A short value's characters: no blank, quote, bracket, cell bar, ``:``, ``/`` (a URL, a
#: path, a hash's ``sha256:`` prefix), ``*`` (a masked value: ``sk-proj-****1234``) or ``,`` ``;``
_SW = r"[^\s`\"'|\\,;:()<>\[\]{}/*]"
#: The value (see the module's text); each look-ahead bounded to 64 characters (a long word
#: repeated is read once from each start, not to its end)
_SHORT = (
    r"(?!" + _CLASS_NAME + _YEAR + r"(?![\w+/=]))" + _NOT_A_SETTING + _NOT_A_REFERENCE + _NOT_A_NAME
    + r"(?![$%{<~.*#!=-])"
    + r"(?!" + _SW + r"{0,64}?(?:[0-9]\.[0-9]|@[\w-]{1,64}\.))"  # (a version, an address)
    + r"(?=" + _SW + r"{0,63}?[0-9])(?=" + _SW + r"{0,63}?[A-Za-z])"
    + r"(?:(?=" + _SW + r"{1,63}?[!@#$%^&+=?~])"
    + r"|(?=" + _SW + r"{0,63}?[a-z])(?=" + _SW + r"{0,63}?[A-Z])(?=" + _SW + r"{0,62}?[A-Za-z][0-9]{1,8}[A-Za-z])"
    + r"(?=(?:" + _SW + r"{0,63}?[0-9]){2}))"
    + _SW + r"{7,64}+"
)
#: ... then the value's end: a blank, a line's end (also escaped), the string's, a sentence's mark
_END = r"(?=[.,;:)!?]?(?:\s|\\[nrt]|\\*\"|\Z))"
#: A secret's name: :data:`~otelbridge.secret_labels._MD_NAME`'s, or ``PASS`` after a
#: variable's word (``DB_PASS``, ``smtp_pass``; not ``First pass``)
_NAME = r"(?:" + _MD_NAME + r"|(?i:[a-z][a-z0-9]{0,20}+_pass))(?![\w.-])"
_MARKED = (
    r"(?P<keep>(?:(?:(?<![" + _W + r"*`])|(?<=\\[nrt]))(?P<e>\*\*|__|`|\*)" + _NAME
    + r"(?:(?P=e)[ \t]*+(?:\([^()\r\n]{1,40}+\)[ \t]*+)?(?:[:=\u2192]|->|=>|(?<=[ ])(?i:is|was)(?=[ ]))|[ \t]*+:(?P=e))"
    # (a table row's cell: the name, then the next cell)
    r"|(?<=\|)[ \t]*+(?P<c>\*\*|`)?" + _NAME + r"(?(c)(?P=c))[ \t]*+\|(?P<row>))"
    r"[ \t]*+(?:\*\*)?(?P<q>`|\\*[\"'])?)(?!\[REDACTED:)"
    + _SHORT + r"(?(q)(?=(?P=q))|(?(row)(?=[ \t]*+\|)|" + _END + "))"
)
#: A PIN said so, 4 to 8 digits: ``PIN`` in capitals (``pin: 18``, a board's GPIO pin, stays),
#: a variable's (``SIM_PIN=4821``) or ``PIN code`` in any case. Digits alone are never
#: remembered (:func:`otelbridge.found_secrets.how_hidden`): no later number is hidden for it
_PIN = (
    r"(?P<keep>(?<![" + _W + r".$-])(?:(?:[A-Z][A-Z0-9]{0,20}_)?PIN(?:_?CODE)?|(?i:pin[ _-]?code))"
    r"(?:[ \t]*+[:=][ \t]*+|[ ](?i:is)[ ])(?P<q>\\*[\"'`])?)(?!\[REDACTED:)[0-9]{4,8}(?![0-9])"
    r"(?(q)(?=(?P=q))|(?![.,:/-]?[A-Za-z0-9]))"
)
#: A shell or env file's variable in capitals ending in ``_SALT``, ``_PEPPER`` or ``_SIGNING``
#: (``HMAC_SALT=X``, ``JWT_SIGNING=X``) set to a word of 6 or more with a letter and a digit or
#: a sign, as :data:`~otelbridge.secret_labels._ENV_KEY` reads ``*_KEY=``; not an algorithm's
#: name (``JWT_SIGNING=HS256``, ``RS256``), a path, a variable
_ENV_WORD = r"[^\s\"'`\\;&|<>()]"
_ENV_SALT = (
    r"(?P<keep>(?<![" + _W + r"$.-])[A-Z][A-Z0-9_]{0,40}?_(?:SALT|PEPPER|SIGNING)(?:_?[0-9]{1,2})?=(?P<q>\\*[\"'])?)"
    r"(?!\[REDACTED:)(?![$/~.])(?![A-Z]{2,5}[0-9]{3}(?![\w.-]))" + _NOT_A_NAME
    + r"(?(q)(?=[^\"'\r\n\\]{0,200}[A-Za-z])(?=[^\"'\r\n\\]{0,200}[0-9!@#$%^&*+=?~])[^\"'\r\n\\]{6,200}+(?=(?P=q))"
    r"|(?=" + _ENV_WORD + r"{0,200}[A-Za-z])(?=" + _ENV_WORD + r"{0,200}[0-9!@#$%^&*+=?~])" + _ENV_WORD + r"{6,}+)"
)
#: ``the passphrase is 'corr3ct horse'``: in quotes, blanks too (a passphrase has them), a
#: letter and 6 to 128 characters (``the passphrase is 'optional'``: taken, it is one)
_PASSPHRASE = (
    r"(?P<keep>(?<![" + _W + r".-])(?i:pass(?:phrase|word))(?:[ ](?i:is|was|set[ ]to))[ ](?P<q>\\*[\"'`]))"
    r"(?!\[REDACTED:)(?![$%{<])(?=[^\"'`\r\n\\]{0,128}?[ ])(?=[^\"'`\r\n\\]{0,128}?[A-Za-z])"
    r"[^\"'`\r\n\\]{6,128}+(?=(?P=q))"
)

#: Pre-tests (each found with ``str.find``; both rules ran on most strings that name a key, +6 µs
#: a string in ``bench/redaction.py``): after a name's word, its marks and a separator, a word
#: of 7 with a digit among its first 64 characters
_marked_value = _followed_by(_MD_WORDS, r"(?i:word|wd|phrase|s)?(?:\*\*|__|`|\*)?[ \t]*+(?:\([^()\r\n]{1,40}\)[ \t]*+)?"
                                        r"(?:[:=|\u2192]|->|=>|(?i:is|was)[ ])(?:\*\*|__|`|\*)?[ \t]*+(?:\*\*)?(?:`|\\*[\"'])?"
                                        r"(?=[^\s`\"'|]{0,63}?[0-9])[^\s`\"'|]{7}")
_label_value = _followed_by(("key", "token", "secret", "password"),
                            r"(?:[ ]?[0-9]{1,2})?\\*[\"']?[ \t]*[:=][ \t]*(?:\\*[\"'])?(?=[^\s`\"']{0,63}?[0-9])[^\s`\"']{7}")

SHORT_PATTERNS = (
    Pattern.of("secret", _MD_WORDS, _MARKED,
               requires=(("*", "__", "`", "|"),), flags=re.M, precheck=_marked_value),
    Pattern.of("secret", ("key", "token", "secret", "password"),
               r"(?P<keep>" + _LABEL + _SEPARATOR + r")(?!\[REDACTED:)" + _SHORT + r"(?:(?=\\*[\"'])|" + _END + ")",
               requires=((" ",), (":", "=")), precheck=_label_value),
    Pattern.of("secret", ("pin",), _PIN, requires=((":", "=", " is "),),
               precheck=r"(?i)pin(?:[ _-]?code)?(?:[ \t]*[:=]|[ ]is[ ])"),
    Pattern.of("secret", ("_salt", "_pepper", "_signing"), _ENV_SALT, requires=(("=",),)),
    Pattern.of("secret", ("passphrase", "password"), _PASSPHRASE, requires=((" is ", " was ", " to "),)),
)
