"""The table of ECK's associations: one row per (associated kind → target kind) pair.

Everything that differs between ECK's thirteen association controllers is data in this table; the
pure builders of this package (refs, conf, secrets, status, flip) read a row and nothing else.
Names, labels and roles follow ``pkg/controller/association/controller/*.go`` of ECK.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.stack.associations.versions import at_least

CONF_ANNOTATION_PREFIX = "association.k8s.elastic.co/"
NO_AUTH_REQUIRED = "-"
"""``authSecretName`` of associations that need no credentials (KB→ENT, KB→EPR, Agent→Fleet Server)."""

ES_TYPE = "elasticsearch"
KIBANA_TYPE = "kibana"
ENT_TYPE = "ent"
FLEET_SERVER_TYPE = "fleetserver"
PACKAGE_REGISTRY_TYPE = "package-registry"


class AuthMode(enum.Enum):
    """How the associated application authenticates to the target."""

    USER = "user"
    """A file-realm user in the (maybe transitive) Elasticsearch."""
    SERVICE_ACCOUNT = "service-account"
    """An Elasticsearch service account token when the version allows it, else a user."""
    NONE = "-"
    """No credentials (``authSecretName: "-"``)."""


@dataclass(frozen=True)
class TargetKind:
    """A kind that associations point to: how its HTTP Service, CA and name labels are called."""

    kind: str
    short: str
    default_port: int
    name_label: str
    namespace_label: str

    def http_service_name(self, target_name: str) -> str:
        """The default Service of the target: ``<name>-<short>-http``."""
        return f"{target_name}-{self.short}-http"

    def public_certs_secret_name(self, target_name: str) -> str:
        """The target's public HTTP certificates Secret, copied as the association CA."""
        return f"{target_name}-{self.short}-http-certs-public"


ELASTICSEARCH = TargetKind(
    "Elasticsearch",
    "es",
    9200,
    "elasticsearch.k8s.elastic.co/cluster-name",
    "elasticsearch.k8s.elastic.co/cluster-namespace",
)
KIBANA = TargetKind(
    "Kibana", "kb", 5601, "kibana.k8s.elastic.co/name", "kibana.k8s.elastic.co/namespace"
)
ENTERPRISE_SEARCH = TargetKind(
    "EnterpriseSearch",
    "ent",
    3002,
    "enterprisesearch.k8s.elastic.co/name",
    "enterprisesearch.k8s.elastic.co/namespace",
)
FLEET_SERVER = TargetKind(
    "Agent", "agent", 8220, "agent.k8s.elastic.co/name", "agent.k8s.elastic.co/namespace"
)
PACKAGE_REGISTRY = TargetKind(
    "PackageRegistry",
    "epr",
    8080,
    "packageregistry.k8s.elastic.co/name",
    "packageregistry.k8s.elastic.co/namespace",
)

RoleFunction = Callable[[Mapping[str, Any]], str]
"""Associated object (a manifest) → the comma-separated roles of its Elasticsearch user."""


@dataclass(frozen=True)
class Association:
    """One association controller of ECK.

    ``ref_field`` is the spec field holding the reference(s); ``multi_ref`` means a list of refs,
    each with its own conf annotation ``<annotation_base>-<hash>`` and names carrying an id.
    ``user_via_kibana`` means the Elasticsearch user lives in the Elasticsearch the target Kibana
    points to (APM/Beat/Agent → Kibana), not in the target itself.
    """

    name: str
    associated_kind: str
    associated_short: str
    target: TargetKind
    association_type: str
    ref_field: str
    multi_ref: bool
    annotation_base: str
    label_prefix: str
    status_field: str
    auth_mode: AuthMode = AuthMode.USER
    user_secret_suffix: str | None = None
    user_roles: RoleFunction | None = None
    user_via_kibana: bool = False
    secret_name_allowed: bool = True
    ref_extra_field: str | None = None
    legacy_status_field: str | None = None

    @property
    def controller_name(self) -> str:
        """ECK's controller name, ``<name>-association-controller``."""
        return f"{self.name}-association-controller"

    @property
    def hashed_annotation(self) -> bool:
        """Whether each ref's conf annotation carries ``-<HashObject(ref)>`` (multi-ref kinds)."""
        return self.multi_ref

    @property
    def label_name(self) -> str:
        """The association label holding the associated object's name."""
        return f"{self.label_prefix}/name"

    @property
    def label_namespace(self) -> str:
        """The association label holding the associated object's namespace."""
        return f"{self.label_prefix}/namespace"

    @property
    def label_type(self) -> str:
        """The association label holding the association type (``elasticsearch``, ``kibana``…)."""
        return f"{self.label_prefix}/type"

    def roles_for(self, associated: Mapping[str, Any]) -> str:
        """Return the Elasticsearch user roles for ``associated`` (``""`` when no user is made)."""
        return self.user_roles(associated) if self.user_roles else ""


