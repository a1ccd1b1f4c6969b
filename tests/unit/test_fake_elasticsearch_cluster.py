"""The fake Elasticsearch's cluster model, through the operator's own client: nodes, shard copies and
their allocation (``exclude._name``, ``enable``, a node leaving), the health it gives, voting
exclusions, the node shutdown API on and off, and the Pods-to-nodes helper."""

from __future__ import annotations

import base64
import json as json_module
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from stackflow.elastic import (
    AiohttpElasticsearchClient,
    ElasticsearchError,
    ElasticsearchUnavailable,
)
from stackflow.elastic.cluster_view import ENABLE_SETTING, EXCLUDE_NAME_SETTING
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    AllocationSettings,
    ClusterHealth,
    ClusterNode,
    NodeShutdown,
    Shard,
)
from stackflow.stack.labels import ES_VERSION_LABEL, node_role_label, role_labels
from tests.elasticsearch.fake_compare import Answer, view
from tests.fakes.fake_cluster_nodes import node_roles_from_labels, sync_nodes_with_pods
from tests.fakes.fake_elasticsearch import (
    DEFAULT_NODE_ROLES,
    FakeCluster,
    FakeElasticsearch,
    filter_path,
)

PASSWORD = "s3cret"
AUTHORIZATION = "Basic " + base64.b64encode(f"elastic:{PASSWORD}".encode()).decode()
Layout = dict[str, list[tuple[str, int, str]]]
#: A change made to the fake (what it returns is not read).
Step = Callable[[FakeElasticsearch], object]


@pytest.fixture
async def fake() -> AsyncIterator[FakeElasticsearch]:
    async with FakeElasticsearch(password=PASSWORD) as server:
        yield server


@pytest.fixture
async def client(fake: FakeElasticsearch) -> AsyncIterator[AiohttpElasticsearchClient]:
    async with AiohttpElasticsearchClient(
        url=fake.url, username="elastic", password=PASSWORD
    ) as es_client:
        yield es_client


async def raw(
    fake: FakeElasticsearch, method: str, path: str, *, json: Any = None
) -> tuple[int, Any]:
    """One request as it is answered: status and body (JSON, else the text)."""
    async with (
        aiohttp.ClientSession(headers={"Authorization": AUTHORIZATION}) as session,
        session.request(method, f"{fake.url}{path}", json=json) as response,
    ):
        text = await response.text()
        status = response.status
    try:
        return status, json_module.loads(text)
    except ValueError:
        return status, text


def assert_sound(cluster: FakeCluster) -> None:
    """No copy of a shard on a node twice (so never a primary with its replica), one primary
    per shard, every assigned copy on a node in the cluster."""
    seen: set[tuple[str, int, str]] = set()
    for copy in cluster.copies:
        if copy.node is not None:
            assert copy.node in cluster.nodes
            assert (copy.index, copy.shard, copy.node) not in seen
            seen.add((copy.index, copy.shard, copy.node))
    for index in cluster.indices.values():
        for shard in range(index.shards):
            primaries = [c for c in cluster.copies_of((index.name, shard)) if c.primary]
            assert len(primaries) == 1


# -- allocation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """Steps applied to a fake, then the copies by node expected."""

    steps: tuple[Step, ...]
    expected: Layout


def nodes(*names: str) -> Step:
    def step(fake: FakeElasticsearch) -> None:
        for name in names:
            fake.add_node(name)

    return step


def index(name: str, shards: int = 1, replicas: int = 1) -> Step:
    return lambda fake: fake.create_index(name, shards=shards, replicas=replicas)


def leave(name: str) -> Step:
    return lambda fake: fake.remove_node(name)


def transient(**settings: str | None) -> Step:
    names = {"enable": ENABLE_SETTING, "exclude": EXCLUDE_NAME_SETTING}

    def step(fake: FakeElasticsearch) -> None:
        for key, value in settings.items():
            if value is None:
                fake.state.transient_settings.pop(names[key], None)
            else:
                fake.state.transient_settings[names[key]] = value
        fake.state.reallocate()

    return step


