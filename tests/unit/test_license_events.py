"""Which license Secrets count as malformed (and get a Warning event on themselves)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from watchers.license_events import malformed_license_message


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
