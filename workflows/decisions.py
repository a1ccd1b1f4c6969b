"""Pure decisions of the ResourceWorkflow loop: what to carry, what to run next, what to show.

The workflow does the Temporal calls; everything it decides goes through these functions, which take
the carried state (a frozen `CarriedState`) and return a new one, so the rules are table-tested
without a server and replay stays a matter of calling them in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stackflow.models.cluster_steps import AnyStep, describe_step
from stackflow.models.engine import (
    FLIP_SOURCE_PREFIX,
    LICENSE_RECHECK_SECONDS,
    RETRY_CEILING_SECONDS,
    CarriedState,
    CompensationStep,
    FlipDirectionName,
    Phase,
    ReconcileResult,
    ResourceRef,
    StepVerdict,
    Trigger,
    TriggerReason,
    flip_of,
)
from stackflow.models.license_condition import LicenseConditionChange

LICENSE_RECHECK_SUMMARY = "license recheck in 5m"


@dataclass(frozen=True)
class WaitPlan:
    """How long the loop waits for a trigger (None: no timer) and what the timer is called."""

    timeout_seconds: float | None
    summary: str


@dataclass(frozen=True)
class OutOfScopeDecision:
    """The state after an out-of-scope check and the compensations to run now (in that order)."""

    state: CarriedState
    run_now: tuple[CompensationStep, ...]


@dataclass(frozen=True)
class UnlicensedDecision:
    """The state after a failed license check and whether this wait's notice is still due."""

    state: CarriedState
    notify: bool


def coalesce(triggers: Iterable[Trigger]) -> tuple[Trigger, ...]:
    """All pending triggers as one batch, identical ones once, first-seen order kept."""
    batch: list[Trigger] = []
    for trigger in triggers:
        if trigger not in batch:
            batch.append(trigger)
    return tuple(batch)


#: How many handled flips a run remembers (a flip's two deliveries arrive within seconds).
FLIPS_REMEMBERED = 8


def _is_flip(trigger: Trigger) -> bool:
    return trigger.reason is TriggerReason.NAMESPACE_FLIP and trigger.source.startswith(
        FLIP_SOURCE_PREFIX
    )


def unhandled(triggers: Sequence[Trigger], handled_flips: Sequence[str]) -> tuple[Trigger, ...]:
    """``triggers`` without the namespace flips already handled (by their flip's id).

    A flip reaches a resource twice with the same trigger: at once from the watcher's caches and
    then from the flip workflow, which is what survives a crash. The second finds nothing new.
    """
    return tuple(
        trigger
        for trigger in triggers
        if not _is_flip(trigger) or trigger.source not in handled_flips
    )


#: The verdicts of a step that found its resource's namespace in scope.
_SAW_IN_SCOPE = frozenset(
    {StepVerdict.UNLICENSED, StepVerdict.INVALID_SPEC, StepVerdict.RECONCILED}
)


def flips_seen(
    triggers: Iterable[Trigger], namespace: str, verdict: StepVerdict | None
) -> tuple[Trigger, ...]:
    """The flips of ``triggers`` whose effect the step's ``verdict`` shows: a flip of the
    resource's own ``namespace`` into scope with a step past the scope gate, or out of scope with
    the step stopped there.

    Only those may be taken as handled. A step that ran where the flip was not seen yet (another
    replica whose Namespace cache lags) decided on the old scope, and the flip workflow's delivery
    must reconcile again; so must a flip of another namespace, whose effect no verdict shows.
    """
    seen: list[Trigger] = []
    for trigger in triggers:
        flip = flip_of(trigger)
        if flip is None or flip[0] != namespace or verdict is None:
            continue
        direction = flip[1]
        if (direction is FlipDirectionName.INTO_SCOPE and verdict in _SAW_IN_SCOPE) or (
            direction is FlipDirectionName.OUT_OF_SCOPE and verdict is StepVerdict.OUT_OF_SCOPE
        ):
            seen.append(trigger)
    return tuple(seen)


def remember_flips(handled_flips: Sequence[str], triggers: Iterable[Trigger]) -> tuple[str, ...]:
    """The flip ids handled once ``triggers`` are: the latest ``FLIPS_REMEMBERED``, oldest first."""
    remembered = list(handled_flips)
    for trigger in triggers:
        if _is_flip(trigger) and trigger.source not in remembered:
            remembered.append(trigger.source)
    return tuple(remembered[-FLIPS_REMEMBERED:])


