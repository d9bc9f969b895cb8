"""otelbridge.found_secrets: a value the detector redacted once is redacted wherever it appears
after, in the same run (one :class:`~otelbridge.redact.Redactor`), also where nothing around it
says it is a secret; ordinary words are never remembered."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbridge import redact
from otelbridge.events import SpanEvent, SpanRecord
from otelbridge.found_secrets import (ANYWHERE, MAX_CHARS, MAX_VALUES, WHOLE_WORD, FoundSecrets, candidates, how_hidden,
                                      replaced)
from otelbridge.redact import Redactor
from otelbridge.spans import PresetIdGenerator, SpanBuilder
from otelbridge.stats import Stats

PW = "Zq8vK2mP9xL4wR"


def test_a_value_found_in_one_string_is_hidden_in_every_later_one():
    r = Redactor()
    assert r.scan(f"export DB_PASSWORD={PW}") == "export DB_PASSWORD=[REDACTED:secret]"
    assert r.found.markers == {PW: "[REDACTED:secret]"}
    # bare, in prose, in a JSON document's strings: nothing says it is one
    assert r.scan(PW + "\n") == "[REDACTED:secret] "
    assert r.clean(f"The password is {PW}; checking it.") == "The password is [REDACTED:secret]; checking it."
    assert r.json_text(json.dumps({"out": f"got {PW}!", "seen": [PW, "x"]}), 1000) == \
        '{"out":"got [REDACTED:secret]!","seen":["[REDACTED:secret]","x"]}'
    # an argv element and the rest of the string it was found in
    assert r.attributes({"process.command_args": ["echo", PW]}) == \
        {"process.command_args": ["echo", "[REDACTED:secret]"]}
    assert r.scan(f"DB_PASSWORD={PW} ./run --check {PW}") == \
        "DB_PASSWORD=[REDACTED:secret] ./run --check [REDACTED:secret]"


def test_a_value_with_a_slash_is_hidden_where_json_escapes_the_slash():
    """``/`` may be written ``\\/`` in JSON (PHP's json_encode, Go's for ``</``): an error text
    quoting the value so is hidden whole, not from the slash on."""
    r = Redactor()
    r.scan("export DB_PASSWORD='k3Lp9Qw/zXv+2mR7'")
    assert r.scan("call failed with k3Lp9Qw\\/zXv+2mR7 at host") == "call failed with [REDACTED:secret] at host"
    assert "k3Lp9Qw\\/zXv+2mR7" in candidates("k3Lp9Qw/zXv+2mR7")


def test_a_string_scanned_before_the_value_was_found_is_hidden_when_met_again():
    r = Redactor()
    said = f"I'll set it to {PW} now"
    assert r.scan(said) == said  # nothing tells yet: the scan is remembered as it is
    assert r.attributes({"a": said}) == {"a": said}
    r.scan(f"password: {PW}")
    assert r.scan(said) == "I'll set it to [REDACTED:secret] now"
    assert r.attributes({"a": said}) == {"a": "I'll set it to [REDACTED:secret] now"}


def test_a_value_found_through_its_neighbours_in_a_json_document_is_remembered():
    r = Redactor()
    # no string alone is a secret: the key before it says so
    assert r.json_text(json.dumps({"password": PW}), 1000) == '{"password":"[REDACTED:secret]"}'
    assert r.scan(f"connected with {PW}") == "connected with [REDACTED:secret]"
    r2 = Redactor()
    assert r2.attributes({"process.command_args": ["mysql", "--password", "Hq2-r7Lm0x"]}) == \
        {"process.command_args": ["mysql", "--password", "[REDACTED:secret]"]}
    assert r2.scan("Hq2-r7Lm0x") == "[REDACTED:secret]"


def test_only_values_that_may_be_secrets_are_remembered():
    """Words without a digit or a sign, identifiers, names and values the detector finds by
    their shape alone (an e-mail: it would only crowd the others out) are not remembered."""
    r = Redactor()
    for text in ("password=changeme", "token: abcdefghijkl", "secret=xxxxxxxx", "- Token: mcp__vault__get_token",
                 "--secret=db-password-prod", "password=pw1", "mail ann.lee+ci@example.com"):
        assert "[REDACTED:" in r.scan(text), text
    assert r.found.markers == {}
    later = "changeme abcdefghijkl mcp__vault__get_token db-password-prod pw1"
    assert r.scan(later) == later
    assert how_hidden("ab1-cd2e") == ANYWHERE
    assert how_hidden("ab1-cd2") == WHOLE_WORD  # 7 characters
    assert how_hidden("ab1 cd2e9") == how_hidden("a b c") == how_hidden("p@ss") == WHOLE_WORD
    assert how_hidden("abc") is how_hidden("abcd") is how_hidden("a\nb c") is how_hidden("  ") is None
    assert how_hidden("pw1") is None
    # a placeholder names a value; a value may begin with a $ (the detector hides it as one)
    assert how_hidden("$DB01_PASS") is how_hidden("$password2") is how_hidden("${DB_PASSWORD}") is None
    assert how_hidden("$uperS3cret99") == ANYWHERE and how_hidden("$ecr3t!") == WHOLE_WORD
    r = Redactor()
    assert r.scan("DB_PASSWORD=$uperS3cret99") == "DB_PASSWORD=[REDACTED:secret]"
    assert r.scan("Find uses of $uperS3cret99") == "Find uses of [REDACTED:secret]"
    # ... and searched for without its $, which a regex reads as the line's end
    assert r.scan("grep -rn 'uperS3cret99' src/") == "grep -rn '[REDACTED:secret]' src/"
    assert r.scan("grep -rn '\\$uperS3cret99' src/") == "grep -rn '\\[REDACTED:secret]' src/"


def test_a_short_or_spaced_value_is_hidden_as_a_whole_word_after_it_was_found():
    """A password a person picked, short or with blanks, said once under its label and echoed
    bare later (a tool's result): hidden there too, where it stands as a word of its own (a
    short one is also part of longer words, which stay)."""
    r = Redactor()
    assert r.scan("export DB_PASSWORD='a b c'") == "export DB_PASSWORD='[REDACTED:secret]'"
    assert r.scan("password: hunt3r") == "password: [REDACTED:secret]"
    assert r.scan("Password: correct horse battery") == "Password: [REDACTED:secret]"
    assert set(r.found.markers) == {"a b c", "hunt3r", "correct horse battery"}
    assert r.scan("a b c\n") == "[REDACTED:secret] "
    assert r.clean("echo hunt3r; login ok (hunt3r)") == "echo [REDACTED:secret]; login ok ([REDACTED:secret])"
    assert r.json_text(json.dumps({"stdout": "correct horse battery\n"}), 1000) == '{"stdout":"[REDACTED:secret] "}'
    kept = "hunt3rs a b cd xa b c hunt3r_x correct horse"
    assert r.scan(kept) == kept


def test_prose_after_a_label_is_not_remembered_a_passphrase_is():
    """A value with blanks that holds prose's words (``the``, ``as``, ``ask``) and no digit or
    sign is what a model wrote after a label: hidden there, never in later strings; a
    passphrase of other words, or with a digit or a sign, is remembered."""
    later = "ask the admin; same as prod; the same as the username; correct horse battery staple; corr3ct horse"
    for said in ("password: ask the admin", "Password: same as prod", "Password: the same as the username"):
        r = Redactor()
        assert r.scan(said).endswith(": [REDACTED:secret]")
        assert r.scan(later) == later, said
    r = Redactor()
    r.scan("Passphrase: correct horse battery staple")
    r.scan("DB_PASSWORD='corr3ct horse'")
    assert r.scan(later) == "ask the admin; same as prod; the same as the username; [REDACTED:secret]; [REDACTED:secret]"
    assert how_hidden("see the vault") is None and how_hidden("a b c") == WHOLE_WORD


def test_a_short_value_under_a_marked_name_is_hidden_in_a_later_description():
    """A short value in a table's row or after a bold name, found once, is hidden in a
    sub-agent's description after it (``gen_ai.agent.description`` is exported by default); a
    PIN's digits are not remembered (every later number would be at risk)."""
    r = Redactor()
    r.scan("| DB_PASS | Kx8#mq2 |")
    r.scan("**Password**: Pq8vLm3nPw")
    r.scan("PIN: 4821")
    assert r.scan("rotate Kx8#mq2 and Pq8vLm3nPw; port 4821") == "rotate [REDACTED:secret] and [REDACTED:secret]; port 4821"


