"""How the operator reaches a cluster in scope: its endpoint, from the cluster's Secrets.

Shared by every family that calls a cluster's HTTP API (Elasticsearch, the autoscaler, remote
clusters, StackConfigPolicy, AutoOps) and by the cluster steps: the internal HTTP Service, the
operator's internal user and the internal CA.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activities.context import ControllerContext
from stackflow.elastic.factory import ElasticsearchEndpoint
from stackflow.kube import errors
from stackflow.models.kinds import SECRETS
from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names
from stackflow.stack.objects import decode_secret_data

__all__ = ["INTERNAL_USER", "endpoint_for", "operator_endpoint"]

#: The operator's own user of every cluster.
INTERNAL_USER = "elastic-internal"


def endpoint_for(
    es: Mapping[str, Any], existing: Mapping[tuple[str, str], Mapping[str, Any]]
) -> ElasticsearchEndpoint | None:
    """How the operator reaches the cluster: internal Service, internal user, internal CA (pure)."""
    metadata = es["metadata"]
    namespace, name = str(metadata["namespace"]), str(metadata["name"])
    users = decode_secret_data(existing.get(("Secret", names.internal_users_secret_name(name))))
    password = users.get(INTERNAL_USER)
    if password is None:
        return None
    certs = decode_secret_data(
        existing.get(("Secret", names.http_certs_internal_secret_name(name)))
    )
    ca_pem = certs.get("ca.crt")
    scheme = "https" if ca_pem else "http"
    service = names.internal_http_service_name(name)
    return ElasticsearchEndpoint(
        namespace=namespace,
        name=name,
        url=f"{scheme}://{service}.{namespace}.svc:9200",
        username=INTERNAL_USER,
        password=password.decode(),
        ca_pem=ca_pem,
    )


async def operator_endpoint(
    context: ControllerContext, es: Mapping[str, Any]
) -> ElasticsearchEndpoint | None:
    """How the operator reaches a cluster in scope, from its internal-users and HTTP-certs
    Secrets read through the scoped client; None while it has no internal user yet."""
    namespace, name = view(es).namespace, view(es).name
    existing: dict[tuple[str, str], dict[str, Any]] = {}
    for secret_name in (
        names.internal_users_secret_name(name),
        names.http_certs_internal_secret_name(name),
    ):
        try:
            secret = await context.scoped.get(SECRETS, namespace=namespace, name=secret_name)
        except errors.NotFound:
            continue
        existing[("Secret", secret_name)] = secret
    return endpoint_for(es, existing)
