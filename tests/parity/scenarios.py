"""The scenarios of the parity tier: what is applied to both worlds."""

from __future__ import annotations

from typing import Any

from tests.parity.compare import Until
from tests.parity.eck_docs import ECK_DOCS
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


def _elasticsearch(
    name: str,
    namespace: str,
    node_sets: list[dict[str, Any]],
    *,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": metadata,
        "spec": {"version": "9.4.3", "nodeSets": node_sets, **spec},
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


def _association(status: str) -> Until:
    """The Kibana of ASSOCIATION_FLIP with its association to Elasticsearch ``status``."""
    return Until("Kibana parity-kb/kb", "status.elasticsearchAssociationStatus", status)


#: A Kibana in one namespace associated with an Elasticsearch in another, both in scope; then the
#: Elasticsearch's namespace leaves the scope (the association goes Pending) and comes back in
#: (Established again).
ASSOCIATION_FLIP = Scenario(
    name="association-flip",
    namespaces={"parity-es": True, "parity-kb": True},
    manifests=[
        _elasticsearch("es", "parity-es", [_node_set({})]),
        {
            "apiVersion": "kibana.k8s.elastic.co/v1",
            "kind": "Kibana",
            "metadata": {"name": "kb", "namespace": "parity-kb"},
            "spec": {
                "version": "9.4.3",
                "count": 1,
                "elasticsearchRef": {"name": "es", "namespace": "parity-es"},
            },
        },
    ],
    statefulsets=[("parity-es", "es-es-default")],
    until=[_association("Established")],
    then=[
        Step(namespaces={"parity-es": False}, until=[_association("Pending")]),
        Step(
            namespaces={"parity-es": True},
            statefulsets=[("parity-es", "es-es-default")],
            until=[_association("Established")],
        ),
    ],
)

#: The license gate without a trial: the namespace selector is an enterprise feature of ECK 3.5,
#: and the operator runs on a basic license; an Elasticsearch in scope.
LICENSE_GATE_BASIC = Scenario(
    name="license-basic",
    namespaces={"parity": True},
    manifests=[_elasticsearch("gated", "parity", [_node_set({})])],
    trial=False,
)

#: The same, then the trial accepted: the gate opens and the Elasticsearch is reconciled.
LICENSE_GATE_OPENS = Scenario(
    name="license-trial-later",
    namespaces={"parity": True},
    manifests=[_elasticsearch("gated", "parity", [_node_set({})])],
    trial=False,
    then=[Step(trial=True, statefulsets=[("parity", "gated-es-default")])],
)

#: Label of the Elasticsearch the policies of the next scenarios select.
_SELECTED = {"parity": "selected"}

#: A StackConfigPolicy (enterprise: with the trial) selecting an Elasticsearch of its namespace,
#: applied once the cluster's Pod is Ready: the policy's settings change the Pod template, which
#: neither operator may roll out without an answer from the cluster. (Applied with the cluster, the
#: policy races ECK's first reconcile: ECK sometimes deletes the not-yet-running Pod for a forced
#: upgrade, sometimes not, and the policy's phase follows.)
STACK_CONFIG_POLICY = Scenario(
    name="stack-config-policy",
    namespaces={"parity": True},
    manifests=[_elasticsearch("configured", "parity", [_node_set({})], labels=_SELECTED)],
    statefulsets=[("parity", "configured-es-default")],
    then=[
        Step(
            manifests=[
                {
                    "apiVersion": "stackconfigpolicy.k8s.elastic.co/v1alpha1",
                    "kind": "StackConfigPolicy",
                    "metadata": {"name": "policy", "namespace": "parity"},
                    "spec": {
                        "resourceSelector": {"matchLabels": _SELECTED},
                        "elasticsearch": {
                            "clusterSettings": {"indices.recovery.max_bytes_per_sec": "100mb"},
                            "config": {"logger.org.elasticsearch.discovery": "DEBUG"},
                        },
                    },
                }
            ],
            statefulsets=[("parity", "configured-es-default")],
        )
    ],
)

#: An AutoOps policy (ECK's sample, one node) with its configuration Secret; no AutoOps platform
#: and no answering cluster: what each operator makes of it before the cluster is Ready.
AUTOOPS_POLICY = Scenario(
    name="autoops-policy",
    namespaces={"parity": True},
    manifests=[
        _elasticsearch("monitored", "parity", [_node_set({})], labels=_SELECTED),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "autoops-secret", "namespace": "parity"},
            "stringData": {
                "cloud-connected-mode-api-key": "key",
                "autoops-otel-url": "https://otel.invalid",
                "autoops-token": "token",
            },
        },
        {
            "apiVersion": "autoops.k8s.elastic.co/v1alpha1",
            "kind": "AutoOpsAgentPolicy",
            "metadata": {"name": "autoops", "namespace": "parity"},
            "spec": {
                "version": "9.4.3",
                "autoOpsRef": {"secretName": "autoops-secret"},
                "resourceSelector": {"matchLabels": _SELECTED},
            },
        },
    ],
    statefulsets=[("parity", "monitored-es-default")],
)

#: A remote cluster pair: ``local`` names ``remote`` (another namespace) in spec.remoteClusters
#: (certificate trust): the remote CA Secrets exchanged, the seeds setting.
REMOTE_CLUSTERS = Scenario(
    name="remote-clusters",
    namespaces={"parity": True, "parity-remote": True},
    manifests=[
        _elasticsearch("remote", "parity-remote", [_node_set({})]),
        _elasticsearch(
            "local",
            "parity",
            [_node_set({})],
            remoteClusters=[
                {
                    "name": "to-remote",
                    "elasticsearchRef": {"name": "remote", "namespace": "parity-remote"},
                }
            ],
        ),
    ],
    statefulsets=[("parity", "local-es-default"), ("parity-remote", "remote-es-default")],
)

SCENARIOS = [
    ONE_NODE,
    THREE_NODES,
    TWO_NODE_SETS,
    TEMPLATE_UPDATE,
    SCOPE_FLIP,
    ASSOCIATION_FLIP,
    LICENSE_GATE_BASIC,
    LICENSE_GATE_OPENS,
    STACK_CONFIG_POLICY,
    AUTOOPS_POLICY,
    REMOTE_CLUSTERS,
    *ECK_DOCS,
]
