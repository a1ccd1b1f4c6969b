"""Temporal workflows: deterministic, no I/O; they call activities by their registered names."""

from __future__ import annotations

from workflows.flip import NamespaceFlipWorkflow
from workflows.resource import ResourceWorkflow
from workflows.sweep import GarbageSweepWorkflow
from workflows.telemetry import LicenseUsageWorkflow, TelemetryWorkflow

__all__ = [
    "WORKFLOWS",
    "GarbageSweepWorkflow",
    "LicenseUsageWorkflow",
    "NamespaceFlipWorkflow",
    "ResourceWorkflow",
    "TelemetryWorkflow",
]

#: Every workflow class a Worker (and the Replayer) must know.
WORKFLOWS: tuple[type, ...] = (
    ResourceWorkflow,
    NamespaceFlipWorkflow,
    GarbageSweepWorkflow,
    LicenseUsageWorkflow,
    TelemetryWorkflow,
)
