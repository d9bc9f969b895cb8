"""wire.as_str: strings held whole, a memory bound that never leaves half a token."""

from __future__ import annotations

from otelbridge.wire import MAX_HELD_CHARS, as_str

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


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
