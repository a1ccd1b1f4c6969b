"""The essentials of ECK's Elasticsearch webhook validation, as a pure function.

Returns every problem as ``(field path, message)`` so a reconcile can report an ``InvalidSpec`` with
all of them at once instead of failing on the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.config import DEFAULT_ROLES, flatten_config, is_master_eligible
from stackflow.stack.elasticsearch.orchestration.downscale import MASTER_REQUIRED_MESSAGE
from stackflow.stack.elasticsearch.orchestration.versions import (
    FieldProblem,
    downgrade_refusal,
    upgrade_path_refusal,
)
from stackflow.stack.naming import MAX_RESOURCE_NAME_LENGTH
from stackflow.stack.spec_shapes import (
    as_list,
    claim_templates_problems,
    config_size_problem,
    depth_problem,
    describe,
    not_a,
    pod_template_problems,
    quantity_problems,
)
from stackflow.stack.version import is_supported, parse_version

FieldError = tuple[str, str]
NODE_SET_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9-]+$")
MAX_NODE_SET_NAME_LENGTH = 23
MAX_LABEL_VALUE_LENGTH = 63
#: ECK's escape hatch: ``"true"`` lets a version downgrade through, at the user's own risk.
DISABLE_DOWNGRADE_VALIDATION_ANNOTATION = "eck.k8s.elastic.co/disable-downgrade-validation"
#: The node roles Elasticsearch knows: a node's default roles and ``voting_only`` (a stateful
#: cluster; ``search``/``index`` are serverless).
KNOWN_NODE_ROLES = DEFAULT_ROLES | {"voting_only"}
#: The most a Secret may hold: the API server refuses a larger one (``data: Too long``).
MAX_SECRET_BYTES = 1024 * 1024
#: Room kept free in a node set's transport certificates Secret: its CA certificate and slack.
TRANSPORT_SECRET_RESERVE_BYTES = 16 * 1024
#: One node's share of its node set's transport certificates Secret: a PEM certificate and PKCS#8
#: key (2048-bit RSA) with the longest names validation lets through (a 63-character Pod name and
#: namespace: 2447 + 1704 bytes measured) and their two data keys, rounded up.
TRANSPORT_BYTES_PER_NODE = 4400


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
    status = es.get("status")
    # The operator writes the status: one that is not a map is treated as none written yet.
    running = status.get("version") if isinstance(status, Mapping) else None
    allowed = view(es).annotations.get(DISABLE_DOWNGRADE_VALIDATION_ANNOTATION) == "true"
    proposed = str((es.get("spec") or {}).get("version") or "")
    running_version = str(running) if running else None
    problem = downgrade_problem(
        proposed=proposed, running=running_version, downgrades_allowed=allowed
    ) or upgrade_path_problem(proposed=proposed, running=running_version)
    return [problem] if problem is not None else []


def max_node_set_count(transport_sans: Sequence[str] = ()) -> int:
    """The most nodes one node set may have (pure): every node's transport certificate and key go
    into the node set's one transport certificates Secret, which must stay under the API
    server's 1 MiB. The user's extra transport SANs (``transport.tls.subjectAltNames``) are in
    every certificate: each costs its length, DER framing and PEM's base64 growth."""
    per_node = TRANSPORT_BYTES_PER_NODE + sum((len(san) + 6) * 4 // 3 + 1 for san in transport_sans)
    return (MAX_SECRET_BYTES - TRANSPORT_SECRET_RESERVE_BYTES) // per_node


def too_many_nodes_message(count: int, most: int) -> str:
    """The refusal of a node set count beyond :func:`max_node_set_count`."""
    return (
        f"count {count} is more than the {most} nodes a node set may have: each node's transport "
        "certificate and key go into the node set's transport certificates Secret, which may "
        "hold at most 1 MiB; split the nodes into several node sets"
    )


#: The most nodes one Elasticsearch may declare across its node sets. Every node costs a key and a
#: certificate made by the reconcile, a Pod, and a member of a cluster state every node holds;
#: a thousand is well past the clusters Elasticsearch is run as, and far from what would stall
#: the operator. Beyond it, run several clusters.
MAX_CLUSTER_NODES = 1000


def too_many_cluster_nodes_message(declared: int) -> str:
    """The refusal of a cluster whose node sets declare more than ``MAX_CLUSTER_NODES``."""
    return (
        f"the node sets declare {declared} nodes, more than the {MAX_CLUSTER_NODES} one "
        "Elasticsearch may have: split the nodes into several clusters"
    )


def _transport_sans(spec: Mapping[str, Any]) -> list[str]:
    """The user's extra transport SAN values (well formed or not: only their length counts)."""
    transport = spec.get("transport")
    tls = transport.get("tls") if isinstance(transport, Mapping) else None
    entries = as_list(tls.get("subjectAltNames")) if isinstance(tls, Mapping) else None
    return [
        str(value)
        for entry in entries or ()
        if isinstance(entry, Mapping)
        for value in entry.values()
    ]


def _validate_roles(config: Mapping[str, Any], path: str) -> list[FieldError]:
    """``node.roles`` (nested or dotted) must be a list of roles Elasticsearch knows."""
    flat = flatten_config(config)
    field = f"{path}.config.node.roles"
    roles = flat.get("node.roles")
    if roles is None:
        # A map under node.roles is flattened away into node.roles.<key> settings.
        nested = {
            key[len("node.roles.") :]: v for key, v in flat.items() if key.startswith("node.roles.")
        }
        return [not_a(field, nested, "a list of node roles")] if nested else []
    if isinstance(roles, str):
        roles = [role.strip() for role in roles.split(",") if role.strip()]
    listed = as_list(roles)
    if listed is None:
        return [not_a(field, roles, "a list of node roles")]
    unknown = [role for role in listed if not isinstance(role, str) or role not in KNOWN_NODE_ROLES]
    if unknown:
        return [
            (
                field,
                f"unknown node role {describe(unknown[0])}: roles are "
                + ", ".join(sorted(KNOWN_NODE_ROLES)),
            )
        ]
    return []


def _validate_config(node_set: Mapping[str, Any], path: str) -> list[FieldError]:
    """A node set's config: a map, not too deep nor too large, with known roles."""
    config = node_set.get("config")
    if config is None:
        return []
    if not isinstance(config, Mapping):
        return [(f"{path}.config", "config must be a map of settings")]
    deep = depth_problem(config, f"{path}.config")
    if deep is not None:
        return [deep]
    large = config_size_problem(config, f"{path}.config")
    if large is not None:
        return [large]
    return _validate_roles(config, path)


def _validate_node_set_shapes(node_set: Mapping[str, Any], path: str) -> list[FieldError]:
    """The free-form parts a node set's StatefulSet is built from."""
    errors: list[FieldError] = []
    resources = node_set.get("resources")
    if resources is not None and not isinstance(resources, Mapping):
        errors.append(not_a(f"{path}.resources", resources, "a map with requests and limits"))
    elif resources is not None:
        for key in ("requests", "limits"):
            errors += quantity_problems(resources.get(key), f"{path}.resources.{key}")
    errors += pod_template_problems(node_set.get("podTemplate"), f"{path}.podTemplate")
    errors += claim_templates_problems(
        node_set.get("volumeClaimTemplates"), f"{path}.volumeClaimTemplates"
    )
    return errors


def _validate_node_set(
    es_name: str, index: int, node_set: Mapping[str, Any], transport_sans: Sequence[str] = ()
) -> list[FieldError]:
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
    most = max_node_set_count(transport_sans)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        errors.append((f"{path}.count", "count must be a non-negative integer"))
    elif count > most:
        errors.append((f"{path}.count", too_many_nodes_message(count, most)))
    elif name and count > 0:
        longest_pod = names.pod_name(es_name, name, count - 1)
        if len(longest_pod) > MAX_LABEL_VALUE_LENGTH:
            errors.append(
                (
                    f"{path}.name",
                    f"generated pod name {longest_pod!r} exceeds {MAX_LABEL_VALUE_LENGTH} characters",
                )
            )
    return errors + _validate_config(node_set, path) + _validate_node_set_shapes(node_set, path)


def validate_elasticsearch(es: Mapping[str, Any]) -> list[FieldError]:
    """Return the spec's problems as ``(field, message)``; empty when the cluster is valid."""
    spec: Mapping[str, Any] = es.get("spec") or {}
    if not isinstance(spec, Mapping):
        return [not_a("spec", spec, "a map")]
    metadata = es.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        return [not_a("metadata", metadata, "a map")]
    deep = depth_problem(spec, "spec")
    if deep is not None:
        # Nothing else is read: every other check walks the spec.
        return [deep]
    es_name = view(es).name
    errors = _validate_name(es) + _validate_version(spec) + _validate_no_downgrade(es)
    raw_node_sets = as_list(spec.get("nodeSets") or [])
    if raw_node_sets is None:
        return [*errors, not_a("spec.nodeSets", spec.get("nodeSets"), "a list of node sets")]
    if not raw_node_sets:
        errors.append(("spec.nodeSets", "at least one node set is required"))
    transport_sans = _transport_sans(spec)
    node_sets: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for index, node_set in enumerate(raw_node_sets):
        if not isinstance(node_set, Mapping):
            errors.append(not_a(f"spec.nodeSets[{index}]", node_set, "a map (a node set)"))
            continue
        node_sets.append(node_set)
        node_set_errors = _validate_node_set(es_name, index, node_set, transport_sans)
        errors += node_set_errors
        name = str(node_set.get("name", ""))
        if name in seen:
            errors.append((f"spec.nodeSets[{index}].name", f"duplicate node set name {name!r}"))
        seen.add(name)
    declared = sum(
        count
        for node_set in node_sets
        if isinstance(count := node_set.get("count", 0), int) and not isinstance(count, bool)
    )
    if declared > MAX_CLUSTER_NODES:
        errors.append(("spec.nodeSets", too_many_cluster_nodes_message(declared)))
    if any(field.endswith(".config") or ".config." in field for field, _ in errors):
        # A config that cannot be read says nothing about masters: its own error is enough.
        return errors
    masters = sum(
        node_set.get("count", 0)
        for node_set in node_sets
        if isinstance(node_set.get("count", 0), int) and is_master_eligible(node_set.get("config"))
    )
    if node_sets and masters <= 0:
        errors.append(("spec.nodeSets", MASTER_REQUIRED_MESSAGE))
    return errors
