"""Merging the policies that target one resource by weight: the file-settings ``state``, the
``elasticsearch.yml`` and ``kibana.yml`` settings, secret mounts, security roles and secure
settings sources, and the conflicts that stop a merge."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stackflow.stack.objects import deep_merge
from stackflow.stack.policies.stack_config.file_settings import empty_state
from stackflow.stack.policies.stack_config.policy import Policy
from stackflow.stack.policies.stack_config.values import list_of, mapping_of


class MergeConflictError(ValueError):
    """Two policies targeting one resource cannot be merged (equal weights, clashing mounts)."""


#: Policy field → file-settings ``state`` key, for the fields merged key by key (top level).
_STATE_FIELDS: tuple[tuple[str, str], ...] = (
    ("snapshotRepositories", "snapshot_repositories"),
    ("snapshotLifecyclePolicies", "slm"),
    ("securityRoleMappings", "role_mappings"),
    ("indexLifecyclePolicies", "ilm"),
    ("ingestPipelines", "ingest_pipelines"),
)
_TEMPLATE_FIELDS: tuple[tuple[str, str], ...] = (
    ("componentTemplates", "component_templates"),
    ("composableIndexTemplates", "composable_index_templates"),
)


def _canonical(config: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys expanded into nested maps (``a.b: 1`` is ``a: {b: 1}``), as ECK's canonical
    config reads them, so that two spellings of one setting merge into one."""
    result: dict[str, Any] = {}
    for key, value in config.items():
        nested = _canonical(value) if isinstance(value, Mapping) else copy.deepcopy(value)
        parts = str(key).split(".")
        for part in reversed(parts[1:]):
            nested = {part: nested}
        head = parts[0]
        current = result.get(head)
        if isinstance(current, dict) and isinstance(nested, dict):
            result[head] = deep_merge(current, nested)
        else:
            result[head] = nested
    return result


