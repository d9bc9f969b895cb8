"""``otelbridge replay FILE...``: recorded streams → traces, every line decoded, span production
paced by the exporters (a file can wait; no queue overflow)."""

from __future__ import annotations

import contextlib
import os
import sys

from ..config import Config
from ..deadline import Deadline
from ..messages import say
from ..events import SpanRecord
from ..pipeline import Pipeline, SpanSink, WaitForExporters, private_stdout
from ..resource import REPLAY_INSTANCE_ID
from ..source.replay import read_file
from ..stats import Stats
from ..tracker.base import SessionRef

#: ``error.type`` of what the end of a stream cut (a session or turn before its result, a
#: tool call before its result, a sub-agent before its end)
INCOMPLETE = "incomplete"
#: Replays of at least this many bytes show a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 8 * 1024 * 1024


def _progress(total: int):
    """A rich progress bar on stderr for ``total`` bytes, or ``None`` (not a terminal, small)."""
    if total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    from ..waterfall import stderr_console

    return Progress("replay", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    TimeRemainingColumn(), console=stderr_console(), transient=True,
                    redirect_stdout=False, redirect_stderr=True)


class LaterFileGoesOn:
    """``replay``'s sink: a workflow's records (``workflow.task_id``) pass when its root does.
    One that its file ended before it closed (its root ``workflow.status`` = ``incomplete``)
    waits while files are still to come (:attr:`more`): a log cut in two shows it again in the
    next file, whose progress snapshots hold every agent so far, with the same ids (derived from
    its task). Then only that later reading passes, with what only the first file's lines
    gave (:func:`_fill_in`); a workflow no later file shows passes at the end
    (:meth:`flush`). Likewise what of a session its file's end cut (:data:`INCOMPLETE`: its
    span and turn before their result, a tool call before its own) waits: when a later file
    shows that conversation again (it goes on there, in a span linked to this one), it passes
    ended without an error; else, at the end, as it is. Other records pass at once."""

    def __init__(self, sink: SpanSink) -> None:
        self.sink = sink
        #: files are still to come after the one read now
        self.more = False
        self.held: dict[tuple[int, str], list[SpanRecord]] = {}
        #: workflows a file ended before they closed, root last
        self.cut: dict[tuple[int, str], list[SpanRecord]] = {}
        #: the file read now (0 first); conversation id → the file whose end cut its session,
        #: and the records it cut
        self.file = 0
        self.cut_sessions: dict[str, tuple[int, list[SpanRecord]]] = {}

    def emit(self, rec: SpanRecord) -> None:
        task_id = rec.attributes.get("workflow.task_id")
        if task_id is None:
            conv = rec.attributes.get("gen_ai.conversation.id")
            if conv is not None and self.cut_sessions:
                self._gone_on(str(conv))
            if self.more and rec.error_type == INCOMPLETE and conv is not None:
                self.cut_sessions.setdefault(str(conv), (self.file, []))[1].append(rec)
                return
            self.sink.emit(rec)
            return
        key = (rec.trace_id, str(task_id))
        held = self.held.setdefault(key, [])
        held.append(rec)
        if rec.attributes.get("gen_ai.operation.name") != "invoke_workflow":
            return
        del self.held[key]
        before = self.cut.pop(key, None)
        if before is not None:
            _fill_in(held, before)
        if self.more and rec.attributes.get("workflow.status") == "incomplete":
            self.cut[key] = held
            return
        for one in held:
            self.sink.emit(one)

    def _gone_on(self, conv: str) -> None:
        """A record of conversation ``conv``: if a file before this one ended its session
        before its result, that session went on here: what waits of it passes, not an error."""
        file, records = self.cut_sessions.get(conv, (self.file, ()))
        if file == self.file:
            return
        del self.cut_sessions[conv]
        for one in records:
            one.error = one.error_type = None
            self.sink.emit(one)

    def flush(self) -> None:
        """Pass what waits: the workflows no later file showed again, records of a workflow
        whose root never came, and sessions no later file went on with."""
        for records in (*self.cut.values(), *self.held.values(), *(r for _, r in self.cut_sessions.values())):
            for one in records:
                self.sink.emit(one)
        self.cut.clear()
        self.held.clear()
        self.cut_sessions.clear()


