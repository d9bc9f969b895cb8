"""The real stack for tests: the project's collector distribution and Jaeger v2, as built by
``collector-config/build.sh`` into ``.tools/bin``, started on free 127.0.0.1 ports.

- :func:`require_binaries`: the binaries, or a failure in CI (``CI`` set) / a skip elsewhere.
- :class:`Service`: one started binary, its log in a file; ``wait_http`` polls an URL with a
  deadline; :func:`ready` waits for several started together, :func:`stop_all` ends several
  at once (terminate, then kill after :data:`STOP_WAIT` s: a test never waits out a graceful
  shutdown).
- :func:`start_collector`: ``otelcol-otelbridge --config FILE --config OVERRIDE``: the real file,
  with only its listening addresses moved onto free ports (and what a test names) by a second
  file that the collector merges over it.
- :func:`start_jaeger`: ``jaeger --config collector-config/jaeger.yaml``, addresses from env.
- :func:`jaeger_spans` / :func:`wait_for_trace`: a trace read back through Jaeger's query API
  (api_v3, OTLP JSON), as :class:`tests.receivers.Span` rows (ids hex, times in ns).
- :func:`prometheus_samples`: a Prometheus text exposition as (name, labels, value) rows.
- :func:`run_otelbridge`: the installed ``otelbridge`` (beside ``sys.executable``) as a subprocess;
  :func:`run_otelbridge_together`: several such runs side by side.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, clean_env, side_by_side
from tests.receivers import Span

BIN = ROOT / ".tools" / "bin"
COLLECTOR = BIN / "otelcol-otelbridge"
JAEGER = BIN / "jaeger"
CONF = ROOT / "collector-config"
#: otelbridge as installed beside the running interpreter (the venv's, or CI's).
OTELBRIDGE = Path(sys.executable).parent / "otelbridge"
START_TIMEOUT = 30.0
#: Seconds a stopped service gets to exit after SIGTERM before SIGKILL: the tests read what they
#: need before stopping; the collector and Jaeger spend up to ~10 s draining at shutdown.
STOP_WAIT = 0.2


def require_binaries(*binaries: Path) -> None:
    """Each of ``binaries`` (default: both) is built; else a failure under CI, a skip elsewhere."""
    missing = [p.name for p in binaries or (COLLECTOR, JAEGER) if not p.is_file()]
    if missing:
        message = f"{', '.join(missing)} not built: run bash collector-config/build.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _below_ephemeral() -> tuple[int, int]:
    """Ports under the kernel's ephemeral range (``ip_local_port_range``), which it never gives
    an outgoing connection."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(1024, low - 12000), low


_GIVEN: set[int] = set()


def free_port() -> int:
    """A free 127.0.0.1 port for a service to listen on, below the ephemeral range: one the
    kernel picks (``bind(0)``) can be taken by a connection the tests make before the service
    binds it ("address already in use"); never the same twice in a run."""
    low, high = _below_ephemeral()
    pick = random.Random()
    for _ in range(500):
        port = pick.randrange(low, high)
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Service:
    """A started binary; output to ``log``; ``stop()`` ends it (and is safe to repeat)."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None,
                 ready_url: str = "") -> None:
        self.name, self.log, self.ready_url = name, log, ready_url
        self._out = open(log, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})}, cwd=ROOT)

    def wait_http(self, url: str, timeout: float = START_TIMEOUT) -> None:
        """Until ``url`` answers 200; fails with the log's tail when the process exits or the
        deadline passes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if http_get(url, timeout=1.0)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"{self.name} not ready at {url} (exit {self.proc.returncode}):\n{self.output()[-3000:]}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        stop_all([self])


def ready(*services: Service) -> None:
    """Each of ``services`` (started together, so their start-ups overlap) answers its ready URL."""
    for svc in services:
        svc.wait_http(svc.ready_url)


def stop_all(services: list[Service]) -> None:
    """SIGTERM to every one of ``services`` still running, SIGKILL to those not gone within
    :data:`STOP_WAIT` s; safe to repeat."""
    running = [svc for svc in services if svc.proc.poll() is None]
    for svc in running:
        svc.proc.terminate()
    deadline = time.monotonic() + STOP_WAIT
    for svc in running:
        try:
            svc.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            svc.proc.kill()
            svc.proc.wait(timeout=10)
    for svc in services:
        svc._out.close()


