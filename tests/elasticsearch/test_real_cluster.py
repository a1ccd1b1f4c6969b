"""Real Elasticsearch behind the Pods: what the operator writes (``elasticsearch.yml``,
certificates, file-realm users, service tokens, file settings, seed hosts) starts real nodes that
form one cluster, and the operator's view of the cluster comes from the nodes themselves.

One three-node cluster (``es-a/main``) serves the tests of this module, in order; the last ones
delete a Pod and flip the namespace out of scope.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from typing import Any

import aiohttp
import pytest
from cryptography import x509

from stackflow.api.kinds import kind_resource
from stackflow.models.engine import SA_PHASE
from stackflow.models.kinds import NAMESPACES, PODS, SECRETS, STATEFULSETS
from tests.e2e.harness import ES, SCOPE_LABEL, get_or_none, manifest
from tests.elasticsearch.changes import reconciled
from tests.elasticsearch.real_stack import (
    FORM_WITHIN,
    ElasticsearchOf,
    RealStack,
    elasticsearch,
    green_with,
    in_scope_namespace,
)
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "es-a"
NAME = "main"
POLICY = kind_resource("StackConfigPolicy")
KIBANA = kind_resource("Kibana")
RECOVERY_SETTING = "indices.recovery.max_bytes_per_sec"


async def _resource(stack: RealStack) -> dict[str, Any]:
    return dict(await stack.kube.get(ES, namespace=NS, name=NAME))


async def _ensure_cluster(stack: RealStack) -> ElasticsearchOf:
    """The module's three-node cluster, created by the first test that needs it."""
    if await get_or_none(stack.kube, ES, namespace=NS, name=NAME) is None:
        await in_scope_namespace(stack.kube, NS)
        await stack.kube.create(ES, elasticsearch(NS, NAME, labels={"policy": "on"}), namespace=NS)
    es = ElasticsearchOf(stack.kube, NS, NAME)
    await green_with(es, 3)
    # A test before may have changed the nodes' configuration (a policy does): the operator rolls
    # it through the nodes one by one, and the cluster is green between two restarts. Wait until
    # the operator reports the change done, so no node restarts under the next test.
    await reconciled(
        stack, NS, NAME, version=str((await _resource(stack))["spec"]["version"]), nodes=3
    )
    return es


async def test_three_nodes_form_one_green_cluster_the_operator_reports(es_stack: RealStack) -> None:
    es = await _ensure_cluster(es_stack)
    _, nodes = await es.call("GET", "/_cat/nodes?format=json&h=name,ip,master")
    assert sorted(node["name"] for node in nodes) == [f"{NAME}-es-default-{i}" for i in range(3)]
    pods = await es_stack.kube.list(PODS, namespace=NS)
    assert {node["ip"] for node in nodes} == {pod["status"]["podIP"] for pod in pods["items"]}
    assert sum(node["master"] == "*" for node in nodes) == 1

    async def reported() -> bool:
        status = (await _resource(es_stack)).get("status") or {}
        return status.get("health") == "green" and status.get("availableNodes") == 3

    await eventually(reported, within=FORM_WITHIN, what="status.health green, 3 available nodes")
    status = (await _resource(es_stack))["status"]
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    assert conditions["ElasticsearchIsReachable"]["status"] == "True", conditions


async def test_the_elastic_user_and_the_operator_s_internal_users_authenticate(
    es_stack: RealStack,
) -> None:
    es = await _ensure_cluster(es_stack)
    _, me = await es.call("GET", "/_security/_authenticate")
    assert me["username"] == "elastic"
    assert "superuser" in me["roles"]
    internal = await es_stack.kube.get(SECRETS, namespace=NS, name=f"{NAME}-es-internal-users")
    users = {key: base64.b64decode(value).decode() for key, value in internal["data"].items()}
    assert "elastic-internal" in users
    for user, password in sorted(users.items()):
        _, who = await es.call("GET", "/_security/_authenticate", user=user, password=password)
        assert who["username"] == user
        assert who["authentication_realm"]["type"] == "file"
    wrong, _ = await es.call(
        "GET", "/_security/_authenticate", user="elastic", password="not-it", expect=None
    )
    assert wrong == 401


