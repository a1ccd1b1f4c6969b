"""Which label selectors a cache read answers, and how it matches labels."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.kube.reader import equality_selector, matches_labels


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(None, {}, id="none"),
        pytest.param("", {}, id="empty"),
        pytest.param("a=b", {"a": "b"}, id="equality"),
        pytest.param("a==b", {"a": "b"}, id="double-equals"),
        pytest.param(
            "license.k8s.elastic.co/scope=operator, x=",
            {"license.k8s.elastic.co/scope": "operator", "x": ""},
            id="several-with-empty-value",
        ),
        pytest.param("a!=b", None, id="inequality"),
        pytest.param("a", None, id="existence"),
        pytest.param("!a", None, id="non-existence"),
        pytest.param("a in (b,c)", None, id="set-based"),
        pytest.param("=b", None, id="no-key"),
    ],
)
def test_equality_selector(selector: str | None, expected: dict[str, str] | None) -> None:
    assert equality_selector(selector) == expected


@pytest.mark.parametrize(
    ("metadata", "required", "matches"),
    [
        pytest.param({"labels": {"a": "b", "c": "d"}}, {"a": "b"}, True, id="subset"),
        pytest.param({"labels": {"a": "x"}}, {"a": "b"}, False, id="other-value"),
        pytest.param({}, {"a": "b"}, False, id="no-labels"),
        pytest.param({}, {}, True, id="nothing-required"),
    ],
)
def test_matches_labels(metadata: dict[str, Any], required: dict[str, str], matches: bool) -> None:
    assert matches_labels({"metadata": metadata}, required) is matches
