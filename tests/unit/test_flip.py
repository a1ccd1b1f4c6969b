"""The flip rule: which Namespace events mean a namespace entered or left the scope."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from stackflow.scope import (
    FlipDirection,
    NamespaceMatcher,
    ScopeConfig,
    create_or_delete_passes,
    flip_direction,
    namespace_flip,
    parse_selector_string,
    update_passes,
)


class _NoNamespaces:
    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return None

    def namespace_names(self) -> Iterable[str]:
        return []


def _matcher(selector: str | None) -> NamespaceMatcher:
    return NamespaceMatcher(
        ScopeConfig(
            operator_namespace="ops",
            namespace_selector=None if selector is None else parse_selector_string(selector),
        ),
        source=_NoNamespaces(),
    )


@pytest.mark.parametrize(
    ("old", "new", "passes", "direction"),
    [
        (False, False, False, None),
        (True, True, False, None),
        (False, True, True, FlipDirection.INTO_SCOPE),
        (True, False, True, FlipDirection.OUT_OF_SCOPE),
    ],
)
def test_update_passes_only_when_the_answer_changes(
    old: bool, new: bool, passes: bool, direction: FlipDirection | None
) -> None:
    assert update_passes(old, new) is passes
    assert flip_direction(old, new) is direction


@pytest.mark.parametrize("matches", [True, False])
def test_create_or_delete_passes_only_when_matching(matches: bool) -> None:
    assert create_or_delete_passes(matches) is matches


@pytest.mark.parametrize(
    ("selector", "name", "old", "new", "expected"),
    [
        ("eck-visible=true", "team", {}, {"eck-visible": "true"}, FlipDirection.INTO_SCOPE),
        ("eck-visible=true", "team", {"eck-visible": "true"}, {}, FlipDirection.OUT_OF_SCOPE),
        (
            "eck-visible=true",
            "team",
            {"eck-visible": "true"},
            {"eck-visible": "true", "x": "y"},
            None,
        ),
        ("eck-visible=true", "team", {}, {"other": "label"}, None),
        ("eck-visible=true", None, {}, {"eck-visible": "true"}, FlipDirection.INTO_SCOPE),
        ("!frozen", "team", {}, {"frozen": ""}, FlipDirection.OUT_OF_SCOPE),
        # The operator namespace is always managed, whatever its labels say.
        ("eck-visible=true", "ops", {}, {"eck-visible": "true"}, None),
        # Dynamic mode off: nothing ever flips.
        (None, "team", {}, {"eck-visible": "true"}, None),
        ("", "team", {}, {"eck-visible": "true"}, None),
    ],
)
def test_namespace_flip(
    selector: str | None,
    name: str | None,
    old: dict[str, str],
    new: dict[str, str],
    expected: FlipDirection | None,
) -> None:
    assert (
        namespace_flip(old_labels=old, new_labels=new, matcher=_matcher(selector), name=name)
        is expected
    )
