"""The detector's extents and near misses (:mod:`otelbridge.secrets`, :mod:`otelbridge.secret_tokens`):
where a value ends, which URLs hold credentials, which flags and commands take a secret, cut
tokens. The forms themselves are rows of ``tests/data/secret-forms.jsonl`` (test_redact.py)."""

from __future__ import annotations

import re

import pytest

from otelbridge import redact
from otelbridge.secret_patterns import _one_case
from otelbridge.secret_tokens import VENDOR_TOKENS
from otelbridge.secrets import DEFAULT_PATTERNS, names_a_secret


def clean(text: str) -> str:
    return redact.clean(text, 100_000)


@pytest.mark.parametrize(("text", "expected"), [
    # an unquoted value runs to the next space, through & < > \ and inner quotes
    ("DB_PASSWORD=Xy7&S3cr3tTail ./run", "DB_PASSWORD=[REDACTED:secret] ./run"),
    ("password: Xy7'tail and more", "password: [REDACTED:secret]"),
    ("password='Xy7'\\''tail' next", "password='[REDACTED:secret]' next"),
    # ... but not past the quote that closes the context it sits in
    ('{"cmd": "DB_PASSWORD=abc&def", "x": 1}', '{"cmd": "DB_PASSWORD=[REDACTED:secret]", "x": 1}'),
    ('{\\"cmd\\": \\"DB_PASSWORD=abc&def\\", \\"x\\": 1}',
     '{\\"cmd\\": \\"DB_PASSWORD=[REDACTED:secret]\\", \\"x\\": 1}'),
    ('"token: a\\"b c"', '"token: [REDACTED:secret]"'),
    ("<env>DB_PASSWORD=a<b</env>", "<env>DB_PASSWORD=[REDACTED:secret]</env>"),
    # a .properties file's dotted key runs to its line's end; on a command line a dotted key
    # is one word (helm's --set, java's -D)
    ("port=1\nspring.datasource.password=a b c\nx.y=2", "port=1 spring.datasource.password=[REDACTED:secret] x.y=2"),
    ("helm upgrade app . --set db.password=Hx1 --set image.tag=2",
     "helm upgrade app . --set db.password=[REDACTED:secret] --set image.tag=2"),
    ("java -Dapp.db.password=Jv1 -jar app.jar", "java -Dapp.db.password=[REDACTED:secret] -jar app.jar"),
    # a URL's query: & ends the value, the next parameter survives
    ("https://db/x?password=Pq8&user=ann", "https://db/x?password=[REDACTED:secret]&user=ann"),
    ("/geocode?address=Paris&key=Zq8xW2&lang=fr", "/geocode?address=Paris&key=[REDACTED:secret]&lang=fr"),
    ("a.html?x=1&amp;sig=Zq8&amp;y=2", "a.html?x=1&amp;sig=[REDACTED:secret]&amp;y=2"),
    # not a value: Perl's fat comma, a read from STDIN, a placeholder
    ("use constant ZIP_HDR_SIG => 0x04034b50;", "use constant ZIP_HDR_SIG => 0x04034b50;"),
    ("my $password = <STDIN>;", "my $password = <STDIN>;"),
    ("form AUTH=<mechanism>.", "form AUTH=<mechanism>."),
])
def test_values_end_where_they_end(text, expected):
    assert clean(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("postgres://app:Qx7#pa/ss@db:5432/x", "postgres://[REDACTED:url_credentials]@db:5432/x"),
    ("redis://:Zt4?mW2q@cache:6379", "redis://[REDACTED:url_credentials]@cache:6379"),
    ("postgres://app:p@ssW0rd@db.internal/prod", "postgres://[REDACTED:url_credentials]@db.internal/prod"),
    ("https://u:p@host/path?e=ann&f=@x", "https://[REDACTED:url_credentials]@host/path?e=ann&f=@x"),
    ('"https:\\/\\/me:pw1@host\\/x"', '"https:\\/\\/[REDACTED:url_credentials]@host\\/x"'),
    # a port is not a password; no user:, no credentials
    ("http://localhost:3000/@vite/client", "http://localhost:3000/@vite/client"),
    ("http://127.0.0.1:5173/@fs/home/x.ts", "http://127.0.0.1:5173/@fs/home/x.ts"),
    ("https://cdn.jsdelivr.net/npm/@scope/pkg@1.0/x", "https://cdn.jsdelivr.net/npm/@scope/pkg@1.0/x"),
])
def test_url_credentials_run_to_the_last_at_before_the_host(text, expected):
    assert clean(text) == expected


FLAGS = ["--password", "--passwd", "--pass", "--token", "--secret", "--api-key", "--apikey", "--cookie",
         "--account-key", "--secret-access-key", "--private-key", "--secret-key", "--access-key",
         "--passphrase", "--signing-key", "--master-key", "--credentials", "--credential",
         "--client-secret", "--auth-token", "--session-token", "--dbPassword", "--http-password",
         "-Password", "-Token", "-pw", "--encryption-key", "--dsn", "--subscription-key",
         "--license-key", "--hmac-key"]
NOT_FLAGS = ["--token-file", "--password-stdin", "--no-password", "--max-tokens", "--tokenizer",
             "--api-key-helper", "--secret-name", "--auth-type", "--cookie-jar", "--keyboard", "-p",
             "--bypass", "--author", "--compass", "--function-keys", "--subscription"]


@pytest.mark.parametrize("flag", FLAGS + NOT_FLAGS)
def test_the_one_string_flag_rule_agrees_with_names_a_secret(flag):
    """``--flag X`` in a command line as one string is redacted exactly when the argv rule
    (process.command_args) would redact X."""
    text = f"tool {flag} Vq8zX2 --verbose"
    assert names_a_secret(flag) == (flag in FLAGS)
    assert (clean(text) == f"tool {flag} [REDACTED:secret] --verbose") == (flag in FLAGS), clean(text)
    if flag in NOT_FLAGS:
        assert clean(text) == text


@pytest.mark.parametrize("text", [
    "mysql -u root -p mydb",  # -p alone prompts; mydb is the database
    "unrar x -p- archive.rar",  # -p-: no password
    "curl -u admin https://api.internal/x",  # no ':': curl prompts
    "sshpass -e ssh -p 2222 host",  # ssh's -p is a port
    "mongosh --port 27017 -p",
    "7z x archive.7z -o/tmp/out",
    "set -x PATH /usr/bin",
    "gh secret list",
    "aws configure set region eu-west-1",
    "export DB_PASSWORD",
])
def test_command_short_forms_leave_near_misses(text):
    assert clean(text) == text


@pytest.mark.parametrize(("text", "kept"), [
    ("Ship with ghp_AbCdEfGhIjKlMnOpQ", "Ship with [REDACTED:github_token]"),
    ("push ghp_Ab3dEfGhIjK… to CI", "push [REDACTED:github_token]… to CI"),
    ("use glpat-Ab3dEfGhIj...", "use [REDACTED:gitlab_token]..."),
    ('{"cmd":"export sk-proj-Y83zKHBNNv"}', '{"cmd":"export [REDACTED:api_key]"}'),
    ("Ship AKIAIOSF0DNN7", "Ship [REDACTED:aws_access_key]"),
    ("preview: hf_LeakAbCdEfGhIjKlMn…", "preview: [REDACTED:huggingface_token]…"),
    ("token dop_v1_ab12ab12ab12", "token [REDACTED:digitalocean_token]"),
    ("pul-ab12ab12ab12ab…", "[REDACTED:pulumi_token]…"),
    ("key SG.abcdEFGH12345678ab.Cd…", "key [REDACTED:sendgrid_key]…"),
    ("locale en_SG.ISO8859-1", "locale en_SG.ISO8859-1"),
    ("abcdefghijklmn.atlasv1.AbCdEf123456…", "[REDACTED:terraform_token]…"),
    # not cut: a short body followed by more text; a word, not a token
    ("ghp_AbCdEf12 is short", "ghp_AbCdEf12 is short"),
    ("hf_transfer", "hf_transfer"),
    ("echo $npm_lifecycle", "echo $npm_lifecycle"),
    ("Ship AKIAPROJECTX", "Ship AKIAPROJECTX"),
])
def test_cut_tokens_count_at_the_end_of_a_string_or_an_ellipsis(text, kept):
    assert clean(text) == kept