def test_the_value_is_remembered_not_the_text_around_it():
    """What a pattern replaced may hold more than the secret: punctuation after it, the user
    before a URL's password, the rest of a cookie list or of a command's `--set a=X,b=Y`."""
    assert candidates("Xy7Qw3Er9Ty.") == ["Xy7Qw3Er9Ty"]
    assert "Zq8vK2mP9xL4wR" in candidates("deploy:Zq8vK2mP9xL4wR")
    assert "abc123def456ghi" in candidates("session=abc123def456ghi; theme=dark")
    assert "Zq8vK2mP9x" in candidates("Zq8vK2mP9x&user=bob")
    assert "Jq5Rt8Wz2Kd" in candidates("deploy/Jq5Rt8Wz2Kd")
    # JSON's and a shell's escapes read, URL- and base64-decoded
    assert "Grüße-2024-xK9" in candidates("Gr\\u00fc\\u00dfe-2024-xK9")
    assert "Tr0ub$4dor9" in candidates("Tr0ub\\$4dor9")
    assert "p@ss-w0rd99" in candidates("p%40ss-w0rd99")
    assert "p@3sw0rd-99" in candidates("cEAzc3cwcmQtOTk=")
    r = Redactor()
    for reveal in ("The password is: Xy7Qw3Er9Ty.", "git clone https://deploy:Zq8vK2mP9xL4wR@git.example.com/r",
                   "Set-Cookie: sid=Xb7Yc2Zd9Ee1; Path=/", '{"password": "Gr\\u00fc\\u00dfe-2024-xK9"}',
                   "password: Qx7Lm2Pz9i:ab", "DB_PASSWORD=Tq8:Mn3=Zp6&Wr9"):
        assert "[REDACTED:" in r.scan(reveal), reveal
    assert r.scan("echo Xy7Qw3Er9Ty Zq8vK2mP9xL4wR Xb7Yc2Zd9Ee1 Grüße-2024-xK9 Qx7Lm2Pz9i:ab Tq8:Mn3=Zp6&Wr9") == \
        "echo " + " ".join(["[REDACTED:secret]", "[REDACTED:url_credentials]"] + ["[REDACTED:secret]"] * 4)
    # a list a marker took whole, in a JSON document: its first item
    r = Redactor()
    assert r.json_text(json.dumps({"api_keys": ["Ab9x2Cd8Ef77", "Qw3e4Rt5Yy99"]}), 256) == '{"api_keys":["[REDACTED:secret]"]}'
    assert r.scan("Ab9x2Cd8Ef77") == "[REDACTED:secret]"


