"""The parity tier's scenarios of ``deploy/examples/eck-docs/``: every manifest, as its users apply
it, run by ECK and by Stackflow and diffed.

The manifests name no namespace (ECK's documentation applies them to the current one): their
objects are put in the namespace ``eck-docs``, in scope. Each manifest but the Elasticsearch refers
to the Elasticsearch ``quickstart`` (and Fleet's Agents to the Kibana ``quickstart``), so each
scenario applies the manifests it refers to with it. A manifest naming its own namespace keeps it
(the namespace is made, in scope); cluster-scoped objects are refused: the tier dumps and compares
namespaces only, and a cluster-scoped object would outlive nothing here but says nothing either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.clusters import REPO
from tests.parity.compare import Until
from tests.parity.worlds import Scenario

DOCS = REPO / "deploy" / "examples" / "eck-docs"
#: Where the manifests' objects are put: they name no namespace of their own.
NAMESPACE = "eck-docs"
#: Kinds a manifest may hold, the namespaced ones (anything else is refused).
NAMESPACED_GROUPS = frozenset(
    {
        "v1",
        "elasticsearch.k8s.elastic.co/v1",
        "kibana.k8s.elastic.co/v1",
        "beat.k8s.elastic.co/v1beta1",
        "agent.k8s.elastic.co/v1alpha1",
        "logstash.k8s.elastic.co/v1alpha1",
        "maps.k8s.elastic.co/v1alpha1",
    }
)
CLUSTER_SCOPED_KINDS = frozenset(
    {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
)
#: What each manifest refers to by name, applied with it: every manifest refers to the
#: Elasticsearch ``quickstart``; Fleet's Agents to the Kibana ``quickstart`` too.
NEEDS: Mapping[str, Sequence[str]] = {
    "elasticsearch.yaml": (),
    "kibana.yaml": ("elasticsearch.yaml",),
    "beat.yaml": ("elasticsearch.yaml",),
    "fleet.yaml": ("elasticsearch.yaml", "kibana.yaml"),
    "logstash.yaml": ("elasticsearch.yaml",),
    "maps.yaml": ("elasticsearch.yaml",),
}
#: The StatefulSets a scenario waits for: the Elasticsearch's, and the Logstash's.
STATEFULSETS: Mapping[str, Sequence[str]] = {
    "elasticsearch.yaml": ("quickstart-es-default",),
    "logstash.yaml": ("quickstart-ls",),
}

#: The Deployments and DaemonSets a scenario waits for, Ready (a DaemonSet on each of the control
#: plane's two kwok nodes): the world is compared once the applications run, not while their
#: workloads are still being made or rolled.
WORKLOADS: Mapping[str, Sequence[Until]] = {
    "kibana.yaml": (Until(f"Deployment {NAMESPACE}/quickstart-kb", "status.readyReplicas", 1),),
    "beat.yaml": (
        Until(f"DaemonSet {NAMESPACE}/quickstart-beat-filebeat", "status.numberReady", 2),
    ),
    "maps.yaml": (Until(f"Deployment {NAMESPACE}/quickstart-ems", "status.readyReplicas", 1),),
}


def placed(document: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """``document`` in ``namespace`` unless it names its own; a cluster-scoped one refused."""
    kind, api = document.get("kind"), document.get("apiVersion")
    if kind in CLUSTER_SCOPED_KINDS or api not in NAMESPACED_GROUPS:
        raise ValueError(f"{api} {kind}: only namespaced objects of known groups are applied")
    metadata = dict(document.get("metadata") or {})
    metadata.setdefault("namespace", namespace)
    return {**document, "metadata": metadata}


def load(path: Path, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The objects of the manifest at ``path``, each placed in ``namespace``."""
    documents = yaml.safe_load_all(path.read_text())
    return [placed(document, namespace) for document in documents if document]


def scenario(manifest: str, directory: Path = DOCS) -> Scenario:
    """The scenario of one manifest: it and what it refers to, in the namespace ``eck-docs``."""
    files = [*NEEDS[manifest], manifest]
    objects = [item for name in files for item in load(directory / name)]
    namespaces = {item["metadata"]["namespace"]: True for item in objects}
    statefulsets = [(NAMESPACE, sset) for name in files for sset in STATEFULSETS.get(name, ())]
    return Scenario(
        name=f"eck-docs-{manifest.removesuffix('.yaml')}",
        namespaces=namespaces,
        manifests=objects,
        statefulsets=statefulsets,
        until=[until for name in files for until in WORKLOADS.get(name, ())],
    )


#: One scenario per manifest of deploy/examples/eck-docs/.
ECK_DOCS = [scenario(name) for name in NEEDS]
