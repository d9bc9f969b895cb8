"""``otelbridge follow PATH``: tail a file the CLI writes, like ``tail -F``, for the sidecar pattern.

* **Rotation** (PATH renamed away or deleted, and created anew — a new inode at PATH): the old
  file is read on until the new one holds a byte (a writer that keeps its descriptor goes on
  in the renamed file), then to its end, then the files rotated after it
  (:func:`~.position.rotated_since`), then the new one from its start (``on_switch``: a new
  writer, a new stream).
* **Truncation** (PATH shorter than our position, same inode — ``copytruncate``): what it held
  past our position is read from its copy when there is one (:func:`~.position.copy_of`), then
  the file again from the start; the partial line before the cut is dropped, and so are the NUL
  bytes before the first line (a writer that kept its offset leaves a hole that long). A
  truncation followed by more writes than our old position before the next poll is known by
  the file's first bytes (up to 4 KiB) no longer being what was read there.
* **Position across restarts**: an *offset file* in the state directory (mode 0600, directory
  0700) holds the device, inode, a hash of the first 4 KiB (another file at the same inode is
  read from its start) and byte offset of the last *checkpoint* — the end of the last complete
  line read at a moment when nothing the reader traces was open (:meth:`Followed.is_quiet`: a
  turn, a workflow), or, with a session open, when reading again makes the same spans
  (:meth:`Followed.resumable`), saved once the spans handed on by then are exported
  (:meth:`Followed.settled`). While a session is open (:meth:`Followed.has_sessions`), a
  checkpoint resumes at the last point with none open and reads up to itself again without
  exporting (:attr:`Position.read_to`): what was open at a kill is rebuilt from its first line,
  and the session span, exported only when it ends, comes even when the process was killed. A
  stop ends every session (exported): its position resumes at the last point with nothing open
  instead, with the sessions it ended (:attr:`Position.continued`) — unless it hands over
  (:meth:`Follower.handed_over`): it ends nothing, and keeps the last checkpoint, as a kill.
  Once an export fails the position stays at the last checkpoint saved: the next start reads
  again what may not have reached the collector (:attr:`Follower.taking_again`: the exporters
  took spans again, and a run may start now). If PATH is another file by then (rotated while
  we were away), it is read from its start.
* A missing PATH is waited for. Nothing is written to stdout: follow is a sidecar, not a tee.
  Polling (``poll_s``), not inotify: the same on every filesystem (NFS, overlay, emptyDir).
"""

from __future__ import annotations

import asyncio
import collections
import os
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..deadline import Deadline
from .followed import Followed
from .pipe import CHUNK
from .position import (HEAD_BYTES, MAX_WORKFLOWS, Position, begins_as, copy_of, head, head_of,
                       load_position, named, newest, rotated_since, same_head, save_position)

if TYPE_CHECKING:
    from ..tracker.base import SessionRef

ROTATED, TRUNCATED = "rotated", "truncated"


