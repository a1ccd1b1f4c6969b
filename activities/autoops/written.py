"""The objects an AutoOps policy wrote for each cluster, found by the policy's labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, SECRETS, Kind
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.stack.policies.autoops import (
    ES_NAME_LABEL,
    ES_NAMESPACE_LABEL,
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    SECRET_TYPE_LABEL,
)

__all__ = [
    "API_KEY_ID_ANNOTATION",
    "POLICY_OBJECT_KINDS",
    "ClusterObjects",
    "policy_selector",
    "written_objects",
]

#: The id of the API key the Secret holds (the clean-up invalidates it by id).
API_KEY_ID_ANNOTATION = "autoops.k8s.elastic.co/api-key-id"


POLICY_OBJECT_KINDS: tuple[Kind, ...] = (DEPLOYMENTS, CONFIGMAPS, SECRETS)


def policy_selector(namespace: str, name: str) -> str:
    return equality_selector_string({POLICY_NAMESPACE_LABEL: namespace, POLICY_NAME_LABEL: name})


@dataclass
class ClusterObjects:
    """The objects a policy wrote for one cluster, found by their labels."""

    es_namespace: str
    es_name: str
    objects: list[tuple[Kind, dict[str, Any]]] = field(default_factory=list)

    def secret(self, secret_type: str) -> dict[str, Any] | None:
        """Its Secret of ``secret_type`` (``api-key``, ``ca``), if any."""
        for kind, obj in self.objects:
            if kind is SECRETS and view(obj).labels.get(SECRET_TYPE_LABEL) == secret_type:
                return obj
        return None


async def written_objects(
    client: ScopedClient | UnscopedClient,
    namespace: str,
    name: str,
    kinds: tuple[Kind, ...] = POLICY_OBJECT_KINDS,
) -> dict[str, ClusterObjects]:
    """Every object of ``kinds`` the policy wrote, by cluster key, from the policy labels."""
    found: dict[str, ClusterObjects] = {}
    selector = policy_selector(namespace, name)
    for kind in kinds:
        listed = await client.list(kind, namespace=namespace, label_selector=selector)
        for item in listed["items"]:
            labels = view(item).labels
            es_namespace, es_name = labels.get(ES_NAMESPACE_LABEL), labels.get(ES_NAME_LABEL)
            if not es_namespace or not es_name:
                continue
            key = f"{es_namespace}/{es_name}"
            found.setdefault(key, ClusterObjects(es_namespace, es_name)).objects.append(
                (kind, item)
            )
    return found
