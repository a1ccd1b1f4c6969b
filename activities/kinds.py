"""The Kubernetes resources the activities address, and engine refs turned into them (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.kube.resources import (
    CONFIGMAPS,
    PODS,
    SECRETS,
    SERVICES,
    ResourceRef,
)
from stackflow.models.engine import ResourceRef as EngineRef

__all__ = [
    "CONFIGMAPS",
    "ELASTICSEARCHES",
    "PODDISRUPTIONBUDGETS",
    "PODS",
    "SECRETS",
    "SERVICES",
    "STATEFULSETS",
    "involved_reference",
    "resource_for_kind",
    "resource_of",
]

ELASTICSEARCHES = ResourceRef(
    "elasticsearch.k8s.elastic.co", "v1", "elasticsearches", namespaced=True, kind="Elasticsearch"
)
STATEFULSETS = ResourceRef("apps", "v1", "statefulsets", namespaced=True, kind="StatefulSet")
PODDISRUPTIONBUDGETS = ResourceRef(
    "policy", "v1", "poddisruptionbudgets", namespaced=True, kind="PodDisruptionBudget"
)

_BY_KIND: Mapping[tuple[str, str], ResourceRef] = {
    (resource.api_version, resource.kind): resource
    for resource in (
        CONFIGMAPS,
        SECRETS,
        SERVICES,
        PODS,
        STATEFULSETS,
        PODDISRUPTIONBUDGETS,
        ELASTICSEARCHES,
    )
}


def resource_of(ref: EngineRef) -> ResourceRef:
    """The Kubernetes resource of a workflow's primary object."""
    return ResourceRef(ref.group, ref.version, ref.plural, namespaced=True, kind=ref.kind)


def resource_for_kind(obj: Mapping[str, Any]) -> ResourceRef:
    """The resource of a manifest, from its ``apiVersion`` and ``kind``; KeyError if unknown."""
    return _BY_KIND[(str(obj.get("apiVersion")), str(obj.get("kind")))]


def involved_reference(ref: EngineRef, obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """An object to record events on: the stored object when read, else the ref's identity."""
    if obj is not None:
        return {
            "apiVersion": obj.get("apiVersion") or ref.api_version,
            "kind": obj.get("kind") or ref.kind,
            "metadata": obj.get("metadata") or {},
        }
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "metadata": {"namespace": ref.namespace, "name": ref.name},
    }
