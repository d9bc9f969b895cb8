"""The tracker's vocabulary: protocol-neutral events in, span records out.

Dialect decoders (``otelbridge.dialects``) turn stream lines into the *events* below; the tracker
(``otelbridge.tracker``) turns events into :class:`SpanRecord` values; the span builder
(``otelbridge.spans``) turns records into OpenTelemetry spans. Nothing here imports OpenTelemetry.

Classes made ``gc=False`` are leaves made by the thousand, holding no reference back: no
reference cycle, so the cyclic collector need not track them.

Units: every ``*_ns`` field is integer nanoseconds since the Unix epoch (OpenTelemetry's unit).
The streams carry epoch **milliseconds**; decoders convert with :func:`ms_to_ns` (``wire.py``),
which also rejects values that cannot be a real time (:class:`WorkflowAgent`, read straight
from the wire, keeps its ms and gives ns as ``*_ns`` properties). Strings are carried raw (no redaction
here or in the tracker: the span builder redacts every string whole, then caps it), but one over
:data:`MAX_HELD_CHARS`: held redacted on its whole length, then cut (:mod:`otelbridge.wire`).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from .wire import (  # noqa: F401  (the decoders' coercions, re-exported)
    MAX_DURATION_MS,
    MAX_EPOCH_MS,
    MAX_HELD_CHARS,
    MIN_EPOCH_MS,
    as_int,
    as_key,
    as_str,
    ms_to_ns,
    s_to_ns,
)

# --------------------------------------------------------------------------- events in


class Event(msgspec.Struct):
    """Base of every decoded event.

    ``session_id`` is the stream's session (``session_id`` of the line, else the latest one the
    stream showed); ``ts_ns`` is the line's own timestamp (milk ``ts``, ``timestamp``) or ``None``
    when the line has none — the tracker's clock then supplies the time.
    """

    session_id: str | None
    ts_ns: int | None


class StreamTime(Event):
    """A line that carries its own timestamp (``ts_ns``) but nothing a dialect models: it only
    moves the stream clock (docs/span-model.md, "Time")."""


# Typed shapes of a ``workflow_progress`` entry's fields, as the decoder reads them in one pass
# (``otelbridge.dialects.claude_code_workflow``): a value of another type or out of range fails
# that decode, and the entry is then read field by field with the coercions of ``wire.py``, which
# accept exactly these values unchanged.
_Index = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**62)] | None
_EpochMs = Annotated[int, msgspec.Meta(ge=MIN_EPOCH_MS, le=MAX_EPOCH_MS)] | None
_DurationMs = Annotated[int, msgspec.Meta(ge=0, le=MAX_DURATION_MS)] | None
_Text = Annotated[str, msgspec.Meta(max_length=MAX_HELD_CHARS)] | None


def _in_ns(field: str) -> property:
    """A read-only view of the epoch-ms field ``field`` in epoch ns (``None`` stays ``None``)."""
    def get(self: Any) -> int | None:
        ms = getattr(self, field)
        return None if ms is None else ms * 1_000_000
    return property(get)


class WorkflowPhase(msgspec.Struct, tag_field="type", tag="workflow_phase", gc=False):
    """A ``workflow_phase`` timeline entry (the cbc workflow protocol §5.2): ``{type, index, title}``."""

    index: _Index
    title: _Text = None


class WorkflowAgent(msgspec.Struct, tag_field="type", tag="workflow_agent", rename="camel",
                    gc=False):
    """A ``workflow_agent`` timeline entry (the cbc workflow protocol §5.2), with real Claude
    Code's extra fields, under the wire's names (``agentId`` is ``agent_id``): the decoder reads
    an entry straight into it.

    Times are the wire's epoch **ms** (``*_at``, within 2000–2100), each also as epoch ns
    (``*_ns``); ``duration_ms`` is ms.
    """

    index: _Index
    agent_id: _Text = None
    state: _Text = None
    label: _Text = None
    phase_index: _Count = None
    phase_title: _Text = None
    started_at: _EpochMs = None
    queued_at: _EpochMs = None
    ended_at: _EpochMs = None
    last_progress_at: _EpochMs = None
    duration_ms: _DurationMs = None
    tokens: _Count = None
    tool_calls: _Count = None
    attempt: _Count = None
    model: _Text = None
    error: _Text = None
    result_preview: _Text = None
    prompt_preview: _Text = None

    started_ns = _in_ns("started_at")
    queued_ns = _in_ns("queued_at")
    ended_ns = _in_ns("ended_at")
    last_progress_ns = _in_ns("last_progress_at")


class TaskUsage(msgspec.Struct, gc=False):
    """``usage`` of ``task_progress``/``task_notification``: tokens, tool uses, duration in ms."""

    total_tokens: int | None = None
    tool_uses: int | None = None
    duration_ms: int | None = None


class WorkflowStarted(Event):
    """``system/task_started`` with ``task_type: "local_workflow"`` (the cbc workflow protocol §5.1)."""

    task_id: str = ""
    tool_use_id: str | None = None
    workflow_name: str | None = None
    description: str | None = None
    prompt: str | None = None


class WorkflowProgress(Event):
    """``system/task_progress`` carrying ``workflow_progress[]`` — an authoritative snapshot
    (the cbc workflow protocol §5.2, §6). Unknown entry types are already dropped by the decoder."""

    task_id: str = ""
    tool_use_id: str | None = None
    description: str | None = None
    usage: TaskUsage | None = None
    phases: list[WorkflowPhase] = msgspec.field(default_factory=list)
    agents: list[WorkflowAgent] = msgspec.field(default_factory=list)
    #: the newest epoch-ns instant inside the snapshot (``lastProgressAt`` and friends)
    newest_ns: int | None = None


class TaskUpdated(Event):
    """``system/task_updated`` (the cbc workflow protocol §5.3): ``patch.status``, ``patch.end_time`` (ms → ns)."""

    task_id: str = ""
    status: str | None = None
    end_time_ns: int | None = None


class TaskNotification(Event):
    """``system/task_notification`` (the cbc workflow protocol §5.4): the terminal signal of a task."""

    task_id: str = ""
    status: str | None = None
    #: the tool use that started the task (ties a ``local_agent`` task to its sub-agent)
    tool_use_id: str | None = None
    summary: str | None = None
    usage: TaskUsage | None = None
    task_type: str | None = None


# ---------------------------------------------------------------- Caudra (Caudra's headless-mode documentation)


class CaudraPhase(msgspec.Struct):
    """A ``phase_history`` entry: the phase ``title`` and its ``started_at`` (s → epoch ns)."""

    title: str | None
    started_ns: int | None


class CaudraLog(msgspec.Struct):
    """One line of run output: ``at`` (s → epoch ns, ``None`` when absent) and ``message``."""

    at_ns: int | None
    message: str


class CaudraWorkflowSnapshot(Event):
    """``system/workflow`` with ``event.kind: "snapshot"`` (Caudra's headless-mode documentation "Run events"): the run's
    whole state. ``run_id`` is always a string (the wire sends a string or an integer);
    ``epoch`` is the envelope's ``workflow_epoch``."""

    run_id: str = ""
    status: str | None = None
    phase: str | None = None
    revision: int | None = None
    name: str | None = None
    error: str | None = None
    epoch: int | None = None
    phase_history: list[CaudraPhase] = msgspec.field(default_factory=list)
    logs: list[CaudraLog] = msgspec.field(default_factory=list)


class CaudraWorkflowLog(Event):
    """``system/workflow`` with ``event.kind: "log"``: one line (``at``, ``message``,
    ``revision``)."""

    run_id: str = ""
    epoch: int | None = None
    revision: int | None = None
    log: CaudraLog | None = None


class CaudraAgentMessage(Event):
    """An ``assistant``/``user`` line of an agent a Caudra workflow launched: it carries
    ``workflow_run_id``, ``workflow_epoch``, ``workflow_call_key`` and ``workflow_phase`` beside
    ``parent_tool_use_id`` (Caudra's headless-mode documentation "Run events", last paragraph)."""

    run_id: str = ""
    epoch: int | None = None
    call_key: str | None = None
    phase: str | None = None
    parent_tool_use_id: str | None = None
    role: str | None = None
    model: str | None = None
    message_id: str | None = None
    usage: Usage | None = None
    #: an ``assistant`` line's ``tool_use`` blocks and text; a ``user`` line's results
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    content: str | None = None
    tool_results: list[ToolResult] = msgspec.field(default_factory=list)


class AutomationFired(Event):
    """``system/automation_fired`` (Caudra's headless-mode documentation "Firings and notices"): one ended firing. Times are
    epoch ns converted from the wire's epoch ms (``queued_at`` is the only one never null)."""

    fire_id: str | None = None
    automation: str | None = None
    digest: str | None = None
    trigger: str | None = None
    trigger_index: int | None = None
    event_key: str | None = None
    status: str | None = None
    reason: str | None = None
    error_kind: str | None = None
    error_message: str | None = None
    error_line: int | None = None
    error_column: int | None = None
    repeats: int | None = None
    attempts: int | None = None
    operations: int | None = None
    state_outcome: str | None = None
    queued_ns: int | None = None
    deferred_until_ns: int | None = None
    started_ns: int | None = None
    finished_ns: int | None = None
    action_count: int | None = None
    first_action: str | None = None
    absorbed: str | None = None


class AutomationNotice(Event):
    """``system/automation_notice``: ``text`` for the client to show, from firing ``fire_id``
    (absent when an arming failed)."""

    automation: str | None = None
    fire_id: str | None = None
    text: str | None = None


class GoalEvent(Event):
    """``system/goal`` (Caudra's headless-mode documentation "Goal events"): ``kind`` (open set: ``evaluating``,
    ``evaluation``, ``finished``, ``loop_cap``, ...) and the fields beside it that otelbridge
    exports, by their wire names (numbers, bools and short strings only; ``usage`` apart)."""

    kind: str = ""
    fields: dict[str, Any] = msgspec.field(default_factory=dict)
    usage: Usage | None = None


# -------------------------------------------------------------- Bernstein (the Bernstein stream-signal protocol)


class BernsteinSignal(Event):
    """A ``BERNSTEIN:<KIND>[ <json-object>]`` line (the Bernstein stream-signal protocol "Grammar"), with the payload fields
    of its kind (``None`` when absent or of the wrong type)."""

    kind: str = ""
    reason: str | None = None
    hint: str | None = None
    question: str | None = None
    options: list[str] | None = None
    question_id: str | None = None
    path: str | None = None
    markdown: str | None = None


# ------------------------------------------------------------------ session events (a CLI run)
# ``system/init`` … ``result``, model calls, tool calls, sub-agents, background tasks, as Claude
# Code and milk show them (``dialects/claude_code.py``, ``dialects/milk.py``; ``tracker/sessions.py``).


class Usage(msgspec.Struct):
    """Token counts of one model call, turn, session or model (``None`` = not given).
    ``anthropic``: the Anthropic shape (``cache_read_input_tokens``, ``modelUsage``'s camelCase),
    whose ``input_tokens`` excludes the cache (:meth:`gen_ai_input_tokens` adds both cache
    counts); other shapes (milk's) as given. ``cost_usd``: per model (``modelUsage.costUSD``)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read: int | None = None
    cache_creation: int | None = None
    anthropic: bool = False
    cost_usd: float | None = None
    #: ``output_tokens_details.thinking_tokens`` (part of ``output_tokens``)
    reasoning_output: int | None = None
    #: ``cache_creation.ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens`` (parts of
    #: ``cache_creation``)
    cache_creation_5m: int | None = None
    cache_creation_1h: int | None = None

    def inputs(self) -> tuple[int | None, int | None, int | None]:
        """(input, cache read, cache creation): one call's lines and its final usage share them."""
        return self.input_tokens, self.cache_read, self.cache_creation

    def gen_ai_input_tokens(self) -> int | None:
        """``gen_ai.usage.input_tokens``: input + cache read + cache creation when Anthropic-
        shaped, else ``input_tokens`` as given."""
        if not self.anthropic:
            return self.input_tokens
        parts = self.inputs()
        if all(p is None for p in parts):
            return None
        return sum(p or 0 for p in parts)

    def has_tokens(self) -> bool:
        """Whether any count is above 0."""
        return any(getattr(self, name) for name in COUNTS)

    def add(self, other: "Usage") -> None:
        """Add ``other`` into this usage, field by field (``None`` + n = n)."""
        for name in COUNTS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, (mine or 0) + theirs)
        self.anthropic = self.anthropic or other.anthropic

    def less(self, counted: tuple[int, ...]) -> "Usage":
        """A copy less ``counted`` (counts in :data:`COUNTS` order, a shorter tuple: the first
        ones), none below 0; a count not given stays ``None``."""
        out = msgspec.structs.replace(self)
        for name, was in zip(COUNTS, counted):
            if (mine := getattr(out, name)) is not None:
                setattr(out, name, max(mine - was, 0))
        return out

    def counts(self) -> tuple[int, ...]:
        """Its counts in :data:`COUNTS` order (``None``: 0)."""
        return tuple(getattr(self, name) or 0 for name in COUNTS)


