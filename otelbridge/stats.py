"""Counters of one run, printed as one stderr line at exit and written by ``--stats-json``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from .messages import say

if TYPE_CHECKING:
    from .config import Config

#: The exit status ``--fail-on-export-error`` turns a 0 into when spans were lost.
EXIT_EXPORT_FAILED = 1


@dataclass(slots=True)
class Stats:
    """Everything otelbridge counts. All counts are plain ints; ``bytes`` is the passthrough total."""

    bytes: int = 0
    lines: int = 0
    lines_decoded: int = 0
    #: lines the live tee skipped (a gap: decoding had fallen behind; source/feed.py) —
    #: every line a skipped part touches, whether or not a dialect would have wanted it (the tee
    #: does not look inside what it skips); their bytes were passed through all the same.
    #: ``lines`` = lines looked at (decoded, unwanted, bad, overlong) + ``lines_not_decoded``
    lines_not_decoded: int = 0
    bytes_not_decoded: int = 0
    bad_lines: int = 0
    overlong_lines: int = 0
    spans_started: int = 0
    spans_exported: int = 0
    spans_dropped: int = 0
    #: spans built but not exported by the sampler's decision (``OTEL_TRACES_SAMPLER``, an
    #: unsampled ``TRACEPARENT``): ``spans_started`` = exported + dropped + sampled out
    spans_sampled_out: int = 0
    late_events_ignored: int = 0
    duplicate_notifications: int = 0
    agents_capped: int = 0
    session_events_capped: int = 0
    events_capped: int = 0
    session_events_unclaimed: int = 0
    bernstein_runs_without_terminal: int = 0
    # sessions (tracker/sessions.py)
    session_items_capped: int = 0
    duplicate_results: int = 0
    seq_gaps: int = 0
    #: spans the tracker's state budget ended early (tracker/budget.py), interrupted
    state_budget_ended: int = 0

    @property
    def lines_not_wanted(self) -> int:
        """Lines looked at that no dialect wants (no dialect's marker in them, or a raw dialect
        claimed them for nothing): what is left of ``lines`` after decoded, bad, overlong and
        not decoded — every line counted in ``lines`` is exactly one of the five. (A line a
        dialect failed on after it decoded also counts as bad; never below 0.)"""
        return max(0, self.lines - self.lines_decoded - self.bad_lines - self.overlong_lines
                   - self.lines_not_decoded)

    def as_dict(self) -> dict[str, int]:
        """Every counter by name, ``lines_not_wanted`` included (``--stats-json``)."""
        return {**asdict(self), "lines_not_wanted": self.lines_not_wanted}

    def line(self) -> str:
        """The one-line human summary for stderr; the caps that were hit, if any, at its end."""
        caps = ", ".join(
            f"{count} {what}" for count, what in (
                (self.agents_capped, "agents"), (self.session_items_capped, "session items"),
                (self.session_events_capped + self.events_capped, "events"),
            ) if count
        )
        return (
            f"otelbridge: {self.bytes} bytes, {self.lines} lines, {self.lines_decoded} decoded, "
            f"{self.lines_not_wanted} not wanted, "
            f"{self.lines_not_decoded} not decoded (behind), {self.bad_lines} bad, {self.overlong_lines} "
            f"overlong; spans {self.spans_started} built, {self.spans_exported} exported, "
            f"{self.spans_dropped} dropped"
            + (f", {self.spans_sampled_out} sampled out" if self.spans_sampled_out else "")
            + f"; {self.late_events_ignored} late events ignored"
            + (f"; {self.state_budget_ended} ended early (state budget)" if self.state_budget_ended else "")
            + (f"; over caps, not tracked: {caps}" if caps else "")
        )

    def write_json(self, path: str) -> None:
        """Write the counters as a JSON object to ``path``, mode 0600
        (:func:`otelbridge.redact.open_private`). Raises ``OSError``."""
        from .redact import open_private

        with open_private(path) as fh:
            json.dump(self.as_dict(), fh, indent=1, sort_keys=True)
            fh.write("\n")


def counts_and_exit_code(cfg: Config, stats: Stats, problem: str | None, code: int,
                         all_exported: bool) -> int:
    """The counts line and ``problem`` (lost spans) on stderr unless ``--quiet``,
    ``--stats-json``, and the exit status (``--fail-on-export-error`` turns 0 into 1 when spans
    were lost)."""
    if not cfg.quiet:
        say(stats.line()[len("otelbridge: "):])
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
