"""Pod-template pieces every workload builder shares: change hashes, env fields, container merging (pure)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from stackflow.stack.naming import fnv32a
from stackflow.stack.objects import deep_merge, merge_named_lists

_NAMED_LISTS = ("env", "volumeMounts", "ports")
"""Container fields that are lists of named items: the user's items merge into ours by name."""


def content_hash(value: object) -> str:
    """Return a stable FNV-32a hash of a JSON-able value (for change-detection labels)."""
    return str(fnv32a(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()))


def field_env(name: str, path: str) -> dict[str, Any]:
    """Return an env var read from the pod's own fields (downward API), e.g. ``spec.nodeName``."""
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def merge_container(default: dict[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """Merge the user's container over the default; env, mounts and ports merge by name.

    A named list that is empty on both sides is left out rather than written as ``[]``.
    """
    merged = deep_merge(default, {k: v for k, v in user.items() if k not in _NAMED_LISTS})
    for key in _NAMED_LISTS:
        items = merge_named_lists(default.get(key, []), list(user.get(key) or []))
        if items:
            merged[key] = items
    return merged


def merge_containers(
    default: dict[str, Any], user_containers: list[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Return the default container with the user's same-named one merged over it, then the user's others."""
    name = default["name"]
    main = merge_container(default, next((c for c in user_containers if c.get("name") == name), {}))
    return [main] + [copy.deepcopy(dict(c)) for c in user_containers if c.get("name") != name]
