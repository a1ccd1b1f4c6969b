"""The file-settings document's versioning rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stackflow.stack.policies.stack_config.file_settings import (
    empty_state,
    file_settings,
    state_hash,
)

STATE = {**empty_state(), "cluster_settings": {"x": "1"}}

HOLDING_STATE = json.dumps({"metadata": {"version": "7"}, "state": STATE})
HOLDING_EMPTY = json.dumps({"metadata": {"version": "7"}, "state": empty_state()})

# (current document, current hash, state, expected version)
VERSIONS: list[tuple[str | None, str | None, dict[str, Any], int]] = [
    # No current document: the first version.
    (None, None, STATE, 1000),
    ("not json", None, STATE, 1000),
    # Same hash, recorded and held: the version is kept.
    (HOLDING_STATE, state_hash(STATE), STATE, 7),
    # Another state, or no hash recorded (the Elasticsearch controller's empty document): bumped.
    (HOLDING_EMPTY, state_hash(empty_state()), STATE, 8),
    (HOLDING_EMPTY, None, STATE, 8),
    (HOLDING_STATE, state_hash(STATE), empty_state(), 8),
    # The recorded hash matches but the document was replaced under it: bumped.
    (HOLDING_EMPTY, state_hash(STATE), STATE, 8),
    ('{"metadata": {"version": "7"}}', state_hash(STATE), STATE, 8),
]


@pytest.mark.parametrize(("document", "digest", "state", "version"), VERSIONS)
def test_versioning_rule(
    document: str | None, digest: str | None, state: dict[str, Any], version: int
) -> None:
    settings = file_settings(
        state, current_document=document, current_hash=digest, first_version=1000
    )
    assert settings.version == version
    assert settings.hash == state_hash(state)
    assert json.loads(settings.document) == {
        "metadata": {"version": str(version), "compatibility": "8.4.0"},
        "state": state,
    }
