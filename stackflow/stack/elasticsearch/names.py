"""Names of an Elasticsearch cluster's child objects (reference §2), all through ECK's Namer."""

from __future__ import annotations

from stackflow.stack.naming import ES_NAMER


def statefulset_name(es_name: str, node_set: str) -> str:
    """Return the StatefulSet (and headless Service) name of a node set: ``<es>-es-<nodeSet>``."""
    return ES_NAMER.suffix(es_name, node_set)


def node_set_of_statefulset(es_name: str, statefulset: str) -> str:
    """Return the node set a StatefulSet of ``es_name`` was named after (the inverse of
    :func:`statefulset_name` for the names validation admits)."""
    return statefulset.removeprefix(statefulset_name(es_name, ""))


def pod_name(es_name: str, node_set: str, ordinal: int) -> str:
    """Return the name of a node set's pod number ``ordinal``."""
    return f"{statefulset_name(es_name, node_set)}-{ordinal}"


def http_service_name(es_name: str) -> str:
    """Return the public HTTP Service name ``<es>-es-http``."""
    return ES_NAMER.suffix(es_name, "http")


def internal_http_service_name(es_name: str) -> str:
    """Return the operator's HTTP Service name ``<es>-es-internal-http``."""
    return ES_NAMER.suffix(es_name, "internal", "http")


def transport_service_name(es_name: str) -> str:
    """Return the transport Service name ``<es>-es-transport``."""
    return ES_NAMER.suffix(es_name, "transport")


def config_secret_name(es_name: str, node_set: str) -> str:
    """Return the node set's ``elasticsearch.yml`` Secret name."""
    return ES_NAMER.suffix(es_name, node_set, "es", "config")


def node_transport_certs_secret_name(es_name: str, node_set: str) -> str:
    """Return the node set's per-pod transport certificates Secret name."""
    return ES_NAMER.suffix(es_name, node_set, "es", "transport", "certs")


def elastic_user_secret_name(es_name: str) -> str:
    """Return the ``elastic`` user password Secret name."""
    return ES_NAMER.suffix(es_name, "elastic", "user")


def internal_users_secret_name(es_name: str) -> str:
    """Return the operator's internal users Secret name."""
    return ES_NAMER.suffix(es_name, "internal", "users")


def file_realm_secret_name(es_name: str) -> str:
    """Return the file realm (users, users_roles, roles.yml) Secret name."""
    return ES_NAMER.suffix(es_name, "xpack", "file", "realm")


def http_ca_internal_secret_name(es_name: str) -> str:
    """Return the HTTP CA Secret name (CA certificate and key)."""
    return ES_NAMER.suffix(es_name, "http", "ca", "internal")


def http_certs_internal_secret_name(es_name: str) -> str:
    """Return the HTTP certificate Secret mounted into the pods."""
    return ES_NAMER.suffix(es_name, "http", "certs", "internal")


def http_certs_public_secret_name(es_name: str) -> str:
    """Return the HTTP certificate Secret published for clients (no private key)."""
    return ES_NAMER.suffix(es_name, "http", "certs", "public")


def transport_ca_internal_secret_name(es_name: str) -> str:
    """Return the transport CA Secret name (CA certificate and key)."""
    return ES_NAMER.suffix(es_name, "transport", "ca", "internal")


def transport_certs_public_secret_name(es_name: str) -> str:
    """Return the transport CA certificate Secret published for remote clusters."""
    return ES_NAMER.suffix(es_name, "transport", "certs", "public")


def default_pdb_name(es_name: str) -> str:
    """Return the default PodDisruptionBudget name ``<es>-es-default``."""
    return ES_NAMER.suffix(es_name, "default")


def unicast_hosts_configmap_name(es_name: str) -> str:
    """Return the seed hosts ConfigMap name."""
    return ES_NAMER.suffix(es_name, "unicast", "hosts")


def scripts_configmap_name(es_name: str) -> str:
    """Return the scripts ConfigMap name."""
    return ES_NAMER.suffix(es_name, "scripts")


def secure_settings_secret_name(es_name: str) -> str:
    """Return the aggregated secure settings Secret name."""
    return ES_NAMER.suffix(es_name, "secure", "settings")


def license_secret_name(es_name: str) -> str:
    """Return the per-cluster license Secret name (written by the license controller)."""
    return ES_NAMER.suffix(es_name, "license")