def test_private_key_body_without_its_begin_line():
    line = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
    tail = f"{line}\n{line}\nq2Lk==\n-----END PRIVATE KEY-----\n"
    assert clean(tail) == "[REDACTED:private_key] "
    numbered = f"    12\u2192{line}\n    13\u2192{line}\n    14\u2192-----END RSA PRIVATE KEY-----"
    assert clean(numbered) == "    12\u2192[REDACTED:private_key]"
    # a certificate's or public key's end is not a private key's (read by a run that has not
    # met the line as a private key's: it would hide it wherever it meets it again)
    redact.install(redact.Redactor())
    body = "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ"  # (a certificate's)
    for end in ("-----END CERTIFICATE-----", "-----END PUBLIC KEY-----"):
        assert clean(f"{body}\n{end}") == f"{body} {end}"
    # a private key's first bytes say what it is, with no BEGIN or END line around them
    assert clean(f"key={line}") == "key=[REDACTED:private_key]"


def test_vendor_needles_are_ascii_lower_case_literals_of_their_matches():
    """Hyperscan compiles the needles as caseless literals, and folds ASCII letters alone: every
    needle is in lower case ASCII, of a script without case (a label in Korean), or in small
    letters that the needle pass's lower-cased text holds whatever the case (Cyrillic's), and
    each vendor regex compiles."""
    for kind, needles, regex in VENDOR_TOKENS:
        re.compile(regex)
        assert needles and all(n.isascii() and n == n.lower() for n in needles), kind
    for pattern in DEFAULT_PATTERNS:
        assert all(n == n.lower() and _one_case(n) for n in pattern.needles), pattern
    assert not _one_case("Пароль") and not _one_case("κωδικός")


@pytest.mark.parametrize("unit", [
    "curl -u ", "login x ", "mysql -u ", "gh secret set x ", "a://b:", "https://u:p@", "token-",
    " --token-", "set -x token-", "?key=&", '<add key="token-', "machine a login ",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n",
    "    12\u2192MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n",
    # name/value pairs, argv arrays, header arrays, cut URL credentials, PuTTY, Telegram
    '{"name":"DB_PASSWORD",', '{"name":"x_token","value', '- name: token\n  ', '"--password",', "'--token', ",
    '\\"--token\\",', '"authorization","', "Authorization:[Basic ", "a://b:c", "s://u:p.", "Private-Lines: 1\n",
    "Private-Lines: 1\nAAAA", "123456:", "bot1234567:AA", '"ParameterKey":"DbPass",',
    '["sshpass",', '"sshpass","-e",', '"mysql","-u",', '"login","x",', "'redis-cli', '-a', ",
    '"--password","x', "Authorization: Basic ", '{"value":"x', '"value":"x","name":"',
    # argv elements in either quote (Python's repr)
    "['curl', \"-u', ", "['mysql',\"-p", "['sshpass', \"-", "'--password', \"", "['curl', '-u', \"u:",
    "curl -u abcdefghij", '"curl","-u","abcdefghij', "curl --user=",
    "ssh-keygen -N ", "sqlcmd -P ", "htpasswd -nb ", "echo x | sudo -u ", "rabbitmqctl add_user ",
    "create user x password ", "set password ", "put-parameter --name token ", "ENV TOKEN ", "LS0tLS1CRUdJTi",
    "define('token', ", "['token'] = ", "'token' => ", "set('pass', 'x", ":token=>",
    "curl -u 'a:", 'curl -u \\"a:', "a:1:b:c:", "password  x\n", '"token": {"a": 1, ',
    # labels of words
    "API Key: ", '"API Key": "', "\\nAPI Key: x\\n", "api key = x ",
    # a key and a value of one long word: .NET's key= then a name, a vendor's key then its value
    "key=", "a_key=", "Key=", "salt=",
    # short values after a marked name, a label, a PIN, a *_SALT= variable, a quoted passphrase
    "**Password**: ", "| DB_PASS | ", "`DB_PASSWORD` is `", "API key: Aa1", "PIN: 1", "A_SALT=", "HMAC_SALT=Ab1",
    "the passphrase is '", "| x_pass |", "**Token**: Aa1b2",
    # a quoted value whole after a verb, marks in a bare one, a pair in backticks, a count after pass
    "The password is `", "the password is `a1'", "the password is a1(", "Login: `a` / `", "login `a`/`Ab1!",
    "pass: 1 ", "pass=12 fail",
])
def test_no_rule_takes_quadratic_time(unit):
    """64 KiB of one unit repeated (a rule that rescans the rest of the text from every start
    would take minutes; each takes milliseconds)."""
    import time

    text = "-----END PRIVATE KEY-----\n" + unit * (65536 // len(unit))
    start = time.process_time()
    redact.Redactor().redact(text)
    assert time.process_time() - start < 1.5


@pytest.mark.parametrize("text", [
    "https://a:" + "b." * 32768, "https://u:p\u2026 " + "a." * 32768,  # a scheme from every dot
    "APP_KEY=base64: " + "k." * 32768 + "key: base64:",  # a key word's end from every dot
])
def test_a_long_dotted_run_after_a_scheme_or_key_takes_linear_time(text):
    """64 KiB: the URL-credential rule and the ``*_KEY: base64:`` rule scanned the rest of a
    dotted run from every dot (13 s here, minutes at the 256 Ki scanned); now milliseconds."""
    import time

    start = time.process_time()
    redact.Redactor().redact(text)
    assert time.process_time() - start < 1.5


@pytest.mark.parametrize("prefix", ["ghp_", "hf_", "npm_", "pul-", "sk_live_", "xoxb-_", "dop_v1_"])
def test_a_run_of_token_prefixes_takes_linear_time(prefix):
    """The longest string scanned (256 Ki characters) of one token prefix repeated: a cut-token
    test that looked to the end of the word from every prefix took 15 s; bounded, ~0.1 s."""
    import time

    start = time.process_time()
    redact.Redactor().redact(prefix * (262144 // len(prefix)))
    assert time.process_time() - start < 1.5


TOKENS = ("glpat-xY9zLeakAbCdEfGhIjKl", "xoxb-2456789012-3456789012345-AbCdEfGhIjKlMnOp",
          "sk_live_51HabcdEFGHijklMNOPqrst", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
          "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "AIzaSyA1234567890abcdefghijklmnopqrstuv",
          "gsk_" + "A1" * 20, "dop_v1_" + "ab12" * 16, "pul-" + "ab12" * 10,
          "sk-proj-AbCdEfGhIjKlMnOpQrSt", "SG.abcdEFGH12345678.abcdEFGH12345678abcd")


@pytest.mark.parametrize("before", ["a_", "mcp__x_", "bad body\\n", "col\\t", "(", "x "])
@pytest.mark.parametrize("token", TOKENS)
def test_a_token_after_an_underscore_or_an_escape_is_found(token, before):
    """An MCP tool named with a token (``mcp__x_<token>``), text still escaped (``\\n`` then a
    token: a JSON document inside a string): no word boundary before the token, found anyway."""
    out = clean(before + token + " end")
    assert token[:12] not in out and out.startswith(before) and out.endswith(" end"), out


@pytest.mark.parametrize("text", ["the mailgun_key-config option", "use key-value pairs",
                                  "TASK_SK check", "sg.example.com is SG.Foo", "xhf_transfer"])
def test_prefixes_inside_words_stay(text):
    assert clean(text) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("keytool -importkeystore -srckeystore a.jks -storepass KsPw44 -noprompt",
     "keytool -importkeystore -srckeystore a.jks -storepass [REDACTED:secret] -noprompt"),
    ("ldapsearch -x -D cn=admin -w LdapPw11 -b dc=x", "ldapsearch -x -D cn=admin -w [REDACTED:secret] -b dc=x"),
    ("smbclient //h/s -U alice%SmbPw1234", "smbclient //h/s -U alice%[REDACTED:secret]"),
    ("htpasswd -b .htpasswd admin HtPw5678", "htpasswd -b .htpasswd admin [REDACTED:secret]"),
    ("openssl enc -aes-256-cbc -k EncPw99 -in f", "openssl enc -aes-256-cbc -k [REDACTED:secret] -in f"),
    # near misses: no password given
    ("ldapsearch -x -b dc=example -w", "ldapsearch -x -b dc=example -w"),
    ("smbclient -L host -U alice", "smbclient -L host -U alice"),
    ("htpasswd -c file admin", "htpasswd -c file admin"),
])
def test_more_programs_password_flags(text, expected):
    assert clean(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # each password flag of one call, not the first alone
    ("curl -u a:Zx9mQ2vLp7 -b sid=Hunter2xyz https://h", "curl -u a:[REDACTED:secret] -b [REDACTED:secret] https://h"),
    ("keytool -genkeypair -storepass Xx11yy22 -keypass Hunter2xyz",
     "keytool -genkeypair -storepass [REDACTED:secret] -keypass [REDACTED:secret]"),
    # the next lines of a command in escaped JSON (a tool call's arguments)
    ("cd app\\nredis-cli -a Zx9mQ2vLp7 ping\\nmysql -uroot -pHunter2xyz db",
     "cd app\\nredis-cli -a [REDACTED:secret] ping\\nmysql -uroot -p[REDACTED:secret] db"),
    ("x\\npass=Secr3tX y", "x\\npass=[REDACTED:secret] y"),
    ("ldapwhoami -x -D cn=admin -wZx9mQ2vLp7", "ldapwhoami -x -D cn=admin -w[REDACTED:secret]"),
    ("machine h\\nlogin u\\npassword X9y8z7w6\\nmachine g", "machine h\\nlogin u\\npassword [REDACTED:secret]\\nmachine g"),
])
def test_every_flag_of_a_command_and_the_next_lines_of_escaped_commands(text, expected):
    assert clean(text) == expected


