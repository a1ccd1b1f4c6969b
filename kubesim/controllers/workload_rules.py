"""Pure decisions of the workload controllers: desired pods, PVCs, ReplicaSets and statuses."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from kubesim.controllers.base import is_deleting, meta, name_of, pod_is_ready

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
TEMPLATE_HASH_LABEL = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj.spec`` (empty dict when absent)."""
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def replicas_of(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` with the API default of 1."""
    value = spec_of(obj).get("replicas")
    return 1 if value is None else int(value)


def pod_from_template(
    template: Mapping[str, Any],
    *,
    namespace: str,
    owner_ref: dict[str, Any],
    name: str | None = None,
    generate_name: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Pod built from a pod template, owned by ``owner_ref``."""
    template_meta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    assert isinstance(template_meta, dict)
    metadata: dict[str, Any] = {
        "namespace": namespace,
        "labels": {**(template_meta.get("labels") or {}), **(labels or {})},
        "ownerReferences": [owner_ref],
    }
    if template_meta.get("annotations"):
        metadata["annotations"] = dict(template_meta["annotations"])
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = generate_name or ""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def ordinal_of(sts_name: str, pod_name: str) -> int | None:
    """The ordinal of ``<sts>-<n>``, or None when the name does not have that shape."""
    prefix = sts_name + "-"
    suffix = pod_name[len(prefix) :] if pod_name.startswith(prefix) else ""
    return int(suffix) if suffix.isdigit() else None


def statefulset_pod(
    sts: Mapping[str, Any], ordinal: int, *, revision: str, owner_ref: dict[str, Any]
) -> dict[str, Any]:
    """Pod ``<sts>-<ordinal>`` with the StatefulSet labels and its claims mounted as volumes."""
    sts_name = name_of(sts)
    pod_name = f"{sts_name}-{ordinal}"
    spec = spec_of(sts)
    pod = pod_from_template(
        spec.get("template") or {},
        namespace=str(meta(sts).get("namespace", "")),
        owner_ref=owner_ref,
        name=pod_name,
        labels={POD_NAME_LABEL: pod_name, POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision},
    )
    pod["spec"]["hostname"] = pod_name
    if spec.get("serviceName"):
        pod["spec"]["subdomain"] = spec["serviceName"]
    volumes = [v for v in pod["spec"].get("volumes") or [] if isinstance(v, dict)]
    names = {v.get("name") for v in volumes}
    for claim in spec.get("volumeClaimTemplates") or []:
        claim_name = name_of(claim)
        if claim_name not in names:
            volumes.append(
                {
                    "name": claim_name,
                    "persistentVolumeClaim": {"claimName": f"{claim_name}-{pod_name}"},
                }
            )
    if volumes:
        pod["spec"]["volumes"] = volumes
    return pod


def statefulset_claims(sts: Mapping[str, Any], ordinal: int) -> list[dict[str, Any]]:
    """PVCs ``<template>-<sts>-<ordinal>`` from ``volumeClaimTemplates`` (not owned, as by default)."""
    spec = spec_of(sts)
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    claims = []
    for template in spec.get("volumeClaimTemplates") or []:
        template_meta = meta(template)
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": f"{template_meta.get('name')}-{name_of(sts)}-{ordinal}",
                    "namespace": str(meta(sts).get("namespace", "")),
                    "labels": {**selector, **(template_meta.get("labels") or {})},
                },
                "spec": copy.deepcopy(template.get("spec") or {}),
            }
        )
    return claims


def bound_claim_status(claim: Mapping[str, Any]) -> dict[str, Any]:
    """A PVC status as if a volume had been provisioned and bound."""
    spec = spec_of(claim)
    requests = (spec.get("resources") or {}).get("requests") or {}
    status: dict[str, Any] = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or [])}
    if requests.get("storage"):
        status["capacity"] = {"storage": requests["storage"]}
    return status


def statefulset_plan(
    sts: Mapping[str, Any], pods: list[dict[str, Any]], *, revision: str
) -> tuple[list[int], list[str]]:
    """Ordinals to create and pod names to delete (surplus highest first, then one outdated pod)."""
    replicas = replicas_of(sts)
    spec = spec_of(sts)
    by_ordinal: dict[int, dict[str, Any]] = {}
    for pod in pods:
        ordinal = ordinal_of(name_of(sts), name_of(pod))
        if ordinal is not None:
            by_ordinal[ordinal] = pod
    surplus = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
    delete = [name_of(by_ordinal[o]) for o in surplus if not is_deleting(by_ordinal[o])]
    missing = [o for o in range(replicas) if o not in by_ordinal]
    parallel = spec.get("podManagementPolicy") == "Parallel"
    create: list[int] = []
    if parallel:
        create = missing
    elif missing:
        first = missing[0]
        if all(pod_is_ready(by_ordinal[o]) for o in range(first)):
            create = [first]
    if create or delete or missing:
        return create, delete
    wanted = [by_ordinal[o] for o in range(replicas)]
    on_delete = (spec.get("updateStrategy") or {}).get("type") == "OnDelete"
    if not on_delete and all(pod_is_ready(p) for p in wanted):
        outdated = [
            p for p in wanted if (meta(p).get("labels") or {}).get(REVISION_LABEL) != revision
        ]
        if outdated:
            delete = [name_of(outdated[-1])]
    return create, delete


def statefulset_status(
    sts: Mapping[str, Any], pods: list[dict[str, Any]], *, revision: str
) -> dict[str, Any]:
    """StatefulSet status; ``currentRevision`` catches up once every pod is updated and ready.

    ``replicas`` counts every pod the controller created, terminating ones too (as
    ``computeReplicaStatus`` does); the other counts only pods that are not being deleted.
    """
    live = [p for p in pods if not is_deleting(p)]
    previous = sts.get("status") if isinstance(sts.get("status"), dict) else {}
    assert isinstance(previous, dict)
    ready = [p for p in live if pod_is_ready(p)]
    updated = [p for p in live if (meta(p).get("labels") or {}).get(REVISION_LABEL) == revision]
    current_revision = str(previous.get("currentRevision") or revision)
    if len(updated) == replicas_of(sts) == len(ready) == len(live):
        current_revision = revision
    current = [
        p for p in live if (meta(p).get("labels") or {}).get(REVISION_LABEL) == current_revision
    ]
    return {
        "observedGeneration": int(meta(sts).get("generation") or 0),
        "replicas": len(pods),
        "readyReplicas": len(ready),
        "currentReplicas": len(current),
        "updatedReplicas": len(updated),
        "availableReplicas": len(ready),
        "currentRevision": current_revision,
        "updateRevision": revision,
        "collisionCount": int(previous.get("collisionCount") or 0),
    }


def replicaset_status(rs: Mapping[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """ReplicaSet status from its (non-terminating) pods."""
    live = [p for p in pods if not is_deleting(p)]
    ready = sum(1 for p in live if pod_is_ready(p))
    return {
        "observedGeneration": int(meta(rs).get("generation") or 0),
        "replicas": len(live),
        "fullyLabeledReplicas": len(live),
        "readyReplicas": ready,
        "availableReplicas": ready,
    }


def max_unavailable(deploy: Mapping[str, Any]) -> int:
    """``rollingUpdate.maxUnavailable`` as a pod count (default 25%, rounded down); 0 for Recreate."""
    strategy = spec_of(deploy).get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", "25%")
    if isinstance(value, str) and value.endswith("%"):
        return replicas_of(deploy) * int(value[:-1]) // 100
    return int(value)


def max_surge(deploy: Mapping[str, Any]) -> int:
    """``maxSurge`` of a rolling Deployment in pods (a percentage of replicas, rounded up)."""
    strategy = spec_of(deploy).get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return math.ceil(replicas_of(deploy) * int(surge[:-1]) / 100)
    return int(surge or 0)


def deployment_status(
    deploy: Mapping[str, Any], replica_sets: list[dict[str, Any]], *, new_rs: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Deployment counters and its Available / Progressing conditions (timestamps left blank)."""

    def counter(rs: Mapping[str, Any], key: str) -> int:
        status = rs.get("status") if isinstance(rs.get("status"), dict) else {}
        assert isinstance(status, dict)
        return int(status.get(key) or 0)

    replicas = sum(counter(rs, "replicas") for rs in replica_sets)
    available = sum(counter(rs, "availableReplicas") for rs in replica_sets)
    new = [rs for rs in replica_sets if name_of(rs) == new_rs]
    updated = counter(new[0], "replicas") if new else 0
    wanted = replicas_of(deploy)
    status: dict[str, Any] = {
        "observedGeneration": int(meta(deploy).get("generation") or 0),
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": sum(counter(rs, "readyReplicas") for rs in replica_sets),
        "availableReplicas": available,
    }
    if replicas - available > 0:
        status["unavailableReplicas"] = replicas - available
    is_available = available >= wanted - max_unavailable(deploy)
    complete = updated == wanted and replicas == wanted and available == wanted
    conditions = [
        {
            "type": "Available",
            "status": "True" if is_available else "False",
            "lastUpdateTime": "",
            "lastTransitionTime": "",
            "reason": "MinimumReplicasAvailable" if is_available else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability."
            if is_available
            else "Deployment does not have minimum availability.",
        },
        {
            "type": "Progressing",
            "status": "True",
            "lastUpdateTime": "",
            "lastTransitionTime": "",
            "reason": "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
            "message": f'ReplicaSet "{new_rs}" has successfully progressed.'
            if complete
            else f'ReplicaSet "{new_rs}" is progressing.',
        },
    ]
    return status, conditions


def daemonset_status(
    ds: Mapping[str, Any], pods: list[dict[str, Any]], *, nodes: int, revision: str
) -> dict[str, Any]:
    """DaemonSet status for ``nodes`` simulated nodes."""
    live = [p for p in pods if not is_deleting(p)]
    ready = sum(1 for p in live if pod_is_ready(p))
    updated = sum(1 for p in live if (meta(p).get("labels") or {}).get(REVISION_LABEL) == revision)
    return {
        "observedGeneration": int(meta(ds).get("generation") or 0),
        "desiredNumberScheduled": nodes,
        "currentNumberScheduled": len(live),
        "numberMisscheduled": 0,
        "numberReady": ready,
        "numberAvailable": ready,
        "updatedNumberScheduled": updated,
    }
