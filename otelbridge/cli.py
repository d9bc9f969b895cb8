"""Command-line parsing only (click): flags → :class:`otelbridge.config.Config`.

``otelbridge [OPTIONS]`` tees stdin; ``otelbridge [OPTIONS] -- CMD ARGS...`` wraps CMD.
"""

from __future__ import annotations

import click

from . import __version__, config
from .clock import MODES
from .lines import DEFAULT_MAX_LINE
from .tracker import DEFAULT_GRACE_S


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Standard OTEL_* variables configure the exporter (endpoint, headers, timeout, TLS, "
    "service name, resource attributes, sampler). stdout carries the stream alone.",
)
@click.option("--exporter", metavar="LIST",
              help="otlp, console (to stderr) or none; comma-separated. "
                   "[default: $OTEL_TRACES_EXPORTER or otlp]")
@click.option("--protocol", type=click.Choice(config.PROTOCOLS),
              help="OTLP protocol. [default: $OTEL_EXPORTER_OTLP_PROTOCOL or http/protobuf]")
@click.option("--endpoint", metavar="URL",
              help="OTLP endpoint (base URL). [default: $OTEL_EXPORTER_OTLP_ENDPOINT]")
@click.option("--flush-timeout", "flush_timeout_s", type=click.FloatRange(min=0), default=5.0,
              show_default=True, help="Seconds to flush spans at exit, collector or not.")
@click.option("--grace-period", "grace_s", type=click.FloatRange(min=0), default=DEFAULT_GRACE_S,
              show_default=True, help="Seconds a workflow stays open after task_notification.")
@click.option("--clock", type=click.Choice(MODES), default="auto", show_default=True,
              help="Time for lines without a timestamp: wall clock, stream clock, or auto.")
@click.option("--max-line", type=click.IntRange(min=1), default=DEFAULT_MAX_LINE, show_default=True,
              help="Longest line decoded, in bytes (longer ones pass through, counted).")
@click.option("--dialect", "dialects", multiple=True, metavar="NAME",
              help="Decode only these dialects (repeatable). [default: all]")
@click.option("--deterministic-ids", is_flag=True, help="Derive trace/span ids from stream ids.")
@click.option("--capture-content", is_flag=True,
              help="Export previews and content (opt-in; still redacted).")
@click.option("--redact", "redact_patterns", multiple=True, metavar="REGEX",
              help="Also replace matches of REGEX by [REDACTED:custom] in everything exported "
                   "(repeatable).")
@click.option("--no-default-redaction", is_flag=True,
              help="Turn off the built-in secret patterns (JWTs, keys, tokens, e-mails...). "
                   "Local debugging only: secrets in the stream then reach the backend.")
@click.option("--max-attribute-length", type=click.IntRange(min=1), metavar="N",
              help="Cap exported strings at N characters. "
                   "[default: $OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT or 256]")
@click.option("--fail-on-export-error", is_flag=True,
              help="Exit 1 when spans could not be exported (default: report on stderr only).")
@click.option("--no-traceparent", is_flag=True, help="Ignore TRACEPARENT/TRACESTATE.")
@click.option("--stats-json", metavar="PATH", help="Write the run's counters as JSON (mode 0600).")
@click.option("-q", "--quiet", is_flag=True, help="No summary line on stderr.")
@click.version_option(__version__, prog_name="otelbridge")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD ARGS...]")
def run_command(exporter, protocol, no_traceparent, dialects, redact_patterns, no_default_redaction,
                **flags):
    """Tee agent CLI stream-json from stdin (or from CMD's stdout) to stdout, unchanged,
    and export the workflows it describes as OpenTelemetry traces."""
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
    from . import dialects as dialect_registry

    unknown = [d for d in cfg.dialects if d not in dialect_registry.REGISTRY]
    if unknown:
        raise click.UsageError(
            f"unknown dialect {unknown[0]!r}: use {', '.join(dialect_registry.REGISTRY)}"
        )
    from .app import run

    return run(cfg)
