"""Labelled secrets in forms a model writes (:mod:`otelbridge.secret_labels`): a label in another
language, also in a script with case, a label alone on its line, a table's cell under a label.
Each with its near misses; the forms are also rows of ``tests/data/secret-forms.jsonl``."""

from __future__ import annotations

import pytest

from tests.secret_forms import check as _check


@pytest.mark.parametrize(("text", "expected"), [
    # a secret's key with no API named: "secret key", "private key"
    ("密钥：Kk1Ll2Mm3Nn4Pp", "密钥：[REDACTED:secret]"),
    ("秘钥: Kk1Ll2Mm3Nn4Pp", "秘钥: [REDACTED:secret]"),
    ("访问密钥 = Kk1Ll2Mm3Nn4Pp", "访问密钥 = [REDACTED:secret]"),
    ("私钥：Kk1Ll2Mm3Nn4Pp", "私钥：[REDACTED:secret]"),
    ("秘密鍵: Kk1Ll2Mm3Nn4Pp", "秘密鍵: [REDACTED:secret]"),
    ("シークレットキー：Kk1Ll2Mm3Nn4Pp", "シークレットキー：[REDACTED:secret]"),
    ("비밀 키: Kk1Ll2Mm3Nn4Pp", "비밀 키: [REDACTED:secret]"),
    ("**密钥**：Kk1Ll2Mm3Nn4Pp", "**密钥**：[REDACTED:secret]"),
    # ... not a public one's, nor a key's id or pair, nor a word that is no generated value
    ("公开密钥：Kk1Ll2Mm3Nn4Pp", None),
    ("密钥ID：Kk1Ll2Mm3Nn4Pp", None),
    ("密钥对：Kk1Ll2Mm3Nn4Pp", None),
    ("密钥：my_secret_key", None),
    ("密钥：错误", None),
    ("秘密鍵: ~/.ssh/id_ed25519", None),
])
def test_a_secret_key_in_another_language_without_api(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    # Cyrillic's and Greek's labels, in any case: the needle pass folds a text's capitals
    ("пароль: Zz9Yy8Xx7Ww6", "пароль: [REDACTED:secret]"),
    ("Пароль: Zz9Yy8Xx7Ww6", "Пароль: [REDACTED:secret]"),
    ("ПАРОЛЬ=Zz9Yy8Xx7Ww6", "ПАРОЛЬ=[REDACTED:secret]"),
    ("Новый пароль: hunter22", "Новый пароль: [REDACTED:secret]"),
    ("токен: Kk1Ll2Mm3Nn4Pp", "токен: [REDACTED:secret]"),
    ("ключ API: Kk1Ll2Mm3Nn4Pp", "ключ API: [REDACTED:secret]"),
    ("API-ключ: Kk1Ll2Mm3Nn4Pp", "API-ключ: [REDACTED:secret]"),
    ("Секретный ключ: Kk1Ll2Mm3Nn4Pp", "Секретный ключ: [REDACTED:secret]"),
    ("**Пароль**: Zz9Yy8Xx7Ww6", "**Пароль**: [REDACTED:secret]"),
    ("Κωδικός πρόσβασης: Zz9Yy8Xx7Ww6", "Κωδικός πρόσβασης: [REDACTED:secret]"),
    ("ΚΩΔΙΚΟΣ ΠΡΟΣΒΑΣΗΣ: Zz9Yy8Xx7Ww6", "ΚΩΔΙΚΟΣ ΠΡΟΣΒΑΣΗΣ: [REDACTED:secret]"),
    ("κλειδί API: Kk1Ll2Mm3Nn4Pp", "κλειδί API: [REDACTED:secret]"),
    # ... and what stays: a word after the label, a count, a placeholder, a key that is no API's
    ("Пароль: неверный", None),
    ("Токен: недействителен", None),
    ("Токены: 1234", None),
    ("Пароль: ${{ secrets.DB_PASSWORD }}", None),
    ("пароль=<your-password>", None),
    ("Ключ: Kk1Ll2Mm3Nn4Pp", None),
    ("Κωδικός: abc12345", None),
    # Greek's Κωδικός alone (a code as often) in Markdown's bold label: a word with a small letter and a digit
    ("**Χρήστης:** admin\n**Κωδικός:** hunter22x", "**Χρήστης:** admin\n**Κωδικός:** [REDACTED:secret]"),
    ("**ΚΩΔΙΚΟΣ**: s3cr3tValue", "**ΚΩΔΙΚΟΣ**: [REDACTED:secret]"),
    ("**Κωδικός:** ABC12345", None), ("**Κωδικός:** 12345678", None),
    # a word of another script glued before an English label ends a word
    ("НовыйPassword is Winter2024!", "НовыйPassword is [REDACTED:secret]"),
    ("数据库**Password**: Zz9Yy8Xx7Ww6", "数据库**Password**: [REDACTED:secret]"),
    ("использоватьtoken Zz9Yy8Xx7Ww6abcDEF", "использоватьtoken [REDACTED:secret]"),
    ("ключMAPBOX_KEY=Zz9Yy8Xx7Ww6abc", "ключMAPBOX_KEY=[REDACTED:secret]"),
    ("входlogin admin/Zz9Yy8Xx7Ww6!", "входlogin admin/[REDACTED:secret]"),
    # ... not a Latin word's accented letter: one word
    ("éPassword is Winter2024!", None),
])
def test_labels_in_cyrillic_and_greek(text, expected):
    _check(text, expected)


