"""Shared set-up of the AutoOpsAgentPolicy activity tests: the CRD, the labelled ``prod``
namespace, the connection Secret, a policy ``ops`` in the operator namespace, clusters as the
Elasticsearch controller leaves them, and one reconcile of the policy."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from kubernetes_asyncio import client
from temporalio.testing import ActivityEnvironment

from activities.autoops import AutoOpsActivities
from activities.errors import translated_errors
from stackflow.api.kinds import kind_info
from stackflow.controllers.autoops import AUTOOPS_POLICY_CONTROLLER
from stackflow.kube import errors
from stackflow.models.engine import (
    CompensateInput,
    CompensateResult,
    CompensationStep,
    ReconcileInput,
    ReconcileResult,
    ResourceRef,
)
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, SECRETS
from stackflow.stack.elasticsearch import names as es_names
from stackflow.stack.policies.autoops import (
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    api_key_name,
    cluster_object_names,
)
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Cluster,
    FakeFactory,
    serve_crds,
    startup,
)

POLICY = kind_info("AutoOpsAgentPolicy").resource
ES = kind_info("Elasticsearch").resource
PROD = "prod"
CONNECTION_KEYS = ("autoops-token", "autoops-otel-url", "cloud-connected-mode-api-key")
KEY_A = api_key_name(
    policy_namespace=OPERATOR_NAMESPACE, policy_name="ops", es_namespace=PROD, es_name="a"
)
NAMES_A = cluster_object_names("ops", PROD, "a")


def encoded(data: dict[str, str]) -> dict[str, str]:
    """``data`` as a Secret's base64 ``data``."""
    return {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}


@pytest.fixture
async def autoops_world(cluster: Cluster, ka_client: client.ApiClient) -> Cluster:
    """kubesim with the AutoOpsAgentPolicy CRD, the labelled ``prod`` namespace and the policy's
    connection Secret ``autoops-connection`` in the operator namespace."""
    await serve_crds(cluster.kubesim, ka_client, "AutoOpsAgentPolicy")
    await cluster.create_namespace(PROD, {"eck": "on", "env": "prod"})
    await cluster.raw.create(
        SECRETS,
        {
            "metadata": {"namespace": OPERATOR_NAMESPACE, "name": "autoops-connection"},
            "data": encoded(dict.fromkeys(CONNECTION_KEYS, "v")),
        },
        namespace=OPERATOR_NAMESPACE,
    )
    return cluster


def policy(config: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """The policy ``ops`` selecting the clusters labelled ``autoops: on``, with ``spec`` added."""
    return {
        "apiVersion": POLICY.api_version,
        "kind": "AutoOpsAgentPolicy",
        "metadata": {"namespace": OPERATOR_NAMESPACE, "name": "ops"},
        "spec": {
            "version": "9.2.4",
            "resourceSelector": {"matchLabels": {"autoops": "on"}},
            "autoOpsRef": {"secretName": "autoops-connection"},
            **({"config": config} if config is not None else {}),
            **spec,
        },
    }


async def make_cluster(
    cluster: Cluster, name: str, *, phase: str = "Ready", tls: bool = False
) -> None:
    """A cluster labelled ``autoops: on`` in ``prod``, its phase, and the Secrets the
    Elasticsearch controller would have written (internal user, HTTP CA)."""
    spec: dict[str, Any] = {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]}
    if not tls:
        spec["http"] = {"tls": {"selfSignedCertificate": {"disabled": True}}}
    await cluster.raw.create(
        ES,
        {
            "apiVersion": ES.api_version,
            "kind": "Elasticsearch",
            "metadata": {"namespace": PROD, "name": name, "labels": {"autoops": "on"}},
            "spec": spec,
        },
        namespace=PROD,
    )
    await cluster.raw.patch_status(ES, {"status": {"phase": phase}}, namespace=PROD, name=name)
    secrets = {es_names.internal_users_secret_name(name): {"elastic-internal": "pw"}}
    if tls:
        secrets[es_names.http_certs_internal_secret_name(name)] = {"ca.crt": "CA PEM"}
        secrets[es_names.http_certs_public_secret_name(name)] = {"ca.crt": "CA PEM"}
    for secret_name, data in secrets.items():
        await cluster.raw.create(
            SECRETS,
            {"metadata": {"namespace": PROD, "name": secret_name}, "data": encoded(data)},
            namespace=PROD,
        )


def ref() -> ResourceRef:
    """The reconcile ref of the policy ``ops``."""
    return ResourceRef.of("autoopsagentpolicy", POLICY, namespace=OPERATOR_NAMESPACE, name="ops")


def family(cluster: Cluster, factory: FakeFactory, **kwargs: Any) -> AutoOpsActivities:
    """The AutoOps activities over kubesim, every cluster dialled through ``factory``; ``kwargs``
    go to ``Cluster.context`` (``access=`` for enforce-rbac-on-refs)."""
    context = cluster.context(selector=SELECTOR, elasticsearch=factory, **kwargs)
    return AutoOpsActivities(context, AUTOOPS_POLICY_CONTROLLER)


async def reconcile_with(activities: AutoOpsActivities) -> ReconcileResult:
    """One Startup reconcile of ``ops`` by ``activities``, its primary read as the engine does."""
    request = startup(ref())

    async def run(request: ReconcileInput) -> ReconcileResult:
        try:
            policy = await activities.context.scoped.get(
                POLICY, namespace=OPERATOR_NAMESPACE, name="ops"
            )
        except errors.NotFound:
            return activities.primary_missing(request.ref)
        return await activities.reconcile(request, policy)

    return await ActivityEnvironment().run(translated_errors(run), request)


async def reconcile(cluster: Cluster, factory: FakeFactory, **kwargs: Any) -> ReconcileResult:
    """One Startup reconcile of ``ops``, every cluster dialled through ``factory``, then the
    compensations it asks to run now, as the workflow runs them; ``kwargs`` go to
    ``Cluster.context`` (``access=`` for enforce-rbac-on-refs)."""
    activities = family(cluster, factory, **kwargs)
    result = await reconcile_with(activities)
    await release(activities, result.release_now)
    return result


async def release(
    activities: AutoOpsActivities, steps: tuple[CompensationStep, ...]
) -> list[CompensateResult]:
    """Run the compensations ``steps`` name, in order, as the workflow does."""
    released = []
    for step in steps:
        compensate = activities.compensations[step.activity]
        request = CompensateInput(ref=ref(), step=step)
        released.append(await ActivityEnvironment().run(translated_errors(compensate), request))
    return released


async def status(cluster: Cluster) -> dict[str, Any]:
    """The status of ``ops`` (empty before its first write)."""
    obj = await cluster.raw.get(POLICY, namespace=OPERATOR_NAMESPACE, name="ops")
    return dict(obj.get("status") or {})


async def policy_objects(cluster: Cluster, namespace: str = OPERATOR_NAMESPACE) -> set[str]:
    """``Kind/name`` of the Deployments, ConfigMaps and Secrets labelled as ``ops``'s (the policy
    ``ops`` of ``namespace``)."""
    selector = f"{POLICY_NAMESPACE_LABEL}={namespace},{POLICY_NAME_LABEL}=ops"
    found: set[str] = set()
    for kind in (DEPLOYMENTS, CONFIGMAPS, SECRETS):
        listed = await cluster.raw.list(kind, namespace=namespace, label_selector=selector)
        found |= {f"{kind.kind}/{item['metadata']['name']}" for item in listed["items"]}
    return found
