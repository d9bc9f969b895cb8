"""Claude Code / CodeBuddy (``cbc``) stream-json: sessions and the ``system/task_*`` family.

Source: seed 000 (cbc workflow stdio protocol, aligned with Claude Code 2.1.220), §5.1–§5.4:

* ``system/task_started`` with ``task_type: "local_workflow"`` → :class:`WorkflowStarted`
* ``system/task_progress`` with a ``workflow_progress`` array → :class:`WorkflowProgress`
  (``workflow_phase`` and ``workflow_agent`` entries; unknown entry types ignored, §8)
* ``system/task_updated`` → :class:`TaskUpdated` (``patch.status``, ``patch.end_time`` epoch ms)
* ``system/task_notification`` → :class:`TaskNotification` (``completed|failed|stopped``)

Session lines (Claude Code stream-json as the recordings in ``../shared/fixtures/claude-code``
show it; SPAN-MODEL.md "session"):

* ``system/init`` → :class:`SessionStarted` (``model``, ``claude_code_version``)
* ``assistant`` → :class:`ModelCall` (``message.id``, ``model``, ``usage``, ``tool_use`` blocks)
* ``stream_event`` ``message_start`` / ``message_delta`` → :class:`ModelCall` (start / final usage)
* ``user`` → :class:`ToolResult` per ``tool_result`` block, else :class:`UserMessage`
* ``result`` → :class:`TurnResult` (Caudra adds ``run.run_id``, ``background_active``)
* Caudra's ``system/turn_start`` (seed 003, "Background tasks") → :class:`TurnStarted`; Caudra
  is a Claude Code drop-in, so its session lines are this family
* ``task_started`` / ``task_progress`` of non-workflow tasks → :class:`TaskStarted` /
  :class:`TaskProgress`

Lines carrying milk's integer ``seq`` envelope are session lines of the ``milk`` dialect, which
reuses the parsers below; their ``task_*`` lines (the same family) are still decoded here.
``stream_event`` ``content_block_delta`` lines (the bulk of a stream) carry none of the markers.

Real Claude Code agents also carry ``durationMs``, ``model``, ``attempt``, ``toolCalls``,
``queuedAt`` and ``lastProgressAt`` (recording ``workflow-probe-2.1.206``); all are read. Wrong
types are dropped field by field (``tokens: "12"`` is read as 12; ``1e30`` epochs as absent).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Annotated, Any

import msgspec

from ..events import (
    MAX_EPOCH_MS,
    MIN_EPOCH_MS,
    Event,
    ModelCall,
    SessionStarted,
    TaskProgress,
    TaskStarted,
    ToolCall,
    ToolResult,
    TurnResult,
    TurnStarted,
    Usage,
    UserMessage,
    TaskNotification,
    TaskUpdated,
    TaskUsage,
    WorkflowAgent,
    WorkflowPhase,
    WorkflowProgress,
    WorkflowStarted,
    as_int,
    as_str,
    ms_to_ns,
)
from . import LineInfo, parse_usage

#: Agents per snapshot read at most (a hostile snapshot cannot make us allocate without bound).
MAX_ENTRIES = 10_000
#: Content blocks per message, models per ``modelUsage`` read at most.
MAX_BLOCKS = 1_000
MAX_MODELS = 100
#: Length of the content previews kept for ``--capture-content`` (characters).
PREVIEW = 1024
#: Task types that are sub-agents (seed 000 §5.1: other tasks keep "Agent", "Bash", ...).
AGENT_TASK_TYPES = frozenset({"local_agent", "Agent"})

_encode = msgspec.json.Encoder()
_decode = msgspec.json.Decoder().decode

#: The session's agent name when ``system/init`` does not say which CLI printed it.
UNNAMED_AGENT = "agent"


def _sid(value: Any) -> str | None:
    return as_str(value, 256) or None


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
            )
        else:
            usage = parse_usage(entry) or Usage()
        cost = entry.get("costUSD", entry.get("cost_usd"))
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost == cost:
            usage.cost_usd = float(cost)
        out[model[:256]] = usage
    return out


def _preview(value: Any) -> str | None:
    """Text of a content value (string, or a list of ``text`` blocks), cut to :data:`PREVIEW`."""
    if isinstance(value, str):
        return value[:PREVIEW]
    if isinstance(value, list):
        parts = [b.get("text") for b in value[:MAX_BLOCKS] if isinstance(b, dict)]
        text = "\n".join(p for p in parts if isinstance(p, str))
        return text[:PREVIEW] if text else None
    return None


def parse_assistant(doc: dict[str, Any], line: LineInfo) -> list[Event]:
    """An ``assistant`` line → one :class:`ModelCall` (``phase="line"``)."""
    msg = doc.get("message")
    if not isinstance(msg, dict):
        return []
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
                    args = block.get("input")
                    call = ToolCall(
                        tool_id,
                        as_str(block.get("name"), 256),
                        _encode.encode(args)[:PREVIEW].decode("utf-8", "replace")
                        if args is not None
                        else None,
                    )
                    if isinstance(args, dict):  # Agent/Task tool: the sub-agent it starts
                        call.subagent_type = as_str(args.get("subagent_type"), 256)
                        call.description = as_str(args.get("description"))
                    calls.append(call)
            elif kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"][:PREVIEW])
    return [
        ModelCall(
            line.session_id,
            line.ts_ns,
            phase="line",
            message_id=_sid(msg.get("id")),
            model=as_str(msg.get("model"), 256),
            parent_tool_use_id=_sid(doc.get("parent_tool_use_id")),
            usage=parse_usage(msg.get("usage")),
            stop_reason=as_str(msg.get("stop_reason"), 64),
            tool_calls=calls,
            content="\n".join(texts)[:PREVIEW] if texts else None,
        )
    ]


def parse_user(doc: dict[str, Any], line: LineInfo) -> list[Event]:
    """A ``user`` line → a :class:`ToolResult` per ``tool_result`` block, else one
    :class:`UserMessage`. A ``tool_use_result`` summary with ``is_error: true`` (milk) marks
    the line's results as errors."""
    ptu = _sid(doc.get("parent_tool_use_id"))
    msg = doc.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    summary = doc.get("tool_use_result")
    line_error = isinstance(summary, dict) and summary.get("is_error") is True
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
                            content=_preview(block.get("content")),
                            parent_tool_use_id=ptu,
                        )
                    )
    if results:
        return results
    return [UserMessage(line.session_id, line.ts_ns, parent_tool_use_id=ptu)]


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
                model=as_str(msg.get("model"), 256),
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
                stop_reason=as_str(delta.get("stop_reason"), 64) if isinstance(delta, dict) else None,
            )
        ]
    return []


