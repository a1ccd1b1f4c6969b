"""Config files as layered settings: flatten, merge (later layers win), render as YAML.

Layers are merged in their dotted ("canonical") form as ECK's ucfg does, so ``a: {b: 1}`` and
``a.b: 2`` name the same setting and the later layer wins whichever spelling each one uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from stackflow.models.documents import load_bounded_yaml
from stackflow.stack.objects import decode_secret_data

Settings = dict[str, Any]


def flatten(config: Mapping[str, Any], prefix: str = "") -> Settings:
    """Return ``config`` with nested maps flattened to dotted keys (``a: {b: 1}`` → ``a.b: 1``)."""
    flat: Settings = {}
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def merge_layers(*layers: Mapping[str, Any] | None) -> Settings:
    """Merge config layers, later ones winning; a setting replaces any setting nested under it."""
    merged: Settings = {}
    for layer in layers:
        for key, value in flatten(layer or {}).items():
            for existing in [
                k for k in merged if k.startswith(f"{key}.") or key.startswith(f"{k}.")
            ]:
                del merged[existing]
            merged[key] = value
    return merged


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Return dotted settings as nested maps."""
    nested: dict[str, Any] = {}
    for key in sorted(flat):
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = flat[key]
    return nested


def render_yaml(flat: Mapping[str, Any]) -> str:
    """Render settings as a YAML document with sorted keys (stable bytes for stable hashes)."""
    if not flat:
        return ""
    return yaml.safe_dump(unflatten(flat), sort_keys=True, default_flow_style=False)


def parse_yaml_settings(text: bytes | str | None) -> Settings:
    """Return the flattened settings of a YAML config file; empty when missing, not a map, or
    refused (invalid YAML, anchors, nesting too deep: see `read_yaml_settings`)."""
    try:
        return read_yaml_settings(text, source="")
    except ValueError:
        return {}


def read_yaml_settings(text: bytes | str | None, *, source: str) -> Settings:
    """Return the flattened settings of a YAML config file (empty when missing or not a map).

    Raises ValueError naming ``source`` for YAML that does not parse or that the document bounds
    refuse (anchors and aliases, which expand without limit once flattened; nesting too deep).
    """
    if not text:
        return {}
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    try:
        parsed = load_bounded_yaml(text)
    except yaml.YAMLError as error:
        problem = " ".join(str(error).split())
        raise ValueError(f"{source}: not usable YAML: {problem}") from None
    return flatten(parsed) if isinstance(parsed, Mapping) else {}


def secret_file_settings(secret: Mapping[str, Any] | None, file_name: str) -> Settings:
    """Return the flattened settings stored in ``file_name`` of a Secret (empty when absent)."""
    return parse_yaml_settings(decode_secret_data(secret).get(file_name))
