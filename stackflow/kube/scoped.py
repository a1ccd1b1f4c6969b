"""The one choke point for namespaced reads: the scoped client and the scoped informer.

ECK's ``FilterClient`` and ``NamespacedKind`` in Python. With the namespace selector on, or a
static ``namespaces`` list (``matcher.restricts``), reads of namespaced kinds only see namespaces
the matcher manages (in static mode the informers watch only the listed namespaces anyway, and the
client refuses the others as ECK's multi-namespace cache does):

* ``ScopedClient.get`` in a non-matching namespace raises the same ``NotFound`` the API server
  would (``configmaps "x" not found``); ``list`` drops the items of non-matching namespaces
  (one matcher decision per namespace; a single check when the list names one namespace);
  writes (create, replace, patch, apply, delete) pass through unfiltered, as in ECK.
* ``ScopedInformer`` passes a handler only the events of objects in matching namespaces.

With every namespace managed everything calls straight through (DESIGN principle 2). The few callers
that must see de-scoped objects (flip mappers) say so with ``UnscopedClient``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from stackflow.kube import errors
from stackflow.kube.cache import EventType
from stackflow.kube.informer import EventHandler, Informer
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import Kind
from stackflow.models.objects import view

__all__ = ["ScopeMatcher", "ScopedClient", "ScopedInformer", "UnscopedClient"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class ScopeMatcher(Protocol):
    """What scoping needs of ``stackflow.scope.NamespaceMatcher``."""

    @property
    def enabled(self) -> bool:
        """Whether the namespace selector is on."""
        ...

    @property
    def restricts(self) -> bool:
        """Whether some namespaces are not managed (a selector or a static list)."""
        ...

    @property
    def watched_namespaces(self) -> tuple[str, ...] | None:
        """The namespaces of a static list (with the operator's); None: no static list."""
        ...

    def name_matches(self, name: str) -> bool:
        """Whether namespace ``name`` is managed now."""
        ...


def _namespace_of(obj: Mapping[str, Any] | None) -> str:
    return view(obj).namespace


def _empty_list(resource: Kind) -> dict[str, Any]:
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


class _PassThrough(Generic[_P, _R]):
    """A ``ResourceClient`` method called unchanged on the wrapped client.

    One descriptor instead of a hand-written copy of each signature: the wrapper's method has the
    type of the ``ResourceClient`` method it names, and the call reaches whatever client the
    wrapper holds.
    """

    def __init__(self, method: Callable[Concatenate[ResourceClient, _P], _R]) -> None:
        """Pass calls through to the wrapped client's method of ``method``'s name."""
        self._name = method.__name__
        summary = (method.__doc__ or "").strip().splitlines()[:1]
        self.__doc__ = " ".join([*summary, "Unfiltered."])

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> _PassThrough[_P, _R]: ...

    @overload
    def __get__(self, instance: _WrapsClient, owner: type[Any]) -> Callable[_P, _R]: ...

    def __get__(
        self, instance: _WrapsClient | None, owner: type[Any]
    ) -> _PassThrough[_P, _R] | Callable[_P, _R]:
        """The wrapped client's bound method (the descriptor itself on the class)."""
        if instance is None:
            return self
        method: Callable[_P, _R] = getattr(instance._client, self._name)
        return method


class _WrapsClient:
    """Writes are never filtered (ECK's FilterClient overrides only Get and List)."""

    def __init__(self, client: ResourceClient) -> None:
        self._client = client

    create = _PassThrough(ResourceClient.create)
    replace = _PassThrough(ResourceClient.replace)
    merge_patch = _PassThrough(ResourceClient.merge_patch)
    patch_status = _PassThrough(ResourceClient.patch_status)
    apply = _PassThrough(ResourceClient.apply)
    delete = _PassThrough(ResourceClient.delete)


class ScopedClient(_WrapsClient):
    """The client controllers and activities use: reads see only managed namespaces."""

    def __init__(self, client: ResourceClient, matcher: ScopeMatcher) -> None:
        """Filter ``client``'s reads through ``matcher`` (inert when every namespace is managed)."""
        super().__init__(client)
        self.matcher = matcher

    def _filters(self, resource: Kind) -> bool:
        return self.matcher.restricts and resource.namespaced

    async def get(self, resource: Kind, *, namespace: str | None, name: str) -> dict[str, Any]:
        """GET; an object in a non-matching namespace is reported as not found."""
        if self._filters(resource) and not self.matcher.name_matches(namespace or ""):
            raise errors.not_found(plural=resource.plural, group=resource.group, name=name)
        return await self._client.get(resource, namespace=namespace, name=name)

    async def get_or_none(
        self, resource: Kind, *, namespace: str | None, name: str
    ) -> dict[str, Any] | None:
        """GET, or None when the object does not exist or its namespace is not managed."""
        try:
            return await self.get(resource, namespace=namespace, name=name)
        except errors.NotFound:
            return None

    async def list(
        self,
        resource: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        from_watch_cache: bool = False,
    ) -> dict[str, Any]:
        """LIST; items of non-matching namespaces are left out (``from_watch_cache``: see
        ``ResourceClient.list``)."""
        filters = self._filters(resource)
        # Already limited to one namespace: one decision, and no call when it fails.
        if filters and namespace and not self.matcher.name_matches(namespace):
            return _empty_list(resource)
        watched = self.matcher.watched_namespaces if filters and not namespace else None
        if watched is not None:
            # A static list: one list per managed namespace, as ECK's multi-namespace cache
            # (the operator's role may grant nothing cluster-wide).
            merged = _empty_list(resource)
            for each in watched:
                listed = await self._client.list(
                    resource,
                    namespace=each,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    from_watch_cache=from_watch_cache,
                )
                merged["items"].extend(listed["items"])
            return merged
        listed = await self._client.list(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            from_watch_cache=from_watch_cache,
        )
        if filters and not namespace:
            listed["items"] = filter_by_namespace(listed["items"], self.matcher)
        return listed


class UnscopedClient(_WrapsClient):
    """An explicitly unscoped client, for the few callers that must see de-scoped objects.

    Flip mappers list the objects of a namespace that just left scope; every other caller
    uses ``ScopedClient``. Grep for this name to audit who bypasses scoping.
    """

    get = _PassThrough(ResourceClient.get)
    list = _PassThrough(ResourceClient.list)


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
        return self.matcher.restricts and self.informer.resource.namespaced

    def add_handler(self, handler: EventHandler) -> None:
        """Register ``handler`` behind the namespace predicate (none when every namespace is managed)."""
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
        """Cached objects of matching namespaces (all of them when every namespace is managed)."""
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
