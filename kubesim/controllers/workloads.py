"""Workload controllers: StatefulSet, Deployment → ReplicaSet → Pod, DaemonSet (and the simulated Nodes).

Decisions are in :mod:`kubesim.controllers.workload_rules`; these classes only read and write the
store. Writes into a Terminating namespace fail with 403 and are simply dropped (the namespace
controller is emptying it).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable
from typing import Any

from kubesim.controllers.base import (
    EventLike,
    controlled_by,
    controller_ref,
    is_deleting,
    merged_condition,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    template_hash,
)
from kubesim.controllers.kubelet import node_name
from kubesim.controllers.scheduling import selector_matches
from kubesim.controllers.store_access import get_or_none, list_objects, type_for
from kubesim.controllers.workload_rules import (
    REVISION_ANNOTATION,
    REVISION_LABEL,
    TEMPLATE_HASH_LABEL,
    bound_claim_status,
    daemonset_status,
    deployment_status,
    max_surge,
    pod_from_template,
    replicas_of,
    replicaset_status,
    spec_of,
    statefulset_claims,
    statefulset_plan,
    statefulset_pod,
    statefulset_status,
)
from kubesim.errors import StatusError
from kubesim.meta import now_rfc3339
from kubesim.resources import Registry
from kubesim.store import Store

log = logging.getLogger(__name__)
Key = tuple[str, str]


def ensure_nodes(store: Store, registry: Registry, *, count: int) -> None:
    """Create Nodes ``kubesim-node-0..count-1`` (Ready) when the registry serves nodes."""
    nodes = type_for(registry, "", "nodes")
    if nodes is None:
        return
    for index in range(count):
        name = node_name(index)
        if get_or_none(store, nodes, None, name) is not None:
            continue
        created = store.create(
            nodes,
            {
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
                }
            },
            namespace=None,
        )
        created["status"] = {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": f"172.18.0.{index + 2}"}],
        }
        store.update(nodes, created, namespace=None, name=name, subresource="status")


class _OwnerController:
    """Shared plumbing of a controller keyed by its owner object's ``(namespace, name)``."""

    group = "apps"
    plural = ""
    kind = ""
    child_plural = "pods"

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """The owner itself, or the owner named by a child's controller reference."""
        rt = event.rt
        namespace = namespace_of(event.obj) or ""
        if (rt.group, rt.plural) == (self.group, self.plural):
            return [] if event.type == "DELETED" else [(namespace, name_of(event.obj))]
        if (rt.group, rt.plural) == (self._child_group(), self.child_plural):
            ref = controller_ref(event.obj)
            if ref is not None and ref.get("kind") == self.kind:
                return [(namespace, str(ref.get("name", "")))]
        return []

    def _child_group(self) -> str:
        return "" if self.child_plural == "pods" else "apps"

    def _owner(self, key: Hashable) -> tuple[Any, dict[str, Any]] | None:
        assert isinstance(key, tuple)
        rt = type_for(self._registry, self.group, self.plural)
        owner = get_or_none(self._store, rt, key[0], key[1]) if rt else None
        if owner is None or is_deleting(owner):
            return None
        return rt, owner

    def _children(self, owner: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
        rt = type_for(self._registry, self._child_group(), self.child_plural)
        if rt is None:
            return None, []
        items = list_objects(self._store, rt, namespace_of(owner))
        return rt, [o for o in items if controlled_by(o, owner)]

    def _ref(self, owner: dict[str, Any]) -> dict[str, Any]:
        return owner_reference(owner, api_version=f"{self.group}/v1", kind=self.kind)

    def _create(self, rt: Any, obj: dict[str, Any]) -> None:
        try:
            self._store.create(rt, obj, namespace=namespace_of(obj))
        except StatusError as err:
            if err.code not in (403, 409):
                raise

    def _delete(self, rt: Any, namespace: str | None, name: str) -> None:
        try:
            self._store.delete(rt, namespace, name, propagation=None, preconditions=None)
        except StatusError as err:
            if err.code != 404:
                raise

    def _write_status(self, rt: Any, owner: dict[str, Any], status: dict[str, Any]) -> None:
        stored = self._store.get(rt, namespace_of(owner), name_of(owner))
        unchanged_meta = (meta(stored).get("annotations") or {}) == (
            meta(owner).get("annotations") or {}
        )
        if owner.get("status") == status and unchanged_meta:
            return
        owner["status"] = status
        self._store.update(
            rt, owner, namespace=namespace_of(owner), name=name_of(owner), subresource="status"
        )


class StatefulSetController(_OwnerController):
    """Pods ``<sts>-<n>`` in order, their PVCs, rolling updates and status.

    A pod that is being deleted still holds its name: it is recreated only once it is gone (its
    DELETED event brings the StatefulSet back here). A pod whose claim is being deleted is not
    created until the claim is gone (and then made anew), as the real controller's
    ``pvc … is being deleted`` error holds it back.
    """

    plural = "statefulsets"
    kind = "StatefulSet"

    def __init__(self, store: Store, registry: Registry) -> None:
        super().__init__(store, registry)
        # Claims being deleted that held back a pod: (namespace, claim) → the StatefulSet's key.
        self._held_by_claims: dict[Key, Key] = {}

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """As any owner controller, plus the StatefulSet a claim being deleted held back, once
        that claim is gone."""
        if (event.rt.group, event.rt.plural) == ("", "persistentvolumeclaims"):
            if event.type != "DELETED":
                return []
            claim = (namespace_of(event.obj) or "", name_of(event.obj))
            held = self._held_by_claims.pop(claim, None)
            return [held] if held is not None else []
        return super().observe(event)

    def reconcile(self, key: Hashable) -> None:
        """Create / delete pods and claims one step, then refresh the status."""
        found = self._owner(key)
        if found is None:
            return
        rt, sts = found
        pods_rt, pods = self._children(sts)
        if pods_rt is None:
            return
        revision = f"{name_of(sts)}-{template_hash(spec_of(sts).get('template'))}"
        create, delete = statefulset_plan(sts, pods, revision=revision)
        for name in delete:
            self._delete(pods_rt, namespace_of(sts), name)
        for ordinal in create:
            if not self._ensure_claims(sts, ordinal):
                continue
            self._create(
                pods_rt, statefulset_pod(sts, ordinal, revision=revision, owner_ref=self._ref(sts))
            )
        if create or delete:
            _, pods = self._children(sts)
        self._write_status(rt, sts, statefulset_status(sts, pods, revision=revision))

    def _ensure_claims(self, sts: dict[str, Any], ordinal: int) -> bool:
        """Create the pod's missing claims; False while one of them is being deleted."""
        claims_rt = type_for(self._registry, "", "persistentvolumeclaims")
        if claims_rt is None:
            return True
        usable = True
        for claim in statefulset_claims(sts, ordinal):
            claim_key = (namespace_of(claim) or "", name_of(claim))
            existing = get_or_none(self._store, claims_rt, *claim_key)
            if existing is not None:
                if is_deleting(existing):
                    self._held_by_claims[claim_key] = (namespace_of(sts) or "", name_of(sts))
                    usable = False
                continue
            try:
                created = self._store.create(claims_rt, claim, namespace=namespace_of(claim))
            except StatusError as err:
                if err.code in (403, 409):
                    continue
                raise
            created["status"] = bound_claim_status(created)
            self._store.update(
                claims_rt,
                created,
                namespace=namespace_of(created),
                name=name_of(created),
                subresource="status",
            )
        return usable


class ReplicaSetController(_OwnerController):
    """Keeps ``spec.replicas`` pods ``<rs>-<random>`` and the ReplicaSet status."""

    plural = "replicasets"
    kind = "ReplicaSet"

    def reconcile(self, key: Hashable) -> None:
        """Create or delete pods to match the replica count; refresh the status."""
        found = self._owner(key)
        if found is None:
            return
        rt, rs = found
        pods_rt, pods = self._children(rs)
        if pods_rt is None:
            return
        live = [p for p in pods if not is_deleting(p)]
        wanted = replicas_of(rs)
        template = spec_of(rs).get("template") or {}
        for _ in range(wanted - len(live)):
            pod = pod_from_template(
                template,
                namespace=namespace_of(rs) or "",
                owner_ref=self._ref(rs),
                generate_name=f"{name_of(rs)}-",
            )
            self._create(pods_rt, pod)
        # Surplus: newest first, as the real controller prefers younger pods for deletion.
        surplus = sorted(live, key=lambda p: str(meta(p).get("creationTimestamp")), reverse=True)
        for pod in surplus[: max(len(live) - wanted, 0)]:
            self._delete(pods_rt, namespace_of(pod), name_of(pod))
        if len(live) != wanted:
            _, pods = self._children(rs)
        self._write_status(rt, rs, replicaset_status(rs, pods))


class DeploymentController(_OwnerController):
    """One ReplicaSet per pod template (``<deploy>-<hash>``); old ones scaled to 0; status."""

    plural = "deployments"
    kind = "Deployment"
    child_plural = "replicasets"

    def reconcile(self, key: Hashable) -> None:
        """Ensure the current ReplicaSet, scale the old ones down, derive the status."""
        found = self._owner(key)
        if found is None:
            return
        rt, deploy = found
        rs_rt, replica_sets = self._children(deploy)
        if rs_rt is None:
            return
        template = spec_of(deploy).get("template") or {}
        pod_hash = template_hash(template)
        new_name = f"{name_of(deploy)}-{pod_hash}"
        wanted = replicas_of(deploy)
        revisions = [
            int((meta(rs).get("annotations") or {}).get(REVISION_ANNOTATION) or 0)
            for rs in replica_sets
        ]
        current = next((rs for rs in replica_sets if name_of(rs) == new_name), None)
        if current is None:
            self._create(
                rs_rt, self._replica_set(deploy, template, pod_hash, max(revisions, default=0) + 1)
            )
        elif replicas_of(current) != wanted:
            current["spec"]["replicas"] = wanted
            self._store.update(rs_rt, current, namespace=namespace_of(current), name=new_name)
        for rs in replica_sets:
            if name_of(rs) != new_name and replicas_of(rs) != 0:
                rs["spec"]["replicas"] = 0
                self._store.update(rs_rt, rs, namespace=namespace_of(rs), name=name_of(rs))
        _, replica_sets = self._children(deploy)
        current = next((rs for rs in replica_sets if name_of(rs) == new_name), None)
        if current is not None:
            # The real controller records the current revision with its status write (the
            # status strategy of Deployments keeps annotations; the generation stays).
            revision = (meta(current).get("annotations") or {}).get(REVISION_ANNOTATION)
            if revision is not None:
                meta(deploy).setdefault("annotations", {})[REVISION_ANNOTATION] = revision
        status, conditions = deployment_status(deploy, replica_sets, new_rs=new_name)
        previous = (deploy.get("status") or {}).get("conditions") or []
        by_type = {c.get("type"): c for c in previous if isinstance(c, dict)}
        now = now_rfc3339()
        status["conditions"] = [
            merged_condition(by_type.get(c["type"]), c, now=now) for c in conditions
        ]
        self._write_status(rt, deploy, status)

    def _replica_set(
        self, deploy: dict[str, Any], template: dict[str, Any], pod_hash: str, revision: int
    ) -> dict[str, Any]:
        spec = spec_of(deploy)
        template = dict(template)
        template_meta = dict(template.get("metadata") or {})
        template_meta["labels"] = {
            **(template_meta.get("labels") or {}),
            TEMPLATE_HASH_LABEL: pod_hash,
        }
        template["metadata"] = template_meta
        selector = dict(spec.get("selector") or {})
        selector["matchLabels"] = {
            **(selector.get("matchLabels") or {}),
            TEMPLATE_HASH_LABEL: pod_hash,
        }
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name_of(deploy)}-{pod_hash}",
                "namespace": namespace_of(deploy),
                "labels": template_meta["labels"],
                "annotations": {
                    "deployment.kubernetes.io/desired-replicas": str(replicas_of(deploy)),
                    "deployment.kubernetes.io/max-replicas": str(
                        replicas_of(deploy) + max_surge(deploy)
                    ),
                    REVISION_ANNOTATION: str(revision),
                },
                "ownerReferences": [self._ref(deploy)],
            },
            "spec": {"replicas": replicas_of(deploy), "selector": selector, "template": template},
        }


