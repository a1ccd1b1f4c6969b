"""Every check of the table, run on a fresh kubesim and on the real control plane, compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.harness import Endpoint
from tests.conformance.registry import all_checks
from tests.conformance.runner import OUTCOMES, compare_check

CHECKS = all_checks()

pytestmark = [pytest.mark.apiserver, pytest.mark.timeout(900)]


@pytest.mark.parametrize("name", list(CHECKS))
async def test_check(name: str, conformance_endpoint: Endpoint, tmp_path: Path) -> None:
    """kubesim answers this scenario as the real API server does, up to documented differences."""
    outcome = await compare_check(CHECKS[name], conformance_endpoint, workdir=tmp_path)
    OUTCOMES.append(outcome)
    assert not outcome.cleanup_failures, "\n".join(outcome.cleanup_failures)
    assert outcome.comparison.passed, outcome.comparison.report()
