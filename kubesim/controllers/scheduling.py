"""What kubesim's fake scheduler decides, as pure functions, in the real kube-scheduler's words.

- Which pods it schedules: those whose ``spec.schedulerName`` is empty or ``default-scheduler`` (a
  pod naming another scheduler waits for that one, as on a real cluster).
- Which nodes fit a pod before any extender is asked: the ``nodeSelector`` matches the node's labels,
  and every ``NoSchedule`` / ``NoExecute`` taint of the node is tolerated by one of the pod's
  tolerations (``PreferNoSchedule`` never filters). A toleration tolerates a taint when its effect is
  empty or the taint's, its key is empty or the taint's, and its operator is ``Exists`` or ``Equal``
  (also when empty) with the taint's value; an empty key with ``Exists`` tolerates every taint.
  ``Lt`` / ``Gt`` tolerate nothing: v1.37 keeps them behind an alpha feature gate, off by default.
- Which nodes kubesim's kubelet leaves alone: a node annotated ``stackflow.dev/kubelet: external``
  has a kubelet of its own (the Elasticsearch Pod runner), so kubesim neither starts nor reports the
  pods bound to it (the annotation and ``has_external_kubelet`` are defined in
  ``kubesim/store_kinds.py``, whose store deletes such pods gracefully, and re-exported here).
- What a scheduler extender answered (:class:`ExtenderVerdict`; the HTTP call is the server's, see
  ``kubesim/scheduler_extender.py``, handed in as a :class:`NodeFilter`).
- The ``PodScheduled=False`` message: ``0/N nodes are available: …`` with the reasons counted and
  sorted, then what preemption would say, as ``FitError.Error()`` words it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# The external-kubelet annotation is the store's too (it deletes such a node's pods gracefully):
# defined with the store's kind rules, re-exported here with the scheduler's decisions.
from kubesim.store_kinds import EXTERNAL_KUBELET as EXTERNAL_KUBELET
from kubesim.store_kinds import EXTERNAL_KUBELET_ANNOTATION as EXTERNAL_KUBELET_ANNOTATION
from kubesim.store_kinds import has_external_kubelet as has_external_kubelet

#: The scheduler a pod gets when it names none (the API server defaults ``spec.schedulerName``).
DEFAULT_SCHEDULER = "default-scheduler"
#: The taint effects that keep a pod that does not tolerate them off a node.
FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})

# The reasons of the scheduler's plugins, word for word (nodeaffinity, tainttoleration).
SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
# kubesim's own words for a node the extender dropped without a reason (the real scheduler
# leaves such a node out of the count).
EXTENDER_DROPPED = "node(s) were filtered out by the scheduler extender"
# What the preemption PostFilter says per node.
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_PREEMPTION_VICTIMS = "No preemption victims found for incoming pod"

# PodScheduled=False reasons (v1.PodReasonUnschedulable, v1.PodReasonSchedulerError, gates).
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
SCHEDULING_GATED = "SchedulingGated"


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any]) -> bool:
    """Whether a pod's ``nodeSelector`` matches a node's labels."""
    return all(labels.get(key) == value for key, value in (selector or {}).items())


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def scheduled_by_default_scheduler(spec: Mapping[str, Any]) -> bool:
    """Whether the default scheduler (kubesim's) is the one to schedule a pod with this spec."""
    return str(spec.get("schedulerName") or "") in ("", DEFAULT_SCHEDULER)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``Toleration.ToleratesTaint`` with the comparison operators off (v1.37's default)."""
    effect = str(toleration.get("effect") or "")
    if effect and effect != str(taint.get("effect") or ""):
        return False
    key = str(toleration.get("key") or "")
    if key and key != str(taint.get("key") or ""):
        return False
    operator = str(toleration.get("operator") or "")
    if operator in ("", "Equal"):
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return operator == "Exists"


def untolerated_taint(
    taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The first ``NoSchedule`` / ``NoExecute`` taint no toleration tolerates, or None."""
    for taint in taints:
        if str(taint.get("effect") or "") not in FILTERING_EFFECTS:
            continue
        if not any(tolerates(toleration, taint) for toleration in tolerations):
            return taint
    return None


def node_rejection(spec: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """Why the scheduler's filters keep a pod with ``spec`` off ``node`` (None: it fits)."""
    labels = _dict(_dict(node.get("metadata")).get("labels"))
    if not selector_matches(_dict(spec.get("nodeSelector")), labels):
        return SELECTOR_MISMATCH
    taints = _dicts(_dict(node.get("spec")).get("taints"))
    if untolerated_taint(taints, _dicts(spec.get("tolerations"))) is not None:
        return UNTOLERATED_TAINT
    return None


@dataclass(frozen=True)
class NodeFit:
    """The filters' verdict: the nodes that fit (sorted) and why each other node does not."""

    feasible: tuple[str, ...]
    rejected: Mapping[str, str]


def fit_nodes(spec: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]]) -> NodeFit:
    """Run the scheduler's filters (node selector, taints) over ``nodes`` (by name)."""
    rejected: dict[str, str] = {}
    feasible: list[str] = []
    for name in sorted(nodes):
        reason = node_rejection(spec, nodes[name])
        if reason is None:
            feasible.append(name)
        else:
            rejected[name] = reason
    return NodeFit(tuple(feasible), rejected)


@dataclass(frozen=True)
class ExtenderVerdict:
    """A scheduler extender's filter answer (``ExtenderFilterResult``), or why there is none.

    ``error`` is set when the call failed (unreachable, not 200, an undecodable body, a node that was
    not offered) or the extender answered an ``Error``: the pod is not scheduled (``SchedulerError``).
    Otherwise ``node_names`` are the nodes it keeps; ``failed`` (``FailedNodes``) and ``unresolvable``
    (``FailedAndUnresolvableNodes``) give its reasons for some of the others.
    """

    node_names: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)
    unresolvable: Mapping[str, str] = field(default_factory=dict)
    error: str = ""


