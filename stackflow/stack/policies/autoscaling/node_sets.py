"""What the autoscaler writes into the Elasticsearch resource and cluster: each node set's count,
resources and data claim, and the machine learning settings.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from stackflow.models.quantity import same_quantity
from stackflow.stack.policies.autoscaling.quantities import format_quantity, whole
from stackflow.stack.policies.autoscaling.results import (
    NodeSetResources,
    PolicyResult,
    resource_limits,
    resource_requests,
)
from stackflow.stack.policies.autoscaling.spec import ML_ROLE, PolicyLimits, VolumeClaimError

__all__ = [
    "DATA_VOLUME_CLAIM",
    "ELASTICSEARCH_CONTAINER",
    "ml_node_settings",
    "scaled_node_sets",
]

#: The container whose resources a policy sets, and the claim holding a node's data (ECK's names).
ELASTICSEARCH_CONTAINER = "elasticsearch"


DATA_VOLUME_CLAIM = "elasticsearch-data"


def _merge_quantities(
    section: Mapping[str, Any] | None, wanted: Mapping[str, str]
) -> dict[str, Any]:
    merged = dict(section or {})
    for key, value in wanted.items():
        if not same_quantity(merged.get(key), value):
            merged[key] = value
    return merged


def _strip_container_resources(node_set: dict[str, Any]) -> None:
    """ECK drops cpu and memory from the ``elasticsearch`` container of the pod template: the
    node set's ``resources`` carries them."""
    spec = (node_set.get("podTemplate") or {}).get("spec") or {}
    for container in spec.get("containers") or ():
        if container.get("name") != ELASTICSEARCH_CONTAINER:
            continue
        resources = container.get("resources") or {}
        for part in ("requests", "limits"):
            section = resources.get(part)
            if isinstance(section, dict):
                for key in ("cpu", "memory"):
                    section.pop(key, None)
                if not section:
                    resources.pop(part)
        if "resources" in container and not resources:
            container.pop("resources")
        break


def _apply(node_set: dict[str, Any], resources: NodeSetResources, count: int) -> None:
    """Give one node set (a copy) its count, its ``resources`` (cpu and memory, merged into
    what it has) and its data claim's storage, as ECK writes them."""
    node_set["count"] = count
    requests, limits = resource_requests(resources, storage=False), resource_limits(resources)
    if requests or limits or node_set.get("resources"):
        current = dict(node_set.get("resources") or {})
        merged = {
            part: _merge_quantities(current.get(part), wanted)
            for part, wanted in (("requests", requests), ("limits", limits))
        }
        node_set["resources"] = {**current, **{k: v for k, v in merged.items() if v}}
    _strip_container_resources(node_set)
    if resources.storage is None:
        return
    claims = list(node_set.get("volumeClaimTemplates") or [])
    if len(claims) > 1:
        raise VolumeClaimError(
            f"node set {node_set.get('name')}: autoscaling supports one volume claim template"
        )
    claim: dict[str, Any] = (
        copy.deepcopy(dict(claims[0]))
        if claims
        else {"metadata": {"name": DATA_VOLUME_CLAIM}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    )
    requests_section = (
        claim.setdefault("spec", {}).setdefault("resources", {}).setdefault("requests", {})
    )
    if not same_quantity(requests_section.get("storage"), format_quantity(resources.storage)):
        requests_section["storage"] = format_quantity(resources.storage)
    node_set["volumeClaimTemplates"] = [claim]


def scaled_node_sets(
    node_sets: Sequence[Mapping[str, Any]], results: Sequence[PolicyResult]
) -> list[dict[str, Any]] | None:
    """``spec.nodeSets`` with each policy's resources and counts on its node sets, or None when
    every node set already has them (nothing to write). A policy without resources leaves its
    node sets alone; VolumeClaimError for a node set ECK could not size."""
    scaled = copy.deepcopy([dict(node_set) for node_set in node_sets])
    by_name = {str(node_set.get("name")): node_set for node_set in scaled}
    for result in results:
        if result.resources is None:
            continue
        for name, count in result.node_sets:
            if name in by_name:
                _apply(by_name[name], result.resources, count)
    return scaled if scaled != [dict(node_set) for node_set in node_sets] else None


def ml_node_settings(policies: Sequence[PolicyLimits]) -> dict[str, Any]:
    """ECK's persistent cluster settings for machine learning, put on every online reconcile:
    as many lazy ML nodes as the ``ml`` policies' maximum node counts add up to, the largest
    maximum memory of them as the largest ML node (``<bytes>b``), and automatic memory."""
    ml = [policy for policy in policies if ML_ROLE in policy.roles]
    nodes = sum(int(policy.node_count.max) for policy in ml)
    memory = max((whole(p.memory.max) for p in ml if p.memory is not None), default=0)
    return {
        "xpack.ml.max_ml_node_size": f"{memory}b",
        "xpack.ml.max_lazy_ml_nodes": nodes,
        "xpack.ml.use_auto_machine_memory_percent": True,
    }
