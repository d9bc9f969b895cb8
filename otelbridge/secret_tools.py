"""Secret forms of particular tools, as an agent's commands and their output show them (Redis,
Windows' ``net``, secret stores' CLIs, logins that take a token, password hashing, here-strings,
jq's variables, ``--name K --value X``, ansible-vault's strings, Oracle and Go database strings,
crypt hashes, cookie files, Wi-Fi passphrases): :data:`TOOL_PATTERNS`, which
:mod:`otelbridge.secrets` applies among its own patterns, and the programs' flags and commands
that set a named value (:data:`PROGRAM_FLAGS`, :data:`NAMED_VALUE`), which it places itself."""

from __future__ import annotations

from .secret_keys import (_ARG, _ARG_IN_LINE, _INNER_QUOTE, _JSON_BLANK, _LINE_START, _NL, _NL_READ,
                          _NOT_A_PLACEHOLDER, _SECRET_KEY, _SECRET_WORD_IN, _WORD, _WORD_START, _key_value, _string_text,
                          _then)
from .secret_patterns import Pattern

#: A line's text, up to a line end, real or escaped (empty too)
_ANY_LINE = r"(?:[^\r\n\\]|\\++(?![nr]))*+"
#: A Kubernetes Secret's base64 value, or one redacted already
_B64_OR_MARK = r"(?:\[REDACTED:\w+\]|[A-Za-z0-9+/]+={0,2})"

#: A command's argument before the secret one: quoted (a file name with blanks) or a word
_WORD_ARG = r"(?!\[REDACTED:)(?:'[^'\r\n]*'|\"[^\"\r\n]*\"|\S+)"

#: A word that names a secret's field (not its name, type, id, label or hint)
_FIELD_WORD = (r"(?<![A-Za-z])(?i:pass(?:word|wort|code|phrase|wd)?|pwd|pw|secret|token|api[ _-]?key|pin)(?![a-z])"
               r"(?![ _-]?(?i:name|type|id|label|hint))")
#: A form field's description or selector that names a secret, in JSON (its quote: group
#: ``q``): "element": "Password textbox", "selector": "#passwd", "locator": "input[type=password]"
_FIELD = (r"(?P<q>\\*\")(?:element|selector|locator)(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK
          + r"(?P=q)(?:(?!(?<!\\)(?P=q))[^\r\n]){0,100}?" + _FIELD_WORD
          + r"(?:(?!(?<!\\)(?P=q))[^\r\n]){0,100}(?P=q)")
#: A quoted selector or label in code that names a secret's field (``'#password'``,
#: ``"input[type=password]"``, ``'Password'``; its quote: group ``q``), and the words it holds
_FIELD_NAMED = (r"(?P<q>\\*[\"'`])(?:(?!(?P=q))[^\r\n]){0,100}?" + _FIELD_WORD
                + r"(?:(?!(?P=q))[^\r\n]){0,100}(?P=q)")
_FIELD_WORDS = ("pass", "pwd", "pw", "secret", "token", "key", "pin")
#: Up to 3 other members of the same object, each followed by a comma
_MEMBERS = (r"(?:" + _JSON_BLANK + "," + _JSON_BLANK + r"(?P=q)\w+(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK
            + r"(?:(?P=q)(?:(?!(?P=q))[^\r\n]){0,100}(?P=q)|[\w.-]{1,20})){0,3}" + _JSON_BLANK + "," + _JSON_BLANK)
#: The text typed, to its closing quote (group ``q``; in code, ``vq``)
_FIELD_TEXT = r"(?:(?!(?<!\\)(?P=q))[^\r\n])+"
_TYPED_TEXT = _FIELD_TEXT.replace("(?P=q)", "(?P=vq)")

