"""AutoOpsAgentPolicy (``autoops.k8s.elastic.co/v1alpha1``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from stackflow.api.base import ApiModel, CustomResource, FreeForm
from stackflow.api.common import (
    Condition,
    ConfigMapOrSecretSource,
    LabelSelector,
    Resources,
)

AutoOpsPhase = Literal[
    "Ready",
    "ApplyingChanges",
    "Invalid",
    "NoMonitoredResources",
    "MonitoredResourcesNotReady",
    "AutoOpsAgentsNotReady",
    "Error",
]

PHASE_PRIORITY: dict[str, int] = {
    "Ready": 1,
    "ApplyingChanges": 1,
    "MonitoredResourcesNotReady": 2,
    "AutoOpsAgentsNotReady": 2,
    "Error": 3,
    "NoMonitoredResources": 4,
    "Invalid": 5,
}
"""A phase never overrides a higher-priority one within a reconcile."""

AUTOOPS_CONTAINER_NAME = "autoops-agent"


class AutoOpsRef(ApiModel):
    """The Secret (policy namespace) with the AutoOps connection settings."""

    secret_name: str


class AutoOpsAgentPolicySpec(ApiModel):
    """The desired AutoOps agents: which clusters, and how the agents run."""

    version: str
    resource_selector: LabelSelector
    namespace_selector: LabelSelector | None = None
    auto_ops_ref: AutoOpsRef
    image: str | None = None
    resources: Resources | None = None
    pod_template: FreeForm | None = None
    revision_history_limit: int | None = None
    service_account_name: str | None = None
    config: FreeForm | None = None
    config_ref: ConfigMapOrSecretSource | None = None


class AutoOpsResourceDetail(ApiModel):
    """Why one cluster is not monitored."""

    phase: Literal["Error", "Skipped"] | None = None
    message: str | None = None
    error: str | None = None


class AutoOpsAgentPolicyStatus(ApiModel):
    """The observed state of an AutoOps policy."""

    resources: int | None = None
    ready: int | None = None
    errors: int | None = None
    skipped: int | None = None
    ready_count: str | None = None
    phase: AutoOpsPhase | None = None
    observed_generation: int | None = None
    conditions: list[Condition] | None = None
    details: dict[str, AutoOpsResourceDetail] | None = None


class AutoOpsAgentPolicy(CustomResource):
    """AutoOps agents for the Elasticsearch clusters a selector matches."""

    GROUP: ClassVar[str] = "autoops.k8s.elastic.co"
    KIND: ClassVar[str] = "AutoOpsAgentPolicy"

    spec: AutoOpsAgentPolicySpec
    status: AutoOpsAgentPolicyStatus | None = None
