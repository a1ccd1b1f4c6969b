"""The volumes pass against kubesim: a claim grown by recreating its StatefulSet (its Pods kept),
refused claim changes, the PVCs of removed nodes deleted and the delete policy's ownerReferences.

kubesim serves no StorageClass (``storage.k8s.io``): the tests serve a CustomResourceDefinition
of that group and kind in its place, which the operator reads as it would the built-in kind.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from activities.context import ControllerContext
from activities.elasticsearch_volumes import VolumesOutcome, collect_claims, reconcile_volumes
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube import errors
from stackflow.models.kinds import PERSISTENTVOLUMECLAIMS, PODS, STATEFULSETS, STORAGECLASSES
from stackflow.stack.elasticsearch.builder import desired_children
from stackflow.stack.elasticsearch.volumes import CLAIMS_IMMUTABLE_MESSAGE
from tests.integration.controller_context import SELECTOR, Cluster, cluster, eventually
from tests.integration.elasticsearch_setup import NAMESPACE

__all__ = ["cluster"]

STATEFULSET = "quickstart-es-default"
RECREATE = f"elasticsearch.k8s.elastic.co/recreate-{STATEFULSET}"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
STORAGECLASS_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "storageclasses.storage.k8s.io"},
    "spec": {
        "group": "storage.k8s.io",
        "scope": "Cluster",
        "names": {
            "plural": "storageclasses",
            "singular": "storageclass",
            "kind": "StorageClass",
            "listKind": "StorageClassList",
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


def data_claim(storage: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "elasticsearch-data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": storage}},
        },
    }


def es_manifest(*, count: int, storage: str = "1Gi", policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "version": "8.15.0",
        "nodeSets": [
            {"name": "default", "count": count, "volumeClaimTemplates": [data_claim(storage)]}
        ],
    }
    if policy is not None:
        spec["volumeClaimDeletePolicy"] = policy
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": NAMESPACE},
        "spec": spec,
    }


def pvc_name(ordinal: int, statefulset: str = STATEFULSET) -> str:
    return f"elasticsearch-data-{statefulset}-{ordinal}"


def desired_statefulsets(es: dict[str, Any]) -> list[dict[str, Any]]:
    """The builder's StatefulSets for ``es``."""
    children = desired_children(
        es, existing={}, now=datetime.now(UTC), random_password=lambda: "password"
    )
    return [child for child in children if child["kind"] == "StatefulSet"]


async def serve_storage_classes(cluster: Cluster, ka_client: client.ApiClient) -> None:
    api: Any = client.ApiextensionsV1Api(ka_client)
    await api.create_custom_resource_definition(copy.deepcopy(STORAGECLASS_CRD))
    await cluster.kubesim.settle()


async def storage_class(cluster: Cluster, name: str, *, expands: bool, default: bool) -> None:
    metadata: dict[str, Any] = {"name": name}
    if default:
        metadata["annotations"] = {DEFAULT_CLASS: "true"}
    await cluster.raw.create(
        STORAGECLASSES,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": metadata,
            "provisioner": "example.com/disk",
            "allowVolumeExpansion": expands,
        },
    )


async def get_es(cluster: Cluster) -> dict[str, Any]:
    return await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")


async def statefulsets(cluster: Cluster) -> list[dict[str, Any]]:
    return list((await cluster.raw.list(STATEFULSETS, namespace=NAMESPACE))["items"])


async def pvcs(cluster: Cluster) -> dict[str, dict[str, Any]]:
    listed = await cluster.raw.list(PERSISTENTVOLUMECLAIMS, namespace=NAMESPACE)
    return {item["metadata"]["name"]: item for item in listed["items"]}


async def pods(cluster: Cluster) -> dict[str, dict[str, Any]]:
    listed = await cluster.raw.list(PODS, namespace=NAMESPACE)
    return {item["metadata"]["name"]: item for item in listed["items"]}


