"""The Secrets the policies write: ``<es>-es-file-settings``, ``<es>-es-policy-config``, the
``secretMounts`` copies ``<es>-es-scp-<hash>`` and ``<kb>-kb-policy-config``, with their names,
keys, annotations and soft-owner marks."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, TYPE_LABEL, WATCHED_LABEL
from stackflow.stack.naming import ES_NAMER, Namer, hash_object
from stackflow.stack.objects import encode_secret_data
from stackflow.stack.policies.stack_config.file_settings import (
    empty_state,
    file_settings,
    state_hash,
)
from stackflow.stack.policies.stack_config.merge import ElasticsearchMerge, KibanaMerge
from stackflow.stack.policies.stack_config.owners import owner_marks
from stackflow.stack.policies.stack_config.values import secret_text

#: The Kibana name label, which the ``<kb>-kb-policy-config`` Secret carries.
KIBANA_NAME_LABEL = "kibana.k8s.elastic.co/name"
#: The key of the file-settings Secret Elasticsearch reads (mounted at its file-settings path).
FILE_SETTINGS_KEY = "settings.json"
#: The hash of the ``state`` the Secret's version was given for (the versioning rule).
SETTINGS_HASH_ANNOTATION = "policy.k8s.elastic.co/settings-hash"
#: The policies' Secure settings sources, as ECK lists them on the Secrets it writes (the
#: Elasticsearch keystore reads them from ``<es>-es-file-settings``).
SECURE_SETTINGS_ANNOTATION = "policy.k8s.elastic.co/secure-settings-secrets"
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
    single_owner: bool = False,
) -> dict[str, Any]:
    """The whole Secret to write: the current one with its data, labels and annotations replaced
    (so that a mark the policies no longer want disappears), or a new one."""
    secret = copy.deepcopy(dict(current)) if current is not None else {}
    metadata = dict(secret.get("metadata") or {"name": name, "namespace": namespace})
    current_labels = {**dict(metadata.get("labels") or {}), **labels}
    current_annotations = {**dict(metadata.get("annotations") or {}), **annotations}
    new_labels, new_annotations = owner_marks(
        current_labels, current_annotations, owners, single=single_owner
    )
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
        current_document=secret_text(current, FILE_SETTINGS_KEY),
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
        data=_policy_config_data(merged),
        owners=merged.owners,
        owner_reference=owner_reference,
    )


def _policy_config_data(merged: ElasticsearchMerge) -> dict[str, str]:
    """The keys of ``<es>-es-policy-config``: each only when the policies set it, as ECK 3.5
    writes them (the reader takes a missing key as empty)."""
    data: dict[str, str] = {}
    if merged.secret_mounts:
        data[ES_SECRET_MOUNTS_KEY] = json.dumps(list(merged.secret_mounts), sort_keys=True)
    if merged.config is not None:
        data[ES_CONFIG_KEY] = json.dumps(merged.config, sort_keys=True)
    if merged.roles:
        data[ES_ROLES_KEY] = json.dumps(merged.roles, sort_keys=True)
    return data


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
        single_owner=True,
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
