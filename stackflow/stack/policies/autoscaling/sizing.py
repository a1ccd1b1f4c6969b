"""The resources and node counts of each policy's node sets from an ``_autoscaling/capacity``
response, as ECK computes them: the recommenders combined, the offline case, the spread over
node sets and the guard against scaling down while nodes are missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from stackflow.stack.policies.autoscaling.quantities import GIB, clamp, clamp_count
from stackflow.stack.policies.autoscaling.recommenders import (
    PolicySkippedError,
    cpu_recommendation,
    linear_scaling,
    memory_recommendation,
    requires_nothing,
    storage_recommendation,
)
from stackflow.stack.policies.autoscaling.results import (
    STATE_EMPTY_RESPONSE,
    STATE_NO_NODE_SET,
    STATE_OVERLAPPING_POLICIES,
    CurrentResources,
    NodeSetResources,
    PolicyResult,
    StateRecorder,
    with_limits,
)
from stackflow.stack.policies.autoscaling.spec import REMOTE_CLUSTER_CLIENT, PolicyLimits

__all__ = [
    "compute_policy",
    "distribute_fairly",
    "offline_policy",
    "overlapping_states",
]


def distribute_fairly(names: Sequence[str], count: int) -> tuple[tuple[str, int], ...]:
    """ECK's spread of ``count`` nodes over node sets: one at a time to the node set with the
    fewest (ties by name); the result is in that order (fewest first, then by name)."""
    counts = dict.fromkeys(names, 0)
    if not counts:
        return ()
    for _ in range(max(count, 0)):
        smallest = min(counts, key=lambda name: (counts[name], name))
        counts[smallest] += 1
    return tuple(sorted(counts.items(), key=lambda item: (item[1], item[0])))


def offline_policy(
    limits: PolicyLimits,
    node_sets: Sequence[str],
    current: CurrentResources | None,
    states: Mapping[str, tuple[str, ...]] | None = None,
) -> PolicyResult:
    """ECK's resources without an answer for the policy: those of its status, kept within the
    ranges (storage never shrinks), or the minimums; the node count likewise."""
    memory = storage = cpu = None
    if current is None:
        memory = limits.memory.min if limits.memory is not None else None
        cpu = limits.cpu.min if limits.cpu is not None else None
        storage = limits.storage.min if limits.storage is not None else None
        count = clamp_count(0, limits.node_count)
    else:
        if limits.memory is not None:
            memory = (
                clamp(current.memory, limits.memory)
                if current.memory is not None
                else limits.memory.min
            )
        if limits.cpu is not None:
            cpu = clamp(current.cpu, limits.cpu) if current.cpu is not None else limits.cpu.min
        if limits.storage is not None:
            storage = limits.storage.min
            if current.storage is not None and current.storage > storage:
                storage = current.storage
        count = clamp_count(current.node_count, limits.node_count)
    resources = with_limits(
        NodeSetResources(node_count=count, memory=memory, storage=storage, cpu=cpu), limits
    )
    return PolicyResult(
        policy=limits.name,
        resources=resources,
        node_sets=distribute_fairly(node_sets, count),
        states=dict(states or {}),
    )


def _stabilized(
    limits: PolicyLimits,
    computed: NodeSetResources,
    node_sets: Sequence[str],
    current: CurrentResources | None,
    observed_nodes: int,
) -> tuple[NodeSetResources, tuple[tuple[str, int], ...]]:
    """ECK's guard: no scale-down while Elasticsearch sees fewer nodes than the status has."""
    distributed = distribute_fairly(node_sets, computed.node_count)
    if current is None or not (
        computed.node_count < current.node_count and observed_nodes < current.node_count
    ):
        return computed, distributed
    count = clamp_count(current.node_count, limits.node_count)
    memory, cpu, storage = current.memory, current.cpu, current.storage
    if limits.memory is not None and memory is not None:
        memory = clamp(memory, limits.memory)
    if limits.cpu is not None and cpu is not None:
        cpu = clamp(cpu, limits.cpu)
    if limits.storage is not None and storage is not None and storage < limits.storage.min:
        storage = limits.storage.min
    kept = with_limits(
        NodeSetResources(node_count=count, memory=memory, storage=storage, cpu=cpu), limits
    )
    return kept, distribute_fairly([name for name, _ in current.node_sets], count)


