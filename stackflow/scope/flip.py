"""The flip rule: when a Namespace event means a namespace entered or left the operator's scope.

Mirrors ECK's ``WatchNamespaceScopeChange``: a Namespace create passes only if the namespace
matches now (it enters scope), a delete only if it matched (it leaves scope), an update only when
the match result before and after differ. An always-managed namespace (the operator namespace)
never flips, and nothing flips when dynamic mode is off (the caller does not ask then).
"""

from __future__ import annotations

from stackflow.models.engine import FlipDirectionName

__all__ = ["namespace_flip_direction"]


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
