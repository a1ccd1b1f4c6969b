"""Graceful deletion of Pods run by an external kubelet: the rule table, the store's writes and
events, DeleteOptions over HTTP, and the controllers that delete such Pods (namespace, garbage
collector, StatefulSet)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesim.controllers import Controllers
from kubesim.controllers.store_access import get_or_none
from kubesim.resources import Registry, ResourceType
from kubesim.store import Store
from kubesim.store_kinds import (
    EXTERNAL_KUBELET,
    EXTERNAL_KUBELET_ANNOTATION,
    GracefulDeletion,
    graceful_pod_deletion,
)
from kubesim.testing import KubeSim
from tests.kubesim.http_calls import call
from tests.kubesim.store_sim import Sim

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
RUNNER = "es-runner"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(
    *,
    node: str | None = "n",
    grace: int | None = 30,
    phase: str = "Pending",
    deleting: tuple[datetime, int] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    metadata: dict[str, Any] = {"name": "p"}
    if deleting is not None:
        metadata["deletionTimestamp"] = _stamp(deleting[0])
        metadata["deletionGracePeriodSeconds"] = deleting[1]
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def _marked(seconds: int, grace: int) -> GracefulDeletion:
    return GracefulDeletion(
        graceful=True,
        deletion_timestamp=_stamp(NOW + timedelta(seconds=seconds)),
        grace_seconds=grace,
    )


PENDING = GracefulDeletion(graceful=False, pending=True)
# A pod marked just now with 30 s of grace.
MARKED_30 = (NOW + timedelta(seconds=30), 30)


@pytest.mark.parametrize(
    ("pod", "requested", "expected"),
    [
        pytest.param(_pod(), None, _marked(30, 30), id="the-pods-own-period"),
        pytest.param(_pod(grace=None), None, _marked(0, 0), id="no-period-of-its-own"),
        pytest.param(_pod(), 5, _marked(5, 5), id="requested-period"),
        pytest.param(_pod(), 0, _marked(0, 0), id="requested-zero"),
        pytest.param(_pod(), -7, _marked(1, 1), id="negative-counts-as-one"),
        pytest.param(_pod(node=None), None, _marked(0, 0), id="unscheduled-at-once"),
        pytest.param(_pod(phase="Succeeded"), 20, _marked(0, 0), id="succeeded-at-once"),
        pytest.param(_pod(phase="Failed"), None, _marked(0, 0), id="failed-at-once"),
        pytest.param(_pod(phase="Running"), None, _marked(30, 30), id="running"),
        pytest.param(_pod(deleting=MARKED_30), None, PENDING, id="again-without-period-pending"),
        pytest.param(_pod(deleting=MARKED_30), 30, PENDING, id="same-period-pending"),
        pytest.param(_pod(deleting=MARKED_30), 60, PENDING, id="longer-period-pending"),
        pytest.param(_pod(deleting=MARKED_30), 10, _marked(10, 10), id="shortened"),
        pytest.param(_pod(deleting=MARKED_30), 0, _marked(0, 0), id="confirmed"),
        pytest.param(_pod(deleting=(NOW - timedelta(seconds=5), 30)), 10, _marked(0, 1), id="shortened-into-the-past-keeps-one-second"),
        pytest.param(_pod(deleting=(NOW - timedelta(seconds=5), 30)), 0, _marked(0, 0), id="confirmed-late"),
        pytest.param(_pod(deleting=(NOW, 0)), None, GracefulDeletion(graceful=False), id="marked-without-period"),
    ],
)  # fmt: skip
def test_graceful_pod_deletion_rules(
    pod: dict[str, Any], requested: int | None, expected: GracefulDeletion
) -> None:
    assert graceful_pod_deletion(pod, requested, now=NOW) == expected


# ----------------------------------------------------------------------------- the store


class PodSim(Sim):
    """A store with an external-kubelet node ``es-runner`` and a kubesim-run node ``plain``."""

    def __init__(self) -> None:
        super().__init__()
        nodes = self.rt("", "nodes")
        annotations = {EXTERNAL_KUBELET_ANNOTATION: EXTERNAL_KUBELET}
        self.store.create(
            nodes, {"metadata": {"name": RUNNER, "annotations": annotations}}, namespace=None
        )
        self.store.create(nodes, {"metadata": {"name": "plain"}}, namespace=None)

    @property
    def pods(self) -> ResourceType:
        return self.rt("", "pods")

    def make_pod(self, name: str = "p", *, node: str | None = RUNNER, **metadata: Any) -> None:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i:1"}]}
        created = self.store.create(
            self.pods, {"metadata": {"name": name, **metadata}, "spec": spec}, namespace="default"
        )
        if node is not None:
            created["spec"]["nodeName"] = node
            self.store.update(
                self.pods, created, namespace="default", name=name, subresource="binding"
            )

    def pod_events(self) -> list[tuple[str, Any, Any]]:
        """(type, deletionTimestamp set, deletionGracePeriodSeconds) of every pod event so far."""
        return [
            (
                event.type,
                bool(event.obj["metadata"].get("deletionTimestamp")),
                event.obj["metadata"].get("deletionGracePeriodSeconds"),
            )
            for event in self.events
            if event.rt.plural == "pods"
        ]

    def delete(self, name: str = "p", **options: Any) -> dict[str, Any] | None:
        self.events.clear()
        return self.store.delete(self.pods, "default", name, **options)


def test_a_pod_of_an_external_kubelet_waits_for_its_kubelet() -> None:
    sim = PodSim()
    sim.make_pod()
    answered = sim.delete()
    assert answered is not None
    meta = answered["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    marked = datetime.strptime(meta["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    assert marked.replace(tzinfo=UTC) > datetime.now(UTC) + timedelta(seconds=25)
    assert sim.pod_events() == [("MODIFIED", True, 30)]
    assert meta["generation"] == 2  # the first graceful deletion bumps it
    stored = sim.store.get(sim.pods, "default", "p")
    assert stored["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]

    # The kubelet reports on the terminating pod; the pod stays.
    stored["status"] = {"phase": "Running"}
    sim.store.update(sim.pods, stored, namespace="default", name="p", subresource="status")
    assert sim.store.get(sim.pods, "default", "p")["status"]["phase"] == "Running"

    # Deleting again without a shorter period changes nothing and writes nothing.
    rv = sim.store.get(sim.pods, "default", "p")["metadata"]["resourceVersion"]
    for again in (None, 30, 45):
        kept = sim.delete(grace_period=again)
        assert kept is not None
        assert kept["metadata"]["resourceVersion"] == rv
        assert sim.pod_events() == []

    shortened = sim.delete(grace_period=10)
    assert shortened is not None
    assert shortened["metadata"]["deletionGracePeriodSeconds"] == 10
    assert shortened["metadata"]["deletionTimestamp"] < meta["deletionTimestamp"]
    assert shortened["metadata"]["generation"] == 2
    assert sim.pod_events() == [("MODIFIED", True, 10)]

    # The kubelet confirms: the pod is marked with grace 0, then removed.
    confirmed = sim.delete(grace_period=0, preconditions={"uid": meta["uid"]})
    assert confirmed is not None
    assert confirmed["metadata"]["deletionGracePeriodSeconds"] == 0
    assert sim.pod_events() == [("MODIFIED", True, 0), ("DELETED", True, 0)]
    assert sim.store.list(sim.pods, "default")[0] == []


@pytest.mark.parametrize(
    "node",
    [
        pytest.param("plain", id="a-node-kubesim-runs"),
        pytest.param("no-such-node", id="a-node-that-does-not-exist"),
        pytest.param(None, id="unscheduled"),
    ],
)
def test_other_pods_still_go_at_once(node: str | None) -> None:
    sim = PodSim()
    sim.make_pod(node=node)
    answered = sim.delete()
    assert answered is not None
    assert answered["metadata"]["deletionGracePeriodSeconds"] == 0
    assert sim.pod_events() == [("DELETED", True, 0)]


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_terminated_pod_of_an_external_kubelet_goes_at_once(phase: str) -> None:
    sim = PodSim()
    sim.make_pod()
    pod = sim.store.get(sim.pods, "default", "p")
    pod["status"]["phase"] = phase
    sim.store.update(sim.pods, pod, namespace="default", name="p", subresource="status")
    sim.delete()
    assert sim.pod_events() == [("MODIFIED", True, 0), ("DELETED", True, 0)]


def test_a_first_delete_with_grace_zero_removes_the_pod() -> None:
    sim = PodSim()
    sim.make_pod()
    sim.delete(grace_period=0)
    assert sim.pod_events() == [("MODIFIED", True, 0), ("DELETED", True, 0)]


def test_finalizers_hold_a_pod_after_its_grace_period_not_during_it() -> None:
    sim = PodSim()
    sim.make_pod(finalizers=["example.com/hold"])
    sim.delete()
    pod = sim.store.get(sim.pods, "default", "p")
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    # Releasing the finalizer during the grace period does not remove the pod.
    pod["metadata"]["finalizers"] = []
    sim.store.update(sim.pods, pod, namespace="default", name="p")
    assert "finalizers" not in sim.store.get(sim.pods, "default", "p")["metadata"]
    sim.delete(grace_period=0)
    assert sim.pod_events() == [("MODIFIED", True, 0), ("DELETED", True, 0)]

    sim.make_pod("q", finalizers=["example.com/hold"])
    sim.delete("q")
    sim.delete("q", grace_period=0)
    # Marked with grace 0 and kept by its finalizer; its release removes it.
    held = sim.store.get(sim.pods, "default", "q")
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    assert sim.pod_events() == [("MODIFIED", True, 0)]
    held["metadata"]["finalizers"] = []
    sim.store.update(sim.pods, held, namespace="default", name="q")
    assert get_or_none(sim.store, sim.pods, "default", "q") is None


def test_a_dry_run_delete_writes_nothing() -> None:
    sim = PodSim()
    sim.make_pod()
    answered = sim.delete(dry_run=True)
    assert answered is not None
    assert answered["metadata"]["deletionGracePeriodSeconds"] == 30
    assert sim.pod_events() == []
    assert "deletionTimestamp" not in sim.store.get(sim.pods, "default", "p")["metadata"]


# ----------------------------------------------------------------------------- over HTTP

PODS_PATH = "/api/v1/namespaces/default/pods"


async def _external_node_and_pod(sim: KubeSim) -> None:
    node = {"metadata": {"name": RUNNER, "annotations": {EXTERNAL_KUBELET_ANNOTATION: "external"}}}
    status, _, _ = await call(sim, "POST /api/v1/nodes", body=node)
    assert status == 201
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "nodeName": RUNNER,
            "terminationGracePeriodSeconds": 45,
            "containers": [{"name": "c", "image": "i:1"}],
        },
    }
    status, _, _ = await call(sim, f"POST {PODS_PATH}", body=pod)
    assert status == 201


async def test_delete_options_set_and_shorten_the_grace_period_over_http() -> None:
    async with KubeSim() as sim:
        await _external_node_and_pod(sim)
        events: list[tuple[str, Any]] = []
        sim.store.subscribe(
            lambda event: (
                events.append((event.type, event.obj["metadata"].get("deletionGracePeriodSeconds")))
                if event.rt.plural == "pods"
                else None
            )
        )
        status, body, _ = await call(sim, f"DELETE {PODS_PATH}/p")
        assert status == 200
        assert (body["kind"], body["metadata"]["deletionGracePeriodSeconds"]) == ("Pod", 45)
        status, body, _ = await call(sim, f"DELETE {PODS_PATH}/p?gracePeriodSeconds=20")
        assert (status, body["metadata"]["deletionGracePeriodSeconds"]) == (200, 20)
        status, body, _ = await call(sim, f"DELETE {PODS_PATH}/p", body={"gracePeriodSeconds": "0"})
        assert status == 400
        assert "DeleteOptions.gracePeriodSeconds of type int64" in body["message"]
        await sim.settle()
        status, body, _ = await call(sim, f"GET {PODS_PATH}/p")
        assert (status, body["metadata"]["deletionGracePeriodSeconds"]) == (200, 20)
        uid = body["metadata"]["uid"]
        status, body, _ = await call(
            sim,
            f"DELETE {PODS_PATH}/p",
            body={
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": uid},
            },
        )
        assert (status, body["metadata"]["deletionGracePeriodSeconds"]) == (200, 0)
        status, _, _ = await call(sim, f"GET {PODS_PATH}/p")
        assert status == 404
        assert events[-3:] == [("MODIFIED", 20), ("MODIFIED", 0), ("DELETED", 0)]


# ----------------------------------------------------------------------------- the controllers


@dataclass
class Cluster:
    """A store with running controllers and an external-kubelet node ``es-runner``."""

    store: Store
    registry: Registry
    controllers: Controllers

    def rt(self, group: str, plural: str) -> ResourceType:
        return next(rt for rt in self.registry.all() if (rt.group, rt.plural) == (group, plural))

    def get(
        self, plural: str, name: str, namespace: str | None = "default"
    ) -> dict[str, Any] | None:
        group = "apps" if plural == "statefulsets" else ""
        return get_or_none(self.store, self.rt(group, plural), namespace, name)

    def confirm(self, name: str, namespace: str = "default") -> None:
        """What the external kubelet does once its containers are stopped."""
        self.store.delete(self.rt("", "pods"), namespace, name, grace_period=0)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry)
    controllers.start()
    annotations = {EXTERNAL_KUBELET_ANNOTATION: EXTERNAL_KUBELET}
    store.create(
        next(rt for rt in registry.all() if rt.plural == "nodes"),
        {"metadata": {"name": RUNNER, "labels": {"runner": "yes"}, "annotations": annotations}},
        namespace=None,
    )
    yield Cluster(store, registry, controllers)
    await controllers.stop()


def _statefulset(namespace: str = "default") -> dict[str, Any]:
    return {
        "metadata": {"name": "db", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "nodeSelector": {"runner": "yes"},
                    "containers": [{"name": "es", "image": "es:1"}],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


async def test_the_statefulset_recreates_a_pod_only_once_the_terminating_one_is_gone(
    cluster: Cluster,
) -> None:
    statefulsets = cluster.rt("apps", "statefulsets")
    cluster.store.create(statefulsets, _statefulset(), namespace="default")
    await cluster.controllers.settle()
    first = cluster.get("pods", "db-0")
    assert first is not None
    assert first["spec"]["nodeName"] == RUNNER

    cluster.store.delete(cluster.rt("", "pods"), "default", "db-0")
    await cluster.controllers.settle()
    terminating = cluster.get("pods", "db-0")
    assert terminating is not None
    assert terminating["metadata"]["uid"] == first["metadata"]["uid"]
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
    sts = cluster.get("statefulsets", "db")
    assert sts is not None
    assert sts["status"]["replicas"] == 1  # a terminating pod still counts

    cluster.confirm("db-0")
    await cluster.controllers.settle()
    second = cluster.get("pods", "db-0")
    assert second is not None
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert "deletionTimestamp" not in second["metadata"]
    claim = cluster.get("persistentvolumeclaims", "data-db-0")
    assert claim is not None
    assert "deletionTimestamp" not in claim["metadata"]


async def test_a_namespace_waits_for_the_external_kubelet_then_goes_with_its_claims(
    cluster: Cluster,
) -> None:
    namespaces = cluster.rt("", "namespaces")
    cluster.store.create(namespaces, {"metadata": {"name": "es"}}, namespace=None)
    cluster.store.create(cluster.rt("apps", "statefulsets"), _statefulset("es"), namespace="es")
    await cluster.controllers.settle()
    assert cluster.get("pods", "db-0", "es") is not None

    cluster.store.delete(namespaces, None, "es")
    await cluster.controllers.settle()
    pod = cluster.get("pods", "db-0", "es")
    claim = cluster.get("persistentvolumeclaims", "data-db-0", "es")
    assert pod is not None
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    assert claim is not None
    assert claim["metadata"]["deletionTimestamp"]
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    namespace = cluster.get("namespaces", "es", None)
    assert namespace is not None
    assert namespace["status"]["phase"] == "Terminating"

    cluster.confirm("db-0", "es")
    await cluster.controllers.settle()
    assert cluster.get("persistentvolumeclaims", "data-db-0", "es") is None
    assert cluster.get("namespaces", "es", None) is None


@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
async def test_the_garbage_collector_deletes_such_pods_gracefully(
    cluster: Cluster, propagation: str
) -> None:
    configmaps = cluster.rt("", "configmaps")
    owner = cluster.store.create(configmaps, {"metadata": {"name": "owner"}}, namespace="default")
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    cluster.store.create(
        cluster.rt("", "pods"),
        {
            "metadata": {"name": "owned", "ownerReferences": [ref]},
            "spec": {"nodeName": RUNNER, "containers": [{"name": "c", "image": "i:1"}]},
        },
        namespace="default",
    )
    cluster.store.delete(configmaps, "default", "owner", propagation=propagation)
    await cluster.controllers.settle()
    pod = cluster.get("pods", "owned")
    assert pod is not None
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    # In the foreground the owner waits for its dependent to be gone.
    assert (cluster.get("configmaps", "owner") is not None) == (propagation == "Foreground")

    cluster.confirm("owned")
    await cluster.controllers.settle()
    assert cluster.get("pods", "owned") is None
    assert cluster.get("configmaps", "owner") is None
