"""A small fake Elasticsearch HTTP server: the few API calls the operator makes, scriptable, recorded.

Binds 127.0.0.1 on a free port, optionally serves TLS with a given certificate, checks basic auth, and
records every call so tests can assert on what the client sent. ``unreachable_elasticsearch`` is a
client factory for tests that do not care about the cluster's API: its clusters never answer.

Behind the calls that change a running cluster (rolling restarts, downscales, voting exclusions)
is a small model of the cluster, ``state.cluster``: nodes, indices and their shard copies, allocated
at once after every change by Elasticsearch's rules (``exclude._name``, ``enable``, node shutdowns),
which tests drive with :meth:`FakeElasticsearch.add_node`, ``remove_node`` and ``create_index``
(``tests/fakes/fake_cluster_nodes.py`` keeps the nodes in line with a cluster's Pods). While the
model has no node, the health is what tests set (``state.health``, ``state.number_of_nodes``) and
``_cat/shards`` answers 503 ``master_not_discovered_exception``, as a cluster without an elected
master does: the operator then has no view of the cluster to change it by, and leaves it be.

Its answers are checked against a real node's by ``tests/elasticsearch/test_fake_matches_real.py``:
status codes and body shapes agree, Elasticsearch's error shape included, except for the
differences ``FAKE_ELASTICSEARCH_DIFFERENCES.md`` (next to this module) lists with their reasons.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import fnmatch
import json
import re
import ssl
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from stackflow.elastic import ElasticsearchApi
from stackflow.elastic.client import (
    NotDialledElasticsearch,
)
from stackflow.elastic.cluster_view import ENABLE_SETTING, EXCLUDE_NAME_SETTING
from stackflow.elastic.factory import ElasticsearchEndpoint

REQUEST_BODY = web.RequestKey("request_body", dict[str, Any])
#: The caller's Authorization header: with ``any_credentials`` one fake stands for many clusters,
#: each calling with its own internal user, so the keys a cluster lists are its own.
REQUEST_CALLER = web.RequestKey("request_caller", str)

#: The cluster name in the fake's answers (health, and a self-generated license's ``issued_to``).
CLUSTER_NAME = "fake"
#: What Elasticsearch names in ``WWW-Authenticate`` when it refuses a request's credentials (the
#: token service, hence ``Bearer``, is on with HTTPS, as the operator's clusters serve).
AUTHENTICATE_CHALLENGES = (
    'Basic realm="security", charset="UTF-8"',
    'Bearer realm="security"',
    "ApiKey",
)
#: The dynamic cluster settings the fake accepts (fnmatch patterns; ``*`` spans dots): the
#: families the operator and the tests write. Any other name is refused as Elasticsearch refuses
#: a setting it does not know ("persistent setting [x], not recognized").
KNOWN_CLUSTER_SETTINGS = (
    "cluster.remote.*.seeds",
    "cluster.remote.*.mode",
    "cluster.remote.*.proxy_address",
    "cluster.remote.*.server_name",
    "cluster.remote.*.skip_unavailable",
    "cluster.remote.*.proxy_socket_connections",
    "cluster.remote.*.node_connections",
    "cluster.remote.*.transport.*",
    "cluster.routing.*",
    "cluster.max_shards_per_node*",
    "cluster.blocks.*",
    "cluster.info.*",
    "cluster.indices.*",
    "action.*",
    "indices.*",
    "ingest.*",
    "logger.*",
    "search.*",
    "snapshot.*",
    "xpack.*",
)
#: A self-generated trial lasts 30 days.
TRIAL_DAYS = 30
_DAY_MILLIS = 24 * 3600 * 1000


def _iso_millis(millis: int) -> str:
    """An epoch-millisecond instant as Elasticsearch prints dates (``2026-01-05T10:00:00.123Z``)."""
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def self_generated_license(type_: str) -> dict[str, Any]:
    """A license as Elasticsearch generates it for itself: ``basic``, or a 30-day ``trial``."""
    issued = int(time.time() * 1000)
    license_: dict[str, Any] = {
        "status": "active",
        "uid": str(uuid.uuid4()),
        "type": type_,
        "issue_date": _iso_millis(issued),
        "issue_date_in_millis": issued,
    }
    if type_ == "trial":
        expiry = issued + TRIAL_DAYS * _DAY_MILLIS
        license_ |= {"expiry_date": _iso_millis(expiry), "expiry_date_in_millis": expiry}
    return license_ | {
        "max_nodes": 1000,
        "max_resource_units": None,
        "issued_to": CLUSTER_NAME,
        "issuer": "elasticsearch",
        "start_date_in_millis": -1,
    }


def es_error(
    status: int,
    type_: str,
    reason: str | None,
    *,
    details: Mapping[str, Any] | None = None,
) -> web.Response:
    """An error answer in Elasticsearch's shape: ``{"error": {"root_cause": [...], "type",
    "reason", ...}, "status"}``; ``details`` are further fields of the cause (``header``)."""
    cause = {"type": type_, "reason": reason, **dict(details or {})}
    error: dict[str, Any] = {"root_cause": [cause], **cause}
    return web.json_response({"error": error, "status": status}, status=status)


def _unauthenticated(reason: str, **details: Any) -> web.Response:
    """Elasticsearch's 401: a ``security_exception`` carrying its challenges, in the body and as
    ``WWW-Authenticate`` headers."""
    response = es_error(
        401,
        "security_exception",
        reason,
        details={**details, "header": {"WWW-Authenticate": list(AUTHENTICATE_CHALLENGES)}},
    )
    for challenge in AUTHENTICATE_CHALLENGES:
        response.headers.add("WWW-Authenticate", challenge)
    return response


@dataclass(frozen=True)
class RecordedCall:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, str]
    body: Any


# -- the cluster model: nodes, indices and their shard copies --------------------------------------

#: The roles of a node whose configuration names none, as ``GET _nodes`` lists them (sorted).
DEFAULT_NODE_ROLES = (
    "data",
    "data_cold",
    "data_content",
    "data_frozen",
    "data_hot",
    "data_warm",
    "ingest",
    "master",
    "ml",
    "remote_cluster_client",
    "transform",
)
#: The version of a node added without one (the oldest the project pins).
DEFAULT_NODE_VERSION = "8.17.0"
#: The roles that let a node hold the shards of a regular index: its ``_tier_preference`` is
#: ``data_content``, which the generic ``data`` role also holds.
CONTENT_ROLES = frozenset({"data", "data_content"})
#: ``cluster.routing.allocation.enable``'s values (Elasticsearch reads them in any case).
ALLOCATION_ENABLE_VALUES = ("all", "primaries", "new_primaries", "none")
#: The most voting configuration exclusions (``cluster.max_voting_config_exclusions``' default).
MAX_VOTING_EXCLUSIONS = 10
#: A voting exclusion's node id when no node of that name is in the cluster.
ABSENT_NODE_ID = "_absent_"
#: Where the shutdown status names an unmovable shard's allocation decision.
NODE_ALLOCATION_DECISION_KEY = "node_allocation_decision"

STARTED = "STARTED"
UNASSIGNED = "UNASSIGNED"


def new_uuid() -> str:
    """An id as Elasticsearch makes node ids and index and cluster uuids: 16 random bytes,
    URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def simple_match(pattern: str, value: str) -> bool:
    """Elasticsearch's ``Regex.simpleMatch``: ``*`` stands for any text, nothing else is special."""
    return (
        re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), value) is not None
    )