SCENARIOS = {
    "a new index spreads, the least loaded node first": Scenario(
        (nodes("a", "b", "c"), index("i", shards=2)),
        {"a": [("i", 0, "p"), ("i", 1, "r")], "b": [("i", 1, "p")], "c": [("i", 0, "r")]},
    ),
    "one node: replicas unassigned": Scenario(
        (nodes("a"), index("i", shards=2)),
        {"a": [("i", 0, "p"), ("i", 1, "p")], "": [("i", 0, "r"), ("i", 1, "r")]},
    ),
    "no node: every copy unassigned": Scenario((index("i", replicas=0),), {"": [("i", 0, "p")]}),
    "a node joining takes unassigned replicas": Scenario(
        (nodes("a"), index("i"), nodes("b")), {"a": [("i", 0, "p")], "b": [("i", 0, "r")]}
    ),
    "an excluded node is emptied": Scenario(
        (nodes("a", "b", "c"), index("i", shards=2), transient(exclude="a")),
        {"a": [], "b": [("i", 0, "p"), ("i", 1, "p")], "c": [("i", 0, "r"), ("i", 1, "r")]},
    ),
    "exclusions are a comma list of patterns": Scenario(
        (nodes("es-0", "es-1", "es-2"), index("i"), transient(exclude="es-0, es-1*")),
        # The replica may not stay on es-1, but the only other node holds the primary.
        {"es-0": [], "es-1": [("i", 0, "r")], "es-2": [("i", 0, "p")]},
    ),
    "a copy with nowhere to go stays on its excluded node": Scenario(
        (nodes("a", "b"), index("i"), transient(exclude="a")),
        {"a": [("i", 0, "p")], "b": [("i", 0, "r")]},
    ),
    "new copies avoid an excluded node": Scenario(
        (nodes("a", "b", "c"), transient(exclude="b"), index("i", shards=2)),
        {"a": [("i", 0, "p"), ("i", 1, "r")], "b": [], "c": [("i", 0, "r"), ("i", 1, "p")]},
    ),
    "a node leaves: its replica promoted, a new replica elsewhere": Scenario(
        (nodes("a", "b", "c"), index("i"), leave("a")),
        {"b": [("i", 0, "p")], "c": [("i", 0, "r")]},
    ),
    "enable=primaries: the left node's replicas stay unassigned": Scenario(
        (nodes("a", "b", "c"), index("i", shards=2), transient(enable="primaries"), leave("a")),
        {"b": [("i", 1, "p")], "c": [("i", 0, "p")], "": [("i", 0, "r"), ("i", 1, "r")]},
    ),
    "enable=primaries, then all: the replicas go back to the returning node": Scenario(
        (
            nodes("a", "b", "c"),
            index("i", shards=2),
            transient(enable="primaries"),
            leave("a"),
            nodes("a"),
            transient(enable=None),
        ),
        {"a": [("i", 0, "r"), ("i", 1, "r")], "b": [("i", 1, "p")], "c": [("i", 0, "p")]},
    ),
    "enable=primaries still assigns a new index's primaries": Scenario(
        (nodes("a", "b"), transient(enable="primaries"), index("i")),
        {"a": [("i", 0, "p")], "b": [], "": [("i", 0, "r")]},
    ),
    "enable=none: a new index stays unassigned": Scenario(
        (nodes("a", "b"), transient(enable="none"), index("i")),
        {"a": [], "b": [], "": [("i", 0, "p"), ("i", 0, "r")]},
    ),
    "enable=primaries: an excluded node keeps its replicas": Scenario(
        (
            nodes("a", "b", "c"),
            index("i", shards=2),
            transient(enable="primaries", exclude="a"),
        ),
        {"a": [("i", 1, "r")], "b": [("i", 0, "p"), ("i", 1, "p")], "c": [("i", 0, "r")]},
    ),
    "a primary without replica waits for its own node": Scenario(
        (nodes("a", "b"), index("i", replicas=0), leave("a")),
        {"b": [], "": [("i", 0, "p")]},
    ),
    "a primary without replica recovers on its node, excluded or not": Scenario(
        (
            nodes("a", "b"),
            index("i", replicas=0),
            leave("a"),
            transient(enable="none", exclude="a"),
            nodes("a"),
        ),
        {"b": [], "a": [("i", 0, "p")]},
    ),
    "a node without a data role holds nothing": Scenario(
        (
            lambda fake: fake.add_node("master", roles=["master"]),
            lambda fake: fake.add_node("hot", roles=["data_hot"]),
            index("i"),
        ),
        {"master": [], "hot": [], "": [("i", 0, "p"), ("i", 0, "r")]},
    ),
}


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_allocation(fake: FakeElasticsearch, scenario: Scenario) -> None:
    for step in scenario.steps:
        step(fake)
        assert_sound(fake.state.cluster)

    assert fake.copies_by_node() == scenario.expected