def _spec(associated: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = associated.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _version(associated: Mapping[str, Any]) -> str:
    return str(_spec(associated).get("version") or "")


def _apm_es_roles(associated: Mapping[str, Any]) -> str:
    version = _version(associated)
    if at_least(version, 8, 7):
        return "eck_apm_user_role_v87,apm_system"
    if at_least(version, 8, 0):
        return "eck_apm_user_role_v80,apm_system"
    if at_least(version, 7, 5):
        return "eck_apm_user_role_v75,ingest_admin,apm_system"
    return "eck_apm_user_role_v7,ingest_admin,apm_system"


KNOWN_BEAT_TYPES = frozenset(
    {"filebeat", "metricbeat", "heartbeat", "auditbeat", "journalbeat", "packetbeat"}
)


def _beat_type(associated: Mapping[str, Any]) -> str:
    return str(_spec(associated).get("type") or "")


def _beat_es_roles(associated: Mapping[str, Any]) -> str:
    beat_type = _beat_type(associated)
    if beat_type not in KNOWN_BEAT_TYPES:
        return f"eck_beat_es_{beat_type}_role"
    version = _version(associated)
    if at_least(version, 7, 7):
        return f"kibana_admin,ingest_admin,beats_admin,remote_monitoring_agent,eck_beat_es_{beat_type}_role_v77"
    if at_least(version, 7, 5):
        return f"kibana_user,ingest_admin,beats_admin,remote_monitoring_agent,eck_beat_es_{beat_type}_role_v75"
    if at_least(version, 7, 3):
        return f"kibana_user,ingest_admin,beats_admin,remote_monitoring_agent,eck_beat_es_{beat_type}_role_v73"
    return f"kibana_user,ingest_admin,beats_admin,monitoring_user,eck_beat_es_{beat_type}_role_v70"


def _beat_kibana_roles(associated: Mapping[str, Any]) -> str:
    beat_type = _beat_type(associated)
    if beat_type not in KNOWN_BEAT_TYPES:
        return f"eck_beat_kibana_{beat_type}_role"
    version = _version(associated)
    if at_least(version, 7, 7):
        return f"kibana_admin,ingest_admin,beats_admin,eck_beat_kibana_{beat_type}_role_v77"
    if at_least(version, 7, 3):
        return f"kibana_user,ingest_admin,beats_admin,eck_beat_kibana_{beat_type}_role_v73"
    return f"kibana_user,ingest_admin,beats_admin,eck_beat_kibana_{beat_type}_role_v70"


def _agent_es_roles(associated: Mapping[str, Any]) -> str:
    # Fleet Server before 7.17 has no service account and needs superuser-level access.
    return "superuser" if _spec(associated).get("fleetServerEnabled") else "eck_agent_user_role"


def _agent_kibana_roles(associated: Mapping[str, Any]) -> str:
    # Kibana's Fleet API accepts a non-superuser only from 8.1.
    return "eck_fleet_admin_user_role" if at_least(_version(associated), 8, 1) else "superuser"


def _constant(roles: str) -> RoleFunction:
    return lambda _associated: roles


ASSOCIATIONS: tuple[Association, ...] = (
    Association(
        "kb-es", "Kibana", "kb", ELASTICSEARCH, ES_TYPE, "elasticsearchRef", False,
        "association.k8s.elastic.co/es-conf", "kibanaassociation.k8s.elastic.co",
        "elasticsearchAssociationStatus", AuthMode.SERVICE_ACCOUNT, "kibana-user",
        _constant("kibana_system"), legacy_status_field="associationStatus",
    ),
    Association(
        "apm-es", "ApmServer", "apm", ELASTICSEARCH, ES_TYPE, "elasticsearchRef", False,
        "association.k8s.elastic.co/es-conf", "apmassociation.k8s.elastic.co",
        "elasticsearchAssociationStatus", AuthMode.USER, "apm-user", _apm_es_roles,
    ),
    Association(
        "apm-kibana", "ApmServer", "apm", KIBANA, KIBANA_TYPE, "kibanaRef", False,
        "association.k8s.elastic.co/kb-conf", "apmassociation.k8s.elastic.co",
        "kibanaAssociationStatus", AuthMode.USER, "apm-kb-user",
        _constant("eck_apm_agent_user_role"), user_via_kibana=True,
    ),
    Association(
        "ent-es", "EnterpriseSearch", "ent", ELASTICSEARCH, ES_TYPE, "elasticsearchRef", False,
        "association.k8s.elastic.co/es-conf", "entassociation.k8s.elastic.co",
        "associationStatus", AuthMode.USER, "ent-user", _constant("superuser"),
    ),
    Association(
        "beat-es", "Beat", "beat", ELASTICSEARCH, ES_TYPE, "elasticsearchRef", False,
        "association.k8s.elastic.co/es-conf", "beatassociation.k8s.elastic.co",
        "elasticsearchAssociationStatus", AuthMode.USER, "beat-user", _beat_es_roles,
    ),
    Association(
        "beat-kibana", "Beat", "beat", KIBANA, KIBANA_TYPE, "kibanaRef", False,
        "association.k8s.elastic.co/kb-conf", "beatassociation.k8s.elastic.co",
        "kibanaAssociationStatus", AuthMode.USER, "beat-kb-user", _beat_kibana_roles,
        user_via_kibana=True,
    ),
    Association(
        "agent-es", "Agent", "agent", ELASTICSEARCH, ES_TYPE, "elasticsearchRefs", True,
        "association.k8s.elastic.co/es-conf", "agentassociation.k8s.elastic.co",
        "elasticsearchAssociationsStatus", AuthMode.SERVICE_ACCOUNT, "agent-user",
        _agent_es_roles, ref_extra_field="outputName",
    ),
    Association(
        "agent-kibana", "Agent", "agent", KIBANA, KIBANA_TYPE, "kibanaRef", False,
        "association.k8s.elastic.co/kb-conf", "agentassociation.k8s.elastic.co",
        "kibanaAssociationStatus", AuthMode.USER, "agent-kb-user", _agent_kibana_roles,
        user_via_kibana=True,
    ),
    Association(
        "agent-fleetserver", "Agent", "agent", FLEET_SERVER, FLEET_SERVER_TYPE, "fleetServerRef",
        False, "association.k8s.elastic.co/fs-conf", "agentassociation.k8s.elastic.co",
        "fleetServerAssociationStatus", AuthMode.NONE,
    ),
    Association(
        "logstash-es", "Logstash", "ls", ELASTICSEARCH, ES_TYPE, "elasticsearchRefs", True,
        "association.k8s.elastic.co/es-conf", "logstashassociation.k8s.elastic.co",
        "elasticsearchAssociationsStatus", AuthMode.USER, "logstash-user",
        _constant("eck_logstash_user_role"), ref_extra_field="clusterName",
    ),
    Association(
        "ems-es", "ElasticMapsServer", "ems", ELASTICSEARCH, ES_TYPE, "elasticsearchRef", False,
        "association.k8s.elastic.co/es-conf", "mapsassociation.k8s.elastic.co",
        "associationStatus", AuthMode.USER, "maps-user", _constant("elastic_internal_probe_user"),
    ),
    Association(
        "kb-ent", "Kibana", "kb", ENTERPRISE_SEARCH, ENT_TYPE, "enterpriseSearchRef", False,
        "association.k8s.elastic.co/ent-conf", "kibanaassociation.k8s.elastic.co",
        "enterpriseSearchAssociationStatus", AuthMode.NONE,
    ),
    Association(
        "kb-epr", "Kibana", "kb", PACKAGE_REGISTRY, PACKAGE_REGISTRY_TYPE, "packageRegistryRef",
        False, "association.k8s.elastic.co/epr-conf", "kibanaassociation.k8s.elastic.co",
        "packageRegistryAssociationStatus", AuthMode.NONE, secret_name_allowed=False,
    ),
)  # fmt: skip

BY_NAME: Mapping[str, Association] = {association.name: association for association in ASSOCIATIONS}

SERVICE_ACCOUNTS = {
    "kb-es": ("elastic/kibana", (7, 17)),
    "agent-es": ("elastic/fleet-server", (7, 17)),
}
"""Associations that authenticate with an Elasticsearch service account, and from which version."""

TRANSITIVE_ES_ASSOCIATION = {
    "apm-kibana": "kb-es",
    "beat-kibana": "kb-es",
    "agent-kibana": "kb-es",
    "agent-fleetserver": "agent-es",
}
"""Associations whose target reaches Elasticsearch through one of its own associations."""


class UnknownAssociationError(LookupError):
    """No association exists between the two kinds (or under that name)."""


def association_named(name: str) -> Association:
    """Return the association called ``name`` (``kb-es``…)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownAssociationError(f"no association named {name!r}") from None


def associations_of(associated_kind: str) -> tuple[Association, ...]:
    """Return every association an object of ``associated_kind`` can have (empty if none)."""
    return tuple(a for a in ASSOCIATIONS if a.associated_kind == associated_kind)


def find_association(associated_kind: str, target_kind: str) -> Association:
    """Return the association from ``associated_kind`` to ``target_kind``, or raise.

    Agent → Agent is the Fleet Server association; every other pair is unique.
    """
    for association in ASSOCIATIONS:
        if (
            association.associated_kind == associated_kind
            and association.target.kind == target_kind
        ):
            return association
    raise UnknownAssociationError(f"a {associated_kind} cannot be associated with a {target_kind}")


def elastic_service_account(association: Association, associated: Mapping[str, Any]) -> str | None:
    """Return the Elasticsearch service account ``associated`` uses for ``association``, if any.

    Kibana ≥ 7.17 uses ``elastic/kibana``; a Fleet Server Agent ≥ 7.17 uses ``elastic/fleet-server``
    (other Agents use a user).
    """
    entry = SERVICE_ACCOUNTS.get(association.name)
    if entry is None:
        return None
    if association.name == "agent-es" and not _spec(associated).get("fleetServerEnabled"):
        return None
    account, (major, minor) = entry
    return account if at_least(_version(associated), major, minor) else None
