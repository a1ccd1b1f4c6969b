"""The Secrets the remote-cluster activities write (built whole, no write when unchanged) and
delete (by name, never read first: one may sit in a namespace out of scope)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activities.context import ControllerContext
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube import errors
from stackflow.models.kinds import SECRETS
from stackflow.models.objects import view
from stackflow.stack.objects import controller_owner_reference

__all__ = ["delete_secret", "owner_reference_of", "write_secret"]


def owner_reference_of(es: Mapping[str, Any]) -> dict[str, Any]:
    return controller_owner_reference(
        {
            "apiVersion": es.get("apiVersion") or ELASTICSEARCH.api_version,
            "kind": es.get("kind") or ELASTICSEARCH.kind,
            "metadata": es["metadata"],
        }
    )


async def delete_secret(context: ControllerContext, namespace: str, name: str) -> bool:
    """Delete a Secret by name (no read first: it may sit in a namespace out of scope)."""
    try:
        await context.scoped.delete(SECRETS, namespace=namespace, name=name)
    except errors.NotFound:
        return False
    return True


async def write_secret(
    context: ControllerContext, current: Mapping[str, Any] | None, desired: dict[str, Any]
) -> bool:
    """Create or replace a Secret built whole here; no write when it is unchanged."""
    meta = view(desired)
    if current is None:
        await context.scoped.create(SECRETS, desired, namespace=meta.namespace)
        return True
    kept = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            **{k: v for k, v in current["metadata"].items() if k in ("resourceVersion", "uid")},
            **desired["metadata"],
        },
        "type": desired.get("type", "Opaque"),
        "data": desired.get("data") or {},
    }
    comparable = {
        "labels": dict(view(current).labels),
        "annotations": dict(view(current).annotations),
        "data": dict(current.get("data") or {}),
        "owners": list(current["metadata"].get("ownerReferences") or []),
    }
    wanted = {
        "labels": dict(desired["metadata"].get("labels") or {}),
        "annotations": dict(desired["metadata"].get("annotations") or {}),
        "data": dict(desired.get("data") or {}),
        "owners": list(desired["metadata"].get("ownerReferences") or []),
    }
    if comparable == wanted:
        return False
    await context.scoped.replace(SECRETS, kept, namespace=meta.namespace, name=meta.name)
    return True
