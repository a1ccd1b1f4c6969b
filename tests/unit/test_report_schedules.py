"""Which report Schedules the leader keeps, and which namespaces the reports cover (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import ScheduleActionStartWorkflow

from activities.telemetry import report_namespaces
from stackflow.cli.reports import LICENSE_USAGE_INTERVAL, report_schedules
from stackflow.config import OperatorConfig
from stackflow.scope import NamespaceMatcher, ScopeConfig, label_selector_from_data


class Namespaces:
    """A NamespaceSource over fixed Namespace labels."""

    def __init__(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        self.labels = labels

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.labels.get(name)

    def namespace_names(self) -> Iterable[str]:
        return list(self.labels)


NAMESPACES = Namespaces({"a": {"team": "x"}, "b": {}, "ops": {}})


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        pytest.param(ScopeConfig("ops"), None, id="all-namespaces"),
        pytest.param(
            ScopeConfig("ops", namespaces=("b", "z")), ["b", "ops", "z"], id="static-list"
        ),
        pytest.param(
            ScopeConfig(
                "ops", namespace_selector=label_selector_from_data({"matchLabels": {"team": "x"}})
            ),
            ["a", "ops"],
            id="dynamic-matching-now",
        ),
    ],
)
def test_report_namespaces(scope: ScopeConfig, expected: list[str] | None) -> None:
    assert report_namespaces(NamespaceMatcher(scope, source=NAMESPACES)) == expected


def started_workflow(schedule: Any) -> ScheduleActionStartWorkflow:
    action = schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    return action


@pytest.mark.parametrize(
    ("settings", "telemetry_every"),
    [
        pytest.param({}, timedelta(hours=1), id="default-hourly"),
        pytest.param({"telemetry-interval": "90s"}, timedelta(seconds=90), id="interval"),
        pytest.param({"disable-telemetry": True}, None, id="disabled"),
    ],
)
def test_report_schedules(settings: dict[str, Any], telemetry_every: timedelta | None) -> None:
    config = OperatorConfig.model_validate({"temporal-task-queue": "q", **settings})
    wanted = report_schedules(config)
    license_id, license_schedule = wanted.license_usage
    assert license_id == "q-license-usage"
    assert license_schedule.spec.intervals[0].every == LICENSE_USAGE_INTERVAL
    assert started_workflow(license_schedule).workflow == "LicenseUsageWorkflow"
    assert started_workflow(license_schedule).task_queue == "q"
    telemetry_id, telemetry_schedule = wanted.telemetry
    assert telemetry_id == "q-telemetry"
    if telemetry_every is None:
        assert telemetry_schedule is None
    else:
        assert telemetry_schedule is not None
        assert telemetry_schedule.spec.intervals[0].every == telemetry_every
        assert started_workflow(telemetry_schedule).workflow == "TelemetryWorkflow"
