"""CI resource attributes (resource.ci_resource_attributes / make_resource)."""

from __future__ import annotations

from otelbridge.resource import ci_resource_attributes, make_resource


def test_gitlab_attributes():
    env = {
        "GITLAB_CI": "true", "CI_PIPELINE_ID": "1001", "CI_PIPELINE_NAME": "nightly",
        "CI_PIPELINE_URL": "https://gitlab.com/g/p/-/pipelines/1001", "CI_JOB_NAME": "agents",
        "CI_JOB_ID": "77", "CI_JOB_URL": "https://gitlab.com/g/p/-/jobs/77",
        "CI_PROJECT_URL": "https://gitlab.com/g/p", "CI_PROJECT_NAME": "p",
        "CI_COMMIT_REF_NAME": "main", "CI_COMMIT_SHA": "abc123", "CI_COMMIT_TAG": "",
        "CI_MERGE_REQUEST_IID": "",
    }
    attrs = ci_resource_attributes(env)
    assert attrs == {
        "cicd.pipeline.name": "nightly", "cicd.pipeline.run.id": "1001",
        "cicd.pipeline.run.url.full": env["CI_PIPELINE_URL"], "cicd.pipeline.task.name": "agents",
        "cicd.pipeline.task.run.id": "77", "cicd.pipeline.task.run.url.full": env["CI_JOB_URL"],
        "vcs.provider.name": "gitlab", "vcs.repository.url.full": env["CI_PROJECT_URL"],
        "vcs.repository.name": "p", "vcs.ref.head.name": "main", "vcs.ref.head.revision": "abc123",
        "vcs.ref.type": "branch",
    }


def test_no_ci_no_attributes():
    assert ci_resource_attributes({"CI": "true"}) == {}


def test_otel_resource_attributes_win(monkeypatch):
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "cicd.pipeline.name=override")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_WORKFLOW": "agents", "GITHUB_RUN_ID": "5",
           "GITHUB_SHA": "\x1b[31mdead"}
    resource = make_resource(env)
    assert resource.attributes["cicd.pipeline.name"] == "override"
    assert resource.attributes["cicd.pipeline.run.id"] == "5"
    assert resource.attributes["vcs.ref.head.revision"] == "dead"  # cleaned


def test_resource_hashes_once_and_equals_the_plain_resource(monkeypatch):
    from opentelemetry.sdk.resources import Resource

    resource = make_resource({})
    plain = Resource(dict(resource.attributes), resource.schema_url)
    assert resource == plain and plain == resource and hash(resource) == hash(plain)
    calls = []
    original = Resource.__hash__
    monkeypatch.setattr(Resource, "__hash__", lambda self: calls.append(1) or original(self))
    fresh = make_resource({})
    grouped = {}
    for _ in range(100):  # as the OTLP encoder groups 100 spans by resource
        grouped.setdefault(fresh, []).append(1)
    assert len(calls) == 1 and len(grouped[fresh]) == 100