def _serial(pem: str) -> str:
    return format(x509.load_pem_x509_certificate(pem.encode()).serial_number, "x")


async def test_http_and_transport_present_the_operator_s_certificates(es_stack: RealStack) -> None:
    es = await _ensure_cluster(es_stack)
    pod = f"{NAME}-es-default-0"
    _, certificates = await es.call("GET", "/_ssl/certificates", pod=pod)
    in_use = {cert["path"]: cert for cert in certificates if cert["has_private_key"]}
    http = await es_stack.kube.get(SECRETS, namespace=NS, name=f"{NAME}-es-http-certs-internal")
    transport = await es_stack.kube.get(
        SECRETS, namespace=NS, name=f"{NAME}-es-default-es-transport-certs"
    )
    http_pem = base64.b64decode(http["data"]["tls.crt"]).decode()
    transport_pem = base64.b64decode(transport["data"][f"{pod}.tls.crt"]).decode()
    by_path = {path.rsplit("/", 1)[-1]: cert for path, cert in in_use.items()}
    assert by_path["tls.crt"]["serial_number"].lower() == _serial(http_pem)
    assert by_path[f"{pod}.tls.crt"]["serial_number"].lower() == _serial(transport_pem)
    # The HTTP certificate is verified against the cluster's CA for the Service's name (every
    # call above); a client trusting another CA is refused.
    node = await es.node(pod)
    context = ssl.create_default_context()
    with pytest.raises(ssl.SSLCertVerificationError):
        await asyncio.open_connection(
            node.ip, 9200, ssl=context, server_hostname=node.server_hostname
        )


async def test_the_trial_license_reaches_the_cluster(es_stack: RealStack) -> None:
    es = await _ensure_cluster(es_stack)

    async def trial() -> bool:
        _, license_ = await es.call("GET", "/_license")
        return bool(
            license_["license"]["type"] == "trial" and license_["license"]["status"] == "active"
        )

    await eventually(trial, within=120, what="GET _license says trial")


async def test_a_policy_s_cluster_settings_arrive_through_file_settings(
    es_stack: RealStack,
) -> None:
    es = await _ensure_cluster(es_stack)
    policy = {
        "apiVersion": POLICY.api_version,
        "kind": "StackConfigPolicy",
        "metadata": {"name": "recovery", "namespace": "elastic-system"},
        "spec": {
            "resourceSelector": {"matchLabels": {"policy": "on"}},
            "elasticsearch": {"clusterSettings": {RECOVERY_SETTING: "33mb"}},
        },
    }
    await es_stack.kube.create(POLICY, policy, namespace="elastic-system")

    async def applied() -> bool:
        _, settings = await es.call("GET", "/_cluster/settings?flat_settings=true")
        return bool(settings["persistent"].get(RECOVERY_SETTING) == "33mb")

    await eventually(applied, within=180, what=f"{RECOVERY_SETTING} in _cluster/settings")
    _, state = await es.call("GET", "/_cluster/state/metadata?filter_path=metadata.reserved_state")
    file_settings = state["metadata"]["reserved_state"]["file_settings"]
    assert RECOVERY_SETTING in file_settings["handlers"]["cluster_settings"]["keys"]
    assert not file_settings.get("errors"), file_settings

    async def policy_ready() -> bool:
        status = (await es_stack.kube.get(POLICY, namespace="elastic-system", name="recovery")).get(
            "status"
        ) or {}
        return status.get("phase") == "Ready" and status.get("readyCount") == "1/1"

    await eventually(policy_ready, within=180, what="the policy Ready 1/1 from the node's state")
    # The setting is reserved: a user cannot change it behind the policy's back.
    refused, body = await es.call(
        "PUT",
        "/_cluster/settings",
        {"persistent": {RECOVERY_SETTING: "1mb"}},
        expect=None,
    )
    assert refused == 400, body
    assert "set as read-only by [file_settings]" in json.dumps(body)


