"""ElasticMapsServer (``maps.k8s.elastic.co/v1alpha1``)."""

from __future__ import annotations

from typing import ClassVar

from stackflow.api.base import CustomResource
from stackflow.api.common import (
    AssociationStatus,
    ConfigSource,
    DeploymentStatus,
    ElasticsearchSelector,
    StackApplicationSpec,
)


class ElasticMapsServerSpec(StackApplicationSpec):
    """The desired state of an Elastic Maps Server."""

    config_ref: ConfigSource | None = None
    elasticsearch_ref: ElasticsearchSelector | None = None


class ElasticMapsServerStatus(DeploymentStatus):
    """The observed state of an Elastic Maps Server."""

    association_status: AssociationStatus | None = None
    observed_generation: int | None = None


class ElasticMapsServer(CustomResource):
    """An Elastic Maps Server (enterprise-only kind)."""

    GROUP: ClassVar[str] = "maps.k8s.elastic.co"
    KIND: ClassVar[str] = "ElasticMapsServer"

    spec: ElasticMapsServerSpec
    status: ElasticMapsServerStatus | None = None
