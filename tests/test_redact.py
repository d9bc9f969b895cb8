"""otelbridge.redact: every default pattern, sanitising, caps, home directories, the installed
redactor, text for people (terminal, Markdown), endpoints and log lines, private files."""

from __future__ import annotations

import functools
import json
import os
import stat
from pathlib import Path

import pytest

from otelbridge import files, redact
from otelbridge.redact import Redactor
from tests.conftest import FIXTURES, needs_fixtures


@pytest.fixture(autouse=True)
def default_redactor():
    """Each test starts from the default redactor and leaves it installed."""
    previous = redact.install(Redactor())
    yield
    redact.install(previous)


# (kind, secret, text around it) — the secret must vanish and the marker appear
CASES = [
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
     "token {} here"),
    ("jwt", "eyJhbGciOiJSUzI1NiIsInR5cCI6", "cut preview ends {}"),  # one segment, cut short
    ("authorization", "Bearer abc.def-ghi_123456", "Authorization: {}"),
    ("authorization", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", '{{"authorization": "{}"}}'),
    ("bearer", "Zm9vYmFyYmF6cXV4MTIz", "curl -H 'X: bearer {}'"),
    ("anthropic_key", "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "ANTHROPIC_API_KEY {}"),
    ("api_key", "sk-proj-abcdefghijklmnopqrstuvwx", "key {} done"),
    ("api_key", "sk-1234567890abcdefABCDEF", "({})"),
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE", "id {} ok"),
    ("aws_access_key", "ASIAY34FZKBOKMUTVV7A", "temporary {}"),
    ("aws_secret_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = {}"),
    ("github_token", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "GH_TOKEN {}"),
    ("github_token", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "{}"),
    ("github_token", "github_pat_11AAAAAAA0aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbb", "pat {}"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
     "key: {} after"),
    ("private_key", "-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "cut: {}"),
    ("private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
     "{}"),
    ("email", "ann.lee+ci@mail.example.co.uk", "mail {} now"),
    ("secret", "hunter2hunter2", "password: {}"),
    ("secret", "c0ffee-c0ffee", '"client_secret":"{}"'),
]


@pytest.mark.parametrize("kind,secret,template", CASES)
def test_default_pattern_replaces_secret_with_its_kind(kind, secret, template):
    text = template.format(secret)
    out = redact.clean(text, 10_000)
    assert f"[REDACTED:{kind}]" in out
    for part in secret.split():
        if len(part) >= 8:
            assert part not in out
    # the text around the secret is kept
    for word in template.replace("{}", " ").split():
        if word.isalpha() and len(word) > 3:
            assert word in out


def test_authorization_and_bearer_keep_their_labels():
    assert redact.clean("Authorization: Bearer abcdefghijk") == "Authorization: [REDACTED:authorization]"
    assert redact.clean("bearer abcdefghijk") == "bearer [REDACTED:bearer]"


def test_markers_are_not_redacted_again():
    name = "invoke_agent x Authorization: [REDACTED:authorization]…"
    assert redact.current().name(name) == name
    assert redact.clean("password: [REDACTED:secret]") == "password: [REDACTED:secret]"


def test_url_credentials_keep_scheme_and_host():
    out = redact.clean("clone https://deploy:S3cr3t@git.example.com/r.git and ssh://tok3n@h/x")
    assert out == ("clone https://[REDACTED:url_credentials]@git.example.com/r.git and "
                   "ssh://[REDACTED:url_credentials]@h/x")


def test_initialize_response_loses_token_and_email():
    doc = ('{"account":{"token":"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",'
           '"email":"ann@example.com"}}')
    out = redact.clean(doc, 10_000)
    assert out == '{"account":{"token":"[REDACTED:jwt]","email":"[REDACTED:email]"}}'


@pytest.mark.parametrize("text", [
    "search-web", "read 12 papers", "tokens: 5200 in total", "task-abcdefghijklmnopqrstuvwxyz",
    "AKIA is a prefix", "path:deep-research.workflow.js", "v2:0000000000000000000000000000000001",
    "https://example.com/a/b?x=1", "an @mention", "/var/home/ann", "claude-sonnet-4-5",
])
def test_ordinary_text_is_left_alone(text):
    assert redact.clean(text) == text


@pytest.mark.parametrize("text,expected", [
    ("/home/alice/proj/x.py", "~/proj/x.py"),
    ("cwd=/Users/Bob Smith", "cwd=~ Smith"),
    ("at /Users/bob/src and /home/carol", "at ~/src and ~"),
    ("/root/.ssh/id_rsa", "~/.ssh/id_rsa"),
    ("/root", "~"),
    ("C:\\Users\\Dan\\repo", "~\\repo"),
    ("/rootless/x", "/rootless/x"),
    ("/srv/home/alice", "/srv/home/alice"),
])
def test_home_directories_become_tilde(text, expected):
    assert redact.clean(text) == expected


def test_escapes_controls_and_bidi_are_stripped():
    text = ("\x1b[1;31mred\x1b[0m \x1b]8;;https://evil/\x07link\x1b]8;;\x07 a\nb\rc\x00d\x7fe\x9bf "
            "\u202egnp.exe\u200b \u2028end\tx")
    out = redact.clean(text)
    assert out == "red link a b c d e f gnp.exe  end\tx"


def test_cap_applies_after_redaction():
    secret = "sk-ant-api03-" + "Q" * 40
    for text in ("x" * 239 + " " + secret, "x" * 240 + secret):  # straddles the 256 cap
        out = redact.clean(text)
        assert len(out) == 256 and out.endswith("…")
        assert "sk-ant" not in out and "QQQQ" not in out
    assert redact.clean("y" * 300, 10) == "y" * 9 + "…"
    assert redact.clean("short", 10) == "short"


def test_span_name_is_capped_at_64_and_falls_back():
    name = redact.span_name("invoke_agent", "Z" * 200, "#1")
    assert len(name) == redact.SPAN_NAME_MAX and name.startswith("invoke_agent ZZZ")
    assert redact.span_name("phase", "\x1b[2J\n", "#3") == "phase #3"
    assert redact.span_name("phase", None, "#4") == "phase #4"
    assert redact.span_name("invoke_agent", "mail ann@example.com", "x") == "invoke_agent mail [REDACTED:email]"


def test_clean_accepts_none_and_non_strings():
    assert redact.clean(None) == ""
    assert redact.clean(12) == "12"


def test_installed_redactor_reaches_module_functions():
    redact.install(Redactor.build([r"PROJ-\d+"], max_length=20))
    assert redact.clean("ticket PROJ-4711 done") == "ticket [REDACTED:cu…"
    # the smaller of the call site's limit and the configured cap wins
    assert redact.clean("ticket PROJ-4711", 100) == "ticket [REDACTED:cu…"
    assert redact.clean("ticket PROJ-4711", 8) == "ticket …"
    assert redact.current().max_length == 20
    assert redact.span_name("phase", "PROJ-1", "#1") == "phase [REDACTED:custom]"


def test_without_defaults_only_custom_patterns_apply():
    r = Redactor.build(["internal-[a-z]+"], defaults=False)
    assert r.clean("ann@example.com internal-db") == "ann@example.com [REDACTED:custom]"
    assert r.clean("/home/ann/x") == "~/x"  # home directories are sanitising, always on


@pytest.mark.parametrize("regex,problem", [("(unclosed", "not a valid"), ("a*", "empty string")])
def test_bad_custom_patterns_are_refused(regex, problem):
    with pytest.raises(redact.PatternError, match=problem):
        Redactor.build([regex])


def test_the_longest_scanned_string_is_scanned_whole():
    text = ("word eyJ sk- @ /home/ bearer key: AKIA " * 30_000)[: redact.SCAN_MAX_CHARS]
    out = Redactor(max_length=1 << 21).clean(text)
    assert out == text  # nothing matched, nothing lost
    assert redact.clean(text) == text[:255] + "…"
    assert redact.clean(text + "x") == redact.DROPPED


# --------------------------------------------------------------------------- text for people


def test_markdown_renders_untrusted_text_literally():
    text = "<img src=x onerror=alert(1)> **bold** [link](http://e.x) | cell @team :x: $x$ & `c`"
    out = redact.markdown(text)
    for raw in ("<", ">", "**", "](", "|", "`"):
        assert raw not in out.replace("\\" + raw[0], "").replace("\\" + raw[-1], "") or raw == "**"
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in out
    assert "\\*\\*bold\\*\\*" in out and "\\[link\\]\\(http\\://e\\.x\\)" in out
    assert "\\| cell \\@team \\:x\\: \\$x\\$ &amp; \\`c\\`" in out
    assert "|" not in out.replace("\\|", "")


def test_markdown_and_terminal_also_redact_and_strip():
    assert redact.markdown("\x1b[31mann@example.com\n# x") == "\\[REDACTED\\:email\\] \\# x"
    assert redact.terminal("\x1b[31mred\x1b[0m [bold]x[/bold]") == "red [bold]x[/bold]"
    assert redact.terminal("[bold]x", markup=True) == "\\[bold]x"


# --------------------------------------------------------------------------- our own messages


@pytest.mark.parametrize("url,expected", [
    ("https://user:pa55@otel.example.com:4318/v1/traces?api_key=x#f", "https://otel.example.com:4318/v1/traces"),
    ("http://127.0.0.1:4317", "http://127.0.0.1:4317"),
    ("user:pa55@collector:4317", "collector:4317"),
    ("collector:4317?token=x", "collector:4317"),
    # what no URL parser reads as a URL with credentials: an unclosed IPv6 bracket, a gRPC
    # target whose credentials sit where a path would
    ("http://alice:s3cretPW@[::1:18318", "http://[::1:18318"),
    ("dns:///alice:s3cretPW@127.0.0.1:4317", "dns:///127.0.0.1:4317"),
    ("unix:///tmp/alice:s3cretPW@sock", "unix:///sock"),
    # a password holding '#', '?', '@' or a blank: the credentials go before the fragment
    ("https://admin:Tr0ub4dor&3#horse@otel.example.com/v1/traces", "https://otel.example.com/v1/traces"),
    ("admin:hunter2?x@y#secret99@collector.example.com:4317", "collector.example.com:4317"),
    ("https://admin:hunter2 secret99@otel.example.com:4318", "https://otel.example.com:4318"),
    ("https://otel.example.com/v1/traces?next=a@b.example", "https://otel.example.com/v1/traces"),
    # a token pasted where the endpoint goes
    ("Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ", "Bearer [REDACTED:anthropic_key]"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789:4317", "[REDACTED:github_token]:4317"),
    (None, ""),
])
def test_endpoint_without_credentials_or_query(url, expected):
    assert redact.endpoint(url) == expected


def test_header_secrets_and_message_mask_every_form():
    raw = "authorization=Bearer%20tok_9f8e7d6c5b4a,x-api-key=k3y-abcdef"
    secrets = redact.header_secrets(raw)
    for form in ("tok_9f8e7d6c5b4a", "Bearer%20tok_9f8e7d6c5b4a", "k3y-abcdef", raw):
        assert form in secrets
    line = redact.message(f"bad header: {raw}\nat https://h:1/v1/traces?key=zz", secrets)
    assert "tok_9f8e7d6c5b4a" not in line and "k3y-abcdef" not in line and "zz" not in line
    assert "\n" not in line and "https://h:1/v1/traces" in line
    assert len(redact.message("m" * 5000)) == redact.MESSAGE_MAX
    # the HTTP exporter names the URL it failed on by its path and query (an Azure Functions
    # key is passed as ?code=...)
    assert redact.message("Max retries exceeded with url: /p/v1/traces?code=PLAIN777 (Caused by "
                          "NewConnectionError)") == (
        "Max retries exceeded with url: /p/v1/traces (Caused by NewConnectionError)")
    # the gRPC exporter names its target without a scheme
    assert redact.message("export to ci:pw1234@127.0.0.1:4317 failed at 12:30:01") == (
        "export to [REDACTED:url_credentials]@127.0.0.1:4317 failed at 12:30:01")


# --------------------------------------------------------------------------- files we write


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_open_private_creates_0600_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        path = tmp_path / "out.json"
        with files.open_private(path) as fh:
            fh.write("one\n")
    finally:
        os.umask(old)
    assert _mode(path) == 0o600
    assert path.read_text() == "one\n"


def test_open_private_tightens_existing_file_before_writing(tmp_path):
    path = tmp_path / "offsets"
    path.write_text("old contents that are longer\n")
    os.chmod(path, 0o644)
    with files.open_private(path) as fh:
        fh.write("new\n")
    assert _mode(path) == 0o600 and path.read_text() == "new\n"
    os.chmod(path, 0o664)
    with files.open_private(path, "ab") as fh:
        fh.write(b"more\n")
    assert _mode(path) == 0o600 and path.read_text() == "new\nmore\n"


def test_open_private_leaves_fifos_alone_and_refuses_other_modes(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo, 0o644)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with files.open_private(fifo, "wb") as fh:
            fh.write(b"x")
        assert os.read(fd, 10) == b"x"
    finally:
        os.close(fd)
    assert _mode(fifo) == 0o644
    with pytest.raises(ValueError):
        files.open_private(tmp_path / "r", "r")


# --------------------------------------------------------------------------- properties

from hypothesis import given, settings, strategies as st  # noqa: E402

_FRAGMENTS = st.sampled_from([
    "eyJhbGciOiJIUzI1NiJ9.eyJ4IjoxfQ.c2ln", "sk-ant-api03-AbCdEfGhIj", "AKIAIOSFODNN7EXAMPLE",
    "ann@example.com", "https://u:p@h/x", "Authorization: Bearer abcdefghij", "password=hunter22",
    "/home/ann/", "/root/", "\x1b[31m", "\x1b]8;;x\x07", "\n", "\u202e", "[REDACTED:jwt]", " ", "-",
])
# secrets occur delimited (by a space, quote, comma, newline...), not glued into other tokens
_TEXT = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=20)), max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_clean_is_safe_bounded_and_idempotent(text):
    out = redact.clean(text)
    assert len(out) <= redact.DEFAULT_MAX_LENGTH
    assert not any(ch in out for ch in "\x1b\x07\n\r\x00\u202e")
    assert "AKIAIOSFODNN7EXAMPLE" not in out and "ann@example.com" not in out
    assert "/home/ann" not in out and "hunter22" not in out
    assert redact.clean(out) == out
    name = redact.span_name("invoke_agent", text, "#1")
    assert len(name) <= redact.SPAN_NAME_MAX and redact.current().name(name) == name


def test_an_escape_before_a_space_does_not_join_the_words_around_it():
    """Found by the property test above: ESC + space was taken as one two-character sequence,
    so ``0`` and ``/home/ann/`` became one word and the home directory stayed."""
    assert redact.clean("0\x1b /home/ann/") == "0 ~/"


def test_custom_pattern_keeps_its_keep_group():
    r = Redactor.build([r"(?P<keep>ticket=)[0-9]+"])
    assert r.clean("see ticket=1234, thanks") == "see ticket=[REDACTED:custom], thanks"


def test_scan_cache_gives_the_uncached_result_and_stays_bounded(monkeypatch):
    monkeypatch.setattr(redact, "MEMO_ENTRIES", 3)
    r = redact.Redactor.build()
    texts = ["token sk-ant-api03-" + "a" * 40, "plain\u202elabel\n", "/home/ann/x", "x" * 300]
    uncached = [redact.Redactor.build().scrub(t) for t in texts]
    for _ in range(2):  # the second round comes from the cache
        assert [r.scrub(t) for t in texts] == uncached
    assert uncached[0].startswith("token [REDACTED:") and uncached[1] == "plainlabel "
    assert len(r._memo.items) <= 3
    for n in range(10):
        r.scrub(f"label {n}")
    assert len(r._memo.items) <= 3 and list(r._memo.items)[-1] == "label 9"  # oldest out first


def test_scan_cache_is_bounded_by_characters(monkeypatch):
    monkeypatch.setattr(redact, "MEMO_TOTAL_CHARS", 10_000)
    monkeypatch.setattr(redact, "MEMO_MAX_CHARS", 3_000)
    r = redact.Redactor.build()
    for n in range(20):
        r.scrub(f"{n:04d}" + "y" * 2_000)
    assert r._memo.chars == sum(len(k) + len(v) for k, v in r._memo.items.items()) <= 10_000
    r.scrub("z" * 3_001)  # longer than MEMO_MAX_CHARS: scanned, not kept
    assert "z" * 3_001 not in r._memo.items


def test_a_string_too_long_to_scan_is_dropped(monkeypatch):
    monkeypatch.setattr(redact, "SCAN_MAX_CHARS", 1_000)
    r = redact.Redactor.build()
    secret = "password=" + "s" * 1_000
    assert r.scan(secret) is None
    assert r.scrub(secret) == r.clean(secret) == redact.DROPPED
    assert r.attributes({"a": secret, "b": ["ok", secret], "n": 3}) == {"b": ["ok"], "n": 3}
    assert r.span_name("invoke_agent", secret, "#1") == "invoke_agent #1"
    assert r.scan("password=" + "s" * 991) == "password=[REDACTED:secret]"


@pytest.mark.parametrize("text,expected", [
    ('password: "correct horse battery staple" next', 'password: "[REDACTED:secret]" next'),
    ("password: correct horse\nhost: db", "password: [REDACTED:secret] host: db"),
    ('{\\"password\\": \\"a b\\", \\"user\\": \\"ann\\"}',
     '{\\"password\\": \\"[REDACTED:secret]\\", \\"user\\": \\"ann\\"}'),
    ("DB_PASSWORD=Ab1;Cd2,Ef3 ./run", "DB_PASSWORD=[REDACTED:secret] ./run"),
    ("?limit=5&clientSecret=abc&page=2", "?limit=5&clientSecret=[REDACTED:secret]&page=2"),
    ("mysql --password Hunter2 db", "mysql --password [REDACTED:secret] db"),
    ("Cookie: sid=1; csrftoken=2", "Cookie: [REDACTED:secret]"),
    ("max_tokens=4096 tokenizer: x apiKeySource: none", "max_tokens=4096 tokenizer: x apiKeySource: none"),
])
def test_key_values_are_redacted_to_their_whole_extent(text, expected):
    assert redact.clean(text) == expected


def test_sanitise_skips_only_text_without_control_or_format_characters():
    # the fast path (str.isprintable) must never skip a character the sanitiser changes
    touched = [chr(cp) for cp in range(0x110000)
               if redact._CONTROL.search(chr(cp)) or redact.INVISIBLE.search(chr(cp))]
    assert len(touched) > 60
    for c in touched:
        assert redact._sanitise("a" + c + "b") != "a" + c + "b"
    assert redact._sanitise("plain text, ünïcode ✓") == "plain text, ünïcode ✓"


def test_every_format_character_is_removed_before_redaction():
    """What a view hides (Unicode ``Cf``: soft hyphen, bidi marks, tag characters...) cannot
    split a secret in the span: the views would show it joined, unredacted."""
    import unicodedata

    formats = [chr(cp) for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cf"]
    assert len(formats) > 150
    assert [c for c in formats if redact._sanitise("a" + c + "b") != "ab"] == []
    token = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    # and the printable invisible ones (marks and fillers: default-ignorable code points)
    for c in ("\U000e0020", "\u00ad", "\u061c", "\u206a", "\ufff9", "\ufe0f", "\U000e0101",
              "\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u17b4"):
        assert redact.clean(token[:14] + c + token[14:]) == "[REDACTED:github_token]"


# --------------------------------------------------------------------------- the corpus

FORMS = [json.loads(line) for line in
         (Path(__file__).parent / "data" / "secret-forms.jsonl").read_text().splitlines() if line]


def _pieces(secret: str, size: int = 12) -> list[str]:
    """``secret``'s runs of ``size`` characters (the whole when shorter)."""
    return [secret[i:i + size] for i in range(max(1, len(secret) - size + 1))]


def test_corpus_every_positive_form_leaves_nothing_of_its_secrets():
    """Not the whole secret, nor any 12 characters of it (a pattern that took a token's first
    part only: ``ops_eyJ…`` cut at its first ``+`` by the JWT pattern)."""
    positives = [f for f in FORMS if f["kind"] == "positive"]
    assert len(positives) >= 190 and all(f["secrets"] for f in positives)
    leaked = {}
    for f in positives:
        out = redact.clean(f["text"], 100_000)
        leaked[f["form"]] = [p for s in f["secrets"] for p in _pieces(s) if p in out][:1]
    assert {form: left for form, left in leaked.items() if left} == {}


def test_a_cut_token_before_blanks_and_a_closing_quote_is_redacted():
    """A short command's JSON arguments: the cut token ends its string, blanks after it."""
    out = redact.clean('{"command":"echo ghp_R4nd0mT0k3n ","description":"x"}', 1000)
    assert "ghp_R4nd0m" not in out and "[REDACTED:github_token]" in out


@pytest.mark.parametrize("before,after", [
    ("", " "), ("", "\n"), ("", "\u3000"), ("", "\xa0"), ("\t", "\u2009"), ("\u3000", "\x1f"),
], ids=["space", "newline", "ideographic-space", "no-break-space", "tab-thin-space", "blanks-around"])
def test_corpus_every_positive_form_leaves_nothing_between_blanks(before, after):
    """A label or preview often carries blanks around its text (a trailing newline, a
    full-width space): a form must not need its secret at the string's very edge."""
    leaked = {f["form"]: [s for s in f["secrets"]
                          if s in redact.clean(before + f["text"] + after, 100_000)]
              for f in FORMS if f["kind"] == "positive"}
    assert {form: left for form, left in leaked.items() if left} == {}


@needs_fixtures()
def test_corpus_negatives_and_real_recordings_stay_intact():
    from bench.redaction import recording_strings  # the bench's false-positive set

    texts = [f["text"] for f in FORMS if f["kind"] == "negative"]
    assert len(texts) >= 20
    texts += recording_strings(FIXTURES)
    assert len(texts) > 1500  # token counts, msg_/toolu_/uuid ids, model names, paths, prose
    fired = [t for t in texts if "[REDACTED:" in redact.current().scrub(t)]
    assert fired == []
    for kept in ("msg_01XFDUDYJgAACzvnptvVoYEL", "toolu_01A09q90qw90lq917835lq9",
                 "4e3453f9-129a-4da9-bc25-a287453d58d9", "claude-sonnet-4-5-20250929", "/tmp/work/src/main.py"):
        assert redact.clean(kept) == kept


#: Files an agent writes, as a Write's ``content``: YAML, code and env files whose line ends
#: and quotes JSON escapes in the call's arguments.
FILES = [
    "name: ci\non: push\nenv:\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n  NODE_ENV: production\n"
    "jobs:\n  build:\n    runs-on: ubuntu-latest\n",
    'import os\napi_key = os.environ["API_KEY"]\nprint("hello")\n',
    "DB_PASSWORD=${DB_PASSWORD}\nPORT=8080\n",
    'password = request.form["password"]\nuser = request.form["user"]\nreturn render()\n',
    "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n"
    "        key: password\n  - name: PORT\n    value: \"80\"\n",
]


def test_a_tool_call_s_argument_is_redacted_as_the_same_text_alone():
    """A Write's content holding each corpus form (a line of a file) or a whole file leaves as
    the same text does in a tool result: the document's pass reads JSON's escapes (``\\"``,
    ``\\n``), which are no part of the text, and changes only what the strings around a value
    tell."""
    r = Redactor()
    files = FILES + ["# settings\n" + f["text"] + "\nx = 1\n" for f in FORMS]
    got = {f: json.loads(r.json_text(json.dumps({"file_path": "/src/app/settings.py", "content": f}),
                                     1_000_000))["content"] for f in files}
    assert got == {f: r.scan(f) for f in files}
    assert [got[f] for f in FILES] == [f.replace("\n", " ") for f in FILES]  # nothing in them a secret
    # what only the document tells stays: a key's value, a flag's, a named value's
    doc = r.json_text(json.dumps({"content": FILES[0], "password": "Hunter2x9", "args": ["--token", "Tok77q"],
                                  "env": [{"name": "DB_PASSWORD", "value": "Pg55w0rd"}]}), 1_000_000)
    assert json.loads(doc) == {"content": FILES[0].replace("\n", " "), "password": "[REDACTED:secret]",
                               "args": ["--token", "[REDACTED:secret]"],
                               "env": [{"name": "DB_PASSWORD", "value": "[REDACTED:secret]"}]}


def test_a_string_that_breaks_the_document_s_pass_cancels_no_context():
    """A sibling whose text the document's pass reads past its closing quote (``token='``)
    makes that pass's result no JSON: each member is then passed alone, and what only the
    document tells is still redacted."""
    r = Redactor()
    for doc in ({"args": ["--token", "Tk9Sb4Lq2"], "description": "token='"},
                {"call": {"args": ["--token", "Tk9Sb4Lq2"], "description": "token='"}},
                [{"password": "Pw7Sb3Kd1", "note": "secret: '"}]):
        out = r.json_text(json.dumps(doc), 10_000)
        assert "Tk9Sb4Lq2" not in out and "Pw7Sb3Kd1" not in out
        assert out.count("[REDACTED:secret]") == 1 and "[REDACTED:secret]\"" in out


def test_a_flag_naming_a_secret_redacts_the_argument_after_it():
    """process.command_args: each element alone cannot tell ``--token X``'s X is a secret."""
    args = ["true", "--password=EqPass111", "--token", "TokSep222", "--api-key", "KeySep333",
            "--client-secret", "CsSep555", "--password", "Hunter2Sup3r", "--dbPassword", "Db444",
            "-p", "summarise the repo", "--max-tokens", "512", "--token-file", "/run/tok",
            "--no-password", "kept", "--password-stdin", "kept2", "--token", "--verbose"]
    out = Redactor().attributes({"process.command_args": args})["process.command_args"]
    for secret in ("EqPass111", "TokSep222", "KeySep333", "CsSep555", "Hunter2Sup3r", "Db444"):
        assert secret not in repr(out)
    assert out[3] == out[5] == out[7] == out[9] == out[11] == "[REDACTED:secret]"
    assert out[12:] == args[12:]  # -p PROMPT, about-flags, boolean flags, a flag after a flag
    # a tuple as a list; --no-default-redaction leaves it to the custom patterns
    assert Redactor().attributes({"a": ("--token", "T0k")})["a"] == ["--token", "[REDACTED:secret]"]
    assert Redactor.build(defaults=False).attributes({"a": ["--token", "T0k"]})["a"] == ["--token", "T0k"]


@pytest.mark.parametrize("text", [
    "credentials:\n  username: deploy\n  region: us-east-1",  # a nested mapping: its own keys
    "tokens:\n  - input\n  - output",  # a list, and not a secret's key
    '{"usage": "max_tokens:\\n  4096"}',
    "password:\nnext: 1",  # not indented: no value of the key
])
def test_yaml_next_line_rule_leaves_mappings_and_lists_alone(text):
    assert redact.current().redact(text) == text


def test_message_lists_stay_json_redacted_and_cut_inside():
    import msgspec

    safe = Redactor.build(max_length=120)
    text = "deploy with sk-ant-api03-" + "A" * 95 + " then " + "word " * 60
    value = msgspec.json.encode(
        [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]).decode()
    out = safe.attributes({"gen_ai.output.messages": value, "other": value})
    doc = json.loads(out["gen_ai.output.messages"])  # still JSON, however long the content was
    assert len(out["gen_ai.output.messages"]) <= 120
    (message,) = doc
    assert message["role"] == "assistant" and message["parts"][0]["type"] == "text"
    content = message["parts"][0]["content"]
    assert content.startswith("deploy with [REDACTED:anthropic_key] then word") and content.endswith("…")
    assert "sk-ant" not in out["gen_ai.output.messages"]
    # any other attribute is cut as a string, whatever it holds
    assert len(out["other"]) == 120 and out["other"].endswith("…")
    # the boundary is idempotent: a second pass leaves the document as it is
    assert safe.attributes(out)["gen_ai.output.messages"] == out["gen_ai.output.messages"]
    # a structure longer than the limit itself is left out; text that is not JSON is a string
    assert "gen_ai.output.messages" not in Redactor.build(max_length=20).attributes(
        {"gen_ai.output.messages": value})
    assert safe.attributes({"gen_ai.input.messages": "not json " * 30})["gen_ai.input.messages"].endswith("…")


S = "Zq8xK2mW9pL4vB7n"


@pytest.mark.parametrize("arguments, field, expected", [
    # a match inside one string ends at that string's end, not in the next field
    ({"command": f"set -x GITHUB_TOKEN a{S}", "description": f"set -x GITHUB_TOKEN b{S}"},
     "description", "set -x GITHUB_TOKEN [REDACTED:secret]"),
    ({"command": f"redis-server --requirepass {S}", "description": "start redis"},
     "command", "redis-server --requirepass [REDACTED:secret]"),
    ({"command": f"gh secret set FOO --body {S}", "description": "store it"},
     "command", "gh secret set FOO --body [REDACTED:secret]"),
    ({"file_path": "/app/.env", "old_string": f'password="{S}', "new_string": "x"},
     "old_string", 'password="[REDACTED:secret]'),
    # ... and what only the strings around a value tell is still read
    ({"user": "ann", "password": S}, "password", "[REDACTED:secret]"),
    ({"argv": ["deploy", "--password", S]}, "argv", ["deploy", "--password", "[REDACTED:secret]"]),
    ({"env": [{"name": "DB_PASSWORD", "value": S}]}, "env", [{"name": "DB_PASSWORD", "value": "[REDACTED:secret]"}]),
], ids=["fish-set", "requirepass", "gh-secret", "edit-unclosed-quote", "key", "argv", "name-value"])
def test_a_tool_calls_arguments_stay_json_with_each_value_redacted(arguments, field, expected):
    """``gen_ai.tool.call.arguments`` (--capture-content) is a JSON document: redacted string by
    string, then as a whole where that leaves it JSON — no secret, no field run into the next."""
    text = json.dumps(arguments)
    out = Redactor.build(max_length=1000).attributes({"gen_ai.tool.call.arguments": text})
    doc = json.loads(out["gen_ai.tool.call.arguments"])
    assert S not in out["gen_ai.tool.call.arguments"]
    assert doc.keys() == arguments.keys()
    assert doc[field] == expected
    assert [doc[k] for k, v in arguments.items() if S not in json.dumps(v)] == \
        [v for v in arguments.values() if S not in json.dumps(v)]  # the other fields as they were


# --------------------------------------------------------------------------- pre-tests

def _without_pre_tests(pattern):
    from otelbridge.secret_patterns import Pattern, ViewPattern

    if isinstance(pattern, ViewPattern):
        plain = type(pattern)(pattern.inner)
        plain._pre_source = None
        return plain
    return Pattern(pattern.kind, pattern.regex, pattern.needles, pattern.requires, passes=pattern.passes)


PRE_TESTED = [p for p in redact.DEFAULT_PATTERNS if p._pre_source is not None]
#: keys spelt with what ``re`` folds to an ASCII letter in any case (Kelvin sign, long s, dotless
#: i), keys on the next line, escaped quotes, and near misses
CASE_FOLDS = [
    "api_\u212aey: hunter2", "\u017fecret=abc123", "PA\u017f\u017fWORD = x y", "my_tokens: 12",
    "password:\n  hunter2", "token:\\n    abc", "{\\\"clientSecret\\\": \\\"s3\\\"}", "auth  :  x",
    "token workflow: export", "sig.v2-x='q r'", "\u0130D_TOKEN=1", "dsn:\r\n  postgres://u:p@h",
]


#: forms of the pre-tested patterns the corpus does not hold: name/value pairs, argv arrays,
#: Basic after Authorization, URL credentials cut before the @ (and near misses of each)
PAIR_FORMS = [
    '["X-API-Key","abc123def"]', '("api_key", "sk_live_x12")', '[\\"token\\", \\"T0k3n9\\"]',
    '["token", "id_token"]', '["sshpass", "-p", "x"]', "['session_token', 'Ab1Cd2']",
    '["client_secret","cs_9f8e"]', "(\"Token\", 'T0k3n-x9')", '<env name="DB_PASSWORD" value="EnvPw2"/>',
    'name=DB_PASSWORD value=AttrPw3', '{"Name":"/prod/db/password","Type":"SecureString","Value":"S1"}',
    '[{"name":"DB_PASSWORD","value":"ErrK8sPw777"}]', '{"name": "API_TOKEN", "value": "K8sTok888"}',
    '{\\"name\\":\\"DB_PASS\\",\\"value\\":\\"x y\\"}', "- name: DB_PASSWORD\n  value: hunter2",
    "env:\\n- name: GH_PAT\\n    value: hunter2", '"ParameterKey": "DbPassword", "ParameterValue": "X"',
    '{"name":"LOG_LEVEL","value":"debug"}', "- name: PATH\n  value: /usr/bin",
    '"argv":["deploy","--password","ArgvPw321"]', "['x', '--api-key', 'k k']", '["a", "--token", "T1"]',
    '[\\"a\\", \\"--client-secret\\", \\"T1\\"]', '["a","-Token","T2"]', '["a", "--token-file", "/t"]',
    "map[Authorization:[Basic QmFzaWM=]]", "authorization=basic QmFzaWMgY3JlZHM=", "Authorization -> Basic dXNlcjpw",
    "proxy-authorization: 'Basic dXNlcjpw'", "(Authorization)  Basic dXNlcjpw", "Authorization header: Basic auth",
    '{"value":"ErrK8sPw777","name":"DB_PASSWORD"}', '{"value": "a b", "key": "API_TOKEN"}',
    "{'value': 'x', 'name': 'GH_PAT'}", '{\\"value\\":\\"x\\",\\"name\\":\\"DB_PASS\\"}',
    '[{"value" : "v1" ,\n "name" : "SECRET_KEY"}]', '{"value":"debug","name":"LOG_LEVEL"}',
    "psql postgres://app:Xy7pQ2mVn9Lk\u2026", "mysql://root:PW...", "see https://user:PW123",
    '"mongodb+srv://root:PW"', "redis://:pw", "postgres://db:5432", "http://h:port",
    # YAML's value before its name, tuples and user/password pairs, Redis' AUTH and ACL rules
    "- value: v1\n  name: DB_PASSWORD", "env:\\n  - value: 'v 1'\\n    name: API_TOKEN\\n",
    "value: v1\r\ntype: x\r\nkey: db/password", "- value: v1\n  name: LOG_LEVEL",
    "auth=('u', 'p1')", "HTTPBasicAuth(\"u\", \"p 1\")", "x.auth = (\\'u\\', \\'p1\\')", "auth=(u, 'p1')",
    "('token', 'T1')", "[(\"client_secret\", 'cs1')]", "f('token', 'T1')", "AUTH p1", "x\\nAUTH u p1\\n",
    "127.0.0.1:6379> auth p1", "AUTH LOGIN", "acl setuser u on >p1", "ACL SETUSER u >p1 >p2 ~*",
    "user u on >p1 ~*\nuser v off <p2", "\\nuser w reset >p3", "user u is >p1",
    ".x.com\tTRUE\t/\tFALSE\t0\tsid\tc1", "x.com\\tFALSE\\t/\\tTRUE\\t17\\tid\\tc2\\n",
    "#HttpOnly_h\tFALSE\t/p\tFALSE\t9\ts\tc3\n", "h\tTRUE\t\tTRUE\t0\tn\tc4", "a\tTRUE\t/\tTRUE\t1\tb\tc d5",
    "a\tTRUE\t/\tTRUE\tnow\tb\tc6", "http -a u:p1 GET x", "https POST x --auth=u:'p 2'", "$ http\t-a u:p3",
    "\\nhttp --auth u:p4 x", "[\"http -a u:p5\"]", "see http://x -a u:p6", "http: -a u:p7",
    "data:\n  a: eHl6\nkind: Secret", "data:\\n  a: eHl6\\n  b: [REDACTED:x]\\nkind: Secret\\n",
    "data:\r\n  a: eHl6\r\nkind: Secret", "data:\n  a: eHl6\n  b: not b64\nkind: Secret", "x\n a: eHl6\nkind: Secrets",
    '{"data": {"a": "eHl6"}, "kind": "Secret"}', '{\\"data\\":{\\"a\\":\\"eHl6\\",\\"b\\":\\"YQ==\\"},\\"kind\\":\\"Secret\\"}',
    '{"data": {"a": "eHl6", "b": "a b"}, "kind": "Secret"}', "{'a': 'eHl6'}, 'kind': 'Secret'",
    "kind: Secret\nstringData:\n  a: v1", "kind: Secret\\nmetadata:\\n  name: x\\ndata:\\n  a: eHl6\\n",
    "kind: Secret\r\ndata:\r\n  a: 'v 1'\r\n  b: |\r\n    v2\r\n", "kind: Secret\n---\ndata:\n  a: v1", "kind: SecretX\ndata:\n  a: v1",
    '{"data":{"a":"eHl6","b":"[REDACTED:x]"},"kind":"Secret"}', '{"data": {\n "a": "YQ=="\n},\n"kind": "Secret"}',
    '"data": {"a": "eHl6"}, "kind": "Secrets"', "x\\nkind: Secret\\nstringData:\\n  a: \\\"v 1\\\"\\n",
    "http x token==t1", "xh get x api_key==t2 q==1", "https\tx -a b secret==t3", "\\nhttp x token==t4", "xhs x y z pw==t5",
    "http x q==t6", "see http://x token==t7",
    # kind: Secret before data as JSON; arrays of secrets as a key's value, JSON and YAML
    '{"kind": "Secret", "data": {"a": "eHl6"}}', '{"kind":"Secret","metadata":{"labels":{"a":"b"}},"stringData":{"a":"v 1","b":"v2"}}',
    '{\\"kind\\":\\"Secret\\",\\"data\\":{\\"a\\":\\"eHl6\\"}}', '{\n "kind": "Secret",\n "data": {\n  "a": "YQ=="\n }\n}',
    '"kind": "Secret", "type": "Opaque", "data": {"a": "[REDACTED:x]", "b": "eHl6"}', '{"kind": "Secrets", "data": {"a": "b"}}',
    '{"kind": "Secret"}, {"kind": "ConfigMap", "data": {"a": "b"}}',
    '{"api_keys": ["k1", "k2"]}', "passwords = ['p1']", '{\\"password\\":[\\"p1\\"]}', '"accessTokens": [\n "t1"\n]',
    '{"credentials": ["aws", "g1"]}', '{"tokens": ["a1"]}', '{"password": []}', "token = ['read', 'write']",
    "api_keys:\n  - k1\n  - k2", "passwords:\\n  - 'p 1'\\n", "token:\n- read\n- w1", "client_secrets:\r\n  - \"c1\"\r\n",
    "password:\n  - name: x", "api_keys:\n     3\u2192  - k1", "keys:\n  - k1",
]


def test_a_pattern_s_pre_test_never_changes_what_it_redacts():
    # the key patterns (key: value, YAML's next line, a URL's query, --flag X, name/value
    # pairs, argv arrays), a command that sets a named value, a private key's END-terminated
    # body, URL credentials cut before the @, Basic after a secret's key; YAML's value before
    # its name, (name, value) tuples, user and password pairs, Redis' AUTH line and ACL rules,
    # a Netscape cookie file's line, HTTPie's -a user:X, Kubernetes Secrets' values (kubectl's
    # YAML and JSON, a manifest, kind before data), HTTPie's key==X, arrays of secrets (JSON, YAML),
    # a key ending its line and its value the next line's one word, a setter given a literal,
    # a .properties file's dotted key, a program's flag quoted whole, a template's default, a
    # literal fallback after code, a secret flag in a YAML block sequence, a signing key
    # given to a library's call, a label of words (API Key: X), a secret's name then its value
    # in prose (with token X), a variable whose last word is a key, a salt, a seed (AES_KEY=X),
    # a variable in capitals ending in _KEY set by a shell to a word a person picked
    # (STRIPE_KEY=hunter2), a user and a password after words that say so (login admin/X), a Discord bot token, a
    # secret's name as Markdown shows it (**Password**: X, | DB_PASSWORD | X |), a value in
    # brackets after a secret's name or quoted before "as the password", Twilio's keys, a
    # Markdown table whose header names a password's column, or another secret's (also a token's
    # or a key's in another language), a secret's
    # name alone on its line and its value alone on the next, a wrapped key's tail after the
    # marker of its first part, a PIN said so, a short value after a marked name or a label of
    # words (read in the corpus' texts as the patterns before leave them)
    assert len(PRE_TESTED) == 56
    from otelbridge.secret_wrapped import WRAPPED_PATTERNS

    texts = [f["text"] for f in FORMS] + CASE_FOLDS + PAIR_FORMS
    before = [p for p in redact.DEFAULT_PATTERNS if p not in WRAPPED_PATTERNS]
    texts += [t for t in (functools.reduce(lambda text, p: p.sub(text), before, f["text"]) for f in FORMS)
              if "]\n" in t or "]\\n" in t]
    for pattern in PRE_TESTED:
        plain = _without_pre_tests(pattern)
        changed = 0
        for text in texts:
            assert pattern.sub(text) == plain.sub(text), (pattern, text)
            changed += plain.sub(text) != text
        assert changed >= 5  # the corpus does exercise the pattern


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aKkSsTtPpoewrdn_-.:=\"' \t\n\\/\u212a\u017f\u0131xy1")),
               max_size=40))
