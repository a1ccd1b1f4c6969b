"""Table tests of the AutoOpsAgentPolicy rules (stackflow.stack.policies.autoops)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.scope.selector import LabelSelector, label_selector_from_data
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, TYPE_LABEL
from stackflow.stack.policies.autoops import (
    API_KEY_SECRET_TYPE,
    CONFIG_HASH_ANNOTATION,
    MAX_LABEL_VALUE_LENGTH,
    MAX_OBJECT_NAME_LENGTH,
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    AutoOpsPolicy,
    Cluster,
    Selection,
    agent_config_hash,
    api_key_needs_recreation,
    api_key_secret_labels,
    cluster_object_labels,
    cluster_object_names,
    matched_cluster_keys,
    orphaned_api_key_secrets,
    parse_policy,
    policy_status,
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
    ("policy_name", "es_namespace", "es_name"),
    [
        ("p", "ns", "es"),
        ("monitor", "production", "logging-cluster"),
        ("x" * 63, "ns", "es"),
        ("y" * 253, "n" * 63, "e" * 36),
        ("ends-with-dash-" + "z" * 40, "ns", "es"),
    ],
)
def test_object_names_fit(policy_name: str, es_namespace: str, es_name: str) -> None:
    names = cluster_object_names(policy_name, es_namespace, es_name)
    all_names = [
        names.deployment,
        names.config_map,
        names.api_key_secret,
        names.ca_secret,
        names.client_certificate_secret,
    ]
    assert len(set(all_names)) == 5
    for name in all_names:
        assert name.startswith("autoops-")
        assert len(name) <= MAX_OBJECT_NAME_LENGTH
        assert "--" not in name
        assert ".-" not in name
    assert names.config_map == names.deployment + "-config"
    assert names.api_key_secret == names.deployment + "-es-api-key"
    assert names.ca_secret == names.deployment + "-es-ca"
    assert names.client_certificate_secret == names.deployment + "-es-client-cert"


def test_object_names_are_stable_and_distinct() -> None:
    assert cluster_object_names("p", "ns", "es") == cluster_object_names("p", "ns", "es")
    # joining with dashes would make these the same
    assert cluster_object_names("a-b", "c", "d") != cluster_object_names("a", "b-c", "d")
    long_a, long_b = "p" * 60 + "a", "p" * 60 + "b"
    assert cluster_object_names(long_a, "ns", "es") != cluster_object_names(long_b, "ns", "es")
    short = cluster_object_names("p", "ns", "es").deployment
    assert short.startswith("autoops-p-")
    assert len(short) == len("autoops-p-") + 8


def test_labels() -> None:
    labels = api_key_secret_labels(
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    )
    assert labels[TYPE_LABEL] == API_KEY_SECRET_TYPE
    assert labels[POLICY_NAMESPACE_LABEL] == "ops"
    assert labels[POLICY_NAME_LABEL] == "p"
    assert labels[ES_CLUSTER_NAME_LABEL] == "a"
    other = cluster_object_labels(
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    )
    assert other[TYPE_LABEL] != API_KEY_SECRET_TYPE
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
    unlabelled = {TYPE_LABEL: API_KEY_SECRET_TYPE}
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
