"""The reference index: which resources' specs reference which Secrets and ConfigMaps.

Derived from the primary informers' caches through each controller's pure
``Controller.references`` function, so it is rebuilt by any relist (DESIGN principle 1: process
memory only holds what a watch can rebuild). Synchronous and pure; the informer task that owns
a primary cache is the only writer of that primary's entries.
"""

from __future__ import annotations

from collections.abc import Iterable

from stackflow.models.engine import ObjectKey

__all__ = ["ReferenceIndex", "ReferencedKey", "ReferrerKey"]

ReferencedKey = tuple[str, str, str, str]
"""(group, kind, namespace, name) of a referenced object (the version does not matter)."""

ReferrerKey = tuple[str, str, str]
"""(controller name, namespace, name) of a resource whose spec holds a reference."""


def referenced_key(key: ObjectKey) -> ReferencedKey:
    """The index key of a referenced object."""
    return (key.group, key.kind, key.namespace, key.name)


class ReferenceIndex:
    """Referenced object → the resources that reference it, and the reverse."""

    def __init__(self) -> None:
        """Start empty."""
        self._referrers: dict[ReferencedKey, set[ReferrerKey]] = {}
        self._references: dict[ReferrerKey, frozenset[ReferencedKey]] = {}

    def __len__(self) -> int:
        """Number of referenced objects known."""
        return len(self._referrers)

    def set_references(
        self, *, controller: str, namespace: str, name: str, references: Iterable[ObjectKey]
    ) -> None:
        """Record the complete set of objects a resource references now (replaces the old)."""
        referrer = (controller, namespace, name)
        new = frozenset(referenced_key(key) for key in references)
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

    def referrers(self, *, group: str, kind: str, namespace: str, name: str) -> list[ReferrerKey]:
        """The resources referencing an object, sorted (for stable signalling order)."""
        return sorted(self._referrers.get((group, kind, namespace, name), ()))

    def references_of(self, *, controller: str, namespace: str, name: str) -> list[ReferencedKey]:
        """What a resource references, sorted."""
        return sorted(self._references.get((controller, namespace, name), ()))

    def _discard(self, key: ReferencedKey, referrer: ReferrerKey) -> None:
        referrers = self._referrers.get(key)
        if referrers is None:
            return
        referrers.discard(referrer)
        if not referrers:
            del self._referrers[key]
