"""A Warning event naming the spec fields the operator does not know, once per generation.

The CRD keeps unknown fields (a manifest written for a newer ECK must survive a round trip), so a
typo such as ``nodeSet`` for ``nodeSets`` is stored without a word and silently ignored. The
reconcile tells the user, once for each generation: only while ``status.observedGeneration`` is
behind ``metadata.generation`` (the pass that records the generation ends the warnings).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activities.context import ControllerContext
from activities.kinds import involved_reference
from stackflow.api.kinds import unknown_spec_fields
from stackflow.kube.events import InvolvedObject
from stackflow.models.engine import ResourceRef
from stackflow.models.objects import view

__all__ = ["UNKNOWN_FIELDS_REASON", "unknown_fields_message", "warn_unknown_fields"]

UNKNOWN_FIELDS_REASON = "UnknownFields"
#: At most this many paths are named; the count says how many more there are.
_NAMED_FIELDS = 10


def unknown_fields_message(kind: str, key: str, fields: list[str]) -> str:
    """The warning naming the unknown fields of ``kind`` ``key`` (pure)."""
    named = ", ".join(fields[:_NAMED_FIELDS])
    more = f" and {len(fields) - _NAMED_FIELDS} more" if len(fields) > _NAMED_FIELDS else ""
    return f"{kind} {key} has fields this operator does not know, kept but ignored: {named}{more}"


def _generation_observed(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status")
    observed = status.get("observedGeneration") if isinstance(status, Mapping) else None
    return observed is not None and observed == view(obj).generation


async def warn_unknown_fields(
    context: ControllerContext, ref: ResourceRef, obj: Mapping[str, Any]
) -> None:
    """Record the unknown-fields warning of ``obj`` unless its generation was already reconciled."""
    if _generation_observed(obj):
        return
    fields = unknown_spec_fields(dict(obj))
    if not fields:
        return
    await context.events.warning(
        InvolvedObject.of(involved_reference(ref, dict(obj))),
        reason=UNKNOWN_FIELDS_REASON,
        message=unknown_fields_message(ref.kind, f"{ref.namespace}/{ref.name}", fields),
    )