def startup_warnings(svc: Service) -> list[str]:
    """The warn/error lines of a collector-based binary's log up to "Everything is ready", and
    its notes that OTTL paths were rewritten (the form before context prefixes)."""
    out = []
    for line in svc.output().splitlines():
        if "Everything is ready" in line:
            return out
        fields = line.split("\t")
        if len(fields) > 2 and fields[1] in ("warn", "error") or "please rewrite them" in line:
            out.append(line[:400])
    raise AssertionError(f"{svc.name} never said it was ready")


def deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def listening_override(cfg: dict) -> tuple[dict, dict[str, int]]:
    """The second config file's part that moves every address ``cfg`` listens on to a free
    127.0.0.1 port: the otlp receiver's protocols, health_check, the prometheus exporter and the
    collector's own telemetry. Returns (override, ports by name: grpc, http, health, prometheus,
    telemetry)."""
    ports: dict[str, int] = {}
    protocols = {}
    for proto in cfg["receivers"]["otlp"]["protocols"]:
        ports[proto] = free_port()
        protocols[proto] = {"endpoint": f"127.0.0.1:{ports[proto]}"}
    override: dict = {"receivers": {"otlp": {"protocols": protocols}}}
    ports["health"] = free_port()
    override["extensions"] = {"health_check": {"endpoint": f"127.0.0.1:{ports['health']}"}}
    if "prometheus" in cfg["exporters"]:
        ports["prometheus"] = free_port()
        override["exporters"] = {"prometheus": {"endpoint": f"127.0.0.1:{ports['prometheus']}"}}
    ports["telemetry"] = free_port()
    override["service"] = {"telemetry": {"metrics": {"readers": [
        {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": ports["telemetry"]}}}}]}}}
    return override, ports


def start_collector(config: Path, workdir: Path, name: str, *, env: dict[str, str] | None = None,
                    changes: dict | None = None, wait: bool = True) -> tuple[Service, dict[str, int]]:
    """``config`` (a collector-config/otelcol*.yaml) merged with a file that moves its listening
    addresses to free ports and applies ``changes`` (a partial config: what a test must set).
    Returns the service, ready (its health_check answers) unless ``wait`` is false (then
    :func:`ready` it), and its ports."""
    override, ports = listening_override(yaml.safe_load(config.read_text()))
    override = deep_merge(override, changes or {})
    extra = workdir / f"{name}.override.yaml"
    extra.write_text(yaml.safe_dump(override))
    svc = Service(name, [str(COLLECTOR), f"--config={config}", f"--config={extra}"], workdir / f"{name}.log", env,
                  ready_url=f"http://127.0.0.1:{ports['health']}/")
    if wait:
        ready(svc)
    return svc, ports


def start_jaeger(workdir: Path, wait: bool = True, env: dict[str, str] | None = None) -> tuple[Service, dict[str, int]]:
    """Jaeger v2 with collector-config/jaeger.yaml; its addresses set through the environment
    variables that file reads (and ``env``). Ports: grpc, http (OTLP), query (HTTP API),
    query_grpc, metrics. Ready unless ``wait`` is false (then :func:`ready` it)."""
    ports = {k: free_port() for k in ("grpc", "http", "query", "query_grpc", "metrics")}
    env = {
        "JAEGER_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{ports['grpc']}",
        "JAEGER_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{ports['http']}",
        "JAEGER_QUERY_HTTP_ENDPOINT": f"127.0.0.1:{ports['query']}",
        "JAEGER_QUERY_GRPC_ENDPOINT": f"127.0.0.1:{ports['query_grpc']}",
        "JAEGER_METRICS_HOST": "127.0.0.1",
        "JAEGER_METRICS_PORT": str(ports["metrics"]),
        **(env or {}),
    }
    svc = Service("jaeger", [str(JAEGER), f"--config={CONF / 'jaeger.yaml'}"], workdir / "jaeger.log", env,
                  ready_url=f"http://127.0.0.1:{ports['query']}/api/services")
    if wait:
        ready(svc)
    return svc, ports


# ----------------------------------------------------------------------------- Jaeger's API

def _value(v: dict):
    """An OTLP JSON AnyValue → Python (intValue arrives as a string in OTLP JSON)."""
    if not v:
        return None
    ((kind, x),) = v.items()
    if kind == "intValue":
        return int(x)
    if kind == "arrayValue":
        return [_value(e) for e in x.get("values", [])]
    if kind == "kvlistValue":
        return {kv["key"]: _value(kv["value"]) for kv in x.get("values", [])}
    return x


def _attrs(kvs) -> dict:
    return {kv["key"]: _value(kv.get("value", {})) for kv in kvs or []}


def jaeger_spans(query_port: int, trace_id: str) -> list[Span]:
    """The spans Jaeger holds for ``trace_id`` (hex), from ``GET /api/v3/traces/{id}``; [] when
    it holds none (404)."""
    status, body = http_get(f"http://127.0.0.1:{query_port}/api/v3/traces/{trace_id}")
    if status == 404:
        return []
    assert status == 200, body[:500]
    doc = json.loads(body)
    out = []
    for rs in doc["result"].get("resourceSpans", []):
        resource = _attrs(rs.get("resource", {}).get("attributes"))
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                out.append(Span(
                    name=s["name"], trace_id=s["traceId"], span_id=s["spanId"],
                    parent_span_id=s.get("parentSpanId", ""), kind=_kind(s.get("kind")),
                    start_ns=int(s["startTimeUnixNano"]), end_ns=int(s["endTimeUnixNano"]),
                    attributes=_attrs(s.get("attributes")), status_code=_status(s.get("status", {})),
                    status_message=s.get("status", {}).get("message", ""),
                    events=[(e["name"], int(e["timeUnixNano"]), _attrs(e.get("attributes")))
                            for e in s.get("events", [])],
                    links=[(l["traceId"], l["spanId"]) for l in s.get("links", [])],
                    resource=resource, scope=(ss.get("scope", {}).get("name", ""),
                                              ss.get("scope", {}).get("version", ""))))
    return out


def jaeger_ui_spans(query_port: int, trace_id: str) -> list[tuple[str, int, int, list[str]]]:
    """The spans of ``trace_id`` as Jaeger's UI reads them (``GET /api/traces/{id}``, after
    Jaeger's adjusters: its copies merged, its warnings added): (span id, start µs, duration µs,
    warnings) each; [] when it holds none."""
    status, body = http_get(f"http://127.0.0.1:{query_port}/api/traces/{trace_id}")
    if status == 404:
        return []
    assert status == 200, body[:500]
    return [(s["spanID"], s["startTime"], s["duration"], s.get("warnings") or [])
            for t in json.loads(body)["data"] for s in t["spans"]]


_KINDS = {"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3,
          "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
_STATUS = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def _kind(k) -> int:
    return _KINDS.get(k, k) if isinstance(k, str) else int(k or 0)


def _status(st: dict) -> int:
    code = st.get("code", 0)
    return _STATUS.get(code, code) if isinstance(code, str) else int(code)


def wait_for_trace(query_port: int, trace_id: str, count: int, timeout: float = 20.0) -> list[Span]:
    """Jaeger's spans of ``trace_id`` once there are ``count`` (or what is there at the deadline)."""
    deadline = time.monotonic() + timeout
    spans: list[Span] = []
    while time.monotonic() < deadline:
        spans = jaeger_spans(query_port, trace_id)
        if len(spans) >= count:
            break
        time.sleep(0.1)
    return spans


# ----------------------------------------------------------------------------- Prometheus text

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def prometheus_samples(port: int) -> list[tuple[str, dict[str, str], float]]:
    """``GET /metrics`` of a Prometheus endpoint as (metric name, labels, value) rows."""
    status, body = http_get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200, body[:300]
    rows = []
    for line in body.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = _SAMPLE.match(line)
        assert m, line
        labels = {k: bytes(v, "utf-8").decode("unicode_escape") for k, v in _LABEL.findall(m[2] or "")}
        rows.append((m[1], labels, float(m[3])))
    return rows


def run_otelbridge(args: list[str], data: bytes, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    """The installed ``otelbridge ARGS`` with ``data`` on stdin, in an environment without the
    caller's OTEL_*/OTELBRIDGE_* variables, ``env`` added."""
    return subprocess.run([str(OTELBRIDGE), *args], input=data, capture_output=True, env=clean_env(**env),
                          timeout=timeout, cwd=ROOT)


def run_otelbridge_together(runs: list[tuple[list[str], bytes]]) -> list[subprocess.CompletedProcess]:
    """:func:`run_otelbridge` for each (args, data) of ``runs``, all started at once (the runs
    are independent: each has its own input and endpoint); results in the order of ``runs``."""
    return side_by_side(*(functools.partial(run_otelbridge, *run) for run in runs))
