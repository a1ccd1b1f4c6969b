"""The association conf annotation: its name, its JSON, stale clean-up, and the external-target conf.

The association controller writes, on the associated object, one annotation per ref whose value is
the JSON of ECK's ``AssociationConf``; the application controller reads it to configure the URL,
credentials and CA. The JSON keys and their order are Go's ``json.Marshal`` of that struct.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.stack.associations.refs import AssociationRef
from stackflow.stack.associations.table import NO_AUTH_REQUIRED, Association

EXTERNAL_URL_KEY = "url"
EXTERNAL_USERNAME_KEY = "username"
EXTERNAL_PASSWORD_KEY = "password"
EXTERNAL_API_KEY_KEY = "api-key"
CA_CERT_KEY = "ca.crt"
SERVICE_ACCOUNT_TOKEN_KEY = "token"


@dataclass(frozen=True)
class AssociationConf:
    """ECK's ``commonv1.AssociationConf``."""

    auth_secret_name: str = ""
    auth_secret_key: str = ""
    is_api_key: bool = False
    is_service_account: bool = False
    ca_cert_provided: bool = False
    ca_secret_name: str = ""
    additional_secrets_hash: str = ""
    url: str = ""
    version: str = ""
    serverless: bool = False
    client_cert_secret_name: str = ""
    transitive_es_client_cert_secret_name: str | None = None

    def to_object(self) -> dict[str, Any]:
        """The JSON object, keys in Go struct order, ``omitempty`` fields left out when empty."""
        data: dict[str, Any] = {
            "authSecretName": self.auth_secret_name,
            "authSecretKey": self.auth_secret_key,
            "isApiKey": self.is_api_key,
            "isServiceAccount": self.is_service_account,
            "caCertProvided": self.ca_cert_provided,
            "caSecretName": self.ca_secret_name,
        }
        if self.additional_secrets_hash:
            data["additionalSecretsHash"] = self.additional_secrets_hash
        data["url"] = self.url
        data["version"] = self.version
        if self.serverless:
            data["serverless"] = True
        if self.client_cert_secret_name:
            data["clientCertSecretName"] = self.client_cert_secret_name
        if self.transitive_es_client_cert_secret_name is not None:
            transitive = {}
            if self.transitive_es_client_cert_secret_name:
                transitive["clientCertSecretName"] = self.transitive_es_client_cert_secret_name
            data["transitiveESRef"] = transitive
        return data

    def to_json(self) -> str:
        """The annotation value: compact JSON as Go writes it."""
        return json.dumps(self.to_object(), separators=(",", ":"))

    @property
    def no_auth_required(self) -> bool:
        """True for associations without credentials (``authSecretName: "-"``)."""
        return self.auth_secret_name == NO_AUTH_REQUIRED

    def is_configured(self) -> bool:
        """ECK's ``IsConfigured``: auth, URL, and the CA Secret when a CA is provided."""
        if self.ca_cert_provided and not self.ca_secret_name:
            return False
        auth = self.no_auth_required or bool(self.auth_secret_name and self.auth_secret_key)
        return auth and bool(self.url)


class ConfError(ValueError):
    """An annotation value or an external-target Secret that cannot be used."""


