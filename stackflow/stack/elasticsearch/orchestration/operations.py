"""What the status says about a change in progress.

``status.inProgressOperations`` has ECK's shape: ``upgrade`` (Pods to restart: ``PENDING``, with
the predicate holding one back, or ``DELETED``), ``upscale`` (Pods to create: ``PENDING`` or
``EXPECTED``) and ``downscale`` (Pods leaving, with their shutdown status, and ``stalled``). Each
list carries a ``lastUpdatedTime`` that moves only when the list changes; a step the pass did not
reach leaves its list as it was.

The conditions' messages say the same in words: how many nodes are ready and up to date, which
predicate holds which node back, which shards still move. They never contradict the lists: a node
still to restart, to create or to remove is never counted as up to date.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackflow.stack.elasticsearch.orchestration.downscale import (
    DownscaleDecision,
    LeavingNode,
)
from stackflow.stack.elasticsearch.orchestration.rolling import RollingDecision
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    SHUTDOWN_COMPLETE,
    SHUTDOWN_STALLED,
    ClusterView,
    ExpectedStatefulSet,
    PodState,
)
from stackflow.stack.elasticsearch.orchestration.upscale import (
    NEW_NODE_EXPECTED,
    NewNode,
    UpscalePlan,
)

UPGRADE_PENDING = "PENDING"
UPGRADE_DELETED = "DELETED"
#: ECK's message on a node held back by a predicate (the predicate's name is beside it).
PREDICATE_FAILED_MESSAGE = "Cannot restart node because of failed predicate"


@dataclass(frozen=True)
class UpgradedNode:
    """A node of the ``upgrade`` list."""

    name: str
    status: str
    message: str | None = None
    predicate: str | None = None


def upgrade_nodes(decision: RollingDecision) -> tuple[UpgradedNode, ...] | None:
    """The ``upgrade`` list after a rolling restart pass (``None``: the pass did not report).

    Every outdated Pod is ``PENDING``; one held back names its predicate; one deleted is
    ``DELETED`` with the deletion message. On a full restart waiting for its shutdowns, every Pod
    is ``PENDING`` with ECK's "Not all pods are ready…" message.
    """
    if not decision.reported:
        return None
    nodes = {name: UpgradedNode(name, UPGRADE_PENDING) for name in decision.to_upgrade}
    for held in decision.held_back:
        nodes[held.pod] = UpgradedNode(
            held.pod, UPGRADE_PENDING, PREDICATE_FAILED_MESSAGE, held.predicate
        )
    if decision.pending_message:
        nodes = {
            name: UpgradedNode(name, UPGRADE_PENDING, decision.pending_message) for name in nodes
        }
    for name in decision.deleted:
        nodes[name] = UpgradedNode(name, UPGRADE_DELETED, decision.delete_message)
    return tuple(nodes[name] for name in sorted(nodes))


def _upgrade_json(node: UpgradedNode) -> dict[str, Any]:
    rendered: dict[str, Any] = {"name": node.name, "status": node.status}
    if node.message is not None:
        rendered["message"] = node.message
    if node.predicate is not None:
        rendered["predicate"] = node.predicate
    return rendered


def _upscale_json(node: NewNode) -> dict[str, Any]:
    rendered: dict[str, Any] = {"name": node.name, "status": node.status}
    if node.message is not None:
        rendered["message"] = node.message
    return rendered


def _downscale_json(node: LeavingNode) -> dict[str, Any]:
    rendered: dict[str, Any] = {"name": node.name, "shutdownStatus": node.shutdown_status}
    if node.explanation:
        rendered["explanation"] = node.explanation
    return rendered


def _merged(
    previous: Mapping[str, Any], nodes: list[dict[str, Any]] | None, now: str
) -> dict[str, Any]:
    # ECK replaces the list (and bumps the time) only when it was reported and differs, or when
    # the operation never had a time.
    merged = dict(previous)
    if (nodes is not None and nodes != list(previous.get("nodes") or [])) or not previous.get(
        "lastUpdatedTime"
    ):
        if nodes:
            merged["nodes"] = nodes
        else:
            merged.pop("nodes", None)
        merged["lastUpdatedTime"] = now
    return merged


def in_progress_operations(
    *,
    previous: Mapping[str, Any] | None,
    now: str,
    upgrade: RollingDecision | None = None,
    upscale: UpscalePlan | None = None,
    downscale: DownscaleDecision | None = None,
) -> dict[str, Any]:
    """``status.inProgressOperations`` after a pass, from the previous value and what was decided.

    A decision left ``None`` means the pass did not reach that step: its list stays as it was.
    ``now`` is the time to stamp on a list that changed (RFC 3339).
    """
    before: Mapping[str, Any] = previous or {}
    upgrade_list = upgrade_nodes(upgrade) if upgrade is not None else None
    result = {
        "upgrade": _merged(
            before.get("upgrade") or {},
            [_upgrade_json(node) for node in upgrade_list] if upgrade_list is not None else None,
            now,
        ),
        "upscale": _merged(
            before.get("upscale") or {},
            [_upscale_json(node) for node in upscale.nodes] if upscale is not None else None,
            now,
        ),
        "downscale": _merged(
            before.get("downscale") or {},
            [_downscale_json(node) for node in downscale.nodes] if downscale is not None else None,
            now,
        ),
    }
    # ``stalled`` is true while a leaving node's shutdown is stalled, else absent. ECK resets it
    # even in a pass that did not reach the downscale; here it stays with the list it describes.
    stalled = True if downscale is not None and downscale.stalled else None
    previous_stalled = (before.get("downscale") or {}).get("stalled")
    if downscale is not None and stalled != previous_stalled:
        if stalled:
            result["downscale"]["stalled"] = True
        else:
            result["downscale"].pop("stalled", None)
        result["downscale"]["lastUpdatedTime"] = now
    return result


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def _shard_list(node: str, cluster: ClusterView | None) -> str:
    if cluster is None:
        return ""
    shards = cluster.shards_on(node)
    if not shards:
        return ""
    return " (" + ", ".join(f"{shard.index}[{shard.shard}]" for shard in shards) + ")"


def progress_messages(
    *,
    upgrade: RollingDecision | None = None,
    upscale: UpscalePlan | None = None,
    downscale: DownscaleDecision | None = None,
    cluster: ClusterView | None = None,
) -> tuple[str, ...]:
    """One sentence per thing still in progress: nodes created or waiting for ``maxSurge``,
    restarts and the predicate holding each waiting node back, nodes leaving and the shards
    still on them, StatefulSets the downscale invariants hold back."""
    messages: list[str] = []
    if upscale is not None and upscale.nodes:
        creating = [node.name for node in upscale.nodes if node.status == NEW_NODE_EXPECTED]
        waiting = [node.name for node in upscale.nodes if node.status != NEW_NODE_EXPECTED]
        if creating:
            messages.append(f"creating {_names(creating)}")
        if waiting:
            messages.append(f"waiting for maxSurge to create {_names(waiting)}")
    if upgrade is not None and upgrade.to_upgrade:
        if upgrade.deleted:
            messages.append(f"restarting {_names(upgrade.deleted)}")
        if upgrade.waiting_for_shutdown:
            messages.append(
                f"waiting for the restart shutdown of {_names(upgrade.waiting_for_shutdown)}"
            )
        if upgrade.pending_message:
            messages.append(upgrade.pending_message)
        messages += [
            f"{held.pod} waits for {held.predicate}: {held.message}" for held in upgrade.held_back
        ]
        rest = [
            name
            for name in upgrade.to_upgrade
            if name not in upgrade.deleted
            and name not in upgrade.waiting_for_shutdown
            and name not in {held.pod for held in upgrade.held_back}
        ]
        if rest:
            messages.append(f"still to restart: {_names(rest)}")
    if downscale is not None:
        for node in downscale.nodes:
            if node.shutdown_status == SHUTDOWN_COMPLETE:
                continue
            if node.shutdown_status == SHUTDOWN_STALLED:
                messages.append(f"removal of {node.name} is stalled: {node.explanation}")
            elif node.name in downscale.leaving:
                messages.append(f"moving data off {node.name}{_shard_list(node.name, cluster)}")
        messages += [f"{statefulset}: {reason}" for statefulset, reason in downscale.refused]
    return tuple(messages)


def reconciliation_message(
    *,
    expected: Sequence[ExpectedStatefulSet],
    pods: Sequence[PodState],
    upgrade: RollingDecision | None = None,
    upscale: UpscalePlan | None = None,
    downscale: DownscaleDecision | None = None,
    cluster: ClusterView | None = None,
) -> str:
    """The ``ReconciliationComplete=False`` message: ``<n> of <m> nodes ready and up to date``,
    then what is in progress.

    ``m`` counts every node the spec wants and every node that still exists; a node is up to
    date when the spec wants it, its Pod is ready and not terminating, and it is neither to be
    restarted nor leaving. So ``n == m`` only when nothing is left to do.
    """
    wanted = {name for statefulset in expected for name in statefulset.pod_names()}
    present = {pod.name for pod in pods}
    to_restart = set(upgrade.to_upgrade) if upgrade is not None else set()
    leaving = set(downscale.desired_leaving) if downscale is not None else set()
    up_to_date = sum(
        1
        for pod in pods
        if pod.name in wanted
        and pod.ready
        and not pod.terminating
        and pod.name not in to_restart
        and pod.name not in leaving
    )
    summary = f"{up_to_date} of {len(wanted | present)} nodes ready and up to date"
    details = progress_messages(
        upgrade=upgrade, upscale=upscale, downscale=downscale, cluster=cluster
    )
    return "; ".join((summary, *details))
