"""Typed read views of Kubernetes objects held as plain dicts.

Objects travel as the JSON dicts the API server sends (informer caches, list results); code that
needs their metadata reads it through ``view(obj)`` instead of ``obj.get("metadata") or {}``, so
a missing or malformed field reads as empty in one place. Pure, and cheap: a view holds a
reference to the object, it copies nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ObjectView", "OwnerReference", "view"]

_EMPTY: Mapping[str, Any] = {}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


@dataclass(frozen=True)
class OwnerReference:
    """One entry of ``metadata.ownerReferences``."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool

    @property
    def group(self) -> str:
        """The owner's API group ("" for core)."""
        return self.api_version.rpartition("/")[0]


@dataclass(frozen=True)
class ObjectView:
    """Read access to one object's identity and metadata."""

    obj: Mapping[str, Any]

    @property
    def metadata(self) -> Mapping[str, Any]:
        """``metadata`` (empty when absent)."""
        return _mapping(self.obj.get("metadata"))

    @property
    def api_version(self) -> str:
        """``apiVersion`` ("" when absent)."""
        return str(self.obj.get("apiVersion") or "")

    @property
    def kind(self) -> str:
        """``kind`` ("" when absent)."""
        return str(self.obj.get("kind") or "")

    @property
    def name(self) -> str:
        """``metadata.name`` ("" when absent)."""
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` ("" for cluster-scoped objects)."""
        return str(self.metadata.get("namespace") or "")

    @property
    def uid(self) -> str:
        """``metadata.uid`` ("" when absent)."""
        return str(self.metadata.get("uid") or "")

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion`` ("" when absent)."""
        return str(self.metadata.get("resourceVersion") or "")

    @property
    def generation(self) -> int | None:
        """``metadata.generation``, when it is an integer."""
        generation = self.metadata.get("generation")
        return generation if isinstance(generation, int) else None

    @property
    def deletion_timestamp(self) -> str | None:
        """``metadata.deletionTimestamp``, when the object is being deleted."""
        stamp = self.metadata.get("deletionTimestamp")
        return str(stamp) if stamp else None

    @property
    def labels(self) -> Mapping[str, str]:
        """``metadata.labels`` (empty when absent)."""
        return _mapping(self.metadata.get("labels"))

    @property
    def annotations(self) -> Mapping[str, str]:
        """``metadata.annotations`` (empty when absent)."""
        return _mapping(self.metadata.get("annotations"))

    @property
    def owner_references(self) -> tuple[OwnerReference, ...]:
        """``metadata.ownerReferences``, well-formed entries only."""
        owners = self.metadata.get("ownerReferences")
        if not isinstance(owners, list):
            return ()
        return tuple(
            OwnerReference(
                api_version=str(owner.get("apiVersion") or ""),
                kind=str(owner.get("kind") or ""),
                name=str(owner.get("name") or ""),
                uid=str(owner.get("uid") or ""),
                controller=owner.get("controller") is True,
            )
            for owner in owners
            if isinstance(owner, Mapping)
        )

    @property
    def key(self) -> str:
        """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def view(obj: Mapping[str, Any] | None) -> ObjectView:
    """A read view of ``obj`` (None reads as an empty object)."""
    return ObjectView(_EMPTY if obj is None else obj)
