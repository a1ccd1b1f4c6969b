"""Server-side apply, minimal but honest (reference §4.6).

The applied configuration is merged into the live object: maps merge, lists are atomic except the
merge-keyed lists of :func:`kubesim.patch_keys.list_strategy` (or a caller's schema-derived keys),
which merge element by element. Fields this manager applied last time (``previous``) but no
longer applies are removed. There is no per-field ownership across managers: a field another
manager also set is still removed when this manager drops it, and conflicts are never reported
(``force`` is implied).
"""

from __future__ import annotations

import copy
from typing import Any

from kubesim.patch_keys import (
    FieldPath,
    ListKeysLookup,
    ListStrategy,
    item_identity,
    list_strategy,
    order_merged,
)


def apply_server_side(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    previous: dict[str, Any] | None,
    kind: str | None = None,
    list_keys: ListKeysLookup | None = None,
) -> dict[str, Any]:
    """The object after ``applied`` is server-side applied; ``live`` None creates it.

    ``previous`` is this manager's last applied configuration (None on its first apply).
    ``kind`` selects the built-in list keys (default: the ``kind`` field of ``applied`` / ``live``).
    ``list_keys`` may override the built-in list strategies, e.g. from a CRD schema's
    ``x-kubernetes-list-type: map`` / ``x-kubernetes-list-map-keys``. ``null`` in the applied
    configuration removes the field.
    """
    if live is None:
        created: dict[str, Any] = _without_nulls(applied)
        return created
    object_kind = kind or str(applied.get("kind") or live.get("kind") or "")
    merger = _ApplyMerge(object_kind, list_keys)
    return merger.merge_map(copy.deepcopy(live), applied, previous or {}, ())


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


class _ApplyMerge:
    """One apply: ``kind`` and the optional key lookup select the list strategies."""

    def __init__(self, kind: str, list_keys: ListKeysLookup | None) -> None:
        self._kind = kind
        self._list_keys = list_keys

    def _strategy(self, path: FieldPath) -> ListStrategy:
        if self._list_keys is not None:
            override = self._list_keys(path)
            if override is not None:
                return override
        return list_strategy(self._kind, path)

    def merge_map(
        self,
        live: dict[str, Any],
        applied: dict[str, Any],
        previous: dict[str, Any],
        path: FieldPath,
    ) -> dict[str, Any]:
        """Merge ``applied`` into ``live`` (owned, mutated), dropping fields ``previous`` had."""
        for key in previous:
            if key not in applied:
                live.pop(key, None)
        for key, value in applied.items():
            current = live.get(key)
            before = previous.get(key)
            field_path = (*path, key)
            if value is None:
                live.pop(key, None)
            elif isinstance(value, dict) and isinstance(current, dict):
                live[key] = self.merge_map(
                    current, value, before if isinstance(before, dict) else {}, field_path
                )
            elif isinstance(value, list) and isinstance(current, list):
                live[key] = self.merge_list(
                    current, value, before if isinstance(before, list) else [], field_path
                )
            else:
                live[key] = _without_nulls(value)
        return live

    def merge_list(
        self, live: list[Any], applied: list[Any], previous: list[Any], path: FieldPath
    ) -> list[Any]:
        """Atomic lists are replaced; keyed lists and sets keep items other writers added."""
        strategy = self._strategy(path)
        if strategy.atomic:
            replaced: list[Any] = _without_nulls(applied)
            return replaced
        keys = strategy.merge_keys
        applied_by_id = {item_identity(item, keys): item for item in applied}
        previous_by_id = {item_identity(item, keys): item for item in previous}
        merged: list[Any] = []
        seen: set[str] = set()
        for item in live:
            identity = item_identity(item, keys)
            if identity in applied_by_id:
                seen.add(identity)
                wanted = applied_by_id[identity]
                if keys and isinstance(item, dict) and isinstance(wanted, dict):
                    before = previous_by_id.get(identity)
                    merged.append(
                        self.merge_map(
                            item, wanted, before if isinstance(before, dict) else {}, path
                        )
                    )
                else:
                    merged.append(_without_nulls(wanted))
            elif identity not in previous_by_id:
                # Added by someone else (a controller, another manager): not ours to remove.
                merged.append(item)
        for identity, item in applied_by_id.items():
            if identity not in seen:
                merged.append(_without_nulls(item))
        return order_merged(merged, patch_order=applied, server_order=live, merge_keys=keys)
