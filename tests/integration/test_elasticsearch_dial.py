"""``elasticsearch-dial: endpoints`` on kubesim: the operator, outside the cluster, computes a
cluster's ready Pod addresses from its internal HTTP Service and the Pods it selects (both read
through the scoped client, as the EndpointSlice controller would list them: the real API server
refuses the loopback addresses these Pods have in EndpointSlices), dials their ``127.0.0.x``
addresses and checks the certificate for the Service's name, trusting only the cluster's CA.

The Pods run on a node kubesim does not simulate, so its kubelet leaves them alone: the test is
their kubelet and reports each one Running with its own loopback address, where a fake
Elasticsearch serves the operator's own HTTP certificate (from the builder, issued by the
cluster's CA).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from activities.context import ControllerContext
from activities.endpoints import endpoint_for
from stackflow.config import OperatorConfig
from stackflow.elastic import ElasticsearchUnavailable
from stackflow.elastic.factory import ElasticsearchEndpoint, elasticsearch_factory
from stackflow.models.kinds import NAMESPACES, PODS, SERVICES
from stackflow.stack.certificates import CertificateSettings, KeyPair, LeafRequest, issue_leaf
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.builder import desired_children
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL
from stackflow.stack.objects import decode_secret_data
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Cluster,
    cluster,
    eventually,
)

__all__ = ["cluster"]

NAMESPACE = "demo"
NAME = "quickstart"
HOST = f"{NAME}-es-internal-http.{NAMESPACE}.svc"
#: A node kubesim's kubelet does not run: the Pods on it keep the status the test writes.
OUTSIDE_NODE = "outside-kubesim"
NOW = datetime.now(UTC)
ES: dict[str, Any] = {
    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
    "kind": "Elasticsearch",
    "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": "es-uid"},
    "spec": {"version": "8.17.0", "nodeSets": [{"name": "default", "count": 2}]},
}


@dataclasses.dataclass(frozen=True)
class Built:
    """What the operator's builder gives the cluster: how to reach it, its HTTP certificate."""

    endpoint: ElasticsearchEndpoint
    certificate: KeyPair
    ca: KeyPair


@pytest.fixture(scope="module")
def built() -> Built:
    children = desired_children(ES, existing={}, now=NOW, random_password=lambda: "pw-0123456789")
    existing = {(str(c["kind"]), str(c["metadata"]["name"])): c for c in children}
    endpoint = endpoint_for(ES, existing)
    assert endpoint is not None
    assert endpoint.url == f"https://{HOST}:9200"
    certs = decode_secret_data(existing[("Secret", names.http_certs_internal_secret_name(NAME))])
    ca = decode_secret_data(existing[("Secret", names.http_ca_internal_secret_name(NAME))])
    return Built(
        endpoint=endpoint,
        certificate=KeyPair(cert_pem=certs["tls.crt"], key_pem=certs["tls.key"]),
        ca=KeyPair(cert_pem=ca["tls.crt"], key_pem=ca["tls.key"]),
    )


def es_pod(built: Built, certificate: KeyPair, host: str, port: int = 0) -> FakeElasticsearch:
    """A fake Elasticsearch node on ``host``, as the operator's internal user sees it."""
    return FakeElasticsearch(
        host=host,
        port=port,
        username=built.endpoint.username,
        password=built.endpoint.password,
        cert_pem=certificate.cert_pem,
        key_pem=certificate.key_pem,
    )


async def serve(cluster: Cluster, *, port: int, pods: dict[str, tuple[str, bool]]) -> None:
    """The internal HTTP Service on ``port`` and its Pods ``name → (IP, ready)``, Running."""
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    selector = {ES_CLUSTER_NAME_LABEL: NAME}
    await cluster.raw.create(
        SERVICES,
        {
            "metadata": {"name": names.internal_http_service_name(NAME), "namespace": NAMESPACE},
            "spec": {
                "selector": selector,
                "ports": [{"name": "https", "port": port, "protocol": "TCP", "targetPort": port}],
            },
        },
    )
    for name, (ip, ready) in pods.items():
        await cluster.raw.create(
            PODS,
            {
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": selector},
                "spec": {
                    "nodeName": OUTSIDE_NODE,
                    "containers": [
                        {
                            "name": "elasticsearch",
                            "image": "elasticsearch:8.17.0",
                            "ports": [{"name": "https", "containerPort": port}],
                        }
                    ],
                },
            },
        )
        await set_pod(cluster, name, ip=ip, ready=ready)


async def set_pod(cluster: Cluster, name: str, *, ip: str, ready: bool) -> None:
    """Report the Pod Running at ``ip``, ready or not, as its kubelet would."""
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
    }
    await cluster.raw.patch_status(PODS, {"status": status}, namespace=NAMESPACE, name=name)