@pytest.mark.parametrize("text", ["--show-signature\n   Check the signature", "kill -SIGTERM 4242",
                                  "pkill -SIGKILL node"])
def test_a_flag_ending_a_line_or_a_signal_name_takes_no_value(text):
    assert clean(text) == text.replace("\n", " ")


@pytest.mark.parametrize(("text", "expected"), [
    # Kubernetes/ECS env entries: the value of a name that names a secret
    ('[{"name":"DB_PASSWORD","value":"ErrK8sPw777"}]', '[{"name":"DB_PASSWORD","value":"[REDACTED:secret]"}]'),
    ('{"name": "API_TOKEN", "value": "K8s Tok888"}', '{"name": "API_TOKEN", "value": "[REDACTED:secret]"}'),
    ('{"name" : "clientSecret" ,\n   "value" : "K8sTok888"}', '{"name" : "clientSecret" ,\n   "value" : "[REDACTED:secret]"}'),
    ('[{\\"name\\":\\"DB_PASSWORD\\",\\"value\\":\\"Err\\\\\\"K8s\\"}]',
     '[{\\"name\\":\\"DB_PASSWORD\\",\\"value\\":\\"[REDACTED:secret]\\"}]'),
    ('{\\n  \\"name\\": \\"GH_PAT\\",\\n  \\"value\\": \\"K8sTok888\\"\\n}',
     '{\\n  \\"name\\": \\"GH_PAT\\",\\n  \\"value\\": \\"[REDACTED:secret]\\"\\n}'),
    ("{'name': 'DB_PASSWORD', 'value': 'PyRepr99'}", "{'name': 'DB_PASSWORD', 'value': '[REDACTED:secret]'}"),
    ('{"key":"STRIPE_SECRET","value":"GlVar555"}', '{"key":"STRIPE_SECRET","value":"[REDACTED:secret]"}'),
    ('"ParameterKey": "DbPassword", "ParameterValue": "CfnPw1"',
     '"ParameterKey": "DbPassword", "ParameterValue": "[REDACTED:secret]"'),
    # YAML, a real or an escaped line break, any indent
    ("- name: DB_PASSWORD\n  value: hunter2", "- name: DB_PASSWORD\n  value: [REDACTED:secret]"),
    ('      - name: "API_KEY"\n        value: "hunter 2"', '      - name: "API_KEY"\n        value: "[REDACTED:secret]"'),
    ("env:\\n- name: DB_PASSWORD\\n  value: hunter2\\n- name: X",
     "env:\\n- name: DB_PASSWORD\\n  value: [REDACTED:secret]\\n- name: X"),
    # not a secret's name, a name about the secret, a reference instead of a value
    ('{"name":"LOG_LEVEL","value":"debug"}', None),
    ('{"name":"password_file","value":"/run/secrets/db"}', None),
    ('{"filename":"secret.txt","value":"x"}', None),
    ('{"name":"TOKEN_PATH","value":"/var/run/tok"}', None),
    ("- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:", None),
    ("- name: PATH\n  value: /usr/bin", None),
    # the value first, then its name
    ('{"value":"ErrK8sPw777","name":"DB_PASSWORD"}', '{"value":"[REDACTED:secret]","name":"DB_PASSWORD"}'),
    ('{\\"value\\": \\"a b\\", \\"name\\": \\"API_TOKEN\\"}',
     '{\\"value\\": \\"[REDACTED:secret]\\", \\"name\\": \\"API_TOKEN\\"}'),
    ('{"value":"debug","name":"LOG_LEVEL"}', None),
    ('{"value":"x"}, {"name":"DB_PASSWORD"}', None),
    ("- ParameterKey: DbPassword\n  ParameterValue: CfnPw", "- ParameterKey: DbPassword\n  ParameterValue: [REDACTED:secret]"),
])
def test_name_value_pairs_redact_the_value_of_a_secret_name(text, expected):
    assert clean(text) == (text if expected is None else expected).replace("\n", " ")


@pytest.mark.parametrize("flag", FLAGS + NOT_FLAGS)
@pytest.mark.parametrize("quote", ['"', "'", '\\"'])
@pytest.mark.parametrize("comma", [",", ", ", " ,\\n  "])
def test_an_argv_array_redacts_the_element_after_a_secret_flag(flag, quote, comma):
    """``"argv": ["deploy", "--password", "X"]``: the same flags as :func:`names_a_secret`."""
    def arr(*xs):
        return "[" + comma.join(f"{quote}{x}{quote}" for x in xs) + "]"

    text = '"argv":' + arr("deploy", flag, "Vq8zX2 y", "--verbose")
    expected = '"argv":' + arr("deploy", flag, "[REDACTED:secret]", "--verbose")
    assert clean(text) == (expected if flag in FLAGS else text)


@pytest.mark.parametrize("text", ['["login", "--password", "--verbose"]', '["x", "--password-stdin", "y"]',
                                  '["--token"]', '["--token", 1]'])
def test_an_argv_array_leaves_a_flag_without_value(text):
    assert clean(text) == text