async def running_cluster(cluster: Cluster, es: dict[str, Any]) -> dict[str, Any]:
    """Create the Elasticsearch and its StatefulSets as the builder wants them, then wait for
    kubesim's StatefulSet controller to make the Pods and their PVCs; the stored Elasticsearch."""
    await cluster.raw.create(ELASTICSEARCH, es)
    stored = await get_es(cluster)
    wanted = desired_statefulsets(stored)
    for statefulset in wanted:
        await cluster.raw.create(STATEFULSETS, statefulset, namespace=NAMESPACE)
    count = sum(int(s["spec"]["replicas"]) for s in wanted)

    async def made() -> bool:
        await cluster.kubesim.settle()
        return len(await pvcs(cluster)) == count and len(await pods(cluster)) == count

    await eventually(made, what="the Pods and their PVCs")
    return stored


async def update_spec(cluster: Cluster, **spec: Any) -> dict[str, Any]:
    es = await get_es(cluster)
    es["spec"].update(spec)
    return await cluster.raw.replace(ELASTICSEARCH, es, namespace=NAMESPACE, name="quickstart")


async def volumes_pass(context: ControllerContext, cluster: Cluster) -> VolumesOutcome:
    """One volumes pass as the reconcile makes it: the stored cluster, the builder's StatefulSets
    and the current ones; the claims collected after (the reconcile writes its StatefulSets in
    between) when the pass allows it, the two outcomes summed."""
    es = await get_es(cluster)
    desired, current = desired_statefulsets(es), await statefulsets(cluster)
    outcome = await reconcile_volumes(
        context, es, resource=ELASTICSEARCH, desired_statefulsets=desired, statefulsets=current
    )
    if not outcome.collects:
        return outcome
    claims = await collect_claims(context, es, desired_statefulsets=desired, statefulsets=current)
    return VolumesOutcome(written=outcome.written + claims.written, requeue=claims.requeue)


def owner_uids(obj: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or []]


async def test_a_grown_claim_resizes_the_pvcs_and_recreates_the_statefulset_keeping_its_pods(
    cluster: Cluster, ka_client: client.ApiClient
) -> None:
    await cluster.create_namespace(NAMESPACE)
    await serve_storage_classes(cluster, ka_client)
    await storage_class(cluster, "standard", expands=True, default=True)
    context = cluster.context()
    es = await running_cluster(cluster, es_manifest(count=2))
    es_uid = es["metadata"]["uid"]
    first = {s["metadata"]["name"]: s for s in await statefulsets(cluster)}[STATEFULSET]
    pods_before = {name: pod["metadata"]["uid"] for name, pod in (await pods(cluster)).items()}
    # Settled: nothing to do but give the PVCs their owner (the default delete policy).
    settled = await volumes_pass(context, cluster)
    assert settled == VolumesOutcome(written=2)

    await update_spec(
        cluster, nodeSets=[es_manifest(count=2, storage="2Gi")["spec"]["nodeSets"][0]]
    )

    # Pass 1: the PVCs grow and the StatefulSet is stored for recreation; it is not written.
    scheduled = await volumes_pass(context, cluster)
    assert scheduled == VolumesOutcome(
        written=3, requeue=True, skip_statefulsets=frozenset({STATEFULSET})
    )
    claims = await pvcs(cluster)
    assert {name: c["spec"]["resources"]["requests"]["storage"] for name, c in claims.items()} == {
        pvc_name(0): "2Gi",
        pvc_name(1): "2Gi",
    }
    held = json.loads((await get_es(cluster))["metadata"]["annotations"][RECREATE])
    assert held["metadata"]["uid"] == first["metadata"]["uid"]
    assert held["spec"]["volumeClaimTemplates"] == [data_claim("2Gi")]

    # Pass 2: the StatefulSet is deleted, orphaning its Pods, which the cluster owns meanwhile.
    deleting = await volumes_pass(context, cluster)
    # Two Pods' owners and the StatefulSet.
    assert deleting == VolumesOutcome(
        written=3, requeue=True, skip_statefulsets=frozenset({STATEFULSET})
    )

    async def statefulset_gone() -> bool:
        await cluster.kubesim.settle()
        return not await statefulsets(cluster)

    await eventually(statefulset_gone, what="the StatefulSet deleted")
    orphans = await pods(cluster)
    assert {name: pod["metadata"]["uid"] for name, pod in orphans.items()} == pods_before
    for pod in orphans.values():
        assert owner_uids(pod) == [es_uid]
        assert pod["metadata"]["ownerReferences"][0].get("controller") is None

    # Pass 3: created again from the stored object, with the new claims and a new UID.
    creating = await volumes_pass(context, cluster)
    assert creating == VolumesOutcome(
        written=1, requeue=True, skip_statefulsets=frozenset({STATEFULSET})
    )
    (second,) = await statefulsets(cluster)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert second["metadata"]["ownerReferences"] == first["metadata"]["ownerReferences"]
    assert second["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"] == {
        "storage": "2Gi"
    }

    # Pass 4: over: the Pods given back, the annotation gone, nothing left to skip.
    done = await volumes_pass(context, cluster)
    assert done == VolumesOutcome(written=3)
    assert RECREATE not in ((await get_es(cluster))["metadata"].get("annotations") or {})
    for pod in (await pods(cluster)).values():
        assert es_uid not in owner_uids(pod)
    assert await volumes_pass(context, cluster) == VolumesOutcome()