#: Programs whose short flag takes a password: docker/podman/helm/az ... login -p X,
#: sshpass -p X, mysql -pX (not -p X: a prompt, then the database), 7z/rar -pX, zip -P X,
#: redis-cli -a X, mongosh -p X, twine -p X, dotnet nuget/vsce/ovsx ... -p X, skopeo
#: --dest-creds user:X, docker login -pX glued, curl -u user:X, openssl -pass pass:X,
#: openssl enc -k X, keytool -storepass X, ldapsearch -w X, smbclient -U user%X,
#: htpasswd -b FILE USER X; curl -b COOKIES (a quoted user:X to its closing quote);
#: jarsigner -storepass X, rabbitmqadmin -p X, kubectl create secret --from-literal=K=X,
#: az keyvault secret set --value X, nmcli ... password X, doctl auth init -t X, lftp -u
#: user,X; Windows' psexec -p X, schtasks /rp X, winrs -p:X, xfreerdp /p:X, rdesktop -p X;
#: ipmitool -P X, mosquitto_pub -P X, snmpwalk -A X -X Y; cqlsh -p X, macOS security
#: unlock-keychain -p X (import -P X, set-key-partition-list -k X), dotnet user-secrets set
#: NAME X. One of
#: :data:`otelbridge.secrets.DEFAULT_PATTERNS`, among the key rules.
#: ``dotnet user-secrets``' options, before or after its ``set``
_SECRETS_OPTS = r"(?:\s+(?:-[pc]|--project|--configuration|--id)[\s=]+\S+|\s+(?:-v|--verbose))*+"
#: ``-p`` and its value, apart or glued (``docker login -p X``, ``-pX``)
_P_VALUE = r"-p(?:\s+|(?=[^\s-]))"
PROGRAM_FLAGS = Pattern.of(
    "secret",
    # (``-pass X pass:`` found by its flag, not by ``pass:``: a test runner's ``pass: 12`` lines
    # would run this whole rule over a long text for nothing)
    ("login", "curl", "sshpass", "mysql", "mariadb", "7z", "rar ", "zip ", "redis-cli", "mongo",
     "twine", "nuget", "vsce", "ovsx", "skopeo", "-passin", "-passout", "-pass ", "-pass\t", "-pass\n", "openssl", "keytool", "ldap", "smbclient", "htpasswd", "ssh-keygen", "sqlcmd", "bcp",
     "rabbitmq", "add-generic", "add-internet", "jarsigner", "create secret", "keyvault", "nmcli",
     "doctl", "lftp", "psexec", "paexec", "schtasks", "winrs", "rdp", "rdesktop", "ipmitool", "mosquitto",
     "snmp", "cqlsh", "keychain", "user-secrets", "security import", "set-key-partition-list"),
    r"(?P<keep>(?:" + _then("login", _P_VALUE) + r"|\bsshpass(?:\s+-[a-zA-Z]\S*)*?\s+-p\s*"
    + "|" + _then(r"(?:mysql\w*|mariadb\w*|7z[ar]?|(?:un)?rar)", r"-p(?=[^\s-])")
    + "|" + _then(r"(?:un)?zip", r"-[a-zA-Z]*P\s*") + "|" + _then("redis-cli", r"-a\s+")
    + "|" + _then(r"(?:mongo(?:sh|dump|restore|export|import|stat|top|files)?|twine)", _P_VALUE)
    + "|" + _then(r"(?:nuget|vsce|ovsx)", r"-p\s+") + "|" + _then("skopeo", r"--(?:src-|dest-)?creds[\s=]+[^\s:]+:")
    + "|" + _then("curl", r"(?:(?:-[a-zA-Z]*[uU]\s*|--(?:proxy-)?user[\s=]+)(?P<cq>\\*[\"'])?(?!\[REDACTED:)[^\s:\"'\\]*:(?!\\*[\"']|\\[nrt])"
                           r"|(?:-b|--cookie)\s+)")
    + "|" + _then("openssl", r"-k\s+") + "|" + _then("(?:keytool|jarsigner)", r"-(?:src|dest|new)?(?:store|key)pass\s+")
    + "|" + _then(r"ldap\w+", r"-w\s*") + "|" + _then("ldappasswd", r"-[as]\s*") + "|" + _then("smbclient", r"(?:-U\s*|--user[\s=]+)[^\s%]*%")
    + "|" + _then("htpasswd", r"(?=(?:-[a-zA-Z]+\s+(?:\d+\s+)?){0,5}-[a-zA-Z]*b)(?:(?=(?:-[a-zA-Z]+\s+(?:\d+\s+)?){0,5}-[a-zA-Z]*n)"
                             r"(?:-[a-zA-Z]+\s+(?:\d+\s+)?){1,6}+" + _WORD_ARG + r"|(?:-[a-zA-Z]+\s+(?:\d+\s+)?){1,6}+" + _WORD_ARG + r"\s+" + _WORD_ARG
                             + r")\s+")
    + "|" + _then("ssh-keygen", r"-[NP]\s*(?!''|\"\")") + "|" + _then(r"(?:sqlcmd|bcp|osql)", r"-P\s*")
    + "|" + _then("rabbitmqctl", r"(?:add_user|change_password)\s+\S+\s+")
    + "|" + _then(r"security\s+add-(?:generic|internet)-password", r"-w\s+")
    + "|" + _then("rabbitmqadmin", r"-p\s+") + "|" + _then(r"(?:kubectl|oc)\s+create\s+secret", r"--from-literal[=\s]+[^=\s]+=")
    + "|" + _then(r"keyvault\s+secret\s+set", r"--value(?:\s+|=)") + "|" + _then(r"doctl\s+auth\s+init", r"-t\s+")
    + "|" + _then("nmcli", r"(?:password|wifi-sec\.psk|802-11-wireless-security\.psk)\s+")
    + "|" + _then("lftp", r"-u\s+[^\s,]+,")
    + "|" + _then(r"(?:ipmitool|mosquitto_(?:pub|sub|rr))", r"-P\s+") + "|" + _then(r"snmp\w+", r"-[AXc]\s*")
    + "|" + _then("cqlsh", _P_VALUE) + "|" + _then(r"security(?:\s+-[a-z]+)*\s+(?:unlock|create)-keychain", r"-p\s+")
    + "|" + _then(r"security(?:\s+-[a-z]+)*\s+import", r"-P\s+")
    + "|" + _then(r"security(?:\s+-[a-z]+)*\s+set-key-partition-list", r"-k\s+")
    + "|" + r"\buser-secrets" + _SECRETS_OPTS + r"\s+set" + _SECRETS_OPTS + r"\s+" + _WORD_ARG + r"\s+"
    + "|" + _then(r"(?i:ps?exec(?:64)?(?:\.exe)?|paexec|rdesktop)", r"-p\s+") + "|" + _then(r"(?i:schtasks)", r"/(?i:rp)\s+")
    + "|" + _then(r"(?i:winrs)", r"-p(?:assword)?:") + "|" + _then(r"(?i:[xw]freerdp3?|sdl-freerdp)", r"[/-]p:")
    + r"|-pass(?:in|out)?\s+pass:))(?!-)(?!\[REDACTED:)" + _NOT_A_PLACEHOLDER + "(?(cq)" + _string_text("cq", "+") + "|" + _ARG + ")",
    requires=(("-p", "-P", "-a", "-u", "--user", "-b", "--cookie", "-k", "pass", "-w", "-U", "-N", "add_user",
               "--from-literal", "--value", "-t", "psk", "/rp", "/RP", "/p:", "-A", "-X",
               "-s", "-c", "P ", "u ", 'P"', "P'", 'u"', "u'"),),  # (zip -rP X, curl -su u:X: a flag among others)
    passes=4,  # curl -u a:X -b Y, keytool -storepass X -keypass Y: each flag after the name
)