def parse_result(doc: dict[str, Any], line: LineInfo, *, final: bool = False) -> TurnResult:
    """A ``result`` line → :class:`TurnResult`. ``is_error`` is taken as given, whatever the
    ``subtype`` (``success`` with ``is_error: true`` is an error)."""
    errors = doc.get("errors")
    error = None
    if isinstance(errors, list):
        error = next((as_str(e, 1024) for e in errors if isinstance(e, str)), None)
    if error is None:
        error = as_str(doc.get("error"), 1024)
    cost = doc.get("total_cost_usd")
    model_usage = doc.get("modelUsage")
    if model_usage is None:
        model_usage = doc.get("model_usage")
    return TurnResult(
        line.session_id,
        line.ts_ns,
        subtype=as_str(doc.get("subtype"), 64),
        is_error=doc.get("is_error") is True,
        num_turns=as_int(doc.get("num_turns")),
        duration_ms=as_int(doc.get("duration_ms")),
        duration_api_ms=as_int(doc.get("duration_api_ms")),
        stop_reason=as_str(doc.get("stop_reason"), 64),
        terminal_reason=as_str(doc.get("terminal_reason"), 64),
        total_cost_usd=float(cost)
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost == cost
        else None,
        usage=parse_usage(doc.get("usage")),
        model_usage=_model_usage(model_usage),
        error=error,
        uuid=as_str(doc.get("uuid"), 128),
        content=as_str(doc.get("result"), PREVIEW),
        final=final,
        run_id=_run_id(run.get("run_id")) if isinstance(run := doc.get("run"), dict) else None,
        background_active=as_int(doc.get("background_active")),
    )


