"""Pure builders of the Secrets an association owns: the CA copy and the user Secrets on both sides.

Names follow ECK's ``FormatNameWithID``: single-ref associations use the bare names
(``<kb>-kb-es-ca``, ``<kb>-kibana-user``, ``<kbNs>-<kb>-kibana-user``); multi-ref ones insert the
association id ``<refNs>-<refName>`` (``<agent>-agent-es-<ns>-<es>-ca``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stackflow.stack.associations import bcrypt
from stackflow.stack.associations.refs import AssociationRef, association_id, with_id
from stackflow.stack.associations.table import ELASTICSEARCH, Association
from stackflow.stack.labels import CREDENTIALS_LABEL, TYPE_LABEL
from stackflow.stack.objects import (
    Manifest,
    controller_owner_reference,
    decode_secret_data,
    encode_secret_data,
)

USER_TYPE = "user"
SERVICE_ACCOUNT_TOKEN_TYPE = "service-account-token"
USER_NAME_FIELD = "name"
PASSWORD_HASH_FIELD = "passwordHash"
USER_ROLES_FIELD = "userRoles"


def _meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def association_labels(
    association: Association, *, associated_namespace: str, associated_name: str
) -> dict[str, str]:
    """The ``<kind>association.k8s.elastic.co/{name,namespace,type}`` labels of an associated object."""
    return {
        association.label_name: associated_name,
        association.label_namespace: associated_namespace,
        association.label_type: association.association_type,
    }


def association_resource_labels(
    association: Association, *, associated: Mapping[str, Any], ref: AssociationRef
) -> dict[str, str]:
    """The association labels plus the target's name/namespace labels (ECK's ``AssociationResourceLabels``)."""
    namespace, name = _meta(associated)
    return {
        association.target.name_label: ref.name_or_secret_name,
        association.target.namespace_label: ref.namespace,
        **association_labels(association, associated_namespace=namespace, associated_name=name),
    }


def ca_secret_name(association: Association, *, associated_name: str, ref: AssociationRef) -> str:
    """``<assoc>-<AssociationName>[-<id>]-ca``: the copy of the target's public HTTP certificates."""
    return with_id(
        f"{associated_name}-{association.name}", association_id(association, ref), tail="-ca"
    )


def ca_secret(
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
    public_certs: Mapping[str, Any],
) -> Manifest:
    """The CA copy in the associated namespace: the target's ``-http-certs-public`` data, owned by ``associated``."""
    namespace, name = _meta(associated)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": ca_secret_name(association, associated_name=name, ref=ref),
            "namespace": namespace,
            "labels": association_resource_labels(association, associated=associated, ref=ref),
            "ownerReferences": [controller_owner_reference(associated)],
        },
        "data": dict(public_certs.get("data") or {}),
    }


def ca_cert_provided(ca_secret_manifest: Mapping[str, Any]) -> bool:
    """Whether the CA copy has a non-empty ``ca.crt`` (``caCertProvided`` in the conf)."""
    return bool(decode_secret_data(ca_secret_manifest).get("ca.crt"))


def _require_user(association: Association) -> str:
    if association.user_secret_suffix is None:
        raise ValueError(f"association {association.name} has no user")
    return association.user_secret_suffix


def app_user_secret_name(
    association: Association, *, associated_name: str, ref: AssociationRef
) -> str:
    """``<assoc>[-<id>]-<suffix>``: the Secret holding the password in the associated namespace."""
    return with_id(
        associated_name, association_id(association, ref), tail=f"-{_require_user(association)}"
    )


def es_user_name(
    association: Association,
    *,
    associated_namespace: str,
    associated_name: str,
    ref: AssociationRef,
) -> str:
    """``<assocNs>-<assoc>[-<id>]-<suffix>``: the user name, its ES-side Secret and the app Secret's key."""
    return with_id(
        f"{associated_namespace}-{associated_name}",
        association_id(association, ref),
        tail=f"-{_require_user(association)}",
    )


def app_user_secret(
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
    existing: Mapping[str, Any] | None,
    generate_password: Callable[[], str],
) -> tuple[Manifest, str]:
    """The app-side user Secret and its password (the existing one reused when present).

    Key ``<assocNs>-<assoc>[-<id>]-<suffix>``, owner the associated object, labels the association
    resource labels plus ``eck.k8s.elastic.co/credentials``.
    """
    namespace, name = _meta(associated)
    key = es_user_name(association, associated_namespace=namespace, associated_name=name, ref=ref)
    password = (
        decode_secret_data(existing).get(key, b"").decode(errors="replace") or generate_password()
    )
    labels = association_resource_labels(association, associated=associated, ref=ref)
    labels[CREDENTIALS_LABEL] = "true"
    manifest: Manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": app_user_secret_name(association, associated_name=name, ref=ref),
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [controller_owner_reference(associated)],
        },
        "data": encode_secret_data({key: password}),
    }
    return manifest, password


