"""The one choke point for namespaced reads: the scoped client and the scoped informer.

ECK's ``FilterClient`` and ``NamespacedKind`` in Python. With the namespace selector on
(``matcher.enabled``), reads of namespaced kinds only see namespaces the matcher manages:

* ``ScopedClient.get`` in a non-matching namespace raises the same ``NotFound`` the API server
  would (``configmaps "x" not found``); ``list`` drops the items of non-matching namespaces
  (one matcher decision per namespace; a single check when the list names one namespace);
  writes (create, replace, patch, apply, delete) pass through unfiltered, as in ECK.
* ``ScopedInformer`` passes a handler only the events of objects in matching namespaces.

With the selector off everything calls straight through (DESIGN principle 2). The few callers
that must see de-scoped objects (flip mappers) say so with ``UnscopedClient``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stackflow.kube import errors
from stackflow.kube.cache import EventType
from stackflow.kube.informer import EventHandler, Informer
from stackflow.kube.resources import ResourceClient, ResourceRef

__all__ = ["ScopeMatcher", "ScopedClient", "ScopedInformer", "UnscopedClient"]


class ScopeMatcher(Protocol):
    """What scoping needs of ``stackflow.scope.NamespaceMatcher``."""

    @property
    def enabled(self) -> bool:
        """Whether the namespace selector is on."""
        ...

    def name_matches(self, name: str) -> bool:
        """Whether namespace ``name`` is managed now."""
        ...


def _namespace_of(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("namespace") or "")


def _empty_list(resource: ResourceRef) -> dict[str, Any]:
    return {
        "apiVersion": resource.api_version,
        "kind": f"{resource.kind}List" if resource.kind else "List",
        "metadata": {},
        "items": [],
    }


def filter_by_namespace(items: list[dict[str, Any]], matcher: ScopeMatcher) -> list[dict[str, Any]]:
    """Keep items of matching namespaces; one matcher decision per namespace (pure)."""
    verdicts: dict[str, bool] = {}
    kept: list[dict[str, Any]] = []
    for item in items:
        namespace = _namespace_of(item)
        if namespace not in verdicts:
            verdicts[namespace] = matcher.name_matches(namespace)
        if verdicts[namespace]:
            kept.append(item)
    return kept


class _WritesPassThrough:
    """Writes are never filtered (ECK's FilterClient overrides only Get and List)."""

    def __init__(self, client: ResourceClient) -> None:
        self._client = client

    async def create(
        self,
        resource: ResourceRef,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Create an object (unfiltered)."""
        return await self._client.create(
            resource, body, namespace=namespace, field_manager=field_manager
        )

    async def replace(
        self,
        resource: ResourceRef,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Replace an object (unfiltered)."""
        return await self._client.replace(
            resource, body, namespace=namespace, name=name, subresource=subresource
        )

    async def merge_patch(
        self,
        resource: ResourceRef,
        patch: Mapping[str, Any],
        *,
        namespace: str | None,
        name: str,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Merge-patch an object (unfiltered)."""
        return await self._client.merge_patch(
            resource,
            patch,
            namespace=namespace,
            name=name,
            subresource=subresource,
            field_manager=field_manager,
        )

    async def patch_status(
        self,
        resource: ResourceRef,
        patch: Mapping[str, Any],
        *,
        namespace: str | None,
        name: str,
    ) -> dict[str, Any]:
        """Merge-patch an object's status (unfiltered)."""
        return await self._client.patch_status(resource, patch, namespace=namespace, name=name)

    async def apply(
        self,
        resource: ResourceRef,
        body: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply (unfiltered)."""
        return await self._client.apply(
            resource,
            body,
            field_manager=field_manager,
            force=force,
            namespace=namespace,
            subresource=subresource,
        )

    async def delete(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None,
        name: str,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Delete an object (unfiltered)."""
        return await self._client.delete(
            resource,
            namespace=namespace,
            name=name,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
        )


class ScopedClient(_WritesPassThrough):
    """The client controllers and activities use: reads see only managed namespaces."""

    def __init__(self, client: ResourceClient, matcher: ScopeMatcher) -> None:
        """Filter ``client``'s reads through ``matcher`` (inert when the selector is off)."""
        super().__init__(client)
        self.matcher = matcher

    def _filters(self, resource: ResourceRef) -> bool:
        return self.matcher.enabled and resource.namespaced

    async def get(
        self, resource: ResourceRef, *, namespace: str | None, name: str
    ) -> dict[str, Any]:
        """GET; an object in a non-matching namespace is reported as not found."""
        if self._filters(resource) and not self.matcher.name_matches(namespace or ""):
            raise errors.not_found(plural=resource.plural, group=resource.group, name=name)
        return await self._client.get(resource, namespace=namespace, name=name)

    async def list(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        """LIST; items of non-matching namespaces are left out."""
        if not self._filters(resource):
            return await self._client.list(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        if namespace:
            # Already limited to one namespace: one decision, and no call when it fails.
            if not self.matcher.name_matches(namespace):
                return _empty_list(resource)
            return await self._client.list(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        listed = await self._client.list(
            resource, label_selector=label_selector, field_selector=field_selector
        )
        listed["items"] = filter_by_namespace(listed["items"], self.matcher)
        return listed


class UnscopedClient(_WritesPassThrough):
    """An explicitly unscoped client, for the few callers that must see de-scoped objects.

    Flip mappers list the objects of a namespace that just left scope; every other caller
    uses ``ScopedClient``. Grep for this name to audit who bypasses scoping.
    """

    async def get(
        self, resource: ResourceRef, *, namespace: str | None, name: str
    ) -> dict[str, Any]:
        """GET, unfiltered."""
        return await self._client.get(resource, namespace=namespace, name=name)

    async def list(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        """LIST, unfiltered."""
        return await self._client.list(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
        )


class ScopedInformer:
    """An informer seen through the matcher (ECK's NamespacedKind).

    With the selector on, handlers of a namespaced kind only receive events of objects in
    matching namespaces, and cache reads only return such objects; with it off, handlers are
    registered as they are. The informer keeps caching everything (cluster-wide), so that an
    object is at hand the moment its namespace flips into scope.
    """

    def __init__(self, informer: Informer, matcher: ScopeMatcher) -> None:
        """Wrap ``informer``; it is started and stopped through this wrapper or directly."""
        self.informer = informer
        self.matcher = matcher

    def _filters(self) -> bool:
        return self.matcher.enabled and self.informer.resource.namespaced

    def add_handler(self, handler: EventHandler) -> None:
        """Register ``handler`` behind the namespace predicate (none when selector is off)."""
        if not self._filters():
            self.informer.add_handler(handler)
            return
        matcher = self.matcher

        def scoped_handler(
            event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
        ) -> Any:
            # Decided when the event is dispatched, so a namespace flip applies at once.
            if not matcher.name_matches(_namespace_of(new if new is not None else old)):
                return None
            return handler(event_type, old, new)

        self.informer.add_handler(scoped_handler)

    def get(self, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A cached object, or None if absent or in a non-matching namespace."""
        if self._filters() and not self.matcher.name_matches(namespace or ""):
            return None
        return self.informer.cache.get(namespace=namespace, name=name)

    def list(self, *, namespace: str | None = None) -> list[dict[str, Any]]:
        """Cached objects of matching namespaces (all of them when the selector is off)."""
        if not self._filters():
            return self.informer.cache.list(namespace=namespace)
        if namespace is not None:
            if not self.matcher.name_matches(namespace):
                return []
            return self.informer.cache.list(namespace=namespace)
        return filter_by_namespace(self.informer.cache.list(), self.matcher)

    @property
    def has_synced(self) -> bool:
        """Whether the underlying informer has synced."""
        return self.informer.has_synced

    async def wait_synced(self) -> None:
        """Wait for the underlying informer's first list."""
        await self.informer.wait_synced()

    def start(self) -> None:
        """Start the underlying informer."""
        self.informer.start()

    async def stop(self) -> None:
        """Stop the underlying informer."""
        await self.informer.stop()