def test_a_pattern_s_pre_test_agrees_on_generated_text(text):
    for pattern in PRE_TESTED:
        assert pattern.sub(text) == _without_pre_tests(pattern).sub(text)


def _needles(scanner: bool):
    from otelbridge.secret_patterns import Needles

    needles = Needles(redact.DEFAULT_PATTERNS)
    if not scanner:
        needles._db = None  # the plain ``in`` tests, as where Hyperscan is not installed
    elif needles._db is None:
        pytest.skip("hyperscan not installed")
    return needles


@pytest.mark.parametrize("scanner", [True, False], ids=["hyperscan", "in-tests"])
def test_the_needle_pass_admits_every_pattern_that_redacts_a_text(scanner):
    """A pattern left out by its needles or required substrings would let its secret through."""
    needles = _needles(scanner)
    texts = [f["text"] for f in FORMS] + CASE_FOLDS + PAIR_FORMS
    admitted = 0
    for text in texts:
        wanted = set(needles.wanted(text))
        for i, pattern in enumerate(redact.DEFAULT_PATTERNS):
            if pattern.sub(text) != text:
                assert i in wanted, (pattern, text)
                admitted += 1
    assert admitted > 500  # the corpus does exercise the patterns
    # what nothing in the text calls for is not run
    assert needles.wanted("agent 4: span phase reads result") == ()
    assert needles.wanted("a673676ff85749b0") == ()
    pgpass = [i for i, p in enumerate(redact.DEFAULT_PATTERNS) if ":*:" in p.needles]
    assert len(pgpass) == 1 and pgpass[0] in needles.wanted("db:5432:app:u:Pw1")
    assert pgpass[0] in needles.wanted("*:*:app:u:Pw1") and pgpass[0] not in needles.wanted("a:0:b")


