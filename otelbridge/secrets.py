"""The secret detector: which text is a secret, as regular expressions with a cheap pre-test.

:data:`DEFAULT_PATTERNS` are otelbridge's own forms extended with the token formats of Yelp's
``detect-secrets`` plugins (AWS, private key, JWT, Slack, Stripe, GitHub, GitLab, npm, PyPI,
SendGrid, basic auth, keyword). They were chosen by measurement against ``detect-secrets``
itself (``bench/redaction.py``, numbers in ``bench/RESULTS.md``): the library finds a secret
*value* line by line (good for a commit hook) but not its extent in free text — a quoted value
with spaces, a JSON-escaped one, a header to the end of its line — and it misses keys whose
names it does not list; its plugins also cost ~20× more per string. So the regular expressions
are ours, one pass each, a match replaced by ``[REDACTED:{kind}]`` (:class:`~otelbridge.secret_patterns.Pattern`).

Forms covered (the test corpus ``tests/data/secret-forms.jsonl`` holds one example or more of
each; the newer ones are in ``tests/test_secrets.py``): ``KEY=value`` / ``key: value`` /
``"key": "value"`` / ``{\\"key\\": \\"value\\"}`` for every key naming a password, secret,
token, credential, signature, cookie or API/access/private key, in any case style
(``DB_PASSWORD``, ``clientSecret``, ``x-api-key``, ``_authToken``, ``SessionToken``,
``GH_PAT``); name/value pairs whose name is such a key (``{"name": "DB_PASSWORD", "value":
"x"}``, YAML ``- name:`` then ``value:`` with other members between, flow-style ``{name: X,
value: Y}``, CloudFormation's ``ParameterKey``/``ParameterValue``); quoted values to their closing quote (spaces and
punctuation included), ``key: value`` to the end of its line, ``KEY=value`` to the next space
(``&`` included, but in a URL's query ``?password=x&user=y``, ``?key=x``); ``--password X`` and
every flag :func:`names_a_secret` knows (``--secret-access-key X``, ``-Token X``; also as two
arguments of a command line, and in an argv array ``["--password", "X"]``, each element in
either quote as Python's repr writes it); programs' short flags (``mysql -pX``, ``sshpass -p
X``, ``curl -u user:X``, ``curl -u KEY:``, ``ssh-keygen -N X``, ``sqlcmd -P X``, ``echo X |
sudo -S``, ...), SQL's ``PASSWORD 'x'``/``IDENTIFIED BY 'x'``, code that sets a secret's name
(``define('DB_PASSWORD', 'x')``, ``os.environ["API_KEY"] = "x"``, ``'password' => 'x'``) and commands that set a named
value (``aws configure set aws_secret_access_key X``, ``gh secret set K --body X``, ``set -x DB_PASSWORD X``); ``Authorization`` (also a header pair in an array), ``Bearer``, cookies; URL
credentials (a password with ``/ ? # @``; also cut before the ``@``); PuTTY key files' private
lines; PEM/PGP private key blocks (also cut ones, a block's END-terminated tail without its
BEGIN line, and a base64-encoded one: Kubernetes' ``tls.key``); JWTs; vendor tokens (:mod:`otelbridge.secret_tokens`, also cut ones at a string's
end or an ellipsis); e-mail addresses (IDN and ``%40``-encoded); ``<password>x</password>`` XML
elements; YAML values on the next line(s) and block scalars (``password: |``); ``.pgpass`` lines; a table's ``password    X`` row;
Go's ``password := "x"`` and declared types (``password: str = "x"``); YAML's ``- value: x`` before
its ``name:``; ``('password', 'x')`` tuples and ``auth=('u', 'x')``/``HTTPBasicAuth('u', 'x')``/``smtp.login('u', 'x')``
pairs; code's (:mod:`otelbridge.secret_code`: signing keys, setters, comparisons, hashing); tools' own forms (:mod:`otelbridge.secret_tools`: Redis ``AUTH``/``requirepass``/ACLs,
``net use``/``net user``, ``vault kv put``, ``cargo login X``, ``openssl passwd X``, ``<<< X``,
``sqlplus u/X@db``, ``u:X@tcp(h)``, crypt hashes, cookie files, ``psk=``, session cookies, every value
of a Kubernetes Secret, a password field's typed text); arrays of secrets as a key's value
(``{"api_keys": ["x"]}``, YAML's ``- x`` lines). Not values: ``null``, booleans, placeholders
(``${DB_PASSWORD}``); not separators: a test's or compiler's locator (``test_auth.py::test_x``,
``token.ts:12:5``).
"""

from __future__ import annotations

import re

from .secret_patterns import InArgv, InYamlList, Pattern, WithFlagsUnquoted
from .secret_keys import (_ARG, _ASCII_BLANK, _BLOCK_INDICATOR, _JSON_ARRAY, _JSON_BLANK, _KEY_NEEDLES, _KEY_WORD_ONCE, _KEY_WORDS, _LINE,
                          _LINE_START, _NL, _NL_READ, _PLACEHOLDER, _ENDS_IN_KEY_WORD, _NO_CONDITION, _Q, _SECRET_KEY, _SECRET_WORD_IN,
                          _SEP, _STATEMENT, _NO_LINE_VALUE, _WORD, _WORD_START, _YAML_GAP, _YAML_LIST, _NOT_A_PLACEHOLDER, _NOT_A_METAVAR, FLAG_PREFIX, _a_name,
                          _key_value, _secrets_key, _string_text, _then, names_a_secret)
from .secret_listing import PAGE_PATTERNS
from .secret_wrapped import WRAPPED_PATTERNS
from .secret_labels import LABEL_PATTERNS
from .secret_short import SHORT_PATTERNS
from .secret_code import CODE_PATTERNS, SIGNING_KEY
from .secret_tokens import AWS_PREFIXES, BEFORE_JWT, CUT, PRECHECKS, VENDOR_TOKENS
from .secret_tools import NAMED_VALUE, NETLIFY_SECRET_NAME, PASS_PHRASE_ARG, PROGRAM_FLAGS, TOOL_PATTERNS

__all__ = ("DEFAULT_PATTERNS", "names_a_secret")


#: Not the second or a later line of a block of base64 lines (plain, CRLF, JSON-escaped,
#: numbered as a Read shows them: ``     7→``): a block is matched once, from its first line.
_NOT_MID_BLOCK = "".join(rf"(?<![A-Za-z0-9+/=]{eol})" for eol in (
    r"\n", r"\r\n", r"\\n", r"\\\\n", r"\\r\\n", "\\n[ \\d]{6}→", "\\\\n[ \\d]{6}→"))


#: URL schemes whose user:password is a credential (databases, brokers, mail, file transfer,
#: HTTP), where a cut URL without its ``@`` is still redacted.
_CREDENTIAL_SCHEMES = (r"(?i:https?|ftps?|sftp|ssh|postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?"
                       r"|rediss?|amqps?|mssql|sqlserver|oracle|ldaps?|smtps?|imaps?|pop3s?|nats|kafka"
                       r"|clickhouse|snowflake|cockroachdb|couchdb|neo4j|jdbc:[a-z]+)")
