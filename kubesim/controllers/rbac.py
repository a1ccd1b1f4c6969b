"""The ClusterRole aggregation controller of kube-controller-manager.

A ClusterRole with an ``aggregationRule`` gets, as its ``rules``, the rules of the ClusterRoles its
selectors match (:func:`kubesim.rbac.aggregated_rules`); the RBAC authorizer reads only ``rules``,
so an aggregated role grants what it gathered once this controller has written it. Any ClusterRole
change re-evaluates every aggregated ClusterRole, as the real controller does.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from kubesim.controllers.base import EventLike, name_of
from kubesim.controllers.store_access import list_objects, type_for
from kubesim.rbac import aggregated_rules
from kubesim.resources import Registry
from kubesim.store import Store

_GROUP = "rbac.authorization.k8s.io"
_EVERY_AGGREGATE = "aggregated-clusterroles"


class ClusterRoleAggregationController:
    """Writes the gathered rules into every aggregated ClusterRole whose rules differ."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Any ClusterRole change: re-evaluate the aggregated ones (one key for all of them)."""
        if (event.rt.group, event.rt.plural) != (_GROUP, "clusterroles"):
            return []
        return [_EVERY_AGGREGATE]

    def reconcile(self, key: Hashable) -> None:
        """Update each aggregated ClusterRole whose rules are not what its selectors gather."""
        rt = type_for(self._registry, _GROUP, "clusterroles")
        if rt is None:
            return
        roles = list_objects(self._store, rt, None)
        for role in roles:
            rules = aggregated_rules(role, roles)
            # No rule and an absent rules field are the same (the real controller's semantic
            # equality), so an aggregate that gathers nothing is left alone.
            if rules is None or rules == (role.get("rules") or []):
                continue
            role["rules"] = rules
            self._store.update(rt, role, namespace=None, name=name_of(role))
