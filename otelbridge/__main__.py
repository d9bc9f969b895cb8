"""``otelbridge`` / ``python -m otelbridge``: parse, run, and exit without waiting on exporter
threads (the flush is already bounded; interpreter teardown must not add seconds).

Dispatch is explicit: a first argument ``replay`` or ``follow`` selects that command
(``otelbridge.cli.SUBCOMMANDS``); anything else — options, ``--``, nothing — is the tee, exactly
``otelbridge [OPTIONS] [-- CMD ARGS...]``."""

from __future__ import annotations

# First of all, with the C module (``signal`` runs Python code to build its enums): SIGINT,
# SIGTERM and SIGHUP are recorded, not acted on, until the tee's event loop takes them over and acts on them
# as on any signal — no ``KeyboardInterrupt`` traceback from an import, no death between the fork
# and the loop that would leave the decoding process or the wrapped command behind.
import _signal

_EARLY: list[int] = []


def _record(signum: int, _frame: object) -> None:
    _EARLY.append(signum)


_signal.signal(_signal.SIGINT, _record)
_signal.signal(_signal.SIGTERM, _record)
_signal.signal(_signal.SIGHUP, _record)  # a closed terminal or ``kill -HUP``: as SIGTERM

import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

from . import source  # noqa: E402

source.EARLY_SIGNALS = _EARLY  # the handler's own list: none can fall between two lists
EARLY_SIGNALS = _EARLY


def _ensure_std_fds() -> None:
    """fds 0, 1 and 2 open before anything else (``2>&-``, ``<&-``): a closed one is pointed at
    /dev/null, so no later ``open``/``dup`` can land on it — our messages then never reach the
    stream, and a closed stderr costs the messages only, never the exit status. Which were
    closed is kept in ``source.CLOSED_AT_START`` (the tee says so and exits 1, as ``cat`` does)."""
    from .source import CLOSED_AT_START

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            CLOSED_AT_START.add(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - lives as long as the process
    if sys.stdout is None:
        sys.stdout = sys.stderr


def _show(exc, prog: str, then: str = "") -> None:
    """A usage error in one line on stderr, redacted (it quotes the values given: a token
    passed to the wrong option), with where help is and ``then`` (what happens now)."""
    from .redact import message

    text = " ".join(exc.format_message().split())
    text = text.rstrip(".")
    print(message(f"{prog}: {text}{'' if text.endswith('?') else '.'} See '{prog} --help'.{then}"), file=sys.stderr)


def _pass_through() -> None:
    """Pipe mode's usage error: the input still passes to stdout whole, untraced (the early tee
    may have begun it; stdout belongs to the stream), unless stdin is a terminal."""
    early = source.EARLY_TEE
    if early is not None:
        early.stop()  # (it finishes the chunk it holds: the rest follows it)
    if os.isatty(0):
        return
    try:
        while chunk := os.read(0, 1 << 16):
            while chunk:
                chunk = chunk[os.write(1, chunk):]
    except OSError:  # a reader gone, a read error: the usage error's status stands
        pass


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    _ensure_std_fds()  # before the early tee's pipes, which would take a closed fd 2
    if argv is None:  # the command itself: its first bytes pass while the rest is imported
        from .source import early

        source.EARLY_TEE = early.start(args)
    # replay's signals are its own; follow's loop takes them over, those come by then included
    # (a sidecar stopped as it starts still reads its file once and saves its position)
    if args and args[0] == "replay":
        if EARLY_SIGNALS:
            os._exit(128 + EARLY_SIGNALS[0])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    from .cli import SUBCOMMANDS, run_command
    from .source.early import options_end

    command, prog = run_command, "otelbridge"
    if args and args[0] in SUBCOMMANDS:
        command, prog = SUBCOMMANDS[args[0]], f"otelbridge {args[0]}"
        args = args[1:]
    try:
        if command is run_command and args[options_end(args):] == ["--"]:
            import click  # an empty command is a mistake, not a request for pipe mode

            raise click.UsageError("'--' needs a command after it: otelbridge [OPTIONS] -- CMD ARGS...")
        code = command.main(args=args, prog_name=prog, standalone_mode=False)
    except SystemExit as exc:  # --help, --version
        code = exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:  # replay's Ctrl-C
        code = 130
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.ClickException):
            # pipe mode's input passes through; a command given (after ``--``, or the first
            # argument that is no option) is not run, and its input is not read
            end = options_end(args)
            through = command is run_command and "--" not in args and not (
                end < len(args) and not args[end].startswith("-"))
            _show(exc, prog, " The input passes through untraced." if through and not os.isatty(0) else "")
            code = exc.exit_code
            if through:
                _pass_through()
        elif isinstance(exc, click.exceptions.Abort):
            code = 130
        else:
            raise
    for stream in (s for s in (sys.stderr, sys.__stdout__) if s is not None):
        try:  # a closed stderr (``2>&-``, a reader gone) never changes our exit status
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
