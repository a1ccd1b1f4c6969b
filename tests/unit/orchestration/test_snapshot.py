"""The snapshots: role semantics (generic ``data`` holds every tier), Pod names, health activity,
the cluster view's lookups, and reading Kubernetes objects into snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.elasticsearch.config import DEFAULT_ROLES
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    AllocationSettings,
    ClusterHealth,
    ClusterNode,
    ClusterView,
    ExpectedStatefulSet,
    NodeShutdown,
    PodState,
    Shard,
    StatefulSetState,
    can_contain_data,
    expected_master_names,
    expected_statefulsets,
    has_role,
    pod_state_from_manifest,
    split_pod_name,
    statefulset_state_from_manifest,
)
from stackflow.stack.labels import ES_STATEFULSET_NAME_LABEL, ES_VERSION_LABEL, node_role_label
from tests.unit.orchestration.fixtures import roles


@pytest.mark.parametrize(
    ("node_roles", "role", "expected"),
    [
        pytest.param(roles("data"), "data_hot", True, id="data holds hot"),
        pytest.param(roles("data"), "data_frozen", True, id="data holds frozen"),
        pytest.param(roles("data_cold"), "data_cold", True, id="a tier holds itself"),
        pytest.param(roles("data_cold"), "data_hot", False, id="cold is not hot"),
        pytest.param(roles("data_cold"), "data", False, id="a tier is not generic data"),
        pytest.param(roles("master"), "master", True, id="master"),
        pytest.param(roles("data"), "master", False, id="data is not master"),
        pytest.param(roles("data"), "ingest", False, id="data is not ingest"),
    ],
)
def test_has_role(node_roles: frozenset[str], role: str, expected: bool) -> None:
    assert has_role(node_roles, role) is expected


@pytest.mark.parametrize(
    ("node_roles", "expected"),
    [
        pytest.param(roles("data"), True, id="data"),
        pytest.param(roles("data_frozen"), True, id="frozen"),
        pytest.param(roles("data_content"), True, id="content"),
        pytest.param(roles("master"), False, id="master only"),
        pytest.param(roles("ingest", "ml"), False, id="ingest and ml"),
        pytest.param(DEFAULT_ROLES, True, id="default roles"),
    ],
)
def test_can_contain_data(node_roles: frozenset[str], expected: bool) -> None:
    assert can_contain_data(node_roles) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("es-es-default-0", ("es-es-default", 0), id="ECK name"),
        pytest.param("masters-12", ("masters", 12), id="two digits"),
        pytest.param("a-b-c-3", ("a-b-c", 3), id="dashes in the StatefulSet"),
    ],
)
def test_split_pod_name(name: str, expected: tuple[str, int]) -> None:
    assert split_pod_name(name) == expected


@pytest.mark.parametrize("name", ["masters", "masters-x", "-"])
def test_split_pod_name_refuses_names_without_ordinal(name: str) -> None:
    with pytest.raises(ValueError, match="ordinal"):
        split_pod_name(name)


@pytest.mark.parametrize(
    ("health", "expected"),
    [
        pytest.param(ClusterHealth("green"), False, id="quiet"),
        pytest.param(ClusterHealth("yellow", unassigned_shards=3), False, id="unassigned only"),
        pytest.param(ClusterHealth("green", relocating_shards=1), True, id="relocating"),
        pytest.param(ClusterHealth("yellow", initializing_shards=2), True, id="initializing"),
        pytest.param(ClusterHealth("yellow", in_flight_fetch=1), True, id="in-flight fetch"),
        pytest.param(ClusterHealth("green", timed_out=True), True, id="timed out"),
    ],
)
def test_shard_activity(health: ClusterHealth, expected: bool) -> None:
    assert health.has_shard_activity() is expected


@pytest.mark.parametrize(
    ("enable", "expected"),
    [("", True), ("all", True), ("primaries", False), ("none", False), ("new_primaries", False)],
)
def test_replica_allocation_enabled(enable: str, expected: bool) -> None:
    assert AllocationSettings(enable=enable).replicas_enabled is expected


def test_cluster_view_lookups() -> None:
    cluster = ClusterView(
        nodes=(ClusterNode("a-0", "id-a"), ClusterNode("b-0", "id-b")),
        shards=(Shard("i", "0", True, "STARTED", "a-0"), Shard("i", "0", False, "UNASSIGNED")),
        shutdowns=(NodeShutdown("id-a", "RESTART", "COMPLETE"),),
    )
    assert cluster.node_names == {"a-0", "b-0"}
    assert (cluster.node_id("b-0"), cluster.node_id("c-0")) == ("id-b", None)
    assert cluster.shutdown_of("id-a") == NodeShutdown("id-a", "RESTART", "COMPLETE")
    assert cluster.shutdown_of("id-b") is None
    assert cluster.shards_on("a-0") == (Shard("i", "0", True, "STARTED", "a-0"),)


@pytest.mark.parametrize(
    ("recorded", "asked", "expected"),
    [("RESTART", "restart", True), ("restart", "restart", True), ("REMOVE", "restart", False)],
)
def test_shutdown_type_ignores_case(recorded: str, asked: str, expected: bool) -> None:
    assert NodeShutdown("id", recorded, "COMPLETE").is_type(asked) is expected


POD_MANIFEST: dict[str, Any] = {
    "metadata": {
        "name": "es-es-default-1",
        "labels": {
            ES_STATEFULSET_NAME_LABEL: "es-es-default",
            ES_VERSION_LABEL: "8.15.0",
            node_role_label("master"): "true",
            "controller-revision-hash": "es-es-default-5d4f",
        },
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "ContainersReady", "status": "True"},
        ],
        "containerStatuses": [
            {"name": "sidecar", "restartCount": 4},
            {"name": "elasticsearch", "restartCount": 2},
        ],
    },
}


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        pytest.param(
            POD_MANIFEST,
            {"ready": True, "terminating": False, "restart_count": 2, "phase": "Running"},
            id="running and ready",
        ),
        pytest.param(
            {**POD_MANIFEST, "status": {"phase": "Pending"}},
            {"ready": False, "terminating": False, "restart_count": None, "phase": "Pending"},
            id="pending, no container status",
        ),
        pytest.param(
            {
                "metadata": {
                    **POD_MANIFEST["metadata"],
                    "deletionTimestamp": "2025-01-01T00:00:00Z",
                },
                "status": {
                    **POD_MANIFEST["status"],
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
            {"ready": False, "terminating": True, "restart_count": 2, "phase": "Running"},
            id="terminating, containers not ready",
        ),
    ],
)
def test_pod_state_from_manifest(manifest: dict[str, Any], expected: dict[str, Any]) -> None:
    pod = pod_state_from_manifest(manifest)
    assert {
        "ready": pod.ready,
        "terminating": pod.terminating,
        "restart_count": pod.restart_count,
        "phase": pod.phase,
    } == expected
    assert (pod.name, pod.statefulset, pod.version, pod.is_master, pod.revision) == (
        "es-es-default-1",
        "es-es-default",
        "8.15.0",
        True,
        "es-es-default-5d4f",
    )


def test_pod_state_defaults_read_empty_labels() -> None:
    pod = PodState("x-0")
    assert (pod.statefulset, pod.version, pod.revision, pod.is_master) == ("", "", "", False)


def test_statefulset_state_from_manifest() -> None:
    manifest = {
        "metadata": {"name": "es-es-masters", "generation": 4},
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {
                    "labels": {node_role_label("master"): "true", ES_VERSION_LABEL: "8.15.0"}
                }
            },
        },
        "status": {
            "observedGeneration": 3,
            "updateRevision": "es-es-masters-abc",
            "replicas": 3,
            "updatedReplicas": 1,
        },
    }
    assert statefulset_state_from_manifest(manifest) == StatefulSetState(
        name="es-es-masters",
        replicas=3,
        update_revision="es-es-masters-abc",
        master=True,
        version="8.15.0",
        generation=4,
        observed_generation=3,
        status_replicas=3,
        updated_replicas=1,
    )
    assert statefulset_state_from_manifest({"metadata": {"name": "s"}}).replicas == 1


def test_expected_statefulsets_use_the_builders_names_and_roles() -> None:
    node_sets = [
        {"name": "masters", "count": 3, "config": {"node.roles": ["master"]}},
        {"name": "data", "count": 2, "config": {"node.roles": ["data_hot", "ingest"]}},
        {"name": "default", "count": 1},
    ]
    expected = expected_statefulsets("quickstart", node_sets)
    assert expected == (
        ExpectedStatefulSet("quickstart-es-masters", 3, roles("master")),
        ExpectedStatefulSet("quickstart-es-data", 2, roles("data_hot", "ingest")),
        ExpectedStatefulSet("quickstart-es-default", 1, DEFAULT_ROLES),
    )
    assert expected_master_names(expected) == (
        "quickstart-es-masters-0",
        "quickstart-es-masters-1",
        "quickstart-es-masters-2",
        "quickstart-es-default-0",
    )
