"""otelbridge: a sidecar tee that passes agent CLI stream-json through unchanged and turns the
workflows, sessions and tasks it describes into OpenTelemetry traces."""

__version__ = "0.1.0"
