"""The run's OpenTelemetry resource: ``service.name``, the distro, and the ``cicd.*`` / ``vcs.*``
semantic-convention attributes of the CI system we run in (GitHub Actions, GitLab CI), read from
its environment; ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` win over them. Every
string of it is redacted, as a span's strings are."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping

import msgspec
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, OTELResourceDetector, Resource

from . import __version__, redact
from .messages import silenced


#: The most of a GitHub event payload read for a pull request's commits: a pull request's is a
#: few tens of KiB; a larger file is not read.
_EVENT_MAX_BYTES = 4 << 20


class _Commit(msgspec.Struct):
    sha: str | None = None


class _PullRequest(msgspec.Struct):
    head: _Commit | None = None
    base: _Commit | None = None


class _Event(msgspec.Struct):
    pull_request: _PullRequest | None = None


def _pull_request(env: Mapping[str, str]) -> _PullRequest | None:
    """The ``pull_request`` of the event that started the run (``GITHUB_EVENT_PATH``, a JSON
    file), whose ``head.sha`` is the pull request's last commit: ``GITHUB_SHA`` is then the
    merge commit GitHub made (``pull_request``) or the base branch's (``pull_request_target``).
    ``None`` for other events, and when the file cannot be read or is not such a payload."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path or not env.get("GITHUB_EVENT_NAME", "").startswith("pull_request"):
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read(_EVENT_MAX_BYTES + 1)
        if len(data) > _EVENT_MAX_BYTES:
            return None
        return msgspec.json.decode(data, type=_Event).pull_request
    except (OSError, msgspec.DecodeError):  # (ValidationError is a DecodeError)
        return None


def _github(env: Mapping[str, str]) -> dict[str, str | None]:
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    repo = env.get("GITHUB_REPOSITORY")
    run_id = env.get("GITHUB_RUN_ID")
    run_url = None
    if repo and run_id:
        run_url = f"{server}/{repo}/actions/runs/{run_id}"
        if env.get("GITHUB_RUN_ATTEMPT"):
            run_url += f"/attempts/{env['GITHUB_RUN_ATTEMPT']}"
    ref = env.get("GITHUB_REF", "")
    change = ref.split("/")[2] if ref.startswith("refs/pull/") and ref.count("/") >= 3 else None
    pull = _pull_request(env)
    head = pull.head.sha if pull and pull.head else None
    base = pull.base.sha if pull and pull.base else None
    return {
        "cicd.pipeline.name": env.get("GITHUB_WORKFLOW"),
        "cicd.pipeline.run.id": run_id,
        "cicd.pipeline.run.url.full": run_url,
        "cicd.pipeline.task.name": env.get("GITHUB_JOB"),
        "cicd.worker.name": env.get("RUNNER_NAME"),
        "vcs.provider.name": "github",
        "vcs.repository.url.full": f"{server}/{repo}" if repo else None,
        "vcs.repository.name": repo.rsplit("/", 1)[-1] if repo else None,
        "vcs.ref.head.name": env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME"),
        "vcs.ref.head.revision": head or env.get("GITHUB_SHA"),
        "vcs.ref.type": env.get("GITHUB_REF_TYPE"),
        "vcs.ref.base.name": env.get("GITHUB_BASE_REF"),
        "vcs.ref.base.revision": base,
        "vcs.ref.base.type": "branch" if env.get("GITHUB_BASE_REF") else None,
        "vcs.change.id": change,
    }


def _gitlab(env: Mapping[str, str]) -> dict[str, str | None]:
    return {
        "cicd.pipeline.name": env.get("CI_PIPELINE_NAME"),
        "cicd.pipeline.run.id": env.get("CI_PIPELINE_ID"),
        "cicd.pipeline.run.url.full": env.get("CI_PIPELINE_URL"),
        "cicd.pipeline.task.name": env.get("CI_JOB_NAME"),
        "cicd.pipeline.task.run.id": env.get("CI_JOB_ID"),
        "cicd.pipeline.task.run.url.full": env.get("CI_JOB_URL"),
        "cicd.worker.id": env.get("CI_RUNNER_ID"),
        "cicd.worker.name": env.get("CI_RUNNER_DESCRIPTION"),
        "vcs.provider.name": "gitlab",
        "vcs.repository.url.full": env.get("CI_PROJECT_URL"),
        "vcs.repository.name": env.get("CI_PROJECT_NAME"),
        "vcs.ref.head.name": env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME") or env.get("CI_COMMIT_REF_NAME"),
        # (a merged results pipeline runs on a merge commit: the source branch's is named apart)
        "vcs.ref.head.revision": env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or env.get("CI_COMMIT_SHA"),
        "vcs.ref.type": "tag" if env.get("CI_COMMIT_TAG") else "branch",
        "vcs.ref.base.name": env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"),
        "vcs.ref.base.revision": env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA"),
        "vcs.ref.base.type": "branch" if env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME") else None,
        "vcs.change.id": env.get("CI_MERGE_REQUEST_IID"),
    }


