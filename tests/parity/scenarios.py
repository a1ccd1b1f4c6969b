"""The scenarios of the parity tier: what is applied to both worlds."""

from __future__ import annotations

from typing import Any

from tests.parity.worlds import Scenario, Step

#: ECK's sample Elasticsearch (config/samples/elasticsearch), one node, in a namespace in scope.
ONE_NODE = Scenario(
    name="one-node",
    namespaces={"parity": True},
    manifests=[
        {
            "apiVersion": "elasticsearch.k8s.elastic.co/v1",
            "kind": "Elasticsearch",
            "metadata": {"name": "elasticsearch-sample", "namespace": "parity"},
            "spec": {
                "version": "9.4.3",
                "nodeSets": [
                    {
                        "name": "default",
                        "count": 1,
                        "config": {
                            "node.roles": ["master", "data", "ingest", "ml"],
                            "node.store.allow_mmap": False,
                        },
                        "podTemplate": {
                            "metadata": {"labels": {"foo": "bar"}},
                            "spec": {
                                "containers": [
                                    {
                                        "name": "elasticsearch",
                                        "resources": {"limits": {"memory": "4Gi", "cpu": 1}},
                                    }
                                ]
                            },
                        },
                    }
                ],
            },
        }
    ],
    statefulsets=[("parity", "elasticsearch-sample-es-default")],
)


def _elasticsearch(name: str, namespace: str, node_sets: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "9.4.3", "nodeSets": node_sets},
    }


def _node_set(labels: dict[str, str]) -> dict[str, Any]:
    """One node set ``default`` of one node, its Pods labelled ``labels``."""
    return {
        "name": "default",
        "count": 1,
        "config": {"node.store.allow_mmap": False},
        "podTemplate": {"metadata": {"labels": labels}},
    }


#: Three master-and-data nodes in one node set.
THREE_NODES = Scenario(
    name="three-nodes",
    namespaces={"parity": True},
    manifests=[
        _elasticsearch(
            "three",
            "parity",
            [{"name": "default", "count": 3, "config": {"node.store.allow_mmap": False}}],
        )
    ],
    statefulsets=[("parity", "three-es-default")],
)

#: Two node sets: one dedicated master, two data nodes.
TWO_NODE_SETS = Scenario(
    name="two-node-sets",
    namespaces={"parity": True},
    manifests=[
        _elasticsearch(
            "split",
            "parity",
            [
                {
                    "name": "masters",
                    "count": 1,
                    "config": {"node.roles": ["master"], "node.store.allow_mmap": False},
                },
                {
                    "name": "data",
                    "count": 2,
                    "config": {"node.roles": ["data", "ingest"], "node.store.allow_mmap": False},
                },
            ],
        )
    ],
    statefulsets=[("parity", "split-es-masters"), ("parity", "split-es-data")],
)

#: One node, then a change of its Pod template (a label): the StatefulSet's template follows; with
#: the cluster unreachable, neither operator may restart the Pod.
TEMPLATE_UPDATE = Scenario(
    name="template-update",
    namespaces={"parity": True},
    manifests=[_elasticsearch("updated", "parity", [_node_set({"tier": "one"})])],
    statefulsets=[("parity", "updated-es-default")],
    then=[
        Step(
            manifests=[_elasticsearch("updated", "parity", [_node_set({"tier": "two"})])],
            statefulsets=[("parity", "updated-es-default")],
        )
    ],
)

#: One node in a namespace out of scope, labelled into scope once the operator has started.
SCOPE_FLIP = Scenario(
    name="scope-flip",
    namespaces={"later": False},
    manifests=[_elasticsearch("flipped", "later", [_node_set({})])],
    then=[Step(namespaces={"later": True}, statefulsets=[("later", "flipped-es-default")])],
)

SCENARIOS = [ONE_NODE, THREE_NODES, TWO_NODE_SETS, TEMPLATE_UPDATE, SCOPE_FLIP]