#: The token counts of :class:`Usage`, which :meth:`Usage.add` sums and :meth:`Usage.less` takes.
COUNTS = ("input_tokens", "output_tokens", "cache_read", "cache_creation", "reasoning_output",
          "cache_creation_5m", "cache_creation_1h")


class ToolCall(msgspec.Struct):
    """A ``tool_use`` content block: ``id``, ``name``, ``arguments`` (its ``input`` as JSON
    text, exported only with content capture on); for an Agent/Task tool, the ``subagent_type``
    and ``description`` of the sub-agent it starts."""

    id: str
    name: str | None = None
    arguments: str | None = None
    subagent_type: str | None = None
    description: str | None = None


class SessionStarted(Event):
    """``system/init``: the session's agent (span name), provider, model, CLI version, ``cwd``.

    Claude Code: ``model``, ``claude_code_version``; agent ``claude-code``, provider
    ``anthropic``. milk: ``agent.name``/``agent.provider``/``agent.model``, ``milk_version``.
    ``opens_turn``: it begins a turn (not Caudra's, whose runs begin with ``turn_start``).
    """

    agent_name: str | None = None
    provider: str | None = None
    model: str | None = None
    version: str | None = None
    cwd: str | None = None
    opens_turn: bool = True


class ModelStreaming(Event):
    """A top-level model call's output streaming (milk's ``stream_event`` deltas, which name no
    message): the call the next ``assistant`` line completes; one no line completes (an
    interrupt) is a call of its own."""