def merge_compensations(
    recorded: Sequence[CompensationStep],
    *,
    acquired: Sequence[CompensationStep],
    released: Sequence[str],
) -> tuple[CompensationStep, ...]:
    """Record `acquired` steps (one per key, first recording wins its place), drop `released` keys."""
    merged: dict[str, CompensationStep] = {}
    for step in (*recorded, *acquired):
        # A re-acquired key keeps its original position (the order the state was taken in) but
        # its latest data, because a release must act on what is held now.
        merged[step.key] = step
    dropped = set(released)
    return tuple(step for key, step in merged.items() if key not in dropped)


def reverse_order(steps: Sequence[CompensationStep]) -> tuple[CompensationStep, ...]:
    """Compensations run last-acquired first, as a saga unwinds."""
    return tuple(reversed(steps))


def release_now_order(
    recorded: Sequence[CompensationStep], release: Sequence[CompensationStep]
) -> tuple[CompensationStep, ...]:
    """The steps a reconcile asked to run now, last-acquired first, each key once.

    A recorded key runs at its recorded place (reversed) with the reconcile's data, which describes
    what is held now. A key never recorded (state taken before it was recorded as a step) was
    acquired earliest of all, so it runs after the recorded ones, in the reconcile's order.
    """
    asked = {step.key: step for step in release}
    positions = {step.key: index for index, step in enumerate(recorded)}
    known = sorted((key for key in asked if key in positions), key=lambda key: -positions[key])
    unknown = [key for key in asked if key not in positions]
    return tuple(asked[key] for key in (*known, *unknown))


def after_release(state: CarriedState, released: Iterable[str]) -> CarriedState:
    """The state once the compensations of ``released`` keys have run: they are not held."""
    dropped = set(released)
    kept = tuple(step for step in state.compensations if step.key not in dropped)
    return state.model_copy(update={"compensations": kept})


def after_cluster_step(
    state: CarriedState,
    acquired: Sequence[CompensationStep],
    released: Sequence[str],
) -> CarriedState:
    """Fold what a cluster step left in the cluster (or undid) into the held compensations."""
    if not acquired and not released:
        return state
    return state.model_copy(
        update={
            "compensations": merge_compensations(
                state.compensations, acquired=acquired, released=released
            )
        }
    )


def after_reconcile(
    state: CarriedState, result: ReconcileResult, *, backoff: bool = False
) -> CarriedState:
    """Fold a reconcile's outcome into the state (a requeued non-Ready result is RetryScheduled).

    With ``backoff``, a retry that repeats the previous retry's outcome (same message) counts one
    more in ``retries``, which doubles the next wait (``next_wait``); any other outcome resets it.
    A Ready result's requeue is a schedule (a license expiring), never backed off.
    """
    phase = result.phase
    if result.requeue_after_seconds is not None and phase is not Phase.READY:
        phase = Phase.RETRY_SCHEDULED
    repeated = (
        backoff
        and phase is Phase.RETRY_SCHEDULED
        and state.phase is Phase.RETRY_SCHEDULED
        and state.message == result.message
    )
    return state.model_copy(
        update={
            "phase": phase,
            "message": result.message,
            "requeue_after_seconds": result.requeue_after_seconds,
            "compensations": merge_compensations(
                state.compensations, acquired=result.acquired, released=result.released
            ),
            "referenced": result.referenced,
            "reconciles": state.reconciles + 1,
            "out_of_scope": False,
            "license_warned": False,
            "retries": state.retries + 1 if repeated else 0,
        }
    )


def after_invalid_spec(state: CarriedState, message: str) -> CarriedState:
    """An invalid spec: phase Error, no requeue (only a new trigger helps)."""
    return state.model_copy(
        update={
            "phase": Phase.ERROR,
            "message": message,
            "requeue_after_seconds": None,
            "reconciles": state.reconciles + 1,
            "out_of_scope": False,
            "license_warned": False,
            "retries": 0,
        }
    )


def after_out_of_scope(state: CarriedState, reason: str) -> OutOfScopeDecision:
    """Out of scope: the compensations run once per episode (reverse order), then are forgotten."""
    run_now = () if state.out_of_scope else reverse_order(state.compensations)
    new_state = state.model_copy(
        update={
            "phase": Phase.OUT_OF_SCOPE,
            "message": reason or "the resource's namespace is not managed",
            "requeue_after_seconds": None,
            "compensations": () if run_now else state.compensations,
            "out_of_scope": True,
            "license_warned": False,
            "retries": 0,
        }
    )
    return OutOfScopeDecision(state=new_state, run_now=run_now)


def after_unlicensed(state: CarriedState, reason: str) -> UnlicensedDecision:
    """No license: WaitingForLicense; the Warning notice is due on the first wake of the wait only."""
    new_state = state.model_copy(
        update={
            "phase": Phase.WAITING_FOR_LICENSE,
            "message": reason or "an enterprise license is required",
            "requeue_after_seconds": None,
            "out_of_scope": False,
            "license_warned": True,
            "retries": 0,
        }
    )
    return UnlicensedDecision(state=new_state, notify=not state.license_warned)


