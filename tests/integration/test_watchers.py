"""Watchers against kubesim and a real Temporal dev server, with stand-in workflows.

The stand-in ``ResourceWorkflow`` only records the triggers it receives, so these tests assert
exactly which workflow ids the watchers signal, and why, for every kind of event.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from stackflow.kube.writes import writing_as
from stackflow.models.engine import NamespaceFlipResult, TriggerReason
from stackflow.models.kinds import CONFIGMAPS, EVENTS, NAMESPACES, SECRETS
from stackflow.models.objects import view
from tests.integration.watchers_harness import (
    LINK_NAME_LABEL,
    LINK_NAMESPACE_LABEL,
    OWNER_LABEL,
    WIDGETS,
    Harness,
    RecordingResourceWorkflow,
    harness,
    namespace,
    temporal_env,
    widget,
)
from tests.polling import eventually
from watchers.flips import BACKSTOP_DELAY, flip_workflow_id

__all__ = ["harness", "temporal_env"]


async def test_each_event_reaches_the_right_workflow(harness: Harness) -> None:
    h = harness
    await h.create(WIDGETS, widget("w1", "team-a"))
    await h.wait_for("widget/team-a/w1", TriggerReason.CREATED)
    await h.wait_for("license/team-a/w1", TriggerReason.CREATED)

    # Spec change → SpecChanged; it also makes w1 reference Secret "creds".
    await h.resources.merge_patch(
        WIDGETS, {"spec": {"size": 3, "color": "creds"}}, namespace="team-a", name="w1"
    )
    await h.wait_for("widget/team-a/w1", TriggerReason.SPEC_CHANGED)

    # A child (ConfigMap labelled with its owner) → the owner's workflow.
    await h.create(
        CONFIGMAPS,
        {"metadata": {"name": "w1-config", "namespace": "team-a", "labels": {OWNER_LABEL: "w1"}}},
    )
    await h.wait_for("widget/team-a/w1", TriggerReason.CHILD_CHANGED)

    # The referenced Secret → the referencing workflow.
    await h.create(SECRETS, {"metadata": {"name": "creds", "namespace": "team-a"}})
    await h.wait_for("widget/team-a/w1", TriggerReason.REFERENCE_CHANGED)

    # The operator's own status write wakes nothing; the next label change does.
    await h.resources.patch_status(
        WIDGETS, {"status": {"ready": True}}, namespace="team-a", name="w1"
    )
    await h.resources.merge_patch(
        WIDGETS, {"metadata": {"labels": {"tier": "gold"}}}, namespace="team-a", name="w1"
    )
    await h.wait_for("widget/team-a/w1", TriggerReason.METADATA_CHANGED)
    assert await h.reasons("widget/team-a/w1") == [
        "Created",
        "SpecChanged",
        "ChildChanged",
        "ReferenceChanged",
        "MetadataChanged",
    ]

    # Out of scope: nothing is signalled for team-b (seen by the informer before the flip).
    await h.create(WIDGETS, widget("w2", "team-b"))
    raw_widgets = h.watchers.informers.informer(WIDGETS)

    async def w2_cached() -> bool:
        return raw_widgets.cache.get(namespace="team-b", name="w2") is not None

    await eventually(w2_cached, what="the informer saw w2")
    # Labelling team-b flips it into scope: one flip workflow for that resourceVersion, and at
    # once (the fast path, from the caches) the flip's trigger to w2's workflows.
    labelled = await h.resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck-visible": "true"}}}, namespace=None, name="team-b"
    )
    flip_id = flip_workflow_id("team-b", labelled["metadata"]["resourceVersion"])

    async def flip_ran() -> bool:
        return await h.exists(flip_id)

    await eventually(flip_ran, what="flip workflow started")
    flip: NamespaceFlipResult = await h.temporal.get_workflow_handle(
        flip_id, result_type=NamespaceFlipResult
    ).result()
    assert flip.triggered == {"IntoScope:widget": 0, "IntoScope:license": 0, "IntoScope:link": 0}
    # The stand-in flip workflow signalled nobody: the trigger came from the fast path.
    for controller in ("widget", "license", "link"):
        await h.wait_for(f"{controller}/team-b/w2", TriggerReason.NAMESPACE_FLIP)
    # The fast path signalled: the flip workflow was recorded at once and ran a moment later.
    assert await first_task_backoff(h, flip_id) == BACKSTOP_DELAY


async def first_task_backoff(h: Harness, workflow_id: str) -> timedelta:
    """How long the workflow's first task was held back after its start (its start delay)."""
    history = await h.temporal.get_workflow_handle(workflow_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    return started.first_workflow_task_backoff.ToTimedelta()


async def test_a_flip_the_caches_know_nothing_of_runs_its_workflow_at_once(
    harness: Harness,
) -> None:
    h = harness
    await h.resources.create(NAMESPACES, namespace("team-empty", {}))
    labelled = await h.resources.merge_patch(
        NAMESPACES,
        {"metadata": {"labels": {"eck-visible": "true"}}},
        namespace=None,
        name="team-empty",
    )
    flip_id = flip_workflow_id("team-empty", labelled["metadata"]["resourceVersion"])

    async def flip_ran() -> bool:
        return await h.exists(flip_id)

    await eventually(flip_ran, what="flip workflow started")
    assert await first_task_backoff(h, flip_id) == timedelta(0)


async def test_a_flip_reaches_referrers_elsewhere_without_the_flip_workflow(
    harness: Harness,
) -> None:
    """The fast path: the target's namespace leaves scope and the referrer in another namespace
    is told at once, from the reference index, though the (stand-in) flip workflow tells nobody;
    a controller without its own flip mapper is not told about another namespace's flip."""
    h = harness
    await h.resources.create(NAMESPACES, namespace("team-c", {"eck-visible": "true"}))
    await h.create(WIDGETS, widget("db", "team-c"))
    await h.create(WIDGETS, widget("app", "team-a", target="team-c/db"))
    await h.wait_for("link/team-a/app", TriggerReason.CREATED)
    await h.wait_for("widget/team-c/db", TriggerReason.CREATED)

    unlabelled = await h.resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck-visible": None}}}, namespace=None, name="team-c"
    )
    await h.wait_for("link/team-a/app", TriggerReason.NAMESPACE_FLIP)
    # The target itself is told too (it is in the namespace), by every controller of its kind.
    for controller in ("widget", "license", "link"):
        await h.wait_for(f"{controller}/team-c/db", TriggerReason.NAMESPACE_FLIP)
    flip_id = flip_workflow_id("team-c", unlabelled["metadata"]["resourceVersion"])
    flip: NamespaceFlipResult = await h.temporal.get_workflow_handle(
        flip_id, result_type=NamespaceFlipResult
    ).result()
    assert flip.triggered == {"OutOfScope:widget": 0, "OutOfScope:license": 0, "OutOfScope:link": 0}
    async with asyncio.timeout(10):
        await h.signaller.wait_idle()
    assert "NamespaceFlip" not in await h.reasons("widget/team-a/app")