def test_what_a_match_runs_on_over_is_not_remembered():
    """A rule's match may run on past the value (over `,host=…`, to the line's end); what
    follows is ordinary text, and a host, a version or a model's name hidden in every later
    string would damage every later span. Paths, placeholders and identifiers name a value."""
    r = Redactor()
    for text in ("helm upgrade app ./chart --set db.password=X9k2Lm4Pq,db.host=db01.internal,image.tag=v1.2.3-rc4",
                 "token = Ab9x2Cd8Ef77, model = claude-sonnet-4-5, session = 4e3453f9-129a-4da9-bc25-a287453d58d9",
                 "ssh-add --private-key ~/.ssh/deploy_ed25519", "DB_PASSWORD=$DB01_PASS ./run",
                 "GOOGLE_APPLICATION_CREDENTIALS=/srv/keys/sa-prod2026.json"):
        assert "[REDACTED:" in r.scan(text), text
    later = ("curl https://db01.internal/health v1.2.3-rc4 claude-sonnet-4-5 4e3453f9-129a-4da9-bc25-a287453d58d9 "
             "deploy_ed25519.pub DB01_PASS sa-prod2026.json")
    assert r.scan(later) == later
    assert r.scan("X9k2Lm4Pq Ab9x2Cd8Ef77") == "[REDACTED:secret] [REDACTED:secret]"



