"""The license-wait condition's contract: the activity that writes or removes it, its input, its result.

While a gated resource waits for an enterprise license, the resource workflow asks this activity
to say so in the resource's status, and to remove it when the resource reconciles again. The
workflow decides when (``workflows.decisions.license_condition_change``); the activity
(``activities.license_wait_condition``) patches the status. Both import the contract from here,
below them. Pure data: workflows import it.
"""

from __future__ import annotations

from enum import StrEnum

from stackflow.models.engine import Model, ResourceRef

__all__ = [
    "ACT_LICENSE_CONDITION",
    "LicenseConditionChange",
    "LicenseConditionInput",
    "LicenseConditionResult",
]

#: The activity that writes or removes the resource's why-not-reconciled condition.
ACT_LICENSE_CONDITION = "stackflow.license_condition"


class LicenseConditionChange(StrEnum):
    """What the license-wait condition on the resource should become."""

    #: The resource entered the license wait: write the condition naming the missing license.
    WAITING = "Waiting"
    #: The resource reconciled again after a wait (or after being out of scope, where a stale
    #: condition may have been left): remove the condition.
    CLEARED = "Cleared"


class LicenseConditionInput(Model):
    """Write (``WAITING``) or remove (``CLEARED``) the license-wait condition on the resource."""

    ref: ResourceRef
    change: LicenseConditionChange
    #: Why the license check failed (the license reader's reason), for the condition's message.
    reason: str = ""


class LicenseConditionResult(Model):
    """Whether the resource's status was patched (False: already so, gone, or out of scope)."""

    written: bool
