"""The object store: metadata rules, global resourceVersion, event history, watches, state file.

Every method is synchronous, so each write is atomic in the asyncio loop, and hands out deep copies.
Objects are kept without TypeMeta per storage key (version-independent) and served with the
apiVersion/kind of the resource type the caller asked through. Pure rules live in ``meta.py``
(metadata), ``store_kinds.py`` (namespaces, CRDs) and ``watch.py`` (history, fan-out).
"""

from __future__ import annotations

import uuid
from typing import Any

from kubesim import errors, store_kinds
from kubesim.errors import Cause, StatusError
from kubesim.meta import (
    ResourceTypeLike,
    gc_finalizers,
    generation_changed,
    json_copy,
    mark_deleting,
    metadata_of,
    name_causes,
    now_rfc3339,
    owner_reference_causes,
    precondition_error,
    strip_type_meta,
    with_type_meta,
)
from kubesim.store_core import Listener, RegistryLike, StoreCore, rv_of, storage_key
from kubesim.store_kinds import CRDS_KEY, NAMESPACES_KEY
from kubesim.watch import (
    Event,
    FieldMatcher,
    LabelMatcher,
    Watch,
    bookmark_event,
    object_matches,
)

__all__ = ["Event", "RegistryLike", "Store", "Watch", "storage_key", "typed_view"]

ObjectList = list[dict[str, Any]]


