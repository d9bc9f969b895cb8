"""Sub-agents (``invoke_agent {subagent_type}``) and background tasks (``task {task_type}``).

* lines with ``parent_tool_use_id`` X nest under the tool span X; a ``local_agent``/``Agent``
  task of tool use X is the same sub-agent; with neither, an Agent tool's result that names its
  ``agentId`` and usage makes it (:meth:`~.calls.CallsMixin._on_tool_result`). A sub-agent is emitted at the first ``result`` after
  it is done (its tool answered, or its task notified), so lines after the notification still
  land; it ends at the latest of its own lines, its tools' results, its tool's result and the
  task's ``end_time``/notification;
* other tasks (docs/span-model.md, "Tasks"): a task whose tool call is in the stream runs under that
  ``execute_tool`` span, starting no earlier than it — except a foreground task
  (``is_backgrounded: false``; a sub-agent's own Bash, ``owned_by_subagent``, and since 2.1.280 the main
  agent's too) whose tool is still open: that task *is* the tool call, its ``task.*`` attributes
  go on the ``execute_tool`` span and no second span is made. If the tool answers before the task
  ends (moved to the background), the task becomes a span under the tool after all. A task whose tool is not
  in the stream stays under the session with ``task.owned_by_subagent``/``task.is_backgrounded``.
  A task ends at its ``end_time`` (else its notification); a notification for a task never
  started in this stream is a zero-length span at the notification (``task notification`` when
  its type is unknown). A second notification is counted and ignored.

A mixin of :class:`~otelbridge.tracker.sessions.SessionTracker`.
"""

from __future__ import annotations

import re
from typing import Any

from ..events import SpanEvent, SpanRecord, TaskNotification, TaskProgress, TaskStarted, TaskUpdated, TaskUsage
from .base import put_attributes, span_name
from .calls import usage_attrs
from .state import Agent, Session, Task

AGENT_TASK_TYPES = frozenset({"local_agent", "Agent"})
#: task types whose ``description`` is a title the model gave; any other's (``local_bash``: the
#: command itself when the model gave no description) is content, exported only with capture on
TITLED_TASK_TYPES = AGENT_TASK_TYPES | {"local_workflow"}
#: the exit code a failed background command's summary reports (the rest of it, the command
#: included, is content)
_EXIT_CODE = re.compile(r"exit code (\d{1,5})\b")
NO_TOOL_RESULT = "no tool_result at end of input"
#: The statuses of a task that ended (Claude Code's ``task_updated`` / ``task_notification``).
ENDED_STATUSES = frozenset({"completed", "failed", "stopped", "killed"})
NO_TERMINAL = "no terminal state at end of input"


def task_usage_attrs(attrs: dict[str, Any], usage: TaskUsage | None) -> None:
    if usage is not None:
        put_attributes(attrs, (
            ("task.usage.total_tokens", usage.total_tokens),
            ("task.usage.tool_uses", usage.tool_uses),
            ("task.usage.duration_ms", usage.duration_ms),
        ))