#: A pass phrase given as ``pass:X`` to the flag that takes it (openssl's ``-passin``,
#: ``-passout``, ``-pass``, apksigner's ``--ks-pass``, ``--key-pass``): ``X`` alone (before the key
#: rules, whose ``pass:`` value runs over more words)
PASS_PHRASE_ARG = Pattern.of(
    "secret",
    ("pass:",),
    r"(?P<keep>(?<![\w-])-{1,2}(?:[a-z]++-)?pass(?:in|out)?[ \t=]++\\*[\"']?pass:)(?!\[REDACTED:)[^\s\"'\\]++",
)

#: A name given by --name or --key that names a secret (also a path's last part: /prod/db/password)
_NAME_OPTION = r"(?<![\w-])--(?:name|key)(?:[ \t]++|=)\\*[\"']?(?:[\w.-]*/)*" + _SECRET_WORD_IN + r"(?![^\s\"'\\])"
#: A command's word, not across a line end (also an escaped one) nor to another command
_OPTION_WORD = r"(?:(?!\\[nrt])[^\s|;&])++"
#: ansible-vault encrypt_string's options that take a value
_VAULT_OPTION = r"(?:-n|--(?:name|stdin-name|vault-id|encrypt-vault-id|vault-password-file|vault-pass-file|output))"
#: A command's options, each a flag and its value (the value no flag: ``--context production``):
#: at most 8, each read one way (``--scope`` read also as ``-`` and ``-scope`` doubled the time
#: with each option where no key followed: 13 s for 20)
_OPTIONS = r"(?:\s+-{1,2}+\w[\w-]*+(?:[\s=]+(?!-)\S++)?){0,8}?"
#: GitLab's CLI setting a CI/CD variable (``set``, or ``update`` of one that exists)
_GLAB_SET = r"glab\s+variable\s+(?:set|update)"
#: netlify env:set's ``--secret``, a flag that takes no value and says the value set is a secret
#: whatever its name (``netlify env:set --secret KEY 'a b'``, ``… KEY X --secret``): the
#: command, its options (``--secret`` one of no value), then the name: what the flags' rule
#: keeps before the value (:data:`otelbridge.secrets.DEFAULT_PATTERNS`' ``--secret X`` would
#: take the name for it)
NETLIFY_SECRET_NAME = (r"\bnetlify(?:-cli)?[ \t]++env:set(?=[^\n|;&]{0,300}?[ \t]--secret(?![\w-]))"
                       r"(?:[ \t]++(?:--secret(?![\w-])|-{1,2}+(?!secret(?![\w-]))\w[\w-]*+(?:[ \t=]++(?!-)\S++)?)){0,8}?"
                       r"[ \t]++(?!-)[\w.-]++[ \t]++")
#: A command that sets a named value: aws configure set aws_secret_access_key X, npm [config]
#: set //host/:_authToken X, poetry config pypi-token.pypi X, fish's set -x DB_PASSWORD X,
#: setx API_KEY X, git config --global github.token X, netlify env:set API_KEY X, launchctl
#: setenv API_TOKEN X, cf set-env APP DB_PASSWORD X, travis env set API_KEY X, glab variable set
#: API_TOKEN X (or its --value X, after other options); gh secret
#: set NAME --body X, -bX (whatever the name); not a variable's reference (--body "$TOKEN"),
#: which holds no value. The needles take the command's words one space apart, as they are
#: written (the regex takes any spaces). One of :data:`otelbridge.secrets.DEFAULT_PATTERNS`,
#: after the programs' flags.
NAMED_VALUE = Pattern.of(
    "secret",
    ("configure set", "config set", "user-secrets set", "poetry config", "setx", "set -",
     "secret set", "git config", "env:set", "npm set", "env set", "setenv", "set-env", "variable set",
     "variable update"),
    r"(?P<keep>\b(?:(?:(?:aws\s+configure|(?:npm|pnpm|yarn)\s+config|npm|dotnet\s+user-secrets|travis\s+env)\s+set"
    r"|poetry\s+config|setx|set(?:\s+-[a-zA-Z]+)+|launchctl\s+setenv|cf\s+set-env\s+\S+"
    r"|git\s+config(?:\s+(?:set|--(?:global|system|local|worktree|add|replace-all)|(?:-f|--file)[\s=]+\S+))*"
    r"|(?:netlify(?:-cli)?\s+env:set|" + _GLAB_SET + ")" + _OPTIONS + r")\s+(?!-)[\w./:@-]*?" + _SECRET_KEY + r"\s+"
    r"|" + _GLAB_SET + _OPTIONS + r"\s+(?<![\w.-])" + _SECRET_WORD_IN + _OPTIONS + r"\s+(?:--value|-v)(?:\s+|=)"
    r"|" + _then(r"gh\s+secret\s+set", r"(?:--body(?:\s+|=)|-b(?:\s+|=)?)") + r"))(?!-)(?!\[REDACTED:)"
    + _NOT_A_PLACEHOLDER + _ARG,
    precheck=r"\b(?:set(?:x|\s+-[a-zA-Z]+)|config(?:ure)?\s+set|user-secrets\s+set|poetry\s+config"
    r"|secret\s+set|git\s+config|env:set|npm\s+set|env\s+set|setenv|set-env|variable\s+(?:set|update))\s",
)