class ModelCall(Event):
    """One line about a model call: a ``stream_event`` ``message_start`` (``phase="start"``), an
    ``assistant`` line (``"line"``, one per content block in Claude Code) or a ``message_delta``
    (``"delta"``, no ``message.id``: it belongs to the open call of its ``parent_tool_use_id``).

    ``usage`` is the line's; ``usage_final`` marks ``message_delta.usage`` (final output count).
    ``content`` (text blocks joined) is set only when content capture is on.
    """

    phase: str = "line"
    message_id: str | None = None
    model: str | None = None
    parent_tool_use_id: str | None = None
    usage: Usage | None = None
    usage_final: bool = False
    stop_reason: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    content: str | None = None
    #: an API-error message (``model: "<synthetic>"`` or ``is_api_error_message``): its
    #: ``error`` value (``invalid_request``, ...) and text; ``model`` is then ``None``
    api_error: str | None = None
    api_error_text: str | None = None
    #: the agent a nested line names (milk's ``agent``: ``helper``), when the line gives no model
    agent: str | None = None


class ToolResult(Event):
    """A ``tool_result`` block of a ``user`` line: it ends the tool call ``tool_use_id``.

    ``parent_tool_use_id`` is the line's; it is *not* used to find the tool (milk puts the
    answered tool's own id there, milk's stream-json contract, ADR-0050). ``content`` only with capture on.
    """

    tool_use_id: str = ""
    is_error: bool = False
    content: str | None = None
    parent_tool_use_id: str | None = None
    #: the sub-agent's id an Agent/Task tool's result names (``tool_use_result.agentId``); the
    #: usage of its last model call, whose lines the stream never shows (``usage``), its
    #: ``resolvedModel`` and ``totalToolUseCount``
    agent_id: str | None = None
    agent_usage: Usage | None = None
    agent_model: str | None = None
    agent_tool_uses: int | None = None


