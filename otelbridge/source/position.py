"""The ``follow`` position across restarts: the *offset file* in the state directory (mode 0600,
directory 0700), one per followed path, holding where to resume (:class:`Position`) and a hash
of the file's first bytes (:func:`head`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..events import COUNTS

if TYPE_CHECKING:
    from ..tracker.base import SessionRef

#: Workflows exported in the stretch a restart reads again, kept at most (their task ids).
MAX_WORKFLOWS = 1000
#: Sessions a run before ended that are remembered, the newest: one met again goes on in a span
#: of its own (not under its ended span's ids)
MAX_CONTINUED = 1000
#: Bytes at a file's start that tell it from another at the same inode.
HEAD_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Position:
    """Where to resume: the file's (``dev``, ``ino``) and a byte ``offset`` at a line start;
    ``read_to``: the end of the lines read before whose spans are exported (a restart reads
    ``offset`` … ``read_to`` again only to rebuild what was open, exporting none of it);
    ``workflows``: the task ids of the workflows past ``offset`` already exported, never
    exported again (the others, held at the stop, are exported when they end, during the
    re-reading or after)."""

    dev: int
    ino: int
    offset: int
    read_to: int = 0
    workflows: tuple[str, ...] = ()
    #: the sessions open at ``offset`` whose spans were not exported (taken again when read
    #: again: what was exported under them finds its parent)
    sessions: tuple[SessionRef, ...] = ()
    #: the sessions a stop ended (exported; ``turns``: those begun before ``offset``, the cost
    #: the last total there): one read again is a span of its own in that trace, its turns
    #: numbered on
    continued: tuple[SessionRef, ...] = ()
    #: the file's word its ids are derived with (:meth:`Followed.on_open`): the next start
    #: makes the same spans again (a session a stop ended goes on with ids of its own)
    salt: str = ""
    #: saved at a stop
    stopped: bool = False


def newest(older: tuple[SessionRef, ...], newer: tuple[SessionRef, ...]) -> tuple[SessionRef, ...]:
    """``older`` without the sessions ``newer`` names, then ``newer``: the last
    :data:`MAX_CONTINUED`."""
    named = {ref[0] for ref in newer}
    return (tuple(ref for ref in older if ref[0] not in named) + newer)[-MAX_CONTINUED:]


def offset_file(state_dir: Path, path: Path) -> Path:
    """The offset file of ``path`` in ``state_dir``: one per followed path (by its absolute path)."""
    digest = hashlib.sha256(str(Path(os.path.abspath(path))).encode()).hexdigest()[:16]
    return Path(state_dir) / f"follow-{digest}.json"


def load_position(file: Path) -> tuple[Position | None, str]:
    """The saved position and its file's :func:`head`; ``(None, "")`` when there is none or it
    cannot be read (any content not of the shape :func:`save_position` writes)."""
    try:
        doc = json.loads(Path(file).read_text())
        pos = Position(int(doc["dev"]), int(doc["ino"]), int(doc["offset"]), int(doc.get("read_to", 0)),
                       tuple(str(w) for w in doc.get("workflows", ()))[-MAX_WORKFLOWS:],
                       _session_refs(doc.get("sessions", ())), _session_refs(doc.get("continued", ())),
                       str(doc.get("salt", "")), bool(doc.get("stopped", False)))
        if min(pos.offset, pos.read_to) < 0:
            raise ValueError("a negative offset")
        return pos, str(doc.get("head", ""))
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError):
        return None, ""


def _session_refs(saved: list) -> tuple[SessionRef, ...]:
    """Saved ``[session id, trace id, span id, turns, cost, cost base, [token counts],
    [agent, provider, model, version]]`` lists as tuples (an earlier version's lack the last
    ones: 0, ``None``, 0.0, ``None``, ``None``; its token counts are input and output alone).
    Raises ``ValueError``, ``TypeError`` on another shape."""
    return tuple((str(ref[0]), int(ref[1]), int(ref[2]), int(ref[3]) if len(ref) > 3 else 0,
                  float(ref[4]) if len(ref) > 4 and ref[4] is not None else None,
                  float(ref[5]) if len(ref) > 5 else 0.0,
                  tuple(int(n) for n in ref[6][:2 * len(COUNTS)]) if len(ref) > 6 and ref[6] is not None else None,
                  _said(ref[7]) if len(ref) > 7 and ref[7] is not None else None)
                 for ref in saved)


def _said(saved: list) -> tuple[str | None, str | None, str | None, str | None]:
    """A saved ``[agent, provider, model, version]`` (strings or ``null``)."""
    agent, provider, model, version = (None if v is None else str(v) for v in saved)
    return agent, provider, model, version


def head(fd: int, length: int = HEAD_BYTES) -> str:
    """``"{n}:{sha256 hex}"`` of the first ``n`` ≤ ``length`` bytes of ``fd``: which file an
    inode holds (a file deleted and written anew may get the same inode)."""
    return head_of(os.pread(fd, length, 0))


def head_of(data: bytes) -> str:
    """The :func:`head` of a file whose first bytes (up to :data:`HEAD_BYTES`) are ``data``."""
    return f"{len(data)}:{hashlib.sha256(data).hexdigest()}"


def named(path: Path, ident: tuple[int, int]) -> tuple[Path, int] | None:
    """Where the file ``ident`` (dev, inode) is, and its size: ``path``, or another name in its
    directory (rotated: a start finds it there); ``None``: neither."""
    try:
        st = os.stat(path)
        if (st.st_dev, st.st_ino) == ident:
            return path, st.st_size
    except OSError:
        pass
    try:
        for entry in os.scandir(path.parent):
            st = entry.stat(follow_symlinks=False)
            if (st.st_dev, st.st_ino) == ident and stat.S_ISREG(st.st_mode):
                return Path(entry.path), st.st_size
    except OSError:
        pass
    return None


def begins_as(path: Path, saved: str) -> bool:
    """Whether the file at ``path`` begins as the file whose :func:`head` was ``saved``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return same_head(fd, saved)
    finally:
        os.close(fd)


