"""The flip rule: which Namespace events mean a namespace entered or left the scope."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from stackflow.models.engine import FlipDirectionName
from stackflow.scope import (
    NamespaceMatcher,
    ScopeConfig,
    namespace_flip_direction,
    parse_selector_string,
)

INTO = FlipDirectionName.INTO_SCOPE
OUT = FlipDirectionName.OUT_OF_SCOPE


class _NoNamespaces:
    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return None

    def namespace_names(self) -> Iterable[str]:
        return []


def _matcher(selector: str) -> NamespaceMatcher:
    return NamespaceMatcher(
        ScopeConfig(operator_namespace="ops", namespace_selector=parse_selector_string(selector)),
        source=_NoNamespaces(),
    )


@pytest.mark.parametrize(
    ("event_type", "old_matches", "new_matches", "always", "expected"),
    [
        ("ADDED", None, True, False, INTO),
        ("ADDED", None, False, False, None),
        ("DELETED", True, None, False, OUT),
        ("DELETED", False, None, False, None),
        ("MODIFIED", False, True, False, INTO),
        ("MODIFIED", True, False, False, OUT),
        ("MODIFIED", True, True, False, None),
        ("MODIFIED", False, False, False, None),
        ("MODIFIED", False, True, True, None),
        ("ADDED", None, True, True, None),
    ],
    ids=[
        "create-matching",
        "create-other",
        "delete-matching",
        "delete-other",
        "labelled",
        "unlabelled",
        "still-matching",
        "still-other",
        "operator-namespace",
        "operator-namespace-created",
    ],
)
def test_namespace_flip_direction(
    event_type: str,
    old_matches: bool | None,
    new_matches: bool | None,
    always: bool,
    expected: FlipDirectionName | None,
) -> None:
    assert (
        namespace_flip_direction(
            event_type, old_matches=old_matches, new_matches=new_matches, always_managed=always
        )
        == expected
    )


@pytest.mark.parametrize(
    ("selector", "name", "old", "new", "expected"),
    [
        ("eck-visible=true", "team", {}, {"eck-visible": "true"}, INTO),
        ("eck-visible=true", "team", {"eck-visible": "true"}, {}, OUT),
        (
            "eck-visible=true",
            "team",
            {"eck-visible": "true"},
            {"eck-visible": "true", "x": "y"},
            None,
        ),
        ("eck-visible=true", "team", {}, {"other": "label"}, None),
        ("!frozen", "team", {}, {"frozen": ""}, OUT),
        # The operator namespace is always managed, whatever its labels say.
        ("eck-visible=true", "ops", {}, {"eck-visible": "true"}, None),
    ],
)
def test_a_label_change_flips_through_the_matcher(
    selector: str,
    name: str,
    old: dict[str, str],
    new: dict[str, str],
    expected: FlipDirectionName | None,
) -> None:
    matcher = _matcher(selector)
    direction = namespace_flip_direction(
        "MODIFIED",
        old_matches=matcher.labels_match(old),
        new_matches=matcher.labels_match(new),
        always_managed=matcher.is_always_managed(name),
    )
    assert direction is expected
