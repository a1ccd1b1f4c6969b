"""The autoscaler without an enterprise license, as ECK handles it: inactive, a Warning event, and
another look a minute later.
"""

from __future__ import annotations

from stackflow.stack.policies.autoscaling.status import inactive_conditions

__all__ = [
    "INVALID_LICENSE_EVENT_REASON",
    "UNLICENSED_MESSAGE",
    "UNLICENSED_RETRY_SECONDS",
    "unlicensed_conditions",
    "unlicensed_event",
]

#: The Warning event's reason when the license does not allow autoscaling.
INVALID_LICENSE_EVENT_REASON = "InvalidLicense"


#: Without an enterprise license the autoscaler is looked at again after this delay: a license
#: may be installed at any time, and nothing else would wake the reconcile.
UNLICENSED_RETRY_SECONDS = 60


#: ECK's message of that event, word for word.
UNLICENSED_MESSAGE = "Autoscaling is an enterprise feature. Enterprise features are disabled"


def unlicensed_conditions() -> list[dict[str, str]]:
    """ECK's conditions without an enterprise license: inactive, with the license message."""
    return inactive_conditions(UNLICENSED_MESSAGE)


def unlicensed_event() -> dict[str, str]:
    """The Warning event recorded on the autoscaler without an enterprise license."""
    return {
        "type": "Warning",
        "reason": INVALID_LICENSE_EVENT_REASON,
        "action": "LicenseCheck",
        "message": UNLICENSED_MESSAGE,
    }
