"""Claude Code's ``workflow_progress`` snapshots (the cbc workflow protocol §5.2, §6) → :class:`WorkflowProgress`.

Real Claude Code agents also carry ``durationMs``, ``model``, ``attempt``, ``toolCalls``,
``queuedAt`` and ``lastProgressAt``; all are read. A queued agent has no ``agentId`` yet (it is
keyed by its ``index``). Wrong types are dropped field by field (``tokens: "12"`` is read as 12;
``1e30`` epochs as absent).
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate, chain, compress, count
from operator import itemgetter, ne
from typing import Any

import msgspec

from ..events import (
    MAX_EPOCH_MS,
    MIN_EPOCH_MS,
    TaskUsage,
    WorkflowAgent,
    WorkflowPhase,
    WorkflowProgress,
    as_int,
    as_str,
)
from ..wire import MAX_DURATION_MS
from .base import LineInfo

#: Agents per snapshot read at most (a hostile snapshot cannot make us allocate without bound).
MAX_ENTRIES = 10_000

_decode = msgspec.json.Decoder().decode


def task_usage(value: Any) -> TaskUsage | None:
    if not isinstance(value, dict):
        return None
    return TaskUsage(
        total_tokens=as_int(value.get("total_tokens")),
        tool_uses=as_int(value.get("tool_uses")),
        duration_ms=as_int(value.get("duration_ms"), maximum=MAX_DURATION_MS),
    )


def _epoch_ms(value: Any) -> int | None:
    return as_int(value, minimum=MIN_EPOCH_MS, maximum=MAX_EPOCH_MS)


def _agent(entry: dict[str, Any], index: int) -> WorkflowAgent:
    get = entry.get
    return WorkflowAgent(
        index=index,
        agent_id=as_str(get("agentId")),
        state=as_str(get("state")),
        label=as_str(get("label")),
        phase_index=as_int(get("phaseIndex")),
        phase_title=as_str(get("phaseTitle")),
        started_at=_epoch_ms(get("startedAt")),
        queued_at=_epoch_ms(get("queuedAt")),
        ended_at=_epoch_ms(get("endedAt")),
        last_progress_at=_epoch_ms(get("lastProgressAt")),
        duration_ms=as_int(get("durationMs"), maximum=MAX_DURATION_MS),
        tokens=as_int(get("tokens")),
        tool_calls=as_int(get("toolCalls")),
        attempt=as_int(get("attempt")),
        model=as_str(get("model")),
        error=as_str(get("error")),
        result_preview=as_str(get("resultPreview")),
        prompt_preview=as_str(get("promptPreview")),
    )


#: Snapshots remembered for :class:`_EntryCache` (tasks, least recently used first out), and the
#: most entries one remembered snapshot may hold (a larger one's excess is decoded each time):
#: together at most 16,000 remembered entries, whatever the stream sends.
MAX_CACHED_TASKS = 16
MAX_CACHED_ENTRIES = 1_000
#: ... and the most bytes of entry text it may hold (its entries past them are decoded each
#: time): with the decoded values, a few MiB in all, however long each entry is.
MAX_CACHED_BYTES = 256 * 1024

#: A decoded timeline entry: ``(phase, agent, newest time of the agent in epoch ns)``; all
#: ``None`` for an entry that is neither (unknown type, no usable ``index``).
Entry = tuple[WorkflowPhase | None, WorkflowAgent | None, int | None]
_NOTHING: Entry = (None, None, None)
_PHASE, _AGENT, _NEWEST = itemgetter(0), itemgetter(1), itemgetter(2)


class _EntryCache:
    """The previous snapshot's entries per task, in order: (their JSON texts, decoded).

    ``task_progress`` repeats every agent in every snapshot (the cbc workflow protocol §6:
    snapshot replacement), in the same order, and most entries are unchanged from one snapshot
    to the next (finished agents, above all). The decoder hands ``workflow_progress`` over
    undecoded (``raw_lists``): an entry whose bytes equal the previous snapshot's entry at the
    same place reuses its decoded :class:`WorkflowAgent` — one comparison, no hash, no copy —
    so a snapshot costs what changed in it, not its size; an entry that changed or moved (one
    inserted before it) is decoded again, and its text copied (a view would keep its whole
    line). Bounded: :data:`MAX_CACHED_TASKS` tasks of at most :data:`MAX_CACHED_ENTRIES`
    entries and :data:`MAX_CACHED_BYTES` of their text.
    """

    def __init__(self) -> None:
        self._tasks: dict[str, tuple[list[msgspec.Raw], list[Entry]]] = {}

    def previous(self, task_id: str) -> tuple[list[msgspec.Raw], list[Entry]]:
        """The last snapshot of ``task_id`` that :meth:`keep` was given (both lists empty: none)."""
        return self._tasks.pop(task_id, None) or ([], [])

    def keep(self, task_id: str, raw: list[msgspec.Raw], decoded: list[Entry]) -> None:
        """Remember ``task_id``'s snapshot (its first entries, within :data:`MAX_CACHED_ENTRIES`
        and :data:`MAX_CACHED_BYTES`), the least recently given task out past
        :data:`MAX_CACHED_TASKS`."""
        raw, decoded = raw[:MAX_CACHED_ENTRIES], decoded[:MAX_CACHED_ENTRIES]
        if sum(map(len, raw)) > MAX_CACHED_BYTES:  # (rare: one C-level pass decides)
            n = bisect_right(list(accumulate(map(len, raw))), MAX_CACHED_BYTES)
            raw, decoded = raw[:n], decoded[:n]
        self._tasks[task_id] = (raw, decoded)
        if len(self._tasks) > MAX_CACHED_TASKS:
            del self._tasks[next(iter(self._tasks))]


#: one entry, typed (the common case of well-typed fields: :mod:`otelbridge.events`)
_typed_entry = msgspec.json.Decoder(WorkflowPhase | WorkflowAgent).decode


def _raw_entry(raw: bytes) -> Entry:
    """One ``workflow_progress`` element's JSON text → :data:`Entry` (typed when it can be)."""
    try:
        e = _typed_entry(raw)
    except msgspec.ValidationError:
        try:
            return _entry(_decode(raw))
        except msgspec.DecodeError:  # valid JSON, yet a number out of range (1e999): skipped
            return _NOTHING
    if type(e) is WorkflowPhase:
        return e, None, None
    newest = max(e.last_progress_at or 0, e.ended_at or 0, e.started_at or 0,
                 e.queued_at or 0)  # (epochs are > 0)
    return None, e, newest * 1_000_000 if newest else None


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
        times = [t for t in (agent.last_progress_at, agent.ended_at, agent.started_at,
                             agent.queued_at) if t is not None]
        return None, agent, max(times) * 1_000_000 if times else None
    return _NOTHING


