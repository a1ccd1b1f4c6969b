"""Logstash (``logstash.k8s.elastic.co/v1alpha1``)."""

from __future__ import annotations

from typing import ClassVar

from stackflow.api.base import ApiModel, CustomResource, FreeForm
from stackflow.api.common import (
    AssociationStatusMap,
    ConfigSource,
    ElasticsearchClusterSelector,
    Monitoring,
    NodesStatus,
    Resources,
    SecretSource,
    ServiceTemplate,
    TLSOptions,
)


class LogstashService(ApiModel):
    """A user-defined Service in front of Logstash (``<ls>-ls-<name>``)."""

    name: str | None = None
    service: ServiceTemplate | None = None
    tls: TLSOptions | None = None


class LogstashSpec(ApiModel):
    """The desired state of Logstash."""

    version: str
    count: int | None = None
    image: str | None = None
    elasticsearch_refs: list[ElasticsearchClusterSelector] | None = None
    config: FreeForm | None = None
    config_ref: ConfigSource | None = None
    pipelines: list[FreeForm] | None = None
    pipelines_ref: ConfigSource | None = None
    services: list[LogstashService] | None = None
    monitoring: Monitoring | None = None
    resources: Resources | None = None
    pod_template: FreeForm | None = None
    revision_history_limit: int | None = None
    secure_settings: list[SecretSource] | None = None
    service_account_name: str | None = None
    update_strategy: FreeForm | None = None
    volume_claim_templates: list[FreeForm] | None = None


class LogstashStatus(NodesStatus):
    """The observed state of Logstash."""

    elasticsearch_associations_status: AssociationStatusMap | None = None
    monitoring_association_status: AssociationStatusMap | None = None
    selector: str | None = None


class Logstash(CustomResource):
    """A Logstash deployment."""

    GROUP: ClassVar[str] = "logstash.k8s.elastic.co"
    KIND: ClassVar[str] = "Logstash"

    spec: LogstashSpec
    status: LogstashStatus | None = None