def parse_conf(value: str) -> AssociationConf:
    """Parse an annotation value back into an :class:`AssociationConf` (unknown keys ignored)."""
    try:
        data = load_bounded_json(value)
    except ValueError as error:
        raise ConfError(f"association conf is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ConfError("association conf must be a JSON object")
    transitive = data.get("transitiveESRef")
    return AssociationConf(
        auth_secret_name=str(data.get("authSecretName") or ""),
        auth_secret_key=str(data.get("authSecretKey") or ""),
        is_api_key=bool(data.get("isApiKey")),
        is_service_account=bool(data.get("isServiceAccount")),
        ca_cert_provided=bool(data.get("caCertProvided")),
        ca_secret_name=str(data.get("caSecretName") or ""),
        additional_secrets_hash=str(data.get("additionalSecretsHash") or ""),
        url=str(data.get("url") or ""),
        version=str(data.get("version") or ""),
        serverless=bool(data.get("serverless")),
        client_cert_secret_name=str(data.get("clientCertSecretName") or ""),
        transitive_es_client_cert_secret_name=(
            str(transitive.get("clientCertSecretName") or "")
            if isinstance(transitive, dict)
            else None
        ),
    )


def conf_annotation_name(association: Association, ref: AssociationRef) -> str:
    """The conf annotation of ``ref``: the bare base, or ``<base>-<HashObject(ref)>`` for multi-ref kinds."""
    if association.hashed_annotation:
        return f"{association.annotation_base}-{ref.hash()}"
    return association.annotation_base


def stale_conf_annotations(
    association: Association,
    *,
    annotations: Mapping[str, str] | None,
    refs: Iterable[AssociationRef],
) -> list[str]:
    """The ``<base>*`` annotations to remove: those no current ref of ``association`` owns.

    Mirrors ECK's ``RemoveObsoleteAssociationConfs``: an annotation is this association's when it
    is ``<base>`` or ``<base>-…``; the bases (``es-conf``, ``kb-conf``, ``ent-conf``…) never prefix each other.
    """
    expected = {conf_annotation_name(association, ref) for ref in refs}
    base = association.annotation_base
    return sorted(
        key
        for key in (annotations or {})
        if (key == base or key.startswith(base + "-")) and key not in expected
    )


def service_url(service: Mapping[str, Any], *, scheme: str, base_path: str = "") -> str | None:
    """``<scheme>://<svc>.<ns>.svc:<port><basePath>``, the port picked by name (``http``/``https``).

    Returns None when the Service has no port of that name (ECK: the association stays Pending).
    """
    meta = view(service)
    spec = service.get("spec") or {}
    for port in spec.get("ports") or []:
        if isinstance(port, Mapping) and port.get("name") == scheme and port.get("port"):
            return f"{scheme}://{meta.name}.{meta.namespace}.svc:{port['port']}{base_path}"
    return None


def managed_conf(
    *,
    ca_secret_name: str,
    ca_cert_provided: bool,
    url: str,
    version: str,
    auth_secret_name: str,
    auth_secret_key: str = "",
    is_service_account: bool = False,
    client_cert_secret_name: str = "",
) -> AssociationConf:
    """The conf of a ref to a managed target, once its CA, URL and credentials are known."""
    return AssociationConf(
        auth_secret_name=auth_secret_name,
        auth_secret_key=auth_secret_key,
        is_service_account=is_service_account,
        ca_cert_provided=ca_cert_provided,
        ca_secret_name=ca_secret_name,
        url=url,
        version=version,
        client_cert_secret_name=client_cert_secret_name,
    )


def external_conf(
    *, ref: AssociationRef, secret_data: Mapping[str, bytes], version: str
) -> AssociationConf:
    """The conf of an external ref from its Secret's decoded data (``url``, credentials, ``ca.crt``).

    The Secret needs ``url`` and either ``username`` + ``password`` or ``api-key`` (as ECK's
    ``GetUnmanagedAssociationConnectionInfoFromSecret``); the conf points straight at it.
    """
    if not ref.is_external:
        raise ConfError(f"{ref.key} is not an external reference")
    url = secret_data.get(EXTERNAL_URL_KEY, b"").decode(errors="replace")
    if not url:
        raise ConfError(f"secret {ref.key}: url secret field cannot be empty")
    api_key = secret_data.get(EXTERNAL_API_KEY_KEY, b"")
    if not api_key:
        if not secret_data.get(EXTERNAL_USERNAME_KEY):
            raise ConfError(f"secret {ref.key}: username secret field cannot be empty")
        if not secret_data.get(EXTERNAL_PASSWORD_KEY):
            raise ConfError(f"secret {ref.key}: password secret field cannot be empty")
    ca_provided = bool(secret_data.get(CA_CERT_KEY))
    return AssociationConf(
        auth_secret_name=ref.secret_name,
        auth_secret_key=EXTERNAL_API_KEY_KEY if api_key else EXTERNAL_PASSWORD_KEY,
        is_api_key=bool(api_key),
        ca_cert_provided=ca_provided,
        ca_secret_name=ref.secret_name if ca_provided else "",
        url=url,
        version=version,
    )


def no_auth_conf(
    *, ca_secret_name: str, ca_cert_provided: bool, url: str, version: str
) -> AssociationConf:
    """The conf of an association without credentials (KB→ENT, KB→EPR, Agent→Fleet Server)."""
    return managed_conf(
        ca_secret_name=ca_secret_name,
        ca_cert_provided=ca_cert_provided,
        url=url,
        version=version,
        auth_secret_name=NO_AUTH_REQUIRED,
    )
