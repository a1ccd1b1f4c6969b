"""The keys that name an object, one type per meaning.

* `NamespacedName`: an object of a kind the context already fixes (an informer's cache, the
  owner of a child in the controller table): its namespace (``""`` when cluster-scoped) and name.
* `GroupKindName`: an object of any kind, whatever its version (the objects a spec references,
  the operator's memory of its own writes).
* `ResourceKey`: one resource as one controller sees it, as its workflow id
  ``{controller}/{namespace}/{name}`` names it.

They are named tuples: hashable, as small as plain tuples, and equal to the plain tuples of the
same fields. ``stackflow.models.engine.ObjectKey`` is the engine's contract (a referenced object
as a workflow's history carries it, with its version) and `GroupKindName.of_key` its key.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from stackflow.models.kinds import Kind

__all__ = ["GroupKindName", "NamespacedName", "ResourceKey"]


class NamespacedName(NamedTuple):
    """An object of a known kind: its namespace (``""`` for cluster-scoped objects) and name."""

    namespace: str
    name: str


class _KindedObject(Protocol):
    """What names an object of any kind (``stackflow.models.engine.ObjectKey`` is one)."""

    @property
    def group(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...


class GroupKindName(NamedTuple):
    """An object of any kind, whatever its version: API group, kind, namespace and name."""

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, kind: Kind, *, namespace: str | None, name: str) -> GroupKindName:
        """The key of one object of ``kind`` (namespace None or ``""``: cluster-scoped)."""
        return cls(kind.group, kind.kind, namespace or "", name)

    @classmethod
    def of_key(cls, key: _KindedObject) -> GroupKindName:
        """The key of a referenced object (``ObjectKey``), without its version."""
        return cls(key.group, key.kind, key.namespace, key.name)


class ResourceKey(NamedTuple):
    """One resource of one controller, as a workflow id ``{controller}/{namespace}/{name}``
    names it."""

    controller: str
    namespace: str
    name: str
