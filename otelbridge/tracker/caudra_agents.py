"""The agents a Caudra workflow run launches → ``invoke_agent subagent`` span records, and their
tool calls → ``execute_tool {name}`` children.

Source: Caudra's headless-mode documentation, "Run events" (last paragraph): an agent's
``assistant`` and ``user`` lines carry ``workflow_run_id``, ``workflow_epoch``,
``workflow_call_key`` and ``workflow_phase`` beside ``parent_tool_use_id``; their content has
the Claude Code SDK's shape.

* an agent is keyed by ``(workflow_epoch, workflow_call_key, parent_tool_use_id)`` and runs
  from its first line to its last (epoch ns); its usage is the sum of its messages' (each
  ``message.id`` once: a message's lines repeat it);
* a tool call runs from the line of its ``tool_use`` to the line of its agent's
  ``tool_result`` of that id, ERROR ``tool_error`` when ``is_error``; one without a result when
  its run ends ends at its agent's last line, ERROR ``incomplete``;
* the content is read for secrets as a session's is (:func:`~.calls.read_tool_call`,
  :func:`~.calls.read_tool_result`, ``ctx.learn``); the model's text is never exported, a
  tool's arguments and result only with content capture.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..events import CaudraAgentMessage, SpanRecord, Usage
from .base import Context, put_attributes, span_name, usage_attributes
from .budget import ITEM_BYTES, REF_BYTES, text_bytes
from .calls import read_tool_call, read_tool_result

#: Caps that keep memory bounded by design, not by stream length.
MAX_AGENTS_PER_RUN = 10_000
MAX_MESSAGE_IDS = 10_000
MAX_TOOLS_PER_AGENT = 10_000
#: The error of a tool call its run ended without a result for.
NO_TOOL_RESULT = "no tool_result when the workflow ended"


class Tool(msgspec.Struct):
    span_id: int
    name: str | None
    start_ns: int
    arguments: str | None


class Agent(msgspec.Struct):
    key: tuple[int | None, str | None, str | None]
    span_id: int
    first_ns: int
    last_ns: int
    phase: str | None
    call_key: str | None
    epoch: int | None
    parent_tool_use_id: str | None
    model: str | None = None
    #: its tool calls, each ``tool_use`` id once (past the cap: each line's)
    tool_uses: int = 0
    usage: dict[str, Usage] = msgspec.field(default_factory=dict)
    #: tool_use id → its open call; ``None`` once ended (a line repeated opens it no more)
    tools: dict[str, Tool | None] = msgspec.field(default_factory=dict)


def _held(tool: Tool) -> int:
    return ITEM_BYTES + text_bytes(tool.arguments)


class WorkflowAgents:
    """The agents of Caudra workflow runs (a part of ``CaudraTracker``): their state lives in
    each run's ``agents`` dict; records go out through ``ctx.emit``."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def message(self, agents: dict[tuple, Agent], trace_id: int, common: Callable[[], dict[str, Any]],
                ev: CaudraAgentMessage, now: int) -> int:
        """Apply one agent line at ``now`` (epoch ns) to a run's ``agents`` (trace
        ``trace_id``; ``common()`` the attributes every span of the run carries). Returns the
        change in the estimated bytes the run holds (the state budget's weight)."""
        key = (ev.epoch, ev.call_key, ev.parent_tool_use_id)
        agent = agents.get(key)
        if agent is None:
            if len(agents) >= MAX_AGENTS_PER_RUN:
                self.ctx.stats.agents_capped += 1
                return 0
            ident = "/".join(str(k) for k in key)
            agent = agents[key] = Agent(key, self.ctx.ids.span_id(trace_id, "agent", ident), now, now,
                                        ev.phase, ev.call_key, ev.epoch, ev.parent_tool_use_id)
        held = 0
        agent.last_ns = max(agent.last_ns, now)
        agent.phase = agent.phase or ev.phase
        agent.model = ev.model or agent.model
        if ev.usage is not None and ev.message_id:
            if ev.message_id in agent.usage or len(agent.usage) < MAX_MESSAGE_IDS:
                if ev.message_id not in agent.usage:
                    held += REF_BYTES
                agent.usage[ev.message_id] = ev.usage
        if ev.content and self.ctx.learn is not None:
            self.ctx.learn(ev.content, False)
        for call in ev.tool_calls:
            if call.id in agent.tools:
                continue
            agent.tool_uses += 1
            read_tool_call(self.ctx, call)
            if len(agent.tools) >= MAX_TOOLS_PER_AGENT:
                self.ctx.stats.session_items_capped += 1
                continue
            tool = agent.tools[call.id] = Tool(self.ctx.ids.span_id(trace_id, "tool", call.id), call.name, now,
                                               call.arguments)
            held += _held(tool)
        for result in ev.tool_results:
            tool = agent.tools.get(result.tool_use_id)
            if tool is None:
                continue
            agent.tools[result.tool_use_id] = None
            held += REF_BYTES - _held(tool)
            error, output = read_tool_result(self.ctx, result, tool.arguments)
            self._emit_tool(agent, result.tool_use_id, tool, trace_id, common(), now, error,
                            "tool_error" if result.is_error else None, output)
        return held

    def end(self, agent: Agent, trace_id: int, common: dict[str, Any], parent_span_id: int,
            reason: str | None = None) -> None:
        """Emit ``agent`` under ``parent_span_id`` (its phase, else the run's root), and first
        each tool call of it still open (ERROR ``incomplete``: :data:`NO_TOOL_RESULT`, or with
        a ``reason``, the run was cut short, ``no tool_result: {reason}``)."""
        for tool_id, tool in agent.tools.items():
            if tool is not None:
                error = f"no tool_result: {reason}" if reason is not None else NO_TOOL_RESULT
                self._emit_tool(agent, tool_id, tool, trace_id, dict(common), agent.last_ns, error,
                                "incomplete", None)
        attrs = put_attributes(common, (
            ("gen_ai.operation.name", "invoke_agent"), ("workflow.agent.tool_calls", agent.tool_uses),
            ("workflow.call_key", agent.call_key), ("workflow.epoch", agent.epoch),
            ("workflow.phase.title", agent.phase or None), ("workflow.tool_use_id", agent.parent_tool_use_id or None),
            ("gen_ai.request.model", agent.model or None)))
        if agent.usage:
            total = Usage()
            for usage in agent.usage.values():
                total.add(usage)
            attrs.update(usage_attributes(total))
        self.ctx.emit(SpanRecord(name="invoke_agent subagent", trace_id=trace_id, span_id=agent.span_id,
                                 parent_span_id=parent_span_id, start_ns=agent.first_ns, end_ns=agent.last_ns,
                                 attributes=attrs))

    def _emit_tool(self, agent: Agent, tool_id: str, tool: Tool, trace_id: int, attrs: dict[str, Any],
                   end: int, error: str | None, error_type: str | None, result: str | None) -> None:
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.call.id"] = tool_id
        if tool.name:
            attrs["gen_ai.tool.name"] = tool.name
        if self.ctx.capture_content:
            if tool.arguments:
                attrs["gen_ai.tool.call.arguments"] = tool.arguments
            if result:
                attrs["gen_ai.tool.call.result"] = result
        self.ctx.emit(SpanRecord(name=span_name("execute_tool", tool.name, "tool"), trace_id=trace_id,
                                 span_id=tool.span_id, parent_span_id=agent.span_id, start_ns=tool.start_ns,
                                 end_ns=max(end, tool.start_ns), attributes=attrs, error=error,
                                 error_type=error_type))
