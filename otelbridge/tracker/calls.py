"""Model calls (``chat {model}``) and tool calls (``execute_tool {name}``) of a session.

* a model call groups the lines of one ``message.id``; a ``message_delta`` belongs to the open
  call of its scope (``parent_tool_use_id``) and carries the final usage; a call ends at its last
  line, or its latest tool's end when later (its tools are emitted first), and is emitted when the next call of its scope starts, or its turn / sub-agent ends;
* an API-error message (``<synthetic>`` / ``is_api_error_message``) is a ``chat`` span named by
  the session's model, ERROR, ``error.type`` = its ``error`` value;
* a tool call runs from its ``tool_use`` to the ``tool_result`` of that id (found by id only),
  ERROR when ``is_error``; a foreground task that *is* the call adds its ``task.*`` attributes.

A mixin of :class:`~otelbridge.tracker.sessions.SessionTracker` (it uses ``ctx``, ``_turn``,
``_agent``, ``_span_id``, ``_common``, ``_charge``, ``_release``).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ..events import CLIENT, ModelCall, ModelStreaming, SpanEvent, SpanRecord, ToolCall, ToolResult, Usage
from ..secret_commands import prints_secret, writes_secret
from .base import Context, remember, span_name, usage_attributes
from .results import count_turn
from .state import Agent, Chat, Session, Tool, Turn

#: Remembered tool span ids, sub-agent hints and workflow ids per session (open items are
#: bounded by the state budget, :mod:`.budget`).
MAX_ITEMS = 10_000
#: The key of a model call whose output streamed and no line completed (turn number follows)
STREAMED = "streamed/"
#: A tool's output as exported when its command printed a secret bare (the whole output)
PRINTED_SECRET = "[REDACTED:secret]"

_json = msgspec.json.Encoder()
#: Anthropic's ``stop_reason`` as the GenAI conventions' ``finish_reason`` (others as given)
_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                   "model_context_window_exceeded": "length", "tool_use": "tool_call",
                   "refusal": "content_filter"}


def _output_messages(chat: Chat) -> str:
    """``gen_ai.output.messages`` of ``chat``: one assistant message of its text and its tool
    calls (``tool_call`` parts: id and name; the arguments are on each call's ``execute_tool``
    span, not held twice), with the ``finish_reason`` the conventions require: ``error`` for an
    API error (its message is the CLI's own), else its ``stop_reason`` mapped, else
    ``tool_call`` (it asked for tools) or ``stop``."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": chat.content}] if chat.content else []
    parts.extend({"type": "tool_call", "id": call_id, "name": name} for call_id, name in chat.tool_calls)
    if chat.error_type:
        finish = "error"
    elif chat.stop_reason:
        finish = _FINISH_REASONS.get(chat.stop_reason, chat.stop_reason)
    else:
        finish = "tool_call" if chat.tool_calls else "stop"
    return _json.encode([{"role": "assistant", "parts": parts, "finish_reason": finish}]).decode()


#: Claude Code's tag of a model's context window on ``resolvedModel`` (``claude-opus-5[1m]``)
_CONTEXT_TAG = re.compile(r"\[[0-9a-z]+\]\Z")


def read_tool_call(ctx: Context, call: ToolCall) -> None:
    """What a tool call's arguments tell the redactor (``ctx.learn``, ``ctx.remember``): the
    secrets they show, and a file they write that is named for a secret, whose content is one."""
    if call.arguments and ctx.remember is not None:
        written = writes_secret(call.arguments)
        if written is not None:
            ctx.remember(written)
    if call.arguments and ctx.learn is not None:
        ctx.learn(call.arguments, True)


def read_tool_result(ctx: Context, ev: ToolResult, arguments: str | None,
                     failure: str | None = None) -> tuple[str | None, str | None]:
    """What the redactor learns from a tool's result (the secrets its output shows; the whole
    output, remembered bare, when its command prints a secret: ``prints_secret``), and the
    call's ``(error, result)`` as exported: the error its output (with content capture), else
    ``failure``, else ``tool error``, when ``is_error``; the result :data:`PRINTED_SECRET` for
    such a command's output."""
    if ev.content and ctx.learn is not None:
        ctx.learn(ev.content, False)
    secret = bool(ev.content) and not ev.is_error and arguments is not None and prints_secret(arguments)
    if secret and ctx.remember is not None:
        ctx.remember(ev.content)  # type: ignore[arg-type]
    error = None
    if ev.is_error:
        error = (ev.content if ctx.capture_content and ev.content else None) or failure or "tool error"
    return error, PRINTED_SECRET if secret else ev.content


