"""The tee's process: the stream fd, signals, the exit status, and the wrapped command.

:func:`run` is what the ``otelbridge`` command calls. fd 1 is handed to the stream alone (anything
else that writes to fd 1 or ``sys.stdout`` lands on stderr). Before the event loop starts it forks
the decoding process (:mod:`otelbridge.source.feed`; its body: :mod:`otelbridge.modes.live`);
this process then only moves bytes (``source/pipe.py``: ``tee(2)`` + ``splice`` where it can)
and imports nothing of OpenTelemetry. Where no decoding process can be started (no ``fork``,
or it failed) the stream passes through untraced, said once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING

from .config import Config
from .deadline import Deadline
from .messages import say
from .modes.loop import install_loop
from .source import EARLY_SIGNALS, HANDLED_SIGNALS, REASON_DOWNSTREAM_CLOSED, interrupted_by, pipe
from .source.child import ChildError, exit_status, spawn
from .stats import Stats

if TYPE_CHECKING:
    from .source.feed import DecoderFeed

EXIT_EPIPE = 128 + signal.SIGPIPE
#: Seconds the wrapped command's last output still passes after it exited on a signal, or after
#: a repeated signal while it still runs.
CHILD_GONE_DRAIN_S = 0.2
#: Seconds within which the same signal again is the same event reaching us twice — sent to
#: our pid and to our process group (``timeout``) — not a second signal, and not forwarded
#: again.
SAME_SIGNAL_S = 0.1
#: Variables that, set to ``console``, make an OpenTelemetry SDK in the child print on stdout.
CHILD_EXPORTER_VARS = ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER")

def child_environment(cfg: Config, link: tuple[str, bool]) -> dict[str, str]:
    """The child's environment: ours, with ``TRACEPARENT`` set to the run span's (``link``: see
    :meth:`DecoderFeed.run_link`) and ``TRACESTATE`` kept only when it came with the parent we
    use."""
    traceparent, under_parent = link
    env = dict(os.environ)
    env["TRACEPARENT"] = traceparent
    if cfg.tracestate and under_parent:
        env["TRACESTATE"] = cfg.tracestate
    else:
        env.pop("TRACESTATE", None)
    return env


def warn_console_exporters(env: dict[str, str]) -> None:
    """One stderr line when the child's environment asks an OpenTelemetry SDK for a ``console``
    exporter: the child would print its telemetry into the stream (its stdout)."""
    asked = [
        name for name in CHILD_EXPORTER_VARS
        if "console" in [p.strip().lower() for p in env.get(name, "").split(",")]
    ]
    if asked:
        say(
            f"{', '.join(asked)} asks for a console exporter: the child would write its telemetry "
            "into the stream on stdout; set it to otlp (or unset it) for the child"
        )


def _untraced(cfg: Config, stats: Stats, code: int) -> int:
    """The end without a decoding process: the counts of what passed, the exit status."""
    from .stats import counts_and_exit_code

    return counts_and_exit_code(cfg, stats, None, code, False)


async def _main(cfg: Config, stream_fd: int, feed: DecoderFeed | None) -> int:
    """The tee: pass ``stdin`` (or the wrapped command's stdout) to ``stream_fd`` until its end,
    a closed reader or a signal, feeding the decoding process (``feed``; ``None``: untraced),
    and return the exit status."""
    loop = asyncio.get_running_loop()
    stats = Stats()
    stats.bytes = feed.passed_early if feed is not None else 0

    def end(reason: str | None, code: int) -> int:
        # the run's one deadline, from the end of input: decoding, ending spans, the flush
        deadline = Deadline.after(cfg.flush_timeout_s)
        if feed is None:
            return _untraced(cfg, stats, code)
        return feed.end(reason, code, stats, deadline)

    proc = None
    if cfg.command:
        # the child's TRACEPARENT names the run span: its ids come from the set-up
        link = feed.run_link() if feed is not None else None
        env = child_environment(cfg, link) if link is not None else None
        warn_console_exporters(env if env is not None else dict(os.environ))
        if EARLY_SIGNALS:  # stopped before the command could start: it is not started
            return end(interrupted_by(EARLY_SIGNALS[0]), 128 + EARLY_SIGNALS[0])
        try:
            proc, fd_in = await spawn(cfg.command, env, keep=(feed.pid,) if feed is not None else ())
        except ChildError as exc:
            from .redact import MESSAGE_MAX, clean  # (only here: the tee's process imports no detector)

            say(exc.describe(lambda text: clean(text, MESSAGE_MAX)))
            return end(exc.reason, exc.status)  # (the run span says why: "command not found")
        if feed is not None:
            feed.set_pid(proc.pid)
    else:
        fd_in = 0
    if feed is not None:
        tee = pipe.Tee(fd_in, stream_fd, None, stats, feed=feed)
    else:
        def count(buf: bytearray, n: int) -> None:  # untraced: every line counted, not decoded
            lines = buf.count(b"\n", 0, n)
            stats.lines += lines
            stats.lines_not_decoded += lines
            stats.bytes_not_decoded += n

        tee = pipe.Tee(fd_in, stream_fd, count, stats)
    got_signal: list[int] = []
    signalled = asyncio.Event()
    given_up = asyncio.Event()  # wrapper mode: a repeated signal; the child is no longer awaited

    def give_up() -> None:
        given_up.set()
        tee.stop()

    last_seen: dict[int, float] = {}

    def on_signal(signum: int) -> None:
        now = loop.time()
        if now - last_seen.get(signum, -SAME_SIGNAL_S) < SAME_SIGNAL_S:
            return
        last_seen[signum] = now
        repeated = bool(got_signal)
        got_signal.append(signum)
        signalled.set()
        if proc is None:
            tee.stop()
            return
        # a terminal's Ctrl-C signals its whole foreground process group: the child has it
        if proc.returncode is None and (signum != signal.SIGINT or not proc.keyboard_reaches()):
            proc.send_signal(signum)
        if repeated:
            # a second signal is never ignored: whether or not the child has gone, what it
            # writes meanwhile passes for CHILD_GONE_DRAIN_S, then the run ends
            loop.call_later(CHILD_GONE_DRAIN_S, give_up)

    async def stop_when_child_gone() -> None:
        """Wrapper mode: once the child has exited *and* a signal came (in either order), what
        it wrote still passes (:data:`CHILD_GONE_DRAIN_S`), then the tee stops — a background
        process that inherited its stdout must not keep a signalled run alive. Without a
        signal, its end of input is waited for, as a tee would."""
        await proc.wait()
        await signalled.wait()
        loop.call_later(CHILD_GONE_DRAIN_S, tee.stop)

    async def child_status() -> int | None:
        """The child's exit status once it has exited, or ``None`` when a repeated signal
        gave up on it first (it is then killed, with what it started)."""
        exited = asyncio.ensure_future(proc.wait())
        gave_up = asyncio.ensure_future(given_up.wait())
        await asyncio.wait((exited, gave_up), return_when=asyncio.FIRST_COMPLETED)
        gave_up.cancel()
        if exited.done():
            return exit_status(exited.result())
        exited.cancel()
        return None

    for signum in HANDLED_SIGNALS:
        try:
            loop.add_signal_handler(signum, on_signal, signum)
        except (NotImplementedError, RuntimeError):
            pass

    for signum in EARLY_SIGNALS:  # came before the loop could take them: acted on now
        on_signal(signum)
    EARLY_SIGNALS.clear()
    watcher = asyncio.ensure_future(stop_when_child_gone()) if proc is not None else None
    outcome = await tee.run()
    # a signal that came with the end of input is seen before the outcome is read
    for _ in range(3):
        await asyncio.sleep(0)
    if watcher is not None:
        watcher.cancel()
    # the stream is over for our reader: it sees its end now, not after decoding and the flush
    try:
        os.close(stream_fd)
    except OSError:
        pass
    if outcome == pipe.WRITE_ERROR:  # a full disk, an I/O error: said, exit 1, as cat and tee
        say(f"cannot write the stream to stdout: {tee.write_error.strerror}; the rest of it is lost")
    if outcome in (pipe.EPIPE, pipe.WRITE_ERROR):
        # stop reading: the writer (our stdin's, or the child) sees the closed pipe as it would
        # without us — EPIPE/SIGPIPE at its next write
        os.close(fd_in)
        fd_in = -1
    if proc is not None:
        status = await child_status()
        if status is None and proc.kill_tree():
            # a second signal gave up on a command that ignored the first: it does not outlive
            # the run (nor do the processes it started)
            say(f"the wrapped command ignored {signal.Signals(got_signal[0]).name}; killed it "
                f"(pid {proc.pid}) and what it started")
        if fd_in >= 0:
            os.close(fd_in)
        # the child's own status whenever it exited, even if a signal stopped the tee (a
        # background process of its may hold the pipe); ours only when we gave up on it
        code = status if status is not None else 128 + got_signal[0]
    elif got_signal:
        code = 128 + got_signal[0]
    elif outcome == pipe.EPIPE:
        code = EXIT_EPIPE
    else:
        code = 0
    if outcome == pipe.WRITE_ERROR and code == 0:
        code = 1
    if got_signal:
        reason = interrupted_by(got_signal[0])
    elif outcome in (pipe.EPIPE, pipe.WRITE_ERROR):
        reason = REASON_DOWNSTREAM_CLOSED
    elif proc is not None and (proc.returncode or 0) < 0:  # (the OOM killer, a timeout's SIGKILL)
        reason = interrupted_by(-proc.returncode, "killed")  # type: ignore[operator]
    else:
        reason = None

    # The end blocks the loop: a signal is taken as it comes, by a plain handler. The flush is
    # bounded already, and a second signal does not cut it (spans are not lost to an impatient
    # Ctrl-C); in pipe mode the run's first signal still gives its exit status.
    late: list[int] = []

    def on_late_signal(signum: int, _frame: object) -> None:
        late.append(signum)

    # held while the loop lets go of them: its removal puts back each one's default for a moment
    # (SIGINT's KeyboardInterrupt, death by SIGTERM/SIGHUP); one that comes meanwhile is taken by
    # on_late_signal as they are released
    mask = getattr(signal, "pthread_sigmask", None)  # not on Windows
    held = mask(signal.SIG_BLOCK, HANDLED_SIGNALS) if mask is not None else None
    try:
        for signum in HANDLED_SIGNALS:
            try:
                loop.remove_signal_handler(signum)
                signal.signal(signum, on_late_signal)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
    finally:
        if mask is not None:
            mask(signal.SIG_SETMASK, held)
    code = end(reason, code)
    if late and proc is None and not got_signal:
        code = 128 + late[0]
    return code


def run(cfg: Config) -> int:
    """Run one otelbridge process to completion and return its exit status.

    fd 1 is moved to a private descriptor for the stream; fd 1 and ``sys.stdout`` then point at
    stderr, so nothing but the stream can ever reach the stream's reader.
    """
    from .source import CLOSED_AT_START

    # a closed stream end is an error, as for cat and tee (stdin is the child's in wrapper mode)
    closed = [name for fd, name in ((0, "stdin"), (1, "stdout"))
              if fd in CLOSED_AT_START and not (fd == 0 and cfg.command)]
    if closed:
        say(f"{' and '.join(closed)} closed at start ("
            + ("the stream is discarded" if "stdout" in closed else "nothing to read")
            + "); exit status 1" + (", or the command's when it fails" if cfg.command else ""))
    code = _run(cfg)
    return 1 if closed and code == 0 else code


def _run(cfg: Config) -> int:
    from . import source

    early, source.EARLY_TEE = source.EARLY_TEE, None
    if early is not None:  # the tee takes over fd 1 from here
        early.stop()
    stream_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from .source.feed import DecoderFeed

    feed = DecoderFeed.start(cfg, close_in_child=(stream_fd,), early=early)  # before any thread or loop
    if feed is None:
        say("cannot start the decoding process; the stream passes through untraced")
    install_loop()
    try:
        return asyncio.run(_main(cfg, stream_fd, feed))
    except KeyboardInterrupt:
        return 130
    finally:  # the run is over: a signal from here to the exit changes nothing
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)

