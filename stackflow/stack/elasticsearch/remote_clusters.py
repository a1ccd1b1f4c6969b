"""The pure rules of ECK's remote clusters (``spec.remoteClusters`` on an Elasticsearch).

A *client* cluster lists ``{name: <alias>, elasticsearchRef: {name, namespace?}, apiKey?}``
entries; each names a *remote* cluster. Everything here is value in, value out: the reconciler
(``activities/remoteclusters.py``) reads the objects, calls these functions and writes what they
return.

As ECK (``pkg/controller/elasticsearch/remotecluster``, ``certificates/remoteca``), so that a
cluster ECK configured is adopted without a settings or Secret change:

* Only ``cluster.remote.<alias>.seeds`` is written, in both modes (ECK never sets ``mode`` or
  ``proxy_address``): the transport Service ``<remote>-es-transport.<ns>.svc:9300`` for
  certificate-based remotes, the remote cluster server Service
  ``<remote>-es-remote-cluster.<ns>.svc:9443`` when ``apiKey`` is set. A removed alias gets
  ``seeds: null``, which makes Elasticsearch drop the remote.
* The managed-aliases annotation is ECK's: aliases sorted and comma-joined, removed when empty.
* The remote CA bundle is ordered as ECK orders its per-remote CA Secrets
  (``<es>-<ns>-<name>-es-remote-ca``, by name, so by ``<ns>-<name>``) and falls back to the
  cluster's own transport CA when empty, so that the mounted file is never empty.

Where this differs from ECK, on purpose:

* API-key mode is used only from 8.10.0; below it an ``apiKey`` entry falls back to the transport
  seeds (ECK's webhook rejects such a spec, so ECK never meets the case).
* The bundle is split into PEM blocks and each certificate kept once (ECK concatenates as is), so
  that a CA shared by two related clusters appears once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.stack.elasticsearch.names import transport_service_name
from stackflow.stack.labels import (
    CREDENTIALS_LABEL,
    ES_CLUSTER_NAME_LABEL,
    MANAGED_BY_ECK,
    METADATA_MANAGED_BY,
    TYPE_LABEL,
)
from stackflow.stack.naming import ES_NAMER
from stackflow.stack.objects import decode_secret_data
from stackflow.stack.version import parse_version

MANAGED_REMOTE_CLUSTERS_ANNOTATION = "elasticsearch.k8s.elastic.co/managed-remote-clusters"
"""Annotation on the client cluster listing the aliases the operator has configured."""

TRANSPORT_PORT = 9300
REMOTE_CLUSTER_SERVER_PORT = 9443
REMOTE_CA_SECRET_KEY = "ca.crt"

ENTERPRISE_EVENT_TYPE = "Warning"
ENTERPRISE_EVENT_REASON = "AssociationError"
ENTERPRISE_EVENT_MESSAGE = (
    "Remote cluster is an enterprise feature. Enterprise features are disabled"
)

_PEM_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?-----END [A-Z0-9 ]+-----", re.DOTALL)

ClusterKey = tuple[str, str]
"""An Elasticsearch cluster's ``(namespace, name)``."""


@dataclass(frozen=True)
class RemoteClusterRef:
    """One well-formed ``spec.remoteClusters`` entry, its namespace defaulted to the client's."""

    alias: str
    namespace: str
    name: str
    # Left out of equality and hashing: a mapping is unhashable, and the key is what identifies
    # an entry; compare ``uses_api_key`` when the mode matters.
    api_key_access: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def key(self) -> ClusterKey:
        """The remote cluster's ``(namespace, name)``."""
        return self.namespace, self.name

    @property
    def uses_api_key(self) -> bool:
        """Whether the entry asks for a cross-cluster API key (``apiKey`` is set)."""
        return self.api_key_access is not None


@dataclass(frozen=True)
class WarningEvent:
    """A Kubernetes Event to record on an object (``type``, ``reason``, ``message``)."""

    type: str
    reason: str
    message: str


def cluster_key(es: Mapping[str, Any]) -> ClusterKey:
    """Return an Elasticsearch object's ``(namespace, name)``."""
    meta = view(es)
    return meta.namespace, meta.name


