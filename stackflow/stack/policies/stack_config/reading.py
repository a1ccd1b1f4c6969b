"""Reading the policy-config Secrets back: what the Elasticsearch and Kibana builders take from
``<es>-es-policy-config`` and ``<kb>-kb-policy-config``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.stack.policies.stack_config.secrets import (
    ES_CONFIG_KEY,
    ES_CONFIG_MOUNTS_HASH_ANNOTATION,
    ES_ROLES_KEY,
    ES_SECRET_MOUNTS_KEY,
    KB_CONFIG_KEY,
)
from stackflow.stack.policies.stack_config.values import list_of, mapping_of, secret_text


def _decoded_json(secret: Mapping[str, Any] | None, key: str) -> Any:
    text = secret_text(secret, key)
    if not text:
        return None
    try:
        return load_bounded_json(text)
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
    for entry in list_of(_decoded_json(secret, ES_SECRET_MOUNTS_KEY)):
        item = mapping_of(entry)
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
