"""The StackConfigPolicy controller row: its gate and flip strategy, the mappers from Secrets
and references to policies, the targeted resources' Secret watches, and the license notice of
an enterprise-only kind."""

from __future__ import annotations

from typing import Any

import pytest

from activities.generic import license_notice
from stackflow.controllers import CONTROLLERS, FlipStrategy, Gate
from stackflow.controllers.stackconfigpolicy import (
    policy_references,
    policy_secret_owners,
    policy_targets,
)
from stackflow.models.keys import NamespacedName
from stackflow.stack.policies.stack_config.merge import merge_elasticsearch, merge_kibana
from stackflow.stack.policies.stack_config.owners import SOFT_OWNER_REFS_ANNOTATION
from stackflow.stack.policies.stack_config.secrets import (
    es_policy_config_secret,
    kb_policy_config_secret,
)
from tests.unit.stack_config_policies import OPERATOR, policy, policy_obj

# (secret metadata, owners the controller row maps it to)
SECRET_OWNERS: list[tuple[dict[str, Any], list[NamespacedName]]] = [
    ({}, []),
    (
        {
            "labels": {
                "eck.k8s.elastic.co/owner-kind": "Kibana",
                "eck.k8s.elastic.co/owner-name": "kb",
            }
        },
        [],
    ),
    (
        {
            "labels": {
                "eck.k8s.elastic.co/owner-kind": "StackConfigPolicy",
                "eck.k8s.elastic.co/owner-namespace": "ns",
                "eck.k8s.elastic.co/owner-name": "p",
            }
        },
        [NamespacedName("ns", "p")],
    ),
    (
        {
            "labels": {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"},
            "annotations": {SOFT_OWNER_REFS_ANNOTATION: '["elastic-system/q", "ns/p"]'},
        },
        [NamespacedName("elastic-system", "q"), NamespacedName("ns", "p")],
    ),
    (
        {
            "labels": {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"},
            "annotations": {SOFT_OWNER_REFS_ANNOTATION: "not json"},
        },
        [],
    ),
]


@pytest.mark.parametrize(("metadata", "owners"), SECRET_OWNERS)
def test_the_row_maps_policy_secrets_to_their_policies(
    metadata: dict[str, Any], owners: list[NamespacedName]
) -> None:
    secret = {"metadata": {"namespace": "x", "name": "s", **metadata}}
    assert list(policy_secret_owners(secret)) == owners


def test_the_row_references_the_resources_its_status_lists() -> None:
    obj = {
        "status": {
            "details": {
                "elasticsearch": {"a/es": {"phase": "Ready"}, "bad": {}},
                "kibana": {"b/kb": {"phase": "ApplyingChanges"}},
            }
        }
    }
    assert [(key.kind, key.namespace, key.name) for key in policy_targets(obj)] == [
        ("Elasticsearch", "a", "es"),
        ("Kibana", "b", "kb"),
    ]
    assert policy_targets({}) == []


def test_the_row() -> None:
    row = CONTROLLERS.named("stackconfigpolicy")
    assert row.gate is Gate.ENTERPRISE
    assert row.flip is FlipStrategy.CONTROLLER
    assert row.primary.kind == "StackConfigPolicy"
    assert {kind.kind for kind in row.reference_kinds} == {
        "Elasticsearch",
        "Kibana",
        "Secret",
        "ConfigMap",
    }


def test_policy_references_add_its_secure_settings_secrets_in_its_namespace() -> None:
    obj = {
        "metadata": {"namespace": "elastic-system", "name": "p"},
        "spec": {
            "secureSettings": [{"secretName": "legacy"}],
            "elasticsearch": {"secureSettings": [{"secretName": "es-s"}, {"secretName": "legacy"}]},
            "kibana": {"secureSettings": [{"secretName": "kb-s"}]},
        },
        "status": {"details": {"elasticsearch": {"a/es": {"phase": "Ready"}}}},
    }
    assert [(key.kind, key.namespace, key.name) for key in policy_references(obj)] == [
        ("Elasticsearch", "a", "es"),
        ("Secret", "elastic-system", "es-s"),
        ("Secret", "elastic-system", "kb-s"),
        ("Secret", "elastic-system", "legacy"),
    ]


def test_policy_references_add_its_secret_mount_secrets_in_its_namespace() -> None:
    obj = {
        "metadata": {"namespace": "elastic-system", "name": "p"},
        "spec": {"elasticsearch": {"secretMounts": [{"secretName": "gcs", "mountPath": "/g"}]}},
    }
    assert [(key.kind, key.namespace, key.name) for key in policy_references(obj)] == [
        ("Secret", "elastic-system", "gcs"),
    ]


def test_the_row_references_the_variables_sources() -> None:
    obj = policy_obj("team-a", "p", {"variablesFrom": [{"kind": "Secret", "name": "creds"}]})
    assert [(key.kind, key.namespace, key.name) for key in policy_targets(obj)] == [
        ("Secret", "team-a", "creds")
    ]


@pytest.mark.parametrize(
    ("controller", "secret", "owner"),
    [
        pytest.param(
            "elasticsearch",
            es_policy_config_secret(
                None,
                namespace="team-a",
                es_name="prod",
                merged=merge_elasticsearch([policy(OPERATOR, "p", elasticsearch={"config": {}})]),
            ),
            NamespacedName("team-a", "prod"),
            id="es-policy-config",
        ),
        pytest.param(
            "kibana",
            kb_policy_config_secret(
                None,
                namespace="team-a",
                kb_name="kb",
                merged=merge_kibana([policy(OPERATOR, "p", kibana={"config": {"a": 1}})]),
            ),
            NamespacedName("team-a", "kb"),
            id="kb-policy-config",
        ),
    ],
)
def test_the_targeted_resource_wakes_on_its_policy_config_secret(
    controller: str, secret: dict[str, Any], owner: NamespacedName
) -> None:
    """The policy-config Secrets carry the cluster-name / Kibana name label, so the Elasticsearch
    and Kibana rows' Secret watches map a change of one to the resource that reads it."""
    row = CONTROLLERS.named(controller)
    labels = secret["metadata"]["labels"]
    watches = [
        watch
        for watch in row.children
        if watch.kind.kind == "Secret" and str(watch.label_selector) in labels
    ]
    assert watches
    assert all(watch.owners(secret) == (owner,) for watch in watches)


# (gate, kind, expected reason, whether the operator Pod gets the event too)
NOTICES: list[tuple[Gate, str, str, bool]] = [
    (Gate.ENTERPRISE, "StackConfigPolicy", "ReconciliationError", False),
    (Gate.DYNAMIC_SCOPE, "Elasticsearch", "InvalidLicense", True),
]


@pytest.mark.parametrize(("gate", "kind", "reason", "on_pod"), NOTICES)
def test_license_notice(gate: Gate, kind: str, reason: str, on_pod: bool) -> None:
    got_reason, message, got_on_pod = license_notice(gate, kind)
    assert (got_reason, got_on_pod) == (reason, on_pod)
    if gate is Gate.ENTERPRISE:
        assert message == f"{kind} is an enterprise feature. Enterprise features are disabled"
