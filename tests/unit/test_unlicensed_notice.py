"""The license wait's notice per controller row (``activities.generic``, pure parts): a row's own
``unlicensed`` notice replaces the gate's default, and its conditions merge into the status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from activities.generic import controller_license_notice, unlicensed_status_patch
from stackflow.controllers import CONTROLLERS

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
STAMP = "2026-12-04T12:00:00Z"
DISABLED = "is an enterprise feature. Enterprise features are disabled"


@pytest.mark.parametrize(
    ("controller", "kind", "expected"),
    [
        pytest.param(
            "elasticsearchautoscaler",
            "ElasticsearchAutoscaler",
            ("InvalidLicense", f"Autoscaling {DISABLED}", False),
            id="the row's own notice, on the resource alone",
        ),
        pytest.param(
            "stackconfigpolicy",
            "StackConfigPolicy",
            ("ReconciliationError", f"StackConfigPolicy {DISABLED}", False),
            id="enterprise gate default",
        ),
        pytest.param(
            "kibana",
            "Kibana",
            ("InvalidLicense", f"Dynamic namespace selector {DISABLED}", True),
            id="dynamic-scope gate default, on the operator Pod too",
        ),
    ],
)
def test_controller_license_notice(
    controller: str, kind: str, expected: tuple[str, str, bool]
) -> None:
    assert controller_license_notice(CONTROLLERS.named(controller), kind) == expected


ACTIVE_FALSE = {"type": "Active", "status": "False", "message": "inactive"}


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        pytest.param(
            [],
            [{**ACTIVE_FALSE, "lastTransitionTime": STAMP}],
            id="first wait: the condition, stamped now",
        ),
        pytest.param(
            [
                {"type": "Active", "status": "True", "message": "", "lastTransitionTime": "T0"},
                {"type": "Online", "status": "True", "message": "", "lastTransitionTime": "T0"},
            ],
            [
                {**ACTIVE_FALSE, "lastTransitionTime": STAMP},
                {"type": "Online", "status": "True", "message": "", "lastTransitionTime": "T0"},
            ],
            id="after a licensed run: Active flips, the others are kept",
        ),
        pytest.param(
            [{**ACTIVE_FALSE, "lastTransitionTime": "T0"}],
            None,
            id="already so: nothing to write",
        ),
    ],
)
def test_unlicensed_status_patch(
    current: list[dict[str, Any]], expected: list[dict[str, Any]] | None
) -> None:
    obj = {"metadata": {"resourceVersion": "7"}, "status": {"conditions": current}}

    patch = unlicensed_status_patch(obj, [ACTIVE_FALSE], now=NOW)

    if expected is None:
        assert patch is None
    else:
        assert patch == {
            "status": {"conditions": expected},
            "metadata": {"resourceVersion": "7"},
        }
