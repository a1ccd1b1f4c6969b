"""The fake, checked against the real one: every call the operator makes of an Elasticsearch
cluster (``AiohttpElasticsearchClient``) is sent to a ``FakeElasticsearch`` and to a real node of
a one-node cluster the operator runs (``fvr/one``), and the two answers must agree: HTTP status,
every key of the body and its JSON type, and every value but those masked by path (uids, dates,
versions, node and shard counts). What still differs is a row of
``tests/fakes/FAKE_ELASTICSEARCH_DIFFERENCES.md`` with its reason; a difference without a row
fails with a field-by-field diff, and so does a row whose difference is gone.

Each call brings both servers to the state it needs and leaves the real one as it found it; the
fake is a fresh one per call, in the real cluster's state (the trial started, as the operator
started it there). The table's requests are the client's own: a test holds them to what
``AiohttpElasticsearchClient`` sends.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
import pytest_asyncio

from stackflow.elastic.client import AiohttpElasticsearchClient, ElasticsearchError
from tests.clusters import KUBESIM
from tests.e2e.harness import ES, get_or_none
from tests.elasticsearch.fake_compare import (
    DOCUMENT,
    UNKNOWN_API_KEY,
    WRONG_PASSWORD,
    Call,
    Request,
    Server,
    compare,
    read_rows,
    send,
)
from tests.elasticsearch.real_stack import (
    ElasticsearchOf,
    RealStack,
    elasticsearch,
    green_with,
    in_scope_namespace,
    unavailable,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def es_target() -> str:
    """Only kubesim: the comparison is between the fake and a node, whichever API server runs
    the Pods (a second backend would cost CI a cluster and find nothing more)."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    return KUBESIM


NS = "fvr"
NAME = "one"
KEY_NAME = "stackflow-fake-vs-real"
ACCESS = {"search": [{"names": ["logs-*"]}]}
METADATA = {"managed-by": "stackflow-tests"}
STATE_PATH = "/_cluster/state/metadata"
FILE_SETTINGS = {"filter_path": "metadata.reserved_state.file_settings"}
ACKNOWLEDGE = {"acknowledge": "true"}
#: A license as the operator puts one, whose signature is no Elastic signature (the made-up
#: ``sig`` of the operator's license tests).
MALFORMED_LICENSE = {
    "uid": "893361dc-9749-4997-93cb-802e3d7fa4a8",
    "type": "platinum",
    "issue_date_in_millis": 1411948800000,
    "expiry_date_in_millis": 1914278399999,
    "max_nodes": 1,
    "issued_to": "stackflow tests",
    "issuer": "stackflow tests",
    "signature": "sig",
}
#: What remote_clusters.py writes: a certificate-based remote's transport seeds, an API-key
#: remote's remote-cluster-server seeds (8.10+), and ``seeds: null`` for a removed alias.
TRANSPORT_SEEDS = {"cluster.remote.fvr-transport.seeds": ["other-es-transport.fvr.svc:9300"]}
API_KEY_SEEDS = {"cluster.remote.fvr-api-key.seeds": ["other-es-remote-cluster.fvr.svc:9443"]}
#: Proxy mode, which the operator never writes (ECK does not) but the client can.
PROXY_MODE = {
    "cluster.remote.fvr-proxy.mode": "proxy",
    "cluster.remote.fvr-proxy.proxy_address": "other-es-remote-cluster.fvr.svc:9443",
}
#: What the autoscaler writes for machine learning (autoscaling.py ml_node_settings).
ML_SETTINGS = {
    "xpack.ml.max_ml_node_size": "0b",
    "xpack.ml.max_lazy_ml_nodes": 0,
    "xpack.ml.use_auto_machine_memory_percent": True,
}
#: A number and a boolean, which Elasticsearch stores and answers as strings.
TYPED_SETTINGS = {
    "cluster.routing.allocation.node_concurrent_recoveries": 3,
    "cluster.routing.allocation.disk.threshold_enabled": False,
}
TRANSIENT = {"cluster.routing.allocation.exclude._name": "fvr-no-such-node"}
#: What the orchestration writes around a rolling restart or a downscale: replicas held back, a
#: node (here none of the cluster's) drained.
ALLOCATION = {
    "cluster.routing.allocation.enable": "primaries",
    "cluster.routing.allocation.exclude._name": "fvr-no-such-node",
}
#: The one node of the fake, standing for the real cluster's one node (its name is masked).
FAKE_NODE = "fvr-fake-es-default-0"
#: A node name no node of the cluster has (a voting exclusion of it is ``_absent_``).
NO_SUCH_NODE = "fvr-no-such-node"
#: An index of one shard with one replica: on one node, the primary starts and the replica
#: stays unassigned (a yellow cluster).
INDEX = "fvr-index"
CREATE_INDEX = Request(
    "PUT", f"/{INDEX}", body={"settings": {"number_of_shards": 1, "number_of_replicas": 1}}
)
DELETE_INDEX = Request("DELETE", f"/{INDEX}")
NODES_FILTER = {"filter_path": "nodes.*.name,nodes.*.roles,nodes.*.version"}
SHARDS_COLUMNS = {"format": "json", "h": "index,shard,prirep,state,node"}
VOTING_FILTER = {"filter_path": "metadata.cluster_coordination.voting_config_exclusions"}
VOTING_PATH = "/_cluster/voting_config_exclusions"
ADD_VOTING_EXCLUSION = Request(
    "POST", VOTING_PATH, params={"node_names": NO_SUCH_NODE, "timeout": "30s"}
)
CLEAR_VOTING_EXCLUSIONS = Request("DELETE", VOTING_PATH, params={"wait_for_removal": "false"})
SHUTDOWN_PATH = f"/_nodes/{NO_SUCH_NODE}/shutdown"
SHUTDOWN_REASON = "stackflow-fake-vs-real"
HEALTH_COUNTS = (
    "body.cluster_name",
    "body.number_of_*",
    "body.*shards*",
    "body.task_max_waiting_in_queue_millis",
)
LICENSE_VALUES = tuple(
    f"body.license.{name}"
    for name in (
        "uid",
        "issue_date",
        "issue_date_in_millis",
        "expiry_date",
        "expiry_date_in_millis",
        "issued_to",
    )
)