class DaemonSetController(_OwnerController):
    """One pod per simulated node; template changes replace the pods; status."""

    plural = "daemonsets"
    kind = "DaemonSet"

    def __init__(self, store: Store, registry: Registry, *, nodes: int = 1) -> None:
        super().__init__(store, registry)
        self._nodes = nodes

    def reconcile(self, key: Hashable) -> None:
        """Create missing per-node pods, replace outdated ones, refresh the status."""
        found = self._owner(key)
        if found is None:
            return
        rt, ds = found
        pods_rt, pods = self._children(ds)
        if pods_rt is None:
            return
        template = spec_of(ds).get("template") or {}
        revision = template_hash(template)
        by_node = {str(spec_of(p).get("nodeName", "")): p for p in pods if not is_deleting(p)}
        changed = False
        eligible = self._eligible_nodes((template.get("spec") or {}).get("nodeSelector"))
        for node in eligible:
            pod = by_node.get(node)
            if pod is not None and (meta(pod).get("labels") or {}).get(REVISION_LABEL) != revision:
                self._delete(pods_rt, namespace_of(pod), name_of(pod))
                pod = None
            if pod is None:
                new = pod_from_template(
                    template,
                    namespace=namespace_of(ds) or "",
                    owner_ref=self._ref(ds),
                    generate_name=f"{name_of(ds)}-",
                    labels={REVISION_LABEL: revision},
                )
                new["spec"]["nodeName"] = node
                self._create(pods_rt, new)
                changed = True
        if changed:
            _, pods = self._children(ds)
        self._write_status(
            rt, ds, daemonset_status(ds, pods, nodes=len(eligible), revision=revision)
        )

    def _eligible_nodes(self, selector: Any) -> list[str]:
        """The simulated nodes the pod template's ``nodeSelector`` matches."""
        nodes_rt = type_for(self._registry, "", "nodes")
        names = [node_name(index) for index in range(self._nodes)]
        if nodes_rt is None:
            return names
        labels = {
            name_of(node): (meta(node).get("labels") or {})
            for node in list_objects(self._store, nodes_rt, None)
        }
        return [name for name in names if selector_matches(selector, labels.get(name, {}))]
