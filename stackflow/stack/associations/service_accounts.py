"""Service-account mode (Kibana → ``elastic/kibana``, Fleet Server → ``elastic/fleet-server``), pure.

The app-side Secret keeps the token (``name``, ``token``, ``hash``, ``serviceAccount``) and is reused
while complete; the ES-side Secret (type ``service-account-token``) carries the fully qualified token
name and its ``{PBKDF2_STRETCH}`` hash for Elasticsearch's service tokens file, as ECK writes them.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.associations.refs import AssociationRef
from stackflow.stack.associations.secrets import (
    SERVICE_ACCOUNT_TOKEN_TYPE,
    app_user_secret_name,
    association_resource_labels,
    es_user_name,
)
from stackflow.stack.associations.table import ELASTICSEARCH, Association
from stackflow.stack.labels import CREDENTIALS_LABEL, TYPE_LABEL
from stackflow.stack.objects import (
    Manifest,
    controller_owner_reference,
    decode_secret_data,
    encode_secret_data,
)

PBKDF2_STRETCH_PREFIX = "{PBKDF2_STRETCH}"
PBKDF2_COST = 10_000
_TOKEN_PREFIX = bytes((0, 1, 0, 1))


@dataclass(frozen=True)
class ServiceAccountToken:
    """A service account token: ``service_account`` is fully qualified (``elastic/kibana``)."""

    service_account: str
    token_name: str
    token: str
    hash: str


def token_name(*, namespace: str, name: str, uid: str) -> str:
    """``<ns>_<name>_<uid>``: the token name of an associated object."""
    return f"{namespace}_{name}_{uid}"


def pbkdf2_stretch_hash(secret: str, *, salt: bytes | None = None) -> str:
    """Elasticsearch's ``{PBKDF2_STRETCH}`` hash: PBKDF2-SHA512 over the hex SHA-512 of ``secret``."""
    salt = os.urandom(32) if salt is None else salt
    stretched = hashlib.sha512(secret.encode()).hexdigest().encode()
    derived = hashlib.pbkdf2_hmac("sha512", stretched, salt, PBKDF2_COST, 32)
    return (
        f"{PBKDF2_STRETCH_PREFIX}{PBKDF2_COST}${base64.b64encode(salt).decode()}"
        f"${base64.b64encode(derived).decode()}"
    )


def new_token(
    *, service_account: str, name: str, generate_secret: Callable[[], str]
) -> ServiceAccountToken:
    """A fresh token: base64 of ``\\x00\\x01\\x00\\x01<account>/<name>:<secret>``."""
    secret = generate_secret()
    raw = _TOKEN_PREFIX + f"{service_account}/{name}:{secret}".encode()
    return ServiceAccountToken(
        service_account=service_account,
        token_name=name,
        token=base64.b64encode(raw).decode(),
        hash=pbkdf2_stretch_hash(secret),
    )


def current_token(existing: Mapping[str, Any] | None) -> ServiceAccountToken | None:
    """The token kept in an app-side Secret, or None when any of its four fields is missing."""
    data = decode_secret_data(existing)
    fields = [
        data.get(key, b"").decode(errors="replace")
        for key in ("serviceAccount", "name", "token", "hash")
    ]
    return ServiceAccountToken(*fields) if all(fields) else None


def _cluster_labels(es: Mapping[str, Any]) -> dict[str, str]:
    cluster = view(es)
    return {
        ELASTICSEARCH.name_label: cluster.name,
        ELASTICSEARCH.namespace_label: cluster.namespace,
    }


def service_account_secrets(
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
    es: Mapping[str, Any],
    service_account: str,
    existing: Mapping[str, Any] | None,
    generate_secret: Callable[[], str],
) -> tuple[Manifest, Manifest]:
    """The app-side token Secret (owned by the associated object, as ECK 3.5 owns it: the parity
    tier's association scenario shows it) and the ES-side ``service-account-token`` Secret."""
    owner = view(associated)
    namespace, name = owner.namespace, owner.name
    token = current_token(existing) or new_token(
        service_account=service_account,
        name=token_name(namespace=namespace, name=name, uid=owner.uid),
        generate_secret=generate_secret,
    )
    labels = association_resource_labels(association, associated=associated, ref=ref)
    app_secret: Manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": app_user_secret_name(association, associated_name=name, ref=ref),
            "namespace": namespace,
            "labels": {**labels, **_cluster_labels(es), CREDENTIALS_LABEL: "true"},
            "ownerReferences": [controller_owner_reference(associated)],
        },
        "data": encode_secret_data(
            {
                "name": token.token_name,
                "token": token.token,
                "hash": token.hash,
                "serviceAccount": token.service_account,
            }
        ),
    }
    es_secret: Manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": es_user_name(
                association, associated_namespace=namespace, associated_name=name, ref=ref
            ),
            "namespace": view(es).namespace,
            "labels": {**labels, **_cluster_labels(es), TYPE_LABEL: SERVICE_ACCOUNT_TOKEN_TYPE},
            "ownerReferences": [controller_owner_reference(es)],
        },
        "data": encode_secret_data(
            {"name": f"{token.service_account}/{token.token_name}", "hash": token.hash}
        ),
    }
    return app_secret, es_secret