async def test_the_operators_own_child_writes_wake_nobody(harness: Harness) -> None:
    h = harness
    workflow_id = "widget/team-a/w-echo"
    await h.create(WIDGETS, widget("w-echo", "team-a"))
    await h.wait_for(workflow_id, TriggerReason.CREATED)
    child = {
        "metadata": {
            "name": "w-echo-config",
            "namespace": "team-a",
            "labels": {OWNER_LABEL: "w-echo"},
        },
        "data": {"size": "1"},
    }
    with writing_as("widget"):
        await h.operator.create(CONFIGMAPS, child, namespace="team-a")
        await h.operator.merge_patch(
            CONFIGMAPS, {"data": {"size": "2"}}, namespace="team-a", name="w-echo-config"
        )

    async def both_echoes_seen() -> bool:
        return h.echoes("ConfigMap") >= 2

    await eventually(both_echoes_seen, what="the two writes recognised as the operator's own")
    # Someone else changes the child: that wakes the owner.
    await h.resources.merge_patch(
        CONFIGMAPS, {"data": {"size": "3"}}, namespace="team-a", name="w-echo-config"
    )
    await h.wait_for(workflow_id, TriggerReason.CHILD_CHANGED)
    assert await h.reasons(workflow_id) == ["Created", "ChildChanged"]
    assert h.echoes("ConfigMap") == 2


def operator_license() -> dict[str, Any]:
    """An operator license Secret (its content is not judged here, only that it changed)."""
    return {
        "metadata": {
            "name": "eck-license",
            "namespace": "elastic-system",
            "labels": {"license.k8s.elastic.co/scope": "operator"},
        },
        "data": {"license": "e30="},
    }


WAITING_QUERY = "ExecutionStatus='Running' AND StackflowPhase='WaitingForLicense'"


