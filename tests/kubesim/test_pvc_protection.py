"""The PVC protection controller: which pods hold a deleted claim (a table), then claims, pods,
StatefulSets and namespaces against a store with running controllers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from kubesim.controllers import Controllers
from kubesim.controllers.pvc_protection import PVC_PROTECTION_FINALIZER, pod_uses_claim
from kubesim.controllers.store_access import get_or_none
from kubesim.resources import Registry, ResourceType
from kubesim.store import Store

CLAIM = {"metadata": {"name": "data", "uid": "claim-uid"}}


def _pod(
    *,
    node: str | None = "n",
    phase: str = "Running",
    volumes: list[dict[str, Any]] | None = None,
    deleting_with_grace: int | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "uid": "pod-uid"}
    if deleting_with_grace is not None:
        metadata["deletionTimestamp"] = "2030-01-01T00:00:00Z"
        metadata["deletionGracePeriodSeconds"] = deleting_with_grace
    spec: dict[str, Any] = {
        "volumes": volumes
        if volumes is not None
        else [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


EPHEMERAL = [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
# The claim of the pod's ephemeral volume ``v``: ``p-v``, controlled by the pod.
EPHEMERAL_CLAIM = {
    "metadata": {
        "name": "p-v",
        "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}],
    }
}


@pytest.mark.parametrize(
    ("pod", "claim", "uses"),
    [
        pytest.param(_pod(), CLAIM, True, id="scheduled-pod-names-it"),
        pytest.param(_pod(node=None), CLAIM, False, id="unscheduled-pod"),
        pytest.param(_pod(phase="Succeeded"), CLAIM, True, id="succeeded-pod-still-holds-it"),
        pytest.param(_pod(phase="Failed"), CLAIM, True, id="failed-pod-still-holds-it"),
        pytest.param(_pod(deleting_with_grace=30), CLAIM, True, id="pod-in-its-grace-period"),
        pytest.param(_pod(deleting_with_grace=0), CLAIM, True, id="shut-down-pod-named-claim"),
        pytest.param(_pod(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "other"}}]), CLAIM, False, id="another-claim"),
        pytest.param(_pod(volumes=[{"name": "v", "emptyDir": {}}]), CLAIM, False, id="no-claim"),
        pytest.param(_pod(volumes=EPHEMERAL), EPHEMERAL_CLAIM, True, id="ephemeral"),
        pytest.param(_pod(volumes=EPHEMERAL, deleting_with_grace=0), EPHEMERAL_CLAIM, False, id="ephemeral-pod-shut-down"),
        pytest.param(_pod(volumes=EPHEMERAL, deleting_with_grace=30), EPHEMERAL_CLAIM, True, id="ephemeral-pod-terminating"),
        pytest.param(_pod(volumes=EPHEMERAL), {"metadata": {"name": "p-v"}}, False, id="ephemeral-name-not-owned"),
    ],
)  # fmt: skip
def test_which_pods_hold_a_deleted_claim(
    pod: dict[str, Any], claim: dict[str, Any], uses: bool
) -> None:
    assert pod_uses_claim(pod, claim) is uses


# ----------------------------------------------------------------------------- running


@dataclass
class Cluster:
    store: Store
    registry: Registry
    controllers: Controllers

    def rt(self, group: str, plural: str) -> ResourceType:
        return next(rt for rt in self.registry.all() if (rt.group, rt.plural) == (group, plural))

    @property
    def claims(self) -> ResourceType:
        return self.rt("", "persistentvolumeclaims")

    @property
    def pods(self) -> ResourceType:
        return self.rt("", "pods")

    def claim(self, name: str = "data", namespace: str = "default") -> dict[str, Any] | None:
        return get_or_none(self.store, self.claims, namespace, name)

    def make_claim(self, name: str = "data") -> None:
        body = {
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        self.store.create(self.claims, body, namespace="default")

    def make_pod(self, name: str, claim: str = "data", **spec: Any) -> None:
        body = {
            "metadata": {"name": name},
            "spec": {
                "containers": [{"name": "c", "image": "i:1"}],
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}],
                **spec,
            },
        }
        self.store.create(self.pods, body, namespace="default")


async def _cluster(*, enabled: bool = True) -> AsyncIterator[Cluster]:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry, enabled=enabled)
    controllers.start()
    yield Cluster(store, registry, controllers)
    await controllers.stop()


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async for running in _cluster():
        yield running


@pytest.fixture
async def without_workloads() -> AsyncIterator[Cluster]:
    async for running in _cluster(enabled=False):
        yield running


async def test_a_deleted_claim_no_pod_uses_goes(without_workloads: Cluster) -> None:
    # PVC protection runs with the workload controllers and the kubelet switched off too.
    cluster = without_workloads
    cluster.make_claim()
    claim = cluster.claim()
    assert claim is not None
    assert claim["metadata"]["finalizers"] == [PVC_PROTECTION_FINALIZER]
    kept = cluster.store.delete(cluster.claims, "default", "data")
    assert kept is not None  # the API server only marks it
    await cluster.controllers.settle()
    assert cluster.claim() is None


async def test_a_claim_stays_terminating_while_a_scheduled_pod_uses_it(cluster: Cluster) -> None:
    cluster.make_claim()
    cluster.make_pod("user")
    cluster.make_pod("waiting", schedulerName="nobody")  # never scheduled: holds nothing
    await cluster.controllers.settle()
    cluster.store.delete(cluster.claims, "default", "data")
    await cluster.controllers.settle()
    claim = cluster.claim()
    assert claim is not None
    assert claim["metadata"]["deletionTimestamp"]
    assert claim["metadata"]["finalizers"] == [PVC_PROTECTION_FINALIZER]

    cluster.store.delete(cluster.pods, "default", "user")
    await cluster.controllers.settle()
    assert cluster.claim() is None
    assert get_or_none(cluster.store, cluster.pods, "default", "waiting") is not None


async def test_a_live_claim_gets_its_finalizer_back(cluster: Cluster) -> None:
    cluster.make_claim()
    claim = cluster.claim()
    assert claim is not None
    claim["metadata"]["finalizers"] = ["example.com/other"]
    cluster.store.update(cluster.claims, claim, namespace="default", name="data")
    await cluster.controllers.settle()
    claim = cluster.claim()
    assert claim is not None
    assert claim["metadata"]["finalizers"] == ["example.com/other", PVC_PROTECTION_FINALIZER]


def _statefulset(replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "db"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "i:1"}]},
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


async def test_a_namespace_with_a_statefulset_and_its_claims_is_deleted(cluster: Cluster) -> None:
    namespaces = cluster.rt("", "namespaces")
    cluster.store.create(namespaces, {"metadata": {"name": "db"}}, namespace=None)
    cluster.store.create(cluster.rt("apps", "statefulsets"), _statefulset(3), namespace="db")
    await cluster.controllers.settle()
    claims, _ = cluster.store.list(cluster.claims, "db")
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1", "data-db-2"]

    cluster.store.delete(namespaces, None, "db")
    await cluster.controllers.settle()
    assert get_or_none(cluster.store, namespaces, None, "db") is None
    assert cluster.store.list(cluster.claims, "db")[0] == []
    assert cluster.store.list(cluster.pods, "db")[0] == []


async def test_a_claim_being_deleted_holds_back_its_statefulset_pod(cluster: Cluster) -> None:
    cluster.store.create(cluster.rt("apps", "statefulsets"), _statefulset(1), namespace="default")
    await cluster.controllers.settle()
    old_claim = cluster.claim("data-db-0")
    old_pod = get_or_none(cluster.store, cluster.pods, "default", "db-0")
    assert old_claim is not None
    assert old_pod is not None
    # A second finalizer keeps the claim Terminating after PVC protection lets go of it.
    old_claim["metadata"]["finalizers"].append("example.com/hold")
    cluster.store.update(cluster.claims, old_claim, namespace="default", name="data-db-0")

    cluster.store.delete(cluster.claims, "default", "data-db-0")
    cluster.store.delete(cluster.pods, "default", "db-0")
    await cluster.controllers.settle()
    terminating = cluster.claim("data-db-0")
    assert terminating is not None
    assert terminating["metadata"]["finalizers"] == ["example.com/hold"]
    # No pod on a claim being deleted.
    assert get_or_none(cluster.store, cluster.pods, "default", "db-0") is None

    terminating["metadata"]["finalizers"] = []
    cluster.store.update(cluster.claims, terminating, namespace="default", name="data-db-0")
    await cluster.controllers.settle()
    claim = cluster.claim("data-db-0")
    pod = get_or_none(cluster.store, cluster.pods, "default", "db-0")
    assert claim is not None
    assert pod is not None
    assert claim["metadata"]["uid"] != old_claim["metadata"]["uid"]
    assert "deletionTimestamp" not in claim["metadata"]
    assert pod["metadata"]["uid"] != old_pod["metadata"]["uid"]
    assert pod["status"]["phase"] == "Running"
