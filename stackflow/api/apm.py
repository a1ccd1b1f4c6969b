"""ApmServer (``apm.k8s.elastic.co/v1``)."""

from __future__ import annotations

from typing import ClassVar

from stackflow.api.base import CustomResource
from stackflow.api.common import (
    AssociationStatus,
    DeploymentStatus,
    ElasticsearchSelector,
    ObjectSelector,
    SecretSource,
    StackApplicationSpec,
)


class ApmServerSpec(StackApplicationSpec):
    """The desired state of an APM Server."""

    elasticsearch_ref: ElasticsearchSelector | None = None
    kibana_ref: ObjectSelector | None = None
    secure_settings: list[SecretSource] | None = None


class ApmServerStatus(DeploymentStatus):
    """The observed state of an APM Server."""

    service: str | None = None
    secret_token_secret: str | None = None
    elasticsearch_association_status: AssociationStatus | None = None
    kibana_association_status: AssociationStatus | None = None
    observed_generation: int | None = None


class ApmServer(CustomResource):
    """An APM Server."""

    GROUP: ClassVar[str] = "apm.k8s.elastic.co"
    KIND: ClassVar[str] = "ApmServer"

    spec: ApmServerSpec
    status: ApmServerStatus | None = None
