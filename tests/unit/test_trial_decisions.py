"""The trial controller's pure decision, when ``trial-status`` was edited by hand or deleted.

A started trial whose ``trial-status`` cannot vouch for it is flagged naming that Secret, never
started again: a new, empty trial request is still refused.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.trial import (
    TRIAL_ONLY_ONCE_MESSAGE,
    TRIAL_STATUS_MISSING_MESSAGE,
    TrialAction,
    TrialDecision,
    decide,
    trial_status_problem,
)
from stackflow.licensing import EnterpriseLicense, LicenseSpec, OperatorLicenseType
from stackflow.licensing.issue import (
    generate_private_key,
    populate_trial_license,
    trial_status_pubkey,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
KEY = generate_private_key(key_size=1024)
OTHER_KEY = generate_private_key(key_size=1024)
UNREADABLE = (
    "Secret elastic-system/trial-status holds no readable trial public key "
    "(key pubkey; was it edited?): the trial license cannot be verified"
)


def encoded(value: bytes) -> str:
    return base64.b64encode(value).decode()


def trial_status(data: dict[str, bytes]) -> dict[str, Any]:
    """A ``trial-status`` Secret holding ``data``."""
    return {
        "metadata": {"name": "trial-status", "namespace": "elastic-system"},
        "data": {key: encoded(value) for key, value in data.items()},
    }


GOOD_STATUS = trial_status({"pubkey": trial_status_pubkey(KEY.public_key())})


def trial_secret(*, populated: bool) -> dict[str, Any]:
    """A trial Secret: an empty request, or the trial the operator signed with ``KEY``."""
    secret: dict[str, Any] = {
        "metadata": {
            "name": "eck-trial",
            "namespace": "elastic-system",
            "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
            "annotations": {"elastic.co/eula": "accepted"},
        }
    }
    if populated:
        request = EnterpriseLicense(license=LicenseSpec(type=OperatorLicenseType.ENTERPRISE_TRIAL))
        trial = populate_trial_license(request, private_key=KEY, now=NOW - timedelta(days=1))
        secret["data"] = {"license": encoded(trial.to_json().encode())}
    return secret


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(GOOD_STATUS, None, id="readable"),
        pytest.param(None, TRIAL_STATUS_MISSING_MESSAGE, id="deleted"),
        pytest.param(trial_status({}), UNREADABLE, id="emptied"),
        pytest.param(trial_status({"pubkey": b"garbage"}), UNREADABLE, id="garbage-key"),
        pytest.param(
            {
                "metadata": {"name": "trial-status", "namespace": "elastic-system"},
                "data": {"pubkey": "%%% not base64"},
            },
            UNREADABLE,
            id="not-base64",
        ),
    ],
)
def test_trial_status_problem(status: dict[str, Any] | None, expected: str | None) -> None:
    assert trial_status_problem(status) == expected


@pytest.mark.parametrize(
    ("populated", "status", "expected"),
    [
        pytest.param(True, GOOD_STATUS, TrialDecision(TrialAction.VALID), id="valid"),
        pytest.param(
            True,
            trial_status({"pubkey": b"garbage"}),
            TrialDecision(TrialAction.INVALID, UNREADABLE),
            id="tampered-status",
        ),
        pytest.param(
            True,
            None,
            TrialDecision(TrialAction.INVALID, TRIAL_STATUS_MISSING_MESSAGE),
            id="deleted-status",
        ),
        pytest.param(
            True,
            trial_status({"pubkey": trial_status_pubkey(OTHER_KEY.public_key())}),
            TrialDecision(TrialAction.INVALID, "trial license signature invalid"),
            id="another-key",
        ),
        # A tampered status still records that a trial was started: none starts again.
        pytest.param(
            False,
            trial_status({"pubkey": b"garbage"}),
            TrialDecision(TrialAction.INVALID, TRIAL_ONLY_ONCE_MESSAGE),
            id="new-request-tampered-status",
        ),
        pytest.param(
            False,
            trial_status({}),
            TrialDecision(TrialAction.INVALID, TRIAL_ONLY_ONCE_MESSAGE),
            id="new-request-emptied-status",
        ),
        pytest.param(False, None, TrialDecision(TrialAction.START), id="first-request"),
    ],
)
def test_decide_with_a_tampered_trial_status(
    populated: bool, status: dict[str, Any] | None, expected: TrialDecision
) -> None:
    assert decide(trial_secret(populated=populated), trial_status=status, now=NOW) == expected
