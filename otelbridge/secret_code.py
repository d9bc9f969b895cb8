"""Secrets written into code, as an agent writes and reads it: signing keys given to a library's
call (:data:`SIGNING_KEY`), a secret compared or asserted equal to a literal (:data:`COMPARED`),
and :data:`CODE_PATTERNS` — a setter, a builder or a user factory given one (``setPassword("X")``,
``create_superuser("u", "e", "X")``), a password hashed from a literal, a literal fallback
after code, an HTML password input's value, a web server's header, a framework's secret, a
Terraform variable's default; :mod:`otelbridge.secrets` applies them among its own patterns."""

from __future__ import annotations

from .secret_keys import (_ENDS_IN_KEY_WORD, _KEY_NEEDLES, _SECRET_WORD, _SECRET_WORD_IN, _WORD_START,
                          _string_text)
from .secret_patterns import Pattern

#: An argument of a call before the one wanted: a literal, a call's or an object's text, or a
#: name or expression without a comma (on lines of its own too: a formatter's layout)
_CALL_ARG = (r"(?:\{[^{}]*+\}|\([^()]*+\)|\\*[\"'][^\"'\r\n]*+\\*[\"']"
             r"|[^()\"'`,{}]++)*+,")
#: Blanks, also line ends (real or escaped) between a call's arguments
_ARG_GAP = r"(?:\s|\\[nrt])*+"
#: A call whose next argument, a string literal, is a signing key, up to that literal (its
#: ``b`` and quote excluded): Node's ``jwt.sign(payload, 'X')`` and ``crypto.createHmac('sha256',
#: 'X')`` (also of ``Buffer.from('X')``), PyJWT's ``jwt.encode(p, "X")`` and ``key="X"``, Ruby's
#: ``JWT.encode(p, 'X')`` and ``OpenSSL::HMAC.hexdigest('SHA256', 'X', data)``, PHP's
#: ``JWT::encode($p, 'X', 'HS256')``, ``new Key('X', 'HS256')`` and ``hash_hmac('sha256',
#: $data, 'X')``, Python's ``hmac.new(b'X')``/``hmac.new(key=b'X')``, Go's
#: ``SignedString([]byte("X"))``, ``hmac.New(sha256.New, []byte("X"))``, ``jwtKey =
#: []byte("X")``/``SigningKey: []byte("X")`` (a key named for signing, not ``cacheKey``) and a
#: ``jwt.Parse`` key function's ``return []byte("X"), nil``, Java's ``Algorithm.HMAC256("X")``,
#: ``Keys.hmacShaKeyFor("X".getBytes())`` (also of ``Decoders.BASE64.decode("X")``),
#: ``signWith(…HS256, "X")``, ``setSigningKey("X")``, ``new SecretKeySpec("X".getBytes(), …)``
#: (Kotlin's without ``new``), Rust's ``EncodingKey::from_secret(b"X")``,
#: ``from_base64_secret("X")`` and ``HmacSha256::new_from_slice(b"X")``, C#'s
#: ``SymmetricSecurityKey(Encoding.UTF8.GetBytes("X"))``,
#: python-jose's ``jws.sign(p, "X")``, itsdangerous' ``URLSafeTimedSerializer("X")``, Express's
#: ``cookieParser("X")``, jose's ``.sign(new TextEncoder().encode("X"))``, Elixir's
#: ``Joken.Signer.create("HS256", "X")`` and ``:crypto.mac(:hmac, :sha256, "X", data)``; and a
#: client's key or password as its one literal: Azure's ``AzureKeyCredential("X")``, Go's
#: ``ssh.Password("X")``, Rust's ``.bearer_auth("X")``
_SIGNING_KEY_CALL = (
    r"(?:" + _WORD_START + r"(?<!\$)(?i:jwt|jws)(?:\.|::)(?:sign|encode|verify|decode)\(" + _CALL_ARG
    + r"|createHmac\(" + _ARG_GAP + r"\\*[\"'][\w-]++\\*[\"'],(?:" + _ARG_GAP + r"Buffer\.from\()?"
    + r"|" + _WORD_START + r"hmac\.new\("
    + r"|OpenSSL::HMAC\.\w+\(" + _ARG_GAP + r"\\*[\"'][\w-]++\\*[\"'],"
    + r"|" + _WORD_START + r"hash_hmac\(" + _ARG_GAP + r"\\*[\"'][\w-]++\\*[\"'],[^,()]++,"
    + r"|" + _WORD_START + r"new[ \t]++Key\((?=[ \t]*+\\*[\"'][^\"'\r\n]{1,400}?\\*[\"'],[ \t]*+\\*[\"']HS(?:256|384|512)\\*[\"'])"
    + r"|(?:SignedString\(" + _ARG_GAP + r"|" + _WORD_START + r"hmac\.New\(" + _ARG_GAP + r"[\w.]++" + _ARG_GAP + ","
    + _ARG_GAP + r"|" + _WORD_START + r"(?i:\w*?(?:secret|(?:jwt|signing|hmac|mac|sign"
    r"|private|encryption|crypt|secret)_?key))[ \t]*+(?::=?|=)[ \t]*+"
    r"|jwt\.Token\)[^\r\n]{0,100}?\{" + _ARG_GAP + r"return[ \t]++)\[\]byte\([ \t]*+"
    + r"|Algorithm\.HMAC(?:256|384|512)\(|Keys\.hmacShaKeyFor\((?:Decoders\.BASE64(?:URL)?\.decode\()?"
    + r"|setSigningKey\(|signWith\([\w.]*?HS(?:256|384|512),|(?<![\w.])(?:new[ \t]++)?SecretKeySpec\("
    + r"|(?:Encoding|Decoding)Key::from_(?:base64_)?secret\(&?|::new_from_slice\(&?"
    + r"|SymmetricSecurityKey\((?:System\.Text\.)?Encoding\.\w+\.GetBytes\("
    + r"|Signer\.create\(" + _ARG_GAP + r"\\*\"HS(?:256|384|512)\\*\"," + r"|:crypto\.mac\(:hmac,[ \t]*+:\w+,"
    + r"|\.sign\(new[ \t]++TextEncoder\(\)\.encode\(|(?:URLSafe(?:Timed)?Serializer|TimestampSigner|cookieParser)\("
    + r"|(?<![\w.])(?:new[ \t]++)?Azure(?:Key|Sas)Credential\(|\bssh\.Password\(|\.bearer_auth\()"
    # a keyword's name, bytes(), a byte string's prefix
    + _ARG_GAP + r"(?:(?:key|secret)[ \t]*+=[ \t]*+)?(?:bytes\()?(?:[bB][rR]?|[rR][bB])?"
)

