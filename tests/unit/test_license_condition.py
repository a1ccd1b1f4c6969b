"""The license-wait condition: when the workflow asks for it, and the status patch it becomes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from activities.license_wait_condition import (
    CONDITION_TYPE,
    CONFLICT_ATTEMPTS,
    REASON_WAITING_FOR_LICENSE,
    license_condition,
    status_patch,
    waiting_message,
)
from stackflow.controllers import CONTROLLERS
from stackflow.kube import errors
from stackflow.models.engine import Phase, ResourceRef, StepVerdict
from stackflow.models.kinds import Kind
from stackflow.models.license_condition import LicenseConditionChange, LicenseConditionInput
from stackflow.stack.elasticsearch.status import compute_status
from workflows.decisions import license_condition_change

NOW = datetime(2026, 12, 3, 14, 0, 0, tzinfo=UTC)
EARLIER = "2026-12-01T08:00:00Z"
WAITING = LicenseConditionChange.WAITING
CLEARED = LicenseConditionChange.CLEARED


@pytest.mark.parametrize(
    ("before", "verdict", "expected"),
    [
        # Entering the wait writes it; staying in the wait does not write it again.
        (Phase.RECONCILING, StepVerdict.UNLICENSED, WAITING),
        (Phase.READY, StepVerdict.UNLICENSED, WAITING),
        (Phase.RETRY_SCHEDULED, StepVerdict.UNLICENSED, WAITING),
        (Phase.OUT_OF_SCOPE, StepVerdict.UNLICENSED, WAITING),
        (Phase.ERROR, StepVerdict.UNLICENSED, WAITING),
        (Phase.WAITING_FOR_LICENSE, StepVerdict.UNLICENSED, None),
        # Through the gates after a wait (or after being out of scope): removed.
        (Phase.WAITING_FOR_LICENSE, StepVerdict.RECONCILED, CLEARED),
        (Phase.WAITING_FOR_LICENSE, StepVerdict.INVALID_SPEC, CLEARED),
        (Phase.OUT_OF_SCOPE, StepVerdict.RECONCILED, CLEARED),
        (Phase.OUT_OF_SCOPE, StepVerdict.INVALID_SPEC, CLEARED),
        # Reconciles that were never stopped by the gate write nothing.
        (Phase.READY, StepVerdict.RECONCILED, None),
        (Phase.RECONCILING, StepVerdict.RECONCILED, None),
        (Phase.RETRY_SCHEDULED, StepVerdict.RECONCILED, None),
        (Phase.ERROR, StepVerdict.INVALID_SPEC, None),
        # Out of scope is never written; a deleted resource has no status to write.
        (Phase.WAITING_FOR_LICENSE, StepVerdict.OUT_OF_SCOPE, None),
        (Phase.READY, StepVerdict.OUT_OF_SCOPE, None),
        (Phase.WAITING_FOR_LICENSE, StepVerdict.DELETED, None),
    ],
)
def test_license_condition_change(
    before: Phase, verdict: StepVerdict, expected: LicenseConditionChange | None
) -> None:
    assert license_condition_change(before, verdict) is expected


def ours(status: str = "False", since: str = EARLIER, reason: str = "no license") -> dict[str, Any]:
    """The condition as the activity writes it."""
    return {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": REASON_WAITING_FOR_LICENSE,
        "message": waiting_message(reason),
        "lastTransitionTime": since,
    }


HEALTH = {"type": "ReconciliationComplete", "status": "True", "lastTransitionTime": EARLIER}


def resource(*conditions: dict[str, Any], rv: str = "7") -> dict[str, Any]:
    """A resource whose status holds `conditions`."""
    obj: dict[str, Any] = {"metadata": {"name": "es", "namespace": "a", "resourceVersion": rv}}
    if conditions:
        obj["status"] = {"health": "green", "conditions": list(conditions)}
    return obj


def patch_of(*conditions: dict[str, Any], rv: str = "7") -> dict[str, Any]:
    """The merge patch that leaves exactly `conditions`."""
    return {"status": {"conditions": list(conditions)}, "metadata": {"resourceVersion": rv}}


NOW_TEXT = "2026-12-03T14:00:00Z"


@pytest.mark.parametrize(
    ("obj", "change", "expected"),
    [
        # Written next to the controllers' conditions, which are carried as read.
        (resource(), WAITING, patch_of(ours(since=NOW_TEXT))),
        (resource(HEALTH), WAITING, patch_of(HEALTH, ours(since=NOW_TEXT))),
        # Already there as wanted: no write.
        (resource(HEALTH, ours()), WAITING, None),
        # A new reason keeps the transition time of a condition that stays False.
        (
            resource(ours(reason="no operator license Secret found"), HEALTH),
            WAITING,
            patch_of(HEALTH, ours()),
        ),
        # A stale True condition (someone else's edit) transitions now.
        (resource(ours(status="True")), WAITING, patch_of(ours(since=NOW_TEXT))),
        # Removal keeps every other condition; nothing to remove, no write.
        (resource(HEALTH, ours()), CLEARED, patch_of(HEALTH)),
        (resource(ours()), CLEARED, patch_of()),
        (resource(HEALTH), CLEARED, None),
        (resource(), CLEARED, None),
    ],
)
def test_status_patch(
    obj: dict[str, Any], change: LicenseConditionChange, expected: dict[str, Any] | None
) -> None:
    assert status_patch(obj, change=change, reason="no license", now=NOW) == expected


def test_the_message_names_the_missing_license_and_the_selector() -> None:
    message = waiting_message("no operator license Secret found")
    assert "no operator license Secret found" in message
    assert "namespace selector" in message
    assert "enterprise license" in message


def test_the_elasticsearch_reconcile_status_replaces_the_conditions_without_ours() -> None:
    # The Elasticsearch reconcile runs only once licensed; its merge patch replaces the list, so
    # its status write removes the condition, and never writes it back.
    es = {
        "metadata": {"name": "es", "namespace": "a", "generation": 1},
        "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]},
        "status": {"conditions": [ours()]},
    }
    decision = compute_status(es, statefulsets=[], pods=[], health=None, now=NOW)
    types = [condition["type"] for condition in decision.status["conditions"]]
    assert CONDITION_TYPE not in types
    assert types


class RacingStatus:
    """A scoped client whose status patches meet ``conflicts`` concurrent writers first: each
    conflict bumps the resourceVersion, as the other writer's update did."""

    def __init__(self, conflicts: int) -> None:
        self.conflicts = conflicts
        self.version = 1
        self.patches: list[dict[str, Any]] = []

    async def get(self, resource: Kind, *, namespace: str, name: str) -> dict[str, Any]:
        return resource_of(str(self.version))

    async def patch_status(
        self, resource: Kind, patch: dict[str, Any], *, namespace: str, name: str
    ) -> dict[str, Any]:
        if self.conflicts:
            self.conflicts -= 1
            self.version += 1
            raise errors.Conflict("the object has been modified")
        self.patches.append(patch)
        return resource_of(str(self.version))


