"""Commands whose output is a secret, bare (:func:`prints_secret`): a secret manager's read
(``gcloud secrets versions access``, ``op read``, ``vault kv get -field=…``, ``aws
secretsmanager get-secret-value``, ``az keyvault secret show``, ``doppler secrets get``), a
keychain's (``security find-generic-password -w``, ``pass show``), a CLI printing its own token
(``gh auth token``, ``gcloud auth print-access-token``, ``aws ecr get-login-password``,
``kubectl create token``), a Kubernetes secret's value through a template, a decryption
(``sops -d``, ``age -d``), a mounted secret's file, a fresh random value (``openssl rand``,
``secrets.token_urlsafe``, ``pwgen``), a variable naming a secret echoed (``printenv
GITHUB_TOKEN``, ``echo $DB_PASSWORD``, ``env | grep TOKEN``), a desktop keyring's
(``secret-tool lookup``, ``keyring get``, PowerShell's ``Get-Secret -AsPlainText``), a deployment's outputs (``heroku config:get``, ``terraform output
-raw``), a field or a dotenv's value extracted (``jq -r .token``, ``yq``, ``awk``, ``sed``, ``grep
| cut``), a file whose name says it holds a secret alone (``cat secrets/api_key.txt``; a file
tool's ``Read`` of one, and what a ``Write`` puts there: :func:`writes_secret`).

Nothing around such a value says what it is, so the detector cannot find it in the output; the
command that printed it does. A tool call's output is then exported as a marker only, and its
lines are remembered (:mod:`otelbridge.found_secrets`): the model's prose that repeats it is
hidden too.
"""

from __future__ import annotations

import functools
import re

import msgspec

#: Where a command starts: the command line's start, or after ``;``, ``&``, ``|``, ``(``, a
#: backtick, a line end, ``$(`` or a shell's ``-c '`` (not inside an argument: ``grep -rn 'op
#: read' scripts/``, a comment); then ``sudo``/``env``/``exec``/``time`` and variables set for it, and a directory
#: (``/usr/bin/printenv``)
_AT = (r"(?:\A|(?<=[;&|(`\n])|(?<=\$\()|(?<=-c [\"'])|(?<=\s--\s))\s*"
       r"(?:(?:sudo|env|exec|time|command|(?:uv|poetry|pipenv|pdm|rye|hatch)\s+run)\s+(?:-\S+\s+)*)*"
       r"(?:\w+=\S*\s+)*(?:[\w.~/-]*/)?")
#: ... a program's options before its subcommand (``gcloud --project prod secrets``,
#: ``kubectl -n prod get``, ``aws --region x secretsmanager``)
_OPTS = r"(?:\s+-{1,2}[\w.-]+(?:[ =](?!-)[^\s;&|]+)?)*"
#: ... then its other words, each a blank away; the rest of the command on its line
_REST = r"[^\n;&|]*?"
#: A variable whose name says it holds a secret (``GITHUB_TOKEN``, ``DB_PASSWORD``, ``GH_PAT``)
#: ending with that word (not ``TOKEN_URL``, ``token_count``)
_SECRET_VAR = (r"\w*?(?:(?i:token|secret(?:_?key)?|passw(?:or)?d|api_?key|private_key|access_key|credentials?)"
               r"|(?<=_)(?i:pat))(?!\w)")
#: A file whose name says it holds a secret alone, ending with its word (``api_key.txt``,
#: ``.vault_pass``, ``db_password``, ``openai.key``, ``~/.config/openai/key``), or a file in a
#: ``secrets/`` folder: no extension, or one of a value's; not code, a document or a list
#: (``token.ts``, ``tokens.txt``, ``token_counts.txt``, ``/etc/passwd``, ``secrets/README``), nor
#: a script named for what it does (``rotate_token``, ``get-token``)
_SECRET_FILE = (r"(?i:(?:(?<=[/\\])|(?<![^\s\"'=]))"
                r"(?!(?:rotate|generate|gen|get|fetch|create|renew|revoke|check|verify|validate|update|print|show"
                r"|read|make|mint|request|issue)[_-])"
                r"(?:\.?secrets?[/\\](?!(?:readme|license|makefile|dockerfile|changelog|notice|codeowners|overview"
                r"|template|example|sample|index|todo)\b)[\w-]+|\.?(?:[\w-]*?[_-])?(?:password|pass|pwd|pw"
                r"|token|secret|api[_-]?key|apikey|vault[_-]?password)|(?<=[/\\])key|[\w-]+(?=\.key\b))"
                r"(?:\.(?:txt|key|secret|token|pass|pw))?)(?=[\s\"';|&)]|\Z)")
