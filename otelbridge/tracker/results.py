"""What a ``result`` line puts on the span of its turn and of its session: the ``result.*``
attributes, the ERROR status of an ``is_error`` result, and the turn's usage (docs/span-model.md,
"Turns" and "Status")."""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import COUNTS, SpanEvent, SpanRecord, TurnResult, Usage
from .base import counted_parts, interrupted_event, put_attributes, usage_of
from .state import Session, Turn


def result_attributes(attrs: dict[str, Any], ev: TurnResult) -> None:
    """``result.*`` of ``ev`` into ``attrs`` (those it gives)."""
    put_attributes(attrs, (
        ("result.subtype", ev.subtype or None),
        ("result.stop_reason", ev.stop_reason or None),
        ("result.terminal_reason", ev.terminal_reason or None),
        ("result.origin.kind", ev.origin or None),
        ("result.is_error", ev.is_error),
        ("result.run_id", ev.run_id),
        ("result.background_active", ev.background_active),
        ("result.num_turns", ev.num_turns),
        ("result.duration_ms", ev.duration_ms),
        ("result.duration_api_ms", ev.duration_api_ms),
        ("result.total_cost_usd", ev.total_cost_usd),
        ("result.subscription_cost_usd", ev.subscription_cost_usd),
    ))


#: The ``result.*`` keys whose values are their turn's alone: a session's are their sums.
SUMMED = ("result.num_turns", "result.duration_ms")


def add_result(s: Session, ev: TurnResult) -> None:
    """Count ``ev`` into ``s``'s :attr:`~otelbridge.tracker.state.Session.result_sums` and
    :attr:`~otelbridge.tracker.state.Session.api_ms`."""
    s.result_sums = tuple(  # type: ignore[assignment]
        was if add is None else (was or 0) + add
        for was, add in zip(s.result_sums, (ev.num_turns, ev.duration_ms)))
    if ev.duration_api_ms is not None:
        s.api_ms = max(s.api_ms or 0, ev.duration_api_ms)


def session_result_attributes(attrs: dict[str, Any], s: Session) -> None:
    """A session's ``result.*``: its last result's, with :data:`SUMMED` summed over its
    results (a session of several turns: what the CLI's cumulative ``total_cost_usd`` is to
    each turn's cost) and the highest ``duration_api_ms`` (cumulative too: Claude Code counts
    the API time of its process so far)."""
    if s.last is None:
        return
    result_attributes(attrs, s.last)
    for key, total in zip(SUMMED, s.result_sums):
        if total is not None:
            attrs[key] = total
    if s.api_ms is not None:
        attrs["result.duration_api_ms"] = s.api_base + s.api_ms
    # what its own turns cost (the total runs on across the spans a session goes on in: a sum
    # over session spans counts this); unknown when the total before it is
    cost, before = s.last.total_cost_usd, s.own_from if s.own_from is not None else s.before_cost[0]
    if cost is not None and (s.continues is None or before is not None):
        attrs["session.cost_usd"] = round(cost - (before or 0.0), 12)


def on_session_scale(s: Session, ev: TurnResult, previous: float | None, model_total: Usage | None) -> TurnResult:
    """``ev`` with its ``total_cost_usd`` on the session's scale (USD): what the session's
    earlier processes counted (:attr:`Session.cost_base`) and this one's. A new process's first
    result (:func:`counted_again`) moves what this one counted (``previous``, the last total;
    ``s.model_total``; ``s.api_ms``) to the bases; a total below ``previous`` (an interrupted
    turn's 0) is ``previous``: a cumulative count never falls."""
    if counted_again(s, ev, previous, model_total):
        s.cost_base = previous if previous is not None else s.cost_base
        if s.model_total is not None:
            s.model_base = s.model_base or Usage()
            s.model_base.add(s.model_total)
        else:  # (its span's first result: the span before counted another process's modelUsage,
            # and this one's calls before it, if any)
            after = counted_parts(s.before_cost[2])[1] if s.before_cost[2] is not None else ()
            s.tokens_from = after if any(after) else None
        s.model_total, s.api_base, s.api_ms = None, s.api_base + (s.api_ms or 0), None
    cost = ev.total_cost_usd
    if cost is None or not (s.cost_base or (previous is not None and cost < previous)):
        return ev
    total = round(s.cost_base + cost, 12)  # (a sum of floats: 0.0258 + 0.0124 has a tail)
    return msgspec.structs.replace(ev, total_cost_usd=max(total, previous) if previous is not None else total)


