"""HTTP certificate Secrets of an HTTP-serving application: self-signed CA, certificate, public copy.

Current Secrets are reused while valid (see :mod:`stackflow.stack.certificates`), so a rebuild of an
unchanged application returns byte-identical Secrets.
"""

from __future__ import annotations

from collections.abc import Mapping

from stackflow.stack.apps.context import AppContext
from stackflow.stack.certificates import (
    KeyPair,
    LeafRequest,
    reconcile_ca,
    reconcile_leaf,
    service_dns_names,
    unique_in_order,
)
from stackflow.stack.objects import Manifest, encode_secret_data

CA_CERT_KEY = "ca.crt"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"


def _pair(data: Mapping[str, bytes]) -> KeyPair | None:
    if TLS_CERT_KEY in data and TLS_KEY_KEY in data:
        return KeyPair(cert_pem=data[TLS_CERT_KEY], key_pem=data[TLS_KEY_KEY])
    return None


def http_service_name(context: AppContext) -> str:
    """Return the HTTP Service name ``<name>-<short>-http`` (Logstash: ``-ls-api``)."""
    return context.child_name(*context.kind.http_service_parts)


def certificate_request(context: AppContext) -> LeafRequest:
    """Return the names the HTTP certificate carries: the Service's DNS names and the user's SANs."""
    tls = (context.spec.get("http") or {}).get("tls") or {}
    entries = (tls.get("selfSignedCertificate") or {}).get("subjectAltNames") or []
    service = http_service_name(context)
    dns = (
        *service_dns_names(service, context.namespace),
        *(str(entry["dns"]) for entry in entries if entry.get("dns")),
    )
    ips = tuple(str(entry["ip"]) for entry in entries if entry.get("ip"))
    return LeafRequest(
        common_name=f"{service}.{context.namespace}.{context.kind.short}.local",
        dns_names=unique_in_order(dns),
        ip_addresses=unique_in_order(ips),
    )


def http_certificate_secrets(context: AppContext) -> list[Manifest]:
    """Return ``-http-ca-internal``, ``-http-certs-internal`` and ``-http-certs-public`` (none without TLS)."""
    if not context.http_tls_enabled:
        return []
    tls = (context.spec.get("http") or {}).get("tls") or {}
    custom_name = (tls.get("certificate") or {}).get("secretName")
    secrets: list[Manifest] = []
    if custom_name:
        # A user-provided certificate is served as given; the operator signs nothing.
        custom = context.existing_secret_data(str(custom_name))
        certificate = KeyPair(
            cert_pem=custom.get(TLS_CERT_KEY, b""), key_pem=custom.get(TLS_KEY_KEY, b"")
        )
        ca_pem = custom.get(CA_CERT_KEY, b"")
    else:
        ca_name = context.child_name("http", "ca", "internal")
        ca = reconcile_ca(
            current=_pair(context.existing_secret_data(ca_name)),
            common_name=f"{context.name}-http",
            organizational_unit=context.name,
            now=context.now,
            settings=context.certificate_settings,
        )
        certificate = reconcile_leaf(
            current=_pair(
                context.existing_secret_data(context.child_name("http", "certs", "internal"))
            ),
            ca=ca,
            request=certificate_request(context),
            now=context.now,
            settings=context.certificate_settings,
        )
        ca_pem = ca.cert_pem
        secrets.append(
            context.secret(
                ca_name, encode_secret_data({TLS_CERT_KEY: ca.cert_pem, TLS_KEY_KEY: ca.key_pem})
            )
        )
    internal = {TLS_CERT_KEY: certificate.cert_pem, TLS_KEY_KEY: certificate.key_pem}
    public = {TLS_CERT_KEY: certificate.cert_pem}
    if ca_pem:
        internal[CA_CERT_KEY] = ca_pem
        public[CA_CERT_KEY] = ca_pem
    secrets.append(
        context.secret(
            context.child_name("http", "certs", "internal"), encode_secret_data(internal)
        )
    )
    secrets.append(
        context.secret(
            context.child_name("http", "certs", "public"),
            encode_secret_data(public),
            soft_owned=True,
        )
    )
    return secrets
