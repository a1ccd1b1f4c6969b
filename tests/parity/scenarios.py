"""The scenarios of the parity tier: what is applied to both worlds."""

from __future__ import annotations

from tests.parity.worlds import Scenario

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

SCENARIOS = [ONE_NODE]
