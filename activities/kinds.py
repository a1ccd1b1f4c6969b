"""The kinds the activities write, looked up from a manifest, and event targets of a ref (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.models.engine import ResourceRef
from stackflow.models.kinds import (
    CONFIGMAPS,
    PODDISRUPTIONBUDGETS,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    Kind,
)
from stackflow.models.objects import view

__all__ = ["involved_reference", "resource_for_kind"]

_BY_KIND: Mapping[tuple[str, str], Kind] = {
    (kind.api_version, kind.kind): kind
    for kind in (
        CONFIGMAPS,
        SECRETS,
        SERVICES,
        PODS,
        STATEFULSETS,
        PODDISRUPTIONBUDGETS,
        ELASTICSEARCH,
    )
}


def resource_for_kind(obj: Mapping[str, Any]) -> Kind:
    """The kind of a manifest, from its ``apiVersion`` and ``kind``; KeyError if unknown."""
    meta = view(obj)
    return _BY_KIND[(meta.api_version, meta.kind)]


def involved_reference(ref: ResourceRef, obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """An object to record events on: the stored object when read, else the ref's identity."""
    if obj is not None:
        meta = view(obj)
        return {
            "apiVersion": meta.api_version or ref.api_version,
            "kind": meta.kind or ref.kind,
            "metadata": dict(meta.metadata),
        }
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "metadata": {"namespace": ref.namespace, "name": ref.name},
    }
