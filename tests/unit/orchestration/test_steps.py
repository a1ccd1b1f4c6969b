"""Every step describes itself in one line, naming what it acts on."""

from __future__ import annotations

import pytest

from stackflow.stack.elasticsearch.orchestration.steps import (
    NONE_EXCLUDED,
    AddVotingExclusions,
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
    Step,
    describe_step,
)


@pytest.mark.parametrize(
    ("step", "description"),
    [
        (DisableReplicaAllocation(), "disable replica shard allocation (enable=primaries)"),
        (EnableAllocation(), "enable shard allocation (enable=all)"),
        (Flush(synced=True), "synced flush"),
        (Flush(synced=False), "flush"),
        (
            PutNodeShutdown("es-default-0", "id0", "restart", "42"),
            "request a restart shutdown of node es-default-0",
        ),
        (DeleteNodeShutdown("id0"), "delete the shutdown record of node id id0"),
        (ExcludeFromAllocation(NONE_EXCLUDED), "exclude from shard allocation: none_excluded"),
        (
            RemoveTransientAllocationSettings(),
            "remove the transient allocation settings (exclude._name, enable)",
        ),
        (AddVotingExclusions(("m-1", "m-2")), "exclude from voting: m-1, m-2"),
        (ClearVotingExclusions(), "clear the voting exclusions"),
        (
            DeletePod("d-1", "Deleting pod for rolling upgrade"),
            "delete Pod d-1 (Deleting pod for rolling upgrade)",
        ),
        (ScaleStatefulSet("data", 2), "scale StatefulSet data to 2"),
        (DeleteStatefulSet("old"), "delete StatefulSet old"),
    ],
)
def test_describe_step(step: Step, description: str) -> None:
    assert describe_step(step) == description
