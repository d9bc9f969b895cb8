"""``Follower.stop`` is called from a signal handler of the interpreter: also after ``run`` has
ended and its loop is closed (a second SIGTERM as the process ends)."""

from __future__ import annotations

import asyncio

from otelbridge.source.follow import Follower


class Nothing:
    """A :class:`~otelbridge.source.followed.Followed` that traces nothing."""

    def on_chunk(self, buf, n): pass
    def on_switch(self, kind): pass
    def on_open(self, salt): pass
    def on_replayed(self): pass
    def is_quiet(self): return True
    def resumable(self): return True
    def has_sessions(self): return False
    def sessions_begin(self): return None
    def continuation_refs(self): return ()
    def session_refs(self): return ()
    def quiet_refs(self): return ()
    def exported(self): return ()
    def handed(self): return 0
    def settled(self, handed): return True


def test_a_stop_after_the_run_ended_and_its_loop_closed_is_no_error(tmp_path):
    path = tmp_path / "agent.jsonl"
    path.write_text('{"type":"system"}\n')
    follower = Follower(path, Nothing(), state_file=tmp_path / "state" / "f.json", from_start=True, poll_s=0.01)

    async def main():
        asyncio.get_running_loop().call_later(0.05, follower.stop)
        await follower.run()

    asyncio.run(main())
    assert follower.stop_deadline() is not None
    follower.stop()  # (the loop is closed now)
    follower.stop()


class LosesAfterTheFirst(Nothing):
    """Its first checkpoint's spans (none) are exported, those of every later one lost; and the
    exporters take spans again."""

    def __init__(self):
        self.chunks = 0

    def on_chunk(self, buf, n): self.chunks += 1
    def handed(self): return self.chunks
    def settled(self, handed): return handed == 0
    def taking_again(self): return True


def run_until_stopped_or_returned(follower, stop_after_s: float) -> None:
    async def main():
        asyncio.get_running_loop().call_later(stop_after_s, follower.stop)
        await follower.run()

    asyncio.run(main())


def test_a_lost_export_returns_to_read_again_from_the_saved_point_when_it_may(tmp_path):
    """Spans lost, the exporters taking spans again: :meth:`Follower.run` returns at once with
    :attr:`Follower.taking_again` and the position saved before the loss; a run that may not
    read again from that point (``may_read_again``) goes on (the next start reads again)."""
    path, state = tmp_path / "agent.jsonl", tmp_path / "state" / "f.json"
    path.write_text('{"type":"system"}\n')
    first = Follower(path, LosesAfterTheFirst(), state_file=state, from_start=True, poll_s=0.01,
                     may_read_again=lambda saved: True)
    run_until_stopped_or_returned(first, 5.0)
    assert first.taking_again and first.stop_deadline() is None  # (returned, not stopped)
    assert first.saved is not None and first.saved.offset == 0

    again = Follower(path, LosesAfterTheFirst(), state_file=state, poll_s=0.01,
                     may_read_again=lambda saved: saved != first.saved)
    assert again.saved == first.saved
    run_until_stopped_or_returned(again, 0.3)
    assert not again.taking_again and again.stop_deadline() is not None  # (stopped)
    assert again.saved == first.saved
