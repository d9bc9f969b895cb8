"""Secret detectors compared: recall on the corpus, false positives on real recordings, cost.

    .venv/bin/pip install -e '.[bench]'   # detect-secrets, for the comparison
    .venv/bin/python bench/redaction.py [--fixtures DIR] [--mix-mb 20] [--runs 5] [--show 5]

Detectors:

* ``otelbridge-before`` — the patterns of an earlier commit (``--before REV``, default the
  commit before the detector was rebuilt), loaded from git;
* ``otelbridge`` — :mod:`otelbridge.secrets` as it is now, each string alone; then as one run
  that met every positive first (:mod:`otelbridge.found_secrets`: the values it remembers);
* ``detect-secrets`` — Yelp's ``detect-secrets`` 1.5, every plugin, on each line of the string
  as its file scan does (default filters, a ``.txt`` file's keyword rules); a found secret
  value is replaced wherever it occurs; also its ad-hoc ``scan_line`` (eager) mode;
* ``otelbridge+detect-secrets`` — both, one after the other.

Corpus: ``tests/data/secret-forms.jsonl`` — ``positive`` rows (a text and the secret
substrings none of which may survive) and hand-written ``negative`` rows. Real recordings:
every distinct string value (at any depth) in every ``*.jsonl`` under ``--fixtures``; a
detector "fires" on one when its output holds a marker the input did not (home directories
shown as ``~`` do not count). Cost: CPU µs per string over the recordings' strings, no cache.

Full trace: the benchmark's mix (``bench/streams.py``, ``--mix-mb``) through line split,
decoders, tracker, span builder, batch processor and OTLP encoding (the bytes dropped, no
network), CPU time of the process (all threads) with the default redactor against one that
scans nothing: the share of redaction in the whole. Run by hand; never in the tests.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from otelbridge import redact  # noqa: E402
from otelbridge.found_secrets import MAX_VALUES  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "secret-forms.jsonl"
MARK = "[REDACTED"


def strings_in(value) -> Iterator[str]:
    """Every string at any depth of a decoded JSON value (keys not included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


def recording_strings(folder: Path) -> list[str]:
    """The distinct string values of every JSON line of every recording under ``folder``."""
    seen: dict[str, None] = {}
    for path in sorted(folder.rglob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            for s in strings_in(doc):
                if s:
                    seen.setdefault(s)
    return list(seen)


def before_detector(rev: str) -> Callable[[str], str]:
    source = subprocess.run(["git", "show", f"{rev}:otelbridge/redact.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("redact_before")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:otelbridge/redact.py", "exec"), module.__dict__)
    old = module.Redactor()
    return lambda text: old.redact(module._sanitise(text))


def now_detector() -> Callable[[str], str]:
    r = redact.Redactor()
    # uncached, so the cost is the scan's: sanitise, patterns, line ends; each string alone
    # (nothing learnt from one form hides another: :func:`remembered` measures that)
    return lambda text: redact._LINE_ENDS.sub(" ", r.redact(redact._sanitise(text), learn=False))


def remembered(forms: list[dict], real: list[str], show: int) -> None:
    """One run that met every positive form first (its redactor remembers each value found):
    how many values it keeps, which negatives and recording strings it then changes that a
    fresh one does not (false hits from memory), and the cost of a string then, uncached."""
    r, fresh = redact.Redactor(), redact.Redactor()
    bare_hits: list[bool] = []
    for f in forms:
        if f["kind"] == "positive":
            r.scan(f["text"])
    negatives = [f["text"] for f in forms if f["kind"] == "negative"]
    changed = [(s, r.scan(s)) for s in negatives + real if r.scan(s) != fresh.scan(s)]
    costs = {}
    for name, who in (("nothing remembered", fresh), (f"{len(r.found)} values remembered", r)):
        t0 = time.process_time()
        for s in real:
            who.redact(redact._sanitise(s), learn=False)
        costs[name] = (time.process_time() - t0) / len(real) * 1e6
    # each form alone, then its secrets bare (a command's output printing it): hidden by memory?
    bare = alone = 0
    for f in forms:
        if f["kind"] == "positive":
            once = redact.Redactor()
            once.scan(f["text"])
            for secret in f["secrets"]:
                bare += 1
                alone += MARK in fresh.scan(secret)
                hidden = once.scan(secret)
                remembered_bare = MARK in hidden and secret not in hidden
                bare_hits.append(remembered_bare)
    print(f"\n== a positive form's secrets met bare after the form: {sum(bare_hits)}/{bare} hidden "
          f"({alone} of them found by their shape alone)")
    print(f"== one run that met every positive first: {len(r.found)} values remembered "
          f"(at most {MAX_VALUES}); negatives and recording strings "
          f"changed by them {len(changed)}/{len(negatives) + len(real)}; "
          + "; ".join(f"{k} {v:.1f} µs/string" for k, v in costs.items()))
    for s, out in changed[:show]:
        print("  changed:", repr(s[:80]), "->", repr(out[:80]))


def detect_secrets_detector(eager: bool) -> Callable[[str], str]:
    """Yelp's detect-secrets on each line of a string: as its file scan does it (``eager``
    false: the keyword plugin's rules for a ``.txt`` file, every default filter) or as its
    ad-hoc ``scan_line`` does (``eager``: every word is a candidate)."""
    from detect_secrets.core.scan import _process_line_based_plugins, scan_line
    from detect_secrets.settings import default_settings

    ctx = default_settings()
    ctx.__enter__()  # the settings stay in force for the whole run (run holds ctx)

    def run(text: str, _settings=ctx) -> str:
        lines = text.splitlines() or [text]
        if eager:
            found = {s.secret_value for line in lines for s in scan_line(line)}
        else:
            found = {s.secret_value for s in
                     _process_line_based_plugins(list(enumerate(lines, 1)), "stream.txt")}
        for value in sorted((v for v in found if v), key=len, reverse=True):
            text = text.replace(value, "[REDACTED:detect-secrets]")
        return text
    return run


def evaluate(name: str, detect: Callable[[str], str], forms: list[dict], real: list[str],
             show: int) -> dict:
    missed, fp_hand = [], []
    for f in forms:
        out = detect(f["text"])
        if f["kind"] == "positive":
            if any(s in out for s in f["secrets"]):
                missed.append(f["form"])
        elif MARK in out and MARK not in f["text"]:
            fp_hand.append(f["text"])
    fired = []
    t0 = time.process_time()
    for s in real:
        out = detect(s)
        if MARK in out and MARK not in s:
            fired.append((s, out))
    spent = time.process_time() - t0
    chars = sum(len(s) for s in real)
    positives = sum(f["kind"] == "positive" for f in forms)
    print(f"\n== {name}")
    print(f"recall {positives - len(missed)}/{positives}; hand-written negatives hit "
          f"{len(fp_hand)}; recording strings it fires on {len(fired)}/{len(real)}; "
          f"{spent / len(real) * 1e6:.1f} µs/string, {spent / chars * 1024 * 1e6:.2f} µs/KiB")
    for form in missed[:show]:
        print("  missed:", form)
    for text in fp_hand[:show]:
        print("  fires on negative:", text)
    for s, out in fired[:show]:
        at = max(out.find(MARK) - 60, 0)
        print("  fires on recording:", repr(out[at:at + 120]))
    return {"missed": len(missed), "fired": len(fired), "us": spent / len(real) * 1e6}


class _Identity(redact.Redactor):
    """A redactor that scans nothing (the trace's time without redaction)."""

    def scan(self, text: str) -> str | None:
        return text


def _trace_once(data: bytes, redactor: redact.Redactor, raw_tracker: bool,
                inside: list[float] | None = None) -> tuple[float, int]:
    """CPU seconds of one pass of ``data`` through stages 2–4b with ``redactor`` installed,
    and the spans built. ``raw_tracker``: the tracker's own ``redact.clean``/``span_name``
    calls pass raw text (the tracker without redaction, the span builder its one boundary)."""
    from unittest import mock

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    from otelbridge import dialects
    from otelbridge.clock import Clock
    from otelbridge.ids import Ids
    from otelbridge.lines import LineSplitter
    from otelbridge.spans import PresetIdGenerator, SpanBuilder
    from otelbridge.stats import Stats
    from otelbridge.tracker import Context, Tracker

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    class Encode(SpanExporter):
        """Encodes each batch as the OTLP exporter does, then drops it (no network)."""

        def export(self, spans):
            encode_spans(spans).SerializeToString()
            return SpanExportResult.SUCCESS

    patches = []
    if raw_tracker:
        patches = [mock.patch.object(redact, "clean", lambda t, limit=None: "" if t is None else str(t)),
                   mock.patch.object(redact, "span_name", lambda p, t, f: f"{p} {t or f}")]
    if inside is not None:  # the thread's CPU time spent in the boundary, summed into inside[0]
        from otelbridge import spans as spans_module

        plain = spans_module.redacted

        def timed(rec, safe=None):
            t0 = time.thread_time()
            try:
                return plain(rec, safe)
            finally:
                inside[0] += time.thread_time() - t0

        patches.append(mock.patch.object(spans_module, "redacted", timed))
    previous = redact.install(redactor)
    for p in patches:
        p.start()
    try:
        stats = Stats()
        ids = PresetIdGenerator()
        provider = TracerProvider(id_generator=ids, shutdown_on_exit=False)
        provider.add_span_processor(BatchSpanProcessor(Encode(), max_queue_size=1 << 20,
                                                       schedule_delay_millis=60_000))
        builder = SpanBuilder(provider, ids, stats)
        decoder = dialects.Decoder(dialects.load(), stats)
        tracker = Tracker(Context(emit=builder.emit, ids=Ids(True), clock=Clock("stream"), stats=stats))

        def on_line(line: bytes) -> None:
            for event in decoder.decode(line):
                tracker.handle(event)

        splitter = LineSplitter(decoder.markers, on_line, stats)
        t0 = time.process_time()
        for start in range(0, len(data), 1 << 20):
            part = bytearray(data[start:start + (1 << 20)])
            splitter.feed(part, len(part))
        splitter.close()
        tracker.finish()
        provider.force_flush()
        return time.process_time() - t0, stats.spans_started
    finally:
        for p in patches:
            p.stop()
        redact.install(previous)


def full_trace(mb: int, runs: int = 3) -> None:
    """The mix through stages 2–4b and OTLP encoding in process: the median CPU time with the
    default redactor against one that scans nothing, in alternation."""
    import statistics

    from bench import streams

    path = Path(f"/tmp/otelbridge-bench/mix-{mb}.jsonl")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        streams.write("mix", str(path), mb=mb)
    data = path.read_bytes()
    for raw_tracker in (False, True):
        with_r, without = [], []
        for _ in range(runs):
            with_r.append(_trace_once(data, redact.Redactor(), raw_tracker)[0])
            t, spans = _trace_once(data, _Identity(), raw_tracker)
            without.append(t)
        if raw_tracker:  # within one run: the boundary's own CPU time against the whole
            print("\n== the boundary (spans.redacted) within each run, the tracker passing raw "
                  "text: its share of the trace's CPU time, fastest … median … slowest of "
                  f"{runs} runs")
            for label, make in (("default redactor", redact.Redactor),
                                ("a redactor that scans nothing (copying the record only)", _Identity)):
                shares = []
                for _ in range(runs):
                    inside = [0.0]
                    total = _trace_once(data, make(), True, inside)[0]
                    shares.append(inside[0] / total)
                shares.sort()
                print(f"  {label}: {shares[0]:.1%} … {statistics.median(shares):.1%} … {shares[-1]:.1%}")
        how = "the tracker passing raw text" if raw_tracker else "the tracker as it is"
        print(f"\n== full trace of the mix ({len(data) / 1e6:.0f} MB, {spans} spans), {how}:")
        for what, pick in (("fastest", min), ("median", statistics.median)):
            a, b = pick(with_r), pick(without)
            print(f"  {what} of {runs}: {a:.3f} s CPU with redaction, {b:.3f} s without: "
                  f"redaction {a - b:.3f} s = {(a - b) / a:.1%} of the trace")


def worst_case() -> None:
    """CPU ms to scan :data:`otelbridge.redact.SCAN_MAX_CHARS` characters of adversarial text
    (the longest string that is scanned rather than dropped)."""
    n = redact.SCAN_MAX_CHARS
    cases = {
        "prose with key words": "the agent reads file token cache stream json delta key: ",
        "'token:x ' repeated": "token:x ",
        "'password=' repeated": "password=",
        "e-mail-like words": "a.b.c.d@e ",
        "one word": "a",
        "'bearer ' repeated": "bearer ",
        "an open PEM block": "-----BEGIN RSA PRIVATE KEY-----A",
        "escaped JSON keys": '{\\"token\\": \\"xxxxxxxx\\"} ',
        "'user.password == ' repeated": "user.password == ",
        "an assertion's first half repeated": "self.assertEqual(user.password, ",
        "'echo x > ' repeated": "echo 'x' > ",
        "Markdown labels repeated": "**password**:",
        "table cells of a secret's name": "|password",
        "a table's header naming a secret": "| user | password |\n|---|---|\n| a | b |\n",
        "Markdown labels, values in backticks": "**password**: `a1a",
        "a label and an arrow repeated": "password\u2192",
        "an e-mail's labels before a path": "bb.",
        "names alone on lines, blank lines between": "**API key:**\n\n",
        "headings naming a password, escaped": "## Admin password\\n\\n`",
        "Setext headings naming a password, fences opened": "Admin password\n===\n~~~\n",
        "HTML cells naming a password": "<tr><td>Password</td><td>",
        "HTML bold names": "<b>Password:</b> ",
        "HTML bold names in capitals, breaks after": "<B class=k>Password:</B><br>&nbsp;\n",
        "a Read's numbered headings naming a password": "1\t## Admin password\n2\t\n",
        "a Read's numbered table of passwords": "     1\u2192| User | Password |\n     2\u2192|---|---|\n     3\u2192| a | ",
        "HTML header cells naming a token": "<tr><th>Token</th></tr>\n<tr><td>",
        "markers ending lines, a word after": "[REDACTED:secret]\nAbcdefgh12",
        "a setter's options, no name after them": "glab variable set" + " --scope prod" * 20 + " -\n",
        "'jq --arg token ' repeated": "jq --arg token ",
        "'--name api_token --value ' repeated": "--name api_token --value ",
        "'ansible-vault encrypt_string -x ' repeated": "ansible-vault encrypt_string -x ",
        "'The password is `' repeated": "The password is `",
        "'the password is a1(' repeated": "the password is a1(",
        "a backticked value never closed": "The password is `Rk7'" + "a1'" * 200,
        "'Login: `a` / `' repeated": "Login: `a` / `",
        "'pass: 1 ' repeated": "pass: 1 ",
        "'pass=12 fail' repeated": "pass=12 fail",
    }
    r = redact.Redactor()
    print(f"\n== worst cases: {n} characters each (the longest scanned string)")
    for name, unit in cases.items():
        text = (unit * (n // len(unit) + 1))[:n]
        t0 = time.process_time()
        r.redact(redact._sanitise(text))
        print(f"  {name:36s} {(time.process_time() - t0) * 1000:7.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", default=str(ROOT.parent / "shared" / "fixtures"))
    ap.add_argument("--before", default="5c7ec30")
    ap.add_argument("--mix-mb", type=int, default=20)
    ap.add_argument("--show", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5, help="full-trace runs of each kind")
    ap.add_argument("--no-library", action="store_true", help="skip detect-secrets")
    args = ap.parse_args()
    forms = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    real = recording_strings(Path(args.fixtures))
    print(f"corpus: {sum(f['kind'] == 'positive' for f in forms)} positives, "
          f"{sum(f['kind'] == 'negative' for f in forms)} hand-written negatives; recordings: "
          f"{len(real)} distinct strings, {sum(map(len, real)) / 1e6:.2f} M characters")
    detectors = {"otelbridge-before": before_detector(args.before), "otelbridge": now_detector()}
    if not args.no_library:
        library = detect_secrets_detector(eager=False)
        ours = detectors["otelbridge"]
        detectors["detect-secrets"] = library
        detectors["detect-secrets (ad hoc, eager)"] = detect_secrets_detector(eager=True)
        detectors["otelbridge+detect-secrets"] = lambda text: library(ours(text))
    for name, detect in detectors.items():
        evaluate(name, detect, forms, real, args.show)
    remembered(forms, real, args.show)
    worst_case()
    if args.mix_mb:
        full_trace(args.mix_mb, args.runs)


if __name__ == "__main__":
    main()