@pytest.mark.parametrize(("text", "expected"), [
    ("api_\u212aey: hunter2", "api_\u212aey: [REDACTED:secret]"),  # a Kelvin sign for the K
    ("PA\u017f\u017fWORD = x y", "PA\u017f\u017fWORD = [REDACTED:secret]"),  # long s; INI's value to the line's end
    ("dsn:\n  Xq7-value9", "dsn:   [REDACTED:secret]"),  # the value on the next line
])
def test_a_key_that_only_a_case_blind_regex_reads_still_hides_its_value(text, expected):
    assert Redactor().scan(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aKkSsTtPpoewrdn_-.:=\"' \t\n\\/(,[<|?&\u212axy1*")),
               max_size=40))
def test_the_needle_pass_admits_every_pattern_that_redacts_generated_text(text):
    for scanner in (True, False):
        needles = _needles(scanner) if scanner is False or _HS else None
        if needles is None:
            continue
        wanted = set(needles.wanted(text))
        for i, pattern in enumerate(redact.DEFAULT_PATTERNS):
            if i not in wanted:
                assert pattern.sub(text) == text, (pattern, text)


_HS = __import__("otelbridge.secret_patterns").secret_patterns.hyperscan is not None


@pytest.mark.parametrize(("args", "expected"), [
    (["sshpass", "-p", "ArgSsh333", "ssh", "host"], ["sshpass", "-p", "[REDACTED:secret]", "ssh", "host"]),
    (["mysql", "-u", "root", "-pArgMy111", "app"], ["mysql", "-u", "root", "-p[REDACTED:secret]", "app"]),
    (["curl", "-s", "-u", "deploy:Xyz12345", "https://h"], ["curl", "-s", "-u", "deploy:[REDACTED:secret]", "https://h"]),
    (["gh", "secret", "set", "N", "--body", "Xyz98765"], ["gh", "secret", "set", "N", "--body", "[REDACTED:secret]"]),
    # an argument with spaces (a prompt): joined by another separator, each argument kept whole
    (["redis-cli", "-a", "Xyz98765", "echo", "a b"], ["redis-cli", "-a", "[REDACTED:secret]", "echo", "a b"]),
    (["claude", "-p", "Run the tests and fix what fails"], ["claude", "-p", "Run the tests and fix what fails"]),
])
def test_a_command_lines_arguments_are_read_together(args, expected):
    """What an argument holds only through the ones before it (a program's password flag)."""
    assert redact.Redactor().attributes({"process.command_args": args})["process.command_args"] == expected


