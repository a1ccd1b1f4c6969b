"""Table tests of the AutoOpsAgentPolicy rules (stackflow.stack.policies.autoops)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.scope.selector import LabelSelector, label_selector_from_data
from stackflow.stack.labels import ES_CONFIG_HASH_LABEL, TYPE_LABEL, WATCHED_LABEL
from stackflow.stack.naming import MAX_NAME_LENGTH
from stackflow.stack.policies.autoops import (
    API_KEY_SECRET_TYPE,
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
    api_key_hash,
    api_key_metadata,
    api_key_name,
    api_key_plan,
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
    watched_object_labels,
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
    Cluster("dev", "old", {"autoops": "on"}, "Ready", "7.17.3"),
    Cluster("prod", "v9", {"autoops": "on"}, "Ready", "9.1.0"),
]
NAMESPACES = {"prod": {"env": "prod"}, "dev": {"env": "dev"}}


@pytest.mark.parametrize(
    ("resource", "namespace_selector", "served", "not_ready", "skipped"),
    [
        # resourceSelector only, every namespace
        (
            {"matchLabels": {"autoops": "on"}},
            None,
            ("prod/a", "prod/v9"),
            ("dev/c",),
            ("dev/old",),
        ),
        # namespaceSelector narrows to prod
        (
            {"matchLabels": {"autoops": "on"}},
            {"matchLabels": {"env": "prod"}},
            ("prod/a", "prod/v9"),
            (),
            (),
        ),
        # an empty namespaceSelector matches every namespace (Kubernetes semantics)
        ({"matchLabels": {"autoops": "on"}}, {}, ("prod/a", "prod/v9"), ("dev/c",), ("dev/old",)),
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
    ("version", "outcome"),
    [
        # ECK skips its deprecated range, 7.0.0 to 7.99.99
        ("7.17.0", "ES cluster is in deprecated version 7.17.0"),
        ("7.0.0", "ES cluster is in deprecated version 7.0.0"),
        ("8.0.0", None),
        ("9.2.1", None),
        # a version that does not parse is the cluster's error, not a skip
        ("nonsense", "error"),
    ],
)
def test_deprecated_versions(version: str, outcome: str | None) -> None:
    selection = select_clusters(_policy({}), [Cluster("ns", "es", {}, "Ready", version)], {})
    if outcome == "error":
        assert selection.errors["ns/es"].startswith("Failed trying to parse cluster version")
        assert not selection.skipped
        assert not selection.served
    elif outcome is None:
        assert selection.served == ("ns/es",)
    else:
        assert selection.skipped == {"ns/es": outcome}
        assert not selection.served


DENIED = "RBAC access denied for service account default"


@pytest.mark.parametrize(
    ("denied", "served", "not_ready", "skipped"),
    [
        ({}, ("prod/a", "prod/v9"), ("dev/c",), {"dev/old": "deprecated"}),
        # A denied cluster is skipped whatever its phase, before its version is looked at.
        (
            {"prod/a": DENIED, "dev/c": DENIED, "dev/old": DENIED},
            ("prod/v9",),
            (),
            {"dev/c": DENIED, "dev/old": DENIED, "prod/a": DENIED},
        ),
        # A denial of a cluster the policy does not match changes nothing.
        ({"prod/b": DENIED}, ("prod/a", "prod/v9"), ("dev/c",), {"dev/old": "deprecated"}),
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
            assert selection.skipped[key].startswith("ES cluster is in deprecated version")


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
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a", key_hash="h"
    )
    assert labels == {
        TYPE_LABEL: "autoops-agent",
        POLICY_NAMESPACE_LABEL: "ops",
        POLICY_NAME_LABEL: "p",
        SECRET_TYPE_LABEL: API_KEY_SECRET_TYPE,
        ES_NAME_LABEL: "a",
        ES_NAMESPACE_LABEL: "prod",
        WATCHED_LABEL: "true",
        ES_CONFIG_HASH_LABEL: "h",
    }
    assert API_KEY_SECRET_TYPE == "api-key"
    other = cluster_object_labels(
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    )
    assert SECRET_TYPE_LABEL not in other
    assert WATCHED_LABEL not in other
    watched = watched_object_labels(
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    )
    assert watched == {**other, WATCHED_LABEL: "true"}
    assert secret_labels(
        "ca", policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
    ) == {**watched, SECRET_TYPE_LABEL: "ca"}
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


def test_api_key_metadata() -> None:
    assert api_key_metadata(
        policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a", key_hash="h"
    ) == {
        "common.k8s.elastic.co/type": "autoops-agent",
        "elasticsearch.k8s.elastic.co/config-hash": "h",
        "elasticsearch.k8s.elastic.co/name": "a",
        "elasticsearch.k8s.elastic.co/namespace": "prod",
        "elasticsearch.k8s.elastic.co/managed-by": "eck",
        "autoops.k8s.elastic.co/policy-name": "p",
        "autoops.k8s.elastic.co/policy-namespace": "ops",
    }
    assert api_key_hash() == api_key_hash()
    assert api_key_hash() != api_key_hash({"other": {"cluster": ["monitor"]}})


NAME = "autoops-ops-p-prod-a"
OURS = {
    "elasticsearch.k8s.elastic.co/managed-by": "eck",
    "elasticsearch.k8s.elastic.co/config-hash": "h",
}
STORED = {"metadata": {}, "data": {"api_key": "ZW5jb2RlZA=="}}


@pytest.mark.parametrize(
    ("active", "secret", "create", "invalidate"),
    [
        # no key of that name: create (nothing to invalidate)
        ([], STORED, True, ()),
        ([{"id": "x", "name": "autoops-ops-p-prod-ab", "metadata": OURS}], STORED, True, ()),
        # ours, same hash, Secret holds a key: keep
        ([{"id": "k1", "name": NAME, "metadata": OURS}], STORED, False, ()),
        # made for other role descriptors, or not ECK's: replace
        (
            [{"id": "k1", "name": NAME, "metadata": {**OURS, ES_CONFIG_HASH_LABEL: "old"}}],
            STORED,
            True,
            ("k1",),
        ),
        ([{"id": "k1", "name": NAME, "metadata": {}}], STORED, True, ("k1",)),
        # the Secret lost, or without a key: replace
        ([{"id": "k1", "name": NAME, "metadata": OURS}], None, True, ("k1",)),
        ([{"id": "k1", "name": NAME, "metadata": OURS}], {"data": {}}, True, ("k1",)),
    ],
)
def test_api_key_plan(
    active: list[dict[str, Any]],
    secret: dict[str, Any] | None,
    create: bool,
    invalidate: tuple[str, ...],
) -> None:
    plan = api_key_plan(active, name=NAME, key_hash="h", secret=secret)
    assert (plan.create, plan.invalidate) == (create, invalidate)


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
        # ECK counts only the accessible clusters: a skipped one is no resource
        (Selection(("a/a",), skipped={"a/a": "too old"}), {}, {}, "NoMonitoredResources", 0, 0),
        (
            Selection(("a/a", "b/b"), ("b/b",), skipped={"a/a": "too old"}),
            {"b/b": True},
            {},
            "Ready",
            1,
            1,
        ),
        # an unparsable version is an error and no resource either
        (
            Selection(("a/a", "b/b"), ("b/b",), errors={"a/a": "bad version"}),
            {"b/b": True},
            {},
            "Error",
            1,
            1,
        ),
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
