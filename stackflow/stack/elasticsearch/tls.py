"""HTTP and transport certificate Secrets: self-signed CAs, the HTTP certificate, per-pod certificates.

Each function reads the current Secrets through the build context and reuses what is still valid
(see :mod:`stackflow.stack.certificates`), so repeated builds return byte-identical Secrets.
"""

from __future__ import annotations

from stackflow.stack import http_certificates
from stackflow.stack.certificates import (
    KeyPair,
    LeafRequest,
    reconcile_ca,
    reconcile_leaf,
    service_dns_names,
    unique_in_order,
)
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.context import BuildContext
from stackflow.stack.http_certificates import CA_CERT_KEY, TLS_CERT_KEY, TLS_KEY_KEY, key_pair
from stackflow.stack.labels import ES_STATEFULSET_NAME_LABEL
from stackflow.stack.objects import Manifest, encode_secret_data

CA_KEY_KEY = "ca.key"


class MissingReferenceError(ValueError):
    """A Secret the spec references is missing or lacks a required key; nothing is built for it."""


def http_certificate_request(context: BuildContext) -> LeafRequest:
    """Return the names the HTTP certificate must carry: both HTTP Services and the user's SANs."""
    tls = http_certificates.http_tls_settings(context.spec)
    extra_dns, extra_ips = http_certificates.user_subject_alt_names(
        tls.get("selfSignedCertificate") or {}
    )
    dns_names = (
        *service_dns_names(names.http_service_name(context.name), context.namespace),
        *service_dns_names(names.internal_http_service_name(context.name), context.namespace),
        *extra_dns,
    )
    return LeafRequest(
        common_name=f"{names.http_service_name(context.name)}.{context.namespace}.es.local",
        dns_names=unique_in_order(dns_names),
        ip_addresses=unique_in_order(extra_ips),
    )


def http_secrets(context: BuildContext) -> list[Manifest]:
    """Return the HTTP CA, internal certificate and public certificate Secrets (none without TLS)."""
    if not context.http_tls_enabled:
        return []
    custom_name = http_certificates.custom_certificate_name(context.spec)
    if custom_name:
        custom = context.existing_secret_data(custom_name)
        if not custom.get(TLS_CERT_KEY) or not custom.get(TLS_KEY_KEY):
            raise MissingReferenceError(
                f"spec.http.tls.certificate.secretName: Secret {custom_name!r} must exist "
                f"and hold {TLS_CERT_KEY} and {TLS_KEY_KEY}"
            )
    secret_names = http_certificates.HttpSecretNames(
        ca_internal=names.http_ca_internal_secret_name(context.name),
        certs_internal=names.http_certs_internal_secret_name(context.name),
        certs_public=names.http_certs_public_secret_name(context.name),
    )
    return http_certificates.http_certificate_secrets(
        context, names=secret_names, request=lambda: http_certificate_request(context)
    )


def transport_ca(context: BuildContext) -> KeyPair:
    """Return the transport CA: the user's (``transport.tls.certificate``) or the self-signed one."""
    tls = (context.spec.get("transport") or {}).get("tls") or {}
    custom_name = (tls.get("certificate") or {}).get("secretName")
    if custom_name:
        custom = key_pair(context.existing_secret_data(str(custom_name)), CA_CERT_KEY, CA_KEY_KEY)
        if custom is not None:
            return custom
    current = key_pair(
        context.existing_secret_data(names.transport_ca_internal_secret_name(context.name)),
        TLS_CERT_KEY,
        TLS_KEY_KEY,
    )
    return reconcile_ca(
        current=current,
        common_name=f"{context.name}-transport",
        organizational_unit=context.name,
        now=context.now,
        settings=context.certificate_settings,
    )


def transport_ca_secrets(context: BuildContext, ca: KeyPair) -> list[Manifest]:
    """Return the transport CA Secret (certificate and key) and its public copy (soft-owned)."""
    return [
        context.secret(
            names.transport_ca_internal_secret_name(context.name),
            encode_secret_data({TLS_CERT_KEY: ca.cert_pem, TLS_KEY_KEY: ca.key_pem}),
        ),
        context.secret(
            names.transport_certs_public_secret_name(context.name),
            encode_secret_data({CA_CERT_KEY: ca.cert_pem}),
            soft_owned=True,
        ),
    ]


def transport_certificate_request(
    context: BuildContext, *, node_set: str, pod_name: str
) -> LeafRequest:
    """Return the names a pod's transport certificate carries."""
    tls = (context.spec.get("transport") or {}).get("tls") or {}
    extra_dns, extra_ips = http_certificates.user_subject_alt_names(tls)
    statefulset = names.statefulset_name(context.name, node_set)
    dns_names = (
        pod_name,
        f"{pod_name}.{statefulset}.{context.namespace}.svc",
        *service_dns_names(names.transport_service_name(context.name), context.namespace),
        *extra_dns,
    )
    return LeafRequest(
        common_name=f"{pod_name}.node.{context.name}.{context.namespace}.es.local",
        dns_names=unique_in_order(dns_names),
        ip_addresses=unique_in_order(extra_ips),
    )


def node_transport_certs_secret(
    context: BuildContext, *, ca: KeyPair, node_set: str, pod_names: list[str]
) -> Manifest:
    """Return a node set's transport Secret: ``<pod>.tls.crt``/``<pod>.tls.key`` per pod and ``ca.crt``."""
    secret_name = names.node_transport_certs_secret_name(context.name, node_set)
    current = context.existing_secret_data(secret_name)
    data: dict[str, bytes] = {CA_CERT_KEY: ca.cert_pem}
    for pod_name in pod_names:
        certificate = reconcile_leaf(
            current=key_pair(current, f"{pod_name}.{TLS_CERT_KEY}", f"{pod_name}.{TLS_KEY_KEY}"),
            ca=ca,
            request=transport_certificate_request(context, node_set=node_set, pod_name=pod_name),
            now=context.now,
            settings=context.certificate_settings,
        )
        data[f"{pod_name}.{TLS_CERT_KEY}"] = certificate.cert_pem
        data[f"{pod_name}.{TLS_KEY_KEY}"] = certificate.key_pem
    # Labelled with its StatefulSet, as ECK: the certificates of one node set belong to it.
    statefulset = names.statefulset_name(context.name, node_set)
    return context.secret(
        secret_name,
        encode_secret_data(data),
        labels={ES_STATEFULSET_NAME_LABEL: statefulset},
    )
