"""Desired state of an Elasticsearch cluster: every child manifest, in the order to apply them.

``desired_children`` is pure apart from the injected randomness (``random_password``, and fresh keys
and salts when nothing reusable exists): given the cluster, its current children and the clock it
returns the full list of manifests. Passwords, certificates and password hashes found in ``existing``
are kept, so building twice from the output of the first build returns identical manifests.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.stack.certificates import CertificateSettings, KeyPair
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.config import (
    HTTP_PORT,
    TRANSPORT_PORT,
    is_master_eligible,
    node_roles,
    operator_settings,
    render_elasticsearch_yml,
)
from stackflow.stack.elasticsearch.context import BuildContext, ExistingObjects
from stackflow.stack.elasticsearch.keystore import keystore_hash, with_keystore
from stackflow.stack.elasticsearch.orchestration.zen2 import (
    INITIAL_MASTER_NODES_ANNOTATION,
    annotated_initial_master_nodes,
    is_bootstrapped,
)
from stackflow.stack.elasticsearch.pods import headless_service, statefulset_manifest
from stackflow.stack.elasticsearch.policy import policy_config
from stackflow.stack.elasticsearch.remote_clusters import (
    REMOTE_CA_SECRET_KEY,
    REMOTE_CLUSTER_SERVER_PORT,
    remote_ca_bundle,
    remote_ca_secret_name,
    remote_cas_of,
    remote_cluster_refs,
    remote_cluster_service_name,
)
from stackflow.stack.elasticsearch.scripts import scripts_data
from stackflow.stack.elasticsearch.suspend import suspended_pods
from stackflow.stack.elasticsearch.tls import (
    http_secrets,
    node_transport_certs_secret,
    transport_ca,
    transport_ca_secrets,
)
from stackflow.stack.elasticsearch.users import user_secrets
from stackflow.stack.labels import (
    ES_CLUSTER_NAME_LABEL,
    ES_STATEFULSET_NAME_LABEL,
    SOFT_OWNER_KIND_LABEL,
    TEMPLATE_HASH_LABEL,
    WATCHED_LABEL,
    es_cluster_labels,
    node_role_label,
)
from stackflow.stack.objects import Manifest, encode_secret_data
from stackflow.stack.pods import content_hash
from stackflow.stack.policies.stack_config.file_settings import empty_state, state_hash
from stackflow.stack.policies.stack_config.policy import POLICY_KIND
from stackflow.stack.policies.stack_config.secrets import (
    FILE_SETTINGS_KEY,
    SETTINGS_HASH_ANNOTATION,
    file_settings_secret_name,
)
from stackflow.stack.services import service
from stackflow.stack.version import parse_version

FILE_SETTINGS_COMPATIBILITY = "8.6.1"


def node_sets(es: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return the cluster's node sets in spec order."""
    return list((es.get("spec") or {}).get("nodeSets") or [])


def services(context: BuildContext) -> list[Manifest]:
    """Return the HTTP, internal HTTP and transport Services.

    Every selector is the cluster's labels (type and name), as ECK's; the transport Service
    publishes not-ready Pods so that booting nodes find each other before any is ready.
    """
    selector = es_cluster_labels(context.name)
    http_port = {
        "name": context.http_scheme,
        "port": HTTP_PORT,
        "protocol": "TCP",
        "targetPort": HTTP_PORT,
    }

    def http_spec() -> dict[str, Any]:
        return {
            "type": "ClusterIP",
            "selector": dict(selector),
            "publishNotReadyAddresses": False,
            "ports": [dict(http_port)],
        }

    transport_spec = {
        "type": "ClusterIP",
        "clusterIP": "None",
        "selector": dict(selector),
        "publishNotReadyAddresses": True,
        "ports": [
            {
                "name": "tls-transport",
                "port": TRANSPORT_PORT,
                "protocol": "TCP",
                "targetPort": TRANSPORT_PORT,
            }
        ],
    }
    spec = context.spec
    extra: list[Manifest] = []
    if remote_cluster_server_enabled(context):
        # Headless and publishing not-ready Pods, as ECK: remote clients reach every node.
        server = spec.get("remoteClusterServer") or {}
        extra.append(
            service(
                context,
                remote_cluster_service_name(context.name),
                default_spec={
                    "type": "ClusterIP",
                    "clusterIP": "None",
                    "selector": dict(selector),
                    "publishNotReadyAddresses": True,
                    "ports": [
                        {
                            "name": "rcs",
                            "port": REMOTE_CLUSTER_SERVER_PORT,
                            "protocol": "TCP",
                            "targetPort": REMOTE_CLUSTER_SERVER_PORT,
                        }
                    ],
                },
                template=server.get("service"),
            )
        )
    return [
        service(
            context,
            names.http_service_name(context.name),
            default_spec=http_spec(),
            template=(spec.get("http") or {}).get("service"),
        ),
        service(
            context,
            names.internal_http_service_name(context.name),
            default_spec=http_spec(),
            template=None,
        ),
        service(
            context,
            names.transport_service_name(context.name),
            default_spec=transport_spec,
            template=(spec.get("transport") or {}).get("service"),
        ),
        *extra,
    ]