def remote_cluster_refs(es: Mapping[str, Any]) -> list[RemoteClusterRef]:
    """Return the well-formed ``spec.remoteClusters`` entries of ``es``, in spec order.

    Entries without an alias or without ``elasticsearchRef.name`` are skipped: the validation
    webhook rejects them, and a reconciler must not fail on a cluster it cannot fix.
    """
    own_namespace = view(es).namespace
    spec = es.get("spec") or {}
    refs: list[RemoteClusterRef] = []
    for entry in spec.get("remoteClusters") or []:
        if not isinstance(entry, Mapping):
            continue
        alias = entry.get("name")
        es_ref = entry.get("elasticsearchRef") or {}
        name = es_ref.get("name") if isinstance(es_ref, Mapping) else None
        if not alias or not name:
            continue
        api_key = entry.get("apiKey")
        access = api_key.get("access") if isinstance(api_key, Mapping) else None
        refs.append(
            RemoteClusterRef(
                alias=str(alias),
                namespace=str(es_ref.get("namespace") or own_namespace),
                name=str(name),
                # An ``apiKey`` without ``access`` still selects API-key mode, with empty access.
                api_key_access=(access or {}) if api_key is not None else None,
            )
        )
    return refs


# --- names -------------------------------------------------------------------------------------


def remote_ca_secret_name(es_name: str) -> str:
    """Return the Secret holding the transport CAs of related clusters: ``<es>-es-remote-ca``."""
    return ES_NAMER.suffix(es_name, "remote", "ca")


def remote_api_keys_secret_name(es_name: str) -> str:
    """Return the client's cross-cluster API keys Secret: ``<es>-es-remote-api-keys``."""
    return ES_NAMER.suffix(es_name, "remote", "api", "keys")


def remote_cluster_service_name(es_name: str) -> str:
    """Return the remote cluster server Service (port 9443): ``<es>-es-remote-cluster``."""
    return ES_NAMER.suffix(es_name, "remote", "cluster")


def api_key_secret_key(alias: str) -> str:
    """Return the key of an alias's API key in the API keys Secret (a keystore setting name)."""
    return f"cluster.remote.{alias}.credentials"


# --- versions ----------------------------------------------------------------------------------


def supports_api_keys(version: str) -> bool:
    """Return whether Elasticsearch ``version`` has cross-cluster API keys (8.10.0 or later).

    An unparseable version answers ``False``: the certificate-based mode is the safe fallback.
    """
    try:
        return parse_version(version).at_least(8, 10)
    except ValueError:
        return False


# --- settings ----------------------------------------------------------------------------------


def seed_address(remote: RemoteClusterRef, version: str) -> str:
    """Return the seed of ``remote`` for a client on ``version``.

    The remote cluster server Service on 9443 for an API-key entry on 8.10+, else the transport
    Service on 9300 (certificate-based).
    """
    if remote.uses_api_key and supports_api_keys(version):
        service = remote_cluster_service_name(remote.name)
        return f"{service}.{remote.namespace}.svc:{REMOTE_CLUSTER_SERVER_PORT}"
    return f"{transport_service_name(remote.name)}.{remote.namespace}.svc:{TRANSPORT_PORT}"


def seeds_setting(alias: str) -> str:
    """Return the name of an alias's seeds setting, ``cluster.remote.<alias>.seeds``."""
    return f"cluster.remote.{alias}.seeds"


def remote_cluster_settings(
    desired: Sequence[RemoteClusterRef], previously_managed: Iterable[str], version: str
) -> dict[str, list[str] | None]:
    """Return the persistent cluster settings update for ``desired`` remotes on ``version``.

    Each desired alias gets ``seeds: [<seed>]``; aliases in ``previously_managed`` but no longer
    desired (removed, or the old name of a renamed one) get ``seeds: null``, which deletes them.
    Aliases the user added by hand are never in ``previously_managed``, so they are left alone.
    When two entries share an alias the first wins (the webhook rejects duplicates).
    """
    settings: dict[str, list[str] | None] = {}
    for remote in desired:
        settings.setdefault(seeds_setting(remote.alias), [seed_address(remote, version)])
    desired_aliases = {remote.alias for remote in desired}
    for alias in sorted(set(previously_managed) - desired_aliases):
        settings[seeds_setting(alias)] = None
    return settings