def progress(
    doc: dict[str, Any], line: LineInfo, task_id: str, entries: list, cache: _EntryCache
) -> WorkflowProgress:
    ev = WorkflowProgress(
        line.session_id,
        line.ts_ns,
        task_id=task_id,
        tool_use_id=as_str(doc.get("tool_use_id")),
        description=as_str(doc.get("description")),
        usage=task_usage(doc.get("usage")),
    )
    entries = entries[:MAX_ENTRIES]
    if entries and type(entries[0]) is msgspec.Raw:  # the decoder's raw_lists (all Raw)
        before, known = cache.previous(task_id)
        # the previous snapshot's entries, those that differ at their place and the new ones
        # decoded (C-level passes: the comparison of each pair, the places that differ)
        kept = min(len(entries), len(before))
        added = len(entries) - kept
        decoded, texts = known[:kept] + [None] * added, before[:kept] + [None] * added
        for i in chain(compress(count(), map(ne, entries, before)), range(kept, len(entries))):
            text = bytes(entries[i])
            decoded[i], texts[i] = _raw_entry(text), msgspec.Raw(text)
        cache.keep(task_id, texts, decoded)
    else:  # decoded values (a caller that did not go through the Decoder)
        decoded = list(map(_entry, entries))
    # C-level passes (phases, agents and epoch-ns times are never falsy; None is)
    ev.phases = list(filter(None, map(_PHASE, decoded)))
    ev.agents = list(filter(None, map(_AGENT, decoded)))
    ev.newest_ns = max(filter(None, map(_NEWEST, decoded)), default=None)
    return ev
