"""End to end: a tool call whose command prints a secret bare (``gcloud secrets versions
access``, ``op read``, ``printenv GITHUB_TOKEN``, ...): nothing in its output says what it is,
the command does. otelbridge runs as a subprocess with ``--capture-content``; spans are read at
a real OTLP receiver."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from tests.e2e.test_security import export

MODEL = "claude-sonnet-4-5"


def session(sid: str, command: str, output: str, repeated: str) -> bytes:
    """A Claude Code session: a Bash call running ``command`` whose output is ``output``, then
    the model's text ``repeated``, then a ``cat`` of a notes file (its output kept)."""
    def assistant(mid: str, content: list) -> dict:
        return {"type": "assistant", "session_id": sid, "message": {
            "id": mid, "model": MODEL, "role": "assistant", "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": content}}

    def result(tool_id: str, text: str) -> dict:
        return {"type": "user", "session_id": sid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": text, "is_error": False}]}}

    lines = [
        {"type": "system", "subtype": "init", "session_id": sid, "model": MODEL, "cwd": "/tmp",
         "tools": ["Bash"], "claude_code_version": "2.1.280"},
        assistant("msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                             "input": {"command": command, "description": "Read it"}}]),
        result("toolu_1", output),
        assistant("msg_2", [{"type": "text", "text": repeated},
                            {"type": "tool_use", "id": "toolu_2", "name": "Bash",
                             "input": {"command": "cat notes.txt", "description": "Notes"}}]),
        result("toolu_2", "release v2 build 7f3a9c2e1b4d"),
        {"type": "result", "subtype": "success", "is_error": False, "session_id": sid, "num_turns": 2,
         "duration_ms": 10, "result": "done"},
    ]
    return b"".join(json.dumps(l).encode() + b"\n" for l in lines)


@pytest.mark.parametrize("command", [
    "gcloud secrets versions access latest --secret=db-password",
    "op read op://Prod/Postgres/password",
    "security find-generic-password -s deploy -w",
    "kubectl get secret app -o jsonpath='{.data.token}' | base64 -d",
    "aws ssm get-parameter --name /prod/stripe --with-decryption --query Parameter.Value --output text",
    "printenv GITHUB_TOKEN",
    "cd deploy && vault kv get -field=password secret/db",
    # a program's options before its subcommand, a directory, echo's and printf's forms
    "gcloud --project prod secrets versions access latest --secret=db",
    "op --account my.1password.com read op://x/y/z",
    "kubectl -n prod get secret db -o jsonpath='{.data.password}' | base64 -d",
    "/usr/bin/printenv GITHUB_TOKEN",
    "printf '%s\\n' \"$GH_PAT\"",
    # the environment's, a keyring's, a deployment's; a secret's data; a shell's -c
    "env | grep TOKEN | cut -d= -f2",
    "secret-tool lookup service prod-db",
    "heroku config:get DATABASE_PASSWORD -a api",
    "terraform -chdir=infra output -raw db_password",
    "kubectl get secret db -o yaml",
    "pwsh -c 'Get-Secret -Name Db -AsPlainText'",
    # a fresh random value; a file holding a secret alone; a field out of JSON; a tool's store;
    # a container's environment; a dotenv's line, its name cut away
    "python3 -c \"import secrets; print(secrets.token_urlsafe(32))\"",
    "node -e \"console.log(require('crypto').randomBytes(32).toString('hex'))\"",
    "head -c 32 /dev/urandom | base64", "pwgen -s 24 1", "rails secret",
    "cat secrets/db_password.txt", "cat ~/.vault_pass", "cat ~/.config/openai/key",
    "jq -r .token ~/.config/app/credentials.json", "aws configure get aws_secret_access_key",
    "az storage account keys list -g rg -n acct --query '[0].value' -o tsv",
    "docker exec db printenv POSTGRES_PASSWORD", "grep DB_PASSWORD .env | cut -d= -f2",
    # other readers of a file; inside a container; a Windows path; yq; awk and sed out of a dotenv
    "bat secrets/api_key.txt", "nl -ba ~/.vault_pass", "xxd -p api_key.txt",
    "kubectl exec api-0 -- cat /etc/app/secrets/db_password", "type C:\\deploy\\secrets\\api_key.txt",
    "python3 -c \"import os; print(os.urandom(32).hex())\"", "yq .auth.token config.yaml",
    "awk -F= '/DB_PASSWORD/{print $2}' .env", "sed -n '/API_KEY/s/.*=//p' .env.local",
    # a container's mounted secret; a project runner before python; Django's and Fernet's keys;
    # a SECRET_KEY; awk's last field
    "docker exec -it db cat /run/secrets/postgres_password", "docker compose exec web cat /app/api_key.txt",
    "uv run python -c 'import os; print(os.urandom(16).hex())'",
    "python -c 'from django.core.management.utils import get_random_secret_key as g; print(g())'",
    "python3 -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'",
    "echo $SECRET_KEY", "awk -F= '/API_KEY/{print $NF}' .env",
])
def test_a_commands_bare_secret_leaves_as_a_marker_and_nowhere_else(command):
    secret = "q7LmZ3xV9pK2wR8t"
    data = session("sess-reads-secret", command, secret + "\n", f"Connected with {secret}, continuing.")
    _, spans, raw = export(["--capture-content"], data)
    assert secret.encode() not in raw
    assert secret not in json.dumps([asdict(s) for s in spans])
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name == "execute_tool Bash"}
    assert tools["toolu_1"].attributes["gen_ai.tool.call.result"] == "[REDACTED:secret]"
    # the command itself is exported (its flags redacted as anywhere: gcloud's --secret=NAME)
    assert json.loads(tools["toolu_1"].attributes["gen_ai.tool.call.arguments"])["command"].split()[:3] == \
        command.split()[:3]
    # the other call's output, and the model's text around the value, stay
    assert tools["toolu_2"].attributes["gen_ai.tool.call.result"] == "release v2 build 7f3a9c2e1b4d"
    (chat,) = [s for s in spans if s.name == f"chat {MODEL}" and s.attributes["gen_ai.response.id"] == "msg_2"]
    text = json.loads(chat.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"]
    assert text == "Connected with [REDACTED:secret], continuing."


@pytest.mark.parametrize("command", ["cat README.md", "kubectl get secrets", "printenv PATH",
                                     "cat src/auth/token.ts", "cat docs/passwords.md", "grep DB_PASSWORD .env",
                                     "aws configure get region", "cat package.json | jq -r .version",
                                     "python3 manage.py test",
                                     # a dotenv's names cut out; scripts and documents named for a secret
                                     "grep API_KEY .env | cut -d= -f1", "grep -i token .env | awk -F= '{print $1}'",
                                     "cat scripts/rotate_token", "cat bin/get-token", "cat secrets/README",
                                     "cat secrets/Makefile", "yq .token_url config.yaml",
                                     "awk -F= '/DB_PASSWORD/{print $1}' .env", "sed -i.bak 's/^API_KEY=.*/API_KEY=/' .env",
                                     "git checkout -- secrets/api_key.txt", "xxd logo.png",
                                     "yq e '.jobs.build.steps[].with.token' .github/workflows/ci.yml",
                                     "yq '.components.securitySchemes.api_key' openapi.yaml",
                                     "cat secrets/template", "head -50 docs/secrets/overview",
                                     "docker exec db cat /etc/hosts", "uv run pytest", "echo $SECRET_KEY_PATH",
                                     "env | grep PATH", "terraform output", "sh -c 'echo gh auth token'",
                                     "echo $TOKENIZERS_PARALLELISM", "gh auth status",
                                     # a command only named: in an argument, in a comment
                                     "grep -rn 'gcloud secrets versions access' scripts/",
                                     "git log -1 -- fetch.sh  # uses op read op://x/y/z"])
def test_a_command_that_prints_no_secret_keeps_its_output(command):
    output = "q7LmZ3xV9pK2wR8t"
    data = session("sess-reads-nothing", command, output, "Read it.")
    _, spans, _ = export(["--capture-content"], data)
    (tool,) = [s for s in spans if s.name == "execute_tool Bash" and s.attributes["gen_ai.tool.call.id"] == "toolu_1"]
    assert tool.attributes["gen_ai.tool.call.result"] == output


def test_a_command_named_in_another_tools_arguments_is_not_run():
    """A file written that mentions ``gh auth token`` (a script, docs): its tool's output is
    what the tool said, not a secret; only a shell tool's command is read."""
    from tests.e2e.test_security import one_call_session

    data = one_call_session("sess-writes-docs", "Write", {"file_path": "/repo/README.md",
                                                          "content": "Log in: `gh auth token | docker login`"},
                            "File created successfully at: /repo/README.md",
                            {"subtype": "success", "is_error": False, "result": "done"})
    _, spans, _ = export(["--capture-content"], data)
    (tool,) = [s for s in spans if s.name == "execute_tool Write"]
    assert tool.attributes["gen_ai.tool.call.result"] == "File created successfully at: /repo/README.md"


@pytest.mark.parametrize("path", ["/repo/secrets/api_key.txt", "/srv/ansible/.vault_pass", "/etc/openai/key"])
def test_a_file_named_for_a_secret_read_or_written_leaves_as_a_marker(path):
    """What a Read of a file that holds a secret alone shows (with its line number), and what a
    Write puts into one: nothing around the value says what it is, the file's name does."""
    from tests.e2e.test_security import one_call_session

    secret = "Wr4Kp8Xz2Lm6Qt9Vn3Yb7Hc"
    done = {"subtype": "success", "is_error": False, "result": f"The key is {secret}."}
    read = one_call_session("sess-reads-file", "Read", {"file_path": path}, f"     1\u2192{secret}\n", done)
    written = one_call_session("sess-writes-file", "Write", {"file_path": path, "content": secret + "\n"},
                               f"File created successfully at: {path}", done)
    for data, tool_name in ((read, "Read"), (written, "Write")):
        _, spans, raw = export(["--capture-content"], data)
        assert secret.encode() not in raw, tool_name
        (tool,) = [s for s in spans if s.name == f"execute_tool {tool_name}"]
        if tool_name == "Read":
            assert tool.attributes["gen_ai.tool.call.result"] == "[REDACTED:secret]"
        else:
            assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {
                "file_path": path, "content": "[REDACTED:secret] "}  # (line ends as blanks)
            assert tool.attributes["gen_ai.tool.call.result"] == f"File created successfully at: {path}"


def test_what_a_multiedit_writes_into_a_file_named_for_a_secret_is_hidden():
    """MultiEdit's ``edits``, each ``new_string`` a secret written into ``.vault_pass``."""
    from tests.e2e.test_security import one_call_session

    secret = "Wr4Kp8Xz2Lm6Qt9Vn3Yb7Hc"
    data = one_call_session("sess-multiedit", "MultiEdit", {"file_path": "/srv/ansible/.vault_pass", "edits": [
        {"old_string": "old", "new_string": secret}]}, "Applied 1 edit", {"subtype": "success", "is_error": False,
                                                                         "result": f"Set it to {secret}."})
    _, spans, raw = export(["--capture-content"], data)
    assert secret.encode() not in raw
    (tool,) = [s for s in spans if s.name == "execute_tool MultiEdit"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"])["edits"] == [
        {"old_string": "old", "new_string": "[REDACTED:secret]"}]


@pytest.mark.parametrize(("tool_name", "arguments"), [
    ("Edit", {"file_path": "/app/.env", "old_string": "your-api-key-here", "new_string": "Wr4Kp8Xz2Lm6Qt9Vn3Yb7Hc"}),
    ("Edit", {"file_path": "/app/config/prod.env", "old_string": "changeme", "new_string": "Wr4Kp8Xz2Lm6Qt9Vn3Yb7Hc"}),
    ("MultiEdit", {"file_path": "/app/.env.local", "edits": [
        {"old_string": "PORT=3000", "new_string": "PORT=8080"},
        {"old_string": "<key>", "new_string": "Wr4Kp8Xz2Lm6Qt9Vn3Yb7Hc"}]}),
])
def test_a_value_an_edit_writes_into_a_dotenv_file_is_hidden(tool_name, arguments):
    """An edit that puts one word into a file of ``KEY=value`` lines writes a value: nothing
    around it (``your-api-key-here`` → it) says it is a secret, the file does. A line the edit
    writes whole (``PORT=8080``) is left to the key rules."""
    from tests.e2e.test_security import one_call_session

    secret = "Wr4Kp8Xz2Lm6Qt9Vn3Yb7Hc"
    data = one_call_session("sess-edits-env", tool_name, arguments, "The file has been updated.",
                            {"subtype": "success", "is_error": False, "result": f"Set the key to {secret}."})
    _, spans, raw = export(["--capture-content"], data)
    assert secret.encode() not in raw
    (tool,) = [s for s in spans if s.name == f"execute_tool {tool_name}"]
    exported = json.loads(tool.attributes["gen_ai.tool.call.arguments"])
    edits = exported.get("edits") or [exported]
    assert [e["new_string"] for e in edits][-1] == "[REDACTED:secret]"
    assert "PORT=8080" in json.dumps(exported) or tool_name == "Edit"


def test_a_dotenv_edit_hides_a_rotated_key_both_ways_and_no_model_name():
    """A key rotated in ``.env`` (one generated-looking word for another): both are secrets. A
    model's name put there for another is not: remembered, it hid every later model name."""
    from tests.e2e.test_security import one_call_session

    old, new = "a8F3kLm29QxZpR7tW2", "Wr4Kp8Xz2Lm6Qt9Vn3Yb7Hc"
    done = {"subtype": "success", "is_error": False, "result": "done"}
    data = one_call_session("sess-rotates", "Edit", {"file_path": "/app/.env", "old_string": old, "new_string": new},
                            "The file has been updated.", done)
    _, spans, raw = export(["--capture-content"], data)
    assert old.encode() not in raw and new.encode() not in raw
    data = one_call_session("sess-model", "Edit", {"file_path": "/app/.env", "old_string": "claude-sonnet-4-5",
                                                   "new_string": "claude-sonnet-4-6"}, "The file has been updated.", done)
    _, spans, _ = export(["--capture-content"], data)
    (tool,) = [s for s in spans if s.name == "execute_tool Edit"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"])["new_string"] == "claude-sonnet-4-6"
    assert [s.name for s in spans if s.name.startswith("chat ")] == [f"chat {MODEL}"]