@dataclass
class FakeNode:
    """A node of the fake cluster: its name (a Pod's), id, roles and version."""

    name: str
    id: str
    roles: tuple[str, ...] = DEFAULT_NODE_ROLES
    version: str = DEFAULT_NODE_VERSION

    @property
    def holds_content(self) -> bool:
        """Whether the node can hold a regular index's shards."""
        return bool(CONTENT_ROLES & set(self.roles))

    @property
    def holds_data(self) -> bool:
        """Whether the node has a data role (``number_of_data_nodes`` counts it)."""
        return any(role == "data" or role.startswith("data_") for role in self.roles)

    @property
    def master_eligible(self) -> bool:
        """Whether the node is master-eligible."""
        return "master" in self.roles


@dataclass
class ShardCopy:
    """One copy of one shard: ``node`` is the name of the node holding it (None: unassigned);
    ``last_node`` the node it was on before (where a returning node's data is)."""

    index: str
    shard: int
    primary: bool
    node: str | None = None
    last_node: str | None = None

    @property
    def state(self) -> str:
        """``STARTED`` or ``UNASSIGNED`` (the model has no initializing or relocating copies)."""
        return STARTED if self.node is not None else UNASSIGNED

    @property
    def key(self) -> tuple[str, int]:
        """Which shard this is a copy of."""
        return (self.index, self.shard)


@dataclass
class FakeIndex:
    """An index: its shard and replica counts, and per shard the ids of the nodes holding an
    in-sync copy (empty while the shard never started: a new shard may go anywhere, an existing
    primary only where its data is)."""

    name: str
    shards: int = 1
    replicas: int = 1
    uuid: str = field(default_factory=new_uuid)
    in_sync: dict[int, set[str]] = field(default_factory=dict)


@dataclass
class FakeShutdown:
    """A node shutdown record (``PUT _nodes/<id>/shutdown``); ``type`` in capitals."""

    node_id: str
    type: str
    reason: str
    started_millis: int
    allocation_delay: str | None = None
    #: Whether the node was in the cluster since the record was put (else: NOT_STARTED).
    node_seen: bool = False


@dataclass(frozen=True)
class AllocationRules:
    """What the allocation reads from the cluster settings: ``enable`` and the excluded names."""

    enable: str = "all"
    excluded: tuple[str, ...] = ()

    def excludes(self, node: str) -> bool:
        """Whether ``cluster.routing.allocation.exclude._name`` names ``node``."""
        return any(simple_match(pattern, node) for pattern in self.excluded)

    def may_allocate(self, copy: ShardCopy, *, new: bool) -> bool:
        """Whether ``enable`` lets ``copy`` be assigned or moved (``new``: a shard never started)."""
        if self.enable == "all":
            return True
        if self.enable == "primaries":
            return copy.primary
        if self.enable == "new_primaries":
            return copy.primary and new
        return False


