"""Beat (``beat.k8s.elastic.co/v1beta1``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from stackflow.api.base import ApiModel, CustomResource, FreeForm
from stackflow.api.common import (
    AssociationStatus,
    AssociationStatusMap,
    ConfigSource,
    ElasticsearchSelector,
    Monitoring,
    NodesStatus,
    ObjectSelector,
    PodTemplateWorkload,
    Resources,
    SecretSource,
)


class BeatSpec(ApiModel):
    """The desired state of a Beat: exactly one of ``daemonSet`` / ``deployment``."""

    type: str = Field(max_length=20, pattern=r"[a-zA-Z0-9-]+")
    version: str
    elasticsearch_ref: ElasticsearchSelector | None = None
    kibana_ref: ObjectSelector | None = None
    image: str | None = None
    config: FreeForm | None = None
    config_ref: ConfigSource | None = None
    secure_settings: list[SecretSource] | None = None
    service_account_name: str | None = None
    resources: Resources | None = None
    daemon_set: PodTemplateWorkload | None = None
    deployment: PodTemplateWorkload | None = None
    monitoring: Monitoring | None = None
    revision_history_limit: int | None = None


class BeatStatus(NodesStatus):
    """The observed state of a Beat."""

    elasticsearch_association_status: AssociationStatus | None = None
    kibana_association_status: AssociationStatus | None = None
    monitoring_association_status: AssociationStatusMap | None = None


class Beat(CustomResource):
    """A Beat (filebeat, metricbeat, …)."""

    GROUP: ClassVar[str] = "beat.k8s.elastic.co"
    KIND: ClassVar[str] = "Beat"

    spec: BeatSpec
    status: BeatStatus | None = None
