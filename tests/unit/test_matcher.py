"""NamespaceMatcher in dynamic, static-list and all-namespaces modes."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import pytest

from stackflow.scope import (
    MUTUALLY_EXCLUSIVE_MESSAGE,
    LabelSelector,
    NamespaceMatcher,
    ScopeConfig,
    ScopeMode,
    parse_selector_string,
)

OPERATOR_NS = "elastic-system"


class FakeNamespaces:
    """An in-memory NamespaceSource; names in `unreadable` raise on lookup."""

    def __init__(
        self, labels_by_name: Mapping[str, Mapping[str, str]], *, unreadable: Iterable[str] = ()
    ) -> None:
        self.labels_by_name = dict(labels_by_name)
        self.unreadable = set(unreadable)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        if name in self.unreadable:
            raise RuntimeError(f"cache unavailable for {name}")
        return self.labels_by_name.get(name)

    def namespace_names(self) -> Iterable[str]:
        return list(self.labels_by_name) + sorted(self.unreadable)


CLUSTER = FakeNamespaces(
    {
        OPERATOR_NS: {},
        "team-a": {"eck-visible": "true"},
        "team-b": {"eck-visible": "false"},
        "plain": {},
    },
    unreadable=["broken"],
)


def _matcher(
    *, selector: str | None = None, namespaces: tuple[str, ...] | None = None
) -> NamespaceMatcher:
    scope = ScopeConfig(
        operator_namespace=OPERATOR_NS,
        namespace_selector=parse_selector_string(selector) if selector is not None else None,
        namespaces=namespaces,
    )
    return NamespaceMatcher(scope, source=CLUSTER)


def _namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels or {}},
    }


DYNAMIC = _matcher(selector="eck-visible=true")
STATIC = _matcher(namespaces=("team-b", "gone"))
EVERYTHING = _matcher()


@pytest.mark.parametrize(
    ("matcher", "mode", "enabled"),
    [
        (DYNAMIC, ScopeMode.DYNAMIC, True),
        (STATIC, ScopeMode.STATIC_LIST, False),
        (EVERYTHING, ScopeMode.ALL_NAMESPACES, False),
        (_matcher(selector=""), ScopeMode.ALL_NAMESPACES, False),
    ],
)
def test_mode_and_enabled(matcher: NamespaceMatcher, mode: ScopeMode, enabled: bool) -> None:
    assert matcher.scope.mode is mode
    assert matcher.enabled is enabled


@pytest.mark.parametrize(
    ("matcher", "name", "expected"),
    [
        (DYNAMIC, OPERATOR_NS, True),
        (DYNAMIC, "", True),
        (DYNAMIC, "team-a", True),
        (DYNAMIC, "team-b", False),
        (DYNAMIC, "plain", False),
        (DYNAMIC, "unknown", False),
        (DYNAMIC, "broken", False),
        (STATIC, OPERATOR_NS, True),
        (STATIC, "", True),
        (STATIC, "team-b", True),
        (STATIC, "gone", True),
        (STATIC, "team-a", False),
        (EVERYTHING, "team-a", True),
        (EVERYTHING, "unknown", True),
        (EVERYTHING, "", True),
    ],
)
def test_name_matches(matcher: NamespaceMatcher, name: str, expected: bool) -> None:
    assert matcher.name_matches(name) is expected


@pytest.mark.parametrize(
    ("matcher", "namespace", "expected"),
    [
        (DYNAMIC, _namespace("x", {"eck-visible": "true"}), True),
        (DYNAMIC, _namespace("x", {"eck-visible": "no"}), False),
        (DYNAMIC, _namespace("x"), False),
        (DYNAMIC, _namespace(OPERATOR_NS), True),
        (DYNAMIC, {"metadata": {"name": "x", "labels": None}}, False),
        (STATIC, _namespace("team-b"), True),
        (STATIC, _namespace("team-a", {"eck-visible": "true"}), False),
        (EVERYTHING, _namespace("anything"), True),
    ],
)
def test_namespace_matches_uses_the_object_not_the_source(
    matcher: NamespaceMatcher, namespace: dict[str, object], expected: bool
) -> None:
    assert matcher.namespace_matches(namespace) is expected


@pytest.mark.parametrize(
    ("matcher", "expected"),
    [
        (DYNAMIC, [OPERATOR_NS, "team-a"]),
        (STATIC, [OPERATOR_NS, "gone", "team-b"]),
        (EVERYTHING, ["broken", OPERATOR_NS, "plain", "team-a", "team-b"]),
    ],
)
def test_matching_namespaces(matcher: NamespaceMatcher, expected: list[str]) -> None:
    assert matcher.matching_namespaces() == expected


def test_answers_follow_the_source_live() -> None:
    source = FakeNamespaces({"late": {}})
    matcher = NamespaceMatcher(
        ScopeConfig(operator_namespace=OPERATOR_NS, namespace_selector=parse_selector_string("on")),
        source=source,
    )
    assert not matcher.name_matches("late")
    source.labels_by_name["late"] = {"on": ""}
    assert matcher.name_matches("late")
    del source.labels_by_name["late"]
    assert not matcher.name_matches("late")


@pytest.mark.parametrize(
    ("name", "reason"), [("unknown", "is unknown"), ("broken", "could not be read")]
)
def test_unknown_or_unreadable_namespaces_are_logged_at_debug(
    caplog: pytest.LogCaptureFixture, name: str, reason: str
) -> None:
    with caplog.at_level(logging.DEBUG, logger="stackflow.scope"):
        assert not DYNAMIC.name_matches(name)
    [record] = [r for r in caplog.records if r.name == "stackflow.scope"]
    assert record.levelno == logging.DEBUG
    assert name in record.getMessage()
    assert reason in record.getMessage()


def test_selector_and_namespace_list_are_mutually_exclusive() -> None:
    with pytest.raises(ValueError, match=MUTUALLY_EXCLUSIVE_MESSAGE):
        ScopeConfig(
            operator_namespace=OPERATOR_NS,
            namespace_selector=parse_selector_string("a"),
            namespaces=("x",),
        )


def test_empty_selector_with_namespace_list_is_static_mode() -> None:
    scope = ScopeConfig(
        operator_namespace=OPERATOR_NS, namespace_selector=LabelSelector(), namespaces=("x",)
    )
    assert scope.mode is ScopeMode.STATIC_LIST