def _deep_merge_config(
    dst: Mapping[str, Any] | None, src: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """ECK's ``deepMergeConfig``: the first config is kept as written, a second one is merged
    into it setting by setting (canonical form)."""
    if not src:
        return dict(dst) if dst is not None else None
    if not dst:
        return copy.deepcopy(dict(src))
    return deep_merge(_canonical(dst), _canonical(src))


def _merge_top_level(
    dst: Mapping[str, Any] | None, src: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """ECK's ``mergeConfig``: each top-level key (a repository, a pipeline…) replaced whole."""
    if not src:
        return dict(dst) if dst is not None else None
    merged = copy.deepcopy(dict(dst or {}))
    merged.update(copy.deepcopy(dict(src)))
    return merged


@dataclass(frozen=True)
class ElasticsearchMerge:
    """What the policies targeting one cluster amount to, once merged by weight."""

    state: dict[str, Any]
    config: dict[str, Any] | None
    secret_mounts: tuple[dict[str, Any], ...]
    secure_settings: tuple[dict[str, Any], ...]
    owners: tuple[str, ...]
    #: ``securityRoles``: role name → role descriptor, a higher weight replacing a whole role.
    roles: dict[str, Any] = field(default_factory=dict)
    #: ``secretMounts[].secretName`` → the namespace of the policy mounting it (where it lives).
    mount_namespaces: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KibanaMerge:
    """What the policies targeting one Kibana amount to, once merged by weight."""

    config: dict[str, Any] | None
    secure_settings: tuple[dict[str, Any], ...]
    owners: tuple[str, ...]


def _secure_settings(policy: Policy, *sources: object) -> list[dict[str, Any]]:
    """The policy's Secure settings Secrets, named with the policy's namespace (they live there)."""
    settings = []
    for source in sources:
        for entry in list_of(source):
            item = mapping_of(entry)
            if item.get("secretName"):
                named: dict[str, Any] = {
                    "namespace": policy.namespace,
                    "secretName": str(item["secretName"]),
                }
                if item.get("entries"):
                    named["entries"] = copy.deepcopy(item["entries"])
                settings.append(named)
    return settings


def _sorted_sources(sources: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(sorted(sources, key=lambda s: (s["namespace"], s["secretName"])))


def merge_elasticsearch(ordered: Sequence[Policy]) -> ElasticsearchMerge:
    """Merge the Elasticsearch part of ``ordered`` (lowest weight first, see ``policies_for``).

    ``clusterSettings`` and ``config`` merge setting by setting; the other sections key by key
    (a higher weight replaces a whole repository, pipeline or template). MergeConflictError when two
    policies mount one Secret or mount at one path.
    """
    cluster_settings: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    sections: dict[str, dict[str, Any] | None] = {state: None for _, state in _STATE_FIELDS}
    templates: dict[str, dict[str, Any] | None] = {state: None for _, state in _TEMPLATE_FIELDS}
    mounts: list[dict[str, Any]] = []
    mount_names: dict[str, str] = {}
    mount_paths: dict[str, str] = {}
    secure: list[dict[str, Any]] = []
    roles: dict[str, Any] | None = None
    for policy in ordered:
        spec = mapping_of(policy.spec.get("elasticsearch"))
        roles = _merge_top_level(roles, mapping_of(spec.get("securityRoles")))
        cluster_settings = _deep_merge_config(
            cluster_settings, mapping_of(spec.get("clusterSettings"))
        )
        config = _deep_merge_config(config, mapping_of(spec.get("config")))
        for source, state in _STATE_FIELDS:
            sections[state] = _merge_top_level(sections[state], mapping_of(spec.get(source)))
        index_templates = mapping_of(spec.get("indexTemplates"))
        for source, state in _TEMPLATE_FIELDS:
            templates[state] = _merge_top_level(
                templates[state], mapping_of(index_templates.get(source))
            )
        for mount in list_of(spec.get("secretMounts")):
            item = mapping_of(mount)
            secret, path = str(item.get("secretName")), str(item.get("mountPath"))
            if secret in mount_names:
                raise MergeConflictError(
                    f'merge conflict: secret with name "{secret}" is defined in policy '
                    f'"{policy.key}", "{mount_names[secret]}"'
                )
            if path in mount_paths:
                raise MergeConflictError(
                    f'merge conflict: secret mount path "{path}" is defined in policy '
                    f'"{policy.key}", "{mount_paths[path]}"'
                )
            mount_names[secret] = mount_paths[path] = policy.key
            mounts.append({"secretName": secret, "mountPath": path})
        secure.extend(
            _secure_settings(policy, policy.spec.get("secureSettings"), spec.get("secureSettings"))
        )
    merged_state = empty_state()
    merged_state["cluster_settings"] = cluster_settings or {}
    for _, key in _STATE_FIELDS:
        merged_state[key] = sections[key] or {}
    for _, key in _TEMPLATE_FIELDS:
        merged_state["index_templates"][key] = templates[key] or {}
    return ElasticsearchMerge(
        state=merged_state,
        config=config,
        secret_mounts=tuple(sorted(mounts, key=lambda m: m["secretName"])),
        secure_settings=_sorted_sources(secure),
        owners=tuple(sorted(policy.key for policy in ordered)),
        roles=roles or {},
        mount_namespaces={
            secret: policy_key.partition("/")[0] for secret, policy_key in mount_names.items()
        },
    )


def merge_kibana(ordered: Sequence[Policy]) -> KibanaMerge:
    """Merge the Kibana part of ``ordered`` (lowest weight first): ``config`` setting by setting."""
    config: dict[str, Any] | None = None
    secure: list[dict[str, Any]] = []
    for policy in ordered:
        spec = mapping_of(policy.spec.get("kibana"))
        config = _deep_merge_config(config, mapping_of(spec.get("config")))
        secure.extend(_secure_settings(policy, spec.get("secureSettings")))
    return KibanaMerge(
        config=config,
        secure_settings=_sorted_sources(secure),
        owners=tuple(sorted(policy.key for policy in ordered)),
    )
