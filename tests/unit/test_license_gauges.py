"""The licensing usage gauges: the worker's metrics interceptor shows each licensing usage result."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from stackflow.metrics import Registry
from stackflow.models.telemetry import ACT_LICENSE_USAGE
from stackflow.observability import ActivityMetrics


def usage(level: str, units: int, max_units: int = 0) -> SimpleNamespace:
    """A licensing usage activity result."""
    return SimpleNamespace(
        level=level, enterprise_resource_units=units, max_enterprise_resource_units=max_units
    )


@pytest.mark.parametrize(
    ("results", "expected_lines"),
    [
        pytest.param(
            [usage("basic", 0)],
            [
                'stackflow_license_level{level="basic"} 1.0',
                'stackflow_license_level{level="enterprise"} 0.0',
                'stackflow_license_level{level="enterprise_trial"} 0.0',
                "stackflow_enterprise_resource_units 0.0",
            ],
            id="unlicensed",
        ),
        pytest.param(
            [usage("enterprise_trial", 1), usage("enterprise", 3, 10)],
            [
                'stackflow_license_level{level="enterprise"} 1.0',
                'stackflow_license_level{level="enterprise_trial"} 0.0',
                'stackflow_license_level{level="basic"} 0.0',
                "stackflow_enterprise_resource_units 3.0",
                "stackflow_max_enterprise_resource_units 10.0",
            ],
            id="latest-report-wins",
        ),
    ],
)
def test_license_usage_results_become_gauges(
    results: list[SimpleNamespace], expected_lines: list[str]
) -> None:
    registry = Registry()
    metrics = ActivityMetrics(registry)
    for result in results:
        metrics.record(ACT_LICENSE_USAGE, result, 0.1, failed=False)
    lines = registry.render().splitlines()
    for line in expected_lines:
        assert line in lines


def test_a_failed_report_changes_nothing() -> None:
    registry = Registry()
    metrics = ActivityMetrics(registry)
    metrics.record(ACT_LICENSE_USAGE, usage("enterprise", 2), 0.1, failed=False)
    metrics.record(ACT_LICENSE_USAGE, None, 0.1, failed=True)
    assert 'stackflow_license_level{level="enterprise"} 1.0' in registry.render().splitlines()
    assert "stackflow_enterprise_resource_units 2.0" in registry.render().splitlines()