@dataclass
class FakeCluster:
    """The fake's cluster: nodes by name (in joining order), indices, their shard copies, the
    voting configuration exclusions and the node shutdown records.

    Allocation is instant (no copy is ever initializing or relocating) and deterministic: after
    every change, each unassigned copy goes to an eligible node, the least loaded first, and each
    copy on a node it may not stay on moves to one. See :meth:`allocate` for the rules.
    """

    uuid: str = field(default_factory=new_uuid)
    nodes: dict[str, FakeNode] = field(default_factory=dict)
    #: The id of every node that was ever in the cluster, by name: a node keeps its id across a
    #: restart (Elasticsearch stores it on the node's data path).
    known_ids: dict[str, str] = field(default_factory=dict)
    indices: dict[str, FakeIndex] = field(default_factory=dict)
    copies: list[ShardCopy] = field(default_factory=list)
    #: ``(node_id, node_name)``, in the order they were added.
    voting_exclusions: list[tuple[str, str]] = field(default_factory=list)
    #: Node shutdown records by node id.
    shutdowns: dict[str, FakeShutdown] = field(default_factory=dict)
    #: While True, changes are recorded but no copy is assigned or moved (a test's way to see
    #: a shutdown IN_PROGRESS, or the cluster between two steps).
    paused: bool = False

    # -- reading --------------------------------------------------------------------------------

    def node_by_id(self, node_id: str) -> FakeNode | None:
        """The node in the cluster with ``node_id``, if any."""
        return next((node for node in self.nodes.values() if node.id == node_id), None)

    def copies_of(self, key: tuple[str, int]) -> list[ShardCopy]:
        """Every copy of shard ``key``, the primary first."""
        return sorted(
            (copy for copy in self.copies if copy.key == key), key=lambda c: not c.primary
        )

    def copies_on(self, node: str) -> list[ShardCopy]:
        """The copies on node ``node``."""
        return [copy for copy in self.copies if copy.node == node]

    def copies_by_node(self) -> dict[str, list[tuple[str, int, str]]]:
        """Every node's copies as ``(index, shard, "p"|"r")`` in ``_cat/shards`` order, every
        node present (empty lists too); unassigned copies under ``""``."""
        layout: dict[str, list[tuple[str, int, str]]] = {name: [] for name in self.nodes}
        for copy in self.ordered_copies():
            layout.setdefault(copy.node or "", []).append(
                (copy.index, copy.shard, "p" if copy.primary else "r")
            )
        return layout

    def remove_shutdown_on(self, node: FakeNode) -> bool:
        """Whether ``node`` has a ``remove`` (or ``replace``) shutdown record."""
        record = self.shutdowns.get(node.id)
        return record is not None and record.type in ("REMOVE", "REPLACE")

    def delayed(self, copy: ShardCopy) -> bool:
        """Whether an unassigned replica waits for its node to come back: the node left with a
        ``restart`` shutdown record (its ``allocation_delay``; the model has no clock)."""
        if copy.node is not None or copy.primary or copy.last_node is None:
            return False
        if copy.last_node in self.nodes:
            return False
        node_id = self.known_ids.get(copy.last_node)
        record = self.shutdowns.get(node_id) if node_id else None
        return record is not None and record.type == "RESTART"

    # -- changing -------------------------------------------------------------------------------

    def add_node(
        self,
        name: str,
        *,
        roles: Sequence[str] = DEFAULT_NODE_ROLES,
        version: str = DEFAULT_NODE_VERSION,
        node_id: str | None = None,
    ) -> FakeNode:
        """A node joins (again: a known name keeps its id). A node already there is replaced (a
        restart with other roles or another version)."""
        if name in self.nodes:
            self.remove_node(name)
        node = FakeNode(
            name=name,
            id=node_id or self.known_ids.get(name) or new_uuid(),
            roles=tuple(sorted(set(roles))),
            version=version,
        )
        self.known_ids[name] = node.id
        self.nodes[name] = node
        if node.id in self.shutdowns:
            self.shutdowns[node.id].node_seen = True
        return node

    def remove_node(self, name: str) -> None:
        """A node leaves: its copies are unassigned. A shard still started elsewhere forgets the
        node's copy (it is stale); a shard whose primary left promotes a started replica."""
        if self.nodes.pop(name, None) is None:
            return
        for copy in self.copies:
            if copy.node != name:
                continue
            copy.node, copy.last_node = None, name
            index = self.indices[copy.index]
            others = [c for c in self.copies_of(copy.key) if c.node is not None]
            if others:
                index.in_sync.setdefault(copy.shard, set()).discard(self.known_ids[name])
            if copy.primary and others:
                # A replica takes over: the old primary copy becomes an (unassigned) replica.
                copy.primary, others[0].primary = False, True

    def create_index(self, name: str, *, shards: int = 1, replicas: int = 1) -> FakeIndex:
        """A new index of ``shards`` primaries with ``replicas`` replicas each, unassigned."""
        index = FakeIndex(name=name, shards=shards, replicas=replicas)
        self.indices[name] = index
        for shard in range(shards):
            self.copies.append(ShardCopy(name, shard, primary=True))
            self.copies += [ShardCopy(name, shard, primary=False) for _ in range(replicas)]
        return index

    def delete_index(self, name: str) -> None:
        """The index and its copies go."""
        self.indices.pop(name, None)
        self.copies = [copy for copy in self.copies if copy.index != name]

    # -- allocating -----------------------------------------------------------------------------

    def _load(self, node: str) -> int:
        return sum(1 for copy in self.copies if copy.node == node)

    def _targets(self, copy: ShardCopy, rules: AllocationRules) -> list[FakeNode]:
        """The nodes ``copy`` may go to: content nodes not excluded by name, without a
        ``remove`` shutdown, holding no copy of the shard; its last node first, then the least
        loaded, then by name."""
        taken = {c.node for c in self.copies_of(copy.key) if c.node is not None}
        eligible = [
            node
            for node in self.nodes.values()
            if node.holds_content
            and not rules.excludes(node.name)
            and not self.remove_shutdown_on(node)
            and node.name not in taken
        ]
        return sorted(
            eligible,
            key=lambda node: (node.name != copy.last_node, self._load(node.name), node.name),
        )

    def _place(self, copy: ShardCopy, node: FakeNode) -> None:
        in_sync = self.indices[copy.index].in_sync.setdefault(copy.shard, set())
        if copy.node is not None:
            in_sync.discard(self.nodes[copy.node].id)
        copy.node, copy.last_node = node.name, None
        in_sync.add(node.id)

    def _assign(self, copy: ShardCopy, rules: AllocationRules) -> bool:
        """Assign an unassigned copy if the rules let it go somewhere."""
        in_sync = self.indices[copy.index].in_sync.get(copy.shard, set())
        if copy.primary and in_sync:
            # An existing primary recovers only where its data is, whatever ``enable`` and
            # the filters say (Elasticsearch force-allocates a local primary).
            taken = {c.node for c in self.copies_of(copy.key) if c.node is not None}
            holders = [
                node
                for node in self.nodes.values()
                if node.id in in_sync and node.name not in taken
            ]
            if not holders:
                return False
            self._place(copy, holders[0])
            return True
        if not rules.may_allocate(copy, new=not in_sync):
            return False
        if not copy.primary:
            primary = self.copies_of(copy.key)[0]
            if primary.node is None or self.delayed(copy):
                return False
        targets = self._targets(copy, rules)
        if not targets:
            return False
        self._place(copy, targets[0])
        return True

    def must_leave(self, copy: ShardCopy, rules: AllocationRules) -> bool:
        """Whether ``copy`` may not stay on its node: excluded by name, or a ``remove`` shutdown."""
        if copy.node is None:
            return False
        node = self.nodes[copy.node]
        return rules.excludes(node.name) or self.remove_shutdown_on(node)

    def can_move(self, copy: ShardCopy, rules: AllocationRules) -> bool:
        """Whether ``copy`` could move to another node now."""
        return rules.may_allocate(copy, new=False) and bool(self._targets(copy, rules))

    def allocate(self, rules: AllocationRules) -> None:
        """Apply the allocation rules until nothing changes (nothing while ``paused``).

        - An unassigned primary of a new shard goes to an eligible node (a content node not
          excluded by ``exclude._name``, without a ``remove`` shutdown, holding no copy of the
          shard) when ``enable`` is ``all``, ``primaries`` or ``new_primaries``; a primary that
          started before goes back only to a node holding its data, whatever the settings.
        - An unassigned replica goes to an eligible node when ``enable`` is ``all``, its primary
          is started and it is not delayed (its node left with a ``restart`` shutdown).
        - A copy on an excluded node, or on a node with a ``remove`` shutdown, moves to an
          eligible node when there is one and ``enable`` allows it (``primaries``: primaries
          only); else it stays.
        """
        if self.paused:
            return
        for _ in range(len(self.copies) + 1):
            changed = False
            for copy in sorted(self.copies, key=lambda c: not c.primary):
                if copy.node is None:
                    changed |= self._assign(copy, rules)
                elif self.must_leave(copy, rules) and self.can_move(copy, rules):
                    self._place(copy, self._targets(copy, rules)[0])
                    changed = True
            if not changed:
                return

    # -- answers --------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """The status and shard counters of ``GET _cluster/health``."""
        total = len(self.copies)
        active = sum(1 for copy in self.copies if copy.node is not None)
        primaries = [copy for copy in self.copies if copy.primary]
        unassigned_primaries = sum(1 for copy in primaries if copy.node is None)
        if unassigned_primaries:
            status = "red"
        elif active < total:
            status = "yellow"
        else:
            status = "green"
        return {
            "status": status,
            "number_of_nodes": len(self.nodes),
            "number_of_data_nodes": sum(1 for node in self.nodes.values() if node.holds_data),
            "active_primary_shards": len(primaries) - unassigned_primaries,
            "active_shards": active,
            "relocating_shards": 0,
            "initializing_shards": 0,
            "unassigned_shards": total - active,
            "unassigned_primary_shards": unassigned_primaries,
            "delayed_unassigned_shards": sum(1 for copy in self.copies if self.delayed(copy)),
            "active_shards_percent_as_number": 100.0 if not total else 100.0 * active / total,
        }

    def ordered_copies(self) -> list[ShardCopy]:
        """The copies as ``_cat/shards`` lists them: by index (creation order), by shard, the
        primary first."""
        order = {name: position for position, name in enumerate(self.indices)}
        return sorted(
            self.copies, key=lambda copy: (order.get(copy.index, 0), copy.shard, not copy.primary)
        )

    def shard_migration(self, record: FakeShutdown, rules: AllocationRules) -> dict[str, Any]:
        """The ``shard_migration`` of a shutdown record, as Elasticsearch's
        ``TransportGetShutdownStatusAction`` works it out."""
        if record.type == "RESTART":
            return _migration(
                "COMPLETE",
                remaining=0,
                explanation="no shard relocation is necessary for a node restart",
            )
        node = self.node_by_id(record.node_id)
        if node is None and not record.node_seen:
            return _migration(
                "NOT_STARTED", remaining=0, explanation="node is not currently part of the cluster"
            )
        left_behind = [
            copy
            for copy in self.ordered_copies()
            if copy.node is None
            and copy.last_node is not None
            and self.known_ids.get(copy.last_node) == record.node_id
            and (copy.primary or not self._copy_elsewhere(copy))
        ]
        if left_behind:
            return _migration(
                "STALLED",
                remaining=len(left_behind),
                explanation=_shard_text(left_behind[0], "is unassigned"),
            )
        on_node = self.copies_on(node.name) if node is not None else []
        if not on_node:
            return _migration("COMPLETE", started=0)
        stuck = [copy for copy in on_node if not self.can_move(copy, rules)]
        ignorable = [copy for copy in stuck if self._copy_elsewhere(copy)]
        unmovable = [copy for copy in stuck if not self._copy_elsewhere(copy)]
        if len(ignorable) == len(on_node):
            return _migration(
                "COMPLETE",
                remaining=0,
                explanation=f"[{len(ignorable)}] shards cannot be moved away from this node but "
                "have at least one copy on another node in the cluster",
            )
        if unmovable:
            return _migration(
                "STALLED",
                remaining=len(on_node),
                explanation=_shard_text(unmovable[0], "cannot move"),
            )
        return _migration("IN_PROGRESS", started=len(on_node))

    def _copy_elsewhere(self, copy: ShardCopy) -> bool:
        """Whether another copy of the shard is started on a node not shutting down."""
        return any(
            other is not copy
            and other.node is not None
            and self.nodes[other.node].id not in self.shutdowns
            for other in self.copies_of(copy.key)
        )