@pytest.mark.parametrize(("text", "expected"), [
    ('[["Authorization","Basic QmFzaWMgY3JlZHM="]]', '[["Authorization","[REDACTED:authorization]"]]'),
    ('headers=[("authorization", "Token abc 123")]', 'headers=[("authorization", "[REDACTED:authorization]")]'),
    ("[['Proxy-Authorization', 'Digest u=1, r=2']]", "[['Proxy-Authorization', '[REDACTED:authorization]']]"),
    ('[[\\"Authorization\\",\\"Basic QmFzaWM=\\"]]', '[[\\"Authorization\\",\\"[REDACTED:authorization]\\"]]'),
    ("map[Authorization:[Basic QmFzaWMgY3JlZHM=] Accept:[*/*]]",
     "map[Authorization:[Basic [REDACTED:authorization]] Accept:[*/*]]"),
    ("Authorization: Basic QmFzaWMgY3JlZHM=", "Authorization: [REDACTED:authorization]"),
    ('{"Authorization": "Basic QmFzaWMgY3JlZHM="}', '{"Authorization": "[REDACTED:authorization]"}'),
    # the prose words alone stay
    ("the Authorization header uses Basic auth", None),
    ("send a bearer token in the Authorization header", None),
    ('["Authorization", 3]', None),
])
def test_authorization_in_header_arrays_and_basic_credentials(text, expected):
    assert clean(text) == (text if expected is None else expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("psql postgres://app:Xy7pQ2mVn9Lk\u2026", "psql postgres://[REDACTED:url_credentials]\u2026"),
    ("mysql://root:PW.x9...", "mysql://[REDACTED:url_credentials]..."),
    ("see https://user:PW123", "see https://[REDACTED:url_credentials]"),
    ('{"uri": "mongodb+srv://root:PW"}', '{"uri": "mongodb+srv://[REDACTED:url_credentials]"}'),
    ('\\"redis://:Zt4\\"', '\\"redis://[REDACTED:url_credentials]\\"'),
    # a port, a path, a placeholder: no credentials
    ("postgres://db:5432", None),
    ("https://example.com:8443/path", None),
    ("http://localhost:3000\u2026", None),
    ('"http://127.0.0.1:8080"', None),
    ("http://localhost:$PORT", None),
    ("http://host:port", None),
    # ... a port at a sentence's end
    ("The dev server is running at http://localhost:3000.", None),
    ("Visit http://localhost:8080!", None),
    ('{"text": "open http://127.0.0.1:5173.\\n"}', None),
    ("see https://user:PW123.", "see https://[REDACTED:url_credentials]"),
    ("https://user:pw@host/x", "https://[REDACTED:url_credentials]@host/x"),
])
def test_url_credentials_cut_before_the_at(text, expected):
    assert clean(text) == (text if expected is None else expected)


TG = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3"


@pytest.mark.parametrize(("text", "kind"), [
    (f"bot {TG} here", "telegram_token"),
    (f"https://api.telegram.org/bot{TG}/getMe", "telegram_token"),
    ("r8_" + "Ab3d" * 9 + "x", "replicate_token"),
    ("pplx-" + "a1B2" * 12, "perplexity_key"),
    ("tvly-" + "A1b2C3d4" * 4, "tavily_key"),
    ("tvly-dev-" + "A1b2C3d4" * 4, "tavily_key"),
    ("nvapi-" + "A1b2_-" * 11, "nvidia_key"),
    ("sq0atp-" + "A1b2" * 5 + "xy", "square_token"),
    ("sq0csp-" + "A1b2" * 10 + "xyz", "square_token"),
    ("EAACEdEose0cBA" + "A1b2" * 8, "facebook_token"),
    ("LTAI" + "A1b2C3d4e5" * 2, "alibaba_key"),
    ("sl." + "A1b2-_" * 25, "dropbox_token"),
    ("sl.u." + "A1b2-_" * 25, "dropbox_token"),
    ("preview r8_Ab3dEfGhIj\u2026", "replicate_token"),
])
def test_more_vendor_tokens(text, kind):
    out = clean(text)
    assert f"[REDACTED:{kind}]" in out and not any(len(w) > 12 and "REDACTED" not in w
                                                   for w in out.replace("/", " ").split()
                                                   if w != "api.telegram.org"), out


@pytest.mark.parametrize("text", ["12345:Abc", "at 10:30 AM the job ran", "sl.example.com", "LTAI",
                                  "r8_short", "EAACEdEose0cBA"])
def test_vendor_near_misses_stay(text):
    assert clean(text) == text


def test_a_putty_key_file_loses_its_private_lines():
    ppk = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\n"
           "AAAAC3NzaC1lZDI1NTE5AAAAIHj\nAAAA\nPrivate-Lines: 2\nAAAAIF5xQ3dummyprivbody+/\nAAAAxyz==\n"
           "Private-MAC: abcdef0123")
    out = redact.Redactor().redact(ppk)
    assert out.endswith("Private-Lines: 2\n[REDACTED:private_key]\nPrivate-MAC: abcdef0123"), out
    escaped = ppk.replace("\n", "\\n")
    assert "AAAAIF5x" not in clean(escaped) and "AAAAxyz" not in clean(escaped)
    assert "AAAAIF5x" not in clean(ppk.replace("\n", "\r\n"))


@pytest.mark.parametrize(("text", "expected"), [
    ("GH_PAT=ghx1234", "GH_PAT=[REDACTED:secret]"),
    ("github_pat: abc123x", "github_pat: [REDACTED:secret]"),
    ('{"githubPat": "abc123x"}', '{"githubPat": "[REDACTED:secret]"}'),
    ("tool --pat abc123x", "tool --pat [REDACTED:secret]"),
    ("PATH=/usr/bin", None), ("pattern: x", None), ("patch: y", None), ("file_path=/x", None),
    ("--path /x", None), ('{"filePath": "/x"}', None), ("COMPAT=1", None), ("spat=1", None),
])
def test_pat_is_a_key_segment_not_path_or_pattern(text, expected):
    assert clean(text) == (text if expected is None else expected)
    assert names_a_secret("--pat") and not names_a_secret("--path") and not names_a_secret("--patch")


@pytest.mark.parametrize(("text", "expected"), [
    ('["mysql","-uroot","-pArgvPw321"]', '["mysql","-uroot","-p[REDACTED:secret]"]'),
    ('["sshpass", "-p", "ArgvPw321", "ssh", "h"]', '["sshpass", "-p", "[REDACTED:secret]", "ssh", "h"]'),
    ('[\\"docker\\", \\"login\\", \\"-u\\", \\"me\\", \\"-p\\", \\"DkPw1\\"]',
     '[\\"docker\\", \\"login\\", \\"-u\\", \\"me\\", \\"-p\\", \\"[REDACTED:secret]\\"]'),
    ("['redis-cli', '-a', 'Rd1 x', 'ping']", "['redis-cli', '-a', '[REDACTED:secret]', 'ping']"),
    ('["zip","-P","ZpPw","a.zip"]', '["zip","-P","[REDACTED:secret]","a.zip"]'),
    ('["7z","x","-pSeven7","a.7z"]', '["7z","x","-p[REDACTED:secret]","a.7z"]'),
    # as on a command line: -p alone prompts, ssh's -p is a port, claude's a prompt
    ('["mysql","-p","mydb"]', None),
    ('["sshpass","-e","ssh","-p","2222"]', None),
    ('["ssh","-p","2222","host"]', None),
    ('["claude","-p","fix it"]', None),
    ('["mysql"], ["x","-pFoo"]', None),
])
def test_an_argv_array_redacts_programs_short_password_flags(text, expected):
    assert clean(text) == (text if expected is None else expected)


#: The corpus' command lines of programs' password flags (and flags that name a secret)
ARGV_FORMS = ("mysql -pX", "mysqldump -pX", "sshpass -p X", "sshpass -pX", "redis-cli -a X",
              "curl -u user:pass", "curl --user user:pass", "zip -P X", "7z -pX", "mongosh -p X",
              "twine -p X", "openssl -pass pass:X", "docker login -p", "ssh-keygen -N", "sqlcmd -P",
              "htpasswd -nb", "htpasswd -b -C cost", "jarsigner -storepass",
              "kubectl create secret --from-literal", "az keyvault secret set --value", "psexec -p",
              "ipmitool -P", "mosquitto_pub -P", "snmpwalk -A and -X", "curl -u KEY: (empty password)",
              'curl --user "KEY:"', "--password X", "--token X", "--client-secret X", "curl -U proxyuser:X",
              "curl --proxy-user user:X", "ldappasswd -a old -s new", "snmpwalk -c community")


def _argv_forms():
    import json
    import shlex
    from pathlib import Path

    rows = {r["form"]: r for r in map(json.loads, (Path(__file__).parent / "data" / "secret-forms.jsonl")
                                      .read_text().splitlines())}
    for form in ARGV_FORMS:
        argv = shlex.split(rows[form]["text"], posix=True)
        as_json = json.dumps(argv)
        yield pytest.param(as_json, rows[form]["secrets"], id=f"{form} json")
        yield pytest.param(repr(argv), rows[form]["secrets"], id=f"{form} repr")
        yield pytest.param(json.dumps({"args": argv}, separators=(",", ":")), rows[form]["secrets"], id=f"{form} compact")
        yield pytest.param(json.dumps(as_json)[1:-1], rows[form]["secrets"], id=f"{form} escaped")


