"""Zen2 bootstrap: ``cluster.initial_master_nodes`` while a new cluster forms, and only then.

A new cluster (no ``elasticsearch.k8s.elastic.co/cluster-uuid`` annotation yet) gets the names of
all its master-eligible Pods as ``cluster.initial_master_nodes`` in the config of every master
StatefulSet. The list is kept in the annotation ``elasticsearch.k8s.elastic.co/initial-master-nodes``
so that it never changes while the cluster bootstraps, even if the spec does: while the annotation
is there its value is used as it is. Once Elasticsearch reports an elected master running 7.0 or
later, bootstrapping is over and the annotation is removed; the setting then goes too. ECK writes
the setting after the pod template hash is computed, so adding or dropping it restarts no Pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ClusterNode,
    ExpectedStatefulSet,
    expected_master_names,
)
from stackflow.stack.labels import ES_CLUSTER_UUID_ANNOTATION
from stackflow.stack.version import parse_version

INITIAL_MASTER_NODES_ANNOTATION = "elasticsearch.k8s.elastic.co/initial-master-nodes"
INITIAL_MASTER_NODES_SETTING = "cluster.initial_master_nodes"
BOOTSTRAP_INCOMPLETE_REASON = "Initial cluster bootstrap is not complete"
NO_MASTER_ERROR = "no master node found to compute `cluster.initial_master_nodes`"


def annotated_initial_master_nodes(annotations: Mapping[str, str]) -> tuple[str, ...]:
    """The list kept in the ``initial-master-nodes`` annotation (empty when absent or empty)."""
    value = annotations.get(INITIAL_MASTER_NODES_ANNOTATION, "")
    return tuple(value.split(",")) if value else ()


def is_bootstrapped(annotations: Mapping[str, str]) -> bool:
    """Whether the cluster has formed once: its ``cluster-uuid`` annotation is present."""
    return ES_CLUSTER_UUID_ANNOTATION in annotations


@dataclass(frozen=True)
class InitialMasterNodes:
    """``cluster.initial_master_nodes`` for the master StatefulSets' config in this pass.

    ``nodes`` empty: no setting. ``annotation`` is the value to store in the annotation when it
    must be written (``None``: leave the annotations as they are). ``error`` when a new cluster has
    no master-eligible node to bootstrap with.
    """

    nodes: tuple[str, ...] = ()
    annotation: str | None = None
    error: str | None = None


def initial_master_nodes(
    annotations: Mapping[str, str], expected: Sequence[ExpectedStatefulSet]
) -> InitialMasterNodes:
    """ECK's ``SetupInitialMasterNodes``.

    ``expected`` are the StatefulSets with the replica counts of this pass (after the ``maxSurge``
    adjustment). The annotation, when present, wins; a cluster already bootstrapped gets nothing;
    a new one gets its master Pod names, which are also stored in the annotation.
    """
    kept = annotated_initial_master_nodes(annotations)
    if kept:
        return InitialMasterNodes(nodes=kept)
    if is_bootstrapped(annotations):
        return InitialMasterNodes()
    masters = expected_master_names(expected)
    if not masters:
        return InitialMasterNodes(error=NO_MASTER_ERROR)
    return InitialMasterNodes(nodes=masters, annotation=",".join(masters))


@dataclass(frozen=True)
class BootstrapAnnotation:
    """Whether to remove the ``initial-master-nodes`` annotation now, or to look again later."""

    remove: bool = False
    requeue_reason: str | None = None
    error: str | None = None


def bootstrap_annotation(
    annotations: Mapping[str, str], elected_master: ClusterNode | None
) -> BootstrapAnnotation:
    """ECK's ``RemoveZen2BootstrapAnnotation``, from ``GET _nodes/_master`` (``None``: no master).

    Nothing to do without the annotation. With it, bootstrapping is over when the elected master
    runs 7.0 or later; until then the pass asks to be run again.
    """
    if not annotated_initial_master_nodes(annotations):
        return BootstrapAnnotation()
    if elected_master is None:
        return BootstrapAnnotation(requeue_reason=BOOTSTRAP_INCOMPLETE_REASON)
    try:
        version = parse_version(elected_master.version)
    except ValueError:
        return BootstrapAnnotation(error=f"unable to parse node version {elected_master.version}")
    if version.major >= 7:
        return BootstrapAnnotation(remove=True)
    return BootstrapAnnotation(requeue_reason=BOOTSTRAP_INCOMPLETE_REASON)
