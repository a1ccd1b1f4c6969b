"""Idempotent create-or-update of operator-owned objects, with no write when nothing changed.

The decision is pure (``merged_object``): the desired object is laid over the current one —
maps merge key by key (so fields the server defaults or sets are kept), lists of equal length
merge item by item (server defaults inside list items are kept too), any other list or value is
replaced, and the payload maps (``data``, ``stringData``, ``binaryData``) are owned wholesale. What
a real API server normalises is no difference: a zero value it omits when storing (``false``,
``[]``, ``""``) and a quantity in its canonical spelling (``1.5Gi`` stored as ``1536Mi``). When
the result equals the current object nothing is written; otherwise it is PUT with the current
``resourceVersion``, so a concurrent change answers ``Conflict`` (retryable) instead of being lost.

The decision copies nothing it does not change: the merged object is new maps and lists only along
the paths the desired object sets, and shares every other value with the current and the desired
object. Nothing here or in its callers changes any of them afterwards (a write serialises the
object). Deep-copying both objects on every comparison was the largest cost of a reconcile that
writes nothing: about 20 ms of CPU for an Elasticsearch's children.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stackflow.kube import errors
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.engine import ResourceRef
from stackflow.models.kinds import SECRETS, Kind
from stackflow.models.objects import view
from stackflow.models.quantity import same_quantity
from stackflow.stack.labels import (
    SOFT_OWNER_KIND_LABEL,
    SOFT_OWNER_NAME_LABEL,
    SOFT_OWNER_NAMESPACE_LABEL,
)

__all__ = [
    "UNREAD",
    "Applied",
    "ApplyOutcome",
    "Unread",
    "apply_object",
    "apply_objects",
    "delete_soft_owned_secrets",
    "merged_object",
    "normalised_desired",
    "planned_update",
]

#: Top-level maps the operator owns completely (a key it no longer wants must disappear).
_OWNED_PAYLOADS = frozenset({"data", "binaryData"})
#: Fields the server owns; never compared, never written from the desired object.
_SERVER_METADATA = frozenset(
    {
        "resourceVersion",
        "uid",
        "generation",
        "creationTimestamp",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)


#: Maps whose values are resource quantities (container resources, claim sizes).
_QUANTITY_MAPS = frozenset({"requests", "limits", "capacity"})


class ApplyOutcome(StrEnum):
    """What ``apply_object`` did."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Applied:
    """The object as stored after ``apply_object`` and what was done to get there."""

    obj: dict[str, Any]
    outcome: ApplyOutcome


