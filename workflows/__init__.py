"""Temporal workflows: deterministic, no I/O; they import only temporalio, the stdlib and stackflow.models."""