def _run_id(value: Any) -> str | None:
    """Caudra's ``run_id``: an integer or a string, kept as a string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return as_str(value, 128) or None


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
    """True for a line with milk's envelope (an integer ``seq``, seed 002 §1)."""
    seq = doc.get("seq")
    return isinstance(seq, int) and not isinstance(seq, bool)


def _usage(value: Any) -> TaskUsage | None:
    if not isinstance(value, dict):
        return None
    return TaskUsage(
        total_tokens=as_int(value.get("total_tokens")),
        tool_uses=as_int(value.get("tool_uses")),
        duration_ms=as_int(value.get("duration_ms")),
    )


def _agent(entry: dict[str, Any], index: int) -> WorkflowAgent:
    get = entry.get
    return WorkflowAgent(
        index=index,
        agent_id=as_str(get("agentId"), 256),
        state=as_str(get("state"), 32),
        label=as_str(get("label")),
        phase_index=as_int(get("phaseIndex")),
        phase_title=as_str(get("phaseTitle")),
        started_ns=ms_to_ns(get("startedAt")),
        queued_ns=ms_to_ns(get("queuedAt")),
        ended_ns=ms_to_ns(get("endedAt")),
        last_progress_ns=ms_to_ns(get("lastProgressAt")),
        duration_ms=as_int(get("durationMs")),
        tokens=as_int(get("tokens")),
        tool_calls=as_int(get("toolCalls")),
        attempt=as_int(get("attempt")),
        model=as_str(get("model"), 256),
        error=as_str(get("error")),
        result_preview=as_str(get("resultPreview")),
        prompt_preview=as_str(get("promptPreview")),
    )


#: Snapshots remembered for :class:`_EntryCache` (tasks, least recently used first out), and the
#: most entries one remembered snapshot may hold (a larger one's excess is decoded each time):
#: together at most 16,000 remembered entries, whatever the stream sends.
MAX_CACHED_TASKS = 16
MAX_CACHED_ENTRIES = 1_000

#: A decoded timeline entry: ``(phase, agent, newest time of the agent in epoch ns)``; all
#: ``None`` for an entry that is neither (unknown type, no usable ``index``).
Entry = tuple[WorkflowPhase | None, WorkflowAgent | None, int | None]
_NOTHING: Entry = (None, None, None)
_PHASE, _AGENT, _NEWEST = itemgetter(0), itemgetter(1), itemgetter(2)


class _EntryCache:
    """The previous snapshot's entries per task: ``entry JSON text → decoded entry``.

    ``task_progress`` repeats every agent in every snapshot (seed 000 §6: snapshot replacement),
    and most entries are unchanged from one snapshot to the next (finished agents, above all).
    The decoder hands ``workflow_progress`` over undecoded (``raw_lists``): an entry whose bytes
    equal one of the previous snapshot's reuses its decoded :class:`WorkflowAgent` without
    decoding its JSON at all, so a snapshot costs what changed in it, not its size. Bounded:
    :data:`MAX_CACHED_TASKS` tasks of at most :data:`MAX_CACHED_ENTRIES` entries.
    """

    def __init__(self) -> None:
        self._tasks: dict[str, dict[bytes, Entry]] = {}

    def agents(self, task_id: str) -> tuple[dict[bytes, Entry], dict[bytes, Entry]]:
        """(previous entries of ``task_id``, a new dict to fill with this snapshot's)."""
        prev = self._tasks.pop(task_id, None) or {}
        fresh: dict[bytes, Entry] = {}
        self._tasks[task_id] = fresh
        if len(self._tasks) > MAX_CACHED_TASKS:
            del self._tasks[next(iter(self._tasks))]
        return prev, fresh


