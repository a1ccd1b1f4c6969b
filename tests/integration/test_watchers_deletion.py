"""A primary's deletion reaches its running workflow whatever its namespace's scope.

The scoped informer drops the DELETED event of a namespace out of scope; the raw informer's
deletion handler delivers it, so the workflow finalizes instead of waiting ``OutOfScope`` forever.
Reuses the watchers harness (kubesim, a Temporal dev server, recording workflows).
"""

from __future__ import annotations

import pytest

from stackflow.models.engine import TriggerReason
from stackflow.models.kinds import NAMESPACES
from tests.integration.watchers_harness import WIDGETS, Harness, harness, temporal_env, widget
from tests.polling import eventually

__all__ = ["harness", "temporal_env"]


WORKFLOW_IDS = ("widget/team-a/w1", "license/team-a/w1", "link/team-a/w1")


@pytest.mark.parametrize("in_scope_when_deleted", [True, False], ids=["in-scope", "out-of-scope"])
async def test_a_deletion_reaches_the_running_workflow(
    harness: Harness, in_scope_when_deleted: bool
) -> None:
    h, workflow_ids = harness, WORKFLOW_IDS
    await h.create(WIDGETS, widget("w1", "team-a"))
    for workflow_id in workflow_ids:
        await h.wait_for(workflow_id, TriggerReason.CREATED)
    if not in_scope_when_deleted:
        await h.resources.merge_patch(
            NAMESPACES,
            {"metadata": {"labels": {"eck-visible": None}}},
            namespace=None,
            name="team-a",
        )

        def out_of_scope() -> bool:
            return not h.watchers.matcher.name_matches("team-a")

        await eventually(out_of_scope, what="team-a out of scope for the watchers")
        # The flip's own trigger, sent at once from the caches (the fast path).
        for workflow_id in workflow_ids:
            await h.wait_for(workflow_id, TriggerReason.NAMESPACE_FLIP)
    told_before = ["Created"] if in_scope_when_deleted else ["Created", "NamespaceFlip"]

    await h.resources.delete(WIDGETS, namespace="team-a", name="w1")

    for workflow_id in workflow_ids:
        await h.wait_for(workflow_id, TriggerReason.DELETED)
        assert await h.reasons(workflow_id) == [*told_before, "Deleted"]


async def test_a_deletion_starts_no_workflow(harness: Harness) -> None:
    h = harness
    # Out of scope from the start: no workflow runs, and the deletion starts none.
    await h.create(WIDGETS, widget("w2", "team-b"))
    raw = h.watchers.informers.informer(WIDGETS)

    def cached() -> bool:
        return raw.cache.get(namespace="team-b", name="w2") is not None

    await eventually(cached, what="the informer saw w2")
    await h.resources.delete(WIDGETS, namespace="team-b", name="w2")

    def forgotten() -> bool:
        return raw.cache.get(namespace="team-b", name="w2") is None

    await eventually(forgotten, what="the informer saw w2 deleted")
    await h.signaller.wait_idle()
    assert not await h.exists("widget/team-b/w2")