def remote_cluster_server_enabled(context: BuildContext) -> bool:
    """Whether ``spec.remoteClusterServer.enabled`` opens the remote cluster server (9443)."""
    return bool((context.spec.get("remoteClusterServer") or {}).get("enabled"))


def initial_master_nodes(context: BuildContext) -> list[str]:
    """Return the master-eligible pod names to bootstrap a new cluster; none once it has a UUID.

    While the cluster bootstraps the list kept in the ``initial-master-nodes`` annotation wins,
    so that it never varies, even if the spec does (ECK's ``SetupInitialMasterNodes``).
    """
    annotations = view(context.es).annotations
    kept = annotated_initial_master_nodes(annotations)
    if kept:
        return list(kept)
    if is_bootstrapped(annotations):
        return []
    return _master_pod_names(context.es)


def _master_pod_names(es: Mapping[str, Any]) -> list[str]:
    name = view(es).name
    return [
        names.pod_name(name, str(node_set["name"]), ordinal)
        for node_set in node_sets(es)
        if is_master_eligible(node_set.get("config"))
        for ordinal in range(int(node_set.get("count", 0)))
    ]


#: ECK's orchestration hints on the Elasticsearch (JSON): what the operator learnt once and must
#: not learn again (``no_transient_settings``) and whether every node can authenticate service
#: accounts (``service_accounts``).
ORCHESTRATION_HINTS_ANNOTATION = "eck.k8s.elastic.co/orchestration-hints"
#: The first version whose nodes read the service tokens the operator writes (ECK's).
SERVICE_ACCOUNTS_VERSION = (7, 17, 0)


def _orchestration_hints(es: Mapping[str, Any]) -> str | None:
    """The hints to write, or None to leave them: ``service_accounts`` is decided once, for a
    new cluster by its spec version, for a formed one only when its running version cannot
    (ECK's cases 1 and 2; the third asks Elasticsearch which nodes read the tokens)."""
    annotations = view(es).annotations
    try:
        hints = dict(load_bounded_json(annotations.get(ORCHESTRATION_HINTS_ANNOTATION, "{}")))
    except (ValueError, TypeError):
        hints = {}
    if hints.get("service_accounts") is True:
        return None
    if not is_bootstrapped(annotations):
        version_text = str((es.get("spec") or {}).get("version", ""))
    else:
        version_text = str((es.get("status") or {}).get("version") or "")
        if not version_text:
            return None
    try:
        version = parse_version(version_text)
    except ValueError:
        return None
    supported = (version.major, version.minor, version.patch) >= SERVICE_ACCOUNTS_VERSION
    if is_bootstrapped(annotations) and supported:
        return None
    wanted = {
        "no_transient_settings": bool(hints.get("no_transient_settings", False)),
        "service_accounts": supported,
    }
    if "desired_nodes" in hints:
        wanted["desired_nodes"] = hints["desired_nodes"]
    text = json.dumps(wanted, separators=(",", ":"))
    return None if annotations.get(ORCHESTRATION_HINTS_ANNOTATION) == text else text


