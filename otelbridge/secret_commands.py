"""Commands whose output is a secret, bare (:func:`prints_secret`): a secret manager's read
(``gcloud secrets versions access``, ``op read``, ``vault kv get -field=…``, ``aws
secretsmanager get-secret-value``, ``az keyvault secret show``, ``doppler secrets get``), a
keychain's (``security find-generic-password -w``, ``pass show``), a CLI printing its own token
(``gh auth token``, ``gcloud auth print-access-token``, ``aws ecr get-login-password``,
``kubectl create token``), a Kubernetes secret's value through a template, a decryption
(``sops -d``, ``age -d``), a mounted secret's file, a fresh random value (``openssl rand``), a
variable naming a secret echoed (``printenv GITHUB_TOKEN``, ``echo $DB_PASSWORD``).

Nothing around such a value says what it is, so the detector cannot find it in the output; the
command that printed it does. A tool call's output is then exported as a marker only, and its
lines are remembered (:mod:`otelbridge.found_secrets`): the model's prose that repeats it is
hidden too.
"""

from __future__ import annotations

import re

import msgspec

#: A command's first word: at the start, or after a blank, a quote, ``(`` or a shell's
#: ``;``, ``&``, ``|`` (a JSON document's text: ``{"command":"gh auth token"}``)
_AT = r"(?<![\w./-])"
#: ... then its other words, each a blank away; the rest of the command on its line
_REST = r"[^\n;&|]*?"
_READS_A_SECRET = re.compile(_AT + r"(?:" + "|".join((
    r"gcloud\s+secrets\s+versions\s+access",
    r"gcloud\s+auth\s+(?:application-default\s+)?print-(?:access|identity)-token",
    r"op\s+(?:read|inject)\s",
    r"op\s+item\s+get\s" + _REST + r"--reveal",
    r"security\s+find-(?:generic|internet)-password\s" + _REST + r"\s-w\b",
    r"(?:go)?pass\s+show\s",
    r"cat\s" + _REST + r"/run/secrets/",
    r"kubectl\s+get\s+secrets?\s" + _REST + r"(?:-o|--output)[ =]?[\"']?(?:jsonpath|go-template|template)",
    r"kubectl\s+create\s+token\s",
    r"vault\s+(?:kv\s+get|read)\s" + _REST + r"-field[ =]",
    r"aws\s+secretsmanager\s+get-secret-value\s",
    r"aws\s+ssm\s+get-parameters?(?:-by-path)?\s" + _REST + r"--with-decryption",
    r"aws\s+(?:ecr|ecr-public)\s+get-login-password",
    r"aws\s+codeartifact\s+get-authorization-token",
    r"az\s+keyvault\s+secret\s+show\s",
    r"az\s+account\s+get-access-token",
    r"(?:doppler|infisical)\s+secrets\s+get\s",
    r"heroku\s+auth:token",
    r"gh\s+auth\s+token\b",
    r"npm\s+token\s+create",
    r"(?:sops|age)\s+(?:-d|--decrypt)\b",
    r"openssl\s+rand\s",
    r"(?:printenv\s+|echo\s+[\\\"']*\$\{?)\w*?(?i:token|secret|passw(?:or)?d|api_?key|private_key|access_key"
    r"|credentials?)(?![A-Za-z])",
)) + r")")


#: The keys of a shell tool's command in its arguments (Claude Code's and milk's ``Bash``,
#: Gemini's ``run_shell_command``: ``command``; Codex's ``cmd``, a list)
_COMMAND_KEYS = ("command", "cmd")


def prints_secret(arguments: str) -> bool:
    """Whether a tool call's arguments (its JSON text, or a command line) run a command whose
    output is a secret, bare (see the module's text): the command a shell tool's ``command``
    or ``cmd`` names (another tool's arguments, a file written, only mention commands). At most
    the first 4,096 characters of the command are read."""
    if arguments[:1] != "{":
        return _READS_A_SECRET.search(arguments, 0, 4096) is not None
    if '"command"' not in arguments and '"cmd"' not in arguments:
        return False
    try:
        doc = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        return False
    command = next((doc[k] for k in _COMMAND_KEYS if k in doc), None) if isinstance(doc, dict) else None
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return isinstance(command, str) and _READS_A_SECRET.search(command, 0, 4096) is not None
