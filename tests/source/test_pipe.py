"""The tee, in process: both paths (zero-copy tee(2)+splice, plain readv/write) pass every
byte through unchanged, hand the same bytes on, and report how the copy ended."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import threading
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbridge.source import pipe
from otelbridge.stats import Stats

PATHS = [None, False]  # auto (zero-copy where possible), forced plain


def payload(size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.getrandbits(8) for _ in range(size))


def run_tee(fd_in: int, fd_out: int, zero_copy):
    seen = bytearray()
    stats = Stats()

    def on_chunk(buf, n):
        seen.extend(buf[:n])
        tee.modes.add(tee.mode)

    tee = pipe.Tee(fd_in, fd_out, on_chunk, stats, zero_copy=zero_copy)
    tee.modes = set()
    outcome = asyncio.run(tee.run())
    return outcome, bytes(seen), stats, tee


def feed(fd: int, data: bytes, pieces: int | list[bytes] = 37) -> threading.Thread:
    """Write ``data`` to ``fd`` from a thread — in ``pieces`` even pieces, or exactly the given
    list of pieces (one write each) — then close it."""
    if isinstance(pieces, int):
        step = max(1, len(data) // pieces)
        pieces = [data[i : i + step] for i in range(0, len(data), step)]

    def work():
        try:
            for piece in pieces:
                os.write(fd, piece)
        except BrokenPipeError:  # the test closed the reading end early
            pass
        os.close(fd)
    t = threading.Thread(target=work, daemon=True)
    t.start()
    return t


def drain(fd: int, out: bytearray) -> threading.Thread:
    def work():
        while chunk := os.read(fd, 1 << 16):
            out.extend(chunk)
        os.close(fd)
    t = threading.Thread(target=work, daemon=True)
    t.start()
    return t


def pipe_to_pipe(data: bytes, zero_copy, pieces: int | list[bytes] = 37):
    """Run the tee between two fresh pipes; returns (outcome, bytes out, bytes seen, stats, tee)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    got = bytearray()
    writer, reader = feed(in_w, data, pieces), drain(out_r, got)
    outcome, seen, stats, tee = run_tee(in_r, out_w, zero_copy)
    os.close(out_w)
    writer.join(5)
    reader.join(5)
    os.close(in_r)
    return outcome, bytes(got), seen, stats, tee


@pytest.mark.parametrize("zero_copy", PATHS)
def test_pipe_to_pipe_is_byte_identical(zero_copy):
    data = payload(3_000_000) + b"\n\x00\r\n\xef\xbb\xbf{}\n no newline at end"
    outcome, got, seen, stats, tee = pipe_to_pipe(data, zero_copy)
    assert outcome == pipe.EOF
    assert got == data
    assert seen == data
    assert stats.bytes == len(data)
    if zero_copy is False or not sys.platform.startswith("linux"):
        assert tee.modes == {"plain"}
    else:
        assert tee.modes == {"zero-copy"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tee(2)/splice are Linux only")
def test_zero_copy_is_chosen_for_pipes_and_refused_elsewhere(tmp_path):
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    assert pipe.zero_copy_possible(in_r, out_w)
    with open(tmp_path / "f", "wb") as fh:
        assert pipe.zero_copy_possible(in_r, fh.fileno())  # pipe → regular file: splice works
        assert not pipe.zero_copy_possible(fh.fileno(), out_w)  # input not a pipe
    for fd in (in_r, in_w, out_r, out_w):
        os.close(fd)


@pytest.mark.parametrize("zero_copy", PATHS)
def test_append_file_output_falls_back_and_stays_identical(tmp_path, zero_copy):
    """``>> file`` opens O_APPEND, which splice refuses (EINVAL on many kernels): the tee must
    finish the chunk by hand and go on with plain writes."""
    data = payload(2_500_000, seed=2)
    target = tmp_path / "out"
    target.write_bytes(b"kept\n")
    fd_out = os.open(target, os.O_WRONLY | os.O_APPEND)
    in_r, in_w = os.pipe()
    writer = feed(in_w, data)
    outcome, seen, stats, _ = run_tee(in_r, fd_out, zero_copy)
    writer.join(5)
    os.close(fd_out)
    os.close(in_r)
    assert outcome == pipe.EOF
    assert target.read_bytes() == b"kept\n" + data
    assert seen == data


@pytest.mark.parametrize("zero_copy", PATHS)
def test_regular_file_input(tmp_path, zero_copy):
    data = payload(1_500_000, seed=3)
    src = tmp_path / "in"
    src.write_bytes(data)
    fd_in = os.open(src, os.O_RDONLY)
    out_r, out_w = os.pipe()
    got = bytearray()
    reader = drain(out_r, got)
    outcome, seen, stats, tee = run_tee(fd_in, out_w, zero_copy)
    os.close(out_w)
    reader.join(5)
    os.close(fd_in)
    assert outcome == pipe.EOF
    assert tee.modes == {"plain"}
    assert bytes(got) == data == seen


@pytest.mark.parametrize("zero_copy", PATHS)
def test_reader_gone_is_epipe(zero_copy):
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.close(out_r)  # downstream closed before we write
    os.write(in_w, b"line\n")
    outcome, seen, stats, _ = run_tee(in_r, out_w, zero_copy)
    for fd in (in_r, in_w, out_w):
        os.close(fd)
    assert outcome == pipe.EPIPE
    assert stats.bytes == 0  # nothing counted as passed that did not pass
    assert seen == b""


def test_stop_ends_a_waiting_copy():
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    stats = Stats()
    tee = pipe.Tee(in_r, out_w, lambda buf, n: None, stats)

    async def main():
        task = asyncio.ensure_future(tee.run())
        await asyncio.sleep(0.05)
        tee.stop()  # no input ever came: the copy must still end
        return await asyncio.wait_for(task, 5)

    assert asyncio.run(main()) == pipe.STOPPED
    for fd in (in_r, in_w, out_r, out_w):
        os.close(fd)


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=20_000),
    cut_points=st.lists(st.integers(min_value=1, max_value=20_000), max_size=12),
    zero_copy=st.sampled_from(PATHS),
)
def test_any_bytes_any_chunking_pass_through_identical(data, cut_points, zero_copy):
    """Random bytes written in random pieces (each piece a separate write, so the tee sees
    random chunk boundaries) come out identical, and the line splitter is handed them all."""
    cuts = sorted({c for c in cut_points if c < len(data)})
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
    outcome, got, seen, stats, _ = pipe_to_pipe(data, zero_copy, pieces)
    assert outcome == pipe.EOF
    assert got == data == seen
    assert stats.bytes == len(data)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="zero-copy path is Linux only")
