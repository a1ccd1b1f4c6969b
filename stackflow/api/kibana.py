"""Kibana (``kibana.k8s.elastic.co/v1``)."""

from __future__ import annotations

from typing import ClassVar

from stackflow.api.base import CustomResource
from stackflow.api.common import (
    AssociationStatus,
    AssociationStatusMap,
    DeploymentStatus,
    ElasticsearchSelector,
    LocalObjectSelector,
    Monitoring,
    ObjectSelector,
    SecretSource,
    StackApplicationSpec,
)

KB_CONTAINER_NAME = "kibana"


class KibanaSpec(StackApplicationSpec):
    """The desired state of a Kibana instance."""

    elasticsearch_ref: ElasticsearchSelector | None = None
    enterprise_search_ref: ObjectSelector | None = None
    package_registry_ref: LocalObjectSelector | None = None
    secure_settings: list[SecretSource] | None = None
    monitoring: Monitoring | None = None


class KibanaStatus(DeploymentStatus):
    """The observed state of a Kibana instance, with its association states."""

    association_status: AssociationStatus | None = None
    elasticsearch_association_status: AssociationStatus | None = None
    enterprise_search_association_status: AssociationStatus | None = None
    package_registry_association_status: AssociationStatus | None = None
    monitoring_association_status: AssociationStatusMap | None = None
    observed_generation: int | None = None


class Kibana(CustomResource):
    """A Kibana instance."""

    GROUP: ClassVar[str] = "kibana.k8s.elastic.co"
    KIND: ClassVar[str] = "Kibana"

    spec: KibanaSpec
    status: KibanaStatus | None = None
