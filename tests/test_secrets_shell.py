"""Secrets in the command lines an agent runs (Claude Code's Bash ``command``, echoed in the
tool's output and the model's prose): a value given to a command that stores or sets a secret,
each with the near misses that hold none (a variable's reference, a name that says no secret).
The forms are also rows of ``tests/data/secret-forms.jsonl`` (the recall corpus)."""

from __future__ import annotations

import pytest

from otelbridge import redact
from tests.secret_forms import check


def clean(text: str) -> str:
    """``text`` redacted by this test's own redactor (a fresh one: ``tests/conftest.py``)."""
    return redact.current().redact(text)


def _check(text: str, expected: str | None) -> None:
    check(text, expected, in_tool_use=True)


@pytest.mark.parametrize(("text", "expected"), [
    ("gh secret set STRIPE_KEY -bHunter2Spring!", "gh secret set STRIPE_KEY -b[REDACTED:secret]"),
    ('gh secret set API_TOKEN -b"correct horse" -R o/r', "gh secret set API_TOKEN -b[REDACTED:secret] -R o/r"),
    ("gh secret set -bXk9pQ2mZr7LwT4vB8nYc3HdF6sJa1GeU NAME", "gh secret set -b[REDACTED:secret] NAME"),
    ("gh secret set NAME --body=Hunter2Spring! --env prod", "gh secret set NAME --body=[REDACTED:secret] --env prod"),
    ("gh secret set NAME --body 'sk_live_51HqLyjWDarjtT1zdp7dc'", "gh secret set NAME --body [REDACTED:secret]"),
    # a variable's reference holds no value; nor does a file read
    ('gh secret set NAME --body "$TOKEN"', None), ("gh secret set NAME -b $DEPLOY_KEY", None),
    ('gh secret set NAME -b "${{ secrets.PAT }}"', None), ("gh secret set NAME < file.txt", None),
    ("gh secret set NAME --body-file token.txt", None),
    # ... nor a file's text read (the command line holds its path); a command's output may
    ('gh secret set NAME --body "$(cat f)"', None), ("gh secret set NAME -b $(< ~/.token)", None),
    ('DB_PASSWORD="$(cat secrets/db.txt)" ./migrate', None),
    ('gh secret set NAME --body "$(echo hunter2)"', "gh secret set NAME --body [REDACTED:secret]"),
    ("aws configure set aws_secret_access_key $AWS_SECRET_ACCESS_KEY", None),
])
def test_gh_secret_set_body(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("jq --arg token Hunter2Spring! '.a = $token' cfg.json", "jq --arg token [REDACTED:secret] '.a = $token' cfg.json"),
    ('jq -n --arg password "correct horse" --arg user ann --arg api_key hunter2 \'{p: $password}\'',
     "jq -n --arg password [REDACTED:secret] --arg user ann --arg api_key [REDACTED:secret] '{p: $password}'"),
    ("jq --argjson secret '\"hunter2\"' '.s = $secret' f.json", "jq --argjson secret [REDACTED:secret] '.s = $secret' f.json"),
    ("curl -s x | jq -r --arg pw hunter2 '.[$pw]'", "curl -s x | jq -r --arg pw [REDACTED:secret] '.[$pw]'"),
    # a name that says no secret (an object's key), a variable's reference, another flag
    ("jq --arg name \"$NAME\" '.a' f", None), ("jq --arg key foo '.[$key]' f", None),
    ('jq --arg token "$TOKEN" \'.t = $token\' f', None), ("jq --arg token_type bearer '.' f", None),
    ("jq --args token hunter2", None),
    # ... and the variable's reference in the program (also in double quotes, escaped)
    ("jq '.auth.token = $token' f.json", None), ("jq '.token = $token'", None),
    ("jq '.a.password = $pw | .b = 1' f", None), ('jq ".token = \\$token" f', None),
    ("jq '.token = $uperS3cret' f", "jq '.token = [REDACTED:secret]' f"),
])
def test_jq_variable_named_for_a_secret(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("cf set-env web DB_PASSWORD 'correct horse'", "cf set-env web DB_PASSWORD [REDACTED:secret]"),
    ("launchctl setenv API_TOKEN Hunter2Spring!", "launchctl setenv API_TOKEN [REDACTED:secret]"),
    ("travis env set API_KEY hunter2 --private", "travis env set API_KEY [REDACTED:secret] --private"),
    ("npm set //registry.npmjs.org/:_authToken hunter2", "npm set //registry.npmjs.org/:_authToken [REDACTED:secret]"),
    ("glab variable set API_TOKEN Hunter2Spring!", "glab variable set API_TOKEN [REDACTED:secret]"),
    ("glab variable set -R o/r API_TOKEN --scope prod --masked --value 'correct horse'",
     "glab variable set -R o/r API_TOKEN --scope prod --masked --value [REDACTED:secret]"),
    ("glab variable update DB_PASSWORD -v hunter2", "glab variable update DB_PASSWORD -v [REDACTED:secret]"),
    # a name that says no secret, a variable's reference, no value given
    ("cf set-env web NODE_ENV production", None), ("launchctl setenv PATH /usr/bin", None),
    ("travis env set DEBUG 1", None), ("npm set registry https://registry.npmjs.org/", None),
    ("glab variable set LOG_LEVEL debug", None), ('glab variable set API_TOKEN --value "$API_TOKEN"', None),
    ("glab variable set API_TOKEN --masked < token.txt", None),
])
def test_a_named_value_set_as_two_arguments(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("echo Hunter2Spring! | firebase functions:secrets:set STRIPE_KEY",
     "echo [REDACTED:secret] | firebase functions:secrets:set STRIPE_KEY"),
    ("firebase functions:secrets:set STRIPE_KEY <<< 'correct horse'",
     "firebase functions:secrets:set STRIPE_KEY <<< [REDACTED:secret]"),
    ("printf '%s' 'correct horse' | doppler secrets set API_KEY --silent",
     "printf '%s' [REDACTED:secret] | doppler secrets set API_KEY --silent"),
    ("echo hunter2 | glab auth login --hostname gitlab.example.com --stdin",
     "echo [REDACTED:secret] | glab auth login --hostname gitlab.example.com --stdin"),
    ("echo hunter2 | vault login -", "echo [REDACTED:secret] | vault login -"),
    ("echo -n 'Hunter2Spring!' | kubectl create secret generic db --from-file=/dev/stdin",
     "echo -n [REDACTED:secret] | kubectl create secret generic db --from-file=/dev/stdin"),
    ("echo 'correct horse' | gpg --batch --yes --passphrase-fd 0 -c notes.txt",
     "echo [REDACTED:secret] | gpg --batch --yes --passphrase-fd 0 -c notes.txt"),
    ("gpg --batch --passphrase-fd 0 -d notes.txt.gpg <<< hunter2", "gpg --batch --passphrase-fd 0 -d notes.txt.gpg <<< [REDACTED:secret]"),
    # a variable's reference (also with the escaped quotes of a tool call's JSON), a file read,
    # a command that reads no secret, the descriptor's number
    ('echo "$GITLAB_TOKEN" | glab auth login --stdin', None), ("echo $VAULT_TOKEN | vault login -", None),
    ('echo "$PASS" | gpg --batch --passphrase-fd 0 -c notes.txt', None),
    ('echo "$TOKEN" | docker login -u me --password-stdin', None),
    ("gpg --batch --passphrase-fd 0 -d notes.txt.gpg < pass.txt", None), ("gpg --passphrase-fd 3 -d f.gpg", None),
    ("kubectl create secret generic db --from-file=password=/dev/stdin", None),
    ("kubectl create secret generic db --from-file password=./db-pass.txt", None),
    ("echo hunter2 | kubectl create secret generic db --from-file=password=/dev/stdin",
     "echo [REDACTED:secret] | kubectl create secret generic db --from-file=password=/dev/stdin"),
    ("echo done | vault login -method=userpass username=me", None), ("echo hello | doppler secrets", None),
])
def test_a_secret_on_a_command_s_standard_input(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("ansible-vault encrypt_string 'correct horse' --name db_password >> group_vars/all/vault.yml",
     "ansible-vault encrypt_string [REDACTED:secret] --name db_password >> group_vars/all/vault.yml"),
    ("ansible-vault encrypt_string --vault-id prod@prompt -n smtp_pass Hunter2Spring!",
     "ansible-vault encrypt_string --vault-id prod@prompt -n smtp_pass [REDACTED:secret]"),
    ("ansible-vault encrypt_string --ask-vault-pass hunter2 --name x && git add vault.yml",
     "ansible-vault encrypt_string --ask-vault-pass [REDACTED:secret] --name x && git add vault.yml"),
    ("echo -n 'correct horse' | ansible-vault encrypt_string --stdin-name db_password",
     "echo -n [REDACTED:secret] | ansible-vault encrypt_string --stdin-name db_password"),
    # nothing given to encrypt (standard input, a prompt), a variable's reference, another action
    ("ansible-vault encrypt_string --vault-id prod@prompt --stdin-name db_password", None),
    ('ansible-vault encrypt_string "$DB_PASSWORD" --name db_password', None),
    ("ansible-vault encrypt_string --vault-password-file ~/.vault_pass --name db_password", None),
    ("ansible-vault encrypt group_vars/all/vault.yml", None),
])
def test_ansible_vault_encrypt_string(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("az pipelines variable create --name DB_PASSWORD --value 'correct horse' --secret true",
     "az pipelines variable create --name DB_PASSWORD --value [REDACTED:secret] --secret true"),
    ("eas env:create --name API_KEY --value Hunter2Spring! --visibility secret --environment production",
     "eas env:create --name API_KEY --value [REDACTED:secret] --visibility secret --environment production"),
    ("eas env:create production --value=hunter2 --name STRIPE_SECRET_KEY",
     "eas env:create production --value=[REDACTED:secret] --name STRIPE_SECRET_KEY"),
    ("az appconfig kv set -n store --key app/DbPassword --value hunter2 --yes",
     "az appconfig kv set -n store --key app/DbPassword --value [REDACTED:secret] --yes"),
    # a name that says no secret, a variable's reference, a name in another command
    ("az pipelines variable create --name LOG_LEVEL --value debug", None),
    ("az appconfig kv set -n store --key Color --value red", None),
    ('az pipelines variable create --name DB_PASSWORD --value "$DB_PASSWORD" --secret true', None),
    ("eas env:create --name API_URL --value https://api.example.com", None),
    ("echo --name api_token; tool --value 3", None),
])
def test_a_value_given_to_a_name_that_names_a_secret(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    # netlify env:set's --secret takes no value: it says the value set is one, whatever its name
    ("netlify env:set --secret KEY 'a b'", "netlify env:set --secret KEY [REDACTED:secret]"),
    ("netlify env:set --secret API_KEY Ne5xQ2", "netlify env:set --secret API_KEY [REDACTED:secret]"),
    ("netlify env:set KEY hunter2 --secret --context production",
     "netlify env:set KEY [REDACTED:secret] --secret --context production"),
    ("netlify env:set --context production --secret KEY 'a b' && netlify deploy",
     "netlify env:set --context production --secret KEY [REDACTED:secret] && netlify deploy"),
    # ... its name is none; no value given, a variable's reference; another command's --secret
    ('netlify env:set --secret KEY "$KEY"', None), ("netlify env:set --secret KEY", None),
    ("netlify env:set LOG_LEVEL debug", None),
    ("tool --secret Zq7Lm3Kp9 next", "tool --secret [REDACTED:secret] next"),
])
def test_netlify_s_secret_flag_takes_no_value(text, expected):
    _check(text, expected)


@pytest.mark.parametrize("command", ["netlify env:set", "glab variable set"])
def test_options_without_the_name_after_them_take_linear_time(command):
    """20 options and no name after them: each option read two ways (``--scope`` also as ``-``
    then ``-scope``) doubled the time with every one, 13 s for these; now milliseconds."""
    import time

    text = command + " --scope prod" * 20 + " -"
    start = time.process_time()
    assert clean(text) == text
    assert time.process_time() - start < 1.5