@pytest.mark.parametrize("text", [
    "password:\nuser: admin",  # YAML: a sibling key, not a value
    "password = (\n    os.environ['DB_PASSWORD']\n)",  # code: a call over lines
    "credentials:\n- aws",  # a list item
    "token:\n# rotated weekly",  # a comment
    "password: {\n  \"user\": \"x\"}",  # an object opened
])
def test_a_key_ending_its_line_takes_no_structure_for_its_value(text):
    assert "[REDACTED:" not in Redactor().scan(text)


def test_a_secret_typed_at_a_prompt_and_text_blocks_joined_are_redacted():
    """Text blocks joined with a line end (a tool result's content) put a key and its value on
    two lines; a value opening with a bracket is a value when quoted."""
    r = Redactor()
    assert r.scan("password:\nHx9Qz8Wv7Ut") == "password: [REDACTED:secret]"
    assert r.scan('{"password": "(kP3#xL9!vQ2z"}') == '{"password": "[REDACTED:secret]"}'
    assert r.scan("password: (kP3#xL9!vQ2z") == "password: [REDACTED:secret]"


def test_a_number_under_a_secret_s_key_in_a_json_document_is_redacted():
    """A tool call's arguments: ``{"password": 98765432109876}`` is a secret as its string
    form is; counts under keys about tokens stay numbers."""
    out = Redactor().json_text('{"command": "login", "password": 98765432109876, "pin_length": 6,'
                               ' "usage": {"input_tokens": 5, "max_tokens": 100}, "api_key": [{"token": 4.5}]}', 1000)
    assert json.loads(out) == {"command": "login", "password": "[REDACTED:secret]", "pin_length": 6,
                               "usage": {"input_tokens": 5, "max_tokens": 100},
                               "api_key": [{"token": "[REDACTED:secret]"}]}


