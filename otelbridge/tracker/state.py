"""The session part's state: what is held per session until its spans end (all times epoch ns).

Memory: strings are held as the decoder gave them (each bounded by
:data:`otelbridge.events.MAX_HELD_CHARS`, a longer one redacted whole before its cut); a session and the items open in it are charged to the
state budget (:mod:`.charges`), remembered ids are bounded per session.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import SpanEvent, SpanRecord, TaskUsage, TurnResult, TurnStarted, Usage
from .base import NOTHING_COUNTED, Counted, Recent, Refs, SessionRef, SpanRef, counted_parts, usage_of

#: Closed sub-agent and task ids remembered per session (late lines for them are ignored).
MAX_CLOSED_REMEMBERED = 10_000
#: ``gen_ai.provider.name`` of Claude Code's model calls (GenAI conventions' well-known value)
CLAUDE_CODE_PROVIDER = "anthropic"


class Chat(msgspec.Struct):
    """An open model call (``chat {model}``); ``turn_n`` is its turn's number (top level)."""

    message_id: str
    span_id: int
    parent_span_id: int
    owner: str | None
    start_ns: int
    end_ns: int
    model: str | None
    turn_n: int | None = None
    #: its provider when not the session's (after a milk ``agent_switch``)
    provider: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    final: bool = False
    stop_reason: str | None = None
    content: str | None = None
    #: ``error`` of an API-error message (``<synthetic>`` / ``is_api_error_message``)
    error_type: str | None = None
    error_text: str | None = None
    #: the session's ``model_results`` at the call's last line (a later ``modelUsage`` covers it)
    mark: int = 0
    #: the latest end of its tool calls so far (it ends no earlier)
    child_end_ns: int = 0
    #: its ``message_start`` was seen: the stream shows its end (``message_delta``) too
    streamed: bool = False
    #: the tool calls it made, (id, name): kept with content capture only
    tool_calls: list[tuple[str, str | None]] = msgspec.field(default_factory=list)
    #: a call whose output streamed and no line completed (no response id): cut then, epoch ns
    cut_ns: int | None = None
    #: its latest line's time is when it came (its own, or when it passed), not a lower bound
    dated: bool = False


class Tool(msgspec.Struct):
    """An open tool call (``execute_tool {name}``); ``task`` holds the ``task.*`` attributes of
    a foreground task that *is* this call (``owned_by_subagent``)."""

    id: str
    span_id: int
    parent_span_id: int
    owner: str | None
    start_ns: int
    name: str | None
    arguments: str | None
    turn_n: int | None = None
    task: dict[str, Any] | None = None
    #: the ``message.id`` of the model call that asked for it
    message_id: str | None = None
    #: the status text of the failed foreground task that is this call (its exit code)
    task_failure: str | None = None
    #: its line's time was its own (see ``Context.own_time``), not where the stream clock stood
    dated: bool = True


class Agent(msgspec.Struct):
    """A sub-agent (``invoke_agent {subagent_type}``) keyed by its tool use id."""

    key: str
    span_id: int
    start_ns: int
    last_ns: int
    subagent_type: str | None = None
    description: str | None = None
    task_id: str | None = None
    #: its id as its tool's result names it (Claude Code before task lines: no ``task_id``)
    agent_id: str | None = None
    status: str | None = None
    summary: str | None = None
    task_usage: TaskUsage | None = None
    tool_done_ns: int | None = None
    notified_ns: int | None = None
    end_time_ns: int | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    #: as :attr:`Turn.ready_ns`, for its own model calls
    ready_ns: int = 0
    #: the line it was first seen on was dated by its own time (else ``start_ns`` is where
    #: the stream clock stood, which may be long before it began)
    start_stamped: bool = True
    #: one of its own lines came; ``prompt_ns``: the first was its prompt (a ``user`` line)
    #: with a timestamp, at that time (epoch ns)
    had_line: bool = False
    prompt_ns: int | None = None
    #: the provider its model calls went to (an ``agent_switch`` after it ends is not its)
    provider: str | None = None
    #: the tool calls its lines showed (Claude Code forwards only some of them)
    tools: int = 0

    def own_line(self, prompt_ns: int | None = None) -> None:
        """One of its own lines came (``parent_tool_use_id`` is its key); ``prompt_ns``: it is a
        user line with a timestamp, at that time (epoch ns). A first line that is its prompt
        shows when it began, if it was first seen where the stream clock stood still (a model
        call's first line comes only after the model's latency: it shows nothing of that)."""
        if not self.had_line:
            self.had_line, self.prompt_ns = True, prompt_ns
            if prompt_ns is not None and not self.start_stamped:
                self.start_ns = max(self.start_ns, prompt_ns)


