"""The leader's periodic reports, started by Temporal Schedules: licensing usage and telemetry.

``LicenseUsageWorkflow`` runs the licensing usage activity (whose result the worker's metrics
interceptor turns into the ``/metrics`` gauges); ``TelemetryWorkflow`` runs it too and then writes
the telemetry document into every managed Kibana's config Secret. Each step is an activity, so a
run's reads and writes show in the Temporal UI; the Schedules (``stackflow.cli.reports``) repeat
them every interval.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from stackflow.models.telemetry import (
        ACT_LICENSE_USAGE,
        ACT_TELEMETRY_REPORT,
        LICENSE_USAGE_WORKFLOW,
        TELEMETRY_WORKFLOW,
        LicenseUsageInput,
        LicenseUsageResult,
        LicenseUsageWorkflowInput,
        LicenseUsageWorkflowResult,
        TelemetryReportInput,
        TelemetryReportResult,
        TelemetryWorkflowInput,
        TelemetryWorkflowResult,
    )
    from workflows.activity_options import ACTIVITY_TIMEOUT

__all__ = ["REPORT_RETRY", "LicenseUsageWorkflow", "TelemetryWorkflow"]

#: A report that keeps failing gives up: the next scheduled run tries again, so retrying without
#: end would only pile runs up behind the Schedule's overlap policy.
REPORT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)


async def _license_usage() -> LicenseUsageResult:
    usage: LicenseUsageResult = await workflow.execute_activity(
        ACT_LICENSE_USAGE,
        LicenseUsageInput(),
        result_type=LicenseUsageResult,
        start_to_close_timeout=ACTIVITY_TIMEOUT,
        retry_policy=REPORT_RETRY,
    )
    return usage


@workflow.defn(name=LICENSE_USAGE_WORKFLOW)
class LicenseUsageWorkflow:
    """Compute the licensing usage report once."""

    @workflow.run
    async def run(self, request: LicenseUsageWorkflowInput) -> LicenseUsageWorkflowResult:
        """Run the licensing usage activity; answer its report."""
        usage = await _license_usage()
        workflow.set_current_details(
            f"* level: {usage.level}\n* enterprise resource units: "
            f"{usage.enterprise_resource_units}"
        )
        return LicenseUsageWorkflowResult(license=usage)


@workflow.defn(name=TELEMETRY_WORKFLOW)
class TelemetryWorkflow:
    """Compute the licensing usage, then write the telemetry document into the Kibanas."""

    @workflow.run
    async def run(self, request: TelemetryWorkflowInput) -> TelemetryWorkflowResult:
        """Licensing usage first (the document embeds it), then the write."""
        usage = await _license_usage()
        report: TelemetryReportResult = await workflow.execute_activity(
            ACT_TELEMETRY_REPORT,
            TelemetryReportInput(license_report=usage.report),
            result_type=TelemetryReportResult,
            start_to_close_timeout=ACTIVITY_TIMEOUT,
            retry_policy=REPORT_RETRY,
        )
        workflow.set_current_details(
            f"* namespaces: {', '.join(report.namespaces) or 'all'}\n"
            f"* written: {', '.join(report.written) or 'none'}\n"
            f"* unchanged: {', '.join(report.unchanged) or 'none'}"
        )
        return TelemetryWorkflowResult(license=usage, report=report)
