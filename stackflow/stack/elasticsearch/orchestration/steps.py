"""What the orchestration decisions ask for: Elasticsearch calls and Kubernetes writes, as data.

A decision returns an ordered tuple of these steps; whoever runs them (an activity per step, in the
resource workflow) performs them in that order and stops at the first failure, as ECK does. The
step types live with the engine's models (``stackflow.models.cluster_steps``) because a workflow
carries them; each names the request it stands for, so a log line or a condition can say what is
being done.
"""

from __future__ import annotations

from stackflow.models.cluster_steps import (
    NONE_EXCLUDED,
    AddVotingExclusions,
    AnyStep,
    ClearVotingExclusions,
    DeleteNodeShutdown,
    DeletePod,
    DeleteStatefulSet,
    DisableReplicaAllocation,
    EnableAllocation,
    ExcludeFromAllocation,
    Flush,
    PutNodeShutdown,
    RemoveTransientAllocationSettings,
    ScaleStatefulSet,
    describe_step,
)

__all__ = [
    "NONE_EXCLUDED",
    "AddVotingExclusions",
    "ClearVotingExclusions",
    "DeleteNodeShutdown",
    "DeletePod",
    "DeleteStatefulSet",
    "DisableReplicaAllocation",
    "EnableAllocation",
    "ExcludeFromAllocation",
    "Flush",
    "PutNodeShutdown",
    "RemoveTransientAllocationSettings",
    "ScaleStatefulSet",
    "Step",
    "describe_step",
]

Step = AnyStep
"""Any one step a decision returns."""