def es_user_labels(
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
    es: Mapping[str, Any],
) -> dict[str, str]:
    """Labels of the ES-side user Secret: association resource labels, ES cluster labels, type ``user``."""
    es_namespace, es_name = _meta(es)
    return {
        **association_resource_labels(association, associated=associated, ref=ref),
        ELASTICSEARCH.name_label: es_name,
        ELASTICSEARCH.namespace_label: es_namespace,
        TYPE_LABEL: USER_TYPE,
    }


def password_hash(
    password: str,
    existing: Mapping[str, Any] | None,
    *,
    hasher: Callable[[bytes], bytes] = bcrypt.hash_password,
) -> bytes:
    """The bcrypt hash to store: the existing one while it still matches ``password``, else a new one."""
    current = decode_secret_data(existing).get(PASSWORD_HASH_FIELD, b"")
    if current and bcrypt.check_password(password.encode(), current):
        return current
    return hasher(password.encode())


def es_user_secret(
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
    es: Mapping[str, Any],
    password: str,
    existing: Mapping[str, Any] | None,
    hasher: Callable[[bytes], bytes] = bcrypt.hash_password,
) -> Manifest:
    """The ES-side user Secret in ``es``'s namespace (``name``, ``passwordHash``, ``userRoles``), owned by ``es``.

    ``es`` is the Elasticsearch the user lives in: the target, or for ``*-kibana`` associations the
    Elasticsearch of the target Kibana.
    """
    namespace, name = _meta(associated)
    es_namespace, _ = _meta(es)
    user = es_user_name(association, associated_namespace=namespace, associated_name=name, ref=ref)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": user,
            "namespace": es_namespace,
            "labels": es_user_labels(association, associated=associated, ref=ref, es=es),
            "ownerReferences": [controller_owner_reference(es)],
        },
        "data": encode_secret_data(
            {
                USER_NAME_FIELD: user,
                PASSWORD_HASH_FIELD: password_hash(password, existing, hasher=hasher),
                USER_ROLES_FIELD: association.roles_for(associated),
            }
        ),
    }


def user_secret_selector(
    association: Association, *, associated: Mapping[str, Any], ref: AssociationRef
) -> dict[str, str]:
    """Labels selecting the ES-side user Secret of one ref (deleted on unbind, ECK's ``userLabelSelector``)."""
    return {
        TYPE_LABEL: USER_TYPE,
        **association_resource_labels(association, associated=associated, ref=ref),
    }


def unbind_selectors(
    association: Association, *, associated: Mapping[str, Any], ref: AssociationRef
) -> list[dict[str, str]]:
    """Labels selecting the Elasticsearch-side credentials of one ref, in any namespace: its
    user Secret and its service-account token Secret (ECK's ``Unbind``: removing them revokes the
    application's access at once). The CA copy stays, as in ECK."""
    return [
        user_secret_selector(association, associated=associated, ref=ref),
        {
            TYPE_LABEL: SERVICE_ACCOUNT_TOKEN_TYPE,
            **association_resource_labels(association, associated=associated, ref=ref),
        },
    ]


def association_secrets_selector(
    association: Association, *, associated_namespace: str, associated_name: str
) -> dict[str, str]:
    """Labels selecting every Secret the association made for one associated object, in all namespaces."""
    return association_labels(
        association, associated_namespace=associated_namespace, associated_name=associated_name
    )


def orphaned_secrets(
    association: Association,
    *,
    secrets: Iterable[Mapping[str, Any]],
    refs: Iterable[AssociationRef],
) -> list[Manifest]:
    """Of ``secrets`` (listed with :func:`association_secrets_selector`), those no current ref needs.

    A Secret is still needed when its target name/namespace labels match a current ref, as in
    ECK's ``deleteOrphanedResources``; with no refs (the associated object is gone) all are orphans.
    """
    wanted = {(ref.namespace, ref.name_or_secret_name) for ref in refs}
    orphans: list[Manifest] = []
    for secret in secrets:
        labels = (secret.get("metadata") or {}).get("labels") or {}
        target = (
            labels.get(association.target.namespace_label),
            labels.get(association.target.name_label),
        )
        if target not in wanted:
            orphans.append(dict(secret))
    return orphans
