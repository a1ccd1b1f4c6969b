"""Informer plumbing of the watchers: the kinds the controller table makes them watch, and
``InformerSet`` (one shared informer per kind and label selector, with scoped views; also the
activities' read-through ``ObjectReader`` over the unscoped caches).
"""

from __future__ import annotations

import asyncio
from typing import Any

from stackflow.controllers import ControllerTable
from stackflow.kube.informer import Backoff, Informer
from stackflow.kube.reader import UNKNOWN, Unknown, equality_selector, matches_labels
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedInformer
from stackflow.models.kinds import CONFIGMAPS, SECRETS, Kind
from stackflow.scope.matcher import NamespaceMatcher

__all__ = ["InformerSet", "reference_resources"]


def reference_resources(controllers: ControllerTable) -> list[Kind]:
    """The kinds whose changes wake referrers: Secrets and ConfigMaps (any spec may name them)
    and every controller's reference kinds, each once, in first-seen order."""
    kinds: dict[tuple[str, str, str], Kind] = {}
    for kind in (SECRETS, CONFIGMAPS, *controllers.reference_kinds()):
        kinds.setdefault((kind.group, kind.version, kind.plural), kind)
    return list(kinds.values())


class InformerSet:
    """One informer per (resource, label selector), shared by every handler that needs it.

    It is also an ``ObjectReader``: Gets and Lists answered from the raw (unscoped) caches of
    synced informers, so the scope check can tell a deleted object from a de-scoped one.
    """

    def __init__(
        self,
        client: ResourceClient,
        matcher: NamespaceMatcher,
        *,
        backoff: Backoff | None = None,
    ) -> None:
        """Informers list/watch through ``client``; scoped views filter through ``matcher``."""
        self.client = client
        self.matcher = matcher
        self.backoff = backoff
        self._informers: dict[tuple[str, str, str, str], Informer] = {}

    def informer(self, resource: Kind, *, label_selector: str | None = None) -> Informer:
        """The raw (cluster-wide, unfiltered) informer of ``resource``."""
        key = (resource.group, resource.version, resource.plural, label_selector or "")
        if key not in self._informers:
            self._informers[key] = Informer(
                self.client, resource, label_selector=label_selector, backoff=self.backoff
            )
        return self._informers[key]

    def scoped(self, resource: Kind, *, label_selector: str | None = None) -> ScopedInformer:
        """The same informer seen through the matcher."""
        return ScopedInformer(self.informer(resource, label_selector=label_selector), self.matcher)

    def _synced(self, resource: Kind, label_selector: str | None) -> Informer | None:
        key = (resource.group, resource.version, resource.plural, label_selector or "")
        informer = self._informers.get(key)
        if informer is None or not informer.has_synced or informer.namespace is not None:
            return None
        return informer

    def get(
        self, resource: Kind, *, namespace: str | None, name: str
    ) -> dict[str, Any] | Unknown | None:
        """The cached object; None when the synced unfiltered informer lacks it; else UNKNOWN.

        Only the informer of every object can say "absent": a label-filtered one lacks the
        objects its selector leaves out.
        """
        informer = self._synced(resource, None)
        if informer is None:
            return UNKNOWN
        return informer.cache.get(namespace=namespace if resource.namespaced else None, name=name)

    def list(
        self, resource: Kind, *, namespace: str | None, label_selector: str | None
    ) -> list[dict[str, Any]] | Unknown:
        """Cached objects matching ``label_selector`` (one namespace or all), or UNKNOWN.

        From the informer of exactly that selector, else from the unfiltered informer when the
        selector is equality-only.
        """
        informer = self._synced(resource, label_selector)
        if informer is not None:
            return informer.cache.list(namespace=namespace)
        informer = self._synced(resource, None)
        required = equality_selector(label_selector)
        if informer is None or required is None:
            return UNKNOWN
        return [
            obj for obj in informer.cache.list(namespace=namespace) if matches_labels(obj, required)
        ]

    def start(self) -> None:
        """Start every informer."""
        for informer in self._informers.values():
            informer.start()

    async def stop(self) -> None:
        """Stop every informer."""
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))

    async def wait_synced(self) -> None:
        """Wait until every informer listed once."""
        await asyncio.gather(*(informer.wait_synced() for informer in self._informers.values()))

    @property
    def has_synced(self) -> bool:
        """Whether every informer listed once."""
        return all(informer.has_synced for informer in self._informers.values())