# Typed shapes of the two entry kinds, for the common case of well-typed fields. A value of
# another type or out of range fails the typed decode, and the entry is then decoded generically
# and read field by field (:func:`_entry`), which drops or coerces it as documented above: the
# constraints below are exactly the ranges ``as_int``/``ms_to_ns``/``as_str`` accept unchanged.
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**62)] | None
_Epoch = Annotated[int, msgspec.Meta(ge=MIN_EPOCH_MS, le=MAX_EPOCH_MS)] | None
_Text = Annotated[str, msgspec.Meta(max_length=4096)] | None
_Name = Annotated[str, msgspec.Meta(max_length=256)] | None


class _Phase(msgspec.Struct, tag_field="type", tag="workflow_phase", gc=False):
    index: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]
    title: _Text = None


class _Agent(msgspec.Struct, tag_field="type", tag="workflow_agent", gc=False):
    index: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]
    agentId: _Name = None
    state: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    label: _Text = None
    phaseIndex: _Count = None
    phaseTitle: _Text = None
    startedAt: _Epoch = None
    queuedAt: _Epoch = None
    endedAt: _Epoch = None
    lastProgressAt: _Epoch = None
    durationMs: _Count = None
    tokens: _Count = None
    toolCalls: _Count = None
    attempt: _Count = None
    model: _Name = None
    error: _Text = None
    resultPreview: _Text = None
    promptPreview: _Text = None


_typed_entry = msgspec.json.Decoder(_Phase | _Agent).decode


def _raw_entry(raw: bytes) -> Entry:
    """One ``workflow_progress`` element's JSON text → :data:`Entry` (typed when it can be)."""
    try:
        e = _typed_entry(raw)
    except msgspec.ValidationError:
        try:
            return _entry(_decode(raw))
        except msgspec.DecodeError:  # valid JSON, yet a number out of range (1e999): skipped
            return _NOTHING
    if type(e) is _Phase:
        return WorkflowPhase(e.index, e.title), None, None
    started, queued, ended, last = e.startedAt, e.queuedAt, e.endedAt, e.lastProgressAt
    agent = WorkflowAgent(
        e.index, e.agentId, e.state, e.label, e.phaseIndex, e.phaseTitle,
        None if started is None else started * 1_000_000,
        None if queued is None else queued * 1_000_000,
        None if ended is None else ended * 1_000_000,
        None if last is None else last * 1_000_000,
        e.durationMs, e.tokens, e.toolCalls, e.attempt, e.model, e.error,
        e.resultPreview, e.promptPreview,
    )
    newest = -1
    for t in (last, ended, started, queued):
        if t is not None and t > newest:
            newest = t
    return None, agent, newest * 1_000_000 if newest >= 0 else None


def _entry(entry: Any) -> Entry:
    """One decoded ``workflow_progress`` element → :data:`Entry`."""
    if not isinstance(entry, dict):
        return _NOTHING
    kind = entry.get("type")
    index = as_int(entry.get("index"), maximum=1_000_000)
    if index is None:
        return _NOTHING
    if kind == "workflow_phase":
        return WorkflowPhase(index, as_str(entry.get("title"))), None, None
    if kind == "workflow_agent":
        agent = _agent(entry, index)
        times = [t for t in (agent.last_progress_ns, agent.ended_ns, agent.started_ns,
                             agent.queued_ns) if t is not None]
        return None, agent, max(times) if times else None
    return _NOTHING


