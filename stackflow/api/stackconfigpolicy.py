"""StackConfigPolicy (``stackconfigpolicy.k8s.elastic.co/v1alpha1``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from stackflow.api.base import ApiModel, CustomResource, FreeForm
from stackflow.api.common import LabelSelector, SecretSource

PolicyPhase = Literal["Unknown", "Ready", "ApplyingChanges", "Invalid", "Error", "Conflict"]
"""Phases in severity order: a policy's phase is the worst of its resources' phases."""

PHASE_SEVERITY: dict[str, int] = {
    "Unknown": -1,
    "Ready": 0,
    "ApplyingChanges": 1,
    "Invalid": 2,
    "Error": 3,
    "Conflict": 4,
}


class IndexTemplates(ApiModel):
    """Component and composable index templates, by name."""

    component_templates: FreeForm | None = None
    composable_index_templates: FreeForm | None = None


class SecretMount(ApiModel):
    """A Secret mounted into the Elasticsearch Pods."""

    secret_name: str
    mount_path: str


class ElasticsearchConfigPolicy(ApiModel):
    """Elasticsearch settings applied through file-based settings and the policy config Secret."""

    cluster_settings: FreeForm | None = None
    snapshot_repositories: FreeForm | None = None
    snapshot_lifecycle_policies: FreeForm | None = None
    security_role_mappings: FreeForm | None = None
    security_roles: FreeForm | None = None
    index_lifecycle_policies: FreeForm | None = None
    ingest_pipelines: FreeForm | None = None
    index_templates: IndexTemplates | None = None
    config: FreeForm | None = None
    secret_mounts: list[SecretMount] | None = None
    secure_settings: list[SecretSource] | None = None


class KibanaConfigPolicy(ApiModel):
    """Kibana settings applied through the policy config Secret."""

    config: FreeForm | None = None
    secure_settings: list[SecretSource] | None = None


class VariablesSource(ApiModel):
    """A ConfigMap or Secret whose keys become ``${VAR}`` substitutions."""

    kind: Literal["ConfigMap", "Secret"]
    name: str
    namespace: str | None = None
    optional: bool | None = None


class StackConfigPolicySpec(ApiModel):
    """The desired configuration and the resources it targets."""

    resource_selector: LabelSelector | None = None
    weight: int | None = None
    secure_settings: list[SecretSource] | None = None
    elasticsearch: ElasticsearchConfigPolicy | None = None
    kibana: KibanaConfigPolicy | None = None
    variables_from: list[VariablesSource] | None = None


class PolicyStatusError(ApiModel):
    """The last error applying a policy to one resource."""

    version: int | None = None
    message: str | None = None


class ResourcePolicyStatus(ApiModel):
    """How far a policy got on one targeted resource."""

    phase: PolicyPhase | None = None
    current_version: int | None = None
    expected_version: int | None = None
    error: PolicyStatusError | None = None


class StackConfigPolicyStatus(ApiModel):
    """The observed state of a policy; ``details`` is keyed ``elasticsearch``/``kibana`` then ``"ns/name"``."""

    resources_statuses: FreeForm | None = None
    details: dict[str, dict[str, ResourcePolicyStatus]] | None = None
    resources: int | None = None
    ready: int | None = None
    errors: int | None = None
    ready_count: str | None = None
    phase: PolicyPhase | None = None
    observed_generation: int | None = None


class StackConfigPolicy(CustomResource):
    """A policy configuring Elasticsearch clusters and Kibana instances selected by labels."""

    GROUP: ClassVar[str] = "stackconfigpolicy.k8s.elastic.co"
    KIND: ClassVar[str] = "StackConfigPolicy"

    spec: StackConfigPolicySpec
    status: StackConfigPolicyStatus | None = None