async def test_a_kibana_association_s_token_authenticates_against_the_cluster(
    es_stack: RealStack,
) -> None:
    es = await _ensure_cluster(es_stack)
    await in_scope_namespace(es_stack.kube, "kb-a")
    spec = {
        "version": (await _resource(es_stack))["spec"]["version"],
        "count": 1,
        "elasticsearchRef": {"name": NAME, "namespace": NS},
    }
    await es_stack.kube.create(KIBANA, manifest("Kibana", "kb", "kb-a", spec), namespace="kb-a")

    async def established() -> bool:
        kibana = await es_stack.kube.get(KIBANA, namespace="kb-a", name="kb")
        return (kibana.get("status") or {}).get("elasticsearchAssociationStatus") == "Established"

    await eventually(established, within=120, what="the Kibana association Established")
    secret = await es_stack.kube.get(SECRETS, namespace="kb-a", name="kb-kibana-user")
    token = base64.b64decode(secret["data"]["token"]).decode()

    async def authenticated() -> bool:
        node = await es.node()
        context = ssl.create_default_context(cadata=node.ca_pem)
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"https://{node.ip}:9200/_security/_authenticate",
                headers={"Authorization": f"Bearer {token}"},
                ssl=context,
                server_hostname=node.server_hostname,
            ) as response,
        ):
            if response.status != 200:
                return False
            who = await response.json()
        return bool(who["username"] == "elastic/kibana")

    # The token reaches the nodes through the file realm's service_tokens file, re-read live.
    await eventually(authenticated, within=120, what="the Kibana token authenticates")


async def test_a_node_whose_pod_is_deleted_comes_back_with_its_data(es_stack: RealStack) -> None:
    es = await _ensure_cluster(es_stack)
    pod = f"{NAME}-es-default-0"
    # An index whose only copy lives on that one node: its documents survive only with its data.
    await es.call(
        "PUT",
        "/pinned",
        {
            "settings": {
                "number_of_shards": 1,
                "number_of_replicas": 0,
                "index.routing.allocation.require._name": pod,
            }
        },
    )
    for number in range(25):
        await es.call("POST", "/pinned/_doc?refresh=wait_for", {"n": number}, expect=201)
    before = await es_stack.kube.get(PODS, namespace=NS, name=pod)
    await es_stack.kube.delete(PODS, namespace=NS, name=pod)

    async def replaced_and_ready() -> bool:
        current = await get_or_none(es_stack.kube, PODS, namespace=NS, name=pod)
        if current is None or current["metadata"]["uid"] == before["metadata"]["uid"]:
            return False
        statuses = (current.get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and all(s.get("ready") for s in statuses)

    await eventually(replaced_and_ready, within=FORM_WITHIN, what=f"{pod} replaced and ready")
    await green_with(es, 3)
    _, count = await es.call("GET", "/pinned/_count")
    assert count["count"] == 25
    _, shards = await es.call("GET", "/_cat/shards/pinned?format=json&h=node,state")
    assert shards == [{"node": pod, "state": "STARTED"}]


async def test_a_flip_out_of_scope_leaves_the_running_cluster_serving(es_stack: RealStack) -> None:
    es = await _ensure_cluster(es_stack)
    await es.call("PUT", "/kept", {"settings": {"number_of_replicas": 1}})
    await es.call("POST", "/kept/_doc?refresh=wait_for", {"kept": True}, expect=201)
    pods_before = {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in (await es_stack.kube.list(PODS, namespace=NS))["items"]
    }
    sts_before = await es_stack.kube.get(STATEFULSETS, namespace=NS, name=f"{NAME}-es-default")
    await es_stack.kube.merge_patch(
        NAMESPACES, {"metadata": {"labels": {SCOPE_LABEL: None}}}, namespace=None, name=NS
    )
    handle = es_stack.client.get_workflow_handle(f"elasticsearch/{NS}/{NAME}")

    async def out_of_scope() -> bool:
        described = await handle.describe()
        return described.typed_search_attributes.get(SA_PHASE) == "OutOfScope"

    await eventually(out_of_scope, within=120, what="the cluster's workflow OutOfScope")
    await green_with(es, 3)
    _, count = await es.call("GET", "/kept/_count")
    assert count["count"] == 1
    pods_after = {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in (await es_stack.kube.list(PODS, namespace=NS))["items"]
    }
    assert pods_after == pods_before
    sts_after = await es_stack.kube.get(STATEFULSETS, namespace=NS, name=f"{NAME}-es-default")
    assert sts_after["metadata"]["resourceVersion"] == sts_before["metadata"]["resourceVersion"]