#: A dotenv file's name (``.env``, ``.env.prod``, ``.envrc``, ``credentials``, ``secrets``)
_DOTENV = r"(?:\.env(?:\.[\w-]+)?|\.envrc|credentials|secrets?)"
#: The commands whose output is a secret (the module's text), one regex's source: compiled at
#: its first use (:func:`_reads_a_secret`), ~12 ms that a stream with no shell command never pays
_READS_A_SECRET_SOURCE = (_AT + r"(?:" + "|".join((
    r"gcloud" + _OPTS + r"\s+(?:(?:alpha|beta)\s+)?secrets\s+versions\s+access",
    r"gcloud" + _OPTS + r"\s+auth\s+(?:application-default\s+)?print-(?:access|identity)-token",
    r"op" + _OPTS + r"\s+(?:read|inject)\s",
    r"op" + _OPTS + r"\s+item\s+get\s" + _REST + r"--reveal",
    r"security\s+find-(?:generic|internet)-password\s" + _REST + r"\s-w\b",
    r"(?:go)?pass\s+show\s",
    r"cat\s" + _REST + r"/run/secrets/",
    r"(?:docker(?:[ -]compose)?|podman|kubectl|oc)\s+exec\s" + _REST + r"\s(?:cat|head|tail)\s" + _REST
    + r"(?:/run/secrets/|[/\s]" + _SECRET_FILE + ")",
    # a secret's data: base64 values under names that need not say what they are
    r"kubectl" + _OPTS + r"\s+get\s+secrets?\s" + _REST + r"(?:-o|--output)[ =]?[\"']?(?:jsonpath|go-template|template|yaml|json)",
    r"kubectl" + _OPTS + r"\s+create\s+token\s",
    r"vault" + _OPTS + r"\s+(?:kv\s+get|read)\s" + _REST + r"-field[ =]",
    r"aws" + _OPTS + r"\s+secretsmanager\s+get-secret-value\s",
    r"aws" + _OPTS + r"\s+ssm\s+get-parameters?(?:-by-path)?\s" + _REST + r"--with-decryption",
    r"aws" + _OPTS + r"\s+(?:ecr|ecr-public)\s+get-login-password",
    r"aws" + _OPTS + r"\s+codeartifact\s+get-authorization-token",
    r"az" + _OPTS + r"\s+keyvault\s+secret\s+show\s",
    r"az" + _OPTS + r"\s+account\s+get-access-token",
    r"(?:doppler|infisical)" + _OPTS + r"\s+secrets\s+get\s",
    r"heroku\s+(?:auth:token|config:get\s)",
    r"secret-tool\s+lookup\s",
    r"keyring\s+get\s",
    r"Get-Secret\s" + _REST + r"-AsPlainText",
    r"bw\s+get\s+(?:password|totp)\s",
    r"lpass\s+show\s" + _REST + r"--password",
    r"terraform" + _OPTS + r"\s+output\s" + _REST + r"-(?:raw|json)",
    # the environment's secret variables, their names cut away or not
    r"(?:printenv|env)\s*\|" + _REST + r"grep\s" + _REST + r"(?i:token|secret|passw|key|pat\b)",
    r"gh" + _OPTS + r"\s+auth\s+token\b",
    r"npm\s+token\s+create",
    r"(?:sops|age|gpg)" + _OPTS + r"\s+(?:-d|--decrypt)\b",
    r"openssl\s+rand\s",
    # other fresh random values: a language's secure random, pwgen, the kernel's bytes encoded
    r"(?:python3?|node|ruby|perl|php|deno\s+eval|bun)\s+(?:-\w+\s+)*(?:-[cepEr]\s+|(?<=eval )\s*)[^\n]*?"
    r"(?:secrets\.token_|os\.urandom|randomBytes|SecureRandom"
    r"|random_bytes|crypto\.getRandomValues|randomUUID|get_random_secret_key|Fernet\.generate_key)",
    r"(?:pwgen|apg|(?:bundle\s+exec\s+)?rails\s+secret|mix\s+phx\.gen\.secret|openssl\s+genrsa"
    r"|php\s+artisan\s+key:generate\s" + _REST + r"--show)\b",
    r"(?:head|dd)\s" + _REST + r"/dev/u?random\b" + _REST + r"\|\s*(?:base64|xxd|od|hexdump|tr)\b",
    r"(?:cat|tr)\s" + _REST + r"/dev/u?random\b",
    # a file that holds a secret alone; a field naming one, out of a JSON document
    r"(?:cat|bat|batcat|nl|head|tail|more|less|xxd|od|hexdump|strings|base64|type|Get-Content|gc)\s"
    r"(?:[^\n;&|]*?\s)?[\"']?(?:[^\s;&|\"']*[/\\])?" + _SECRET_FILE,
    r"jq\s" + _REST + r"(?:-r|--raw-output)\b" + _REST + r"\.(?:[\w\[\]\"]*\.)?" + _SECRET_VAR,
    r"jq\s" + _REST + r"\.(?:[\w\[\]\"]*\.)?" + _SECRET_VAR + _REST + r"\s(?:-r|--raw-output)\b",
    r"yq\s(?![^\n;&|]*(?:\.github/|openapi|swagger|workflow))" + _REST + r"\.(?:[\w\[\]\"]*\.)?" + _SECRET_VAR
    + r"\b(?![.\[])",
    # a tool's stored secrets
    r"aws" + _OPTS + r"\s+configure\s+get\s+(?:[\w-]+\.)?" + _SECRET_VAR,
    r"az" + _OPTS + r"\s+storage\s+account\s+(?:keys\s+list|show-connection-string)\s",
    # a secret variable of a container's environment; one out of a dotenv file, its name cut
    # away (not the name alone: ``cut -f1``, ``awk '{print $1}'``; nor ``sed -i``, which prints nothing)
    r"(?:docker(?:[ -]compose)?|podman|kubectl|oc)\s+exec\s" + _REST + r"(?:printenv\s+|echo\s+[\\\"']*\$\{?)"
    + _SECRET_VAR,
    r"grep\s" + _REST + _SECRET_VAR + r"[^\n;&|]*?\s[^\s|;&]*" + _DOTENV
    + r"[\"']?\s*\|\s*(?:cut(?![^\n;&|]*-f\s*1(?![\d,-]))|awk(?![^\n;&|]*\{\s*print\s+\$1\s*\})|sed)\b",
    r"(?:awk\s" + _REST + _SECRET_VAR + r"[^\n;&|]*?\$(?:[2-9]|NF)|sed\s(?![^\n;&|]*?(?<!\S)(?:-i|--in-place)\b)" + _REST + _SECRET_VAR + ")"
    + _REST + r"\s[\"']?[^\s|;&]*" + _DOTENV + r"[\"']?(?=\s*(?:$|[;&|)]))",
    # printenv NAME, echo / printf of $NAME (after options, a format)
    r"(?:printenv\s+|(?:echo|printf)\s+(?:-\w+\s+|'[^'\n]*'\s+)*[\\\"']*\$\{?)" + _SECRET_VAR,
)) + r")")


