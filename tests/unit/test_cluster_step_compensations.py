"""What each step that changes a cluster leaves in it (a compensation to hold) or undoes (the keys
of held ones), table-tested."""

from __future__ import annotations

import pytest

from activities.cluster_steps import (
    ALLOCATION_ENABLE,
    ALLOCATION_EXCLUDE,
    VOTING_EXCLUSIONS,
    left_in_cluster,
)
from stackflow.models.cluster_steps import (
    NONE_EXCLUDED,
    AddVotingExclusions,
    AnyStep,
    ClearVotingExclusions,
    DeleteNodeShutdown,
    DeletePod,
    DisableReplicaAllocation,
    EnableAllocation,
    ExcludeFromAllocation,
    Flush,
    PutNodeShutdown,
    RemoveTransientAllocationSettings,
)


@pytest.mark.parametrize(
    ("step", "held", "undone"),
    [
        (DisableReplicaAllocation(), {ALLOCATION_ENABLE: {}}, ()),
        (EnableAllocation(), {}, (ALLOCATION_ENABLE,)),
        (ExcludeFromAllocation("es-0,es-1"), {ALLOCATION_EXCLUDE: {"value": "es-0,es-1"}}, ()),
        (ExcludeFromAllocation(NONE_EXCLUDED), {}, (ALLOCATION_EXCLUDE,)),
        (RemoveTransientAllocationSettings(), {}, (ALLOCATION_EXCLUDE, ALLOCATION_ENABLE)),
        (AddVotingExclusions(("es-2",)), {VOTING_EXCLUSIONS: {"nodes": "es-2"}}, ()),
        (ClearVotingExclusions(), {}, (VOTING_EXCLUSIONS,)),
        (
            PutNodeShutdown("es-2", "id-2", "restart", "upgrade"),
            {"node-shutdown/id-2": {"node_id": "id-2"}},
            (),
        ),
        (DeleteNodeShutdown("id-2"), {}, ("node-shutdown/id-2",)),
        (Flush(synced=False), {}, ()),
        (DeletePod("es-2", "restart", uid="u"), {}, ()),
    ],
)
def test_what_a_step_leaves_in_the_cluster_and_what_it_undoes(
    step: AnyStep, held: dict[str, dict[str, str]], undone: tuple[str, ...]
) -> None:
    acquired, released = left_in_cluster(step)
    assert {
        compensation.key: {k: v for k, v in compensation.data.items() if k != "undo"}
        for compensation in acquired
    } == held
    assert released == undone


def test_a_step_set_then_undone_by_the_next_leaves_nothing_held() -> None:
    (exclusion,), _ = left_in_cluster(ExcludeFromAllocation("es-2"))
    _, cleared = left_in_cluster(RemoveTransientAllocationSettings())
    assert exclusion.key in cleared
