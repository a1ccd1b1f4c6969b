"""The pure rules of ECK's remote clusters (``spec.remoteClusters`` on an Elasticsearch).

A *client* cluster lists ``{name: <alias>, elasticsearchRef: {name, namespace?}, apiKey?}``
entries; each names a *remote* cluster. Everything here is value in, value out: the reconciler
(not written yet) reads the objects, calls these functions and writes what they return.

Assumptions, where ECK's behaviour was not checked line by line against its source:

* Certificate-based remotes are reached in sniff mode through the remote's transport Service
  (``<remote>-es-transport.<ns>.svc:9300``); API-key based remotes (8.10+, ``apiKey`` set) in
  proxy mode through the remote cluster server Service (``<remote>-es-remote-cluster.<ns>.svc:9443``).
  The settings of the other mode are set to null so that a switch between modes is accepted by
  Elasticsearch, which refuses sniff settings on a proxy-mode remote and the other way round.
* The managed-aliases annotation holds a JSON list of aliases, sorted; reading also accepts a
  comma-joined list (the older ECK format) so that an annotation written that way is not lost.
* The remote CA bundle is split into PEM blocks before deduplication, so that one CA shared by two
  related clusters (or listed twice in one PEM) appears once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.elasticsearch.names import transport_service_name
from stackflow.stack.elasticsearch.version import parse_version
from stackflow.stack.naming import ES_NAMER

MANAGED_REMOTE_CLUSTERS_ANNOTATION = "elasticsearch.k8s.elastic.co/managed-remote-clusters"
"""Annotation on the client cluster listing the aliases the operator has configured."""

TRANSPORT_PORT = 9300
REMOTE_CLUSTER_SERVER_PORT = 9443
REMOTE_CA_SECRET_KEY = "ca.crt"

SNIFF_MODE = "sniff"
PROXY_MODE = "proxy"

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


def seed_address(remote: RemoteClusterRef) -> str:
    """Return the sniff-mode seed of a certificate-based remote: its transport Service on 9300."""
    return f"{transport_service_name(remote.name)}.{remote.namespace}.svc:{TRANSPORT_PORT}"


def proxy_address(remote: RemoteClusterRef) -> str:
    """Return the proxy address of an API-key based remote: its remote cluster Service on 9443."""
    service = remote_cluster_service_name(remote.name)
    return f"{service}.{remote.namespace}.svc:{REMOTE_CLUSTER_SERVER_PORT}"


def _settings_of(alias: str, mode: object, seeds: object, proxy: object) -> dict[str, object]:
    prefix = f"cluster.remote.{alias}"
    return {f"{prefix}.mode": mode, f"{prefix}.seeds": seeds, f"{prefix}.proxy_address": proxy}


def remote_cluster_settings(
    desired: Sequence[RemoteClusterRef], previously_managed: Iterable[str], version: str
) -> dict[str, object]:
    """Return the persistent cluster settings update for ``desired`` remotes.

    Each desired alias gets its mode's settings and the other mode's settings set to null;
    aliases in ``previously_managed`` but no longer desired (removed or renamed) get all three
    set to null, which deletes them. API-key mode is used only when ``version`` supports it.
    When two entries share an alias the first wins (the webhook rejects duplicates).
    """
    api_keys_supported = supports_api_keys(version)
    settings: dict[str, object] = {}
    desired_aliases: set[str] = set()
    for remote in desired:
        if remote.alias in desired_aliases:
            continue
        desired_aliases.add(remote.alias)
        if remote.uses_api_key and api_keys_supported:
            settings.update(_settings_of(remote.alias, PROXY_MODE, None, proxy_address(remote)))
        else:
            # mode null resets to the default, sniff, without naming it.
            settings.update(_settings_of(remote.alias, None, [seed_address(remote)], None))
    for alias in sorted(set(previously_managed) - desired_aliases):
        settings.update(_settings_of(alias, None, None, None))
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

    The value is a JSON list; a value that is not one is read as a comma-joined list.
    """
    raw = (annotations or {}).get(MANAGED_REMOTE_CLUSTERS_ANNOTATION, "")
    if not raw.strip():
        return []
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = None
    if isinstance(decoded, list):
        aliases = [str(alias) for alias in decoded]
    elif isinstance(decoded, dict):
        # A JSON object keyed by alias (another format ECK has used) keeps its keys.
        aliases = [str(alias) for alias in decoded]
    else:
        aliases = raw.split(",")
    return sorted({alias.strip() for alias in aliases if alias.strip()})


def managed_aliases_annotation(aliases: Iterable[str]) -> dict[str, str]:
    """Return the annotation recording ``aliases`` as a sorted, unique JSON list."""
    value = json.dumps(sorted(set(aliases)), separators=(",", ":"))
    return {MANAGED_REMOTE_CLUSTERS_ANNOTATION: value}


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


def remote_ca_bundle(related: Iterable[ClusterKey], transport_cas: Mapping[ClusterKey, str]) -> str:
    """Return the ``<es>-es-remote-ca`` bundle: the related clusters' transport CAs, concatenated.

    Clusters are taken in ``(namespace, name)`` order and certificates in file order, each
    certificate once (related clusters may share a CA), so that the Secret only changes when a
    CA does. A related cluster without a known CA is skipped until its CA is published.
    """
    seen: set[str] = set()
    bundle: list[str] = []
    for key in sorted(set(related)):
        for block in pem_blocks(transport_cas.get(key, "")):
            if block not in seen:
                seen.add(block)
                bundle.append(block + "\n")
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


def enterprise_disabled_event() -> WarningEvent:
    """Return the Warning Event recorded on a client cluster declaring remotes while unlicensed."""
    return WarningEvent(
        type=ENTERPRISE_EVENT_TYPE,
        reason=ENTERPRISE_EVENT_REASON,
        message=ENTERPRISE_EVENT_MESSAGE,
    )