class Follower:
    """Reads ``path`` as it grows and hands each chunk to ``reader`` (a :class:`Followed`),
    taking checkpoints when it is quiet and saving them once their spans are settled; ``say``
    gets one line a problem. :meth:`run` returns when :meth:`stop` is called;
    :meth:`save_settled` saves what settled after it.
    """

    def __init__(
        self,
        path: Path,
        reader: Followed,
        *,
        state_file: Path,
        from_start: bool = False,
        poll_s: float = 0.25,
        say: Callable[[str], None] = lambda message: None,
        chunk: int = CHUNK,
        stop_budget_s: float = 1.0,
        may_read_again: Callable[[Position], bool] = lambda saved: False,
        salts: dict[tuple[int, int], str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.stop_budget_s = stop_budget_s
        self.reader = reader
        self.state_file = Path(state_file)
        self.from_start = from_start
        self.poll_s = poll_s
        self.say = say
        self.buf = bytearray(chunk)
        self.fd = -1
        self.ident: tuple[int, int] | None = None
        self.pos = 0  # bytes of the current file read
        self.complete = 0  # end of the last complete line read
        self.saved, self._saved_head = load_position(self.state_file)
        if self.saved is None and self.state_file.exists():  # not ours, or damaged: lose nothing
            say(f"cannot read the follow position in {str(self.state_file)!r}: {str(self.path)!r} "
                "is read from its start")
            self.from_start = True
        #: checkpoints taken, with the spans handed on by then, oldest first: not yet settled
        self._unsettled: collections.deque[tuple[Position, int]] = collections.deque()
        self._lost = False  # an export failed: no checkpoint is saved any more
        #: :meth:`run` returned after a lost export, spans taken again: a run may start from the
        #: saved position, if ``may_read_again`` says so of it (else the next start does)
        self.taking_again = False
        self._may_read_again = may_read_again
        #: the word of each file opened (by device and inode, the newest 16): a run that reads
        #: them again in this process, after a lost export, makes their spans again
        self.salts = {} if salts is None else salts
        self._unsaved: str | None = None  # why the last save failed: said once, not each poll
        #: in the open file: where a restart after a kill reads from (the oldest open session's
        #: first line, or the last point with none open), and after a stop (nothing open)
        self._base = self._quiet = 0
        #: the workflows past ``_base`` a run before exported
        self._base_workflows: tuple[str, ...] = ()
        #: the offset in the open file of the first byte fed to the reader (negative after a
        #: truncation; NUL bytes skipped are not fed)
        self._origin = 0
        #: the sessions open at ``_quiet`` (``session_refs()``); :attr:`Position.continued` at
        #: ``_base`` (a restart after a stop: kept until no session is open)
        self._quiet_sessions: tuple[SessionRef, ...] = ()
        self._base_continued: tuple[SessionRef, ...] = ()
        self.salt = ""  # the open file's (:attr:`Position.salt`)
        self._copied = False  # the open file is copytruncate's copy of the file at PATH
        #: truncated: a writer that kept its offset (``cli > file`` under ``copytruncate``)
        #: writes its next line after a hole the truncation left, read as NUL bytes
        self._hole = False
        self._closed_head = ""  # the head of the file last closed
        #: the open file's first bytes as read (up to :data:`HEAD_BYTES`): a truncation the
        #: file grew back past our position between polls changes them
        self._prefix = b""
        #: a restart reads up to here again without exporting (see :class:`Position`)
        self.replay_to = 0
        #: after a stop, the reading again ends only with a byte past ``replay_to``: a run that
        #: reads nothing new ends nothing the stop before had not exported
        self._replay_waits = False
        self._stopped: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: files rotated away from PATH while no run read it, after the one the position is
        #: in: read after it, before PATH, oldest first
        self._rotated: list[Path] = []
        self._stop_requested = False
        self._stop_by = 0.0  # (monotonic s) reading after a stop ends here
        #: the file :meth:`run` left before its end, and the bytes past what it read (``None``)
        self.unread: tuple[Path, int] | None = None

    def stop(self) -> None:
        """End :meth:`run`: what the file holds past the position is still read, for
        ``stop_budget_s`` at most; the next start reads the rest (:attr:`unread`). Safe in a
        signal handler (it may interrupt a wait for the exporters, which :meth:`stop_deadline`
        then ends)."""
        if not self._stop_requested:
            self._stop_by = time.monotonic() + self.stop_budget_s
        self._stop_requested = True
        if self._loop is not None and self._stopped is not None:
            try:
                self._loop.call_soon_threadsafe(self._stopped.set)
            except RuntimeError:  # a signal again as the process ends: its loop is closed
                pass

    def stop_deadline(self) -> Deadline | None:
        """Once stopped: when reading ends (waits for the exporters end by then too)."""
        return Deadline(self._stop_by) if self._stop_requested else None

    # ------------------------------------------------------------------ files

    def _named(self, ident: tuple[int, int] | None) -> tuple[Path, int] | None:
        """Where the file ``ident`` is, and its size (:func:`~.position.named`)."""
        return named(self.path, ident) if ident is not None else None

    def _moved(self) -> Path | None:
        """The saved position's file under another name in PATH's directory (rotated while no
        run read it), or — PATH truncated since (``copytruncate``) — the copy of what it held,
        when it holds bytes past the position; else ``None``."""
        saved = self.saved
        if saved is None:
            return None
        found = self._named((saved.dev, saved.ino))
        if found is not None and found[0] != self.path:
            return found[0] if found[1] > saved.offset else None
        if found is None or (found[1] >= saved.offset and begins_as(self.path, self._saved_head)):
            return None
        copy = copy_of(self.path, self._saved_head, saved.offset)  # (truncated at PATH)
        self._copied = copy is not None
        return copy

    def _open(self, resume: bool, same_stream: bool = False) -> bool:
        """Open PATH; with ``resume``, at the saved position (or start/end by ``from_start``):
        in the saved file, rotated away from PATH since (or its copy), when it holds lines not
        read yet (the loop then finds PATH another file and goes on to it from its start).
        ``same_stream``: PATH goes on with the stream read so far, as after a truncation (its
        ids' word kept, its count of bytes, NUL bytes before its first line skipped)."""
        fed = self.pos - self._origin  # (bytes fed to the reader from the file read so far)
        self._copied = False
        moved = self._moved() if resume else None
        if moved is not None:  # (and the files rotated after it, before PATH)
            self._rotated = rotated_since(self.path, moved)
        target = moved or (self._rotated.pop(0) if self._rotated and not resume else self.path)
        try:
            # (non-blocking: a FIFO at PATH would block the open, and the stop, until a writer came)
            fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return False
        if moved is not None:
            also = "".join(f", then {str(p)!r}" for p in self._rotated)
            self.say(f"{str(moved)!r} holds the rest of the file followed before ({str(self.path)!r} "
                     f"was rotated or truncated since): it is read first{also}")
        elif resume and self.saved is not None and self._named((self.saved.dev, self.saved.ino)) is None:
            self.say(f"the file followed before is no longer at {str(self.path)!r} nor beside it (rotated "
                     f"and deleted?): what it held past byte {self.saved.offset}, if anything, is not read")
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise IsADirectoryError(f"{self.path} is not a regular file")
        ident = (st.st_dev, st.st_ino)
        start = self.replay_to = 0
        # (the file the saved position is in: a file opened after a rotation is new, even at
        # its inode — copytruncate's)
        known = resume and self.saved is not None and ((self.saved.dev, self.saved.ino) == ident or moved is not None)
        if known and (not same_head(fd, self._saved_head) or self.saved.offset > st.st_size):
            known = False  # (truncated while we were away, or another file at the same inode)
            self.say(f"{str(self.path)!r} is not the file the last run left (truncated or written "
                     "anew while stopped): read from its start")
        if resume:
            saved = self.saved
            if known and saved is not None and saved.offset <= st.st_size:
                start = saved.offset
                self.replay_to = saved.read_to if start < saved.read_to <= st.st_size else 0
                self._replay_waits = saved.stopped
                self.say(f"following {str(target)!r} from byte {start}, its saved position" + (
                    f" (up to byte {self.replay_to} it only rebuilds what was open: those bytes' spans had all "
                    "arrived)"
                    if self.replay_to else ""))
            elif saved is None and not self.from_start:
                start = st.st_size
                if start:  # (a first try on a recording read nothing, and said nothing)
                    self.say(f"following {str(self.path)!r} from its end: the {start} bytes in it "
                             "now are not read (--from-start reads them)")
        # the word this file's ids are derived with: kept, for the same spans when read again
        if not same_stream:
            self.salt = self.saved.salt if known and self.saved.salt else self.salts.get(ident) or secrets.token_hex(8)
            self.salts.pop(ident, None)
            self.salts[ident] = self.salt
            if len(self.salts) > 16:
                del self.salts[next(iter(self.salts))]
            self.reader.on_open(self.salt)
        os.lseek(fd, start, os.SEEK_SET)
        self.fd, self.ident, self.pos, self.complete = fd, ident, start, start
        self._base = self._quiet = self._origin = start
        if same_stream:
            self._origin, self._hole = start - fed, True
        self._base_workflows = self.saved.workflows if known and self.saved else ()
        self._quiet_sessions = self._base_continued = (
            self.saved.continued if known and self.saved else ())
        self._prefix = os.pread(fd, min(HEAD_BYTES, start), 0)
        if not known:  # (new to us: read again from here by a stop before any quiet moment)
            self._unsettled.append((Position(ident[0], ident[1], start, salt=self.salt), self.reader.handed()))
            self.save_settled()
        return True

    def _close(self) -> None:
        if self.fd >= 0:
            self._closed_head = self._current_head()
            os.close(self.fd)
            self.fd = -1

    async def _drain(self) -> bool:
        """Read the open file to its current end, yielding to the loop between chunks and
        taking a checkpoint each second (a backlog read at a start is not all read again after
        a kill); after a stop, until its budget is spent, unless no start could read the rest
        (the file deleted). ``False``: the budget cut it short."""
        checkpoint_at = time.monotonic() + 1.0
        while self.fd >= 0:
            now = time.monotonic()
            if self._stop_requested and now >= self._stop_by:
                if self.rereadable():
                    return False
                self._stop_by = float("inf")
            if now >= checkpoint_at:
                self.checkpoint()
                checkpoint_at = now + 1.0
            # no chunk crosses replay_to: what is emitted while reading up to it is known
            limit = self.replay_to - self.pos if self.replay_to > self.pos else len(self.buf)
            n = os.readv(self.fd, [memoryview(self.buf)[:limit]])
            if n == 0:
                return True
            at = self.pos
            if self.replay_to and at >= self.replay_to:
                self._replayed()
            if at == len(self._prefix) < HEAD_BYTES:  # the file's first bytes, as read
                self._prefix += self.buf[:min(n, HEAD_BYTES - at)]
            self.pos += n
            if self._hole:  # NUL bytes at the start of a truncated file: no line's
                skip = n - len(self.buf[:n].lstrip(b"\0"))
                self._hole = skip == n
                self._origin += skip
                self.buf[:n - skip] = self.buf[skip:n]
                at, n = at + skip, n - skip
            last_nl = self.buf.rfind(b"\n", 0, n)
            if last_nl >= 0:
                self.complete = at + last_nl + 1
            if n:
                self.reader.on_chunk(self.buf, n)
            if self.replay_to and self.pos >= self.replay_to and not self._replay_waits:
                self._replayed()
            await asyncio.sleep(0)

    def _replayed(self) -> None:  # (the reading again is over: what comes next is new)
        self.reader.on_replayed()  # what the lines read again still hold back goes now
        self.replay_to = 0

    def _changed(self) -> str | None:
        """:data:`ROTATED`, :data:`TRUNCATED` or ``None`` for the open file."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None  # moved away, not yet recreated: keep reading the old one
        if (st.st_dev, st.st_ino) != self.ident:
            # an empty file at PATH: logrotate's ``create`` made it, and the writer may go on
            # in the renamed one (a shell redirect never reopens): read on there until a
            # writer writes to the new file
            return ROTATED if st.st_size else None
        if os.fstat(self.fd).st_size < self.pos or self._rewritten():
            return TRUNCATED
        return None

    def _rewritten(self) -> bool:
        """Whether the open file's first bytes changed: truncated, then written past our
        position between two polls (``copytruncate`` and a fast writer)."""
        seen = self._prefix
        try:
            return bool(seen) and os.pread(self.fd, len(seen), 0) != seen
        except OSError:
            return False

    def _current_head(self) -> str:
        """The :func:`head` of the file open (or last closed); ``""`` when it cannot be read."""
        if self.fd < 0:
            return self._closed_head
        try:
            return head(self.fd)
        except OSError:
            return ""

    def _head_of(self, pos: Position) -> str:
        """The :func:`head` of ``pos``'s file when it is the current one, else ``""``."""
        return self._current_head() if self.ident == (pos.dev, pos.ino) else ""

    def rereadable(self) -> bool:
        """Whether a next start can read the open file again (at PATH, or rotated away)."""
        return self._named(self.ident) is not None

    def checkpoint(self) -> None:
        """Take a checkpoint when the lines read leave no turn or workflow open, or may be
        resumed from (:meth:`Followed.resumable`) with a session open (a restart reads again
        from the session's first line, exporting up to here), or record the workflows exported
        since the last; save those settled."""
        if self.ident is not None and not self._lost and not self.replay_to:
            dev, ino = self.ident
            last = self._unsettled[-1][0] if self._unsettled else self.saved
            last = last if last is not None and (last.dev, last.ino) == self.ident else None
            done = self._workflows(self._base_workflows)
            pos = None
            quiet = self.reader.is_quiet()
            sessions = self.reader.has_sessions()
            refs = self.reader.session_refs() if sessions else ()
            if quiet:  # (where a stop's position resumes: nothing it ends is read from its middle)
                self._quiet = self.complete
                if not sessions:  # (those ended in the lines now behind the base are remembered)
                    self._base, done, self._base_workflows = self.complete, (), ()
                    self._base_continued = newest(self._base_continued, self.reader.quiet_refs())
                self._quiet_sessions = refs
            elif self.reader.nothing_open():  # (records held for a timestamp: a stop hands them on)
                self._quiet, self._quiet_sessions = self.complete, refs
            elif (line := self.reader.quiet_line()) is not None and self._origin + line[0] > self._quiet:
                # (quiet between two checkpoints: a stop reads again from there, not from the
                # last checkpoint that found nothing open, maybe megabytes back in a backlog)
                self._quiet, self._quiet_sessions = self._origin + line[0], line[1]
            if sessions and (quiet or self.reader.resumable()) and (
                    begin := self.reader.sessions_begin()) is not None and self._origin + begin > self._base:
                # back-to-back runs: one session is always open, and those before it ended
                self._base = self._origin + begin
                self._base_continued = newest(self._base_continued, self.reader.quiet_refs()
                                              + self.reader.continuation_refs())
            if quiet or (sessions and self.reader.resumable()):
                going_on = {ref[0] for ref in self.reader.continuation_refs()}  # (ids from the span before)
                pos = Position(dev, ino, self._base, self.complete, done,
                               tuple(ref for ref in refs if ref[0] not in going_on), self._base_continued, self.salt)
            elif last is not None and done != last.workflows:  # exported with no quiet point since
                pos = replace(last, workflows=done, salt=self.salt, stopped=False)
            if pos is not None and pos != self.saved and (not self._unsettled or self._unsettled[-1][0] != pos):
                self._unsettled.append((pos, self.reader.handed()))
        self.save_settled()

    def rollback(self, stopping: bool = False) -> None:
        """An export of this run failed: the position stays at the last checkpoint saved (its
        spans all exported), read again from once spans are taken again (``stopping``: by the
        next start, said again). Every span handed on after a checkpoint is made again by
        reading from it (what was open then begins past it)."""
        if not self._lost or stopping:
            again = not stopping and self._reads_again()
            at = f" (byte {self.saved.offset} of {str(self.path)!r})" if self.saved is not None else ""
            self.say(f"export failed: the follow position stays at the last point whose spans were all "
                     f"exported{at}, read again from there "
                     + ("once the collector takes spans again" if again else "by the next start"))
        self._lost = True
        self._unsettled.clear()

    def _reads_again(self) -> bool:
        """Whether spans lost now are read again in this process (else by the next start)."""
        return self.saved is not None and self._may_read_again(self.saved)

    def _workflows(self, known: tuple[str, ...]) -> tuple[str, ...]:
        """``known`` and the task ids of the workflows this run exported, the newest
        :data:`MAX_WORKFLOWS`."""
        return tuple(dict.fromkeys(known + self.reader.exported()))[-MAX_WORKFLOWS:]

    def stopped(self, ended: tuple[SessionRef, ...] = (),
                quiet: tuple[SessionRef, ...] = ()) -> None:
        """The run ended every span it exports at a stop, the sessions ``ended`` among them
        (``session_refs()`` before the stop), after those another session's ``init`` ended
        (``quiet_refs()``): a checkpoint at the last point with no turn or workflow open whose
        ``read_to`` is the end of what was read, saved once settled."""
        if self.ident is None or self._lost:
            return
        saved = self.saved
        if self.replay_to:  # nothing read past what the run before read: its position stands
            self._keep_saved()
            return
        last = self._unsettled[-1][0] if self._unsettled else saved
        if last is not None and (last.dev, last.ino) == self.ident:
            done = self._workflows(last.workflows)
            # read again from the last point with nothing open, to rebuild what the stop ended;
            # a session that goes on counts its turns and cost on from there (one begun after: 0)
            at_quiet = {ref[0]: ref[3:] for ref in self._quiet_sessions}
            stop_ended = tuple((sid, trace_id, span_id, *at_quiet.get(sid, (0, 0.0, 0.0, None, None)))
                               for sid, trace_id, span_id, *_ in ended)
            met = {ref[0] for ref in ended}  # (those another's init ended: all their turns)
            continued = tuple((*ref[:4], *at_quiet[ref[0]][1:]) if ref[0] in at_quiet else ref
                              for ref in quiet if ref[0] not in met)
            met |= {ref[0] for ref in quiet}  # (and those a stop before ended, not met again)
            continued += tuple(ref for ref in self._quiet_sessions if ref[0] not in met)
            # (and those runs before ended, not met since: a resumed session comes back later;
            # the newest kept, and those this stop ended last: they are read again first)
            continued = newest(self._base_continued, continued + stop_ended)
            self._unsettled.append((Position(last.dev, last.ino, self._quiet, self.complete, done,
                                             continued=continued, salt=self.salt, stopped=True),
                                    self.reader.handed()))

    def handed_over(self) -> None:
        """A stop that ends nothing (``follow --handover``): the position stays the last
        checkpoint, as after a kill: the next start reads again from the first line of the
        sessions open there, exporting nothing up to where this run's exported spans end, and
        rebuilds what is open with the same ids (those exported under it find their parent)."""
        if self.ident is not None and not self._lost and self.replay_to:
            self._keep_saved()  # (else the checkpoint :meth:`run` took last is that position)

    def _keep_saved(self) -> None:
        """Stopped while reading again what the run before read: its position stands, with the
        workflows this run exported (ended in the lines read again)."""
        saved = self.saved
        if saved is not None and (saved.dev, saved.ino) == self.ident:
            done = self._workflows(saved.workflows)
            if done != saved.workflows:
                self._unsettled.append((replace(saved, workflows=done), self.reader.handed()))

    def save_settled(self) -> None:
        """Save the newest checkpoint whose spans are exported (best effort)."""
        newest = None
        while self._unsettled:
            pos, handed = self._unsettled[0]
            settled = self.reader.settled(handed)
            if settled is None:
                break
            if settled is False:
                self.rollback()
                break
            newest = self._unsettled.popleft()[0]
        if newest is not None:
            self._save(newest)

    def _save(self, pos: Position) -> None:
        if pos == self.saved:
            return
        try:
            save_position(self.state_file, pos, self.path, self._head_of(pos))
            self.saved, self._unsaved = pos, None
        except OSError as exc:
            if exc.strerror != self._unsaved:  # (a read-only state directory fails at every poll)
                self._unsaved = exc.strerror
                self.say(f"cannot save follow position in {str(self.state_file)!r}: {exc.strerror}; "
                         "a restart cannot resume from here (set --state-dir to a writable directory)")

    # ------------------------------------------------------------------ loop

    async def run(self) -> None:
        self._stopped = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self._stop_requested:  # stopped as it started: the file is still read once
            self._stopped.set()
            self._open(True)
        waiting_said = False
        resume = True
        try:
            while not self._stopped.is_set():
                if self.fd < 0:
                    if not self._open(resume):
                        if not waiting_said:
                            self.say(f"waiting for {str(self.path)!r} to appear")
                            waiting_said = True
                        self.from_start = True  # it will be new to us: read it all
                        await self._sleep()
                        continue
                    resume = False
                change = self._changed()  # before reading on: past our position may lie
                if change == ROTATED:     # another text's middle
                    if not await self._drain():  # the last writes to the old file
                        break  # (stopped: its rest is the next start's, before the new file)
                    old = self._named(self.ident)  # (rotated again since: those files first)
                    self._rotated = rotated_since(self.path, old[0]) if old and not self._copied else []
                    self._close()
                    if self._copied:  # copytruncate's copy read: the file at PATH goes on with
                        self.reader.on_switch(TRUNCATED)  # the same stream
                        self._open(False, same_stream=True)
                        continue
                    self.reader.on_switch(ROTATED)
                    self._open(False)
                    continue
                if change == TRUNCATED:
                    if not await self._read_copy():
                        break  # (stopped: the copy's rest is the next start's)
                    self._from_the_start()
                    continue
                await self._drain()
                self.checkpoint()
                if self._lost and self._reads_again() and self.reader.taking_again():
                    self.taking_again = True
                    return
                await self._sleep()
            await self._drain()  # stopped: what was written since the last poll is read too
        finally:
            self.checkpoint()
            found = self._named(self.ident) if self.fd >= 0 else None
            if found is not None and found[1] > self.pos:
                self.unread = (found[0], found[1] - self.pos)
            self._close()

    async def _read_copy(self) -> bool:
        """The open file was truncated: what it held past our position, written before the
        cut, is read from its copy (``copytruncate``), if there is one. ``False``: a stop's
        budget cut it short."""
        copy = copy_of(self.path, head_of(self._prefix), self.pos) if self._prefix else None
        if copy is None:
            return True
        try:
            fd = os.open(copy, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return True
        os.lseek(fd, self.pos, os.SEEK_SET)
        self.fd, truncated = fd, self.fd
        try:
            return await self._drain()
        finally:
            os.close(fd)
            self.fd = truncated

    def _from_the_start(self) -> None:
        """The open file was truncated: read it again from its start, NUL bytes skipped."""
        if self.replay_to:
            self._replayed()
        self.reader.on_switch(TRUNCATED)
        os.lseek(self.fd, 0, os.SEEK_SET)
        self._origin -= self.pos  # (the reader's count goes on: a session begun before is before 0)
        self.pos = self.complete = self._base = self._quiet = 0
        self._quiet_sessions = self._base_continued = self._base_workflows = ()
        self._prefix = b""
        self._hole = True

    async def _sleep(self) -> None:
        try:
            await asyncio.wait_for(self._stopped.wait(), self.poll_s)
        except asyncio.TimeoutError:
            pass