#: A signing key as a string literal, also JSON-escaped (:data:`_SIGNING_KEY_CALL`); not a key
#: passed as a name (``jwt.sign(p, secret)``). Applied before the key rules: a value that is such
#: a call is then code holding a marker, and stays (``token = jwt.encode(p, "[REDACTED:secret]")``).
SIGNING_KEY = Pattern.of(
    "secret",
    ("jwt", "jws", "hmac", "[]byte(", "_secret(", "new key(", "getbytes(", "signwith(",
     "setsigningkey(", "secretkeyspec(", "new_from_slice(", "signer.create(", "textencoder()",
     "serializer(", "timestampsigner(", "cookieparser(", "keycredential(", "sascredential(", "ssh.password(",
     "bearer_auth("),
    r"(?P<keep>" + _SIGNING_KEY_CALL + r"(?P<jq>\\*[\"'`]))(?!\[REDACTED:)"
    + _string_text("jq", "+") + r"(?=(?P=jq))",
    requires=(("(",),),
    # each call's head as a literal (a text that only names JWT or HMAC: 7x faster)
    precheck=r"(?i:jw[ts])(?:\.|::)(?:sign|encode|verify|decode)\(|createHmac\(|(?i:hmac)\.(?:new|New)\("
    r"|hash_hmac\(|OpenSSL::HMAC|new[ \t]+Key\(|SignedString\(|\[\]byte\(|Algorithm\.HMAC|hmacShaKeyFor\("
    r"|setSigningKey\(|signWith\(|SecretKeySpec\(|Key::from_|::new_from_slice\(|GetBytes\(|Signer\.create\("
    r"|:crypto\.mac\(|TextEncoder\(\)|Serializer\(|TimestampSigner\(|cookieParser\(|(?:Key|Sas)Credential\("
    r"|ssh\.Password\(|\.bearer_auth\(",
)

#: The key words of a compared secret, also its confirmation or its value (``passwordConfirm``,
#: ``password2``, ``tokenValue``): not a bare ``key`` or ``auth`` (``event.key === "Enter"``,
#: ``auth == "basic"``)
_COMPARED_WORD = (r"(?i:pass(?:word|wd|phrase|code)?|pwd|secret(?:_?key)?|token|credentials?|api_?key|private_?key"
                  r"|access_?key|client_?secret)(?:_?(?i:confirm(?:ation)?|repeat|again|value|2))?")
