"""Generic access to any Kubernetes kind (a ``stackflow.models.kinds.Kind``).

Works the same for built-ins (core group ``""`` under ``/api/v1``) and custom resources, speaks
JSON, and returns plain dicts. Every call goes through ``errors.translate_errors``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from stackflow.kube import decoding, errors
from stackflow.kube.writes import OwnWrites
from stackflow.models.kinds import (
    CONFIGMAPS,
    EVENTS,
    LEASES,
    NAMESPACES,
    PODS,
    SECRETS,
    SERVICES,
    Kind,
)

__all__ = [
    "CONFIGMAPS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "PODS",
    "SECRETS",
    "SERVICES",
    "Kind",
    "ResourceClient",
]

_JSON = "application/json"
_MERGE_PATCH = "application/merge-patch+json"
_APPLY_PATCH = "application/apply-patch+yaml"
_AUTH_SETTINGS = ["BearerToken"]


def _item_kind(list_kind: object, resource: Kind) -> str:
    if isinstance(list_kind, str) and list_kind.endswith("List"):
        return list_kind[: -len("List")]
    return resource.kind


def _query(**params: object) -> list[tuple[str, str]]:
    """Query tuples without the unset ones; booleans as Kubernetes spells them."""
    query: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None or value is False:
            continue
        query.append((key, "true" if value is True else str(value)))
    return query


class ResourceClient:
    """Unfiltered CRUD, list and watch on any resource; objects are plain dicts.

    This is the raw client: namespaced reads by controllers go through
    ``stackflow.kube.scoped.ScopedClient`` instead.
    """

    def __init__(
        self, api_client: k8s_client.ApiClient, *, own_writes: OwnWrites | None = None
    ) -> None:
        """Use ``api_client`` for every call (it owns the HTTP session).

        With ``own_writes``, every object a write returns is remembered there, so the watchers can
        tell the echoes of the operator's own writes from changes made by others.
        """
        self.api_client = api_client
        self.own_writes = own_writes

    def _writing(
        self, resource: Kind, namespace: str | None, name: str
    ) -> contextlib.AbstractContextManager[None]:
        """Mark a write of ours to the object as in flight while it is made (see OwnWrites)."""
        if self.own_writes is None:
            return contextlib.nullcontext()
        return self.own_writes.writing(resource, namespace=namespace, name=name)

    def _written(self, resource: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        if self.own_writes is not None:
            self.own_writes.record(resource, obj)
        return obj

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = _JSON,
    ) -> dict[str, Any]:
        result, _ = await self._call_document(
            method, path, query=query, body=body, content_type=content_type
        )
        return result if isinstance(result, dict) else {}

    async def _call_document(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = _JSON,
    ) -> tuple[Any, bool]:
        """The decoded answer, and whether it may nest deeper than an object may.

        The body is decoded here rather than by kubernetes_asyncio, whose ``json.loads`` raises
        ``RecursionError`` on an object nested too deep: ``decoding.loads`` never does.
        """
        with errors.translate_errors():
            response = await self.api_client.call_api(
                path,
                method,
                query_params=query or [],
                header_params={"Accept": _JSON, "Content-Type": content_type},
                body=body,
                auth_settings=_AUTH_SETTINGS,
                _preload_content=False,
            )
            async with response:
                raw = await response.read()
                if not 200 <= response.status <= 299:
                    failure = ApiException(status=response.status, reason=response.reason)
                    failure.body, failure.headers = raw, response.headers
                    raise failure
        if not raw.strip():
            return {}, False
        try:
            document = decoding.loads(raw)
        except decoding.DocumentError as error:
            raise errors.Undecodable(f"{method} {path}: the answer is {error}") from None
        return document, decoding.may_nest_deeper(raw)

    async def get(self, resource: Kind, *, namespace: str | None, name: str) -> dict[str, Any]:
        """GET one object; raises ``NotFound`` when it does not exist, ``Undecodable`` when it
        cannot be used (nested too deep, wrong shape: see ``stackflow.kube.decoding``)."""
        obj, may_be_deep = await self._call_document("GET", resource.object_path(namespace, name))
        problem = decoding.object_problem(obj, may_be_deep=may_be_deep)
        if problem is not None:
            where = f"{namespace}/{name}" if namespace else name
            raise errors.Undecodable(f"{resource.kind} {where}: {problem}")
        assert isinstance(obj, dict)
        return obj

    async def list(
        self,
        resource: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        from_watch_cache: bool = False,
    ) -> dict[str, Any]:
        """LIST every page; returns the ``<Kind>List`` dict with all items.

        ``namespace`` None lists across all namespaces. Items carry ``apiVersion`` and
        ``kind`` (the server omits them inside lists) so they look like watched objects.
        ``metadata.resourceVersion`` is the first page's: the snapshot the pages belong to.

        ``from_watch_cache`` asks for ``resourceVersion=0``: the API server answers from its watch
        cache as it stands, as fresh as an informer's cache. A consistent list (the default)
        first waits until that cache has caught up with etcd, and when the kind has had no
        change since the last write of any kind, that takes one of the server's watch-progress
        requests, which it makes at most every 100 ms: a wait of up to 100 ms that a reader
        whose writes carry the listed ``resourceVersion`` (so that a stale read fails them)
        does not need.

        An item that cannot be used (``decoding.object_problem``: nested too deep, wrong shape)
        is left out of ``items`` and described, as far as it can be named, under
        ``decoding.QUARANTINED_KEY`` (plain dicts, present only when there is one): the informer
        reports it; one poison object never hides the others.
        """
        path = resource.collection_path(namespace)
        items: list[dict[str, Any]] = []
        quarantined: list[dict[str, str]] = []
        first_page: dict[str, Any] | None = None
        continue_token: str | None = None
        while True:
            document, may_be_deep = await self._call_document(
                "GET",
                path,
                query=_query(
                    labelSelector=label_selector or None,
                    fieldSelector=field_selector or None,
                    limit=page_size,
                    # Later pages belong to the first one's snapshot (the continue token).
                    resourceVersion="0" if from_watch_cache and first_page is None else None,
                    **{"continue": continue_token},
                ),
            )
            page = document if isinstance(document, dict) else {}
            if first_page is None:
                first_page = page
            page_items = page.get("items")
            for item in page_items if isinstance(page_items, list) else []:
                problem = decoding.object_problem(item, may_be_deep=may_be_deep)
                if problem is None:
                    items.append(item)
                else:
                    quarantined.append(decoding.Quarantined.of(item, problem).to_dict())
            page_metadata = page.get("metadata")
            token = page_metadata.get("continue") if isinstance(page_metadata, dict) else None
            continue_token = token if isinstance(token, str) and token else None
            if not continue_token:
                break
        assert first_page is not None
        item_kind = _item_kind(first_page.get("kind"), resource)
        for item in items:
            item.setdefault("apiVersion", resource.api_version)
            if item_kind:
                item.setdefault("kind", item_kind)
        first_metadata = first_page.get("metadata")
        metadata = dict(first_metadata) if isinstance(first_metadata, dict) else {}
        metadata.pop("continue", None)
        metadata.pop("remainingItemCount", None)
        listed: dict[str, Any] = {
            "apiVersion": first_page.get("apiVersion", resource.api_version),
            "kind": first_page.get("kind", f"{resource.kind}List"),
            "metadata": metadata,
            "items": items,
        }
        if quarantined:
            listed[decoding.QUARANTINED_KEY] = quarantined
        return listed

    async def create(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """POST a new object; raises ``AlreadyExists`` when the name is taken."""
        target = namespace or _namespace_of(body)
        with self._writing(resource, target, str((body.get("metadata") or {}).get("name") or "")):
            created = await self._call(
                "POST",
                resource.collection_path(target),
                query=_query(fieldManager=field_manager),
                body=dict(body),
            )
            return self._written(resource, created)

    async def replace(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """PUT the object (its ``metadata.resourceVersion`` makes it optimistic)."""
        target, object_name = namespace or _namespace_of(body), name or _name_of(body)
        path = resource.object_path(target, object_name, subresource)
        with self._writing(resource, target, object_name):
            return self._written(resource, await self._call("PUT", path, body=dict(body)))

    async def merge_patch(
        self,
        resource: Kind,
        patch: Mapping[str, Any],
        *,
        namespace: str | None,
        name: str,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """PATCH with an RFC 7386 merge patch (``null`` deletes a key)."""
        with self._writing(resource, namespace, name):
            patched = await self._call(
                "PATCH",
                resource.object_path(namespace, name, subresource),
                query=_query(fieldManager=field_manager),
                body=dict(patch),
                content_type=_MERGE_PATCH,
            )
            return self._written(resource, patched)

    async def patch_status(
        self,
        resource: Kind,
        patch: Mapping[str, Any],
        *,
        namespace: str | None,
        name: str,
    ) -> dict[str, Any]:
        """Merge-patch the ``/status`` subresource."""
        return await self.merge_patch(
            resource, patch, namespace=namespace, name=name, subresource="status"
        )

    async def apply(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply ``body`` (a full intent, with apiVersion/kind/metadata.name)."""
        target, object_name = namespace or _namespace_of(body), _name_of(body)
        path = resource.object_path(target, object_name, subresource)
        with self._writing(resource, target, object_name):
            applied = await self._call(
                "PATCH",
                path,
                query=_query(fieldManager=field_manager, force=force),
                body=dict(body),
                content_type=_APPLY_PATCH,
            )
            return self._written(resource, applied)

    async def delete(
        self,
        resource: Kind,
        *,
        namespace: str | None,
        name: str,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """DELETE the object; returns the server's answer (a Status or the object)."""
        body: dict[str, Any] | None = None
        if propagation_policy or preconditions:
            body = {"apiVersion": "v1", "kind": "DeleteOptions"}
            if propagation_policy:
                body["propagationPolicy"] = propagation_policy
            if preconditions:
                body["preconditions"] = dict(preconditions)
        return await self._call("DELETE", resource.object_path(namespace, name), body=body)

    async def watch(
        self,
        resource: Kind,
        *,
        namespace: str | None,
        resource_version: str | None,
        timeout_seconds: int,
        label_selector: str | None = None,
        opened: asyncio.Event | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream raw watch events (``{"type", "object"}``) until the server ends the stream.

        Bookmarks are requested and passed on. An ``ERROR`` event is raised as its taxonomy
        error (``Gone`` for 410 Expired); a dropped connection as ``Unavailable``. ``opened`` is
        set once the server has answered 200: from then on it watches (for a caller that times
        a change it is about to cause).
        """
        query = _query(
            watch=True,
            allowWatchBookmarks=True,
            resourceVersion=resource_version or None,
            timeoutSeconds=timeout_seconds,
            labelSelector=label_selector or None,
        )
        # The server closes the stream after timeout_seconds; the read deadline is a backstop
        # for a server that silently stops sending.
        client_timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=30, sock_read=timeout_seconds + 30
        )
        with errors.translate_errors():
            response = await self.api_client.call_api(
                resource.collection_path(namespace),
                "GET",
                query_params=query,
                header_params={"Accept": _JSON},
                auth_settings=_AUTH_SETTINGS,
                _preload_content=False,
                _request_timeout=client_timeout,
            )
            async with response:
                if response.status != 200:
                    raise _http_error(response.status, await response.text())
                if opened is not None:
                    opened.set()
                async for line in _lines(response.content, decoding.MAX_OBJECT_BYTES):
                    event = _watch_event(line)
                    if event is not None:
                        yield event


async def _lines(content: aiohttp.StreamReader, limit: int) -> AsyncIterator[bytes | None]:
    """The lines of a watch stream; a line over ``limit`` bytes is dropped and yields None
    once instead (aiohttp's own line reader fails the whole stream past 128 KiB,
    so one large object would stall the watch for ever)."""
    pending = bytearray()
    dropping = False
    async for chunk in content.iter_any():
        # Only the new bytes can hold a newline: a long line is not searched again per chunk.
        searched = len(pending)
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", max(start, searched))) >= 0:
            if dropping:
                dropping = False
            else:
                yield bytes(pending[start:end])
            start = end + 1
        del pending[:start]
        if len(pending) > limit:
            if not dropping:
                yield None
            dropping = True
            pending.clear()
    if pending and not dropping:
        yield bytes(pending)


def _watch_event(line: bytes | None) -> dict[str, Any] | None:
    """One watch event decoded (from None: a line too long to read), None for a blank line. An event whose object cannot be used
    carries no ``object`` but a ``decoding.QUARANTINED_KEY`` naming it as far as it can be."""
    if line is None:
        problem = f"the watch event is larger than {decoding.MAX_OBJECT_BYTES} bytes"
        return {"type": "", decoding.QUARANTINED_KEY: decoding.Quarantined(problem).to_dict()}
    if not line.strip():
        return None
    try:
        event = decoding.loads(line)
    except decoding.DocumentError as error:
        problem = f"the watch event is {error}"
        return {"type": "", decoding.QUARANTINED_KEY: decoding.Quarantined(problem).to_dict()}
    if not isinstance(event, dict):
        problem = "the watch event is not a JSON object"
        return {"type": "", decoding.QUARANTINED_KEY: decoding.Quarantined(problem).to_dict()}
    event_type = event.get("type")
    if event_type == "ERROR":
        status = event.get("object")
        raise errors.error_from_status(status if isinstance(status, dict) else {})
    if event_type == "BOOKMARK":
        return event
    obj = event.get("object")
    unusable = decoding.object_problem(obj, may_be_deep=decoding.may_nest_deeper(line))
    if unusable is None:
        return event
    quarantined = decoding.Quarantined.of(obj, unusable).to_dict()
    return {"type": event_type, decoding.QUARANTINED_KEY: quarantined}


def _http_error(status: int, text: str) -> errors.KubeError:
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return errors.error_from_status(body, http_status=status)
    error_class = errors.error_class_for(status, None)
    return error_class(text or f"HTTP {status}", status=status)


def _name_of(body: Mapping[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("the object has no metadata.name")
    return str(name)


def _namespace_of(body: Mapping[str, Any]) -> str | None:
    namespace = (body.get("metadata") or {}).get("namespace")
    return str(namespace) if namespace else None
