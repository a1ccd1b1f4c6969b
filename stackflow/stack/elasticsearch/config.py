"""Node roles and the rendered ``elasticsearch.yml`` of a node set (user config over operator defaults)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from stackflow.stack.version import Version

CONFIG_DIR = "/usr/share/elasticsearch/config"
DATA_DIR = "/usr/share/elasticsearch/data"
LOGS_DIR = "/usr/share/elasticsearch/logs"
HTTP_CERTS_DIR = f"{CONFIG_DIR}/http-certs"
TRANSPORT_CERTS_DIR = f"{CONFIG_DIR}/transport-certs"
#: The related clusters' transport CAs (``<es>-es-remote-ca``), trusted next to the own CA.
REMOTE_CERTS_DIR = f"{CONFIG_DIR}/transport-remote-certs"
FILE_SETTINGS_DIR = f"{CONFIG_DIR}/operator"
CONFIG_MOUNT_DIR = "/mnt/elastic-internal/elasticsearch-config"
FILE_REALM_MOUNT_DIR = "/mnt/elastic-internal/xpack-file-realm"
UNICAST_HOSTS_MOUNT_DIR = "/mnt/elastic-internal/unicast-hosts"
SCRIPTS_MOUNT_DIR = "/mnt/elastic-internal/scripts"
#: The probe and pre-stop users' passwords, one file each (ECK's ``pod-mounted-users``).
PROBE_USER_MOUNT_DIR = "/mnt/elastic-internal/pod-mounted-users"
#: The Pod's own labels (and annotations), written by the kubelet from the downward API.
DOWNWARD_API_MOUNT_DIR = "/mnt/elastic-internal/downward-api"
#: The node attribute naming the Kubernetes node a Pod runs on; shard allocation is aware of it,
#: so a primary and its replica never share a Kubernetes node (two Pods on one host would lose both).
K8S_NODE_NAME_ATTRIBUTE = "k8s_node_name"
READINESS_PORT = 8080
HTTP_PORT = 9200
TRANSPORT_PORT = 9300

DEFAULT_ROLES = frozenset(
    {
        "master",
        "data",
        "data_content",
        "data_hot",
        "data_warm",
        "data_cold",
        "data_frozen",
        "ingest",
        "ml",
        "remote_cluster_client",
        "transform",
    }
)
"""Roles a node has when its config sets neither ``node.roles`` nor the legacy booleans."""

_LEGACY_ROLE_SETTINGS = {
    "node.master": "master",
    "node.data": "data",
    "node.ingest": "ingest",
    "node.ml": "ml",
    "node.transform": "transform",
    "node.remote_cluster_client": "remote_cluster_client",
    "node.voting_only": "voting_only",
}


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Return ``config`` with nested maps flattened to dotted keys (``a: {b: 1}`` → ``a.b: 1``)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten_config(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def _as_bool(value: Any) -> bool:
    return str(value).strip().lower() == "true"


def node_roles(config: Mapping[str, Any] | None) -> frozenset[str]:
    """Return the roles of the nodes of a node set, from ``node.roles`` or the legacy booleans."""
    flat = flatten_config(config or {})
    roles = flat.get("node.roles")
    if isinstance(roles, str):
        return frozenset(role.strip() for role in roles.split(",") if role.strip())
    if isinstance(roles, Sequence):
        return frozenset(str(role) for role in roles)
    legacy = {setting: role for setting, role in _LEGACY_ROLE_SETTINGS.items() if setting in flat}
    if not legacy:
        return DEFAULT_ROLES
    result = set(DEFAULT_ROLES)
    for setting, role in legacy.items():
        if _as_bool(flat[setting]):
            result.add(role)
        else:
            result.discard(role)
    return frozenset(result)


def is_master_eligible(config: Mapping[str, Any] | None) -> bool:
    """Return whether the nodes of a node set with ``config`` can be elected master."""
    return "master" in node_roles(config)


def operator_settings(
    *,
    es_name: str,
    version: Version,
    http_tls: bool,
    initial_master_nodes: Sequence[str],
    remote_cluster_server: bool = False,
    remote_cluster_client: bool = False,
) -> dict[str, Any]:
    """Return the settings the operator writes for every node (flattened, before the user's config).

    ``remote_cluster_server`` (``spec.remoteClusterServer.enabled``) opens the remote cluster port
    with the transport certificates; ``remote_cluster_client`` (a remote declared with ``apiKey``)
    turns on TLS towards remote cluster servers, trusting the related clusters' CAs. As ECK.
    """
    settings: dict[str, Any] = {
        "cluster.name": es_name,
        "node.name": "${POD_NAME}",
        "network.host": "0",
        "cluster.routing.allocation.awareness.attributes": K8S_NODE_NAME_ATTRIBUTE,
        f"node.attr.{K8S_NODE_NAME_ATTRIBUTE}": "${NODE_NAME}",
        "network.publish_host": "${POD_IP}",
        "http.publish_host": "${POD_NAME}.${HEADLESS_SERVICE_NAME}.${NAMESPACE}.svc",
        "discovery.seed_providers": "file",
        "discovery.seed_hosts": [],
        "path.data": DATA_DIR,
        "path.logs": LOGS_DIR,
        "xpack.license.upload.types": ["trial", "enterprise"],
        "xpack.security.enabled": "true",
        "xpack.security.authc.reserved_realm.enabled": "false",
        "xpack.security.authc.realms.file.file1.order": -100,
        "xpack.security.authc.realms.native.native1.order": -99,
        "xpack.security.http.ssl.enabled": "true" if http_tls else "false",
        "xpack.security.transport.ssl.enabled": "true",
        "xpack.security.transport.ssl.verification_mode": "certificate",
        "xpack.security.transport.ssl.certificate": f"{TRANSPORT_CERTS_DIR}/${{POD_NAME}}.tls.crt",
        "xpack.security.transport.ssl.key": f"{TRANSPORT_CERTS_DIR}/${{POD_NAME}}.tls.key",
        "xpack.security.transport.ssl.certificate_authorities": [
            f"{TRANSPORT_CERTS_DIR}/ca.crt",
            f"{REMOTE_CERTS_DIR}/ca.crt",
        ],
    }
    trusted = [f"{TRANSPORT_CERTS_DIR}/ca.crt", f"{REMOTE_CERTS_DIR}/ca.crt"]
    if remote_cluster_server:
        settings.update(
            {
                "remote_cluster_server.enabled": "true",
                "remote_cluster.publish_host": (
                    "${POD_NAME}.${HEADLESS_SERVICE_NAME}.${NAMESPACE}.svc"
                ),
                "remote_cluster.host": "0",
                "xpack.security.remote_cluster_server.ssl.key": (
                    f"{TRANSPORT_CERTS_DIR}/${{POD_NAME}}.tls.key"
                ),
                "xpack.security.remote_cluster_server.ssl.certificate": (
                    f"{TRANSPORT_CERTS_DIR}/${{POD_NAME}}.tls.crt"
                ),
                "xpack.security.remote_cluster_server.ssl.certificate_authorities": list(trusted),
            }
        )
    if remote_cluster_client:
        settings.update(
            {
                "xpack.security.remote_cluster_client.ssl.enabled": True,
                "xpack.security.remote_cluster_client.ssl.certificate_authorities": list(trusted),
            }
        )
    if http_tls:
        settings.update(
            {
                "xpack.security.http.ssl.certificate": f"{HTTP_CERTS_DIR}/tls.crt",
                "xpack.security.http.ssl.key": f"{HTTP_CERTS_DIR}/tls.key",
                "xpack.security.http.ssl.certificate_authorities": [f"{HTTP_CERTS_DIR}/ca.crt"],
            }
        )
    if version.at_least(8, 2):
        settings["readiness.port"] = str(READINESS_PORT)
    if initial_master_nodes:
        settings["cluster.initial_master_nodes"] = list(initial_master_nodes)
    return settings


def render_elasticsearch_yml(
    *,
    operator: Mapping[str, Any],
    user_config: Mapping[str, Any] | None,
    policy_config: Mapping[str, Any] | None = None,
) -> str:
    """Render ``elasticsearch.yml``: the operator's settings overlaid by the user's, then by the
    StackConfigPolicies' ``elasticsearch.config`` (merged last, as ECK), keys sorted.

    Settings are written flattened so a user's nested map and the operator's dotted key for the
    same setting cannot end up as two conflicting entries.
    """
    merged = dict(operator)
    merged.update(flatten_config(user_config or {}))
    merged.update(flatten_config(policy_config or {}))
    return yaml.safe_dump(merged, sort_keys=True, default_flow_style=False)