class SubagentsMixin:
    """Sub-agents and tasks of :class:`~otelbridge.tracker.sessions.SessionTracker`."""

    ctx: Any

    def _on_task_started(self, s: Session, ev: TaskStarted, now: int) -> None:
        if ev.task_id in s.workflows:
            return
        if ev.task_type in AGENT_TASK_TYPES or ev.subagent_type:
            key = ev.tool_use_id or f"task:{ev.task_id}"
            earlier = s.tasks.pop(ev.task_id, None)  # progress seen before its start
            if earlier is not None:
                self._release(s, "task", ev.task_id)
            agent = self._agent(s, key, earlier.first_seen_ns if earlier else now,
                                stamped=earlier is None and self.ctx.own_time(ev.ts_ns))
            if agent is None:
                return
            s.agent_tasks[ev.task_id] = key
            agent.task_id = ev.task_id
            agent.subagent_type = ev.subagent_type or agent.subagent_type
            agent.description = ev.description or agent.description
            if earlier is not None and earlier.usage is not None:
                agent.task_usage = earlier.usage
            return
        tool = s.tools.get(ev.tool_use_id) if ev.tool_use_id else None
        # a foreground task is its tool call (older CLIs print no flag: their tasks are background)
        if tool is not None and ev.is_backgrounded is False:
            if s.tasks.pop(ev.task_id, None) is not None:
                self._release(s, "task", ev.task_id)
            s.tool_tasks[ev.task_id] = tool.id
            tool.task = put_attributes({"task.id": ev.task_id}, (
                ("task.type", ev.task_type), ("task.description", self._description(ev.task_type, ev.description)),
                ("task.owned_by_subagent", ev.owned_by_subagent), ("task.is_backgrounded", ev.is_backgrounded),
            ))
            return
        task = self._task(s, ev.task_id, now)
        if task is None:
            return
        task.started = True
        task.start_ns = min(task.start_ns, now)
        task.task_type = ev.task_type or task.task_type
        task.tool_use_id = ev.tool_use_id or task.tool_use_id
        task.description = ev.description or task.description
        task.owned_by_subagent = ev.owned_by_subagent
        task.is_backgrounded = ev.is_backgrounded
        known = s.tool_spans.get(task.tool_use_id) if task.tool_use_id else None
        if known is not None:
            task.parent_span_id = known[0]
            task.start_ns = max(task.start_ns, known[1])

    def _on_task_progress(self, s: Session, ev: TaskProgress, now: int) -> None:
        if ev.task_id in s.workflows or ev.task_id in s.tool_tasks:
            return
        agent = self._task_agent(s, ev.task_id, ev.tool_use_id)
        if agent is None and ev.subagent_type and ev.task_id not in s.tasks:
            # a sub-agent whose task_started was not seen (a stream read from its middle)
            key = ev.tool_use_id or f"task:{ev.task_id}"
            agent = self._agent(s, key, now, stamped=self.ctx.own_time(ev.ts_ns))
            if agent is not None:
                s.agent_tasks[ev.task_id] = key
                agent.task_id = ev.task_id
                agent.subagent_type = agent.subagent_type or ev.subagent_type
        if agent is not None:
            agent.task_usage = ev.usage or agent.task_usage
            agent.last_ns = max(agent.last_ns, now)
            return
        task = self._task(s, ev.task_id, now)
        if task is not None:
            task.usage = ev.usage or task.usage
            task.tool_use_id = task.tool_use_id or ev.tool_use_id
            task.description = task.description or ev.description

    def _on_task_updated(self, s: Session, ev: TaskUpdated, now: int) -> None:
        if ev.task_id in s.workflows:
            return
        self.ctx.clock.observe(ev.end_time_ns)
        tool = self._task_tool(s, ev.task_id)
        if tool is not None:
            put_attributes(tool.task, (("task.status", ev.status),))
            return
        agent = self._task_agent(s, ev.task_id, None)
        if agent is not None:
            agent.status = ev.status or agent.status
            agent.end_time_ns = ev.end_time_ns or agent.end_time_ns
            return
        task = s.tasks.get(ev.task_id)
        if task is not None:
            task.status = ev.status or task.status
            task.end_time_ns = ev.end_time_ns or task.end_time_ns

    def _on_task_notification(self, s: Session, ev: TaskNotification, now: int) -> None:
        if ev.task_id in s.workflows:
            return
        tool = self._task_tool(s, ev.task_id)
        if tool is not None:
            put_attributes(tool.task, (("task.status", ev.status or "completed"),))
            task_usage_attrs(tool.task, ev.usage)  # type: ignore[arg-type]
            if ev.status == "failed":
                tool.task_failure = self._failure(ev.summary)
            return
        agent = self._task_agent(s, ev.task_id, ev.tool_use_id)
        if agent is not None:
            if agent.notified_ns is not None:
                self.ctx.stats.duplicate_notifications += 1
                return
            agent.notified_ns = now
            agent.task_id = agent.task_id or ev.task_id
            agent.status = ev.status or agent.status or "completed"
            agent.summary = ev.summary
            agent.task_usage = ev.usage or agent.task_usage
            return
        if ev.task_id in s.closed_tasks or ev.task_id in s.tool_tasks:
            self.ctx.stats.duplicate_notifications += 1
            return
        task = self._task(s, ev.task_id, now)
        if task is None:
            return
        task.status = ev.status or task.status or "completed"
        task.usage = ev.usage or task.usage
        task.tool_use_id = task.tool_use_id or ev.tool_use_id
        task.task_type = task.task_type or ev.task_type
        self._emit_task(s, task, now, ev.summary, eof=False)

    def _tool_answered(self, s: Session, tool) -> None:
        """A tool answered before the task it *is* ended (moved to the background): the task
        becomes a ``task`` span under the tool's span, from the tool's start."""
        attrs = tool.task
        if attrs is None or "task.status" in attrs:
            return
        tool.task = None
        task_id = attrs["task.id"]
        s.tool_tasks.pop(task_id, None)
        task = self._task(s, task_id, tool.start_ns)
        if task is not None:
            task.started = True
            task.task_type = attrs.get("task.type")
            task.description = attrs.get("task.description")
            task.tool_use_id = tool.id
            task.owned_by_subagent = attrs.get("task.owned_by_subagent")
            task.parent_span_id = tool.span_id

    def _description(self, task_type: str | None, description: str | None) -> str | None:
        """``task.description`` as it may leave: a titled task type's, else only with capture on."""
        return description if self.ctx.capture_content or task_type in TITLED_TASK_TYPES else None

    def _failure(self, summary: str | None) -> str:
        """A failed task's status text: its summary with capture on; else ``task failed``, with
        the exit code its summary reports (``Background command "…" failed with exit code 1``)."""
        if self.ctx.capture_content and summary:
            return summary
        codes = _EXIT_CODE.findall(summary or "")
        return f"task failed with exit code {codes[-1]}" if codes else "task failed"

    # ------------------------------------------------------------------ lookups

    def _task_tool(self, s: Session, task_id: str):
        """The open tool call a foreground task *is*, or ``None`` (forgotten once it ended)."""
        tool_id = s.tool_tasks.get(task_id)
        if tool_id is None:
            return None
        tool = s.tools.get(tool_id)
        if tool is None or tool.task is None:
            return None
        return tool

    def _agent(self, s: Session, key: str, now: int, *, stamped: bool = True) -> Agent | None:
        agent = s.agents.get(key)
        if agent is not None:
            self._charge(s, "agent", key, agent)  # active: the most recent
            return agent
        if key in s.closed_agents:
            self.ctx.stats.late_events_ignored += 1
            return None
        agent = Agent(key, self._span_id(s, "subagent", key), now, now, start_stamped=stamped,
                      provider=s.now_provider)
        hint = s.hints.pop(key, None)
        if hint is not None:
            agent.subagent_type, agent.description = hint
        s.agents[key] = agent
        self._charge(s, "agent", key, agent)
        return agent

    @staticmethod
    def _agent_done(s: Session, agent: Agent, settled: bool = False) -> bool:
        """Done: some terminal signal came, its tool (if known) was answered and its task (if
        any) notified. A background sub-agent's tool is answered at launch: it waits for the
        notification, or (``settled``) a result that says no background task is active
        (Caudra's ``background_active: 0``; Caudra prints no notification)."""
        if settled and agent.key not in s.tools:
            return True
        if agent.tool_done_ns is None and agent.notified_ns is None:
            return False
        tool_ok = agent.tool_done_ns is not None or agent.key not in s.tool_spans
        task_ok = agent.task_id is None or agent.notified_ns is not None
        return tool_ok and task_ok

    def _task_agent(self, s: Session, task_id: str, tool_use_id: str | None) -> Agent | None:
        key = s.agent_tasks.get(task_id)
        if key is None and tool_use_id is not None and tool_use_id in s.agents:
            key = tool_use_id
            s.agent_tasks[task_id] = key
        return s.agents.get(key) if key is not None else None

    def _task(self, s: Session, task_id: str, now: int) -> Task | None:
        task = s.tasks.get(task_id)
        if task is None:
            if task_id in s.closed_tasks:
                return None
            task = Task(task_id, self._span_id(s, "task", task_id), now, now)
            s.tasks[task_id] = task
        self._charge(s, "task", task_id, task)  # new or active: the most recent
        return task

    # ------------------------------------------------------------------ records

    def _emit_agent(self, s: Session, agent: Agent, eof_error: str | None,
                    interrupted_at: int | None = None) -> None:
        """End a sub-agent: its open calls and tools first, then its own span. ``interrupted_at``
        (epoch ns): a result that says its turn was interrupted cut it then; it and what it
        left open (sub-agents too) end there with an ``interrupted`` event, no error."""
        end = agent.last_ns
        for t in (agent.tool_done_ns, agent.notified_ns, agent.end_time_ns, interrupted_at):
            if t is not None:
                end = max(end, t)
        for tool in [t for t in s.tools.values() if t.owner == agent.key]:
            del s.tools[tool.id]
            if interrupted_at is None:
                self._emit_tool(s, tool, end, NO_TOOL_RESULT, "incomplete", None)
            else:
                self._interrupt_tool(s, tool, end)
        for chat in [c for c in s.chats.values() if c.owner == agent.key]:  # after their tools
            self._emit_chat(s, chat)
        s.agents.pop(agent.key, None)
        self._release(s, "agent", agent.key)
        s.closed_agents.add(agent.key)
        if agent.task_id is not None:
            s.agent_tasks.pop(agent.task_id, None)
            s.closed_tasks.add(agent.task_id)
        start = agent.start_ns
        duration = agent.task_usage.duration_ms if agent.task_usage else None
        if agent.end_time_ns is not None and duration is not None:
            start = min(start, agent.end_time_ns - duration * 1_000_000)
        name = agent.subagent_type or "subagent"
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.agent.name"] = name
        put_attributes(attrs, (("gen_ai.provider.name", agent.provider or s.provider_name()),
                               ("gen_ai.agent.description", agent.description),
                               ("gen_ai.agent.id", agent.task_id or agent.agent_id), ("task.id", agent.task_id),
                               ("task.status", agent.status)))
        if not agent.key.startswith("task:"):
            attrs["task.tool_use_id"] = agent.key
        task_usage_attrs(attrs, agent.task_usage)
        if agent.usage.input_tokens is not None or agent.usage.output_tokens is not None:
            usage_attrs(attrs, agent.usage)
        known = s.tool_spans.get(agent.key)
        if known is not None:  # inside its execute_tool span
            parent, start = known[0], max(start, known[1])
        else:
            parent = s.turn.span_id if s.turn is not None else s.span_id
        rec = SpanRecord(
            name=span_name("invoke_agent", name, "subagent"),
            trace_id=s.trace_id,
            span_id=agent.span_id,
            parent_span_id=parent,
            start_ns=start,
            end_ns=max(end, start),
            attributes=attrs,
        )
        if agent.status == "failed":
            summary = agent.summary if self.ctx.capture_content else None  # its answer: content
            rec.error, rec.error_type = summary or "sub-agent failed", "agent_error"
        elif agent.status in ("stopped", "killed"):
            rec.events.append(SpanEvent("interrupted", max(agent.notified_ns or end, start)))
        elif interrupted_at is not None:
            rec.events.append(SpanEvent("interrupted", max(end, start)))
        elif eof_error is not None:
            rec.error, rec.error_type = eof_error, "incomplete"
        self.ctx.emit(rec)

    def _emit_task(self, s: Session, task: Task, now: int, summary: str | None, *, eof: bool) -> None:
        s.tasks.pop(task.task_id, None)
        self._release(s, "task", task.task_id)
        s.closed_tasks.add(task.task_id)
        end = task.end_time_ns or now
        start = task.start_ns
        duration = task.usage.duration_ms if task.usage else None
        never_started = not task.started and task.first_seen_ns == now
        if never_started and not eof:
            start = end = now  # a task of an earlier process, reported here: zero length
        elif duration is not None and (not task.started or end - duration * 1_000_000 < start):
            start = end - duration * 1_000_000
        attrs = self._common(s)
        attrs["task.id"] = task.task_id
        put_attributes(attrs, (
            ("task.type", task.task_type), ("task.tool_use_id", task.tool_use_id),
            ("task.description", self._description(task.task_type, task.description)),
            ("task.owned_by_subagent", task.owned_by_subagent),
            ("task.is_backgrounded", task.is_backgrounded),
        ))
        attrs["task.status"] = task.status or "incomplete"
        task_usage_attrs(attrs, task.usage)
        name = span_name("task", task.task_type, "notification" if never_started else "task")
        rec = SpanRecord(
            name=name,
            trace_id=s.trace_id,
            span_id=task.span_id,
            parent_span_id=task.parent_span_id if task.parent_span_id is not None else s.span_id,
            start_ns=start,
            end_ns=max(end, start),
            attributes=attrs,
        )
        # a task_updated that said it ended is its terminal state, also when the stream ends
        # before its notification
        if eof and task.status not in ENDED_STATUSES:
            rec.error, rec.error_type = NO_TERMINAL, "incomplete"
        elif task.status == "failed":
            rec.error, rec.error_type = self._failure(summary), "task_failed"
        elif task.status in ("stopped", "killed"):
            rec.events.append(SpanEvent("interrupted", max(now, start)))
        s.start_ns = min(s.start_ns, start)
        s.child_end_ns = max(s.child_end_ns, rec.end_ns)
        self.ctx.emit(rec)
