"""The flip rule: when a Namespace event means a namespace entered or left the operator's scope.

Mirrors ECK's ``WatchNamespaceScopeChange``: a Namespace create passes only if the namespace
matches now (it enters scope), a delete only if it matched (it leaves scope), an update only when
the match result before and after differ. An always-managed namespace (the operator namespace)
never flips, and nothing flips when dynamic mode is off (the caller does not ask then).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from stackflow.models.engine import FlipDirectionName
from stackflow.scope.matcher import NamespaceMatcher

__all__ = ["SelectorFlip", "namespace_flip_direction", "selector_change_flips"]


class SelectorFlip(NamedTuple):
    """A namespace whose verdict a selector change turned: its name, resourceVersion, way."""

    namespace: str
    resource_version: str
    direction: FlipDirectionName


def namespace_flip_direction(
    event_type: str,
    *,
    old_matches: bool | None,
    new_matches: bool | None,
    always_managed: bool,
) -> FlipDirectionName | None:
    """ECK's flip rule on one Namespace event, given the matcher's answers before and after.

    ``old_matches``/``new_matches`` are None for the missing side of a create or delete.
    """
    if always_managed:
        return None
    if event_type == "ADDED":
        return FlipDirectionName.INTO_SCOPE if new_matches else None
    if event_type == "DELETED":
        return FlipDirectionName.OUT_OF_SCOPE if old_matches else None
    if event_type != "MODIFIED" or old_matches is None or new_matches is None:
        return None
    if old_matches == new_matches:
        return None
    return FlipDirectionName.INTO_SCOPE if new_matches else FlipDirectionName.OUT_OF_SCOPE


def selector_change_flips(
    namespaces: Iterable[Mapping[str, object]],
    *,
    before: NamespaceMatcher,
    after: NamespaceMatcher,
) -> list[SelectorFlip]:
    """The flips a change of the selector itself causes, sorted by namespace (pure).

    The same rule as a Namespace update, with the matcher changing instead of the labels: each
    known Namespace whose verdict differs between ``before`` and ``after`` flips.
    """
    flips: list[SelectorFlip] = []
    for namespace in namespaces:
        metadata = namespace.get("metadata")
        if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
            continue
        name = str(metadata["name"])
        direction = namespace_flip_direction(
            "MODIFIED",
            old_matches=before.namespace_matches(namespace),
            new_matches=after.namespace_matches(namespace),
            always_managed=after.is_always_managed(name),
        )
        if direction is not None:
            flips.append(SelectorFlip(name, str(metadata.get("resourceVersion") or ""), direction))
    return sorted(flips)
