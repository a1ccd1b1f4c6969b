"""``ResourceWorkflow``: one durable entity per (controller, resource), fed by ``trigger`` signals.

The loop (docs/engine.md): wait for triggers → one reconcile step (scope check → license gate →
reconcile, in one local activity that answers a verdict) → fold the verdict in, with the decisions
in `workflows.decisions`. Activities are called by their registered names, so this module imports
nothing that does I/O. A local activity costs the server one marker event instead of an activity
task round trip, so a reconcile costs the history five events (signal, workflow task, marker).

Runs recorded before patch ``reconcile-step`` keep the older loop: scope check and license check as
local activities (patch ``local-gate-checks``) or, before that, as activities, then the reconcile
as an activity.

The saga (docs/engine.md): a reconcile's ``acquired`` compensations, and those a cluster step
reports, are carried in the state; they run last-acquired first, one activity each, when the
resource leaves scope (once per episode) or before its finalizer, and those a reconcile reports as
``release_now`` (a target left scope or is no longer selected) at once (patch
``release-now-compensations``).

A namespace flip reaches a resource twice with one trigger (the watcher's fast path, then the flip
workflow): since patch ``flip-trigger-once`` the second costs no reconcile when the first's step
was seen to act on it (``decisions.flips_seen``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from stackflow.models.cluster_steps import ClusterStep, describe_step
    from stackflow.models.engine import (
        ACT_CLUSTER_STEP,
        ACT_INVALID_SPEC_NOTICE,
        ACT_LICENSE_CHECK,
        ACT_LICENSE_WAIT_NOTICE,
        ACT_SCOPE_CHECK,
        INVALID_SPEC_ERROR,
        SA_PHASE,
        TRIGGERS_SIGNAL,
        CarriedState,
        ClusterStepInput,
        ClusterStepResult,
        CompensateInput,
        CompensateResult,
        CompensationStep,
        FinalizeInput,
        FinalizeResult,
        InvalidSpecNoticeInput,
        InvalidSpecNoticeResult,
        LicenseCheckInput,
        LicenseCheckResult,
        LicenseWaitNoticeInput,
        LicenseWaitNoticeResult,
        Phase,
        ReconcileInput,
        ReconcileNowInput,
        ReconcileNowResult,
        ReconcileResult,
        ReconcileStepInput,
        ReconcileStepResult,
        ResourceRef,
        ResourceWorkflowInput,
        ResourceWorkflowResult,
        ScopeCheckInput,
        ScopeCheckResult,
        StepVerdict,
        Trigger,
        TriggerBatch,
        WorkflowStateView,
        finalize_activity,
        reconcile_activity,
        reconcile_step_activity,
    )
    from stackflow.models.license_condition import (
        ACT_LICENSE_CONDITION,
        LicenseConditionChange,
        LicenseConditionInput,
        LicenseConditionResult,
    )
    from workflows import decisions
    from workflows.activity_options import (
        ACTIVITY_RETRY,
        ACTIVITY_TIMEOUT,
        CLUSTER_STEP_RETRY,
        LOCAL_CHECK_TIMEOUT,
        STEP_TIMEOUT,
    )

#: Runs started before this patch keep running the gate checks as normal activities.
LOCAL_GATE_CHECKS_PATCH = "local-gate-checks"
#: Runs started before this patch keep the gate checks and the reconcile apart (three activities).
RECONCILE_STEP_PATCH = "reconcile-step"
#: Runs started before this patch never write the license-wait condition on their resource.
LICENSE_CONDITION_PATCH = "license-wait-condition"
#: Runs started before this patch never ran the steps that change a running cluster.
CLUSTER_STEPS_PATCH = "cluster-steps"
#: Runs started before this patch never ran a compensation while the resource stayed in scope
#: (a reconcile's ``release_now``: a target left scope or is no longer selected).
RELEASE_NOW_PATCH = "release-now-compensations"
#: Runs started before this patch reconcile again when a namespace flip they handled arrives a
#: second time (the watcher's fast path and the flip workflow send the same trigger).
FLIP_ONCE_PATCH = "flip-trigger-once"
#: Runs started before this patch enter a license wait with the Warning events first and the
#: condition after them; since, both activities run at once (a license that appears meanwhile
#: is reconciled about one activity sooner).
LICENSE_WAIT_AT_ONCE_PATCH = "license-wait-at-once"


def _invalid_spec_message(error: ActivityError) -> str | None:
    """The message of an InvalidSpec failure, or None when `error` is something else."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.type == INVALID_SPEC_ERROR:
        return cause.message
    return None


