"""ECK's StackConfigPolicy rules as pure functions: targeting, merging by weight, conflicts, the
file-based settings document and its versioning rule, the soft-owner marks on the Secrets a
policy writes, the Secrets' names and the policy's status.

Nothing here does I/O: the policy controller's activities read the policies, the targeted
Elasticsearch clusters and Kibana instances and the current Secrets, call these functions and
write what they return.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stackflow.api.stackconfigpolicy import PHASE_SEVERITY
from stackflow.models.objects import view
from stackflow.scope.selector import LabelSelector, SelectorError, label_selector_from_data
from stackflow.stack.labels import (
    ES_CLUSTER_NAME_LABEL,
    SOFT_OWNER_KIND_LABEL,
    SOFT_OWNER_NAME_LABEL,
    SOFT_OWNER_NAMESPACE_LABEL,
    TYPE_LABEL,
    WATCHED_LABEL,
)
from stackflow.stack.naming import ES_NAMER, Namer, hash_object
from stackflow.stack.objects import encode_secret_data

__all__ = [
    "ELASTICSEARCH",
    "ES_CONFIG_MOUNTS_HASH_ANNOTATION",
    "FILE_SETTINGS_COMPATIBILITY",
    "FILE_SETTINGS_KEY",
    "KIBANA",
    "KIBANA_NAME_LABEL",
    "POLICY_KIND",
    "SETTINGS_HASH_ANNOTATION",
    "SOFT_OWNER_REFS_ANNOTATION",
    "ElasticsearchMerge",
    "FileSettings",
    "KibanaMerge",
    "MergeConflictError",
    "Policy",
    "PolicyElasticsearchConfig",
    "ResourceStatus",
    "Target",
    "VariableSource",
    "empty_state",
    "es_config_mounts_hash",
    "es_policy_config_secret",
    "es_policy_config_secret_name",
    "es_secret_mount_copy",
    "es_secret_mount_copy_name",
    "file_settings",
    "file_settings_secret",
    "file_settings_secret_name",
    "is_es_secret_mount_copy_name",
    "kb_policy_config_secret",
    "kb_policy_config_secret_name",
    "kibana_applied",
    "merge_elasticsearch",
    "merge_kibana",
    "owner_marks",
    "parse_policy",
    "policies_for",
    "policy_status",
    "read_es_policy_config",
    "read_kb_policy_config",
    "resource_phase",
    "secret_owners",
    "selector_problem",
    "state_hash",
    "status_patch",
    "substitute_variables",
    "targets",
    "variable_sources",
    "variables_of",
]

POLICY_KIND = "StackConfigPolicy"
#: The resource types of a policy's ``status.details``.
ELASTICSEARCH = "elasticsearch"
KIBANA = "kibana"
KIBANA_NAME_LABEL = "kibana.k8s.elastic.co/name"
#: The key of the file-settings Secret Elasticsearch reads (mounted at its file-settings path).
FILE_SETTINGS_KEY = "settings.json"
#: The lowest Elasticsearch version that reads the document (ECK's value).
FILE_SETTINGS_COMPATIBILITY = "8.4.0"
#: The hash of the ``state`` the Secret's version was given for (the versioning rule).
SETTINGS_HASH_ANNOTATION = "policy.k8s.elastic.co/settings-hash"
#: The policies' Secure settings sources, as ECK lists them on the Secrets it writes.
SECURE_SETTINGS_ANNOTATION = "policy.k8s.elastic.co/secure-settings-secrets"
#: With several owning policies: a JSON list of their ``namespace/name`` (ECK's annotation).
SOFT_OWNER_REFS_ANNOTATION = "eck.k8s.elastic.co/owner-refs"
#: Keys of the ``<es>-es-policy-config`` and ``<kb>-kb-policy-config`` Secrets.
ES_CONFIG_KEY = "elasticsearch.json"
ES_SECRET_MOUNTS_KEY = "secretMounts.json"
ES_ROLES_KEY = "roles.json"
#: ECK's hash annotations of ``<es>-es-policy-config``; the config/mounts one is copied onto the
#: cluster's pod templates, so the policy sees when the cluster took its settings.
ES_CONFIG_MOUNTS_HASH_ANNOTATION = "policy.k8s.elastic.co/elasticsearch-config-mounts-hash"
ES_ROLES_HASH_ANNOTATION = "policy.k8s.elastic.co/elasticsearch-roles-hash"
KB_CONFIG_KEY = "kibana.json"
#: On a copied ``secretMounts`` Secret: the name of the Secret it copies (ECK's annotation).
SOURCE_SECRET_NAME_ANNOTATION = "policy.k8s.elastic.co/source-secret-name"

_KB_NAMER = Namer("kb")

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


def file_settings_secret_name(es_name: str) -> str:
    """``<es>-es-file-settings``: the file-based settings Elasticsearch watches."""
    return ES_NAMER.suffix(es_name, "file", "settings")


def es_policy_config_secret_name(es_name: str) -> str:
    """``<es>-es-policy-config``: the policies' ``elasticsearch.yml`` settings and secret mounts."""
    return ES_NAMER.suffix(es_name, "policy", "config")