def api_keys_secret_data(
    desired: Sequence[RemoteClusterRef], encoded_keys: Mapping[str, str], version: str
) -> dict[str, str]:
    """Return the API keys Secret's data: ``cluster.remote.<alias>.credentials`` → encoded key.

    Only API-key entries on a supporting version whose key is known (in ``encoded_keys``, by
    alias) are included; an alias waiting for its key is left out rather than given a blank one.
    """
    if not supports_api_keys(version):
        return {}
    return {
        api_key_secret_key(remote.alias): encoded_keys[remote.alias]
        for remote in desired
        if remote.uses_api_key and remote.alias in encoded_keys
    }


# --- the managed aliases annotation -------------------------------------------------------------


def read_managed_aliases(annotations: Mapping[str, str] | None) -> list[str]:
    """Return the aliases recorded in the managed-remote-clusters annotation, sorted, unique.

    The value is ECK's: a comma-joined list. Blank items (a stray comma) are ignored.
    """
    raw = (annotations or {}).get(MANAGED_REMOTE_CLUSTERS_ANNOTATION, "")
    return sorted({alias.strip() for alias in raw.split(",") if alias.strip()})


def managed_aliases_annotation_patch(aliases: Iterable[str]) -> dict[str, str | None]:
    """Return the annotations merge patch recording ``aliases``: sorted, unique, comma-joined.

    No aliases left gives ``None``, which deletes the annotation in a merge patch, as ECK does.
    """
    unique = sorted(set(aliases))
    return {MANAGED_REMOTE_CLUSTERS_ANNOTATION: ",".join(unique) if unique else None}


# --- relationships and the remote CA --------------------------------------------------------------


def related_clusters(key: ClusterKey, clusters: Iterable[Mapping[str, Any]]) -> list[ClusterKey]:
    """Return the clusters in a remote-cluster relationship with ``key``, sorted, without itself.

    Both directions count: clusters ``key`` references (whether or not they exist in
    ``clusters``) and clusters in ``clusters`` whose ``remoteClusters`` reference ``key``.
    """
    related: set[ClusterKey] = set()
    for es in clusters:
        own = cluster_key(es)
        refs = remote_cluster_refs(es)
        if own == key:
            related.update(ref.key for ref in refs)
        elif any(ref.key == key for ref in refs):
            related.add(own)
    related.discard(key)
    return sorted(related)


def pem_blocks(pem: str) -> list[str]:
    """Return the PEM blocks of ``pem`` in order, each without surrounding whitespace."""
    return [block.strip() for block in _PEM_BLOCK.findall(pem)]


def _eck_ca_order(key: ClusterKey) -> tuple[str, str, str]:
    # ECK sorts the per-remote Secrets ``<es>-<ns>-<name>-es-remote-ca`` by name; the tuple
    # breaks the ties that joining with "-" creates ("a-b"/"c" and "a"/"b-c").
    namespace, name = key
    return f"{namespace}-{name}", namespace, name


def remote_ca_bundle(
    related: Iterable[ClusterKey],
    transport_cas: Mapping[ClusterKey, str],
    own_transport_ca: str = "",
) -> str:
    """Return the ``<es>-es-remote-ca`` bundle: the related clusters' transport CAs, concatenated.

    Clusters are taken in ECK's order and certificates in file order, each certificate once
    (related clusters may share a CA), so that the Secret only changes when a CA does. A related
    cluster without a known CA is skipped until its CA is published. When nothing is left the
    cluster's own transport CA is used, as ECK does, so that the mounted file is never empty.
    """
    seen: set[str] = set()
    bundle: list[str] = []
    for key in sorted(set(related), key=_eck_ca_order):
        for block in pem_blocks(transport_cas.get(key, "")):
            if block not in seen:
                seen.add(block)
                bundle.append(block + "\n")
    if not bundle:
        bundle = [block + "\n" for block in pem_blocks(own_transport_ca)]
    return "".join(bundle)


# --- the namespace flip mapper ---------------------------------------------------------------------