def test_a_needle_in_cyrillic_keeps_the_one_pass():
    """The one-pass pre-test stays on (Hyperscan, where installed) with needles beyond ASCII that
    have case: a capital's text is folded before the scan."""
    from otelbridge.secret_patterns import Needles, hyperscan
    from otelbridge.secrets import DEFAULT_PATTERNS

    needles = Needles(DEFAULT_PATTERNS)
    assert "пароль" in needles.needles
    if hyperscan is not None:
        assert needles._db is not None
    label = next(i for i, p in enumerate(DEFAULT_PATTERNS) if "пароль" in p.needles)
    assert label in needles.wanted("ПАРОЛЬ: x") and label in needles.wanted("ΚΩΔΙΚΌΣ πρόσβασης")


@pytest.mark.parametrize(("text", "expected"), [
    # a password's name in another language where Markdown names a secret: a table's row, a
    # table's column, a heading or a bold name alone on its line, a name before an arrow
    ("| 密码 | Zz9Yy8Xx7Ww6 |", "| 密码 | [REDACTED:secret] |"),
    ("| Senha | Zz9Yy8Xx7Ww6 |", "| Senha | [REDACTED:secret] |"),
    ("| Пароль | Zz9Yy8Xx7Ww6 |", "| Пароль | [REDACTED:secret] |"),
    ("| 用户 | 密码 |\n|---|---|\n| admin | viewer42pass |", "| 用户 | 密码 |\n|---|---|\n| admin | [REDACTED:secret] |"),
    ("| Usuário | Senha |\n|---|---|\n| admin | Zz9Yy8Xx7Ww6 |",
     "| Usuário | Senha |\n|---|---|\n| admin | [REDACTED:secret] |"),
    ("| Логин | Пароль |\n|---|---|\n| admin | changeme |", "| Логин | Пароль |\n|---|---|\n| admin | [REDACTED:secret] |"),
    ("## 密码\n\nZz9Yy8Xx7Ww6", "## 密码\n\n[REDACTED:secret]"),
    ("**Пароль**\nWinter2024x", "**Пароль**\n[REDACTED:secret]"),
    ("密码：\n  Zz9Yy8Xx7Ww6", "密码：\n  [REDACTED:secret]"),
    ("Senha:\nZz9Yy8Xx7Ww6", "Senha:\n[REDACTED:secret]"),
    ("**Senha** → Zz9Yy8Xx7Ww6", "**Senha** → [REDACTED:secret]"),
    # ... a row's cell, a word a person picked (English's too); a token's or a key's name, Greek's password
    ("| Passwort | s3cr3tValue |", "| Passwort | [REDACTED:secret] |"),
    ("| 密码 | Winter2024x |", "| 密码 | [REDACTED:secret] |"),
    ("| Contraseña | Verano2024x |", "| Contraseña | [REDACTED:secret] |"),
    ("| Mot de passe | Soleil2024x |", "| Mot de passe | [REDACTED:secret] |"),
    ("| Пароль | Zima2024xYz |", "| Пароль | [REDACTED:secret] |"),
    ("| Password | s3cr3tValue |", "| Password | [REDACTED:secret] |"),
    ("| Токен | Ab3dEf6hJk9mNp2q |", "| Токен | [REDACTED:secret] |"),
    ("| Servicio | Clave API |\n|---|---|\n| pagos | Qw7eRt2yUi5oPa9s |",
     "| Servicio | Clave API |\n|---|---|\n| pagos | [REDACTED:secret] |"),
    ("| 서비스 | 토큰 |\n|---|---|\n| ci | Lk4jHg7fDs2aPo9i |", "| 서비스 | 토큰 |\n|---|---|\n| ci | [REDACTED:secret] |"),
    ("**Clave API**: Adm1n!pass", "**Clave API**: [REDACTED:secret]"),
    ("| Χρήστης | Κωδικός πρόσβασης |\n|---|---|\n| admin | s3cr3tValue |",
     "| Χρήστης | Κωδικός πρόσβασης |\n|---|---|\n| admin | [REDACTED:secret] |"),
    ("| Κωδικός πρόσβασης | s3cr3tValue |", "| Κωδικός πρόσβασης | [REDACTED:secret] |"),
    # ... and what stays: a docs table of options, prose, a word, a placeholder, a type, a version
    ("| Senha | Obrigatório | Descrição |\n|---|---|---|\n| senha | sim | A senha do admin |", None),
    ("| 参数 | 密码 |\n|---|---|\n| 类型 | 字符串 |", None),
    ("## Senha\n\nA senha deve ter 8 caracteres", None),
    ("## 密码\n\n请在设置中修改", None),
    ("Пароль:\nневерный", None),
    ("| Пароль | неверный |", None),
    ("密码：\n  ********", None),
    ("## Senha\n\n`${{ secrets.SENHA }}`", None),
    ("| Senha | <sua-senha> |", None),
    ("| Campo | Tipo |\n|---|---|\n| senha | string |", None),
    ("| Senha | Python3x |", None),
    ("| Токен | Описание |\n|---|---|\n| access | Токен доступа |", None),
    ("| Κωδικός | Περιγραφή |\n|---|---|\n| ABC-12345 | Καρέκλα |", None),
    ("| Passwort | falsch |", None), ("| Password | Version2 |", None),
])
def test_a_password_s_name_in_another_language_in_markdown(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    # what a label's value says in a secret's place, on its line or alone on the next: a mask,
    # where it is kept, a placeholder, a name in angle brackets, a state
    ("Password: ********", None),
    ("Password: see the vault", None),
    ("Password: stored in AWS Secrets Manager.", None),
    ("password: in 1Password", None),
    ("Password:\n  ${{ secrets.DB_PASSWORD }}", None),
    ('password:\n  "${DB_PASSWORD}"', None),
    ("Password:\n  <your-password>", None),
    ("Password:\n  ********", None),
    ("password:\n  required", None),
    ("Password: see the vault. More text.", None),
    ("Password: stored in AWS Secrets Manager. Rotate it monthly.", None),
    ("Password:\n  see the vault. Ask Ann.", None),
    # ... and a value there still is one, with more after such words too
    ("Password: see the vault hunter2", "Password: [REDACTED:secret]"),
    ("password: see hunter2", "password: [REDACTED:secret]"),
    ("Password: see the vault. Hunter2!", "Password: [REDACTED:secret]"),
    ("Token: expired. Summer2024", "Token: [REDACTED:secret]"),
    ("Token: ****abcd", "Token: [REDACTED:secret]"),
    ("Password:\n  Xk9#mP2vLq", "Password:\n  [REDACTED:secret]"),
    ("password:\n  s3cr3t and more", "password:\n  [REDACTED:secret]"),
    ("password:\n  <a>b", "password:\n  [REDACTED:secret]"),
])
def test_a_label_s_value_that_holds_no_secret(text, expected):
    _check(text, expected)


