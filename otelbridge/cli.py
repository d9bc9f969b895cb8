"""Command-line parsing only (click): flags → :class:`otelbridge.config.Config`.

Three commands share the export and report options:

* ``otelbridge [OPTIONS] [-- CMD ARGS...]`` — tee stdin (or CMD's stdout) to stdout (:data:`run_command`);
* ``otelbridge replay [OPTIONS] FILE...`` — recorded streams → traces (:data:`replay_command`);
* ``otelbridge follow [OPTIONS] PATH`` — tail a file the CLI writes (:data:`follow_command`).

``__main__`` picks the command by the first argument (:data:`SUBCOMMANDS`); everything else is
the tee. A program called ``replay`` or ``follow`` is
wrapped with ``otelbridge -- replay ...``.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from . import __version__, config
from .clock import MODES
from .config import DEFAULT_GRACE_S, DEFAULT_MAX_LINE
from .messages import say

_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
_OTEL = ("Standard OTEL_* variables configure the exporter (endpoint, headers, timeout, TLS, "
         "service name, resource attributes, sampler).")
_EPILOG = _OTEL + " stdout carries the stream alone."
#: replay and follow write nothing to stdout
_EPILOG_NO_STREAM = _OTEL + " Nothing is written to stdout."


class Seconds(click.FloatRange):
    """Seconds: a finite number in range (``nan`` passes a plain range check; ``inf`` overflows
    a deadline)."""

    def __init__(self, min: float = 0.0, max: float = 86_400.0) -> None:  # noqa: A002 (click's names)
        super().__init__(min=min, max=max)

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return number


#: seconds from 0 to a day
SECONDS = Seconds(max=config.MAX_SECONDS)


def _shared(fn):
    """The options every command takes: export, content, report."""
    options = [
        click.option("--exporter", metavar="LIST",
                     help="otlp, console (to stderr), file (OTLP/JSON lines to --output) or none; "
                          "comma-separated. [default: $OTEL_TRACES_EXPORTER or otlp]"),
        click.option("--protocol", type=click.Choice(config.PROTOCOLS),
                     help="OTLP protocol. [default: $OTEL_EXPORTER_OTLP_PROTOCOL or http/protobuf]"),
        click.option("--endpoint", metavar="URL",
                     help="OTLP endpoint (base URL). [default: $OTEL_EXPORTER_OTLP_ENDPOINT]"),
        click.option("--output", metavar="PATH",
                     help="File for --exporter file: OTLP/JSON, one TracesData a line, appended, "
                          "created with mode 0600."),
        click.option("--flush-timeout", "flush_timeout_s", type=SECONDS, default=5.0,
                     show_default=True, help="Seconds to flush spans at exit, collector or not."),
        click.option("--grace-period", "grace_s", type=SECONDS,
                     default=DEFAULT_GRACE_S, show_default=True,
                     help="Seconds a workflow stays open after task_notification "
                          "(replay: seconds of the stream's own time)."),
        click.option("--max-line", type=click.IntRange(min=1), default=DEFAULT_MAX_LINE,
                     show_default=True,
                     help="Longest line decoded, in bytes (longer ones are counted, not decoded; "
                          "the tee still passes them through, replay and follow skip them)."),
        click.option("--dialect", "dialects", multiple=True, metavar="NAME",
                     help="Decode only these dialects (repeatable): claude_code (Claude Code and "
                          "cbc), milk, caudra (with claude_code, which decodes its sessions), "
                          "bernstein. [default: all]"),
        click.option("--capture-content", is_flag=True,
                     help="Export previews and content (opt-in; still redacted)."),
        click.option("--redact", "redact_patterns", multiple=True, metavar="REGEX",
                     help="Also replace matches of REGEX by [REDACTED:custom] in everything "
                          "exported (repeatable)."),
        click.option("--no-default-redaction", is_flag=True,
                     help="Turn off the built-in secret patterns (JWTs, keys, tokens, e-mails...). "
                          "Local debugging only: secrets in the stream then reach the backend "
                          "(what a command that reads a secret printed stays hidden)."),
        click.option("--max-attribute-length", type=click.IntRange(min=1), metavar="N",
                     help="Cap exported strings at N characters. "
                          "[default: $OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else $OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT, or 256]"),
        click.option("--fail-on-export-error", is_flag=True,
                     help="Exit 1 when spans could not be exported (default: report on stderr only)."),
        click.option("--no-traceparent", is_flag=True,
                     help="Ignore the TRACEPARENT/TRACESTATE given (spans start traces of their "
                          "own; in the tee, a command it wraps still gets its run span's)."),
        click.option("--summary", type=click.Choice(config.SUMMARY_MODES), default="auto",
                     show_default=True,
                     help="Waterfall per trace on stderr at exit (auto: when stderr is a "
                          "terminal or CI is set, not to false or 0) and the GitHub step summary "
                          "(auto: whenever GITHUB_STEP_SUMMARY is set)."),
        click.option("--report", metavar="PATH",
                     help="Write a self-contained HTML page of the run (waterfall, tokens, cost, "
                          "errors, trace links) at exit, mode 0600."),
        click.option("--outputs", metavar="PATH",
                     help="Write the job outputs (trace_id, tokens, cost, status) as name=value "
                          "lines at exit, mode 0600, as GITHUB_OUTPUT gets them: a dotenv file "
                          "(GitLab CI's artifacts:reports:dotenv)."),
        click.option("--trace-url-template", metavar="URL",
                     help="Trace link with a {trace_id} placeholder, printed on stderr. "
                          "[default: $OTELBRIDGE_TRACE_URL]"),
        click.option("--stats-json", metavar="PATH",
                     help="Write the run's counters as JSON (mode 0600)."),
        click.option("-q", "--quiet", is_flag=True,
                     help="No counts line; no waterfall unless --summary always."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _live(fn):
    """Options of the live commands (tee, follow): clock and id mode (replay fixes both)."""
    fn = click.option("--deterministic-ids", is_flag=True,
                      help="Derive trace/span ids from stream ids.")(fn)
    fn = click.option("--clock", type=click.Choice(MODES), default="auto", show_default=True,
                      help="Time for lines without a timestamp: wall (when read), stream (the "
                           "latest timestamp the stream has shown), or auto (when read, in the "
                           "stream's own frame once it has shown a time).")(fn)
    return fn


def make_config(exporter, protocol, no_traceparent, dialects, redact_patterns=(),
                no_default_redaction=False, **flags) -> config.Config:
    """Parsed flags → :class:`~otelbridge.config.Config`; ``click.UsageError`` when unusable."""
    try:
        cfg = config.build(
            exporter=exporter,
            protocol=protocol,
            use_traceparent=not no_traceparent,
            dialects=tuple(dialects),
            redact_patterns=tuple(redact_patterns),
            default_redaction=not no_default_redaction,
            **flags,
        )
    except config.ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    for problem in cfg.env_problems:
        say(problem)
    if cfg.dialects:  # imported only then: the tee's process starts sooner without them
        from . import dialects as dialect_registry

        unknown = [d for d in cfg.dialects if d not in dialect_registry.REGISTRY]
        if unknown:
            raise click.UsageError(
                f"unknown dialect {unknown[0]!r}: use {', '.join(dialect_registry.REGISTRY)}"
            )
    return cfg


# the first argument that is not an option starts the command, as after ``--`` (``otelbridge
# claude -p …``: ``-p`` is the command's, as for ``env`` or ``time``)
@click.command(context_settings={**_SETTINGS, "allow_interspersed_args": False}, epilog=_EPILOG)
@_shared
@_live
@click.version_option(__version__, prog_name="otelbridge")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD ARGS...]")
def run_command(**flags):
    """Tee agent CLI stream-json from stdin (or from CMD's stdout) to stdout, unchanged,
    and export the workflows it describes as OpenTelemetry traces.

    Also: otelbridge replay FILE... | otelbridge follow PATH (see their --help)."""
    cfg = make_config(**flags)
    from .app import run

    return run(cfg)


@click.command(context_settings=_SETTINGS, epilog=_EPILOG_NO_STREAM)
@_shared
@click.argument("files", nargs=-1, required=True, metavar="FILE...",
                type=click.Path(path_type=Path))
def replay_command(files, **flags):
    """Turn recorded streams (FILE...) into traces after the fact.

    Times come from the stream (stream clock), ids are deterministic (the same file gives the
    same trace and span ids every time), grace windows close at the end of each file. Nothing is
    written to stdout: replay is not a tee."""
    cfg = make_config(clock="stream", deterministic_ids=True, **flags)
    from .modes.replay import replay

    return replay(cfg, list(files))


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/otelbridge``, else ``~/.local/state/otelbridge``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "otelbridge"


@click.command(context_settings=_SETTINGS, epilog=_EPILOG_NO_STREAM)
@_shared
@_live
@click.option("--from-start", is_flag=True,
              help="With no saved position, read PATH from its beginning (default: its end).")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the offset file lives (mode 0600). "
                   "[default: $XDG_STATE_HOME/otelbridge or ~/.local/state/otelbridge]")
@click.option("--poll-interval", "poll_s", type=Seconds(min=0.01), default=0.25,
              show_default=True, help="Seconds between checks for new data, rotation, truncation.")
@click.option("--handover", is_flag=True,
              help="A stop hands over to the next follow of PATH (a rollout): what is open is "
                   "neither ended nor exported; the next start exports it once, when it ends.")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def follow_command(path, from_start, state_dir, poll_s, handover, **flags):
    """Follow PATH like tail -F (survives rotation and truncation) and trace what the CLI
    writes there; a sidecar: nothing goes to stdout. The position is kept in an offset file, so
    a restart after a stop neither traces a workflow twice nor misses one (after a kill, what
    ended since the last saved point may arrive twice). Stops on SIGTERM/SIGINT/SIGHUP."""
    cfg = make_config(**flags)
    from .modes.follow import follow

    return follow(cfg, path, state_dir or default_state_dir(), from_start=from_start, poll_s=poll_s,
                  handover=handover)


#: first argument → command; anything else is the tee (:data:`run_command`)
SUBCOMMANDS = {"replay": replay_command, "follow": follow_command}
