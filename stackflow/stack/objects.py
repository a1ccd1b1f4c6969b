"""Small helpers for building Kubernetes manifests as plain dicts (pure, no I/O)."""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from typing import Any

from stackflow.stack.labels import soft_owner_labels

Manifest = dict[str, Any]
"""A Kubernetes object as the JSON the API server speaks."""


def controller_owner_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    """Return an ownerReference making ``owner`` the controller of a child (blocks owner deletion)."""
    metadata = owner.get("metadata", {})
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": metadata["name"],
        "uid": metadata.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_metadata(
    owner: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    owner_kind: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
    soft_owned: bool = False,
) -> dict[str, Any]:
    """Return the metadata of ``owner``'s child ``name``: ``labels`` and annotations sorted, the owner.

    A hard-owned child gets a controller reference to ``owner``; a soft-owned one (which must
    survive its owner's deletion, like a public certificate) gets the soft-owner labels instead.
    """
    merged_labels = dict(labels)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if soft_owned:
        owner_name = str(owner["metadata"]["name"])
        merged_labels.update(
            soft_owner_labels(namespace=namespace, name=owner_name, kind=owner_kind)
        )
    else:
        metadata["ownerReferences"] = [controller_owner_reference(owner)]
    metadata["labels"] = dict(sorted(merged_labels.items()))
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return metadata


def opaque_secret(metadata: Mapping[str, Any], data: Mapping[str, str]) -> Manifest:
    """Return an Opaque Secret with base64 ``data`` (already encoded), keys sorted."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": dict(metadata),
        "type": "Opaque",
        "data": dict(sorted(data.items())),
    }


def encode_secret_data(data: Mapping[str, bytes | str]) -> dict[str, str]:
    """Return Secret ``data`` (base64 strings) for raw values, keys sorted for stable output."""
    return {
        key: base64.b64encode(value.encode() if isinstance(value, str) else value).decode()
        for key, value in sorted(data.items())
    }


def decode_secret_data(secret: Mapping[str, Any] | None) -> dict[str, bytes]:
    """Return a Secret's values as bytes (``data`` is base64, ``stringData`` plain); empty for None."""
    if not secret:
        return {}
    decoded: dict[str, bytes] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            decoded[key] = base64.b64decode(value or "", validate=True)
        except ValueError:
            continue
    for key, value in (secret.get("stringData") or {}).items():
        decoded[key] = str(value).encode()
    return decoded


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``override`` merged in recursively; override wins, lists are replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def merge_named_lists(
    defaults: list[dict[str, Any]], overrides: list[dict[str, Any]], *, key: str = "name"
) -> list[dict[str, Any]]:
    """Merge two lists of named items: same-named items deep-merge (override wins), others append.

    Defaults keep their position; user-only items follow in the user's order, which keeps the
    result stable from one build to the next.
    """
    by_key = {item.get(key): item for item in overrides}
    merged = [
        deep_merge(item, by_key[item.get(key)]) if item.get(key) in by_key else copy.deepcopy(item)
        for item in defaults
    ]
    default_keys = {item.get(key) for item in defaults}
    merged += [copy.deepcopy(item) for item in overrides if item.get(key) not in default_keys]
    return merged
