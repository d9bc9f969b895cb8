"""Claude Code / CodeBuddy (``cbc``) stream-json: the workflow ``system/task_*`` family.

Source: seed 000 (cbc workflow stdio protocol, aligned with Claude Code 2.1.220), §5.1–§5.4:

* ``system/task_started`` with ``task_type: "local_workflow"`` → :class:`WorkflowStarted`
* ``system/task_progress`` with a ``workflow_progress`` array → :class:`WorkflowProgress`
  (``workflow_phase`` and ``workflow_agent`` entries; unknown entry types ignored, §8)
* ``system/task_updated`` → :class:`TaskUpdated` (``patch.status``, ``patch.end_time`` epoch ms)
* ``system/task_notification`` → :class:`TaskNotification` (``completed|failed|stopped``)

Real Claude Code agents also carry ``durationMs``, ``model``, ``attempt``, ``toolCalls``,
``queuedAt`` and ``lastProgressAt`` (recording ``workflow-probe-2.1.206``); all are read. Wrong
types are dropped field by field (``tokens: "12"`` is read as 12; ``1e30`` epochs as absent).
"""

from __future__ import annotations

from typing import Any

from ..events import (
    Event,
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
from . import LineInfo

#: Agents per snapshot read at most (a hostile snapshot cannot make us allocate without bound).
MAX_ENTRIES = 10_000


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
#: most agent entries one remembered snapshot may hold (a larger one is decoded in full each time):
#: together at most 16,000 remembered entries, whatever the stream sends.
MAX_CACHED_TASKS = 16
MAX_CACHED_ENTRIES = 1_000


class _EntryCache:
    """The previous snapshot's agent entries per task: ``index → (raw dict, decoded agent)``.

    ``task_progress`` repeats every agent in every snapshot (seed 000 §6: snapshot replacement),
    and most entries are unchanged from one snapshot to the next (finished agents, above all).
    An entry equal to the one before (one C-level dict comparison) reuses its decoded
    :class:`WorkflowAgent` instead of converting its ~15 fields again: a snapshot costs what
    changed in it, not its size. Bounded: :data:`MAX_CACHED_TASKS` tasks of at most
    :data:`MAX_CACHED_ENTRIES` entries.
    """

    def __init__(self) -> None:
        self._tasks: dict[str, dict[int, tuple[dict, WorkflowAgent]]] = {}

    def agents(self, task_id: str) -> tuple[dict[int, tuple[dict, WorkflowAgent]], dict]:
        """(previous entries of ``task_id``, a new dict to fill with this snapshot's)."""
        prev = self._tasks.pop(task_id, None) or {}
        fresh: dict[int, tuple[dict, WorkflowAgent]] = {}
        self._tasks[task_id] = fresh
        if len(self._tasks) > MAX_CACHED_TASKS:
            del self._tasks[next(iter(self._tasks))]
        return prev, fresh


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
    newest = None
    for entry in entries[:MAX_ENTRIES]:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")
        index = as_int(entry.get("index"), maximum=1_000_000)
        if index is None:
            continue
        if kind == "workflow_phase":
            ev.phases.append(WorkflowPhase(index, as_str(entry.get("title"))))
        elif kind == "workflow_agent":
            seen = prev.get(index)
            agent = seen[1] if seen is not None and seen[0] == entry else _agent(entry, index)
            if len(fresh) < MAX_CACHED_ENTRIES:
                fresh[index] = (entry, agent)
            ev.agents.append(agent)
            for t in (agent.last_progress_ns, agent.ended_ns, agent.started_ns, agent.queued_ns):
                if t is not None and (newest is None or t > newest):
                    newest = t
    ev.newest_ns = newest
    return ev


class ClaudeCode:
    """The ``claude_code`` dialect (also cbc, and milk's same-family ``task_*`` lines)."""

    name = "claude_code"
    markers = (b"task_started", b"task_progress", b"task_updated", b"task_notification")

    def __init__(self) -> None:
        self._entries = _EntryCache()

    def decode(self, doc: dict[str, Any], line: LineInfo) -> list[Event]:
        if doc.get("type") != "system":
            return []
        subtype = doc.get("subtype")
        task_id = doc.get("task_id")
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        if not isinstance(task_id, str) or not task_id:
            return []
        task_id = task_id[:256]
        sid, ts = line.session_id, line.ts_ns
        if subtype == "task_started":
            if doc.get("task_type") != "local_workflow":
                return []
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
                return []
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
                )
            ]
        return []


DIALECT = ClaudeCode()