#: Where a URL cut before its ``@`` ends: as a cut token (:data:`CUT`), or at a line end, real
#: or escaped, or before `` …`` (``env | cut -c1-40`` prints ``DATABASE_URL=postgres://u:X``).
_URL_CUT = r"(?:" + CUT + r"|(?=\\[nrt]|[ \t]*(?:\r?\n|\u2026|\Z)))"
#: What may lead a file's line: blanks, ``cat -n``'s number and tab, a diff's + or -
_LINE_LEAD = r"[ \t]*+(?:\d++(?:\t|\\t))?+[+-]?+"
#: A YAML list item's text, to its line's end (escaped quotes too: a YAML file in JSON); a bare
#: item of one word (a comment after it; not markdown's `code`, **bold**, [link])
_ITEM = r"(?:[^\r\n\\]|\\++(?![nr]))++"
_ONE_WORD = r"(?![`*\[])(?:[^\s\\\"']|\\++(?![nrt\"'\\]))++[ \t]*(?:#[^\r\n\\]*)?(?:" + _NL + r"|\Z)"
#: The rest of a line, also a JSON-escaped "quoted" text to its closing quote
_TO_LINE_END = r"(?:\\+\"(?:[^\r\n\\]|\\++(?![nr\"]))*+\\+\"|" + _LINE + ")"
#: Functions that take a name, then its value or default (the ``(?i)`` of a lookbehind each)
_SETTERS = ("(?i:define)", "(?i:setdefault)", "(?i:[gs]etenv)", "putenv", "env", "get", "put", "(?i:set)",
            "setItem", "setProperty", "SetEnvironmentVariable")
#: A table's column gap: two blanks or more, a tab (also escaped), then any blanks
_TAB = r"(?:[ \t]{2,}|\t|\\t)[ \t]*+"
#: A flow mapping's ``: value`` of one word, then its next key after a blank (``, host:``,
#: ``, 'host':``, a shorthand ``, host,``) or its closing brace
_FLOW_WORD_THEN_KEY = (r"\\?[\"']?[ \t]*+:[ \t]++[^\s,}\]\"'\\]++[ \t]*+(?:,[ \t]++(?:\\?[\"']?[A-Za-z_$][\w$]*+\\?[\"']?[ \t]*+:"
                       r"|[a-z_$][A-Za-z_$]*+[ \t]*+[,}])|\})")
#: Between an AWS key id and the next field: blanks (also escaped: a JSON string's ``\\t``)
#: around one , : ; | = or a blank
_AWS_PAIR_SEP = r"(?=[ \t,:;|=]|\\t)(?:[ \t]|\\t)*+[,:;|=]?(?:[ \t]|\\t)*+"
#: A short JSON member and its comma, between a name and its value (AWS SSM's
#: ``{"Name": "/prod/db/password", "Type": "SecureString", "Value": "x"}``).
_OTHER_PAIR = (_Q + r"?[\w.-]{1,40}" + _Q + "?" + _JSON_BLANK + ":" + _JSON_BLANK
               + r"(?:" + _Q + r"[^\"'\\\r\n]{0,100}" + _Q + r"|[\w.+/-]{1,40})" + _JSON_BLANK + "," + _JSON_BLANK)
#: ... as a YAML line, a sibling at the same indent (not a list item, not the value; a nested
#: member is more indented: ``valueFrom:`` then ``  secretKeyRef:`` ends the search)
_OTHER_MEMBER = (r"(?!(?i:value|parameter_?value)[\"']?[ \t]*:)[\"']?[\w.-]{1,40}[\"']?[ \t]*:"
                 r"(?:[ \t](?:[^\r\n\\]|\\+[\"']){0,100}+)?")
#: A name that names a secret and the value after it: Kubernetes/ECS env entries as JSON
#: (``{"name": "DB_PASSWORD", "value": "x"}``, also escaped) or YAML (``- name: DB_PASSWORD``
#: then ``value: x`` on the next line, real or escaped), ``{"key": ..., "value": ...}`` pairs,
#: CloudFormation's ``"ParameterKey": "DbPassword", "ParameterValue": "x"``, Azure's ``"keyName":
#: "key1"`` (``az storage account keys list``, whatever the name), Terraform's ``"db_password":
#: {"sensitive": true, "value": "x"}`` (``terraform output -json``): the key test of
#: ``KEY=value`` on the name; the value (group ``keep`` ends before it) as ``_key_value`` takes it.
_NAMED_VALUE = (
    r"(?<![\w.-])(?:(?P<fl>)" + _Q + r"?(?:(?:(?i:name|key|parameter_?key)" + _Q + "?" + _JSON_BLANK + ":" + _JSON_BLANK
    + _Q + r"?(?:[\w.-]*/)*" + _SECRET_WORD_IN + r"|keyName" + _Q + "?" + _JSON_BLANK + ":" + _JSON_BLANK + _Q
    + r"?[\w.-]{1,40})" + _Q + "?" + _JSON_BLANK + "," + _JSON_BLANK + r"|(?<=[\"'])(?:[\w.-]*/)*" + _SECRET_WORD_IN
    + _Q + _JSON_BLANK + ":" + _JSON_BLANK + r"\{" + _JSON_BLANK + ")"
    + "(?:" + _OTHER_PAIR + "){0,3}" + _Q + r"?(?i:value|parameter_?value)"
    r"|(?i:name|key|parameter_?key)[ \t]*:[ \t]*[\"']?(?:[\w.-]*/)*" + _SECRET_WORD_IN + r"[\"']?[ \t]*+(?:#[^\r\n\\]*+)?+" + _NL_READ + _YAML_GAP
    + r"(?P<yi>[ \t]*+)(?:" + _OTHER_MEMBER + _NL_READ + _YAML_GAP + r"(?P=yi)){0,4}(?i:value|parameter_?value))")
#: ... and the value before its name (``{"value": "x", "name": "DB_PASSWORD"}``, CloudFormation's
#: ``ParameterValue`` then ``ParameterKey``, ``<env value="x" name="DB_PASSWORD"/>``): to its
#: closing quote, when that quote, a comma (an attribute: a blank) and such a name follow
_VALUE_THEN_NAME = (
    r"(?P<keep>(?<![\w.-])(?:(?P<q>" + _Q + r")(?i:value|parameter_?value)(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK
    + r"(?P=q)|(?<=\s)(?i:value)=(?P<aq>" + _Q + r")))"
    r"(?!\[REDACTED:)(?:(?!(?<!\\)(?(aq)(?P=aq)|(?P=q))).)++(?=(?(aq)(?P=aq)\s+(?i:name|key)=(?P=aq)|(?P=q)"
    + _JSON_BLANK + "," + _JSON_BLANK + r"(?P=q)(?i:name|key|parameter_?key)(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK
    + r"(?P=q))(?:[\w.-]*/)*" + _SECRET_WORD_IN + r"(?(aq)(?P=aq)|(?P=q)))")