def _progress(
    doc: dict[str, Any], line: LineInfo, task_id: str, entries: list, cache: _EntryCache
) -> WorkflowProgress:
    prev, fresh = cache.agents(task_id)
    ev = WorkflowProgress(
        line.session_id,
        line.ts_ns,
        task_id=task_id,
        tool_use_id=as_str(doc.get("tool_use_id"), 256),
        description=as_str(doc.get("description")),
        usage=_usage(doc.get("usage")),
    )
    entries = entries[:MAX_ENTRIES]
    if entries and type(entries[0]) is msgspec.Raw:  # the decoder's raw_lists (all Raw)
        keys = list(map(bytes, entries))
        decoded = list(map(prev.get, keys))
        if None in decoded:  # decode what changed since the previous snapshot
            for i in [i for i, entry in enumerate(decoded) if entry is None]:
                decoded[i] = _raw_entry(keys[i])
        fresh.update(zip(keys[:MAX_CACHED_ENTRIES], decoded))
    else:  # decoded values (a caller that did not go through the Decoder)
        decoded = list(map(_entry, entries))
    # C-level passes (phases, agents and epoch-ns times are never falsy; None is)
    ev.phases = list(filter(None, map(_PHASE, decoded)))
    ev.agents = list(filter(None, map(_AGENT, decoded)))
    ev.newest_ns = max(filter(None, map(_NEWEST, decoded)), default=None)
    return ev


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
                # milk lines are milk.py's; Caudra workflow agents' lines (seed 003) are
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
        if subtype == "init":
            if is_milk(doc):
                return []
            return [
                SessionStarted(
                    line.session_id,
                    line.ts_ns,
                    # Claude Code names itself by its version field; another CLI printing the
                    # same family of lines (Cursor, cbc builds without it) is not called so
                    **(
                        {"agent_name": "claude-code", "provider": "anthropic"}
                        if "claude_code_version" in doc
                        else {"agent_name": UNNAMED_AGENT}
                    ),
                    model=as_str(doc.get("model"), 256),
                    version=as_str(doc.get("claude_code_version"), 64),
                )
            ]
        task_id = doc.get("task_id")
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        if not isinstance(task_id, str) or not task_id:
            return []
        task_id = task_id[:256]
        sid, ts = line.session_id, line.ts_ns
        if subtype == "task_started":
            if doc.get("task_type") != "local_workflow":
                return [
                    TaskStarted(
                        sid,
                        ts,
                        task_id=task_id,
                        tool_use_id=_sid(doc.get("tool_use_id")),
                        task_type=as_str(doc.get("task_type"), 64),
                        subagent_type=as_str(doc.get("subagent_type"), 256),
                        description=as_str(doc.get("description")),
                    )
                ]
            return [
                WorkflowStarted(
                    sid,
                    ts,
                    task_id=task_id,
                    tool_use_id=as_str(doc.get("tool_use_id"), 256),
                    workflow_name=as_str(doc.get("workflow_name")),
                    description=as_str(doc.get("description")),
                    prompt=as_str(doc.get("prompt"), 65536),
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
                        usage=_usage(doc.get("usage")),
                        last_tool_name=as_str(doc.get("last_tool_name"), 256),
                    )
                ]
            return [_progress(doc, line, task_id, entries, self._entries)]
        if subtype == "task_updated":
            patch = doc.get("patch")
            if not isinstance(patch, dict):
                return []
            return [
                TaskUpdated(
                    sid,
                    ts,
                    task_id=task_id,
                    status=as_str(patch.get("status"), 32),
                    end_time_ns=ms_to_ns(patch.get("end_time")),
                )
            ]
        if subtype == "task_notification":
            return [
                TaskNotification(
                    sid,
                    ts,
                    task_id=task_id,
                    status=as_str(doc.get("status"), 32),
                    summary=as_str(doc.get("summary")),
                    usage=_usage(doc.get("usage")),
                    tool_use_id=_sid(doc.get("tool_use_id")),
                )
            ]
        return []


DIALECT = ClaudeCode()
