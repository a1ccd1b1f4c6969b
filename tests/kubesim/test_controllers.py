"""Simulated controllers: pure decision tables, then behaviour against a real Store (§6, §7, §10)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from kubesim.controllers import Controllers
from kubesim.controllers.gc import (
    DependentAction,
    Owner,
    RefState,
    classify_ref,
    decide_dependent,
)
from kubesim.controllers.namespaces import namespace_conditions
from kubesim.controllers.store_access import get_or_none
from kubesim.controllers.workload_rules import REVISION_LABEL, statefulset_plan
from kubesim.errors import StatusError
from kubesim.resources import Registry, ResourceType
from kubesim.store import Store

LIVE, DANGLING, WAITING, UNRESOLVABLE = (
    RefState.LIVE,
    RefState.DANGLING,
    RefState.WAITING,
    RefState.UNRESOLVABLE,
)


@pytest.mark.parametrize(
    ("dependent_ns", "owner_namespaced", "owner", "expected"),
    [
        ("a", True, Owner("o", "a", foreground=False), LIVE),
        ("a", True, Owner("o", "a", foreground=True), WAITING),
        ("a", True, None, DANGLING),
        ("a", True, Owner("other-name", "a", foreground=False), DANGLING),
        ("a", True, Owner("o", "b", foreground=False), DANGLING),
        ("a", False, Owner("o", None, foreground=False), LIVE),
        (None, True, Owner("o", "a", foreground=False), UNRESOLVABLE),
        ("a", None, None, UNRESOLVABLE),
    ],
)
def test_classify_ref(
    dependent_ns: str | None, owner_namespaced: bool | None, owner: Owner | None, expected: RefState
) -> None:
    ref = {"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u1"}
    assert (
        classify_ref(
            ref, dependent_namespace=dependent_ns, owner_namespaced=owner_namespaced, owner=owner
        )
        == expected
    )


REF_A = {"name": "a", "uid": "ua"}
REF_B = {"name": "b", "uid": "ub"}


@pytest.mark.parametrize(
    ("refs", "states", "has_dependents", "expected"),
    [
        ([], [], False, DependentAction("none")),
        ([REF_A], [LIVE], False, DependentAction("none")),
        ([REF_A], [DANGLING], False, DependentAction("delete")),
        ([REF_A, REF_B], [DANGLING, DANGLING], False, DependentAction("delete")),
        ([REF_A, REF_B], [DANGLING, LIVE], False, DependentAction("strip", keep_refs=(REF_B,))),
        ([REF_A, REF_B], [WAITING, LIVE], False, DependentAction("strip", keep_refs=(REF_B,))),
        ([REF_A], [WAITING], False, DependentAction("delete")),
        ([REF_A], [WAITING], True, DependentAction("delete", propagation="Foreground")),
        ([REF_A], [UNRESOLVABLE], False, DependentAction("none")),
        (
            [REF_A, REF_B],
            [UNRESOLVABLE, DANGLING],
            False,
            DependentAction("strip", keep_refs=(REF_A,)),
        ),
    ],
)
def test_decide_dependent(
    refs: list[dict[str, Any]],
    states: list[RefState],
    has_dependents: bool,
    expected: DependentAction,
) -> None:
    assert decide_dependent(refs, states, has_dependents=has_dependents) == expected


def _pod(name: str, *, ready: bool, revision: str = "r1") -> dict[str, Any]:
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    return {"metadata": {"name": name, "labels": {REVISION_LABEL: revision}}, "status": status}


@pytest.mark.parametrize(
    ("replicas", "policy", "pods", "expected"),
    [
        (3, None, [], ([0], [])),
        (3, "Parallel", [], ([0, 1, 2], [])),
        (3, None, [_pod("s-0", ready=False)], ([], [])),
        (3, None, [_pod("s-0", ready=True)], ([1], [])),
        (
            1,
            None,
            [_pod("s-0", ready=True), _pod("s-1", ready=True), _pod("s-2", ready=True)],
            ([], ["s-2", "s-1"]),
        ),
        (
            2,
            None,
            [_pod("s-0", ready=True, revision="r0"), _pod("s-1", ready=True, revision="r0")],
            ([], ["s-1"]),
        ),
        (2, None, [_pod("s-0", ready=True, revision="r0"), _pod("s-1", ready=True)], ([], ["s-0"])),
        (2, None, [_pod("s-0", ready=True), _pod("s-1", ready=True)], ([], [])),
    ],
)
def test_statefulset_plan(
    replicas: int,
    policy: str | None,
    pods: list[dict[str, Any]],
    expected: tuple[list[int], list[str]],
) -> None:
    sts: dict[str, Any] = {"metadata": {"name": "s"}, "spec": {"replicas": replicas}}
    if policy:
        sts["spec"]["podManagementPolicy"] = policy
    assert statefulset_plan(sts, pods, revision="r1") == expected


@pytest.mark.parametrize(
    ("counts", "finalizers", "content", "finalizing"),
    [
        (
            {},
            {},
            ("False", "All content successfully removed"),
            ("False", "All content-preserving finalizers finished"),
        ),
        (
            {"configmaps.": 2, "widgets.example.com": 1},
            {"example.com/cleanup": 1},
            (
                "True",
                "Some resources are remaining: configmaps. has 2 resource instances, widgets.example.com has 1 resource instances",
            ),
            (
                "True",
                "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances",
            ),
        ),
    ],
)
def test_namespace_conditions(
    counts: dict[str, int],
    finalizers: dict[str, int],
    content: tuple[str, str],
    finalizing: tuple[str, str],
) -> None:
    conditions = namespace_conditions(counts=counts, finalizers=finalizers, previous=[], now="T1")
    by_type = {c["type"]: c for c in conditions}
    assert (
        by_type["NamespaceContentRemaining"]["status"],
        by_type["NamespaceContentRemaining"]["message"],
    ) == content
    assert (
        by_type["NamespaceFinalizersRemaining"]["status"],
        by_type["NamespaceFinalizersRemaining"]["message"],
    ) == finalizing
    again = namespace_conditions(
        counts=counts, finalizers=finalizers, previous=conditions, now="T2"
    )
    assert again == conditions  # re-deriving unchanged conditions keeps their timestamps


# --------------------------------------------------------------------- against the real Store


@dataclass
class Cluster:
    """A store with running controllers."""

    store: Store
    registry: Registry
    controllers: Controllers

    def rt(self, group: str, plural: str) -> ResourceType:
        for rt in self.registry.all():
            if (rt.group, rt.plural) == (group, plural):
                return rt
        raise AssertionError(f"{plural}.{group} not served")

    def exists(self, group: str, plural: str, namespace: str | None, name: str) -> bool:
        return get_or_none(self.store, self.rt(group, plural), namespace, name) is not None


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry)
    controllers.start()
    yield Cluster(store, registry, controllers)
    await controllers.stop()


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def _install_widgets(cluster: Cluster) -> ResourceType:
    cluster.store.create(
        cluster.rt("apiextensions.k8s.io", "customresourcedefinitions"), WIDGET_CRD, namespace=None
    )
    return cluster.rt("example.com", "widgets")


def _widget(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, **meta},
        "spec": {"size": 1},
    }


def _owned_configmap(name: str, owner: dict[str, Any], *, block: bool = True) -> dict[str, Any]:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }
    return {"metadata": {"name": name, "ownerReferences": [ref]}, "data": {"k": "v"}}


async def test_finalizer_holds_deleted_custom_resource(cluster: Cluster) -> None:
    widgets = _install_widgets(cluster)
    events: list[tuple[str, str]] = []
    cluster.store.subscribe(lambda e: events.append((e.type, e.obj["metadata"]["name"])))
    created = cluster.store.create(
        widgets, _widget("w1", finalizers=["example.com/cleanup"]), namespace="default"
    )

    kept = cluster.store.delete(widgets, "default", "w1")
    await cluster.controllers.settle()

    assert kept is not None
    assert kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["generation"] == created["metadata"]["generation"] + 1
    extra = cluster.store.get(widgets, "default", "w1")
    extra["metadata"]["finalizers"].append("example.com/second")
    with pytest.raises(StatusError) as refused:
        cluster.store.update(widgets, extra, namespace="default", name="w1")
    assert refused.value.code == 422
    released = cluster.store.get(widgets, "default", "w1")
    released["metadata"]["finalizers"] = []
    cluster.store.update(widgets, released, namespace="default", name="w1")
    await cluster.controllers.settle()
    assert not cluster.exists("example.com", "widgets", "default", "w1")
    assert events[-1] == ("DELETED", "w1")


@pytest.mark.parametrize(
    ("propagation", "configmap_survives"),
    [(None, False), ("Background", False), ("Orphan", True), ("Foreground", False)],
)
async def test_owner_deletion_propagates_to_configmap(
    cluster: Cluster, propagation: str | None, configmap_survives: bool
) -> None:
    widgets = _install_widgets(cluster)
    configmaps = cluster.rt("", "configmaps")
    owner = cluster.store.create(widgets, _widget("owner"), namespace="default")
    cluster.store.create(configmaps, _owned_configmap("child", owner), namespace="default")

    cluster.store.delete(widgets, "default", "owner", propagation=propagation)
    await cluster.controllers.settle()

    assert not cluster.exists("example.com", "widgets", "default", "owner")
    assert cluster.exists("", "configmaps", "default", "child") == configmap_survives
    if configmap_survives:
        assert (
            "ownerReferences" not in cluster.store.get(configmaps, "default", "child")["metadata"]
        )


async def test_foreground_owner_waits_for_blocking_dependent(cluster: Cluster) -> None:
    widgets = _install_widgets(cluster)
    configmaps = cluster.rt("", "configmaps")
    owner = cluster.store.create(widgets, _widget("owner"), namespace="default")
    child = _owned_configmap("child", owner)
    child["metadata"]["finalizers"] = ["example.com/hold"]
    cluster.store.create(configmaps, child, namespace="default")

    cluster.store.delete(widgets, "default", "owner", propagation="Foreground")
    await cluster.controllers.settle()

    waiting = cluster.store.get(widgets, "default", "owner")
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    held = cluster.store.get(configmaps, "default", "child")
    assert held["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    cluster.store.update(configmaps, held, namespace="default", name="child")
    await cluster.controllers.settle()
    assert not cluster.exists("example.com", "widgets", "default", "owner")


async def test_dependent_with_a_live_second_owner_only_loses_the_dangling_ref(
    cluster: Cluster,
) -> None:
    configmaps = cluster.rt("", "configmaps")
    first = cluster.store.create(configmaps, {"metadata": {"name": "first"}}, namespace="default")
    second = cluster.store.create(configmaps, {"metadata": {"name": "second"}}, namespace="default")
    child = _owned_configmap("child", {**first, "apiVersion": "v1", "kind": "ConfigMap"})
    child["metadata"]["ownerReferences"].append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "second",
            "uid": second["metadata"]["uid"],
        }
    )
    cluster.store.create(configmaps, child, namespace="default")

    cluster.store.delete(configmaps, "default", "first")
    await cluster.controllers.settle()

    refs = cluster.store.get(configmaps, "default", "child")["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["second"]


async def test_cascade_is_recursive_and_dangling_refs_at_create_are_collected(
    cluster: Cluster,
) -> None:
    configmaps = cluster.rt("", "configmaps")
    top = cluster.store.create(configmaps, {"metadata": {"name": "top"}}, namespace="default")
    middle = cluster.store.create(
        configmaps,
        _owned_configmap("middle", {**top, "apiVersion": "v1", "kind": "ConfigMap"}),
        namespace="default",
    )
    cluster.store.create(
        configmaps,
        _owned_configmap("leaf", {**middle, "apiVersion": "v1", "kind": "ConfigMap"}),
        namespace="default",
    )
    orphan = _owned_configmap(
        "stray",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gone", "uid": "no-such-uid"},
        },
    )
    cluster.store.create(configmaps, orphan, namespace="default")

    cluster.store.delete(configmaps, "default", "top")
    await cluster.controllers.settle()

    assert [
        n
        for n in ("top", "middle", "leaf", "stray")
        if cluster.exists("", "configmaps", "default", n)
    ] == []


async def test_namespace_deletion_waits_for_finalizers_then_purges(cluster: Cluster) -> None:
    namespaces = cluster.rt("", "namespaces")
    configmaps = cluster.rt("", "configmaps")
    cluster.store.create(namespaces, {"metadata": {"name": "t1"}}, namespace=None)
    cluster.store.create(configmaps, {"metadata": {"name": "plain"}}, namespace="t1")
    cluster.store.create(
        configmaps,
        {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
        namespace="t1",
    )

    cluster.store.delete(namespaces, None, "t1")
    await cluster.controllers.settle()

    with pytest.raises(StatusError) as refused:
        cluster.store.create(configmaps, {"metadata": {"name": "late"}}, namespace="t1")
    assert refused.value.code == 403
    assert refused.value.causes[0].reason == "NamespaceTerminating"
    assert not cluster.exists("", "configmaps", "t1", "plain")
    terminating = cluster.store.get(namespaces, None, "t1")
    conditions = {c["type"]: c for c in terminating["status"]["conditions"]}
    assert conditions["NamespaceContentRemaining"]["status"] == "True"
    assert conditions["NamespaceFinalizersRemaining"]["message"].endswith(
        "example.com/hold in 1 resource instances"
    )

    held = cluster.store.get(configmaps, "t1", "held")
    held["metadata"]["finalizers"] = []
    cluster.store.update(configmaps, held, namespace="t1", name="held")
    await cluster.controllers.settle()
    assert not cluster.exists("", "namespaces", None, "t1")


async def test_default_namespace_cannot_be_deleted(cluster: Cluster) -> None:
    with pytest.raises(StatusError) as refused:
        cluster.store.delete(cluster.rt("", "namespaces"), None, "default")
    assert refused.value.code == 403
    assert "this namespace may not be deleted" in refused.value.message


async def test_crd_deletion_deletes_custom_resources_first(cluster: Cluster) -> None:
    widgets = _install_widgets(cluster)
    crds = cluster.rt("apiextensions.k8s.io", "customresourcedefinitions")
    cluster.store.create(widgets, _widget("w1"), namespace="default")
    cluster.store.create(
        widgets, _widget("w2", finalizers=["example.com/cleanup"]), namespace="default"
    )

    cluster.store.delete(crds, None, "widgets.example.com")
    await cluster.controllers.settle()

    assert cluster.exists(
        "apiextensions.k8s.io", "customresourcedefinitions", None, "widgets.example.com"
    )
    assert not cluster.exists("example.com", "widgets", "default", "w1")
    held = cluster.store.get(widgets, "default", "w2")
    held["metadata"]["finalizers"] = []
    cluster.store.update(widgets, held, namespace="default", name="w2")
    await cluster.controllers.settle()
    assert not cluster.exists(
        "apiextensions.k8s.io", "customresourcedefinitions", None, "widgets.example.com"
    )


TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "app", "image": "nginx:1"}]},
}


def _pods(cluster: Cluster, namespace: str = "default") -> dict[str, dict[str, Any]]:
    items, _ = cluster.store.list(cluster.rt("", "pods"), namespace)
    return {p["metadata"]["name"]: p for p in items}


def _statefulset(replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "db"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "web"}},
            "template": TEMPLATE,
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


async def test_statefulset_pods_claims_and_status_become_ready(cluster: Cluster) -> None:
    statefulsets = cluster.rt("apps", "statefulsets")
    cluster.store.create(statefulsets, _statefulset(3), namespace="default")
    await cluster.controllers.settle()

    pods = _pods(cluster)
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    pod = pods["db-1"]
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert pod["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["podIP"].startswith("10.244.")
    assert pod["spec"]["nodeName"] == "kubesim-node-0"
    claim = cluster.store.get(cluster.rt("", "persistentvolumeclaims"), "default", "data-db-1")
    assert claim["status"]["phase"] == "Bound"
    status = cluster.store.get(statefulsets, "default", "db")["status"]
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (3, 3, 3)
    assert status["currentRevision"] == status["updateRevision"]


async def test_statefulset_scales_down_and_recreates_deleted_pods(cluster: Cluster) -> None:
    statefulsets = cluster.rt("apps", "statefulsets")
    cluster.store.create(statefulsets, _statefulset(3), namespace="default")
    await cluster.controllers.settle()
    old_uid = _pods(cluster)["db-0"]["metadata"]["uid"]

    cluster.store.delete(cluster.rt("", "pods"), "default", "db-0")
    sts = cluster.store.get(statefulsets, "default", "db")
    sts["spec"]["replicas"] = 2
    cluster.store.update(statefulsets, sts, namespace="default", name="db")
    await cluster.controllers.settle()

    pods = _pods(cluster)
    assert sorted(pods) == ["db-0", "db-1"]
    assert pods["db-0"]["metadata"]["uid"] != old_uid
    assert cluster.store.get(statefulsets, "default", "db")["status"]["readyReplicas"] == 2


async def test_set_pod_ready_false_is_reflected_in_statefulset_status(cluster: Cluster) -> None:
    statefulsets = cluster.rt("apps", "statefulsets")
    cluster.store.create(statefulsets, _statefulset(2), namespace="default")
    await cluster.controllers.settle()

    cluster.controllers.set_pod_ready("default", "db-1", False)
    await cluster.controllers.settle()

    ready = [c for c in _pods(cluster)["db-1"]["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "False"
    assert cluster.store.get(statefulsets, "default", "db")["status"]["readyReplicas"] == 1


def _deployment(image: str) -> dict[str, Any]:
    template = {**TEMPLATE, "spec": {"containers": [{"name": "app", "image": image}]}}
    return {
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }


async def test_deployment_rolls_out_replicasets_and_becomes_available(cluster: Cluster) -> None:
    deployments = cluster.rt("apps", "deployments")
    replicasets = cluster.rt("apps", "replicasets")
    cluster.store.create(deployments, _deployment("nginx:1"), namespace="default")
    await cluster.controllers.settle()
    first_rs, _ = cluster.store.list(replicasets, "default")

    deploy = cluster.store.get(deployments, "default", "web")
    deploy["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    cluster.store.update(deployments, deploy, namespace="default", name="web")
    await cluster.controllers.settle()

    rs_items, _ = cluster.store.list(replicasets, "default")
    replicas = {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in rs_items}
    new_name = next(n for n in replicas if n != first_rs[0]["metadata"]["name"])
    assert replicas == {first_rs[0]["metadata"]["name"]: 0, new_name: 2}
    pods = _pods(cluster)
    assert len(pods) == 2
    assert all(p["metadata"]["name"].startswith(new_name + "-") for p in pods.values())
    status = cluster.store.get(deployments, "default", "web")["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (2, 2, 2)
    assert status["observedGeneration"] == 2
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }


async def test_deleting_a_deployment_cascades_to_pods(cluster: Cluster) -> None:
    deployments = cluster.rt("apps", "deployments")
    cluster.store.create(deployments, _deployment("nginx:1"), namespace="default")
    await cluster.controllers.settle()

    cluster.store.delete(deployments, "default", "web")
    await cluster.controllers.settle()

    assert _pods(cluster) == {}
    assert cluster.store.list(cluster.rt("apps", "replicasets"), "default")[0] == []


async def test_daemonset_runs_one_pod_per_node(cluster: Cluster) -> None:
    daemonsets = cluster.rt("apps", "daemonsets")
    cluster.store.create(
        daemonsets,
        {
            "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
        },
        namespace="default",
    )
    await cluster.controllers.settle()

    pods = list(_pods(cluster).values())
    assert [p["spec"]["nodeName"] for p in pods] == ["kubesim-node-0"]
    status = cluster.store.get(daemonsets, "default", "agent")["status"]
    assert (
        status["desiredNumberScheduled"],
        status["numberReady"],
        status["updatedNumberScheduled"],
    ) == (1, 1, 1)
    assert cluster.exists("", "nodes", None, "kubesim-node-0")


@pytest.mark.parametrize(("requested", "allocated"), [(None, True), ("None", False)])
async def test_service_gets_a_cluster_ip(
    cluster: Cluster, requested: str | None, allocated: bool
) -> None:
    services = cluster.rt("", "services")
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if requested:
        spec["clusterIP"] = requested
    cluster.store.create(services, {"metadata": {"name": "svc"}, "spec": spec}, namespace="default")
    await cluster.controllers.settle()

    ip = cluster.store.get(services, "default", "svc")["spec"]["clusterIP"]
    assert ip.startswith("10.96.") == allocated


async def test_disabled_controllers_leave_workloads_alone_but_still_collect_garbage() -> None:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry, enabled=False)
    controllers.start()
    try:
        deployments = next(rt for rt in registry.all() if rt.plural == "deployments")
        configmaps = next(rt for rt in registry.all() if rt.plural == "configmaps")
        store.create(deployments, _deployment("nginx:1"), namespace="default")
        owner = store.create(configmaps, {"metadata": {"name": "owner"}}, namespace="default")
        store.create(configmaps, _owned_configmap("child", owner), namespace="default")
        store.delete(configmaps, "default", "owner")
        await controllers.settle()
        # The status the API server gave it on create, untouched by a controller.
        assert store.get(deployments, "default", "web")["status"] == {}
        assert store.list(configmaps, "default")[0] == []
    finally:
        await controllers.stop()


async def test_pod_goes_pending_then_running_after_the_ready_delay() -> None:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry, pod_ready_delay=0.05)
    controllers.start()
    phases: list[str] = []
    store.subscribe(lambda e: phases.append(str((e.obj.get("status") or {}).get("phase"))))
    try:
        pods = next(rt for rt in registry.all() if rt.plural == "pods")
        store.create(
            pods,
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            namespace="default",
        )
        await controllers.settle()
        # A new Pod is Pending from its create on (scheduling and the kubelet write it again).
        assert [phase for phase, _ in itertools.groupby(p for p in phases if p != "None")] == [
            "Pending",
            "Running",
        ]
    finally:
        await controllers.stop()
