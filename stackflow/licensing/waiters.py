"""``LicenseWaiters``: the resource workflows this process last saw waiting for a license.

When an operator license appears, the watchers wake every workflow in phase
``WaitingForLicense``, found by a visibility query. Visibility is eventually consistent: a
workflow whose reconcile step answered "unlicensed" a moment before the license appeared is not
listed yet, and waits for the query's next round (0.25 s later, ``LICENSE_FOLLOW_UP_DELAYS``).
The reconcile step runs in this process, so it records its own verdict here; the watchers wake
the workflows it recorded at once, and the query still finds those whose step ran on another
replica. A workflow's id leaves the set at its first verdict that is not "unlicensed".
"""

from __future__ import annotations

__all__ = ["LicenseWaiters"]


class LicenseWaiters:
    """The workflow ids whose last reconcile step in this process found no license."""

    def __init__(self) -> None:
        """Nobody waits yet."""
        self._waiting: set[str] = set()

    def record(self, workflow_id: str, *, waiting: bool) -> None:
        """Remember the verdict of ``workflow_id``'s step: waiting for a license, or not."""
        if waiting:
            self._waiting.add(workflow_id)
        else:
            self._waiting.discard(workflow_id)

    def waiting(self) -> frozenset[str]:
        """The workflow ids that wait, as of now."""
        return frozenset(self._waiting)
