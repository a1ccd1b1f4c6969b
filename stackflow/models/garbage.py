"""The garbage sweep's data contract: its workflow, Schedule and activities (pure data).

The sweep finds what a missed watch event left behind — a resource workflow whose resource is
gone, a soft-owned Secret whose owner is gone — and collects it. The leader keeps the Schedule
``SWEEP_SCHEDULE_ID`` and triggers one run when it starts leading (ECK's start-up garbage
collection of soft-owned Secrets, plus the workflows).
"""

from __future__ import annotations

from stackflow.models.engine import Model

__all__ = [
    "ACT_SWEEP_SECRETS",
    "ACT_SWEEP_WORKFLOWS",
    "SWEEP_INTERVAL_SECONDS",
    "SWEEP_SCHEDULE_ID",
    "SWEEP_WORKFLOW",
    "SWEEP_WORKFLOW_ID",
    "GarbageSweepInput",
    "GarbageSweepResult",
    "SweepSecretsInput",
    "SweepSecretsResult",
    "SweepWorkflowsInput",
    "SweepWorkflowsResult",
]

#: Registered workflow type name of the sweep.
SWEEP_WORKFLOW = "GarbageSweepWorkflow"
#: The Schedule the leader creates or updates; the Temporal UI lists it under Schedules.
SWEEP_SCHEDULE_ID = "stackflow-garbage-sweep"
#: The id of the workflow each scheduled run starts (Temporal appends the run's time).
SWEEP_WORKFLOW_ID = "garbage-sweep"
#: How often the sweep runs; missed deletions are rare (a stopped operator, a dropped event).
SWEEP_INTERVAL_SECONDS = 600

ACT_SWEEP_WORKFLOWS = "stackflow.sweep_orphaned_workflows"
ACT_SWEEP_SECRETS = "stackflow.sweep_orphaned_secrets"


class GarbageSweepInput(Model):
    """Start argument of ``GarbageSweepWorkflow`` (nothing yet: the activities read the table)."""


class GarbageSweepResult(Model):
    """What one sweep collected."""

    workflows: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()


class SweepWorkflowsInput(Model):
    """Complete the running resource workflows whose resource is gone."""


class SweepWorkflowsResult(Model):
    """The ids of the workflows told ``Deleted`` (their finalizer runs, then they complete)."""

    signalled: tuple[str, ...] = ()


class SweepSecretsInput(Model):
    """Delete the soft-owned Secrets of the managed namespaces whose owner is gone."""


class SweepSecretsResult(Model):
    """The Secrets deleted, as ``Secret namespace/name``."""

    deleted: tuple[str, ...] = ()