async def test_refused_claim_changes_are_reported_and_nothing_is_written(
    cluster: Cluster, ka_client: client.ApiClient
) -> None:
    await cluster.create_namespace(NAMESPACE)
    await serve_storage_classes(cluster, ka_client)
    await storage_class(cluster, "standard", expands=False, default=True)
    context = cluster.context()
    await running_cluster(cluster, es_manifest(count=1, storage="2Gi"))
    before = await pvcs(cluster)
    node_set = es_manifest(count=1)["spec"]["nodeSets"][0]
    field = "spec.nodeSets[0].volumeClaimTemplates"

    cases = [
        (
            data_claim("1Gi"),
            "decreasing storage size is not supported: an attempt was made to decrease "
            "storage size for claim elasticsearch-data",
        ),
        (
            data_claim("3Gi"),
            "claim elasticsearch-data (storage class standard) does not support volume expansion",
        ),
        (
            {**data_claim("2Gi"), "metadata": {"name": "renamed"}},
            CLAIMS_IMMUTABLE_MESSAGE,
        ),
    ]
    for template, message in cases:
        await update_spec(cluster, nodeSets=[{**node_set, "volumeClaimTemplates": [template]}])
        outcome = await volumes_pass(context, cluster)
        assert outcome == VolumesOutcome(
            skip_statefulsets=frozenset({STATEFULSET}), problems=((field, message),)
        )
    after = await pvcs(cluster)
    assert {n: p["metadata"]["resourceVersion"] for n, p in after.items()} == {
        n: p["metadata"]["resourceVersion"] for n, p in before.items()
    }
    assert RECREATE not in ((await get_es(cluster))["metadata"].get("annotations") or {})


async def test_no_default_storage_class_refuses_an_increase(
    cluster: Cluster, ka_client: client.ApiClient
) -> None:
    await cluster.create_namespace(NAMESPACE)
    await serve_storage_classes(cluster, ka_client)
    await storage_class(cluster, "fast", expands=True, default=False)
    context = cluster.context()
    await running_cluster(cluster, es_manifest(count=1))
    await update_spec(cluster, nodeSets=es_manifest(count=1, storage="5Gi")["spec"]["nodeSets"])

    outcome = await volumes_pass(context, cluster)

    assert outcome.problems == (
        ("spec.nodeSets[0].volumeClaimTemplates", "no default storage class found"),
    )