def es_secret_mount_copy_name(es_name: str, secret_name: str) -> str:
    """``<es>-es-scp-<HashObject(secretName)>``: the copy, in the cluster's namespace, of a
    ``secretMounts[]`` Secret of the policy's namespace (at most 36 + 18 characters)."""
    return ES_NAMER.suffix(es_name, "scp", hash_object(secret_name))


def is_es_secret_mount_copy_name(es_name: str, name: str) -> bool:
    """Whether ``name`` is the name of a ``secretMounts`` copy of cluster ``es_name``."""
    prefix = ES_NAMER.suffix(es_name, "scp") + "-"
    return name.startswith(prefix) and name[len(prefix) :].isdigit()


def kb_policy_config_secret_name(kb_name: str) -> str:
    """``<kb>-kb-policy-config``: the policies' ``kibana.yml`` settings."""
    return _KB_NAMER.suffix(kb_name, "policy", "config")


class MergeConflictError(ValueError):
    """Two policies targeting one resource cannot be merged (equal weights, clashing mounts)."""


@dataclass(frozen=True)
class Policy:
    """The parts of a StackConfigPolicy that targeting and merging read."""

    namespace: str
    name: str
    weight: int
    selector: LabelSelector
    spec: Mapping[str, Any]

    @property
    def key(self) -> str:
        """``namespace/name``, the way ECK names a policy in messages and annotations."""
        return f"{self.namespace}/{self.name}"


def parse_policy(obj: Mapping[str, Any], variables: Mapping[str, str] | None = None) -> Policy:
    """The policy of a StackConfigPolicy object; SelectorError for an unusable resourceSelector.

    ``variables`` (read from ``spec.variablesFrom``) are substituted in its Elasticsearch and
    Kibana settings (``substitute_variables``).
    """
    meta = view(obj)
    spec = dict(obj.get("spec") or {})
    if variables:
        for section in ("elasticsearch", "kibana"):
            if isinstance(spec.get(section), Mapping):
                spec[section] = substitute_variables(spec[section], variables)
    selector = label_selector_from_data(
        spec.get("resourceSelector") or {}, field="spec.resourceSelector"
    )
    return Policy(
        namespace=meta.namespace,
        name=meta.name,
        weight=int(spec.get("weight") or 0),
        selector=selector,
        spec=spec,
    )


@dataclass(frozen=True)
class VariableSource:
    """One ``spec.variablesFrom[]`` entry: a ConfigMap or Secret whose keys are variables."""

    kind: str
    namespace: str
    name: str
    optional: bool


def variable_sources(obj: Mapping[str, Any]) -> list[VariableSource]:
    """The policy's ``spec.variablesFrom``, in order (a later source wins a variable); the
    namespace defaults to the policy's own."""
    meta = view(obj)
    sources = []
    for entry in _list((obj.get("spec") or {}).get("variablesFrom")):
        item = _mapping(entry)
        if not item.get("name"):
            continue
        sources.append(
            VariableSource(
                kind=str(item.get("kind") or "ConfigMap"),
                namespace=str(item.get("namespace") or meta.namespace),
                name=str(item["name"]),
                optional=bool(item.get("optional")),
            )
        )
    return sources


def variables_of(source: VariableSource, obj: Mapping[str, Any]) -> dict[str, str]:
    """The variables a ConfigMap (``data``) or Secret (decoded ``data``) holds: key → value."""
    data = _mapping(obj.get("data"))
    if source.kind != "Secret":
        return {str(key): str(value) for key, value in data.items()}
    variables = {}
    for key in data:
        decoded = _decoded(obj, str(key))
        if decoded is not None:
            variables[str(key)] = decoded
    return variables


