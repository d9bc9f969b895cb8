"""``follow`` through a collector's outage: how soon what it lost is sent again.

    .venv/bin/python bench/outage.py [--runs 3]

Three runs of a real Claude Code recording (../shared/fixtures) written back to back to a
followed file, the third while the collector (a real OTLP/HTTP receiver) is away; it comes back
on the same port and nothing more is written. Prints, per run, the seconds from the collector's
return to follow's line saying it reads again, and to every span ended so far having arrived
(23 of the file's 24: the last session is open until the stop). Run by hand, never in the tests.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import clean_env  # noqa: E402
from tests.e2e.test_follow import append, back_to_back, empty_log, saved_offset, wait  # noqa: E402
from tests.receivers import HttpReceiver  # noqa: E402

SAID = b"again from the last point whose spans were all exported"


def once() -> tuple[float, float]:
    log, state = empty_log(Path(tempfile.mkdtemp()))
    runs = back_to_back("claudecli-go-bg-bash-wake-2.1.280.jsonl", 3)
    env = clean_env(OTEL_BSP_SCHEDULE_DELAY="50", OTEL_EXPORTER_OTLP_TIMEOUT="1000")
    said: list[tuple[float, bytes]] = []
    with HttpReceiver() as first:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbridge", "follow", str(log), "--state-dir", str(state), "--from-start",
             "--grace-period", "0", "--protocol", "http/protobuf", "--endpoint", first.endpoint,
             "--summary", "never", "--flush-timeout", "1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        threading.Thread(target=lambda: said.extend((time.monotonic(), l) for l in proc.stderr), daemon=True).start()
        append(log, runs[0] + runs[1])
        wait(lambda: (saved_offset(state) or {}).get("read_to") == log.stat().st_size, what="a saved position")
    try:
        append(log, runs[2])  # (the collector is away: these spans are lost)
        time.sleep(3)
        with HttpReceiver(port=first.port) as back:
            up = time.monotonic()
            wait(lambda: any(SAID in line for _, line in said), timeout=20, what="reading again")
            again = next(t for t, line in said if SAID in line) - up
            wait(lambda: len({s.span_id for s in first.received.spans() + back.received.spans()}) >= 23,
                 timeout=20, what="every span ended so far")
            return again, time.monotonic() - up
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    for _ in range(parser.parse_args().runs):
        again, whole = once()
        print(f"reading again {again:.2f} s after the collector was back; every span ended so far there "
              f"after {whole:.2f} s")


if __name__ == "__main__":
    main()
