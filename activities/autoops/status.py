"""The policy's pause and unmanaged annotations, ECK's ``OrchestrationPaused`` condition and the
status write."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from activities.context import ControllerContext
from stackflow.controllers.autoops import AUTOOPS_POLICY
from stackflow.models.objects import view

__all__ = [
    "DEPRECATED_UNMANAGED_ANNOTATION",
    "LEGACY_PAUSE_ANNOTATION",
    "PAUSED_CONDITION",
    "PAUSED_NO_CHANGES_MESSAGE",
    "PAUSED_PENDING_MESSAGE",
    "PAUSE_ANNOTATION",
    "RESUMED_MESSAGE",
    "is_paused",
    "is_unmanaged",
    "paused_conditions",
    "write_status",
]

#: ECK's pause annotation: nothing is changed while it is ``"true"``.
PAUSE_ANNOTATION = "eck.k8s.elastic.co/pause-orchestration"
#: ECK's older ways to stop a reconcile altogether (nothing read, nothing written).
LEGACY_PAUSE_ANNOTATION = "common.k8s.elastic.co/pause"
#: ``"false"``: the policy is not managed (ECK skips it entirely; deprecated).
DEPRECATED_UNMANAGED_ANNOTATION = "eck.k8s.elastic.co/managed"
#: ECK's ``OrchestrationPaused`` messages, events and actions.
PAUSED_PENDING_MESSAGE = (
    "Orchestration paused via annotation; spec changes are pending and will be applied on resume"
)
PAUSED_NO_CHANGES_MESSAGE = "Orchestration paused via annotation; no pending spec changes detected"
RESUMED_MESSAGE = "Orchestration has resumed normally"
PAUSED_CONDITION = "OrchestrationPaused"


def is_unmanaged(policy: Mapping[str, Any]) -> bool:
    """ECK's unmanaged policy (``eck.k8s.elastic.co/managed: "false"`` or the legacy pause):
    not reconciled at all."""
    annotations = view(policy).annotations
    return (
        annotations.get(DEPRECATED_UNMANAGED_ANNOTATION) == "false"
        or annotations.get(LEGACY_PAUSE_ANNOTATION) == "true"
    )


def is_paused(policy: Mapping[str, Any]) -> bool:
    return view(policy).annotations.get(PAUSE_ANNOTATION) == "true"


def paused_conditions(
    current: Sequence[Mapping[str, Any]], *, paused: bool, pending: bool, now: str
) -> tuple[list[dict[str, Any]], dict[str, str] | None]:
    """The status conditions with ECK's ``OrchestrationPaused`` (True with the pending or
    no-pending message while paused; False with the resumed message once it was True; left
    out otherwise), its transition time kept while its status does not change; and the event
    ECK records for it (a Warning ``Paused`` with changes pending, a Normal ``Resumed``)."""
    kept = [dict(c) for c in current if c.get("type") != PAUSED_CONDITION]
    previous = next((c for c in current if c.get("type") == PAUSED_CONDITION), None)
    event: dict[str, str] | None = None
    if paused:
        message = PAUSED_PENDING_MESSAGE if pending else PAUSED_NO_CHANGES_MESSAGE
        status = "True"
        if pending:
            event = {"type": "Warning", "reason": "Paused", "action": "Reconciliation"}
    elif previous is not None and previous.get("status") == "True":
        message, status = RESUMED_MESSAGE, "False"
        event = {"type": "Normal", "reason": "Resumed", "action": "OrchestrationResumed"}
    elif previous is not None:
        return [*kept, dict(previous)], None
    else:
        return kept, None
    transition = now
    if previous is not None and previous.get("status") == status:
        transition = str(previous.get("lastTransitionTime") or now)
    condition = {
        "type": PAUSED_CONDITION,
        "status": status,
        "lastTransitionTime": transition,
        "message": message,
    }
    if event is not None:
        event["message"] = message
    return [*kept, condition], event


async def write_status(
    context: ControllerContext, policy: Mapping[str, Any], status: dict[str, Any]
) -> None:
    current = policy.get("status") or {}
    if all(current.get(key) == value for key, value in status.items()) and set(current) <= set(
        status
    ):
        return
    meta = view(policy)
    # Keys the new status lacks (``details`` once every cluster is fine) are removed.
    patch: dict[str, Any] = {key: None for key in current if key not in status}
    patch.update(status)
    await context.scoped.patch_status(
        AUTOOPS_POLICY, {"status": patch}, namespace=meta.namespace, name=meta.name
    )