def license_condition_change(before: Phase, verdict: StepVerdict) -> LicenseConditionChange | None:
    """Whether a step's verdict writes or removes the license-wait condition (None: neither).

    ``before`` is the phase before the step. Entering the wait writes it once; reconciling again
    (or finding the spec invalid, which also means the gates let the step through) after a wait
    removes it. After ``OutOfScope`` the condition is removed too: a resource whose namespace left
    scope during a wait is never written, so its condition may still be there when it returns.
    """
    if verdict is StepVerdict.UNLICENSED:
        return None if before is Phase.WAITING_FOR_LICENSE else LicenseConditionChange.WAITING
    passed_the_gates = verdict in (StepVerdict.RECONCILED, StepVerdict.INVALID_SPEC)
    if passed_the_gates and before in (Phase.WAITING_FOR_LICENSE, Phase.OUT_OF_SCOPE):
        return LicenseConditionChange.CLEARED
    return None


def in_scope(state: CarriedState) -> CarriedState:
    """Back in scope: a new out-of-scope episode will compensate again."""
    return state.model_copy(update={"out_of_scope": False})


def deleted(state: CarriedState) -> CarriedState:
    """The resource is gone: nothing is held any more."""
    return state.model_copy(
        update={
            "phase": Phase.DELETED,
            "message": "the resource was deleted",
            "requeue_after_seconds": None,
            "compensations": (),
            "pending": (),
            "retries": 0,
        }
    )


def running_cluster_step(
    state: CarriedState, step: AnyStep, index: int, total: int
) -> CarriedState:
    """The state while step ``index`` (from 0) of ``total`` that change the cluster runs."""
    return state.model_copy(
        update={"operation": f"step {index + 1} of {total}: {describe_step(step)}"}
    )


def cluster_steps_done(state: CarriedState) -> CarriedState:
    """The state once a reconcile's steps have run (or the first failed)."""
    return state.model_copy(update={"operation": ""})


def format_seconds(seconds: float) -> str:
    """``90s``, ``5m``, ``1h30m``: a short, readable duration for summaries."""
    whole = round(seconds)
    if whole < 60 or whole % 60:
        return f"{seconds:g}s"
    hours, minutes = divmod(whole // 60, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")


def next_wait(state: CarriedState) -> WaitPlan:
    """The next wait: a license recheck, a requeue, or (None) only a trigger wakes the workflow."""
    if state.phase is Phase.WAITING_FOR_LICENSE:
        return WaitPlan(timeout_seconds=LICENSE_RECHECK_SECONDS, summary=LICENSE_RECHECK_SUMMARY)
    if state.requeue_after_seconds is None:
        return WaitPlan(timeout_seconds=None, summary="")
    requeue = max(state.requeue_after_seconds, 0.0)
    if state.phase is not Phase.RETRY_SCHEDULED or state.retries == 0:
        return WaitPlan(timeout_seconds=requeue, summary=f"requeue in {format_seconds(requeue)}")
    # The same outcome again and again: look less often, but never less than once per ceiling.
    ceiling = max(RETRY_CEILING_SECONDS, requeue)
    wait = min(requeue * 2.0 ** min(state.retries, 32), ceiling)
    return WaitPlan(
        timeout_seconds=wait,
        summary=f"retry in {format_seconds(wait)} (unchanged {state.retries + 1} times)",
    )


def reconcile_summary(triggers: Sequence[Trigger]) -> str:
    """The reconcile activity's summary: the reasons that led to it."""
    if not triggers:
        return "reconcile (timer)"
    reasons = ", ".join(dict.fromkeys(trigger.reason.value for trigger in triggers))
    plural = "" if len(triggers) == 1 else "s"
    return f"reconcile ({len(triggers)} trigger{plural}: {reasons})"


def current_details(ref: ResourceRef, state: CarriedState) -> str:
    """The markdown the Temporal UI shows as the workflow's current details."""
    wait = next_wait(state)
    lines = [
        f"**{state.phase.value}** {ref.summary}",
        "",
        f"* reconciles: {state.reconciles}",
        f"* compensations held: {len(state.compensations)}",
    ]
    if state.message:
        lines.append(f"* message: {state.message}")
    if state.operation:
        lines.append(f"* running: {state.operation}")
    if wait.timeout_seconds is not None:
        lines.append(f"* next: {wait.summary}")
    else:
        lines.append("* next: waiting for a trigger")
    return "\n".join(lines)
