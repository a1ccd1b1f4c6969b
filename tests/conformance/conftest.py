"""Fixtures of the comparison suite, and its one-line report at the end of the run."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane import ControlPlane
from tests.conformance.harness import Endpoint
from tests.conformance.runner import OUTCOMES, apiserver_endpoint, counts, wait_for_namespaces


@pytest.fixture(scope="session")
def conformance_endpoint(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Endpoint]:
    """The session's real control plane as a conformance endpoint (skipped, with the reason,
    where the control plane cannot run); the checks' namespaces are awaited gone at the end."""
    directory = tmp_path_factory.mktemp("conformance")
    endpoint = apiserver_endpoint(control_plane, directory)
    try:
        yield endpoint
    finally:
        left = asyncio.run(wait_for_namespaces(endpoint))
        shutil.rmtree(directory, ignore_errors=True)
        if left:
            pytest.fail(f"conformance namespaces still terminating at the end: {left}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line when the comparison ran: checks run, identical, fixed, documented."""
    if OUTCOMES:
        terminalreporter.write_line(counts(OUTCOMES).line())


__all__ = ["Path", "conformance_endpoint"]
