"""Structural checks of the deploy kit (docs/deploy.md): collector configurations, compose stack,
Grafana provisioning, Prometheus, Tempo, Dockerfile and Kubernetes manifests.

No Docker engine runs here, so nothing is started or pulled: the files are parsed (pyyaml) and
compared with each other, with README.md / docs/deploy.md, with otelbridge's own CLI (click
parses the flags the files pass) and with the spans otelbridge really exports (one subprocess
run against the OTLP/HTTP test receiver, for the redaction patterns).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import compose_pydantic
import kubernetes_validate
import pytest
import yaml

from otelbridge import cli
from otelbridge.ids import Ids
from tests.conftest import EXAMPLES, ROOT, clean_env, run_bridge
from tests.receivers import HttpReceiver

COMPOSE = ROOT / "docker-compose.yml"
CONF = ROOT / "collector-config"
AGENT = CONF / "otelcol.yaml"
AGENT_LB = CONF / "otelcol-agent-lb.yaml"
GATEWAY = CONF / "otelcol-gateway.yaml"
COLLECTOR_CONFIGS = (AGENT, AGENT_LB, GATEWAY)
TEMPO = CONF / "tempo.yaml"
JAEGER = CONF / "jaeger.yaml"
PROMETHEUS = CONF / "prometheus.yml"
GRAFANA = CONF / "grafana"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "datasources.yaml"
DASHBOARD_PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "dashboards.yaml"
DASHBOARDS = GRAFANA / "dashboards"
DOCKERFILE = ROOT / "Dockerfile"
README = ROOT / "README.md"
DOCS = ROOT / "docs" / "deploy.md"
K8S = EXAMPLES / "kubernetes"
EXAMPLE_STREAM = EXAMPLES / "cbc-workflow.jsonl"

#: Connector → (pipeline type it consumes as an exporter, pipeline type it feeds as a receiver),
#: from the connectors' READMEs ("Supported Pipeline Types").
CONNECTOR_TYPES = {"span_metrics": ("traces", "metrics"), "signal_to_metrics": ("traces", "metrics")}
#: Labels the span_metrics connector always adds (its built-in dimensions), as Prometheus names.
SPAN_METRICS_LABELS = {"service_name", "span_name", "span_kind", "status_code"}


def load(path: Path):
    return yaml.safe_load(path.read_text())


def compose() -> dict:
    return load(COMPOSE)


def port_of(endpoint: str) -> int:
    """``0.0.0.0:4317`` / ``jaeger:4317`` / ``http://x:4318`` → the port (a collector's
    ``${env:VAR:-default}`` read as its default)."""
    endpoint = collector_defaults(endpoint)
    if "//" not in endpoint:
        endpoint = "//" + endpoint
    return urlsplit(endpoint).port


def host_of(endpoint: str) -> str:
    endpoint = collector_defaults(endpoint)
    if "//" not in endpoint:
        endpoint = "//" + endpoint
    return urlsplit(endpoint).hostname


def otlp_receiver_ports(cfg: dict) -> dict[str, int]:
    """``{"grpc": 4317, "http": 4318}`` from a collector configuration's ``otlp`` receiver."""
    protocols = cfg["receivers"]["otlp"]["protocols"]
    return {name: port_of(p["endpoint"]) for name, p in protocols.items()}


def published(service: dict) -> list[tuple[str, int, int]]:
    """Compose ``ports`` entries as (host ip, host port, container port)."""
    out = []
    for entry in service.get("ports", []):
        parts = str(entry).split(":")
        ip = parts[0] if len(parts) == 3 else "0.0.0.0"
        out.append((ip, int(parts[-2]), int(parts[-1])))
    return out


def compose_default(value: str) -> str:
    """``${VAR:-default}`` (compose interpolation) → ``default``; other values as they are."""
    m = re.fullmatch(r"\$\{\w+:-(.*)\}", value)
    return m.group(1) if m else value


def collector_defaults(value: str) -> str:
    """Every ``${env:VAR:-default}`` in ``value`` (collector confmap, also inside a string such
    as ``${env:OTELBRIDGE_LISTEN_HOST:-0.0.0.0}:4317``) → its default."""
    return re.sub(r"\$\{env:\w+:-([^}]*)\}", r"\1", value)


def collector_default(value: str) -> str:
    """``${env:VAR:-default}`` (collector confmap) → ``default``; other values as they are."""
    m = re.fullmatch(r"\$\{env:\w+:-(.*)\}", value)
    return m.group(1) if m else value


