"""The workflow tracker under any sequence of protocol events (a hypothesis state machine).

Events come from JSON lines through the real decoder, so wrong types reach the tracker exactly as
they would from a stream: ``tokens: "12"``, floats, negatives, ``1e30`` epochs, ``null``, deeply
nested JSON, duplicates, ``task_notification`` twice, ``task_progress`` before ``task_started`` or
for an unknown task, agents that vanish from a later snapshot, states going backwards, grace
windows closing at any point. Whatever happens: no exception escapes, every span started is ended
exactly once, and every span's times are int ns with ``0 ≤ start ≤ end < 2**63``.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from otelbridge import dialects
from otelbridge.clock import Clock
from otelbridge.ids import Ids
from otelbridge.stats import Stats
from otelbridge.tracker import Context, Tracker, interrupted_by
from otelbridge.tracker.workflows import WorkflowTracker

EPOCH_MS = 1_783_647_395_000

wild = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e30, -1.0, 0.5, "12", "", "1e30", " 7 ", [], {}, [1, 2], {"a": 1}]),
    st.text(max_size=8),
)
epoch = st.one_of(st.integers(min_value=EPOCH_MS - 10_000, max_value=EPOCH_MS + 10_000),
                  st.integers(min_value=EPOCH_MS - 10_000, max_value=EPOCH_MS + 10_000), wild)
small = st.one_of(st.integers(min_value=-2, max_value=100_000), wild)
state = st.one_of(st.sampled_from(["start", "done", "error", "cached", "running", ""]), wild)
# mostly the same few keys, so events meet the runs they belong to; sometimes wrong types
task_ids = st.sampled_from(["t1"] * 4 + ["t2"] * 2 + [7, None, "", ["t1"]])
sessions = st.sampled_from(["s1"] * 6 + ["s2", None, 5])


@st.composite
def agents(draw):
    out = []
    for _ in range(draw(st.integers(0, 6))):
        entry = {"type": "workflow_agent", "index": draw(st.one_of(st.integers(0, 6), wild))}
        for key, strat in (("state", state), ("startedAt", epoch), ("queuedAt", epoch),
                           ("endedAt", epoch), ("lastProgressAt", epoch), ("durationMs", small),
                           ("tokens", small), ("toolCalls", small), ("attempt", small),
                           ("phaseIndex", st.one_of(st.integers(0, 3), wild)),
                           ("label", wild), ("agentId", wild), ("model", wild), ("error", wild)):
            if draw(st.booleans()):
                entry[key] = draw(strat)
        out.append(entry)
    return out


def line(doc) -> bytes:
    return json.dumps(doc).encode()


class FakeTimers:
    """``call_later`` whose callbacks a rule fires at a moment of the machine's choosing."""

    def __init__(self) -> None:
        self.pending: list[list] = []

    def __call__(self, delay, fn):
        entry = [fn, False]
        self.pending.append(entry)

        class Handle:
            def cancel(self_inner):
                entry[1] = True
        return Handle()


class TrackerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.records = []
        self.stats = Stats()
        self.timers = FakeTimers()
        ctx = Context(emit=self.records.append, ids=Ids(False),
                      clock=Clock("stream", wall=lambda: EPOCH_MS * 1_000_000),
                      stats=self.stats, call_later=self.timers)
        self.part = WorkflowTracker(ctx)
        self.tracker = Tracker(ctx, [self.part])
        self.decoder = dialects.Decoder(dialects.load(), self.stats)
        self.started: set[tuple[int, int]] = set()
        self.finished = False

    def feed(self, raw: bytes) -> None:
        for ev in self.decoder.decode(raw):
            self.tracker.handle(ev)
        self.note_started()

    def note_started(self) -> None:
        """Every span the tracker holds open counts as started (it must end exactly once)."""
        for run in self.part.runs.values():
            self.started.add((run.trace_id, run.span_id))
            for ph in run.phases.values():
                self.started.add((run.trace_id, ph.span_id))
            for ag in run.agents.values():
                self.started.add((run.trace_id, ag.span_id))

    @rule(task=task_ids, sid=sessions, name=wild, ts=wild)
    def task_started(self, task, sid, name, ts):
        self.feed(line({"type": "system", "subtype": "task_started", "task_type": "local_workflow",
                        "task_id": task, "session_id": sid, "workflow_name": name, "timestamp": ts}))

    @rule(task=task_ids, sid=sessions, entries=agents(), usage=wild,
          phases=st.lists(st.one_of(st.integers(0, 3), wild), max_size=3))
    def task_progress(self, task, sid, entries, usage, phases):
        progress = [{"type": "workflow_phase", "index": p, "title": "P"} for p in phases] + entries
        self.feed(line({"type": "system", "subtype": "task_progress", "task_id": task,
                        "session_id": sid, "usage": usage, "workflow_progress": progress}))

    @rule(task=task_ids, sid=sessions, status=wild, end=epoch)
    def task_updated(self, task, sid, status, end):
        self.feed(line({"type": "system", "subtype": "task_updated", "task_id": task,
                        "session_id": sid, "patch": {"status": status, "end_time": end}}))

    @rule(task=task_ids, sid=sessions,
          status=st.one_of(st.sampled_from(["completed", "failed", "stopped"]), wild),
          duration=small, times=st.integers(1, 2))
    def task_notification(self, task, sid, status, duration, times):
        for _ in range(times):  # a second notification must be ignored (counted)
            self.feed(line({"type": "system", "subtype": "task_notification", "task_id": task,
                            "session_id": sid, "status": status,
                            "usage": {"duration_ms": duration, "total_tokens": duration}}))

    @rule(raw=st.sampled_from([
        b"[" * 50_000,
        b'{"type":"system","subtype":"task_progress","task_id":"t1","workflow_progress":'
        + b"[" * 20_000,
        b'{"type":"system","subtype":"task_progress","task_id":"t1","workflow_progress":'
        + b'[{"type":"workflow_agent","index":1,"x":' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}]}",
        b"\xef\xbb\xbf{\"type\":\"system\"}", b"\x00\xff task_progress", b"null", b"{}",
    ]))
    def hostile_line(self, raw):
        self.feed(raw)

    @precondition(lambda self: any(not c for _, c in self.timers.pending))
    @rule(pick=st.integers(0, 100))
    def grace_window_closes(self, pick):
        live = [e for e in self.timers.pending if not e[1]]
        entry = live[pick % len(live)]
        entry[1] = True
        entry[0]()

    @invariant()
    def spans_are_ended_once_with_valid_times(self):
        ids = [(r.trace_id, r.span_id) for r in self.records]
        assert len(ids) == len(set(ids)), "a span was ended twice"
        for r in self.records:
            assert type(r.start_ns) is int and type(r.end_ns) is int
            assert 0 <= r.start_ns <= r.end_ns < 2**63, (r.name, r.start_ns, r.end_ns)
            for ev in r.events:
                assert type(ev.time_ns) is int and 0 <= ev.time_ns < 2**63
            for value in r.attributes.values():
                assert isinstance(value, (str, bool, int, float)), (r.name, value)

    def teardown(self):
        self.tracker.finish(reason=interrupted_by(15) if len(self.records) % 2 else None)
        for entry in self.timers.pending:  # a window firing after the end changes nothing
            if not entry[1]:
                entry[0]()
        self.spans_are_ended_once_with_valid_times()
        ended = {(r.trace_id, r.span_id) for r in self.records}
        assert ended == self.started, "a started span was never ended"
        assert not self.part.runs


# 100 sequences (hypothesis's default) of up to 30 steps, every rule and strategy: the time goes
# to drawing the events (the agents' optional fields), not to the tracker.
TrackerMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tracker_state_machine = TrackerMachine.TestCase