def elasticsearch_annotations(es: Mapping[str, Any]) -> dict[str, str | None]:
    """The annotations of ``es`` the operator writes before building (a merge patch; empty: none).

    A new cluster keeps the list it bootstraps with in ``initial-master-nodes``, as ECK; once the
    cluster has formed (its UUID recorded) the annotation goes. The orchestration hints follow
    :func:`_orchestration_hints`.
    """
    patch: dict[str, str | None] = {}
    annotations = view(es).annotations
    kept = annotated_initial_master_nodes(annotations)
    if is_bootstrapped(annotations):
        if kept:
            patch[INITIAL_MASTER_NODES_ANNOTATION] = None
    elif not kept:
        masters = _master_pod_names(es)
        if masters:
            patch[INITIAL_MASTER_NODES_ANNOTATION] = ",".join(masters)
    hints = _orchestration_hints(es)
    if hints is not None:
        patch[ORCHESTRATION_HINTS_ANNOTATION] = hints
    return patch


def config_secret(context: BuildContext, node_set: Mapping[str, Any]) -> tuple[Manifest, str]:
    """Return the node set's ``elasticsearch.yml`` Secret and the hash of its content.

    The hash leaves ``cluster.initial_master_nodes`` out, as ECK does: the setting is written only
    while the cluster bootstraps and dropped once it has formed, and neither may restart a node.
    """

    def render(bootstrap_masters: list[str]) -> str:
        return render_elasticsearch_yml(
            operator=operator_settings(
                es_name=context.name,
                version=context.version,
                http_tls=context.http_tls_enabled,
                initial_master_nodes=bootstrap_masters,
                remote_cluster_server=remote_cluster_server_enabled(context),
                remote_cluster_client=any(
                    ref.uses_api_key for ref in remote_cluster_refs(context.es)
                ),
            ),
            user_config=node_set.get("config"),
            policy_config=policy_config(context).config,
        )

    bootstrap = initial_master_nodes(context) if is_master_eligible(node_set.get("config")) else []
    statefulset = names.statefulset_name(context.name, str(node_set["name"]))
    rendered = render(bootstrap)
    secret = context.secret(
        names.config_secret_name(context.name, str(node_set["name"])),
        encode_secret_data({"elasticsearch.yml": rendered}),
        labels={ES_STATEFULSET_NAME_LABEL: statefulset},
    )
    # Once the cluster has formed there is no bootstrap list: the text is the hashed one already.
    return secret, content_hash(render([]) if bootstrap else rendered)


def _config_map(
    context: BuildContext, name: str, data: Mapping[str, str], *, watched: bool = True
) -> Manifest:
    # ECK labels as watched only the ConfigMaps its cache must see (the scripts), not the seeds.
    labels = {WATCHED_LABEL: "true"} if watched else {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": context.metadata(name, labels=labels),
        "data": dict(sorted(data.items())),
    }


def unicast_hosts(context: BuildContext) -> Manifest:
    """Return the seed hosts ConfigMap: the transport address of every master pod with an IP.

    Pods come from ``existing``; when no pod is known the current content is kept, so a build
    without pods never empties the seed list of a running cluster.
    """
    name = names.unicast_hosts_configmap_name(context.name)
    pods = [
        obj
        for (kind, _), obj in context.existing.items()
        if kind == "Pod" and view(obj).labels.get(ES_CLUSTER_NAME_LABEL) == context.name
    ]
    if not pods:
        current = context.existing.get(("ConfigMap", name)) or {}
        hosts = str((current.get("data") or {}).get("unicast_hosts.txt", ""))
    else:
        master_label = node_role_label("master")
        addresses = sorted(
            f"{pod['status']['podIP']}:{TRANSPORT_PORT}"
            for pod in pods
            if view(pod).labels.get(master_label) == "true"
            and (pod.get("status") or {}).get("podIP")
        )
        hosts = "".join(f"{address}\n" for address in addresses)
    return _config_map(context, name, {"unicast_hosts.txt": hosts}, watched=False)


def file_settings_secret(context: BuildContext) -> Manifest:
    """Return the file-settings Secret: the policy controller's when it owns it, else empty settings."""
    name = file_settings_secret_name(context.name)
    current = context.existing.get(("Secret", name))
    current_labels = view(current).labels
    if current is not None and current_labels.get(SOFT_OWNER_KIND_LABEL) == POLICY_KIND:
        return context.secret(name, dict(current.get("data") or {}), labels=dict(current_labels))
    version = str(int(context.now.timestamp() * 1_000_000_000))
    data = context.existing_secret_data(name)
    with contextlib.suppress(KeyError, ValueError, TypeError):
        version = str(load_bounded_json(data[FILE_SETTINGS_KEY])["metadata"]["version"])
    settings = {
        "metadata": {"version": version, "compatibility": FILE_SETTINGS_COMPATIBILITY},
        "state": empty_state(),
    }
    secret = context.secret(
        name, encode_secret_data({FILE_SETTINGS_KEY: json.dumps(settings, sort_keys=True)})
    )
    # The hash of the state it holds, as ECK and the policy controller mark it.
    secret["metadata"]["annotations"] = {SETTINGS_HASH_ANNOTATION: state_hash(empty_state())}
    return secret


