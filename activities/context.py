"""``ControllerContext``: everything activities need, built once per process by ``stackflow.app``.

It holds the scoped client (every namespaced read), the explicitly unscoped client (flip mappers
only), the optional read-through informer cache (``ObjectReader``: the scope check and the license
check read from it when it has a synced informer, else call the API server), the namespace
matcher, the operator configuration, the event recorder, the license reader, the Elasticsearch
client factory, and the in-process registries that compensations release.
Registries hold only state a watch or a reconcile can rebuild (DESIGN principle 1).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client

from activities.licenses import OperatorLicenseReader
from stackflow.config import OperatorConfig
from stackflow.elastic import AiohttpElasticsearchClient, ElasticsearchApi
from stackflow.kube.events import EventRecorder
from stackflow.kube.reader import ObjectReader
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.engine import TASK_QUEUE, ObjectKey
from stackflow.scope import NamespaceMatcher

__all__ = [
    "AssociationWatches",
    "ControllerContext",
    "ElasticsearchApi",
    "ElasticsearchApiFactory",
    "ElasticsearchEndpoint",
    "ObjectReader",
    "ObserverRegistry",
    "aiohttp_elasticsearch",
    "operator_pod_name",
]


class AssociationWatches:
    """What each associated object's associations watch, keyed ``watches/<assoc>/<ns>/<name>``.

    Rebuilt by every association reconcile (DESIGN principle 1); dropped by the compensation when
    the object leaves scope or is deleted.
    """

    def __init__(self) -> None:
        """Start empty."""
        self._watched: dict[str, tuple[ObjectKey, ...]] = {}

    def record(self, key: str, watched: Sequence[ObjectKey]) -> None:
        """Replace what ``key`` watches."""
        self._watched[key] = tuple(watched)

    def release(self, key: str) -> bool:
        """Forget ``key``; True when it was recorded."""
        return self._watched.pop(key, None) is not None

    def watched(self, key: str) -> tuple[ObjectKey, ...]:
        """What ``key`` watches (empty when unknown)."""
        return self._watched.get(key, ())

    def keys(self) -> list[str]:
        """Every recorded key, sorted."""
        return sorted(self._watched)


def operator_pod_name(environ: Mapping[str, str] | None = None) -> str:
    """The operator Pod's name: ``POD_NAME``, else the hostname (as ECK)."""
    env = os.environ if environ is None else environ
    return env.get("POD_NAME") or socket.gethostname()


@dataclass(frozen=True)
class ElasticsearchEndpoint:
    """Where and how to reach one cluster's HTTP API."""

    namespace: str
    name: str
    url: str
    username: str
    password: str
    ca_pem: bytes | None = None


#: Builds a client for one cluster; tests point it at the fake Elasticsearch server.
ElasticsearchApiFactory = Callable[[ElasticsearchEndpoint], ElasticsearchApi]


def aiohttp_elasticsearch(endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
    """The production factory: an aiohttp client trusting the cluster's internal HTTP CA."""
    return AiohttpElasticsearchClient(
        url=endpoint.url,
        username=endpoint.username,
        password=endpoint.password,
        ca_pem=endpoint.ca_pem,
    )


class ObserverRegistry:
    """In-process cluster observers (ECK's ``observer.Manager``), keyed ``namespace/name``.

    An entry says the operator observes a cluster's health; the reconcile registers it and the
    ``elasticsearch.release_observers`` compensation drops it when the cluster leaves scope.
    """

    def __init__(self) -> None:
        """Start empty."""
        self._observed: dict[str, dict[str, Any]] = {}

    def observe(self, key: str, state: Mapping[str, Any]) -> bool:
        """Record the latest observation of ``key``; True when the key was new."""
        new = key not in self._observed
        self._observed[key] = dict(state)
        return new

    def release(self, key: str) -> bool:
        """Forget ``key``; True when it was registered."""
        return self._observed.pop(key, None) is not None

    def get(self, key: str) -> Mapping[str, Any] | None:
        """The last observation of ``key``."""
        return self._observed.get(key)

    def keys(self) -> list[str]:
        """Every observed key, sorted."""
        return sorted(self._observed)


@dataclass
class ControllerContext:
    """The process-wide dependencies of every activity."""

    scoped: ScopedClient
    unscoped: UnscopedClient
    matcher: NamespaceMatcher
    config: OperatorConfig
    events: EventRecorder
    licenses: OperatorLicenseReader
    #: None: never ask clusters for their health (the status derives it from Pod readiness).
    elasticsearch: ElasticsearchApiFactory | None = aiohttp_elasticsearch
    temporal_client: Client | None = None
    task_queue: str = TASK_QUEUE
    pod_name: str = field(default_factory=operator_pod_name)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    observers: ObserverRegistry = field(default_factory=ObserverRegistry)
    #: What each association watches (``activities.associations``); compensations release it.
    association_watches: AssociationWatches = field(default_factory=AssociationWatches)
    #: Field manager name for the operator's writes.
    field_manager: str = "stackflow"
    #: The watchers' informer caches (unscoped); None: every read goes to the API server.
    cache: ObjectReader | None = None

    @property
    def operator_namespace(self) -> str:
        """The namespace the operator runs in."""
        return self.config.operator_namespace
