"""Store internals: the state, the write pipeline (commit, history, listeners) and the state file.

:class:`StoreCore` holds the objects and the global resourceVersion; ``store.py`` builds the public
verbs on top of it. Pure rules live in ``meta.py`` and ``store_kinds.py``.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from kubesim import errors, store_kinds
from kubesim.errors import Cause, StatusError
from kubesim.meta import (
    ResourceTypeLike,
    generate_name,
    immutable_causes,
    json_copy,
    mark_deleting,
    new_finalizer_causes,
    owner_reference_causes,
    strip_type_meta,
    with_type_meta,
)
from kubesim.store_index import SortedKeys
from kubesim.store_kinds import CRDS_KEY, NAMESPACES_KEY
from kubesim.watch import Event, HistoryEntry, StorageKey, WatchHub

_log = logging.getLogger(__name__)
ObjectKey = tuple[str, str]
Listener = Callable[[Event], None]
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


def storage_key(rt: ResourceTypeLike) -> StorageKey:
    """Where objects of ``rt`` live: ``rt.storage_key`` when the type defines one."""
    key = getattr(rt, "storage_key", None)
    if key:
        return (str(key[0]), str(key[1]))
    return (rt.group, rt.plural)


def _schema_hook(name: str) -> Callable[..., Any] | None:
    # schema.py is optional: the store validates CRDs / custom objects only when it is present.
    try:
        module = importlib.import_module("kubesim.schema")
    except ModuleNotFoundError as exc:
        if exc.name != "kubesim.schema":
            raise
        return None
    hook = getattr(module, name, None)
    return hook if callable(hook) else None


def rv_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class StoreCore:
    """State and write pipeline shared by the public :class:`kubesim.store.Store` verbs."""

    def __init__(self, registry: RegistryLike, *, history_window: int = 1000) -> None:
        """An empty store."""
        self._registry = registry
        self._objects: dict[StorageKey, dict[ObjectKey, dict[str, Any]]] = {}
        self._sorted_keys = SortedKeys()
        self._rv = 0
        self._hub = WatchHub(history_window=history_window)
        self._listeners: list[Listener] = []
        # Server-side apply: each field manager's last applied configuration, per object.
        self._applied: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}

    def last_applied(
        self, rt: ResourceTypeLike, namespace: str | None, name: str, field_manager: str
    ) -> dict[str, Any] | None:
        """The configuration ``field_manager`` last applied to the object (server-side apply)."""
        group, plural = storage_key(rt)
        ns = (namespace or "") if rt.namespaced else ""
        found = self._applied.get((group, plural, ns, name, field_manager))
        return json_copy(found) if found is not None else None

    def set_last_applied(
        self,
        rt: ResourceTypeLike,
        namespace: str | None,
        name: str,
        field_manager: str,
        applied: dict[str, Any],
    ) -> None:
        """Remember ``applied`` as ``field_manager``'s configuration (forgotten on deletion)."""
        group, plural = storage_key(rt)
        ns = (namespace or "") if rt.namespaced else ""
        self._applied[(group, plural, ns, name, field_manager)] = json_copy(applied)

    # ------------------------------------------------------------ state file

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every object and the RV counter to a JSON state file (atomically)."""
        state = {
            "resourceVersion": self._rv,
            "objects": [
                {"group": key[0], "plural": key[1], "object": obj}
                for key, bucket in sorted(self._objects.items())
                for _, obj in sorted(bucket.items())
            ],
            "lastApplied": [
                [*k, v] for k, v in sorted(self._applied.items(), key=lambda kv: kv[0])
            ],
        }
        target = Path(path)
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(json.dumps(state, separators=(",", ":")), encoding="utf-8")
        os.replace(temporary, target)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Replace the state with a state file; served CRDs are re-registered.

        The event history is not saved: watches may only start from the loaded RV on.
        """
        state = json.loads(Path(path).read_text(encoding="utf-8"))
        self._objects = {}
        self._sorted_keys.clear()
        for entry in state["objects"]:
            obj = entry["object"]
            meta = obj.get("metadata") or {}
            bucket = self._objects.setdefault((entry["group"], entry["plural"]), {})
            bucket[(meta.get("namespace") or "", meta["name"])] = obj
        self._applied = {
            (str(g), str(p), str(ns), str(n), str(m)): applied
            for g, p, ns, n, m, applied in state.get("lastApplied", [])
        }
        self._rv = int(state["resourceVersion"])
        self._hub.reset(floor=self._rv)
        crd_rt = self._kind(CRDS_KEY)
        for _, crd in sorted(self._objects.get(CRDS_KEY, {}).items()):
            if store_kinds.crd_is_established(crd):
                self._registry.add_crd(with_type_meta(crd_rt, crd))

    # -------------------------------------------------------------- internals

    def _keys_in_order(self, key: StorageKey, namespace: str | None) -> list[ObjectKey]:
        """The bucket's object keys sorted by (namespace, name); only ``namespace``'s when given."""
        return self._sorted_keys.in_order(key, self._objects.get(key, {}), namespace)

    def _kind(self, key: StorageKey) -> ResourceTypeLike:
        fallback = store_kinds.NAMESPACE_KIND if key == NAMESPACES_KEY else store_kinds.CRD_KIND
        found = self._registry.lookup(fallback.group, fallback.version, fallback.plural)
        return found if found is not None else fallback

    def _require(self, rt: ResourceTypeLike, namespace: str | None, name: str) -> dict[str, Any]:
        ns = (namespace or "") if rt.namespaced else ""
        obj = self._objects.get(storage_key(rt), {}).get((ns, name))
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
        namespace_obj = self._objects.get(NAMESPACES_KEY, {}).get(("", ns))
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
        crd = self._objects.get(CRDS_KEY, {}).get(("", f"{rt.plural}.{rt.group}"))
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
            raise self._invalid(
                rt,
                name,
                [
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
        causes = immutable_causes(old_meta, meta) + new_finalizer_causes(old_meta, meta)
        causes += owner_reference_causes(meta)
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
            new.setdefault("status", {})["phase"] = "Terminating"
            return with_type_meta(rt, self._write(rt, NAMESPACES_KEY, new, old, dry_run=dry_run))
        if (old.get("spec") or {}).get("finalizers"):
            raise errors.conflict(
                group="", plural="namespaces", name=name, why=store_kinds.NAMESPACE_DELETE_CONFLICT
            )
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
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            meta.pop("finalizers", None)
            if key != NAMESPACES_KEY or store_kinds.namespace_is_finalized(new):
                self._remove(rt, key, new, old, dry_run=dry_run)
                return new
        if dry_run:
            return new
        return self._commit(rt, key, new, old, "MODIFIED")

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
            final = self._commit(rt, key, final, old, "DELETED")
        return with_type_meta(rt, final) if rt.returns_deleted_object else None

    def _commit(
        self,
        rt: ResourceTypeLike,
        key: StorageKey,
        new: dict[str, Any],
        old: dict[str, Any] | None,
        event_type: str,
    ) -> dict[str, Any]:
        self._rv += 1
        meta = new["metadata"]
        meta["resourceVersion"] = str(self._rv)
        object_key = (str(meta.get("namespace") or ""), str(meta["name"]))
        bucket = self._objects.setdefault(key, {})
        if event_type == "DELETED":
            bucket.pop(object_key, None)
            self._sorted_keys.invalidate(key)
            if self._applied:
                self._applied = {
                    k: v
                    for k, v in self._applied.items()
                    if (k[0], k[1], k[2], k[3]) != (*key, *object_key)
                }
        else:
            if object_key not in bucket:
                self._sorted_keys.invalidate(key)
            bucket[object_key] = new
        self._hub.record(HistoryEntry(self._rv, event_type, key, new, old))
        if self._listeners:
            event = Event(
                event_type,
                rt,
                with_type_meta(rt, new),
                with_type_meta(rt, old) if old is not None else None,
            )
            for listener in list(self._listeners):
                try:
                    listener(event)
                except Exception:  # a broken controller must not undo a persisted write
                    _log.exception("store listener failed")
        return new

    def _generated_name(
        self, rt: ResourceTypeLike, bucket: dict[ObjectKey, dict[str, Any]], ns: str, prefix: str
    ) -> str:
        candidate = ""
        for _ in range(_GENERATE_NAME_ATTEMPTS):
            candidate = generate_name(prefix)
            if (ns, candidate) not in bucket:
                return candidate
        failure = errors.already_exists(group=rt.group, plural=rt.plural, name=candidate)
        failure.message += ", the server was not able to generate a unique name for the object"
        raise failure

    def _other_crds(self, name: str) -> list[dict[str, Any]]:
        return [
            crd
            for (_, crd_name), crd in sorted(self._objects.get(CRDS_KEY, {}).items())
            if crd_name != name
        ]

    def _validate_crd(self, rt: ResourceTypeLike, crd: dict[str, Any], name: str) -> None:
        validate = _schema_hook("validate_crd")
        if validate is None:
            return
        causes: list[Cause] = validate(with_type_meta(rt, crd))
        if causes:
            raise self._invalid(rt, name, causes)

    def _admit(self, rt: ResourceTypeLike, obj: dict[str, Any], name: str) -> dict[str, Any]:
        if not rt.custom:
            return obj
        admit = _schema_hook("admit_custom_object")
        if admit is None:
            return obj
        admitted, causes, _unknown = admit(rt, with_type_meta(rt, obj))
        if causes:
            raise self._invalid(rt, name, causes)
        return strip_type_meta(admitted)

    @staticmethod
    def _invalid(rt: ResourceTypeLike, name: str, causes: list[Cause]) -> StatusError:
        return errors.invalid(group=rt.group, kind=rt.kind, name=name, causes=causes)