@workflow.defn
class ResourceWorkflow:
    """Reconciles one resource for its whole life; returns when the resource is deleted."""

    @workflow.init
    def __init__(self, input: ResourceWorkflowInput) -> None:
        """Restore the carried state before the first signal lands."""
        self._ref: ResourceRef = input.ref
        self._local_step = input.local_step
        self._state: CarriedState = input.carried.model_copy(update={"pending": ()})
        self._pending: list[Trigger] = list(input.carried.pending)
        # Batches taken / finished: an update waits until the batch holding its trigger is done.
        self._batches_taken = 0
        self._batches_done = 0
        # The flips handled in this run, by the flip's id (the trigger's source).
        self._flips_handled: tuple[str, ...] = ()
        # The verdict of the batch's reconcile step (None: no step ran).
        self._verdict: StepVerdict | None = None
        # This run was recorded before the license-wait condition: it never writes one (so it
        # never leaves one behind that it would not remove).
        self._writes_no_license_condition = False

    @workflow.signal
    def trigger(self, trigger: Trigger) -> None:
        """Queue a trigger; the loop takes every pending trigger in one batch."""
        self._pending.append(trigger)

    @workflow.signal(name=TRIGGERS_SIGNAL)
    def triggers(self, batch: TriggerBatch) -> None:
        """Queue the triggers that waited together (one signal, one history event)."""
        self._pending.extend(batch.triggers)

    @workflow.update
    async def reconcile_now(self, request: ReconcileNowInput) -> ReconcileNowResult:
        """Queue a trigger and answer with the outcome of the iteration that handles it."""
        self._pending.append(
            Trigger(reason=request.reason, source=request.source, detail=request.detail)
        )
        handled_by = self._batches_taken + 1
        await workflow.wait_condition(lambda: self._batches_done >= handled_by)
        return ReconcileNowResult(
            phase=self._state.phase, message=self._state.message, reconciles=self._state.reconciles
        )

    @workflow.query
    def state(self) -> WorkflowStateView:
        """The workflow's current state."""
        return WorkflowStateView(
            ref=self._ref,
            phase=self._state.phase,
            message=self._state.message,
            reconciles=self._state.reconciles,
            pending=tuple(self._pending),
            compensations=self._state.compensations,
            out_of_scope=self._state.out_of_scope,
            license_warned=self._state.license_warned,
            referenced=self._state.referenced,
            handling=self._batches_done != self._batches_taken,
        )

    @workflow.run
    async def run(self, input: ResourceWorkflowInput) -> ResourceWorkflowResult:
        """Wait for triggers and handle them until the resource is gone."""
        while True:
            await self._wait_for_work()
            if await self._iterate():
                return await self._finish()
            if workflow.info().is_continue_as_new_suggested():
                if await self._drain():
                    return await self._finish()
                workflow.continue_as_new(
                    ResourceWorkflowInput(
                        ref=self._ref,
                        carried=self._state.model_copy(update={"pending": tuple(self._pending)}),
                        local_step=self._local_step,
                    )
                )

    async def _wait_for_work(self) -> None:
        plan = decisions.next_wait(self._state)
        if plan.timeout_seconds is None:
            await workflow.wait_condition(lambda: bool(self._pending))
            return
        try:
            await workflow.wait_condition(
                lambda: bool(self._pending),
                timeout=timedelta(seconds=plan.timeout_seconds),
                timeout_summary=plan.summary,
            )
        except TimeoutError:
            workflow.logger.debug("%s: %s elapsed", self._ref.workflow_id, plan.summary)

    async def _drain(self) -> bool:
        """Let running update handlers finish before continue-as-new; True if the resource went."""
        while not workflow.all_handlers_finished():
            # An update waits for a reconcile, so keep handling triggers or the drain deadlocks.
            await workflow.wait_condition(
                lambda: workflow.all_handlers_finished() or bool(self._pending)
            )
            if self._pending and await self._iterate():
                return True
        return False

    async def _finish(self) -> ResourceWorkflowResult:
        # Updates waiting on the final batch answer before the run completes.
        await workflow.wait_condition(workflow.all_handlers_finished)
        return ResourceWorkflowResult(phase=Phase.DELETED, reconciles=self._state.reconciles)

    async def _iterate(self) -> bool:
        """One pass of the loop over all pending triggers; True when the resource is deleted."""
        triggers = decisions.coalesce(self._pending)
        self._pending.clear()
        fresh = decisions.unhandled(triggers, self._flips_handled)
        handled_already = False
        # Asked only when a flip arrives again, so older histories replay unchanged.
        if fresh != triggers and workflow.patched(FLIP_ONCE_PATCH):
            # A batch of flips already handled needs no reconcile: nothing is new since. (An
            # empty batch otherwise is a timer's: the retry or recheck reconciles.)
            handled_already, triggers = not fresh, fresh
        self._batches_taken += 1
        self._verdict = None
        gone = False if handled_already else await self._handle(triggers)
        # A flip counts as handled only where the step's verdict shows it was seen: the flip
        # workflow's delivery still reconciles after a step that decided on the old scope.
        seen = decisions.flips_seen(triggers, self._ref.namespace, self._verdict)
        self._flips_handled = decisions.remember_flips(self._flips_handled, seen)
        self._batches_done += 1
        self._publish()
        return gone

    async def _handle(self, triggers: tuple[Trigger, ...]) -> bool:
        # `patched` is memoized per run, so a run decides once (at its first iteration) which
        # loop it runs; runs recorded before the step keep their separate gate checks.
        if workflow.patched(RECONCILE_STEP_PATCH):
            return await self._handle_step(triggers)
        return await self._handle_gates_apart(triggers)

    async def _handle_step(self, triggers: tuple[Trigger, ...]) -> bool:
        """The gates and the reconcile in one step: a local activity (one history event per
        reconcile) or, for a controller whose reconcile may be slow, an activity."""
        step = await self._run_step(ReconcileStepInput(ref=self._ref, triggers=triggers))
        self._verdict = step.verdict
        before = self._state.phase
        change = decisions.license_condition_change(before, step.verdict)
        # Asked only where a wait begins with its condition due, so older histories (the notice,
        # then the condition) replay unchanged; a run that writes no condition (recorded before
        # its patch) keeps writing none.
        if (
            step.verdict is StepVerdict.UNLICENSED
            and change is not None
            and not self._writes_no_license_condition
            and workflow.patched(LICENSE_WAIT_AT_ONCE_PATCH)
        ):
            self._state = decisions.in_scope(self._state)
            await self._unlicensed(step.reason, condition=change)
            return False
        gone = await self._fold_step(step)
        reconciled = step.reconciled
        # Asked only where a reconcile releases something, so older histories replay unchanged.
        if (
            reconciled is not None
            and reconciled.release_now
            and workflow.patched(RELEASE_NOW_PATCH)
        ):
            await self._release_now(reconciled.release_now)
        # Asked only where there are steps, so a history recorded before them replays unchanged.
        if (
            reconciled is not None
            and reconciled.cluster_steps
            and workflow.patched(CLUSTER_STEPS_PATCH)
        ):
            await self._run_cluster_steps(reconciled.cluster_steps)
        # `patched` is asked only where a change is due, so a history recorded before the patch
        # (no marker at that point) replays without the activity, and keeps doing so for the run.
        if change is not None:
            if workflow.patched(LICENSE_CONDITION_PATCH):
                await self._license_condition(change, step.reason)
            else:
                self._writes_no_license_condition = True
        return gone

    async def _license_condition(self, change: LicenseConditionChange, reason: str) -> None:
        await self._activity(
            ACT_LICENSE_CONDITION,
            LicenseConditionInput(ref=self._ref, change=change, reason=reason),
            result_type=LicenseConditionResult,
            summary=f"license-wait condition: {change.value.lower()}",
        )

    async def _release_now(self, release: tuple[CompensationStep, ...]) -> None:
        """Run the compensations a reconcile asked for, one activity each, last-acquired first;
        a step that fails stays held (the reconcile asks again, or an out-of-scope episode or
        the finalize runs it)."""
        released: list[str] = []
        for step in decisions.release_now_order(self._state.compensations, release):
            try:
                await workflow.execute_activity(
                    step.activity,
                    CompensateInput(ref=self._ref, step=step),
                    result_type=CompensateResult,
                    start_to_close_timeout=ACTIVITY_TIMEOUT,
                    retry_policy=CLUSTER_STEP_RETRY,
                    summary=f"compensate {step.key}",
                )
            except ActivityError as error:
                workflow.logger.info(
                    "%s: compensation %s failed, still held: %s",
                    self._ref.workflow_id,
                    step.key,
                    error.cause or error,
                )
                continue
            released.append(step.key)
        self._state = decisions.after_release(self._state, released)

    async def _run_cluster_steps(self, steps: tuple[ClusterStep, ...]) -> None:
        """Run the steps that change the running cluster, in order, one activity each; stop at
        the first that fails (the next reconcile decides again from what is there then)."""
        for index, step in enumerate(steps):
            self._state = decisions.running_cluster_step(self._state, step, index, len(steps))
            self._publish()
            try:
                done: ClusterStepResult = await workflow.execute_activity(
                    ACT_CLUSTER_STEP,
                    ClusterStepInput(ref=self._ref, step=step),
                    result_type=ClusterStepResult,
                    start_to_close_timeout=ACTIVITY_TIMEOUT,
                    retry_policy=CLUSTER_STEP_RETRY,
                    summary=describe_step(step),
                )
            except ActivityError as error:
                workflow.logger.info(
                    "%s: %s failed, the next reconcile decides again: %s",
                    self._ref.workflow_id,
                    describe_step(step),
                    error.cause or error,
                )
                break
            # What the step left in the cluster is held until a later step undoes it, or the
            # namespace leaves scope (or the resource goes) and its compensation undoes it.
            self._state = decisions.after_cluster_step(self._state, done.acquired, done.released)
        self._state = decisions.cluster_steps_done(self._state)

    async def _fold_step(self, step: ReconcileStepResult) -> bool:
        """Act on the step's verdict; True when the resource is deleted."""
        if step.verdict is StepVerdict.DELETED:
            await self._finalize()
            return True
        if step.verdict is StepVerdict.OUT_OF_SCOPE:
            await self._out_of_scope(step.reason)
            return False
        self._state = decisions.in_scope(self._state)
        if step.verdict is StepVerdict.UNLICENSED:
            await self._unlicensed(step.reason)
        elif step.verdict is StepVerdict.INVALID_SPEC:
            await self._invalid_spec(step.reason)
        elif step.reconciled is not None:
            self._state = decisions.after_reconcile(self._state, step.reconciled, backoff=True)
        return False

    async def _run_step(self, request: ReconcileStepInput) -> ReconcileStepResult:
        name = reconcile_step_activity(self._ref.controller)
        summary = decisions.reconcile_summary(request.triggers)
        if not self._local_step:
            result: ReconcileStepResult = await self._activity(
                name, request, result_type=ReconcileStepResult, summary=summary
            )
            return result
        local: ReconcileStepResult = await workflow.execute_local_activity(
            name,
            request,
            result_type=ReconcileStepResult,
            start_to_close_timeout=STEP_TIMEOUT,
            retry_policy=ACTIVITY_RETRY,
            summary=summary,
        )
        return local

    async def _handle_gates_apart(self, triggers: tuple[Trigger, ...]) -> bool:
        """The loop before the reconcile step: scope check, license check, reconcile apart."""
        scope: ScopeCheckResult = await self._gate_check(
            ACT_SCOPE_CHECK,
            ScopeCheckInput(ref=self._ref),
            result_type=ScopeCheckResult,
            summary="scope check",
        )
        if not scope.exists:
            await self._finalize()
            return True
        if not scope.in_scope:
            await self._out_of_scope(scope.reason)
            return False
        self._state = decisions.in_scope(self._state)
        if scope.license_required and not await self._licensed():
            return False
        await self._reconcile(triggers)
        return False

    async def _finalize(self) -> None:
        """The resource is gone: release what is held, run the controller's finalizer."""
        await self._compensate(decisions.reverse_order(self._state.compensations))
        await self._activity(
            finalize_activity(self._ref.controller),
            FinalizeInput(ref=self._ref),
            result_type=FinalizeResult,
            summary="finalize",
        )
        self._state = decisions.deleted(self._state)

    async def _out_of_scope(self, reason: str) -> None:
        out_of_scope = decisions.after_out_of_scope(self._state, reason)
        await self._compensate(out_of_scope.run_now)
        self._state = out_of_scope.state

    async def _licensed(self) -> bool:
        verdict: LicenseCheckResult = await self._gate_check(
            ACT_LICENSE_CHECK,
            LicenseCheckInput(ref=self._ref),
            result_type=LicenseCheckResult,
            summary="license check",
        )
        if verdict.licensed:
            return True
        await self._unlicensed(verdict.reason)
        return False

    async def _unlicensed(
        self, reason: str, *, condition: LicenseConditionChange | None = None
    ) -> None:
        """Wait for a license: the Warning events when due and, given, the license-wait condition,
        both at once."""
        unlicensed = decisions.after_unlicensed(self._state, reason)
        if unlicensed.notify and condition is not None:
            await asyncio.gather(
                self._license_notice(unlicensed.state.message),
                self._license_condition(condition, reason),
            )
        elif unlicensed.notify:
            await self._license_notice(unlicensed.state.message)
        elif condition is not None:
            await self._license_condition(condition, reason)
        self._state = unlicensed.state

    async def _license_notice(self, message: str) -> None:
        await self._activity(
            ACT_LICENSE_WAIT_NOTICE,
            LicenseWaitNoticeInput(ref=self._ref, message=message),
            result_type=LicenseWaitNoticeResult,
            summary="InvalidLicense warning events",
        )

    async def _reconcile(self, triggers: tuple[Trigger, ...]) -> None:
        try:
            result: ReconcileResult = await self._activity(
                reconcile_activity(self._ref.controller),
                ReconcileInput(ref=self._ref, triggers=triggers),
                result_type=ReconcileResult,
                summary=decisions.reconcile_summary(triggers),
            )
        except ActivityError as error:
            message = _invalid_spec_message(error)
            if message is None:
                raise
            await self._invalid_spec(message)
            return
        self._state = decisions.after_reconcile(self._state, result)

    async def _invalid_spec(self, message: str) -> None:
        await self._activity(
            ACT_INVALID_SPEC_NOTICE,
            InvalidSpecNoticeInput(ref=self._ref, message=message),
            result_type=InvalidSpecNoticeResult,
            summary="invalid spec notice",
        )
        self._state = decisions.after_invalid_spec(self._state, message)

    async def _compensate(self, steps: tuple[CompensationStep, ...]) -> None:
        for step in steps:
            await self._activity(
                step.activity,
                CompensateInput(ref=self._ref, step=step),
                result_type=CompensateResult,
                summary=f"compensate {step.key}",
            )

    def _publish(self) -> None:
        phase = self._state.phase.value
        if workflow.info().typed_search_attributes.get(SA_PHASE) != phase:
            workflow.upsert_search_attributes([SA_PHASE.value_set(phase)])
        workflow.set_current_details(decisions.current_details(self._ref, self._state))

    async def _gate_check(
        self, name: str, argument: Any, *, result_type: type[Any], summary: str
    ) -> Any:
        """A scope or license check: a local activity, unless the run predates the patch."""
        # `patched` is memoized per run: the first check decides for the whole run, and a run
        # replayed from a history without the marker keeps the normal activities.
        if not workflow.patched(LOCAL_GATE_CHECKS_PATCH):
            return await self._activity(name, argument, result_type=result_type, summary=summary)
        return await workflow.execute_local_activity(
            name,
            argument,
            result_type=result_type,
            start_to_close_timeout=LOCAL_CHECK_TIMEOUT,
            retry_policy=ACTIVITY_RETRY,
            summary=summary,
        )

    async def _activity(
        self, name: str, argument: Any, *, result_type: type[Any], summary: str
    ) -> Any:
        return await workflow.execute_activity(
            name,
            argument,
            result_type=result_type,
            start_to_close_timeout=ACTIVITY_TIMEOUT,
            retry_policy=ACTIVITY_RETRY,
            summary=summary,
        )
