"""The secret detector's building blocks (:mod:`otelbridge.secrets` makes its patterns of them):
what a key, a flag or a name naming a secret looks like (``_SECRET_WORD_IN``,
:func:`names_a_secret`), where a value ends after one (``_key_value``), the pieces of text
around values (quotes, blanks, line ends, command-line arguments), and which numbers a JSON
document's keys make secrets (:func:`secret_numbers`). Its names keep their leading
underscore: they are the detector's own, shared by these two modules only."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from .secret_tokens import AFTER_ESCAPE


#: The key words as a regex (without a global flag) and as needles.
_KEY_WORDS = r"(?:pass|pwd|pw|secret|credential|token|signature|key|cookie|auth|dsn|sig|pat(?![a-zA-Z]))"
_KEY_NEEDLES = ("pass", "pwd", "pw", "secret", "credential", "token", "signature", "key",
                "cookie", "auth", "dsn", "sig", "pat")

#: What counts tokens (a model's limit or usage: ``MAX_TOKENS``, ``PROMPT_TOKENS``)
_COUNTS = ("max", "min", "num", "total", "input", "output", "prompt", "completion", "context",
           "thinking", "reasoning", "cached", "cache")
_COUNTED = "|".join(  # (lookbehinds are of one width: the words grouped by length)
    f"(?<=(?:{ws})[_.-]tokens)(?<![a-z0-9](?:{ws})[_.-]tokens)"
    for ws in sorted({"|".join(w for w in _COUNTS if len(w) == n) for n in {len(w) for w in _COUNTS}}))
#: Key words that make a key secret wherever they stand in it (``MYSQL_ROOT_PASSWORD``,
#: ``clientSecret``, ``_authToken``, ``X-Amz-Signature``), unless a lower-case letter follows
#: (``tokens``, ``tokenizer``, ``passwordless``, ``secretary`` are not keys of secrets; nor is
#: ``MAX_TOKENS``, a model's limit, though ``API_TOKENS`` is).
_KEY_ANYWHERE = (r"pass(?:word|wd|phrase|code)|sshpass|secret|credentials?|token(?!S(?![a-z])(?:" + _COUNTED + "))|signature"
                 r"|(?:api|access|private|account|client|signing|encryption|master|session|auth|preshared|jwt)"
                 r"[_.-]?key|apikey"
                 # Ocp-Apim-Subscription-Key, x-functions-key, NEW_RELIC_LICENSE_KEY, HMAC_KEY, a
                 # vendor's or role's key (OPENAI_KEY, AZURE_STORAGE_KEY, Laravel's APP_KEY,
                 # SUPABASE_SERVICE_ROLE_KEY, ALGOLIA_ADMIN_KEY): found at their ``key`` (a first
                 # letter tested already: f, h, l are common)
                 r"|key(?:" + "|".join(rf"(?<={w}{sep}key)" for w in (
                     "subscription", "functions", "license", "hmac", "openai", "anthropic", "gemini",
                     "mistral", "cohere", "groq", "deepseek", "sendgrid", "mailgun", "algolia", "storage",
                     "admin", "app", "service", "role") for sep in ("", "[_.-]")) + r")")
#: A personal access token's key: ``pat`` after a forge's or registry's name (``GH_PAT``,
#: ``github_pat``, ``AZURE_DEVOPS_PAT``, ``DOCKERHUB_PAT``, ``githubPat``; the Azure DevOps CLI's
#: ``AZURE_DEVOPS_EXT_PAT``) or as a flag (``--pat``); alone it is code's
#: ``pat = re.compile(...)``, ``_IPV4_PAT``.
_PAT = ("(?i:(?:" + "|".join(rf"(?<={forge}[_-])" for forge in (
    "gh", "github", "gitlab", "glab", "ado", "azure", "azdo", "devops", "vsts", "bitbucket", "gitea",
    "forgejo", "codeberg", "docker", "dockerhub", "hub", "quay", "jfrog", "hf", "npm", "pypi",
    "ext")) + r"|(?<=--))pat)(?![A-Za-z])"
    r"|(?<=[gG]it[hH]ub|[gG]it[lL]ab)Pat(?![a-z])")
#: ``pass`` alone as a key before a test runner's count, no password (``pass: 12 fail: 0 skip: 3``,
#: ``pass=12``, ``tests pass: 12``, ``{"pass": 12, "fail": 0}``): a number before the summary's
#: next word and its ``:`` or ``=`` (fail, skip, error, todo…), or one to three digits alone (a
#: password of two digits is none; ``PIN: 1234``, ``pass: 1234``, ``DB_PASS=12`` and ``password:
#: 12`` stay a value). Tested at the key: a key refused there costs no value's reading
_COUNT = (r"(?:(?<=(?<![\w.-])pass)|(?<=\\[nrt]pass))(?:\\*[\"'])?[ \t]?[:=][ \t]?"
          r"(?:\d{1,9}+(?=[ \t]*+[,;|]?[ \t]*+(?:\\*[\"'])?(?:fail|skip|error|todo|pending|xfail|xpass|broken|flaky|warn"
          r"|total)[a-z]*+(?:\\*[\"'])?[ \t]*+[:=])|\d{1,3}+(?![\w@/:+=-]|\.\w))")
#: Short key words that count only as a whole segment of the key (``DB_PASS``, ``dbPass``,
#: ``Set-Cookie``, ``_auth``, ``sig``, ``GH_PAT``, ``PGPASS``), not inside a word (``bypass``, ``compass``,
#: ``author``, ``PATH``, ``patch``); in capitals, also before more capitals (``MOT_DE_PASSE``,
#: ``DB_PASSWORT``, ``COOKIES``), but not as ``PASSPORT``, ``PASSENGER``, ``AUTHOR``.
_KEY_SEGMENT = (r"(?:(?<![A-Za-z])|" + AFTER_ESCAPE + r")(?i:pass(?!(?i:word|wd|phrase|code|port|enger|age|ive|through|thru))(?!" + _COUNT + r")|pwd|pw|cookie"
                r"|auth(?!(?i:or(?!i[zs])))|dsn|sig(?![A-Za-z]))(?![a-z])"
                r"|(?<=[a-z])(?:Pass|Pwd|Cookie|Auth)|" + _PAT
                # a service's short name joined to PASS (PGPASS, DBPASS, SMTPPASS, ADMINPASS)
                + "|(?:" + "|".join(f"(?<={w})" for w in ("PG", "DB", "SQL", "SMTP", "FTP", "ADMIN", "ROOT",
                                                          "USER", "MAIL", "LDAP", "REDIS", "VNC", "WIFI"))
                + r")(?-i:PASS)(?![A-Za-z])")
#: What a key names when one of these words follows the key word: something about the secret,
#: not the secret (``apiKeySource``, ``token_type``, ``secretName``, ``password_file``,
#: ``SESSION_COOKIE_SECURE``, ``PASSWORD_MIN_LENGTH``, ``TOKENIZERS_PARALLELISM``); a word whole,
#: also plural or past (``PRIVATE_KEY_TYPES``, ``TOKEN_EXPIRED``), not the start of another
#: (``PASSWORD_URLENCODED``, ``API_KEY_ROUTER`` are secrets)
_ABOUT_END = r"(?:e?[sSdD])?(?![a-z])(?!(?<=[A-Z])[A-Z])"
_ABOUT = (r"(?![_.-]?(?i:source|type|name|namespace|count|length|len|url|uri|endpoint|path|file|fd|hint|ids?|method"
          r"|scope|scheme|backend|hasher|class|whitelist|allowlist|blocklist|blacklist|route|rule"
          r"|expire|expiry|expiration|ttl|usage|limit|budget|env|ref|refresh|helper|policy|version"
          r"|provider|format|kind|mode|require|enable|present|set|from|field|stat|status|state|info"
          r"|config|manager|store|update|change|jar|timeout|lifetime|izer|context|exception|error|pattern"
          r"|regexp?|issuer|audience|domain|label|placeholder)" + _ABOUT_END
          + r"|[_.-]?(?i:reset)[_.-]?(?i:timeout|url|uri|link|path|page|route|expire|expiry|expiration|ttl"
          r"|days|hours|minutes|seconds|enabled|required)" + _ABOUT_END
          + r"|(?<=(?i:cookie))[_.-]?(?i:secure|httponly|samesite|age|domain)" + _ABOUT_END
          + r"|[_.-]?(?i:min|max)[_.-]?(?i:length|len|age|size)" + _ABOUT_END + ")")

#: A quote inside an unquoted value (also an escaped one: JSON-escaped text): after a
#: non-space, not before what ends a quoted context (a space, , ; : ) } ], an escape, the end).
_INNER_QUOTE = r"(?<=[^\s\\])\\*[\"'](?![\s,;:)}\]\\]|\Z)"


#: A YAML block scalar's indicator (``|``, ``>-``, ``|2``), an optional comment, its line's end
_BLOCK_INDICATOR = r"[|>][-+0-9]{0,2}[ \t]*(?:#[^\r\n\\]*)?(?:\r?\n|\\+[rn]|\Z)"


#: A variable's name in capitals: words of capitals, a name's digits at a word's end, an ``_``
#: in it, a key word alone or capitals ending in one (``DB_PASSWORD``, ``PGPW``; not
#: ``S3CR3T_2024``, ``MONKEY123``)
_CAPITAL_NAME = (r"(?=[A-Z0-9]*+_|(?:PASS(?:WORD|WD)?|PWD|TOKEN|SECRET|APIKEY|KEY|AUTH|CREDENTIALS?)[0-9]*+(?![\w$])"
                 r"|[A-Z]++(?:" + "|".join(f"(?<={w})" for w in ("PW", "PWD", "PASS", "PASSWD", "PASSWORD", "TOKEN", "SECRET"))
                 + r")(?![\w$]))"
                 r"[A-Z]++(?:_[A-Z]++)*+[0-9]*+")
#: A file's text read by a command substitution (``$(cat token.txt)``, ``$(< ~/.pw)``): the
#: command line holds a path, not the value the file holds
_FILE_READ = r"\$\((?:cat[ \t]++|<[ \t]*+)[\w./~@+${}-]{1,200}+\)"
#: A placeholder for a value: a positional parameter (SQL's or a shell's ``$1``),
#: ``${DB_PASSWORD}``, ``$DB_PASSWORD`` and ``{DB_PASSWORD}`` (:data:`_CAPITAL_NAME`), GitHub's
#: ``${{ secrets.TOKEN }}``, a template's name (``{{ .Values.db.password }}``, ``{{ vault_pw |
#: b64encode }}``; not one quoting a string), a format string's field named in lower case
#: (``{token}``, ``{apiKey}``; not ``{Xy7-2}``), a file's text read (:data:`_FILE_READ`); not
#: ``${X:-default}``, nor another command's output (``$(cmd X)`` may hold X)
_PLACEHOLDER = (r"(?:\$[0-9](?![\w$])|\$\{\??[\w.]{1,100}\}|\$\([A-Z][A-Z0-9_]{0,100}\)|" + _FILE_READ + "|"
                r"(?<![\"'])!(?:Ref|GetAtt|ImportValue)[ \t]++[\w.:-]{1,200}+|\$" + _CAPITAL_NAME
                + r"|\$?\{\{[ \t]*+(?:[.$][A-Za-z_]|[a-z_])[\w.-]{0,100}(?:[ \t]*+\|[ \t]*+\w{1,40})*+[ \t]*+\}\}"
                r"|\{(?:[a-z_][a-z_.]{0,100}|[a-z]++(?:[A-Z][a-z]++)++|" + _CAPITAL_NAME + r")\})")
#: Not a placeholder as a command-line argument's whole value (``-p"$DB_PASSWORD"``,
#: ``--password ${{ secrets.PW }}``, ``curl -u u:$TOKEN``)
_NOT_A_PLACEHOLDER = r"(?!\\*[\"']?" + _PLACEHOLDER + r"\\*[\"']?(?![\w$]))"
#: Not a help text's metavar as a flag's value: a type's name (Click's ``--token TEXT``, Go's
#: ``--token string``) before two blanks (its help), a backtick or the line's end; a variable's
#: name without digits (argparse's ``[--api-key API_KEY]``, ``--token TOKEN  the token``) only
#: where a help text's layout follows it: ``]``, ``...``, ``, -`` (the flag's other spelling)
#: or two blanks and a word, never the line's end or a quote (``--password CORRECT_HORSE``)
_METAVAR_TYPE = (r"(?:TEXT|STRING|STR|INTEGER|INT|FLOAT|VALUE|ARG|PATH|FILE|NAME|URL|ID|CHOICE"
                 r"|string|strings|stringArray|int|uint|float|duration|bytesBase64)")
_NOT_A_METAVAR = (r"(?!" + _METAVAR_TYPE + r"(?:[ \t]{2}|`|[ \t]*+(?:\r?\n|\\+[nr]|\Z))|(?:" + _METAVAR_TYPE
                  + r"|(?=[A-Z_]++(?!\w))" + _CAPITAL_NAME + r")(?:\]|[ \t]?\.\.\.|,[ \t]-|[ \t]{2,}+[A-Za-z]))")
#: A placeholder, also after an authorization scheme (``Bearer $TOKEN``)
_SCHEMED = r"(?:(?i:bearer|basic|token)[ \t]++)?+" + _PLACEHOLDER
#: Keys of secrets: a key word, what follows it in the key, not a key about the secret. The
#: first letter of a key word is tested once, before the (case-insensitive) words: twice as
#: fast as trying every word at every position (with the letters ``re`` folds to s and k:
#: ``ſ`` long s, ``K`` Kelvin sign).
_SECRET_WORD = (r"(?=[pPsScCtTaAkKdDeEmMjJ\u017f\u212a])(?:(?i:" + _KEY_ANYWHERE + r")|" + _KEY_SEGMENT + r")"
                r"(?![a-z])" + _ABOUT)
#: Code naming a value: a dotted or ``::`` path from code's own names (:data:`_ROOTS`) whose
#: last name names a secret (``args.password``, ``process.env.GITHUB_TOKEN``,
#: ``self._auth_token``), or a call (of a dotted path, a name with an ``_`` or a camelCase or
#: PascalCase name of words, with no string but a name's in it; of any name with nothing in it,
#: or a reader's with one string and an empty default: ``secrets.token_hex(32)``,
#: ``hash_password(raw)``, ``issueToken(user)``, ``Column(String(128))``, ``getpass("Password:
#: ")``, ``data.get("token", "")``), a Terraform reference (``var.db_password``,
#: ``random_password.db.result``), a method's call whose arguments go on past its line
#: (``jwt.sign(``, ``jwt.encode(payload,``, Go's ``jwt.NewWithClaims(m, jwt.MapClaims{``), after an
#: ``await`` or ``new``, then what reads its result (``.unwrap()``, ``.expect("msg")``,
#: ``["access_token"]``, ``?``, ``?.split(" ")[1]``)
_NAME = r"[A-Za-z_$][\w$]*+"
#: A form field's label (``PasswordField('Password', …)``, ``CharField(label='API Key')``; not
#: pydantic's ``Field('X')``, a default): a few words of letters, the first capitalised
_LABEL = r"(?:(?<=[a-z]Field\()|(?<=label=))\\*[\"'][A-Z][A-Za-z]*+(?: [A-Za-z]++){0,4}+\\*[\"']"
#: A value that holds nothing (a reader's default: ``.get("token", "")``, ``.pop("password",
#: None)``; a call's only argument: ``Field(None)``, ``useState('')``)
_EMPTY = r"(?:\\*\"\\*\"|''|None|null|nil|undefined|\{\}|\[\]|false|False)"
#: Keywords whose value describes a field and holds no value of it (pydantic's, Django's, argparse's)
_DESCRIBING_WORDS = ("description", "alias", "validation_alias", "serialization_alias", "title", "help",
                     "help_text", "verbose_name", "placeholder")
_DESCRIBING = r"(?<![\w$])(?:" + "|".join(_DESCRIBING_WORDS) + ")"
#: ... their literal: words (``Field(..., description='API token')``, ``alias='apiKey'``)
_DESCRIBED = (r"(?:" + "|".join(f"(?<={w}=)" for w in _DESCRIBING_WORDS)
              + r")(?:\"[^\"\\\r\n]{0,200}+\"|'[^'\\\r\n]{0,200}+'|\\+\"[^\"\\\r\n]{0,200}+\\+\")")
#: A function's camelCase or a class's PascalCase name of words (``issueToken``, ``getApiKey``,
#: ``Column``, ``Depends``; not ``aB3dE`` or ``Hunter2``, a value's letters), before arguments
#: that only code writes — a keyword argument, a snake_case or dotted name, a call, ``...``
#: first, a comma and a blank (``(String(128), nullable=False)``, ``(oauth2_scheme)``, ``(input,
#: salt)``) — or lower-case names followed by a statement's or an argument's end
#: (``issueToken(user);``, ``{ token: issueToken(user) }``), or a form field's label first
#: (:data:`_LABEL`); not a password's ``Summer(2024)``, ``Welcome(Xk9q);`` or ``Word(horse
#: battery)``
_CAMEL_NAME = (r"(?:[a-z]{2,}+(?=[A-Z])|[A-Z]{2,}(?=[A-Z][a-z])|[A-Z][a-z]++)(?:[A-Z][a-z]++|[A-Z]{2,}+(?![a-z]))*+"
               r"(?=\((?:" + _LABEL + r"[ \t]*+[,)]|\.\.\.[,)]|" + _EMPTY + r"[ \t]*+[,)]"
               r"|[^()\r\n\"'`]*?(?:" + _DESCRIBING + r"=|[A-Za-z_]\w*+[ \t]*+=(?!=)[ \t]*+[\w.\[({-]"
               r"|[a-z0-9]_[a-z]|[a-z]\.[A-Za-z_]|\(|,[ \t])"
               r"|[a-z_$][\w$]*+(?:,[ \t]*+[a-z_$][\w$]*+)*+\)[ \t]*+[;,)}\]]))"
               r"(?!\([^()\r\n\"']*?\w[ \t]++\w)")
#: A name with a key word as a segment of its own (``GITHUB_TOKEN``, ``apiKey``, ``_auth_token``;
#: not ``monkey``)
_KEY_IN_NAME = (r"(?=\w*?(?-i:(?<![A-Za-z0-9])|(?<=[a-z])(?=[A-Z]))(?i:pass(?:word|wd|phrase)?|pwd|pw|secret"
                r"|credentials?|token|key|auth)s?(?![a-z]))")
#: A call's arguments that hold no string but an environment variable's name or a separator
#: (``("GITHUB_TOKEN", "")``; not a base32 secret's ``"JBSWY3DPEHPK3PXP"``,
#: ``split(" ")``): nested calls, names, numbers (``hashpw(password.encode(), gensalt())``; not
#: ``get("X", "devpass")``)
_ENV_NAME = r"[A-Z]{1,12}+(?:_[A-Z0-9]{1,40}+)*+"
#: ... a hash or signing algorithm's name (``hash_hmac('sha256', …)``, ``JWT.encode(p, k,
#: 'HS256')``, ``algorithms=["HS256"]``), a token's lifetime (``{ expiresIn: '1h' }``), a
#: dictionary's key in lower case that names no secret, after ``{`` or ``,`` (``{"sub":
#: user.id}``; not a ternary's ``dev ? 'X' : y``), a form field's label, a marker (a literal
#: redacted already). (Either quote closes: only names are inside.)
_ARG_QUOTE = r"\\*[\"']"
_ALGORITHM = (_ARG_QUOTE + r"(?i:sha-?(?:1|224|256|384|512)|md5|[hrepx]s(?:256|384|512)|hmac-?sha\d{1,3}"
              r"|blake2[bs])" + _ARG_QUOTE)
_LIFETIME = r"(?<![\w$])(?:expiresIn|expires_in)[ \t]*+[:=][ \t]*+" + _ARG_QUOTE + r"\d{1,9}+ ?[a-z]{0,7}+" + _ARG_QUOTE
_KEY_LITERAL = (r"(?:(?<=[{,])|(?<=[{,][ \t]))(?!" + _ARG_QUOTE + r"[\w.-]*?(?i:" + _KEY_WORDS + "))" + _ARG_QUOTE
                + r"[a-z_][a-z0-9_.-]{0,39}+" + _ARG_QUOTE + r"(?=[ \t]*+:)")
_ARG_TEXT = (r"(?:" + _LIFETIME + "|" + _KEY_LITERAL + "|" + _ALGORITHM + "|" + _LABEL + "|" + _DESCRIBED + "|" + _ARG_QUOTE + r"\[REDACTED:\w++\]"
             + _ARG_QUOTE + r"|[^()\r\n\"'`\\\w]++|\w++"
             r"|\"(?:" + _ENV_NAME + r"|[^\w\"'\\\r\n]{1,3})?\""
             r"|'(?:" + _ENV_NAME + r"|[^\w\"'\\\r\n]{1,3})?'|\\+\"(?:" + _ENV_NAME + r")?\\+\")")
_CALL_ARGS = r"\((?:" + _ARG_TEXT + r"|\((?:" + _ARG_TEXT + r"|\(" + _ARG_TEXT + r"*+\))*+\))*+\)"
#: What a call that reads a value by its name ends in (``os.getenv(``, ``getpass(``,
#: ``config.get(``): its one string is a name or a prompt (``b64decode("…")``'s is the value)
_READS = "|".join(f"(?<={w})" for w in (
    "get", "getenv", "Getenv", "getEnv", "GetEnv", "environ", "fetch", "var", "env", "getpass", "input",
    "prompt", "config", "lookup", "param", "getParameter", "getProperty", "getString", "getSecret",
    "get_secret", "GetEnvironmentVariable", "require", "getItem", "getHeader",
    "GetHeader", "getInput", "Get", "PostForm", "GetString", "FormValue", "Query", "query", "header",
    "cookie", "getCookie", "arg", "pop"))
#: Where a path to a secret's value starts (``process.env.X``, ``args.password``, ``self._token``;
#: not ``my.jwt.secret``, which is a value)
_ROOTS = (r"(?:process|import|os|self|this|cls|args|argv|opts|options|config|conf|cfg|settings|ctx|context"
          r"|env|environ|request|req|response|resp|res|result|payload|decoded|json|params|props|values|data"
          r"|form|body|secrets|creds|credentials|user"
          r"|auth|app|Deno|System|window|globalThis|vars|inputs|st|current_app|Settings|Config|Rails)")
_CODE = (r"(?:(?:await|new)[ \t]++)?+(?:" + _ROOTS + r"\??(?:\.|::|->)(?:" + _NAME + r"\??(?:\.|::|->))*+" + _KEY_IN_NAME
         + r"\w++(?!\()"
         r"|(?:" + _NAME + r"(?:\??(?:\.|::|->)" + _NAME + r")++|[A-Za-z][A-Za-z0-9]*+_\w*+|" + _CAMEL_NAME + ")"
         + _CALL_ARGS
         + r"|" + _NAME + r"(?:\??(?:\.|::|->)" + _NAME + r")*+(?:\[\\*[\"'][\w.-]{1,100}\\*[\"']\]"
         r"|(?:" + _READS + r")\(\\*[\"'][^\"'\\\r\n]{0,100}\\*[\"'](?:,[ \t]*+" + _EMPTY + r")?\)|\(\))"
         r"|(?:var|local|module|data|random_password|random_string)\.[\w-]++(?:\.[\w-]++|\[\d{1,9}\])*+"
         r"|(?:" + _NAME + r"\??(?:\.|::|->))++(?:[a-z_]\w*+|[A-Z][a-z]++(?:[A-Z][a-z]++)*+)\([^()\r\n\"'`\\]*+"
         r"(?=(?:\r?\n|\\[nr]|\Z)))"
         r"(?:\.expect\(\\*\"[^\"\\\r\n]{0,200}\\*\"\)|\??\." + _NAME + r"(?:" + _CALL_ARGS + r")?|\[(?:\\*[\"'][\w.-]{1,100}\\*[\"']|\d{1,9})\]|[?!])*+")
#: A variable named as a secret's key is (``password=password``, ``api_key=api_key,``,
#: ``User(password=hashed_password)``, ``{ apiKey: apiKey }``, ``TEST_USER_PASSWORD``): no value where code ends an argument or a statement
_SECRET_VARIABLE = (r"(?:(?:hashed|db|new|old|current|raw|plain)_)?(?:password|passwd)(?:_hash)?"
                    r"|(?:hashed|new|old|current|raw|plain)Password|password(?:Hash|_hash)"
                    r"|(?:(?:api|secret|private|access|client|signing)(?:_?key|Key)"
                    r"|(?:access|auth|refresh|id|bearer|session)(?:_?token|Token)|client(?:_?secret|Secret)|token|credentials|auth"
                    # a constant named for a secret (TEST_USER_PASSWORD)
                    r"|[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)*?_(?:PASSWORD|PASSWD|TOKEN|SECRET|KEY)(?:_[A-Z0-9]++)*+)")
#: A package's version in a manifest, quoted (``"jsonwebtoken": "^9.0.2"``, ``"cookie-parser":
#: "~1.4"``): the closing quote is the regex's to add
_VERSION = r"(?:[\^~]|[<>]=?|==)?[ \t]*+\d{1,4}+\.\d{1,6}+(?:\.\d{1,6}+)?+(?:[-+][\w.]{1,40}+)?+"
#: A placeholder after an authorization scheme, or the scheme alone before ``+`` (``"Bearer
#: " + token``): the closing quote is the regex's to add
_SCHEME_ONLY = r"(?i:bearer|basic|token)[ \t]++(?=\\*[\"'][ \t]*+\+)"
#: ... either in a quoted value
_SCHEMED_OR_ALONE = "(?:" + _SCHEMED + "|" + _SCHEME_ONLY + ")"
#: A quote that closed a string, not one that opens a value (``getpass("Password: ")``)
_CLOSERS = r"[)\]},;]++[ \t]*+(?:\r?\n|\\[nr]|\Z)"
#: Where an unquoted value that holds nothing ends: blanks, then a line end, a JSON string's
#: end, , ; ) } ] ` or a sentence's full stop
_END = r"[ \t]*+(?:[,;)}\]`]|\.(?!\S)|\r?\n|\\[nrt]|\\*\"|\Z)"
#: A class named as a type is (``JwtPayload``, ``ApiKeyService``), alone or in a generic
#: (``Promise<string>``, ``Observable<AuthToken>``); no digit (``Acme2024Password`` is a value),
#: nor a secret's word last (``SuperSecretPassword`` is a compose file's value)
_CLASS_TYPE = (r"(?:[A-Z][A-Za-z]*?(?:Service|Field|Payload|Provider"
               r"|Manager|Config|Options|Handler|Factory|Client|Store|Model|Schema|Dto|DTO|Entity|Request"
               r"|Response|Props|State|Context|Info|Data|Params|Settings|Claims|Headers?|Type|Hash"
               r"|Buffer)|(?:Promise|Observable|Array|Readonly|Partial|Record|Map|Maybe|Nullable|Ref|Signal)"
               r"(?=<))(?:<[A-Za-z_<>, |\[\].]{1,60}>)?(?:\[\])?(?![\w<])")
#: A type with no value (``password: str,`` in a signature, ``token: string | null;``,
#: ``token: CancellationToken)``: a class named for a secret only before , ; ) = or ``->``)
_TYPE_ONLY = (r"&?(?:'static[ \t]+)?(?:str|string|String|bytes|SecretStr|SecretBytes|Secret<\w+>|Optional\[\w+\]"
              r"|Option<\w+>|Annotated\[[\w.]++(?:,[ \t]*+[\w.]++(?:\([\w.]*+\))?+)*+\]|" + _CLASS_TYPE
              + r"|[A-Z][a-z]++(?:[A-Z][a-z]++)*?(?:Token|Key|Secret|Password|Credentials?)(?=[ \t]*+(?:[,;)]|=(?!=)|->)))"
              r"(?:[ \t]*\|[ \t]*(?:string|null|undefined|None|bytes))*+")
#: ... where it ends: its line's (or a JSON string's) end, or , ; ) and the next parameter
#: (``name: type``, or a name alone: ``def login(password: str, user):``), ``)``, ``}``, ``{``
#: or ``=``: not a value after it (``password: str, X``)
_TYPE_END = (r"[ \t]*+(?:[,;)][ \t]*+)?(?:\r?\n|\\[nrt]|\\*\"|\Z|[)=}{]|->"
             r"|(?:(?<=[,;)])|(?<=[,;)][ \t]))(?:[\w*]++[ \t]*+[:=]|\*{1,2}\w|\w++[ \t]*+[,)]))")
#: A value read by its name from a mapping (``os.environ["DB_PASSWORD"]``, ``ENV['TOKEN']``,
#: ``config["db"]["password"]``; names without digits, which a value's letters have): code
#: wherever it stands
_SUBSCRIPT = (r"[A-Za-z_$][A-Za-z_$]*+(?:\??(?:\.|::|->)[A-Za-z_$][A-Za-z_$]*+)*+"
              r"(?:\[\\*[\"'][\w.-]{1,100}\\*[\"']\])++")
#: What an error or status line says of a secret in its place (``Token: expired``, ``auth:
#: none``, ``Secret: not found``), a mask (``********``) or where the secret is kept
#: (``Password: see the vault``, ``stored in AWS Secrets Manager``): the whole value, to its
#: line's or string's end (not before more: ``Token: not set; real=X``)
_STATE = (r"(?i:expired|invalid|missing|required|revoked|unset|none|empty|\*{3,}+"
          r"|not[ ](?:set|found|provided|configured|available|valid)"
          r"|(?:see|in|check|ask|(?:stored|kept)[ ]in)[ ](?:[\w-]++[ ]){0,3}?(?:the[ ]|your[ ]|our[ ])?"
          r"(?:vault|1password|bitwarden|keychain|keepass|lastpass|(?:password|secrets?)[ ]manager|readme|docs|wiki))")
#: ... where it ends: its line's or string's end, or its sentence's before another that starts
#: with a word of letters (``Password: see the vault. More text.``; not ``… vault. Hunter2!``)
_STATE_END = (r"[ \t]*+(?:\.?(?:\r?\n|\\[nrt]|\\*\"|\Z)"
              r"|\.[ \t]++(?=[A-Z][a-z]*+(?:[ \t,;:.?]|\r?\n|\\[nrt]|\\*\"|\Z)))")
#: A variable's reference in lower case (jq's ``.auth.token = $token``, a shell's or PHP's
#: ``$password``; ``\\$token`` in double quotes), no digit in its name (``$uperS3cret`` is a
#: value), before a program's or a statement's end, a pipe or a closing quote
_VARIABLE = r"\\*\$[a-z_]++(?:[A-Z][a-z]*+)*+(?![\w$])(?=[ \t]*+(?:[,;)}\]`'|]|\r?\n|\\[nrt]|\\*\"|\Z))"
#: A value that holds no secret, whole (in :func:`_key_value`, after its groups ``dq``, ``sq``,
#: ``esc``, ``colon``, ``blank`` and ``typed``): a placeholder, quoted or not, also in a format
#: string (``f"Bearer {token}"``) or before a host's ``@``; unquoted, also null or a boolean
#: (to :data:`_END`, or with no ``:`` or blank before it, a blank), code (:data:`_CODE`: to
#: :data:`_END` after a blank, ``:`` or type, else only before , or ``)``), a type after ``:``
#: (:data:`_TYPE_ONLY`), a variable's reference (:data:`_VARIABLE`), or a variable named as a
#: secret (:data:`_SECRET_VARIABLE`) before
#: , ) } ] or, after ``name =``, also ; or a line end (not ``Password=password;`` in a
#: connection string); any lower-case name as the last member of an object passed to a call
#: (``User.create({ email, passwordHash: hash })``).
_NO_VALUE = (r"(?(dq)(?:" + _SCHEMED_OR_ALONE + r"\"|" + _CLOSERS + "|" + _VERSION + r"\")"
             r"|(?(sq)(?:" + _SCHEMED_OR_ALONE + r"'|" + _CLOSERS + "|" + _VERSION + r"')"
             r"|(?(esc)" + _SCHEMED_OR_ALONE + r"\\+[\"']"
             r"|(?:[fF](?:\"" + _SCHEMED + r"\"|'" + _SCHEMED + r"'|\\+\"" + _SCHEMED + r"\\+\")"
             r"|" + _PLACEHOLDER + r"@"
             r"|`" + _SCHEMED + r"`(?=" + _END + r")"
             r"|(?:" + _SCHEMED + r"|None|null|nil|undefined|true|false|True|False)"
             r"(?:" + _END + r"|(?(colon)(?!)|(?(blank)(?!)|[ \t])))"
             r"|" + _STATE + _STATE_END +
             r"|" + _VARIABLE +
             r"|(?(colon)" + _TYPE_ONLY + _TYPE_END + r"|(?!))"
             r"|" + _SUBSCRIPT + _END +
             r"|" + _CODE + r"(?(blank)" + _END + "|(?(colon)" + _END + "|(?(typed)" + _END + r"|[ \t]*+[,)])))"
             r"|(?:" + _SECRET_VARIABLE + r")(?![\w$])(?(blank)[ \t]*+(?:[,;)}\]]|\r?\n|\\[nr]|\Z)|[ \t]*+[,)}\]])"
             r"|[a-z_$][\w$]{0,100}+[ \t]*+\}[ \t]*+\)"
             r"|\([ \t]*+[a-z_$][\w$]{0,100}+(?:[ \t]*+,[ \t]*+[a-z_$][\w$]{0,100}+)++[ \t]*+\)"
             r"(?=[ \t]*+(?:[,;)}\]]|\r?\n|\\[nr]|\Z))))))")


#: A declared type between a name's ``:`` and its ``=`` (``password: str = "x"``, ``API_KEY: &'static
#: str = "x"``, ``token: string | undefined = 'x'``): only before a quoted value (``token: a =
#: b`` is a value with an ``=`` in it)
_TYPED = (r"[ \t]*+&?(?:'static[ \t]+)?(?:mut[ \t]+)?(?:[\w.]++(?:[\[<][\w.,\[\]<> ]{0,60}[\]>])?|\[[\w; ]{1,40}\])"
          r"(?:[ \t]*\|[ \t]*[\w.]+){0,3}[ \t]+(?==[ \t]*(?:[bBrR]{1,2})?\\*[\"'])")
#: ... and a known declared type before any value (``password: str = Field(...)``, ``api_key:
#: Optional[str] = None``, ``token: string = process.env.TOKEN!``): the value, unquoted too, is
#: then read as after ``=``
_DECLARED = (r"[ \t]*+&?(?:'static[ \t]+)?(?:str|string|String|bytes|SecretStr|SecretBytes|Optional|Option|Mapped"
             r"|Union|Any|any|unknown)(?![\w-])[\w\[\]<>|,.&? ]{0,60}?[ \t](?==(?!=))")
#: Go's type between a name and its ``=`` (``var apiKey string = "x"``): only before a quoted value
_GO_TYPED = r"(?<=[ \t])\*?(?:string|\[\]byte)[ \t]*+(?==[ \t]*\\*[\"'`])"


#: A shell's operator that ends a word: ``&&`` and ``||`` anywhere (``set PASSWORD=X&&app.exe``),
#: ``;``, ``&``, ``|`` before a blank or the end (``export DB_PASSWORD=X; ls``); glued to more
#: (``Xy7&tail``, ``a;b``: a .env file's value) they are part of the word
SHELL_END = r"(?:&&|\|\||[;&|]++(?:\s|\\[nrt]|\Z))"
#: A connection string's ``;`` before its next ``key=`` (``…;Password=X;Encrypt=true``); a ``,``
#: and blanks before the next ``key=`` (``password=pw, dbname=d``, ``password=X, ip=…``)
CONN_END = r"(?:;(?=[A-Za-z][A-Za-z0-9 _.]{0,40}=)|,(?=[ \t]++[A-Za-z_][\w.-]{0,40}+=))"
#: A string literal inside an unquoted value, also JSON-escaped, before a blank , ; : ) ] } . an
#: escape or the end (a single-quoted one also before a JSON string's closing quote) (never a JSON document's ``", "`` between two strings: see where it may start)
_LITERAL = (r"(?:\"[^\"\r\n\\]*+\"(?=[\s,;:)\]}.]|\Z)|'[^'\r\n\\]*+'(?=[\s,;:)\]}.\"]|\\++\"|\Z)"
            r"|(?:\\++\"[^\"\r\n\\]*+\\++\"|\\++'[^'\r\n\\]*+\\++')(?=[\s,;:)\]}.]|\\[nrt]|\\*\"|\Z))")
#: An unquoted value to its line's end (or an escape: ``\\n``, ``\\"``), a string literal
#: after a blank ( , = [ or { in it whole (``process.env.X || "lit"``, ``ENV["X"] || "lit"``: code
#: not known as such holds the literal)
_TO_ITS_END = (r"(?:[^\r\n\"'\\]++|(?<=[ \t(,=\[{])" + _LITERAL + "|" + _INNER_QUOTE + r"|\\++(?![nrt\"'\\]))+")
#: An unquoted value to the next blank not escaped (a shell's ``KEY=value``, ``KEY=a\\ b``,
#: ``pass:value``), a command substitution or a literal after ( , = or [ in it whole; then a
#: literal fallback (``password=args.password or "lit"``, ``|| "lit"``, ``?? "lit"``, ``?:
#: "lit"``, ``if x else "lit"``)
_WORD_PART = (r"\$\((?:[^()\r\n]++|\([^()\r\n]*+\))*+\)|`[^`\r\n]*+`|(?<=[(,=\[])" + _LITERAL
              + r"|[^\s\"'\\<;&|,]++|(?!" + SHELL_END + "|" + CONN_END + r")[;&|,]|<(?!/)|" + _INNER_QUOTE + r"|\\++[ ]|\\++(?![nrt\"'\\])")
_FALLBACK = r"(?:[ \t]++(?:or|\|\||\?\?|\?:|if[ \t][^\r\n\"'=]{0,80}?[ \t]else)[ \t]++" + _LITERAL + ")?+"
_WORD_VALUE = "(?:" + _WORD_PART + ")+" + _FALLBACK
#: ... and more words, up to a shell's operator, a flag, a comment or a redirection
#: (``password:two words``; ``pass:X -in f``, ``pass:X && echo``)
_WORDS_VALUE = "(?:" + _WORD_PART + r"|[ \t]++(?![-&|;<>#\s]|\\[nrt]|\Z))+" + _FALLBACK


def _key_value(key: str, flow: bool = False, lines: bool = False) -> str:
    """A regex of ``key`` (a regex), its separator — an optional (escaped) closing quote, ``:``,
    ``=``, ``:=``, ``?=``, ``||=`` or a declared type and ``=`` (:data:`_TYPED`, :data:`_GO_TYPED`), an
    optional (escaped) opening quote — kept as group ``keep``, then the value (not one that holds
    nothing: :data:`_NO_VALUE`; neither ``::``, a scope or a test's id, nor ``:12:5``/``:15: ``, a
    locator, is a separator), whose extent
    depends on the quotes and separator seen (``flow``: when ``key`` matched its group ``fl``, an
    unquoted value is flow-style YAML's, up to a , } or ]; ``lines``: ``key=value`` too runs to
    its line's end, a file's line, not a shell's word)."""
    return (
        # (a quoted key or value may stand on a line of its own: pretty-printed JSON)
        r"(?P<keep>" + key + r"\\*[\"']?(?:(?<=[\"'])(?:[ \t]*+" + _NL + r")++)?(?:(?<=[A-Za-z])[ \t]++(?i:is|was)(?=[ \t]*+:))?+"
        r"(?P<blank>[ \t]++)?+"
        r"(?:(?P<colon>:)(?![:=]|\d+:(?:\d|[ \t])|" + _TYPED + "|" + _DECLARED + r")|(?::" + _TYPED + "|:" + _DECLARED
        + r"(?P<typed>)|:|\?|\|\||" + _GO_TYPED + r")?=(?!=))(?:(?<=:)\*\*(?=[ \t]|\r?\n|\\+[nr]|\\*[\"\']|\Z))?+(?P<gap>[ \t]++)?+"
        r"(?:(?:" + _NL + r"[ \t]*+)*+(?:(?:[bBfF][rR]|[rR][bBfF]|[bBrRuUfF])(?=\\*[\"'])(?!\"\"\"|'''))?+"
        r"(?:\"\"(?=\")|''(?=')|\\+\"\\+\"(?=\\+\"))?+(?:(?P<esc>\\+[\"'])|(?P<dq>\")|(?P<sq>')))?+)"
        # an unquoted value may open a structure (an object, a list, a placeholder, a call)
        # holding no secret itself; a quoted one is a string, whatever its first character
        r"(?!\[REDACTED:)(?(dq)|(?(sq)|(?(esc)|(?![{\[<>]|\((?:[\s)\"'\\]|\Z)))))"
        r"(?!" + _BLOCK_INDICATOR + ")(?!" + _NO_VALUE + ")"
        # \"JSON-escaped\" to the same escaped quote (not a more escaped one inside: \\\");
        # "double" and 'single' quoted to the closing quote (a shell's '\'' inside);
        # key: value and key = value (INI, .properties) to the end of the line, a string
        # literal in it whole; KEY=value and key:value to the next space (a shell's assignment
        # before a command, openssl's pass:X; a $(command) or `command` whole). Unquoted, a
        # value also ends at an escape (\" \n ...), a quote that closes the context it sits in
        # (one after a space or before , ; : ) } ] or the end) and KEY=value at a closing
        # tag; & < > \ and other quotes are part of it (DB_PASSWORD=Xy7&tail). A URL's query
        # (?a=1&password=x&b=2), whose & ends the value, is a pattern of its own, earlier.
        r"(?(esc)(?:(?!(?<!\\)(?P=esc)).)+"
        r"|(?(dq)(?:[^\"\\\r\n]|\\.)+"
        r"|(?(sq)[^'\r\n]+(?:'\\+''[^'\r\n]*)*"
        r"|(?(colon)" + (r"(?(fl)[^,}\]\r\n\"'\\]+|" if flow else "(?:") + "(?(gap)" + _TO_ITS_END + "|" + _WORDS_VALUE + "))"
        r"|(?(blank)" + _TO_ITS_END + "|(?(typed)" + _TO_ITS_END + "|" + (_TO_ITS_END if lines else _WORD_VALUE)
        + "))))))"
    )


#: ... and the rest of the key, taken whole (what follows a key is never part of one)
_SECRET_KEY = _SECRET_WORD + r"[\w.-]*+"
#: A whole word of key characters with :data:`_SECRET_KEY` in it (``DB_PASSWORD``), found in
#: one scan of the word (a lazy prefix then ``_SECRET_KEY``, whose tail runs to the word's end,
#: would rescan the rest of a long word from every key word in it: minutes for 256 Ki of
#: ``tokentoken…``); from the word's start: the same end, the text before the key word kept
_SECRET_WORD_IN = r"(?=[\w.-]*?" + _SECRET_WORD + r")[\w.-]++"
#: ... a word of key characters ending in a key word (``db.password``, ``adminPassword``,
#: ``SECRET_KEY``; not ``passwordSecretName``, ``passwordKey``, ``tokenAudience``, nor
#: Helm's ``existingSecret``, a Secret's name)
_ENDS_IN_KEY_WORD = r"(?![\w.-]*?(?i:existing))[\w.-]*?" + _SECRET_WORD + r"(?-i:_KEY)?(?![\w.-])"

#: A flag's dashes and its name up to a key word (not ``--no-``); after one ``-``, no digit
#: before the key word in its own part of the name (``-s3-secret-key`` is a flag) and no
#: ``-p``/``-P`` then anything but the key word (``-pass``, ``-pw``,
#: ``-Password``): a short flag and its value glued (``7z a -pXk9pw2 archive.7z``, ``mysql
#: -ppassword db``, ``unzip -Psecret1 f.zip``), whose next argument is no secret
FLAG_PREFIX = r"(?:--(?!(?i:no)-)[\w.-]*?|-(?!-|(?i:no)-|[pP](?!(?i:ass|wd?|sw))[\w.]*+(?!-))(?:[\w.]*+-)*?[A-Za-z_.]*?)"
#: A command-line flag that names a secret (``--password``, ``--api-key``, ``--client-secret``,
#: ``-Token``): the argument after it is its value. Not ``-p`` (``claude -p PROMPT``), not a
#: flag about the secret (``--token-file``), not ``--no-password`` or ``--password-stdin``.
SECRET_FLAG = FLAG_PREFIX + _SECRET_KEY
_NOT_A_VALUE = re.compile(r"(?i:.*[_.-]stdin)")


@cache
def _secret_flag() -> re.Pattern[str]:
    return re.compile(SECRET_FLAG)  # at first use: ~4 ms, which a run without sequences saves


def names_a_secret(arg: str) -> bool:
    """Whether the command-line argument ``arg`` is a flag whose value, the next argument, is a
    secret (``--password`` in ``--password X``; ``--password=X`` is one argument, a key=value)."""
    return (arg[:1] == "-" and len(arg) <= 100 and _secret_flag().fullmatch(arg) is not None
            and _NOT_A_VALUE.fullmatch(arg) is None)


#: What every match of :data:`_SECRET_KEY` holds: one of these words (in any case, as ``re``
#: folds it: ``ſ`` is an ``s``), then the rest of the key (``[\w.-]*``), the keyword being made
#: of such characters. The lookahead skips the positions no word can start at.
_KEY_WORD = (r"(?i)(?=[pscktad])(?:pass|pwd|pw|secret|credential|token|signature|key|cookie|auth|dsn|sig"
             r"|pat(?![a-z]))")
#: ... and the rest of its word, up to the next key word (the last key word of a word then
#: reaches the word's end): each character is scanned once, however many key words a word holds
_KEY_WORD_ONCE = _KEY_WORD + r"(?:(?!" + _KEY_WORD.removeprefix("(?i)") + r")[\w.-])*+"

#: A command-line argument: a command's output (``$(cmd X)``), quoted (also with JSON-escaped
#: quotes: a tool call's command), or to the next space or a JSON string's closing quote (``"``
#: then ``, : } ]``: a command in a JSON document shown as text).
_ARG = (r"(?:\$\((?:[^()\r\n]++|\([^()\r\n]*+\))*+\)|'[^']*'|\"(?:[^\"\\]|\\.)*\"|(?P<aq>\\+[\"'])(?:(?!(?P=aq))[^\r\n])*(?P=aq)"
        r"|(?:\\[ ]|(?!\\*\"[,:}\]]|" + SHELL_END + r")\S)+)")
#: Where a word begins: after no letter, digit or ``_``, or :data:`AFTER_ESCAPE` (the next line
#: of a command in escaped JSON: a tool call's arguments).
_WORD_START = r"(?:(?<![A-Za-z0-9_])|" + AFTER_ESCAPE + ")"
#: Blanks, also escaped line ends (a file's lines inside a JSON string); a word up to either.
_SEP = r"(?:\s|\\[nrt])+"
_WORD = r"(?:(?!\\[nrt]|\\*\"[,:}\]]|" + SHELL_END + r")\S)+"


def _then(program: str, flag: str) -> str:
    """``program`` (a regex of its name), then ``flag`` further in the same command: not across
    a line end, pipe, ``;`` or ``&``, nor the program's name again (a text of many commands
    and no such flag is scanned once), at most 300 characters on."""
    return rf"{_WORD_START}{program}\b(?:(?!\b{program}\b)[^\n|;&]){{0,300}}?\s{flag}"

#: A line end, real or JSON-escaped; the rest of a line, up to either (or an escaped quote).
_NL = r"(?:\r?\n|(?:\\+r)?\\+n)"
_LINE = r"(?:[^\r\n\\]|\\++(?![nr\"]))+"
#: ... also before a Read's line number (``     7→``, ``cat -n``'s ``     7\t``): the next line's
#: text; where a line begins (the text's start, a line end, a Read's arrow)
_NL_READ = _NL + r"(?:[ \t]*+\d++(?:\u2192|\t))?+"
#: A value alone on its line that holds no secret, to the line's end: a placeholder, a name in
#: angle brackets (``<your-password>``), or :data:`_STATE`'s
_NO_LINE_VALUE = (r"(?:\\*[\"'])?(?:" + _PLACEHOLDER + r"|<[^<>\r\n\\]{1,60}+>|" + _STATE + r")(?:\\*[\"'])?"
                  + _STATE_END)
_LINE_START = r"(?:\A|(?<=\n)|(?<=\\n)|(?<=\u2192))"

#: Blanks between the tokens of a JSON document, also escaped ones (JSON inside a string).
_JSON_BLANK = r"(?:\s|\\[nrt])*+"
#: A quote, also an escaped one; the flag or name inside quotes, to its closing quote.
_Q = r"\\*[\"']"

#: A command-line argument (``_ARG``) that ends at an escaped line end too (``\\n``: a
#: file's lines inside a JSON string)
_ARG_IN_LINE = _ARG.replace(r"|(?:\\[ ]|(?!\\*\"[,:}\]]|" + SHELL_END + r")\S)+)", "|" + _WORD + ")")
assert _ARG_IN_LINE != _ARG


#: No key in a condition or clause head that ends its line (``if not csrf_token:``, ``except
#: TokenError:``): the next line, more indented, is code, not the key's value.
_NO_CONDITION = "".join(rf"(?<!{w} )" for w in ("if", "elif", "while", "not", "except", "case",
                                                 "lambda", "assert"))
_LINE_END = r"[ \t]*(?:\r?\n|\\[nr]|\Z)"
#: A line of code: a block's first statement after ``if password != confirm:`` or ``except
#: TokenError:`` (not a YAML value on the next line): a block's head (ends with ``:`` or ``{``),
#: a statement's keyword and operand, a declaration, a method's call without a string (not
#: ``user.set_password("x")``), a bare ``pass``/``return``, an assignment (``data = token.read()``)
_STATEMENT = (r"(?:(?:if|elif|else|for|while|try|with|def|class|except|finally|switch|catch)\b[^\r\n\\]*[:{]" + _LINE_END
              + r"|(?:raise|return|throw|yield|await)[ \t]+[\w\"'(\[{.-]|\"\"\"|'''"
              r"|(?:const|let|var)[ \t]+[\w$]+[ \t]*[=:;]|from[ \t]+[\w.]+[ \t]+import\b|(?:self|this)\.[A-Za-z_]"
              r"|[A-Za-z_]\w*(?:\.\w+)+\([^\r\n\\\"'`]*\)[ \t]*;?" + _LINE_END
              + r"|(?:pass|break|continue|return)" + _LINE_END
              + r"|[A-Za-z_][\w.]*+[ \t]++(?:[-+*/]|//)?=[ \t]" + ")")


def _string_text(quote: str, least: str = "*") -> str:
    """A regex of a quoted string's text, up to its closing quote (the group named ``quote``, an
    escaped one too), possessively: ``least`` ``*`` (empty too) or ``+``."""
    return r"(?:(?!(?<!\\)(?P=" + quote + r"))[^\r\n])" + least + "+"


#: Blanks of JSON inside an array's ``[`` (ASCII only: what the array's required substrings
#: list), also escaped ones
_ASCII_BLANK = r"(?:[ \t\r\n]|\\[nrt])*+"


def _secrets_key(tail: str) -> str:
    """A regex of a key that ends in a key word of a secret, also one that names several
    (``api_keys``, ``DB_PASSWORDS``, ``accessTokens``; not ``id_token_signing_alg_values``,
    ``AUTHENTICATION_BACKENDS``, ``secrets``: a list of names), then ``tail`` (a regex). The word
    is tested for its tail first (cheap, at word starts only), then for its last key word, which
    starts a segment."""
    return (r"(?<![\w.-])(?=[\w.-]++" + tail + r")(?:[\w.-]*?(?:(?<=[_.-])|(?<=[a-z])(?=[A-Z])))?(?i:pass(?:word|wd"
            r"|phrase|code)?s?|pwds?|secret|token|credentials?|(?:api|access|private|secret|client|signing|encryption"
            r"|master|session)[_.-]?keys?|apikeys?|client[_.-]?secrets|(?:auth|access|refresh|api)[_.-]?tokens)" + tail)


#: Blank and comment lines between YAML lines (a line end, real or escaped, after each); at
#: most 8 (a block of commented-out keys is scanned once, not from each key on)
_YAML_GAP = r"(?:[ \t]*+(?:#[^\r\n\\]*+)?+" + _NL_READ + r"){0,8}+"
#: What follows a key whose value is an array (``"api_keys": [``, ``passwords = [``) and a
#: YAML list (``api_keys:``, a line end, then a ``- `` line)
_JSON_ARRAY = _Q + r"?" + _JSON_BLANK + r"[:=]" + _JSON_BLANK + r"\[" + _ASCII_BLANK
_YAML_LIST = r"[\"']?[ \t]*:" + _NL_READ + _YAML_GAP + r"(?=[ \t]*+-[ \t])"


def _a_name(end: str) -> str:
    """A regex of a list's element that is a name or a word, not a value (``["AUTHORS",
    "index"]``, ``DB_PASSWORD2``, a validation rule ``min:8``), then ``end`` (a regex)."""
    return r"(?:[A-Za-z][A-Za-z._-]*+(?::[\w,.|-]*+)?|[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++)" + end


#: What stands for the value of a flag naming a secret (``--token X``) in a sequence.
FLAG_VALUE = "[REDACTED:secret]"


def secret_numbers(doc: Any, secret: Callable[[str, bool], bool], hidden: bool = False) -> Any:
    """``doc`` (decoded JSON) with each number (not a boolean) replaced by :data:`FLAG_VALUE`
    where it is a secret: under a key that ``secret`` says names one (given the key, and
    whether its value is a list), or in a list under it (``{"passwords": [1234, 5678]}``); a
    list's item after a flag that names one (``["--password", 1234]``); the ``value`` of a
    ``name`` that names one (``{"name": "DB_PASSWORD", "value": 1234}``)."""
    kind = type(doc)
    if kind is int or kind is float:
        return FLAG_VALUE if hidden else doc
    if kind is list:
        out = [secret_numbers(x, secret, hidden) for x in doc]
        for i in range(1, len(out)):
            if type(out[i]) in (int, float) and type(out[i - 1]) is str and names_a_secret(out[i - 1]):
                out[i] = FLAG_VALUE
        return out
    if kind is dict:
        out = {k: secret_numbers(v, secret, _holds_numbers(v) and secret(k, type(v) is list))
               for k, v in doc.items()}
        name = out.get("name", out.get("Name"))
        for key in ("value", "Value"):
            if type(out.get(key)) in (int, float) and type(name) is str and secret(name, False):
                out[key] = FLAG_VALUE
        return out
    return doc


def _holds_numbers(value: Any) -> bool:
    """A number, or a list with one among its items (also in a list in it)."""
    kind = type(value)
    return kind is int or kind is float or (kind is list and any(map(_holds_numbers, value)))