def model_counts(s: Session) -> Usage:
    """``s``'s ``modelUsage`` counts over its processes: the earlier ones' and the last one's."""
    total = Usage()
    for part in (s.model_base, s.model_total):
        if part is not None:
            total.add(part)
    return total


def counted_again(s: Session, ev: TurnResult, previous: float | None, model_total: Usage | None) -> bool:
    """Whether ``ev`` is the first result of a new process of ``s`` (``claude -p --resume``,
    whose counts begin again at 0): its ``result_index`` (a process counts its results from
    0) not above the last result's, or a cumulative count below the last one's (``previous``,
    USD on the session's scale; ``model_total``, ``ev``'s ``modelUsage`` summed) — a
    ``total_cost_usd`` above 0 (an interrupted turn's result says 0), or a ``modelUsage``
    count (an interrupted turn's is empty). A process whose counts all rose, from a CLI that
    gives no ``result_index`` (2.1.224 and older), is not told."""
    cost = ev.total_cost_usd
    # (to 12 places, as the totals are summed: 0.6222965 - 0.4481215 is 0.17417500000000002)
    if cost is not None and previous is not None and 0 < cost < round(previous - s.cost_base, 12):
        return True
    before = s.latest_result()
    if before is not None and ev.result_index is not None and before.result_index is not None \
            and ev.result_index <= before.result_index:
        return True
    last = s.model_total
    if last is None and s.before_cost[2] is not None:  # (the span it goes on from)
        last = usage_of(counted_parts(s.before_cost[2])[0])
    return model_total is not None and last is not None and any(
        now < was for name in COUNTS
        if (now := getattr(model_total, name)) is not None and (was := getattr(last, name)) is not None)


def duplicate_result(s: Session, ev: TurnResult) -> bool:
    """Whether ``ev`` repeats ``s``'s last result (or the ended span's it goes on from; no
    turn waits for one): its ``uuid``, or
    without one its subtype, error flag, turn count, duration and index."""
    last = s.latest_result()
    if s.turn is not None or s.waiting or last is None:
        return False
    if ev.uuid is not None and ev.uuid == last.uuid:
        return True
    return (ev.uuid is None or last.uuid is None) and (
        ev.subtype, ev.is_error, ev.num_turns, ev.duration_ms, ev.result_index
    ) == (last.subtype, last.is_error, last.num_turns, last.duration_ms, last.result_index)


def _says_success(word: str) -> bool:
    """``ok``, ``okay``, ``completed``, ``done``, in any case and blanks around, or a word that
    begins with ``succe`` (``success_with_warnings``, ``succeeded``)."""
    word = word.strip().lower()
    return word in ("ok", "okay", "completed", "done") or word.startswith("succe")


def result_error(rec: SpanRecord, ev: TurnResult, interrupted_at: int | None = None,
                 by_user: int | None = None) -> None:
    """``rec`` ERROR when ``ev`` says ``is_error``, whatever its ``subtype``: described by its
    error, else its text, else its ``subtype`` or ``terminal_reason`` (never one that says
    success, :func:`_says_success`: it would show a failed span as succeeded).
    Otherwise, a result that says the turn was interrupted (milk's ``interrupted`` subtype or
    stop reason: not an error) puts an ``interrupted`` event on ``rec`` at ``interrupted_at``
    (epoch ns; ``None``: none), as a stopped workflow has. ``by_user``: when the user stopped
    the turn (epoch ns): an ``interrupted`` event then, whatever the result says, and an error
    result is described as the user's stop."""
    if by_user is not None:
        rec.events.append(interrupted_event(by_user, "interrupted by the user"))
    if ev.is_error:
        kind = ev.subtype if ev.subtype and not _says_success(ev.subtype) else ev.terminal_reason
        # (stopped by the user, Claude Code's error text is a diagnostic that says none of it)
        rec.error = "interrupted by the user" if by_user is not None else (
            ev.error or ev.content or kind or "result is_error")
        rec.error_type = kind or "result_error"
    elif interrupted_at is not None and by_user is None and says_interrupted(ev):
        rec.events.append(SpanEvent("interrupted", interrupted_at))


