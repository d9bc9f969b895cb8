"""milk batch stream-json (milk's stream-json contract, ADR-0050: the §6 catalog and §8.3 conventions).

A milk line is a JSON object with the envelope ``type``, ``session_id``, ``seq`` (monotonic per
run), optional ``ts`` (RFC 3339 with ms: the time of the event it stamps, read by the decoder
registry into ``LineInfo.ts_ns``) and optional ``parent_tool_use_id`` (present exactly when the
actor is nested). Recognition is by shape: an integer ``seq``.

Events:

* every line → :class:`LineSeq` (the tracker reports a gap or step back as a ``seq_gap`` event);
* ``system/init`` → :class:`SessionStarted` from ``agent`` (``name`` names the session span,
  ``provider``, ``model``) and ``milk_version``; each ``warnings`` entry → a ``warning`` mark;
* ``system/route``, ``notification``, ``permission_denied`` → a mark of that name (its
  fields as attributes); ``system/agent_switch`` → ``agent_switch`` mark (its agent as
  ``gen_ai.agent.name``/``gen_ai.provider.name``/``gen_ai.request.model``; its model and
  provider, if given, are those of later calls); ``system/warning`` → ``warning``;
* ``stream_event`` deltas of a top-level call → :class:`ModelStreaming` (a call its
  ``assistant`` line never completes, an interrupt's, is still a call);
* ``system/error`` → :class:`SessionError` (``message``, ``recoverable``): an exception event;
* ``assistant`` / ``user`` → as Claude Code (shared parsers); a sub-agent's ``assistant`` line
  names its agent (``agent``: the sub-agent's name) and no model (its calls' is unknown); a
  ``user`` line carrying a ``tool_result`` names *the tool being answered* in
  ``parent_tool_use_id``, not a nested actor (the tracker finds tools by ``tool_use_id`` only);
* ``result`` (exactly one, last: ``final``) → :class:`TurnResult` with ``usage`` and
  ``model_usage`` per model (``cache_read``/``cache_creation``, which ``input_tokens`` leaves
  out: ``gen_ai.usage.input_tokens`` adds them); its
  ``route_history`` → one ``route_history`` mark. ``usage`` may be absent (``interrupted``).
* ``system/task_*`` are the Claude Code family: the ``claude_code`` dialect decodes them.

Open sets: unknown types, subtypes, fields and enum values are ignored (milk's stream-json contract, ADR-0050 §2–§3).
Marker: ``"seq"`` — every milk line has it, so milk lines are all decoded (needed to see gaps).
"""

from __future__ import annotations

from typing import Any

from ..events import (
    Event,
    LineSeq,
    ModelCall,
    ModelStreaming,
    SessionError,
    SessionMark,
    SessionStarted,
    as_int,
    as_str,
)
from .base import LineInfo
from .claude_code import is_milk, parse_assistant, parse_result, parse_user

#: Envelope keys left out of a mark's attributes.
_ENVELOPE = frozenset({"type", "subtype", "session_id", "seq", "ts", "parent_tool_use_id", "uuid"})
#: ``stream_event`` types that are a model call's output streaming
_DELTAS = frozenset({"content_block_delta", "tool_args_delta"})
#: ``agent_switch``'s agent fields → the GenAI semantic conventions' attributes
_AGENT_KEYS = {"agent.name": "gen_ai.agent.name", "agent.provider": "gen_ai.provider.name",
               "agent.model": "gen_ai.request.model"}
#: At most this many attributes per mark, warnings per init, route_history entries.
MAX_ATTRS = 32
MAX_WARNINGS = 20
MAX_ROUTES = 50


def _flat(doc: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Scalar fields of ``doc`` (minus the envelope), nested objects flattened with dots (two
    levels), at most :data:`MAX_ATTRS`. Strings are cut to 256 characters here and cleaned by
    the tracker."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if len(out) >= MAX_ATTRS:
            break
        if not isinstance(key, str) or (not prefix and key in _ENVELOPE):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, bool) or (isinstance(value, int) and as_int(value, minimum=-(2**62)) is not None):
            out[name] = value
        elif isinstance(value, float) and value == value:
            out[name] = value
        elif isinstance(value, str):
            out[name] = as_str(value)
        elif isinstance(value, dict) and depth < 1:
            for k, v in _flat(value, f"{name}.", depth + 1).items():
                if len(out) < MAX_ATTRS:
                    out[k] = v
    return out


