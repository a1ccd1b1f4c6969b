"""EnterpriseSearch (``enterprisesearch.k8s.elastic.co/v1``)."""

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


class EnterpriseSearchSpec(StackApplicationSpec):
    """The desired state of Enterprise Search."""

    config_ref: ConfigSource | None = None
    elasticsearch_ref: ElasticsearchSelector | None = None


class EnterpriseSearchStatus(DeploymentStatus):
    """The observed state of Enterprise Search."""

    service: str | None = None
    association_status: AssociationStatus | None = None
    observed_generation: int | None = None


class EnterpriseSearch(CustomResource):
    """An Enterprise Search deployment."""

    GROUP: ClassVar[str] = "enterprisesearch.k8s.elastic.co"
    KIND: ClassVar[str] = "EnterpriseSearch"

    spec: EnterpriseSearchSpec
    status: EnterpriseSearchStatus | None = None
