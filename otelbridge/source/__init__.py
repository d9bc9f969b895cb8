"""Stage 1: where bytes come from — a stdin pipe or file (:mod:`.pipe`), a wrapped child
(:mod:`.child`), a followed file (:mod:`.follow`), recordings (:mod:`.replay`). Every source
writes each chunk to the stream fd as soon as it is read and only then hands it on.

Also here: why a live stream ended early, the ``reason`` the tracker puts on the spans it cuts
short (``Tracker.finish``)."""

from __future__ import annotations

import signal

#: Bytes read at a time, into one reused buffer, by every source (1 MiB).
CHUNK = 1 << 20

#: Signals that end the run as interrupted (the spans ended, flushed; exit 128+N), forwarded to
#: a wrapped command — SIGINT only when no terminal's Ctrl-C reached the command itself; held
#: across the fork that makes the decoding process, which ignores them. SIGQUIT keeps its
#: default (core dump): the way out of a wedged process.
HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

#: Standard fds that were closed when the process started (``<&-``, ``>&-``, ``2>&-``); filled
#: by ``__main__`` before anything can open a file on them.
CLOSED_AT_START: set[int] = set()

#: SIGINT/SIGTERM that came before the tee's event loop could take them (start-up: imports,
#: the fork, the wrapped command's set-up), in order; ``__main__`` binds this name to the list
#: its first handler fills; the tee's loop acts on them once it runs.
EARLY_SIGNALS: list[int] = []

#: The tee's first bytes, passed while the rest was imported (:mod:`.early`), or ``None``; set
#: by ``__main__``, stopped by the tee before it forks.
EARLY_TEE = None

#: The stream's reader closed its end (EPIPE).
REASON_DOWNSTREAM_CLOSED = "downstream closed"
#: The tee's process ended without telling the decoding process (killed).
REASON_TEE_GONE = "tee process gone"


def interrupted_by(signum: int, verb: str = "interrupted") -> str:
    """The ``reason`` for a run ended by signal ``signum``: ``"interrupted by SIGTERM"``;
    ``verb`` ``"killed"``: the wrapped command died of it, no signal came to us."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    return f"{verb} by {name}"