async def test_pvcs_of_removed_nodes_go_and_the_delete_policy_decides_their_owner(
    cluster: Cluster,
) -> None:
    await cluster.create_namespace(NAMESPACE)
    context = cluster.context()
    es = await running_cluster(cluster, es_manifest(count=3))
    es_uid = es["metadata"]["uid"]
    labels = {"elasticsearch.k8s.elastic.co/cluster-name": "quickstart"}
    # A node set renamed away long ago left its PVC; another PVC is not the cluster's.
    for name, pvc_labels in ((pvc_name(0, "quickstart-es-old"), labels), ("unrelated", {})):
        await cluster.raw.create(
            PERSISTENTVOLUMECLAIMS,
            {
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": pvc_labels},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
            namespace=NAMESPACE,
        )
    # Downscale 3 → 1: the StatefulSet shrinks (as the node specs pass would do), the spec too.
    await update_spec(cluster, nodeSets=es_manifest(count=1)["spec"]["nodeSets"])
    await cluster.raw.merge_patch(
        STATEFULSETS, {"spec": {"replicas": 1}}, namespace=NAMESPACE, name=STATEFULSET
    )

    outcome = await volumes_pass(context, cluster)

    # The kept PVC owned by the cluster, three PVCs deleted.
    assert outcome == VolumesOutcome(written=4)

    async def collected() -> bool:
        await cluster.kubesim.settle()
        return set(await pvcs(cluster)) == {pvc_name(0), "unrelated"}

    await eventually(collected, what="the PVCs of removed nodes deleted")
    kept = (await pvcs(cluster))[pvc_name(0)]
    assert kept["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "elasticsearch.k8s.elastic.co/v1",
            "kind": "Elasticsearch",
            "name": "quickstart",
            "uid": es_uid,
        }
    ]
    assert not (await pvcs(cluster))["unrelated"]["metadata"].get("ownerReferences")

    # DeleteOnScaledownOnly: the data outlives the cluster, so the reference goes.
    await update_spec(cluster, volumeClaimDeletePolicy="DeleteOnScaledownOnly")
    assert await volumes_pass(context, cluster) == VolumesOutcome(written=1)
    assert not (await pvcs(cluster))[pvc_name(0)]["metadata"].get("ownerReferences")
    assert await volumes_pass(context, cluster) == VolumesOutcome()


async def test_a_namespace_out_of_scope_has_no_pvc_collected(cluster: Cluster) -> None:
    await cluster.create_namespace(NAMESPACE)
    es = await running_cluster(cluster, es_manifest(count=2))
    context = cluster.context(selector=SELECTOR)  # team-a carries no eck=on label

    outcome = await reconcile_volumes(
        context,
        es,
        resource=ELASTICSEARCH,
        desired_statefulsets=desired_statefulsets(es_manifest(count=0)),
        statefulsets=[],
    )

    assert outcome == VolumesOutcome()
    assert set(await pvcs(cluster)) == {pvc_name(0), pvc_name(1)}


async def test_a_recreation_already_done_elsewhere_only_drops_the_annotation(
    cluster: Cluster,
) -> None:
    await cluster.create_namespace(NAMESPACE)
    context = cluster.context()
    await running_cluster(cluster, es_manifest(count=1))
    (current,) = await statefulsets(cluster)
    stale = copy.deepcopy(current)
    stale["metadata"]["uid"] = "an-older-statefulset"
    await cluster.raw.merge_patch(
        ELASTICSEARCH,
        {"metadata": {"annotations": {RECREATE: json.dumps(stale)}}},
        namespace=NAMESPACE,
        name="quickstart",
    )

    outcome = await volumes_pass(context, cluster)

    assert outcome.skip_statefulsets == frozenset()
    assert RECREATE not in ((await get_es(cluster))["metadata"].get("annotations") or {})
    (after,) = await statefulsets(cluster)
    assert after["metadata"]["uid"] == current["metadata"]["uid"]


async def test_storage_classes_are_not_read_when_no_claim_grows(cluster: Cluster) -> None:
    # kubesim serves no StorageClass here: listing them would fail the pass.
    await cluster.create_namespace(NAMESPACE)
    context = cluster.context()
    await running_cluster(cluster, es_manifest(count=1))
    with pytest.raises(errors.NotFound):
        await cluster.raw.list(STORAGECLASSES)
    await update_spec(cluster, nodeSets=es_manifest(count=1, storage="512Mi")["spec"]["nodeSets"])

    outcome = await volumes_pass(context, cluster)

    assert outcome.problems[0][1].startswith("decreasing storage size is not supported")