def flip_clusters(namespace: str, clusters: Sequence[Mapping[str, Any]]) -> list[ClusterKey]:
    """Return the clusters to reconcile when ``namespace``'s scope flips, sorted.

    They are the clusters in ``namespace``, the remotes they declare wherever they live (their
    remote CA Secret lists clients that may have appeared or gone), and clusters elsewhere whose
    ``remoteClusters`` reference a cluster in ``namespace``. Declared remotes that do not exist
    are returned too: a reconcile of a missing object is a no-op.
    """
    woken: set[ClusterKey] = set()
    for es in clusters:
        own = cluster_key(es)
        refs = remote_cluster_refs(es)
        if own[0] == namespace:
            woken.add(own)
            woken.update(ref.key for ref in refs)
        elif any(ref.namespace == namespace for ref in refs):
            woken.add(own)
    return sorted(woken)


# --- licensing -------------------------------------------------------------------------------------


def enterprise_disabled_event(
    es: Mapping[str, Any], enterprise_enabled: bool
) -> WarningEvent | None:
    """Return the Warning Event to record on ``es`` for its remote clusters, or ``None``.

    As ECK: only a cluster declaring (well-formed) remotes while enterprise features are disabled
    gets one; its remote cluster settings are then left as they are.
    """
    if enterprise_enabled or not remote_cluster_refs(es):
        return None
    return WarningEvent(
        type=ENTERPRISE_EVENT_TYPE,
        reason=ENTERPRISE_EVENT_REASON,
        message=ENTERPRISE_EVENT_MESSAGE,
    )


# --- the per-peer remote CA copies -------------------------------------------------------------------

REMOTE_CA_TYPE = "remote-ca"
"""``common.k8s.elastic.co/type`` of a per-peer remote CA copy."""
REMOTE_CLUSTER_NAME_LABEL = "elasticsearch.k8s.elastic.co/remote-cluster-name"
REMOTE_CLUSTER_NAMESPACE_LABEL = "elasticsearch.k8s.elastic.co/remote-cluster-namespace"
REMOTE_CA_SELECTOR = f"{TYPE_LABEL}={REMOTE_CA_TYPE}"
"""Selects every per-peer remote CA copy (whatever cluster it belongs to)."""


def remote_ca_copy_name(local_name: str, remote: ClusterKey) -> str:
    """Return the copy of ``remote``'s transport CA in ``local``'s namespace, as ECK names it:
    ``<local>-<remoteNs>-<remote>-es-remote-ca``."""
    namespace, name = remote
    return ES_NAMER.suffix(f"{local_name}-{namespace}-{name}", "remote", "ca")


def remote_ca_copy_labels(local_name: str, remote: ClusterKey) -> dict[str, str]:
    """Return ECK's labels of a remote CA copy: its type, its cluster, the peer it trusts."""
    namespace, name = remote
    return {
        TYPE_LABEL: REMOTE_CA_TYPE,
        ES_CLUSTER_NAME_LABEL: local_name,
        REMOTE_CLUSTER_NAME_LABEL: name,
        REMOTE_CLUSTER_NAMESPACE_LABEL: namespace,
    }


def remote_ca_copy_peers(secret: Mapping[str, Any]) -> tuple[ClusterKey, ClusterKey] | None:
    """Return ``(local, remote)`` of a remote CA copy, from its labels; None for another Secret."""
    meta = view(secret)
    labels = meta.labels
    local = labels.get(ES_CLUSTER_NAME_LABEL)
    name = labels.get(REMOTE_CLUSTER_NAME_LABEL)
    namespace = labels.get(REMOTE_CLUSTER_NAMESPACE_LABEL)
    if labels.get(TYPE_LABEL) != REMOTE_CA_TYPE or not local or not name or not namespace:
        return None
    return (meta.namespace, local), (namespace, name)


def remote_cas_of(local: ClusterKey, secrets: Iterable[Mapping[str, Any]]) -> dict[ClusterKey, str]:
    """Return the peers' CAs held in ``local``'s remote CA copies, by peer."""
    cas: dict[ClusterKey, str] = {}
    for secret in secrets:
        peers = remote_ca_copy_peers(secret)
        if peers is None or peers[0] != local:
            continue
        cas[peers[1]] = decode_secret_data(secret).get(REMOTE_CA_SECRET_KEY, b"").decode()
    return cas


