"""The matcher's static-list answers: what the scoped pieces filter and what the informers watch."""

from __future__ import annotations

import pytest

from stackflow.scope import NamespaceMatcher, ScopeConfig, label_selector_from_data


class _NoNamespaces:
    def namespace_labels(self, name: str) -> None:
        return None

    def namespace_names(self) -> list[str]:
        return []


@pytest.mark.parametrize(
    ("namespaces", "selector", "restricts", "watched"),
    [
        (None, None, False, None),
        (("b", "a"), None, True, ("a", "b", "elastic-system")),
        (("elastic-system",), None, True, ("elastic-system",)),
        (None, {"matchLabels": {"eck": "on"}}, True, None),
        (None, {}, False, None),
    ],
)
def test_restricts_and_watched_namespaces(
    namespaces: tuple[str, ...] | None,
    selector: dict[str, object] | None,
    restricts: bool,
    watched: tuple[str, ...] | None,
) -> None:
    scope = ScopeConfig(
        operator_namespace="elastic-system",
        namespaces=namespaces,
        namespace_selector=None if selector is None else label_selector_from_data(selector),
    )
    matcher = NamespaceMatcher(scope, source=_NoNamespaces())
    assert matcher.restricts is restricts
    assert matcher.watched_namespaces == watched
