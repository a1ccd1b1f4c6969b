"""The ResourceWorkflow's pure decisions, table-tested."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stackflow.models.engine import (
    CarriedState,
    CompensationStep,
    Phase,
    ReconcileResult,
    Trigger,
    TriggerReason,
)
from tests.workflows.fakes import make_ref
from workflows import decisions


def trigger(detail: str, reason: TriggerReason = TriggerReason.SPEC_CHANGED) -> Trigger:
    """A trigger told apart by its detail."""
    return Trigger(reason=reason, source="test", detail=detail)


def step(key: str, activity: str = "es.release", **data: str) -> CompensationStep:
    """A compensation step."""
    return CompensationStep(activity=activity, key=key, data=dict(data))


@pytest.mark.parametrize(
    ("pending", "batch"),
    [
        ((), ()),
        ((trigger("a"),), (trigger("a"),)),
        ((trigger("a"), trigger("a"), trigger("b")), (trigger("a"), trigger("b"))),
        ((trigger("b"), trigger("a"), trigger("b")), (trigger("b"), trigger("a"))),
        (
            (trigger("a"), trigger("a", TriggerReason.DELETED)),
            (trigger("a"), trigger("a", TriggerReason.DELETED)),
        ),
    ],
)
def test_coalesce_keeps_each_distinct_trigger_once_in_order(
    pending: tuple[Trigger, ...], batch: tuple[Trigger, ...]
) -> None:
    assert decisions.coalesce(pending) == batch


@pytest.mark.parametrize(
    ("recorded", "acquired", "released", "merged"),
    [
        ((), (), (), ()),
        ((), (step("a"), step("b")), (), (step("a"), step("b"))),
        ((step("a"),), (step("b"), step("a")), (), (step("a"), step("b"))),
        ((step("a", v="1"),), (step("a", v="2"),), (), (step("a", v="2"),)),
        ((step("a"), step("b")), (), ("a",), (step("b"),)),
        ((step("a"),), (step("b"),), ("b", "zzz"), (step("a"),)),
    ],
)
def test_merge_compensations_dedups_by_key_keeps_order_and_drops_released(
    recorded: tuple[CompensationStep, ...],
    acquired: tuple[CompensationStep, ...],
    released: tuple[str, ...],
    merged: tuple[CompensationStep, ...],
) -> None:
    assert decisions.merge_compensations(recorded, acquired=acquired, released=released) == merged


@pytest.mark.parametrize(
    ("result", "phase", "requeue"),
    [
        (ReconcileResult(phase=Phase.READY), Phase.READY, None),
        (ReconcileResult(phase=Phase.READY, requeue_after_seconds=60), Phase.READY, 60),
        (
            ReconcileResult(phase=Phase.RECONCILING, requeue_after_seconds=10),
            Phase.RETRY_SCHEDULED,
            10,
        ),
        (ReconcileResult(phase=Phase.RECONCILING), Phase.RECONCILING, None),
    ],
)
def test_after_reconcile_sets_phase_and_requeue(
    result: ReconcileResult, phase: Phase, requeue: float | None
) -> None:
    state = decisions.after_reconcile(
        CarriedState(out_of_scope=True, license_warned=True, reconciles=4), result
    )
    assert (state.phase, state.requeue_after_seconds, state.reconciles) == (phase, requeue, 5)
    assert not state.out_of_scope
    assert not state.license_warned


@pytest.mark.parametrize(
    ("already_out", "run_now", "left"),
    [
        (False, (step("b"), step("a")), ()),
        (True, (), (step("a"), step("b"))),
    ],
)
def test_out_of_scope_runs_compensations_once_per_episode(
    already_out: bool, run_now: tuple[CompensationStep, ...], left: tuple[CompensationStep, ...]
) -> None:
    state = CarriedState(compensations=(step("a"), step("b")), out_of_scope=already_out)
    decision = decisions.after_out_of_scope(state, "namespace does not match")
    assert decision.run_now == run_now
    assert decision.state.compensations == left
    assert decision.state.phase is Phase.OUT_OF_SCOPE
    assert decision.state.requeue_after_seconds is None


@pytest.mark.parametrize(
    ("recorded", "release", "order"),
    [
        ((), (), ()),
        # Recorded keys run last-acquired first, whatever order the reconcile listed them in.
        ((step("a"), step("b"), step("c")), (step("a"), step("c")), (step("c"), step("a"))),
        # The reconcile's data wins: it describes what is held now.
        ((step("a", v="1"),), (step("a", v="2"),), (step("a", v="2"),)),
        # A key never recorded (taken before it was a step) was acquired first: it runs last.
        ((step("b"),), (step("x"), step("b"), step("y")), (step("b"), step("x"), step("y"))),
        ((), (step("x"), step("x", v="2")), (step("x", v="2"),)),
    ],
)
def test_release_now_runs_last_acquired_first_each_key_once(
    recorded: tuple[CompensationStep, ...],
    release: tuple[CompensationStep, ...],
    order: tuple[CompensationStep, ...],
) -> None:
    assert decisions.release_now_order(recorded, release) == order


def test_after_release_forgets_only_the_released_keys() -> None:
    state = CarriedState(compensations=(step("a"), step("b"), step("c")))
    assert decisions.after_release(state, ["c", "a", "zzz"]).compensations == (step("b"),)


@pytest.mark.parametrize(
    ("recorded", "acquired", "released", "held"),
    [
        ((), (), (), ()),
        ((), (step("exclude"),), (), (step("exclude"),)),
        ((step("a"), step("exclude")), (), ("exclude",), (step("a"),)),
        ((step("exclude", v="1"),), (step("exclude", v="2"),), (), (step("exclude", v="2"),)),
    ],
)
def test_a_cluster_step_folds_what_it_left_and_what_it_undid(
    recorded: tuple[CompensationStep, ...],
    acquired: tuple[CompensationStep, ...],
    released: tuple[str, ...],
    held: tuple[CompensationStep, ...],
) -> None:
    state = CarriedState(compensations=recorded)
    assert decisions.after_cluster_step(state, acquired, released).compensations == held


@pytest.mark.parametrize(("warned", "notify"), [(False, True), (True, False)])
def test_unlicensed_notifies_on_the_first_wake_only(warned: bool, notify: bool) -> None:
    decision = decisions.after_unlicensed(CarriedState(license_warned=warned), "no license")
    assert decision.notify is notify
    assert decision.state.phase is Phase.WAITING_FOR_LICENSE
    assert decision.state.license_warned


@pytest.mark.parametrize(
    ("state", "plan"),
    [
        (CarriedState(), decisions.WaitPlan(None, "")),
        (CarriedState(phase=Phase.OUT_OF_SCOPE), decisions.WaitPlan(None, "")),
        (CarriedState(phase=Phase.ERROR), decisions.WaitPlan(None, "")),
        (
            CarriedState(phase=Phase.WAITING_FOR_LICENSE),
            decisions.WaitPlan(300.0, "license recheck in 5m"),
        ),
        (
            CarriedState(phase=Phase.RETRY_SCHEDULED, requeue_after_seconds=30),
            decisions.WaitPlan(30.0, "requeue in 30s"),
        ),
        (
            CarriedState(phase=Phase.READY, requeue_after_seconds=600),
            decisions.WaitPlan(600.0, "requeue in 10m"),
        ),
        (
            CarriedState(phase=Phase.READY, requeue_after_seconds=-5),
            decisions.WaitPlan(0.0, "requeue in 0s"),
        ),
    ],
)
def test_next_wait(state: CarriedState, plan: decisions.WaitPlan) -> None:
    assert decisions.next_wait(state) == plan


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1.5, "1.5s"),
        (59, "59s"),
        (90, "90s"),
        (300, "5m"),
        (5400, "1h30m"),
        (3600, "1h"),
    ],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert decisions.format_seconds(seconds) == text


@pytest.mark.parametrize(
    ("triggers", "summary"),
    [
        ((), "reconcile (timer)"),
        ((trigger("a"),), "reconcile (1 trigger: SpecChanged)"),
        (
            (trigger("a"), trigger("b"), trigger("c", TriggerReason.CHILD_CHANGED)),
            "reconcile (3 triggers: SpecChanged, ChildChanged)",
        ),
    ],
)
def test_reconcile_summary(triggers: tuple[Trigger, ...], summary: str) -> None:
    assert decisions.reconcile_summary(triggers) == summary


@pytest.mark.parametrize(
    ("state", "lines"),
    [
        (
            CarriedState(phase=Phase.READY, reconciles=3, message="green"),
            [
                "**Ready** Elasticsearch team-a/es",
                "* reconciles: 3",
                "* message: green",
                "* next: waiting for a trigger",
            ],
        ),
        (
            CarriedState(phase=Phase.WAITING_FOR_LICENSE, compensations=(step("a"),)),
            [
                "**WaitingForLicense** Elasticsearch team-a/es",
                "* compensations held: 1",
                "* next: license recheck in 5m",
            ],
        ),
    ],
)
def test_current_details_markdown(state: CarriedState, lines: list[str]) -> None:
    details = decisions.current_details(make_ref("es"), state).splitlines()
    assert all(line in details for line in lines), details


def test_deleted_forgets_everything_held() -> None:
    state = decisions.deleted(
        CarriedState(compensations=(step("a"),), pending=(trigger("x"),), requeue_after_seconds=3)
    )
    assert (state.phase, state.compensations, state.pending, state.requeue_after_seconds) == (
        Phase.DELETED,
        (),
        (),
        None,
    )


UNREACHABLE = ReconcileResult(
    phase=Phase.RECONCILING, message="cluster not reachable", requeue_after_seconds=10
)
RETRYING = CarriedState(
    phase=Phase.RETRY_SCHEDULED, message="cluster not reachable", requeue_after_seconds=10
)


@pytest.mark.parametrize(
    ("state", "result", "backoff", "retries"),
    [
        # The first retry, and a retry after something else, start the count.
        (CarriedState(), UNREACHABLE, True, 0),
        (RETRYING.model_copy(update={"message": "other"}), UNREACHABLE, True, 0),
        # The same outcome again counts one more...
        (RETRYING, UNREACHABLE, True, 1),
        (RETRYING.model_copy(update={"retries": 4}), UNREACHABLE, True, 5),
        # ...unless the run predates the backoff.
        (RETRYING.model_copy(update={"retries": 4}), UNREACHABLE, False, 0),
        # Any other outcome resets it; a Ready requeue (a schedule) never counts.
        (RETRYING.model_copy(update={"retries": 4}), ReconcileResult(phase=Phase.READY), True, 0),
        (
            CarriedState(phase=Phase.READY, requeue_after_seconds=3600, retries=0),
            ReconcileResult(phase=Phase.READY, requeue_after_seconds=3600),
            True,
            0,
        ),
    ],
)
def test_retries_count_repeated_retry_outcomes(
    state: CarriedState, result: ReconcileResult, backoff: bool, retries: int
) -> None:
    assert decisions.after_reconcile(state, result, backoff=backoff).retries == retries


@pytest.mark.parametrize(
    ("retries", "wait", "summary"),
    [
        (0, 10.0, "requeue in 10s"),
        (1, 20.0, "retry in 20s (unchanged 2 times)"),
        (3, 80.0, "retry in 80s (unchanged 4 times)"),
        (5, 300.0, "retry in 5m (unchanged 6 times)"),
        (500, 300.0, "retry in 5m (unchanged 501 times)"),
    ],
)
def test_a_repeated_retry_backs_off_to_the_five_minute_ceiling(
    retries: int, wait: float, summary: str
) -> None:
    plan = decisions.next_wait(RETRYING.model_copy(update={"retries": retries}))
    assert (plan.timeout_seconds, plan.summary) == (wait, summary)


@pytest.mark.parametrize(
    "leave",
    [
        lambda state: decisions.after_invalid_spec(state, "bad"),
        lambda state: decisions.after_out_of_scope(state, "gone").state,
        lambda state: decisions.after_unlicensed(state, "none").state,
        decisions.deleted,
    ],
)
def test_leaving_the_retry_resets_the_count(leave: Callable[[CarriedState], CarriedState]) -> None:
    assert leave(RETRYING.model_copy(update={"retries": 3})).retries == 0
