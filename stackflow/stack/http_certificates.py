"""HTTP certificate Secrets of any HTTP-serving owner (Elasticsearch or an application).

The owner's ``spec.http.tls`` chooses: a user certificate (``certificate.secretName``) served as
given, or a self-signed CA and a certificate it signs. Both yield an internal Secret (key included,
mounted by the pods) and a soft-owned public copy. Current Secrets are reused while valid (see
:mod:`stackflow.stack.certificates`), so a rebuild of an unchanged owner returns identical Secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from stackflow.stack.certificates import (
    CertificateSettings,
    KeyPair,
    LeafRequest,
    reconcile_ca,
    reconcile_leaf,
)
from stackflow.stack.objects import Manifest, encode_secret_data

CA_CERT_KEY = "ca.crt"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"


class CertificateContext(Protocol):
    """What the HTTP certificate builder needs of a build context (ES's or an application's)."""

    @property
    def name(self) -> str:
        """The owner's name."""
        ...

    @property
    def now(self) -> datetime:
        """The build's clock reading."""
        ...

    @property
    def certificate_settings(self) -> CertificateSettings:
        """Validity and rotation settings of generated certificates."""
        ...

    @property
    def spec(self) -> Mapping[str, Any]:
        """The owner's spec."""
        ...

    def existing_secret_data(self, name: str) -> dict[str, bytes]:
        """Return the decoded data of the current Secret ``name`` (empty when absent)."""
        ...

    def secret(
        self,
        name: str,
        data: Mapping[str, str],
        *,
        labels: Mapping[str, str] | None = None,
        soft_owned: bool = False,
    ) -> Manifest:
        """Return an owned Secret with base64 ``data``."""
        ...


@dataclass(frozen=True)
class HttpSecretNames:
    """The names of the owner's HTTP certificate Secrets."""

    ca_internal: str
    certs_internal: str
    certs_public: str


def http_tls_settings(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """Return ``spec.http.tls`` (empty when missing)."""
    tls: Mapping[str, Any] = (spec.get("http") or {}).get("tls") or {}
    return tls


def custom_certificate_name(spec: Mapping[str, Any]) -> str | None:
    """Return the user certificate's Secret name (``spec.http.tls.certificate.secretName``), if any."""
    name = (http_tls_settings(spec).get("certificate") or {}).get("secretName")
    return str(name) if name else None


def http_tls_requested(spec: Mapping[str, Any]) -> bool:
    """Whether the spec asks for TLS: a user certificate, or the self-signed one not disabled."""
    tls = http_tls_settings(spec)
    if custom_certificate_name(spec):
        return True
    return not bool((tls.get("selfSignedCertificate") or {}).get("disabled"))


def user_subject_alt_names(tls: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return the user's extra (DNS names, IP addresses) from TLS settings' ``subjectAltNames``."""
    entries = tls.get("subjectAltNames") or []
    dns = tuple(str(entry["dns"]) for entry in entries if entry.get("dns"))
    ips = tuple(str(entry["ip"]) for entry in entries if entry.get("ip"))
    return dns, ips


def key_pair(data: Mapping[str, bytes], cert_key: str, key_key: str) -> KeyPair | None:
    """Return the certificate and key stored under the two keys, or None when either is missing."""
    if cert_key in data and key_key in data:
        return KeyPair(cert_pem=data[cert_key], key_pem=data[key_key])
    return None


def http_certificate_secrets(
    context: CertificateContext, *, names: HttpSecretNames, request: Callable[[], LeafRequest]
) -> list[Manifest]:
    """Return the CA Secret (self-signed only), the internal and the public certificate Secrets.

    ``request`` names what a self-signed certificate carries; it is not asked for when the user
    provides the certificate. Call only when HTTP TLS is enabled.
    """
    custom_name = custom_certificate_name(context.spec)
    secrets: list[Manifest] = []
    if custom_name:
        # A user-provided certificate is served as given; the operator signs nothing.
        custom = context.existing_secret_data(custom_name)
        certificate = KeyPair(
            cert_pem=custom.get(TLS_CERT_KEY, b""), key_pem=custom.get(TLS_KEY_KEY, b"")
        )
        ca_pem = custom.get(CA_CERT_KEY, b"")
    else:
        ca = reconcile_ca(
            current=key_pair(
                context.existing_secret_data(names.ca_internal), TLS_CERT_KEY, TLS_KEY_KEY
            ),
            common_name=f"{context.name}-http",
            organizational_unit=context.name,
            now=context.now,
            settings=context.certificate_settings,
        )
        certificate = reconcile_leaf(
            current=key_pair(
                context.existing_secret_data(names.certs_internal), TLS_CERT_KEY, TLS_KEY_KEY
            ),
            ca=ca,
            request=request(),
            now=context.now,
            settings=context.certificate_settings,
        )
        ca_pem = ca.cert_pem
        secrets.append(
            context.secret(
                names.ca_internal,
                encode_secret_data({TLS_CERT_KEY: ca.cert_pem, TLS_KEY_KEY: ca.key_pem}),
            )
        )
    internal = {TLS_CERT_KEY: certificate.cert_pem, TLS_KEY_KEY: certificate.key_pem}
    public = {TLS_CERT_KEY: certificate.cert_pem}
    if ca_pem:
        internal[CA_CERT_KEY] = ca_pem
        public[CA_CERT_KEY] = ca_pem
    secrets.append(context.secret(names.certs_internal, encode_secret_data(internal)))
    secrets.append(context.secret(names.certs_public, encode_secret_data(public), soft_owned=True))
    return secrets