#: In the order they apply, after the key rules and the programs' flags of
#: :data:`otelbridge.secrets.DEFAULT_PATTERNS`.
TOOL_PATTERNS: tuple[Pattern, ...] = (
    # Redis: AUTH [user] X at a line's start, after a quote (echo "AUTH x" | redis-cli, printf
    # 'AUTH x\r\n' | nc) or redis-cli's prompt (127.0.0.1:6379> auth x), elsewhere when X holds a
    # digit: up to 2 words to the line's end, the last one the password (not SMTP's AUTH LOGIN)
    Pattern.of(
        "secret",
        ("auth ", "auth\t"),
        r"(?P<keep>(?:(?P<ls>" + _LINE_START + r"|(?<=[\"']))[ \t]*AUTH|(?<=[\d\]]> )(?P<p>(?i:auth))|" + _WORD_START + r"AUTH)"
        r"[ \t]+(?:[^\s\"'\\<>]+[ \t]+)?)(?!(?i:login|plain|ok|failed|required)\b)(?(ls)|(?(p)|(?=[^\s\"'\\<>]*\d)))"
        r"(?!\[REDACTED:)[^\s\"'\\<>]+(?=[^\S\r\n]*(?:\r?\n|\\+[rn]|\Z|\\*[\"']))",
        precheck=r"AUTH[ \t]|> (?i:auth)[ \t]",
    ),
    # ... requirepass/masterauth X (redis.conf, CONFIG SET, redis-server --requirepass X); ACL
    # SETUSER NAME ... >X (a password added, <X removed), as an ACL file's user NAME on ... >X
    Pattern.of("secret", ("requirepass", "masterauth"),
               r"(?P<keep>" + _WORD_START + r"(?:--)?(?i:requirepass|masterauth)[ \t]+)(?!-)(?!\[REDACTED:)" + _ARG_IN_LINE),
    Pattern.of(
        "secret",
        ("setuser", "user "),
        r"(?P<keep>(?:" + _WORD_START + r"(?i:acl[ \t]+setuser)[ \t]+\S+|" + _WORD_START + r"user[ \t]+\S+[ \t]+(?:on|off|reset)\b)"
        r"(?:[ \t]+(?:(?![<>])\S+|[<>]\[REDACTED:\w+\]))*?[ \t]+[<>])(?!\[REDACTED:)[^\s\"'\\]+",
        requires=((">", "<"),), passes=3,
        precheck=r"(?i:setuser)|user[ \t]+\S+[ \t]+(?:on|off|reset)\b",
    ),
    # Windows: net use [X:] \\server\share X [/user:D\u] (the password before or after the
    # options), net user NAME X [/add] (not * (a prompt), not an option)
    Pattern.of(
        "secret",
        ("net use", "net user"),
        r"(?P<keep>" + _WORD_START + r"(?i:net)[ \t]+(?:(?i:use)[ \t]+(?:(?:[A-Za-z]:|\*)[ \t]+)?"
        r"(?:(?P<uq>\\*[\"'])\\{2,}(?:(?!(?P=uq))[^\r\n])+(?P=uq)|\\{2,}[^\s\"']+)"
        r"|(?i:user)[ \t]+(?:/\S+[ \t]+)*(?:\\*[\"'][^\"'\r\n]+\\*[\"']|[^\s/\"'\\]+))(?:[ \t]+/\S+)*[ \t]+)"
        r"(?![/*])(?!\[REDACTED:)" + _ARG,
    ),
    # every value of a command that stores secrets: vault kv put PATH K=X ..., fly secrets set
    # K=X ..., doppler/supabase/railway secrets set K=X (not vault's K=@file)
    Pattern.of(
        "secret",
        ("kv put", "kv patch", "secrets set"),
        r"(?P<keep>" + _WORD_START + r"(?:vault\s+kv\s+(?:put|patch)(?:\s+-\S+)*\s+\S+|(?:fly|flyctl|doppler|supabase|railway)\s+secrets\s+set)"
        r"(?:[ \t]+(?:-\S+(?:[ \t]+(?![-\w.]*=)[^\s-]\S*)?|[^\s=]+=(?:\[REDACTED:\w+\]|'[^'\r\n]*'|\"(?:[^\"\\\r\n]|\\.)*\"|"
        + _WORD + r")))*?"
        r"[ \t]+[^\s=-][^\s=]*=)(?!\[REDACTED:)(?![@-])" + _ARG_IN_LINE,
        requires=(("=",),), passes=8,
    ),
    # HTTPie: http [6 words at most] -a user:X, https --auth user:X (its own pattern: "http" is
    # in every URL)
    Pattern.of("secret", ("http",),
               r"(?P<keep>" + _WORD_START + r"https?[ \t]++(?:[^\s|;&]++[ \t]++){0,6}?(?:-a[ \t]*+|--auth(?:[ \t]++|=))[^\s:\"'\\]+:)"
               r"(?!\[REDACTED:)" + _ARG_IN_LINE,
               requires=(("-a", "--auth"),), precheck=r"https?[ \t]"),
    # ... and its (and xh's) query parameter of a secret's name: http GET URL api_key==X
    Pattern.of("secret", ("http", "xh"),
               r"(?P<keep>" + _WORD_START + r"(?:https?|xhs?)[ \t]++(?:[^\s|;&]++[ \t]++){0,12}?(?<![\w.-])" + _SECRET_WORD_IN
               + r"==)(?!\[REDACTED:)" + _ARG_IN_LINE,
               requires=(("==",),), passes=3, precheck=r"(?:https?|xhs?)[ \t]"),
    # a token as a login's argument: cargo login X, wandb login X, ngrok [config add-]authtoken
    # X, snyk auth X, nuget setapikey X (a token's shape: 16 characters or more, a digit; not prose)
    Pattern.of(
        "secret",
        ("cargo login", "wandb login", "authtoken", "snyk auth", "setapikey"),
        r"(?P<keep>" + _WORD_START + r"(?:(?:cargo|wandb)[ \t]+login|ngrok[ \t]+(?:config[ \t]+add-)?authtoken|snyk[ \t]+auth"
        r"|nuget[ \t]+setapikey)[ \t]+"
        r"(?P<q>\\*[\"'])?)(?!\[REDACTED:)(?=[\w.-]*\d)[\w.-]{16,}+(?(q)(?=(?P=q))|(?=[\s;&|)\"']|\\+[nrt\"']|\Z))",
    ),
    # Poetry's credentials for a repository: poetry config http-basic.REPO USER X
    Pattern.of("secret", ("http-basic.",), r"(?P<keep>\bpoetry[ \t]+config[ \t]+http-basic\.[\w.-]+[ \t]+[^\s\"']+"
               r"[ \t]+)(?!\[REDACTED:)(?!-)[^\s\"'\\;&|]+"),
    # aws configure's prompt and the answer typed after it: AWS Secret Access Key [****]: X
    Pattern.of("aws_secret_key", ("secret access key [",),
               r"(?P<keep>" + _WORD_START + r"AWS Secret Access Key \[[^\]\r\n]{0,40}\]:[ \t]*)(?!\[REDACTED:)[^\s\"'\\]+"),
    # session cookies by their names: JSESSIONID=X, PHPSESSID: X, {'sessionid': 'X'},
    # ASP.NET_SessionId, connect.sid, laravel_session, Rails' _app_session
    Pattern.of("secret", ("sessid", "sessionid", "connect.sid", "_session"),
               _key_value(r"(?:(?<![\w.-])|(?<=\\[nrt]))(?:JSESSIONID|PHPSESSID|ASPSESSIONID\w*|ASP\.NET_SessionId|connect\.sid"
                          r"|laravel_session|sessionid|_[a-z0-9]+_session)(?![\w.-])"),
               requires=((":", "="),)),
    # minio's mc alias set NAME URL ACCESS_KEY X (also mc config host add)
    Pattern.of("secret", ("mc alias", "mc config"),
               r"(?P<keep>" + _WORD_START + r"mc\s+(?:alias\s+set|config\s+host\s+add)\s+\S+\s+\S+\s+\S+\s+)(?!-)(?!\[REDACTED:)"
               + _ARG_IN_LINE),
    # a password hashed on the command line: openssl passwd [-6] [-salt S] X, mkpasswd [-m M] X;
    # a here-string to a program that reads a password: passwd/smbpasswd/vncpasswd/chpasswd
    # <<< X, sudo -S ... <<< X, docker login --password-stdin <<< X, gh auth --with-token <<< X,
    # gpg --passphrase-fd 0 ... <<< X, a secret store's put or set (wrangler secret put K <<< X,
    # firebase functions:secrets:set K <<< X, vercel env add K production <<< X)
    Pattern.of(
        "secret",
        ("passwd", "<<<"),
        r"(?P<keep>(?:" + _WORD_START + r"openssl\s+passwd(?:\s+-(?:salt|in)\s+\S+|\s+-\S+)*+\s+"
        r"|" + _WORD_START + r"mkpasswd(?:\s+-(?:m|S|R|-method|-salt|-rounds)(?:\s+|=)\S+|\s+-\S+)*+\s+"
        r"|(?:\b(?:smb|vnc|ch)?passwd\b|\bsudo\s+(?:[^\n|;&<]*?\s)?-[a-zA-Z]*S\b|--(?:password-stdin|with-token|stdin)\b"
        r"|--passphrase-fd[ \t]++0\b|\b(?:secrets?[ \t:]++(?:put|set|create)|secrets[ \t]++versions[ \t]++add|env[ \t]++add)\b)"
        r"[^\n|;&<]{0,200}?<<<[ \t]*))"
        r"(?![-(])(?!\$[\w{(])(?!\[REDACTED:)(?:\$'(?:[^'\\\r\n]|\\.)*'|" + _ARG_IN_LINE + ")",
    ),
    # rclone config create|update NAME TYPE KEY VALUE ...: the value of a key naming a secret
    # (pass, secret_access_key, client_secret; token {"access_token": ...} whole), not a boolean
    Pattern.of(
        "secret",
        ("rclone",),
        r"(?P<keep>" + _then(r"rclone[ \t]++config[ \t]++(?:create|update)", r"(?<![\w.-])" + _SECRET_WORD_IN + r"[ \t]++")
        + r")(?!-|(?i:true|false)(?![\w.-]))(?!\[REDACTED:)(?:\{[^\r\n]*\}(?=[ \t]|\\[nrt]|\Z)|" + _ARG_IN_LINE + ")",
    ),
    # jq's variable named for a secret, given its value: jq --arg token X, --argjson secret
    # '"X"' (not --arg key X, an object's key; nor a variable's reference: --arg pw "$PW")
    Pattern.of(
        "secret",
        ("--arg",),
        r"(?P<keep>" + _then(r"(?:go)?jq", r"--arg(?:json)?[ \t]++(?<![\w.-])" + _SECRET_WORD_IN + r"[ \t]++")
        + r")(?!-)(?!\[REDACTED:)" + _NOT_A_PLACEHOLDER + _ARG,
        requires=(("jq",),), passes=3,
    ),
    # a value given by --value to a name (--name, --key) that names a secret, in the same
    # command, either first: az pipelines variable create --name DB_PASSWORD --value X, eas
    # env:create --value X --name API_KEY, az appconfig kv set --key DbPassword --value X
    Pattern.of(
        "secret",
        ("--value",),
        r"(?P<keep>(?:" + _NAME_OPTION + r"(?:[ \t]++(?!--value\b)" + _OPTION_WORD + r"){0,12}?[ \t]++|(?P<vf>))"
        r"(?<![\w-])--value(?:[ \t]++|=))(?!-)(?!\[REDACTED:)" + _NOT_A_PLACEHOLDER + _ARG_IN_LINE
        + r"(?(vf)(?=(?:[ \t]++" + _OPTION_WORD + r"){0,12}?[ \t]++" + _NAME_OPTION + "))",
        requires=(("--name", "--key"),),
    ),
    # the string ansible-vault encrypt_string is given to encrypt ('X' --name db_password,
    # --vault-id prod@prompt X): the first word that is no option nor an option's value, before
    # another option, a redirection, another command or the line's end (not a next line's word
    # on a line joined to it)
    Pattern.of(
        "secret",
        ("encrypt_string",),
        r"(?P<keep>" + _WORD_START + r"ansible-vault[ \t]+encrypt_string(?:[ \t]+(?:" + _VAULT_OPTION + r"(?:=|[ \t]+)"
        + r"(?!\[REDACTED:)(?:'[^'\r\n]*'|\"[^\"\r\n]*\"|" + _WORD + r")|(?!" + _VAULT_OPTION + r"(?![\w-]))-[\w-]+(?:="
        + _WORD + r")?))*?[ \t]+)(?![-<>|&;#]|\d*>)(?!\[REDACTED:)" + _NOT_A_PLACEHOLDER + _ARG_IN_LINE
        + r"(?=[ \t]+-|[ \t]*(?:[|;&<>)#]|\d*>|\r?\n|\\+[nrt]|\\*[\"']|\Z))",
    ),
    # a word written into a file named for a secret, its last word one (.vault_pass, db_password,
    # api_key.txt, token; not /etc/passwd, token_count.txt, secrets.md, password.html): echo 'X'
    # > ~/.vault_pass, printf '%s\n' X >> "$HOME/.secrets/db_password", echo X | sudo -u app tee
    # -a /etc/app/token (not a variable, nor words: a message)
    Pattern.of(
        "secret",
        ("echo", "printf"),
        r"(?P<keep>" + _WORD_START + r"(?:echo[ \t]++(?:-[neE]{1,3}[ \t]++)?|printf[ \t]++(?:(?P<fq>\\*[\"']?)%s(?:\\+n)?(?P=fq)[ \t]++)?)"
        r"(?P<q>\\*[\"'])?)(?![-$])(?!\[REDACTED:)"
        r"(?(q)(?:(?!(?P=q))[^\s\\])++(?=(?:\\\\?n)?(?P=q))|[^\s\"'\\;&|<>]++)"
        r"(?=(?:(?:\\\\?n)?(?P=q))?[ \t]*+(?:>>?|\|[ \t]*+(?:sudo(?:[ \t]++-[a-zA-Z](?:[ \t]++\w++)?)*+[ \t]++)?tee"
        r"(?:[ \t]++-{1,2}[a-z]++)?)[ \t]*+\\*[\"']?[\w~./${}-]*?"
        r"(?<![A-Za-z0-9])(?i:pass(?:word|phrase)?|secret|token|credentials|api_?key)(?:\.txt)?"
        r"(?=[\s\"';&|)]|\\[nrt\"]|\Z))",
        requires=((">", "tee"),),
    ),
    # a password or secret as a call's third argument: mysql_connect/mysqli/PDO(host or DSN,
    # user, X), JDBC's DriverManager.getConnection(url, user, X), Sequelize(db, user, X),
    # Azure's [New]ClientSecretCredential(tenant, client, X), MongoCredential.createCredential(user,
    # db, X), Go's smtp.PlainAuth(identity, user, X, host)
    Pattern.of(
        "secret",
        ("connect(", "mysqli(", "pdo(", "getconnection(", "sequelize(", "clientsecretcredential(", "credential(",
         "plainauth("),
        r"(?P<keep>\b(?:mysqli?_connect|mysqli|PDO|getConnection|Sequelize|(?:New)?ClientSecretCredential|PlainAuth"
        r"|create(?:ScramSha(?:1|256)|Plain|MongoCR)?Credential)\((?:[ \t]*(?:(?P<aq>\\*[\"'])(?:(?!(?P=aq))[^\r\n])*"
        r"(?P=aq)|[$\w.\[\]>-]{1,60}+)[ \t]*,){2}[ \t]*(?P<vq>\\*[\"']))(?!\[REDACTED:)(?:(?!(?<!\\)(?P=vq))[^\r\n])+(?=(?P=vq))",
    ),
    # ODBC's Pwd={X} (braces let a password hold ; and =; not a template's {{ name }}; at most
    # 256 characters: no rescan to the text's end from each unclosed brace)
    Pattern.of("secret", ("pwd={", "password={"),
               r"(?P<keep>(?<![\w.-])(?i:pwd|password)=\{)(?!\{[ \t]*+(?:[.$][A-Za-z_]|[a-z_])[\w.| -]{0,100}\}\})(?!\[REDACTED:)[^}\r\n]{1,256}+(?=\})"),
    # user:X made into a Basic credential: btoa('u:X'), Buffer.from('u:X'), b64encode(b'u:X'),
    # echo -n 'u:X' | base64
    Pattern.of(
        "secret",
        ("btoa(", "buffer.from(", "b64encode(", "base64"),
        r"(?P<keep>(?:\b(?:btoa|Buffer\.from|b64encode)\([ \t]*b?(?P<q>\\*[\"'`])"
        r"|" + _WORD_START + r"echo[ \t]+(?:-n[ \t]+)?(?P<eq>\\*[\"']?))"
        r"(?![\w.-]*://)(?:\[REDACTED:\w++\]|(?!\[REDACTED:)[^\s:\"'`\\$]{1,64}):)(?!\[REDACTED:)[^\s\"'`\\]+"
        r"(?=(?(q)(?P=q)|(?P=eq)[ \t]*\|[ \t]*base64\b))",
    ),
    # pulumi config set --secret NAME X (or --secret after): the value (the name is the flag's)
    Pattern.of(
        "secret",
        ("pulumi config set",),
        r"(?P<keep>" + _WORD_START + r"pulumi\s+config\s+set\b(?=[^\n|;&]*\s--secret\b)(?:\s+-\S+)*\s+"
        r"(?:\[REDACTED:\w+\]|[^\s-]\S*)\s+)"
        r"(?!-)(?!\[REDACTED:)" + _ARG_IN_LINE,
    ),
    # a wallet's recovery phrase after its name: mnemonic: w1 ... w12, SEED_PHRASE="w1 ... w24"
    # (12 to 24 words of 3 to 8 lower-case letters, as BIP-39's)
    Pattern.of("secret", ("mnemonic", "phrase"),
               r"(?P<keep>(?<![\w.-])(?i:mnemonic|(?:seed|recovery|secret)[_ .-]?phrase)\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?)"
               r"(?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8}\b"),
    # Go's MySQL DSN: user:X@tcp(host:port)/db, user:X@unix(/path)/db
    Pattern.of("url_credentials", ("@tcp(", "@unix("),
               r"(?P<keep>(?<![\w.:/@-])[\w.-]+:)(?!\[REDACTED:)[^\s@/\"'\\]+(?=@(?:tcp|unix)\()"),
    # Oracle's user/X@db: sqlplus, expdp/impdp, sqlldr, rman target=, dgmgrl (not / as sysdba)
    Pattern.of("secret", ("sqlplus", "expdp", "impdp", "sqlldr", "rman", "dgmgrl"),
               r"(?P<keep>" + _WORD_START + r"(?:sqlplus|expdp|impdp|sqlldr|rman|dgmgrl)\b(?:\s+-\w+)*\s+"
               r"(?:(?i:userid|target)=)?[\w$#.]+/)"
               r"(?!\[REDACTED:)(?![/\s])[^\s@/\"'\\]+"),
    # a crypt(3) password hash: /etc/shadow, .htpasswd, a seed file ($6$salt$hash, $2b$12$...)
    Pattern.of("password_hash", ("$1$", "$2a$", "$2b$", "$2y$", "$5$", "$6$", "$y$", "$gy$", "$7$", "$apr1$", "$argon2"),
               r"(?<![\w$])\$(?:1|2[abxy]|5|6|y|gy|7|apr1|argon2(?:id|i|d))\$[./\w$=,+-]{16,}"),
    # a Netscape cookie file's line (curl -c, wget --save-cookies): the value after its name
    Pattern.of("secret", ("true", "false"),
               r"(?P<keep>(?:TRUE|FALSE)(?:\t|\\t)[^\t\r\n\\]*(?:\t|\\t)(?:TRUE|FALSE)(?:\t|\\t)\d+(?:\t|\\t)"
               r"[^\t\r\n\\]+(?:\t|\\t))(?!\[REDACTED:)[^\t\r\n\\]+",
               requires=(("\t", "\\t"),), precheck=r"(?:TRUE|FALSE)(?:\t|\\t)"),
    # Wi-Fi passphrases: wpa_supplicant's psk="X", ifupdown's wpa-psk X, wpa_passphrase SSID X
    Pattern.of("secret", ("psk",), _key_value(r"(?:(?<![\w.-])|(?<=\\[nrt]))(?:wpa-|wifi-sec\.)?psk"), requires=(("=", ":"),)),
    Pattern.of("secret", ("wpa-psk", "wpa_passphrase"),
               r"(?P<keep>(?:(?:(?<![\w.-])|(?<=\\[nrt]))wpa-psk"
               r"|\bwpa_passphrase[ \t]+(?:'[^'\r\n]*'|(?P<sq>\\*\")[^\"\r\n]*(?P=sq)|[^\s\"']+))[ \t]+)"
               r"(?!\[REDACTED:)" + _ARG_IN_LINE),
    # a Kubernetes Secret's values whatever their names, as kubectl get secret -o yaml/json shows
    # them (data: before kind: Secret, at most 100 lines on) ...
    Pattern.of(
        "secret",
        ("secret",),
        # (base64 of a value has a capital, a digit, + or /: not "enabled" in a values map)
        r"(?P<keep>" + _NL_READ + r"(?P<i>[ \t]+)[\w.-]+:[ \t]+)(?!\[REDACTED:)(?=[a-z]*+[A-Z0-9+/])[A-Za-z0-9+/]{2,}={0,2}"
        r"(?=[ \t]*(?:" + _NL_READ + r"(?:(?P=i)[\w.-]+:[ \t]+" + _B64_OR_MARK + r"|[ \t]*#[^\r\n\\]*+)[ \t]*){0,100}+" + _NL_READ
        + r"[ \t]*+kind:[ \t]*Secret\b)",
        requires=(("kind:",),), precheck=r"(?:\n|\\n|\u2192|\t)[ \t]*kind:[ \t]*Secret\b",
    ),
    Pattern.of(
        "secret",
        ("secret",),
        r"(?P<keep>(?P<q>\\*\")[\w.-]+(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK + r"(?P=q))(?!\[REDACTED:)[A-Za-z0-9+/]{2,}={0,2}"
        r"(?=(?P=q)(?:" + _JSON_BLANK + "," + _JSON_BLANK + r"(?P=q)[\w.-]+(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK
        + r"(?P=q)" + _B64_OR_MARK + r"(?P=q)){0,100}+" + _JSON_BLANK + r"\}" + _JSON_BLANK + "," + _JSON_BLANK
        + r"(?P=q)kind(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK + r"(?P=q)Secret(?P=q))",
        requires=(("kind",),), precheck=r"kind\\*\"(?:\s|\\[nrt])*:(?:\s|\\[nrt])*\\*\"Secret",
    ),
    # ... and kind: Secret before data: as JSON (kubectl create secret --dry-run -o json): from
    # the first value to the last, whole (its keys with it); the members between kind and data
    # nested three levels deep at most (metadata's labels)
    Pattern.of(
        "secret",
        ("secret",),
        r"(?P<keep>(?P<q>\\*\")kind(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK + r"(?P=q)Secret(?P=q)"
        r"(?:(?!(?P=q)kind(?P=q))[^{}]|\{(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*\}){0,3000}?"
        r"(?P=q)(?:stringData|data)(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK + r"\{" + _JSON_BLANK + r"(?P=q)[\w.-]+(?P=q)"
        + _JSON_BLANK + ":" + _JSON_BLANK + r"(?P=q))(?!\[REDACTED:)" + _string_text("q", "+") + r"(?:(?P=q)"
        + _JSON_BLANK + "," + _JSON_BLANK + r"(?P=q)[\w.-]+(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK + r"(?P=q)" + _string_text("q") + ")*+",
        requires=(("kind",),), precheck=r"kind\\*\"(?:\s|\\[nrt])*:(?:\s|\\[nrt])*\\*\"Secret",
    ),
    # ... and as a manifest writes them (kind: Secret, then data: or stringData: within 40
    # lines of the same document): one value a pass, to its line's end or closing quote; a
    # block scalar's lines one by one
    Pattern.of(
        "secret",
        ("secret",),
        r"(?P<keep>" + _LINE_START + r"kind:[ \t]*Secret[ \t]*(?:" + _NL_READ + r"(?!---|kind:)" + _ANY_LINE + r"){0,40}?"
        + _NL_READ + r"(?:stringData|data):[ \t]*(?:" + _NL_READ + r"[ \t]+" + _ANY_LINE + r")*?" + _NL_READ
        + r"[ \t]++(?:[\w.-]+:[ \t]+|(?![\w.-]+:)))(?!\[REDACTED:)(?![|>][-+0-9]*[ \t]*(?:$|" + _NL + r"))"
        r"(?:(?P<vq>\\*[\"'])(?:(?!(?P=vq))[^\r\n])+(?P=vq)|(?:[^\r\n\"'\\]++|" + _INNER_QUOTE + r"|\\++(?![nrt\"'\\]))+)",
        requires=(("kind:",), ("ata:",)), precheck=r"(?:\A|\n|\\n|\u2192)kind:[ \t]*Secret\b", passes=30,
    ),
    # text typed into a field whose description or selector names a secret (Playwright MCP's
    # browser_type: {"element": "Password textbox", "ref": "e12", "text": "X"}; a browser
    # tool's {"selector": "#password", "value": "X"}), up to 3 members between
    Pattern.of(
        "secret",
        ("element", "selector", "locator"),
        r"(?P<keep>" + _FIELD + _MEMBERS + r"(?P=q)(?:text|value)(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK
        + r"(?P=q))(?!\[REDACTED:)" + _FIELD_TEXT,
        requires=(("text", "value"),),
    ),
    # ... the text first: {"value": "X", "selector": "#password"}
    Pattern.of(
        "secret",
        ("element", "selector", "locator"),
        r"(?P<keep>(?P<q>\\*\")(?:text|value)(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK + r"(?P=q))(?!\[REDACTED:)"
        + _FIELD_TEXT + r"(?=(?P=q)" + _MEMBERS + _FIELD.replace(r"(?P<q>\\*\")", "(?P=q)") + ")",
        requires=(("text", "value"),),
    ),
    # ... and in code: page.fill('#password', 'X'), page.type('#pw', 'X')
    Pattern.of(
        "secret",
        ("fill(", "type("),
        r"(?P<keep>\.(?:fill|type)\([ \t]*" + _FIELD_NAMED + r"[ \t]*,[ \t]*(?P<vq>\\*[\"'`]))(?!\[REDACTED:)"
        + _TYPED_TEXT,
        requires=(_FIELD_WORDS,),
    ),
    # ... a field found, then filled: getByLabel('Password').fill('X'), cy.get('#password')
    # .type('X'), find_element(By.ID, "password").send_keys("X"), $('#pw').setValue('X')
    Pattern.of(
        "secret",
        ("fill(", "type(", "send_keys(", "sendkeys(", "setvalue(", "addvalue(", "presssequentially("),
        r"(?P<keep>" + _FIELD_NAMED + r"[^;\r\n]{0,100}?\)[ \t]*(?:\.\w+\([^()\r\n;]{0,60}\)[ \t]*){0,3}"
        r"\.(?:fill|type|send_keys|sendKeys|setValue|addValue|pressSequentially)\([ \t]*(?P<vq>\\*[\"'`]))(?!\[REDACTED:)"
        + _TYPED_TEXT,
        requires=(_FIELD_WORDS,),
    ),
    # a JSON Web Key's private members (d, p, q, dp, dq, qi; k: a symmetric key) in a document
    # that has a "kty": base64url of 16 characters or more
    Pattern.of("private_key", ("kty",),
               r"(?P<keep>(?P<q>\\*\")(?:d|p|q|dp|dq|qi|k)(?P=q)" + _JSON_BLANK + ":" + _JSON_BLANK + r"(?P=q))"
               r"(?!\[REDACTED:)[A-Za-z0-9_-]{16,}+(?=(?P=q))",
               requires=(("kty",),)),
)