@functools.cache
def _reads_a_secret() -> re.Pattern[str]:
    """The compiled :data:`_READS_A_SECRET_SOURCE`."""
    return re.compile(_READS_A_SECRET_SOURCE)


#: The keys of a shell tool's command in its arguments (Claude Code's and milk's ``Bash``,
#: Gemini's ``run_shell_command``: ``command``; Codex's ``cmd``, a list)
_COMMAND_KEYS = ("command", "cmd")


#: The keys of what a file tool writes at its ``file_path`` (``Write``'s ``content``, ``Edit``'s
#: ``new_string``, ``MultiEdit``'s ``edits``)
_WRITTEN_KEYS = ("content", "new_string", "edits")
_SECRET_PATH = re.compile(r"(?:\A|[/\\])" + _SECRET_FILE + r"\Z")
#: A file of ``KEY=value`` lines: an edit that puts one word in it for another (``your-api-key-here``
#: → the key itself, or a key rotated) writes a value; a word that looks generated — 12
#: characters or more, no ``=``, ``:``, blank or backslash, with a capital, a small letter and a
#: digit, or 32 hex digits or more — is remembered: not a model's name or a region
#: (``claude-sonnet-4-6``, ``eu-west-1``), which hidden everywhere would damage every later span
_ENV_PATH = re.compile(r"(?:\A|[/\\])(?:\.env(?:\.[\w.-]+)?|[\w.-]+\.env|\.npmrc|\.pypirc|\.netrc)\Z")
_ONE_VALUE = re.compile(r"(?=[^\s=:\\]*[A-Z])(?=[^\s=:\\]*[a-z])(?=[^\s=:\\]*[0-9])[^\s=:\\]{12,}|[0-9a-fA-F]{32,}")