# --- cross-cluster API keys -----------------------------------------------------------------------

API_KEY_NAME_PREFIX = "eck-"
API_KEYS_ANNOTATION = "elasticsearch.k8s.elastic.co/remote-cluster-api-keys"
"""On the client's API keys Secret: JSON map alias → ``{namespace, name, id}`` of the key."""
API_KEYS_TYPE = "remote-cluster-api-keys"
METADATA_CONFIG_HASH = "elasticsearch.k8s.elastic.co/config-hash"
METADATA_NAME = "elasticsearch.k8s.elastic.co/name"
METADATA_NAMESPACE = "elasticsearch.k8s.elastic.co/namespace"
METADATA_UID = "elasticsearch.k8s.elastic.co/uid"


def api_key_name(client: ClusterKey, alias: str) -> str:
    """Return the cross-cluster API key's name in the server: ``eck-<clientNs>-<client>-<alias>``."""
    namespace, name = client
    return f"{API_KEY_NAME_PREFIX}{namespace}-{name}-{alias}"


def access_hash(access: Mapping[str, Any] | None) -> str:
    """Return the config hash of an ``apiKey.access``: a change of access updates the key."""
    canonical = json.dumps(access or {}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ExpectedKey:
    """A cross-cluster API key a server must hold for one client alias."""

    client: ClusterKey
    client_uid: str
    alias: str
    access: Mapping[str, Any] = field(compare=False)

    @property
    def name(self) -> str:
        """The key's name in the server."""
        return api_key_name(self.client, self.alias)

    @property
    def config_hash(self) -> str:
        """The hash of its access, recorded in the key's metadata."""
        return access_hash(self.access)

    def metadata(self) -> dict[str, str]:
        """The key's metadata, as ECK writes it."""
        namespace, name = self.client
        return {
            METADATA_CONFIG_HASH: self.config_hash,
            METADATA_NAME: name,
            METADATA_NAMESPACE: namespace,
            METADATA_UID: self.client_uid,
            METADATA_MANAGED_BY: MANAGED_BY_ECK,
        }


def expected_api_keys(
    server: Mapping[str, Any], clusters: Iterable[Mapping[str, Any]]
) -> list[ExpectedKey]:
    """Return the keys ``server`` must hold: one per API-key alias of a client referencing it,
    when both clusters run 8.10.0 or later. Sorted by name; the first entry of an alias wins."""
    server_key = cluster_key(server)
    if not supports_api_keys(str((server.get("spec") or {}).get("version", ""))):
        return []
    expected: dict[str, ExpectedKey] = {}
    for client in clusters:
        if not supports_api_keys(str((client.get("spec") or {}).get("version", ""))):
            continue
        own = cluster_key(client)
        for ref in remote_cluster_refs(client):
            if ref.key != server_key or not ref.uses_api_key or own == server_key:
                continue
            key = ExpectedKey(
                client=own,
                client_uid=view(client).uid,
                alias=ref.alias,
                access=ref.api_key_access or {},
            )
            expected.setdefault(key.name, key)
    return [expected[name] for name in sorted(expected)]


@dataclass(frozen=True)
class ExistingKey:
    """An active API key the server reports (``GET _security/api_key``)."""

    id: str
    name: str
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def managed(self) -> bool:
        """Whether the operator made it (an ``eck-`` name and ECK's managed-by metadata)."""
        return (
            self.name.startswith(API_KEY_NAME_PREFIX)
            and self.metadata.get(METADATA_MANAGED_BY) == MANAGED_BY_ECK
        )


@dataclass(frozen=True)
class KeyPlan:
    """What to do with a server's cross-cluster API keys."""

    create: tuple[ExpectedKey, ...] = ()
    #: ``(key id, expected)``: the access changed, the key is updated in place.
    update: tuple[tuple[str, ExpectedKey], ...] = ()
    #: Ids of managed keys nobody expects any more, or whose encoded value is lost.
    invalidate: tuple[str, ...] = ()


def plan_api_keys(
    expected: Sequence[ExpectedKey],
    existing: Iterable[ExistingKey],
    stored: Mapping[tuple[ClusterKey, str], str],
) -> KeyPlan:
    """Return what to do so that the server holds exactly the ``expected`` keys.

    ``stored`` maps ``(client, alias)`` to the key id the client's API keys Secret holds. A key
    the Secret does not hold (or holds under another id) cannot be handed out again (Elasticsearch
    returns the secret part only at creation): it is invalidated and created anew. Keys the
    operator did not make are never touched.
    """
    by_name: dict[str, list[ExistingKey]] = {}
    for key in existing:
        if key.managed:
            by_name.setdefault(key.name, []).append(key)
    create: list[ExpectedKey] = []
    update: list[tuple[str, ExpectedKey]] = []
    invalidate: list[str] = []
    wanted = {key.name for key in expected}
    for want in expected:
        found = sorted(by_name.get(want.name, []), key=lambda key: key.id)
        stored_id = stored.get((want.client, want.alias))
        kept = next((key for key in found if key.id == stored_id), None)
        invalidate.extend(key.id for key in found if key is not kept)
        if kept is None:
            create.append(want)
        elif kept.metadata.get(METADATA_CONFIG_HASH) != want.config_hash:
            update.append((kept.id, want))
    for name in sorted(set(by_name) - wanted):
        invalidate.extend(sorted(key.id for key in by_name[name]))
    return KeyPlan(create=tuple(create), update=tuple(update), invalidate=tuple(invalidate))


@dataclass(frozen=True)
class StoredKey:
    """One entry of the client's API keys Secret: the server, the key id, the encoded key."""

    namespace: str
    name: str
    id: str
    encoded: str


def read_stored_keys(secret: Mapping[str, Any] | None) -> dict[str, StoredKey]:
    """Return the entries of a client's API keys Secret, by alias (annotation and data agree)."""
    if secret is None:
        return {}
    raw = view(secret).annotations.get(API_KEYS_ANNOTATION) or "{}"
    try:
        index = load_bounded_json(raw)
    except ValueError:
        return {}
    data = decode_secret_data(secret)
    stored: dict[str, StoredKey] = {}
    for alias, entry in index.items() if isinstance(index, dict) else ():
        value = data.get(api_key_secret_key(str(alias)))
        if not isinstance(entry, Mapping) or value is None:
            continue
        encoded = value.decode()
        stored[str(alias)] = StoredKey(
            namespace=str(entry.get("namespace", "")),
            name=str(entry.get("name", "")),
            id=str(entry.get("id", "")),
            encoded=encoded,
        )
    return stored


def api_keys_secret_contents(
    stored: Mapping[str, StoredKey],
) -> tuple[dict[str, str], dict[str, str]] | None:
    """Return the API keys Secret's ``(data, annotations)`` for ``stored``; None when empty (the
    Secret is deleted). Data values are plain (the caller encodes them)."""
    if not stored:
        return None
    data = {api_key_secret_key(alias): stored[alias].encoded for alias in sorted(stored)}
    index = {
        alias: {"namespace": entry.namespace, "name": entry.name, "id": entry.id}
        for alias, entry in sorted(stored.items())
    }
    return data, {API_KEYS_ANNOTATION: json.dumps(index, sort_keys=True, separators=(",", ":"))}


def api_keys_secret_labels(client_name: str) -> dict[str, str]:
    """Return ECK's labels of the client's API keys Secret."""
    return {
        TYPE_LABEL: API_KEYS_TYPE,
        ES_CLUSTER_NAME_LABEL: client_name,
        CREDENTIALS_LABEL: "true",
    }


# --- relationships of one cluster -------------------------------------------------------------------


def has_relationship(
    key: ClusterKey,
    clusters: Iterable[Mapping[str, Any]],
    *,
    managed_aliases: Iterable[str] = (),
    held_copies: Iterable[ClusterKey] = (),
) -> bool:
    """Whether the cluster has anything remote-cluster related: declared or referencing peers,
    aliases it once configured or CA copies it still holds (left to clean up)."""
    return bool(related_clusters(key, clusters) or list(managed_aliases) or list(held_copies))