def test_a_stuck_reader_does_not_hold_the_loop():
    """The output pipe is full and nobody reads it: the tee waits for it without blocking the
    event loop, so stop() (a signal) still ends the run."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    data = payload(4_000_000, seed=4)  # far more than the output pipe holds
    writer = feed(in_w, data)
    stats = Stats()
    tee = pipe.Tee(in_r, out_w, lambda buf, n: None, stats)

    async def main():
        task = asyncio.ensure_future(tee.run())
        ticks = 0
        for _ in range(20):  # the loop keeps running while the output is stuck
            await asyncio.sleep(0.01)
            ticks += 1
        tee.stop()
        return await asyncio.wait_for(task, 5), ticks

    outcome, ticks = asyncio.run(main())
    assert (outcome, ticks) == (pipe.STOPPED, 20)
    assert tee.mode == "plain"  # the copy pipe was closed at the end
    assert 0 < stats.bytes < len(data)
    drained = bytearray()
    os.close(out_w)
    reader = drain(out_r, drained)
    reader.join(5)
    assert bytes(drained) == data[: len(drained)]  # what passed is exact
    os.close(in_r)
    writer.join(5)


def test_input_over_is_true_only_where_reading_can_meet_nothing_but_the_end(tmp_path):
    """The decoding process sets up at once unless the tee's stdin is over: a wrong True would
    only delay its set-up, a wrong False costs the start-up it saves."""
    with open(os.devnull, "rb") as null:
        assert pipe.input_over(null.fileno())
    empty, full = tmp_path / "empty", tmp_path / "full"
    empty.write_bytes(b"")
    full.write_bytes(b"x\n")
    with open(empty, "rb") as fh:
        assert pipe.input_over(fh.fileno())
    with open(full, "rb") as fh:
        assert not pipe.input_over(fh.fileno())
        fh.read()
        assert pipe.input_over(fh.fileno())  # read to its size
    r, w = os.pipe()
    try:
        assert not pipe.input_over(r)  # a writer may still write
        os.write(w, b"x\n")
        os.close(w)
        w = -1
        assert not pipe.input_over(r)  # ended, but bytes are waiting
        os.read(r, 10)
        assert pipe.input_over(r)
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


@pytest.mark.parametrize("zero_copy", PATHS)
def test_without_a_thread_for_the_copy_the_stream_still_passes(monkeypatch, capsys, zero_copy):
    """A process limit that refuses the copy's thread (``RuntimeError: can't start new
    thread``): the copy runs on the calling thread, every byte passes, one line says so."""
    class NoThread:
        def __init__(self, *args, **kwargs):
            pass

        def start(self):
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(pipe, "threading", types.SimpleNamespace(Thread=NoThread))
    data = payload(500_000) + b"\nlast line without newline"
    outcome, got, seen, stats, tee = pipe_to_pipe(data, zero_copy)
    assert (outcome, got, seen, stats.bytes) == (pipe.EOF, data, data, len(data))
    err = capsys.readouterr().err
    assert err.count("could not start a thread for the copy") == 1, err


@pytest.mark.parametrize("size, buffer", [(1000, pipe.FIRST_READ), (pipe.FIRST_READ, 4 * pipe.FIRST_READ)])
def test_the_plain_path_buffer_grows_only_when_a_read_fills_it(size, buffer):
    """A bytearray's pages are all written when it is made: at a CLI's pace the copy keeps a
    small one (memory at rest), and grows it only when a read fills it."""
    data = payload(size)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, data)  # the whole input is waiting before the first read (a pipe holds 64 KiB)
    os.close(in_w)
    got = bytearray()
    reader = drain(out_r, got)
    outcome, seen, stats, tee = run_tee(in_r, out_w, zero_copy=False)
    os.close(out_w)
    reader.join(5)
    os.close(in_r)
    assert outcome == pipe.EOF
    assert bytes(got) == data and seen == data and stats.bytes == size
    assert len(tee.buf) == buffer
