"""The soft-owner marks of the Secrets the policies write: ECK's owner labels for one policy, its
owner-refs annotation for several, and the owners read back from them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.stack.labels import (
    SOFT_OWNER_KIND_LABEL,
    SOFT_OWNER_NAME_LABEL,
    SOFT_OWNER_NAMESPACE_LABEL,
)
from stackflow.stack.policies.stack_config.policy import POLICY_KIND

#: With several owning policies: a JSON list of their ``namespace/name`` (ECK's annotation).
SOFT_OWNER_REFS_ANNOTATION = "eck.k8s.elastic.co/owner-refs"


def secret_owners(secret: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """The policies soft-owning a Secret, as (namespace, name): the owner labels when one policy
    owns it, the owner-refs annotation when several do; none when no policy does."""
    meta = view(secret)
    if meta.labels.get(SOFT_OWNER_KIND_LABEL) != POLICY_KIND:
        return ()
    refs = meta.annotations.get(SOFT_OWNER_REFS_ANNOTATION)
    if refs is not None:
        try:
            listed = load_bounded_json(refs)
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
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    owners: Sequence[str],
    *,
    single: bool = False,
) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations of a Secret owned by ``owners`` (``namespace/name`` each).

    The kind label and the owner-refs annotation (a compact JSON list, as Go writes it), however
    many owners: ECK 3.5 marks the file-settings and policy-config Secrets so even for one
    policy. ``single`` (a secret-mount copy, which one policy owns): ECK's three owner labels
    when there is one owner. None: every mark removed, so the Elasticsearch controller takes its
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
    if single and len(unique) == 1:
        namespace, _, name = unique[0].partition("/")
        new_labels |= {
            SOFT_OWNER_KIND_LABEL: POLICY_KIND,
            SOFT_OWNER_NAMESPACE_LABEL: namespace,
            SOFT_OWNER_NAME_LABEL: name,
        }
    elif unique:
        new_labels[SOFT_OWNER_KIND_LABEL] = POLICY_KIND
        new_annotations[SOFT_OWNER_REFS_ANNOTATION] = json.dumps(unique, separators=(",", ":"))
    return new_labels, new_annotations