def ci_resource_attributes(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``cicd.*`` / ``vcs.*`` resource attributes (OpenTelemetry semantic conventions,
    "CICD" and "VCS" resources) of the CI system we run in, from its variables:

    * GitHub Actions (``GITHUB_ACTIONS=true``): ``GITHUB_WORKFLOW``, ``GITHUB_RUN_ID``,
      ``GITHUB_RUN_ATTEMPT``, ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_JOB``,
      ``RUNNER_NAME``, ``GITHUB_HEAD_REF``/``GITHUB_REF_NAME``, ``GITHUB_REF_TYPE``, ``GITHUB_SHA``
      (a pull request's event: its head and base commits from ``GITHUB_EVENT_PATH``),
      ``GITHUB_BASE_REF``, ``GITHUB_REF`` (``refs/pull/N/merge`` → ``vcs.change.id``);
    * GitLab CI (``GITLAB_CI=true``): ``CI_PIPELINE_NAME``, ``CI_PIPELINE_ID``, ``CI_PIPELINE_URL``,
      ``CI_JOB_NAME``, ``CI_JOB_ID``, ``CI_JOB_URL``, ``CI_RUNNER_ID``, ``CI_RUNNER_DESCRIPTION``,
      ``CI_PROJECT_URL``, ``CI_PROJECT_NAME``, ``CI_MERGE_REQUEST_SOURCE_BRANCH_NAME``/
      ``CI_COMMIT_REF_NAME``, ``CI_MERGE_REQUEST_SOURCE_BRANCH_SHA``/``CI_COMMIT_SHA``,
      ``CI_COMMIT_TAG``, ``CI_MERGE_REQUEST_IID``, ``CI_MERGE_REQUEST_TARGET_BRANCH_NAME``,
      ``CI_MERGE_REQUEST_DIFF_BASE_SHA``.

    Empty and missing values are left out; the values as the variables hold them
    (:func:`make_resource` redacts every string of the resource, and cuts none: OpenTelemetry's
    specification exempts a resource from the attribute limits, and a commit's SHA cut short
    names none). ``{}`` elsewhere.
    """
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") == "true":
        found = _github(env)
    elif env.get("GITLAB_CI") == "true":
        found = _gitlab(env)
    else:
        return {}
    return {k: v for k, v in found.items() if v}


class HashOnceResource(Resource):
    """A ``Resource`` that computes its hash once. The SDK's OTLP encoder groups spans by
    resource, hashing the resource of every span it encodes, and ``Resource.__hash__``
    JSON-encodes all its attributes each time (~3.6 µs a span); a resource's attributes are
    immutable, so the first hash holds. Equality is ``Resource``'s."""

    _hash: int | None = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = super().__hash__()
        return self._hash


#: ``service.instance.id`` of ``replay``: one instance, so that a recording replayed again sends
#: the same spans, resource included (a UUID v5, as the semantic conventions suggest for an id
#: that must be the same each time).
REPLAY_INSTANCE_ID = str(uuid.uuid5(uuid.UUID("4d63009a-8d0f-11ee-aad7-4c796ed8e320"), "otelbridge replay"))


#: ``service.name`` when neither ``OTEL_SERVICE_NAME`` nor ``OTEL_RESOURCE_ATTRIBUTES`` names one
DEFAULT_SERVICE = "otelbridge"


def named_service(resource: Resource) -> str | None:
    """The service name the run was given (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
    as :func:`make_resource` made it: redacted); ``None`` for :data:`DEFAULT_SERVICE`."""
    name = resource.attributes.get(SERVICE_NAME)
    return str(name) if name and name != DEFAULT_SERVICE else None


def make_resource(env: Mapping[str, str] | None = None, instance_id: str | None = None) -> Resource:
    """``Resource.create`` (applies ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``) with
    ``service.name = otelbridge`` when neither names a service, and the CI attributes of
    :func:`ci_resource_attributes` (``OTEL_RESOURCE_ATTRIBUTES`` wins over them); a
    :class:`HashOnceResource`. ``service.instance.id`` is ``instance_id`` when given (else the
    SDK's random UUID), unless ``OTEL_RESOURCE_ATTRIBUTES`` sets it."""
    # the SDK warns about each item of OTEL_RESOURCE_ATTRIBUTES it skips, quoting it, at each
    # read: said once at start instead (environment.check_resource_attributes)
    with silenced("opentelemetry.sdk.resources", "opentelemetry.attributes"):
        resource = Resource.create({"telemetry.distro.name": "otelbridge",
                                    "telemetry.distro.version": __version__,
                                    **({SERVICE_INSTANCE_ID: instance_id} if instance_id else {}),
                                    **ci_resource_attributes(env)})
        resource = resource.merge(OTELResourceDetector().detect())
    name = resource.attributes.get(SERVICE_NAME)
    if not name or str(name).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE}))
    # bytes of the environment that are not UTF-8 (Python keeps them as lone surrogates) would
    # fail the encoding of every export's resource: shown as U+FFFD, as a decoder would. What
    # was set by hand (OTEL_RESOURCE_ATTRIBUTES, a detector's) may hold what CI put in a
    # variable, a URL with its job token: every string redacted as a span's are, not capped
    safe = redact.current()
    attributes = {_safe(k, safe): _value(k, v, safe) for k, v in resource.attributes.items()}
    return HashOnceResource(attributes, resource.schema_url)


def _utf8(value: object) -> object:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return value


def _safe(value: object, safe: redact.Redactor) -> object:
    return safe.scrub(_utf8(value)) if isinstance(value, str) else value


def _value(key: str, value: object, safe: redact.Redactor) -> object:
    """``value`` redacted, read as ``key=value`` as it was set (a key that names a secret,
    ``db.password=x``, hides its value whatever the value looks like)."""
    if not isinstance(value, str):
        return value
    pair, head = safe.scrub(f"{_utf8(key)}={_utf8(value)}"), f"{_utf8(key)}="
    return pair[len(head):] if pair.startswith(head) and "[REDACTED:" in pair else _safe(value, safe)
