"""``otelbridge replay``: recorded streams read from files, chunk by chunk, into the pipeline.

Nothing is written to stdout (replay is not a tee). Chunks go into one reused 1 MiB buffer
(``readinto``), as in the live tee; ``on_progress(n)`` is told how many bytes each chunk had.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import CHUNK


def read_file(
    path: Path | str,
    on_chunk: Callable[[bytearray, int], None],
    on_progress: Callable[[int], None] | None = None,
    chunk: int = CHUNK,
) -> int:
    """Feed ``path`` (``-``: stdin) to ``on_chunk(buf, n)`` to its end; returns the bytes read.

    Raises ``OSError`` when the file cannot be opened or read.
    """
    buf = bytearray(chunk)
    total = 0
    stdin = str(path) == "-"
    with open(0 if stdin else path, "rb", buffering=0, closefd=not stdin) as fh:
        while True:
            n = fh.readinto(buf)
            if not n:
                return total
            total += n
            on_chunk(buf, n)
            if on_progress is not None:
                on_progress(n)