def _siblings(path: Path):
    """``(entry, stat)`` of each regular file in ``path``'s directory named as logrotate names
    its rotations: ``path``'s name and a number or date (``agent.jsonl.1``,
    ``agent.jsonl-20261207``), not compressed (not ``agent.jsonl.bak``, ``.1.gz``)."""
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    rotation = re.compile(re.escape(path.name) + r"[.-][0-9][0-9._-]*")
    for entry in entries:
        if not rotation.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            yield entry, st


def rotated_since(path: Path, older: Path) -> list[Path]:
    """The files rotated away from ``path`` after ``older`` was (each rotation while no run read
    it: ``agent.jsonl.1`` when ``older`` is ``agent.jsonl.2``): named as logrotate names them,
    last written after ``older``, oldest first."""
    try:
        before = os.stat(older)
    except OSError:
        return []
    found = [(st.st_mtime_ns, entry.path) for entry, st in _siblings(path)
             if st.st_mtime_ns > before.st_mtime_ns and (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino)]
    return [Path(name) for _, name in sorted(found)]


def copy_of(path: Path, saved: str, least: int) -> Path | None:
    """The copy logrotate's ``copytruncate`` made of ``path`` before truncating it: the newest
    regular file in its directory named as logrotate names it (``agent.jsonl.1``,
    ``agent.jsonl-20261207``), another inode, that begins as the file whose :func:`head` was
    ``saved`` and holds more than ``least`` bytes; ``None``: none."""
    if not saved.partition(":")[0].isdigit():
        return None
    try:
        here = os.stat(path)
        here_ident = (here.st_dev, here.st_ino)
    except OSError:
        here_ident = None
    found = []
    for entry, st in _siblings(path):
        if st.st_size <= least or (st.st_dev, st.st_ino) == here_ident:
            continue
        if begins_as(Path(entry.path), saved):
            found.append((st.st_mtime_ns, entry.path))
    return Path(max(found)[1]) if found else None


def same_head(fd: int, saved: str) -> bool:
    """Whether ``fd`` begins as the file whose :func:`head` was ``saved`` (``""``: unknown; a
    length over :data:`HEAD_BYTES`, which no head has: another file's)."""
    n, _, _ = saved.partition(":")
    return not saved or not n.isdigit() or (int(n) <= HEAD_BYTES and head(fd, int(n)) == saved)


def save_position(file: Path, pos: Position, path: Path, head: str = "") -> None:
    """Write ``pos`` (and its file's :func:`head`) atomically (temporary file, then rename),
    mode 0600. Raises ``OSError``."""
    file = Path(file)
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = file.with_name(file.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({"path": str(path), "dev": pos.dev, "ino": pos.ino, "offset": pos.offset,
                   "read_to": pos.read_to, "workflows": list(pos.workflows),
                   "sessions": [list(s[:8]) for s in pos.sessions],  # (not the cut turns': a restart reads them again)
                   "continued": [list(s[:8]) for s in pos.continued], "salt": pos.salt, "stopped": pos.stopped, "head": head}, fh)
    os.replace(tmp, file)
