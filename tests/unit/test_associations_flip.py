"""The association flip mapper: direct refs as ECK, plus transitive refs ECK does not follow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from stackflow.stack.associations.flip import flip_targets
from stackflow.stack.associations.table import association_named


def _obj(kind: str, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": namespace, "name": name}, "spec": spec}


def _names(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects]


KIBANAS = [
    _obj("Kibana", "apps", "local", elasticsearchRef={"name": "es"}),
    _obj("Kibana", "apps", "remote", elasticsearchRef={"name": "es", "namespace": "data"}),
    _obj("Kibana", "other", "unrelated", elasticsearchRef={"name": "es"}),
    _obj("Kibana", "other", "external", elasticsearchRef={"secretName": "s"}),
    _obj("Kibana", "other", "broken", elasticsearchRef={"name": "x", "secretName": "s"}),
]


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        ("apps", ["apps/local", "apps/remote"]),
        ("data", ["apps/remote"]),
        ("other", ["other/unrelated", "other/external", "other/broken"]),
        ("nowhere", []),
    ],
)
def test_direct_refs_and_own_namespace(namespace: str, expected: list[str]) -> None:
    triggered = flip_targets(
        association_named("kb-es"), namespace=namespace, associated_objects=KIBANAS
    )
    assert _names(triggered) == expected


def test_only_refs_of_this_association_count() -> None:
    kibana = _obj("Kibana", "apps", "kb", elasticsearchRef={"name": "es"},
                  enterpriseSearchRef={"name": "ent", "namespace": "search"})  # fmt: skip
    assert (
        flip_targets(association_named("kb-es"), namespace="search", associated_objects=[kibana])
        == []
    )
    assert _names(
        flip_targets(association_named("kb-ent"), namespace="search", associated_objects=[kibana])
    ) == ["apps/kb"]


def test_each_object_once() -> None:
    agent = _obj("Agent", "data", "ag", elasticsearchRefs=[
        {"name": "a", "outputName": "default"}, {"name": "b", "outputName": "o"}])  # fmt: skip
    assert (
        len(
            flip_targets(
                association_named("agent-es"), namespace="data", associated_objects=[agent, agent]
            )
        )
        == 1
    )


# Three namespaces: the Agent in "edge", its Fleet Server in "fleet", the Elasticsearch in "data".
FLEET_SERVER = _obj("Agent", "fleet", "fleet-server", mode="fleet", fleetServerEnabled=True,
                    elasticsearchRefs=[{"name": "es", "namespace": "data"}])  # fmt: skip
AGENT = _obj("Agent", "edge", "agent", mode="fleet", fleetServerRef={"name": "fleet-server", "namespace": "fleet"})  # fmt: skip
OTHER_AGENT = _obj("Agent", "edge2", "other", mode="fleet", fleetServerRef={"name": "elsewhere", "namespace": "fleet"})  # fmt: skip
AGENTS = [FLEET_SERVER, AGENT, OTHER_AGENT]


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        ("data", ["edge/agent"]),
        ("fleet", ["fleet/fleet-server", "edge/agent", "edge2/other"]),
        ("edge", ["edge/agent"]),
        ("edge2", ["edge2/other"]),
    ],
)
def test_agent_through_fleet_server_to_elasticsearch(namespace: str, expected: list[str]) -> None:
    triggered = flip_targets(
        association_named("agent-fleetserver"), namespace=namespace, associated_objects=AGENTS
    )
    assert _names(triggered) == expected


def test_fleet_server_itself_is_triggered_by_its_es_association() -> None:
    triggered = flip_targets(
        association_named("agent-es"), namespace="data", associated_objects=AGENTS
    )
    assert _names(triggered) == ["fleet/fleet-server"]


def test_kibana_targets_are_followed_to_their_elasticsearch() -> None:
    beat = _obj(
        "Beat", "obs", "beat", type="filebeat", kibanaRef={"name": "remote", "namespace": "apps"}
    )
    for_data = flip_targets(
        association_named("beat-kibana"),
        namespace="data",
        associated_objects=[beat],
        target_objects=KIBANAS,
    )
    assert _names(for_data) == ["obs/beat"]
    no_targets = flip_targets(
        association_named("beat-kibana"), namespace="data", associated_objects=[beat]
    )
    assert no_targets == []