def _migration(
    status: str, *, remaining: int | None = None, started: int | None = None, explanation: str = ""
) -> dict[str, Any]:
    """A ``shard_migration`` object: with ``started``, the started/relocating/initializing
    counts (Elasticsearch prints them when it counted the node's shards)."""
    answer: dict[str, Any] = {"status": status}
    if started is not None:
        answer |= {"started_shards": started, "relocating_shards": 0, "initializing_shards": 0}
        remaining = started
    answer["shard_migrations_remaining"] = remaining or 0
    if explanation:
        answer["explanation"] = explanation
    return answer


def _shard_text(copy: ShardCopy, what: str) -> str:
    """How the shutdown status names a shard it is stuck on."""
    role = "primary" if copy.primary else "replica"
    return (
        f"shard [{copy.shard}] [{role}] of index [{copy.index}] {what}, see "
        f"[{NODE_ALLOCATION_DECISION_KEY}] for details or use the cluster allocation explain API"
    )


@dataclass
class FakeElasticsearchState:
    """What the fake answers; tests change it between calls."""

    health: str = "green"
    number_of_nodes: int = 3
    license: dict[str, Any] = field(default_factory=lambda: self_generated_license("basic"))
    unavailable: bool = False
    #: Seconds every answer is delayed (a slow cluster).
    latency: float = 0.0
    #: Elasticsearch runs a self-generated trial at most once per cluster.
    trial_activated: bool = False
    file_settings_version: int | None = None
    file_settings_errors: dict[str, Any] | None = None
    api_keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Autoscaling policies by name, as put (``{"roles", "deciders"}``).
    autoscaling_policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The ``GET _autoscaling/capacity`` answer's ``policies`` (tests set it); a policy that is
    #: put but absent here is answered with nothing required.
    autoscaling_capacity: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Persistent cluster settings, flat (``PUT _cluster/settings``; a null removes a setting),
    #: as sent (answers print them as Elasticsearch stores them: strings).
    persistent_settings: dict[str, Any] = field(default_factory=dict)
    #: Transient cluster settings, likewise.
    transient_settings: dict[str, Any] = field(default_factory=dict)
    #: The nodes, indices and shard copies (``GET _nodes``, ``_cat/shards``, and the health
    #: once it has a node), the voting exclusions and the node shutdown records.
    cluster: FakeCluster = field(default_factory=FakeCluster)
    #: Whether the node shutdown API is there (``_nodes/<id>/shutdown``). Off, as on the minimal
    #: distribution the project runs: ``GET _nodes/shutdown`` is then the nodes info API
    #: filtered on a node called ``shutdown`` (none), and ``PUT``/``DELETE`` a 405.
    shutdown_api: bool = False

    def allocation_rules(self) -> AllocationRules:
        """``enable`` and ``exclude._name`` as the cluster applies them: transient over persistent."""
        settings = {**self.persistent_settings, **self.transient_settings}
        enable = str(settings.get(ENABLE_SETTING) or "all").lower()
        excluded = settings.get(EXCLUDE_NAME_SETTING) or ""
        names = excluded if isinstance(excluded, list | tuple) else str(excluded).split(",")
        return AllocationRules(
            enable=enable, excluded=tuple(n.strip() for n in names if str(n).strip())
        )

    def reallocate(self) -> None:
        """Apply the allocation rules to the model (after any change)."""
        self.cluster.allocate(self.allocation_rules())