def endpoints_context(
    cluster: Cluster, *, selector: dict[str, Any] | None = None
) -> ControllerContext:
    """The activities' context of an operator run with ``elasticsearch-dial: endpoints``."""
    settings: dict[str, Any] = {
        "operator-namespace": OPERATOR_NAMESPACE,
        "elasticsearch-dial": "endpoints",
    }
    if selector is not None:
        settings["namespace-selector"] = selector
    config = OperatorConfig.model_validate(settings)
    return dataclasses.replace(
        cluster.context(selector=selector),
        config=config,
        elasticsearch=elasticsearch_factory(config, {}),
    )


async def dialled(context: ControllerContext, endpoint: ElasticsearchEndpoint) -> tuple[str, ...]:
    """The URLs the operator would dial the cluster at now, checking the name it expects."""
    dial = (await context.with_ready_addresses(endpoint)).dial
    assert dial is not None
    assert dial.server_hostname == HOST
    return dial.urls


async def test_a_ready_pod_is_reached_at_its_address_with_the_service_certificate(
    cluster: Cluster, built: Built
) -> None:
    async with es_pod(built, built.certificate, "127.0.0.71") as node:
        await serve(cluster, port=node.port, pods={"quickstart-es-default-0": ("127.0.0.71", True)})
        context = endpoints_context(cluster)
        assert await dialled(context, built.endpoint) == (f"https://127.0.0.71:{node.port}",)
        async with context.elasticsearch_session(built.endpoint) as api:
            health = await api.cluster_health()
    assert health.status == "green"
    assert [call.path for call in node.calls] == ["/_cluster/health"]


async def test_a_certificate_for_another_name_is_refused(cluster: Cluster, built: Built) -> None:
    # Issued by the cluster's own CA, so only the name is wrong.
    other = issue_leaf(
        ca=built.ca,
        request=LeafRequest(
            common_name="other", dns_names=(f"other-es-internal-http.{NAMESPACE}.svc",)
        ),
        now=NOW,
        settings=CertificateSettings(),
    )
    async with es_pod(built, other, "127.0.0.74") as node:
        await serve(cluster, port=node.port, pods={"quickstart-es-default-0": ("127.0.0.74", True)})
        context = endpoints_context(cluster)
        assert await dialled(context, built.endpoint) == (f"https://127.0.0.74:{node.port}",)
        async with context.elasticsearch_session(built.endpoint) as api:
            with pytest.raises(ElasticsearchUnavailable) as raised:
                await api.cluster_health()
    assert "Hostname mismatch" in str(raised.value), raised.value
    assert HOST in str(raised.value)
    assert node.calls == []  # refused at the handshake: the credentials were never sent


async def test_an_address_that_refuses_is_passed_for_the_next(
    cluster: Cluster, built: Built
) -> None:
    # The fake holds its port on 127.0.0.73 only: nothing can listen on it on 127.0.0.72.
    async with es_pod(built, built.certificate, "127.0.0.73") as node:
        pods = {
            "quickstart-es-default-0": ("127.0.0.72", True),
            "quickstart-es-default-1": ("127.0.0.73", True),
        }
        await serve(cluster, port=node.port, pods=pods)
        context = endpoints_context(cluster)
        urls = (f"https://127.0.0.72:{node.port}", f"https://127.0.0.73:{node.port}")
        assert await dialled(context, built.endpoint) == urls
        async with context.elasticsearch_session(built.endpoint) as api:
            assert (await api.cluster_health()).status == "green"
            assert (await api.get_license())["type"] == "basic"
    assert [call.path for call in node.calls] == ["/_cluster/health", "/_license"]


async def test_no_ready_pod_is_not_reachable(cluster: Cluster, built: Built) -> None:
    async with es_pod(built, built.certificate, "127.0.0.75") as node:
        await serve(cluster, port=node.port, pods={"quickstart-es-default-0": ("127.0.0.75", True)})
        context = endpoints_context(cluster)
        assert await dialled(context, built.endpoint) == (f"https://127.0.0.75:{node.port}",)

        await set_pod(cluster, "quickstart-es-default-0", ip="127.0.0.75", ready=False)
        assert await dialled(context, built.endpoint) == ()
        async with context.elasticsearch_session(built.endpoint) as api:
            with pytest.raises(ElasticsearchUnavailable, match="has no ready address"):
                await api.cluster_health()
    assert node.calls == []


async def test_a_cluster_out_of_scope_has_no_address_to_dial(
    cluster: Cluster, built: Built
) -> None:
    async with es_pod(built, built.certificate, "127.0.0.76") as node:
        await serve(cluster, port=node.port, pods={"quickstart-es-default-0": ("127.0.0.76", True)})
        in_scope = endpoints_context(cluster, selector=SELECTOR)
        assert await dialled(in_scope, built.endpoint) == (f"https://127.0.0.76:{node.port}",)

        await cluster.raw.merge_patch(
            NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=NAMESPACE
        )

        # The matcher sees the Namespace's labels through an informer: wait for it.
        async def out_of_scope() -> bool:
            return await dialled(in_scope, built.endpoint) == ()

        await eventually(out_of_scope, within=30, what="the Namespace to leave the scope")
    assert node.calls == []
