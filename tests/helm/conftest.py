"""The helm tier: skipped, with the reason, where ``make tools`` has not built helm."""

from __future__ import annotations

import pytest

from tests.helm.chart import helm_unavailable


@pytest.fixture(autouse=True)
def _helm_built() -> None:
    """Skip every test of the tier when the helm binary is missing."""
    reason = helm_unavailable()
    if reason:
        pytest.skip(reason)