def usage_attrs(attrs: dict[str, Any], usage: Usage | None) -> None:
    """Add ``gen_ai.usage.*`` of ``usage`` to ``attrs`` (thinking tokens as
    ``gen_ai.usage.reasoning.output_tokens``), the cache-creation parts GenAI has no key for
    under ``anthropic.usage.*``."""
    attrs.update(usage_attributes(usage))
    if usage is not None:
        for key, value in (
            ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_output),
            ("anthropic.usage.cache_creation.ephemeral_5m_input_tokens", usage.cache_creation_5m),
            ("anthropic.usage.cache_creation.ephemeral_1h_input_tokens", usage.cache_creation_1h),
        ):
            if value is not None:
                attrs[key] = value


#: at most this long (seconds; replay: of the stream's time) a turn's first model call waits
#: for the result that would tell its output: 2.1.27x prints a turn's result after the background
#: work it started, and the final answer the result follows takes seconds
FIRST_CALL_HOLD_S = 30.0


def _split_output(first: dict[str, Any], second: Usage, total: Usage, last: Usage) -> None:
    """A two-call turn's first call's ``gen_ai.usage.output_tokens`` (in its attributes
    ``first``): the result's (``total``) less the second's final (``last``), when ``second`` is
    that call (the same input counts) and the two inputs add up to the result's; never below
    what its lines said."""
    if second.inputs() != last.inputs() or last.output_tokens is None:
        return
    first_in, second_in, total_in = (first.get("gen_ai.usage.input_tokens"), second.gen_ai_input_tokens(),
                                     total.gen_ai_input_tokens())
    if first_in is None or second_in is None or first_in + second_in != total_in:
        return
    rest = total.output_tokens - last.output_tokens  # type: ignore[operator]
    if rest >= first.get("gen_ai.usage.output_tokens", 0):
        first["gen_ai.usage.output_tokens"] = rest


