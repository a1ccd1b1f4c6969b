"""Thin helpers over the store and its registry, shared by the controllers."""

from __future__ import annotations

from typing import Any

from kubesim.errors import StatusError
from kubesim.resource_type import ResourceType
from kubesim.resources import Registry
from kubesim.store import Store


def type_for(registry: Registry, group: str, plural: str) -> ResourceType | None:
    """The preferred served resource type for ``group``/``plural`` (None when not served)."""
    for rt in registry.all():
        if rt.group == group and rt.plural == plural:
            return rt
    return None


def storable_types(registry: Registry) -> list[ResourceType]:
    """One resource type per stored collection (version-independent), listable and deletable."""
    seen: set[tuple[str, str]] = set()
    out = []
    for rt in registry.all():
        if rt.storage_key in seen or "list" not in rt.verbs or "delete" not in rt.verbs:
            continue
        seen.add(rt.storage_key)
        out.append(rt)
    return out


def namespaced_types(registry: Registry) -> list[ResourceType]:
    """The storable namespaced resource types."""
    return [rt for rt in storable_types(registry) if rt.namespaced]


def list_objects(store: Store, rt: Any, namespace: str | None) -> list[dict[str, Any]]:
    """Every object of ``rt`` in ``namespace`` (all namespaces when None)."""
    items, _ = store.list(rt, namespace)
    return items


def get_or_none(store: Store, rt: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
    """The object, or None when it does not exist."""
    try:
        obj: dict[str, Any] = store.get(rt, namespace, name)
    except StatusError as err:
        if err.code == 404:
            return None
        raise
    return obj