@pytest.mark.parametrize(("text", "secrets"), list(_argv_forms()))
def test_every_command_line_form_holds_as_an_argv_array(text, secrets):
    """The corpus' command line of each program's password flag, split as a shell does and
    written as an argv array (JSON, Python's repr, inside a JSON string): its secret is gone,
    every other element is kept."""
    out = clean(text)
    assert not [s for s in secrets if s in out]
    kept = [e for e in re.findall(r"[\w./@-]+", text) if not any(e in s or s in e for s in secrets)]
    assert [e for e in kept if e not in out] == []


@pytest.mark.parametrize(("text", "expected"), [
    # a flag's letter joined to its value, or among other flags
    ("snmpwalk -v3 -APq7wD4 -XPq7wD5 h", "snmpwalk -v3 -A[REDACTED:secret] -X[REDACTED:secret] h"),
    ("ssh-keygen -NPq7wD1 -f k", "ssh-keygen -N[REDACTED:secret] -f k"),
    ("zip -rP Pq7wYY o.zip d", "zip -rP [REDACTED:secret] o.zip d"),
    ("curl -su alice:Pq7wUU https://x", "curl -su alice:[REDACTED:secret] https://x"),
    ('["zip", "-rP", "Pq7wYY", "o.zip"]', '["zip", "-rP", "[REDACTED:secret]", "o.zip"]'),
    # an HTML password input: blanks around =, a tab between attributes (JSON-escaped)
    ('<input type=password value = "Pq7wH4">', '<input type=password value = "[REDACTED:secret]">'),
    ('{"html":"<input type=password\\tvalue=Pq7wH3>"}', '{"html":"<input type=password\\tvalue=[REDACTED:secret]>"}'),
    ('{"value":"Pq7wBr3","selector":"#pw"}', '{"value":"[REDACTED:secret]","selector":"#pw"}'),
    # a .properties line indented, numbered by cat -n, in a diff
    ("x=1\n   spring.datasource.password=aa1 bb2\ny=2", "x=1    spring.datasource.password=[REDACTED:secret] y=2"),
    ("     7\tspring.datasource.password=cat dog", "     7\tspring.datasource.password=[REDACTED:secret]"),
    ("@@ -1 +1 @@\n+spring.datasource.password=aa1 bb2", "@@ -1 +1 @@ +spring.datasource.password=[REDACTED:secret]"),
    # a flag quoted whole, as a shell string (also a JSON-escaped one)
    ("mysql -uroot '-pPq7wQ' db", "mysql -uroot '-p[REDACTED:secret]' db"),
    ("7z a '-pPq7w U' o.7z a", "7z a '-p[REDACTED:secret]' o.7z a"),
    ("xfreerdp /u:a '/p:Pq7wR' /v:h", "xfreerdp /u:a '/p:[REDACTED:secret]' /v:h"),
    ('{"command": "mysql \\"-pPq7wQ2\\" db"}', '{"command": "mysql \\"-p[REDACTED:secret]\\" db"}'),
    ("mysql -u a '-pXone1' db; mysql '-pXtwo2' db", "mysql -u a '-p[REDACTED:secret]' db; mysql '-p[REDACTED:secret]' db"),
    ("7z a '-pAa1' x; 7z a '-pBb2' y", "7z a '-p[REDACTED:secret]' x; 7z a '-p[REDACTED:secret]' y"),
    ("mysql '-p' db", None), ("ssh '-p' 2222 h", None), ("grep '-p' x", None),
    # a placeholder as a flag's whole value is no secret
    ('mysql -uroot -p"$DB_PASSWORD"', None), ('["sshpass","-p","$SSHPASS"]', None),
    ("curl -u alice:$TOKEN https://x", None), ("deploy --password ${{ secrets.DEPLOY_PW }} now", None),
    ("Authorization: Bearer $TOKEN", None), ('Authorization: "Bearer ${API_TOKEN}"', None),
    ("zip -r o.zip d", None), ("curl -sSL https://x", None), ("ssh-keygen -N '' -f k", None),
])
def test_forms_a_break_tester_found_in_the_thirteenth_round(text, expected):
    assert clean(text) == (text if expected is None else expected)


@pytest.mark.parametrize("text", [
    'password = request.form["password"]', "export DB_PASSWORD=$DB_PASSWORD", "password = None",
    'token = os.getenv("TOKEN")', "spring.datasource.password=${DB_PASSWORD}",
])
def test_a_placeholder_or_code_at_a_json_string_s_end_is_left(text):
    """A tool call's argument without a line end: the document's pass reads the value up to
    the string's closing quote, which ends a placeholder or code as a line end does."""
    import json

    doc = json.dumps({"new_string": text})
    assert json.loads(redact.Redactor().json_text(doc, 10_000)) == {"new_string": text}


def test_numbers_after_a_secret_flag_and_as_a_secret_name_s_value_are_redacted():
    import json

    out = redact.Redactor().json_text('{"args": ["--password", 27182818, "--port", 8080],'
                                      ' "env": [{"name": "DB_PASSWORD", "value": 16180339},'
                                      ' {"name": "PORT", "value": 8080}]}', 10_000)
    assert json.loads(out) == {"args": ["--password", "[REDACTED:secret]", "--port", 8080],
                               "env": [{"name": "DB_PASSWORD", "value": "[REDACTED:secret]"},
                                       {"name": "PORT", "value": 8080}]}


@pytest.mark.parametrize("prefix", ["name: ", "a: \n", "<a", '{"name":"', "- name: ", "x=1 ", "\\n", "?a&",
                                    "<add key=\""])
