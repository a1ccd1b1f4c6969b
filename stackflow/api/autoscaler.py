"""ElasticsearchAutoscaler (``autoscaling.k8s.elastic.co/v1alpha1``)."""

from __future__ import annotations

from typing import ClassVar

from stackflow.api.base import ApiModel, CustomResource, FreeForm
from stackflow.api.common import Condition


class AutoscalerElasticsearchRef(ApiModel):
    """The autoscaled cluster, in the autoscaler's namespace."""

    name: str


class AutoscalingPolicy(ApiModel):
    """One autoscaling policy: the roles it covers, its deciders and resource limits."""

    name: str
    roles: list[str] | None = None
    deciders: FreeForm | None = None
    resources: FreeForm | None = None


class ElasticsearchAutoscalerSpec(ApiModel):
    """The desired autoscaling of one Elasticsearch cluster."""

    elasticsearch_ref: AutoscalerElasticsearchRef
    policies: list[AutoscalingPolicy] | None = None
    polling_period: str | None = None


class ElasticsearchAutoscalerStatus(ApiModel):
    """The observed autoscaling state (conditions ``Active``, ``Healthy``, ``Limited``, ``Online``)."""

    observed_generation: int | None = None
    conditions: list[Condition] | None = None
    policies: list[FreeForm] | None = None


class ElasticsearchAutoscaler(CustomResource):
    """Autoscaling of an Elasticsearch cluster (enterprise-only kind)."""

    GROUP: ClassVar[str] = "autoscaling.k8s.elastic.co"
    KIND: ClassVar[str] = "ElasticsearchAutoscaler"

    spec: ElasticsearchAutoscalerSpec
    status: ElasticsearchAutoscalerStatus | None = None