class FakeElasticsearch:
    """The fake server; use as ``async with FakeElasticsearch(...) as fake: fake.url``."""

    def __init__(
        self,
        *,
        username: str = "elastic",
        password: str = "changeme",
        cert_pem: bytes | None = None,
        key_pem: bytes | None = None,
        any_credentials: bool = False,
        port: int = 0,
        host: str = "127.0.0.1",
    ) -> None:
        """Configure credentials and, with ``cert_pem``/``key_pem``, TLS.

        ``any_credentials`` accepts every user (one fake standing in for many clusters, each with
        its own generated password); ``port`` binds a given port (a restart on the same address);
        ``host`` another loopback address (a Pod's IP, ``127.0.0.x``).
        """
        self.state = FakeElasticsearchState()
        self.calls: list[RecordedCall] = []
        self._credentials = (username, password)
        self._any_credentials = any_credentials
        self.port = port
        self.host = host
        self._tls = (cert_pem, key_pem) if cert_pem and key_pem else None
        self._runner: web.AppRunner | None = None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self.url = ""

    async def __aenter__(self) -> FakeElasticsearch:
        """Start serving."""
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop serving."""
        await self.stop()

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self._tls is None:
            return None
        self._tempdir = tempfile.TemporaryDirectory()
        cert_path = Path(self._tempdir.name) / "tls.crt"
        key_path = Path(self._tempdir.name) / "tls.key"
        cert_path.write_bytes(self._tls[0] or b"")
        key_path.write_bytes(self._tls[1] or b"")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_path, key_path)
        return context

    async def start(self) -> None:
        """Bind ``host`` (127.0.0.1) on a free port, or ``port``, and serve."""
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/_cluster/health", self._health)
        app.router.add_get("/_license", self._get_license)
        app.router.add_put("/_license", self._put_license)
        app.router.add_post("/_license", self._put_license)
        app.router.add_post("/_license/start_trial", self._start_trial)
        app.router.add_post("/_security/api_key", self._create_api_key)
        app.router.add_put("/_security/api_key", self._create_api_key)
        app.router.add_delete("/_security/api_key", self._invalidate_api_key)
        app.router.add_get("/_security/api_key", self._get_api_keys)
        app.router.add_get("/_cluster/state/metadata", self._cluster_state)
        app.router.add_put("/_autoscaling/policy/{name}", self._put_autoscaling_policy)
        app.router.add_get("/_autoscaling/policy/{name}", self._get_autoscaling_policy)
        app.router.add_delete("/_autoscaling/policy/{name}", self._delete_autoscaling_policy)
        app.router.add_get("/_autoscaling/capacity", self._autoscaling_capacity)
        app.router.add_put("/_cluster/settings", self._put_cluster_settings)
        app.router.add_get("/_cluster/settings", self._get_cluster_settings)
        app.router.add_post("/_security/cross_cluster/api_key", self._create_cross_cluster_key)
        app.router.add_put(
            "/_security/cross_cluster/api_key/{key_id}", self._update_cross_cluster_key
        )
        app.router.add_get("/", self._root)
        app.router.add_get("/_nodes", self._nodes_info)
        app.router.add_get("/_nodes/shutdown", self._get_shutdowns)
        app.router.add_get("/_nodes/{node_id}/shutdown", self._get_shutdowns)
        app.router.add_put("/_nodes/{node_id}/shutdown", self._put_shutdown)
        app.router.add_delete("/_nodes/{node_id}/shutdown", self._delete_shutdown)
        app.router.add_get("/_cat/shards", self._cat_shards)
        app.router.add_post("/_flush", self._flush)
        app.router.add_post("/_cluster/voting_config_exclusions", self._add_voting_exclusions)
        app.router.add_delete("/_cluster/voting_config_exclusions", self._clear_voting_exclusions)
        # Last, and never a name starting with ``_``: an index.
        app.router.add_put("/{index:[^_/][^/]*}", self._create_index)
        app.router.add_delete("/{index:[^_/][^/]*}", self._delete_index)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl_context())
        try:
            await site.start()
        except OSError:
            await self.stop()  # the address is taken: leave nothing behind
            raise
        self.port = int(self._runner.addresses[0][1])
        self.url = f"{'https' if self._tls else 'http'}://{self.host}:{self.port}"

    async def stop(self) -> None:
        """Stop serving and remove the temporary certificate files."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def api_keys_named(self, name: str) -> dict[str, bool]:
        """The API keys of ``name`` created so far: id → whether it is still valid."""
        return {
            key_id: not key["invalidated"]
            for key_id, key in self.state.api_keys.items()
            if key["name"] == name
        }

    def calls_to(self, method: str, path: str) -> list[RecordedCall]:
        """Return the recorded calls of ``method`` on ``path``."""
        return [c for c in self.calls if c.method == method and c.path == path]

    # -- the cluster model, for tests -----------------------------------------------------------

    def add_node(
        self,
        name: str,
        *,
        roles: Sequence[str] = DEFAULT_NODE_ROLES,
        version: str = DEFAULT_NODE_VERSION,
        node_id: str | None = None,
    ) -> FakeNode:
        """A node joins the cluster (a name seen before keeps its id), then shards allocate."""
        node = self.state.cluster.add_node(name, roles=roles, version=version, node_id=node_id)
        self.state.reallocate()
        return node

    def remove_node(self, name: str) -> None:
        """A node leaves: its copies are unassigned (replicas promoted), then shards allocate."""
        self.state.cluster.remove_node(name)
        self.state.reallocate()

    def create_index(self, name: str, *, shards: int = 1, replicas: int = 1) -> FakeIndex:
        """Create an index (``shards`` primaries, ``replicas`` replicas each), then allocate."""
        index = self.state.cluster.create_index(name, shards=shards, replicas=replicas)
        self.state.reallocate()
        return index

    def delete_index(self, name: str) -> None:
        """Delete an index and its copies."""
        self.state.cluster.delete_index(name)

    def node_id(self, name: str) -> str:
        """The id of node ``name`` (in the cluster now or before)."""
        return self.state.cluster.known_ids[name]

    def copies_on(self, node: str) -> list[tuple[str, int, str]]:
        """The copies on node ``node``: ``(index, shard, "p"|"r")``."""
        return self.state.cluster.copies_by_node().get(node, [])

    def copies_by_node(self) -> dict[str, list[tuple[str, int, str]]]:
        """Every node's copies, ``(index, shard, "p"|"r")``; unassigned ones under ``""``."""
        return self.state.cluster.copies_by_node()

    def pause_allocation(self) -> None:
        """Stop assigning and moving copies until :meth:`resume_allocation`."""
        self.state.cluster.paused = True

    def resume_allocation(self) -> None:
        """Assign and move copies again, at once."""
        self.state.cluster.paused = False
        self.state.reallocate()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        self.calls.append(RecordedCall(request.method, request.path, dict(request.query), body))
        expected = "Basic " + base64.b64encode(":".join(self._credentials).encode()).decode()
        if self.state.latency:
            await asyncio.sleep(self.state.latency)  # the injected slowness itself
        authorization = request.headers.get("Authorization", "")
        if authorization.startswith("ApiKey "):
            # An API key authenticates while it is valid, whatever ``any_credentials`` says.
            encoded = authorization.removeprefix("ApiKey ")
            if not self._valid_api_key(encoded):
                return _unauthenticated(
                    "unable to authenticate with provided credentials and anonymous access is "
                    "not allowed for this request",
                    additional_unsuccessful_credentials=f"API key: {_api_key_failure(encoded)}",
                )
        elif not self._any_credentials and authorization != expected:
            if not authorization:
                return _unauthenticated(
                    f"missing authentication credentials for REST request [{request.path}]"
                )
            user = _basic_user(authorization)
            return _unauthenticated(
                f"unable to authenticate user [{user}] for REST request [{request.path}]"
            )
        if self.state.unavailable:
            return es_error(503, "master_not_discovered_exception", None)
        request[REQUEST_BODY] = body if isinstance(body, dict) else {}
        request[REQUEST_CALLER] = request.headers.get("Authorization", "")
        response: web.StreamResponse = await handler(request)
        return response

    def _valid_api_key(self, encoded: str) -> bool:
        try:
            key_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            return False
        key = self.state.api_keys.get(key_id)
        return key is not None and not key["invalidated"] and secret == f"secret-{key_id}"

    async def _health(self, request: web.Request) -> web.Response:
        counters: dict[str, Any]
        if self.state.cluster.nodes:
            counters = self.state.cluster.health()
        else:
            # No model: the status and node count tests set.
            nodes = self.state.number_of_nodes
            counters = {
                "status": self.state.health,
                "number_of_nodes": nodes,
                "number_of_data_nodes": nodes,
                "active_primary_shards": 0,
                "active_shards": 0,
                "relocating_shards": 0,
                "initializing_shards": 0,
                "unassigned_shards": 0,
                "unassigned_primary_shards": 0,
                "delayed_unassigned_shards": 0,
                "active_shards_percent_as_number": 100.0,
            }
        return web.json_response(
            {
                "cluster_name": CLUSTER_NAME,
                "status": counters["status"],
                "timed_out": False,
                "number_of_nodes": counters["number_of_nodes"],
                "number_of_data_nodes": counters["number_of_data_nodes"],
                "active_primary_shards": counters["active_primary_shards"],
                "active_shards": counters["active_shards"],
                "relocating_shards": counters["relocating_shards"],
                "initializing_shards": counters["initializing_shards"],
                "unassigned_shards": counters["unassigned_shards"],
                "unassigned_primary_shards": counters["unassigned_primary_shards"],
                "delayed_unassigned_shards": counters["delayed_unassigned_shards"],
                "number_of_pending_tasks": 0,
                "number_of_in_flight_fetch": 0,
                "task_max_waiting_in_queue_millis": 0,
                "active_shards_percent_as_number": counters["active_shards_percent_as_number"],
            }
        )

    async def _get_license(self, request: web.Request) -> web.Response:
        return web.json_response({"license": self.state.license})

    async def _put_license(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        licenses = (body or {}).get("licenses")
        if not licenses:
            return es_error(400, "parse_exception", "failed to parse licenses expected field")
        # Any signature is accepted: the fake cannot verify Elastic's, and tests put licenses
        # with made-up ones (a real node refuses them; see FAKE_ELASTICSEARCH_DIFFERENCES.md).
        self.state.license = {**licenses[0], "status": "active"}
        return web.json_response({"acknowledged": True, "license_status": "valid"})

    async def _start_trial(self, request: web.Request) -> web.Response:
        if self.state.trial_activated:
            # What Elasticsearch answers to a second trial: 403, acknowledged, not started.
            return web.json_response(
                {
                    "acknowledged": True,
                    "trial_was_started": False,
                    "error_message": "Operation failed: Trial was already activated.",
                },
                status=403,
            )
        self.state.trial_activated = True
        self.state.license = self_generated_license("trial")
        return web.json_response({"acknowledged": True, "trial_was_started": True, "type": "trial"})

    async def _create_api_key(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        key_id = f"key-{len(self.state.api_keys) + 1}"
        secret = f"secret-{key_id}"
        name = str((body or {}).get("name", ""))
        self.state.api_keys[key_id] = {
            "name": name,
            "invalidated": False,
            "request": body,
            # Returned by GET, as Elasticsearch returns a key's metadata.
            "metadata": (body or {}).get("metadata") or {},
        }
        encoded = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
        return web.json_response(
            {"id": key_id, "name": name, "api_key": secret, "encoded": encoded}
        )

    async def _invalidate_api_key(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        ids = set((body or {}).get("ids") or [])
        name = (body or {}).get("name")
        invalidated = []
        caller = request[REQUEST_CALLER]
        for key_id, key in self.state.api_keys.items():
            if key.get("caller", caller) != caller:
                continue  # another cluster's key
            if (key_id in ids or (name is not None and key["name"] == name)) and not key[
                "invalidated"
            ]:
                key["invalidated"] = True
                invalidated.append(key_id)
        return web.json_response(
            {
                "invalidated_api_keys": invalidated,
                "previously_invalidated_api_keys": [],
                "error_count": 0,
            }
        )

    def active_keys(self, prefix: str = "") -> dict[str, dict[str, Any]]:
        """The API keys not invalidated, whose name starts with ``prefix``, by id."""
        return {
            key_id: key
            for key_id, key in self.state.api_keys.items()
            if not key["invalidated"] and str(key["name"]).startswith(prefix)
        }

    async def _put_cluster_settings(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        updates = {
            "transient": _flatten(body.get("transient") or {}),
            "persistent": _flatten(body.get("persistent") or {}),
        }
        if not any(updates.values()):
            return es_error(
                400,
                "action_request_validation_exception",
                "Validation Failed: 1: no settings to update;",
            )
        # Elasticsearch checks the transient settings first and names the first unknown one of
        # a scope in sorted order.
        for scope, settings in updates.items():
            unknown = sorted(name for name in settings if not known_cluster_setting(name))
            if unknown:
                return es_error(
                    400,
                    "illegal_argument_exception",
                    f"{scope} setting [{unknown[0]}], not recognized",
                )
        for settings in updates.values():
            enable = settings.get(ENABLE_SETTING)
            if enable is not None and str(enable).lower() not in ALLOCATION_ENABLE_VALUES:
                return es_error(
                    400,
                    "illegal_argument_exception",
                    "No enum constant org.elasticsearch.cluster.routing.allocation.decider."
                    f"EnableAllocationDecider.Allocation.{str(enable).upper()}",
                )
        stores = {
            "transient": self.state.transient_settings,
            "persistent": self.state.persistent_settings,
        }
        for scope, settings in updates.items():
            for setting, value in settings.items():
                if value is None:
                    stores[scope].pop(setting, None)
                else:
                    stores[scope][setting] = value
        self.state.reallocate()
        # The answer echoes what was set (not what was removed), nested, as strings.
        applied = {
            scope: _nested({name: value for name, value in settings.items() if value is not None})
            for scope, settings in updates.items()
        }
        return web.json_response(
            {
                "acknowledged": True,
                "persistent": applied["persistent"],
                "transient": applied["transient"],
            }
        )

    async def _get_cluster_settings(self, request: web.Request) -> web.Response:
        render = _stored if request.query.get("flat_settings") == "true" else _nested
        return web.json_response(
            {
                "persistent": render(self.state.persistent_settings),
                "transient": render(self.state.transient_settings),
            }
        )

    async def _create_cross_cluster_key(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        key_id = f"key-{len(self.state.api_keys) + 1}"
        secret = f"secret-{key_id}"
        name = str(body.get("name", ""))
        self.state.api_keys[key_id] = {
            "name": name,
            "invalidated": False,
            "request": body,
            "type": "cross_cluster",
            "caller": request[REQUEST_CALLER],
            "access": body.get("access") or {},
            "metadata": body.get("metadata") or {},
        }
        encoded = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
        return web.json_response(
            {"id": key_id, "name": name, "api_key": secret, "encoded": encoded}
        )

    async def _update_cross_cluster_key(self, request: web.Request) -> web.Response:
        key = self.state.api_keys.get(request.match_info["key_id"])
        if key is None or key["invalidated"] or key.get("caller") != request[REQUEST_CALLER]:
            reason = (
                f"no API key owned by requesting user found for ID [{request.match_info['key_id']}]"
            )
            return es_error(404, "resource_not_found_exception", reason)
        body = request[REQUEST_BODY]
        key["access"] = body.get("access") or {}
        key["metadata"] = body.get("metadata") or {}
        return web.json_response({"updated": True})

    async def _get_api_keys(self, request: web.Request) -> web.Response:
        # By id and by name (an Elasticsearch wildcard pattern), only the caller's own keys
        # (one fake stands in for every cluster), invalidated ones unless ``active_only``.
        wanted_id = request.query.get("id")
        pattern = request.query.get("name", "*")
        active_only = request.query.get("active_only") == "true"
        caller = request[REQUEST_CALLER]
        keys = [
            {
                "id": key_id,
                "name": key["name"],
                "invalidated": key["invalidated"],
                "metadata": key.get("metadata") or {},
            }
            for key_id, key in self.state.api_keys.items()
            if key.get("caller", caller) == caller
            and not (active_only and key["invalidated"])
            and (wanted_id is None or key_id == wanted_id)
            and fnmatch.fnmatchcase(str(key["name"]), pattern)
        ]
        return web.json_response({"api_keys": keys})

    async def _cluster_state(self, request: web.Request) -> web.Response:
        # ``GET _cluster/state/metadata``: the cluster's uuid, its coordination metadata (the
        # voting configuration and its exclusions) and, once a test set a version, the file
        # settings state; narrowed by ``filter_path`` as Elasticsearch narrows it.
        cluster = self.state.cluster
        masters = [node.id for node in cluster.nodes.values() if node.master_eligible]
        metadata: dict[str, Any] = {
            "cluster_uuid": cluster.uuid,
            "cluster_uuid_committed": True,
            "cluster_coordination": {
                "term": 1,
                "last_committed_config": masters,
                "last_accepted_config": masters,
                "voting_config_exclusions": [
                    {"node_id": node_id, "node_name": name}
                    for node_id, name in cluster.voting_exclusions
                ],
            },
        }
        if self.state.file_settings_version is not None:
            metadata["reserved_state"] = {
                "file_settings": {
                    "version": self.state.file_settings_version,
                    "handlers": {},
                    "errors": self.state.file_settings_errors,
                }
            }
        return web.json_response(
            filter_path({"metadata": metadata}, request.query.get("filter_path"))
        )

    async def _root(self, request: web.Request) -> web.Response:
        # ``GET /`` of a full distribution: the answering node (the first to have joined).
        node = next(iter(self.state.cluster.nodes.values()), None)
        version = node.version if node is not None else DEFAULT_NODE_VERSION
        head = version.split(".")[0]
        nine = head.isdigit() and int(head) >= 9
        return web.json_response(
            {
                "name": node.name if node is not None else "fake-node",
                "cluster_name": CLUSTER_NAME,
                "cluster_uuid": self.state.cluster.uuid,
                "version": {
                    "number": version,
                    "build_flavor": "default",
                    "build_type": "tar",
                    "build_hash": "0" * 40,
                    "build_date": "2024-12-11T12:08:05.663969764Z",
                    "build_snapshot": False,
                    "lucene_version": "10.2.2" if nine else "9.12.0",
                    "minimum_wire_compatibility_version": "8.19.0" if nine else "7.17.0",
                    "minimum_index_compatibility_version": "8.0.0" if nine else "7.0.0",
                },
                "tagline": "You Know, for Search",
            }
        )

    def _nodes_document(self, *, only: Sequence[str] | None = None) -> dict[str, Any]:
        """``GET _nodes`` (the fields the fake knows of each node); ``only``: node filters."""
        nodes = [
            node
            for node in self.state.cluster.nodes.values()
            if only is None or node.id in only or node.name in only
        ]
        return {
            "_nodes": {"total": len(nodes), "successful": len(nodes), "failed": 0},
            "cluster_name": CLUSTER_NAME,
            "nodes": {
                node.id: {
                    "name": node.name,
                    "transport_address": f"{self.host}:9300",
                    "host": self.host,
                    "ip": self.host,
                    "version": node.version,
                    "build_flavor": "default",
                    "build_type": "tar",
                    "roles": list(node.roles),
                    "attributes": {},
                }
                for node in nodes
            },
        }

    async def _nodes_info(self, request: web.Request) -> web.Response:
        document = self._nodes_document()
        return web.json_response(filter_path(document, request.query.get("filter_path")))

    def _shutdown_record(self, record: FakeShutdown) -> dict[str, Any]:
        migration = self.state.cluster.shard_migration(record, self.state.allocation_rules())
        answer: dict[str, Any] = {
            "node_id": record.node_id,
            "type": record.type,
            "reason": record.reason,
            "shutdown_startedmillis": record.started_millis,
        }
        if record.allocation_delay is not None:
            answer["allocation_delay"] = record.allocation_delay
        return answer | {
            "status": migration["status"],
            "shard_migration": migration,
            "persistent_tasks": {"status": "COMPLETE"},
            "plugins": {"status": "COMPLETE"},
        }

    async def _get_shutdowns(self, request: web.Request) -> web.Response:
        if not self.state.shutdown_api:
            # Without the shutdown module, ``shutdown`` is a node filter of the nodes info API.
            document = self._nodes_document(only=("shutdown",))
            return web.json_response(filter_path(document, request.query.get("filter_path")))
        wanted = request.match_info.get("node_id")
        ids = None if wanted in (None, "_all") else set(str(wanted).split(","))
        records = [
            self._shutdown_record(record)
            for node_id, record in self.state.cluster.shutdowns.items()
            if ids is None or node_id in ids
        ]
        return web.json_response({"nodes": records})

    def _no_shutdown_api(self, request: web.Request) -> web.Response:
        # What a node without the shutdown module answers: the path is the nodes info API's.
        return web.json_response(
            {
                "error": f"Incorrect HTTP method for uri [{request.path_qs}] and method "
                f"[{request.method}], allowed: [GET]",
                "status": 405,
            },
            status=405,
            headers={"Allow": "GET"},
        )

    async def _put_shutdown(self, request: web.Request) -> web.Response:
        if not self.state.shutdown_api:
            return self._no_shutdown_api(request)
        node_id = request.match_info["node_id"]
        body = request[REQUEST_BODY]
        type_ = str(body.get("type") or "").upper()
        if type_ and type_ not in ("RESTART", "REMOVE", "REPLACE", "SIGTERM"):
            return es_error(400, "illegal_argument_exception", f"unknown shutdown type [{type_}]")
        errors = []
        if not type_:
            errors.append("the shutdown type is required")
        if not body.get("reason"):
            errors.append("the reason for shutdown is required")
        if body.get("allocation_delay") is not None and type_ != "RESTART":
            errors.append("allocation_delay is only allowed for RESTART-type shutdown requests")
        if type_ == "REPLACE" and not body.get("target_node_name"):
            errors.append("target node name is required for REPLACE type shutdowns")
        if errors:
            listed = "".join(f"{n}: {e};" for n, e in enumerate(errors, start=1))
            return es_error(
                400, "action_request_validation_exception", f"Validation Failed: {listed}"
            )
        cluster = self.state.cluster
        cluster.shutdowns[node_id] = FakeShutdown(
            node_id=node_id,
            type=type_,
            reason=str(body["reason"]),
            started_millis=int(time.time() * 1000),
            allocation_delay=body.get("allocation_delay"),
            node_seen=cluster.node_by_id(node_id) is not None,
        )
        self.state.reallocate()
        return web.json_response({"acknowledged": True})

    async def _delete_shutdown(self, request: web.Request) -> web.Response:
        if not self.state.shutdown_api:
            return self._no_shutdown_api(request)
        node_id = request.match_info["node_id"]
        if self.state.cluster.shutdowns.pop(node_id, None) is None:
            return es_error(
                404,
                "resource_not_found_exception",
                f"node [{node_id}] is not currently shutting down",
            )
        self.state.reallocate()
        return web.json_response({"acknowledged": True})

    async def _cat_shards(self, request: web.Request) -> web.Response:
        if not self.state.cluster.nodes:
            # No node, no elected master: the routing table cannot be read. (Tests that script
            # the health alone thus leave the orchestration without a view of the cluster.)
            return es_error(503, "master_not_discovered_exception", None)
        columns = [c for c in request.query.get("h", "").split(",") if c] or list(
            CAT_SHARDS_COLUMNS
        )
        unknown = [column for column in columns if column not in CAT_SHARDS_COLUMNS]
        if unknown:
            return es_error(
                400, "illegal_argument_exception", f"unable to find header field [{unknown[0]}]"
            )
        rows = [
            {column: CAT_SHARDS_COLUMNS[column](copy, self.host) for column in columns}
            for copy in self.state.cluster.ordered_copies()
        ]
        if request.query.get("format") == "json":
            return web.json_response(rows)
        text = "".join(
            " ".join("" if row[c] is None else str(row[c]) for c in columns) + "\n" for row in rows
        )
        return web.Response(text=text, content_type="text/plain")

    async def _flush(self, request: web.Request) -> web.Response:
        copies = self.state.cluster.copies
        started = sum(1 for copy in copies if copy.node is not None)
        return web.json_response(
            {"_shards": {"total": len(copies), "successful": started, "failed": 0}}
        )

    async def _add_voting_exclusions(self, request: web.Request) -> web.Response:
        names = [n for n in request.query.get("node_names", "").split(",") if n]
        ids = [n for n in request.query.get("node_ids", "").split(",") if n]
        if bool(names) == bool(ids):
            return es_error(
                400,
                "illegal_argument_exception",
                "You must set [node_names] or [node_ids] but not both",
            )
        cluster = self.state.cluster
        existing = len(cluster.voting_exclusions)
        requested = names or ids
        if existing + len(requested) > MAX_VOTING_EXCLUSIONS:
            kind = "named" if names else "with ids"
            return es_error(
                400,
                "illegal_argument_exception",
                f"add voting config exclusions request for nodes {kind} [{', '.join(requested)}] "
                f"would add [{len(requested)}] exclusions to the existing [{existing}] which "
                f"would exceed the maximum of [{MAX_VOTING_EXCLUSIONS}] set by "
                "[cluster.max_voting_config_exclusions]",
            )
        for name in names:
            node = cluster.nodes.get(name)
            entry = (node.id if node is not None else ABSENT_NODE_ID, name)
            if entry not in cluster.voting_exclusions:
                cluster.voting_exclusions.append(entry)
        for node_id in ids:
            found = cluster.node_by_id(node_id)
            entry = (node_id, found.name if found is not None else "_absent_")
            if entry not in cluster.voting_exclusions:
                cluster.voting_exclusions.append(entry)
        # The exclusions take effect once no excluded node is in the voting configuration: the
        # configuration shrinks to the master-eligible nodes not excluded, if there is one.
        excluded = {node_id for node_id, _ in cluster.voting_exclusions}
        masters = [node for node in cluster.nodes.values() if node.master_eligible]
        if masters and all(node.id in excluded for node in masters):
            return es_error(
                500,
                "timeout_exception",
                "timed out waiting for voting config exclusions to take effect",
            )
        return web.Response(status=200)

    async def _clear_voting_exclusions(self, request: web.Request) -> web.Response:
        cluster = self.state.cluster
        if request.query.get("wait_for_removal", "true") != "false":
            present = [
                (node_id, name)
                for node_id, name in cluster.voting_exclusions
                if cluster.node_by_id(node_id) is not None
            ]
            if present:
                listed = ", ".join(f"{{{name}}}{{{node_id}}}" for node_id, name in present)
                return es_error(
                    500,
                    "elasticsearch_timeout_exception",
                    "timed out waiting for removal of nodes; if nodes should not be removed, "
                    f"set ?wait_for_removal=false. [{listed}]",
                )
        cluster.voting_exclusions.clear()
        return web.Response(status=200)

    async def _create_index(self, request: web.Request) -> web.Response:
        name = request.match_info["index"]
        cluster = self.state.cluster
        if name in cluster.indices:
            index_uuid = cluster.indices[name].uuid
            return es_error(
                400,
                "resource_already_exists_exception",
                f"index [{name}/{index_uuid}] already exists",
                details={"index_uuid": index_uuid, "index": name},
            )
        settings = _flatten(request[REQUEST_BODY].get("settings") or {})
        shards = settings.get("index.number_of_shards", settings.get("number_of_shards", 1))
        replicas = settings.get("index.number_of_replicas", settings.get("number_of_replicas", 1))
        self.create_index(name, shards=int(shards), replicas=int(replicas))
        return web.json_response({"acknowledged": True, "shards_acknowledged": True, "index": name})

    async def _delete_index(self, request: web.Request) -> web.Response:
        name = request.match_info["index"]
        if name not in self.state.cluster.indices:
            return es_error(
                404,
                "index_not_found_exception",
                f"no such index [{name}]",
                details={
                    "resource.type": "index_or_alias",
                    "resource.id": name,
                    "index_uuid": "_na_",
                    "index": name,
                },
            )
        self.delete_index(name)
        return web.json_response({"acknowledged": True})

    async def _put_autoscaling_policy(self, request: web.Request) -> web.Response:
        self.state.autoscaling_policies[request.match_info["name"]] = request[REQUEST_BODY]
        return web.json_response({"acknowledged": True})

    async def _get_autoscaling_policy(self, request: web.Request) -> web.Response:
        policy = self.state.autoscaling_policies.get(request.match_info["name"])
        if policy is None:
            return _not_found(request.match_info["name"])
        return web.json_response(policy)

    async def _delete_autoscaling_policy(self, request: web.Request) -> web.Response:
        pattern = request.match_info["name"]
        matching = [
            name for name in self.state.autoscaling_policies if fnmatch.fnmatchcase(name, pattern)
        ]
        if not matching:
            return _not_found(pattern)
        for name in matching:
            del self.state.autoscaling_policies[name]
        return web.json_response({"acknowledged": True})

    async def _autoscaling_capacity(self, request: web.Request) -> web.Response:
        nothing: dict[str, Any] = {"node": {}, "total": {}}
        policies = {
            name: self.state.autoscaling_capacity.get(
                name,
                {
                    "required_capacity": nothing,
                    "current_capacity": nothing,
                    "current_nodes": [],
                    "deciders": {},
                },
            )
            for name in self.state.autoscaling_policies
        }
        return web.json_response({"policies": policies})


#: The ``_cat/shards`` columns the fake knows (``h``), in Elasticsearch's default order, and how
#: each is read off a copy (given the node's address).
CAT_SHARDS_COLUMNS: dict[str, Any] = {
    "index": lambda copy, host: copy.index,
    "shard": lambda copy, host: str(copy.shard),
    "prirep": lambda copy, host: "p" if copy.primary else "r",
    "state": lambda copy, host: copy.state,
    "docs": lambda copy, host: "0" if copy.node is not None else None,
    "store": lambda copy, host: "249b" if copy.node is not None else None,
    "ip": lambda copy, host: host if copy.node is not None else None,
    "node": lambda copy, host: copy.node,
}

_FILTERED_OUT = object()


def filter_path(document: Any, paths: str | None) -> Any:
    """``document`` narrowed as Elasticsearch's ``filter_path`` narrows an answer: comma-separated
    dotted paths, ``*`` matching within a key and ``**`` any depth; lists are looked through;
    what a path ends on is kept whole (an empty list too); nothing kept answers ``{}``."""
    if not paths:
        return document
    patterns = [path.split(".") for path in paths.split(",") if path]
    kept = _filtered(document, patterns)
    return {} if kept is _FILTERED_OUT else kept


def _filtered(value: Any, patterns: list[list[str]]) -> Any:
    if any(not pattern for pattern in patterns):
        return value
    if isinstance(value, list):
        items = [_filtered(item, patterns) for item in value]
        kept_items = [item for item in items if item is not _FILTERED_OUT]
        return kept_items if kept_items else _FILTERED_OUT
    if not isinstance(value, dict):
        return _FILTERED_OUT
    out: dict[str, Any] = {}
    for key, item in value.items():
        rest: list[list[str]] = []
        for pattern in patterns:
            if pattern[0] == "**":
                rest += [pattern, pattern[1:]]
            elif simple_match(pattern[0], str(key)):
                rest.append(pattern[1:])
        if rest:
            kept = _filtered(item, rest)
            if kept is not _FILTERED_OUT:
                out[key] = kept
    return out if out else _FILTERED_OUT


def _not_found(name: str) -> web.Response:
    """Elasticsearch's answer for an autoscaling policy that does not exist."""
    reason = f"autoscaling policy with name [{name}] does not exist"
    return es_error(404, "resource_not_found_exception", reason)


def _basic_user(authorization: str) -> str:
    """The user name of a ``Basic`` Authorization header ("" when it has none)."""
    try:
        decoded = base64.b64decode(authorization.removeprefix("Basic "), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""
    return decoded.partition(":")[0]


def _api_key_failure(encoded: str) -> str:
    """Why Elasticsearch says an ``ApiKey`` credential failed (it names the key's id)."""
    try:
        key_id = base64.b64decode(encoded, validate=True).decode().partition(":")[0]
    except (binascii.Error, UnicodeDecodeError):
        return "the API key credential is malformed"
    return f"apikey authentication for id {key_id} encountered a failure"


def known_cluster_setting(name: str) -> bool:
    """Whether the fake accepts a dynamic cluster setting (see ``KNOWN_CLUSTER_SETTINGS``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in KNOWN_CLUSTER_SETTINGS)


def _setting_text(value: Any) -> Any:
    """A setting's value as Elasticsearch stores it: a string, or a list of strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return [_setting_text(item) for item in value]
    return value if isinstance(value, str) else str(value)


def _stored(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Flat settings as Elasticsearch prints them with ``flat_settings=true``."""
    return {name: _setting_text(value) for name, value in sorted(settings.items())}


def _nested(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Flat settings as Elasticsearch prints them by default: nested at the dots."""
    nested: dict[str, Any] = {}
    for name, value in sorted(settings.items()):
        *parents, leaf = name.split(".")
        node = nested
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break  # a setting that is also another's prefix: the shorter one is kept
            node = child
        else:
            node[leaf] = _setting_text(value)
    return nested


def _flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as Elasticsearch stores them: dotted keys."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


class UnreachableElasticsearch(NotDialledElasticsearch):
    """A client of a cluster that never answers: every call raises ``ElasticsearchUnavailable``.

    For activity tests that do not care about the cluster's HTTP API (the reconcile reports the
    cluster "not reachable" and derives health from Pod readiness), without a network round trip.
    The operator's own never-dialling client, naming the cluster's address in each error.
    """

    def __init__(self, endpoint: ElasticsearchEndpoint) -> None:
        """Remember which cluster was asked for (the error names it)."""
        super().__init__(f"{endpoint.url} is unreachable (test fake)")
        self.endpoint = endpoint


def unreachable_elasticsearch(endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
    """An ``ElasticsearchApiFactory`` whose clusters never answer (see ``UnreachableElasticsearch``)."""
    return UnreachableElasticsearch(endpoint)