def test_a_long_word_of_key_words_takes_linear_time(prefix):
    """256 Ki of ``tokentoken…`` after a separator: a key found as a lazy prefix then the key
    word and the rest of its word rescanned that rest from every ``token`` (minutes); a key is
    now one scan of its word."""
    import time

    start = time.process_time()
    redact.Redactor().redact(prefix + "token" * (262144 // 5 - 4) + ":\n=")
    assert time.process_time() - start < 1.5


@pytest.mark.parametrize(("text", "gone"), [
    ("authorization=Basic dXNlcjpodW50ZXIyWHE5", "dXNlcjpodW50ZXIyWHE5"),
    ("AUTH_HEADER=Basic dXNlcjpodW50ZXIyWHE5", "dXNlcjpodW50ZXIyWHE5"),
    ('export AUTH="Basic dXNlcjpodW50ZXIyWHE5"', "dXNlcjpodW50ZXIyWHE5"),
    ('["curl","-u","user:hunter2Xq9"]', "hunter2Xq9"),
    ('["curl", "-s", "--user", "u:Xsecret1", "https://x"]', "Xsecret1"),
    ('["curl","--user=u:Xsecret2"]', "Xsecret2"),
    ('[\\"curl\\",\\"-u\\",\\"a:Bsecret3\\"]', "Bsecret3"),
    ("see https://user:hunter2Xq9\\n more", "hunter2Xq9"),
    ("AZURE_DEVOPS_PAT=abc123x", "abc123x"),
    ('{"Parameter":{"Name":"/prod/db/password","Type":"SecureString","Value":"SsmPw777x"}}',
     "SsmPw777x"),  # aws ssm get-parameter --with-decryption
    ('{"name":"DB_PASSWORD","type":"String","value":"TypePw1"}', "TypePw1"),
    ('<env name="DB_PASSWORD" value="EnvPw2"/>', "EnvPw2"),
    ("name=DB_PASSWORD value=AttrPw3 other=1", "AttrPw3"),
    ('["X-API-Key","abc123def"]', "abc123def"),
    ('[[\\"x-api-key\\", \\"abc123def\\"]]', "abc123def"),
    ("--parameters ParameterKey=DbPassword,ParameterValue=Zq9xWv7Lm2", "Zq9xWv7Lm2"),
    ("--environment Name=DB_PASSWORD,Value=Zq9xWv7Lm2", "Zq9xWv7Lm2"),
    ("DATABASE_URL=postgres://admin:Zq9xWv7Lm2\nHOME=/root", "Zq9xWv7Lm2"),  # env | cut -c1-40
    ("postgres://admin:Zq9xWv7Lm2 \u2026", "Zq9xWv7Lm2"), ("x mysql://root:Zq9xWv7Lm2\t", "Zq9xWv7Lm2"),
    ('<env NAME="DB_PASSWORD" VALUE="Zq9xWv7Lm2"/>', "Zq9xWv7Lm2"),
    ('{\\"name\\": \\"DB_PASSWORD\\", \\"valueFrom\\": null, \\"value\\": \\"VfPw2\\"}', "VfPw2"),
])
def test_credentials_a_break_test_found_after_the_pairs(text, gone):
    assert gone not in clean(text)


@pytest.mark.parametrize("text", [
    '["docker","run","-u","1000:1000"]',  # uid:gid, not a password
    '"%s://%s:%i" % (scheme, host, port)',
    'pat = re.compile(r"^v\\d+")', ":param str pat: The pattern to match lines.",
    '_IPV4_PAT = "(?:[0-9]{1,3}\\.){3}"', "def match(self, pat: str) -> bool:",
    '["Authorization", "Content-Type"]', '["Cookie","Authorization","Proxy-Authorization"]',
    "('authorization', 'backup')", "use Basic authentication here",
    '{"Name":"/prod/db/host","Type":"String","Value":"db.internal"}',
    '{"name":"LOG_LEVEL","type":"String","value":"debug"}',
    '<env name="LOG_LEVEL" value="debug"/>', 'enum: ["token", "id_token", "code"]',
    'required: ["password", "username"]', '["sshpass", "-e", "ssh", "-p", "2222"]',
    "__slots__ = ('arguments', '_signature', '__weakref__')", "log.info('token', 'getting list')",
    '"files": ["AUTHORS", "index.js"]', '"keywords": ["auth", "oauth2", "jwt"]',
    'choices=["password", "oauth2"]', 'uses: "docker://alpine:3.18"', "docker://node:20-alpine",
    's3://bucket:key', '"spiffe://cluster.local:ns"',
    "redis://cache:6379 NEXT=1", "postgres://db:port …", "DATABASE_URL=postgres://db:5432/app",
])
def test_code_and_lists_that_look_like_credentials_stay(text):
    assert clean(text) == text


def test_a_cut_url_ends_at_a_line_end_not_after_a_port_and_its_punctuation():
    text = "  origin: `http://localhost:3030`,\n  ...requestOpts"
    assert redact.Redactor().redact(text) == text


@pytest.mark.parametrize(("text", "expected"), [
    # Python's repr of an argv: an element holding a ' is quoted with " among '-quoted ones
    ("""['mysql', '-u', 'root', "-pit's-secret"]""", """['mysql', '-u', 'root', "-p[REDACTED:secret]"]"""),
    ("""['curl', '-u', "user:pa'ss"]""", """['curl', '-u', "user:[REDACTED:secret]"]"""),
    ("""['curl', "--user=u:it's", 'https://h']""", """['curl', "--user=u:[REDACTED:secret]", 'https://h']"""),
    ("""['sshpass', '-p', "it's-secret", 'ssh', 'h']""", """['sshpass', '-p', "[REDACTED:secret]", 'ssh', 'h']"""),
    ("""['deploy', '--password', "it's-secret"]""", """['deploy', '--password', "[REDACTED:secret]"]"""),
    ("""['mysql', "--user=o'brien", '-pMyPw1234', 'db']""", """['mysql', "--user=o'brien", '-p[REDACTED:secret]', 'db']"""),
    ("""['curl', "-H", "X-Note: it's", '-u', 'u:CurlPw99']""", """['curl', "-H", "X-Note: it's", '-u', 'u:[REDACTED:secret]']"""),
    ("""[\\"mysql\\", \\"-u\\", \\"root\\", \\"-pit's\\"]""", """[\\"mysql\\", \\"-u\\", \\"root\\", \\"-p[REDACTED:secret]\\"]"""),
    # near misses stay: -p alone, ssh's port, a prompt
    ("""['mysql', '-p', "o'brien_db"]""", None),
    ("""['sshpass', '-e', 'ssh', '-p', "2222"]""", None),
    ("""['claude', '-p', "what's up"]""", None),
    ("""['x', '--token-file', "it's"]""", None),
])
def test_a_python_repr_argv_with_mixed_quotes(text, expected):
    assert clean(text) == (text if expected is None else expected)


KEY32 = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(("text", "expected"), [
    # an API key as curl's user, the password empty (Stripe's docs: -u sk_test_x:)
    (f"curl -u {KEY32}: https://api.x.com", "curl -u [REDACTED:secret]: https://api.x.com"),
    (f'curl -u "{KEY32}:" https://x', 'curl -u "[REDACTED:secret]:" https://x'),
    (f"curl -s --user {KEY32}: https://x", "curl -s --user [REDACTED:secret]: https://x"),
    (f"curl --user={KEY32}:", "curl --user=[REDACTED:secret]:"),
    (f"curl -u {KEY32}:\\n", "curl -u [REDACTED:secret]:\\n"),
    (f'["curl", "-u", "{KEY32}:", "https://x"]', '["curl", "-u", "[REDACTED:secret]:", "https://x"]'),
    (f"['curl', '--user={KEY32}:']", "['curl', '--user=[REDACTED:secret]:']"),
    # a vendor key there keeps its marker whole (it was cut at its ':' as a user:password)
    ("curl https://api.stripe.com -u sk_test_4eC39HqLyjWDarjtT1zdp7dc: -d x=1",
     "curl https://api.stripe.com -u [REDACTED:stripe_key]: -d x=1"),
    # a short user name, a variable, no ':' stay
    ("curl -u admin: https://x", None), ("curl -u $STRIPE_KEY: https://x", None),
    (f"curl -u {KEY32} https://x", None), ("curl -u user:\\nnext", None),
])
def test_curl_an_api_key_as_the_user_with_an_empty_password(text, expected):
    assert clean(text) == (text if expected is None else expected)


@pytest.mark.parametrize(("text", "expected"), [
    # YAML: a secret's name, other members at the same indent, then its value (AWS SSM)
    ("- Name: DB_PASSWORD\n  Type: SecureString\n  Overwrite: true\n  Value: hunter2xyz",
     "- Name: DB_PASSWORD\n  Type: SecureString\n  Overwrite: true\n  Value: [REDACTED:secret]"),
    ("Parameter:\n  Name: /prod/db/password\n  Type: SecureString\n  Value: Pw9\n  Version: 3",
     "Parameter:\n  Name: /prod/db/password\n  Type: SecureString\n  Value: [REDACTED:secret]\n  Version: 3"),
    ("- name: API_TOKEN\\n  description: \\\"the token\\\"\\n  value: Tk9",
     "- name: API_TOKEN\\n  description: \\\"the token\\\"\\n  value: [REDACTED:secret]"),
    # flow-style YAML: the value to the next , } or ]
    ("env: [{name: DB_PASSWORD, value: hunter2xyz}, {name: HOST, value: db}]",
     "env: [{name: DB_PASSWORD, value: [REDACTED:secret]}, {name: HOST, value: db}]"),
    ("{Name: /prod/api/token, Type: SecureString, Value: Fl0w}",
     "{Name: /prod/api/token, Type: SecureString, Value: [REDACTED:secret]}"),
    ('{name: API_KEY, value: "a, b"}', '{name: API_KEY, value: "[REDACTED:secret]"}'),
    # a nested member, another list item, a name that is not a secret's: no value of it
    ("- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n- name: HOST\n  value: db.internal", None),
    ("- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      key: x\n  value: y", None),
    ("{name: LOG_LEVEL, type: String, value: debug}", None),
])
def test_yaml_name_value_pairs_with_members_between_and_in_flow_style(text, expected):
    assert clean(text) == (text if expected is None else expected).replace("\n", " ")


@pytest.mark.parametrize(("text", "expected"), [
    ("password: |\n  hunter2xyz\n  line2\nnext: 1", "password: |\n  [REDACTED:secret]\nnext: 1"),
    ("password: |2\n   hunter2xyz", "password: |2\n   [REDACTED:secret]"),
    ("private_key: >-  # rotated\n  abc\n\n  def\nx: 1", "private_key: >-  # rotated\n  [REDACTED:secret]\nx: 1"),
    # a block's lines are text, whatever they hold
    ("token: |\n  abc: def\n  - ghi", "token: |\n  [REDACTED:secret]"),
    ('{"f": "password: |\\n  hunter2xyz\\n  two\\nnext: 1"}', '{"f": "password: |\\n  [REDACTED:secret]\\nnext: 1"}'),
    ("password: |\r\n  hunter2xyz\r\nx: 1", "password: |\r\n  [REDACTED:secret]\r\nx: 1"),
    # an indicator without a block, or a value that starts with |, is not one
    ("password: |", None), ("password: |\nnext: 1", None), ("DB_PASSWORD=|", None),
    ("password: |x", "password: [REDACTED:secret]"),
])
def test_yaml_block_scalars(text, expected):
    assert redact.Redactor().redact(text) == (text if expected is None else expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("echo 'Hunter2xyz' | sudo -S apt-get install -y x", "echo [REDACTED:secret] | sudo -S apt-get install -y x"),
    ("echo Hunter2xyz | sudo -u bob -kS whoami", "echo [REDACTED:secret] | sudo -u bob -kS whoami"),
    ("echo 'bob:Hunter2xyz' | chpasswd", "echo [REDACTED:secret] | chpasswd"),
    ("echo Hunter2xyz | passwd --stdin bob", "echo [REDACTED:secret] | passwd --stdin bob"),
    ("htpasswd -nb admin Hunter2xyz", "htpasswd -nb admin [REDACTED:secret]"),
    ("ssh-keygen -t ed25519 -N Hunter2xyz -f key", "ssh-keygen -t ed25519 -N [REDACTED:secret] -f key"),
    ("ssh-keygen -p -P Old1x -N New2x -f k", "ssh-keygen -p -P [REDACTED:secret] -N [REDACTED:secret] -f k"),
    ("sqlcmd -S db -U sa -P Hunter2xyz -Q 'select 1'", "sqlcmd -S db -U sa -P [REDACTED:secret] -Q 'select 1'"),
    ("bcp t out f -S db -U sa -PHunter2xyz", "bcp t out f -S db -U sa -P[REDACTED:secret]"),
    ("rabbitmqctl add_user bob Hunter2xyz", "rabbitmqctl add_user bob [REDACTED:secret]"),
    ("security add-generic-password -a bob -s svc -w Hunter2xyz",
     "security add-generic-password -a bob -s svc -w [REDACTED:secret]"),
    # no secret given: an empty passphrase, a shell, a pipe that reads no password
    ("ssh-keygen -t ed25519 -N '' -f key", None), ('ssh-keygen -N "" -f k', None),
    ("echo hi | sudo tee /etc/x", None), ("echo abc | git hash-object --stdin", None),
    ("echo $PW | sudo -S x", None), ("htpasswd -nB admin", None), ("rabbitmqctl add_user bob", None),
    ("security find-generic-password -s svc -w", None),
])
def test_more_commands_that_take_a_password(text, expected):
    assert clean(text) == (text if expected is None else expected)


PEM_B64 = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2UUlCQURBTkJna3Foa2lHOXcwQkFRRUZBQVND"


@pytest.mark.parametrize(("text", "expected"), [
    # SQL statements that set a password
    ("CREATE USER bob WITH PASSWORD 'Hun''ter2';", "CREATE USER bob WITH PASSWORD '[REDACTED:secret]';"),
    ("ALTER ROLE app WITH LOGIN ENCRYPTED PASSWORD 'Sq1Pw';", "ALTER ROLE app WITH LOGIN ENCRYPTED PASSWORD '[REDACTED:secret]';"),
    ("CREATE LOGIN app WITH PASSWORD = 'Sq1Pw!', CHECK_POLICY=OFF", "CREATE LOGIN app WITH PASSWORD = '[REDACTED:secret]', CHECK_POLICY=OFF"),
    ("ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY 'Sq1Pw';",
     "ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '[REDACTED:secret]';"),
    ("CREATE USER 'b'@'%' IDENTIFIED BY \"Sq1Pw\";", "CREATE USER 'b'@'%' IDENTIFIED BY \"[REDACTED:secret]\";"),
    ("create user app identified by Sq1Pw;", "create user app identified by [REDACTED:secret];"),
    ("SET PASSWORD FOR 'bob'@'%' = 'Sq1Pw';", "SET PASSWORD FOR 'bob'@'%' = '[REDACTED:secret]';"),
    ('psql -c "ALTER ROLE app PASSWORD \'Sq1Pw\'"', 'psql -c "ALTER ROLE app PASSWORD \'[REDACTED:secret]\'"'),
    ("CREATE USER x PASSWORD NULL;", None), ("ALTER USER bob PASSWORD EXPIRE;", None),
    ("Create a user with a strong password.", None),
    # aws ssm put-parameter: a SecureString's value, or a secret name's
    ("aws ssm put-parameter --name x --value 'Ssm1Pw' --type SecureString",
     "aws ssm put-parameter --name x --value [REDACTED:secret] --type SecureString"),
    ("aws ssm put-parameter --name /prod/db/password --value=Ssm1Pw --overwrite",
     "aws ssm put-parameter --name /prod/db/password --value=[REDACTED:secret] --overwrite"),
    ("aws ssm put-parameter --name /app/ami --value ami-123 --type String", None),
    # PowerShell
    ("ConvertTo-SecureString 'Ps1Pw' -AsPlainText -Force", "ConvertTo-SecureString [REDACTED:secret] -AsPlainText -Force"),
    ('convertto-securestring -String "Ps1Pw" -AsPlainText', "convertto-securestring -String [REDACTED:secret] -AsPlainText"),
    ("ConvertTo-SecureString $env:PW -AsPlainText -Force", None),
    # a Dockerfile's ENV KEY value
    ("ENV API_TOKEN my token\nRUN make", "ENV API_TOKEN [REDACTED:secret]\nRUN make"),
    ("ENV PATH /usr/bin", None), ("RUN env TOKEN", None),
    # a PEM private key in base64: Kubernetes' tls.key, kubeconfig's client-key-data, wrapped
    (f"  tls.key: {PEM_B64}==\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUU=",
     "  tls.key: [REDACTED:private_key]\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUU="),
    ('"client-key-data": "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF"', '"client-key-data": "[REDACTED:private_key]"'),
    ("LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0KTUlJRQ==", "[REDACTED:private_key]"),
    (f"{PEM_B64[:76]}\n{'QUJD' * 19}\nQUJD==\nnext line", "[REDACTED:private_key]\nnext line"),
])
def test_sql_ssm_powershell_dockerfile_and_base64_private_keys(text, expected):
    assert redact.Redactor().redact(text) == (text if expected is None else expected)


def test_a_dockerfile_env_in_escaped_json():
    assert clean('{"command":"FROM x\\nENV NPM_TOKEN Tk1x\\nRUN y"}') == '{"command":"FROM x\\nENV NPM_TOKEN [REDACTED:secret]\\nRUN y"}'


@pytest.mark.parametrize(("text", "expected"), [
    ("define( 'DB_PASSWORD', 'Cd1x' );", "define( 'DB_PASSWORD', '[REDACTED:secret]' );"),
    ("'password' => env('DB_PASSWORD', 'forge'),", "'password' => env('DB_PASSWORD', '[REDACTED:secret]'),"),
    ('os.environ["API_KEY"] = "Cd1x"', 'os.environ["API_KEY"] = "[REDACTED:secret]"'),
    ("$db['password']='Cd1x';", "$db['password']='[REDACTED:secret]';"),
    ('os.Setenv("DB_PASSWORD", "Cd1x")', 'os.Setenv("DB_PASSWORD", "[REDACTED:secret]")'),
    ("localStorage.setItem('token', 'Cd1x')", "localStorage.setItem('token', '[REDACTED:secret]')"),
    ("{:password => \"Cd1x\", :user => 'u'}", "{:password => \"[REDACTED:secret]\", :user => 'u'}"),
    ('{\\"cmd\\": \\"os.environ[\\\\\\"API_KEY\\\\\\"] = \\\\\\"Cd1x\\\\\\"\\"}',
     '{\\"cmd\\": \\"os.environ[\\\\\\"API_KEY\\\\\\"] = \\\\\\"[REDACTED:secret]\\\\\\"\\"}'),
    # a variable, an empty default, a read, a comparison with a sentinel (under 4 characters),
    # a list, a log call, Perl's constant
    ('os.Setenv("API_KEY", key)', None), ("os.environ.get('API_KEY', '')", None), ("x = d['token']", None),
    ("d['token'] == 'abc'", None), ("if password == \"abc\":", None), ('["sshpass", "-e", "ssh"]', None),
    ("log.info('token', 'getting list')", None), ("use constant ZIP_HDR_SIG => 0x04034b50;", None),
    ("'tokens' => 'abc'", None),
])
def test_code_setters_subscripts_and_fat_commas(text, expected):
    assert clean(text) == (text if expected is None else expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("db.example.com:5432:appdb:app:Pg1x", "db.example.com:5432:appdb:app:[REDACTED:secret]"),
    ("localhost:*:*:postgres:Pg1x\n*:*:*:app:Pg2x", "localhost:*:*:postgres:[REDACTED:secret]\n*:*:*:app:[REDACTED:secret]"),
    ("     2\u219210.0.0.5:6432:b:svc:Pg1x\n", "     2\u219210.0.0.5:6432:b:svc:[REDACTED:secret]\n"),
    ("cat ~/.pgpass\\ndb:5432:a:a:Pg1x\\n", "cat ~/.pgpass\\ndb:5432:a:a:[REDACTED:secret]\\n"),
    ('[{"keyName": "key1", "permissions": "FULL", "value": "Az1x=="}]',
     '[{"keyName": "key1", "permissions": "FULL", "value": "[REDACTED:secret]"}]'),
    # not a .pgpass line: /etc/passwd, a time, a URL, an empty password, mid-line
    ("daemon:x:1:1:daemon:/usr/sbin:/bin/sh", None), ("12:30:45:678:done", None), ("http://h:8080:x:y:z", None),
    ("host:5432:db:user:", None), ("a.c:10:5: warning: x", None),
])
def test_pgpass_lines_and_azure_key_lists(text, expected):
    assert redact.Redactor().redact(text) == (text if expected is None else expected)


