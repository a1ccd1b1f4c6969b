"""PackageRegistry (``packageregistry.k8s.elastic.co/v1alpha1``)."""

from __future__ import annotations

from typing import ClassVar

from stackflow.api.base import CustomResource
from stackflow.api.common import ConfigSource, DeploymentStatus, StackApplicationSpec


class PackageRegistrySpec(StackApplicationSpec):
    """The desired state of an Elastic Package Registry."""

    config_ref: ConfigSource | None = None


class PackageRegistryStatus(DeploymentStatus):
    """The observed state of an Elastic Package Registry."""

    observed_generation: int | None = None


class PackageRegistry(CustomResource):
    """An Elastic Package Registry."""

    GROUP: ClassVar[str] = "packageregistry.k8s.elastic.co"
    KIND: ClassVar[str] = "PackageRegistry"

    spec: PackageRegistrySpec
    status: PackageRegistryStatus | None = None