def typed_view(rt: ResourceTypeLike, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with ``rt``'s apiVersion/kind first, sharing (not copying) its other values.

    Serializes exactly as :func:`~kubesim.meta.with_type_meta`; for read-only use only.
    """
    body = {"apiVersion": rt.api_version, "kind": rt.kind}
    for key, value in obj.items():
        if key != "apiVersion" and key != "kind":
            body[key] = value
    return body


class Store(StoreCore):
    """In-memory object store with the API server's object semantics (reference §3, §4, §6, §7)."""

    def __init__(self, registry: RegistryLike, *, history_window: int = 1000) -> None:
        """An empty store plus the four default namespaces."""
        super().__init__(registry, history_window=history_window)
        self.bootstrap()

    # ----------------------------------------------------------------- reads

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion (the last persisted write)."""
        return self._rv

    @property
    def bookmark_rv(self) -> int:
        """The RV a BOOKMARK may carry: every change up to it has been queued to the watches."""
        return self._rv

    def bookmark(self, rt: ResourceTypeLike, *, initial_events_end: bool = False) -> dict[str, Any]:
        """A BOOKMARK watch event at the current resourceVersion."""
        return bookmark_event(rt, self._rv, initial_events_end=initial_events_end)

    def get(self, rt: ResourceTypeLike, namespace: str | None, name: str) -> dict[str, Any]:
        """The object, with TypeMeta; 404 when absent."""
        return with_type_meta(rt, self._require(rt, namespace, name))

    def list(
        self,
        rt: ResourceTypeLike,
        namespace: str | None,
        *,
        label_selector: LabelMatcher | None = None,
        field_selector: FieldMatcher | None = None,
        copy: bool = True,
    ) -> tuple[ObjectList, int]:
        """Matching objects sorted by (namespace, name) and the current RV.

        Items of built-in kinds carry no TypeMeta (as the real server lists them); CR items do.
        ``copy=False`` is for callers that only serialize the items before their next await:
        the items then share their contents with the stored objects and must not be mutated.
        """
        key = storage_key(rt)
        bucket = self._objects.get(key, {})
        scope = namespace if rt.namespaced else None
        items = []
        for object_key in self._keys_in_order(key, scope):
            obj = bucket[object_key]
            if object_matches(
                obj, namespace=scope, label_selector=label_selector, field_selector=field_selector
            ):
                if not copy:
                    items.append(typed_view(rt, obj) if rt.custom else obj)
                else:
                    items.append(with_type_meta(rt, obj) if rt.custom else json_copy(obj))
        return items, self._rv

    def watch(
        self,
        rt: ResourceTypeLike,
        namespace: str | None,
        *,
        since_rv: int | None,
        label_selector: LabelMatcher | None = None,
        field_selector: FieldMatcher | None = None,
    ) -> Watch:
        """Open a watch (§4.3); 410 Expired when ``since_rv`` is older than the history."""
        if since_rv and since_rv > self._rv:
            raise errors.timeout(
                f"Too large resource version: {since_rv}, current: {self._rv}",
                cause_reason="ResourceVersionTooLarge",
            )
        key = storage_key(rt)
        watch = Watch(
            rt=rt,
            key=key,
            namespace=namespace if rt.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
            start_rv=self._rv,
        )
        bucket = self._objects.get(key, {})
        current = [bucket[k] for k in self._keys_in_order(key, watch.namespace)]
        return self._hub.open(watch, since_rv=since_rv, current=current)

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` synchronously after every persisted write."""
        self._listeners.append(listener)

    # ---------------------------------------------------------------- writes

    def create(
        self,
        rt: ResourceTypeLike,
        obj: dict[str, Any],
        *,
        namespace: str | None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Create an object (§4.4): 409 if it exists, 404/403 for missing/terminating namespaces."""
        key = storage_key(rt)
        body = strip_type_meta(json_copy(obj))
        meta = metadata_of(body)
        ns = self._request_namespace(rt, meta, namespace)
        if meta.get("resourceVersion"):
            # The real server fails this in etcd storage with an untyped error → 500, no reason.
            raise StatusError(500, "", "resourceVersion should not be set on objects to be created")
        name = str(meta.get("name") or "")
        prefix = str(meta.get("generateName") or "")
        if not name and not prefix:
            raise self._invalid(
                rt,
                "",
                [
                    Cause(
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                        "metadata.name",
                    )
                ],
            )
        if rt.namespaced:
            self._check_namespace_accepts(rt, ns, name)
        if rt.custom:
            self._check_crd_not_terminating(rt, name)
        for system_field in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
        ):
            meta.pop(system_field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rt.generation != "none":
            meta["generation"] = 1
        if rt.has_status:
            body.pop("status", None)
        bucket = self._objects.setdefault(key, {})
        if not name:
            name = self._generated_name(rt, bucket, ns, prefix)
            meta["name"] = name
        served = False
        if key == NAMESPACES_KEY:
            store_kinds.prepare_namespace(body, None)
        elif key == CRDS_KEY:
            self._validate_crd(rt, body, name)
            served = store_kinds.prepare_crd(body, others=self._other_crds(name))
        causes = name_causes(name, label=key == NAMESPACES_KEY) + owner_reference_causes(meta)
        if causes:
            raise self._invalid(rt, name, causes)
        body = self._admit(rt, body, name)
        if (ns, name) in bucket:
            raise errors.already_exists(group=rt.group, plural=rt.plural, name=name)
        if dry_run:
            return with_type_meta(rt, body)
        stored = self._commit(rt, key, body, None, "ADDED")
        if served:
            self._registry.add_crd(with_type_meta(rt, stored))
        return with_type_meta(rt, stored)

    def update(
        self,
        rt: ResourceTypeLike,
        obj: dict[str, Any],
        *,
        namespace: str | None,
        name: str,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Replace an object (§4.5), or its ``status`` / namespace ``finalize`` subresource (§4.8)."""
        key = storage_key(rt)
        body = strip_type_meta(json_copy(obj))
        meta = metadata_of(body)
        ns = self._request_namespace(rt, meta, namespace)
        body_name = meta.get("name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        old = self._require(rt, ns, name)
        self._check_resource_version(rt, name, meta, old)
        if subresource is None:
            new = self._merged_update(rt, body, old)
        elif subresource == "status":
            new = json_copy(old)
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
        elif subresource == "finalize" and key == NAMESPACES_KEY:
            new = json_copy(old)
            finalizers = (body.get("spec") or {}).get("finalizers") or []
            new.setdefault("spec", {})["finalizers"] = list(finalizers)
        else:
            raise errors.unknown_resource()
        served = False
        if key == NAMESPACES_KEY and subresource != "finalize":
            store_kinds.prepare_namespace(new, old)
        elif key == CRDS_KEY:
            self._validate_crd(rt, new, name)
            served = store_kinds.prepare_crd(new, others=self._other_crds(name))
        new = self._admit(rt, new, name)
        new_meta = metadata_of(new)
        if rt.generation == "none":
            new_meta.pop("generation", None)
        elif subresource is None and generation_changed(rt, old, new):
            new_meta["generation"] = int(old["metadata"].get("generation") or 0) + 1
        stored = self._write(rt, key, new, old, dry_run=dry_run)
        if key == CRDS_KEY and not dry_run and stored is not old:
            if ("", name) not in self._objects.get(CRDS_KEY, {}):
                # The write released the CRD's last finalizer: it is gone, and so are its kinds.
                self._registry.remove_crd(name)
                self._hub.end_key(store_kinds.crd_storage_key(stored))
            elif served:
                self._registry.add_crd(with_type_meta(rt, stored))
        return with_type_meta(rt, stored)

    def delete(
        self,
        rt: ResourceTypeLike,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any] | None:
        """Delete (§4.7): the object when kept by finalizers or the kind returns it, else None."""
        key = storage_key(rt)
        ns = (namespace or "") if rt.namespaced else ""
        old = self._require(rt, ns, name)
        failed = precondition_error(rt, name, old["metadata"], preconditions or {})
        if failed is not None:
            raise failed
        if key == NAMESPACES_KEY:
            kept = self._delete_namespace(rt, old, dry_run=dry_run)
            if kept is not None:
                return kept
        new = json_copy(old)
        meta = new["metadata"]
        meta["finalizers"] = gc_finalizers(list(meta.get("finalizers") or []), propagation)
        if key == CRDS_KEY and not old["metadata"].get("deletionTimestamp"):
            store_kinds.mark_crd_terminating(new)
        if not meta["finalizers"]:
            meta.pop("finalizers")
            if key != NAMESPACES_KEY or store_kinds.namespace_is_finalized(new):
                return self._remove(rt, key, new, old, dry_run=dry_run)
        mark_deleting(meta)
        # Finalizers are pending here, so the write marks the object and never removes it.
        return with_type_meta(rt, self._write(rt, key, new, old, dry_run=dry_run))

    def finalize_namespace(self, name: str) -> dict[str, Any] | None:
        """Namespace controller: drop ``kubernetes`` from spec.finalizers; purge when unheld.

        Returns the namespace while it is still stored, None once it is gone.
        """
        rt = self._kind(NAMESPACES_KEY)
        old = self._require(rt, "", name)
        finalizers = list((old.get("spec") or {}).get("finalizers") or [])
        body: dict[str, Any] = {
            "metadata": {"name": name, "resourceVersion": rv_of(old)},
            "spec": {"finalizers": [f for f in finalizers if f != store_kinds.NAMESPACE_FINALIZER]},
        }
        # A deleting namespace left without finalizers is purged by this very write.
        current = self.update(rt, body, namespace=None, name=name, subresource="finalize")
        if ("", name) not in self._objects.get(NAMESPACES_KEY, {}):
            return None
        return current

    def finish_crd_deletion(self, name: str) -> None:
        """CRD controller, after deleting the CRs: remove the CRD, stop serving it, end its watches."""
        rt = self._kind(CRDS_KEY)
        old = self._require(rt, "", name)
        cr_key = store_kinds.crd_storage_key(old)
        new = json_copy(old)
        finalizers = [
            f
            for f in new["metadata"].get("finalizers") or []
            if f != store_kinds.CRD_CLEANUP_FINALIZER
        ]
        new["metadata"]["finalizers"] = finalizers
        self._objects.pop(cr_key, None)
        self._sorted_keys.invalidate(cr_key)
        self._write(rt, CRDS_KEY, new, old, dry_run=False)
        self._registry.remove_crd(name)
        self._hub.end_key(cr_key)

    def bootstrap(self) -> None:
        """Create the default namespaces (§6) that do not exist yet."""
        rt = self._kind(NAMESPACES_KEY)
        for name in store_kinds.DEFAULT_NAMESPACES:
            if ("", name) not in self._objects.get(NAMESPACES_KEY, {}):
                self.create(rt, {"metadata": {"name": name}}, namespace=None)