@pytest.mark.parametrize(("text", "expected"), [
    # a password's label with its accent, in capitals too, and German's Passwort
    ("Contraseña: abc12345x", "Contraseña: [REDACTED:secret]"),
    ("CONTRASEÑA: abc12345x", "CONTRASEÑA: [REDACTED:secret]"),
    ("ŞİFRE: abc12345x", "ŞİFRE: [REDACTED:secret]"),
    ("hasło: abc12345x", "hasło: [REDACTED:secret]"),
    ("Lösenord: abc12345x", "Lösenord: [REDACTED:secret]"),
    ("Jelszó: abc12345x", "Jelszó: [REDACTED:secret]"),
    ("Passwort: abc12345x", "Passwort: [REDACTED:secret]"),
    ("| Benutzer | Passwort |\n|---|---|\n| admin | abc12345x |", "| Benutzer | Passwort |\n|---|---|\n| admin | [REDACTED:secret] |"),
    ("## Contraseña\n\nWinter2024x", "## Contraseña\n\n[REDACTED:secret]"),
    # ... and what stays: a word after the label, a word that is no label
    ("Passwort: falsch", None),
    ("Contraseña: incorrecta", None),
    ("Passworte: 12345678a", None),
])
def test_a_password_s_label_with_its_accent(text, expected):
    _check(text, expected)
