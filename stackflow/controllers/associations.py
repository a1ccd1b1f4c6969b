"""The association controllers: one row per association pair of the association table (``kb-es``…).

An association's Secrets on both sides are its children; its refs reference the target object,
the target's HTTP Service and its public certificates Secret, wherever they live.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stackflow.api.kinds import kind_info
from stackflow.controllers.table import (
    ChildWatch,
    Controller,
    FlipStrategy,
    Gate,
    OwnersOf,
    ReferencesOf,
    owners_by_labels,
)
from stackflow.models.engine import ObjectKey
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import SECRETS, SERVICES
from stackflow.models.objects import view
from stackflow.stack.associations.refs import parse_refs
from stackflow.stack.associations.table import (
    ASSOCIATIONS,
    CONF_ANNOTATION_PREFIX,
    Association,
)

__all__ = [
    "ASSOCIATION_CONTROLLERS",
    "association_controller",
    "association_owners",
    "association_references",
    "association_secrets_label_selector",
    "others_conf_annotation",
]


def association_references(association: Association) -> ReferencesOf:
    """A pure ``references`` function: the objects whose changes concern ``association``'s refs.

    A managed ref references its target object, the target's HTTP Service and its public HTTP
    certificates Secret (all in the target's namespace); an external ref its Secret. Malformed
    refs reference nothing.
    """
    target = association.target
    target_kind = kind_info(target.kind).resource

    def references(obj: Mapping[str, Any]) -> list[ObjectKey]:
        keys: list[ObjectKey] = []
        for ref in parse_refs(obj, association).refs:
            if ref.is_external:
                keys.append(ObjectKey.of(SECRETS, namespace=ref.namespace, name=ref.secret_name))
                continue
            keys += [
                ObjectKey.of(target_kind, namespace=ref.namespace, name=ref.name),
                ObjectKey.of(
                    SERVICES,
                    namespace=ref.namespace,
                    name=ref.service_name or target.http_service_name(ref.name),
                ),
                ObjectKey.of(
                    SECRETS,
                    namespace=ref.namespace,
                    name=target.public_certs_secret_name(ref.name),
                ),
            ]
        return keys

    return references


def association_secrets_label_selector(association: Association) -> str:
    """The label selector of every Secret ``association`` makes (for the child watch)."""
    return f"{association.label_type}={association.association_type}"


def association_owners(association: Association) -> OwnersOf:
    """A pure owner mapper: an association Secret (either side) → its associated object."""
    by_labels = owners_by_labels(
        namespace_label=association.label_namespace, name_label=association.label_name
    )

    def owners(child: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
        if view(child).labels.get(association.label_type) != association.association_type:
            return ()
        return by_labels(child)

    return owners


def association_controller(association: Association) -> Controller:
    """One association controller (``kb-es``…)."""
    return Controller(
        name=association.name,
        primary=kind_info(association.associated_kind).resource,
        gate=Gate.DYNAMIC_SCOPE,
        children=(
            ChildWatch(
                kind=SECRETS,
                owners=association_owners(association),
                label_selector=association_secrets_label_selector(association),
            ),
        ),
        references=association_references(association),
        reference_kinds=(kind_info(association.target.kind).resource, SERVICES, SECRETS),
        flip=FlipStrategy.CONTROLLER,
        ignored_annotation=others_conf_annotation(association),
    )


def others_conf_annotation(association: Association) -> Callable[[str], bool]:
    """Whether an annotation key is another association's conf annotation (pure): written by
    the association beside it on the same object, it changes nothing ``association`` reads."""
    base = association.annotation_base

    def ignored(key: str) -> bool:
        own = key == base or key.startswith(f"{base}-")
        return key.startswith(CONF_ANNOTATION_PREFIX) and not own

    return ignored


ASSOCIATION_CONTROLLERS: tuple[Controller, ...] = tuple(
    association_controller(association) for association in ASSOCIATIONS
)
