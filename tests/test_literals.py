"""otelbridge.literals: Hyperscan databases of literals, compiled once per process (later ones
loaded), the compiler's code pages dropped from the process after a compile."""

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


def test_a_database_matches_its_literals_and_a_kept_one_matches_the_same():
    flags = literals.hyperscan.HS_FLAG_CASELESS
    # caseless: "bearer " and "SK-ANT-" match too; ``to`` is the end offset
    assert matches(literals.literal_database(WORDS, flags)) == [(0, 77), (1, 18), (2, 35), (3, 50)]
    assert matches(literals.literal_database(WORDS)) == [(0, 77), (1, 18)]
    assert set(literals._compiled) == {(WORDS, flags), (WORDS, 0)}
    assert matches(literals.literal_database(WORDS, flags)) == [(0, 77), (1, 18), (2, 35), (3, 50)]


def test_a_kept_database_is_loaded_not_compiled(monkeypatch):
    literals.literal_database(WORDS)

    class NotCompiled(literals.hyperscan.Database):
        def compile(self, *args, **kwargs):
            raise AssertionError("compiled again")

    monkeypatch.setattr(literals.hyperscan, "Database", NotCompiled)
    assert matches(literals.literal_database(WORDS)) == [(0, 77), (1, 18)]


def test_without_the_process_s_mappings_nothing_is_dropped_and_the_database_works(monkeypatch):
    monkeypatch.setattr(literals, "MAPS", "/nonexistent/maps")
    assert literals.drop_code_pages() == 0
    assert matches(literals.literal_database(WORDS)) == [(0, 77), (1, 18)]


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

if sys.argv[1] == "kept":
    literals.drop_code_pages = lambda: 0
needles = secret_patterns.Needles(redact.Redactor.build().patterns)
assert needles.wanted("Authorization: Bearer x")  # the scanner ran
print(resident_kb())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="no /proc")
def test_the_compiler_s_code_does_not_stay_resident():
    """What dropping is for: Hyperscan's compiler (~2.3 MB of code) leaves this process's
    resident pages once the database is made; the scanner's come back as it runs."""
    def resident(variant: str) -> int:
        out = subprocess.run([sys.executable, "-c", RESIDENT, variant], capture_output=True,
                             text=True, check=True)
        return int(out.stdout)

    dropped, kept = resident("dropped"), resident("kept")
    assert kept > 1500, kept  # the compiler's pages, when they are not dropped
    assert dropped < kept - 1000, (dropped, kept)
