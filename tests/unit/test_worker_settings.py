"""The worker settings ``stackflow run`` derives from the configuration."""

from __future__ import annotations

import pytest
from temporalio.worker import UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from stackflow.cli.operator import worker_concurrency, workflow_runner
from stackflow.config import OperatorConfig


@pytest.mark.parametrize(
    ("settings", "runner_type", "cached"),
    [
        # Unset: sized from the memory budget at start-up (tests/unit/test_worker_sizing.py).
        pytest.param({}, UnsandboxedWorkflowRunner, None, id="defaults"),
        pytest.param(
            {"temporal-workflow-sandbox": True, "temporal-max-cached-workflows": 5000},
            SandboxedWorkflowRunner,
            5000,
            id="sandboxed-with-a-bigger-cache",
        ),
    ],
)
def test_worker_settings_follow_the_configuration(
    settings: dict[str, object], runner_type: type, cached: int | None
) -> None:
    config = OperatorConfig.model_validate(settings)

    runner = workflow_runner(sandboxed=config.temporal_workflow_sandbox)

    assert isinstance(runner, runner_type)
    assert config.temporal_max_cached_workflows == cached


@pytest.mark.parametrize(
    ("settings", "bound"),
    [
        pytest.param({}, 16, id="default"),
        pytest.param({"max-concurrent-reconciles": 3}, 3, id="eck-s-default"),
    ],
)
def test_max_concurrent_reconciles_bounds_activities_and_local_activities(
    settings: dict[str, object], bound: int
) -> None:
    config = OperatorConfig.model_validate(settings)

    assert worker_concurrency(config) == {
        "max_concurrent_activities": bound,
        "max_concurrent_local_activities": bound,
    }
