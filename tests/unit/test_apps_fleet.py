"""The Fleet gate of an Agent: no workload until Kibana and its Fleet API answered (as ECK)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.controllers.apps import app_references
from stackflow.stack.apps.fleet import (
    EVENT_DELAYED,
    EVENT_RECONCILIATION_ERROR,
    KIBANA_NOT_AVAILABLE_MESSAGE,
    FleetAnswer,
    fleet_gate,
    fleet_server_reference,
    kibana_reference,
)


def agent(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "fs", "namespace": "ns"}, "spec": spec}


FLEET = {"mode": "fleet", "fleetServerEnabled": True, "kibanaRef": {"name": "kb"}}
STANDALONE = {"mode": "standalone", "kibanaRef": {"name": "kb"}}
NO_KIBANA = {"mode": "fleet", "fleetServerRef": {"name": "fs"}}


@pytest.mark.parametrize(
    ("spec", "configured", "health", "answer", "build", "reason"),
    [
        # Not a Fleet-mode Agent with a Kibana: nothing to wait for.
        (STANDALONE, False, None, FleetAnswer.UNANSWERED, True, None),
        (NO_KIBANA, True, None, FleetAnswer.UNANSWERED, True, None),
        # Associations not configured yet: wait without an Event (ECK's version gate).
        (FLEET, False, "green", FleetAnswer.ANSWERED, False, None),
        # Kibana missing or not green: Delayed.
        (FLEET, True, None, FleetAnswer.ANSWERED, False, EVENT_DELAYED),
        (FLEET, True, "red", FleetAnswer.ANSWERED, False, EVENT_DELAYED),
        (FLEET, True, "yellow", FleetAnswer.NOT_ASKED, False, EVENT_DELAYED),
        # Kibana green, Fleet did not answer: ReconciliationError.
        (FLEET, True, "green", FleetAnswer.UNANSWERED, False, EVENT_RECONCILIATION_ERROR),
        # Kibana green, Fleet answered or nothing asked (no client): the workload is made.
        (FLEET, True, "green", FleetAnswer.ANSWERED, True, None),
        (FLEET, True, "green", FleetAnswer.NOT_ASKED, True, None),
    ],
)
def test_fleet_gate(
    spec: dict[str, Any],
    configured: bool,
    health: str | None,
    answer: FleetAnswer,
    build: bool,
    reason: str | None,
) -> None:
    gate = fleet_gate(
        agent(spec), associations_configured=configured, kibana_health=health, fleet=answer
    )
    assert (gate.build_workload, gate.reason) == (build, reason)
    assert (gate.message is None) == (reason is None)


def test_event_messages_say_why() -> None:
    delayed = fleet_gate(
        agent(FLEET), associations_configured=True, kibana_health="red", fleet=FleetAnswer.ANSWERED
    )
    unanswered = fleet_gate(
        agent(FLEET),
        associations_configured=True,
        kibana_health="green",
        fleet=FleetAnswer.UNANSWERED,
        fleet_error="connection refused",
    )
    assert delayed.message == KIBANA_NOT_AVAILABLE_MESSAGE
    assert unanswered.message == "Reconciliation error: connection refused"


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (agent(FLEET), ("ns", "kb")),
        (agent({**FLEET, "kibanaRef": {"name": "kb", "namespace": "other"}}), ("other", "kb")),
        (agent(STANDALONE), None),
        (agent(NO_KIBANA), None),
        (agent({"mode": "fleet", "kibanaRef": {"secretName": "external"}}), None),
    ],
)
def test_kibana_reference(obj: dict[str, Any], expected: tuple[str, str] | None) -> None:
    assert kibana_reference(obj) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({**FLEET, "fleetServerRef": {"name": "fs"}}, ("ns", "fs")),
        ({**FLEET, "fleetServerRef": {"name": "fs", "namespace": "x"}}, ("x", "fs")),
        (FLEET, None),
        (NO_KIBANA, None),  # no Kibana: no Fleet gate, nothing to wait for
    ],
)
def test_fleet_server_reference(spec: dict[str, Any], expected: tuple[str, str] | None) -> None:
    assert fleet_server_reference(agent(spec)) == expected


def test_a_fleet_agent_is_reconciled_again_when_its_kibana_or_fleet_server_changes() -> None:
    keys = app_references(
        {
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {**FLEET, "fleetServerRef": {"name": "fs"}},
        }
    )
    assert [(k.group, k.kind, k.namespace, k.name) for k in keys] == [
        ("kibana.k8s.elastic.co", "Kibana", "ns", "kb"),
        ("agent.k8s.elastic.co", "Agent", "ns", "fs"),
    ]
    assert app_references(agent(STANDALONE)) == []