#: What a workflow's spans know from its ``task_started``, which a later file's reading of it
#: lacks.
FROM_ITS_START = ("workflow.name", "workflow.description")


def _fill_in(later: list[SpanRecord], before: list[SpanRecord]) -> None:
    """The ``later`` reading of a workflow takes :data:`FROM_ITS_START` from the reading
    ``before``, span by span (the root its name too)."""
    known = {rec.span_id: rec for rec in before}
    for rec in later:
        had = known.get(rec.span_id)
        for key in FROM_ITS_START if had is not None else ():
            if key not in rec.attributes and key in had.attributes:
                rec.attributes[key] = had.attributes[key]
                if key == "workflow.name":
                    rec.name = had.name


def _modified_ns(path) -> int | None:
    """``path``'s modification time (epoch ns): the wall clock of a recording with no timestamp,
    when its last line was written, the same at every replay; ``None`` for stdin (its lines
    take the wall clock) or a file it cannot stat."""
    if str(path) == "-":
        return None
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def replay(cfg: Config, files: list) -> int:
    """Each file a stream of its own (fresh clock, tracker and decoder; grace windows timed by
    its stream clock, all closed at its end; a session an earlier file showed goes on, as after
    ``follow``'s stop), all into one set of exporters and one report.
    ``cfg`` comes with ``clock="stream"`` and ``deterministic_ids=True``; a file ``-`` is stdin.
    Returns the exit status: 0, 1 when a file could not be read (the others are still replayed)
    or when ``--fail-on-export-error`` and spans were lost."""
    from ..views import Report

    private_stdout(cfg)
    stats = Stats()
    pipeline = Pipeline(cfg, stats, report=Report(cfg, say), stream_timers=True,
                        last=WaitForExporters, hold=LaterFileGoesOn, instance_id=REPLAY_INSTANCE_ID)
    assert isinstance(pipeline.sink, LaterFileGoesOn)
    hold = pipeline.sink
    sizes = []
    for path in files:
        try:
            sizes.append(0 if str(path) == "-" else os.path.getsize(path))
        except OSError:
            sizes.append(0)
    progress = _progress(sum(sizes))
    code = 0

    def on_chunk(buf: bytearray, n: int) -> None:
        stats.bytes += n
        pipeline.on_chunk(buf, n)

    with progress if progress is not None else contextlib.nullcontext():
        task = progress.add_task("replay", total=sum(sizes)) if progress is not None else None
        if progress is not None:
            progress.refresh()  # drawn at once, however fast the replay
        advance = (lambda n: progress.advance(task, n)) if progress is not None else None
        seen: dict[str, SessionRef] = {}  # the sessions of the files before
        for i, path in enumerate(files):
            hold.file = i
            mtime = _modified_ns(path)
            if i or mtime is not None:
                pipeline.new_stream((lambda t=mtime: t) if mtime is not None else None)
            # a session a file before showed goes on here (resumed, or a log cut in two): a span
            # of its own in its trace, linked to the one before, its turns numbered on (not the
            # same ids again)
            pipeline.tracker.ctx.continue_sessions(tuple(seen.values()))
            try:
                read_file(path, on_chunk, advance)
            except OSError as exc:
                say(f"cannot read {str(path)!r}: {exc.strerror}")
                code = 1
            seen.update((ref[0], ref) for ref in pipeline.tracker.session_refs())
            hold.more = i + 1 < len(files)  # (what its end cuts waits for them)
            pipeline.end_stream()
            hold.more = False
        hold.flush()
    all_exported = pipeline.exporters.shutdown(Deadline.after(cfg.flush_timeout_s))
    return pipeline.report_and_exit_code(code, all_exported, tee=False)
