"""The AutoOpsAgentPolicy controller's activities: reconcile, finalize and its flip mapper.

A reconcile reads the policy, every Elasticsearch cluster of the managed namespaces (a policy
selects cluster-wide, but through the scoped client: a cluster whose namespace left scope is not
seen, so it stops being served) and the Namespace labels, and lets the pure rules of
``stackflow.stack.policies.autoops`` decide which clusters are served, waited for or skipped.
With ``enforce-rbac-on-refs`` a matched cluster the policy's ServiceAccount may not get is
skipped, as ECK does.
For each served (matched, Ready, supported) cluster it keeps, in the policy's namespace, ECK's
Deployment, ConfigMap, API-key Secret (no ownerReference) and, when the cluster's HTTP TLS is on,
CA Secret (``stackflow.stack.policies.autoops_agent`` builds the agent's config and Deployment); the
cluster's API key is looked up by name in Elasticsearch and created or replaced by ECK's rule
(``api_key_plan``). The objects of a cluster that is no longer matched, or left scope, are deleted
and its key invalidated: the one case where leaving scope removes operator-made objects, as ECK
does (the key would otherwise stay valid in a cluster the operator no longer looks after).

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
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import yaml

from activities.apply import apply_object, planned_update
from activities.associations import EVENT_ACTION_ACCESS_CHECK, EVENT_ASSOCIATION_ERROR
from activities.binding import ControllerActivities
from activities.context import ControllerContext, ElasticsearchEndpoint
from activities.elasticsearch import operator_endpoint
from activities.errors import InvalidSpecError
from activities.unknown_fields import warn_unknown_fields
from stackflow.controllers.autoops import (
    AUTOOPS_POLICY,
    AUTOOPS_POLICY_CONTROLLER,
    ELASTICSEARCH,
)
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube import errors
from stackflow.kube.events import InvolvedObject
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    ObjectKey,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, SECRETS, Kind
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.scope.selector import SelectorError
from stackflow.stack.access import InvalidServiceAccountError
from stackflow.stack.elasticsearch import names as es_names
from stackflow.stack.objects import (
    controller_owner_reference,
    decode_secret_data,
    encode_secret_data,
)
from stackflow.stack.policies.autoops import (
    API_KEY_SECRET_TYPE,
    CA_SECRET_TYPE,
    CONFIG_HASH_ANNOTATION,
    ES_NAME_LABEL,
    ES_NAMESPACE_LABEL,
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    ROLE_DESCRIPTORS,
    SECRET_TYPE_LABEL,
    AutoOpsPolicy,
    Cluster,
    access_denied_reason,
    api_key_hash,
    api_key_metadata,
    api_key_name,
    api_key_plan,
    api_key_secret_labels,
    cluster_object_labels,
    cluster_object_names,
    parse_policy,
    policy_status,
    secret_labels,
    select_clusters,
    watched_object_labels,
)
from stackflow.stack.policies.autoops_agent import (
    AGENT_CONFIG_FILE,
    API_KEY_SECRET_KEY,
    REF_SECRET_KEYS,
    agent_config,
    agent_deployment,
    deployment_config_hash,
    render_config,
)
from stackflow.stack.policies.validation import validate_autoops_agent_policy

__all__ = [
    "API_KEY_ID_ANNOTATION",
    "CONFIG_FILE",
    "DEPRECATED_UNMANAGED_ANNOTATION",
    "IMPLEMENTATIONS",
    "LEGACY_PAUSE_ANNOTATION",
    "NOT_READY_REQUEUE_SECONDS",
    "PAUSED_NO_CHANGES_MESSAGE",
    "PAUSED_PENDING_MESSAGE",
    "PAUSE_ANNOTATION",
    "READY_RECHECK_SECONDS",
    "RESUMED_MESSAGE",
    "finalize",
    "flip_mapper",
    "reconcile",
]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

#: How soon a policy whose clusters or agents are not all ready is looked at again.
NOT_READY_REQUEUE_SECONDS = 10.0
#: How often a ready policy looks again: a new cluster, a label that now matches or a served
#: cluster's change is not named on the policy, so no watch wakes it for them.
READY_RECHECK_SECONDS = 120.0
#: ECK's pause annotation: nothing is changed while it is ``"true"``.
PAUSE_ANNOTATION = "eck.k8s.elastic.co/pause-orchestration"
#: ECK's older ways to stop a reconcile altogether (nothing read, nothing written).
LEGACY_PAUSE_ANNOTATION = "common.k8s.elastic.co/pause"
#: ``"false"``: the policy is not managed (ECK skips it entirely; deprecated).
DEPRECATED_UNMANAGED_ANNOTATION = "eck.k8s.elastic.co/managed"
#: ECK's ``OrchestrationPaused`` messages, events and actions.
PAUSED_PENDING_MESSAGE = (
    "Orchestration paused via annotation; spec changes are pending and will be applied on resume"
)
PAUSED_NO_CHANGES_MESSAGE = "Orchestration paused via annotation; no pending spec changes detected"
RESUMED_MESSAGE = "Orchestration has resumed normally"
PAUSED_CONDITION = "OrchestrationPaused"
#: The id of the API key the Secret holds (the clean-up invalidates it by id).
API_KEY_ID_ANNOTATION = "autoops.k8s.elastic.co/api-key-id"
CONFIG_FILE = AGENT_CONFIG_FILE
#: The ``autoOpsRef`` Secret keys a policy cannot do without (ECK: the policy is Invalid).
_REQUIRED_REF_KEYS = REF_SECRET_KEYS[:3]
_KINDS: tuple[Kind, ...] = (DEPLOYMENTS, CONFIGMAPS, SECRETS)


def _policy_selector(namespace: str, name: str) -> str:
    return equality_selector_string({POLICY_NAMESPACE_LABEL: namespace, POLICY_NAME_LABEL: name})


@dataclass
class _ClusterObjects:
    """The objects a policy wrote for one cluster, found by their labels."""

    es_namespace: str
    es_name: str
    objects: list[tuple[Kind, dict[str, Any]]] = field(default_factory=list)

    def secret(self, secret_type: str) -> dict[str, Any] | None:
        """Its Secret of ``secret_type`` (``api-key``, ``ca``), if any."""
        for kind, obj in self.objects:
            if kind is SECRETS and view(obj).labels.get(SECRET_TYPE_LABEL) == secret_type:
                return obj
        return None


async def _written(
    client: ScopedClient | UnscopedClient,
    namespace: str,
    name: str,
    kinds: tuple[Kind, ...] = _KINDS,
) -> dict[str, _ClusterObjects]:
    """Every object of ``kinds`` the policy wrote, by cluster key, from the policy labels."""
    found: dict[str, _ClusterObjects] = {}
    selector = _policy_selector(namespace, name)
    for kind in kinds:
        listed = await client.list(kind, namespace=namespace, label_selector=selector)
        for item in listed["items"]:
            labels = view(item).labels
            es_namespace, es_name = labels.get(ES_NAMESPACE_LABEL), labels.get(ES_NAME_LABEL)
            if not es_namespace or not es_name:
                continue
            key = f"{es_namespace}/{es_name}"
            found.setdefault(key, _ClusterObjects(es_namespace, es_name)).objects.append(
                (kind, item)
            )
    return found


def _http_tls(es: Mapping[str, Any]) -> bool:
    tls = (((es.get("spec") or {}).get("http") or {}).get("tls") or {}).get(
        "selfSignedCertificate"
    ) or {}
    return not bool(tls.get("disabled"))


def _es_url(es_namespace: str, es_name: str, *, tls: bool) -> str:
    """ECK's address of the cluster for its agent: the internal HTTP Service."""
    scheme = "https" if tls else "http"
    return f"{scheme}://{es_names.internal_http_service_name(es_name)}.{es_namespace}.svc:9200"


