"""What the patch engines share: :class:`PatchError`, the hard-coded list merge strategies of the
built-in kinds (reference §4.6 "merge keys worth hard-coding") and the element-order rules of
apimachinery's strategic merge patch."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class PatchError(Exception):
    """A patch that cannot be applied.

    ``invalid`` True → 422 Invalid (the patch decoded but an operation failed), False → 400
    BadRequest (the body is not a patch of this type). ``message`` is the complete client-facing text.
    """

    def __init__(self, message: str, *, invalid: bool) -> None:
        super().__init__(message)
        self.message = message
        self.invalid = invalid


def go_json_type(value: Any) -> str:
    """The JSON type name Go's encoding/json prints in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


@dataclass(frozen=True)
class ListStrategy:
    """How a list field merges: by ``merge_keys`` (list of maps), as a set (``union``), or replaced."""

    merge_keys: tuple[str, ...] = ()
    union: bool = False

    @property
    def atomic(self) -> bool:
        """True when the patch's list replaces the live list wholesale."""
        return not self.merge_keys and not self.union


REPLACE = ListStrategy()
_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})
_CONTAINER_CHILD_KEYS = {
    "env": ("name",),
    "ports": ("containerPort",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
}

#: A field path from the object root with list positions left out, e.g.
#: ``("spec", "template", "spec", "containers", "env")``.
FieldPath = tuple[str, ...]
#: Overrides the built-in table, e.g. from a CRD's ``x-kubernetes-list-map-keys``; None = no opinion.
ListKeysLookup = Callable[[FieldPath], ListStrategy | None]


def list_strategy(kind: str, path: FieldPath) -> ListStrategy:
    """The merge strategy of the list at ``path`` in an object of ``kind``.

    Keys apply wherever the field appears in a pod spec (Pods, pod templates of workloads);
    everything not listed (tolerations, args, command, volumeClaimTemplates, …) is replaced.
    """
    if not path:
        return REPLACE
    name = path[-1]
    parent = path[-2] if len(path) >= 2 else ""
    if name in _CONTAINER_LISTS:
        return ListStrategy(("name",))
    if parent in _CONTAINER_LISTS and name in _CONTAINER_CHILD_KEYS:
        return ListStrategy(_CONTAINER_CHILD_KEYS[name])
    if kind == "Service" and path == ("spec", "ports"):
        return ListStrategy(("port",))
    if name in ("volumes", "imagePullSecrets") and parent == "spec":
        return ListStrategy(("name",))
    if name == "conditions" and parent == "status":
        return ListStrategy(("type",))
    if name == "ownerReferences" and parent == "metadata":
        return ListStrategy(("uid",))
    if name == "finalizers" and parent == "metadata":
        return ListStrategy(union=True)
    return REPLACE


def item_identity(item: Any, merge_keys: Sequence[str]) -> str:
    """A hashable identity of a list element: its merge-key values, or the scalar itself."""
    if merge_keys:
        if not isinstance(item, dict):
            return json.dumps(item, sort_keys=True)
        return json.dumps([item.get(key) for key in merge_keys])
    return json.dumps(item, sort_keys=True)


def order_merged(
    merged: list[Any],
    *,
    patch_order: Sequence[Any],
    server_order: Sequence[Any],
    merge_keys: Sequence[str],
) -> list[Any]:
    """strategicpatch.normalizeElementOrder: patch items in patch order, server-only items in
    live order, interleaved where the live order relates them."""
    patch_ids = [item_identity(item, merge_keys) for item in patch_order]
    server_ids = [item_identity(item, merge_keys) for item in server_order]
    patch_position = {identity: index for index, identity in reversed(list(enumerate(patch_ids)))}
    server_position = {identity: index for index, identity in reversed(list(enumerate(server_ids)))}
    unknown = len(merged) + len(patch_ids) + len(server_ids)
    patch_items = [item for item in merged if item_identity(item, merge_keys) in patch_position]
    server_only = [item for item in merged if item_identity(item, merge_keys) not in patch_position]
    patch_items.sort(key=lambda item: patch_position[item_identity(item, merge_keys)])
    server_only.sort(key=lambda item: server_position.get(item_identity(item, merge_keys), unknown))
    return _merge_sorted(server_only, patch_items, server_position, merge_keys)


def _merge_sorted(
    left: list[Any], right: list[Any], server_position: dict[str, int], merge_keys: Sequence[str]
) -> list[Any]:
    """strategicpatch.mergeSortedSlice: take a server-only item first only when the live order
    puts it before the next patch item."""
    result: list[Any] = []
    left_index = right_index = 0
    while left_index < len(left) or right_index < len(right):
        if right_index >= len(right):
            result.append(left[left_index])
            left_index += 1
            continue
        if left_index >= len(left):
            result.append(right[right_index])
            right_index += 1
            continue
        left_at = server_position.get(item_identity(left[left_index], merge_keys))
        right_at = server_position.get(item_identity(right[right_index], merge_keys))
        if left_at is not None and right_at is not None and left_at < right_at:
            result.append(left[left_index])
            left_index += 1
        else:
            result.append(right[right_index])
            right_index += 1
    return result
