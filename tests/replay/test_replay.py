"""The replay tier: committed histories replay against this code; drift is caught and named."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker
from temporalio.workflow import NondeterminismError

from stackflow.cli.replay import load_history_file, main
from stackflow.models.engine import (
    ACT_LICENSE_CHECK,
    ACT_SCOPE_CHECK,
    FlipDirectionName,
    NamespaceFlipInput,
    ResourceWorkflowInput,
    ResourceWorkflowResult,
    Trigger,
    reconcile_activity,
    reconcile_step_activity,
)
from stackflow.temporal import DATA_CONVERTER
from tests.replay.record_histories import INTERCEPTORS
from tests.workflows.conftest import ts_env
from tests.workflows.fakes import FakeEngine
from workflows import WORKFLOWS
from workflows.flip import NamespaceFlipWorkflow
from workflows.resource import RECONCILE_STEP_PATCH, ResourceWorkflow

HISTORIES = Path(__file__).parent / "histories"
HISTORY_FILES = sorted(HISTORIES.glob("*.json"))
LIFECYCLE = HISTORIES / "resource_lifecycle.json"
LIFECYCLE_LOCAL_CHECKS = HISTORIES / "resource_lifecycle_local_checks.json"
LIFECYCLE_STEP = HISTORIES / "resource_lifecycle_step.json"
LIFECYCLE_STEP_ACTIVITY = HISTORIES / "resource_lifecycle_step_activity.json"
RETRY_BACKOFF = HISTORIES / "resource_retry_backoff.json"

__all__ = ["ts_env"]  # the session's time-skipping server, for --workflow-id


@workflow.defn(name="ResourceWorkflow", sandboxed=False)
class SleepsBeforeScopeCheck(ResourceWorkflow):
    """A non-deterministic change: a timer before the scope check, not behind a patch."""

    @workflow.run
    async def run(self, input: ResourceWorkflowInput) -> ResourceWorkflowResult:
        """The unchanged loop."""
        return await super().run(input)

    async def _handle(self, triggers: tuple[Trigger, ...]) -> bool:
        await workflow.sleep(timedelta(seconds=1), summary="debounce")
        return await super()._handle(triggers)


@workflow.defn(name="ResourceWorkflow", sandboxed=False)
class PatchedDebounce(ResourceWorkflow):
    """The same change behind ``workflow.patched``: old histories keep replaying."""

    @workflow.run
    async def run(self, input: ResourceWorkflowInput) -> ResourceWorkflowResult:
        """The unchanged loop."""
        return await super().run(input)

    async def _handle(self, triggers: tuple[Trigger, ...]) -> bool:
        if workflow.patched("debounce-before-scope-check"):
            await workflow.sleep(timedelta(seconds=1), summary="debounce")
        return await super()._handle(triggers)


def test_every_workflow_type_has_a_committed_history() -> None:
    types = {
        json.loads(path.read_text())["events"][0]["workflowExecutionStartedEventAttributes"][
            "workflowType"
        ]["name"]
        for path in HISTORY_FILES
    }
    assert types == {"ResourceWorkflow", "NamespaceFlipWorkflow"}


def _markers_and_activities(history: Path) -> tuple[set[str], set[str]]:
    """The marker names and the (normal) activity types a committed history records."""
    markers: set[str] = set()
    activity_types: set[str] = set()
    for event in json.loads(history.read_text())["events"]:
        if "markerRecordedEventAttributes" in event:
            markers.add(event["markerRecordedEventAttributes"]["markerName"])
        if "activityTaskScheduledEventAttributes" in event:
            attributes = event["activityTaskScheduledEventAttributes"]
            activity_types.add(attributes["activityType"]["name"])
    return markers, activity_types


@pytest.mark.parametrize(
    ("history", "local_checks"),
    [
        pytest.param(LIFECYCLE, False, id="before-the-patch"),
        pytest.param(LIFECYCLE_LOCAL_CHECKS, True, id="after-the-patch"),
    ],
)
def test_both_branches_of_the_local_gate_checks_patch_are_recorded(
    history: Path, local_checks: bool
) -> None:
    markers, activity_types = _markers_and_activities(history)
    gate_checks = {ACT_SCOPE_CHECK, ACT_LICENSE_CHECK}
    assert ("core_patch" in markers) is local_checks
    assert ("core_local_activity" in markers) is local_checks
    assert gate_checks.isdisjoint(activity_types) is local_checks
    assert reconcile_activity("elasticsearch") in activity_types


def _patch_ids(history: Path) -> set[str]:
    """The patch ids a committed history's ``core_patch`` markers name."""
    ids: set[str] = set()
    for event in json.loads(history.read_text())["events"]:
        attributes = event.get("markerRecordedEventAttributes")
        if attributes and attributes["markerName"] == "core_patch":
            payload = attributes["details"]["patch-data"]["payloads"][0]["data"]
            ids.add(json.loads(base64.b64decode(payload))["id"])
    return ids


