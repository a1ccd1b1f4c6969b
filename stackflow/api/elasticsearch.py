"""Elasticsearch (``elasticsearch.k8s.elastic.co/v1``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from stackflow.api.base import ApiModel, CustomResource, FreeForm
from stackflow.api.common import (
    AssociationStatusMap,
    Condition,
    Health,
    HTTPConfigWithClientOptions,
    LocalObjectSelector,
    Monitoring,
    Resources,
    SecretRef,
    SecretSource,
    ServiceTemplate,
)

ElasticsearchPhase = Literal["Ready", "ApplyingChanges", "MigratingData", "Stalled", "Invalid"]
"""The orchestration phase of a cluster."""

DEFAULT_VOLUME_CLAIM_NAME = "elasticsearch-data"
ES_CONTAINER_NAME = "elasticsearch"


class ZoneAwareness(ApiModel):
    """Spread a nodeSet over zones (``topologyKey`` defaults to ``topology.kubernetes.io/zone``)."""

    topology_key: str | None = None
    zones: list[str] | None = None


class NodeSet(ApiModel):
    """A group of Elasticsearch nodes with the same configuration: one StatefulSet."""

    name: str = Field(pattern=r"^[a-zA-Z0-9-]+$", max_length=23)
    count: int = Field(default=0, ge=0)
    config: FreeForm | None = None
    resources: Resources | None = None
    zone_awareness: ZoneAwareness | None = None
    pod_template: FreeForm | None = None
    volume_claim_templates: list[FreeForm] | None = None


class TransportTLS(ApiModel):
    """Transport-layer TLS options."""

    other_name_suffix: str | None = None
    subject_alt_names: list[FreeForm] | None = None
    certificate: SecretRef | None = None
    certificate_authorities: FreeForm | None = None
    self_signed_certificates: FreeForm | None = None


class TransportConfig(ApiModel):
    """The transport Service template and its TLS."""

    service: ServiceTemplate | None = None
    tls: TransportTLS | None = None


class RemoteClusterServer(ApiModel):
    """Expose the remote cluster server (port 9443) for API-key based remote clusters."""

    enabled: bool | None = None
    service: ServiceTemplate | None = None


class ChangeBudget(ApiModel):
    """How many Pods may be unavailable or surge during changes (negative = unbounded)."""

    max_unavailable: int | None = None
    max_surge: int | None = None


class UpdateStrategy(ApiModel):
    """The rolling-change budget."""

    change_budget: ChangeBudget | None = None


class PodDisruptionBudgetTemplate(ApiModel):
    """A PDB template; ``{}`` disables the default PDB."""

    metadata: FreeForm | None = None
    spec: FreeForm | None = None


class Auth(ApiModel):
    """User roles, file realm and the elastic user switch."""

    roles: list[SecretRef] | None = None
    file_realm: list[SecretRef] | None = None
    disable_elastic_user: bool | None = None


class RemoteClusterApiKey(ApiModel):
    """Cross-cluster API key access (``search`` / ``replication`` use Elasticsearch's own names)."""

    access: FreeForm


class RemoteCluster(ApiModel):
    """A remote cluster this cluster connects to."""

    name: str
    elasticsearch_ref: LocalObjectSelector | None = None
    api_key: RemoteClusterApiKey | None = None


class ElasticsearchSpec(ApiModel):
    """The desired state of an Elasticsearch cluster."""

    version: str
    image: str | None = None
    http: HTTPConfigWithClientOptions | None = None
    transport: TransportConfig | None = None
    remote_cluster_server: RemoteClusterServer | None = None
    node_sets: list[NodeSet] = Field(min_length=1)
    update_strategy: UpdateStrategy | None = None
    pod_disruption_budget: PodDisruptionBudgetTemplate | None = None
    auth: Auth | None = None
    secure_settings: list[SecretSource] | None = None
    service_account_name: str | None = None
    remote_clusters: list[RemoteCluster] | None = None
    volume_claim_delete_policy: (
        Literal["DeleteOnScaledownAndClusterDeletion", "DeleteOnScaledownOnly"] | None
    ) = None
    monitoring: Monitoring | None = None
    revision_history_limit: int | None = None


class ElasticsearchStatus(ApiModel):
    """The observed state of an Elasticsearch cluster."""

    available_nodes: int | None = None
    version: str | None = None
    health: Health | None = None
    phase: ElasticsearchPhase | None = None
    conditions: list[Condition] | None = None
    in_progress_operations: FreeForm | None = None
    monitoring_association_status: AssociationStatusMap | None = None
    observed_generation: int | None = None


class Elasticsearch(CustomResource):
    """An Elasticsearch cluster."""

    GROUP: ClassVar[str] = "elasticsearch.k8s.elastic.co"
    KIND: ClassVar[str] = "Elasticsearch"

    spec: ElasticsearchSpec
    status: ElasticsearchStatus | None = None
