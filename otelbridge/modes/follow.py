"""``otelbridge follow PATH``: trace what a CLI writes to PATH (``tail -F``, an offset file) until
SIGTERM/SIGINT/SIGHUP. Workflows still open at the stop are not exported: the offset file makes the next
start read them again from their first line (see :mod:`otelbridge.source.follow`) — unless their
file is no longer at PATH. With ``--handover`` nothing open ends at the stop, sessions and turns
neither: the next start rebuilds them as after a kill. A new file at PATH is a stream of its own."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
from collections import deque
from collections.abc import Callable
from pathlib import Path

from ..config import Config
from ..deadline import Deadline
from ..events import SpanRecord
from ..messages import say
from ..pipeline import Pipeline, SpanSink, WaitForExporters, private_stdout
from .. import source
from ..source import interrupted_by
from ..source.follow import TRUNCATED
from ..source.position import MAX_WORKFLOWS
from ..stats import Stats
from ..tracker.base import SessionRef
from .loop import install_loop


#: Lines, none of them JSON, after which a run of ``follow`` says what it reads.
NOT_JSON_SAID_AFTER = 10

#: Records read again and not passed that :class:`HoldUntilClosed` keeps, at most.
MAX_WITHHELD = 10_000


class HoldUntilClosed:
    """A workflow's records (those with ``workflow.task_id``) are passed to ``sink`` only when
    its root record comes, i.e. when the run has ended. At a stop mid-workflow, :meth:`discard`
    drops the held ones: the next start re-reads that workflow from the offset file's checkpoint
    and exports it once, whole. Other records pass at once. While :attr:`replaying` says so (a
    restart reading again what the last run exported), nothing passes but workflows; a workflow
    a run before exported (:attr:`exported`) never passes; :attr:`released` lists the task ids
    of the workflows passed. With :attr:`fill_in` (the lines read again make new spans: after a
    stop), a record not passed while re-reading passes after all when one passed later names
    it as its parent (a background task whose tool call had ended)."""

    def __init__(self, sink: SpanSink) -> None:
        self.sink = sink
        self.held: dict[tuple, list[SpanRecord]] = {}
        #: stopping: the workflows ended by the stop are held too (then discarded)
        self.stopping = False
        self.replaying: Callable[[], bool] = lambda: False
        self.exported: frozenset[str] = frozenset()
        self.released: deque[str] = deque(maxlen=MAX_WORKFLOWS)
        self.fill_in = False
        #: records not passed while re-reading, by span id (the newest :data:`MAX_WITHHELD`)
        self.withheld: dict[int, SpanRecord] = {}

    def emit(self, rec: SpanRecord) -> None:
        attrs = rec.attributes
        task_id = attrs.get("workflow.task_id")
        if task_id is None:
            if self.replaying():
                if self.fill_in:
                    self.withheld[rec.span_id] = rec
                    if len(self.withheld) > MAX_WITHHELD:
                        del self.withheld[next(iter(self.withheld))]
                return
            parents = []
            parent = self.withheld.pop(rec.parent_span_id, None) if self.withheld else None
            while parent is not None:  # its parent, and theirs, read again and not passed
                parents.append(parent)
                parent = self.withheld.pop(parent.parent_span_id, None)
            for one in reversed(parents):
                self.sink.emit(one)
            self.sink.emit(rec)
            return
        key = (rec.trace_id, attrs.get("gen_ai.conversation.id"), task_id)
        if self.stopping or attrs.get("gen_ai.operation.name") != "invoke_workflow":
            self.held.setdefault(key, []).append(rec)
            return
        held = self.held.pop(key, ())
        if str(task_id) in self.exported:  # read again, also when it ends past what was read
            return
        for one in held:
            self.sink.emit(one)
        self.sink.emit(rec)
        self.released.append(str(task_id))

    def discard(self) -> int:
        """Drop every held record; returns how many."""
        count = sum(len(v) for v in self.held.values())
        self.held.clear()
        return count


class TracedFile:
    """The :class:`~otelbridge.source.followed.Followed` that ``follow`` gives its follower: the
    pipeline, whose sink is a :class:`HoldUntilClosed`."""

    def __init__(self, pipeline: Pipeline, stats: Stats, path) -> None:
        self.pipeline, self.stats, self.path = pipeline, stats, path
        self._said_not_json = False
        assert isinstance(pipeline.sink, HoldUntilClosed)
        self.hold = pipeline.sink
        self.handed = pipeline.exporters.handed
        self.settled = pipeline.exporters.confirmed
        self.taking_again = pipeline.exporters.taking_again
        #: the start of the last line read before which no turn or workflow was open, and
        #: the open sessions' refs then (``None``: none in this stream)
        self._quiet_line: tuple[int, tuple[SessionRef, ...]] | None = None
        pipeline.before_line = self._before_line

    def _before_line(self, at: int) -> None:
        if self.nothing_open():
            self._quiet_line = at, self.pipeline.tracker.open_session_refs()

    def on_chunk(self, buf: bytearray, n: int) -> None:
        self.stats.bytes += n
        self.pipeline.on_chunk(buf, n)
        stats = self.stats
        if not self._said_not_json and stats.bad_lines >= NOT_JSON_SAID_AFTER and not stats.lines_decoded:
            # (said at the stop too, but a sidecar runs for a pod's life)
            self._said_not_json = True
            say(f"no line of {str(self.path)!r} so far is JSON ({stats.bad_lines} lines): follow reads "
                "the file the CLI's stdout goes to, not a container runtime's log of it (lines "
                "'TIME stdout F {...}')")

    def on_switch(self, kind: str) -> None:
        if kind == TRUNCATED:  # the partial line before the cut is gone
            self.pipeline.new_lines()
            return
        # rotated: a new file at the path is a new writer's (a CLI writing to a file keeps
        # writing to the old one): the old file's stream ends, its last line even without "\n"
        # complete, and the new one is a stream of its own (its own clock)
        self.pipeline.end_stream()
        self.pipeline.new_stream()
        self._quiet_line = None

    def on_open(self, salt: str) -> None:
        if not self.pipeline.cfg.deterministic_ids:  # (those are derived from the stream alone)
            self.pipeline.derive_ids(salt)

    def on_replayed(self) -> None:
        # a clock still waiting for a timestamp would hold the records of the lines read again
        # past the end of that stretch, and they would go out
        self.pipeline.settle_clock()
        self.pipeline.tracker.read_again()
        self._quiet_line = None  # (a stop's position is not moved back into what was read again)

    def nothing_open(self) -> bool:
        # (records the clock holds do not count: a stop hands them on)
        tracker = self.pipeline.tracker
        return tracker.open_workflows() == tracker.open_turns() == 0

    def is_quiet(self) -> bool:
        # (records held while the clock waits for a timestamp are not handed on yet)
        return self.nothing_open() and not self.pipeline.holding()

    def quiet_line(self) -> tuple[int, tuple[SessionRef, ...]] | None:
        return self._quiet_line

    def resumable(self) -> bool:
        return not self.pipeline.holding()  # (ids are derived: with a word, or --deterministic-ids)

    def has_sessions(self) -> bool:
        return self.pipeline.tracker.open_sessions() > 0

    def sessions_begin(self) -> int | None:
        return self.pipeline.tracker.sessions_begin()

    def continuation_refs(self) -> tuple[SessionRef, ...]:
        return self.pipeline.tracker.continuation_refs()

    def session_refs(self) -> tuple[SessionRef, ...]:
        return self.pipeline.tracker.open_session_refs()  # (a rotation: a new tracker)

    def quiet_refs(self) -> tuple[SessionRef, ...]:
        return self.pipeline.tracker.quiet_refs()

    def exported(self) -> tuple[str, ...]:
        return tuple(self.hold.released)


#: Runs that read again from one saved position after a lost export, at most (a collector that
#: loses some span of every reading again would have it read again for ever).
MAX_READS_AGAIN = 3


async def _run(cfg: Config, path, state_file, followers: list, stopped_by: list[int], *,
               from_start: bool, poll_s: float, again: list, salts: dict, handover: bool) -> int | None:
    """One run of ``follow`` (the only one in ``followers``; stopped at once when ``stopped_by``
    holds a signal): its exit status, or ``None`` when it lost spans and the exporters take
    spans again (:attr:`~otelbridge.source.follow.Follower.taking_again`): nothing it holds is
    exported, and a new run reads again from the saved position. ``again``: the positions runs
    before read again from; ``salts``: the words of the files opened (kept by the follower);
    ``handover``: a stop leaves what is open to the next start (:func:`_hand_over`)."""
    from ..source.follow import Follower
    from ..views import Report

    loop = asyncio.get_running_loop()
    stats = Stats()
    alive = True

    def call_later(delay_s: float, fn: Callable[[], None]) -> asyncio.TimerHandle:
        return loop.call_later(delay_s, lambda: fn() if alive else None)  # (none of a run left)

    # a backlog (--from-start, a restart) is read as fast as replay reads a file: it waits for
    # room in the export queue, as replay does, rather than let spans go; after a stop, no
    # longer than reading goes on (the follower, made below, exists before any span)
    # (a run after a lost export keeps the redactor: a secret found before is hidden after)
    pipeline = Pipeline(cfg, stats, report=Report(cfg, say), call_later=call_later, hold=HoldUntilClosed,
                        last=lambda exporters: WaitForExporters(exporters, lambda: follower.stop_deadline()),
                        keep_redaction=bool(again))
    reader = TracedFile(pipeline, stats, path)
    hold = reader.hold
    follower = Follower(path, reader, state_file=state_file, from_start=from_start, poll_s=poll_s,
                        say=say, stop_budget_s=max(1.0, cfg.flush_timeout_s / 2), salts=salts,
                        may_read_again=lambda saved: again.count(saved) < MAX_READS_AGAIN)
    followers[:] = [follower]
    hold.replaying = pipeline.tracker.ctx.replaying = lambda: follower.replay_to > 0
    # after a stop the lines read again make new spans (a session going on has its own): a
    # record passed then brings the ended ones it hangs from; after a kill, the same spans
    hold.fill_in = follower.saved is not None and follower.saved.stopped
    if follower.saved is not None:
        hold.exported = frozenset(follower.saved.workflows)
        pipeline.tracker.ctx.resume_sessions(follower.saved.sessions)
        pipeline.tracker.ctx.continue_sessions(follower.saved.continued, follower.saved.workflows)
    if stopped_by:
        follower.stop()
    code = 0
    try:
        await follower.run()
    except IsADirectoryError as exc:
        say(str(exc))
        code = 2
    if follower.taking_again and not stopped_by:
        # as after a kill: what this run holds is made again by reading from the saved position;
        # what its exporters still hold goes on its own (the same spans again, with their ids)
        alive = False
        pipeline.exporters.shutdown(Deadline.after(0))
        return None
    if follower.unread is not None:
        left, nbytes = follower.unread
        say(f"stopped with {nbytes} bytes of {str(left)!r} not read yet: the next start reads them")
    open_runs = pipeline.tracker.open_workflows()
    rereadable = follower.rereadable()
    hold.stopping = rereadable
    left_open = False  # (what it read is the next start's to trace: "nothing traced" is not said)
    if handover and rereadable:
        # nothing ends: the next reader rebuilds what is open from the last checkpoint, as
        # after a kill, and exports it once, when it ends (the trace one reader would make)
        left_open = _hand_over(pipeline, follower)
    else:
        if handover:
            say(f"--handover: the file followed is no longer at {str(path)!r} nor beside it, so no "
                "next start can read it again: what is open ends now, as at any stop")
        # sessions, turns and tasks end now (exported: nothing seen is dropped silently);
        # workflows cut by the stop are discarded and read again from the checkpoint — unless
        # their file is no longer at the path, where no start can read them again
        # a last line without "\n" in a file still at the path is one being written: the next
        # start reads it whole (the position ends before it)
        ended, quiet = reader.session_refs(), reader.quiet_refs()
        pipeline.end_stream(interrupted_by(stopped_by[0]) if stopped_by else None,
                            last_line=not rereadable)
        follower.stopped(ended, quiet)  # a restart exports none of it again
    dropped = hold.discard()
    if open_runs and rereadable:
        say(f"{open_runs} workflow(s) still open at stop: not exported now, the next "
            f"start reads them again and exports them whole ({dropped} spans held so far, let go)")
    elif open_runs:
        say(f"{open_runs} workflow(s) still open at stop in a file no longer at "
            f"{str(path)!r}: exported as they stand")
    all_exported = pipeline.exporters.shutdown(Deadline.after(cfg.flush_timeout_s))
    if all_exported:
        follower.save_settled()  # the checkpoints whose spans the flush exported
    else:  # some span of this run is lost: the next start reads again from the last saved
        follower.rollback(stopping=True)
    return pipeline.report_and_exit_code(code, all_exported, tee=False,
                                         read_again=follower.replay_to > 0 or left_open)


def _hand_over(pipeline: Pipeline, follower) -> bool:
    """A stop with ``--handover``: the open sessions, turns and calls are neither ended nor
    exported (what the clock holds for a timestamp neither); the position stays the last
    checkpoint (:meth:`~otelbridge.source.follow.Follower.handed_over`). Said on stderr;
    ``True`` when a session was left open."""
    follower.handed_over()
    tracker = pipeline.tracker
    sessions, turns = tracker.open_sessions(), tracker.open_turns()
    if sessions:
        say(f"--handover: {sessions} session(s) ({turns} with a turn open) left open for the next "
            "start, which reads them again from their first line and exports them when they end")
    return sessions > 0


async def _sole_follower(state_file: Path, path, stopped_by: list[int], poll_s: float) -> bool:
    """Hold the lock of ``state_file`` (``{state_file}.lock``, ``flock``) for the process's
    life, waiting while another ``follow`` of ``path`` with this state directory holds it (a
    rollout's old pod still stopping on a shared volume): two would trace every line twice.
    ``False``: stopped while waiting. A lock file that cannot be made, or a file system
    without locks, locks nothing (where the lock file cannot be made, the offset file cannot
    be saved either, which is said)."""
    try:
        state_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{state_file}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return True
    said = False
    while True:  # (a stop that came while starting still reads what the file holds, if free)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if stopped_by:
                break
            if not said:
                said = True
                say(f"another otelbridge follows {str(path)!r} with this state directory: waiting "
                    "for it to stop, then going on from where it stopped (two would trace every line twice)")
            await asyncio.sleep(poll_s)
            continue
        except OSError:  # a file system without locks (some NFS): none held, as before
            break
        return True  # (fd stays open: the lock is held until the process ends)
    os.close(fd)
    return not stopped_by


def follow(cfg: Config, path, state_dir, *, from_start: bool = False, poll_s: float = 0.25,
           handover: bool = False) -> int:
    """Exit status 0 (or 1 with ``--fail-on-export-error`` and lost spans); 2 when PATH is not a
    regular file. After a lost export, once the exporters take spans again, a new run (its own
    pipeline and follower) reads again from the saved position, as the next start would (at
    most :data:`MAX_READS_AGAIN` times from one position)."""
    from ..source.position import offset_file

    private_stdout(cfg)
    install_loop()

    async def main() -> int:
        followers: list = []
        stopped_by: list[int] = []

        def stop(signum: int) -> None:
            stopped_by.append(signum)
            if followers:
                followers[-1].stop()

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            # a handler of the interpreter's, not the loop's: it runs also while a wait for the
            # exporters holds the loop (a backlog against a slow or dead collector)
            signal.signal(signum, lambda signum, _frame: stop(signum))
        stopped_by.extend(source.EARLY_SIGNALS[:1])  # came while starting (recorded by __main__)
        state_file = offset_file(state_dir, path)
        if not await _sole_follower(state_file, path, stopped_by, poll_s):
            return 0
        again: list = []  # (the positions read again from)
        salts: dict = {}
        while True:
            code = await _run(cfg, path, state_file, followers, stopped_by,
                              from_start=from_start, poll_s=poll_s, again=again, salts=salts,
                              handover=handover)
            if code is not None:
                return code
            again.append(followers[-1].saved)
            say(f"reading {str(path)!r} again from the last point whose spans were all exported: "
                "the spans lost are made and sent again")

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return 130
