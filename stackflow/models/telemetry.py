"""The reports' data contract: the Temporal names and the models of the telemetry and licensing
usage workflows and activities (pure data, shared by the workflows, the activities and the
schedules)."""

from __future__ import annotations

from datetime import datetime

from stackflow.models.engine import Model

__all__ = [
    "ACT_LICENSE_USAGE",
    "ACT_TELEMETRY_REPORT",
    "LICENSE_USAGE_WORKFLOW",
    "TELEMETRY_WORKFLOW",
    "LicenseUsageInput",
    "LicenseUsageResult",
    "LicenseUsageWorkflowInput",
    "LicenseUsageWorkflowResult",
    "TelemetryReportInput",
    "TelemetryReportResult",
    "TelemetryWorkflowInput",
    "TelemetryWorkflowResult",
    "license_usage_schedule_id",
    "telemetry_schedule_id",
]

ACT_LICENSE_USAGE = "stackflow.license_usage"
ACT_TELEMETRY_REPORT = "stackflow.telemetry_report"
TELEMETRY_WORKFLOW = "TelemetryWorkflow"
LICENSE_USAGE_WORKFLOW = "LicenseUsageWorkflow"


def telemetry_schedule_id(task_queue: str) -> str:
    """The telemetry Schedule of the operator serving `task_queue` (``stackflow-telemetry``)."""
    # The task queue tells apart operators sharing one Temporal namespace.
    return f"{task_queue}-telemetry"


def license_usage_schedule_id(task_queue: str) -> str:
    """The licensing usage Schedule of the operator serving `task_queue`."""
    return f"{task_queue}-license-usage"


class LicenseUsageInput(Model):
    """Compute the licensing usage report now (no parameters: the operator's scope decides)."""


class LicenseUsageResult(Model):
    """ECK's licensing usage report: level, enterprise resource units, the report's data."""

    level: str
    enterprise_resource_units: int
    max_enterprise_resource_units: int
    expiry: datetime | None = None
    #: ``elastic-licensing``'s data as ECK writes it, minus ``timestamp``.
    report: dict[str, str]
    namespaces: list[str]


class TelemetryReportInput(Model):
    """Write the telemetry document, whose ``license`` part is `license_report`."""

    license_report: dict[str, str]


class TelemetryReportResult(Model):
    """Where the document went: the ``namespace/name`` of every config Secret written."""

    written: list[str]
    unchanged: list[str]
    namespaces: list[str]


class TelemetryWorkflowInput(Model):
    """One telemetry run (started by the telemetry Schedule)."""


class TelemetryWorkflowResult(Model):
    """What one telemetry run did."""

    license: LicenseUsageResult
    report: TelemetryReportResult


class LicenseUsageWorkflowInput(Model):
    """One licensing usage run (started by the licensing usage Schedule)."""


class LicenseUsageWorkflowResult(Model):
    """What one licensing usage run computed."""

    license: LicenseUsageResult
