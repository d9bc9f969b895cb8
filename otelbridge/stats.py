"""Counters of one run, printed as one stderr line at exit and written by ``--stats-json``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .messages import say

if TYPE_CHECKING:
    from .config import Config

#: The exit status ``--fail-on-export-error`` turns a 0 into when spans were lost.
EXIT_EXPORT_FAILED = 1

#: Why built spans went to no exporter (:attr:`Stats.not_exported_reason`): the SDK is off, none
#: was asked for (``--exporter none``), or none asked for could be set up (the start said why).
SDK_DISABLED, EXPORTER_NONE, NO_USABLE_EXPORTER = ("OTEL_SDK_DISABLED", "exporter none",
                                                   "no usable exporter")


class Stats:
    """Everything otelbridge counts. All counts are plain ints (0 unless given by name);
    ``bytes`` is the passthrough total."""

    bytes: int
    lines: int
    lines_decoded: int
    #: lines the live tee skipped (a gap: decoding had fallen behind; source/feed.py) —
    #: every line a skipped part touches, whether or not a dialect would have wanted it (the tee
    #: does not look inside what it skips); their bytes were passed through all the same.
    #: ``lines`` = lines looked at (decoded, unwanted, bad, overlong) + ``lines_not_decoded``
    lines_not_decoded: int
    bytes_not_decoded: int
    bad_lines: int
    overlong_lines: int
    spans_started: int
    spans_exported: int
    spans_dropped: int
    #: spans built but not exported by the sampler's decision (``OTEL_TRACES_SAMPLER``, an
    #: unsampled ``TRACEPARENT``): ``spans_started`` = exported + dropped + sampled out
    spans_sampled_out: int
    #: spans built (the reports show them) that no exporter took because there is none, for
    #: :attr:`not_exported_reason`: ``spans_started`` = exported + dropped + sampled out + these
    spans_not_exported: int
    late_events_ignored: int
    duplicate_notifications: int
    agents_capped: int
    session_events_capped: int
    events_capped: int
    session_events_unclaimed: int
    bernstein_runs_without_terminal: int
    # sessions (tracker/sessions.py)
    session_items_capped: int
    duplicate_results: int
    seq_gaps: int
    #: spans the tracker's state budget ended early (tracker/budget.py), interrupted
    state_budget_ended: int

    COUNTERS = tuple(__annotations__)
    __slots__ = (*COUNTERS, "not_exported_reason")

    def __init__(self, **counts: int) -> None:
        for name in self.COUNTERS:
            setattr(self, name, counts.pop(name, 0))
        #: why there is no exporter (:data:`SDK_DISABLED`, :data:`EXPORTER_NONE` or :data:`NO_USABLE_EXPORTER`), said with ``spans_not_exported``
        self.not_exported_reason: str | None = None
        if counts:
            raise TypeError(f"Stats has no counter {next(iter(counts))!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stats) and other.as_dict() == self.as_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Stats({', '.join(f'{k}={v}' for k, v in self.as_dict().items() if v)})"

    @property
    def lines_not_wanted(self) -> int:
        """Lines looked at that no dialect wants (no dialect's marker in them, or a raw dialect
        claimed them for nothing): what is left of ``lines`` after decoded, bad, overlong and
        not decoded — every line counted in ``lines`` is exactly one of the five. (A line a
        dialect failed on after it decoded also counts as bad; never below 0.)"""
        return max(0, self.lines - self.lines_decoded - self.bad_lines - self.overlong_lines
                   - self.lines_not_decoded)

    def as_dict(self) -> dict[str, int | str | None]:
        """Every counter by name, ``lines_not_wanted`` included, and
        ``spans_not_exported_reason`` (``None`` when no span was left unexported) (``--stats-json``)."""
        return {**{name: getattr(self, name) for name in self.COUNTERS},
                "lines_not_wanted": self.lines_not_wanted,
                "spans_not_exported_reason":
                    self.not_exported_reason if self.spans_not_exported else None}

    def line(self) -> str:
        """The one-line human summary for stderr; the caps that were hit, if any, at its end."""
        caps = ", ".join(
            f"{count} {what}" for count, what in (
                (self.agents_capped, "agents"), (self.session_items_capped, "session items"),
                (self.session_events_capped + self.events_capped, "events"),
            ) if count
        )
        return (
            f"otelbridge: {self.bytes} byte{'s' * (self.bytes != 1)}, "
            f"{self.lines} line{'s' * (self.lines != 1)}, {self.lines_decoded} decoded, "
            f"{self.lines_not_wanted} not wanted, "
            f"{self.lines_not_decoded} not decoded (behind), {self.bad_lines} bad, {self.overlong_lines} "
            f"overlong; spans {self.spans_started} built, {self.spans_exported} exported, "
            f"{self.spans_dropped} dropped"
            + (f", {self.spans_sampled_out} sampled out" if self.spans_sampled_out else "")
            + (f", {self.spans_not_exported} not exported ({self.not_exported_reason})"
               if self.spans_not_exported else "")
            + f"; {self.late_events_ignored} late events ignored"
            + (f"; {self.state_budget_ended} ended early (state budget)" if self.state_budget_ended else "")
            + (f"; over caps, not tracked: {caps}" if caps else "")
        )

    def write_json(self, path: str) -> None:
        """Write the counters as a JSON object to ``path``, mode 0600
        (:func:`otelbridge.files.open_private`). Raises ``OSError``."""
        from .files import open_private

        with open_private(path) as fh:
            json.dump(self.as_dict(), fh, indent=1, sort_keys=True)
            fh.write("\n")


#: The streams otelbridge traces, as the line saying none came names them.
STREAMS = "stream-json of Claude Code, cbc, milk or Caudra, one JSON object a line; Bernstein signals"


def nothing_traced(cfg: Config, stats: Stats, live: bool = False) -> str | None:
    """Why no line made a span (what was traced then, and what to do), or ``None``: some did.
    ``live``: the stream was the tee's (an empty one is said in pipe mode; a wrapped command's run
    span says how it ended; ``replay`` and ``follow`` say what they could not read)."""
    # (a line may decode and make no span: another CLI's JSON that shares a type's name;
    # in wrapper mode decoded lines may be the run span's own: Bernstein signals)
    traced = "only the command's run was traced" if cfg.command else "nothing was traced"
    if not stats.lines:  # (a CLI that failed before its first line says why on its stderr; a
        # wrapped one's run span says how it ended)
        return ("the input was empty, so nothing was traced (for Claude Code: claude -p "
                "--output-format stream-json --verbose)") if live and not cfg.command else None
    if stats.lines_decoded and (stats.spans_started or cfg.command):
        return None
    streams = f"--dialect {', '.join(cfg.dialects)} only" if cfg.dialects else STREAMS
    if stats.lines_decoded:
        return f"the lines decoded showed no session, turn or workflow ({streams}), so {traced}"
    return f"no line was of a stream otelbridge traces ({streams}), so {traced} " + (
        f"({stats.bad_lines} line{'s' * (stats.bad_lines != 1)} not valid JSON)" if stats.bad_lines
        else "(another --dialect?)" if cfg.dialects
        else "(for Claude Code: claude -p --output-format stream-json --verbose)")


def not_decoded(stats: Stats) -> str | None:
    """What a live stream's decoding skipped (it fell behind), for the views whose totals miss
    it, or ``None``: it read every line."""
    n = stats.lines_not_decoded
    if not n:
        return None
    return (f"decoding fell behind the stream and skipped {n:,} line{'s' * (n != 1)} unread, "
            "so these traces and totals may be incomplete")


def counts_and_exit_code(cfg: Config, stats: Stats, problem: str | None, code: int,
                         all_exported: bool, tee: bool = True, read_again: bool = False,
                         live: bool = False, reader_left: bool = False) -> int:
    """The counts line on stderr unless ``--quiet`` (and, when no line was of a stream it reads,
    a line saying so; that the input passed through when ``tee``, up to where its reader left
    when ``reader_left``; ``read_again``: every line
    read was one a run before traced, ``follow`` after a restart, and nothing is said of them;
    ``live``: an empty input is said too, :func:`nothing_traced`), then ``problem`` (lost spans) even so,
    ``--stats-json``, and the exit status (``--fail-on-export-error`` turns 0 into 1 when spans
    were lost)."""
    if not cfg.quiet:
        say(stats.line()[len("otelbridge: "):])
        said = None if read_again else nothing_traced(cfg, stats, live)
        if said:
            passed = " until its reader closed the stream" * reader_left
            say(said + f"; the input passed through{passed}" * (tee and stats.lines > 0))
        if stats.overlong_lines:  # (a result there: its session and turn end incomplete, no cost)
            n = stats.overlong_lines
            say(f"{n} line{'s were' if n != 1 else ' was'} longer than --max-line ({cfg.max_line:,} bytes): "
                f"{'passed through, ' * tee}not decoded (what a tool, turn or session left open there "
                f"ended incomplete); raise --max-line to trace what {'they' if n != 1 else 'it'} held")
    if problem:
        say(problem)
    if cfg.stats_json:
        try:
            stats.write_json(cfg.stats_json)
        except OSError as exc:
            say(f"cannot write --stats-json {cfg.stats_json!r}: {exc.strerror}")
    if cfg.fail_on_export_error and not all_exported and code == 0:
        code = EXIT_EXPORT_FAILED
    return code
