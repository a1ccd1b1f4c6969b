"""The why-not-reconciled condition: a resource waiting for a license says so in its status.

While a gated resource waits for an enterprise license (phase ``WaitingForLicense``) its own
reconcile does not run, so nothing else would tell a user looking at the resource why it is left
alone. The workflow calls this activity when the wait starts and again when the resource
reconciles after it. The activity only merge-patches ``/status`` ``conditions``, reads through the
scoped client (a resource whose namespace is out of scope is never written) and needs no license.

``conditions`` is a list, which a merge patch replaces whole: the patch carries every other
condition as read, with the object's resourceVersion, so a concurrent status write is not undone
(the API server answers a conflict, and the activity reads again and recomputes the patch; only
after ``CONFLICT_ATTEMPTS`` conflicts in a row is the activity itself retried).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from activities.context import ControllerContext
from stackflow.controllers import Gate
from stackflow.kube import errors
from stackflow.kube.writes import writing_as
from stackflow.models.license_condition import (
    LicenseConditionChange,
    LicenseConditionInput,
    LicenseConditionResult,
)
from stackflow.models.objects import view

__all__ = [
    "CONDITION_TYPE",
    "CONFLICT_ATTEMPTS",
    "REASON_WAITING_FOR_LICENSE",
    "license_condition",
    "status_patch",
    "waiting_message",
]

#: The condition's type: Stackflow's own, next to the controllers' (ECK's types are left alone).
CONDITION_TYPE = "StackflowReconciliation"
REASON_WAITING_FOR_LICENSE = "WaitingForLicense"
#: Read-patch rounds before a conflict fails the activity. A license change wakes every
#: controller of a resource at once (an Agent has four writing its status), so a conflict is
#: the expected race, not an error worth a failed attempt (and its traceback) in the log.
CONFLICT_ATTEMPTS = 5


def waiting_message(reason: str) -> str:
    """The condition's message: what license is missing and why the operator needs one."""
    missing = reason or "no valid enterprise license"
    return (
        f"Not reconciled: waiting for an enterprise operator license ({missing}). The operator's "
        "namespace selector (dynamic namespace scoping) needs an enterprise license; add a valid "
        "license Secret labelled license.k8s.elastic.co/scope=operator to resume."
    )


def _format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _waiting_condition(
    previous: Mapping[str, Any] | None, *, reason: str, now: datetime
) -> dict[str, Any]:
    """The waiting condition, keeping its transition time while it stays ``False``."""
    transition = _format_time(now)
    if previous is not None and previous.get("status") == "False":
        transition = str(previous.get("lastTransitionTime") or transition)
    return {
        "type": CONDITION_TYPE,
        "status": "False",
        "reason": REASON_WAITING_FOR_LICENSE,
        "message": waiting_message(reason),
        "lastTransitionTime": transition,
    }


def status_patch(
    obj: Mapping[str, Any], *, change: LicenseConditionChange, reason: str, now: datetime
) -> dict[str, Any] | None:
    """The merge patch of the object's ``/status`` for ``change``, or None when it is already so.

    Every other condition is carried as read (the list is replaced whole) and the object's
    resourceVersion goes along, so the patch applies only to the status it was computed from.
    """
    current: Sequence[Mapping[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    ours = next((c for c in current if c.get("type") == CONDITION_TYPE), None)
    others = [dict(c) for c in current if c.get("type") != CONDITION_TYPE]
    if change is LicenseConditionChange.CLEARED:
        if ours is None:
            return None
        conditions = others
    else:
        wanted = _waiting_condition(ours, reason=reason, now=now)
        if ours is not None and dict(ours) == wanted:
            return None
        conditions = [*others, wanted]
    patch: dict[str, Any] = {"status": {"conditions": conditions}}
    resource_version = view(obj).resource_version
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return patch


async def license_condition(
    context: ControllerContext, request: LicenseConditionInput
) -> LicenseConditionResult:
    """Write or remove the license-wait condition on the resource (scoped read, status patch)."""
    ref = request.ref
    controller = context.controllers.get(ref.controller)
    if controller is not None and controller.gate is Gate.NONE:
        # An ungated controller never writes the condition (the remote-cluster controller waits
        # for a license in its own reconcile): the one on the resource is another controller's.
        return LicenseConditionResult(written=False)
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            # The scoped client reports an object of an out-of-scope namespace as not found.
            obj = await context.scoped.get(ref.resource, namespace=ref.namespace, name=ref.name)
        except errors.NotFound:
            return LicenseConditionResult(written=False)
        patch = status_patch(obj, change=request.change, reason=request.reason, now=context.clock())
        if patch is None:
            return LicenseConditionResult(written=False)
        try:
            # Attributed to the resource's controller: its watchers do not wake it for this write.
            with writing_as(ref.controller):
                await context.scoped.patch_status(
                    ref.resource, patch, namespace=ref.namespace, name=ref.name
                )
        except errors.NotFound:
            return LicenseConditionResult(written=False)
        except errors.Conflict:
            # Another controller wrote the status since the read: read it again.
            if attempt == CONFLICT_ATTEMPTS:
                raise
            continue
        return LicenseConditionResult(written=True)
    raise AssertionError("unreachable: the last attempt returns or raises")
