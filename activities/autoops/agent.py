"""Serving one cluster: the agent's API key (by ECK's rule, ``api_key_plan``), its CA Secret,
ConfigMap and Deployment, in the policy's namespace."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from activities.apply import apply_object, planned_update
from activities.autoops.config import CONFIG_FILE, user_config
from activities.autoops.written import API_KEY_ID_ANNOTATION
from activities.context import ControllerContext
from activities.endpoints import operator_endpoint
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube import errors
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, SECRETS
from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names as es_names
from stackflow.stack.objects import (
    controller_owner_reference,
    decode_secret_data,
    encode_secret_data,
)
from stackflow.stack.policies.autoops import (
    CA_SECRET_TYPE,
    CONFIG_HASH_ANNOTATION,
    ROLE_DESCRIPTORS,
    api_key_hash,
    api_key_metadata,
    api_key_name,
    api_key_plan,
    api_key_secret_labels,
    cluster_object_labels,
    cluster_object_names,
    secret_labels,
    watched_object_labels,
)
from stackflow.stack.policies.autoops_agent import (
    API_KEY_SECRET_KEY,
    agent_config,
    agent_deployment,
    deployment_config_hash,
    render_config,
)

__all__ = [
    "ClusterFailedError",
    "agent_es_url",
    "agent_ready",
    "ensure_api_key",
    "http_tls",
    "keep_ca_secret",
    "serve_cluster",
]

_T = TypeVar("_T")


def agent_ready(deployment: Mapping[str, Any]) -> bool:
    """ECK's readiness of an agent: its Deployment's ``Available`` condition is True."""
    return any(
        condition.get("type") == "Available" and condition.get("status") == "True"
        for condition in (deployment.get("status") or {}).get("conditions") or ()
    )


class ClusterFailedError(Exception):
    """One served cluster could not be brought in line; the message is its ``Error`` detail."""


async def _step(label: str, work: Awaitable[_T]) -> _T:
    """``work``, its Elasticsearch failure reported as ECK reports the step that failed."""
    try:
        return await work
    except (ElasticsearchUnavailable, ElasticsearchError) as error:
        raise ClusterFailedError(f"{label}: {error}") from error


async def ensure_api_key(
    context: ControllerContext,
    policy: Mapping[str, Any],
    es: Mapping[str, Any],
    *,
    secret_name: str,
) -> dict[str, Any]:
    """Keep the cluster's API key by ECK's rule (:func:`api_key_plan`, from the active keys of
    its name) and its Secret; the Secret as written."""
    meta = view(policy)
    es_meta = view(es)
    current = await context.scoped.get_or_none(SECRETS, namespace=meta.namespace, name=secret_name)
    endpoint = await operator_endpoint(context, es)
    if endpoint is None:
        raise ElasticsearchUnavailable(
            f"{es_meta.namespace}/{es_meta.name}: the operator's user is not there yet"
        )
    identity = {
        "policy_namespace": meta.namespace,
        "policy_name": meta.name,
        "es_namespace": es_meta.namespace,
        "es_name": es_meta.name,
    }
    name = api_key_name(**identity)
    key_hash = api_key_hash()
    async with context.elasticsearch_session(endpoint) as api:
        plan = api_key_plan(
            await api.active_api_keys(name), name=name, key_hash=key_hash, secret=current
        )
        if plan.invalidate:
            await api.invalidate_api_key(ids=plan.invalidate)
        key = (
            await api.create_api_key(
                name=name,
                role_descriptors=ROLE_DESCRIPTORS,
                metadata=api_key_metadata(**identity, key_hash=key_hash),
            )
            if plan.create
            else None
        )
    current_meta = view(current) if current is not None else None
    if key is not None:
        encoded = key.encoded.encode()
        key_id = key.id
    else:
        encoded = decode_secret_data(current).get(API_KEY_SECRET_KEY) or b""
        key_id = current_meta.annotations.get(API_KEY_ID_ANNOTATION, "") if current_meta else ""
    desired: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name,
            "namespace": meta.namespace,
            "labels": api_key_secret_labels(**identity, key_hash=key_hash),
            # No ownerReference: the key must be invalidated before the Secret goes.
            # ECK puts the policy's annotations on it; the key id is ours (see the module doc).
            "annotations": {**meta.annotations, API_KEY_ID_ANNOTATION: key_id},
        },
        "data": encode_secret_data({API_KEY_SECRET_KEY: encoded}),
    }
    applied = await apply_object(context.scoped, SECRETS, desired)
    return applied.obj


async def serve_cluster(
    context: ControllerContext,
    policy: Mapping[str, Any],
    es: Mapping[str, Any],
    ref_data: Mapping[str, bytes],
    *,
    paused: bool = False,
) -> tuple[bool, bool]:
    """Keep one served cluster's objects and API key, in ECK's order (CA, key, ConfigMap,
    Deployment); whether its agent is ready, and whether its Deployment has changes pending.

    Paused (ECK): everything but the Deployment is kept; the Deployment is only compared with
    what it should be (pending when missing or different)."""
    meta, es_meta = view(policy), view(es)
    names = cluster_object_names(meta.name, es_meta.namespace, es_meta.name)
    identity = {
        "policy_namespace": meta.namespace,
        "policy_name": meta.name,
        "es_namespace": es_meta.namespace,
        "es_name": es_meta.name,
    }
    owner = [controller_owner_reference(policy)]
    tls = http_tls(es)
    es_url = agent_es_url(es_meta.namespace, es_meta.name, tls=tls)
    ca_secret: str | None = None
    if tls:
        ca_secret = names.ca_secret
        await _step(
            "Failed to reconcile AutoOps ES CA secret",
            keep_ca_secret(
                context,
                es,
                name=ca_secret,
                namespace=meta.namespace,
                labels={**meta.labels, **secret_labels(CA_SECRET_TYPE, **identity)},
                annotations=meta.annotations,
                owner=owner,
            ),
        )
    api_key_secret = await _step(
        "Failed to reconcile AutoOps ES API key",
        ensure_api_key(context, policy, es, secret_name=names.api_key_secret),
    )
    inline, from_ref = await user_config(context, policy)
    config_text = render_config(
        agent_config(
            inline, from_ref, tls=tls, es_namespace=es_meta.namespace, es_name=es_meta.name
        )
    )
    await apply_object(
        context.scoped,
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": names.config_map,
                "namespace": meta.namespace,
                # As ECK: the policy's labels under ours, and its annotations.
                "labels": {**meta.labels, **watched_object_labels(**identity)},
                "annotations": dict(meta.annotations),
                "ownerReferences": owner,
            },
            "data": {CONFIG_FILE: config_text},
        },
    )
    config_hash = deployment_config_hash(
        config_text, ref_data, decode_secret_data(api_key_secret).get(API_KEY_SECRET_KEY)
    )
    labels = cluster_object_labels(**identity)
    desired = agent_deployment(
        policy,
        name=names.deployment,
        labels=labels,
        selector=labels,
        config_map=names.config_map,
        api_key_secret=names.api_key_secret,
        ca_secret=ca_secret,
        es_namespace=es_meta.namespace,
        es_name=es_meta.name,
        es_url=es_url,
        config_hash=config_hash,
        annotation=CONFIG_HASH_ANNOTATION,
        owner_reference=owner[0],
    )
    if paused:
        try:
            current = await context.scoped.get(
                DEPLOYMENTS, namespace=meta.namespace, name=names.deployment
            )
        except errors.NotFound:
            return False, True
        return agent_ready(current), planned_update(current, desired) is not None
    applied = await apply_object(context.scoped, DEPLOYMENTS, desired)
    return agent_ready(applied.obj), False


async def keep_ca_secret(
    context: ControllerContext,
    es: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    owner: list[dict[str, Any]],
) -> None:
    """Copy the cluster's HTTP CA (``ca.crt``, else ECK's fallback ``tls.crt``) into the policy's
    namespace as ``ca.crt``."""
    es_meta = view(es)
    public = decode_secret_data(
        await context.scoped.get_or_none(
            SECRETS,
            namespace=es_meta.namespace,
            name=es_names.http_certs_public_secret_name(es_meta.name),
        )
    )
    ca = public.get("ca.crt") or public.get("tls.crt")
    if not ca:
        raise ElasticsearchUnavailable(
            f"{es_meta.namespace}/{es_meta.name}: its HTTP CA is not there yet"
        )
    await apply_object(
        context.scoped,
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": dict(labels),
                "annotations": dict(annotations),
                "ownerReferences": owner,
            },
            "data": encode_secret_data({"ca.crt": ca}),
        },
    )


def http_tls(es: Mapping[str, Any]) -> bool:
    tls = (((es.get("spec") or {}).get("http") or {}).get("tls") or {}).get(
        "selfSignedCertificate"
    ) or {}
    return not bool(tls.get("disabled"))


def agent_es_url(es_namespace: str, es_name: str, *, tls: bool) -> str:
    """ECK's address of the cluster for its agent: the internal HTTP Service."""
    scheme = "https" if tls else "http"
    return f"{scheme}://{es_names.internal_http_service_name(es_name)}.{es_namespace}.svc:9200"