def says_interrupted(ev: TurnResult) -> bool:
    """``ev`` says its turn was interrupted and no error (milk's ``interrupted`` subtype or
    stop reason)."""
    return not ev.is_error and "interrupted" in (ev.subtype, ev.stop_reason)


def uncounted(ev: TurnResult, turn: Turn) -> bool:
    """``ev`` counted none of what its turn's model calls reported (Claude Code's result of an
    interrupted turn: 0 for every count, an empty ``modelUsage``): its ``total_cost_usd``, 0
    too, is the same count left undone, not what the calls cost."""
    return ev.usage is not None and not ev.usage.has_tokens() and not ev.model_usage \
        and turn.calls_usage.has_tokens()


def turn_usage(reported: Usage | None, turn: Turn, model_total: Usage | None = None,
               before: Usage | None = None) -> Usage | None:
    """A result's usage for its turn: as reported, but the turn's model calls' sum when the
    result reports no token at all while they did (Claude Code's result of an interrupted
    turn says 0 for every count); with no ``usage`` at all, its per-model usage summed
    (``model_total``, cumulative) less what the session's earlier results covered (``before``):
    milk's interrupted result gives ``model_usage`` alone."""
    if reported is None and model_total is not None and model_total.has_tokens():
        return _less(model_total, before) if before is not None else model_total
    if reported is not None and not reported.has_tokens() and turn.calls_usage.has_tokens():
        return turn.calls_usage
    return reported


def count_turn(s: Session, turn: Turn, usage: Usage | None) -> None:
    """Count ``turn`` into ``s``'s total without a ``modelUsage`` (:func:`results_total`): its
    result's ``usage`` (``None``: no result, or one that counted none of its own), which is the
    CLI's count of the turn's top-level model calls, with their final output (a call's lines
    give a snapshot taken at its start; Claude Code's, Caudra's, milk's result alike: per turn,
    sub-agents apart); else those calls' own usage, else none. A turn a span before cut (a log
    cut mid-turn, another file of a ``replay`` going on from there) counts its result less what
    that span counted of it (:meth:`~.state.Session.cut_of`: its calls there, the one cut across
    counted again here with its lines' snapshot); without one, its calls but those that span
    counted (:attr:`~.state.Turn.again`)."""
    s.turn_calls.add(turn.calls_usage)
    cut = s.cut_of(turn) if usage is not None else None
    counted = turn.calls_usage.less(turn.again.counts()) if usage is None else usage.less(cut or ())
    if usage is None and not counted.has_tokens():
        return
    if s.usage is None:
        s.usage = Usage()
    s.usage.add(counted)
    s.by_results |= usage is not None


def results_total(s: Session, own: bool = True) -> Usage | None:
    """``s``'s total without a ``modelUsage``: what its turns count (:func:`count_turn`) and its
    other model calls (its sub-agents', with their last from their tool's result, less what a
    span before counted of those cut across: :attr:`~.state.Session.seen_again`), with ``own``
    less what the span before counted of them (:attr:`~.state.Session.counted_from`); ``None``
    when none reported a token count."""
    if s.usage is None and not s.tail.has_tokens():
        return None
    total = s.tail.less(s.turn_calls.counts()).less(s.seen_again.counts())
    if s.usage is not None:
        total.add(s.usage)
    return total.less(s.counted_from) if own and s.counted_from is not None else total


def counted_so_far(s: Session) -> tuple[int, ...] | None:
    """What ``s``'s span has counted without a ``modelUsage`` (:func:`results_total`, from 0),
    with its model calls still open (a stop ends them in it): the counts
    (:data:`~otelbridge.events.COUNTS` order) a span that goes on from here counts its own
    from; ``None``: none."""
    total = results_total(s, own=False) or Usage()
    for chat in s.chats.values():
        total.add(chat.usage)
    return total.counts() if total.has_tokens() else None


def _less(total: Usage, before: Usage) -> Usage:
    """``total`` less ``before``, count by count (a count ``total`` lacks stays ``None``)."""
    out = Usage(anthropic=total.anthropic)
    for name in COUNTS:
        mine = getattr(total, name)
        if mine is not None:
            setattr(out, name, max(0, mine - (getattr(before, name) or 0)))
    return out
