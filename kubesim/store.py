"""The object store: the API server's object rules over versioned storage (reference §3-§7).

:class:`Store` decides every write: metadata rules (``meta.py``), namespace and CRD lifecycles
(``store_kinds.py``), custom-object schemas (``schema.py``), preconditions, finalizers and the
resourceVersion check. It keeps the objects, the global resourceVersion, the event history and the
watches in its :class:`~kubesim.storage.ObjectStorage`, and tells its registry which CRDs are served.

Every method is synchronous, so each write is atomic in the asyncio loop, and hands out deep copies.
Objects are kept without TypeMeta per storage key (version-independent) and served with the
apiVersion/kind of the resource type the caller asked through.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from kubesim import errors, schema, store_kinds
from kubesim.errors import Cause, StatusError
from kubesim.meta import (
    ResourceTypeLike,
    data_key_causes,
    gc_finalizers,
    generate_name,
    generation_changed,
    immutable_causes,
    json_copy,
    label_causes,
    mark_deleting,
    metadata_of,
    name_causes,
    new_finalizer_causes,
    now_rfc3339,
    owner_reference_causes,
    precondition_error,
    strip_type_meta,
    typed_view,
    uid_precondition_error,
    with_type_meta,
)
from kubesim.storage import Listener, ObjectKey, ObjectStorage, rv_of, storage_key
from kubesim.store_kinds import CRDS_KEY, NAMESPACES_KEY
from kubesim.watch import (
    Event,
    FieldMatcher,
    LabelMatcher,
    StorageKey,
    Watch,
    bookmark_event,
    object_matches,
)

# typed_view and storage_key are defined in meta.py and storage.py; callers import them from here too.
__all__ = ["Event", "RegistryLike", "Store", "Watch", "storage_key", "typed_view"]

# Inside Store, ``list`` names the LIST verb: annotations there use these aliases.
ObjectList = list[dict[str, Any]]
CauseList = list[Cause]
_GENERATE_NAME_ATTEMPTS = 8


class RegistryLike(Protocol):
    """The part of :class:`kubesim.resources.Registry` the store calls."""

    def lookup(self, group: str, version: str, plural: str) -> Any:
        """The served resource type, or None."""
        ...

    def add_crd(self, crd: dict[str, Any]) -> None:
        """Serve an Established CRD's versions."""
        ...

    def remove_crd(self, name: str) -> None:
        """Stop serving a CRD."""
        ...


