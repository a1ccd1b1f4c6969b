"""Association statuses: per-ref values and the status fields of each associated kind (pure).

Single-ref associations write one value (``elasticsearchAssociationStatus``); multi-ref ones write a
map keyed ``"<ns>/<name>"`` of the target (Agent/Logstash ``elasticsearchAssociationsStatus``).
Kibana also mirrors its Elasticsearch status into the deprecated ``associationStatus``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from stackflow.stack.associations.refs import AssociationRef
from stackflow.stack.associations.table import Association

AssociationStatusValue = Literal["", "Pending", "Established", "Failed"]

UNKNOWN: AssociationStatusValue = ""
PENDING: AssociationStatusValue = "Pending"
ESTABLISHED: AssociationStatusValue = "Established"
FAILED: AssociationStatusValue = "Failed"


class StatusError(ValueError):
    """A single-ref association was given more than one status."""


def status_map(
    statuses: Iterable[tuple[AssociationRef, AssociationStatusValue]],
) -> dict[str, AssociationStatusValue]:
    """Key each ref's status by ``"<ns>/<name>"`` (ECK's ``newStatusMap``)."""
    return {ref.key: value for ref, value in statuses}


def status_fields(
    association: Association, statuses: Mapping[str, AssociationStatusValue]
) -> dict[str, Any]:
    """The status fields ``association`` writes for ``statuses`` (a map keyed ``ns/name``).

    A single-ref association takes the only value (``""`` when there is none); more than one is an
    error, as ECK's ``AssociationStatusMap.Single``. An empty map clears a multi-ref field.
    """
    if association.multi_ref:
        fields: dict[str, Any] = {association.status_field: dict(statuses) or None}
    else:
        if len(statuses) > 1:
            raise StatusError(
                f"expected at most one {association.name} status, got {len(statuses)}"
            )
        single = next(iter(statuses.values()), UNKNOWN)
        fields = {association.status_field: single or None}
        if association.legacy_status_field:
            fields[association.legacy_status_field] = single or None
    return fields


def apply_status(
    status: Mapping[str, Any] | None,
    association: Association,
    statuses: Mapping[str, AssociationStatusValue],
) -> dict[str, Any]:
    """Return ``status`` with ``association``'s fields set (empty values removed, as Go's ``omitempty``)."""
    updated = copy.deepcopy(dict(status or {}))
    for field, value in status_fields(association, statuses).items():
        if value is None:
            updated.pop(field, None)
        else:
            updated[field] = value
    return updated


def current_statuses(
    status: Mapping[str, Any] | None, association: Association
) -> dict[str, AssociationStatusValue]:
    """Read ``association``'s statuses back from an object's status (single ones under key ``""``)."""
    value = (status or {}).get(association.status_field)
    if association.multi_ref:
        return dict(value) if isinstance(value, Mapping) else {}
    return {"": value} if value else {}


def all_established(statuses: Mapping[str, AssociationStatusValue]) -> bool:
    """Whether every association is ``Established`` (true for none)."""
    return all(value == ESTABLISHED for value in statuses.values())


def describe(statuses: Mapping[str, AssociationStatusValue]) -> str:
    """ECK's ``AssociationStatusMap.String()``: the bare value for a single status, else sorted ``k: v`` pairs."""
    if len(statuses) == 1 and "" in statuses:
        return statuses[""]
    return ", ".join(f"{key}: {statuses[key]}" for key in sorted(statuses))


def needs_requeue(statuses: Mapping[str, AssociationStatusValue]) -> bool:
    """Whether any association is ``Pending`` (ECK requeues after its default delay)."""
    return any(value == PENDING for value in statuses.values())
