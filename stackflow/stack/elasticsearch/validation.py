"""The essentials of ECK's Elasticsearch webhook validation, as a pure function.

Returns every problem as ``(field path, message)`` so a reconcile can report an ``InvalidSpec`` with
all of them at once instead of failing on the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.config import is_master_eligible
from stackflow.stack.elasticsearch.version import is_supported, parse_version
from stackflow.stack.naming import MAX_RESOURCE_NAME_LENGTH

FieldError = tuple[str, str]
NODE_SET_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9-]+$")
MAX_NODE_SET_NAME_LENGTH = 23
MAX_LABEL_VALUE_LENGTH = 63
#: ECK's escape hatch: ``"true"`` lets a version downgrade through, at the user's own risk.
DISABLE_DOWNGRADE_VALIDATION_ANNOTATION = "eck.k8s.elastic.co/disable-downgrade-validation"


def _validate_name(es: Mapping[str, Any]) -> list[FieldError]:
    name = view(es).name
    if len(name) > MAX_RESOURCE_NAME_LENGTH:
        return [
            (
                "metadata.name",
                f"name exceeds maximum allowed length of {MAX_RESOURCE_NAME_LENGTH}",
            )
        ]
    return []


def _validate_version(spec: Mapping[str, Any]) -> list[FieldError]:
    raw = spec.get("version")
    if not raw:
        return [("spec.version", "version is required")]
    try:
        version = parse_version(str(raw))
    except ValueError as error:
        return [("spec.version", str(error))]
    if not is_supported(version):
        return [("spec.version", f"unsupported version: {version} (supported: 7.17.0 to 9.x)")]
    return []


def downgrade_problem(
    *, proposed: str, running: str | None, downgrades_allowed: bool = False
) -> FieldError | None:
    """ECK's ``noDowngrades``: refuse a ``spec.version`` below the lowest running version (pure).

    ``running`` is ``status.version`` (the lowest version the cluster's Pods run; None before the
    first Pod). Elasticsearch cannot read data written by a newer version, so a downgrade is
    refused unless ECK's annotation allows it. A version that does not parse is not judged here:
    the version check reports it.
    """
    if running is None or downgrades_allowed:
        return None
    try:
        wanted, lowest = parse_version(proposed), parse_version(running)
    except ValueError:
        return None
    # Pre-release suffixes are not ordered: 9.1.0-SNAPSHOT is no downgrade from 9.1.0.
    if (wanted.major, wanted.minor, wanted.patch) >= (lowest.major, lowest.minor, lowest.patch):
        return None
    return ("spec.version", f"downgrade from {lowest} to {wanted} is not supported")


def _validate_no_downgrade(es: Mapping[str, Any]) -> list[FieldError]:
    running = (es.get("status") or {}).get("version")
    allowed = view(es).annotations.get(DISABLE_DOWNGRADE_VALIDATION_ANNOTATION) == "true"
    problem = downgrade_problem(
        proposed=str((es.get("spec") or {}).get("version") or ""),
        running=str(running) if running else None,
        downgrades_allowed=allowed,
    )
    return [problem] if problem is not None else []


def _validate_node_set(es_name: str, index: int, node_set: Mapping[str, Any]) -> list[FieldError]:
    path = f"spec.nodeSets[{index}]"
    errors: list[FieldError] = []
    name = str(node_set.get("name", ""))
    if not NODE_SET_NAME_PATTERN.match(name):
        errors.append((f"{path}.name", f"invalid node set name {name!r}: must match [a-zA-Z0-9-]+"))
    elif len(name) > MAX_NODE_SET_NAME_LENGTH:
        errors.append(
            (f"{path}.name", f"node set name exceeds maximum length of {MAX_NODE_SET_NAME_LENGTH}")
        )
    count = node_set.get("count", 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        errors.append((f"{path}.count", "count must be a non-negative integer"))
    elif name and count > 0:
        longest_pod = names.pod_name(es_name, name, count - 1)
        if len(longest_pod) > MAX_LABEL_VALUE_LENGTH:
            errors.append(
                (
                    f"{path}.name",
                    f"generated pod name {longest_pod!r} exceeds {MAX_LABEL_VALUE_LENGTH} characters",
                )
            )
    config = node_set.get("config")
    if config is not None and not isinstance(config, Mapping):
        errors.append((f"{path}.config", "config must be a map of settings"))
    return errors


def validate_elasticsearch(es: Mapping[str, Any]) -> list[FieldError]:
    """Return the spec's problems as ``(field, message)``; empty when the cluster is valid."""
    spec: Mapping[str, Any] = es.get("spec") or {}
    es_name = view(es).name
    errors = _validate_name(es) + _validate_version(spec) + _validate_no_downgrade(es)
    node_sets = spec.get("nodeSets") or []
    if not node_sets:
        errors.append(("spec.nodeSets", "at least one node set is required"))
    seen: set[str] = set()
    for index, node_set in enumerate(node_sets):
        errors += _validate_node_set(es_name, index, node_set)
        name = str(node_set.get("name", ""))
        if name in seen:
            errors.append((f"spec.nodeSets[{index}].name", f"duplicate node set name {name!r}"))
        seen.add(name)
    total = sum(
        node_set.get("count", 0)
        for node_set in node_sets
        if isinstance(node_set.get("count", 0), int)
    )
    masters = sum(
        node_set.get("count", 0)
        for node_set in node_sets
        if isinstance(node_set.get("count", 0), int)
        and isinstance(node_set.get("config") or {}, Mapping)
        and is_master_eligible(node_set.get("config"))
    )
    if total > 0 and masters <= 0:
        errors.append(("spec.nodeSets", "Elasticsearch needs at least one master-eligible node"))
    return errors