class Store:
    """In-memory object store with the API server's object semantics (reference §3, §4, §6, §7)."""

    def __init__(self, registry: RegistryLike, *, history_window: int = 1000) -> None:
        """An empty store plus the four default namespaces."""
        self._registry = registry
        self._storage = ObjectStorage(history_window=history_window)
        self.bootstrap()
        # Like a real server's watch cache, which starts after its own bootstrap: the creation
        # of the default namespaces is not replayed to a watch from an older resourceVersion.
        self._storage.forget_history()

    # ----------------------------------------------------------------- reads

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion (the last persisted write)."""
        return self._storage.resource_version

    @property
    def bookmark_rv(self) -> int:
        """The RV a BOOKMARK may carry: every change up to it has been queued to the watches."""
        return self._storage.resource_version

    def bookmark(self, rt: ResourceTypeLike, *, initial_events_end: bool = False) -> dict[str, Any]:
        """A BOOKMARK watch event at the current resourceVersion."""
        return bookmark_event(
            rt, self._storage.resource_version, initial_events_end=initial_events_end
        )

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
        bucket = self._storage.bucket(key)
        scope = namespace if rt.namespaced else None
        items = []
        for object_key in self._storage.keys_in_order(key, scope):
            obj = bucket[object_key]
            if object_matches(
                obj, namespace=scope, label_selector=label_selector, field_selector=field_selector
            ):
                if not copy:
                    items.append(typed_view(rt, obj) if rt.custom else obj)
                else:
                    items.append(with_type_meta(rt, obj) if rt.custom else json_copy(obj))
        return items, self._storage.resource_version

    def watch(
        self,
        rt: ResourceTypeLike,
        namespace: str | None,
        *,
        since_rv: int | None,
        label_selector: LabelMatcher | None = None,
        field_selector: FieldMatcher | None = None,
    ) -> Watch:
        """Open a watch (§4.3); 410 Expired when ``since_rv`` is older than the history.

        A ``since_rv`` ahead of the store is accepted, as by the real server: the watch delivers
        the changes after it once they happen.
        """
        current_rv = self._storage.resource_version
        key = storage_key(rt)
        watch = Watch(
            rt=rt,
            key=key,
            namespace=namespace if rt.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
            start_rv=current_rv,
            min_rv=since_rv or 0,
        )
        start = min(since_rv, current_rv) if since_rv else since_rv
        try:
            return self._storage.open_watch(watch, since_rv=start)
        except StatusError as err:
            if err.code == 410 and key == store_kinds.EVENTS_KEY:
                # The real server keeps no watch cache for Events: etcd answers, in its words.
                raise errors.expired(
                    "The resourceVersion for the provided watch is too old."
                ) from None
            raise

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` synchronously after every persisted write."""
        self._storage.subscribe(listener)

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
        for system_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(system_field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        # Kinds that track a generation start at 1; the others keep what the client sent (the
        # real server's create strategies leave it alone).
        if rt.generation != "none":
            meta["generation"] = 1
        if rt.has_status:
            body.pop("status", None)
        if not rt.custom:
            schema.default_builtin(rt, body, creating=True)
            if key == store_kinds.SERVICES_KEY:
                store_kinds.allocate_service_addresses(
                    body, self._storage.bucket(store_kinds.SERVICES_KEY).values()
                )
        bucket = self._storage.bucket(key)
        if not name:
            name = self._generated_name(rt, bucket, ns, prefix)
            meta["name"] = name
        served = False
        if key == NAMESPACES_KEY:
            store_kinds.prepare_namespace(body, None)
        elif key == CRDS_KEY:
            self._validate_crd(rt, body, name)
            served = store_kinds.prepare_crd(body, others=self._other_crds(name))
        if key == store_kinds.DAEMONSETS_KEY:
            store_kinds.stamp_daemonset_generation(body, None)
        causes = name_causes(name, label=key == NAMESPACES_KEY) + self._content_causes(rt, body)
        if causes:
            raise self._invalid(rt, name, causes)
        body = self._admit(rt, body, name)
        if (ns, name) in bucket:
            raise errors.already_exists(group=rt.group, plural=rt.plural, name=name)
        if key == CRDS_KEY:
            return self._create_crd(rt, body, served=served, dry_run=dry_run)
        if dry_run:
            return with_type_meta(rt, body)
        stored = self._storage.commit(rt, key, body, None, "ADDED")
        return with_type_meta(rt, stored)

    def _create_crd(
        self, rt: ResourceTypeLike, established: dict[str, Any], *, served: bool, dry_run: bool
    ) -> dict[str, Any]:
        """Store a new CRD as the real server does: first with the status of a CRD nobody has
        looked at yet (that is the answer), then established by its controllers in a second
        write (kubesim establishes at once, so its resources are served on return)."""
        initial = json_copy(established)
        initial["status"] = store_kinds.initial_crd_status(established)
        if dry_run:
            return with_type_meta(rt, initial)
        stored = self._storage.commit(rt, CRDS_KEY, initial, None, "ADDED")
        following = json_copy(stored)
        following["status"] = established["status"]
        current = self._write(rt, CRDS_KEY, following, stored, dry_run=False)
        if served:
            self._registry.add_crd(with_type_meta(rt, current))
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
        """Replace an object (§4.5), or its ``status`` / namespace ``finalize`` subresource (§4.8), or
        bind a pod (``binding``: its ``spec.nodeName``)."""
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
            if key == store_kinds.DEPLOYMENTS_KEY:
                # The Deployment status strategy resets spec and labels only: annotations go
                # through (the deployment controller records the revision so).
                annotations = meta.get("annotations")
                if annotations:
                    new["metadata"]["annotations"] = json_copy(annotations)
                else:
                    new["metadata"].pop("annotations", None)
        elif subresource == "binding" and key == store_kinds.PODS_KEY:
            # The scheduler's Binding: spec.nodeName and PodScheduled=True (no generation bump).
            new = json_copy(old)
            store_kinds.bind_pod(new, (body.get("spec") or {}).get("nodeName"))
        elif subresource == "finalize" and key == NAMESPACES_KEY:
            new = json_copy(old)
            finalizers = (body.get("spec") or {}).get("finalizers") or []
            spec = new.setdefault("spec", {})
            # An empty list is left out, as the Go type (omitempty) writes it.
            if finalizers:
                spec["finalizers"] = list(finalizers)
            else:
                spec.pop("finalizers", None)
        else:
            raise errors.unknown_resource()
        served = False
        if key == NAMESPACES_KEY and subresource != "finalize":
            store_kinds.prepare_namespace(new, old)
        elif key == CRDS_KEY:
            self._validate_crd(rt, new, name)
            served = store_kinds.prepare_crd(new, others=self._other_crds(name))
        if not rt.custom:
            schema.default_builtin(rt, new, creating=False)
        new = self._admit(rt, new, name)
        new_meta = metadata_of(new)
        if rt.generation != "none" and subresource is None and generation_changed(rt, old, new):
            new_meta["generation"] = int(old["metadata"].get("generation") or 0) + 1
        if key == store_kinds.DAEMONSETS_KEY:
            store_kinds.stamp_daemonset_generation(new, old)
        stored = self._write(rt, key, new, old, dry_run=dry_run)
        if key == CRDS_KEY and not dry_run and stored is not old:
            if ("", name) not in self._storage.bucket(CRDS_KEY):
                # The write released the CRD's last finalizer: it is gone, and so are its kinds.
                self._registry.remove_crd(name)
                self._storage.end_watches(store_kinds.crd_storage_key(stored))
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
        grace_period: int | None = None,
    ) -> dict[str, Any] | None:
        """Delete (§4.7): the object when kept by finalizers or the kind returns it, else None.

        ``grace_period`` is DeleteOptions ``gracePeriodSeconds``; only a pod run by an external
        kubelet reads it (see :meth:`_delete_pod_gracefully`).
        """
        key = storage_key(rt)
        ns = (namespace or "") if rt.namespaced else ""
        old = self._require(rt, ns, name)
        failed = precondition_error(rt, name, old["metadata"], preconditions or {})
        if failed is not None:
            raise failed
        if key == store_kinds.PODS_KEY and self._deleted_gracefully(old):
            return self._delete_pod_gracefully(
                rt, old, propagation=propagation, grace_period=grace_period, dry_run=dry_run
            )
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
            if key == store_kinds.PODS_KEY:
                # Pods are deleted gracefully; kubesim's own kubelet stops a pod at once, so
                # kubesim deletes its pods as for a grace period of 0, and the last state says
                # so. Pods of an external kubelet are deleted gracefully (above).
                mark_deleting(meta)
            if key != NAMESPACES_KEY or store_kinds.namespace_is_finalized(new):
                return self._remove(rt, key, new, old, dry_run=dry_run)
        mark_deleting(meta)
        # Finalizers are pending here, so the write marks the object and never removes it.
        return with_type_meta(rt, self._write(rt, key, new, old, dry_run=dry_run))

    def _deleted_gracefully(self, pod: dict[str, Any]) -> bool:
        """Whether a DELETE of ``pod`` goes through its grace period, as on the real server.

        kubesim's own kubelet stops a pod the moment it is deleted, so kubesim deletes its pods at
        once (as for a grace period of 0). A pod bound to a node run by an external kubelet gets
        the real server's graceful deletion, and so does one already in its grace period.
        """
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            return bool(meta.get("deletionGracePeriodSeconds"))
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return False
        node = self._storage.bucket(store_kinds.NODES_KEY).get(("", str(node_name)))
        return node is not None and store_kinds.has_external_kubelet(node)

    def _delete_pod_gracefully(
        self,
        rt: ResourceTypeLike,
        old: dict[str, Any],
        *,
        propagation: str | None,
        grace_period: int | None,
        dry_run: bool,
    ) -> dict[str, Any] | None:
        """The real server's DELETE of a pod (``rest.BeforeDelete``, the generic registry).

        A first DELETE marks the pod (``deletionTimestamp`` = now + the grace period,
        ``deletionGracePeriodSeconds``: a MODIFIED event) and keeps it until its kubelet confirms
        with a grace period of 0; a DELETE that shortens a pending grace period moves the mark, one
        that does not leaves the pod as it is. A grace period of 0 (asked for, or the pod's because
        it is unscheduled or has terminated) marks the pod and removes it: MODIFIED then DELETED.
        Finalizers keep it after that, as any object.
        """
        key = store_kinds.PODS_KEY
        decision = store_kinds.graceful_pod_deletion(old, grace_period, now=datetime.now(UTC))
        if decision.pending:
            return with_type_meta(rt, old)
        new = json_copy(old)
        meta = new["metadata"]
        finalizers = gc_finalizers(list(meta.get("finalizers") or []), propagation)
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        if not decision.graceful:
            # Marked before with no grace period left: removed now, unless finalizers hold it.
            if finalizers:
                return with_type_meta(rt, self._write(rt, key, new, old, dry_run=dry_run))
            return self._remove(rt, key, new, old, dry_run=dry_run)
        if not meta.get("deletionTimestamp") and int(meta.get("generation") or 0) > 0:
            meta["generation"] = int(meta["generation"]) + 1
        meta["deletionTimestamp"] = decision.deletion_timestamp
        meta["deletionGracePeriodSeconds"] = decision.grace_seconds
        meta["resourceVersion"] = rv_of(old)
        if dry_run:
            return with_type_meta(rt, new)
        marked = self._storage.commit(rt, key, new, old, "MODIFIED")
        if finalizers or decision.grace_seconds:
            return with_type_meta(rt, marked)
        return self._remove(rt, key, json_copy(marked), marked, dry_run=False)

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
        if ("", name) not in self._storage.bucket(NAMESPACES_KEY):
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
        self._storage.drop_bucket(cr_key)
        self._write(rt, CRDS_KEY, new, old, dry_run=False)
        self._registry.remove_crd(name)
        self._storage.end_watches(cr_key)

    def bootstrap(self) -> None:
        """Create the default namespaces (§6) that do not exist yet."""
        rt = self._kind(NAMESPACES_KEY)
        for name in store_kinds.DEFAULT_NAMESPACES:
            if ("", name) not in self._storage.bucket(NAMESPACES_KEY):
                self.create(rt, {"metadata": {"name": name}}, namespace=None)

    # ------------------------------------------------- state file, server-side apply

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every object and the RV counter to a JSON state file (atomically)."""
        self._storage.save(path)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Replace the state with a state file; served CRDs are re-registered.

        The event history is not saved: watches may only start from the loaded RV on.
        """
        self._storage.load(path)
        crd_rt = self._kind(CRDS_KEY)
        for _, crd in sorted(self._storage.bucket(CRDS_KEY).items()):
            if store_kinds.crd_is_established(crd):
                self._registry.add_crd(with_type_meta(crd_rt, crd))

    def last_applied(
        self, rt: ResourceTypeLike, namespace: str | None, name: str, field_manager: str
    ) -> dict[str, Any] | None:
        """The configuration ``field_manager`` last applied to the object (server-side apply)."""
        return self._storage.last_applied(_applied_key(rt, namespace, name, field_manager))

    def set_last_applied(
        self,
        rt: ResourceTypeLike,
        namespace: str | None,
        name: str,
        field_manager: str,
        applied: dict[str, Any],
    ) -> None:
        """Remember ``applied`` as ``field_manager``'s configuration (forgotten on deletion)."""
        self._storage.set_last_applied(_applied_key(rt, namespace, name, field_manager), applied)

    # --------------------------------------------------------------- rules

    def _kind(self, key: StorageKey) -> ResourceTypeLike:
        fallback = store_kinds.NAMESPACE_KIND if key == NAMESPACES_KEY else store_kinds.CRD_KIND
        found = self._registry.lookup(fallback.group, fallback.version, fallback.plural)
        return found if found is not None else fallback

    def _require(self, rt: ResourceTypeLike, namespace: str | None, name: str) -> dict[str, Any]:
        ns = (namespace or "") if rt.namespaced else ""
        obj = self._storage.bucket(storage_key(rt)).get((ns, name))
        if obj is None:
            raise errors.not_found(group=rt.group, plural=rt.plural, name=name)
        return obj

    def _request_namespace(
        self, rt: ResourceTypeLike, meta: dict[str, Any], namespace: str | None
    ) -> str:
        if not rt.namespaced:
            meta.pop("namespace", None)
            return ""
        body_ns = meta.get("namespace")
        if body_ns and namespace and body_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        ns = str(namespace or body_ns or "")
        if not ns:
            raise errors.bad_request("an empty namespace may not be set during creation")
        meta["namespace"] = ns
        return ns

    def _check_namespace_accepts(self, rt: ResourceTypeLike, ns: str, name: str) -> None:
        namespace_obj = self._storage.bucket(NAMESPACES_KEY).get(("", ns))
        if namespace_obj is None:
            raise errors.not_found(group="", plural="namespaces", name=ns)
        if namespace_obj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                group=rt.group,
                plural=rt.plural,
                name=name,
                why=f"unable to create new content in namespace {ns} because it is being terminated",
                causes=[
                    Cause(
                        "NamespaceTerminating",
                        f"namespace {ns} is being terminated",
                        "metadata.namespace",
                    )
                ],
            )

    def _check_crd_not_terminating(self, rt: ResourceTypeLike, name: str) -> None:
        crd = self._storage.bucket(CRDS_KEY).get(("", f"{rt.plural}.{rt.group}"))
        if crd is not None and crd["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                group=rt.group,
                plural=rt.plural,
                name=name,
                why="create not allowed while custom resource definition is terminating",
            )

    def _check_resource_version(
        self, rt: ResourceTypeLike, name: str, meta: dict[str, Any], old: dict[str, Any]
    ) -> None:
        rv = str(meta.get("resourceVersion") or "")
        if rv:
            if rv != rv_of(old):
                raise errors.conflict(group=rt.group, plural=rt.plural, name=name)
        elif rt.custom:
            # The custom resource handler names the resource here, not the Kind.
            raise errors.invalid(
                group=rt.group,
                kind=rt.plural,
                name=name,
                causes=[
                    Cause(
                        "FieldValueInvalid",
                        "Invalid value: 0: must be specified for an update",
                        "metadata.resourceVersion",
                    )
                ],
            )

    def _merged_update(
        self, rt: ResourceTypeLike, body: dict[str, Any], old: dict[str, Any]
    ) -> dict[str, Any]:
        meta = body["metadata"]
        old_meta = old["metadata"]
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise uid_precondition_error(
                rt,
                str(old_meta.get("namespace") or ""),
                str(old_meta.get("name", "")),
                sent=str(meta["uid"]),
                stored=str(old_meta.get("uid", "")),
            )
        causes = self._content_causes(rt, body)
        finalizer_causes = new_finalizer_causes(old_meta, meta)
        if rt.custom:
            # The custom resource strategy and the generic registry both check this rule: the
            # real server lists the cause twice (its message shows it once).
            finalizer_causes += finalizer_causes
        causes += immutable_causes(old_meta, meta) + finalizer_causes
        if causes:
            raise self._invalid(rt, str(old_meta.get("name", "")), causes)
        meta["name"] = old_meta["name"]
        for kept in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        meta.pop("selfLink", None)
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if rt.has_status:
            if "status" in old:
                body["status"] = json_copy(old["status"])
            else:
                body.pop("status", None)
        return body

    def _delete_namespace(
        self, rt: ResourceTypeLike, old: dict[str, Any], *, dry_run: bool
    ) -> dict[str, Any] | None:
        name = old["metadata"]["name"]
        if name in store_kinds.IMMORTAL_NAMESPACES:
            raise errors.forbidden(
                group="", plural="namespaces", name=name, why="this namespace may not be deleted"
            )
        if not old["metadata"].get("deletionTimestamp"):
            new = json_copy(old)
            mark_deleting(new["metadata"])
            # The namespace registry sets the timestamp only (no grace period).
            new["metadata"].pop("deletionGracePeriodSeconds", None)
            new.setdefault("status", {})["phase"] = "Terminating"
            # The first DELETE only marks the namespace, even one without finalizers: the
            # namespace controller (or a second DELETE) removes it.
            new["metadata"]["resourceVersion"] = rv_of(old)
            if dry_run:
                return with_type_meta(rt, new)
            marked = self._storage.commit(rt, NAMESPACES_KEY, new, old, "MODIFIED")
            return with_type_meta(rt, marked)
        if (old.get("spec") or {}).get("finalizers"):
            # Still being emptied: the real server answers the namespace as it is.
            return with_type_meta(rt, old)
        return None

    def _write(
        self,
        rt: ResourceTypeLike,
        key: StorageKey,
        new: dict[str, Any],
        old: dict[str, Any],
        *,
        dry_run: bool,
    ) -> dict[str, Any]:
        """Persist an update; a no-op returns ``old`` itself, a released deleting object is removed."""
        new["metadata"]["resourceVersion"] = rv_of(old)
        if new == old:
            return old
        meta = new["metadata"]
        # Released by its last finalizer: gone, unless it is in a grace period (a pod whose
        # kubelet has not confirmed yet), as ShouldDeleteDuringUpdate decides.
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not old["metadata"].get("deletionGracePeriodSeconds")
        ):
            meta.pop("finalizers", None)
            if key != NAMESPACES_KEY or store_kinds.namespace_is_finalized(new):
                self._remove(rt, key, new, old, dry_run=dry_run)
                return new
        if dry_run:
            return new
        return self._storage.commit(rt, key, new, old, "MODIFIED")

    def _remove(
        self,
        rt: ResourceTypeLike,
        key: StorageKey,
        final: dict[str, Any],
        old: dict[str, Any],
        *,
        dry_run: bool,
    ) -> dict[str, Any] | None:
        if not dry_run:
            final = self._storage.commit(rt, key, final, old, "DELETED")
        return with_type_meta(rt, final) if rt.returns_deleted_object else None

    def _generated_name(
        self, rt: ResourceTypeLike, bucket: Mapping[ObjectKey, dict[str, Any]], ns: str, prefix: str
    ) -> str:
        candidate = ""
        for _ in range(_GENERATE_NAME_ATTEMPTS):
            candidate = generate_name(prefix)
            if (ns, candidate) not in bucket:
                return candidate
        failure = errors.already_exists(group=rt.group, plural=rt.plural, name=candidate)
        failure.message += ", the server was not able to generate a unique name for the object"
        raise failure

    def _other_crds(self, name: str) -> ObjectList:
        return [
            crd
            for (_, crd_name), crd in sorted(self._storage.bucket(CRDS_KEY).items())
            if crd_name != name
        ]

    def _validate_crd(self, rt: ResourceTypeLike, crd: dict[str, Any], name: str) -> None:
        causes = schema.validate_crd(with_type_meta(rt, crd))
        if causes:
            raise self._invalid(rt, name, causes)

    def _admit(self, rt: ResourceTypeLike, obj: dict[str, Any], name: str) -> dict[str, Any]:
        if not rt.custom:
            return obj
        admitted, causes, _unknown = schema.admit_custom_object(rt, with_type_meta(rt, obj))
        scale = getattr(rt, "scale", None)
        if scale is not None:
            causes += schema.scale_replicas_causes(admitted, scale.spec_replicas_path)
        if causes:
            raise self._invalid(rt, name, causes)
        return strip_type_meta(admitted)

    @staticmethod
    def _content_causes(rt: ResourceTypeLike, body: dict[str, Any]) -> CauseList:
        """Validation failures of ObjectMeta (after the name) and of ConfigMap/Secret data keys."""
        meta = body.get("metadata") or {}
        causes = label_causes(meta) + owner_reference_causes(meta)
        if not rt.custom and rt.group == "" and rt.kind in ("ConfigMap", "Secret"):
            binary = "binaryData" if rt.kind == "ConfigMap" else None
            causes += data_key_causes(body, binary_field=binary)
        return causes

    @staticmethod
    def _invalid(rt: ResourceTypeLike, name: str, causes: CauseList) -> StatusError:
        return errors.invalid(group=rt.group, kind=rt.kind, name=name, causes=causes)


def _applied_key(
    rt: ResourceTypeLike, namespace: str | None, name: str, field_manager: str
) -> tuple[str, str, str, str, str]:
    group, plural = storage_key(rt)
    ns = (namespace or "") if rt.namespaced else ""
    return (group, plural, ns, name, field_manager)
