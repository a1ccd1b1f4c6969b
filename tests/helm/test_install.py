"""The chart installed by the real helm onto the real control plane (``make tools``), with a static
list of managed namespaces: the release deploys, its Roles grant the operator's ServiceAccount
exactly the listed namespaces, and an operator run with that ServiceAccount's token and the
chart's own configuration file reconciles in a listed namespace and leaves the others alone.

No operator Pod runs (``replicaCount=0``: kwok runs no container); the operator runs here as a
subprocess with the ServiceAccount's token, as the other apiserver end-to-end tests run it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controlplane import ControlPlane
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, STATEFULSETS
from tests.clusters import APISERVER, OPERATOR_SERVICE_ACCOUNT, kube_cluster, kubectl
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import ES, Operator, manifest, temporal_server
from tests.helm.chart import NAMESPACE, RELEASE, run_helm
from tests.polling import eventually

pytestmark = [pytest.mark.helm, pytest.mark.apiserver, pytest.mark.timeout(600)]

LISTED, UNLISTED = "team-a", "team-b"
OPERATOR = f"system:serviceaccount:{NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}"
#: What the operator's ServiceAccount may do under a static list: (verb, resource, namespace or
#: "" for cluster-wide, allowed).
ACCESS = [
    ("create", "statefulsets.apps", LISTED, True),
    ("delete", "secrets", LISTED, True),
    ("patch", "elasticsearches.elasticsearch.k8s.elastic.co/status", LISTED, True),
    ("create", "events", NAMESPACE, True),
    ("patch", "secrets", NAMESPACE, True),
    ("create", "leases.coordination.k8s.io", NAMESPACE, True),
    # Reading and renewing only the operator's own Lease: no other Lease, not by any name.
    ("get", "leases.coordination.k8s.io", NAMESPACE, False),
    ("update", "leases.coordination.k8s.io", NAMESPACE, False),
    # The informers list and watch each managed namespace on its own, never cluster-wide.
    ("list", "secrets", LISTED, True),
    ("watch", "elasticsearches.elasticsearch.k8s.elastic.co", LISTED, True),
    ("watch", "secrets", NAMESPACE, True),
    ("list", "secrets", "", False),
    ("watch", "elasticsearches.elasticsearch.k8s.elastic.co", "", False),
    ("watch", "pods", UNLISTED, False),
    ("list", "stackconfigpolicies.stackconfigpolicy.k8s.elastic.co", LISTED, True),
    ("watch", "autoopsagentpolicies.autoops.k8s.elastic.co", LISTED, True),
    ("get", "autoopsagentpolicies.autoops.k8s.elastic.co", LISTED, True),
    ("delete", "configmaps", LISTED, True),
    ("list", "elasticsearchautoscalers.autoscaling.k8s.elastic.co", LISTED, True),
    ("patch", "elasticsearchautoscalers.autoscaling.k8s.elastic.co/status", LISTED, True),
    # Only their status: the operator never edits an autoscaler's spec.
    ("patch", "elasticsearchautoscalers.autoscaling.k8s.elastic.co", LISTED, False),
    ("list", "namespaces", "", True),
    ("create", "statefulsets.apps", UNLISTED, False),
    ("get", "secrets", UNLISTED, False),
    ("delete", "secrets", UNLISTED, False),
    ("patch", "elasticsearches.elasticsearch.k8s.elastic.co", UNLISTED, False),
    ("create", "leases.coordination.k8s.io", LISTED, False),
    ("create", "namespaces", "", False),
    ("get", "customresourcedefinitions.apiextensions.k8s.io", "", False),
]


def can_i(plane: ControlPlane, verb: str, resource: str, namespace: str) -> bool:
    """``kubectl auth can-i`` as the operator's ServiceAccount (impersonated by the admin);
    ``resource/subresource`` asks about the subresource (``resource/name`` would ask about an
    object of that name)."""
    where = [f"--namespace={namespace}"] if namespace else ["--all-namespaces"]
    resource, _, subresource = resource.partition("/")
    sub = [f"--subresource={subresource}"] if subresource else []
    answer = kubectl(
        plane.admin_kubeconfig,
        "auth",
        "can-i",
        verb,
        resource,
        *sub,
        *where,
        f"--as={OPERATOR}",
        check=False,
    )
    return answer.strip() == "yes"


async def health(kube: Any, namespace: str) -> str:
    """``status.health`` of the namespace's Elasticsearch ``quickstart``."""
    es = await kube.get(ES, namespace=namespace, name="quickstart")
    return str((es.get("status") or {}).get("health") or "")


async def test_the_installed_chart_lets_the_operator_reconcile_only_in_listed_namespaces(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with (
        temporal_server() as temporal,
        kube_cluster(
            tmp_path,
            APISERVER,
            plane=control_plane,
            namespaces=(LISTED, UNLISTED),
            chart_values={
                "managedNamespaces": f"{{{LISTED}}}",
                "temporal.address": temporal.client.service_client.config.target_host,
            },
        ) as cluster,
    ):
        kube = cluster.kube
        status = run_helm(
            "status",
            RELEASE,
            f"--namespace={NAMESPACE}",
            f"--kubeconfig={control_plane.admin_kubeconfig}",
            "--output=json",
        )
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["info"]["status"] == "deployed"
        deployment = await kube.get(DEPLOYMENTS, namespace=NAMESPACE, name=RELEASE)
        assert deployment["spec"]["replicas"] == 0

        seen = {
            (verb, resource, namespace): await asyncio.to_thread(
                can_i, control_plane, verb, resource, namespace
            )
            for verb, resource, namespace, _ in ACCESS
        }
        assert seen == {(verb, res, ns): allowed for verb, res, ns, allowed in ACCESS}

        # The operator runs on the configuration file the chart installed.
        config_map = await kube.get(CONFIGMAPS, namespace=NAMESPACE, name=RELEASE)
        config = tmp_path / "operator.yaml"
        config.write_text(config_map["data"]["operator.yaml"])
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=tmp_path / "operator.log"
        )
        await operator.start()
        try:
            for namespace in (LISTED, UNLISTED):
                body = manifest(
                    "Elasticsearch",
                    "quickstart",
                    namespace,
                    {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
                )
                await kube.create(ES, body, namespace=namespace)

            async def listed_reconciled() -> bool:
                # Its Pods run no Elasticsearch: nodes up, health unknown (nobody measured it).
                es = await kube.get(ES, namespace=LISTED, name="quickstart")
                return nodes_up_health_unknown(es)

            try:
                await eventually(
                    listed_reconciled, within=240, interval=0.5, what="team-a reconciled"
                )
            except AssertionError as error:
                raise AssertionError(f"{error}\n{operator.tail()}") from None
            # Not listed: no status, no children.
            assert await health(kube, UNLISTED) == ""
            assert (await kube.list(STATEFULSETS, namespace=UNLISTED))["items"] == []
            log = operator.log.read_text(errors="replace")
            assert "Forbidden" not in log, operator.tail()
        finally:
            assert await operator.stop() == 0, operator.tail()