async def test_a_node_keeps_its_id_across_a_restart(fake: FakeElasticsearch) -> None:
    first = fake.add_node("a").id
    fake.add_node("b")
    fake.remove_node("a")

    assert fake.add_node("a").id == first
    assert fake.node_id("a") == first
    assert fake.add_node("c").id not in (first, fake.node_id("b"))


async def test_the_client_reads_the_model(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.add_node("a")
    fake.add_node("m", roles=["master"], version="8.18.0")
    fake.create_index("i", shards=1, replicas=1)

    assert await client.nodes() == (
        ClusterNode("a", fake.node_id("a"), frozenset(DEFAULT_NODE_ROLES), "8.17.0"),
        ClusterNode("m", fake.node_id("m"), frozenset({"master"}), "8.18.0"),
    )
    assert await client.shards() == (
        Shard("i", "0", True, "STARTED", "a"),
        Shard("i", "0", False, "UNASSIGNED", ""),
    )
    assert await client.cluster_uuid() == fake.state.cluster.uuid


async def test_answers_are_elasticsearch_s(fake: FakeElasticsearch) -> None:
    node_id = fake.add_node("vm").id
    fake.create_index("i1", shards=1, replicas=1)

    filtered = "/_nodes?filter_path=nodes.*.name,nodes.*.roles,nodes.*.version"
    assert await raw(fake, "GET", filtered) == (
        200,
        {
            "nodes": {
                node_id: {"name": "vm", "version": "8.17.0", "roles": list(DEFAULT_NODE_ROLES)}
            }
        },
    )
    shards = "/_cat/shards?format=json&h=index,shard,prirep,state,node"
    assert await raw(fake, "GET", shards) == (
        200,
        [
            {"index": "i1", "shard": "0", "prirep": "p", "state": "STARTED", "node": "vm"},
            {"index": "i1", "shard": "0", "prirep": "r", "state": "UNASSIGNED", "node": None},
        ],
    )
    assert await raw(fake, "POST", "/_flush") == (
        200,
        {"_shards": {"total": 2, "successful": 1, "failed": 0}},
    )
    status, root = await raw(fake, "GET", "/")
    assert status == 200
    assert root["cluster_uuid"] == fake.state.cluster.uuid
    assert (root["name"], root["cluster_name"], root["version"]["number"]) == (
        "vm",
        "fake",
        "8.17.0",
    )


async def test_without_a_node_the_shards_cannot_be_read(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.create_index("i")

    with pytest.raises(ElasticsearchUnavailable):
        await client.shards()
    assert await client.nodes() == ()
    assert (await client.cluster_health()).status == "green"  # what tests set


# -- health ----------------------------------------------------------------------------------


HEALTH = {
    "no model: the status tests set": (
        (lambda fake: setattr(fake.state, "health", "yellow"),),
        ("yellow", 3, 0),
    ),
    "no index: green": ((nodes("a"),), ("green", 1, 0)),
    "every copy started: green": ((nodes("a", "b"), index("i", shards=2)), ("green", 2, 0)),
    "a replica unassigned: yellow": ((nodes("a"), index("i", shards=2)), ("yellow", 1, 2)),
    "a primary unassigned: red": (
        (nodes("a", "b"), index("i", replicas=0), index("j", replicas=0), leave("a")),
        ("red", 1, 1),
    ),
    "a primary's node left, its replica promoted: yellow": (
        (nodes("a", "b"), index("i"), leave("a")),
        ("yellow", 1, 1),
    ),
}


@pytest.mark.parametrize("case", HEALTH.values(), ids=HEALTH.keys())
async def test_health(
    fake: FakeElasticsearch,
    client: AiohttpElasticsearchClient,
    case: tuple[tuple[Step, ...], tuple[str, int, int]],
) -> None:
    steps, (status, node_count, unassigned) = case
    for step in steps:
        step(fake)

    health = await client.orchestration_health()
    legacy = await client.cluster_health()

    assert health == ClusterHealth(status=status, unassigned_shards=unassigned)
    assert (legacy.status, legacy.number_of_nodes) == (status, node_count)
    assert legacy.raw["timed_out"] is False


async def test_health_counts(fake: FakeElasticsearch) -> None:
    for name in ("a", "b"):
        fake.add_node(name)
    fake.add_node("m", roles=["master"])
    fake.create_index("i", shards=2, replicas=1)
    fake.create_index("j", shards=1, replicas=0)
    assert fake.copies_by_node() == {
        "a": [("i", 0, "p"), ("i", 1, "r"), ("j", 0, "p")],
        "b": [("i", 0, "r"), ("i", 1, "p")],
        "m": [],
    }
    fake.remove_node("b")

    _, health = await raw(fake, "GET", "/_cluster/health")

    assert health == {
        "cluster_name": "fake",
        "status": "yellow",
        "timed_out": False,
        "number_of_nodes": 2,
        "number_of_data_nodes": 1,
        "active_primary_shards": 3,
        "active_shards": 3,
        "relocating_shards": 0,
        "initializing_shards": 0,
        "unassigned_shards": 2,
        "unassigned_primary_shards": 0,
        "delayed_unassigned_shards": 0,
        "number_of_pending_tasks": 0,
        "number_of_in_flight_fetch": 0,
        "task_max_waiting_in_queue_millis": 0,
        "active_shards_percent_as_number": 60.0,
    }


# -- settings --------------------------------------------------------------------------------


async def test_transient_allocation_settings(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    for name in ("a", "b", "c"):
        fake.add_node(name)
    fake.create_index("i", shards=3, replicas=0)

    await client.put_transient_settings({ENABLE_SETTING: "primaries", EXCLUDE_NAME_SETTING: "a,b"})

    assert await client.allocation_settings() == AllocationSettings("primaries", "a,b")
    assert await raw(fake, "GET", "/_cluster/settings?flat_settings=true") == (
        200,
        {"persistent": {}, "transient": {ENABLE_SETTING: "primaries", EXCLUDE_NAME_SETTING: "a,b"}},
    )
    assert fake.copies_by_node() == {
        "a": [],
        "b": [],
        "c": [("i", 0, "p"), ("i", 1, "p"), ("i", 2, "p")],
    }

    await client.put_transient_settings({ENABLE_SETTING: None, EXCLUDE_NAME_SETTING: None})

    assert await client.allocation_settings() == AllocationSettings()
    assert fake.state.transient_settings == {}


async def test_a_persistent_exclusion_applies_unless_a_transient_one_overrides_it(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.add_node("a")
    fake.add_node("b")
    fake.create_index("i", replicas=0)
    holder = "a" if fake.copies_on("a") else "b"
    other = "b" if holder == "a" else "a"

    await client.put_cluster_settings({EXCLUDE_NAME_SETTING: holder})
    assert fake.copies_on(other) == [("i", 0, "p")]

    await client.put_transient_settings({EXCLUDE_NAME_SETTING: other})
    assert fake.copies_on(holder) == [("i", 0, "p")]
    assert await client.allocation_settings() == AllocationSettings(exclude_name=other)


async def test_an_unknown_enable_value_is_refused(fake: FakeElasticsearch) -> None:
    status, body = await raw(
        fake, "PUT", "/_cluster/settings", json={"transient": {ENABLE_SETTING: "bogus"}}
    )

    assert status == 400
    assert body["error"]["reason"] == (
        "No enum constant org.elasticsearch.cluster.routing.allocation.decider."
        "EnableAllocationDecider.Allocation.BOGUS"
    )
    assert fake.state.transient_settings == {}


# -- voting exclusions -----------------------------------------------------------------------


async def test_voting_exclusions(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    for name in ("es-0", "es-1", "es-2"):
        fake.add_node(name)

    assert await client.voting_exclusions() == ()
    await client.add_voting_exclusions(["es-2", "gone"])
    await client.add_voting_exclusions(["es-2"])

    assert await client.voting_exclusions() == ("es-2", "gone")
    path = "/_cluster/state/metadata?filter_path=metadata.cluster_coordination.voting_config_exclusions"
    assert await raw(fake, "GET", path) == (
        200,
        {
            "metadata": {
                "cluster_coordination": {
                    "voting_config_exclusions": [
                        {"node_id": fake.node_id("es-2"), "node_name": "es-2"},
                        {"node_id": "_absent_", "node_name": "gone"},
                    ]
                }
            }
        },
    )

    await client.clear_voting_exclusions()

    assert await client.voting_exclusions() == ()


async def test_voting_exclusion_answers(fake: FakeElasticsearch) -> None:
    fake.add_node("only")
    add = "/_cluster/voting_config_exclusions?timeout=30s&node_names="

    assert await raw(fake, "POST", f"{add}gone") == (200, "")
    assert await raw(
        fake, "DELETE", "/_cluster/voting_config_exclusions?wait_for_removal=false"
    ) == (
        200,
        "",
    )
    # The only master cannot leave the voting configuration: the request times out (the
    # exclusion stays, as on a real node).
    status, body = await raw(fake, "POST", f"{add}only")
    assert (status, body["error"]["type"]) == (500, "timeout_exception")
    # Waiting for the removal of a node still there times out too.
    status, body = await raw(fake, "DELETE", "/_cluster/voting_config_exclusions")
    assert (status, body["error"]["type"]) == (500, "elasticsearch_timeout_exception")
    status, body = await raw(fake, "POST", f"{add}")
    assert (status, body["error"]["reason"]) == (
        400,
        "You must set [node_names] or [node_ids] but not both",
    )
    status, body = await raw(fake, "POST", f"{add}{','.join(f'n{i}' for i in range(10))}")
    assert status == 400
    assert "would exceed the maximum of [10]" in body["error"]["reason"]


async def test_excluding_the_only_master_is_an_error_for_the_client(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.add_node("only")

    with pytest.raises(ElasticsearchError) as raised:
        await client.add_voting_exclusions(["only"])

    assert raised.value.status == 500


# -- node shutdown ---------------------------------------------------------------------------


async def test_without_the_shutdown_api(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    node_id = fake.add_node("a").id

    assert await client.node_shutdowns() is None
    assert await raw(fake, "GET", "/_nodes/shutdown") == (
        200,
        {"_nodes": {"total": 0, "successful": 0, "failed": 0}, "cluster_name": "fake", "nodes": {}},
    )
    assert await raw(fake, "PUT", f"/_nodes/{node_id}/shutdown", json={"type": "restart"}) == (
        405,
        {
            "error": f"Incorrect HTTP method for uri [/_nodes/{node_id}/shutdown] and method "
            "[PUT], allowed: [GET]",
            "status": 405,
        },
    )
    with pytest.raises(ElasticsearchError) as put:
        await client.put_node_shutdown(node_id, type="restart", reason="r")
    with pytest.raises(ElasticsearchError) as delete:
        await client.delete_node_shutdown(node_id)
    assert (put.value.status, delete.value.status) == (405, 405)
    assert fake.state.cluster.shutdowns == {}


async def shutdown_of(client: AiohttpElasticsearchClient, node_id: str) -> NodeShutdown:
    shutdowns = await client.node_shutdowns()
    assert shutdowns is not None
    return next(s for s in shutdowns if s.node_id == node_id)


async def test_a_restart_shutdown_is_complete_at_once_and_delays_the_replicas(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.state.shutdown_api = True
    for name in ("a", "b", "c"):
        fake.add_node(name)
    fake.create_index("i", shards=3, replicas=1)
    node_id = fake.node_id("a")
    on_a = fake.copies_on("a")

    await client.put_node_shutdown(node_id, type="restart", reason="upgrade", allocation_delay="5m")
    shutdown = await shutdown_of(client, node_id)
    assert (shutdown.type, shutdown.status) == ("RESTART", "COMPLETE")
    assert shutdown.explanation == "no shard relocation is necessary for a node restart"

    fake.remove_node("a")
    # Its primaries' replicas were promoted: every copy it had is a replica waiting for it.
    _, health = await raw(fake, "GET", "/_cluster/health")
    assert (health["status"], health["delayed_unassigned_shards"]) == ("yellow", len(on_a))
    assert len(fake.copies_on("")) == len(on_a)

    fake.add_node("a")
    assert sorted(fake.copies_on("a")) == sorted((i, s, "r") for i, s, _ in on_a)
    await client.delete_node_shutdown(node_id)
    assert await client.node_shutdowns() == ()


async def test_a_remove_shutdown_empties_the_node(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.state.shutdown_api = True
    for name in ("a", "b", "c"):
        fake.add_node(name)
    fake.create_index("i", shards=2, replicas=1)
    node_id = fake.node_id("a")
    fake.pause_allocation()

    await client.put_node_shutdown(node_id, type="remove", reason="downscale")
    shutdown = await shutdown_of(client, node_id)
    assert (shutdown.type, shutdown.status) == ("REMOVE", "IN_PROGRESS")

    fake.resume_allocation()
    assert fake.copies_on("a") == []
    assert (await shutdown_of(client, node_id)).status == "COMPLETE"

    fake.create_index("j", shards=3, replicas=0)
    assert fake.copies_on("a") == [], "no new copy on a node being removed"


async def test_a_remove_shutdown_stalls_when_a_copy_has_nowhere_to_go(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.state.shutdown_api = True
    fake.add_node("a")
    fake.add_node("b")
    fake.create_index("only-here", replicas=0)
    holder = "a" if fake.copies_on("a") else "b"
    fake.create_index("k", replicas=0)
    await client.put_transient_settings({EXCLUDE_NAME_SETTING: "a,b"})
    node_id = fake.node_id(holder)

    await client.put_node_shutdown(node_id, type="remove", reason="downscale")

    shutdown = await shutdown_of(client, node_id)
    assert shutdown.status == "STALLED"
    assert shutdown.explanation.startswith("shard [0] [primary] of index [only-here] cannot move")
    _, answer = await raw(fake, "GET", "/_nodes/shutdown")
    assert answer["nodes"][0]["shard_migration"] == {
        "status": "STALLED",
        "shard_migrations_remaining": 1,
        "explanation": shutdown.explanation,
    }

    await client.put_transient_settings({EXCLUDE_NAME_SETTING: None})
    assert fake.copies_on(holder) == []
    assert (await shutdown_of(client, node_id)).status == "COMPLETE"


async def test_a_copy_that_cannot_move_but_has_a_copy_elsewhere_does_not_stall(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    # Elasticsearch's rule: a copy that cannot move is not waited for when the shard is started
    # on a node not shutting down.
    fake.state.shutdown_api = True
    fake.add_node("a")
    fake.add_node("b")
    fake.create_index("i", replicas=1)

    await client.put_node_shutdown(fake.node_id("a"), type="remove", reason="downscale")

    shutdown = await shutdown_of(client, fake.node_id("a"))
    assert shutdown.status == "COMPLETE"
    assert shutdown.explanation == (
        "[1] shards cannot be moved away from this node but have at least one copy on another "
        "node in the cluster"
    )


async def test_shutdown_records_of_absent_nodes(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.state.shutdown_api = True
    fake.add_node("a")

    await client.put_node_shutdown("never-seen", type="remove", reason="r")
    assert (await shutdown_of(client, "never-seen")).status == "NOT_STARTED"

    await client.put_node_shutdown(fake.node_id("a"), type="remove", reason="r")
    fake.remove_node("a")
    assert (await shutdown_of(client, fake.node_id("a"))).status == "COMPLETE"


async def test_shutdown_answers(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.state.shutdown_api = True
    node_id = fake.add_node("a").id
    path = f"/_nodes/{node_id}/shutdown"

    assert await raw(fake, "PUT", path, json={"type": "restart", "reason": "r"}) == (
        200,
        {"acknowledged": True},
    )
    status, answer = await raw(fake, "GET", path)
    record = answer["nodes"][0]
    assert set(record) == {
        "node_id",
        "type",
        "reason",
        "shutdown_startedmillis",
        "status",
        "shard_migration",
        "persistent_tasks",
        "plugins",
    }
    assert (status, record["node_id"], record["type"]) == (200, node_id, "RESTART")
    assert await raw(fake, "GET", "/_nodes/other/shutdown") == (200, {"nodes": []})
    status, refused = await raw(
        fake, "PUT", path, json={"type": "remove", "reason": "r", "allocation_delay": "1m"}
    )
    assert (status, refused["error"]["type"]) == (400, "action_request_validation_exception")
    assert await raw(fake, "DELETE", path) == (200, {"acknowledged": True})
    status, missing = await raw(fake, "DELETE", path)
    assert (status, missing["error"]["reason"]) == (
        404,
        f"node [{node_id}] is not currently shutting down",
    )
    await client.delete_node_shutdown(node_id)  # a 404 is not an error for the client


# -- filter_path -----------------------------------------------------------------------------


DOCUMENT = {
    "_nodes": {"total": 1},
    "nodes": {"id1": {"name": "a", "ip": "x", "roles": ["m"]}, "id2": {"name": "b", "roles": []}},
    "metadata": {"coordination": {"exclusions": [], "term": 1}},
    "list": [{"k": 1, "v": 2}, {"v": 3}],
}


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (None, DOCUMENT),
        ("nodes.*.name", {"nodes": {"id1": {"name": "a"}, "id2": {"name": "b"}}}),
        (
            "nodes.*.name,nodes.*.roles",
            {"nodes": {"id1": {"name": "a", "roles": ["m"]}, "id2": {"name": "b", "roles": []}}},
        ),
        ("metadata.coordination.exclusions", {"metadata": {"coordination": {"exclusions": []}}}),
        ("metadata.nothing", {}),
        ("list.k", {"list": [{"k": 1}]}),
        ("**.term", {"metadata": {"coordination": {"term": 1}}}),
        ("_nodes", {"_nodes": {"total": 1}}),
    ],
)
def test_filter_path(paths: str | None, expected: Any) -> None:
    assert filter_path(DOCUMENT, paths) == expected


async def test_index_calls(fake: FakeElasticsearch) -> None:
    fake.add_node("a")
    body = {"settings": {"number_of_shards": 2, "number_of_replicas": 0}}

    assert await raw(fake, "PUT", "/logs", json=body) == (
        200,
        {"acknowledged": True, "shards_acknowledged": True, "index": "logs"},
    )
    assert fake.copies_on("a") == [("logs", 0, "p"), ("logs", 1, "p")]
    status, again = await raw(fake, "PUT", "/logs", json=body)
    assert (status, again["error"]["type"]) == (400, "resource_already_exists_exception")
    assert await raw(fake, "DELETE", "/logs") == (200, {"acknowledged": True})
    status, gone = await raw(fake, "DELETE", "/logs")
    assert (status, gone["error"]["type"]) == (404, "index_not_found_exception")


# -- Pods to nodes ---------------------------------------------------------------------------


def pod(
    name: str,
    *,
    ready: bool = True,
    terminating: bool = False,
    labels: Mapping[str, str] | None = None,
    uid: str = "uid-1",
) -> dict[str, Any]:
    """A Pod manifest as the API server lists it."""
    condition = "True" if ready else "False"
    metadata: dict[str, Any] = {"name": name, "uid": uid, "labels": dict(labels or {})}
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": metadata,
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": condition},
                {"type": "ContainersReady", "status": condition},
            ],
        },
    }


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        pytest.param(None, DEFAULT_NODE_ROLES, id="no role label: the default roles"),
        pytest.param(
            frozenset(DEFAULT_NODE_ROLES), DEFAULT_NODE_ROLES, id="every default role labelled"
        ),
        pytest.param(frozenset({"master"}), ("master",), id="a dedicated master"),
        pytest.param(frozenset({"data"}), ("data",), id="the generic data role"),
        pytest.param(
            frozenset({"data_hot", "ingest"}), ("data_hot", "ingest"), id="a tier is not data"
        ),
        pytest.param(frozenset(), (), id="a coordinating node"),
    ],
)
def test_node_roles_from_labels(roles: frozenset[str] | None, expected: tuple[str, ...]) -> None:
    labels = {} if roles is None else role_labels(roles)
    assert node_roles_from_labels(labels) == expected


async def test_nodes_follow_the_pods(fake: FakeElasticsearch) -> None:
    master = {node_role_label("master"): "true", node_role_label("data"): "false"}
    data = {node_role_label("master"): "false", node_role_label("data"): "true"}
    sync_nodes_with_pods(
        fake,
        [
            pod("es-master-0", labels={**master, ES_VERSION_LABEL: "8.17.0"}),
            pod("es-data-0", labels=data),
            pod("es-data-1", labels=data),
            pod("es-data-2", labels=data, ready=False),
        ],
    )
    fake.create_index("i", shards=2, replicas=1)
    ids = {name: node.id for name, node in fake.state.cluster.nodes.items()}

    assert {name: node.roles for name, node in fake.state.cluster.nodes.items()} == {
        "es-master-0": ("master",),
        "es-data-0": ("data",),
        "es-data-1": ("data",),
    }
    assert fake.copies_on("es-master-0") == []

    # es-data-1 terminates, es-data-2 becomes ready: the shards follow.
    sync_nodes_with_pods(
        fake,
        [
            pod("es-master-0", labels=master),
            pod("es-data-0", labels=data),
            pod("es-data-1", labels=data, terminating=True),
            pod("es-data-2", labels=data),
        ],
    )
    assert set(fake.state.cluster.nodes) == {"es-master-0", "es-data-0", "es-data-2"}
    assert len(fake.copies_on("es-data-0")) == len(fake.copies_on("es-data-2")) == 2

    # es-data-1 comes back as a new Pod: the same node, the same id.
    sync_nodes_with_pods(
        fake,
        [
            pod("es-master-0", labels=master),
            pod("es-data-0", labels=data),
            pod("es-data-1", labels=data, uid="uid-2"),
            pod("es-data-2", labels=data),
        ],
    )
    assert fake.node_id("es-data-1") == ids["es-data-1"]
    assert fake.node_id("es-data-0") == ids["es-data-0"]


async def test_a_new_version_label_restarts_the_node(fake: FakeElasticsearch) -> None:
    sync_nodes_with_pods(fake, [pod("es-0", labels={ES_VERSION_LABEL: "8.17.0"})])
    node_id = fake.node_id("es-0")

    sync_nodes_with_pods(fake, [pod("es-0", labels={ES_VERSION_LABEL: "8.18.0"})])

    node = fake.state.cluster.nodes["es-0"]
    assert (node.id, node.version) == (node_id, "8.18.0")
    sync_nodes_with_pods(fake, [])
    assert fake.state.cluster.nodes == {}


def test_the_comparison_reads_node_ids_as_placeholders() -> None:
    answer = Answer(200, {"nodes": {"AK4YptjAR7SCBQOCXbwiRg": {"name": "vm"}, "x": {"name": "b"}}})

    assert view(answer, masks=("body.nodes.*.name",), id_keys=("body.nodes",)) == {
        "status": 200,
        "body.nodes.<id>.name": "<string>",
        "body.nodes.<id 2>.name": "<string>",
    }
