"""Informer plumbing of the watchers: the controller-table shapes they rely on, the mapping from a
controller kind to a ``stackflow.kube`` resource and a workflow ref, and ``InformerSet`` (one shared
informer per resource and label selector, with scoped views; also the activities' read-through
``ObjectReader`` over the unscoped caches).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from stackflow.kube.informer import Backoff, Informer
from stackflow.kube.reader import UNKNOWN, Unknown, equality_selector, matches_labels
from stackflow.kube.resources import CONFIGMAPS, SECRETS, ResourceClient
from stackflow.kube.resources import ResourceRef as KubeResource
from stackflow.kube.scoped import ScopedInformer
from stackflow.models.engine import ObjectKey, ResourceRef
from stackflow.scope.matcher import NamespaceMatcher

__all__ = [
    "ChildWatchLike",
    "ControllerLike",
    "InformerSet",
    "KindLike",
    "kube_resource",
    "reference_resources",
    "resource_ref",
]


class KindLike(Protocol):
    """What the watchers need of ``stackflow.controllers.Kind``."""

    @property
    def group(self) -> str:
        """API group ("" for core)."""
        ...

    @property
    def version(self) -> str:
        """API version."""
        ...

    @property
    def kind(self) -> str:
        """Kind."""
        ...

    @property
    def plural(self) -> str:
        """Resource (plural) name."""
        ...


class ChildWatchLike(Protocol):
    """What the watchers need of ``stackflow.controllers.ChildWatch``."""

    @property
    def kind(self) -> KindLike:
        """The child kind."""
        ...

    @property
    def owner(self) -> Callable[[dict[str, Any]], tuple[str, str] | None]:
        """Child → (namespace, owner name) or None."""
        ...

    @property
    def label_selector(self) -> str | None:
        """Narrows the child informer (None: every object)."""
        ...


class ControllerLike(Protocol):
    """What the watchers need of ``stackflow.controllers.Controller``."""

    @property
    def name(self) -> str:
        """Controller name."""
        ...

    @property
    def primary(self) -> KindLike:
        """Primary kind."""
        ...

    @property
    def gated(self) -> bool:
        """Whether the license gate applies."""
        ...

    @property
    def children(self) -> Sequence[ChildWatchLike]:
        """Child watches."""
        ...

    @property
    def references(self) -> Callable[[dict[str, Any]], list[ObjectKey]]:
        """Primary → the Secrets/ConfigMaps its spec references."""
        ...

    @property
    def primary_label_selector(self) -> str | None:
        """Narrows the primary informer (None: every object)."""
        ...

    @property
    def reference_kinds(self) -> Sequence[KindLike]:
        """Every kind ``references`` can name (Secrets, Services, association targets…)."""
        ...


def kube_resource(kind: KindLike) -> KubeResource:
    """The ``stackflow.kube`` resource of a (namespaced) controller kind."""
    return KubeResource(kind.group, kind.version, kind.plural, namespaced=True, kind=kind.kind)


def reference_resources(controllers: Sequence[ControllerLike]) -> list[KubeResource]:
    """The resources whose changes wake referrers: Secrets and ConfigMaps (any spec may name
    them) and every controller's reference kinds, each once, in first-seen order."""
    resources: dict[tuple[str, str, str], KubeResource] = {}
    for resource in (SECRETS, CONFIGMAPS):
        resources[(resource.group, resource.version, resource.plural)] = resource
    for controller in controllers:
        for kind in controller.reference_kinds:
            resources.setdefault((kind.group, kind.version, kind.plural), kube_resource(kind))
    return list(resources.values())


def resource_ref(controller: ControllerLike, *, namespace: str, name: str) -> ResourceRef:
    """The workflow identity of a resource as ``controller`` sees it."""
    kind = controller.primary
    return ResourceRef(
        controller=controller.name,
        group=kind.group,
        version=kind.version,
        kind=kind.kind,
        plural=kind.plural,
        namespace=namespace,
        name=name,
    )


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

    def informer(self, resource: KubeResource, *, label_selector: str | None = None) -> Informer:
        """The raw (cluster-wide, unfiltered) informer of ``resource``."""
        key = (resource.group, resource.version, resource.plural, label_selector or "")
        if key not in self._informers:
            self._informers[key] = Informer(
                self.client, resource, label_selector=label_selector, backoff=self.backoff
            )
        return self._informers[key]

    def scoped(
        self, resource: KubeResource, *, label_selector: str | None = None
    ) -> ScopedInformer:
        """The same informer seen through the matcher."""
        return ScopedInformer(self.informer(resource, label_selector=label_selector), self.matcher)

    def _synced(self, resource: KubeResource, label_selector: str | None) -> Informer | None:
        key = (resource.group, resource.version, resource.plural, label_selector or "")
        informer = self._informers.get(key)
        if informer is None or not informer.has_synced or informer.namespace is not None:
            return None
        return informer

    def get(
        self, resource: KubeResource, *, namespace: str | None, name: str
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
        self, resource: KubeResource, *, namespace: str | None, label_selector: str | None
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
