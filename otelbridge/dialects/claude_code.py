"""Claude Code / CodeBuddy (``cbc``) stream-json: sessions and the ``system/task_*`` family.

Source: the cbc workflow stdio protocol (aligned with Claude Code 2.1.220), §5.1–§5.4:

* ``system/task_started`` with ``task_type: "local_workflow"`` → :class:`WorkflowStarted`
* ``system/task_progress`` with a ``workflow_progress`` array → :class:`WorkflowProgress`
  (``workflow_phase`` and ``workflow_agent`` entries; unknown entry types ignored, §8)
* ``system/task_updated`` → :class:`TaskUpdated` (``patch.status``, ``patch.end_time`` epoch ms)
* ``system/task_notification`` → :class:`TaskNotification` (``completed|failed|stopped``)

Session lines (Claude Code stream-json as real recordings show it; docs/span-model.md "session"):

* ``system/init`` → :class:`SessionStarted` (``model``, ``claude_code_version``, ``cwd``); current
  Claude Code prints one at the start of every turn
* ``assistant`` → :class:`ModelCall` (``message.id``, ``model``, ``usage``, ``tool_use`` blocks;
  an API-error message as ``api_error``)
* ``stream_event`` ``message_start`` / ``message_delta`` → :class:`ModelCall` (start / final usage)
* ``user`` → :class:`ToolResult` per ``tool_result`` block, else :class:`UserMessage`
* ``result`` → :class:`TurnResult` (``result_index``; Caudra adds ``run.run_id``,
  ``background_active``, ``subscription_cost_usd``)
* Caudra's ``system/turn_start`` (Caudra's headless-mode documentation, "Background tasks") → :class:`TurnStarted`; Caudra
  is a Claude Code drop-in, so its session lines are this family
* ``task_started`` / ``task_progress`` of non-workflow tasks → :class:`TaskStarted` (with
  ``owned_by_subagent``, ``is_backgrounded``) / :class:`TaskProgress`
* bookkeeping lines (``system/thinking_tokens``, ``background_tasks_changed``, ``status``,
  ``session_state_changed``, ``command_lifecycle``, ``rate_limit_event``) → nothing

Lines carrying milk's integer ``seq`` envelope are session lines of the ``milk`` dialect, which
reuses the parsers below; their ``task_*`` lines (the same family) are still decoded here.
``stream_event`` ``content_block_delta`` lines (the bulk of a stream) carry none of the markers.

Strings are carried raw (the span builder redacts them); wrong types are dropped field by field.
Snapshot entries are decoded in :mod:`.claude_code_workflow`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import (
    Event,
    ModelCall,
    SessionMark,
    SessionStarted,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    TaskUpdated,
    ToolCall,
    ToolResult,
    TurnResult,
    TurnStarted,
    Usage,
    UserMessage,
    WorkflowStarted,
    as_int,
    as_str,
    ms_to_ns,
)
from ..wire import MAX_DURATION_MS, held_json
from .base import LineInfo, parse_usage
from .claude_code_workflow import _EntryCache, progress, task_usage

#: Content blocks per message, models per ``modelUsage`` read at most (memory bounds on counts).
MAX_BLOCKS = 1_000
MAX_MODELS = 100
#: Task types that are sub-agents (the cbc workflow protocol §5.1: other tasks keep "Agent", "Bash", ...).
AGENT_TASK_TYPES = frozenset({"local_agent", "Agent"})
#: The model name Claude Code gives its own text for a failed API call.
SYNTHETIC_MODEL = "<synthetic>"


def _arguments(value: Any) -> str | None:
    """A tool call's ``input`` as JSON text (:func:`~otelbridge.wire.held_json`: still JSON when
    long, a big file's ``Write`` too): an object as encoded; a string that holds a JSON object
    or array (the Workflow tool's input) as that document, not as a string of it."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            value = msgspec.json.decode(value)
        except msgspec.DecodeError:
            pass
    return held_json(value)


#: The session's agent name when ``system/init`` does not say which CLI printed it.
UNNAMED_AGENT = "agent"


def _sid(value: Any) -> str | None:
    return as_str(value) or None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _cost(value: Any) -> float | None:
    """A cost in USD as the stream gives it; ``None`` for what no cost is (not a number, a
    boolean, NaN, an infinity or below 0)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf"):
        return float(value)
    return None


def _model_usage(value: Any) -> dict[str, Usage]:
    """``modelUsage`` (Claude Code, camelCase, Anthropic-shaped, with ``costUSD``) or milk's
    ``model_usage`` (snake_case) → usage by model name."""
    out: dict[str, Usage] = {}
    if not isinstance(value, dict):
        return out
    for model, entry in list(value.items())[:MAX_MODELS]:
        if not isinstance(model, str) or not isinstance(entry, dict):
            continue
        if "inputTokens" in entry or "outputTokens" in entry:
            get = entry.get
            usage = Usage(
                as_int(get("inputTokens")),
                as_int(get("outputTokens")),
                as_int(get("cacheReadInputTokens")),
                as_int(get("cacheCreationInputTokens")),
                anthropic=True,
                reasoning_output=as_int(get("thinkingTokens")),
            )
        else:
            usage = parse_usage(entry) or Usage()
        cost = _cost(entry.get("costUSD", entry.get("cost_usd")))
        if cost is not None:
            usage.cost_usd = cost
        out[as_str(model) or ""] = usage
    return out


def _text(value: Any) -> str | None:
    """Text of a content value (string, or a list of ``text`` blocks)."""
    if isinstance(value, str):
        return as_str(value)
    if isinstance(value, list):
        parts = [b.get("text") for b in value[:MAX_BLOCKS] if isinstance(b, dict)]
        return as_str("\n".join(p for p in parts if isinstance(p, str))) or None
    return None


def parse_assistant(doc: dict[str, Any], line: LineInfo) -> list[Event]:
    """An ``assistant`` line → one :class:`ModelCall` (``phase="line"``). An API-error message
    (``model: "<synthetic>"`` or ``is_api_error_message: true``) names no model and carries its
    ``error`` value and text as ``api_error``/``api_error_text``. A tool's arguments are the
    line's ``wire_tool_inputs`` entry for its id when there is one (the input as the tool got
    it: current Claude Code cuts a long ``input`` string, a Workflow script, at 200 characters),
    else its ``input`` (:func:`_arguments`)."""
    msg = doc.get("message")
    if not isinstance(msg, dict):
        return []
    wire = doc.get("wire_tool_inputs")
    if not isinstance(wire, dict):
        wire = None
    calls: list[ToolCall] = []
    texts: list[str] = []
    content = msg.get("content")
    if isinstance(content, list):
        for block in content[:MAX_BLOCKS]:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                tool_id = _sid(block.get("id"))
                if tool_id:
                    args = wire.get(tool_id) if wire is not None else None
                    if not isinstance(args, dict):
                        args = block.get("input")
                    call = ToolCall(
                        tool_id,
                        as_str(block.get("name")),
                        _arguments(args) if args is not None else None,
                    )
                    if isinstance(args, dict):  # Agent/Task tool: the sub-agent it starts
                        call.subagent_type = as_str(args.get("subagent_type"))
                        call.description = as_str(args.get("description"))
                    calls.append(call)
            elif kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
    model = as_str(msg.get("model"))
    api_error = None
    if model == SYNTHETIC_MODEL or doc.get("is_api_error_message") is True:
        model = None
        api_error = as_str(doc.get("error")) or "api_error"
    text = as_str("\n".join(texts)) if texts else None
    message_id = _sid(msg.get("id"))
    if message_id is None and api_error:  # the CLI's own message may have no id: the line's uuid
        message_id = _sid(doc.get("uuid"))
    return [
        ModelCall(
            line.session_id,
            line.ts_ns,
            phase="line",
            message_id=message_id,
            model=model,
            parent_tool_use_id=_sid(doc.get("parent_tool_use_id")),
            usage=parse_usage(msg.get("usage")),
            stop_reason=as_str(msg.get("stop_reason")),
            tool_calls=calls,
            content=text,
            api_error=api_error,
            api_error_text=text if api_error else None,
        )
    ]


#: The text Claude Code puts in a ``user`` line when the user stopped the turn (also ``… for
#: tool use]``)
INTERRUPTED_BY_USER = "[Request interrupted by user"


def parse_user(doc: dict[str, Any], line: LineInfo) -> list[Event]:
    """A ``user`` line → a :class:`ToolResult` per ``tool_result`` block, else one
    :class:`UserMessage`. A ``tool_use_result`` summary with ``is_error: true`` (milk) marks
    the line's results as errors."""
    ptu = _sid(doc.get("parent_tool_use_id"))
    msg = doc.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    summary = doc.get("tool_use_result")
    line_error = isinstance(summary, dict) and summary.get("is_error") is True
    agent_id = as_str(summary.get("agentId")) if isinstance(summary, dict) else None
    # an Agent tool's summary: its sub-agent's last call's usage (that call's lines never come)
    last_call = parse_usage(summary.get("usage")) if agent_id else None
    results: list[Event] = []
    if isinstance(content, list):
        for block in content[:MAX_BLOCKS]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                tool_id = _sid(block.get("tool_use_id"))
                if tool_id:
                    results.append(
                        ToolResult(
                            line.session_id,
                            line.ts_ns,
                            tool_use_id=tool_id,
                            is_error=block.get("is_error") is True or line_error,
                            content=_text(block.get("content")),
                            parent_tool_use_id=ptu,
                            agent_id=agent_id,
                            agent_usage=last_call,
                            agent_model=as_str(summary.get("resolvedModel")) if last_call else None,
                            agent_tool_uses=as_int(summary.get("totalToolUseCount")) if last_call else None,
                        )
                    )
    if results:
        return results
    first = content[0] if isinstance(content, list) and content else content
    text = first.get("text") if isinstance(first, dict) else first
    return [UserMessage(line.session_id, line.ts_ns, parent_tool_use_id=ptu,
                        interrupted=isinstance(text, str) and text.startswith(INTERRUPTED_BY_USER))]