def put_settings(
    persistent: Mapping[str, Any] | None = None, transient: Mapping[str, Any] | None = None
) -> Request:
    """``PUT /_cluster/settings`` as the client sends it (only the scopes given)."""
    body: dict[str, Any] = {}
    if persistent is not None:
        body["persistent"] = dict(persistent)
    if transient is not None:
        body["transient"] = dict(transient)
    return Request("PUT", "/_cluster/settings", body=body)


def removal(settings: Mapping[str, Any]) -> dict[str, None]:
    """The nulls that remove ``settings``."""
    return dict.fromkeys(settings)


CALLS: tuple[Call, ...] = (
    Call(
        "health",
        Request("GET", "/_cluster/health"),
        operator=lambda api: api.cluster_health(),
        masks=HEALTH_COUNTS,
    ),
    Call(
        "health with a wrong password",
        Request("GET", "/_cluster/health"),
        operator=lambda api: api.cluster_health(),
        credentials=WRONG_PASSWORD,
    ),
    Call(
        "health with an unknown API key",
        Request("GET", "/_cluster/health"),
        operator=lambda api: api.cluster_health(),
        credentials=UNKNOWN_API_KEY,
    ),
    Call(
        "license (the trial)",
        Request("GET", "/_license"),
        operator=lambda api: api.get_license(),
        masks=LICENSE_VALUES,
    ),
    Call(
        "start a second trial",
        Request("POST", "/_license/start_trial", params=ACKNOWLEDGE),
        operator=lambda api: api.start_trial(),
    ),
    Call(
        "put a license with a malformed signature",
        Request("PUT", "/_license", params=ACKNOWLEDGE, body={"licenses": [MALFORMED_LICENSE]}),
        operator=lambda api: api.put_license(MALFORMED_LICENSE),
    ),
    Call(
        "put a license body without licenses",
        Request("PUT", "/_license", params=ACKNOWLEDGE, body={}),
    ),
    Call(
        "file settings state",
        Request("GET", STATE_PATH, params=FILE_SETTINGS),
        operator=lambda api: api.file_settings_state(),
        masks=("body.metadata.reserved_state.file_settings.version",),
    ),
    Call(
        "remote cluster seeds (transport)",
        put_settings(TRANSPORT_SEEDS),
        operator=lambda api: api.put_cluster_settings(TRANSPORT_SEEDS),
        after=(put_settings(removal(TRANSPORT_SEEDS)),),
    ),
    Call(
        "remote cluster seeds (API key)",
        put_settings(API_KEY_SEEDS),
        operator=lambda api: api.put_cluster_settings(API_KEY_SEEDS),
        after=(put_settings(removal(API_KEY_SEEDS)),),
    ),
    Call(
        "remote cluster seeds removed",
        put_settings(removal(TRANSPORT_SEEDS)),
        operator=lambda api: api.put_cluster_settings(removal(TRANSPORT_SEEDS)),
        before=(put_settings(TRANSPORT_SEEDS),),
    ),
    Call(
        "remote cluster in proxy mode",
        put_settings(PROXY_MODE),
        operator=lambda api: api.put_cluster_settings(PROXY_MODE),
        after=(put_settings(removal(PROXY_MODE)),),
    ),
    Call(
        "machine learning settings",
        put_settings(ML_SETTINGS),
        operator=lambda api: api.put_cluster_settings(ML_SETTINGS),
    ),
    Call(
        "a number and a boolean setting",
        put_settings(TYPED_SETTINGS),
        operator=lambda api: api.put_cluster_settings(TYPED_SETTINGS),
        after=(put_settings(removal(TYPED_SETTINGS)),),
    ),
    Call(
        "an unknown setting",
        put_settings({"fvr.no.such.setting": "1"}),
        operator=lambda api: api.put_cluster_settings({"fvr.no.such.setting": "1"}),
    ),
    Call(
        "nothing to update",
        put_settings({}),
        operator=lambda api: api.put_cluster_settings({}),
    ),
    Call(
        "an unknown transient setting",
        put_settings(transient={"fvr.no.such.setting": "1"}),
    ),
    Call(
        "a transient setting",
        put_settings(transient=TRANSIENT),
        after=(put_settings(transient=removal(TRANSIENT)),),
    ),
    Call(
        "cluster settings",
        Request("GET", "/_cluster/settings"),
        before=(put_settings(TRANSPORT_SEEDS, TRANSIENT),),
        after=(put_settings(removal(TRANSPORT_SEEDS), removal(TRANSIENT)),),
    ),
    Call(
        "cluster settings, flat",
        Request("GET", "/_cluster/settings", params={"flat_settings": "true"}),
        before=(put_settings(TRANSPORT_SEEDS, TRANSIENT),),
        after=(put_settings(removal(TRANSPORT_SEEDS), removal(TRANSIENT)),),
    ),
    Call(
        "put transient allocation settings",
        put_settings(transient=ALLOCATION),
        operator=lambda api: api.put_transient_settings(ALLOCATION),
        after=(put_settings(transient=removal(ALLOCATION)),),
    ),
    Call(
        "remove transient allocation settings",
        put_settings(transient=removal(ALLOCATION)),
        operator=lambda api: api.put_transient_settings(removal(ALLOCATION)),
        before=(put_settings(transient=ALLOCATION),),
    ),
    Call(
        "allocation settings",
        Request("GET", "/_cluster/settings", params={"flat_settings": "true"}),
        operator=lambda api: api.allocation_settings(),
        before=(put_settings(transient=ALLOCATION),),
        after=(put_settings(transient=removal(ALLOCATION)),),
    ),
    Call(
        "an unknown allocation enable value",
        put_settings(transient={"cluster.routing.allocation.enable": "fvr-bogus"}),
    ),
    Call(
        "the cluster's uuid",
        Request("GET", STATE_PATH, params={"filter_path": "metadata.cluster_uuid"}),
        operator=lambda api: api.cluster_uuid(),
        masks=("body.metadata.cluster_uuid",),
    ),
    Call(
        "the root (GET /)",
        Request("GET", "/"),
        masks=("body.name", "body.cluster_name", "body.cluster_uuid", "body.version.*"),
    ),
    Call(
        "nodes",
        Request("GET", "/_nodes", params=NODES_FILTER),
        operator=lambda api: api.nodes(),
        masks=("body.nodes.*.name", "body.nodes.*.version"),
        id_keys=("body.nodes",),
    ),
    Call(
        "shards, no index",
        Request("GET", "/_cat/shards", params=SHARDS_COLUMNS),
        operator=lambda api: api.shards(),
    ),
    Call(
        "shards of an index with a replica",
        Request("GET", "/_cat/shards", params=SHARDS_COLUMNS),
        operator=lambda api: api.shards(),
        masks=("body[*].node",),
        before=(CREATE_INDEX,),
        after=(DELETE_INDEX,),
    ),
    Call(
        "orchestration health, a replica unassigned",
        Request("GET", "/_cluster/health"),
        operator=lambda api: api.orchestration_health(),
        masks=("body.cluster_name", "body.task_max_waiting_in_queue_millis"),
        before=(CREATE_INDEX,),
        after=(DELETE_INDEX,),
    ),
    Call(
        "flush",
        Request("POST", "/_flush"),
        operator=lambda api: api.flush(),
        before=(CREATE_INDEX,),
        after=(DELETE_INDEX,),
    ),
    Call(
        "voting exclusions, none",
        Request("GET", STATE_PATH, params=VOTING_FILTER),
        operator=lambda api: api.voting_exclusions(),
    ),
    Call(
        "voting exclusions of an unknown node",
        Request("GET", STATE_PATH, params=VOTING_FILTER),
        operator=lambda api: api.voting_exclusions(),
        before=(ADD_VOTING_EXCLUSION,),
        after=(CLEAR_VOTING_EXCLUSIONS,),
    ),
    Call(
        "exclude an unknown node from voting",
        ADD_VOTING_EXCLUSION,
        operator=lambda api: api.add_voting_exclusions([NO_SUCH_NODE]),
        after=(CLEAR_VOTING_EXCLUSIONS,),
    ),
    Call(
        "clear the voting exclusions",
        CLEAR_VOTING_EXCLUSIONS,
        operator=lambda api: api.clear_voting_exclusions(),
        before=(ADD_VOTING_EXCLUSION,),
    ),
    Call(
        "node shutdowns without the shutdown API",
        Request("GET", "/_nodes/shutdown"),
        operator=lambda api: api.node_shutdowns(),
        masks=("body.cluster_name",),
    ),
    Call(
        "put a node shutdown without the shutdown API",
        Request("PUT", SHUTDOWN_PATH, body={"type": "restart", "reason": SHUTDOWN_REASON}),
        operator=lambda api: api.put_node_shutdown(
            NO_SUCH_NODE, type="restart", reason=SHUTDOWN_REASON
        ),
    ),
    Call(
        "delete a node shutdown without the shutdown API",
        Request("DELETE", SHUTDOWN_PATH),
        operator=lambda api: api.delete_node_shutdown(NO_SUCH_NODE),
    ),
    Call(
        "create an API key",
        Request(
            "POST",
            "/_security/api_key",
            body={"name": KEY_NAME, "role_descriptors": {}, "metadata": METADATA},
        ),
        operator=lambda api: api.create_api_key(
            name=KEY_NAME, role_descriptors={}, metadata=METADATA
        ),
    ),
    Call(
        "create a cross-cluster API key",
        Request(
            "POST",
            "/_security/cross_cluster/api_key",
            body={"name": KEY_NAME, "access": ACCESS, "metadata": METADATA},
        ),
        operator=lambda api: api.create_cross_cluster_api_key(
            name=KEY_NAME, access=ACCESS, metadata=METADATA
        ),
    ),
    Call(
        "update an unknown cross-cluster API key",
        Request(
            "PUT",
            "/_security/cross_cluster/api_key/no-such-key",
            body={"access": ACCESS, "metadata": METADATA},
        ),
        operator=lambda api: api.update_cross_cluster_api_key(
            "no-such-key", access=ACCESS, metadata=METADATA
        ),
    ),
    Call(
        "active API keys",
        Request(
            "GET", "/_security/api_key", params={"name": f"{KEY_NAME}*", "active_only": "true"}
        ),
        operator=lambda api: api.active_api_keys(f"{KEY_NAME}*"),
    ),
    Call(
        "invalidate API keys by name",
        Request("DELETE", "/_security/api_key", body={"name": KEY_NAME}),
        operator=lambda api: api.invalidate_api_key(name=KEY_NAME),
    ),
    Call(
        "invalidate API keys by id",
        Request("DELETE", "/_security/api_key", body={"ids": ["no-such-key"]}),
        operator=lambda api: api.invalidate_api_key(ids=["no-such-key"]),
    ),
    Call(
        "put an autoscaling policy",
        Request("PUT", "/_autoscaling/policy/fvr", body={"roles": ["data"], "deciders": {}}),
        operator=lambda api: api.put_autoscaling_policy("fvr", {"roles": ["data"], "deciders": {}}),
    ),
    Call(
        "autoscaling capacity",
        Request("GET", "/_autoscaling/capacity"),
        operator=lambda api: api.autoscaling_capacity(),
    ),
    Call(
        "delete the autoscaling policies",
        Request("DELETE", "/_autoscaling/policy/*"),
        operator=lambda api: api.delete_autoscaling_policies(),
    ),
)
CALLS_BY_NAME = {call.name: call for call in CALLS}


