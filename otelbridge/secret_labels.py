"""Secrets under a label of words (:mod:`otelbridge.secrets` adds :data:`LABEL_PATTERNS` to its
forms): what a program prints for people or a JSON document keys in words, rather than a
variable's name — ``Access Key: X`` / ``Secret Key: Y`` (MinIO's ``mc admin user svcacct add``),
``API Key: X``, ``api key = X``, ``{"API Key": "X"}``, ``Client Secret: X``, ``Refresh Token: X``,
Vault's ``Unseal Key 1: X``, Azure's ``Primary Key: X``; and in prose, what a model writes
(``the password is X``, ``the API token was set to `X```).

A label is an adjective the key words of :mod:`otelbridge.secret_keys` also read joined
(``ACCESS_KEY``, ``clientSecret``) and its noun, one blank between them. Words are also prose
and documentation (``The access token: it expires after 1 hour``, ``API Key: set it in
Settings``, ``API Key: not set``), so its value is only one word that looks generated: 12
characters or more of letters, digits and ``+/=_-``, a letter and a digit among them, not an
identifier (``OPENAI_API_KEY``, ``user_id_2024``) nor followed by more of a path, a masked
value or an ARN (``~/.ssh/id_ed25519``, ``sk-...abcd``, ``arn:aws:kms:…``). Not ``Access Key
ID`` (an id names the key). In prose (a secret's name, then ``is``, ``was``, ``set to``…), a
quoted value is taken too when it has 8 characters or more, no blank, a letter and a digit
(``the password is `Tr0ub4dor&3x```), or unquoted one a person picked (a capital or a sign:
``the password for prod is onkiuwdnhz!624``); ``the password is incorrect`` and ``the token is
stored in `~/.config` `` stay. With no verb between (``Debug DB using password X``, ``failed with
token X``: a sub-agent's description, an error), only a word that looks random. And a variable
or key of any vendor whose last word is a key, a salt, a seed or ``creds`` (``MAPBOX_KEY=X``),
set to a generated-looking word.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .secret_patterns import Pattern
from .secret_tokens import AFTER_ESCAPE

#: A word's characters before an ASCII label, which then is no word of its own: letters,
#: digits and ``_`` of ASCII and Latin's accented ones; a letter of another script glued before
#: the label ends a word (a model writing its user's language runs a Cyrillic or a CJK word into
#: an English label: ``НовыйPassword is X``, ``使用token X``)
_W = r"A-Za-z0-9_\u00c0-\u024f"
#: The labels, case-blind: one blank between the words; nothing of a word before (but an
#: escape's letter: a line of text inside JSON) or after
_LABEL = (
    r"(?:(?<![" + _W + r".-])|" + AFTER_ESCAPE + r")(?i:"
    r"(?:secret(?:[ ]access)?|access|api|private|client|account|master|encryption|signing|session|auth"
    r"|app(?:lication)?|license|subscription|shared|storage|service[ ]account|primary|secondary|consumer"
    r"|unseal|recovery)[ ]key(?:[ ]?[0-9]{1,2})?(?![ ]?(?i:id)\b)"
    r"|(?:access|auth|api|refresh|bearer|session|personal[ ]access|bot|app|id)[ ]token"
    r"|(?:client|app(?:lication)?|api|shared|webhook|signing)[ ]secret"
    r"|(?:app|application|db|database|admin|root|user|account)[ ]password"
    r")(?![\w-])"
)
#: ... its closing quote (also escaped), ``:`` or ``=`` between blanks, an opening quote
_SEPARATOR = r"\\*[\"']?[ \t]*[:=][ \t]*(?:\\*[\"'])?"
#: One generated-looking word (see the module's text)
#: Not a path, nor an identifier; and (after the word) not more of a path, a masked value, an ARN
_NOT_A_NAME = r"(?!/)(?![A-Z0-9]*_[A-Z0-9_]*(?![\w+/=-]))(?![a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w+/=-]))"
_WORD_ENDS = r"(?![.*:@~]?[\w*~])"
#: (a digit and a letter looked for within its first 256 characters: looked for to a long word's
#: end from every key in it, ``a_key=a_key=…``, 256 Ki of it took minutes)
_VALUE = _NOT_A_NAME + r"(?=[\w+/=-]{0,255}?[0-9])(?=[\w+/=-]{0,255}?[A-Za-z])[\w+/=-]{12,}+" + _WORD_ENDS

#: Labels in other languages (a model answers in its user's): a password (a word of 8 ASCII
#: characters or more but quotes and ``\``, a letter and a digit among them: ``비밀번호: Zz9Yy8Xx7Ww6``, ``Senha: …``;
#: not ``senha: string``, ``Kennwort: falsch``; Greek's ``Κωδικός``, a code as often, only as
#: Markdown's bold label, with a small letter too: ``**Κωδικός:** s3cr3tValue``, not a product's
#: ``ABC12345``), a token, and an API's key
#: (``API 密钥：…``, ``Chave da API: …``) or a secret's key with a generated-looking word; a
#: full-width colon too.
#: Words of scripts without case, in ASCII, or in small letters (the needles: the needle pass
#: reads a text lower-cased; Hyperscan folds ASCII letters alone); a word with an accent also
#: as people type it without (``contraseña``, ``contrasena``).
_I18N_PASSWORD = ("密码", "密碼", "口令", "パスワード", "비밀번호", "senha", "passwort", "kennwort", "wachtwoord",
                  "haslo", "hasło", "sifre", "şifre", "salasana", "heslo", "passord", "adgangskode", "contrasena",
                  "contraseña", "losenord", "lösenord", "mot de passe", "jelszo", "jelszó", "รหัสผ่าน",
                  "كلمة المرور", "סיסמה", "पासवर्ड")
_I18N_TOKEN = ("토큰", "令牌", "トークン")
_I18N_KEY = ("密钥", "密鑰", "秘钥", "キー", "키", "chave", "clave", "chiave", "sleutel", "klucz", "schluessel")
#: A secret's key with no API named, with a generated-looking word (``密钥：…``, ``秘密鍵: …``,
#: ``비밀 키: …``; not a public one's: ``公开密钥``); the needles are their first words
_I18N_SECRET_KEY = ("(?<!公开)(?<!公開)(?:密钥|密鑰|秘钥|秘鑰)", "私钥", "私鑰", "秘密鍵", "シークレット(?:キー)?",
                    "(?:비밀|시크릿)[ ]?키")
_I18N_SECRET_KEY_NEEDLES = ("私钥", "私鑰", "秘密鍵", "シークレット", "비밀", "시크릿")
#: ... and in scripts with case, Cyrillic and Greek (``Пароль: …``, ``ключ API: …``,
#: ``κωδικός πρόσβασης: …``): Greek's accents and final sigma either way, as capitals drop them;
#: their needles are in small letters (the needle pass reads a text lower-cased), Greek's cut
#: before an accent or a sigma
_CASED_PASSWORD = ("пароль", "κωδικ[οό][σς][ ]πρ[οό]σβασ[ηή][σς]", "συνθηματικ[οό]")
_CASED_TOKEN = ("токен",)
_CASED_KEY = ("ключ", "κλειδ[ιί]")
_CASED_SECRET_KEY = ("секретный[ ]ключ", "ключ[ ]доступа", "секрет", "κωδικ[οό][σς]", "μυστικ[οό][ ]κλειδ[ιί]")
_CASED_NEEDLES = ("пароль", "κωδικ", "συνθηματικ", "токен", "ключ", "κλειδ", "секрет", "μυστικ")
#: A password's name in another language where Markdown names a secret (a table's column or row,
#: a heading, a bold name, a name alone before its value's line): the words above that are
#: literals (also the needles and the pre-tests' words)
_I18N_PASSWORD_WORDS = _I18N_PASSWORD + ("пароль",)
_i18n = "|".join
_I18N_LABEL = (
    r"(?<![A-Za-z])(?i:(?<=\*\*|__)(?P<gr>κωδικ[οό][σς])(?=(?:\*\*|__)[ \t]*[:=\uff1a]|[ \t]*[:=\uff1a](?:\*\*|__))"
    r"|(?P<pw>" + _i18n(_I18N_PASSWORD + _CASED_PASSWORD) + r")|"
    + _i18n(_I18N_TOKEN + _CASED_TOKEN + _I18N_SECRET_KEY + _CASED_SECRET_KEY)
    + r"|api[ -]?(?:" + _i18n(_I18N_KEY + _CASED_KEY) + r")|(?:" + _i18n(_I18N_KEY + _CASED_KEY)
    + r")[ -](?:(?:da|de|del|di|d'|dell')[ ]?)?api)"
    # (its closing quote, or Markdown's emphasis around it or the colon: **비밀번호**: X, **Senha:** X)
    r"(?![A-Za-z])(?:\*\*|__|\\*[\"'])?[ \t]*[:=\uff1a](?:\*\*|__)?[ \t]*(?:\\*[\"'])?"
)
_I18N = (r"(?P<keep>" + _I18N_LABEL + r")(?!\[REDACTED:)(?(gr)(?=[!#-&(-\[\]-_a-~]*[a-z])|)"
         r"(?(pw)(?=[!#-&(-\[\]-_a-~]*[0-9])(?=[!#-&(-\[\]-_a-~]*[A-Za-z])[!#-&(-\[\]-_a-~]{8,}+"
         r"|(?(gr)(?=[!#-&(-\[\]-_a-~]*[0-9])[!#-&(-\[\]-_a-~]{8,}+|" + _VALUE + "))")

LABEL_PATTERNS = (
    Pattern.of("secret", ("key", "token", "secret", "password"),
               r"(?P<keep>" + _LABEL + _SEPARATOR + r")(?!\[REDACTED:)" + _VALUE,
               requires=((" ",), (":", "=")),
               precheck=r"(?i)(?:key|token|secret|password)(?:[ ]?[0-9]{1,2})?\\*[\"']?[ \t]*[:=]"),
    Pattern.of("secret", _I18N_PASSWORD + _I18N_TOKEN + _I18N_KEY + _I18N_SECRET_KEY_NEEDLES + _CASED_NEEDLES, _I18N),
)

#: ... whose it is, between the name and the verb: ``the password for prod is``, ``the token for
#: the staging db was``, ``the API key (prod) is``
_WHOSE = r"(?:[ ](?i:for|on|of|in|at)(?:[ ][\w.-]{1,30}){1,3}|[ ]\([\w .-]{1,30}\))?"
#: ... a quoted value (its opening quote, group ``q``, kept): 8 characters or more without a
#: blank, a letter and a digit among them, not a variable or a template (``$X``, ``{{x}}``)
_QUOTED = r"(?![$%{<])(?=[^`\"'\s]*[0-9])(?=[^`\"'\s]*[A-Za-z])[^`\"'\s\\]{8,}(?=\\*(?P=q))"
#: ... after a verb, the quoted value whole up to its closing quote, whatever marks it holds
#: (``the password is `Rk7'mVq2Lp9x```, ``is `Kx9m"QzPw7Lm2```, an escaped quote too: JSON's
#: ``\\"``), in the same shape; not a call or a subscript (``os.getenv('TOKEN2')``,
#: ``config["key2"]``). The look-aheads stop at a blank, bounded all the same.
_IN_QUOTES = r"(?:(?!(?P=q))[^\s\\]|\\++(?!(?P=q))[\"'])"
_QUOTED_WHOLE = (r"(?![$%{<])(?=" + _IN_QUOTES + r"{0,255}?[0-9])(?=" + _IN_QUOTES + r"{0,255}?[A-Za-z])(?:"
                 + _IN_QUOTES + r"){8,}+(?<![)\]])(?=\\*(?P=q))")


def _picked(marks: str, inner: bool = False) -> str:
    """A word a person picked as a password: 8 characters or more with a letter, a digit and one
    of ``marks`` (a regex class's inside), no quote, bracket or blank; a sentence's closing
    ``.``, ``?`` or ``:`` not taken, a ``!`` is (a picked password often ends with one).
    ``inner``: also a quote, ``(``, ``,`` or ``;`` between two letters or digits (``Rk7'mVq2Lp9x``,
    ``Kx9m"QzPw7Lm2``: prose puts a blank after its own); not a call (``getToken(user1)``)."""
    word = r"[^\s;,`\"'()<>\\]"
    if inner:
        word = r"(?:" + word + r"|(?<=[A-Za-z0-9])(?:[;,'(]|\\*\")(?=[A-Za-z0-9]))"
    return (_NOT_A_NAME + rf"(?![$%{{<~.])" + (rf"(?!{word}*+\))" if inner else "")
            + rf"(?={word}*[0-9])(?={word}*[A-Za-z])(?={word}*[{marks}]){word}{{8,}}(?<![.?:])")


#: ... a value said unquoted: :data:`_VALUE`, or one a person picked with a capital or a sign in
#: it (``onkiuwdnhz!624``, ``P@ssw0rd!``, ``Winter2024Ab!!`` whole; not ``incorrect``, ``in``)
_SAID = r"(?:" + _VALUE + r"(?!!)|" + _picked("A-Z!@#$%^&*+=?", inner=True) + ")"
#: In prose: a secret's name (:data:`_WHOSE` it is), a verb, then a value (:data:`_SAID`, or
#: :data:`_QUOTED` in quotes or backticks)
_PROSE = (
    r"(?P<keep>(?<![" + _W + r".-])(?i:pass(?:word|phrase|wd|code)|token|secret|(?:api|access|secret|private)[ ]key)"
    r"(?:[ ](?i:value|itself))?" + _WHOSE +
    r"[ ](?i:(?:is|was|has[ ]been|will[ ]be)[ ](?:now[ ]|(?:set|changed|reset)[ ]to[ ])?"
    r"|(?:set|changed|reset)[ ]to[ ])[ ]*(?:\\*(?P<q>[`\"']))?)"
    r"(?(q)" + _QUOTED_WHOLE + "|" + _SAID + ")"
)

#: A word that looks generated beyond doubt, for where no verb or separator says a value
#: follows: 16 characters or more with a capital, a small letter and a digit, or 24 or more of
#: small letters and digits, or 20 or more of hex digits or of capitals and digits, both among
#: them, or a UUID (Heroku's API keys; random keys; not ``db-credentials-v2``,
#: ``claude-sonnet-4-5``, a name)
_GENERATED = (_NOT_A_NAME + r"(?:(?=[\w+/=-]*[0-9])(?=[\w+/=-]*[A-Z])(?=[\w+/=-]*[a-z])[\w+/=-]{16,}+"
              r"|(?=[a-z]*[0-9])(?=[0-9]*[a-z])(?:[a-f0-9]{20,}+(?![a-z0-9])|[a-z0-9]{24,}+)"
              r"|(?=[A-Z]*[0-9])(?=[0-9]*[A-Z])[A-Z0-9]{20,}+"
              r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
              + _WORD_ENDS)
#: In prose, a secret's name then at once its value: ``using password X``, ``with token X``,
#: ``Rotate key X``, ``with PAT X``, ``pw X``, ``Reset password to X``, ``API key "X"`` (a word of :data:`_GENERATED`, or
#: :data:`_QUOTED`; after a password's name also one a person chose, as :data:`_SAID` reads it:
#: ``with password Summer6770!TN``)
_ADJACENT = (
    r"(?P<keep>(?<![" + _W + r".-])(?:(?i:pass(?:word|phrase|wd|code))(?P<pw>)|(?i:token|secret|key|credentials?|pass|pwd|pw)"
    r"|(?-i:PAT))(?:[ ]to)?[ ](?:\\*(?P<q>[`\"']))?)"
    r"(?(q)" + _QUOTED + "|(?(pw)" + _SAID + "|" + _GENERATED + "))"
)
_ADJACENT_WORDS = ("pass", "pw", "token", "secret", "key", "credential", "pat")


def _followed_by(words: tuple[str, ...], after: str) -> Callable[[str], bool]:
    """A pre-test: whether one of ``words`` in a text (in any case) is followed by what the
    regex ``after`` reads, each word found with ``str.find`` (a case-blind alternation tried at
    every position cost ~60 µs on 2 KB of prose that names tokens and keys)."""
    follows = re.compile(after)
    anywhere = re.compile(r"(?i)(?:" + "|".join(map(re.escape, words)) + ")" + after)

    def test(text: str) -> bool:
        low = text.lower()
        if len(low) != len(text):  # (a letter lower-cased to two: positions would not hold)
            return anywhere.search(text) is not None
        for word in words:
            at = low.find(word)
            while at >= 0:
                at += len(word)
                if follows.match(text, at):
                    return True
                at = low.find(word, at)
        return False

    return test


#: ... for :data:`_ADJACENT`: after one (the rest of its word first: ``password``,
#: ``credentials``), a blank and a word of 8 characters or more with a digit
_adjacent_value = _followed_by(_ADJACENT_WORDS, r"(?i:word|phrase|wd|code|d|s)?(?: to)? \\*[`\"']?"
                                                 r"(?=[^\s`\"'\\]{0,64}?[0-9])[^\s`\"'\\]{8}")

#: In prose, a user and a password after words that say so: ``Test login admin/X``, ``creds:
#: admin/X``, ``credentials admin:X``, ``login admin / X``, ``the login is admin / X``, ``auth as deploy:X``,
#: each also in backticks as Markdown shows them (``Login: `admin` / `X` ``) (the password
#: one a person picked with a sign in it, or :data:`_GENERATED`; ``login page/v2``,
#: ``login flow/OAuth2Callback`` stay)
_PAIR_WORDS = ("creds", "credentials", "login", "log in", "logon", "auth as", "authenticate as", "sign in as")
_PAIR = (
    r"(?P<keep>(?<![" + _W + r".-])(?i:creds|credentials|log[ ]?in(?:[ ]as)?|logon|auth(?:enticate)?[ ]as|sign[ ]in[ ]as)"
    r"(?:[ ](?i:is|was))?:?[ ](?P<u>`)?[\w.@+-]{1,64}(?(u)`)[ ]?[:/][ ]?(?P<q>`)?)(?!\[REDACTED:)"
    r"(?:" + _picked("!@#$%^&*+=?") + "|" + _GENERATED + r")(?(q)(?=`))"
)
_pair_value = _followed_by(_PAIR_WORDS, r"(?: as)?(?: is| was)?:? `?[\w.@+-]{1,64}`? ?[:/] ?(?=[^\s]{0,64}?[0-9])[^\s]{8}")


#: An identifier in lower case: words, each of letters then digits or of digits then at most two
#: letters, joined by ``-``, ``_`` or ``.`` (``claude-sonnet-4-6``, ``gpt-4o-mini``,
#: ``npm-cache-v2``, ``node-role.kubernetes.io``), whole (before none of ``end``, a regex of the
#: value's characters). A key is as often a lookup's as a secret's: a cache's, a sort's, a
#: label's, a map's key names something by such an id. A generated secret mixes letters and digits
#: within its words (a UUID's ``4f3a``, Mailgun's ``key-3ax6…``) or has capitals, so it is none.
def _not_an_id(end: str) -> str:
    return r"(?![a-z]++[0-9]*+(?:[_.-](?:[a-z]++[0-9]*+|[0-9]++[a-z]{0,2}+))++(?!" + end + "))"


#: A variable or key whose last word names a key, a salt, a seed or credentials, any
#: vendor's (``MAPBOX_KEY``, ``AES_KEY``, ``fernet_key``, ``mapboxKey``, ``PASSWORD_SALT``,
#: ``TOTP_SEED``, ``DB_CREDS``), set to a generated-looking word (:data:`_VALUE`): ``=``, ``:``,
#: or in prose ``set X to``; ``SORT_KEY=created_at``, ``key: ${{ hashFiles() }}`` stay, and after a
#: key (not a salt, a seed or credentials, which name secret material alone) a lower-case
#: identifier: ``- key: claude-sonnet-4-6``, ``cache_key: npm-cache-v2``
_NAMED = (
    r"(?P<keep>(?<![" + _W + r"$.-])(?:[A-Za-z][A-Za-z0-9]*?(?:[_.-]{1,2}[A-Za-z0-9]+?)*?(?:[_.-]{1,2}|(?<=[a-z])(?=[A-Z])))?"
    r"(?<!(?i:public)[ _.-])(?<!public)(?<!Public)(?:(?P<nk>(?i:keys?))|(?i:salt|pepper|seed|creds))(?![A-Za-z0-9])"
    r"\\*[\"']?(?:[ \t]*[:=][ \t]*|[ ]to[ ])(?:\\*[\"'])?)(?!\[REDACTED:)(?(nk)" + _not_an_id(r"[\w+/=-]") + ")" + _VALUE
)

#: ... and a variable in capitals whose last word is ``KEY`` (a number after it), set as a shell or
#: an env file sets it (no blank around ``=``: ``export STRIPE_KEY=hunter2``, ``APP_KEY='s3cr3t
#: pw!'``) to a word a person may pick: 6 characters or more (quoted, blanks too) with a letter and
#: a digit or a sign. A vendor's ``*_KEY`` may be the key it publishes (Laravel names Stripe's
#: publishable key so): hiding one costs a trace nothing, leaking a secret does. Not a name, a
#: path or a variable (``SORT_KEY=created_at``, ``ROUTING_KEY=orders.v2``, ``SSH_KEY=~/.ssh/x``,
#: ``KEY=$X``, ``CACHE_KEY=node-modules-v3``: :func:`_not_an_id`), a public key, nor GPG's key id
#: (a Dockerfile's ``GPG_KEY=7169…``)
_ENV_WORD = r"[^\s\"'`\\;&|<>()]"
_ENV_KEY = (
    r"(?P<keep>(?<![" + _W + r"$.-])[A-Z][A-Z0-9_]*?(?<!PUBLIC)(?<!GPG)(?<!PGP)_KEY(?:_?[0-9]{1,2})?=(?P<q>\\*[\"'])?)"
    r"(?!\[REDACTED:)(?![$/~.])" + _NOT_A_NAME + r"(?![a-z][a-z0-9]*+(?:\.[a-z0-9]++)++(?!" + _ENV_WORD + "))"
    + _not_an_id(_ENV_WORD) +
    r"(?(q)(?=[^\"'\r\n\\]*[A-Za-z])(?=[^\"'\r\n\\]*[0-9!@#$%^&*+=?~])[^\"'\r\n\\]{6,200}+(?=(?P=q))"
    r"|(?=" + _ENV_WORD + r"*[A-Za-z])(?=" + _ENV_WORD + r"*[0-9!@#$%^&*+=?~])" + _ENV_WORD + r"{6,}+)"
)

#: A secret's name as Markdown shows it, then its value (:data:`_MD_VALUE`, also in backticks or
#: quotes; unquoted, also one a person picked with a sign: ``Adm1n!pass``): bold, italic or code before ``:``, ``=``, a dash or an arrow, a note in brackets
#: between (``- **API key**: X``, ``**Password** (admin): X``,
#: ``**API key:** X``, ``\`DB_PASSWORD\` = \`X\```), a table's cell before the next (``|
#: DB_PASSWORD | X |``), or a name before an arrow (``DB_PASSWORD → X``, ``password => X``):
#: what an agent writes when it sums up what it set. The name ends with the secret's word
#: (``TOKEN_ISSUER``, ``Token endpoint`` name no secret), up to three words before it (``AWS
#: Secret Access Key``); ``| password | string |``, ``**Token signing**: HMAC-SHA256`` stay
_NAME_WORDS = r"(?:[a-z][a-z0-9.]{0,40}+[ _-]){0,3}"
_OTHER_SECRET = (r"secret|token|credentials?"
                 r"|(?:api|access|secret|private|client|signing|master|encryption|session|hmac)[ _-]?key")
_MD_NAME = (r"(?i:" + _NAME_WORDS + r"(?:pass(?:word|wd|phrase)|pwd|" + _OTHER_SECRET + ")|"
            + "|".join(_I18N_PASSWORD_WORDS) + ")")
#: ... its value: one word, 12 characters or more of letters, digits and ``_+/=``, two capitals
#: and two digits among them, or one that looks generated beyond doubt (:data:`_GENERATED`);
#: not a path, an identifier, a class, a setting or an algorithm's name (``PBKDF2-SHA256``,
#: ``Unauthorized401``, ``OAuth2Token``, ``PBKDF2SHA256PasswordHasher``, ``AWS_PROFILE=prod2``)
#: ... a class's name of capitalised words, up to where it ends or a year after it does
#: (``PBKDF2SHA256PasswordHasher``, ``ResetPassword2024``), each of 4 letters or more or one of
#: the short ones names are made of (``Ed25519PrivateKey``, ``SessionId``, ``CallbackUrl``); a
#: setting (``max_tokens=4096``; not base64's padding ``=``): no value either
_CLASS_NAME = (r"[A-Za-z0-9]{0,80}?(?:(?=[A-Z])(?:[A-Z][a-z]{3,16}+|(?:Key|Id|Ids|Url|Uri|Api|Jwt|Db|Io|Ui|Ip|Os|Sdk|Rsa|Aes|Ssh|Tls"
               r"|Ssl|Otp|Pin)(?![a-z]))){2,5}")  # (a small letter fails at once: the list's alternation is slow)
_NOT_A_SETTING = r"(?![\w.-]++=[^=\s`\"'])"
_YEAR = r"(?:(?:19|20)[0-9]{2})?+"
#: ... nor, after a secret's name, what a page says of it: a URL, an anchor, a package at its
#: version, a version (``https://github.com/settings/tokens?type=beta``, ``#/components/schemas/Token2``,
#: ``#password-reset-2``, ``jsonwebtoken@9.0.2``, ``pyjwt==2.8.0``, ``v1.2.3+build45``): taken,
#: each would be learned and hidden in every string after
_NOT_A_REFERENCE = (r"(?![A-Za-z][\w+.-]{0,20}+://|#/|#[a-z][a-z0-9]*+(?:-[a-z0-9]++)++(?![^\s`<\"'\\|])"
                    r"|@?[\w.-]++(?:/[\w.-]++)?+(?:@|[=~<>!]=|===)v?[0-9]++\.[0-9]"
                    r"|v?[0-9]++(?:\.[0-9]++){1,3}(?:[-+][\w.-]*+)?+(?![^\s`<\"'\\|]))")
_MD_VALUE = (r"(?!" + _CLASS_NAME + _YEAR + r"(?![\w+/=]))" + _NOT_A_SETTING + "(?:" + _NOT_A_NAME
             + r"(?=(?:[A-Za-z_+/]*+[0-9]){2})(?=(?:[a-z0-9_+/]*+[A-Z]){2})"
             r"(?=[A-Z0-9_+/]*+[a-z])[A-Za-z0-9_+/]{12,}+={0,2}" + _WORD_ENDS + "|" + _GENERATED + ")")
#: ... or, in backticks or quotes, one a person picked: 8 characters or more with a letter, a
#: digit and a sign (``hK3$vN8@pL2#wQ5!``), or 12 or more, four digits among them, letters and
#: digits mixed twice (``s3cr3t-p4ss-2024``); not a variable, a flag, a setting, a hash's
#: format, a URL or an address (``$TOKEN``, ``{{ x }}``, ``--token-file=…``, ``max_tokens=4096``,
#: ``pbkdf2_sha256$…``, ``sha256:…``, ``admin@db.example``), an algorithm (``AES-256-GCM``,
#: ``chacha20-poly1305``), a name (``key-2024-11-01``) or numeronyms (``e2e-test-k8s``, ``i18n``)
_MD_WORD = r"[^\s`\"'(){}<>\[\]\\,;*:]"
_MD_QUOTED = (r"(?![$%~.-])" + _NOT_A_SETTING + r"(?![a-z0-9]++_\w*+\$)(?![\w+.-]*+(?:/|@[\w-]++(?:\.[\w-]++)++(?=(?P=q))))"
              r"(?=" + _MD_WORD + r"*[A-Za-z])"
              r"(?:(?=" + _MD_WORD + r"*[0-9])(?=" + _MD_WORD + r"*[!@#$%^&+=?])"
              r"|(?=" + _MD_WORD + r"{12})(?=(?:" + _MD_WORD + r"*?[0-9]){4})"
              r"(?=(?:" + _MD_WORD + r"*?[A-Za-z][0-9]++[A-Za-z]){2}))"
              + _MD_WORD + r"{8,}+(?=(?P=q))")
#: A password's name, as a label or a table's column: ``Password``, ``Admin password``, ``Pwd``;
#: ``PW`` and ``Pass`` alone (not ``First pass``); not one that names a feature or a case (``Forgot password``, ``Wrong password``, ``One-time password``);
#: in another language (``密码``, ``Senha``, ``Пароль``, ``Κωδικός πρόσβασης``)
_PASSWORD_LABEL = (r"(?i:(?!(?:forgot|reset|change|wrong|invalid|weak|common|strong|one-time|encrypted|stored"
                   r"|hashed|expired|empty)[ _-])" + _NAME_WORDS + r"(?:pass(?:word|wd|phrase)|pwd)|pw|pass|"
                   + "|".join(_I18N_PASSWORD_WORDS + _CASED_PASSWORD[1:]) + ")")
#: After a password's name, also a word a person picked with a capital, a small letter and two
#: digits (``Winter2024x``, ``Sunflower88``): not a class's name, also before a year
#: (``Ed25519PrivateKey``, ``ResetPassword2024``), nor a name and its version (``Python3x``). (The
#: small letter's look-ahead backtracks: one that did not, possessive, failed every such word.)
_PICKED_CAPITAL = (r"(?!" + _CLASS_NAME + _YEAR + r"(?![\w+/=]))" + _NOT_A_SETTING + r"(?=[^\s;,`\"'()<>\\]*[a-z])"
                   r"(?=(?:[^\s;,`\"'()<>\\]*?[0-9]){2})" + _picked("A-Z"))
_MD_SEPARATOR = r"[ \t]*+(?::|=|->|=>|\u2192|\u2014|\u2013|-(?=[ \t]))"


def _markdown(name: str) -> str:
    """The regex of a secret's name ``name`` (a regex) as Markdown shows it, then its value."""
    return (
        r"(?P<keep>(?:(?:(?<![" + _W + r"*`])|(?<=\\[nrt]))(?P<e>\*\*|__|`|\*)" + name + r"(?:(?P=e)(?:[ \t]*+\([^()\r\n]{1,40}+\))?+"
        + _MD_SEPARATOR + r"|[ \t]*+:(?P=e))"
        r"|(?:^|(?<=\|)|(?<=\\n))[ \t]*+(?P<c>\*\*|`)?(?:(?=" + _PASSWORD_LABEL + r"(?(c)(?P=c))[ \t]*+\|)(?P<pw>))?"
        + name + r"(?(c)(?P=c))[ \t]*+\|"
        r"|(?:(?<![" + _W + r".-])|(?<=\\[nrt]))" + name + r"(?![\w.-])[ \t]*+(?:->|=>|\u2192))"
        r"[ \t]*+(?:\*\*)?(?P<q>[`\"'])?)(?!\[REDACTED:)" + _NOT_A_REFERENCE + "(?:(?(q)" + _MD_QUOTED + "|(?!))|" + _MD_VALUE
        + r"(?(q)(?=(?P=q)))|(?(q)(?!)|" + _NOT_A_SETTING + _picked("!@#$%^&+=?") + ")"
        # (a password's cell: also a word a person picked, the cell's whole text: | Passwort | s3cr3tValue |)
        + r"|(?(pw)" + _PICKED_CAPITAL + r"(?=[ \t]*+\|)|(?!)))"
    )


_MARKDOWN = _markdown(_MD_NAME)
#: ... a token's, an API's key's or a secret's key's name in another language (:data:`_I18N`'s:
#: ``| Токен | X |``, ``**Clave API**: X``; Greek's password too), the value as under an English
#: one: a rule of its own, led by those names' needles (the English rule's pre-test reads
#: English names' ends)
_I18N_SECRET_NAME = ("(?i:" + _i18n(_CASED_PASSWORD[1:] + _I18N_TOKEN + _CASED_TOKEN + _I18N_SECRET_KEY + _CASED_SECRET_KEY)
                     + r"|api[ -]?(?:" + _i18n(_I18N_KEY + _CASED_KEY) + r")|(?:" + _i18n(_I18N_KEY + _CASED_KEY)
                     + r")[ -](?:(?:da|de|del|di|d'|dell')[ ]?)?api)")
_I18N_SECRET_WORDS = _I18N_TOKEN + _I18N_KEY + _I18N_SECRET_KEY_NEEDLES + ("токен", "ключ", "κλειδ", "секрет", "μυστικ", "κωδικ", "συνθηματικ")

#: In prose, a value in brackets after a secret's name (``the admin password (X) is``, ``your
#: key (X)``), or quoted before ``as the password`` (``use "X" as the password``): a word of
#: :data:`_QUOTED`'s shape (``the password (optional)``, ``the token (JWT)`` stay)
_BESIDE = (
    r"(?P<keep>(?<![" + _W + r".-])(?:(?i:pass(?:word|phrase|wd|code)|token|secret|key|credentials?)[ ]\("
    r"|(?i:use|using|with|set|try)[ ]\\*(?P<q>[`\"'])))(?!\[REDACTED:)"
    r"(?(q)" + _QUOTED + r"(?=\\*(?P=q)[ ](?i:as[ ](?:the[ ]|your[ ]|a[ ])?(?:\w+[ ])?(?:pass(?:word|phrase)|token|secret"
    r"|key|api[ ]key))\b)"
    r"|(?=[^\s()`\"']*[0-9])(?=[^\s()`\"']*[A-Za-z])[^\s()`\"'\\]{8,}(?=\)))"
)
_beside_bracket = _followed_by(("pass", "token", "secret", "key", "credential"), r"[a-z]{0,6} \([^\s()]{0,60}?[0-9]")
_AS_SECRET = re.compile(r"(?i)[`\"'] as (?:the |your |a )?(?:\w+ )?(?:pass|token|secret|key|api key)")


def _beside_value(text: str) -> bool:
    """... for :data:`_BESIDE`: a secret's word, a bracket and a digit before the next, or a
    quote closing before ``as the password``."""
    return _beside_bracket(text) or (" as " in text and _AS_SECRET.search(text) is not None)


_MD_WORDS = ("pass", "pwd", "secret", "token", "key", "credential") + _I18N_PASSWORD_WORDS
#: ... for :data:`_MARKDOWN`: after one, the rest of the name, marks and a separator, and 12
#: characters of a value (8 with a sign, or after a quote), a digit among their first 64
_markdown_value = _followed_by(_MD_WORDS, r"(?i:word|wd|phrase|s)?(?:[*_` \t]{1,4}\([^()\r\n]{1,40}\))?[*_` \t:=|>\u2192\u2014\u2013-]{1,8}[`\"']?"
                                          r"(?:(?=[A-Za-z_+/=-]{0,63}[0-9])[A-Za-z0-9_+/=-]{12}"
                                          r"|(?=[^\s`\"']{0,63}[0-9])[^\s`\"']{8})")

#: A Markdown table whose header names a column for a secret (``| User | Password |``, ``| Pass
#: |``, ``| Password (temp) |``, ``| Token |``), then a row's cell in that column (the table's
#: first six columns), in its first 16 rows: under a password's name a word of 8 characters or
#: more with a letter and a digit (``viewerpass42``, ``Ed1tor!pass`` in backticks); under a
#: token's, a key's or a secret's, one with a sign, or with capitals, small letters and two
#: digits (``Hunter2024xyz``, ``npmTk8x2mQ9vL4pR``): such a column also lists names and ids. Not
#: a variable, a name, a class, a setting or a URI (``hashed``, ``(see vault)``,
#: ``$DB_PASSWORD``, ``CROWDIN_TOKEN_V2``, ``npm-token2``, ``OAuth2PKCE``, ``arn:aws:…``,
#: ``kid=2024q3`` stay).
_TABLE_CELL = r"[ \t]*+(?:\*\*|`)?+"
_PASSWORD_COLUMN = "(?:" + _PASSWORD_LABEL + r")(?![\w.-])"
#: ... another secret's column (a password's is the one above's alone)
_SECRET_COLUMN = r"(?i:" + _NAME_WORDS + "(?:" + _OTHER_SECRET + "))"
#: ... a table's line ends and the text before one (also JSON-escaped: a document's string)
_EOL = r"(?:\r?\n|(?:\\r)?\\n)"
_REST = r"(?:[^\r\n\\]|\\(?![rn])){0,%d}+"
_ROW_REST = r"(?:[^\r\n\\]++|\\(?![rn]))*+"
_CELLS = r"(?:(?:[^|\r\n\\]++|\\(?![rn]))*+\|){%d}"
_CELL_WORD = r"[^|`\s\\:]"
#: ... a cell's word, 8 characters or more with a letter and a digit, no name, class or setting
_CELL_VALUE = (r"(?=" + _CELL_WORD + "{8})" + _NOT_A_NAME + r"(?![$%{<~-])" + _NOT_A_SETTING
               + r"(?!" + _CLASS_NAME + r"`?[ \t]*\|)"
               r"(?=" + _CELL_WORD + r"*[0-9])(?=" + _CELL_WORD + r"*[A-Za-z])")
_CELL_END = _CELL_WORD + r"{8,}+(?=`?[ \t]*\|)"
#: A weak password that installs, images and tutorials give out, or people pick (``changeme``,
#: ``postgres``, ``hunter2``, ``admin123``): a list, since nothing in their shape tells them from
#: what a password's column or label also holds (``required``, ``hashed``, ``python3``,
#: ``AES-256``, ``v1.0.0``, ``8chars``, a field's name ``password``); a ``!`` after one too
_WEAK_PASSWORDS = (
    r"(?i:changeme|changeit|letmein|welcome1?|qwerty(?:uiop|123)?|admin(?:admin|123|istrator)?"
    r"|guest|root(?:123)?|toor|hunter2|dragon|monkey|iloveyou|sunshine|princess|trustno1|abc123"
    r"|pass(?:123|w0rd)|p@ssw(?:0rd|ord)|pa\$\$word|password(?:1|123)|test123|testpass|testtest|devpass"
    r"|mypassword|mysecretpassword|my-secret-pw|supersecret|topsecret|postgres|mysql|oracle|rabbitmq"
    r"|minioadmin|neo4j|airflow|prom-operator|elastic|kibana|vagrant|raspberry|ubuntu"
    r"|123456(?:78?9?0?)?|111111|000000)!?")
#: ... as a password column's cell, the cell's whole text (8 characters or more with a letter
#: and a digit: :data:`_CELL_VALUE`)
_WEAK_CELL = r"(?=[^\s|`\\]{4,16}+`?[ \t]*+\|)" + _WEAK_PASSWORDS + r"(?=`?[ \t]*\|)"  # (the list once a cell fits)

#: ... then, after its Markdown label or as a table row's label, the label's whole value, to the
#: line's end (a note after a dash, a bracket or a comma may follow) or in backticks (``-
#: **Password**: hunter2``, ``**Admin password:** `changeme```, ``| Password | admin |``)
_MD_WEAK = (
    r"(?P<keep>(?:(?:(?<![" + _W + r"*`])|(?<=\\[nrt]))(?P<e>\*\*|__|\*)" + _PASSWORD_LABEL
    + r"(?:(?P=e)(?:[ \t]*+\([^()\r\n]{1,40}+\))?+" + _MD_SEPARATOR + r"|[ \t]*+:(?P=e))"
    r"|(?:^|(?<=\\n))[ \t]*+\|(?P<row>)[ \t]*+(?P<c>\*\*|`)?" + _PASSWORD_LABEL + r"(?(c)(?P=c))[ \t]*+\|)"
    r"[ \t]*+(?P<q>`)?)(?!\[REDACTED:)" + _WEAK_PASSWORDS
    + r"(?(q)(?=`)|(?(row)(?=[ \t]*+\|)|(?=[.,;]?[ \t]*+(?:$|\\[nr]|[(\u2014\u2013]|-[ \t])|,[ \t])))"
)
#: ... under another secret's name: also a sign, or capitals, small letters and two digits
_STRONG = (r"(?:(?=" + _CELL_WORD + r"*[!@#$%^&+?])|(?=" + _CELL_WORD + r"*[a-z])(?=" + _CELL_WORD + r"*[A-Z])"
           r"(?=(?:" + _CELL_WORD + r"*?[0-9]){2}))")


def _table(column: str, value: str) -> str:
    """The regex of a table's cell under a header cell ``column``, the cell's text ``value``."""
    return (
        r"(?P<keep>(?:^|(?<=\\n)|(?<=^\")|(?<=[:\[,]\")|(?<=[:,] \"))[^|\r\n\\]{0,60}?\|(?:"
        + "|".join(
            _CELLS % n + _TABLE_CELL + column + r"(?:\*\*|`)?+(?:[ \t]*+\([^()|\r\n]{1,30}\))?[ \t]*+\|"
            + _REST % 200 + _EOL
            + r"[ \t]*+\|[ \t:|-]*?-[ \t:|-]*+" + _EOL + r"(?:[ \t]*+\|" + _ROW_REST + _EOL + "){0,15}?"
            + r"[ \t]*+\|" + _CELLS % n + r"[ \t]*+`?+"
            for n in range(6))
        + r"))(?!\[REDACTED:)" + value
    )


_SEPARATOR_ROW = re.compile(r"(?:\r?\n|(?:\\r)?\\n)[ \t]*+\|[ \t:|]*?-[ \t:|-]*+(?=\r?\n|\\[rn]|\Z)")


def _table_header(words: tuple[str, ...]) -> Callable[[str], bool]:
    """... for :func:`_table`: whether a table's separator row (``|---|---|``) has a line before
    that holds one of ``words`` (each line looked at once)."""

    def test(text: str) -> bool:
        for row in _SEPARATOR_ROW.finditer(text):
            at = row.start()
            header = text[max(text.rfind("\n", 0, at), text.rfind("\\n", 0, at)) + 1:at].lower()
            if any(word in header for word in words):
                return True
        return False

    return test


_PASSWORD_WORDS = ("pass", "pw", "κωδικ", "συνθηματικ") + _I18N_PASSWORD_WORDS
_SECRET_WORDS = ("secret", "token", "key", "credential")
_TABLES = (
    Pattern.of("secret", _PASSWORD_WORDS, _table(_PASSWORD_COLUMN, "(?:" + _CELL_VALUE + _CELL_END + "|" + _WEAK_CELL + ")"),
               requires=(("|",), ("-",)), flags=re.M, passes=16, precheck=_table_header(_PASSWORD_WORDS)),
    Pattern.of("secret", _SECRET_WORDS, _table(_SECRET_COLUMN, _CELL_VALUE + _STRONG + _CELL_END),
               requires=(("|",), ("-",)), flags=re.M, passes=16, precheck=_table_header(_SECRET_WORDS)),
    Pattern.of("secret", _I18N_SECRET_WORDS, _table(_I18N_SECRET_NAME, _CELL_VALUE + _STRONG + _CELL_END),
               requires=(("|",), ("-",)), flags=re.M, passes=16, precheck=_table_header(_I18N_SECRET_WORDS)),
)

#: A secret's name alone on its line, its value alone on the next: what an agent writes when it
#: sums up what it set — a heading (``## Admin password``), a bold or italic name (``**Password:**``,
#: ``**API key**``) or a label of words before ``:`` (``API key:``, ``DB_PASSWORD:``), then (one
#: blank line between at most) the value bare, in backticks, or the only line of a code fence.
#: The value is judged as :data:`_MARKDOWN` judges one after its label: a word that looks
#: generated (:data:`_MD_VALUE`), one a person picked with a sign (in backticks as
#: :data:`_MD_QUOTED`); after a password's name (:data:`_PASSWORD_LABEL`: not ``## Forgot
#: password``) also one with a capital and a small letter (``Winter2024x``) or a weak password
#: (:data:`_WEAK_PASSWORDS`). The next line is one word to its end, so prose (``## Password
#: reset`` then ``The user clicks…``, ``Password:`` then ``- must be 12 characters``) and a
#: fence of several lines stay
_NEXT_EOL = r"(?:\r?\n|(?:\\+r)?\\+n)"
#: A value after a secret's name alone (on the line before, in HTML): as after a Markdown label,
#: generated-looking or picked with a sign; after a password's name (group ``pw``) also picked
#: with a capital and a small letter, or a weak password
_NAMED_VALUE = (_MD_VALUE + "|" + _NOT_A_SETTING + _picked("!@#$%^&+=?")
                + r"|(?(pw)(?:" + _PICKED_CAPITAL + "|" + _WEAK_PASSWORDS + r")|(?!))")
_NEXT_LINE = (
    # (the name and what follows it taken once, atomic: a value that fails is not tried again
    # after each shorter name; and a value has 4 characters before a blank at the least: 256 Ki
    # of "API key:" lines and blank lines took 125 ms, now 67)
    r"(?P<keep>(?>(?:^|(?<=[\s\"])|(?<=\\[nrt]))(?:#{1,6}+[ \t]++(?P<h>)|(?P<e>\*\*|__|\*)(?=[^\W\d_]))?"
    r"(?:(?P<pw>" + _PASSWORD_LABEL + r")|" + _SECRET_COLUMN + r")(?![\w.-])"
    # (a Setext heading: the name alone, then a line of = or -)
    r"(?(e)(?:[:\uff1a]?(?P=e)[ \t]*+[:\uff1a]?)|(?(h)[:\uff1a]?|(?:[ \t]*+[:\uff1a]|[ \t]*+" + _NEXT_EOL + r"[ \t]{0,3}+(?:={3,}+|-{3,}+)[ \t]*+(?="
    + _NEXT_EOL + "))))[ \t]*+" + _NEXT_EOL + r"(?:[ \t]*+" + _NEXT_EOL + r")?+"
    r"(?:[ \t]*+(?P<fence>```|~~~)[\w+-]*+[ \t]*+" + _NEXT_EOL + r"(?P<f>))?+[ \t]*+(?P<q>`)?))(?!\[REDACTED:)(?=[^\s`]{4})"
    + _NOT_A_REFERENCE + r"(?:(?(q)" + _MD_QUOTED + "|(?!))|" + _NAMED_VALUE + ")"
    r"(?(q)(?=`))(?=`?[^\S\r\n]*+(?(f)" + _NEXT_EOL + r"[ \t]*+(?P=fence)|(?:\r?\n|\\+[nr]|\\*\"|\Z)))"
)
_NEXT_WORDS = ("pass", "pwd", "pw", "secret", "token", "key", "credential") + _I18N_PASSWORD_WORDS
#: ... for :data:`_NEXT_LINE`: after one, the rest of the name and its marks, then a line end
_next_line_value = _followed_by(_NEXT_WORDS, r"(?i:word|wd|phrase|s)?[*_: \t\uff1a]{0,5}(?:\r?\n|\\+[nr])")

PROSE_PATTERNS = (
    Pattern.of("secret", ("pass", "token", "secret", "key", "credential"), _BESIDE, requires=((" (", " as "),),
               precheck=_beside_value),
    Pattern.of("secret", _MD_WORDS, _MARKDOWN, requires=(("*", "__", "`", "|", "->", "=>", "\u2192"),),
               flags=re.M, precheck=_markdown_value),
    Pattern.of("secret", _I18N_SECRET_WORDS, _markdown(_I18N_SECRET_NAME), requires=(("*", "__", "`", "|", "->", "=>", "\u2192"),),
               flags=re.M),
    Pattern.of("secret", _PASSWORD_WORDS, _MD_WEAK, requires=(("*", "__", "|"),), flags=re.M),
    *_TABLES,
    Pattern.of("secret", _NEXT_WORDS, _NEXT_LINE, requires=(("\n", "\\n"),), flags=re.M,
               precheck=_next_line_value),
    Pattern.of("secret", ("password", "passphrase", "passwd", "passcode", "token", "secret", "key"),
               _PROSE, requires=((" is ", " was ", " be ", " to "),)),
    Pattern.of("secret", _ADJACENT_WORDS, _ADJACENT, requires=((" ",),), precheck=_adjacent_value),
    Pattern.of("secret", _PAIR_WORDS, _PAIR, requires=((":", "/"),), precheck=_pair_value),
    Pattern.of("secret", ("_key",), _ENV_KEY, requires=(("=",),), precheck=r"_KEY(?:_?[0-9]{1,2})?="),
    Pattern.of("secret", ("key", "salt", "pepper", "seed", "creds"), _NAMED, requires=((":", "=", " to "),),
               precheck=r"(?i)(?:keys?|salt|pepper|seed|creds)\\*[\"']?(?:[ \t]*[:=][ \t]*|[ ]to[ ])\\*[\"']?[\w+/=-]{12}"),
)