def jaeger_port(*path: str) -> int:
    """A port Jaeger listens on by default (jaeger.yaml's ``${env:...:-default}``), e.g.
    ``jaeger_port("receivers", "otlp", "protocols", "grpc")``."""
    node = load(JAEGER)
    for key in path:
        node = node[key]
    return port_of(collector_default(node["endpoint"]))


def service_mounting(name: str) -> str:
    """The compose service that bind-mounts ``collector-config/<name>``."""
    hits = [svc for svc, spec in compose()["services"].items()
            if any(str(v).split(":")[0] == f"./collector-config/{name}" for v in spec.get("volumes", []))]
    assert len(hits) == 1, f"{name} mounted by {hits}"
    return hits[0]


def docs_text() -> str:
    return DOCS.read_text()


# ----------------------------------------------------------------------------- YAML, pipelines

def yaml_files() -> list[Path]:
    return sorted([COMPOSE, *CONF.rglob("*.yaml"), *CONF.rglob("*.yml"), *K8S.glob("*.yaml")])


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_yaml_parses(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs and all(isinstance(d, dict) and d for d in docs)


def test_compose_file_follows_the_compose_specification():
    """compose-pydantic: models generated from the Compose Specification schema (unknown keys,
    wrong types and unknown depends_on conditions are errors)."""
    spec = compose_pydantic.ComposeSpecification.model_validate(compose())
    assert set(spec.services) == set(compose()["services"])


def test_dashboards_parse_and_use_provisioned_datasources():
    uids = {ds["uid"] for ds in load(DATASOURCES)["datasources"]}
    files = sorted(DASHBOARDS.glob("*.json"))
    assert files
    for path in files:
        dash = json.loads(path.read_text())
        assert dash["uid"] and dash["title"] and dash["panels"]
        for panel in dash["panels"]:
            assert panel["datasource"]["uid"] in uids
            for t in panel["targets"]:
                assert t["datasource"]["uid"] in uids and t["expr"]


@pytest.mark.parametrize("path", COLLECTOR_CONFIGS, ids=lambda p: p.name)
def test_pipelines_use_only_defined_components_and_every_defined_one(path):
    cfg = load(path)
    kinds = ("receivers", "processors", "exporters", "connectors")
    defined = {k: set(cfg.get(k) or {}) for k in kinds}
    used = {k: set() for k in kinds}
    pipelines = cfg["service"]["pipelines"]
    assert pipelines
    for name, p in pipelines.items():
        assert name.split("/")[0] in ("traces", "metrics", "logs"), name
        assert p["receivers"] and p["exporters"], name
        for r in p["receivers"]:
            assert r in defined["receivers"] | defined["connectors"], f"{name}: receiver {r}"
            used["connectors" if r in defined["connectors"] else "receivers"].add(r)
        for x in p.get("processors", []):
            assert x in defined["processors"], f"{name}: processor {x}"
            used["processors"].add(x)
        for e in p["exporters"]:
            assert e in defined["exporters"] | defined["connectors"], f"{name}: exporter {e}"
            used["connectors" if e in defined["connectors"] else "exporters"].add(e)
    for k in kinds:
        assert defined[k] == used[k], f"{k} defined but unused: {defined[k] - used[k]}"
    assert set(cfg["service"].get("extensions", [])) == set(cfg.get("extensions") or {})


@pytest.mark.parametrize("path", COLLECTOR_CONFIGS, ids=lambda p: p.name)
def test_connectors_join_the_right_pipeline_types(path):
    cfg = load(path)
    pipelines = cfg["service"]["pipelines"]
    for conn in cfg.get("connectors") or {}:
        kind = conn.split("/")[0]
        assert kind in CONNECTOR_TYPES, f"unknown connector {conn}"
        as_exporter = {n.split("/")[0] for n, p in pipelines.items() if conn in p["exporters"]}
        as_receiver = {n.split("/")[0] for n, p in pipelines.items() if conn in p["receivers"]}
        assert (as_exporter, as_receiver) == ({CONNECTOR_TYPES[kind][0]}, {CONNECTOR_TYPES[kind][1]})


@pytest.mark.parametrize("path", COLLECTOR_CONFIGS, ids=lambda p: p.name)
def test_memory_limiter_first_and_batch_last(path):
    for name, p in load(path)["service"]["pipelines"].items():
        procs = [x.split("/")[0] for x in p.get("processors", [])]
        assert procs[0] == "memory_limiter" and procs[-1] == "batch", name


# ----------------------------------------------------------------------------- endpoints agree

def test_compose_publishes_the_collector_receivers():
    cfg = load(AGENT)
    svc = compose()["services"][service_mounting("otelcol.yaml")]
    container_ports = {c for _, _, c in published(svc)}
    assert set(otlp_receiver_ports(cfg).values()) <= container_ports
    assert port_of(cfg["extensions"]["health_check"]["endpoint"]) in container_ports


def test_collector_exporters_target_the_backends_listening_ports():
    services = compose()["services"]
    tempo_grpc = port_of(load(TEMPO)["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"])
    backend_ports = {"tempo": tempo_grpc, "jaeger": jaeger_port("receivers", "otlp", "protocols", "grpc")}
    for path in (AGENT, GATEWAY):
        exporters = load(path)["exporters"]
        targets = {name: collector_default(e["endpoint"]) for name, e in exporters.items()
                   if name.startswith("otlp_grpc/")}
        assert {host_of(t) for t in targets.values()} == set(backend_ports), path.name
        for endpoint in targets.values():
            assert host_of(endpoint) in services
            assert port_of(endpoint) == backend_ports[host_of(endpoint)], endpoint
            assert endpoint in docs_text()


def test_compose_runs_jaeger_with_its_config_and_publishes_its_ui():
    jaeger = compose()["services"][service_mounting(JAEGER.name)]
    (mount,) = [str(v) for v in jaeger["volumes"] if str(v).startswith("./collector-config/jaeger.yaml:")]
    assert jaeger["command"] == [f"--config={mount.split(':')[1]}"]
    assert {c for _, _, c in published(jaeger)} == {jaeger_port("extensions", "jaeger_query", "http")}
    assert jaeger["image"].rsplit(":", 1)[1] == re.search(
        r"^JAEGER_VERSION=v(\S+)", (CONF / "build.sh").read_text(), re.M)[1]


def test_the_github_actions_example_runs_the_jaeger_release_compose_pins():
    """The CI example's throw-away backend is the Jaeger the rest of the deployment pins."""
    job = yaml.safe_load((ROOT / "examples" / "github-actions.yml").read_text())["jobs"]["agent"]
    assert job["services"]["jaeger"]["image"] == compose()["services"][service_mounting(JAEGER.name)]["image"]


def test_compose_collector_image_is_the_release_of_the_built_distribution():
    manifest = load(CONF / "builder-config.yaml")
    versions = {m["gomod"].split()[1] for kind in ("extensions", "receivers", "processors", "connectors",
                                                 "exporters") for m in manifest[kind]}
    assert versions == {"v" + manifest["dist"]["version"]}
    images = {spec["image"] for spec in compose()["services"].values() if "opentelemetry-collector" in spec["image"]}
    assert images == {"otel/opentelemetry-collector-contrib:" + manifest["dist"]["version"]}


def test_docs_local_run_uses_and_lists_the_variables_the_configs_read():
    section = docs_text().split("## The real stack without Docker", 1)[1].split("\n## ", 1)[0]
    values = "\n".join(line for p in CONF.glob("*.yaml") for line in p.read_text().splitlines()
                       if not line.lstrip().startswith("#"))
    read = set(re.findall(r"\$\{env:(\w+):-", values))
    commands = "\n".join(re.findall(r"```sh\n(.*?)```", section, re.S))
    set_there = set(re.findall(r"\b([A-Z][A-Z0-9_]+)=", commands))
    assert set_there and set_there <= read
    listed = {name for row in re.findall(r"^\| (`[A-Z].*?) \|", section, re.M)
              for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row)}
    assert listed == read