@pytest.mark.parametrize("text", ['"PreferredMaintenanceWindow": "sun:06:00-sun:14:00"', "wed:10:00-wed:11:00",
                                  '"KeyFingerprint": "1f:51:ae:b8:bf:89:e9:d8:1f:25"'])
def test_time_ranges_and_fingerprints_are_no_pgpass_lines(text):
    assert clean(text) == text


@pytest.mark.parametrize(("text", "expected"), [
    # curl -u "user:X": the password to its closing quote (spaces in it), also JSON-escaped
    ('curl -u "user:pa ss word" https://x', 'curl -u "user:[REDACTED:secret]" https://x'),
    ("curl --user='bob:p w' x", "curl --user='bob:[REDACTED:secret]' x"),
    ('{"command": "curl -u \\"user:pa ss\\" https://x"}', '{"command": "curl -u \\"user:[REDACTED:secret]\\" https://x"}'),
    ('curl -u "user:" x', None),
])
def test_curl_a_quoted_user_and_password(text, expected):
    assert clean(text) == (text if expected is None else expected)


@pytest.mark.parametrize(("text", "expected"), [
    # a tool call's command in JSON: an argument in escaped quotes is taken to its closing one
    ('{"command": "deploy --password \\"pa ss\\" --x"}', '{"command": "deploy --password [REDACTED:secret] --x"}'),
    ('{"command": "sshpass -p \\"pa ss\\" ssh h"}', '{"command": "sshpass -p [REDACTED:secret] ssh h"}'),
    ('{"command": "aws configure set aws_secret_access_key \\"ab cd\\""}',
     '{"command": "aws configure set aws_secret_access_key [REDACTED:secret]"}'),
])
def test_an_argument_in_escaped_quotes_is_taken_whole(text, expected):
    assert clean(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # terraform output -json: a secret's name, then an object holding its value
    ('{"db_password": {"sensitive": true, "type": "string", "value": "Tf1x"}}',
     '{"db_password": {"sensitive": true, "type": "string", "value": "[REDACTED:secret]"}}'),
    ('{\\"api_token\\": {\\"sensitive\\": true, \\"value\\": \\"Tf1x\\"}}',
     '{\\"api_token\\": {\\"sensitive\\": true, \\"value\\": \\"[REDACTED:secret]\\"}}'),
    ('{"db_host": {"sensitive": false, "value": "db.internal"}}', None),
    # vault kv get's table, tab-separated rows (also escaped): one word after a secret's key
    ("Key         Value\n---         -----\npassword    Vt1x\nuser        bob",
     "Key         Value\n---         -----\npassword    [REDACTED:secret]\nuser        bob"),
    ("DB_PASSWORD\tVt1x", "DB_PASSWORD\t[REDACTED:secret]"),
    ("Key\\tValue\\npassword\\tVt1x\\n", "Key\\tValue\\npassword\\t[REDACTED:secret]\\n"),
    # a help listing (indented, or several words) is no row of one
    ("Commands:\n  secret      Create a secret\nsecret      Create a secret", None),
])
def test_terraform_outputs_and_key_value_tables(text, expected):
    assert redact.Redactor().redact(text) == (text if expected is None else expected)