def test_numbers_in_a_list_under_a_secret_s_key_are_redacted():
    """``{"passwords": [2223334445556, 77788899]}``: each number, also in a nested list; a list
    of numbers under a key that holds names or counts stays."""
    out = Redactor().json_text('{"passwords": [2223334445556, 77788899], "api_keys": [[1234567, 7654321]],'
                               ' "token_counts": [1, 2], "tokens": ["a", 5], "ids": [3, 4.5], "ok": [true]}', 1000)
    assert json.loads(out) == {"passwords": ["[REDACTED:secret]", "[REDACTED:secret]"],
                               "api_keys": [["[REDACTED:secret]", "[REDACTED:secret]"]],
                               "token_counts": [1, 2], "tokens": ["a", 5], "ids": [3, 4.5], "ok": [True]}


def test_a_document_too_long_for_the_whole_pass_is_passed_member_by_member():
    """Over 256 Ki characters the document's text is not passed whole: each member is, alone,
    so what only a neighbour tells (``{"password": "x"}``, ``["--token", "x"]``) and a key
    that is a secret are still redacted."""
    key = "sk-ant-api03-" + "Zq9x" * 20 + "AA"
    doc = {"a": "y" * 150_000, "b": "y" * 150_000,
           "tool": {"password": "hunter2hunter2", key: "v", "args": ["--token", "Tok77qZ9"]}}
    assert len(json.dumps(doc)) > redact.SCAN_MAX_CHARS
    out = Redactor().json_text(json.dumps(doc), 400_000)
    assert out is not None
    got = json.loads(out)
    assert "hunter2hunter2" not in out and key not in out and "Tok77qZ9" not in out
    assert got["tool"]["password"].startswith("[REDACTED:")
    assert got["tool"]["args"][0] == "--token" and got["tool"]["args"][1].startswith("[REDACTED:")
    assert got["a"] == got["b"] == "y" * 150_000