def resource_of(rv: str) -> dict[str, Any]:
    return resource(HEALTH, rv=rv)


class Context:
    """What the activity uses of a ControllerContext: the scoped client, the clock, the table."""

    def __init__(self, scoped: RacingStatus) -> None:
        self.scoped = scoped
        self.controllers = CONTROLLERS

    def clock(self) -> datetime:
        return NOW


REF = ResourceRef(
    controller="agent-fleetserver",
    group="agent.k8s.elastic.co",
    version="v1alpha1",
    kind="Agent",
    plural="agents",
    namespace="a",
    name="es",
)


@pytest.mark.parametrize(
    ("conflicts", "patched_at"),
    [(0, "1"), (1, "2"), (CONFLICT_ATTEMPTS - 1, str(CONFLICT_ATTEMPTS))],
)
async def test_a_conflicting_status_write_is_read_again_and_patched(
    conflicts: int, patched_at: str
) -> None:
    scoped = RacingStatus(conflicts)
    request = LicenseConditionInput(ref=REF, change=WAITING, reason="no license")

    result = await license_condition(Context(scoped), request)  # type: ignore[arg-type]

    assert result.written
    assert scoped.patches == [patch_of(HEALTH, ours(since=NOW_TEXT), rv=patched_at)]


async def test_conflicts_that_do_not_stop_fail_the_activity() -> None:
    scoped = RacingStatus(CONFLICT_ATTEMPTS)
    request = LicenseConditionInput(ref=REF, change=WAITING, reason="no license")

    with pytest.raises(errors.Conflict):
        await license_condition(Context(scoped), request)  # type: ignore[arg-type]
    assert scoped.patches == []