def parse_stream_event(doc: dict[str, Any], line: LineInfo) -> list[Event]:
    """``stream_event`` ``message_start`` / ``message_delta`` → :class:`ModelCall`; other
    stream events → nothing."""
    event = doc.get("event")
    if not isinstance(event, dict):
        return []
    kind = event.get("type")
    ptu = _sid(doc.get("parent_tool_use_id"))
    if kind == "message_start":
        msg = event.get("message")
        if not isinstance(msg, dict):
            return []
        return [
            ModelCall(
                line.session_id,
                line.ts_ns,
                phase="start",
                message_id=_sid(msg.get("id")),
                model=as_str(msg.get("model")),
                parent_tool_use_id=ptu,
                usage=parse_usage(msg.get("usage")),
            )
        ]
    if kind == "message_delta":
        delta = event.get("delta")
        return [
            ModelCall(
                line.session_id,
                line.ts_ns,
                phase="delta",
                parent_tool_use_id=ptu,
                usage=parse_usage(event.get("usage")),
                usage_final=True,
                stop_reason=as_str(delta.get("stop_reason")) if isinstance(delta, dict) else None,
            )
        ]
    return []


def parse_result(doc: dict[str, Any], line: LineInfo, *, final: bool = False) -> TurnResult:
    """A ``result`` line → :class:`TurnResult`. ``is_error`` is taken as given, whatever the
    ``subtype`` (``success`` with ``is_error: true`` is an error). The error text: the first of
    ``errors``; for an API error (``api_error_status``) the result's text, which is the API's
    message (its ``error`` is then Claude Code's generic "could not be resumed"); else
    ``error``."""
    errors = doc.get("errors")
    error = None
    if isinstance(errors, list):
        error = next((as_str(e) for e in errors if isinstance(e, str)), None)
    if error is None and doc.get("is_error") is True and doc.get("api_error_status") is not None:
        error = as_str(doc.get("result")) or None
    if error is None:
        error = as_str(doc.get("error"))
    cost = doc.get("total_cost_usd")
    model_usage = doc.get("modelUsage")
    if model_usage is None:
        model_usage = doc.get("model_usage")
    usage = doc.get("usage")
    steps = usage.get("iterations") if isinstance(usage, dict) else None
    last = steps[-1] if isinstance(steps, list) and steps else None
    return TurnResult(
        line.session_id,
        line.ts_ns,
        subtype=as_str(doc.get("subtype")),
        is_error=doc.get("is_error") is True,
        num_turns=as_int(doc.get("num_turns")),
        duration_ms=as_int(doc.get("duration_ms"), maximum=MAX_DURATION_MS),
        duration_api_ms=as_int(doc.get("duration_api_ms")),
        stop_reason=as_str(doc.get("stop_reason")),
        terminal_reason=as_str(doc.get("terminal_reason")),
        origin=as_str(origin.get("kind")) if isinstance(origin := doc.get("origin"), dict) else None,
        total_cost_usd=_cost(cost),
        usage=parse_usage(usage),
        last_call=parse_usage(last) if isinstance(last, dict) and last.get("type") == "message" else None,
        model_usage=_model_usage(model_usage),
        error=error,
        uuid=as_str(doc.get("uuid")),
        content=as_str(doc.get("result")),
        final=final,
        run_id=_run_id(run.get("run_id")) if isinstance(run := doc.get("run"), dict) else None,
        background_active=as_int(doc.get("background_active")),
        subscription_cost_usd=_cost(doc.get("subscription_cost_usd")),
        result_index=as_int(doc.get("result_index")),
    )