def normalised_desired(desired: Mapping[str, Any]) -> dict[str, Any]:
    """The desired object as the server would store it: ``stringData`` folded into ``data``
    (pure; new top-level, ``metadata`` and ``data`` maps, the rest shared with ``desired``)."""
    normalised = dict(desired)
    string_data = normalised.pop("stringData", None)
    if string_data:
        data = dict(normalised.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        normalised["data"] = data
    metadata = dict(normalised.get("metadata") or {})
    for key in _SERVER_METADATA:
        metadata.pop(key, None)
    normalised["metadata"] = metadata
    normalised.pop("status", None)
    return normalised


def _omitted_when_stored(value: Any) -> bool:
    """A zero value the API server leaves out of the object it stores (Go's ``omitempty``):
    wanting it where the stored object has no such key is no difference."""
    return (
        value is None
        or (not isinstance(value, int | float) and value in ("", [], {}))
        or (value is False)
    )


def _merge(current: Any, desired: Any, *, quantities: bool = False) -> Any:
    if isinstance(current, Mapping) and isinstance(desired, Mapping):
        merged = dict(current)
        for key, value in desired.items():
            if key not in current and _omitted_when_stored(value):
                continue
            # The values of a quantity map (and ``sizeLimit`` itself) are quantities.
            merged[key] = _merge(
                current.get(key),
                value,
                quantities=quantities or key in _QUANTITY_MAPS or key == "sizeLimit",
            )
        return merged
    if quantities and same_quantity(current, desired):
        # The server's canonical spelling of the same amount (1.5Gi is stored as 1536Mi).
        return current
    if (
        isinstance(current, list)
        and isinstance(desired, list)
        and len(current) == len(desired)
        and all(isinstance(item, Mapping) for item in desired)
    ):
        return [_merge(old, new) for old, new in zip(current, desired, strict=True)]
    return desired


def merged_object(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """``desired`` laid over ``current``, keeping what the server set (pure; it shares what it
    does not change with both, see the module doc)."""
    wanted = normalised_desired(desired)
    merged: dict[str, Any] = dict(current)
    for key, value in wanted.items():
        if key not in current and _omitted_when_stored(value):
            continue
        if key in _OWNED_PAYLOADS or key in ("apiVersion", "kind"):
            merged[key] = value
        else:
            merged[key] = _merge(current.get(key), value)
    for key in _OWNED_PAYLOADS:
        if key not in wanted and key in merged and key in current:
            # The desired object has no such payload: it must not keep a stale one either.
            merged.pop(key)
    return merged


def planned_update(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """The object to PUT to bring ``current`` in line with ``desired``, or None when it already is
    (pure; the status is never written here)."""
    merged = merged_object(current, desired)
    merged.pop("status", None)
    if {key: value for key, value in current.items() if key != "status"} == merged:
        return None
    return merged


class Unread:
    """``apply_object``'s ``current`` when the caller has not read the object."""


UNREAD = Unread()


async def apply_object(
    client: ScopedClient,
    resource: Kind,
    desired: Mapping[str, Any],
    *,
    current: Mapping[str, Any] | Unread | None = UNREAD,
) -> Applied:
    """Create ``desired`` or bring the current object in line with it; no write when equal.

    ``current`` is the object as the caller listed it moments ago (None: the listing had none),
    which saves a read per child. A stale one costs no change: a write it makes answers
    ``Conflict`` and is made again on a fresh read, and a create that finds the object there
    reads it and goes on as an update.
    """
    meta = view(desired)
    namespace, name = meta.namespace or None, meta.name
    listed = not isinstance(current, Unread)
    if isinstance(current, Unread):
        current = await client.get_or_none(resource, namespace=namespace, name=name)
    if current is None:
        try:
            created = await client.create(
                resource, normalised_desired(desired), namespace=namespace
            )
        except errors.AlreadyExists:
            if not listed:
                raise
            # Made by someone else since the listing (or never labelled for it).
            current = await client.get(resource, namespace=namespace, name=name)
        else:
            return Applied(created, ApplyOutcome.CREATED)
    update = planned_update(current, desired)
    if update is None:
        return Applied(dict(current), ApplyOutcome.UNCHANGED)
    try:
        updated = await client.replace(resource, update, namespace=namespace, name=name)
    except errors.Conflict:
        if not listed:
            raise
        return await apply_object(client, resource, desired)
    return Applied(updated, ApplyOutcome.UPDATED)


async def apply_objects(
    client: ScopedClient,
    wanted: Sequence[tuple[Kind, Mapping[str, Any], Mapping[str, Any] | Unread | None]],
) -> list[Applied]:
    """``apply_object`` for each ``(resource, desired, current)`` at once (they do not depend on
    each other), in ``wanted``'s order; every one is tried, then the first failure is raised."""
    outcomes = await asyncio.gather(
        *(
            apply_object(client, resource, desired, current=current)
            for resource, desired, current in wanted
        ),
        return_exceptions=True,
    )
    applied: list[Applied] = []
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
        applied.append(outcome)
    return applied


async def delete_soft_owned_secrets(
    client: ScopedClient | UnscopedClient, owner: ResourceRef
) -> tuple[str, ...]:
    """Delete the Secrets soft-owned by ``owner`` (they carry labels, not an ownerReference).

    With the scoped client nothing is deleted in a namespace that is out of scope; a finalizer
    passes the unscoped one, because its owner is gone and the Secrets are the operator's own
    (ECK deletes them on deletion whatever the scope). Answers ``Secret ns/name`` for each one
    deleted.
    """
    selector = ",".join(
        (
            f"{SOFT_OWNER_NAMESPACE_LABEL}={owner.namespace}",
            f"{SOFT_OWNER_NAME_LABEL}={owner.name}",
            f"{SOFT_OWNER_KIND_LABEL}={owner.kind}",
        )
    )
    listed = await client.list(SECRETS, namespace=owner.namespace, label_selector=selector)
    deleted: list[str] = []
    for secret in listed["items"]:
        name = str(secret["metadata"]["name"])
        try:
            await client.delete(SECRETS, namespace=owner.namespace, name=name)
        except errors.NotFound:
            continue
        deleted.append(f"Secret {owner.namespace}/{name}")
    return tuple(deleted)