class NodeFilter(Protocol):
    """A scheduler extender's filter verb, as the fake scheduler calls it (nodeCacheCapable)."""

    async def filter(self, pod: Mapping[str, Any], node_names: Sequence[str]) -> ExtenderVerdict:
        """The extender's verdict on ``pod`` for the candidate nodes ``node_names``."""
        ...

    async def close(self) -> None:
        """Release the connections."""
        ...


def _histogram(reasons: Iterable[str]) -> str:
    """``"2 reason a, 1 reason b"``: counts first, the strings sorted as Go sorts them."""
    return ", ".join(sorted(f"{count} {reason}" for reason, count in Counter(reasons).items()))


def unschedulable_message(
    total: int, unresolvable: Mapping[str, str], resolvable: Mapping[str, str] | None = None
) -> str:
    """The ``FitError`` message over ``total`` nodes, each rejected for a reason.

    ``unresolvable`` nodes (filters, the extender's unresolvable and dropped ones) are nodes
    preemption cannot help with; ``resolvable`` ones (the extender's ``FailedNodes``) it would try,
    and kubesim, which runs no preemption, finds no victims there.
    """
    resolvable = {
        name: reason for name, reason in (resolvable or {}).items() if name not in unresolvable
    }
    message = f"0/{total} nodes are available:"
    reasons = _histogram([*unresolvable.values(), *resolvable.values()])
    if reasons:
        message += f" {reasons}."
    preemption = [NO_PREEMPTION_VICTIMS] * len(resolvable)
    preemption += [PREEMPTION_NOT_HELPFUL] * (total - len(resolvable))
    return f"{message} preemption: 0/{total} nodes are available: {_histogram(preemption)}."


def extender_rejections(
    fit: NodeFit, verdict: ExtenderVerdict
) -> tuple[dict[str, str], dict[str, str]]:
    """(unresolvable, resolvable) reasons for every node after the extender kept none of them."""
    unresolvable = dict(fit.rejected)
    resolvable: dict[str, str] = {}
    for name in fit.feasible:
        if name in verdict.unresolvable:
            unresolvable[name] = verdict.unresolvable[name]
        elif name in verdict.failed:
            resolvable[name] = verdict.failed[name]
        else:
            unresolvable[name] = EXTENDER_DROPPED
    return unresolvable, resolvable