#: A name naming a password, secret, token, API key or credentials, as a segment of its own at
#: its end: dotted (``req.Password``, ``this.apiKey``, PHP's ``$user->password``), a variable
#: (``$db_password``, ``GITHUB_TOKEN``), a getter's call (``user.getPassword()``), a subscript
#: (``$_POST["password"]``, ``os.environ['API_TOKEN']``), an environment lookup
#: (``os.getenv("API_TOKEN")``, ``os.environ.get("DB_PASSWORD")``)
_COMPARED_NAME = (r"(?:(?:\$|" + _WORD_START + r")(?:[\w$]++(?:\??\.|->)(?![eE]quals|eql\?))*+(?:[\w$]*?(?:(?<=[_$])|(?<=[a-z])(?=[A-Z])))?"
                  + _COMPARED_WORD + r"(?![\w$])(?:\(\))?"
                  r"|(?<![\w$])(?:[\w$]++(?:\??\.[\w$]++)*+)?(?:\[|(?<=[.\w])(?:getenv|Getenv|get|GetEnvironmentVariable)\([ \t]*+)"
                  r"\\*[\"'](?:[\w-]*?[_-])?" + _COMPARED_WORD + r"\\*[\"'](?:\]|[ \t]*+\)))")
#: A test of equality: ``==``, ``!=``, ``===``, ``!==``, Perl's ``eq`` and ``ne``, Java's
#: ``.equals(``, C#'s ``.Equals(``, Ruby's ``.eql?(``; and, after the name only, a test
#: framework's ``).toBe(``, ``.toEqual(``, ``.isEqualTo(``, RSpec's ``).to eq(``, chai's
#: ``).to.equal(``, Hamcrest's ``, equalTo(``, NUnit's ``, Is.EqualTo(``, Kotest's ``shouldBe``
_EQUALITY = r"(?:[ \t]*+[!=]==?(?!=)[ \t]*+|[ \t]++(?:eq|ne)[ \t]++|\.(?:[eE]quals(?:IgnoreCase)?|eql\?)\([ \t]*+)"
_TEST = (r"(?:" + _EQUALITY + r"|\)\.(?:to(?:Be|Equal|StrictEqual)|isEqualTo|to\.(?:be\.)?(?:equal|eql))\([ \t]*+"
         r"|\)\.(?:not_)?to[ \t]++eq(?:\(|[ \t]++)[ \t]*+|[ \t]*+,[ \t]*+(?:is\([ \t]*+)?(?:equalTo|Is\.EqualTo)\([ \t]*+"
         r"|[ \t]++shouldBe[ \t]++)")
#: A call comparing its two arguments, to its first (after testify's ``t`` or JUnit 4's
#: message): a test framework's assertion (``assertEqual(``, ``assertEquals(``, ``assertSame(``,
#: ``Assert.AreEqual(``, xUnit's ``Assert.Equal(``, ``assert.strictEqual(``, testify's
#: ``assert.Equal(t,``, Rust's ``assert_eq!(``, ``XCTAssertEqual(``, Minitest's
#: ``assert_equal``), ``Objects.equals(``, ``strcmp(``, ``hmac.compare_digest(``, Go's
#: ``strings.EqualFold(``
_EQUAL_CALL = (r"(?<![\w.])(?:[\w.]*\.)?(?:assert(?:Equals?|NotEquals?|Same|NotSame)|(?:Assert\.)?Are(?:Not)?Equal"
               r"|(?:[aA]ssert|require)\.(?:[nN]ot)?(?:[sS]trict|[dD]eep(?:Strict)?)?[eE]qual|assert_(?:eq|ne)!|assert_equal"
               r"|XCTAssert(?:Not)?Equal|Objects\.equals|str(?:n|case|ncase)?cmp|compare_digest|EqualFold)"
               r"(?:\(|(?<=assert_equal)[ \t])[ \t]*+(?:t[ \t]*+,[ \t]*+|\\*\"[^\"\\\r\n]*+\\*\"[ \t]*+,[ \t]*+)?")
