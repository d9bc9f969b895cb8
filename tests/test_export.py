"""CI resource attributes (resource.ci_resource_attributes / make_resource)."""

from __future__ import annotations

import json

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


def _github_env(tmp_path, event_name, payload):
    event = tmp_path / "event.json"
    event.write_bytes(payload if isinstance(payload, bytes) else json.dumps(payload).encode())
    return {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event), "GITHUB_SHA": "f" * 40, "GITHUB_REF": "refs/pull/7/merge",
            "GITHUB_HEAD_REF": "fix/login", "GITHUB_BASE_REF": "main", "GITHUB_REF_TYPE": "branch"}


#: a pull request's event payload as GitHub writes it, cut to what matters and some around it
PULL_REQUEST = {"action": "synchronize", "number": 7,
                "pull_request": {"number": 7, "title": "Fix login",
                                 "head": {"ref": "fix/login", "sha": "a" * 40, "repo": {"id": 1}},
                                 "base": {"ref": "main", "sha": "b" * 40, "repo": {"id": 1}}},
                "repository": {"full_name": "acme/widgets"}}


def test_github_pull_request_names_its_head_commit_not_the_merge_commit(tmp_path):
    for event in ("pull_request", "pull_request_target"):
        attrs = ci_resource_attributes(_github_env(tmp_path, event, PULL_REQUEST))
        assert attrs["vcs.ref.head.revision"] == "a" * 40
        assert attrs["vcs.ref.head.name"] == "fix/login"
        assert attrs["vcs.ref.base.name"] == "main"
        assert attrs["vcs.ref.base.revision"] == "b" * 40
        assert attrs["vcs.ref.base.type"] == "branch"
        assert attrs["vcs.change.id"] == "7"


def test_github_other_events_and_unreadable_payloads_keep_github_sha(tmp_path):
    push = {"ref": "refs/heads/main", "after": "c" * 40, "pull_request": PULL_REQUEST["pull_request"]}
    cases = [("push", push), ("pull_request", b"{not json"), ("pull_request", b"[]"),
             ("pull_request", {"pull_request": {"head": {"sha": 5}}}),
             ("pull_request", {"pull_request": None})]
    for event, payload in cases:
        attrs = ci_resource_attributes(_github_env(tmp_path, event, payload))
        assert attrs["vcs.ref.head.revision"] == "f" * 40, (event, payload)
        assert "vcs.ref.base.revision" not in attrs
    env = _github_env(tmp_path, "pull_request", PULL_REQUEST)
    env["GITHUB_EVENT_PATH"] = str(tmp_path / "missing.json")
    assert ci_resource_attributes(env)["vcs.ref.head.revision"] == "f" * 40


def test_gitlab_merged_results_pipeline_names_the_source_branch_commit():
    env = {"GITLAB_CI": "true", "CI_COMMIT_SHA": "m" * 40, "CI_COMMIT_REF_NAME": "refs/merge-requests/3/merge",
           "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "fix/login", "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": "a" * 40,
           "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_MERGE_REQUEST_DIFF_BASE_SHA": "b" * 40,
           "CI_MERGE_REQUEST_IID": "3"}
    attrs = ci_resource_attributes(env)
    assert (attrs["vcs.ref.head.name"], attrs["vcs.ref.head.revision"]) == ("fix/login", "a" * 40)
    assert (attrs["vcs.ref.base.name"], attrs["vcs.ref.base.revision"]) == ("main", "b" * 40)
    assert attrs["vcs.change.id"] == "3"


def test_a_low_attribute_length_limit_does_not_cut_the_resource(tmp_path):
    """The specification exempts a resource from the attribute limits: with strings capped at
    8 characters, the commit's SHA and the run's URL stay whole (still redacted)."""
    from otelbridge import redact

    previous = redact.install(redact.Redactor.build(max_length=8))
    try:
        env = {**_github_env(tmp_path, "pull_request", PULL_REQUEST), "GITHUB_REPOSITORY": "acme/widgets",
               "GITHUB_RUN_ID": "9753949763", "GITHUB_WORKFLOW": "ghp_" + "a1B2c3D4e5" * 4}
        attrs = make_resource(env).attributes
    finally:
        redact.install(previous)
    assert attrs["vcs.ref.head.revision"] == "a" * 40
    assert attrs["cicd.pipeline.run.url.full"] == "https://github.com/acme/widgets/actions/runs/9753949763"
    assert attrs["cicd.pipeline.name"] == "[REDACTED:github_token]"


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