class Task(msgspec.Struct):
    """A background task (``task {task_type}``)."""

    task_id: str
    span_id: int
    start_ns: int
    first_seen_ns: int
    started: bool = False
    task_type: str | None = None
    tool_use_id: str | None = None
    description: str | None = None
    usage: TaskUsage | None = None
    status: str | None = None
    end_time_ns: int | None = None
    owned_by_subagent: bool | None = None
    is_backgrounded: bool | None = None
    #: the ``execute_tool`` span it runs under, when its tool call is in the stream
    parent_span_id: int | None = None


class Turn(msgspec.Struct):
    """A turn (``turn {n}``). ``closed_ns``: when the next ``init`` closed it before its
    result came (it then waits for its result until the session ends)."""

    n: int
    span_id: int
    start_ns: int
    last_ns: int
    started: TurnStarted | None = None
    closed_ns: int | None = None
    #: the model of the ``init`` that opened it (turns after the first)
    model: str | None = None
    #: the latest end of its model and tool calls so far (it ends no earlier)
    child_end_ns: int = 0
    #: the usage its top-level model calls reported (what it used when its result says 0)
    calls_usage: Usage = msgspec.field(default_factory=Usage)
    #: its top-level model calls emitted so far
    calls: int = 0
    #: what a span before counted of those (cut across, :meth:`Session.counted_before`)
    again: Usage = msgspec.field(default_factory=Usage)
    #: opened by its run's first line (an ``init``, Caudra's ``turn_start``): none of its lines
    #: came before it, in a span the session went on from
    from_start: bool = False
    #: it opened after the stream showed a time: its start bounds its true start from below
    #: (before, its lines took the first timestamp, which may come long after)
    after_clock: bool = False
    #: the line that opened it had a timestamp of its own (else it took the last one shown)
    dated: bool = False
    #: when the user stopped it (Claude Code's ``[Request interrupted by user]``), epoch ns
    interrupted_ns: int | None = None
    #: a model call's output streamed since its last top-level call's line (milk), from then
    streamed_ns: int | None = None
    #: when its next top-level model call was asked for, at the latest (its prompt, the last
    #: tool result or model call before it; 0: its start)
    ready_ns: int = 0
    #: a notice of the CLI stopped it (``prevent_continuation``: a hook blocked its prompt):
    #: the notice's text with ``--capture-content``, else ``""``; ``None``: not stopped
    stopped: str | None = None
    #: the stream shows when its first call was asked for: the line that opened it had a
    #: timestamp of its own (a CLI asks the model after it), or a prompt line came
    asked_shown: bool = False
    #: its first top-level model call, ended, asked for at its start, when the stream does not
    #: show when (Claude Code's ``init`` has no timestamp; it took a later line's): held until
    #: the start is final (its result may move it earlier), to start with it; only on the
    #: stream clock (live, ``init`` is dated when it came; a recording without timestamps
    #: dates every line with one instant, the call's end too)
    first_call: SpanRecord | None = None
    #: :attr:`first_call` is held for its start (as above); else for its output alone: a call
    #: whose lines gave a snapshot of it, while the turn may prove to have two calls, whose
    #: result then tells the first's (released when a later call asks for tools or ends before
    #: the result, or after ``FIRST_CALL_HOLD_S``)
    first_moves: bool = False