def test_a_document_over_the_cap_loses_its_last_list_items_before_its_short_strings():
    """A message's text and 19 tool calls (a real turn's parallel calls) in 256 characters: the
    text is cut, the last tool calls are left out, each kept part stays whole in its shape."""
    parts = [{"type": "text", "content": "I will read every module of the package now. " * 4}] + [
        {"type": "tool_call", "id": f"toolu_01Abc{n:02d}", "name": "Read"} for n in range(19)]
    doc = [{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}]
    out = Redactor().json_text(json.dumps(doc), 256)
    assert out is not None and len(out) <= 256
    (message,) = json.loads(out)
    assert message["role"] == "assistant" and message["finish_reason"] == "tool_call"
    text, *calls = message["parts"]
    assert text["type"] == "text" and text["content"].endswith("…")
    assert parts[0]["content"].startswith(text["content"][:-1])
    assert 1 <= len(calls) < 19
    assert calls == parts[1:1 + len(calls)]  # the first ones, whole
    # nothing but short strings and one-item lists: those are cut as before
    assert json.loads(Redactor().json_text(json.dumps({"k": "abcdefghij"}), 12)) == {"k": "abc…"}


@pytest.mark.parametrize("doc, hidden", [
    ({"flag": "--password", "value": "Zq8vT3xLw9Rk2Mp7"}, "value"),  # the pass took the key for the flag's value
    ({"option": "--token", "arg": "Zq8vT3xLw9Rk2Mp7"}, "arg"),
    ({"a": "--password", "b": "Xy1Secret99", "c": "--token", "value": "Zq8vT3xLw9Rk2Mp7"}, "value"),
    ({"pass\u200bword": "Zq8vT3xLw9Rk2Mp7"}, "password"),  # an invisible character in a key
    ({"pass\u202eword": "Zq8vT3xLw9Rk2Mp7"}, "password"),
])
def test_keys_are_sanitised_and_a_key_taken_for_a_flags_value_keeps_its_value_hidden(doc, hidden):
    out = Redactor().json_text(json.dumps(doc), 1000)
    assert "Zq8vT3xLw9Rk2Mp7" not in out and "Xy1Secret99" not in out  # (two keys hidden alike)
    got = json.loads(out)
    assert got[hidden].startswith("[REDACTED:")
    assert "\u200b" not in out and "\u202e" not in out
    # a key that is a secret alone stays hidden
    token = "ghp_" + "a1B2c3D4e5" * 3 + "abcdef"
    assert json.loads(Redactor().json_text(json.dumps({token: "v"}), 1000)) == {"[REDACTED:github_token]": "v"}