def remote_ca_secret(context: BuildContext, ca: KeyPair) -> Manifest:
    """Return ``<es>-es-remote-ca``: the transport CAs of the related clusters, from the per-peer
    copies the remote-cluster controller keeps next to the cluster (the own CA when none), as
    ECK mounts it for extra transport trust."""
    copies = [obj for (kind, _), obj in context.existing.items() if kind == "Secret"]
    cas = remote_cas_of((context.namespace, context.name), copies)
    bundle = remote_ca_bundle(cas.keys(), cas, ca.cert_pem.decode())
    return context.secret(
        remote_ca_secret_name(context.name), encode_secret_data({REMOTE_CA_SECRET_KEY: bundle})
    )


def secure_settings_secret(context: BuildContext, data: Mapping[str, bytes]) -> Manifest:
    """Return ``<es>-es-secure-settings``: every key of every secure settings source."""
    return context.secret(names.secure_settings_secret_name(context.name), encode_secret_data(data))


@dataclass(frozen=True)
class DisruptedNodeSet:
    """What the default PDB counts of one StatefulSet: its Pods and the roles they hold."""

    replicas: int
    master: bool
    data: bool
    ingest: bool


def allowed_disruptions(node_sets: Sequence[DisruptedNodeSet], health: str) -> int:
    """How many Pods the default PDB lets go at once (ECK's rules).

    One node may always go (else nothing could drain its Kubernetes node); otherwise one, and only
    while the cluster is green and no role (master, data, ingest) rests on a single node.
    """
    if sum(node_set.replicas for node_set in node_sets) == 1:
        return 1
    if health != "green":
        return 0
    for role in ("master", "data", "ingest"):
        if sum(n.replicas for n in node_sets if getattr(n, role)) == 1:
            return 0
    return 1


def _disrupted_node_sets(
    context: BuildContext, statefulsets: Sequence[Manifest]
) -> list[DisruptedNodeSet]:
    """The StatefulSets once scaled up: the desired ones (never below their current replicas,
    since a downscale keeps its Pods until it ends) and the current ones no longer desired."""
    current = {
        view(obj).name: obj
        for (kind, _), obj in context.existing.items()
        if kind == "StatefulSet" and view(obj).labels.get(ES_CLUSTER_NAME_LABEL) == context.name
    }
    desired = {view(obj).name: obj for obj in statefulsets}
    result = []
    for name, obj in {**current, **desired}.items():
        replicas = max(
            int((obj.get("spec") or {}).get("replicas") or 0),
            int((current.get(name, {}).get("spec") or {}).get("replicas") or 0),
        )
        labels = view((obj.get("spec") or {}).get("template") or {}).labels
        if name in desired:
            roles = _node_set_roles(context, name)
        else:
            roles = frozenset(
                role
                for role in ("master", "data", "ingest")
                if labels.get(node_role_label(role)) == "true"
            )
        # ECK counts the nodes with the generic ``data`` role, not those of a tier only.
        result.append(
            DisruptedNodeSet(
                replicas=replicas,
                master="master" in roles,
                data="data" in roles,
                ingest="ingest" in roles,
            )
        )
    return result


def _node_set_roles(context: BuildContext, statefulset: str) -> frozenset[str]:
    for node_set in node_sets(context.es):
        if names.statefulset_name(context.name, str(node_set["name"])) == statefulset:
            return node_roles(node_set.get("config"))
    return frozenset()


#: The fields of a PodDisruptionBudget's spec, every one the operator's to set or clear.
_PDB_SPEC_FIELDS = ("selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy")


