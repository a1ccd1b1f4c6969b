"""HTTP certificate Secrets of an HTTP-serving application: its Service names and Secret names.

The Secrets themselves are built as for Elasticsearch, by :mod:`stackflow.stack.http_certificates`.
"""

from __future__ import annotations

from stackflow.stack import http_certificates
from stackflow.stack.apps.context import AppContext
from stackflow.stack.certificates import LeafRequest, service_dns_names, unique_in_order
from stackflow.stack.objects import Manifest


def http_service_name(context: AppContext) -> str:
    """Return the HTTP Service name ``<name>-<short>-http`` (Logstash: ``-ls-api``)."""
    return context.child_name(*context.kind.http_service_parts)


def certificate_request(context: AppContext) -> LeafRequest:
    """Return the names the HTTP certificate carries: the Service's DNS names and the user's SANs."""
    tls = http_certificates.http_tls_settings(context.spec)
    extra_dns, extra_ips = http_certificates.user_subject_alt_names(
        tls.get("selfSignedCertificate") or {}
    )
    service = http_service_name(context)
    dns = (*service_dns_names(service, context.namespace), *extra_dns)
    return LeafRequest(
        common_name=f"{service}.{context.namespace}.{context.kind.short}.local",
        dns_names=unique_in_order(dns),
        ip_addresses=unique_in_order(extra_ips),
    )


def http_certificate_secrets(context: AppContext) -> list[Manifest]:
    """Return ``-http-ca-internal``, ``-http-certs-internal`` and ``-http-certs-public`` (none without TLS)."""
    if not context.http_tls_enabled:
        return []
    names = http_certificates.HttpSecretNames(
        ca_internal=context.child_name("http", "ca", "internal"),
        certs_internal=context.child_name("http", "certs", "internal"),
        certs_public=context.child_name("http", "certs", "public"),
    )
    return http_certificates.http_certificate_secrets(
        context, names=names, request=lambda: certificate_request(context)
    )