def test_prometheus_scrapes_each_collector_exporter():
    scraped = {}
    for job in load(PROMETHEUS)["scrape_configs"]:
        for target in job["static_configs"][0]["targets"]:
            scraped[host_of(target)] = port_of(target)
    expected = {}
    for path in (AGENT, AGENT_LB):  # the two configurations that export metrics
        expected[service_mounting(path.name)] = port_of(load(path)["exporters"]["prometheus"]["endpoint"])
    assert scraped == expected
    assert f"otel-collector:{expected['otel-collector']}" in docs_text()


def test_agent_load_balances_by_trace_id_onto_the_gateway_receiver():
    lb = load(AGENT_LB)["exporters"]["load_balancing"]
    assert lb["routing_key"] == "traceID"
    assert int(lb["resolver"]["dns"]["port"]) == otlp_receiver_ports(load(GATEWAY))["grpc"]
    # in compose (profile scale) the resolver's name is the gateway service, run as replicas
    services = compose()["services"]
    gateway, agent = service_mounting(GATEWAY.name), service_mounting(AGENT_LB.name)
    hostname = lb["resolver"]["dns"]["hostname"]
    var = re.fullmatch(r"\$\{env:(\w+):-.*\}", hostname).group(1)
    assert collector_default(hostname) == services[agent]["environment"][var] == gateway
    assert services[gateway]["deploy"]["replicas"] >= 2
    assert services[agent]["profiles"] == services[gateway]["profiles"] == ["scale"]
    # apart from where traces go, the lb agent is the same agent as otelcol.yaml
    plain, lbcfg = load(AGENT), load(AGENT_LB)
    for key in ("receivers", "processors", "connectors", "extensions"):
        assert plain[key] == lbcfg[key], key
    assert plain["service"]["pipelines"]["metrics"] == lbcfg["service"]["pipelines"]["metrics"]
    assert lbcfg["service"]["pipelines"]["traces"]["exporters"][0] == "load_balancing"