async def test_license_secret_reaches_waiting_workflows_and_license_controller(
    harness: Harness,
) -> None:
    h = harness
    await h.create(WIDGETS, widget("w1", "team-a"))
    await h.wait_for("widget/team-a/w1", TriggerReason.CREATED)
    await h.wait_for("license/team-a/w1", TriggerReason.CREATED)
    await h.temporal.get_workflow_handle("widget/team-a/w1").signal(
        RecordingResourceWorkflow.set_phase, "WaitingForLicense"
    )

    async def visible() -> bool:
        count = await h.temporal.count_workflows(WAITING_QUERY)
        return count.count == 1

    await eventually(visible, what="the waiting workflow is visible")
    await h.create(SECRETS, operator_license())
    await h.wait_for("widget/team-a/w1", TriggerReason.LICENSE_CHANGED)
    await h.wait_for("license/team-a/w1", TriggerReason.LICENSE_CHANGED)


async def test_a_license_wakes_at_once_what_the_steps_here_saw_waiting(
    harness: Harness,
) -> None:
    """A workflow whose step in this process found no license is woken by a license even while
    the visibility query does not list it (its phase is not indexed yet); one the steps recorded
    that is not running is not started."""
    h = harness
    await h.create(WIDGETS, widget("w3", "team-a"))
    await h.wait_for("widget/team-a/w3", TriggerReason.CREATED)
    h.watchers.license_waiters.record("widget/team-a/w3", waiting=True)
    h.watchers.license_waiters.record("widget/team-a/gone", waiting=True)
    listed = await h.temporal.count_workflows(WAITING_QUERY)
    assert listed.count == 0
    await h.create(SECRETS, operator_license())
    await h.wait_for("widget/team-a/w3", TriggerReason.LICENSE_CHANGED)
    async with asyncio.timeout(10):
        await h.signaller.wait_idle()
    assert not await h.exists("widget/team-a/gone")


async def test_a_malformed_license_secret_gets_a_warning_event_on_itself(
    harness: Harness,
) -> None:
    h = harness
    await h.create(
        SECRETS,
        {
            "metadata": {
                "name": "garbled-license",
                "namespace": "elastic-system",
                "labels": {"license.k8s.elastic.co/scope": "operator"},
            },
            "data": {"license": "bm90IGpzb24="},  # "not json"
        },
    )

    async def warned() -> list[dict[str, Any]]:
        listed = await h.resources.list(
            EVENTS,
            namespace="elastic-system",
            field_selector="involvedObject.name=garbled-license,involvedObject.kind=Secret",
        )
        return list(listed["items"])

    async def warned_yet() -> bool:
        return bool(await warned())

    await eventually(warned_yet, what="an InvalidLicense event on the Secret")
    (event,) = await warned()
    assert (event["type"], event["reason"], event["action"]) == (
        "Warning",
        "InvalidLicense",
        "LicenseCheck",
    )
    assert event["message"].startswith("while parsing license in elastic-system/garbled-license: ")


async def test_a_non_leader_sends_nothing_until_it_leads(harness: Harness) -> None:
    h = harness
    h.leader[0] = False
    await h.create(WIDGETS, widget("quiet", "team-a"))
    primaries = h.watchers.primary("widget")

    async def cached() -> bool:
        return primaries.get(namespace="team-a", name="quiet") is not None

    await eventually(cached, what="the informer saw the widget")
    assert h.signaller.pending == 0
    assert not await h.exists("widget/team-a/quiet")

    h.leader[0] = True
    assert await h.watchers.resync() == 3
    await h.wait_for("widget/team-a/quiet", TriggerReason.STARTUP)
    await h.wait_for("license/team-a/quiet", TriggerReason.STARTUP)


async def test_a_target_in_another_namespace_and_its_secrets_wake_the_referrer(
    harness: Harness,
) -> None:
    h = harness
    await h.resources.create(NAMESPACES, namespace("team-c", {"eck-visible": "true"}))
    await h.create(WIDGETS, widget("app", "team-a", target="team-c/db"))
    # Every controller sharing the primary kind is told.
    for controller in ("widget", "license", "link"):
        await h.wait_for(f"{controller}/team-a/app", TriggerReason.CREATED)

    await h.create(WIDGETS, widget("db", "team-c"))
    await h.wait_for("link/team-a/app", TriggerReason.REFERENCE_CHANGED)
    assert "ReferenceChanged" not in await h.reasons("widget/team-a/app")

    # A Secret in the target's namespace, labelled with the referrer: the referrer's child.
    await h.create(
        SECRETS,
        {
            "metadata": {
                "name": "app-user",
                "namespace": "team-c",
                "labels": {LINK_NAME_LABEL: "app", LINK_NAMESPACE_LABEL: "team-a"},
            }
        },
    )
    await h.wait_for("link/team-a/app", TriggerReason.CHILD_CHANGED)

    # A status write on the target is a change the referrer depends on (readiness, version).
    await h.resources.patch_status(
        WIDGETS, {"status": {"ready": True}}, namespace="team-c", name="db"
    )

    async def told_twice() -> bool:
        reasons = await h.reasons("link/team-a/app")
        return reasons.count("ReferenceChanged") >= 2

    await eventually(told_twice, what="the target's status change reaches the referrer")


