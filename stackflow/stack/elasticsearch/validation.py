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
from stackflow.stack.elasticsearch.orchestration.downscale import MASTER_REQUIRED_MESSAGE
from stackflow.stack.elasticsearch.orchestration.versions import (
    FieldProblem,
    downgrade_refusal,
    upgrade_path_refusal,
)
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
    first Pod), which the webhook and the reconcile both read on the object: Elasticsearch cannot
    read data written by a newer version. ECK's annotation lifts the rule. A version that does not
    parse is the version check's business. Versions compare as ECK's: a pre-release comes before
    its release.
    """
    if running is None:
        return None
    try:
        parse_version(proposed), parse_version(running)
    except ValueError:
        return None
    return _field_error(
        downgrade_refusal(current=running, proposed=proposed, downgrades_allowed=downgrades_allowed)
    )


def _field_error(problem: FieldProblem | None) -> FieldError | None:
    """A refused field as ``(path, ECK's message)``; the webhook renders the value Kubernetes'
    way (``Invalid value: "8.15.0": ...``)."""
    if problem is None:
        return None
    return (problem.path, problem.message)


def upgrade_path_problem(*, proposed: str, running: str | None) -> FieldError | None:
    """ECK's ``validUpgradePath`` against the running version (``status.version``): 8.x only from
    7.17, 9.x only from 8.18. None before the first Pod or when a version does not parse."""
    if running is None:
        return None
    try:
        parse_version(proposed), parse_version(running)
    except ValueError:
        return None
    return _field_error(
        upgrade_path_refusal(current_spec=proposed, current_status=running, proposed=proposed)
    )


def _validate_no_downgrade(es: Mapping[str, Any]) -> list[FieldError]:
    running = (es.get("status") or {}).get("version")
    allowed = view(es).annotations.get(DISABLE_DOWNGRADE_VALIDATION_ANNOTATION) == "true"
    proposed = str((es.get("spec") or {}).get("version") or "")
    running_version = str(running) if running else None
    problem = downgrade_problem(
        proposed=proposed, running=running_version, downgrades_allowed=allowed
    ) or upgrade_path_problem(proposed=proposed, running=running_version)
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
    masters = sum(
        node_set.get("count", 0)
        for node_set in node_sets
        if isinstance(node_set.get("count", 0), int)
        and isinstance(node_set.get("config") or {}, Mapping)
        and is_master_eligible(node_set.get("config"))
    )
    if node_sets and masters <= 0:
        errors.append(("spec.nodeSets", MASTER_REQUIRED_MESSAGE))
    return errors