def test_an_id_after_a_key_is_not_remembered():
    """A file an agent read names a model or a cache by its key (``- key: claude-sonnet-4-6``): a
    name, neither hidden there nor in every later span's name and model."""
    r = Redactor()
    config = "models:\n    - key: claude-sonnet-4-6\ncache:\n  key: npm-cache-v2\nenv:\n  CACHE_KEY=node-modules-v3\n"
    assert r.redact(config) == config
    assert r.found.markers == {}
    assert r.span_name("chat", "claude-sonnet-4-6", "chat") == "chat claude-sonnet-4-6"
    assert r.scan("Restored cache npm-cache-v2 (node-modules-v3)") == "Restored cache npm-cache-v2 (node-modules-v3)"

def test_a_value_met_again_becomes_the_latest():
    found = FoundSecrets()
    values = [f"v{i:04d}-Zq8v" for i in range(MAX_VALUES)]
    found.learn(values, "secret")
    found.learn([values[0]], "secret")  # met again: the oldest is now values[1]
    found.learn(["w0000-Zq8v"], "secret")
    assert found.hide(f"{values[0]} {values[1]}") == f"[REDACTED:secret] {values[1]}"
    # met bare (hidden in a string) counts too: values[2] is kept, values[3] goes next
    assert found.hide(values[2]) == "[REDACTED:secret]"
    found.learn(["w0001-Zq8v"], "secret")
    assert found.hide(f"{values[2]} {values[3]}") == f"[REDACTED:secret] {values[3]}"


def test_the_detector_s_probes_and_discarded_readings_are_not_learnt():
    r = Redactor()
    # a key is probed with a number of 8 digits; a JSON text's whole pass that reads a YAML file's
    # escaped line ends as one line is discarded (the string keeps its own reading)
    yaml = "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n- name: HOST\n  value: db.internal\n"
    doc = r.json_text(json.dumps({"count": 86420975, "passwords": [12345678], "content": yaml}), 10_000)
    assert json.loads(doc)["content"] == yaml.replace("\n", " ")
    assert json.loads(doc)["passwords"] == ["[REDACTED:secret]"]
    assert r.found.markers == {}
    assert r.scan("86420975 12345678 db.internal") == "86420975 12345678 db.internal"


def test_a_longer_value_is_hidden_whole_before_a_shorter_one_inside_it():
    found = FoundSecrets()
    assert found.learn(["abc123xyz"], "secret") == 1
    assert found.learn(["abc123xyz-long-tail"], "api_key") == 1
    assert found.learn(["abc123xyz"], "secret") == 0
    assert found.hide("a abc123xyz-long-tail b abc123xyz") == "a [REDACTED:api_key] b [REDACTED:secret]"


def test_at_most_max_values_are_remembered_the_latest_found():
    found = FoundSecrets()
    values = [f"v{i:04d}-Zq8v" for i in range(MAX_VALUES + 5)]
    assert found.learn(values, "secret") == MAX_VALUES + 5
    assert len(found) == MAX_VALUES
    assert found.hide(f"{values[0]} {values[5]} {values[-1]}") == f"{values[0]} [REDACTED:secret] [REDACTED:secret]"
    assert found.learn(["x" * (MAX_CHARS + 1) + "1"], "secret") == 0


