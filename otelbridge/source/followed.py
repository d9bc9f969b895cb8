"""The seam between :class:`~otelbridge.source.follow.Follower` and what traces the file it
reads (``follow``'s pipeline, :class:`~otelbridge.modes.follow.TracedFile`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..tracker.base import SessionRef


class Followed(Protocol):
    """What :class:`Follower` feeds and asks: the pipeline that traces the followed file."""

    def on_chunk(self, buf: bytearray, n: int) -> None:
        """The next ``n`` bytes read, in ``buf[:n]``."""

    def on_switch(self, kind: str) -> None:
        """Before reading a new file at the path (:data:`ROTATED`) or a truncated one again
        (:data:`TRUNCATED`)."""

    def on_open(self, salt: str) -> None:
        """A file is opened, before its first line; ``salt``: its word, kept with its position
        (ids derived from it are the same spans when a restart reads it again)."""

    def on_replayed(self) -> None:
        """A restart has read again what the last run read (:attr:`Follower.replay_to`); what
        comes next is new."""

    def is_quiet(self) -> bool:
        """:meth:`nothing_open`, and no record of them held for a timestamp."""

    def nothing_open(self) -> bool:
        """Whether the lines read so far leave no turn or workflow open."""

    def quiet_line(self) -> tuple[int, tuple[SessionRef, ...]] | None:
        """Where the last line read before which :meth:`nothing_open` was true begins (bytes fed,
        as :meth:`sessions_begin`), with :meth:`session_refs` then; ``None``: none yet."""

    def resumable(self) -> bool:
        """Whether reading the lines read so far again makes the same spans, turns open or
        not, and none waits to be handed on (a restart after a kill may resume from them)."""

    def has_sessions(self) -> bool:
        """Whether a session is open."""

    def sessions_begin(self) -> int | None:
        """Where the oldest open session's first line begins, in bytes fed since the file was
        opened (a truncated file's go on counting); ``None`` when unknown."""

    def continuation_refs(self) -> tuple[SessionRef, ...]:
        """The ended spans the open sessions go on from (turns and cost: those before)."""

    def session_refs(self) -> tuple[SessionRef, ...]:
        """Each open session (turns: those begun, cost: the last total)."""

    def quiet_refs(self) -> tuple[SessionRef, ...]:
        """Each session another session's ``init`` ended, whose lines have not come again."""

    def exported(self) -> tuple[str, ...]:
        """Task ids of the workflows exported so far, oldest first."""

    def handed(self) -> int:
        """Spans handed to export so far."""

    def settled(self, handed: int) -> bool | None:
        """Whether the first ``handed`` spans are exported (True), on their way (None) or may
        be lost (False)."""

    def taking_again(self) -> bool:
        """Spans were lost, and the exporters have taken spans since."""
