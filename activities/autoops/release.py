"""Releasing what a policy holds for one cluster, the saga's compensation (``release_cluster``).

Each served cluster is recorded as ``agent_compensation(cluster)`` when the reconcile acquires it,
and released by ``release_cluster`` when the reconcile reports it no longer kept (``release_now``),
when the policy leaves scope, or before its finalizer: the cluster's API key invalidated, then its
agent's Deployment, ConfigMap and Secrets deleted (the API-key Secret last).

Invalidating needs credentials, and a cluster out of scope may not be read (its internal-users
Secret is in its namespace). So the API-key Secret, in the policy's namespace, keeps what a
clean-up needs: the encoded key (``api_key``, what the agent uses) and its id (an annotation).
A cluster in scope is asked as the operator's internal user to invalidate every key of the
key's name (a key whose Secret write was lost included); one out of scope is asked by the key
itself to invalidate its own id (an API key may invalidate itself: the key's role grants
``manage_own_api_key`` for that), trusting the CA kept in the policy's CA Secret.
"""

from __future__ import annotations

import logging
from typing import Any

from activities.autoops.written import API_KEY_ID_ANNOTATION, ClusterObjects, written_objects
from activities.context import ControllerContext
from activities.endpoints import operator_endpoint
from stackflow.controllers.autoops import (
    ELASTICSEARCH,
    RELEASE_CLUSTER_ACTIVITY,
)
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.elastic.factory import ElasticsearchEndpoint
from stackflow.kube import errors
from stackflow.models.engine import (
    CompensateInput,
    CompensateResult,
    CompensationStep,
)
from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names as es_names
from stackflow.stack.objects import decode_secret_data
from stackflow.stack.policies.autoops import (
    API_KEY_SECRET_TYPE,
    CA_SECRET_TYPE,
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    SECRET_TYPE_LABEL,
    api_key_name,
)
from stackflow.stack.policies.autoops_agent import API_KEY_SECRET_KEY

__all__ = ["agent_compensation", "invalidate_api_key", "release_cluster", "release_objects"]

logger = logging.getLogger(__name__)


async def invalidate_api_key(context: ControllerContext, written: ClusterObjects) -> None:
    """Invalidate the cluster's API key: as the operator's user while the cluster is in scope
    (every key of the name), else as the key itself (its own id, the CA from the CA Secret).
    A cluster deleted from a managed namespace took its keys with it: nothing to ask."""
    secret = written.secret(API_KEY_SECRET_TYPE)
    if secret is None:
        return
    meta = view(secret)
    es: dict[str, Any] | None
    try:
        es = await context.scoped.get(
            ELASTICSEARCH, namespace=written.es_namespace, name=written.es_name
        )
    except errors.NotFound:
        if context.matcher.name_matches(written.es_namespace):
            return  # deleted: its API keys went with it
        es = None  # out of scope: not to be read
    endpoint = await operator_endpoint(context, es) if es is not None else None
    if endpoint is not None:
        name = api_key_name(
            policy_namespace=meta.labels.get(POLICY_NAMESPACE_LABEL, meta.namespace),
            policy_name=meta.labels.get(POLICY_NAME_LABEL, ""),
            es_namespace=written.es_namespace,
            es_name=written.es_name,
        )
        async with context.elasticsearch_session(endpoint) as api:
            await api.invalidate_api_key(name=name)
        return
    key_id = meta.annotations.get(API_KEY_ID_ANNOTATION)
    encoded = decode_secret_data(secret).get(API_KEY_SECRET_KEY)
    if not key_id or encoded is None:
        logger.warning("API-key Secret %s/%s has no key to invalidate", meta.namespace, meta.name)
        return
    ca_pem = decode_secret_data(written.secret(CA_SECRET_TYPE)).get("ca.crt")
    self_endpoint = ElasticsearchEndpoint(
        namespace=written.es_namespace,
        name=written.es_name,
        url=(
            f"{'https' if ca_pem is not None else 'http'}://"
            f"{es_names.internal_http_service_name(written.es_name)}.{written.es_namespace}.svc:9200"
        ),
        username="",
        password="",
        ca_pem=ca_pem,
        api_key=encoded.decode(),
    )
    async with context.elasticsearch_session(self_endpoint) as api:
        try:
            await api.invalidate_api_key(ids=(key_id,))
        except ElasticsearchError as error:
            if error.status != 401:
                raise
            # The key no longer authenticates: it is invalidated (or its cluster was recreated).


async def release_objects(context: ControllerContext, written: ClusterObjects) -> list[str]:
    """Invalidate a cluster's key, then delete every object written for it."""
    await invalidate_api_key(context, written)
    deleted: list[str] = []
    # The API-key Secret last: if a delete fails, the next try still finds the key's id.
    ordered = sorted(
        written.objects,
        key=lambda item: view(item[1]).labels.get(SECRET_TYPE_LABEL) == API_KEY_SECRET_TYPE,
    )
    for kind, obj in ordered:
        meta = view(obj)
        try:
            await context.scoped.delete(kind, namespace=meta.namespace, name=meta.name)
        except errors.NotFound:
            continue
        deleted.append(f"{kind.kind} {meta.namespace}/{meta.name}")
    return deleted


def agent_compensation(cluster: str) -> CompensationStep:
    """The saga step that releases what the policy holds for ``cluster`` (``namespace/name``)."""
    es_namespace, _, es_name = cluster.partition("/")
    return CompensationStep(
        activity=RELEASE_CLUSTER_ACTIVITY,
        key=f"agent/{cluster}",
        data={"es_namespace": es_namespace, "es_name": es_name},
    )


async def release_cluster(context: ControllerContext, request: CompensateInput) -> CompensateResult:
    """The compensation of one cluster: invalidate its API key, delete its agent's objects.

    The objects are found by the policy's labels, listed unscoped: they are the operator's own,
    and the policy's namespace may itself have left scope (as the finalizer lists them). A
    cluster that cannot be asked now keeps its objects (its key is still valid): a later
    reconcile of the policy reports it again.
    """
    ref, data = request.ref, request.step.data
    cluster = f"{data.get('es_namespace', '')}/{data.get('es_name', '')}"
    written = (await written_objects(context.unscoped, ref.namespace, ref.name)).get(cluster)
    if written is None:
        return CompensateResult(released=False)
    try:
        deleted = await release_objects(context, written)
    except (ElasticsearchUnavailable, ElasticsearchError) as error:
        logger.warning("AutoOps objects of %s not released yet: %s", cluster, error)
        return CompensateResult(released=False)
    return CompensateResult(released=bool(deleted))
