"""Which license Secrets get a Warning event on themselves: malformed ones, and well-formed ones
that are not valid (bad signature, expired, not yet valid), each named with its problem."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from stackflow.licensing import LicenseCheck, LicenseStatus, parse_license_json
from stackflow.licensing.verify import invalid_license_message
from watchers.license_events import LicenseProblemReporter, malformed_license_message


def secret(data: dict[str, str]) -> dict[str, Any]:
    """An operator-scope license Secret holding ``data`` (plain text, encoded here)."""
    return {
        "metadata": {"name": "lic", "namespace": "elastic-system"},
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


WELL_FORMED = json.dumps(
    {
        "license": {
            "uid": "1",
            "type": "enterprise",
            "issue_date_in_millis": 1,
            "start_date_in_millis": 1,
            "expiry_date_in_millis": 2,
            "max_resource_units": 1,
            "issued_to": "x",
            "issuer": "y",
            "signature": "c2ln",
        }
    }
)


@pytest.mark.parametrize(
    ("data", "malformed"),
    [
        pytest.param({"license": "not json"}, True, id="not-json"),
        pytest.param({}, True, id="no-key"),
        pytest.param({"a": WELL_FORMED, "b": WELL_FORMED}, True, id="two-keys"),
        pytest.param(
            {"license": json.dumps({"license": {"type": "gold"}})}, True, id="not-enterprise"
        ),
        # Well-formed but unsigned by any configured key: invalid, not malformed (no event).
        pytest.param({"license": WELL_FORMED}, False, id="well-formed"),
    ],
)
def test_malformed_license_message(data: dict[str, str], malformed: bool) -> None:
    message = malformed_license_message(secret(data))
    assert (message is not None) is malformed
    if message is not None:
        assert message.startswith("while parsing license in elastic-system/lic: ")


NOW = datetime(2026, 6, 1, tzinfo=UTC)
NOW_MILLIS = int(NOW.timestamp() * 1000)
DAY_MILLIS = 86_400_000


def license_check(
    *,
    start: int = NOW_MILLIS - DAY_MILLIS,
    expiry: int = NOW_MILLIS + DAY_MILLIS,
    signature_problem: str | None = None,
) -> LicenseCheck:
    """A judged well-formed license of ``elastic-system/lic`` with these dates and signature."""
    document = json.loads(WELL_FORMED)
    document["license"].update(start_date_in_millis=start, expiry_date_in_millis=expiry)
    check = LicenseCheck(
        "elastic-system",
        "lic",
        LicenseStatus.VALID,
        license=parse_license_json(json.dumps(document)),
        signature_problem=signature_problem,
    )
    return dataclasses.replace(check, status=check.status_at(NOW))


PREFIX = "license in elastic-system/lic is not used: "


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        pytest.param(license_check(), None, id="valid"),
        pytest.param(
            license_check(signature_problem="signature does not match"),
            PREFIX + "invalid signature: signature does not match",
            id="forged",
        ),
        pytest.param(
            license_check(expiry=NOW_MILLIS - 1),
            PREFIX + "expired at 2026-05-31T23:59:59.999000+00:00",
            id="expired",
        ),
        pytest.param(
            license_check(start=NOW_MILLIS + DAY_MILLIS, expiry=NOW_MILLIS + 2 * DAY_MILLIS),
            PREFIX + "not valid before 2026-06-02T00:00:00+00:00",
            id="not-yet-valid",
        ),
        # Dates are judged first, as by the license gate.
        pytest.param(
            license_check(expiry=NOW_MILLIS - 1, signature_problem="bad"),
            PREFIX + "expired at 2026-05-31T23:59:59.999000+00:00",
            id="expired-and-forged",
        ),
        pytest.param(
            LicenseCheck(
                "elastic-system", "lic", LicenseStatus.MALFORMED, malformed_reason="no license"
            ),
            "while parsing license in elastic-system/lic: no license",
            id="malformed",
        ),
    ],
)
def test_invalid_license_message(check: LicenseCheck, expected: str | None) -> None:
    assert invalid_license_message(check, now=NOW) == expected


class RecordedEvents:
    """An event recorder that keeps the messages."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def warning(self, involved: Any, *, reason: str, action: str, message: str) -> None:
        assert (reason, action) == ("InvalidLicense", "LicenseCheck")
        self.messages.append(message)


@pytest.mark.parametrize(
    ("judged", "expected"),
    [
        pytest.param(license_check(), [], id="valid"),
        pytest.param(
            license_check(signature_problem="forged"),
            [PREFIX + "invalid signature: forged"],
            id="forged",
        ),
    ],
)
async def test_the_reporter_names_a_license_its_judge_finds_invalid(
    judged: LicenseCheck, expected: list[str]
) -> None:
    events = RecordedEvents()

    async def judge(secret: Any) -> LicenseCheck:
        return judged

    reporter = LicenseProblemReporter(events, judge=judge, clock=lambda: NOW)  # type: ignore[arg-type]

    recorded = await reporter.report(secret({"license": WELL_FORMED}))

    assert events.messages == expected
    assert recorded is bool(expected)


async def test_without_a_judge_only_a_malformed_license_is_reported() -> None:
    events = RecordedEvents()
    reporter = LicenseProblemReporter(events)  # type: ignore[arg-type]

    assert not await reporter.report(secret({"license": WELL_FORMED}))
    assert await reporter.report(secret({"license": "not json"}))
    assert len(events.messages) == 1
