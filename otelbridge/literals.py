"""Hyperscan databases of literal strings (the line markers, the secret detector's needles),
compiled in a short-lived child process.

Hyperscan's compiler is ~2.3 MB of machine code; run once in the decoding process, which lives as
long as the stream, its pages would stay resident there for nothing (the at-rest memory of a
sidecar). A forked child compiles and hands back the serialized database (~75 KB for the
needles), which this process loads: only the scanner's pages become its own. Each distinct
database is compiled once per process (later ones load the kept bytes). Where ``fork`` is missing
or the child fails, the database is compiled here.
"""

from __future__ import annotations

import os
import warnings

try:  # optional: wheels for Linux x86-64 (pyproject.toml)
    import hyperscan
except ImportError:  # pragma: no cover - depends on the platform
    hyperscan = None

#: (literals, flags) → the serialized database
_compiled: dict[tuple[tuple[bytes, ...], int], bytes] = {}


def _compile(literals: tuple[bytes, ...], flags: int) -> "hyperscan.Database":
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=list(literals), ids=list(range(len(literals))),
               elements=len(literals), flags=[flags] * len(literals), literal=True)
    return db


def _in_child(literals: tuple[bytes, ...], flags: int) -> bytes | None:
    """The serialized database, compiled by a forked child; ``None`` when that failed."""
    r, w = os.pipe()
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns of a fork beside threads: the child runs only Hyperscan's
            # compiler (C++, its own allocations), none of the other threads' Python code
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: compile, write, exit without running anything of the parent's
        code = 1
        try:
            os.close(r)
            view = memoryview(hyperscan.dumpb(_compile(literals, flags)))
            while view:
                view = view[os.write(w, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    parts = []
    try:
        while chunk := os.read(r, 1 << 16):
            parts.append(chunk)
    finally:
        os.close(r)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # reaped by another waiter: its bytes say whether it finished
            status = 0
    return b"".join(parts) if status == 0 and parts else None


def literal_database(literals: tuple[bytes, ...], flags: int = 0) -> "hyperscan.Database":
    """A block-mode database matching each of ``literals`` (bytes, no NUL) with ``flags``
    (``HS_FLAG_*``), match id = index. Raises ``hyperscan.error`` when Hyperscan cannot compile
    them (a CPU it does not run on)."""
    key = (tuple(literals), flags)
    data = _compiled.get(key)
    if data is None:
        data = _in_child(*key) if hasattr(os, "fork") else None
        if data is None:
            return _compile(*key)
        _compiled[key] = data
    db = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
    db.scratch = hyperscan.Scratch(db)
    return db
