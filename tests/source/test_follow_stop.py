"""``Follower.stop`` is called from a signal handler of the interpreter: also after ``run`` has
ended and its loop is closed (a second SIGTERM as the process ends)."""

from __future__ import annotations

import asyncio

from otelbridge.source.follow import Follower


class Nothing:
    """A :class:`~otelbridge.source.follow.Followed` that traces nothing."""

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