def test_a_flat_object_of_long_strings_is_cut_evenly_and_a_deep_one_left_out():
    """Ten long values in 256 characters: each keeps the same share (it was left out: eight
    rounds cut eight strings); a document nesting past 64 levels is left out (walking it
    overflowed the stack, and its span was lost)."""
    doc = {f"field{i}": f"value {i} " + "lorem ipsum " * 10 for i in range(10)}
    out = Redactor().json_text(json.dumps(doc), 256)
    assert out is not None and len(out) <= 256
    got = json.loads(out)
    assert list(got) == list(doc)
    assert len({len(v) for v in got.values()}) == 1 and all(v.endswith("…") for v in got.values())
    assert all(doc[k].startswith(v[:-1]) for k, v in got.items())
    assert Redactor().json_text(json.dumps({"x": json.loads("[" * 65 + "]" * 65)}), 1000) is None
    assert Redactor().json_text(json.dumps({"x": json.loads("[" * 63 + "]" * 63)}), 1000) is not None
    assert Redactor().json_text(json.dumps(json.loads("[" * 400 + "]" * 400)), 1000) is None


@pytest.mark.parametrize("text,expected", [
    # a picked password's closing "!" is the password's (policies ask for a sign; "!" is the
    # one put last): nothing of it stays
    ("Log in with password Summer6770!TN! and check", "Log in with password [REDACTED:secret] and check"),
    ("the password for staging is Winter2024Ab!!", "the password for staging is [REDACTED:secret]"),
    # a sentence's "." or "?" after it stays the sentence's
    ("the password for staging is Winter!2024Ab.", "the password for staging is [REDACTED:secret]."),
    ("was the password Summer6770!TN?", "was the password [REDACTED:secret]?"),
])
def test_a_picked_password_ending_in_a_bang_is_redacted_whole(text, expected):
    assert redact.clean(text, 1000) == expected