def _client(server: Server, credentials: str) -> AiohttpElasticsearchClient:
    """The operator's client of ``server`` with ``credentials``."""
    password = "not-the-password" if credentials == WRONG_PASSWORD else server.password
    api_key = server.authorization(credentials).removeprefix("ApiKey ")
    return AiohttpElasticsearchClient(
        url=server.url,
        username=server.user,
        password=password,
        api_key=api_key if credentials == UNKNOWN_API_KEY else None,
    )


@asynccontextmanager
async def _fake(user: str, password: str) -> AsyncIterator[tuple[FakeElasticsearch, Server]]:
    """A fresh fake with the real cluster's user, in the real cluster's state: one node (with
    Elasticsearch's default roles), no index, the trial started (by the call the operator started
    it with on the real one) and file settings applied."""
    async with FakeElasticsearch(username=user, password=password) as fake:
        server = Server(fake.url, user, password)
        started = await send(server, Request("POST", "/_license/start_trial", params=ACKNOWLEDGE))
        assert started.status == 200, started
        fake.state.file_settings_version = 1
        fake.add_node(FAKE_NODE)
        yield fake, server


# -- the table is the client's ------------------------------------------------------------------


@pytest.mark.parametrize("call", [c for c in CALLS if c.operator is not None], ids=lambda c: c.name)
async def test_each_call_is_sent_as_the_operator_s_client_sends_it(call: Call) -> None:
    async with _fake("elastic", "changeme") as (fake, server):
        fake.calls.clear()
        async with _client(server, call.credentials) as api:
            assert call.operator is not None
            # An error answer is the comparison's business, not this test's.
            with contextlib.suppress(ElasticsearchError):
                await call.operator(api)
        sent = [(c.method, c.path, c.query, c.body) for c in fake.calls]
    request = call.request
    assert sent == [(request.method, request.path, dict(request.params), request.body)]


