"""A scripted stream-json emitter for lifecycle tests, run as otelbridge's wrapped child.

``python emitter.py SCRIPT.json`` — SCRIPT is a list of ``[sleep_s, line_object]`` pairs; each
line is written (compact JSON + newline) and flushed after sleeping; instead of ``sleep_s``,
``"wait:PATH"`` holds the line until PATH exists (the test creates it once what it waits for
has happened, so the order does not depend on machine load; at most 60 s). ``"$NOW+N"`` string values
become the wall clock in epoch ms plus N at the moment of writing (live timestamps).
"""

import json
import sys
import time
from pathlib import Path


def fill(value):
    if isinstance(value, str) and value.startswith("$NOW"):
        return int(time.time() * 1000) + int(value[4:] or 0)
    if isinstance(value, dict):
        return {k: fill(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v) for v in value]
    return value


def main():
    with open(sys.argv[1]) as fh:
        script = json.load(fh)
    out = sys.stdout
    for sleep_s, obj in script:
        if isinstance(sleep_s, str):
            gate, until = Path(sleep_s.removeprefix("wait:")), time.monotonic() + 60
            while not gate.exists() and time.monotonic() < until:
                time.sleep(0.01)
        else:
            time.sleep(sleep_s)
        out.write(json.dumps(fill(obj), separators=(",", ":")) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