def test_gateway_tail_sampling_keeps_errors_and_a_fraction_and_docs_give_the_wait():
    ts = load(GATEWAY)["processors"]["tail_sampling"]
    types = {p["type"]: p for p in ts["policies"]}
    assert types["status_code"]["status_code"]["status_codes"] == ["ERROR"]
    assert 0 < types["probabilistic"]["probabilistic"]["sampling_percentage"] < 100
    section = docs_text().split("## Tail sampling and long workflows", 1)[1].split("\n## ", 1)[0]
    assert f"`decision_wait` ({ts['decision_wait']} here)" in section


def test_grafana_datasources_point_at_compose_services():
    services = compose()["services"]
    expected_port = {
        "prometheus": {c for _, _, c in published(services["prometheus"])},
        "tempo": {load(TEMPO)["server"]["http_listen_port"]},
        "jaeger": {c for _, _, c in published(services["jaeger"])},
    }
    sources = {ds["type"]: ds for ds in load(DATASOURCES)["datasources"]}
    assert set(sources) == set(expected_port)
    for kind, ds in sources.items():
        assert host_of(ds["url"]) == kind and kind in services
        assert port_of(ds["url"]) in expected_port[kind], ds["url"]
        assert ds["url"] in docs_text()


def test_grafana_mounts_provisioning_and_dashboards_where_they_are_read():
    grafana = compose()["services"]["grafana"]
    mounts = dict(str(v).split(":")[:2] for v in grafana["volumes"])
    assert mounts["./collector-config/grafana/provisioning"] == "/etc/grafana/provisioning"
    (provider,) = load(DASHBOARD_PROVIDERS)["providers"]
    dash_dir = provider["options"]["path"]
    assert mounts["./collector-config/grafana/dashboards"] == dash_dir
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home.startswith(dash_dir + "/") and (DASHBOARDS / home.rsplit("/", 1)[1]).is_file()


def test_compose_bind_mounts_exist():
    for svc, spec in compose()["services"].items():
        for vol in spec.get("volumes", []):
            src = str(vol).split(":")[0]
            if src.startswith("./"):
                assert (ROOT / src).exists(), f"{svc}: {src}"


def test_docs_host_urls_are_the_published_ports():
    published_ports = {h for spec in compose()["services"].values() for _, h, _ in published(spec)}
    in_docs = {int(p) for p in re.findall(r"localhost:(\d+)", docs_text())}
    assert in_docs == published_ports
    for spec in compose()["services"].values():
        assert all(ip == "127.0.0.1" for ip, _, _ in published(spec))