def test_no_value_inside_a_marker_is_remembered():
    r = Redactor()
    found = r.found
    assert found.learn(["aws_secret_key", "REDACTED:aws"], "secret") == 0
    assert r.scan("[REDACTED:aws_secret_key]") == "[REDACTED:aws_secret_key]"


def test_what_markers_replaced_is_read_back_from_the_text_before_them():
    assert replaced('{"password": "Zq8v-abc", "x": 1}', '{"password": "[REDACTED:secret]", "x": 1}') == \
        [("Zq8v-abc", "secret")]
    assert replaced("a Zq8v-abc b Tok-9999x c", "a [REDACTED:secret] b [REDACTED:token] c") == \
        [("Zq8v-abc", "secret"), ("Tok-9999x", "token")]
    assert replaced("unrelated", "other [REDACTED:secret]") == []


def test_one_span_s_strings_hide_a_value_whichever_of_them_is_read_first():
    """The command that shows the secret's form is an attribute after the output that echoes
    it bare, and an event before both: all three leave without it."""
    rec = SpanRecord(
        name="execute_tool Bash", trace_id=0x1234, span_id=0x56, parent_span_id=None,
        start_ns=10, end_ns=20,
        attributes={"gen_ai.tool.call.result": PW + "\n", "gen_ai.tool.call.arguments":
                    json.dumps({"command": f"export DB_PASSWORD={PW}; printenv DB_PASSWORD"})},
    )
    rec.events.append(SpanEvent("output", 15, {"text": f"value {PW}"}))
    rec.error, rec.error_type = f"failed with {PW}", "tool_error"
    previous = redact.install(Redactor())
    try:
        ids = PresetIdGenerator()
        provider = TracerProvider(id_generator=ids, shutdown_on_exit=False)
        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        SpanBuilder(provider, ids, Stats()).emit(rec)
        (span,) = memory.get_finished_spans()
    finally:
        redact.install(previous)
    assert span.attributes["gen_ai.tool.call.result"] == "[REDACTED:secret] "
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == \
        {"command": "export DB_PASSWORD=[REDACTED:secret]; printenv DB_PASSWORD"}
    assert span.events[0].attributes["text"] == "value [REDACTED:secret]"
    assert span.status.description == "failed with [REDACTED:secret]"


def test_learn_reads_a_text_that_is_not_exported_without_caching_it():
    """A tool's output without --capture-content: read for the secrets it shows, not kept in
    the scan cache (a file read whole would push out what is exported)."""
    r = Redactor()
    text = "HOST=api01.internal\nAPI_TOKEN=Qw3rTy7uIo9pAs2dZx\n"
    r.learn(text)
    assert r.found.markers == {"Qw3rTy7uIo9pAs2dZx": "[REDACTED:secret]"}
    assert len(r._memo.items) == 0
    assert r.scan("API rejected key Qw3rTy7uIo9pAs2dZx for api01.internal") == \
        "API rejected key [REDACTED:secret] for api01.internal"


def test_a_spared_name_is_forgotten_and_never_remembered():
    """A model's id the stream gives (:meth:`FoundSecrets.spare`): hidden where a rule finds it,
    in no later string; a text that holds more is still learnt."""
    r = Redactor()
    assert r.redact("api_key: claude-sonnet-4-6") == "api_key: [REDACTED:secret]"
    assert r.scan("chat claude-sonnet-4-6") == "chat [REDACTED:secret]"
    r.found.spare("claude-sonnet-4-6")
    assert r.found.markers == {}
    assert r.redact("model: claude-sonnet-4-6") == "model: claude-sonnet-4-6"
    assert r.redact("token: claude-sonnet-4-6") == "token: [REDACTED:secret]"
    assert r.redact("password: claude-sonnet-4-6x9") == "password: [REDACTED:secret]"
    assert r.found.markers == {"claude-sonnet-4-6x9": "[REDACTED:secret]"}
    assert r.scan("chat claude-sonnet-4-6 claude-sonnet-4-6x9") == "chat claude-sonnet-4-6 [REDACTED:secret]"