#: A shell's test of a quoted variable (``[ "$PASSWORD" = "X" ]``, ``!=``, ``==``)
_SHELL_TEST = (r"\\*\"\$\{?(?:\w*?_)?" + _COMPARED_WORD + r"\}?\\*\"[ \t]++(?:==?|!=)[ \t]++")
#: A literal that is a placeholder (a null or a boolean are tested by the rule)
_NO_LITERAL = r"(?!\$\{|\{\{|%[(s])"
#: A null or a boolean as a literal's whole text
_NULL_WORD = r"(?i:null|undefined|none|nil|true|false)"
#: Four characters of a string literal at least, before its closing quote (the group named):
#: a comparison with less is with a sentinel (``""``, ``"x"``, ``"-"``, ``"abc"``)
_FOUR = r"(?=(?:(?!(?P={0}))[^\r\n]){{4}})"
#: ... and shaped as a password may be: no blank (a message: "Password is required"), a letter
#: or a digit ("*****" is a mask), not bracketed ("[MASKED]", "<TOKEN>") nor a constant's name
#: ("REPLACE_ME", "PASSED")
_SHAPED = (r"(?!(?:(?!(?P={0}))[^\r\n])*?[ \t])(?=(?:(?!(?P={0}))[^\r\n])*?[A-Za-z0-9])(?![\[<])"
           r"(?![A-Z_]++(?P={0}))")
#: A password or token tested for equality with a string literal of four characters or more,
#: the literal (``if req.Password != "X"``, ``password === 'X'``, Java's
#: ``password.equals("X")``, ``expect(user.password).toBe("X")``, a shell's ``[ "$PASSWORD" =
#: "X" ]``, and the other way round: ``"X" == token``, ``"X".equals(password)``; a test's
#: assertion, ``assertEquals("X", user.getPassword())``, ``assertEqual(user.password, "X")``): a
#: credential written into the code
COMPARED = Pattern.of(
    "secret",
    ("pass", "pwd", "secret", "token", "credential", "key"),
    r"(?P<keep>(?:(?P<an>" + _EQUAL_CALL + r")?" + _COMPARED_NAME + r"(?(an)[ \t]*+,[ \t]*+|" + _TEST + r")|" + _SHELL_TEST
    + r")(?P<cq>\\*[\"'`])|(?:(?P<a>" + _EQUAL_CALL + r")|(?<![\w\\]))(?P<rq>\\*[\"']))"
    r"(?!\[REDACTED:)(?!" + _NULL_WORD + r"(?:(?P=cq)|(?P=rq)))"
    r"(?(cq)" + _NO_LITERAL + _FOUR.format("cq") + _SHAPED.format("cq") + _string_text("cq", "+") + r"(?=(?P=cq))"
    r"|" + _FOUR.format("rq") + _SHAPED.format("rq") + _string_text("rq", "+") + r"(?=(?P=rq)(?(a)[ \t]*+,[ \t]*+|" + _EQUALITY + r")"
    + _COMPARED_NAME + "))",
    requires=(("==", "!=", ".equals", ".eql?(", ".tobe(", ".toequal(", ".tostrictequal(", ".isequalto(", '" =', "equal(",
               "equals(", "assert_", " eq", " ne ", "cmp(", "_digest(", "equalfold(", "equalto(", "assertsame(",
               "assertnotsame(", ".eql(", "shouldbe"),),
)


