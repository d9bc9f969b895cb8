"""Hyperscan databases of literal strings (the line markers, the secret detector's needles).

Hyperscan's compiler is ~2.3 MB of machine code, run for a few milliseconds at start-up; its
pages would then stay resident for as long as the decoding process lives (a sidecar's memory at
rest). So after a compile the extension's executable pages are dropped from this process
(``madvise(MADV_DONTNEED)`` on its read-only executable mapping: clean pages of the file, read
again if ever run again, as the kernel may do with them at any time under memory pressure); the
scanner's few pages come back at the next scan. Linux only (``/proc/self/maps``); elsewhere
nothing is dropped. Each distinct database is compiled once per process: later ones are loaded
from its serialized form, which does not run the compiler.
"""

from __future__ import annotations

import ctypes
import mmap
import os

try:  # optional: wheels for Linux x86-64 (pyproject.toml)
    import hyperscan
except ImportError:  # pragma: no cover - depends on the platform
    hyperscan = None

#: Where the process's mappings are listed (Linux).
MAPS = "/proc/self/maps"

#: (literals, flags) → the serialized database
_compiled: dict[tuple[tuple[bytes, ...], int], bytes] = {}


def literal_database(literals: tuple[bytes, ...], flags: int = 0) -> "hyperscan.Database":
    """A block-mode database matching each of ``literals`` (bytes, no NUL) with ``flags``
    (``HS_FLAG_*``), match id = index. Raises ``hyperscan.error`` when Hyperscan cannot compile
    them (a CPU it does not run on)."""
    key = (tuple(literals), flags)
    data = _compiled.get(key)
    if data is not None:
        db = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)
        return db
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=list(key[0]), ids=list(range(len(literals))),
               elements=len(literals), flags=[flags] * len(literals), literal=True)
    _compiled[key] = hyperscan.dumpb(db)
    drop_code_pages()
    return db


def drop_code_pages() -> int:
    """Drop the Hyperscan extension's executable pages from this process; returns the bytes of
    mapping advised (0 where there is nothing to do or it cannot be done)."""
    path = getattr(getattr(hyperscan, "_hs_ext", None), "__file__", None)
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if path is None or advice is None:
        return 0
    path = os.path.realpath(path)
    try:
        with open(MAPS) as fh:
            ranges = [line.split(None, 1)[0] for line in fh
                      if line.rstrip("\n").endswith(path) and line.split(None, 2)[1] == "r-xp"]
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    advised = 0
    for span in ranges:
        start, end = (int(x, 16) for x in span.split("-"))
        if madvise(start, end - start, advice) == 0:
            advised += end - start
    return advised
