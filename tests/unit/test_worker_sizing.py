"""The sticky cache sized from the memory budget; the setting wins; the cgroup limit is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from stackflow.cli.operator import workflow_runner
from stackflow.cli.sizing import (
    DEFAULT_MEMORY_BUDGET,
    MAX_CACHED_WORKFLOWS,
    MIN_CACHED_WORKFLOWS,
    OPERATOR_RESERVE,
    SANDBOX_PASSTHROUGH_MODULES,
    SANDBOX_RESTRICTIONS,
    SANDBOXED_WORKFLOW_BYTES,
    UNSANDBOXED_WORKFLOW_BYTES,
    CacheSizing,
    max_cached_workflows,
    memory_limit,
    parse_memory_limit,
    sticky_cache_size,
)
from stackflow.config import ConfigError, OperatorConfig, load_config

MiB = 1024 * 1024
GiB = 1024 * MiB


@pytest.mark.parametrize(
    ("limit", "sandboxed", "expected"),
    [
        pytest.param(None, False, 256, id="no-limit-default-budget"),
        pytest.param(None, True, 146, id="no-limit-sandboxed"),
        pytest.param(512 * MiB, False, 2150, id="512Mi"),
        pytest.param(1 * GiB, False, 5836, id="1Gi"),
        pytest.param(1 * GiB, True, 3335, id="1Gi-sandboxed"),
        pytest.param(4 * GiB, False, MAX_CACHED_WORKFLOWS, id="large-limit-capped"),
        pytest.param(220 * MiB, False, MIN_CACHED_WORKFLOWS, id="small-limit-floored"),
        pytest.param(64 * MiB, False, MIN_CACHED_WORKFLOWS, id="below-the-reserve"),
        pytest.param(1 << 62, False, 256, id="cgroup-v1-unlimited-is-no-limit"),
    ],
)
def test_max_cached_workflows(limit: int | None, sandboxed: bool, expected: int) -> None:
    sizing = CacheSizing.for_runner(sandboxed=sandboxed)

    assert max_cached_workflows(memory_limit=limit, sizing=sizing) == expected


def test_the_default_budget_keeps_the_operator_under_300_mb() -> None:
    cached = max_cached_workflows(memory_limit=None)

    planned = OPERATOR_RESERVE + cached * UNSANDBOXED_WORKFLOW_BYTES
    assert planned <= DEFAULT_MEMORY_BUDGET < 300 * MiB  # the bench's MB are MiB


def test_the_bounds_and_the_cost_are_the_sizings() -> None:
    sizing = CacheSizing(per_workflow_bytes=MiB, reserve_bytes=0, minimum=3, maximum=50)

    assert max_cached_workflows(memory_limit=10 * MiB, sizing=sizing) == 9  # 90% of 10 MiB
    assert max_cached_workflows(memory_limit=1 * MiB, sizing=sizing) == 3
    assert max_cached_workflows(memory_limit=GiB, sizing=sizing) == 50
    with pytest.raises(ValueError, match="positive"):
        max_cached_workflows(memory_limit=None, sizing=CacheSizing(per_workflow_bytes=0))


def test_the_sandbox_costs_more_per_workflow() -> None:
    assert CacheSizing.for_runner(sandboxed=True).per_workflow_bytes == SANDBOXED_WORKFLOW_BYTES
    assert SANDBOXED_WORKFLOW_BYTES > UNSANDBOXED_WORKFLOW_BYTES


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("max\n", None, id="v2-unlimited"),
        pytest.param("536870912\n", 512 * MiB, id="v2-limit"),
        pytest.param("9223372036854771712\n", None, id="v1-unlimited"),
        pytest.param("", None, id="empty"),
        pytest.param("garbage", None, id="unreadable"),
        pytest.param("0", None, id="zero"),
    ],
)
def test_parse_memory_limit(text: str, expected: int | None) -> None:
    assert parse_memory_limit(text) == expected


def test_memory_limit_reads_cgroup_v2_then_v1(tmp_path: Path) -> None:
    assert memory_limit(tmp_path) is None
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text(f"{GiB}\n")
    assert memory_limit(tmp_path) == GiB
    (tmp_path / "memory.max").write_text("max\n")
    assert memory_limit(tmp_path) is None  # v2 answers first: no limit


@pytest.mark.parametrize(
    ("configured", "limit", "expected"),
    [
        pytest.param(None, None, 256, id="unset-sized"),
        pytest.param(None, 512 * MiB, 2150, id="unset-sized-from-the-limit"),
        pytest.param(5000, 512 * MiB, 5000, id="set-wins"),
        pytest.param(0, None, 0, id="zero-turns-the-cache-off"),
    ],
)
def test_sticky_cache_size(configured: int | None, limit: int | None, expected: int) -> None:
    assert sticky_cache_size(configured, sandboxed=False, limit=limit) == expected


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param({}, None, id="default-unset"),
        pytest.param({"temporal-max-cached-workflows": 250}, 250, id="set"),
        pytest.param({"temporal-max-cached-workflows": ""}, None, id="empty-is-unset"),
    ],
)
def test_the_setting_is_unset_by_default(settings: dict[str, object], expected: int | None) -> None:
    assert OperatorConfig.model_validate(settings).temporal_max_cached_workflows == expected


def test_a_negative_setting_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "eck.yaml"
    path.write_text("temporal-max-cached-workflows: -1\n")

    with pytest.raises(ConfigError, match="temporal-max-cached-workflows"):
        load_config(path, {})


def test_the_sandboxed_runner_passes_the_pure_workflow_modules_through() -> None:
    runner = workflow_runner(sandboxed=True)

    assert isinstance(runner, SandboxedWorkflowRunner)
    assert runner.restrictions is SANDBOX_RESTRICTIONS
    assert set(SANDBOX_PASSTHROUGH_MODULES) <= SANDBOX_RESTRICTIONS.passthrough_modules
    # The workflow definitions themselves stay sandboxed.
    assert "workflows.resource" not in SANDBOX_RESTRICTIONS.passthrough_modules
    assert "workflows" not in SANDBOX_RESTRICTIONS.passthrough_modules
