"""An operator license Secret that does not count gets a Warning event on itself.

As ECK for a malformed Secret: reason ``InvalidLicense``, action ``LicenseCheck``, the parse error
as the message (``while parsing license in ns/name: …``). A well-formed license that fails
verification, has expired or has not started yet gets the same event naming its problem
(``license in ns/name is not used: …``): while another license is valid, the license gate never
names it, so without this event a user would never learn why their license is ignored. Only the
leader reports, once per change of the Secret.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from stackflow.kube import errors
from stackflow.kube.events import EventRecorder, InvolvedObject
from stackflow.licensing import LicenseCheck, invalid_license_message, parse_license_secret
from stackflow.licensing.model import EVENT_ACTION_LICENSE_CHECK, EVENT_REASON_INVALID_LICENSE

__all__ = ["LicenseJudge", "LicenseProblemReporter", "malformed_license_message"]

_log = structlog.get_logger(__name__)

#: Parses and verifies one license Secret with the operator's keys
#: (``stackflow.kube.operator_licenses.OperatorLicenseReader.check``).
LicenseJudge = Callable[[Mapping[str, Any]], Awaitable[LicenseCheck]]


def malformed_license_message(secret: Mapping[str, Any]) -> str | None:
    """The event message when ``secret`` does not hold a parseable license, else None (pure)."""
    # No keys are needed to tell a malformed document from a well-formed one.
    check = parse_license_secret(secret, public_keys=(), now=datetime.now(UTC))
    return check.event_message if check.is_malformed else None


class LicenseProblemReporter:
    """Records the Warning event for license Secrets that are malformed or not valid."""

    def __init__(
        self,
        events: EventRecorder,
        *,
        judge: LicenseJudge | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """Report through ``events``. Without ``judge`` (no keys to verify with) only malformed
        Secrets are reported: a well-formed one cannot be told valid or invalid."""
        self._events = events
        self._judge = judge
        self._clock = clock or (lambda: datetime.now(UTC))

    async def message(self, secret: Mapping[str, Any]) -> str | None:
        """The problem of ``secret`` as the event message, or None when it counts."""
        if self._judge is None:
            return malformed_license_message(secret)
        try:
            check = await self._judge(secret)
        except (errors.KubeError, ValueError) as error:
            # The trial key could not be read, or a configured key is unreadable (the license
            # gate reports that one): say what can be said without the keys.
            _log.warning("license.check_failed", error=str(error))
            return malformed_license_message(secret)
        return invalid_license_message(check, now=self._clock())

    async def report(self, secret: dict[str, Any]) -> bool:
        """Record the event if ``secret`` does not count; True when one was recorded."""
        message = await self.message(secret)
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
        _log.warning(
            "license.invalid", secret=f"{involved.namespace}/{involved.name}", problem=message
        )
        return True