#: ... and as YAML lines (``- value: x`` then ``  name: DB_PASSWORD``, up to 4 other members
#: between): the value to its closing quote or its line's end
_YAML_VALUE_THEN_NAME = (
    r"(?P<keep>(?:(?<![\w.-])|(?<=\\[nrt]))[ \t]*+(?:-[ \t]+)?(?i:value)[ \t]*:[ \t]*(?P<q>" + _Q + r")?)"
    r"(?!\[REDACTED:)(?![{\[|>])(?(q)(?:(?!(?<!\\)(?P=q))(?!\\+n)[^\r\n])+|" + _LINE + r")"
    r"(?=(?(q)(?P=q))[ \t]*" + _NL_READ + _YAML_GAP + r"(?P<yi>[ \t]*+)(?:" + _OTHER_MEMBER + _NL_READ + _YAML_GAP
    + r"(?P=yi)){0,4}"
    r"(?i:name|key)[ \t]*:[ \t]*[\"']?(?:[\w.-]*/)*" + _SECRET_WORD_IN + r"[\"']?[^\S\r\n]*(?:" + _NL
    + r"|\Z|\\*[\"']))")  # (any blank but a line break after the name: U+3000, NBSP)

#: A line of base64 (a PuTTY key file's), whole: up to a line end, the text's end or a quote.
_B64_LINE = r"[A-Za-z0-9+/=]++(?=[ \t]*(?:" + _NL + r"|\Z|\\*[\"']))"

#: --password X, --api-key 'x y', --secret-access-key X, -Token X, -pw X: the flags
#: :func:`names_a_secret` knows (the = form is a key rule); not --password-stdin, nor a
#: shell's comment after the flag (--token # none), nor a boolean (--secret true, --auth none);
#: netlify env:set's --secret takes none: the value after the name is the secret (its name
#: stays, also where no value follows: netlify env:set --secret KEY "$KEY")
_SECRET_FLAG = Pattern.of(
    "secret", _KEY_NEEDLES,
    r"(?P<keep>" + NETLIFY_SECRET_NAME + r"|(?<![\w-])(?!(?<=env:set[ \t])--secret[ \t])(?=-{1,2}+[\w.-]{1,64}+[ \t])" + FLAG_PREFIX + _SECRET_KEY
    + r"(?<![_.-]stdin)[ \t]+)"
    r"(?![-<>|#])(?![^\s\[]{0,24}\[REDACTED:)(?!\\*[\"']?(?i:true|false|none|null)\\*[\"']?(?![\w.-]))" + _NOT_A_PLACEHOLDER + _NOT_A_METAVAR + _ARG,
    requires=(("-",),),
    precheck=r"-(?<![\w-]-)-?+(?=[\w.-]{1,64}+[ \t])[\w.-]*?(?i:" + _KEY_WORDS + r")|env:set[ \t]",
)

#: curl -u KEY: (an API key as the user, the password empty: Stripe's docs), also quoted and
#: --user=KEY:: the user, 8 characters or more (not -u admin:)
_CURL_KEY_USER = Pattern.of(
    "secret", ("curl",),
    r"(?P<keep>" + _then("curl", r"(?:-u\s*|--user[\s=]+)(?P<uq>\\*[\"'])?") + r")(?!\[REDACTED:)"
    + r"[\w.~+/=-]{8,}+(?=:(?(uq)(?P=uq)|(?:\s|\Z|\\[nrt])))",
    requires=(("-u", "--user"), (":",)),
)

