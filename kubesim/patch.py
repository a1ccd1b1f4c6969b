"""The patch engines of PATCH (reference §4.6): JSON patch (RFC 6902) and JSON merge patch
(RFC 7386) here; strategic merge patch in :mod:`kubesim.patch_strategic` and server-side apply in
:mod:`kubesim.patch_apply`, re-exported. All functions are pure: inputs are never modified.

JSON patch failures use the messages of ``gopkg.in/evanphx/json-patch.v4`` that the API server
embeds in its 422 answer; a body that is not an array is the 400 ``error decoding patch: …``.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesim.patch_apply import apply_server_side
from kubesim.patch_keys import ListStrategy, PatchError, go_json_type, list_strategy
from kubesim.patch_strategic import apply_strategic_merge_patch

__all__ = [
    "ListStrategy",
    "PatchError",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_server_side",
    "apply_strategic_merge_patch",
    "list_strategy",
]

_MISSING = object()


def json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and bool(left == right)


def _split_pointer(pointer: str) -> list[str] | None:
    """RFC 6901 tokens of a JSON pointer (``~1`` → ``/``, ``~0`` → ``~``); None if malformed."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        return None
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _list_index(token: str, length: int, *, allow_end: bool) -> int | None:
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        return None
    index = int(token)
    return index if index < length or (allow_end and index == length) else None


def _resolve(doc: Any, tokens: list[str]) -> Any:
    """The value at ``tokens``, or ``_MISSING``."""
    current = doc
    for token in tokens:
        if isinstance(current, dict):
            current = current.get(token, _MISSING)
        elif isinstance(current, list):
            index = _list_index(token, len(current), allow_end=False)
            current = _MISSING if index is None else current[index]
        else:
            return _MISSING
        if current is _MISSING:
            return _MISSING
    return current


class _JsonPatch:
    """Applies operations to ``doc`` (a private copy) one at a time."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc

    def _parent(self, operation: str, path: str) -> tuple[Any, str]:
        tokens = _split_pointer(path)
        parent = _MISSING if tokens is None or not tokens else _resolve(self.doc, tokens[:-1])
        if tokens is None or not isinstance(parent, (dict, list)):
            raise PatchError(
                f'{operation} operation does not apply: doc is missing path: "{path}": missing value',
                invalid=True,
            )
        return parent, tokens[-1]

    def add(self, path: str, value: Any) -> None:
        if path == "":
            self.doc = value
            return
        parent, token = self._parent("add", path)
        if isinstance(parent, dict):
            parent[token] = value
            return
        index = len(parent) if token == "-" else _list_index(token, len(parent), allow_end=True)
        if index is None:
            raise PatchError(
                f"error in add for path: '{path}': Unable to access invalid index: {token}: "
                "invalid index referenced",
                invalid=True,
            )
        parent.insert(index, value)

    def remove(self, path: str) -> Any:
        parent, token = self._parent("remove", path) if path else (None, "")
        if parent is None:
            raise PatchError(
                f'remove operation does not apply: doc is missing path: "{path}": missing value',
                invalid=True,
            )
        if isinstance(parent, dict):
            if token not in parent:
                raise PatchError(
                    f"error in remove for path: '{path}': Unable to remove nonexistent key: "
                    f"{token}: missing value",
                    invalid=True,
                )
            return parent.pop(token)
        index = _list_index(token, len(parent), allow_end=False)
        if index is None:
            raise PatchError(
                f"error in remove for path: '{path}': Unable to access invalid index: {token}: "
                "invalid index referenced",
                invalid=True,
            )
        return parent.pop(index)

    def replace(self, path: str, value: Any) -> None:
        if path == "":
            self.doc = value
            return
        parent, token = self._parent("replace", path)
        if isinstance(parent, dict):
            if token not in parent:
                raise PatchError(
                    f"replace operation does not apply: doc is missing key: {path}: missing value",
                    invalid=True,
                )
            parent[token] = value
            return
        index = _list_index(token, len(parent), allow_end=False)
        if index is None:
            raise PatchError(
                f"error in replace for path: '{path}': Unable to access invalid index: {token}: "
                "invalid index referenced",
                invalid=True,
            )
        parent[index] = value

    def value_at(self, operation: str, path: str) -> Any:
        tokens = _split_pointer(path)
        value = _MISSING if tokens is None else _resolve(self.doc, tokens)
        if value is _MISSING:
            raise PatchError(
                f"{operation} operation does not apply: doc is missing from path: {path}: "
                "missing value",
                invalid=True,
            )
        return value

    def apply(self, operation: dict[str, Any]) -> None:
        kind = operation.get("op")
        path = str(operation.get("path", ""))
        value = copy.deepcopy(operation.get("value"))
        source = str(operation.get("from", ""))
        if kind == "add":
            self.add(path, value)
        elif kind == "remove":
            self.remove(path)
        elif kind == "replace":
            self.replace(path, value)
        elif kind == "move":
            moved = self.value_at("move", source)
            if path.startswith(source + "/"):
                raise PatchError(
                    f"move operation does not apply: {path} is a child of {source}", invalid=True
                )
            self.remove(source)
            self.add(path, moved)
        elif kind == "copy":
            self.add(path, copy.deepcopy(self.value_at("copy", source)))
        elif kind == "test":
            tokens = _split_pointer(path)
            actual = _MISSING if tokens is None else _resolve(self.doc, tokens)
            expected = operation.get("value")
            if actual is _MISSING and expected is None:
                return
            if actual is _MISSING or not json_equal(actual, expected):
                raise PatchError(f"testing value {path} failed: test failed", invalid=True)
        else:
            raise PatchError(f"Unexpected kind: {kind}", invalid=True)


def apply_json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch (list of operations) to ``doc`` (not modified).

    Raises :class:`PatchError` with ``invalid=False`` when ``ops`` is not a JSON array of
    objects (400) and ``invalid=True`` when an operation fails (422).
    """
    if ops is None:
        return copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise PatchError(
            f"error decoding patch: json: cannot unmarshal {go_json_type(ops)} into Go value of type "
            "[]handlers.jsonPatchOp",
            invalid=False,
        )
    for operation in ops:
        if not isinstance(operation, dict):
            raise PatchError(
                f"error decoding patch: json: cannot unmarshal {go_json_type(operation)} into Go "
                "value of type handlers.jsonPatchOp",
                invalid=False,
            )
    patcher = _JsonPatch(copy.deepcopy(doc))
    for operation in ops:
        patcher.apply(operation)
    return patcher.doc


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch: objects merge recursively, ``null`` deletes,
    everything else (arrays included) replaces. ``doc`` is not modified."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    _merge_into(merged, patch)
    return merged


def _merge_into(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """Merge ``patch`` into ``target``, which the caller owns."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            nested = current if isinstance(current, dict) else {}
            _merge_into(nested, value)
            target[key] = nested
        else:
            target[key] = copy.deepcopy(value)