def test_docs_in_network_endpoints_are_ports_something_listens_on():
    listening = {
        service_mounting(path.name): {
            *otlp_receiver_ports(cfg).values(),
            *(port_of(e["endpoint"]) for n, e in cfg["exporters"].items() if n == "prometheus"),
            port_of(cfg["extensions"]["health_check"]["endpoint"]),
        }
        for path, cfg in ((p, load(p)) for p in COLLECTOR_CONFIGS)
    }
    listening |= {
        "jaeger": {jaeger_port("receivers", "otlp", "protocols", "grpc"),
                   *(c for _, _, c in published(compose()["services"]["jaeger"]))},
        "tempo": {port_of(load(TEMPO)["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]),
                  load(TEMPO)["server"]["http_listen_port"]},
    }
    for svc in ("prometheus", "grafana"):
        listening[svc] = {c for _, _, c in published(compose()["services"][svc])}
    mentioned = re.findall(r"\b(otel-collector|otel-agent|otel-gateway|jaeger|tempo|prometheus|grafana):(\d+)",
                           docs_text())
    assert mentioned
    for svc, port in mentioned:
        assert int(port) in listening[svc], f"{svc}:{port}"


# ----------------------------------------------------------------------------- images

PINNED = re.compile(r"^[a-z0-9./_-]+:(?!latest$)v?\d[\w.-]*$")


def k8s_containers() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            spec = doc["spec"]["template"]["spec"]
            for c in spec.get("initContainers", []) + spec["containers"]:
                out.append((path.name, c))
    return out


def test_every_image_is_pinned_never_latest():
    images = [spec["image"] for spec in compose()["services"].values()]
    images += [c["image"] for _, c in k8s_containers()]
    images += re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE.read_text(), re.M)
    assert len(images) >= 9
    for image in images:
        assert PINNED.match(image), image
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("FROM "):
            assert line.split()[1] == "${PYTHON_IMAGE}"


def test_docs_pin_table_matches_compose_and_dockerfile():
    section = docs_text().split("## Pinned images", 1)[1].split("\n## ", 1)[0]
    table = dict(re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|", section, re.M))
    actual = dict(spec["image"].rsplit(":", 1) for spec in compose()["services"].values())
    (python,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE.read_text(), re.M)
    actual.update([python.rsplit(":", 1)])
    assert table == actual
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert actual["otelbridge"] == version
    for name, c in k8s_containers():
        if c["image"].rsplit(":", 1)[0].endswith("/otelbridge"):
            assert c["image"].endswith(":" + version), name


# ----------------------------------------------------------------------------- the demo service

def test_demo_exports_to_the_collector_receiver_for_its_protocol():
    services = compose()["services"]
    demo = services["otelbridge-demo"]
    env = demo["environment"]
    endpoint = compose_default(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
    protocol = env["OTEL_EXPORTER_OTLP_PROTOCOL"]
    kind = "grpc" if protocol == "grpc" else "http"
    collector = service_mounting("otelcol.yaml")
    assert host_of(endpoint) == collector
    assert port_of(endpoint) == otlp_receiver_ports(load(AGENT))[kind]
    assert demo["depends_on"][collector]["condition"] in ("service_started", "service_healthy")
    # the documented override for the scale profile points at the load-balancing agent
    overrides = set(re.findall(r"OTELBRIDGE_DEMO_ENDPOINT=(\S+)", docs_text() + COMPOSE.read_text()))
    assert overrides
    for url in overrides:
        assert host_of(url) == service_mounting(AGENT_LB.name)
        assert port_of(url) == otlp_receiver_ports(load(AGENT_LB))[kind]
    assert (ROOT / demo["build"]["context"] / demo["build"]["dockerfile"]) == DOCKERFILE


def test_demo_command_is_a_valid_otelbridge_invocation_of_a_shipped_example():
    demo = compose()["services"]["otelbridge-demo"]
    assert demo["entrypoint"][:2] == ["/bin/sh", "-c"]
    (script,) = demo["command"]
    words = shlex.split(script)
    assert words[:2] == ["exec", "otelbridge"]
    args, (redirect, path) = words[2:-2], words[-2:]
    assert redirect == "<"
    ctx = cli.run_command.make_context("otelbridge", list(args))  # raises on an unknown flag
    assert ctx.params["deterministic_ids"] and ctx.params["fail_on_export_error"]
    # the Dockerfile copies examples/ to /opt/otelbridge/examples
    assert "COPY examples /opt/otelbridge/examples" in DOCKERFILE.read_text()
    assert path.startswith("/opt/otelbridge/examples/")
    assert (EXAMPLES / path.removeprefix("/opt/otelbridge/examples/")).is_file()


def test_docs_give_the_demo_trace_id_of_the_example_stream():
    started = next(json.loads(line) for line in EXAMPLE_STREAM.read_text().splitlines()
                   if '"task_started"' in line)
    trace_id = Ids(deterministic=True).trace_id(started["session_id"], started["task_id"])
    text = docs_text()
    assert f"http://localhost:16686/trace/{trace_id:032x}" in text
    assert f"otelbridge/1/{started['session_id']}/{started['task_id']}" in text


# ----------------------------------------------------------------------------- Dockerfile

def readme_install_command() -> str:
    """The install part of the "Try it" command of README.md (up to ``pip install``)."""
    section = README.read_text().split("## Try it", 1)[1].split("\n## ", 1)[0]
    (line,) = [ln for ln in section.splitlines() if "pip install" in ln]
    parts = [p.strip() for p in line.split("&&")]
    upto = next(i for i, p in enumerate(parts) if "pip install" in p)
    return " && ".join(parts[: upto + 1])


def test_dockerfile_installs_with_the_readme_install_command():
    command = readme_install_command()
    assert command.startswith("python3 -m venv")
    runs = [ln.removeprefix("RUN ").strip() for ln in DOCKERFILE.read_text().splitlines()
            if ln.startswith("RUN ") and "pip install" in ln]
    assert runs == [command]
    assert f"```sh\n{command}\n```" in docs_text()


def test_dockerfile_is_multi_stage_and_runs_as_non_root():
    lines = [ln.strip() for ln in DOCKERFILE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    stages = [i for i, ln in enumerate(lines) if ln.startswith("FROM ")]
    assert len(stages) >= 2
    final = lines[stages[-1]:]
    users = [ln.split()[1] for ln in final if ln.startswith("USER ")]
    assert users and users[-1].split(":")[0].isdigit() and int(users[-1].split(":")[0]) != 0
    assert any(ln.startswith("COPY --from=build ") for ln in final)
    assert not any("pip install" in ln for ln in final)
    assert final[-1] == 'ENTRYPOINT ["otelbridge"]'
    # the venv is copied to the path it was built at (a venv is not relocatable)
    workdir = next(ln.split()[1] for ln in lines[: stages[-1]] if ln.startswith("WORKDIR "))
    copy = next(ln for ln in final if ln.startswith("COPY --from=build "))
    assert copy.split()[2:] == [f"{workdir}/.venv", f"{workdir}/.venv"]
    assert f"PATH={workdir}/.venv/bin:$PATH" in DOCKERFILE.read_text()


# ----------------------------------------------------------------------------- Kubernetes

def pod_specs():
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            yield path.name, doc


#: Oldest Kubernetes the manifests are meant for: native sidecars (init containers with
#: restartPolicy: Always) are on by default from 1.29.
K8S_MIN_VERSION = "1.29.0"


@pytest.mark.parametrize("version", [K8S_MIN_VERSION, kubernetes_validate.latest_version()])
def test_k8s_manifests_validate_against_the_kubernetes_schema(version):
    for name, doc in pod_specs():
        kubernetes_validate.validate(doc, version, strict=True)  # raises ValidationError


def test_k8s_manifests_structure():
    seen = list(pod_specs())
    assert len(seen) >= 2
    for name, doc in seen:
        assert (doc["apiVersion"], doc["kind"]) in (("batch/v1", "Job"), ("apps/v1", "Deployment")), name
        assert doc["metadata"]["name"]
        spec = doc["spec"]["template"]["spec"]
        if doc["kind"] == "Job":
            assert spec["restartPolicy"] in ("Never", "OnFailure")
        assert spec["securityContext"]["runAsNonRoot"] is True
        volumes = {v["name"] for v in spec.get("volumes", [])}
        for c in spec.get("initContainers", []) + spec["containers"]:
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, c["name"]
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
            for m in c.get("volumeMounts", []):
                assert m["name"] in volumes, f"{name}/{c['name']}: {m['name']}"


def otelbridge_containers():
    for name, doc in pod_specs():
        spec = doc["spec"]["template"]["spec"]
        for c in spec.get("initContainers", []) + spec["containers"]:
            argv = c.get("command") or []
            if "/otelbridge:" in c["image"] or argv[:1] == ["otelbridge"]:
                yield name, doc, c


def test_k8s_otelbridge_containers_get_endpoint_and_k8s_resource_from_env():
    agent_ports = otlp_receiver_ports(load(AGENT))
    found = list(otelbridge_containers())
    assert len(found) == 3
    for name, _, c in found:
        env, defined = {}, {}
        for var in c["env"]:
            # every $(VAR) refers to a variable defined earlier in the list (Kubernetes rule)
            for ref in re.findall(r"\$\((\w+)\)", var.get("value", "")):
                assert ref in env, f"{name}: {var['name']} uses $({ref}) before it is defined"
            env[var["name"]] = var.get("value")
            field = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            if field:
                defined[field] = var["name"]
        protocol = env["OTEL_EXPORTER_OTLP_PROTOCOL"]
        assert protocol in ("grpc", "http/protobuf")
        endpoint = env["OTEL_EXPORTER_OTLP_ENDPOINT"]
        assert endpoint == f"http://$({defined['status.hostIP']}):{agent_ports['http' if protocol != 'grpc' else 'grpc']}"
        resource = dict(kv.split("=", 1) for kv in env["OTEL_RESOURCE_ATTRIBUTES"].split(","))
        assert resource["k8s.pod.name"] == f"$({defined['metadata.name']})"
        assert resource["k8s.namespace.name"] == f"$({defined['metadata.namespace']})"
        assert resource["k8s.pod.uid"] == f"$({defined['metadata.uid']})"
        assert resource["k8s.node.name"] == f"$({defined['spec.nodeName']})"


def test_k8s_follow_deployment_hands_over_on_the_volume_its_file_is_on():
    """A Deployment's rollout stops ``follow`` while the agent writes on: ``--handover``, and
    the state directory (its lock and offset file) on the volume of the followed file, which
    both pods mount at the same path, writable; one replica at a time."""
    (deployment,) = [doc for _, doc in pod_specs() if doc["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    assert c["args"][0] == "follow"
    ctx = cli.follow_command.make_context("follow", list(c["args"][1:]))  # raises on an unknown flag
    assert ctx.params["handover"] is True and ctx.params["from_start"] is False
    path, state = Path(ctx.params["path"]), Path(ctx.params["state_dir"])
    (mount,) = [m for m in c["volumeMounts"] if path.is_relative_to(m["mountPath"])]
    assert state.is_relative_to(mount["mountPath"]) and not mount.get("readOnly", False)
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert "persistentVolumeClaim" in volumes[mount["name"]]  # (an emptyDir dies with its pod)


def test_k8s_wrapped_job_runs_the_cli_under_otelbridge():
    (wrapped,) = [(n, c) for n, _, c in otelbridge_containers() if (c.get("command") or [])[:1] == ["otelbridge"]]
    argv = wrapped[1]["command"]
    split = argv.index("--")
    ctx = cli.run_command.make_context("otelbridge", argv[1:])
    assert ctx.params["command"] == tuple(argv[split + 1:]) and len(argv) > split + 1


def test_k8s_follow_sidecar_is_marked_until_follow_exists():
    follow_exists = "follow" in cli.SUBCOMMANDS
    sidecars = [(n, doc, c) for n, doc, c in otelbridge_containers()
                if (c.get("args") or [])[:1] == ["follow"] and doc["kind"] == "Job"]
    assert len(sidecars) == 1
    name, doc, c = sidecars[0]
    assert c["restartPolicy"] == "Always"  # a native sidecar (init container)
    marked = "otelbridge/requires" in doc["metadata"].get("annotations", {})
    assert marked != follow_exists, f"{name}: the requires-follow annotation is stale or missing"
    assert ("does not exist yet" in docs_text()) != follow_exists
    # the sidecar's flags are follow's own
    ctx = cli.SUBCOMMANDS["follow"].make_context("follow", list(c["args"][1:]))
    assert ctx.params["grace_s"] == 0 and ctx.params["state_dir"]
    # the agent writes where the sidecar reads
    path = c["args"][1]
    spec = doc["spec"]["template"]["spec"]
    assert any(path in " ".join(k.get("args", [])) for k in spec["containers"])


# ----------------------------------------------------------------------------- redaction

@pytest.fixture(scope="module")
def exported_spans():
    """The spans otelbridge really exports for the example streams: a cbc workflow and a Claude
    Code session (its session span holds the tokens and cost its results gave)."""
    spans = []
    for example in (EXAMPLE_STREAM, EXAMPLES / "claude-code-session.jsonl"):
        with HttpReceiver() as rx:
            proc = run_bridge(["--endpoint", rx.endpoint, "--protocol", "http/protobuf"], example.read_bytes(),
                              env=clean_env())
            assert proc.returncode == 0, proc.stderr
            spans += rx.received.spans()
    assert any("session.turns" in s.attributes and "gen_ai.usage.output_tokens" in s.attributes for s in spans)
    return spans


SECRET_KEYS = ["password", "db.password", "http.request.header.authorization", "api_key", "x-api-key",
               "aws.secret_access_key", "github.token", "auth_token", "refresh_token", "cookie",
               "private_key", "client_secret"]
SECRET_VALUES = ["Bearer abcdefghijklmnop123", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
                 "ghp_" + "a1B2" * 9, "AKIA" + "ABCDEFGHIJKLMNOP",
                 "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"]


def drop_patterns() -> list[re.Pattern]:
    actions = load(AGENT)["processors"]["attributes/drop_secrets"]["actions"]
    assert all(a["action"] == "delete" for a in actions)
    return [re.compile(a["pattern"]) for a in actions]


def blocked_values() -> list[re.Pattern]:
    return [re.compile(p) for p in load(AGENT)["processors"]["redaction"]["blocked_values"]]


def test_secret_key_patterns_spare_every_key_otelbridge_exports(exported_spans):
    keys = {k for s in exported_spans for k in (*s.attributes, *s.resource)}
    assert {"workflow.agent.tokens", "workflow.usage.total_tokens"} <= keys
    patterns = drop_patterns()
    for key in keys:
        assert not any(p.search(key) for p in patterns), key
    for key in SECRET_KEYS:
        assert any(p.search(key) for p in patterns), key


def test_secret_value_patterns_spare_every_value_otelbridge_exports(exported_spans):
    values = [v for s in exported_spans for v in (*s.attributes.values(), *s.resource.values(), s.name)
              if isinstance(v, str)]
    assert values
    patterns = blocked_values()
    for value in values:
        assert not any(p.search(value) for p in patterns), value
    for secret in SECRET_VALUES:
        assert any(p.search(secret) for p in patterns), secret


# ----------------------------------------------------------------------------- metrics and dashboard

def prometheus_metrics() -> dict[str, set[str]]:
    """Prometheus metric names the agent configuration produces → the labels they carry."""
    conn = load(AGENT)["connectors"]
    sm = conn["span_metrics"]
    ns = sm["namespace"].replace(".", "_")
    unit = {"s": "seconds", "ms": "milliseconds"}[sm["histogram"]["unit"]]
    sm_labels = SPAN_METRICS_LABELS | {d["name"].replace(".", "_") for d in sm.get("dimensions", [])}
    out = {f"{ns}_calls_total": sm_labels, f"{ns}_duration_{unit}_bucket": sm_labels | {"le"}}
    for m in conn["signal_to_metrics"]["spans"]:
        assert m["sum"]["monotonic"] is True  # a counter: Prometheus adds _total
        out[m["name"].replace(".", "_") + "_total"] = {a["key"].replace(".", "_") for a in m["attributes"]}
    return out


def test_signal_to_metrics_reads_attributes_otelbridge_exports(exported_spans):
    """Keys a metric needs are on the example's spans of that operation; optional grouping keys
    (with a default_value) are at least keys otelbridge's source sets."""
    source = "\n".join(p.read_text() for p in (ROOT / "otelbridge").rglob("*.py"))
    ops = {s.attributes.get("gen_ai.operation.name") for s in exported_spans}
    checked = 0
    for m in load(AGENT)["connectors"]["signal_to_metrics"]["spans"]:
        read = set(re.findall(r'attributes\["([^"]+)"\]', " ".join(m["conditions"]) + m["sum"]["value"]))
        op = re.search(r'attributes\["gen_ai.operation.name"\] == "(\w+)"', m["conditions"][0]).group(1)
        if op in ops:
            keys = {k for s in exported_spans if s.attributes.get("gen_ai.operation.name") == op
                    for k in s.attributes}
            assert read <= keys, m["name"]
            checked += 1
            for a in m["attributes"]:
                assert a["key"] in keys or ("default_value" in a and f'"{a["key"]}"' in source), a
    assert checked >= 3  # runs, workflow tokens, agent tokens: the example has both span kinds


def test_dashboard_queries_use_metrics_and_labels_the_collector_produces():
    metrics = prometheus_metrics()
    exprs = [t["expr"] for path in DASHBOARDS.glob("*.json")
             for p in json.loads(path.read_text())["panels"] for t in p["targets"]]
    used = set()
    for expr in exprs:
        names = set(re.findall(r"\b([a-z][a-z0-9_]*_(?:total|bucket))\b", expr))
        assert names and names <= set(metrics), expr
        used |= names
        labels = set().union(*(metrics[n] for n in names))
        for group in re.findall(r"by \(([^)]*)\)", expr):
            assert {g.strip() for g in group.split(",")} <= labels, expr
        for label in re.findall(r"\{(\w+)=~?\"", expr):
            assert label in labels, expr
    # every token metric and the RED metrics appear on the dashboard
    assert used == set(metrics)
    for name in metrics:
        if name.endswith("_total"):
            assert name in docs_text()
