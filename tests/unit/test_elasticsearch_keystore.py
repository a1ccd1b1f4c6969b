"""The keystore's pure rules: which sources feed it, in which order, and what lands in it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stackflow.stack.elasticsearch.keystore import (
    SecureSettingsSource,
    aggregate_secure_settings,
    secure_settings_sources,
)
from stackflow.stack.policies.stack_config.secrets import SECURE_SETTINGS_ANNOTATION

NS = "ns1"


def es(secure_settings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"version": "8.15.0"}
    if secure_settings is not None:
        spec["secureSettings"] = secure_settings
    return {"metadata": {"name": "quickstart", "namespace": NS}, "spec": spec}


def file_settings(sources: object) -> dict[str, Any]:
    return {"metadata": {"annotations": {SECURE_SETTINGS_ANNOTATION: json.dumps(sources)}}}


@pytest.mark.parametrize(
    ("spec", "file_settings_secret", "remote_keys", "expected"),
    [
        pytest.param(None, None, False, [], id="no source"),
        pytest.param(
            [{"secretName": "a"}, {"secretName": "b", "entries": [{"key": "k", "path": "p"}]}],
            None,
            False,
            [
                SecureSettingsSource(NS, "a"),
                SecureSettingsSource(NS, "b", (("k", "p"),)),
            ],
            id="spec sources in the cluster's namespace, entries with a path",
        ),
        pytest.param(
            [{"secretName": "b", "entries": [{"key": "k"}]}],
            None,
            False,
            [SecureSettingsSource(NS, "b", (("k", "k"),))],
            id="an entry without path keeps its key",
        ),
        pytest.param(
            [{"secretName": "a"}],
            file_settings([{"namespace": "elastic-system", "secretName": "p"}]),
            True,
            [
                SecureSettingsSource(NS, "a"),
                SecureSettingsSource("elastic-system", "p"),
                SecureSettingsSource(NS, "quickstart-es-remote-api-keys"),
            ],
            id="order: spec, then policies (their namespace), then the remote API keys",
        ),
        pytest.param(
            None,
            {"metadata": {"annotations": {SECURE_SETTINGS_ANNOTATION: "not json"}}},
            False,
            [],
            id="an unreadable policy annotation adds nothing",
        ),
    ],
)
def test_sources(
    spec: list[dict[str, Any]] | None,
    file_settings_secret: dict[str, Any] | None,
    remote_keys: bool,
    expected: list[SecureSettingsSource],
) -> None:
    assert (
        secure_settings_sources(
            es(spec), file_settings=file_settings_secret, remote_api_keys=remote_keys
        )
        == expected
    )


A = SecureSettingsSource(NS, "a")
B = SecureSettingsSource(NS, "b")
B_RENAMED = SecureSettingsSource(NS, "b", (("k1", "renamed"), ("absent", "x")))


@pytest.mark.parametrize(
    ("sources", "found", "data", "missing"),
    [
        pytest.param(
            [A], {A.key: {"k": b"1", "l": b"2"}}, {"k": b"1", "l": b"2"}, (), id="all keys"
        ),
        pytest.param(
            [B_RENAMED],
            {B.key: {"k1": b"1", "k2": b"2"}},
            {"renamed": b"1"},
            (),
            id="only the listed entries, renamed by path; a listed key the Secret lacks is skipped",
        ),
        pytest.param(
            [A, B], {B.key: {"k": b"1"}}, {"k": b"1"}, (A,), id="a missing source is reported"
        ),
        pytest.param(
            [A, B], {A.key: None, B.key: {}}, {}, (A,), id="a source read as absent is reported"
        ),
        pytest.param(
            [A, B],
            {A.key: {"k": b"early", "a": b"a"}, B.key: {"k": b"late"}},
            {"a": b"a", "k": b"late"},
            (),
            id="a later source overrides an earlier key",
        ),
    ],
)
def test_aggregate(
    sources: list[SecureSettingsSource],
    found: dict[tuple[str, str], dict[str, bytes] | None],
    data: dict[str, bytes],
    missing: tuple[SecureSettingsSource, ...],
) -> None:
    aggregate = aggregate_secure_settings(sources, found)
    assert aggregate.data == data
    assert aggregate.missing == missing