class UserMessage(Event):
    """A ``user`` line without tool results: a prompt. Top-level (``parent_tool_use_id`` None)
    it opens a turn; nested, it is the prompt a sub-agent starts with."""

    parent_tool_use_id: str | None = None
    #: Claude Code's ``[Request interrupted by user…]`` text: the user stopped the turn
    interrupted: bool = False


class TurnResult(Event):
    """A ``result`` line: ends the current turn (docs/span-model.md, "turn").

    ``usage`` is the turn's (Claude Code reports per query; milk's one result covers the run);
    ``model_usage`` per model (Claude Code ``modelUsage`` camelCase, milk ``model_usage``
    snake_case) and ``total_cost_usd`` are cumulative for the session. ``error`` is the first of
    ``errors`` (or ``error``). ``final`` is true when the protocol promises no more lines
    (milk: exactly one ``result``, last).
    """

    subtype: str | None = None
    is_error: bool = False
    num_turns: int | None = None
    duration_ms: int | None = None
    duration_api_ms: int | None = None
    stop_reason: str | None = None
    terminal_reason: str | None = None
    #: ``origin.kind``: what started the turn (``task-notification``: a background task woke it)
    origin: str | None = None
    total_cost_usd: float | None = None
    usage: Usage | None = None
    #: the final usage of the turn's last model call (Claude Code 2.1.2xx: ``usage.iterations``'
    #: last entry of ``type`` ``message``), whose own lines gave a snapshot of its start
    last_call: Usage | None = None
    model_usage: dict[str, Usage] = msgspec.field(default_factory=dict)
    error: str | None = None
    uuid: str | None = None
    content: str | None = None
    final: bool = False
    #: Caudra (Caudra's headless-mode documentation): ``run.run_id`` of the run this result ends,
    #: ``background_active`` (active managed tasks), ``subscription_cost_usd`` (a subscription's list price)
    run_id: str | None = None
    background_active: int | None = None
    subscription_cost_usd: float | None = None
    #: Claude Code's ``result_index`` (recorded, not used to pair results with turns)
    result_index: int | None = None


