"""The Service controller part of the API server: ``spec.clusterIP`` allocation (reference §10.2.6)."""

from __future__ import annotations

import ipaddress
from collections.abc import Hashable, Iterable

from kubesim.controllers.base import EventLike, name_of, namespace_of
from kubesim.controllers.store_access import get_or_none, type_for
from kubesim.controllers.workload_rules import spec_of
from kubesim.resources import Registry
from kubesim.store import Store

SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")


class ServiceController:
    """Allocates ``spec.clusterIP`` from 10.96.0.0/12 for Services that have none (not ``None``)."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        self._used: set[str] = set()
        self._next = 10  # .1 belongs to the ``kubernetes`` Service by convention

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Services without a cluster IP; remembers the IPs in use."""
        if (event.rt.group, event.rt.plural) != ("", "services"):
            return []
        ip = str(spec_of(event.obj).get("clusterIP") or "")
        if event.type == "DELETED":
            self._used.discard(ip)
            return []
        if ip:
            self._used.add(ip)
            return []
        if spec_of(event.obj).get("type") == "ExternalName":
            return []
        return [(namespace_of(event.obj) or "", name_of(event.obj))]

    def reconcile(self, key: Hashable) -> None:
        """Give the service the next free cluster IP."""
        assert isinstance(key, tuple)
        rt = type_for(self._registry, "", "services")
        if rt is None:
            return
        service = get_or_none(self._store, rt, key[0], key[1])
        if service is None or spec_of(service).get("clusterIP"):
            return
        ip = self._allocate()
        spec = service.setdefault("spec", {})
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
        self._store.update(rt, service, namespace=key[0], name=key[1])

    def _allocate(self) -> str:
        while True:
            candidate = str(SERVICE_RANGE.network_address + self._next)
            self._next += 1
            if candidate not in self._used:
                self._used.add(candidate)
                return candidate