def pod_disruption_budget(
    context: BuildContext, statefulsets: Sequence[Manifest] = ()
) -> Manifest | None:
    """Return the ``<es>-es-default`` PDB: the user's spec, ECK's default, or none for ``{}``.

    The default selects the cluster's Pods with ``minAvailable`` = nodes - allowed disruptions
    (see :func:`allowed_disruptions`); a user's spec is taken as written. The PDB carries the
    hash of its content as ``common.k8s.elastic.co/template-hash``, as ECK's.
    """
    user = context.spec.get("podDisruptionBudget")
    if user is not None and not any(user.values()):
        return None
    user = user or {}
    user_metadata = view(user)
    user_spec: Mapping[str, Any] = user.get("spec") or {}
    specified = any(user_spec.get(key) is not None for key in _PDB_SPEC_FIELDS)
    if specified:
        spec = dict(user_spec)
    else:
        node_sets_now = _disrupted_node_sets(context, statefulsets)
        health = str((context.es.get("status") or {}).get("health") or "")
        spec = {
            "selector": {"matchLabels": {ES_CLUSTER_NAME_LABEL: context.name}},
            "minAvailable": sum(n.replicas for n in node_sets_now)
            - allowed_disruptions(node_sets_now, health),
        }
    metadata = context.metadata(
        names.default_pdb_name(context.name),
        labels=user_metadata.labels,
        annotations=user_metadata.annotations,
    )
    hashed = {"labels": metadata.get("labels"), "annotations": metadata.get("annotations")}
    metadata["labels"] = {
        **metadata.get("labels", {}),
        TEMPLATE_HASH_LABEL: content_hash({"metadata": hashed, "spec": spec}),
    }
    # ECK replaces the whole spec: a field this spec leaves out is written as null, so that the
    # merge with the stored PDB drops it (a user's maxUnavailable beside the default's stored
    # minAvailable is a PDB the API server refuses).
    written = dict.fromkeys(_PDB_SPEC_FIELDS) | spec
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata,
        "spec": written,
    }


def desired_children(
    es: Mapping[str, Any],
    *,
    existing: ExistingObjects,
    now: datetime,
    random_password: Callable[[], str],
    certificate_settings: CertificateSettings | None = None,
    secure_settings: Mapping[str, bytes] | None = None,
) -> list[Manifest]:
    """Return every child manifest of ``es``, in apply order.

    ``existing`` maps ``(kind, name)`` to the current objects of the namespace (children, the
    Secrets the spec references, the association user and service-account-token Secrets labelled
    with the cluster's name, and optionally the cluster's Pods for the seed hosts).
    ``secure_settings`` is the aggregated keystore content (see :mod:`.keystore`), None when the
    cluster has no secure settings source: then no ``<es>-es-secure-settings`` and no keystore.
    Raises ``ValueError`` when ``spec.version`` does not parse (validation reports it first).
    """
    context = BuildContext(
        es=es,
        version=parse_version(str((es.get("spec") or {}).get("version", ""))),
        existing=existing,
        now=now,
        random_password=random_password,
        certificate_settings=certificate_settings or CertificateSettings(),
    )
    children: list[Manifest] = [*services(context), *http_secrets(context)]
    ca = transport_ca(context)
    children += transport_ca_secrets(context, ca)
    children.append(remote_ca_secret(context, ca))
    children += user_secrets(context)
    children.append(file_settings_secret(context))
    # The suspended Pods live only in this ConfigMap, in no hash: suspending restarts nothing.
    suspended = suspended_pods(view(es).annotations)
    children.append(
        _config_map(context, names.scripts_configmap_name(context.name), scripts_data(suspended))
    )
    children.append(unicast_hosts(context))
    if secure_settings is not None:
        children.append(secure_settings_secret(context, secure_settings))
    for node_set in node_sets(es):
        node_set_name = str(node_set["name"])
        secret, config_hash = config_secret(context, node_set)
        pod_names = [
            names.pod_name(context.name, node_set_name, ordinal)
            for ordinal in range(int(node_set.get("count", 0)))
        ]
        children.append(secret)
        children.append(
            node_transport_certs_secret(context, ca=ca, node_set=node_set_name, pod_names=pod_names)
        )
        children.append(headless_service(context, node_set))
        statefulset = statefulset_manifest(context, node_set, config_hash=config_hash)
        if secure_settings is not None:
            statefulset = with_keystore(statefulset, context.name, keystore_hash(secure_settings))
        children.append(statefulset)
    pdb = pod_disruption_budget(
        context, [child for child in children if child["kind"] == "StatefulSet"]
    )
    if pdb is not None:
        children.append(pdb)
    return children
