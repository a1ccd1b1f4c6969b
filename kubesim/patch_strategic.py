"""Strategic merge patch (``application/strategic-merge-patch+json``), following apimachinery's
``strategicpatch.StrategicMergeMapPatch`` with the merge keys of :mod:`kubesim.patch_keys`.

A merge patch in which lists that carry a merge key merge element by element, plus the directives
``$patch`` (``replace`` / ``delete`` / ``merge`` on maps and list elements), ``$retainKeys``,
``$setElementOrder/<field>`` and ``$deleteFromPrimitiveList/<field>``. Directive keys are consumed,
never stored, and ``null`` values that delete nothing are dropped.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kubesim.patch_keys import (
    FieldPath,
    PatchError,
    go_json_type,
    item_identity,
    list_strategy,
    order_merged,
)

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER_PREFIX = "$setElementOrder/"
_DELETE_PRIMITIVES_PREFIX = "$deleteFromPrimitiveList/"


def apply_strategic_merge_patch(doc: Any, patch: Any, *, kind: str) -> Any:
    """Apply a strategic merge patch to ``doc`` (not modified) for an object of ``kind``."""
    if not isinstance(patch, dict):
        raise PatchError(
            f"json: cannot unmarshal {go_json_type(patch)} into Go value of type map[string]interface {{}}",
            invalid=False,
        )
    original = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    return _StrategicMerge(kind).merge_map(original, patch, ())


class _StrategicMerge:
    """One patch application; ``kind`` selects the list strategies."""

    def __init__(self, kind: str) -> None:
        self._kind = kind

    def merge_map(self, original: dict[str, Any], patch: dict[str, Any], path: FieldPath) -> Any:
        """Merge ``patch`` into ``original`` (owned, mutated) and return the result."""
        directive = patch.get(_DIRECTIVE)
        if directive == "replace":
            return self.fresh({k: v for k, v in patch.items() if k != _DIRECTIVE}, path)
        if directive == "delete":
            return {}
        if directive not in (None, "merge"):
            raise PatchError(
                f"Unknown patch type: {directive} in map: {json.dumps(patch)}", invalid=False
            )
        if _RETAIN_KEYS in patch:
            original = self._retain_keys(original, patch)
        handled = {_DIRECTIVE, _RETAIN_KEYS}
        for key, value in patch.items():
            if key.startswith(_DELETE_PRIMITIVES_PREFIX):
                handled.add(key)
                field = key[len(_DELETE_PRIMITIVES_PREFIX) :]
                if not isinstance(value, list):
                    raise PatchError(
                        "invalid patch: $deleteFromPrimitiveList must be a list", invalid=False
                    )
                if isinstance(original.get(field), list):
                    original[field] = [item for item in original[field] if item not in value]
        for key, value in patch.items():
            if key.startswith(_SET_ORDER_PREFIX):
                field = key[len(_SET_ORDER_PREFIX) :]
                handled.update((key, field))
                self._merge_ordered_field(original, patch, field=field, order=value, path=path)
        for key, value in patch.items():
            if key in handled or key.startswith("$"):
                continue
            field_path = (*path, key)
            current = original.get(key)
            if value is None:
                original.pop(key, None)
            elif isinstance(current, dict) and isinstance(value, dict):
                original[key] = self.merge_map(current, value, field_path)
            elif isinstance(current, list) and isinstance(value, list):
                original[key] = self.merge_list(current, value, field_path)
            else:
                original[key] = self.fresh(value, field_path)
        return original

    def fresh(self, value: Any, path: FieldPath) -> Any:
        """A patch value landing where nothing was: a copy with directives and nulls removed."""
        if isinstance(value, dict):
            return self.merge_map({}, value, path)
        if isinstance(value, list):
            return self.merge_list([], value, path)
        return copy.deepcopy(value)

    def merge_list(
        self,
        original: list[Any],
        patch: list[Any],
        path: FieldPath,
        *,
        order: list[Any] | None = None,
    ) -> list[Any]:
        """Merge a patch list into the live list according to the field's strategy."""
        strategy = list_strategy(self._kind, path)
        keys = strategy.merge_keys
        plain_items: list[Any] = []
        replace = False
        for item in patch:
            directive = item.get(_DIRECTIVE) if isinstance(item, dict) else None
            if directive is None:
                plain_items.append(item)
            elif directive == "replace":
                replace = True
            elif directive == "delete":
                # Without a merge key there is nothing to match: the element just goes away.
                if keys:
                    self._require_keys(item, keys)
                    doomed = item_identity(item, keys)
                    original = [e for e in original if item_identity(e, keys) != doomed]
            elif directive != "merge":
                raise PatchError(
                    f"Unknown patch type: {directive} in map: {json.dumps(item)}", invalid=False
                )
        if replace or strategy.atomic:
            return [self.fresh(item, path) for item in plain_items]
        merged = list(original)
        if strategy.union:
            for item in plain_items:
                if item not in merged:
                    merged.append(copy.deepcopy(item))
        else:
            positions = {item_identity(entry, keys): index for index, entry in enumerate(merged)}
            for item in plain_items:
                self._require_keys(item, keys)
                identity = item_identity(item, keys)
                if identity in positions:
                    current = merged[positions[identity]]
                    merged[positions[identity]] = self.merge_map(
                        current if isinstance(current, dict) else {}, item, path
                    )
                else:
                    positions[identity] = len(merged)
                    merged.append(self.fresh(item, path))
        return order_merged(
            merged,
            patch_order=plain_items if order is None else order,
            server_order=original,
            merge_keys=keys,
        )

    def _merge_ordered_field(
        self,
        original: dict[str, Any],
        patch: dict[str, Any],
        *,
        field: str,
        order: Any,
        path: FieldPath,
    ) -> None:
        """The list ``field`` merged with its ``$setElementOrder`` list deciding the order."""
        if not isinstance(order, list):
            raise PatchError("invalid patch: $setElementOrder list must be a list", invalid=False)
        live = original.get(field)
        patch_list = patch.get(field)
        if live is None and patch_list is None:
            return
        if patch_list is None:
            if list_strategy(self._kind, (*path, field)).atomic:
                return
            # Only a re-ordering: merge an empty patch list under the given order.
            patch_list = []
        elif not isinstance(patch_list, list):
            original[field] = self.fresh(patch_list, (*path, field))
            return
        original[field] = self.merge_list(
            live if isinstance(live, list) else [], patch_list, (*path, field), order=order
        )

    @staticmethod
    def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """``$retainKeys``: drop every live key the list does not name (e.g. a switched union)."""
        retained = patch[_RETAIN_KEYS]
        if not isinstance(retained, list):
            raise PatchError("invalid patch: $retainKeys must be a list", invalid=False)
        for key, value in patch.items():
            if not key.startswith("$") and value is not None and key not in retained:
                raise PatchError("patch content doesn't match retainKeys list", invalid=True)
        return {key: value for key, value in original.items() if key in retained}

    @staticmethod
    def _require_keys(item: Any, keys: tuple[str, ...]) -> None:
        if not isinstance(item, dict) or any(key not in item for key in keys):
            raise PatchError(
                f"map: {json.dumps(item)} does not contain declared merge key: {keys[0]}",
                invalid=True,
            )