#: ``${VAR}`` or ``${VAR:-default}``.
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)(?::-([^}]*))?\}")


def _substitute_text(text: str, variables: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in variables:
            return variables[name]
        if default is not None:
            return default
        return match.group(0)  # unknown: left as written (it may be an env var of the Pod)

    return _VARIABLE.sub(replace, text)


def substitute_variables(value: Any, variables: Mapping[str, str]) -> Any:
    """``value`` with ``${VAR}`` replaced by the variable's value in every string (keys too, as
    ECK substitutes in the JSON text); ``${VAR:-default}`` falls back to ``default``; an unknown
    variable without default is left as it is. A value is inserted as text, never parsed."""
    if isinstance(value, str):
        return _substitute_text(value, variables)
    if isinstance(value, Mapping):
        return {
            _substitute_text(str(key), variables): substitute_variables(item, variables)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [substitute_variables(item, variables) for item in value]
    return value


@dataclass(frozen=True)
class Target:
    """An Elasticsearch cluster or Kibana instance a policy may target."""

    type: str
    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``namespace/name``, the key of ``status.details.<type>``."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, type_: str, obj: Mapping[str, Any]) -> Target:
        """The target of an Elasticsearch or Kibana object."""
        meta = view(obj)
        return cls(type_, meta.namespace, meta.name, dict(meta.labels))


def targets(policy: Policy, target: Target, *, operator_namespace: str) -> bool:
    """ECK's ``DoesPolicyMatchObject``: a policy in the operator namespace may target any
    namespace, one elsewhere only its own; its resourceSelector must match the labels."""
    if policy.namespace not in (operator_namespace, target.namespace):
        return False
    return policy.selector.matches(target.labels)


def policies_for(
    target: Target, policies: Iterable[Policy], *, operator_namespace: str
) -> list[Policy]:
    """The policies targeting ``target``, lowest weight first (the last one wins a key).

    MergeConflictError when two of them have the same weight: which one wins would be arbitrary.
    """
    by_weight: dict[int, Policy] = {}
    for policy in sorted(policies, key=lambda p: (p.namespace, p.name)):
        if not targets(policy, target, operator_namespace=operator_namespace):
            continue
        existing = by_weight.get(policy.weight)
        if existing is not None:
            raise MergeConflictError(
                f'merge conflict: policies "{policy.key}" and "{existing.key}" '
                f"have the same weight {policy.weight}"
            )
        by_weight[policy.weight] = policy
    return [by_weight[weight] for weight in sorted(by_weight)]


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


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
            result[head] = _deep_merge(current, nested)
        else:
            result[head] = nested
    return result


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _deep_merge_config(
    dst: Mapping[str, Any] | None, src: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """ECK's ``deepMergeConfig``: the first config is kept as written, a second one is merged
    into it setting by setting (canonical form)."""
    if not src:
        return dict(dst) if dst is not None else None
    if not dst:
        return copy.deepcopy(dict(src))
    return _deep_merge(_canonical(dst), _canonical(src))


def _merge_top_level(
    dst: Mapping[str, Any] | None, src: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """ECK's ``mergeConfig``: each top-level key (a repository, a pipeline…) replaced whole."""
    if not src:
        return dict(dst) if dst is not None else None
    merged = copy.deepcopy(dict(dst or {}))
    merged.update(copy.deepcopy(dict(src)))
    return merged


def empty_state() -> dict[str, Any]:
    """The file-settings ``state`` that configures nothing (every section present and empty)."""
    return {
        "cluster_settings": {},
        "snapshot_repositories": {},
        "slm": {},
        "role_mappings": {},
        "ilm": {},
        "ingest_pipelines": {},
        "index_templates": {"component_templates": {}, "composable_index_templates": {}},
    }


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
        for entry in _list(source):
            item = _mapping(entry)
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
        spec = _mapping(policy.spec.get("elasticsearch"))
        roles = _merge_top_level(roles, _mapping(spec.get("securityRoles")))
        cluster_settings = _deep_merge_config(
            cluster_settings, _mapping(spec.get("clusterSettings"))
        )
        config = _deep_merge_config(config, _mapping(spec.get("config")))
        for source, state in _STATE_FIELDS:
            sections[state] = _merge_top_level(sections[state], _mapping(spec.get(source)))
        index_templates = _mapping(spec.get("indexTemplates"))
        for source, state in _TEMPLATE_FIELDS:
            templates[state] = _merge_top_level(
                templates[state], _mapping(index_templates.get(source))
            )
        for mount in _list(spec.get("secretMounts")):
            item = _mapping(mount)
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
        spec = _mapping(policy.spec.get("kibana"))
        config = _deep_merge_config(config, _mapping(spec.get("config")))
        secure.extend(_secure_settings(policy, spec.get("secureSettings")))
    return KibanaMerge(
        config=config,
        secure_settings=_sorted_sources(secure),
        owners=tuple(sorted(policy.key for policy in ordered)),
    )


def state_hash(state: Mapping[str, Any]) -> str:
    """A stable hash of a file-settings ``state`` (keys sorted)."""
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class FileSettings:
    """The file-settings document to write and the version it carries."""

    version: int
    hash: str
    document: str


def _current_document(settings_json: str | None) -> tuple[int | None, str | None]:
    """The version of the current document and the hash of the state it holds (None: unreadable)."""
    if not settings_json:
        return None, None
    try:
        document = json.loads(settings_json)
        version = int(document["metadata"]["version"])
    except (ValueError, KeyError, TypeError):
        return None, None
    state = document.get("state") if isinstance(document, Mapping) else None
    return version, state_hash(state) if isinstance(state, Mapping) else None


def file_settings(
    state: Mapping[str, Any],
    *,
    current_document: str | None,
    current_hash: str | None,
    first_version: int,
) -> FileSettings:
    """The versioning rule: the version is kept while the hash of the state is unchanged, and
    bumped by one otherwise; ``first_version`` when the current Secret carries none.

    Elasticsearch applies a file whose version is higher than the one it applied last, so the
    version must grow with every change and must not move without one. The version is kept only
    when both the recorded hash and the state the document holds match: a document another
    writer replaced under the annotation (the Elasticsearch controller's empty one, written from
    an older read) would otherwise come back with new content under a version already applied.
    """
    digest = state_hash(state)
    current, held = _current_document(current_document)
    if current is not None and current_hash == digest and held == digest:
        version = current
    elif current is not None:
        version = current + 1
    else:
        version = first_version
    document = json.dumps(
        {
            "metadata": {"version": str(version), "compatibility": FILE_SETTINGS_COMPATIBILITY},
            "state": state,
        },
        sort_keys=True,
    )
    return FileSettings(version=version, hash=digest, document=document)


def secret_owners(secret: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """The policies soft-owning a Secret, as (namespace, name): the owner labels when one policy
    owns it, the owner-refs annotation when several do; none when no policy does."""
    meta = view(secret)
    if meta.labels.get(SOFT_OWNER_KIND_LABEL) != POLICY_KIND:
        return ()
    refs = meta.annotations.get(SOFT_OWNER_REFS_ANNOTATION)
    if refs is not None:
        try:
            listed = json.loads(refs)
        except ValueError:
            return ()
        owners = []
        for item in listed if isinstance(listed, list) else []:
            namespace, _, name = str(item).partition("/")
            if namespace and name:
                owners.append((namespace, name))
        return tuple(owners)
    owner_namespace = meta.labels.get(SOFT_OWNER_NAMESPACE_LABEL)
    owner_name = meta.labels.get(SOFT_OWNER_NAME_LABEL)
    return ((owner_namespace, owner_name),) if owner_namespace and owner_name else ()


def owner_marks(
    labels: Mapping[str, str], annotations: Mapping[str, str], owners: Sequence[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations of a Secret owned by ``owners`` (``namespace/name`` each).

    One owner: ECK's three owner labels. Several: the kind label and the owner-refs annotation
    (labels hold one value). None: every mark removed, so the Elasticsearch controller takes its
    file-settings Secret back.
    """
    new_labels = {
        key: value
        for key, value in labels.items()
        if key not in (SOFT_OWNER_KIND_LABEL, SOFT_OWNER_NAME_LABEL, SOFT_OWNER_NAMESPACE_LABEL)
    }
    new_annotations = {
        key: value for key, value in annotations.items() if key != SOFT_OWNER_REFS_ANNOTATION
    }
    unique = sorted(set(owners))
    if len(unique) == 1:
        namespace, _, name = unique[0].partition("/")
        new_labels |= {
            SOFT_OWNER_KIND_LABEL: POLICY_KIND,
            SOFT_OWNER_NAMESPACE_LABEL: namespace,
            SOFT_OWNER_NAME_LABEL: name,
        }
    elif unique:
        new_labels[SOFT_OWNER_KIND_LABEL] = POLICY_KIND
        new_annotations[SOFT_OWNER_REFS_ANNOTATION] = json.dumps(unique)
    return new_labels, new_annotations


def _secret(
    current: Mapping[str, Any] | None,
    *,
    namespace: str,
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    data: Mapping[str, str],
    owners: Sequence[str],
    owner_reference: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The whole Secret to write: the current one with its data, labels and annotations replaced
    (so that a mark the policies no longer want disappears), or a new one."""
    secret = copy.deepcopy(dict(current)) if current is not None else {}
    metadata = dict(secret.get("metadata") or {"name": name, "namespace": namespace})
    current_labels = {**dict(metadata.get("labels") or {}), **labels}
    current_annotations = {**dict(metadata.get("annotations") or {}), **annotations}
    new_labels, new_annotations = owner_marks(current_labels, current_annotations, owners)
    metadata["labels"] = dict(sorted(new_labels.items()))
    if new_annotations:
        metadata["annotations"] = dict(sorted(new_annotations.items()))
    else:
        metadata.pop("annotations", None)
    if owner_reference is not None and not metadata.get("ownerReferences"):
        metadata["ownerReferences"] = [dict(owner_reference)]
    secret.update(apiVersion="v1", kind="Secret", metadata=metadata, type="Opaque")
    secret["data"] = encode_secret_data(data)
    return secret


def file_settings_secret(
    current: Mapping[str, Any] | None,
    *,
    namespace: str,
    es_name: str,
    merged: ElasticsearchMerge | None,
    first_version: int,
    owner_reference: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], int]:
    """The ``<es>-es-file-settings`` Secret for the merge of the policies targeting the cluster
    (None: no policy targets it any more, reset to an empty state), and its version."""
    meta = view(current)
    state = merged.state if merged is not None else empty_state()
    settings = file_settings(
        state,
        current_document=_decoded(current, FILE_SETTINGS_KEY),
        current_hash=meta.annotations.get(SETTINGS_HASH_ANNOTATION),
        first_version=first_version,
    )
    annotations = {SETTINGS_HASH_ANNOTATION: settings.hash}
    secure = merged.secure_settings if merged is not None else ()
    secret = _secret(
        current,
        namespace=namespace,
        name=file_settings_secret_name(es_name),
        labels={ES_CLUSTER_NAME_LABEL: es_name, TYPE_LABEL: "elasticsearch", WATCHED_LABEL: "true"},
        annotations=annotations,
        data={FILE_SETTINGS_KEY: settings.document},
        owners=merged.owners if merged is not None else (),
        owner_reference=owner_reference,
    )
    annotations_now = secret["metadata"].setdefault("annotations", {})
    if secure:
        annotations_now[SECURE_SETTINGS_ANNOTATION] = json.dumps(list(secure), sort_keys=True)
    else:
        annotations_now.pop(SECURE_SETTINGS_ANNOTATION, None)
    return secret, settings.version


def es_config_mounts_hash(merged: ElasticsearchMerge) -> str:
    """The hash of the merged ``elasticsearch.yml`` settings and secret mounts."""
    return state_hash({"config": merged.config or {}, "secretMounts": list(merged.secret_mounts)})


def es_policy_config_secret(
    current: Mapping[str, Any] | None,
    *,
    namespace: str,
    es_name: str,
    merged: ElasticsearchMerge,
    owner_reference: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``<es>-es-policy-config`` Secret: merged ``elasticsearch.yml`` settings, mounts and
    security roles, with ECK's hash annotations."""
    return _secret(
        current,
        namespace=namespace,
        name=es_policy_config_secret_name(es_name),
        labels={
            ES_CLUSTER_NAME_LABEL: es_name,
            TYPE_LABEL: "elasticsearch",
            WATCHED_LABEL: "true",
        },
        annotations={
            ES_CONFIG_MOUNTS_HASH_ANNOTATION: es_config_mounts_hash(merged),
            ES_ROLES_HASH_ANNOTATION: state_hash(merged.roles),
        },
        data={
            ES_CONFIG_KEY: json.dumps(merged.config or {}, sort_keys=True),
            ES_SECRET_MOUNTS_KEY: json.dumps(list(merged.secret_mounts), sort_keys=True),
            ES_ROLES_KEY: json.dumps(merged.roles, sort_keys=True),
        },
        owners=merged.owners,
        owner_reference=owner_reference,
    )


def es_secret_mount_copy(
    current: Mapping[str, Any] | None,
    source: Mapping[str, Any],
    *,
    namespace: str,
    es_name: str,
    owners: Sequence[str],
    owner_reference: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The copy, in the cluster's namespace, of the ``secretMounts`` Secret ``source``: its data
    as is, the cluster-name label (the policy finds the cluster it belongs to) and the policies'
    soft-owner marks (their Secret watch sees it, and the clean-up deletes it)."""
    source_name = view(source).name
    secret = _secret(
        current,
        namespace=namespace,
        name=es_secret_mount_copy_name(es_name, source_name),
        labels={ES_CLUSTER_NAME_LABEL: es_name, TYPE_LABEL: "elasticsearch"},
        annotations={SOURCE_SECRET_NAME_ANNOTATION: source_name},
        data={},
        owners=owners,
        owner_reference=owner_reference,
    )
    # Already base64: copied byte for byte.
    secret["data"] = dict(source.get("data") or {})
    return secret


def kb_policy_config_secret(
    current: Mapping[str, Any] | None,
    *,
    namespace: str,
    kb_name: str,
    merged: KibanaMerge,
    owner_reference: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``<kb>-kb-policy-config`` Secret: the merged ``kibana.yml`` settings."""
    annotations = (
        {SECURE_SETTINGS_ANNOTATION: json.dumps(list(merged.secure_settings), sort_keys=True)}
        if merged.secure_settings
        else {}
    )
    return _secret(
        current,
        namespace=namespace,
        name=kb_policy_config_secret_name(kb_name),
        labels={KIBANA_NAME_LABEL: kb_name, TYPE_LABEL: "kibana", WATCHED_LABEL: "true"},
        annotations=annotations,
        data={KB_CONFIG_KEY: json.dumps(merged.config or {}, sort_keys=True)},
        owners=merged.owners,
        owner_reference=owner_reference,
    )


def _decoded(secret: Mapping[str, Any] | None, key: str) -> str | None:
    value = ((secret or {}).get("data") or {}).get(key)
    if value is None:
        return None
    try:
        return base64.b64decode(str(value)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def _decoded_json(secret: Mapping[str, Any] | None, key: str) -> Any:
    text = _decoded(secret, key)
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class PolicyElasticsearchConfig:
    """What the Elasticsearch builder takes from ``<es>-es-policy-config``."""

    config: dict[str, Any] = field(default_factory=dict)
    secret_mounts: tuple[tuple[str, str], ...] = ()
    roles: dict[str, Any] = field(default_factory=dict)
    #: ``ES_CONFIG_MOUNTS_HASH_ANNOTATION`` of the Secret (None: no policy Secret).
    config_mounts_hash: str | None = None


def read_es_policy_config(secret: Mapping[str, Any] | None) -> PolicyElasticsearchConfig:
    """The policies' ``elasticsearch.yml`` settings, secret mounts ``(secretName, mountPath)``
    and security roles stored in ``<es>-es-policy-config`` (empty when absent or unreadable)."""
    config = _decoded_json(secret, ES_CONFIG_KEY)
    roles = _decoded_json(secret, ES_ROLES_KEY)
    mounts = []
    for entry in _list(_decoded_json(secret, ES_SECRET_MOUNTS_KEY)):
        item = _mapping(entry)
        if item.get("secretName") and item.get("mountPath"):
            mounts.append((str(item["secretName"]), str(item["mountPath"])))
    return PolicyElasticsearchConfig(
        config=dict(config) if isinstance(config, Mapping) else {},
        secret_mounts=tuple(mounts),
        roles=dict(roles) if isinstance(roles, Mapping) else {},
        config_mounts_hash=view(secret).annotations.get(ES_CONFIG_MOUNTS_HASH_ANNOTATION),
    )


def read_kb_policy_config(secret: Mapping[str, Any] | None) -> dict[str, Any]:
    """The policies' ``kibana.yml`` settings stored in ``<kb>-kb-policy-config`` (empty when
    absent or unreadable)."""
    config = _decoded_json(secret, KB_CONFIG_KEY)
    return dict(config) if isinstance(config, Mapping) else {}


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def kibana_applied(policy_config: Mapping[str, Any], rendered: Mapping[str, Any]) -> bool:
    """Whether the Kibana controller rendered every policy setting into ``kibana.yml``
    (``rendered``: the parsed file), i.e. the Pods roll to the policy's configuration."""
    have = _flat(rendered)
    return all(have.get(key) == value for key, value in _flat(policy_config).items())


@dataclass(frozen=True)
class ResourceStatus:
    """How far the policies got on one targeted resource."""

    phase: str
    expected_version: int | None = None
    current_version: int | None = None
    error: str | None = None

    def as_status(self) -> dict[str, Any]:
        """The ``status.details.<type>.<ns/name>`` entry."""
        entry: dict[str, Any] = {"phase": self.phase}
        if self.expected_version is not None:
            entry["expectedVersion"] = self.expected_version
        if self.current_version is not None:
            entry["currentVersion"] = self.current_version
        if self.error is not None:
            entry["error"] = {"message": self.error}
            if self.expected_version is not None:
                entry["error"]["version"] = self.expected_version
        return entry


def resource_phase(
    *,
    expected_version: int,
    reported_version: int | None,
    reported_errors: Mapping[str, Any] | None,
) -> ResourceStatus:
    """An Elasticsearch's phase from the file-settings version it reports (None: it could not be
    asked): Ready once it applied the Secret's version, Error when it reports errors for it,
    ApplyingChanges otherwise."""
    errors = _mapping(reported_errors)
    if errors and _error_version(errors) == expected_version:
        return ResourceStatus(
            phase="Error",
            expected_version=expected_version,
            current_version=reported_version,
            error=json.dumps(dict(errors), sort_keys=True),
        )
    if reported_version is not None and reported_version == expected_version:
        return ResourceStatus(
            phase="Ready", expected_version=expected_version, current_version=reported_version
        )
    return ResourceStatus(
        phase="ApplyingChanges",
        expected_version=expected_version,
        current_version=reported_version,
    )


def _error_version(errors: Mapping[str, Any]) -> int | None:
    try:
        return int(errors.get("version"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def policy_status(
    details: Mapping[str, Mapping[str, ResourceStatus]], *, observed_generation: int | None
) -> dict[str, Any]:
    """The policy's ``status``: counts, ``readyCount`` ("ready/resources"), per-resource details
    and the phase, the worst of its resources' phases (Ready when it targets nothing)."""
    entries = [entry for by_key in details.values() for entry in by_key.values()]
    ready = sum(1 for entry in entries if entry.phase == "Ready")
    errors = sum(1 for entry in entries if entry.phase in ("Error", "Conflict", "Invalid"))
    phase = "Ready"
    for entry in entries:
        if PHASE_SEVERITY.get(entry.phase, -1) > PHASE_SEVERITY[phase]:
            phase = entry.phase
    status: dict[str, Any] = {
        "resources": len(entries),
        "ready": ready,
        "errors": errors,
        "readyCount": f"{ready}/{len(entries)}",
        "phase": phase,
        "details": {
            type_: {key: entry.as_status() for key, entry in sorted(by_key.items())}
            for type_, by_key in sorted(details.items())
            if by_key
        },
    }
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    return status


def selector_problem(obj: Mapping[str, Any]) -> str | None:
    """Why a policy's resourceSelector cannot be used, or None."""
    try:
        parse_policy(obj)
    except SelectorError as error:
        return str(error)
    return None


def _merge_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch turning ``current`` into ``desired`` (a gone key is set to null)."""
    patch: dict[str, Any] = {}
    for key in sorted(set(current) | set(desired)):
        if key not in desired:
            patch[key] = None
        elif current.get(key) != desired[key]:
            old, new = current.get(key), desired[key]
            both_maps = isinstance(old, Mapping) and isinstance(new, Mapping)
            patch[key] = _merge_patch(old, new) if both_maps else copy.deepcopy(new)  # type: ignore[arg-type]
    return patch


def status_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch of the policy's ``status`` from ``current`` to ``desired``, or None when
    nothing changed: every field of ``desired`` is set, and within ``details`` a resource no
    longer targeted (or a field an entry no longer has) is removed. Fields the policy controller
    does not own (an Invalid notice's conditions) are left as they are."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        old = current.get(key)
        if old == value:
            continue
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            patch[key] = _merge_patch(old, value)
        else:
            patch[key] = copy.deepcopy(value)
    return patch or None