def test_the_reconcile_step_branch_is_recorded() -> None:
    markers, activity_types = _markers_and_activities(LIFECYCLE_STEP)
    assert RECONCILE_STEP_PATCH in _patch_ids(LIFECYCLE_STEP)
    assert "core_local_activity" in markers
    # The gates and the reconcile are inside the step: none is an activity task of its own.
    assert activity_types.isdisjoint(
        {ACT_SCOPE_CHECK, ACT_LICENSE_CHECK, reconcile_activity("elasticsearch")}
    )
    assert RECONCILE_STEP_PATCH not in _patch_ids(LIFECYCLE_LOCAL_CHECKS)


def test_a_step_that_is_not_local_is_one_activity() -> None:
    markers, activity_types = _markers_and_activities(LIFECYCLE_STEP_ACTIVITY)
    assert RECONCILE_STEP_PATCH in _patch_ids(LIFECYCLE_STEP_ACTIVITY)
    assert "core_local_activity" not in markers
    assert reconcile_step_activity("elasticsearch") in activity_types
    assert activity_types.isdisjoint(
        {ACT_SCOPE_CHECK, ACT_LICENSE_CHECK, reconcile_activity("elasticsearch")}
    )


def test_the_retry_backoff_history_doubles_its_waits() -> None:
    timers = [
        event["timerStartedEventAttributes"]["startToFireTimeout"]
        for event in json.loads(RETRY_BACKOFF.read_text())["events"]
        if "timerStartedEventAttributes" in event
    ]
    assert timers == ["10s", "20s", "40s", "80s"]


PLAIN_HISTORIES = [path for path in HISTORY_FILES if path.stem not in INTERCEPTORS]


@pytest.mark.parametrize("history", PLAIN_HISTORIES, ids=lambda path: path.stem)
def test_committed_history_replays_cleanly(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--history-file", str(history)]) == 0
    assert "replayed 1 histories, 0 failed" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(INTERCEPTORS))
async def test_a_history_recorded_with_interceptors_replays_with_them(name: str) -> None:
    history = load_history_file(HISTORIES / f"{name}.json")
    with_them = Replayer(
        workflows=list(WORKFLOWS), data_converter=DATA_CONVERTER, interceptors=INTERCEPTORS[name]
    )
    without = Replayer(workflows=list(WORKFLOWS), data_converter=DATA_CONVERTER)

    await with_them.replay_workflow(history)
    # The interceptor is what decides the continue-as-new: the replay notices its absence.
    with pytest.raises(NondeterminismError):
        await without.replay_workflow(history)


def test_a_non_deterministic_change_is_caught_and_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(
        ["--history-file", str(LIFECYCLE)],
        workflows=(SleepsBeforeScopeCheck, NamespaceFlipWorkflow),
    )
    assert status == 1
    error = capsys.readouterr().err
    assert "replay failed: ResourceWorkflow resource_lifecycle" in error
    assert "Nondeterminism" in error or "TMPRL1100" in error


async def test_the_replayer_raises_nondeterminism_error() -> None:
    replayer = Replayer(workflows=[SleepsBeforeScopeCheck], data_converter=DATA_CONVERTER)
    with pytest.raises(NondeterminismError):
        await replayer.replay_workflow(load_history_file(LIFECYCLE))


def test_the_same_change_behind_a_patch_replays_cleanly() -> None:
    assert (
        main(["--history-file", str(LIFECYCLE)], workflows=(PatchedDebounce, NamespaceFlipWorkflow))
        == 0
    )


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--history-file", "does-not-exist.json"],
        ["--query", "x", "--history-file", "a.json"],
    ],
)
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    assert main(argv) == 2


@pytest.mark.asyncio(loop_scope="session")
async def test_replays_histories_fetched_by_workflow_id(
    ts_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_queue, flip_id = f"tq-{uuid.uuid4().hex[:8]}", f"flip/team-a/{uuid.uuid4().hex[:8]}"
    engine = FakeEngine()
    async with Worker(
        ts_env.client,
        task_queue=task_queue,
        workflows=list(WORKFLOWS),
        activities=engine.activities(),
    ):
        await ts_env.client.execute_workflow(
            NamespaceFlipWorkflow.run,
            NamespaceFlipInput(
                namespace="team-a", direction=FlipDirectionName.OUT_OF_SCOPE, controllers=()
            ),
            id=flip_id,
            task_queue=task_queue,
        )
    monkeypatch.setenv(
        "STACKFLOW_TEMPORAL_ADDRESS", ts_env.client.service_client.config.target_host
    )
    # main() runs its own event loop: give it a thread.
    assert await asyncio.to_thread(main, ["--workflow-id", flip_id]) == 0
