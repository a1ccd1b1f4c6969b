"""Whether a Fleet-mode Agent's workload may be made yet (pure).

ECK enrolls a Fleet-mode Agent that references a Kibana through Kibana's Fleet API before it builds
the Pods: it first waits for the Kibana to be green, then asks Fleet to set itself up and for the
policy's enrollment token. Until both answered it makes no Deployment nor DaemonSet, reports no
health, and says why in a Warning Event. :func:`fleet_gate` is that decision; the activity feeds it
the Kibana's health and Fleet's answer, and obeys it.

Stackflow has no Kibana Fleet API client yet: the activity passes :attr:`FleetAnswer.NOT_ASKED`,
with which the workload is made once the Kibana is green (the Agent then enrolls itself through the
``KIBANA_FLEET_*`` settings of its environment Secret). A client would pass ``ANSWERED`` or
``UNANSWERED`` and the gate already says what each means.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EVENT_DELAYED",
    "EVENT_RECONCILIATION_ERROR",
    "KIBANA_NOT_AVAILABLE_MESSAGE",
    "FleetAnswer",
    "FleetGate",
    "fleet_gate",
    "fleet_server_reference",
    "kibana_reference",
]

#: ECK's Event reasons (Warning) of a Fleet-mode Agent waiting for Kibana.
EVENT_DELAYED = "Delayed"
EVENT_RECONCILIATION_ERROR = "ReconciliationError"
#: ECK's Event actions of those Events.
ACTION_ACCESS_CHECK = "AccessCheck"
ACTION_RECONCILIATION = "Reconciliation"
KIBANA_NOT_AVAILABLE_MESSAGE = (
    "Delaying deployment of Elastic Agent in Fleet Mode as Kibana is not available yet"
)


class FleetAnswer(enum.Enum):
    """What Kibana's Fleet API said to the operator (set-up and enrollment token)."""

    ANSWERED = "answered"
    UNANSWERED = "unanswered"
    #: The operator has no Fleet API client: nothing was asked.
    NOT_ASKED = "not-asked"


@dataclass(frozen=True)
class FleetGate:
    """The decision: make the workload or not, and the Warning Event to record (None: no Event)."""

    build_workload: bool
    reason: str | None = None
    message: str | None = None
    action: str = ""


PROCEED = FleetGate(build_workload=True)


def kibana_reference(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (namespace, name) of the Kibana a Fleet-mode Agent enrolls through; None when the Agent
    is standalone or references no Kibana (it then enrolls with a Fleet Server it is given)."""
    spec: Mapping[str, Any] = obj.get("spec") or {}
    if spec.get("mode") != "fleet":
        return None
    ref = spec.get("kibanaRef")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        return None
    default_namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
    return str(ref.get("namespace") or default_namespace), str(ref["name"])


def fleet_server_reference(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (namespace, name) of the Fleet Server Agent a Fleet-mode Agent that enrolls through a
    Kibana is given (``fleetServerRef``); None without one."""
    if kibana_reference(obj) is None:
        return None
    ref = (obj.get("spec") or {}).get("fleetServerRef")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        return None
    default_namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
    return str(ref.get("namespace") or default_namespace), str(ref["name"])


def fleet_gate(
    obj: Mapping[str, Any],
    *,
    associations_configured: bool,
    kibana_health: str | None,
    fleet: FleetAnswer,
    fleet_error: str = "",
) -> FleetGate:
    """Whether the Agent ``obj``'s workload may be made, given whether its associations are
    configured with the versions their targets report (``associations_configured``), its Kibana's
    ``status.health`` (None: no such Kibana) and what Fleet answered (``fleet_error``: why not).

    As ECK: before the associated versions are reported, the Agent waits without an Event (ECK's
    version check comes first); then a Kibana that is not green delays the workload with a
    ``Delayed`` Event, and Fleet not answering with a ``ReconciliationError`` Event.
    """
    if kibana_reference(obj) is None:
        return PROCEED
    if not associations_configured:
        return FleetGate(build_workload=False)
    if kibana_health != "green":
        return FleetGate(
            build_workload=False,
            reason=EVENT_DELAYED,
            message=KIBANA_NOT_AVAILABLE_MESSAGE,
            action=ACTION_ACCESS_CHECK,
        )
    if fleet is FleetAnswer.UNANSWERED:
        return FleetGate(
            build_workload=False,
            reason=EVENT_RECONCILIATION_ERROR,
            message=f"Reconciliation error: {fleet_error or 'Kibana Fleet API did not answer'}",
            action=ACTION_RECONCILIATION,
        )
    return PROCEED
