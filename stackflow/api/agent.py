"""Agent (``agent.k8s.elastic.co/v1alpha1``): standalone Elastic Agent and Fleet Server."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from stackflow.api.base import ApiModel, CustomResource, FreeForm
from stackflow.api.common import (
    AssociationStatus,
    AssociationStatusMap,
    ConfigSource,
    ElasticsearchOutputSelector,
    FleetServerSelector,
    HTTPConfigWithClientOptions,
    NodesStatus,
    ObjectSelector,
    PodTemplateWorkload,
    Resources,
    SecretSource,
    StatefulSetWorkload,
)

AgentMode = Literal["standalone", "fleet"]
FLEET_SERVER_PORT = 8220


class AgentSpec(ApiModel):
    """The desired state of an Agent: exactly one of ``daemonSet`` / ``deployment`` / ``statefulSet``."""

    version: str
    elasticsearch_refs: list[ElasticsearchOutputSelector] | None = None
    image: str | None = None
    config: FreeForm | None = None
    config_ref: ConfigSource | None = None
    secure_settings: list[SecretSource] | None = None
    service_account_name: str | None = None
    resources: Resources | None = None
    daemon_set: PodTemplateWorkload | None = None
    deployment: PodTemplateWorkload | None = None
    stateful_set: StatefulSetWorkload | None = None
    revision_history_limit: int | None = None
    http: HTTPConfigWithClientOptions | None = None
    mode: AgentMode | None = None
    fleet_server_enabled: bool | None = None
    policy_id: str | None = Field(default=None, alias="policyID")
    space_id: str | None = Field(default=None, alias="spaceID")
    kibana_ref: ObjectSelector | None = None
    fleet_server_ref: FleetServerSelector | None = None

    def effective_mode(self) -> AgentMode:
        """The mode, ``standalone`` when unset."""
        return self.mode or "standalone"


class AgentStatus(NodesStatus):
    """The observed state of an Agent."""

    elasticsearch_associations_status: AssociationStatusMap | None = None
    kibana_association_status: AssociationStatus | None = None
    fleet_server_association_status: AssociationStatus | None = None


class Agent(CustomResource):
    """An Elastic Agent (standalone or Fleet-managed, optionally a Fleet Server)."""

    GROUP: ClassVar[str] = "agent.k8s.elastic.co"
    KIND: ClassVar[str] = "Agent"

    spec: AgentSpec
    status: AgentStatus | None = None