#: The default patterns, in the order they apply (earlier kinds win on overlapping text; every
#: later pattern leaves a ``[REDACTED:`` marker alone).
DEFAULT_PATTERNS: tuple[Pattern, ...] = (
    # PEM/PGP private key blocks; an unterminated block (a cut preview) runs to the end
    Pattern.of(
        "private_key",
        ("private key",),
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        re.S,
    ),
    # the end of such a block without its BEGIN line (``tail key.pem``, a Read from an offset):
    # base64 lines, real or JSON-escaped line ends, a Read's ``   12→`` line numbers between
    Pattern.of(
        "private_key",
        ("-----end",),
        r"(?<![A-Za-z0-9+/=])" + _NOT_MID_BLOCK + r"(?:[A-Za-z0-9+/=]{16,76}" + _NL
        + r"(?:[ \t]*\d+(?:→|\t))?){1,150}+"
        r"(?:[A-Za-z0-9+/=]{1,15}" + _NL + r"(?:[ \t]*\d+(?:→|\t))?)?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----",
        precheck=r"-----END [A-Z0-9 ]*PRIVATE KEY",
    ),
    # a PuTTY key file (PuTTY-User-Key-File-3: ...): the base64 lines after Private-Lines: N
    Pattern.of(
        "private_key",
        ("private-lines",),
        r"(?P<keep>" + _WORD_START + r"Private-Lines:[ \t]*\d+[ \t]*" + _NL + r")(?!\[REDACTED:)" + _B64_LINE
        + r"(?:" + _NL + _B64_LINE + r")*",
    ),
    # user:pass@ (or token@) in URLs, not a placeholder (``{password}@``, ``$TOKEN@``): scheme and host are kept
    # (also JSON-escaped: https:\/\/); a password may hold / ? # @ after its user's ':', up to
    # the last @ before the host (not a port: http://localhost:3000/@vite/client)
    Pattern.of("url_credentials", ("://", ":\\/\\/"),
               # (a scheme from its first character on, taken whole: linear in a long a.b.c...)
               r"(?P<keep>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+:(?://|\\/\\/))"
               r"(?:[^\s/?#@:\[\]\"'<>\\]*:(?!\d+(?:[/?#\\]|$))(?!(?-i:" + _PLACEHOLDER + r")@)"
               r"(?:[^\s@:\"'<>]|:(?!//)|@(?=[^\s@/\"'<>]{0,256}@)){1,256}(?=@)"
               r"|(?!(?:[^\s/?#@:\[\]\"'<>\\]*:)?(?-i:" + _PLACEHOLDER + r")@)"
               r"(?!(?:(?<=http://)|(?<=https://)|(?<=ssh://)|(?<=git://))(?-i:[a-z][a-z._-]{0,31})@)"
               r"[^\s/?#@\[\]\"'\\]+(?=@))",
               re.I),
    # ... and cut before the @ (a CLI shortened the text): user:pass up to the end of the
    # string, an ellipsis or a closing quote, with no / @ or space between, for a scheme that
    # takes a password (not docker://alpine:3.18, s3://bucket:key); not host:port (digits, and
    # a sentence's end: ``running at http://localhost:3000.``), nor a placeholder (``:$PORT``,
    # ``:{port}``, ``:port``)
    Pattern.of("url_credentials", ("://", ":\\/\\/"),
               r"(?P<keep>\b" + _CREDENTIAL_SCHEMES + r":(?://|\\/\\/))(?!\[REDACTED:)[^\s/?#@:\[\]\"'<>\\]*:"
               r"(?!\d+[.!]*+" + _URL_CUT + r")(?![${%]|port" + _URL_CUT + r")(?:[^\s/?#@:\"'`<>\\.\u2026,;)\]}]|\.(?!\.\.))++"
               + _URL_CUT,
               re.I, precheck=r"(?i):(?://|\\/\\/)[^\s/?#@:]*:[^\s/?#@:]+(?:\u2026|\.\.\.|\Z|[\"']|\\[nrt]"
               r"|[ \t]*(?:\r?\n|\u2026|\Z))"),
    # a PEM private key in base64 (Kubernetes' tls.key, kubeconfig's client-key-data): the
    # encoding of -----BEGIN, "PRIVATE KEY" at any of the three offsets, the rest of the
    # blob, and its next lines when wrapped (base64 -w 76); not a certificate's
    Pattern.of(
        "private_key",
        ("ls0tls1crudjti",),
        r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,40}?(?:UFJJVkFURSBLRV|BSSVZBVEUgS0VZ|UklWQVRFIEtFW)[A-Za-z0-9+/]*+={0,2}"
        r"(?:" + _NL + r"[A-Za-z0-9+/]{60,100}+={0,2}(?=" + _NL + r"|[\s\"'\\]|\Z))*"
        r"(?:" + _NL + r"[A-Za-z0-9+/]{1,75}+={0,2}(?=" + _NL + r"|[\"'\\]|\Z))?",
    ),
    *(Pattern.of(kind, needles, regex) for kind, needles, regex in BEFORE_JWT),
    # JWTs (a base64url JSON header starts with eyJ), also cut ones, and JWEs' five segments
    Pattern.of("jwt", ("eyj",), r"eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){0,2}(?:\.[A-Za-z0-9_-]+){0,2}"),
    *(Pattern.of(kind, needles, regex, precheck=PRECHECKS.get(kind)) for kind, needles, regex in VENDOR_TOKENS),
    # an AWS secret access key without its label: 40 base64 characters, mixed case, digits, a
    # '/' or '+' (hex digests, ids, paths have not all of these), not after a '.' (a host's path)
    Pattern.of(
        "aws_secret_key", ("/", "+"),
        r"(?<![A-Za-z0-9/+=.])(?=[A-Za-z0-9/+]{0,39}[/+])(?=[A-Za-z0-9/+]{0,39}[A-Z])"
        r"(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    # ... and one without a '/' or '+' next to its access key id (a marker by now), also after
    # a date (the AWS CLI's text output): a credentials CSV's row, new BasicAWSCredentials(
    # "AKIA...", @"X"), AKIA...:X, ACCESSKEY AKIA... 2020-01-01T00:00:00+00:00 X Active
    Pattern.of(
        "aws_secret_key", AWS_PREFIXES,
        r"(?P<keep>\[REDACTED:aws_access_key\](?:\\*[\"'`])?(?:" + _AWS_PAIR_SEP + r"\d{4}-\d\d-\d\d[\w:.+-]*+)?"
        + _AWS_PAIR_SEP + r"@?(?:\\*[\"'`])?)(?!/)"
        r"(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    # a signing key given to a library's call as a literal (jwt.sign(p, 'X')): before the key
    # rules, which then leave the call, a marker in it (token = jwt.encode(p, "[REDACTED:secret]"))
    SIGNING_KEY,
    PASS_PHRASE_ARG,  # openssl's -passout pass:X, one word (before the key rules' pass:X words)
    # Bearer <token> wherever it stands (a header value the key rule below does not see), also
    # Bearer: <token> and after an _ (a tool's name: mcp__srv__Bearer <token>)
    Pattern.of("bearer", ("bearer",), r"(?P<keep>(?<![A-Za-z0-9])bearer(?::[ \t]*|\s+))(?!\[REDACTED:)[A-Za-z0-9._~+/=-]{8,}", re.I),
    # Basic <base64> after Authorization or a key naming a secret, in any form (Go's
    # map[Authorization:[Basic x]], authorization=Basic x, AUTH_HEADER="Basic x"): before the
    # key rules, whose KEY=value form would take the scheme's word alone
    Pattern.of("authorization", ("basic",),
               r"(?P<keep>(?:\b(?i:(?:proxy-)?authorization)|(?<![\w.-])" + _SECRET_WORD_IN + r")"
               r"[^\w\r\n]{1,12}?(?i:basic)[ \t]+)(?!\[REDACTED:)[A-Za-z0-9+/]{6,}={0,2}",
               precheck=r"(?i)basic[ \t]"),
    # Authorization: <scheme> <value> to the line's end (SigV4's Credential=…, Signature=…)
    Pattern.of("authorization", ("authorization",), _key_value(r"(?i:\b(?:proxy-)?authorization)"),
               requires=((":", "="),)),
    # a header pair as an array: [["Authorization", "Basic x"]], ("authorization", 'Token x'):
    # the value to its closing quote
    Pattern.of("authorization", ("authorization",),
               r"(?P<keep>\b(?i:(?:proxy-)?authorization)(?P<q>" + _Q + r")" + _JSON_BLANK + "," + _JSON_BLANK
               # not a list of header names or words: ["Authorization", "Content-Type"]
               + r"(?P=q))(?![A-Za-z]+(?:-[A-Za-z]+)*(?P=q))(?!\[REDACTED:)(?:(?!(?<!\\)(?P=q)).)+",
               requires=((",",),)),
    # ... and the other headers that carry a credential, as array pairs: ["X-API-Key", "x"]
    # (a list of names, ["Cookie", "Authorization"], is not one)
    Pattern.of("secret", ("api-key", "token", "cookie"),
               r"(?P<keep>(?<=[\"'])(?i:x-api-key|api-key|x-auth-token|private-token|x-access-token"
               r"|set-cookie|cookie)(?P<q>" + _Q + r")" + _JSON_BLANK + "," + _JSON_BLANK
               + r"(?P=q))(?![A-Za-z]+(?:-[A-Za-z]+)*(?P=q))(?!\[REDACTED:)(?:(?!(?<!\\)(?P=q)).)+",
               requires=((",",),)),
    Pattern.of("aws_secret_key", ("secret",),
               _key_value(r"(?i:\baws_?secret_?access_?key|secret_?access_?key)"),
               requires=((":", "="),)),
    # <password>x</password>, <ns:apiKey id="1">x</ns:apiKey>: the element's text
    Pattern.of(
        "secret",
        _KEY_NEEDLES,  # every key word _SECRET_WORD_IN finds (dsn, sig, cookie, pat too)
        r"(?P<keep><(?:[\w.-]+:)?" + _SECRET_WORD_IN + r"(?:\s[^<>]*)?>)(?!\[REDACTED:)[^<]+(?=</)",
        requires=(("</",),),
    ),
    # a YAML block scalar (password: |, private_key: >-, token: |2 # note): every line as
    # indented as its first, whatever it holds (key: value, - x), blank lines between
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?<![\w.-])" + _SECRET_WORD_IN + r"[\"']?[ \t]*:[ \t]*(?=[|>])" + _BLOCK_INDICATOR.removesuffix(r"|\Z)") + ")"
        + r"(?:[ \t]*+" + _NL + r")*(?P<indent>[ \t]++))(?!\[REDACTED:)" + _LINE
        + r"(?:(?:" + _NL + r"[ \t]*+(?=" + _NL + r"))*" + _NL + r"(?P=indent)" + _LINE + r")*",
        requires=((":",), ("|", ">"), ("\n", "\\n")),
        precheck=r":[ \t]*" + _BLOCK_INDICATOR.removesuffix(r"|\Z)") + ")",
    ),
    # YAML with the value on the next line(s), more indented (also a block scalar's | or >),
    # in plain text or JSON-escaped (``\\n``, ``\\\\n``); not a nested mapping or list (``credentials:``
    # then ``  user: x``), whose keys are seen one by one below
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?<![\w.-])" + _NO_CONDITION + _SECRET_WORD_IN + r"[\"']?[ \t]*:[ \t]*(?:[|>][-+]?[ \t]*)?"
        + r"(?:(?<=[ \t:])#[^\r\n\\]*+)?" + _NL + r"(?:[ \t]*+(?:#[^\r\n\\]*+)?+" + _NL + r"){0,8}+(?P<indent>[ \t]++))"
        r"(?!#)(?!\[REDACTED:)(?![\w\"'.-]+[ \t]*:(?:[ \t]|$|\\+n))(?!- )(?!" + _STATEMENT + ")(?!" + _NO_LINE_VALUE + ")"
        + _LINE + r"(?:" + _NL + r"(?P=indent)" + _LINE + r")*",
        requires=((":",), ("\n", "\\n")),  # the value is on a later line: a line end, real or escaped
        precheck=_KEY_WORD_ONCE + r"[\"']?[ \t]*:",
    ),
    # a template's default for a secret, its key before the template or its path ending in a
    # key word, before or after the default (not passwordSecretName: {{ … | default "db-creds" }};
    # Helm's password: {{ .Values.db.password | default "x" | quote }}, {{ default "x"
    # .Values.db.password }}, Jinja's default('x')): the literal
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?:(?<![\w.-])" + _ENDS_IN_KEY_WORD + r"\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?\{\{-?[ \t]*+(?:[^}|\r\n]{0,100}+\|[ \t]*+)?"
        r"|\{\{-?[ \t]*+" + _ENDS_IN_KEY_WORD + r"[ \t]*+\|[ \t]*|\{\{-?[ \t]*+(?P<before>))default[ \t]*\(?[ \t]*\\*[\"'])"
        r"(?!\[REDACTED:)(?!(?i:true|false|yes|no|on|off|null|none)\\*[\"'])"
        r"(?(before)[^\"'\\\r\n]++(?=\\*[\"']\)?[ \t]++" + _ENDS_IN_KEY_WORD + r")|[^\"'\\\r\n]+)",
        requires=(("{{",), ("default",)),
        precheck=r"\{\{[^}\r\n]{0,100}?default[ \t]*\(?[ \t]*\\*[\"']",
    ),
    # a key ending its line, then a line that is one word (a prompt and what was typed at it,
    # text blocks joined: "Password:" / "Hx9Qz8Wv7Ut", blank lines or a code fence between), in
    # plain text or JSON-escaped; not a sibling key (YAML's next ``user: x``), a list item or a
    # comment
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?<![\w.-])" + _SECRET_WORD_IN + r"[\"']?[ \t]*:[ \t]*" + _NL + r"(?:[ \t]*+" + _NL + r"){0,2}+(?:(?:```|~~~)[\w-]*+[ \t]*+" + _NL + r")?+)"
        r"(?!#)(?!- )(?!\[REDACTED:)(?![\w\"'.-]+[ \t]*:)[^\s\\\"']++(?=[^\S\r\n]*(?:" + _NL + r"|\Z|\\*[\"'](?:[,}\]]|\Z)))",
        requires=((":",), ("\n", "\\n")),
        precheck=_KEY_WORD_ONCE + r"[\"']?[ \t]*:[ \t]*(?:\r?\n|\\)",
    ),
    # a URL's query: ?password=x&user=y, &amp;sig=x, ?key=x (an API key: Google Maps): to & or #
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>[?&](?:amp;)?(?:" + _SECRET_WORD_IN + r"|[\w.-]*?(?i:key))=)(?!\[REDACTED:)[^&#\s\"'<>\\]+",
        requires=(("=",), ("?", "&")),
        precheck=r"(?i)[?&](?:amp;)?(?=[\w.-]*?" + _KEY_WORDS + r")[\w.-]*+=",
    ),
    # Laravel's APP_KEY=base64:..., any *_KEY: base64:...
    Pattern.of(
        "secret",
        ("base64:",),
        # (the word taken whole, then its end tested: linear in a long word)
        r"(?P<keep>(?<![\w.-])[A-Za-z][\w.-]*+(?<=[kK][eE][yY])\\*[\"']?[ \t]*[=:][ \t]*(?:\\*[\"'])?)"
        r"base64:[A-Za-z0-9+/]{16,}={0,2}",
    ),
    # {"name": "DB_PASSWORD", "value": "x"}, - name: DB_PASSWORD / value: x (_NAMED_VALUE)
    Pattern.of("secret", ("value",), _key_value(_NAMED_VALUE, flow=True), requires=((":",),),
               precheck=r"(?i)value\\*[\"']?[ \t]*:"),
    Pattern.of("secret", ("value",), _VALUE_THEN_NAME, requires=((":", "="),),
               precheck=r"(?i)value(?:\\*[\"'][ \t]*:|=\\*[\"'])"),
    Pattern.of("secret", ("value",), _YAML_VALUE_THEN_NAME, requires=((":",), ("\n", "\\n")),
               precheck=r"(?i)value[ \t]*:(?:(?:[^\n\\]++|\\++(?!n))*+(?:\n|\\++n)[ \t]*+(?:\d++(?:\u2192|\t)[ \t]*+)?){1,5}?"
               r"(?:name|key)[ \t]*:"),
    # PowerShell's ConvertTo-SecureString [-AsPlainText] [-Force] [-String] X (before the key
    # rule: $pw = ConvertTo-...)
    Pattern.of("secret", ("convertto-securestring",),
               r"(?P<keep>\b(?i:convertto-securestring)\s+(?:-(?i:string|asplaintext|force)\s+)*+)(?!-)(?![\"']?\$)(?!\[REDACTED:)" + _ARG),
    # a user and password pair: auth=('ann', 'x') (requests, httpx), HTTPBasicAuth('ann', 'x'),
    # aiohttp.BasicAuth('ann', 'x'), HTTPDigestAuth, smtp.login('ann', 'x'), db.auth(user, 'x'),
    # (the user also a name or a call: os.Getenv("U")),
    # Go's SetBasicAuth, the classes of a user and password or a key id and secret
    # (.NET's NetworkCredential, Java's PasswordAuthentication("ann", "x".toCharArray()),
    # UsernamePasswordCredentials, Dropwizard's BasicCredentials, new BasicAWSCredentials,
    # AwsBasicCredentials.create, new AWS.Credentials, Go's credentials.NewStaticCredentials,
    # minio's NewStaticV4, Spring's UsernamePasswordAuthenticationToken[.unauthenticated] and
    # TestingAuthenticationToken, Shiro's UsernamePasswordToken, OkHttp's Credentials.basic, AWS's
    # BasicSessionCredentials, Azure's StorageSharedKeyCredential, Go's url.UserPassword, neo4j's
    # AuthTokens.basic;
    # not any class named for credentials: NewSharedCredentials(path, "profile")): the second
    # string to its closing quote
    Pattern.of(
        "secret",
        ("auth", "credential", "login(", "passwordtoken", "userpassword("),
        r"(?P<keep>(?:(?<![\w.-])" + _SECRET_WORD_IN + r"[ \t]*=[ \t]*|(?<![\w.])(?:[\w.]*\.)?(?:HTTP)?(?:Basic|Digest|Proxy)Auth\w*"
        r"|(?<=\w)\.(?:login|auth|authenticate)|\bSetBasicAuth"
        r"|(?<![\w.])(?:[\w.]*\.)?(?:(?:Basic(?:AWS)?|AwsBasic|UsernamePassword|Password|Network)Credentials?(?:\.create)?"
        r"|AWS\.Credentials|Credentials\.basic|UsernamePassword(?:Authentication)?Token(?:\.(?:un)?authenticated)?"
        r"|PasswordAuthentication|TestingAuthenticationToken|NewStatic(?:V4|Credentials(?:Provider)?)"
        r"|(?:Basic|Aws)SessionCredentials(?:\.create)?|(?:AzureNamedKey|StorageSharedKey|NewSharedKey)Credential"
        r"|UserPassword|AuthTokens\.basic))"
        r"\([ \t]*(?:(?P<uq>" + _Q + r")(?:(?!(?P=uq))[^\r\n]){0,200}?(?P=uq)|[$\w.\[\]>-]{1,60}+(?:\([^()\r\n,]{0,60}\))?)"
        r"[ \t]*,[ \t]*(?P<vq>" + _Q + r"))"
        r"(?!\[REDACTED:)(?:(?!(?<!\\)(?P=vq))[^\r\n])+(?=(?P=vq)(?:\.\w+\(\))?[ \t]*[,)])",
        requires=(("(",), (",",)),
        precheck=r"(?:=[ \t]*|Auth\w*|Credentials?|Credential|PasswordToken|authenticated|NewStatic\w*|UserPassword"
                 r"|\.basic|\.create|\.login)\(",
    ),
    # a (name, value) pair as a tuple or an array of two: ('password', 'x'), ("api_key", "x"),
    # [('user', 'u'), ('token', 'x')], ["password", "x"], [["DB_PASSWORD", "x"]] (not a call's
    # arguments: fields('password', 'email'); not a list of names, words without a digit or in
    # lower case: ["password", "email"], ["AUTHORS", "index.js"], ["password", "oauth2"])
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?<![\w\])])(?:(?P<br>\[)|\()" + _JSON_BLANK + r"(?P<nq>" + _Q + r")" + _SECRET_WORD_IN
        + r"(?P=nq)" + _JSON_BLANK + "," + _JSON_BLANK + r"(?P<vq>" + _Q + r"))"
        r"(?!\[REDACTED:)(?(br)(?!(?:[a-z][a-z0-9._-]*+|[A-Za-z][A-Za-z._-]*+)(?P=vq)))"
        r"(?:(?!(?<!\\)(?P=vq))[^\r\n])+(?=(?P=vq)[ \t]*,?" + _JSON_BLANK + r"(?(br)\]|\)))",
        requires=(("(", "["), (",",)),
        precheck=r"(?i)[(\[]" + _JSON_BLANK + r"\\*[\"'][\w.-]*?" + _KEY_WORD_ONCE.removeprefix("(?i)")
        + r"\\*[\"']" + _JSON_BLANK + ",",
    ),
    # code: a secret's name then a quoted value as a setter's or getter's arguments
    # (define('DB_PASSWORD', 'x'), os.Setenv, setdefault, getenv/env/get with a default,
    # put, set, setItem, setProperty, SetEnvironmentVariable), a subscript assigned
    # (os.environ["API_KEY"] = "x", $db['password'] = 'x'), a fat comma ('password' => 'x'):
    # found from their ( [ or =>
    *(Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>" + start + r"(?:[\w.-]*/)*" + _SECRET_WORD_IN + end + r"[ \t]*(?P<vq>" + _Q + r"))"
        r"(?!\[REDACTED:)(?:(?!(?<!\\)(?P=vq)).)+",
        requires=requires, precheck=precheck,
    ) for start, end, requires, precheck in (
        (r"(?:\((?P<fn>" + "|".join(rf"(?<=\b{f}\()" for f in _SETTERS) + r")|\[)[ \t]*(?P<nq>" + _Q + ")",
         r"(?P=nq)[ \t]*(?(fn),|\][ \t]*=(?!=))", (("(", "["), (",", "=")),
         r"(?i)[(\[][ \t]*\\*[\"'][\w./-]*?" + _KEY_WORD_ONCE.removeprefix("(?i)")),
        (r":?(?<![\w.-])(?P<fq>" + _Q + r")?", r"(?(fq)(?P=fq))[ \t]*=>", (("=>",),),
         _KEY_WORD_ONCE + r"\\*[\"']?[ \t]*=>"))),
    # a .properties file's dotted key starting its line (indented, numbered by cat -n, a diff's
    # line): spring.datasource.password=a b c to the line's end (no shell variable has a dot;
    # after an escaped line end the key is read from the escape's n)
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        _key_value(r"(?:(?:" + _LINE_START + r"|(?<=\\n))" + _LINE_LEAD + r"|(?<=\\)(?=n))(?=[\w-]++\.[\w.-]*+=)"
                   + _SECRET_WORD_IN, lines=True),
        requires=(("=",), (".",)),
        precheck=r"(?m)(?:^|(?<=\\n)|(?<=\u2192))" + _LINE_LEAD + r"[\w-]++\.[\w.-]*+=",  # (each line's first word, once)
    ),
    # password: x, "token": "x y", api_key=x, {\\"clientSecret\\": \\"x\\"}, Cookie: a=1; b=2, the password is: x ...
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        # (the first key of a flow mapping, {password: x}, {'password': pw}, or a later one whose
        # value is one word before the next key or the closing brace, {user: u, password: pw,
        # host: h}, {'user': u, 'password': pw, 'host': h}: its value ends at , } or ])
        # (not kubectl's --from-file=password=PATH: a file's path, read for the value)
        _key_value(r"(?<![\w.-])(?<!--from-file=)(?<!--from-file )(?:(?:(?<=\{)|(?<=\{[ \t])|(?<=\{[\"'])|(?<=\{[ \t][\"'])|(?<=\{\\\")|(?<=\{[ \t]\\\")"
                   r"|(?:(?<=,[ \t])|(?<=,[ \t][\"'])|(?<=,[ \t]\\\"))(?=" + _SECRET_WORD_IN + _FLOW_WORD_THEN_KEY
                   + r"))(?P<fl>))?" + _SECRET_WORD_IN, flow=True),
        requires=((":", "="),),
        precheck=_KEY_WORD_ONCE + r"\\*[\"']?(?:[ \t]*+" + _NL + r")*+[ \t]*(?:\?|\|\||\*?(?:string|\[\]byte)[ \t]*|(?i:is|was)[ \t]*)?[:=]",
    ),
    # an array of secrets as a key's value: {"api_keys": ["X", "Y"]}, passwords = ['X'], YAML's
    # api_keys: then - X lines (at one indent; comment and blank lines between): the strings
    # (the items) in a row, whole, from the first one's quote to the last one's (a list that
    # starts with a word or a name, {"credentials": ["aws", "GCP_KEY"]}, or a placeholder lists
    # names); a bare item is one word (a markdown list's item is prose)
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>" + _secrets_key(_JSON_ARRAY) + r"(?P<vq>" + _Q + r"))(?!\[REDACTED:)(?!" + _a_name("(?P=vq)") + r")"
        r"(?!" + _PLACEHOLDER + r"(?P=vq))" + _string_text("vq", "+") + r"(?:(?P=vq)" + _JSON_BLANK + ","
        + _JSON_BLANK + r"(?P=vq)" + _string_text("vq") + ")*+",
        requires=(tuple("[" + c for c in ("\"", "'", "\\", " ", "\t", "\n", "\r")),),
        precheck=r"[:=]" + _JSON_BLANK + r"\[" + _ASCII_BLANK + _Q,  # (led by a character set: a fast scan)
    ),
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        # (a YAML key starts its line: not prose's "the job needs a token:" before a markdown list)
        r"(?P<keep>(?:" + _LINE_START + r"|(?<=[\"'\t]))[^\S\r\n]*+(?:-[ \t]++)?+[\"']?+" + _secrets_key(_YAML_LIST)
        + r"(?P<li>[ \t]*+)-[ \t]+)(?=(?P<vq>\\*[\"'])?+)(?!\[REDACTED:)(?![\w.-]+[ \t]*:(?:[ \t]|$|\\+n))"
        r"(?!(?(vq)(?P=vq))(?:" + _a_name("") + "|" + _PLACEHOLDER + r")(?(vq)(?P=vq))[ \t]*(?:" + _NL + r"|\Z))"
        r"(?(vq)|(?=" + _ONE_WORD + "))" + _ITEM + r"(?:" + _NL_READ + _YAML_GAP + r"(?P=li)-[ \t]+(?=\\*[\"']|" + _ONE_WORD + ")"
        + _ITEM + r")*+",
        requires=((":\n", ":\r", ":\\"), ("- ", "-\t")),
        precheck=r":" + _NL_READ + _YAML_GAP + r"[ \t]*-[ \t]",  # (led by a literal: a fast scan)
    ),
    _SECRET_FLAG,
    # ... and in an argv array: ["deploy", "--password", "X"], also escaped, in single quotes
    InArgv(_SECRET_FLAG, precheck=r"[\"']-{1,2}+[\w.-]*?(?i:" + _KEY_WORDS + r")[\w.-]*\\*[\"']" + _JSON_BLANK + ","),
    # ... and in a YAML block sequence (a container's args: - --client-secret, then - X)
    InYamlList(_SECRET_FLAG, precheck=r"-[ \t]++\\*[\"']?-{1,2}+[\w.-]*?(?i:" + _KEY_WORDS
               + r")[\w.-]*(?:\\*[\"'])?[ \t]*(?:#[^\r\n]*)?(?:\r?\n|(?:\\r)?\\n)"),
    # programs' password flags, in an argv array as on a command line: ["sshpass", "-p", "X"],
    # ["mysql", "-uroot", "-pX"], ["curl", "-u", "u:X"]
    InArgv(PROGRAM_FLAGS),
    PROGRAM_FLAGS,  # programs' password flags: mysql -pX, sshpass -p X, ... (secret_tools)
    WithFlagsUnquoted(PROGRAM_FLAGS),  # ... a flag quoted whole: mysql '-pX', 7z a "-pX Y"
    _CURL_KEY_USER,
    InArgv(_CURL_KEY_USER),
    NAMED_VALUE,  # a command that sets a named value: aws configure set K X, ... (secret_tools)
    # SQL: CREATE/ALTER USER|ROLE|LOGIN or GRANT ... [WITH] PASSWORD 'x', IDENTIFIED [WITH plugin] BY
    # 'x' (or a word: Oracle's), SET PASSWORD ... = 'x': the quoted string ('' inside)
    Pattern.of(
        "secret",
        ("password", "identified"),
        r"(?P<keep>\b(?i:(?:(?:create|alter)\s+(?:user|role|login)|grant)\b[^;\r\n]{0,200}?(?:\bpassword(?:\s*=)?+"
        r"|(?P<ib>\bidentified\s+(?:with\s+\S+\s+)?by)(?:\s+password)?)|\bset\s+password\b[^;\r\n=]{0,100}="
        r"(?:\s*password\s*\()?)\s*+(?P<sq>[\"'])?+)(?!\[REDACTED:)"
        r"(?(sq)(?:(?!(?P=sq))[^\r\n]|'')+|(?(ib)[^\s;'\"\\,)]+|(?!)))",
        precheck=r"(?i)\b(?:(?:create|alter|set)\s+(?:user|role|login|password)\b|grant\s)",
    ),
    # aws ssm put-parameter --value X of a SecureString or of a name naming a secret (either
    # before or after --value)
    Pattern.of(
        "secret",
        ("put-parameter",),
        r"(?P<keep>\bput-parameter\b(?=[^\n|;&]{0,400}?\s--(?:type[\s=]+[\"']?SecureString|name[\s=]+[\"']?"
        r"(?:[\w.-]*/)*" + _SECRET_WORD_IN + r"))[^\n|;&]{0,400}?\s--value(?:\s+|=))(?!-)(?!\[REDACTED:)" + _ARG,
        requires=(("--value",),),
    ),
    # a Dockerfile's ENV KEY value (its older form, without =), Apache's SetEnv KEY value, to the
    # line's end; C's #define KEY "value", the string (#define TOKEN_EOF 0 is a lexer's constant,
    # "Enter password: " a prompt)
    *(Pattern.of("secret", needles,
                 r"(?P<keep>" + start + r"[ \t]+" + _SECRET_WORD_IN + r"[ \t]+)(?!=|\\++(?!\\*\"))(?!\[REDACTED:)" + value,
                 requires=requires)
      for needles, start, requires, value in (
          (("env",), _WORD_START + r"(?<![$-])ENV", (("ENV",),), _TO_LINE_END),
          (("setenv",), r"SetEnv(?<![A-Za-z0-9_]SetEnv)", (("SetEnv",),), _TO_LINE_END),
          (("define",), r"#[ \t]*define", (("#",),),
           r"\(?(?:L|u8|u|U|@)?(?P<dq>\\*\")(?![A-Za-z]*+(?P=dq))[^\s\"\\]++(?P=dq)\)?"))),
    *CODE_PATTERNS,
    *TOOL_PATTERNS,
    *LABEL_PATTERNS,
    *SHORT_PATTERNS,
    *PAGE_PATTERNS,  # (Markdown, HTML, then a listing's lines without their numbers)
    # vault login TOKEN (not -method=..., not key=value arguments)
    Pattern.of("secret", ("vault login",),
               r"(?P<keep>\bvault\s+login\s+)(?!-)(?![\w.-]+=)(?!\[REDACTED:)" + _ARG),
    # a secret piped to a command that reads it: echo X | docker login --password-stdin,
    # gh auth login --with-token, glab auth login --stdin, vault login -, wrangler secret put,
    # gh/doppler secret(s) set, firebase functions:secrets:set, docker secret create, kubectl
    # create secret (--from-file=K=/dev/stdin), gcloud secrets create/versions add, vercel env
    # add, gpg --passphrase-fd 0, ansible-vault encrypt_string, sudo -S, chpasswd, passwd
    # --stdin; also printf '%s\n' X (not echo $VAR, nor echo \"$VAR\" in a tool call's JSON)
    Pattern.of(
        "secret",
        ("--password-stdin", "--with-token", "secret put", "secret set", "secret create", "secrets create",
         "versions add", "env add", "sudo", "chpasswd", "--stdin", "secrets set", "secrets:set", "vault login",
         "create secret", "passphrase-fd", "encrypt_string"),
        r"(?P<keep>\b(?:echo\s+(?:-[neE]+\s+)?|printf\s+(?:--\s+)?(?:(?P<fq>\\*[\"']?)%s(?:\\+n)?(?P=fq)\s+)?))(?!(?:\\*[\"'])?\$)(?!\[REDACTED:)" + _ARG
        + r"(?=\s*\|[^\n|]*?(?:--password-stdin|--with-token|\bsecrets?[\s:]+(?:put|set|create)|\bsecrets\s+versions\s+add"
        r"|\benv\s+add|\bchpasswd|\blogin\s(?:[^\n|]{0,100}?\s)?--stdin|\bvault\s+login(?=\s+-(?![\w-]))"
        r"|\bcreate\s+secret|--passphrase-fd\s+0|\bencrypt_string"
        r"|\b(?:sudo|passwd)\s(?:[^\n|]{0,100}?\s)?(?:-[a-zA-Z]*S|--stdin))\b)",
        requires=(("echo", "printf"), ("|",)),
    ),
    # ~/.netrc: machine HOST login USER password X (one line or several); default login ...
    # password X (a login or account first: not prose, "the default password is")
    Pattern.of(
        "secret",
        ("machine", "default"),
        r"(?P<keep>" + _WORD_START + r"(?:machine" + _SEP + _WORD + r"|default)(?:" + _SEP
        + r"(?:login|account|port|protocol)" + _SEP + _WORD + r")+" + _SEP + r"password" + _SEP
        + r")(?!\[REDACTED:)" + _WORD,
        requires=(("password",),),
    ),
    # .NET appSettings <add key="DbPassword" value="X" />, <env name="DB_PASSWORD" value="X"/>,
    # name=DB_PASSWORD value=X, the AWS CLI's Name=DB_PASSWORD,Value=X and
    # ParameterKey=DbPassword,ParameterValue=X: quoted to the closing quote, else to the next
    # space or comma (a name of a path's characters, its key word within its first 100: a name
    # read over '=' to every end of a long word from each key= in it took minutes on 256 Ki of
    # key=key=…)
    Pattern.of(
        "secret",
        ("value",),
        r"(?P<keep>\b(?i:key|name|parameterkey)\s*=\s*(?P<nq>\\*[\"']?)[\w./:-]{0,100}?" + _SECRET_KEY
        + r"(?P=nq)(?:\s+|,)(?i:value|parametervalue)\s*=\s*\\*[\"']?)(?!\[REDACTED:)"
        r"(?:(?<=[\"'])[^\"'\\]+|(?<![\"'])[^\s\"'<>\\,]+)",
        requires=(("key", "name", "Key", "Name", "KEY", "NAME"), ("=",)),
    ),
    # a table's row: a secret's key at a line's start, two blanks or a tab, one word to the
    # line's end (vault kv get's Key/Value table, tab-separated output); one pattern per kind of
    # line start, each found from its literal (a lookbehind at every position costs 4 µs/string)
    *(Pattern.of("secret", _KEY_NEEDLES,
                 r"(?P<keep>" + start + r"(?=[\w.-]++" + _TAB + r"(?:[ \t]*+[^\s\\\"']++){1}+[ \t]*(?:\r?\n|\\+[nr]|\Z))"
                 + _SECRET_WORD_IN + _TAB + r")(?!\[REDACTED:)[^\s\\\"']++", requires=(("  ", "\t", "\\t"),))
      for start in (r"\A", r"\n", r"\\n", "\u2192")),
    # ~/.pgpass: host:port:database:user:password (a port or *), a word of its own; not a time
    # range (sun:06:00-sun:14:00) nor a fingerprint (1f:51:ae:b8:...). Its needles are the colon
    # and the port's first character: a colon alone admits it for most text
    Pattern.of("secret", (*(f":{d}" for d in range(1, 10)), ":*:"),
               r"(?P<keep>(?:(?<![^\s\u2192\"'])|(?<=\\n))(?!\d+:)[^\s:\\\"']++:(?:[1-9]\d{0,4}|\*)"
               r":[^\s:\\]++:(?!\d+:)[^\s:\\]++:)(?!\[REDACTED:)(?:[^\s\\\"':]|\\+:)++(?=\s|\\*[\"']|\\+[nr]|\Z)",
               precheck=r":(?:[1-9]\d{0,4}|\*):[^\s:\\]+:[^\s:\\]+:(?:[^\s\\\"':]|\\+:)"),
    # e-mail addresses, also internationalised and %40-encoded; the top label has a letter; not an
    # SSH address's user and host before its path (git@host:org/repo.git), nor a URL's user
    Pattern.of("email", ("@", "%40"),
               r"(?<![\w.%+$-])(?<!://)[\w.%+-]+(?:@|%40)(?:[\w-]+\.)+[^\W\d_][\w-]++(?!\.[\w-])(?!:[\w~.-]*+/)"),
    *WRAPPED_PATTERNS,  # (last: the marker of a token cut at its line's end, then its tail)
)
