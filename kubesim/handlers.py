"""Resource verbs of the HTTP layer: dispatch by method and path shape, and the read verbs (§4.1-4.3).

Writes (create, update, patch, delete) are in :mod:`kubesim.writes`, ``/scale`` in
:mod:`kubesim.scale`, watch streaming in :mod:`kubesim.watch_http`; DELETE on a collection is here
because it selects like a LIST. Every handler serves from a :class:`~kubesim.backend.Backend` and
raises :class:`~kubesim.errors.StatusError` for API errors.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim import access_reviews, discovery, errors, request, scale, watch_http, writes
from kubesim.backend import Backend
from kubesim.meta import typed_view, with_type_meta
from kubesim.request import ListOptions, ResourcePath
from kubesim.resource_type import ResourceType
from kubesim.responses import json_response, negotiated, object_response
from kubesim.selectors import FieldSelector, LabelSelector, SelectorError
from kubesim.write_request import delete_options, require_verb

SUBRESOURCES = frozenset({"status", "scale", "finalize"})
#: The verbs served on an object's own URL; a kind with none of them has no such URL.
_NAMED_VERBS = frozenset({"get", "update", "patch", "delete"})


async def handle_resource(
    backend: Backend, req: web.Request, *, path: ResourcePath
) -> web.StreamResponse:
    """Serve one request on a resource URL (§2.1)."""
    rt = backend.registry.lookup(path.group, path.version, path.plural)
    if rt is None:
        raise errors.unknown_resource()
    check_scope(rt, path, method=req.method)
    if path.name is not None and not _NAMED_VERBS.intersection(rt.verbs):
        # A kind served for create only (the access reviews) has no object URLs at all.
        raise errors.unknown_resource()
    if path.subresource is not None:
        return await handle_subresource(backend, req, rt=rt, path=path)
    method = req.method
    if path.watch and method != "GET":
        raise errors.method_not_allowed()
    if method in ("GET", "HEAD"):
        require_verb(rt, "watch" if path.watch else ("list" if path.name is None else "get"))
        if path.name is None:
            return await list_or_watch(backend, req, rt=rt, path=path)
        if path.watch:
            return await watch_named(backend, req, rt=rt, path=path)
        return get_object(backend, req, rt=rt, path=path)
    if method == "POST" and path.name is None:
        if access_reviews.is_access_review(rt):
            return await access_reviews.create_review(backend, req, rt=rt, path=path)
        return await writes.create(backend, req, rt=rt, path=path)
    if method == "PUT" and path.name is not None:
        return await writes.update(backend, req, rt=rt, path=path)
    if method == "PATCH" and path.name is not None:
        return await writes.patch(backend, req, rt=rt, path=path)
    if method == "DELETE":
        if path.name is None:
            return await delete_collection(backend, req, rt=rt, path=path)
        return await writes.delete(backend, req, rt=rt, path=path)
    raise errors.method_not_allowed()


def check_scope(rt: ResourceType, path: ResourcePath, *, method: str) -> None:
    """404 for a namespaced kind under a cluster path (except LIST/WATCH) and vice versa."""
    if not rt.namespaced and path.namespace is not None:
        raise errors.unknown_resource()
    if rt.namespaced and path.namespace is None:
        all_namespaces_read = path.name is None and path.subresource is None and method == "GET"
        if not all_namespaces_read:
            raise errors.unknown_resource()
    if path.subresource is not None:
        allowed = set(rt.subresources)
        if rt.group == "" and rt.plural == "namespaces":
            allowed.add("finalize")
        if path.subresource not in allowed or path.watch:
            raise errors.unknown_resource()


def parse_selectors(
    rt: ResourceType, options: ListOptions
) -> tuple[LabelSelector | None, FieldSelector | None]:
    """Parsed label/field selectors (None when empty); bad or unsupported ones are a 400."""
    try:
        labels = LabelSelector.parse(options.label_selector)
        fields = FieldSelector.parse(options.field_selector)
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from None
    for field_name in sorted(fields.fields()):
        if not rt.supports_field(field_name):
            raise errors.bad_request(f"field label not supported: {field_name}")
    return (
        None if labels.is_empty() else labels,
        None if fields.is_empty() else fields,
    )


def get_object(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """GET one object (§4.1); a requested resourceVersion is served from the current state."""
    request.parse_resource_version(req.query.get("resourceVersion"))
    assert path.name is not None
    obj = backend.store.get(rt, path.namespace, path.name)
    return object_response(req, rt, obj=obj)


def page(
    items: list[dict[str, Any]], *, options: ListOptions, list_rv: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Cut ``items`` (sorted by namespace, name) at ``limit`` after the continue point (§4.2).

    A continued list is served from current data, not the snapshot of the first page.
    """
    snapshot_rv = list_rv
    if options.continue_token:
        token_rv, (after_ns, after_name) = request.decode_continue(options.continue_token)
        snapshot_rv = token_rv
        items = [
            obj
            for obj in items
            if (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            > (after_ns, after_name)
        ]
    list_meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if options.limit is not None and len(items) > options.limit:
        shown, rest = items[: options.limit], items[options.limit :]
        last = shown[-1]["metadata"]
        list_meta["continue"] = request.encode_continue(
            resource_version=snapshot_rv,
            namespace=last.get("namespace", ""),
            name=last["name"],
        )
        list_meta["remainingItemCount"] = len(rest)
        return shown, list_meta
    return items, list_meta


def check_list_resource_version(options: ListOptions, current: int) -> None:
    """The resourceVersion/resourceVersionMatch rules of a LIST (§4.2)."""
    wanted = request.parse_resource_version(options.resource_version)
    if wanted is None or wanted == 0:
        return
    if wanted > current:
        raise errors.timeout(
            f"Too large resource version: {wanted}, current: {current}",
            cause_reason="ResourceVersionTooLarge",
        )
    if options.resource_version_match == "Exact" and wanted != current:
        raise errors.expired(f"too old resource version: {wanted} ({current})")


async def list_or_watch(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.StreamResponse:
    """LIST (with selectors, pagination, Table) or hand over to WATCH."""
    options = request.parse_list_options(req.query, watch_path=path.watch)
    labels, fields = parse_selectors(rt, options)
    if options.watch:
        return await watch_http.serve_watch(
            backend,
            req,
            rt=rt,
            namespace=path.namespace,
            options=options,
            labels=labels,
            fields=fields,
        )
    # The items are only serialized, with no await in between: no copy of the stored objects.
    items, current = backend.store.list(
        rt, path.namespace, label_selector=labels, field_selector=fields, copy=False
    )
    check_list_resource_version(options, current)
    shown, list_meta = page(items, options=options, list_rv=current)
    if request.wants_table(req.headers.get("Accept")):
        include_object = req.query.get("includeObject", "Metadata")
        # Only full-object rows show TypeMeta, which built-in list items lack.
        if include_object == "Object" and not rt.custom:
            shown = [typed_view(rt, obj) for obj in shown]
        return json_response(
            discovery.to_table(rt, shown, include_object=include_object, list_meta=list_meta)
        )
    body = {
        "kind": rt.list_kind,
        "apiVersion": rt.api_version,
        "metadata": list_meta,
        "items": shown,
    }
    return negotiated(req, body, custom=rt.custom)


async def watch_named(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.StreamResponse:
    """``/watch/.../{name}``: a watch restricted to one object by name."""
    assert path.name is not None
    options = request.parse_list_options(req.query, watch_path=True)
    labels, fields = parse_selectors(rt, options)
    if fields is not None:
        required = fields.required_value("metadata.name")
        if required is not None and required != path.name:
            raise errors.bad_request("fieldSelector metadata.name doesn't match requested name")
    name_selector = FieldSelector.parse(
        ",".join(s for s in (options.field_selector, f"metadata.name={path.name}") if s)
    )
    return await watch_http.serve_watch(
        backend,
        req,
        rt=rt,
        namespace=path.namespace,
        options=options,
        labels=labels,
        fields=name_selector,
    )


async def delete_collection(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """DELETE on a collection: every selected object, answered as a ``<Kind>List``."""
    require_verb(rt, "deletecollection")
    options = delete_options(req.query, await req.read())
    list_options = request.parse_list_options(req.query, watch_path=False)
    labels, fields = parse_selectors(rt, list_options)
    items, _ = backend.store.list(rt, path.namespace, label_selector=labels, field_selector=fields)
    deleted: list[dict[str, Any]] = []
    for item in items:
        meta = item["metadata"]
        try:
            result = backend.store.delete(
                rt,
                meta.get("namespace"),
                meta["name"],
                propagation=options.get("propagationPolicy"),
                preconditions=None,
                dry_run=options["dryRun"],
                grace_period=options.get("gracePeriodSeconds"),
            )
        except errors.StatusError as err:
            if err.code == 404:  # removed meanwhile by a controller
                continue
            raise
        deleted.append(with_type_meta(rt, result if result is not None else item))
    _, current = backend.store.list(rt, path.namespace, label_selector=None, field_selector=None)
    return negotiated(
        req,
        {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(current)},
            "items": deleted,
        },
        custom=rt.custom,
    )


async def handle_subresource(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """``/status``, ``/scale`` and namespace ``/finalize`` (§4.8)."""
    assert path.name is not None
    if path.subresource == "scale":
        return await scale.handle_scale(backend, req, rt=rt, path=path)
    if req.method == "GET" and path.subresource == "status":
        return object_response(req, rt, obj=backend.store.get(rt, path.namespace, path.name))
    if req.method == "PUT":
        return await writes.update(backend, req, rt=rt, path=path)
    if req.method == "PATCH" and path.subresource == "status":
        return await writes.patch(backend, req, rt=rt, path=path)
    raise errors.method_not_allowed()