class TurnStarted(Event):
    """Caudra ``system/turn_start`` (Caudra's headless-mode documentation, "Background tasks"): a parent run begins.
    ``run_id`` (an integer on the wire, kept as a string), ``automatic`` and the number of
    ``task_event_ids`` / ``workflow_events`` / ``automation_events`` it started with."""

    run_id: str | None = None
    automatic: bool | None = None
    task_events: int | None = None
    workflow_events: int | None = None
    automation_events: int | None = None


class TaskStarted(Event):
    """``system/task_started`` of a background task that is not a workflow (``task_type``
    ``local_agent``/``Agent``: a sub-agent; ``Bash``, ``PowerShell``, ...: a ``task`` span)."""

    task_id: str = ""
    tool_use_id: str | None = None
    task_type: str | None = None
    subagent_type: str | None = None
    description: str | None = None
    owned_by_subagent: bool | None = None
    is_backgrounded: bool | None = None


class TaskProgress(Event):
    """``system/task_progress`` without ``workflow_progress`` (a non-workflow task)."""

    task_id: str = ""
    tool_use_id: str | None = None
    description: str | None = None
    usage: TaskUsage | None = None
    #: set on a sub-agent's task (Claude Code 2.1.2xx): its ``task_started`` may be unseen
    subagent_type: str | None = None


class LineSeq(Event):
    """milk's envelope ``seq`` (monotonic per run, milk's stream-json contract, ADR-0050 §1): the tracker turns a gap or a
    step back into a ``seq_gap`` event on the session span."""

    seq: int = 0


class SessionMark(Event):
    """A span event on the session span: ``name`` and raw attributes (strings are cleaned by
    the tracker). milk: ``route``, ``agent_switch``, ``route_history``, ``warning``.
    ``model``/``provider`` set: the calls' from now on change (``agent_switch``). ``text``: what
    the notice says, content (a blocked prompt and the hook's message)."""

    name: str = ""
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)
    model: str | None = None
    provider: str | None = None
    text: str | None = None


class SessionError(Event):
    """An error the stream reports outside a result (milk ``system/error``): an ``exception``
    event on the session span (``exception.message``, ``exception.type``)."""

    message: str = ""
    error_type: str | None = None
    recoverable: bool | None = None


# --------------------------------------------------------------------------- records out

INTERNAL = "INTERNAL"
CLIENT = "CLIENT"


class SpanEvent(msgspec.Struct, gc=False):
    """A span event: name, time (epoch ns), attributes."""

    name: str
    time_ns: int
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)


class SpanLink(msgspec.Struct, gc=False):
    """A link to another span by ids (ints, as OpenTelemetry's ``SpanContext`` holds them)."""

    trace_id: int
    span_id: int
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)


class SpanRecord(msgspec.Struct, gc=False):
    """One finished span, fully decided by the tracker; the span builder only converts it.

    ``parent_span_id`` is ``None`` for a root; ``parent_remote`` is true when the parent lives in
    another process (a ``TRACEPARENT`` span). ``error`` set means status ERROR with that
    description; ``error_type`` goes to ``error.type``. Times are epoch ns, ``end_ns >= start_ns``.
    """

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    kind: str = INTERNAL
    parent_remote: bool = False
    error: str | None = None
    error_type: str | None = None
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    links: list[SpanLink] = msgspec.field(default_factory=list)