@pytest.mark.parametrize("text, expected", [
    # a format string's field named in capitals as after ``$`` is a placeholder
    ('headers = {"Authorization": f"Bearer {EXPIRED_TOKEN}"}', None),
    ('token = "{API_KEY}"', None), ("Authorization: Bearer {TOKEN}", None),
    # braces around a value that is no such name hide nothing
    ('password = "{S3CR3T_2024}"', 'password = "[REDACTED:secret]"'),
    ('password = "{HUNTER}"', 'password = "[REDACTED:secret]"'),
    ("Authorization: Bearer {Xy7-2q}", "Authorization: [REDACTED:authorization]"),
    # unquoted, a name is a variable: the object's last member before the call's ``)``
    ("const user = await db.users.create({ email, passwordHash: hash });", None),
    ('json.NewEncoder(w).Encode(map[string]string{"token": tok})', None),
    ("x({ password: hunter2 })", None),
    # not before ``})``, or not a name: a value (the first key of a flow mapping: to its , } or ])
    ("{password: hunter2}", "{password: [REDACTED:secret]}"),
    ("{password: hunter2, user: bob}", "{password: [REDACTED:secret], user: bob}"),
    ("(export PASSWORD=hunter2)", "(export PASSWORD=[REDACTED:secret]"),
    ("x({ password: Hunter2! })", "x({ password: [REDACTED:secret]})"),
    ('x({ password: "hunter2" })', 'x({ password: "[REDACTED:secret]" })'),
    # a form field's label is no value: the line stays whole
    ("    password = PasswordField('Password', validators=[DataRequired()])", None),
    ("    confirm = PasswordField('Confirm Password', validators=[EqualTo('password')])", None),
    ("password = forms.CharField(label='Password', widget=forms.PasswordInput)", None),
    # a literal that is no label, or pydantic's Field (its first argument is the default)
    ("password = PasswordField('Xk9q2mP7')", "password = [REDACTED:secret]"),
    ("password = PasswordField('Password', default='Xk9q2mP7')", "password = [REDACTED:secret]"),
    ("password: str = Field('Hunter', min_length=8)", "password: str = [REDACTED:secret]"),
    ("password = hash('Password')", "password = [REDACTED:secret]"),
])
def test_placeholders_variables_and_labels_in_code_are_no_values(text, expected):
    """A format string's field in capitals, a name closing an object passed to a call, a form
    field's label: the line stays whole; a literal near them is still a value."""
    assert clean(text) == (text if expected is None else expected)