def test_a_string_made_by_joining_lines_is_its_own_scan():
    """Found by the property test above: line ends become spaces after redaction, and joined,
    ``wpa-psk`` and ``token`` before a line's end read as a flag or a column and its value; a
    second scan (a record redacted twice) changed what the first left."""
    safe = Redactor.build()
    for text in ("wpa-psk \n https://u:p@h/x", "token \n x", "password \n https://u:p@h/x"):
        once = safe.clean(text)
        assert "\n" not in once and "u:p@" not in once
        assert safe.clean(once) == once, text


@pytest.mark.parametrize("text", ["export to https://u:p@host/x failed", "user:pw@collector:4317 refused",
                                  "x [u:pw@host] y",
                                  "a collector said: http://ann:s3cret@10.0.0.1:4318/v1/traces?key=x"])
def test_a_message_cleaned_twice_is_cleaned_once(text):
    """A line of ours may pass :func:`redact.message` twice (kept cleaned, then logged): the
    second pass changes nothing, and no credential is left."""
    once = redact.message(text)
    assert redact.message(once) == once and "[REDACTED:url_credentials]@" in once
    assert ":p@" not in once and "pw@" not in once and "s3cret" not in once


def test_the_usage_key_parts_known_without_the_probe_are_what_the_probe_answers():
    """The default redactor knows, without running its probe, that our usage keys' parts
    (``input_tokens``, ...) name no secret; that answer must be the probe's own, or a number
    under such a key from the stream would be treated otherwise than before."""
    seeded = Redactor()
    probed = Redactor()
    probed._probes.clear()
    assert seeded._probes and seeded._probes == dict(redact._COUNTED)
    for (part, listed), _ in redact._COUNTED:
        assert probed._names_a_secret_key(part, listed) is False, part
        assert seeded._names_a_secret_key(part, listed) is False, part
    # a key word that names a secret is still probed, and found
    assert seeded._names_a_secret_key("api_token", False) is True
    # with a rule of the user's, which the probe may meet, nothing is known beforehand
    assert Redactor.build([r"\d{8}"])._probes == {}
    assert Redactor.build([r"\d{8}"])._names_a_secret_key("input_tokens", False) is True
