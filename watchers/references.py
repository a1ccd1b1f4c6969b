"""The reference index: which resources' specs reference which Secrets and ConfigMaps.

Derived from the primary informers' caches through each controller's pure
``Controller.references`` function, so it is rebuilt by any relist (DESIGN principle 1: process
memory only holds what a watch can rebuild). Synchronous and pure; the informer task that owns
a primary cache is the only writer of that primary's entries.
"""

from __future__ import annotations

from collections.abc import Iterable

from stackflow.models.engine import ObjectKey
from stackflow.models.keys import GroupKindName, ResourceKey

__all__ = ["ReferenceIndex"]


class ReferenceIndex:
    """Referenced object → the resources that reference it, and the reverse."""

    def __init__(self) -> None:
        """Start empty."""
        # A referenced object (whatever its version) → the resources whose spec names it.
        self._referrers: dict[GroupKindName, set[ResourceKey]] = {}
        self._references: dict[ResourceKey, frozenset[GroupKindName]] = {}

    def __len__(self) -> int:
        """Number of referenced objects known."""
        return len(self._referrers)

    def set_references(
        self, *, controller: str, namespace: str, name: str, references: Iterable[ObjectKey]
    ) -> None:
        """Record the complete set of objects a resource references now (replaces the old)."""
        referrer = ResourceKey(controller, namespace, name)
        new = frozenset(GroupKindName.of_key(key) for key in references)
        old = self._references.get(referrer, frozenset())
        for gone in old - new:
            self._discard(gone, referrer)
        for added in new - old:
            self._referrers.setdefault(added, set()).add(referrer)
        if new:
            self._references[referrer] = new
        else:
            self._references.pop(referrer, None)

    def remove(self, *, controller: str, namespace: str, name: str) -> None:
        """Forget a resource (it was deleted)."""
        self.set_references(controller=controller, namespace=namespace, name=name, references=())

    def referrers(self, *, group: str, kind: str, namespace: str, name: str) -> list[ResourceKey]:
        """The resources referencing an object, sorted (for stable signalling order)."""
        return sorted(self._referrers.get(GroupKindName(group, kind, namespace, name), ()))

    def referrers_into(self, namespace: str) -> list[ResourceKey]:
        """The resources referencing any object in ``namespace``, each once, sorted."""
        found: set[ResourceKey] = set()
        for key, referrers in self._referrers.items():
            if key.namespace == namespace:
                found.update(referrers)
        return sorted(found)

    def references_of(self, *, controller: str, namespace: str, name: str) -> list[GroupKindName]:
        """What a resource references, sorted."""
        return sorted(self._references.get(ResourceKey(controller, namespace, name), ()))

    def _discard(self, key: GroupKindName, referrer: ResourceKey) -> None:
        referrers = self._referrers.get(key)
        if referrers is None:
            return
        referrers.discard(referrer)
        if not referrers:
            del self._referrers[key]
