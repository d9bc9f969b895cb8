"""wire.as_str, wire.held_json: strings held whole up to a memory bound; a longer one redacted
on its whole length before it is cut to that bound, and one too long to scan never held."""

from __future__ import annotations

import msgspec

from otelbridge.redact import DROPPED, SCAN_MAX_CHARS
from otelbridge.wire import MAX_HELD_CHARS, as_str, held_json

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
#: marked as a password only by the words after it
SENTENCE = 'use "Kx9mQzPw7Lm2" as the password. Then rotate it.'


def test_strings_are_held_whole_up_to_the_bound():
    text = "label with a key sk-ant-api03-xyz " * 100
    assert as_str(text) == text
    assert as_str(12) is None and as_str(None) is None


def test_the_bound_cuts_at_whitespace_so_a_token_across_it_is_dropped_whole():
    head = "x " * ((MAX_HELD_CHARS - 10) // 2)
    text = head + JWT + " tail"  # the JWT straddles the bound
    held = as_str(text)
    assert len(held) <= MAX_HELD_CHARS
    assert JWT[:10] not in held and held == head.rstrip(" ")
    assert as_str("z" * (MAX_HELD_CHARS + 1)) == ""  # one token longer than the bound: none of it


def test_a_long_string_is_redacted_whole_before_its_cut():
    """The cut falls right after a value that only the words after it mark as a secret."""
    head = "x " * ((MAX_HELD_CHARS - 18) // 2)
    text = head + SENTENCE + " more" * 2000
    assert text.index(" as the") == MAX_HELD_CHARS  # the last whitespace within the bound
    held = as_str(text)
    assert held == head + "use"  # redacted, the value's marker ends past the bound
    shorter = as_str(head[6:] + SENTENCE + " more" * 2000)
    assert shorter == head[6:] + 'use "[REDACTED:secret]"'


def test_a_string_too_long_to_scan_is_held_as_dropped():
    assert as_str("build output line\n" * (SCAN_MAX_CHARS // 18 + 1)) == DROPPED


def test_a_long_document_is_held_redacted_its_unscannable_strings_left_out():
    head = "x " * ((MAX_HELD_CHARS - 400) // 2)
    doc = {"file_path": "/srv/a.txt", "content": head + SENTENCE + " more" * 2000,
           "log": ["ok", "z " * SCAN_MAX_CHARS]}
    held = held_json(doc)
    assert len(held) <= MAX_HELD_CHARS and "Kx9m" not in held
    got = msgspec.json.decode(held)
    assert got["log"] == ["ok"]  # too long to scan: left out, as the exporter leaves it out
    assert got["content"].startswith(head + 'use "[REDACTED:secret]" as the password.')
    assert got["content"].endswith("…")