class CallsMixin:
    """Model calls and tool calls of :class:`~otelbridge.tracker.sessions.SessionTracker`."""

    ctx: Any

    def _on_model_call(self, s: Session, ev: ModelCall, now: int) -> None:
        scope = ev.parent_tool_use_id
        agent = None
        if scope is not None:
            agent = self._agent(s, scope, now)
            if agent is None:
                return
            agent.own_line()
            agent.subagent_type = agent.subagent_type or ev.agent
        else:
            self._turn(s, now).streamed_ns = None  # (its output had streamed: this is that call)
        mid = ev.message_id or s.scope_chat.get(scope)
        if mid is None:
            return  # a delta with no call to belong to
        chat = s.chats.get(mid)
        if chat is None:
            current = s.scope_chat.get(scope)
            if current is not None and current in s.chats:
                self._emit_chat(s, s.chats[current])
            turn = s.turn if agent is None else None
            scope_of = agent if agent is not None else turn
            parent = scope_of.span_id  # type: ignore[union-attr]
            # the call began when it was asked for (its scope's prompt, last tool result or
            # call), not at its first line, which comes once its first block is done
            asked = max(scope_of.start_ns, scope_of.ready_ns)  # type: ignore[union-attr]
            # (a sub-agent whose lines name it and no model runs one the stream does not say)
            model = ev.model or (None if ev.agent else s.now_model or s.model)
            chat = Chat(mid, self._span_id(s, "chat", mid), parent, scope, min(now, asked), now,
                        model, turn.n if turn is not None else None, provider=s.now_provider)
            s.chats[mid] = chat
            s.scope_chat[scope] = mid
            if agent is not None:
                agent.provider = s.now_provider or agent.provider
            if turn is not None and turn.model is None and not ev.agent:
                turn.model = model  # no init named one: the model its first call asked (2.1.206)
                s.call_model = s.call_model or model
        chat.end_ns = max(chat.end_ns, now)
        # (a time of its own, or one taken when it passed; in the stream's clock only a bound)
        chat.dated = self._dated or not self.ctx.clock.uses_stream
        chat.mark = s.model_results
        chat.streamed = chat.streamed or ev.phase == "start"
        if ev.model and not chat.model:
            chat.model = ev.model
        if ev.api_error:
            chat.error_type, chat.error_text = ev.api_error, ev.api_error_text
        if ev.stop_reason:
            chat.stop_reason = ev.stop_reason
        learn = self.ctx.learn
        if ev.content:
            chat.content = ((chat.content + "\n") if chat.content else "") + ev.content
            if learn is not None:
                learn(ev.content, False)
        if ev.usage is not None:
            self._merge_usage(chat, ev)
        self._charge(s, "chat", mid, chat)  # new or active: the most recent, at its size now
        for call in ev.tool_calls:
            if call.id in s.tools:
                continue
            if self.ctx.capture_content:
                chat.tool_calls.append((call.id, call.name))
            read_tool_call(self.ctx, call)
            tool = Tool(call.id, self._span_id(s, "tool", call.id), chat.span_id, scope, now,
                        call.name, call.arguments, chat.turn_n, message_id=mid,
                        dated=self.ctx.own_time(ev.ts_ns))
            s.tools[call.id] = tool
            if agent is not None:
                agent.tools += 1
            self._charge(s, "tool", call.id, tool)
            remember(s.tool_spans, call.id, (tool.span_id, now), cap=MAX_ITEMS)
            if call.subagent_type or call.description:
                pending = s.agents.get(call.id)
                if pending is not None:
                    pending.subagent_type = pending.subagent_type or call.subagent_type
                    pending.description = pending.description or call.description
                else:  # remembered until the sub-agent shows up
                    remember(s.hints, call.id, (call.subagent_type, call.description), cap=MAX_ITEMS)
        if agent is None and ev.tool_calls and s.turn is not None and s.turn.first_call is not None \
                and s.turn.first_call.span_id != chat.span_id:
            self._let_first_call_go(s.turn)  # a later call asks for tools: a third one follows
        if agent is not None:
            agent.last_ns = max(agent.last_ns, now)

    @staticmethod
    def _merge_usage(chat: Chat, ev: ModelCall) -> None:
        u = ev.usage
        assert u is not None
        if chat.final and not ev.usage_final:
            return
        mine = chat.usage
        for name in ("input_tokens", "cache_read", "cache_creation", "reasoning_output",
                     "cache_creation_5m", "cache_creation_1h"):
            value = getattr(u, name)
            if value is not None:
                setattr(mine, name, value)
        if u.output_tokens is not None:
            if ev.usage_final or mine.output_tokens is None:
                mine.output_tokens = u.output_tokens
            else:  # per-line output_tokens is a snapshot taken at the line's start
                mine.output_tokens = max(mine.output_tokens, u.output_tokens)
        mine.anthropic = mine.anthropic or u.anthropic
        chat.final = chat.final or ev.usage_final

    def _on_tool_result(self, s: Session, ev: ToolResult, now: int) -> None:
        tool = s.tools.pop(ev.tool_use_id, None)
        agent = s.agents.get(ev.tool_use_id)
        if agent is None and tool is not None and ev.agent_usage is not None:
            # an Agent tool's result, and no line of its sub-agent came (no task line, none of
            # its own): the result is all the stream shows of it; its tool call started it
            agent = self._agent(s, tool.id, tool.start_ns, stamped=tool.dated)
        if agent is not None:
            if ev.agent_usage is not None and agent.tool_done_ns is None:  # (not a repeat)
                self._last_agent_call(s, agent, ev, now)
            agent.tool_done_ns = now
            agent.agent_id = agent.agent_id or ev.agent_id
        if tool is None:
            if ev.parent_tool_use_id is None and agent is None:
                self._turn(s, now)
            return
        self._tool_answered(s, tool)
        self._ready(s, tool.owner, tool.turn_n, now)
        if tool.owner is None:
            self._turn(s, now)
        else:
            owner = s.agents.get(tool.owner)
            if owner is not None:
                owner.last_ns = max(owner.last_ns, now)
        error, result = read_tool_result(self.ctx, ev, tool.arguments, tool.task_failure)
        self._emit_tool(s, tool, now, error, "tool_error" if ev.is_error else None, result)

    def _last_agent_call(self, s: Session, agent: Agent, ev: ToolResult, now: int) -> None:
        """An Agent tool's result (``now``, epoch ns) gives the usage of its sub-agent's last
        model call (``ev.agent_usage``), whose lines Claude Code does not print: that call is
        the sub-agent's open one when their input counts match (its output then is the
        summary's, not a start-of-call snapshot), else a ``chat`` span of its own under the
        sub-agent, from when its scope asked for it — or at ``now``, zero-length, when the
        stream showed fewer of its tool calls than it made: the call's start is then unknown."""
        usage = ev.agent_usage
        assert usage is not None
        open_id = s.scope_chat.get(agent.key)
        chat = s.chats.get(open_id) if open_id is not None else None
        if chat is not None and chat.usage.inputs() == usage.inputs():
            chat.usage.output_tokens = usage.output_tokens
            chat.final = True
            return
        model = chat.model if chat is not None else None
        if chat is not None:
            self._emit_chat(s, chat)
        shown_all = ev.agent_tool_uses is None or agent.tools >= ev.agent_tool_uses
        start = min(now, max(agent.start_ns, agent.ready_ns)) if shown_all else now
        # (the model its calls named; ``resolvedModel`` names a 1M-context run ``…[1m]``)
        model = model or (_CONTEXT_TAG.sub("", ev.agent_model) if ev.agent_model else None)
        last = Chat("", self._span_id(s, "chat", f"{agent.key}:last"), agent.span_id, agent.key,
                    start, now, model, provider=agent.provider,
                    usage=usage, final=True, mark=s.model_results, dated=True)
        self._emit_chat(s, last)

    def _end_calls(self, s: Session, turn_n: int, end: int, error: str | None) -> None:
        """End the top-level calls and tools of turn ``turn_n`` (tools still open at ``end``,
        ERROR ``incomplete`` with ``error``; ``None``: the turn was interrupted, no error, and
        they carry an ``interrupted`` event at ``end``)."""
        for tool in [t for t in s.tools.values() if t.owner is None and t.turn_n == turn_n]:
            del s.tools[tool.id]
            if error is None:
                self._interrupt_tool(s, tool, end)
            else:
                self._emit_tool(s, tool, end, error, "incomplete", None)
        for chat in [c for c in s.chats.values() if c.owner is None and c.turn_n == turn_n]:
            self._emit_chat(s, chat)

    @staticmethod
    def _covers(s: Session, turn_n: int | None, end: int, usage: Usage | None = None,
                again: Usage | None = None) -> None:
        """Turn ``turn_n`` (open or waiting for its result) ends no earlier than ``end``; a
        model call's ``usage`` adds to the turn's :attr:`~Turn.calls_usage` (``again``, what
        the span before counted of that call, to its :attr:`~Turn.again`)."""
        for turn in (s.turn, *s.waiting):
            if turn is not None and turn.n == turn_n:
                turn.child_end_ns = max(turn.child_end_ns, end)
                if usage is not None:
                    turn.calls_usage.add(usage)
                    turn.calls += 1
                    if again is not None:
                        turn.again.add(again)

    @staticmethod
    def _ready(s: Session, owner: str | None, turn_n: int | None, ns: int) -> None:
        """The next model call of a scope (the sub-agent ``owner``, else the turn ``turn_n``)
        was asked for no earlier than ``ns``."""
        if owner is not None:
            agent = s.agents.get(owner)
            if agent is not None:
                agent.ready_ns = max(agent.ready_ns, ns)
            return
        for turn in (s.turn, *s.waiting):
            if turn is not None and turn.n == turn_n:
                turn.ready_ns = max(turn.ready_ns, ns)

    @staticmethod
    def _cut_calls(s: Session, turn_n: int, reason: str) -> None:
        """A turn's result says it failed: its top-level calls whose stream began and never
        ended (a ``message_start``, no ``message_delta``: an interrupt, a dropped connection)
        end as ERROR ``reason``."""
        for chat in s.chats.values():
            if chat.owner is None and chat.turn_n == turn_n and chat.streamed and not chat.final \
                    and chat.error_type is None:
                chat.error_type, chat.error_text = reason, f"the model call did not finish ({reason})"

    @staticmethod
    def _settle_output(s: Session, turn: Turn, usage: Usage | None, last: Usage | None = None) -> None:
        """A turn whose one top-level model call is still open when its result comes: the call
        takes the result's ``output_tokens`` (``usage``), which its own lines give only as a
        snapshot taken at their start, and its input counts when its lines gave none (milk's).
        A turn of two calls, the second open with its final usage (``last``) and the first held
        (:attr:`Turn.first_call`): when their input counts add up to the result's, the first
        made the rest of its output. Three or more share it in ways the stream does not show,
        so theirs stay as their lines said; so do those of a turn that may have begun in the
        span before (:meth:`~.state.Session.began_before`), whose result counts that span's too."""
        if usage is None or usage.output_tokens is None or s.began_before(turn):
            return
        mine = [c for c in s.chats.values() if c.owner is None and c.turn_n == turn.n]
        if turn.calls:
            if turn.calls == 1 and len(mine) == 1 and turn.first_call is not None and last is not None:
                _split_output(turn.first_call.attributes, mine[0].usage, usage, last)
            return
        if len(mine) == 1 and not mine[0].final:
            chat = mine[0]
            chat.usage.output_tokens = max(chat.usage.output_tokens or 0, usage.output_tokens)
            if chat.usage.input_tokens is None:  # its lines gave none (milk's carry no usage)
                chat.usage.input_tokens, chat.usage.anthropic = usage.input_tokens, usage.anthropic
                chat.usage.cache_read, chat.usage.cache_creation = usage.cache_read, usage.cache_creation

    @staticmethod
    def _settle_last_call(s: Session, turn: Turn, last: Usage | None) -> None:
        """The turn's last model call's final usage (``last``, from its result) goes to the open
        call of the turn whose input counts are the same (one call's lines and its final usage
        share them), which then has its final ``output_tokens``."""
        if last is None or last.output_tokens is None:
            return
        key = last.inputs()
        same = [c for c in s.chats.values() if c.owner is None and c.turn_n == turn.n and not c.final
                and c.usage.inputs() == key]
        if len(same) == 1:
            usage = same[0].usage
            usage.output_tokens = max(usage.output_tokens or 0, last.output_tokens)
            if last.reasoning_output is not None:
                usage.reasoning_output = max(usage.reasoning_output or 0, last.reasoning_output)

    @staticmethod
    def _settle_stop(s: Session, turn: Turn, stop_reason: str | None) -> None:
        """The turn's last model call (its latest still open at the result) stopped for the
        result's ``stop_reason``, the last message's, when its own lines did not say why
        (Claude Code prints ``stop_reason: null`` on each assistant line; milk none)."""
        if not stop_reason:
            return
        calls = [c for c in s.chats.values() if c.owner is None and c.turn_n == turn.n]
        if calls:
            last = max(calls, key=lambda c: c.end_ns)
            if last.stop_reason is None and last.error_type is None:
                last.stop_reason = stop_reason

    @staticmethod
    def _settle_end(s: Session, turn: Turn, end: int) -> None:
        """The turn's last model call (the one open at the result), unless it asked for
        tools or its latest line carried a time of its own, ends with the turn at ``end`` (epoch
        ns): the result follows its final message, and Claude Code dates few lines (the call's
        own lines took the last time shown, a bound from below)."""
        last = s.chats.get(s.scope_chat.get(None))  # type: ignore[arg-type]
        if last is not None and last.turn_n == turn.n and not (
                last.dated or last.stop_reason == "tool_use" or last.error_type) and last.end_ns < end:
            last.end_ns = end

    def _on_streaming(self, s: Session, ev: ModelStreaming, now: int) -> None:
        turn = s.turn
        if turn is not None and turn.streamed_ns is None:
            turn.streamed_ns = now

    def _cut_streamed_call(self, s: Session, turn: Turn, end: int) -> None:
        """The model call whose output ``turn`` showed streaming and no line completed (an
        interrupt cut it, at ``end``): a call of its own, from when it was asked for, with an
        ``interrupted`` event; it has no response id (none was given)."""
        at, turn.streamed_ns = turn.streamed_ns, None
        if at is None:
            return
        key = f"{STREAMED}{turn.n}"
        chat = Chat(key, self._span_id(s, "chat", key), turn.span_id, None,
                    min(at, max(turn.start_ns, turn.ready_ns)), max(end, at), s.now_model or s.model, turn.n,
                    provider=s.now_provider, cut_ns=max(end, at))
        s.chats[key] = chat

    def _emit_chat(self, s: Session, chat: Chat) -> None:
        s.chats.pop(chat.message_id, None)
        self._release(s, "chat", chat.message_id)
        if s.scope_chat.get(chat.owner) == chat.message_id:
            del s.scope_chat[chat.owner]
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "chat"
        if chat.cut_ns is None and chat.message_id:  # (none: a call the stream only summed up)
            attrs["gen_ai.response.id"] = chat.message_id
        # an API-error message had no response (its stop_reason is the CLI's filler)
        answered = chat.error_type is None or chat.streamed
        provider = chat.provider or s.provider_name()
        if provider:
            attrs["gen_ai.provider.name"] = provider
        if chat.model:
            attrs["gen_ai.request.model"] = chat.model
            if answered:
                attrs["gen_ai.response.model"] = chat.model
        if chat.stop_reason and answered:
            attrs["gen_ai.response.finish_reasons"] = [chat.stop_reason]
        usage_attrs(attrs, chat.usage)
        if chat.mark == s.model_results:  # no modelUsage since its last line: not yet covered
            if s.tail_mark != s.model_results:
                s.tail, s.tail_mark = Usage(), s.model_results
            s.tail.add(chat.usage)
        if self.ctx.capture_content and (chat.content or chat.tool_calls):
            attrs["gen_ai.output.messages"] = _output_messages(chat)
        if chat.owner is not None:
            agent = s.agents.get(chat.owner)
            if agent is not None:
                agent.usage.add(chat.usage)
        end = max(chat.end_ns, chat.child_end_ns, chat.start_ns)  # its tools lie inside it
        self._ready(s, chat.owner, chat.turn_n, end)
        again = s.counted_before(chat.message_id)  # (a call cut across: the span before counted it)
        if chat.owner is None:
            self._covers(s, chat.turn_n, end, chat.usage, again)
        elif again is not None:
            s.seen_again.add(again)
        rec = SpanRecord(
            name=span_name("chat", chat.model, "model"),
            trace_id=s.trace_id,
            span_id=chat.span_id,
            parent_span_id=chat.parent_span_id,
            start_ns=chat.start_ns,
            end_ns=end,
            attributes=attrs,
            kind=CLIENT,
        )
        if chat.error_type is not None:
            rec.error, rec.error_type = chat.error_text or chat.error_type, chat.error_type
        if chat.cut_ns is not None:
            rec.events.append(SpanEvent("interrupted", chat.cut_ns))
        turn = s.turn
        if chat.owner is not None or turn is None or turn.n != chat.turn_n:
            self.ctx.emit(rec)
            return
        self._let_first_call_go(turn)  # a second call ended before the result: 3+ calls
        # (held for its start only where the turn's opening line took another line's time: the
        # stream clock's; live, a line's time is when it came)
        moves = turn.first_call is None and rec.start_ns <= turn.start_ns \
            and self.ctx.clock.uses_stream and not turn.asked_shown
        if moves:
            turn.first_call, turn.first_moves = rec, True
        elif turn.first_call is None and turn.calls == 1 and not chat.final and chat.usage.anthropic \
                and chat.usage.input_tokens is not None:  # (a split needs its input counts)
            turn.first_call, turn.first_moves = rec, False
            if self.ctx.call_later is not None:  # a turn whose result waits for background work
                self.ctx.call_later(FIRST_CALL_HOLD_S, lambda: self._held_too_long(turn, rec))
        else:
            self.ctx.emit(rec)

    def _held_too_long(self, turn: Turn, rec: SpanRecord) -> None:
        """:data:`FIRST_CALL_HOLD_S` after ``rec`` was held for its output, its turn has no
        result yet: it goes out as its lines said."""
        if turn.first_call is rec:
            self._let_first_call_go(turn)

    @staticmethod
    def _calls_usage(s: Session, turn: Turn, rec: SpanRecord) -> None:
        """A turn without a result (cut off) carries what its model calls reported, which its
        session counts (:func:`~.results.count_turn`; one with ``modelUsage`` counts them
        there already)."""
        if turn.calls_usage.has_tokens():
            usage_attrs(rec.attributes, turn.calls_usage)
        count_turn(s, turn, None)

    @staticmethod
    def _own_calls(s: Session, turn: Turn) -> None:
        """The usage of ``turn``'s top-level model calls still open adds to its
        :attr:`~Turn.calls_usage` (they end now, with its result, which came after the next
        turn began: as :meth:`_covers` adds that of an open or waiting turn's calls)."""
        for chat in s.chats.values():
            if chat.owner is None and chat.turn_n == turn.n:
                turn.calls_usage.add(chat.usage)
                turn.calls += 1

    def _let_first_call_go(self, turn: Turn) -> None:
        """Emit ``turn``'s first model call held for its output alone (the turn has more than
        two calls: its output stays as its lines said)."""
        if turn.first_call is not None and not turn.first_moves:
            self.ctx.emit(turn.first_call)
            turn.first_call = None

    def _release_first_call(self, turn: Turn, start: int) -> None:
        """Emit ``turn``'s held first model call (:attr:`Turn.first_call`), starting at the
        turn's final ``start`` (epoch ns; no later than the call's end)."""
        rec = turn.first_call
        if rec is not None:
            turn.first_call = None
            if turn.first_moves:
                rec.start_ns = min(start, rec.end_ns)
            self.ctx.emit(rec)

    def _interrupt_tool(self, s: Session, tool: Tool, end: int) -> None:
        """End ``tool`` at ``end`` (epoch ns) with an ``interrupted`` event, no error: a result
        said its turn was interrupted; the sub-agent it ran, if any, is cut with it."""
        self._emit_tool(s, tool, end, None, None, None, interrupted=True)
        if tool.id in s.agents:
            self._emit_agent(s, s.agents[tool.id], None, interrupted_at=end)  # type: ignore[attr-defined]

    def _emit_tool(self, s: Session, tool: Tool, end: int, error: str | None,
                   error_type: str | None, result: str | None, *, interrupted: bool = False) -> None:
        self._release(s, "tool", tool.id)
        end = max(end, tool.start_ns)
        start = tool.start_ns
        agent = s.agents.get(tool.id) if not tool.dated else None
        if agent is not None and agent.prompt_ns is not None:  # it started the sub-agent at once
            start = min(max(start, agent.prompt_ns), end)
            if tool.id in s.tool_spans:  # the sub-agent, ended later, stays inside it
                s.tool_spans[tool.id] = (tool.span_id, start)
        chat = s.chats.get(tool.message_id) if tool.message_id is not None else None
        if chat is not None:
            chat.child_end_ns = max(chat.child_end_ns, end)
        if tool.owner is None:
            self._covers(s, tool.turn_n, end)
        attrs = self._common(s)
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.call.id"] = tool.id
        if tool.name:
            attrs["gen_ai.tool.name"] = tool.name
        if tool.task:
            attrs.update(tool.task)
        if self.ctx.capture_content:
            if tool.arguments:
                attrs["gen_ai.tool.call.arguments"] = tool.arguments
            if result:
                attrs["gen_ai.tool.call.result"] = result
        self.ctx.emit(
            SpanRecord(
                name=span_name("execute_tool", tool.name, "tool"),
                trace_id=s.trace_id,
                span_id=tool.span_id,
                parent_span_id=tool.parent_span_id,
                start_ns=start,
                end_ns=end,
                attributes=attrs,
                error=error,
                error_type=error_type,
                events=[SpanEvent("interrupted", end)] if interrupted else [],
            )
        )