def _doc(arguments: str) -> dict | None:
    try:
        doc = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def _secret_path(doc: dict) -> bool:
    path = doc.get("file_path")
    return isinstance(path, str) and _SECRET_PATH.search(path[-1024:]) is not None


def prints_secret(arguments: str) -> bool:
    """Whether a tool call's arguments (its JSON text, or a command line) run a command whose
    output is a secret, bare (see the module's text): the command a shell tool's ``command``
    or ``cmd`` names (another tool's arguments, a file written, only mention commands), or a
    file tool's reading (``Read``'s ``file_path``, nothing written) of a file whose name says it
    holds a secret alone. At most the first 4,096 characters of the command are read."""
    if arguments[:1] != "{":
        return _reads_a_secret().search(arguments[:4096]) is not None
    if '"command"' not in arguments and '"cmd"' not in arguments:
        if '"file_path"' not in arguments:
            return False
        doc = _doc(arguments)
        return doc is not None and not any(k in doc for k in _WRITTEN_KEYS) and _secret_path(doc)
    doc = _doc(arguments)
    if doc is None:
        return False
    command = next((doc[k] for k in _COMMAND_KEYS if k in doc), None)
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return isinstance(command, str) and _reads_a_secret().search(command[:4096]) is not None


def writes_secret(arguments: str) -> str | None:
    """What a file tool's call writes (``Write``'s ``content``, ``Edit``'s ``new_string``, those
    of ``MultiEdit``'s ``edits``) into a file whose name says it holds a secret alone
    (``secrets/api_key.txt``, ``.vault_pass``), or ``None``: that text is the secret, bare."""
    if '"file_path"' not in arguments:
        return None
    doc = _doc(arguments)
    if doc is None:
        return None
    if not _secret_path(doc):
        return _env_value(doc)
    written = next((doc[k] for k in _WRITTEN_KEYS if k in doc), None)
    if isinstance(written, list):  # (MultiEdit's edits)
        written = "\n".join(e["new_string"] for e in written
                            if isinstance(e, dict) and isinstance(e.get("new_string"), str))
    return written if isinstance(written, str) and written.strip() else None


def _env_value(doc: dict) -> str | None:
    """The values an ``Edit`` or ``MultiEdit`` puts into, or takes out of, a file of
    ``KEY=value`` lines as one word for another (:data:`_ENV_PATH`, :data:`_ONE_VALUE`), a line
    each, or ``None``."""
    path = doc.get("file_path")
    if not isinstance(path, str) or _ENV_PATH.search(path[-1024:]) is None:
        return None
    edits = doc.get("edits") if isinstance(doc.get("edits"), list) else [doc]
    values = [e[k] for e in edits if isinstance(e, dict) for k in ("old_string", "new_string")
              if isinstance(e.get(k), str) and _ONE_VALUE.fullmatch(e[k])]
    return "\n".join(values) or None
