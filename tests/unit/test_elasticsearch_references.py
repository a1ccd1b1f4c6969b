"""The Secrets and ConfigMaps an Elasticsearch spec references."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.elasticsearch.references import ReferencedObject, referenced_objects


def make_es(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "es", "namespace": "ns"}, "spec": {"version": "8.15.0", **spec}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, []),
        (
            {"secureSettings": [{"secretName": "s3"}, {"secretName": "gcs"}]},
            [("Secret", "gcs"), ("Secret", "s3")],
        ),
        ({"http": {"tls": {"certificate": {"secretName": "my-cert"}}}}, [("Secret", "my-cert")]),
        (
            {"auth": {"fileRealm": [{"secretName": "users"}], "roles": [{"secretName": "roles"}]}},
            [("Secret", "roles"), ("Secret", "users")],
        ),
        (
            {
                "transport": {
                    "tls": {
                        "certificate": {"secretName": "ca"},
                        "certificateAuthorities": {"configMapName": "trust"},
                    }
                }
            },
            [("ConfigMap", "trust"), ("Secret", "ca")],
        ),
        (
            {
                "secureSettings": [{"secretName": "same"}],
                "auth": {"roles": [{"secretName": "same"}]},
            },
            [("Secret", "same")],
        ),
    ],
)
def test_referenced_objects(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert referenced_objects(make_es(**spec)) == [
        ReferencedObject(kind, "ns", name) for kind, name in expected
    ]