class Milk:
    """The ``milk`` dialect."""

    name = "milk"
    markers = (b'"seq"',)

    def decode(self, doc: dict[str, Any], line: LineInfo) -> list[Event]:
        if not is_milk(doc):
            return []
        sid, ts = line.session_id, line.ts_ns
        out: list[Event] = [LineSeq(sid, ts, seq=doc["seq"])]
        kind = doc.get("type")
        if kind == "system":
            out.extend(self._system(doc, line))
        elif kind == "stream_event" and doc.get("parent_tool_use_id") is None:
            event = doc.get("event")
            if isinstance(event, dict) and event.get("type") in _DELTAS:
                out.append(ModelStreaming(sid, ts))
        elif kind == "assistant":
            calls = parse_assistant(doc, line)
            agent = as_str(doc.get("agent")) if doc.get("parent_tool_use_id") is not None else None
            for ev in calls if agent else ():  # a sub-agent's line names its agent, not its model
                if isinstance(ev, ModelCall):
                    ev.agent = agent
            out.extend(calls)
        elif kind == "user":
            out.extend(parse_user(doc, line))
        elif kind == "result":
            result = parse_result(doc, line, final=True)
            # milk's input_tokens leaves the cache out (basic_turn: input 1234, cache_read 8000):
            # GenAI's input_tokens adds cache_read and cache_creation, as for Anthropic's shape
            for usage in (result.usage, *result.model_usage.values()):
                if usage is not None:
                    usage.anthropic = True
            history = doc.get("route_history")
            if isinstance(history, list) and history:
                targets = [
                    as_str(h.get("target")) or "?"
                    for h in history[:MAX_ROUTES]
                    if isinstance(h, dict)
                ]
                out.append(
                    SessionMark(
                        sid, ts, name="route_history",
                        attributes={"targets": targets, "count": len(history)},
                    )
                )
            out.append(result)  # last: it ends the session
        return out

    def _system(self, doc: dict[str, Any], line: LineInfo) -> list[Event]:
        sid, ts = line.session_id, line.ts_ns
        subtype = doc.get("subtype")
        if subtype == "init":
            agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
            out: list[Event] = [
                SessionStarted(
                    sid,
                    ts,
                    agent_name=as_str(agent.get("name")) or "milk",
                    provider=as_str(agent.get("provider")),
                    model=as_str(agent.get("model")),
                    version=as_str(doc.get("milk_version")),
                )
            ]
            warnings = doc.get("warnings")
            if isinstance(warnings, list):
                for text in warnings[:MAX_WARNINGS]:
                    if isinstance(text, str):
                        out.append(SessionMark(sid, ts, name="warning", attributes={"message": as_str(text)}))
            return out
        if subtype in ("route", "agent_switch", "warning", "notification", "permission_denied"):
            attrs = _flat(doc)
            model = provider = None
            if subtype == "agent_switch":
                agent = doc.get("agent")
                if isinstance(agent, dict):
                    model, provider = as_str(agent.get("model")), as_str(agent.get("provider"))
                # the agent switched to, by the GenAI conventions' names
                attrs = {_AGENT_KEYS.get(k, k): v for k, v in attrs.items()}
            return [SessionMark(sid, ts, name=subtype, attributes=attrs, model=model, provider=provider)]
        if subtype == "error":
            recoverable = doc.get("recoverable")
            return [
                SessionError(
                    sid,
                    ts,
                    message=as_str(doc.get("message")) or "error",
                    error_type=as_str(doc.get("code")) or "milk.system_error",
                    recoverable=recoverable if isinstance(recoverable, bool) else None,
                )
            ]
        return []


DIALECT = Milk()