def compute_policy(
    limits: PolicyLimits,
    capacity_response: Mapping[str, Any],
    node_sets: Sequence[str],
    previous: Mapping[str, Any] | None = None,
    states: Mapping[str, tuple[str, ...]] | None = None,
) -> PolicyResult:
    """The resources of one policy's node sets from an ``_autoscaling/capacity`` response, as
    ECK computes them.

    No node set: ``NoNodeSet`` and nothing to write. No requirement for the policy:
    ``EmptyResponse`` and the offline resources (:func:`offline_policy`). Otherwise storage,
    memory and cpu are each sized per node (the node requirement, at least the total over the
    minimum node count, storage over 95% usable, memory and storage rounded up to a GiB, within
    the range; storage does not shrink), memory follows storage and cpu follows memory linearly
    when Elasticsearch asks for neither, the node count is the largest any resource needs
    within ``nodeCount``, spread over the node sets, and no scale-down happens while
    Elasticsearch sees fewer nodes than the status has. ``states`` are already recorded ones
    (``OverlappingPolicies``).
    """
    recorder = StateRecorder()
    for state, messages in (states or {}).items():
        for message in messages:
            recorder.record(state, message)
    if not node_sets:
        recorder.record(STATE_NO_NODE_SET, f"no nodeSets for tier {limits.name}")
        return PolicyResult(policy=limits.name, states=recorder.frozen())
    current = CurrentResources.of(previous)
    policies = capacity_response.get("policies")
    entry = policies.get(limits.name) if isinstance(policies, Mapping) else None
    if not isinstance(entry, Mapping) or requires_nothing(entry):
        recorder.record(STATE_EMPTY_RESPONSE, "No required capacity from Elasticsearch")
        return offline_policy(limits, node_sets, current, recorder.frozen())
    try:
        recommenders = [
            ("storage", storage_recommendation(limits, entry, current, recorder)),
            ("memory", memory_recommendation(limits, entry, recorder)),
            ("cpu", cpu_recommendation(limits, entry, recorder)),
        ]
    except PolicySkippedError:
        return PolicyResult(policy=limits.name, states=recorder.frozen())
    values = {name: found[0] for name, found in recommenders if found is not None}
    memory, storage, cpu = values.get("memory"), values.get("storage"), values.get("cpu")
    if memory is None and limits.memory is not None and limits.storage is not None and storage:
        memory = linear_scaling(storage, limits.storage, limits.memory, GIB)
    if cpu is None and limits.cpu is not None and limits.memory is not None and memory:
        cpu = linear_scaling(memory, limits.memory, limits.cpu, 1000)
    per_node = NodeSetResources(node_count=0, memory=memory, storage=storage, cpu=cpu)
    count = max((found[1](per_node) for _, found in recommenders if found is not None), default=0)
    computed = with_limits(replace(per_node, node_count=count), limits)
    observed_nodes = len(entry.get("current_nodes") or ())
    resources, distributed = _stabilized(limits, computed, node_sets, current, observed_nodes)
    return PolicyResult(
        policy=limits.name, resources=resources, node_sets=distributed, states=recorder.frozen()
    )


def overlapping_states(policies: Sequence[PolicyLimits]) -> dict[str, dict[str, tuple[str, ...]]]:
    """ECK's ``OverlappingPolicies`` states: a role (other than ``remote_cluster_client``)
    declared by several policies, recorded on each of them."""
    by_role: dict[str, list[str]] = {}
    for policy in policies:
        for role in policy.roles:
            by_role.setdefault(role, []).append(policy.name)
    found: dict[str, dict[str, list[str]]] = {}
    for role in sorted(by_role):
        names = sorted(by_role[role])
        if role == REMOTE_CLUSTER_CLIENT or len(names) < 2:
            continue
        message = f"role {role} is declared in autoscaling policies {','.join(names)}"
        for name in names:
            found.setdefault(name, {}).setdefault(STATE_OVERLAPPING_POLICIES, []).append(message)
    return {
        name: {state: tuple(messages) for state, messages in states.items()}
        for name, states in found.items()
    }
