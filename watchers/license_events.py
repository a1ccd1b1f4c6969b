"""A malformed operator license Secret gets a Warning event on itself, and is otherwise ignored.

As ECK: reason ``InvalidLicense``, action ``LicenseCheck``, the parse error as the message
(``while parsing license in ns/name: …``). Only the leader reports, once per change of the Secret.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import structlog

from stackflow.kube import errors
from stackflow.kube.events import EventRecorder, InvolvedObject
from stackflow.licensing import parse_license_secret
from stackflow.licensing.model import EVENT_ACTION_LICENSE_CHECK, EVENT_REASON_INVALID_LICENSE

_log = structlog.get_logger(__name__)


def malformed_license_message(secret: dict[str, Any]) -> str | None:
    """The event message when ``secret`` does not hold a parseable license, else None (pure)."""
    # No keys are needed to tell a malformed document from a well-formed one.
    check = parse_license_secret(secret, public_keys=(), now=datetime.now(UTC))
    return check.event_message if check.is_malformed else None


class MalformedLicenseReporter:
    """Records the Warning event for malformed license Secrets."""

    def __init__(self, events: EventRecorder) -> None:
        """Report through ``events``."""
        self._events = events

    async def report(self, secret: dict[str, Any]) -> bool:
        """Record the event if ``secret`` is malformed; True when one was recorded."""
        message = malformed_license_message(secret)
        if message is None:
            return False
        involved = InvolvedObject.of({"apiVersion": "v1", "kind": "Secret", **secret})
        try:
            await self._events.warning(
                involved,
                reason=EVENT_REASON_INVALID_LICENSE,
                action=EVENT_ACTION_LICENSE_CHECK,
                message=message,
            )
        except errors.KubeError as error:
            # An event is advice to a human; failing to write it must not stop the watch.
            _log.warning("license.event_failed", secret=involved.name, error=str(error))
            return False
        _log.warning("license.malformed", secret=f"{involved.namespace}/{involved.name}")
        return True