async def test_a_referrer_out_of_scope_is_not_woken_by_its_references_until_it_is_back(
    harness: Harness,
) -> None:
    """ECK drops an out-of-scope resource's dynamic watches; here its reference registrations
    stop signalling while its namespace is out of scope, and signal again once it is back."""
    h = harness
    await h.resources.create(NAMESPACES, namespace("team-c", {"eck-visible": "true"}))
    await h.create(WIDGETS, widget("db", "team-c"))
    await h.create(WIDGETS, widget("app", "team-a", target="team-c/db"))
    await h.wait_for("link/team-a/app", TriggerReason.CREATED)

    async def reference_changes() -> int:
        return (await h.reasons("link/team-a/app")).count("ReferenceChanged")

    async def target_changed_then_settled(marker: str, size: int) -> None:
        """Change the target, then wait until a later event was delivered and nothing is left."""
        await h.resources.merge_patch(
            WIDGETS, {"spec": {"size": size}}, namespace="team-c", name="db"
        )
        await h.create(WIDGETS, widget(marker, "team-c"))
        await h.wait_for(f"widget/team-c/{marker}", TriggerReason.CREATED)
        async with asyncio.timeout(10):
            await h.signaller.wait_idle()

    await target_changed_then_settled("marker-1", 2)
    in_scope_count = await reference_changes()
    assert in_scope_count >= 1

    # team-a leaves scope: the referrer's registration no longer signals.
    await h.resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck-visible": None}}}, namespace=None, name="team-a"
    )
    await eventually(
        lambda: not h.watchers.matcher.name_matches("team-a"), what="team-a out of scope"
    )
    await target_changed_then_settled("marker-2", 3)
    assert await reference_changes() == in_scope_count

    # Back in scope: the same reference signals again.
    await h.resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck-visible": "true"}}}, namespace=None, name="team-a"
    )
    await eventually(lambda: h.watchers.matcher.name_matches("team-a"), what="team-a in scope")
    await target_changed_then_settled("marker-3", 4)
    assert await reference_changes() > in_scope_count


async def test_the_secret_informer_holds_only_needed_secrets_and_referrers_still_wake(
    harness: Harness,
) -> None:
    h = harness
    secrets = h.watchers.informers.scoped(SECRETS)

    def held() -> set[str]:
        return {view(obj).name for obj in secrets.list(namespace="team-a")}

    async def link_child(name: str) -> None:
        """A link controller's child (labelled: held), once the informer holds it: every Secret
        event before it was handled then."""
        labels = {LINK_NAME_LABEL: "app", LINK_NAMESPACE_LABEL: "team-a"}
        await h.create(
            SECRETS, {"metadata": {"name": name, "namespace": "team-a", "labels": labels}}
        )
        await eventually(lambda: name in held(), what=f"{name} held")

    # Secrets that exist before any spec names them: an unrelated one, two a widget will name.
    for name in ("unrelated", "named-then-edited", "named-then-deleted"):
        await h.create(SECRETS, {"metadata": {"name": name, "namespace": "team-a"}})
    await link_child("link-child")
    assert held() == {"link-child"}
    await h.create(WIDGETS, widget("edited", "team-a", color="named-then-edited"))
    await h.create(WIDGETS, widget("deleted", "team-a", color="named-then-deleted"))
    await h.wait_for("widget/team-a/edited", TriggerReason.CREATED)
    await h.wait_for("widget/team-a/deleted", TriggerReason.CREATED)
    # Edited after a spec named it: the referrer wakes, and the Secret is held from then on.
    await h.resources.merge_patch(
        SECRETS, {"stringData": {"k": "v"}}, namespace="team-a", name="named-then-edited"
    )
    await h.wait_for("widget/team-a/edited", TriggerReason.REFERENCE_CHANGED)
    assert held() == {"link-child", "named-then-edited"}
    # Deleted without ever being held: the referrer still wakes.
    await h.resources.delete(SECRETS, namespace="team-a", name="named-then-deleted")
    await h.wait_for("widget/team-a/deleted", TriggerReason.REFERENCE_CHANGED)
    # The unrelated one, edited, is still not held and wakes nobody.
    await h.resources.merge_patch(
        SECRETS, {"stringData": {"k": "v"}}, namespace="team-a", name="unrelated"
    )
    await link_child("canary")
    assert held() == {"link-child", "named-then-edited", "canary"}
    assert await h.reasons("widget/team-a/edited") == ["Created", "ReferenceChanged"]