#: In the order they apply, after the key rules and the programs' flags of
#: :data:`otelbridge.secrets.DEFAULT_PATTERNS`, before :data:`otelbridge.secret_tools.TOOL_PATTERNS`.
CODE_PATTERNS: tuple[Pattern, ...] = (
    COMPARED,
    # ... and bash's [[ $PASSWORD == X ]] with an unquoted word of 4 characters or more (not a
    # glob: [[ $TOKEN == ghp_* ]], not a variable)
    Pattern.of(
        "secret",
        ("[[",),
        r"(?P<keep>\[\[[ \t]++\\*\"?\$\{?(?:\w*?_)?" + _COMPARED_WORD + r"\}?\\*\"?[ \t]++(?:==?|!=)[ \t]++)"
        r"(?![\"'$])(?!\[REDACTED:)(?=[^\s*?\[\]\\]{4,}+[ \t]++\]\])[^\s*?\[\]\\]++",
    ),
    # an HTML password input's value: <input type="password" value="X"> (either order, any
    # case, the value quoted or not)
    Pattern.of(
        "secret",
        ("<input",),
        r"(?P<keep>(?i:<input)\b(?=[^<>]*?(?:\b|(?<=\\[tnr]))(?i:type)[ \t]*=[ \t]*\\*[\"']?(?i:password)\b)[^<>]*?"
        r"(?:\b|(?<=\\[tnr]))(?i:value)[ \t]*=[ \t]*(?P<hq>\\*[\"'])?)"
        r"(?!\[REDACTED:)(?(hq)(?:(?!(?P=hq))[^<>\r\n])+(?=(?P=hq))|[^\s<>\"'`=]+)",
    ),
    # a setter or builder of a user and password given both as literals: the second
    # (client.setBasicAuth("bob", "X"), withCredentials("bob", "X"), setAuthCredentials)
    Pattern.of(
        "secret",
        ("auth(", "credential"),
        r"(?P<keep>(?<![\w$])(?:set|with)_?\w*?(?:BasicAuth|Credentials?)\(\s*(?P<uq>\\*[\"'`])(?:(?!(?P=uq))[^\r\n]){0,200}?"
        r"(?P=uq)[ \t]*+,[ \t]*+(?P<fq>\\*[\"'`]))(?!\[REDACTED:)" + _string_text("fq", "+") + r"(?=(?P=fq))",
    ),
    # a setter or builder given a secret as a string literal: ds.setPassword("X"),
    # set_password('X'), withApiKey(`X`), also JSON-escaped; not setPasswordEncoder("bcrypt")
    # (the key word ends the name) nor setPassword(pw) (no literal), nor a pair's user (above)
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?<![\w$])(?:set|with)_?\w*?" + _SECRET_WORD + r"\(\s*(?P<fq>\\*[\"'`]))(?!\[REDACTED:)"
        + _string_text("fq", "+") + r"(?=(?P=fq)(?![ \t]*+,[ \t]*+\\*[\"'`]\[REDACTED:))",
        requires=(("(",),),
        precheck=r"(?i)(?<![\w$])(?:set|with)_?\w*?(?:pass|pw|secret|token|key|cred|auth|cookie|sig|dsn|pat)\w*\(\s*\\*[\"'`]",
    ),
    # a literal fallback after code on a line that sets a secret's name, where the key rules
    # read no value (app.config['SECRET_KEY'] = os.environ.get('K') or 'X', Laravel's
    # 'password' => env('K') ?: 'X', ERB's <%= ENV['K'] || 'X' %>, ENV.fetch("K", "X"), Ruby's block
    # ENV.fetch("K") { "X" }), or right after a secret's name (key = process.env.JWT_SECRET || "X",
    # getenv("API_KEY") or "X", ENV.fetch(:secret_token) { "X" })
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?:(?<![\w.-])" + _SECRET_WORD_IN + r"(?:\\*[\"']?\]?[ \t]*+(?:=>?|:)[ \t]*+(?:<%=[ \t]*+)?"
        r"[^\r\n;,{}]{1,200}?|\\*[\"']?[)\]]?[ \t]*+)(?:\|\||\?\?|\?:|(?<=[ \t])or[ \t]|\bfetch\([^,()\r\n]{1,100},"
        r"|\bfetch\([^()\r\n]{1,100}\)[ \t]*+\{)"
        r"|\bfetch\([ \t]*+:?\\*[\"']?" + _SECRET_WORD_IN + r"\\*[\"']?\)[ \t]*+\{[ \t]*+(?:\|\w*+\|)?)"
        r"[ \t]*+(?P<fq>\\*[\"']))"  # (not a key word: get('password') or 'password' names a field)
        r"(?!\[REDACTED:)(?!(?i:pass(?:word)?|passwd|secret|token|api_?key)\\*[\"'])" + _string_text("fq", "+") + r"(?=(?P=fq))",
        requires=(("||", "??", "?:", " or ", "fetch("),),
        precheck=r"(?:\|\||\?\?|\?:|[ \t]or|\bfetch\([^,()\r\n]{1,100},|\bfetch\([^()\r\n]{1,100}\)[ \t]*+\{[ \t]*+(?:\|\w*+\|)?)[ \t]*+\\*[\"']",
    ),
    # a web server's header named for a token, a key, a secret or a password set to one (nginx's
    # proxy_set_header X-Api-Key "X";, add_header; Apache's RequestHeader set X-Token "X"): one
    # word of 8 characters or more ending the directive, not a variable, template or placeholder
    Pattern.of(
        "secret",
        ("proxy_set_header", "add_header", "grpc_set_header", "requestheader"),
        r"(?P<keep>(?<![\w-])(?:proxy_set_header|add_header|grpc_set_header|(?i:RequestHeader)[ \t]++"
        r"(?:set|add|append))[ \t]++(?P<hq>\\*[\"']?)[\w-]*?(?i:token|api[_-]?key|secret|password|passwd)(?P=hq)"
        r"[ \t]++(?P<vq>\\*[\"']?))(?!\[REDACTED:)(?![$%@<{])(?=[^\s;\"'\\$%{}<>@]{8,}+(?P=vq)[ \t]*+(?:;|\r?\n|\\n|\Z))"
        r"[^\s;\"'\\]++",
    ),
    # Devise's pepper, a literal (config.pepper = "X"; not bell_pepper = "green")
    Pattern.of(
        "secret",
        ("pepper",),
        r"(?P<keep>(?<![\w-])(?:\w++\.)?(?i:pepper)[ \t]*+=[ \t]*+(?P<pq>\\*[\"']))(?!\[REDACTED:)"
        r"[^\s\"'\\]{12,}+(?=(?P=pq))",
    ),
    # OmniAuth's provider secret in Devise (config.omniauth :github, "ID", "X")
    Pattern.of(
        "secret",
        ("omniauth",),
        r"(?P<keep>\.omniauth[ \t(]++:\w++,[ \t]*+\\*[\"'][^\"'\r\n]{1,200}\\*[\"'],[ \t]*+"
        r"(?P<oq>\\*[\"']))(?!\[REDACTED:)" + _string_text("oq", "+") + r"(?=(?P=oq))",
    ),
    # a Terraform variable's default (variable "db_password" { ... default = "X" })
    Pattern.of(
        "secret",
        _KEY_NEEDLES,
        r"(?P<keep>(?<![\w.-])variable[ \t]++\\*\"" + _ENDS_IN_KEY_WORD + r"\\*\"[ \t]*+\{[^{}]{0,400}?"
        r"(?<![\w.-])default[ \t]*+=[ \t]*+(?P<tq>\\*\"))(?!\[REDACTED:)[^\"\\\r\n]++(?=(?P=tq))",
        requires=(("variable",), ("default",)),
    ),
    # an authorization scheme joined to a credential's literal (token68: 8 characters or more;
    # after "Token ", Django REST's scheme, with a digit: not "Invalid token " + "received"):
    # "Bearer " + "X", 'Basic ' + 'X', also JSON-escaped (the scheme may be a marker already)
    Pattern.of(
        "secret",
        ("bearer", "basic", "token", "[redacted:authorization]"),
        r"(?P<keep>(?:(?i:bearer|basic)[ \t]++|(?P<tk>(?i:token)[ \t]++)|\[REDACTED:authorization\])\\*[\"'][ \t]*+\+[ \t]*+"
        r"(?P<lq>\\*[\"'`]))(?!\[REDACTED:)(?(tk)(?=[\w.~+/-]*?\d))[\w.~+/-]{8,}+=*+(?=(?P=lq))",
        requires=(("+",),),
    ),
    # a user factory given its password as the third literal (Django's
    # create_superuser("admin", "a@b.c", "X"), create_user, one argument a line too; not a word
    # of small letters, a role:
    # create_user('u', 'e', 'editor'), nor a wrong one a test tries); a password hashed from a literal
    # (bcrypt.hashpw(b"X", …), bcrypt.hash('X', 10), make_password("X"),
    # generate_password_hash("X"), PHP's password_hash("X", …), passlib's pwd_context.hash("X"))
    Pattern.of(
        "secret",
        ("create_user", "create_superuser", "hashpw", "hashsync", "make_password", "check_password",
         "password_hash", ".hash("),
        r"(?P<keep>" + _WORD_START + r"(?<!\$)(?:create_(?:super)?user\((?:" + _ARG_GAP
        + r"(?P<aq>\\*[\"'])(?:(?!(?P=aq))[^\r\n]){0,200}+(?P=aq)" + _ARG_GAP + r",){2}"
        r"|(?:hashpw|hashSync|make_password|check_password|generate_password_hash|password_hash"
        r"|(?:bcrypt|bcryptjs|argon2|pwd_context|PasswordHasher\(\))\.hash)\()"
        + _ARG_GAP + r"[bB]?(?P<pq>\\*[\"'`]))(?!\[REDACTED:)(?![$%{<])(?![a-z-]*+(?P=pq))(?=[^\r\n]{4})"
        + _string_text("pq", "+") + r"(?=(?P=pq))",
        requires=(("(",),),
    ),
)
