"""Temporal workflows: deterministic, no I/O; they call activities by their registered names."""

from __future__ import annotations

from workflows.flip import NamespaceFlipWorkflow
from workflows.resource import ResourceWorkflow

__all__ = ["WORKFLOWS", "NamespaceFlipWorkflow", "ResourceWorkflow"]

#: Every workflow class a Worker (and the Replayer) must know.
WORKFLOWS: tuple[type, ...] = (ResourceWorkflow, NamespaceFlipWorkflow)
