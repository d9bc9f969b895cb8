"""otelbridge.literals: Hyperscan databases compiled in a child process, loaded here; the same
matches as a database compiled in process; compiled here when the child cannot be had."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from otelbridge import literals

pytestmark = pytest.mark.skipif(literals.hyperscan is None, reason="hyperscan not installed")

WORDS = (b"task_progress", b"assistant", b"Bearer ", b"sk-ant-")
TEXT = b'{"type":"assistant","auth":"bearer x","k":"SK-ANT-1","subtype":"task_progress"}'


def matches(db) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    db.scan(TEXT, match_event_handler=lambda i, _f, to, _fl, _c: found.append((i, to)))
    return sorted(found)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(literals, "_compiled", {})


def test_a_database_from_the_child_matches_as_one_compiled_in_process():
    flags = literals.hyperscan.HS_FLAG_CASELESS
    child = literals.literal_database(WORDS, flags)
    # caseless: "bearer " and "SK-ANT-" match too; ``to`` is the end offset
    assert matches(child) == matches(literals._compile(WORDS, flags)) == [
        (0, 77), (1, 18), (2, 35), (3, 50)]
    assert (WORDS, flags) in literals._compiled  # kept: the next one is loaded, not compiled


def test_a_kept_database_is_loaded_without_a_child(monkeypatch):
    literals.literal_database(WORDS)

    def no_fork():
        raise AssertionError("forked again")

    monkeypatch.setattr(os, "fork", no_fork)
    assert matches(literals.literal_database(WORDS)) == [(0, 77), (1, 18)]


def test_without_a_child_the_database_is_compiled_here(monkeypatch):
    def refused():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    assert matches(literals.literal_database(WORDS)) == [(0, 77), (1, 18)]
    assert literals._compiled == {}


def test_a_child_that_fails_leaves_the_compile_to_this_process(monkeypatch):
    monkeypatch.setattr(literals, "_compile", _fails_in_child(literals._compile, os.getpid()))
    assert matches(literals.literal_database(WORDS)) == [(0, 77), (1, 18)]
    assert literals._compiled == {}


def _fails_in_child(compile_, parent):
    def compile_here_only(*args):
        if os.getpid() != parent:
            raise RuntimeError("compiler crashed")
        return compile_(*args)
    return compile_here_only


RESIDENT = """
import sys
from otelbridge import literals, redact, secret_patterns

def resident_kb():
    total, name = 0, ""
    for line in open("/proc/self/smaps"):
        parts = line.split()
        if not line[0].isupper() or ":" not in parts[0]:
            name = parts[5] if len(parts) > 5 else ""
        elif parts[0] == "Rss:" and "_hs_ext" in name:
            total += int(parts[1])
    return total

if sys.argv[1] == "here":
    literals.hyperscan and setattr(literals, "_in_child", lambda *a: None)
needles = secret_patterns.Needles(redact.Redactor.build().patterns)
assert needles._db is not None
print(resident_kb())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="no /proc")
def test_the_compiler_s_code_does_not_become_resident_here():
    """What the child is for: Hyperscan's compiler (~2.3 MB of code) stays out of this
    process's resident pages."""
    def resident(where: str) -> int:
        out = subprocess.run([sys.executable, "-c", RESIDENT, where], capture_output=True,
                             text=True, check=True)
        return int(out.stdout)

    child, here = resident("child"), resident("here")
    assert here > 1500, here  # compiled in process: the compiler's pages
    assert child < here - 1000, (child, here)
