"""The association flip mapper (pure): which associated objects a namespace flip must trigger.

As ECK: an associated object is triggered when it lives in the flipped namespace or when any of
its refs of this association (namespace defaulted) points into it. Unlike ECK, transitive refs are
followed: when a target reaches Elasticsearch through its own association (a Fleet Server Agent's
``elasticsearchRefs``, a Kibana's ``elasticsearchRef``), objects referring to that target are
triggered when the Elasticsearch's namespace flips — Agent → Fleet Server → Elasticsearch works
across three namespaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.associations.refs import parse_refs
from stackflow.stack.associations.table import (
    TRANSITIVE_ES_ASSOCIATION,
    Association,
    association_named,
)


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = view(obj)
    return meta.namespace, meta.name


def ref_namespaces(obj: Mapping[str, Any], association: Association) -> set[str]:
    """The namespaces ``obj``'s refs of ``association`` point into (malformed refs are skipped)."""
    return {ref.namespace for ref in parse_refs(obj, association).refs}


def _targets_reaching_namespace(
    association: Association, namespace: str, targets: Iterable[Mapping[str, Any]]
) -> set[tuple[str, str]]:
    """Targets of ``association`` whose own Elasticsearch refs point into ``namespace``."""
    transitive_name = TRANSITIVE_ES_ASSOCIATION.get(association.name)
    if transitive_name is None:
        return set()
    transitive = association_named(transitive_name)
    return {
        _key(target)
        for target in targets
        if target.get("kind", transitive.associated_kind) == transitive.associated_kind
        and namespace in ref_namespaces(target, transitive)
    }


def flip_targets(
    association: Association,
    *,
    namespace: str,
    associated_objects: Sequence[Mapping[str, Any]],
    target_objects: Sequence[Mapping[str, Any]] | None = None,
) -> list[Mapping[str, Any]]:
    """The associated objects to trigger when ``namespace``'s scope flips, each once, in list order.

    ``associated_objects`` is every object of the associated kind (cluster-wide, unscoped list);
    ``target_objects`` every object of the target kind, used for transitive refs. When the target
    kind is the associated kind (Agent → Fleet Server Agent) the associated list is used for both.
    """
    if target_objects is None:
        target_objects = (
            associated_objects if association.target.kind == association.associated_kind else ()
        )
    transitive_targets = _targets_reaching_namespace(association, namespace, target_objects)
    triggered: list[Mapping[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for obj in associated_objects:
        key = _key(obj)
        if key in seen:
            continue
        refs = parse_refs(obj, association).refs
        direct = key[0] == namespace or any(ref.namespace == namespace for ref in refs)
        indirect = any(
            (ref.namespace, ref.name) in transitive_targets for ref in refs if not ref.is_external
        )
        if direct or indirect:
            seen.add(key)
            triggered.append(obj)
    return triggered
