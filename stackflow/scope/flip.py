"""The flip rule: when a Namespace event means a namespace entered or left the operator's scope.

Mirrors ECK's ``WatchNamespaceScopeChange``: a Namespace create, delete or generic event passes
only if the namespace currently matches; an update passes only when the match result before and
after differ. Nothing flips when dynamic mode is off.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from stackflow.scope.matcher import NamespaceMatcher


class FlipDirection(StrEnum):
    """Which way a namespace crossed the scope boundary."""

    INTO_SCOPE = "IntoScope"
    OUT_OF_SCOPE = "OutOfScope"


def update_passes(old_matches: bool, new_matches: bool) -> bool:
    """Whether a Namespace update is a flip: only when the match result changed."""
    return old_matches != new_matches


def create_or_delete_passes(matches: bool) -> bool:
    """Whether a Namespace create, delete or generic event passes: only if it matches now."""
    return matches


def flip_direction(old_matches: bool, new_matches: bool) -> FlipDirection | None:
    """The direction of the flip between two match results, or None when nothing crossed."""
    if not update_passes(old_matches, new_matches):
        return None
    return FlipDirection.INTO_SCOPE if new_matches else FlipDirection.OUT_OF_SCOPE


def namespace_flip(
    *,
    old_labels: Mapping[str, str],
    new_labels: Mapping[str, str],
    matcher: NamespaceMatcher,
    name: str | None = None,
) -> FlipDirection | None:
    """The flip caused by a Namespace's labels changing from `old_labels` to `new_labels`.

    None when dynamic mode is off, when `name` is always managed (``""`` or the operator
    namespace), or when both label sets give the same answer.
    """
    if not matcher.enabled:
        return None
    if name is not None and matcher.is_always_managed(name):
        return None
    return flip_direction(matcher.labels_match(old_labels), matcher.labels_match(new_labels))
