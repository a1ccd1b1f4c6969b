"""The garbage sweep's pure decisions: which workflows to complete, which Secrets are orphans."""

from __future__ import annotations

from typing import Any

import pytest

from activities.garbage import (
    OWNER_REFS_ANNOTATION,
    RunningWorkflow,
    SoftOwner,
    orphaned_secrets,
    resource_of_workflow,
    soft_owner_of,
    workflows_to_complete,
)
from stackflow.models.garbage import GarbageSweepResult
from stackflow.stack.labels import soft_owner_labels
from workflows.sweep import sweep_details

CONTROLLERS = ("elasticsearch", "kibana", "kb-es")
MANAGED_KINDS = ("Elasticsearch", "Kibana")


@pytest.mark.parametrize(
    ("workflow_id", "expected"),
    [
        ("elasticsearch/ns1/a", ("elasticsearch", "ns1", "a")),
        ("kb-es/team-a/kb", ("kb-es", "team-a", "kb")),
        # A controller this process does not run: not its to judge.
        ("beat/ns1/a", None),
        # Not a resource workflow id at all.
        ("flip/ns1/12", None),
        ("garbage-sweep-2026-12-03T14:00:00Z", None),
        ("elasticsearch/ns1", None),
        ("elasticsearch//a", None),
        ("elasticsearch/ns1/a/extra", None),
    ],
)
def test_resource_of_workflow(workflow_id: str, expected: tuple[str, str, str] | None) -> None:
    assert resource_of_workflow(workflow_id, CONTROLLERS) == expected


@pytest.mark.parametrize(
    ("running", "gone", "expected"),
    [
        ("nothing runs", set(), ()),
        ("resource exists", set(), ()),
        ("resource gone", {"elasticsearch/ns1/a"}, ("elasticsearch/ns1/a",)),
        ("gone while out of scope", {"elasticsearch/ns1/b"}, ("elasticsearch/ns1/b",)),
        ("already finishing", {"elasticsearch/ns1/c"}, ()),
        (
            "several, sorted",
            {"kibana/ns2/kb", "elasticsearch/ns1/a"},
            ("elasticsearch/ns1/a", "kibana/ns2/kb"),
        ),
    ],
)
def test_workflows_to_complete(running: str, gone: set[str], expected: tuple[str, ...]) -> None:
    workflows = [
        RunningWorkflow("elasticsearch/ns1/a", "Ready"),
        RunningWorkflow("elasticsearch/ns1/b", "OutOfScope"),
        RunningWorkflow("elasticsearch/ns1/c", "Deleted"),
        RunningWorkflow("kibana/ns2/kb", None),
    ]
    listed = [] if running == "nothing runs" else workflows
    assert workflows_to_complete(listed, gone=gone) == expected


def secret(
    name: str,
    namespace: str = "ns1",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if annotations:
        metadata["annotations"] = annotations
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-03T14:00:00Z"
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata}


ES_A = soft_owner_labels(namespace="ns1", name="a", kind="Elasticsearch")


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (secret("a-es-elastic-user", labels=ES_A), SoftOwner("Elasticsearch", "ns1", "a")),
        (
            secret(
                "kb-kb-es-ca",
                "ns2",
                labels=soft_owner_labels(namespace="ns1", name="kb", kind="Kibana"),
            ),
            SoftOwner("Kibana", "ns1", "kb"),
        ),
        (secret("plain"), None),
        (secret("partial", labels={"eck.k8s.elastic.co/owner-kind": "Elasticsearch"}), None),
        (
            secret(
                "policy-copy",
                labels={"eck.k8s.elastic.co/owner-kind": "Elasticsearch"},
                annotations={OWNER_REFS_ANNOTATION: '["ns1/a","ns2/b"]'},
            ),
            None,
        ),
        (
            secret("several", labels=ES_A, annotations={OWNER_REFS_ANNOTATION: '["ns1/a"]'}),
            None,
        ),
        (
            secret(
                "scp",
                labels=soft_owner_labels(namespace="ns1", name="p", kind="StackConfigPolicy"),
            ),
            None,
        ),
        (secret("going", labels=ES_A, deleting=True), None),
    ],
    ids=lambda value: value["metadata"]["name"] if isinstance(value, dict) else None,
)
def test_soft_owner_of(obj: dict[str, Any], expected: SoftOwner | None) -> None:
    assert soft_owner_of(obj, MANAGED_KINDS) == expected


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        ({SoftOwner("Elasticsearch", "ns1", "a"), SoftOwner("Kibana", "ns1", "kb")}, ()),
        (
            {SoftOwner("Kibana", "ns1", "kb")},
            (("ns1", "a-es-elastic-user"), ("ns1", "a-es-http-certs-public")),
        ),
        (
            set(),
            (
                ("ns1", "a-es-elastic-user"),
                ("ns1", "a-es-http-certs-public"),
                ("ns2", "kb-kb-es-ca"),
            ),
        ),
        # Same name, another kind: an Elasticsearch "kb" does not own the Kibana's Secret.
        (
            {SoftOwner("Elasticsearch", "ns1", "kb"), SoftOwner("Elasticsearch", "ns1", "a")},
            (("ns2", "kb-kb-es-ca"),),
        ),
    ],
)
def test_orphaned_secrets(existing: set[SoftOwner], expected: tuple[tuple[str, str], ...]) -> None:
    secrets = [
        secret("a-es-elastic-user", labels=ES_A),
        secret("a-es-http-certs-public", labels=ES_A),
        secret(
            "kb-kb-es-ca",
            "ns2",
            labels=soft_owner_labels(namespace="ns1", name="kb", kind="Kibana"),
        ),
        # Never orphans, whatever exists: not the sweep's to judge.
        secret("plain"),
        secret(
            "scp", labels=soft_owner_labels(namespace="ns1", name="p", kind="StackConfigPolicy")
        ),
        secret("going", labels=ES_A, deleting=True),
    ]
    assert (
        orphaned_secrets(secrets, managed_kinds=MANAGED_KINDS, existing_owners=existing) == expected
    )


def test_sweep_details_list_what_was_collected() -> None:
    details = sweep_details(
        GarbageSweepResult(workflows=("elasticsearch/ns1/a",), secrets=("Secret ns1/x",))
    )
    assert details.splitlines() == [
        "* workflows told Deleted: 1",
        "  * elasticsearch/ns1/a",
        "* orphaned Secrets deleted: 1",
        "  * Secret ns1/x",
    ]