async def _user_config(
    context: ControllerContext, policy: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The user's agent configuration layers: ``spec.config``, and the ``autoops_es.yml`` of the
    ``configRef`` Secret or ConfigMap (policy namespace), each empty when not set."""
    spec = policy.get("spec") or {}
    inline = dict(spec.get("config") or {})
    ref = spec.get("configRef") or {}
    namespace = view(policy).namespace
    text: str | None = None
    if ref.get("secretName"):
        source = f"Secret {ref['secretName']}"
        secret = await context.scoped.get_or_none(
            SECRETS, namespace=namespace, name=str(ref["secretName"])
        )
        raw = decode_secret_data(secret).get(CONFIG_FILE)
        text = None if raw is None else raw.decode()
    elif ref.get("configMapName"):
        source = f"ConfigMap {ref['configMapName']}"
        config_map = (
            await context.scoped.get_or_none(
                CONFIGMAPS, namespace=namespace, name=str(ref["configMapName"])
            )
            or {}
        )
        text = (config_map.get("data") or {}).get(CONFIG_FILE)
    else:
        return inline, {}
    if text is None:
        raise InvalidSpecError(f"spec.configRef: {source} has no {CONFIG_FILE}")
    loaded = yaml.safe_load(text) or {}
    if not isinstance(loaded, dict):
        raise InvalidSpecError(f"spec.configRef: {CONFIG_FILE} is not a mapping")
    return inline, loaded


async def _ref_secret_data(
    context: ControllerContext, policy: Mapping[str, Any]
) -> dict[str, bytes]:
    """The ``autoOpsRef`` Secret's data; InvalidSpecError, with ECK's message, when it is
    missing or lacks a required key."""
    meta = view(policy)
    name = str(((policy.get("spec") or {}).get("autoOpsRef") or {}).get("secretName") or "")
    if not name:
        raise InvalidSpecError("secret name cannot be empty")
    secret = await context.scoped.get_or_none(SECRETS, namespace=meta.namespace, name=name)
    if secret is None:
        raise InvalidSpecError(f"configuration secret {meta.namespace}/{name} not found")
    data = decode_secret_data(secret)
    for key in _REQUIRED_REF_KEYS:
        if not data.get(key):
            raise InvalidSpecError(
                f"missing required key {key} in configuration secret {meta.namespace}/{name}"
            )
    return data


async def _validate(context: ControllerContext, policy: Mapping[str, Any]) -> None:
    """InvalidSpecError unless the policy is usable; the agent versions allowed depend on the
    operator's license (ECK: Basic from 9.2.4, Enterprise from 9.2.1)."""
    enterprise = (await context.licenses.verdict()).licensed
    problems = validate_autoops_agent_policy(policy, enterprise=enterprise)
    if problems:
        raise InvalidSpecError("; ".join(f"{field}: {message}" for field, message in problems))


def _agent_ready(deployment: Mapping[str, Any]) -> bool:
    """ECK's readiness of an agent: its Deployment's ``Available`` condition is True."""
    return any(
        condition.get("type") == "Available" and condition.get("status") == "True"
        for condition in (deployment.get("status") or {}).get("conditions") or ()
    )


class _ClusterFailedError(Exception):
    """One served cluster could not be brought in line; the message is its ``Error`` detail."""


async def _step(label: str, work: Awaitable[_T]) -> _T:
    """``work``, its Elasticsearch failure reported as ECK reports the step that failed."""
    try:
        return await work
    except (ElasticsearchUnavailable, ElasticsearchError) as error:
        raise _ClusterFailedError(f"{label}: {error}") from error


async def _ensure_api_key(
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


async def _serve(
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
    tls = _http_tls(es)
    es_url = _es_url(es_meta.namespace, es_meta.name, tls=tls)
    ca_secret: str | None = None
    if tls:
        ca_secret = names.ca_secret
        await _step(
            "Failed to reconcile AutoOps ES CA secret",
            _keep_ca_secret(
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
        _ensure_api_key(context, policy, es, secret_name=names.api_key_secret),
    )
    inline, from_ref = await _user_config(context, policy)
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
        return _agent_ready(current), planned_update(current, desired) is not None
    applied = await apply_object(context.scoped, DEPLOYMENTS, desired)
    return _agent_ready(applied.obj), False


async def _keep_ca_secret(
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


async def _invalidate(context: ControllerContext, written: _ClusterObjects) -> None:
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


async def _release(context: ControllerContext, written: _ClusterObjects) -> list[str]:
    """Invalidate a cluster's key, then delete every object written for it."""
    await _invalidate(context, written)
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


def _unmanaged(policy: Mapping[str, Any]) -> bool:
    """ECK's unmanaged policy (``eck.k8s.elastic.co/managed: "false"`` or the legacy pause):
    not reconciled at all."""
    annotations = view(policy).annotations
    return (
        annotations.get(DEPRECATED_UNMANAGED_ANNOTATION) == "false"
        or annotations.get(LEGACY_PAUSE_ANNOTATION) == "true"
    )


def _paused(policy: Mapping[str, Any]) -> bool:
    return view(policy).annotations.get(PAUSE_ANNOTATION) == "true"


def _conditions(
    current: Sequence[Mapping[str, Any]], *, paused: bool, pending: bool, now: str
) -> tuple[list[dict[str, Any]], dict[str, str] | None]:
    """The status conditions with ECK's ``OrchestrationPaused`` (True with the pending or
    no-pending message while paused; False with the resumed message once it was True; left
    out otherwise), its transition time kept while its status does not change; and the event
    ECK records for it (a Warning ``Paused`` with changes pending, a Normal ``Resumed``)."""
    kept = [dict(c) for c in current if c.get("type") != PAUSED_CONDITION]
    previous = next((c for c in current if c.get("type") == PAUSED_CONDITION), None)
    event: dict[str, str] | None = None
    if paused:
        message = PAUSED_PENDING_MESSAGE if pending else PAUSED_NO_CHANGES_MESSAGE
        status = "True"
        if pending:
            event = {"type": "Warning", "reason": "Paused", "action": "Reconciliation"}
    elif previous is not None and previous.get("status") == "True":
        message, status = RESUMED_MESSAGE, "False"
        event = {"type": "Normal", "reason": "Resumed", "action": "OrchestrationResumed"}
    elif previous is not None:
        return [*kept, dict(previous)], None
    else:
        return kept, None
    transition = now
    if previous is not None and previous.get("status") == status:
        transition = str(previous.get("lastTransitionTime") or now)
    condition = {
        "type": PAUSED_CONDITION,
        "status": status,
        "lastTransitionTime": transition,
        "message": message,
    }
    if event is not None:
        event["message"] = message
    return [*kept, condition], event


async def _write_status(
    context: ControllerContext, policy: Mapping[str, Any], status: dict[str, Any]
) -> None:
    current = policy.get("status") or {}
    if all(current.get(key) == value for key, value in status.items()) and set(current) <= set(
        status
    ):
        return
    meta = view(policy)
    # Keys the new status lacks (``details`` once every cluster is fine) are removed.
    patch: dict[str, Any] = {key: None for key in current if key not in status}
    patch.update(status)
    await context.scoped.patch_status(
        AUTOOPS_POLICY, {"status": patch}, namespace=meta.namespace, name=meta.name
    )


def _now(context: ControllerContext) -> str:
    return context.clock().strftime("%Y-%m-%dT%H:%M:%SZ")


async def _access_denied(
    context: ControllerContext,
    policy: Mapping[str, Any],
    parsed: AutoOpsPolicy,
    matched: Sequence[Mapping[str, Any]],
) -> dict[str, str]:
    """The matched clusters the policy's ServiceAccount may not get (enforce-rbac-on-refs), with
    the reason each is skipped; ECK's Warning on the policy for each refusal."""
    meta = view(policy)
    denied: dict[str, str] = {}
    for es in matched:
        es_meta = view(es)
        key = f"{es_meta.namespace}/{es_meta.name}"
        try:
            allowed = await context.access.allowed(
                service_account=parsed.service_account_name,
                source_namespace=meta.namespace,
                target=ELASTICSEARCH,
                target_namespace=es_meta.namespace,
                target_name=es_meta.name,
            )
        except InvalidServiceAccountError as error:
            denied[key] = f"Failed trying to perform RBAC check: spec.{error}"
            continue
        if allowed:
            continue
        denied[key] = access_denied_reason(parsed)
        await context.events.warning(
            InvolvedObject.of(policy),
            reason=EVENT_ASSOCIATION_ERROR,
            message=(
                "AutoOps policy not allowed to access Elasticsearch cluster: "
                f"{meta.namespace}/{meta.name} to {key}"
            ),
            action=EVENT_ACTION_ACCESS_CHECK,
        )
    return denied


async def reconcile(context: ControllerContext, request: ReconcileInput) -> ReconcileResult:
    """Bring the policy's agents in line with the clusters it selects, and report them."""
    ref = request.ref
    try:
        policy = await context.scoped.get(ref.resource, namespace=ref.namespace, name=ref.name)
    except errors.NotFound:
        return ReconcileResult(phase=Phase.RECONCILING, message=f"{ref.kind} not found")
    meta = view(policy)
    current_status = dict(policy.get("status") or {})
    conditions = list(current_status.get("conditions") or [])
    if _unmanaged(policy):
        # As ECK: not managed, so neither read further nor written, status included.
        return ReconcileResult(
            phase=Phase.READY, message="not managed", observed_generation=meta.generation
        )
    paused = _paused(policy)
    await _validate(context, policy)
    await warn_unknown_fields(context, ref, policy)
    try:
        parsed = parse_policy(policy)
    except SelectorError as error:
        raise InvalidSpecError(str(error)) from error
    listed = await context.scoped.list(ELASTICSEARCH)
    clusters = {
        f"{view(item).namespace}/{view(item).name}": item
        for item in listed["items"]
        if not view(item).deletion_timestamp
    }
    namespace_labels = {
        view(item).name: dict(view(item).labels)
        for item in (await context.scoped.list(NAMESPACES))["items"]
    }
    candidates = [Cluster.of(obj) for obj in clusters.values()]
    matched = select_clusters(parsed, candidates, namespace_labels).matched
    denied = await _access_denied(context, policy, parsed, [clusters[key] for key in matched])
    selection = select_clusters(parsed, candidates, namespace_labels, access_denied=denied)
    written = await _written(context.scoped, meta.namespace, meta.name)
    agents_ready: dict[str, bool] = {}
    failures: dict[str, str] = {}
    pending = False
    ref_data = await _ref_secret_data(context, policy)
    for key in selection.served:
        try:
            agents_ready[key], changes = await _serve(
                context, policy, clusters[key], ref_data, paused=paused
            )
            pending = pending or changes
        except _ClusterFailedError as error:
            failures[key] = str(error)
    # A matched cluster that is not Ready keeps its agent (an upgrade must not churn its key).
    keep = set(selection.served) | set(selection.not_ready)
    # Paused (ECK): no clean-up, it would delete Deployments.
    for key in sorted(set(written) - keep) if not paused else ():
        try:
            await _release(context, written[key])
        except (ElasticsearchUnavailable, ElasticsearchError) as error:
            # Kept for the next reconcile: its key is still valid somewhere.
            logger.warning("AutoOps objects of %s not released yet: %s", key, error)
    status = policy_status(
        selection,
        agents_ready=agents_ready,
        errors=failures,
        observed_generation=meta.generation,
    )
    new_conditions, event = _conditions(
        conditions, paused=paused, pending=pending, now=_now(context)
    )
    if new_conditions:
        status["conditions"] = new_conditions
    await _write_status(context, policy, status)
    if event is not None:
        record = context.events.warning if event["type"] == "Warning" else context.events.normal
        await record(
            InvolvedObject.of(policy),
            reason=event["reason"],
            message=event["message"],
            action=event["action"],
        )
    ready = status["phase"] in ("Ready", "NoMonitoredResources")
    return ReconcileResult(
        phase=Phase.READY if ready else Phase.RECONCILING,
        message=f"{status['phase']}: {status['readyCount']} agents ready",
        requeue_after_seconds=READY_RECHECK_SECONDS if ready else NOT_READY_REQUEUE_SECONDS,
        observed_generation=meta.generation,
        referenced=tuple(
            ObjectKey.of(ELASTICSEARCH, namespace=key.partition("/")[0], name=key.partition("/")[2])
            for key in selection.served
        ),
    )


async def finalize(context: ControllerContext, request: FinalizeInput) -> FinalizeResult:
    """A deleted policy: invalidate its keys and delete its Secrets (the Deployments and
    ConfigMaps go with the policy through their ownerReferences).

    Listed unscoped, as every finalizer lists its owner's labelled Secrets: the policy is gone
    and the Secrets are the operator's own, whatever the scope of their namespace now (ECK).
    """
    ref = request.ref
    written = await _written(context.unscoped, ref.namespace, ref.name, kinds=(SECRETS,))
    deleted: list[str] = []
    for key in sorted(written):
        deleted.extend(await _release(context, written[key]))
    return FinalizeResult(deleted=tuple(deleted))


async def flip_mapper(
    context: ControllerContext, namespace: str, direction: FlipDirectionName
) -> list[Mapping[str, Any]]:
    """Every policy: each selects clusters cluster-wide, so any flip may add or remove one.
    Listed unscoped, as every flip mapper (the scope check then skips those out of scope)."""
    return list((await context.unscoped.list(AUTOOPS_POLICY))["items"])


IMPLEMENTATIONS: Mapping[str, ControllerActivities] = {
    AUTOOPS_POLICY_CONTROLLER.name: ControllerActivities(
        reconcile=reconcile, finalize=finalize, flip_targets=flip_mapper
    ),
}
