"""``NamespaceFlipWorkflow``: a namespace entered or left the managed set; trigger its resources.

Id ``flip/{namespace}/{resourceVersion}``. For each controller: its flip mapper lists the concerned
resources (through the unscoped client, so de-scoped objects are reached), then every one of them is
signalled-with-start with a ``NamespaceFlip`` trigger.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from stackflow.models.engine import (
        ACT_FLIP_TARGETS,
        ACT_SIGNAL_RESOURCES,
        FlipTargetsInput,
        FlipTargetsResult,
        NamespaceFlipInput,
        NamespaceFlipResult,
        SignalResourcesInput,
        SignalResourcesResult,
        Trigger,
        namespace_flip_trigger,
    )
    from workflows.activity_options import ACTIVITY_RETRY, ACTIVITY_TIMEOUT

#: Histories recorded before this patch fanned out to one controller after another.
PARALLEL_CONTROLLERS_PATCH = "flip-controllers-in-parallel"


def flip_trigger(flip: NamespaceFlipInput) -> Trigger:
    """The trigger every target of `flip` receives."""
    return namespace_flip_trigger(workflow.info().workflow_id, flip.namespace, flip.direction)


@workflow.defn
class NamespaceFlipWorkflow:
    """Fans one namespace flip out to the resource workflows of every controller."""

    @workflow.run
    async def run(self, flip: NamespaceFlipInput) -> NamespaceFlipResult:
        """Per controller: list the targets, signal them; answer the count per controller."""
        trigger = flip_trigger(flip)
        if workflow.patched(PARALLEL_CONTROLLERS_PATCH):
            # Controllers are independent: fanning out to all of them at once takes one
            # activity round trip instead of one per controller.
            counts = await asyncio.gather(
                *(
                    self._flip_controller(flip, controller, trigger)
                    for controller in flip.controllers
                )
            )
        else:
            counts = [
                await self._flip_controller(flip, controller, trigger)
                for controller in flip.controllers
            ]
        triggered = dict(zip(flip.controllers, counts, strict=True))
        workflow.set_current_details(
            "\n".join(f"* {name}: {count}" for name, count in triggered.items()) or "no controllers"
        )
        return NamespaceFlipResult(triggered=triggered)

    async def _flip_controller(
        self, flip: NamespaceFlipInput, controller: str, trigger: Trigger
    ) -> int:
        """List one controller's targets and signal them; answer how many were signalled."""
        targets: FlipTargetsResult = await workflow.execute_activity(
            ACT_FLIP_TARGETS,
            FlipTargetsInput(
                controller=controller, namespace=flip.namespace, direction=flip.direction
            ),
            result_type=FlipTargetsResult,
            start_to_close_timeout=ACTIVITY_TIMEOUT,
            retry_policy=ACTIVITY_RETRY,
            summary=f"{controller} targets in {flip.namespace}",
        )
        if not targets.refs:
            return 0
        signalled: SignalResourcesResult = await workflow.execute_activity(
            ACT_SIGNAL_RESOURCES,
            SignalResourcesInput(refs=targets.refs, trigger=trigger),
            result_type=SignalResourcesResult,
            start_to_close_timeout=ACTIVITY_TIMEOUT,
            retry_policy=ACTIVITY_RETRY,
            summary=f"signal {len(targets.refs)} {controller} workflows",
        )
        return signalled.signalled
