"""Table tests of the AutoOpsAgentPolicy rules (stackflow.stack.policies.autoops)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.scope.selector import LabelSelector, label_selector_from_data
from stackflow.stack.labels import TYPE_LABEL
from stackflow.stack.naming import MAX_NAME_LENGTH
from stackflow.stack.policies.autoops import (
    API_KEY_SECRET_TYPE,
    CONFIG_HASH_ANNOTATION,
    ES_NAME_LABEL,
    ES_NAMESPACE_LABEL,
    MAX_LABEL_VALUE_LENGTH,
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    SECRET_TYPE_LABEL,
    AutoOpsPolicy,
    Cluster,
    ClusterObjectNames,
    Selection,
    access_denied_reason,
    agent_config_hash,
    api_key_name,
    api_key_needs_recreation,
    api_key_secret_labels,
    cluster_hash,
    cluster_object_labels,
    cluster_object_names,
    matched_cluster_keys,
    orphaned_api_key_secrets,
    parse_policy,
    policy_status,
    secret_labels,
    select_clusters,
)


def _selector(data: dict[str, Any]) -> LabelSelector:
    return label_selector_from_data(data)


def _policy(
    resource: dict[str, Any], namespace_selector: dict[str, Any] | None = None
) -> AutoOpsPolicy:
    return AutoOpsPolicy(
        "ops",
        "monitor",
        _selector(resource),
        None if namespace_selector is None else _selector(namespace_selector),
    )


CLUSTERS = [
    Cluster("prod", "a", {"autoops": "on"}, "Ready", "8.15.0"),
    Cluster("prod", "b", {"autoops": "off"}, "Ready", "8.15.0"),
    Cluster("dev", "c", {"autoops": "on"}, "ApplyingChanges", "8.15.0"),
    Cluster("dev", "old", {"autoops": "on"}, "Ready", "7.16.3"),
    Cluster("prod", "v717", {"autoops": "on"}, "Ready", "7.17.0"),
]
NAMESPACES = {"prod": {"env": "prod"}, "dev": {"env": "dev"}}


@pytest.mark.parametrize(
    ("resource", "namespace_selector", "served", "not_ready", "skipped"),
    [
        # resourceSelector only, every namespace
        (
            {"matchLabels": {"autoops": "on"}},
            None,
            ("prod/a", "prod/v717"),
            ("dev/c",),
            ("dev/old",),
        ),
        # namespaceSelector narrows to prod
        (
            {"matchLabels": {"autoops": "on"}},
            {"matchLabels": {"env": "prod"}},
            ("prod/a", "prod/v717"),
            (),
            (),
        ),
        # an empty namespaceSelector matches every namespace (Kubernetes semantics)
        ({"matchLabels": {"autoops": "on"}}, {}, ("prod/a", "prod/v717"), ("dev/c",), ("dev/old",)),
        # expressions
        (
            {"matchExpressions": [{"key": "autoops", "operator": "In", "values": ["off"]}]},
            None,
            ("prod/b",),
            (),
            (),
        ),
        # a namespace selector no namespace matches
        ({"matchLabels": {"autoops": "on"}}, {"matchLabels": {"env": "qa"}}, (), (), ()),
    ],
)
def test_selection(
    resource: dict[str, Any],
    namespace_selector: dict[str, Any] | None,
    served: tuple[str, ...],
    not_ready: tuple[str, ...],
    skipped: tuple[str, ...],
) -> None:
    selection = select_clusters(_policy(resource, namespace_selector), CLUSTERS, NAMESPACES)
    assert selection.served == served
    assert selection.not_ready == not_ready
    assert tuple(selection.skipped) == skipped
    assert set(selection.matched) == set(served) | set(not_ready) | set(skipped)
    assert (
        matched_cluster_keys(_policy(resource, namespace_selector), CLUSTERS, NAMESPACES) == served
    )


def test_namespace_without_known_labels_has_none() -> None:
    policy = _policy({}, {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]})
    clusters = [Cluster("unlisted", "x", {}, "Ready", "8.0.0")]
    assert matched_cluster_keys(policy, clusters, {}) == ("unlisted/x",)


@pytest.mark.parametrize(
    ("version", "skipped"),
    [("7.16.3", True), ("7.17.0", False), ("8.0.0", False), ("6.8.23", True), ("nonsense", True)],
)
def test_minimum_version(version: str, skipped: bool) -> None:
    selection = select_clusters(_policy({}), [Cluster("ns", "es", {}, "Ready", version)], {})
    assert ("ns/es" in selection.skipped) is skipped
    assert ("ns/es" in selection.served) is not skipped


DENIED = "RBAC access denied for service account default"


@pytest.mark.parametrize(
    ("denied", "served", "not_ready", "skipped"),
    [
        ({}, ("prod/a", "prod/v717"), ("dev/c",), {"dev/old": "too old"}),
        # A denied cluster is skipped whatever its phase, before its version is looked at.
        (
            {"prod/a": DENIED, "dev/c": DENIED, "dev/old": DENIED},
            ("prod/v717",),
            (),
            {"dev/c": DENIED, "dev/old": DENIED, "prod/a": DENIED},
        ),
        # A denial of a cluster the policy does not match changes nothing.
        ({"prod/b": DENIED}, ("prod/a", "prod/v717"), ("dev/c",), {"dev/old": "too old"}),
    ],
)
def test_selection_skips_the_clusters_access_is_denied_to(
    denied: dict[str, str],
    served: tuple[str, ...],
    not_ready: tuple[str, ...],
    skipped: dict[str, str],
) -> None:
    policy = _policy({"matchLabels": {"autoops": "on"}})
    selection = select_clusters(policy, CLUSTERS, NAMESPACES, access_denied=denied)
    assert (selection.served, selection.not_ready) == (served, not_ready)
    assert set(selection.skipped) == set(skipped)
    for key, reason in skipped.items():
        if reason == DENIED:
            assert selection.skipped[key] == DENIED
        else:
            assert "not supported by AutoOps" in selection.skipped[key]


@pytest.mark.parametrize(
    ("service_account", "reason"),
    [
        ("", "RBAC access denied for service account default"),
        ("autoops", "RBAC access denied for service account autoops"),
    ],
)
def test_the_access_denied_reason_names_the_service_account(
    service_account: str, reason: str
) -> None:
    policy = parse_policy(
        {
            "metadata": {"namespace": "ops", "name": "p"},
            "spec": {"serviceAccountName": service_account},
        }
    )
    assert policy.service_account_name == service_account
    assert access_denied_reason(policy) == reason


def test_parse_policy() -> None:
    policy = parse_policy(
        {
            "metadata": {"namespace": "ops", "name": "p"},
            "spec": {
                "resourceSelector": {"matchLabels": {"a": "b"}},
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
            },
        }
    )
    assert policy.key == "ops/p"
    assert policy.resource_selector.matches({"a": "b"})
    assert policy.namespace_selector is not None
    assert not policy.namespace_selector.matches({"env": "dev"})
    assert parse_policy({"metadata": {"name": "q"}, "spec": {}}).namespace_selector is None


@pytest.mark.parametrize(
    ("policy_name", "es_namespace", "es_name", "names"),
    [
        # ECK: <policy>-autoops-<suffix>-<HashObject(esNamespace + esName)>
        (
            "pol",
            "ns",
            "es",
            ClusterObjectNames(
                deployment="pol-autoops-deploy-3813183098",
                config_map="pol-autoops-config-3813183098",
                api_key_secret="pol-autoops-apikey-3813183098",
                ca_secret="pol-autoops-ca-3813183098",
                client_certificate_secret="pol-autoops-cc-3813183098",
            ),
        ),
        # The hash is of the plain concatenation, as in ECK ("elastic" + "testing").
        (
            "p",
            "elastic",
            "testing",
            ClusterObjectNames(
                deployment="p-autoops-deploy-4269947480",
                config_map="p-autoops-config-4269947480",
                api_key_secret="p-autoops-apikey-4269947480",
                ca_secret="p-autoops-ca-4269947480",
                client_certificate_secret="p-autoops-cc-4269947480",
            ),
        ),
    ],
)
def test_object_names(
    policy_name: str, es_namespace: str, es_name: str, names: ClusterObjectNames
) -> None:
    assert cluster_object_names(policy_name, es_namespace, es_name) == names


def test_cluster_hash_is_ecks_hash_object() -> None:
    assert cluster_hash("elastic", "testing") == "4269947480"
    # ECK joins without a separator: these two clusters share a hash (and their names).
    assert cluster_hash("a", "bc") == cluster_hash("ab", "c")
    assert cluster_hash("ns", "a") != cluster_hash("ns", "b")


def test_object_names_truncate_an_overlong_policy_name() -> None:
    names = cluster_object_names("y" * 300, "ns", "es")
    assert len(names.deployment) == MAX_NAME_LENGTH
    assert names.deployment.endswith("-autoops-deploy-" + cluster_hash("ns", "es"))


def test_api_key_name() -> None:
    assert (
        api_key_name(policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a")
        == "autoops-ops-p-prod-a"
    )


def test_labels() -> None:
    labels = api_key_secret_labels(
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    )
    assert labels == {
        TYPE_LABEL: "autoops-agent",
        POLICY_NAMESPACE_LABEL: "ops",
        POLICY_NAME_LABEL: "p",
        SECRET_TYPE_LABEL: API_KEY_SECRET_TYPE,
        ES_NAME_LABEL: "a",
        ES_NAMESPACE_LABEL: "prod",
    }
    assert API_KEY_SECRET_TYPE == "api-key"
    other = cluster_object_labels(
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    )
    assert SECRET_TYPE_LABEL not in other
    assert secret_labels(
        "ca", policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    ) == {**other, SECRET_TYPE_LABEL: "ca"}
    long = cluster_object_labels(
        policy_namespace="ops", policy_name="q" * 200, es_namespace="prod", es_name="a"
    )
    assert len(long[POLICY_NAME_LABEL]) <= MAX_LABEL_VALUE_LENGTH
    assert (
        long[POLICY_NAME_LABEL]
        != cluster_object_labels(
            policy_namespace="ops", policy_name="q" * 199, es_namespace="prod", es_name="a"
        )[POLICY_NAME_LABEL]
    )


def test_config_hash() -> None:
    first = agent_config_hash({"a": 1, "b": {"c": 2}}, es_namespace="ns", es_name="es")
    reordered = agent_config_hash({"b": {"c": 2}, "a": 1}, es_namespace="ns", es_name="es")
    assert first == reordered
    assert first != agent_config_hash({"a": 2, "b": {"c": 2}}, es_namespace="ns", es_name="es")
    assert first != agent_config_hash({"a": 1, "b": {"c": 2}}, es_namespace="ns", es_name="other")
    assert agent_config_hash(None, es_namespace="ns", es_name="es") == agent_config_hash(
        {}, es_namespace="ns", es_name="es"
    )


@pytest.mark.parametrize(
    ("secret", "recreate"),
    [
        (None, True),
        ({"metadata": {}}, True),
        ({"metadata": {"annotations": {CONFIG_HASH_ANNOTATION: "old"}}}, True),
        ({"metadata": {"annotations": {CONFIG_HASH_ANNOTATION: "want"}}}, False),
    ],
)
def test_api_key_recreation(secret: dict[str, Any] | None, recreate: bool) -> None:
    assert api_key_needs_recreation(secret, "want") is recreate


def _secret(namespace: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "labels": labels}}


def test_orphaned_api_key_secrets() -> None:
    live = api_key_secret_labels(
        policy_namespace="ops", policy_name="live", es_namespace="prod", es_name="a"
    )
    gone = api_key_secret_labels(
        policy_namespace="ops", policy_name="gone", es_namespace="prod", es_name="a"
    )
    long_live = api_key_secret_labels(
        policy_namespace="ops", policy_name="l" * 100, es_namespace="prod", es_name="a"
    )
    not_api_key = cluster_object_labels(
        policy_namespace="ops", policy_name="gone", es_namespace="prod", es_name="a"
    )
    unlabelled = {SECRET_TYPE_LABEL: API_KEY_SECRET_TYPE}
    secrets = [
        _secret("ops", "s-live", live),
        _secret("ops", "s-gone", gone),
        _secret("ops", "s-long", long_live),
        _secret("ops", "s-other", not_api_key),
        _secret("ops", "s-unlabelled", unlabelled),
        _secret("ops", "s-foreign", {}),
    ]
    policies = [("ops", "live"), ("ops", "l" * 100)]
    assert orphaned_api_key_secrets(secrets, policies) == [("ops", "s-gone")]
    assert orphaned_api_key_secrets(secrets, []) == [
        ("ops", "s-gone"),
        ("ops", "s-live"),
        ("ops", "s-long"),
    ]


@pytest.mark.parametrize(
    ("selection", "agents_ready", "errors", "phase", "resources", "ready"),
    [
        (Selection(), {}, {}, "NoMonitoredResources", 0, 0),
        (Selection(("a/a",), ("a/a",)), {"a/a": True}, {}, "Ready", 1, 1),
        (Selection(("a/a",), ("a/a",)), {"a/a": False}, {}, "AutoOpsAgentsNotReady", 1, 0),
        (
            Selection(("a/a", "b/b"), ("a/a",), ("b/b",)),
            {"a/a": False},
            {},
            "MonitoredResourcesNotReady",
            2,
            0,
        ),
        (
            Selection(("a/a", "b/b"), ("a/a",), ("b/b",)),
            {"a/a": True},
            {"a/a": "api key"},
            "Error",
            2,
            0,
        ),
        (Selection(("a/a",), skipped={"a/a": "too old"}), {}, {}, "Ready", 1, 0),
    ],
)
def test_policy_status(
    selection: Selection,
    agents_ready: dict[str, bool],
    errors: dict[str, str],
    phase: str,
    resources: int,
    ready: int,
) -> None:
    status = policy_status(selection, agents_ready=agents_ready, errors=errors)
    assert status["phase"] == phase
    assert status["resources"] == resources
    assert status["ready"] == ready
    assert status["readyCount"] == f"{ready}/{resources}"


def test_policy_status_details() -> None:
    selection = Selection(("a/a", "b/b"), ("b/b",), skipped={"a/a": "too old"})
    status = policy_status(
        selection, agents_ready={"b/b": True}, errors={"b/b": "boom"}, observed_generation=3
    )
    assert status["details"] == {
        "a/a": {"phase": "Skipped", "message": "too old"},
        "b/b": {"phase": "Error", "error": "boom"},
    }
    assert status["skipped"] == 1
    assert status["errors"] == 1
    assert status["observedGeneration"] == 3
    assert "details" not in policy_status(Selection(), agents_ready={})