def _run_id(value: Any) -> str | None:
    """Caudra's ``run_id``: an integer or a string, kept as a string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return as_str(value) or None


def _count(value: Any) -> int | None:
    return len(value) if isinstance(value, list) else None


def parse_turn_start(doc: dict[str, Any], line: LineInfo) -> TurnStarted:
    """Caudra ``system/turn_start`` → :class:`TurnStarted`."""
    automatic = doc.get("automatic")
    return TurnStarted(
        line.session_id,
        line.ts_ns,
        run_id=_run_id(doc.get("run_id")),
        automatic=automatic if isinstance(automatic, bool) else None,
        task_events=_count(doc.get("task_event_ids")),
        workflow_events=_count(doc.get("workflow_events")),
        automation_events=_count(doc.get("automation_events")),
    )


def is_milk(doc: dict[str, Any]) -> bool:
    """True for a line with milk's envelope (an integer ``seq``, milk's stream-json contract, ADR-0050 §1)."""
    seq = doc.get("seq")
    return isinstance(seq, int) and not isinstance(seq, bool)


class ClaudeCode:
    """The ``claude_code`` dialect (also cbc, and milk's same-family ``task_*`` lines)."""

    name = "claude_code"
    #: Two markers, because the splitter scans every chunk once per marker (and the union over
    #: all dialects is what it scans): ``subtype`` is on every line of the ``system`` family
    #: (``init``, ``task_*``, Caudra's ``turn_start``) and on every ``result``; ``"message`` on
    #: ``assistant``/``user`` lines (their ``"message"`` object) and on ``message_start``/
    #: ``message_delta`` stream events. A ``content_block_delta`` line — the bulk of a stream —
    #: has neither.
    markers = (b"subtype", b'"message')
    #: snapshot entries stay undecoded until they differ from the previous snapshot's
    raw_lists = ("workflow_progress",)

    def __init__(self) -> None:
        self._entries = _EntryCache()

    def decode(self, doc: dict[str, Any], line: LineInfo) -> list[Event]:
        kind = doc.get("type")
        if kind != "system":
            if is_milk(doc) or "workflow_run_id" in doc:
                # milk lines are milk.py's; Caudra workflow agents' lines (Caudra's headless-mode documentation) are
                # caudra.py's agent spans under their phase, not session sub-agents
                return []
            if kind == "assistant":
                return parse_assistant(doc, line)
            if kind == "user":
                return parse_user(doc, line)
            if kind == "stream_event":
                return parse_stream_event(doc, line)
            if kind == "result":
                return [parse_result(doc, line)]
            return []
        subtype = doc.get("subtype")
        if subtype == "turn_start":
            return [parse_turn_start(doc, line)]
        if subtype == "informational" and not is_milk(doc):
            # a notice from the CLI itself (a hook that blocked the prompt, ...): its level and
            # whether it stopped the turn; its text holds the prompt and the hook's command
            attrs = {"informational.level": as_str(doc.get("level")),
                     "informational.prevent_continuation": doc.get("prevent_continuation")}
            return [SessionMark(line.session_id, line.ts_ns, name="informational",
                                attributes={k: v for k, v in attrs.items() if isinstance(v, (str, bool))},
                                text=as_str(doc.get("content")))]
        if subtype == "init":
            if is_milk(doc):
                return []
            caudra = "automations" in doc or "workflows" in doc
            return [
                SessionStarted(
                    line.session_id,
                    line.ts_ns,
                    # Claude Code names itself by its version field, Caudra by the runtimes its
                    # init alone lists; another CLI printing the same family of lines (Cursor,
                    # cbc builds without the field) is not called so
                    **(
                        {"agent_name": "claude-code", "provider": "anthropic"}
                        if "claude_code_version" in doc
                        else {"agent_name": "caudra" if caudra else UNNAMED_AGENT}
                    ),
                    model=as_str(doc.get("model")),
                    version=as_str(doc.get("claude_code_version")),
                    cwd=as_str(doc.get("cwd")),
                    # Caudra's init says whether its runtimes are attached; its runs begin with
                    # their turn_start (an init followed by automation firings alone is no run)
                    opens_turn=not caudra,
                )
            ]
        task_id = doc.get("task_id")
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        if not isinstance(task_id, str) or not task_id:
            return []
        task_id = as_str(task_id) or ""
        sid, ts = line.session_id, line.ts_ns
        if subtype == "task_started":
            if doc.get("task_type") != "local_workflow":
                return [
                    TaskStarted(
                        sid,
                        ts,
                        task_id=task_id,
                        tool_use_id=_sid(doc.get("tool_use_id")),
                        task_type=as_str(doc.get("task_type")),
                        subagent_type=as_str(doc.get("subagent_type")),
                        description=as_str(doc.get("description")),
                        owned_by_subagent=_flag(doc.get("owned_by_subagent")),
                        is_backgrounded=_flag(doc.get("is_backgrounded")),
                    )
                ]
            return [
                WorkflowStarted(
                    sid,
                    ts,
                    task_id=task_id,
                    tool_use_id=as_str(doc.get("tool_use_id")),
                    workflow_name=as_str(doc.get("workflow_name")),
                    description=as_str(doc.get("description")),
                    prompt=as_str(doc.get("prompt")),
                )
            ]
        if subtype == "task_progress":
            entries = doc.get("workflow_progress")
            if not isinstance(entries, list):
                return [
                    TaskProgress(
                        sid,
                        ts,
                        task_id=task_id,
                        tool_use_id=_sid(doc.get("tool_use_id")),
                        description=as_str(doc.get("description")),
                        usage=task_usage(doc.get("usage")),
                        subagent_type=as_str(doc.get("subagent_type")),
                    )
                ]
            return [progress(doc, line, task_id, entries, self._entries)]
        if subtype == "task_updated":
            patch = doc.get("patch")
            if not isinstance(patch, dict):
                return []
            return [
                TaskUpdated(
                    sid,
                    ts,
                    task_id=task_id,
                    status=as_str(patch.get("status")),
                    end_time_ns=ms_to_ns(patch.get("end_time")),
                )
            ]
        if subtype == "task_notification":
            return [
                TaskNotification(
                    sid,
                    ts,
                    task_id=task_id,
                    status=as_str(doc.get("status")),
                    summary=as_str(doc.get("summary")),
                    usage=task_usage(doc.get("usage")),
                    tool_use_id=_sid(doc.get("tool_use_id")),
                    task_type=as_str(doc.get("task_type")),
                )
            ]
        return []


DIALECT = ClaudeCode()