async def test_every_row_of_the_differences_table_is_of_a_compared_call_and_says_why() -> None:
    rows = read_rows(DOCUMENT.read_text(encoding="utf-8"))
    assert rows, f"{DOCUMENT.name} has no table"
    assert [row.call for row in rows if row.call not in CALLS_BY_NAME] == []
    assert [row for row in rows if not row.reason.strip()] == []
    assert len({(row.call, row.field) for row in rows}) == len(rows), "a field is listed twice"


# -- the comparison ------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def real_node(es_stack: RealStack) -> Server:
    """A node of the module's one-node cluster, formed green, with the trial the operator
    started and the file settings it wrote applied."""
    if await get_or_none(es_stack.kube, ES, namespace=NS, name=NAME) is None:
        await in_scope_namespace(es_stack.kube, NS)
        await es_stack.kube.create(ES, elasticsearch(NS, NAME, count=1), namespace=NS)
    es = ElasticsearchOf(es_stack.kube, NS, NAME)
    await green_with(es, 1)

    async def trial() -> bool:
        _, body = await es.call("GET", "/_license")
        return bool(body["license"]["type"] == "trial")

    await eventually(trial, within=120, what="the operator started the trial")

    async def file_settings_applied() -> bool:
        _, body = await es.call("GET", f"{STATE_PATH}?filter_path=metadata.reserved_state")
        version = body["metadata"]["reserved_state"]["file_settings"]["version"]
        return bool(version >= 0)

    await eventually(file_settings_applied, within=120, what="the operator's file settings")
    node = await es.node()
    return Server(
        url=f"https://{node.ip}:9200",
        user="elastic",
        password=await es.password(),
        ssl_context=ssl.create_default_context(cadata=node.ca_pem),
        server_hostname=node.server_hostname,
    )


async def _steps(server: Server, steps: tuple[Request, ...], what: str) -> None:
    for step in steps:
        answer = await send(server, step)
        assert answer.status == 200, f"{what} step {step} answered {answer}"


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c.name)
async def test_the_fake_answers_each_call_as_a_real_node_does(
    real_node: Server, call: Call
) -> None:
    rows = read_rows(DOCUMENT.read_text(encoding="utf-8"))
    async with _fake(real_node.user, real_node.password) as (_, fake):
        await _steps(fake, call.before, "a before")
        fake_answer = await send(fake, call.request, credentials=call.credentials)
    await _steps(real_node, call.before, "a before")
    try:
        real_answer = await send(real_node, call.request, credentials=call.credentials)
    finally:
        await _steps(real_node, call.after, "an after")
    comparison = compare(call, fake_answer, real_answer, rows)
    assert comparison.passed, comparison.report()