class Session(msgspec.Struct):
    """One session: its span ids, what ``init`` said, its turns and everything open in it."""

    sid: str | None
    trace_id: int
    span_id: int
    start_ns: int
    last_ns: int
    agent_name: str | None = None
    provider: str | None = None
    model: str | None = None
    #: the model its first call asked for, while no ``init`` had named one (the session span's
    #: model then: a span a ``follow`` stop ended before Claude Code 2.1.206 printed its ``init``)
    call_model: str | None = None
    version: str | None = None
    cwd: str | None = None
    turn: Turn | None = None
    #: turns closed by the next ``init`` with no result yet, oldest first
    waiting: list[Turn] = msgspec.field(default_factory=list)
    turn_count: int = 0
    #: the session's span a ``follow`` stop or another session's ``init`` ended, when this one
    #: goes on from it; the turns begun before, and its last result (:mod:`.quiet`)
    continues: SpanRef | None = None
    turns_before: int = 0
    before: TurnResult | None = None
    #: what that span's last result counted (:meth:`ref`)
    before_cost: Counted = NOTHING_COUNTED
    #: its total when ``follow`` ended reading again what a run before read: the turns before
    #: were the ended span's (``None``: none read again)
    own_from: float | None = None
    #: the ``modelUsage`` counts (:meth:`~otelbridge.events.Usage.counts`) its process had
    #: reached in the span it goes on from (or by the end of what ``follow`` read again): its
    #: span's tokens are counted from there, its own turns'; ``None``: from 0 (none, or its
    #: first result was a new process's)
    tokens_from: tuple[int, ...] | None = None
    #: its runtime outlives its turns (Caudra's init lists one): it never ends between runs
    outlives_turns: bool = False
    #: where its first line begins in the input, bytes (:attr:`Context.line_at`)
    first_line: int = 0
    child_end_ns: int = 0
    result_ns: int | None = None
    results: int = 0
    #: what its turns count toward its total without a ``modelUsage``
    #: (:func:`~.results.count_turn`): each its result's usage, else its top-level model
    #: calls'; ``by_results``: some result's did; ``turn_calls``: their top-level calls' usage
    #: (part of :attr:`tail`, whose rest is its sub-agents' calls)
    usage: Usage | None = None
    by_results: bool = False
    turn_calls: Usage = msgspec.field(default_factory=Usage)
    #: what it had counted without a ``modelUsage`` when ``follow`` ended reading again what a
    #: run before read (:func:`~.results.results_total`): the ended span's, its own come after
    counted_from: tuple[int, ...] | None = None
    #: what the span it goes on from (another ``replay`` file) counted of each turn cut at its
    #: end, in order (their top-level calls'): their results come here and count those calls
    #: too, so they count less these (:meth:`cut_of`, :func:`~.results.count_turn`)
    cut_before: tuple[tuple[int, ...], ...] = ()
    #: the model calls open at that span's end (message id, what it counted of each): their
    #: lines here are calls it counted (:meth:`counted_before`); ``seen_again``: what it
    #: counted of those of sub-agents, which :func:`~.results.results_total` takes off
    cut_calls: tuple[tuple[str, tuple[int, ...]], ...] = ()
    seen_again: Usage = msgspec.field(default_factory=Usage)
    #: the latest non-empty ``modelUsage`` summed over models (the CLI's cumulative total),
    #: how many results carried one, and the usage of calls whose last line came after it
    model_total: Usage | None = None
    model_results: int = 0
    tail: Usage = msgspec.field(default_factory=Usage)
    tail_mark: int = 0
    last: TurnResult | None = None
    #: when the user stopped the turn of :attr:`last` (epoch ns), else ``None``
    last_by_user: int | None = None
    #: the last turn's error when a notice stopped it before any model call (its result says
    #: success): the session's status, as its last result's would be
    blocked: str | None = None
    #: the model and provider of the calls from a milk ``agent_switch`` on (the session keeps
    #: its first ones)
    now_model: str | None = None
    now_provider: str | None = None
    #: ``num_turns``, ``duration_ms`` summed over the results (each result's are its own
    #: turn's; ``None``: none gave it)
    result_sums: tuple[int | None, int | None] = (None, None)
    #: the highest ``duration_api_ms`` of the results (the CLI's process total so far)
    api_ms: int | None = None
    #: what the session's earlier processes counted, to which the counts of the one writing
    #: now add (Claude Code counts ``total_cost_usd``, ``modelUsage`` and ``duration_api_ms``
    #: per process: a session resumed in a new one, ``--resume``, counts from 0 again)
    cost_base: float = 0.0
    model_base: Usage | None = None
    api_base: int = 0
    #: the last result came after the next turn began: its cumulative cost may hold that
    #: turn's too, so neither turn's own cost is known
    cost_stale: bool = False
    #: a ``prevent_continuation`` notice came while no turn was open: it stopped the next (as
    #: :attr:`Turn.stopped`)
    stop_pending: str | None = None
    last_seq: int | None = None
    chats: dict[str, Chat] = msgspec.field(default_factory=dict)
    scope_chat: dict[str | None, str] = msgspec.field(default_factory=dict)
    tools: dict[str, Tool] = msgspec.field(default_factory=dict)
    #: every tool call seen: id → (span id, start ns), bounded
    tool_spans: Refs = msgspec.field(default_factory=Refs)
    agents: dict[str, Agent] = msgspec.field(default_factory=dict)
    closed_agents: Recent = msgspec.field(default_factory=lambda: Recent(MAX_CLOSED_REMEMBERED))
    agent_tasks: dict[str, str] = msgspec.field(default_factory=dict)
    tasks: dict[str, Task] = msgspec.field(default_factory=dict)
    #: foreground tasks that are their tool call: task id → tool use id
    tool_tasks: dict[str, str] = msgspec.field(default_factory=dict)
    closed_tasks: Recent = msgspec.field(default_factory=lambda: Recent(MAX_CLOSED_REMEMBERED))
    #: workflow task ids (→ None), tool id → (subagent_type, description) until the sub-agent shows
    workflows: Refs = msgspec.field(default_factory=Refs)
    hints: Refs = msgspec.field(default_factory=Refs)
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    #: estimated bytes of the strings the session holds itself (``init`` values, the last
    #: result's text): set by :func:`~otelbridge.tracker.charges.session_text`
    text_bytes: int = 0

    def provider_name(self) -> str | None:
        """``gen_ai.provider.name`` of its spans: its ``init``'s, else, with no ``init`` seen
        yet (a session then taken for Claude Code's, ``claude-code``), Claude Code's."""
        return self.provider or (CLAUDE_CODE_PROVIDER if self.agent_name is None else None)

    def latest_result(self) -> TurnResult | None:
        """Its last result, else the last one of the span it goes on from."""
        return self.last if self.last is not None else self.before

    def began_before(self, turn: Turn) -> bool:
        """Whether ``turn`` may have begun in the span this one goes on from: its first turn,
        opened by no run's first line (a log cut mid-turn), whose result counts that span's
        calls of it too (:attr:`cut_before`)."""
        return self.continues is not None and not turn.from_start and turn.n == self.turns_before + 1

    def cut_of(self, turn: Turn) -> tuple[int, ...] | None:
        """What the span this one goes on from counted of ``turn``: one of its first turns,
        opened by no run's first line, takes the turn cut there in the same place (results
        come in their turns' order); ``None``: none."""
        i = turn.n - self.turns_before - 1
        return None if turn.from_start or not 0 <= i < len(self.cut_before) else self.cut_before[i]

    def busy(self) -> bool:
        """Whether a turn (also one closed, waiting for its result), a sub-agent, a tool call
        or a task is open in it."""
        return bool(self.turn or self.waiting or self.agents or self.tools or self.tasks)

    def ref(self) -> SessionRef:
        """Its span as ``follow``'s offset file keeps it: its turns begun, its last total cost
        and cost base."""
        # (a session no result of which came reported nothing yet: what follows counts it all)
        cost = (self.last.total_cost_usd if self.last is not None
                else self.before_cost[0] if self.continues is not None else 0.0)
        said = (self.agent_name, self.provider, self.model, self.version)
        return (self.sid or "", self.trace_id, self.span_id, self.turn_count, cost, self.cost_base,
                self.process_tokens(), said if any(said) else None, self.cut_counts())

    def counted_before(self, message_id: str | None) -> Usage | None:
        """What the span this one goes on from counted of the model call ``message_id``, open
        at its end (cut across, :attr:`cut_calls`); ``None``: none."""
        for mid, counts in self.cut_calls:
            if message_id and mid == message_id:
                return usage_of(counts)
        return None

    def cut_counts(self) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[str, tuple[int, ...]], ...]] | None:
        """What its span counts, without a ``modelUsage``, of each of its turns with no result
        yet (their top-level model calls', those still open too, less what a span before
        counted of them, with what it counted of one begun there), and of each model call open
        (by message id): a span going on from it (a later ``replay`` file) takes these from
        those turns' results, or those calls seen again (:attr:`cut_before`); ``None``: none."""
        cut = [turn for turn in (*self.waiting, self.turn) if turn is not None]
        if self.model_total is not None or not cut:
            return None
        counted = []
        for turn in cut:
            total = turn.calls_usage.less(turn.again.counts())
            for chat in self.chats.values():
                if chat.owner is None and chat.turn_n == turn.n:
                    total.add(chat.usage.less((self.counted_before(chat.message_id) or Usage()).counts()))
            total.add(usage_of(self.cut_of(turn) or ()))
            counted.append(total.counts())
        calls = tuple((chat.message_id, chat.usage.counts()) for chat in self.chats.values() if chat.message_id)
        return tuple(counted), calls

    def process_tokens(self, earlier: bool = False) -> tuple[int, ...] | None:
        """What its span has counted of its process's tokens (:data:`~.base.Counted`): the last
        ``modelUsage`` (``earlier``: with the earlier processes' its span counted), then the
        model calls after it (before its first result: the span before's, if any, and then its
        own); ``None``: no ``modelUsage`` (its results give ``usage`` alone). A span that goes
        on from this one counts its own tokens from there (:attr:`tokens_from`)."""
        if self.model_total is None and self.last is not None:
            return None
        usage, after = Usage(), Usage()
        if self.model_total is not None:
            usage.add(self.model_total)
            if earlier and self.model_base is not None:
                usage.add(self.model_base)
        elif self.before_cost[2] is not None:  # (no result yet: what the span before counted)
            was, was_after, _ = counted_parts(self.before_cost[2])
            usage, after = usage_of(was), usage_of(was_after)
        if self.model_total is None or self.tail_mark == self.model_results:
            after.add(self.tail)
        for chat in self.chats.values():  # (open calls: the span counts them when it ends)
            if chat.mark == self.model_results:
                after.add(chat.usage)
        if self.model_total is None and not (usage.has_tokens() or after.has_tokens()):
            return None
        return usage.counts() + after.counts()
