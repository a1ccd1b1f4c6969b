"""The table of every ECK kind: group, versions, names, scale subresource and printer columns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stackflow.api.agent import Agent
from stackflow.api.apm import ApmServer
from stackflow.api.autoops import AutoOpsAgentPolicy
from stackflow.api.autoscaler import ElasticsearchAutoscaler
from stackflow.api.base import CustomResource, InvalidResourceError, unknown_fields
from stackflow.api.beat import Beat
from stackflow.api.elasticsearch import Elasticsearch
from stackflow.api.enterprisesearch import EnterpriseSearch
from stackflow.api.kibana import Kibana
from stackflow.api.logstash import Logstash
from stackflow.api.maps import ElasticMapsServer
from stackflow.api.packageregistry import PackageRegistry
from stackflow.api.stackconfigpolicy import StackConfigPolicy
from stackflow.models.kinds import Kind

CATEGORY = "elastic"


@dataclass(frozen=True)
class Version:
    """One version of a kind: served or not, the storage version or not."""

    name: str
    served: bool = True
    storage: bool = False


@dataclass(frozen=True)
class ScalePaths:
    """The ``scale`` subresource paths of a kind."""

    spec_replicas_path: str = ".spec.count"
    status_replicas_path: str = ".status.count"
    label_selector_path: str = ".status.selector"


@dataclass(frozen=True)
class PrinterColumn:
    """An ``additionalPrinterColumns`` entry."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int | None = None

    def to_object(self) -> dict[str, Any]:
        """The CRD form of this column."""
        column: dict[str, Any] = {"jsonPath": self.json_path, "name": self.name, "type": self.type}
        if self.description:
            column["description"] = self.description
        if self.priority is not None:
            column["priority"] = self.priority
        return column


@dataclass(frozen=True)
class KindInfo:
    """Everything the CRD of one kind says besides its schema."""

    model: type[CustomResource]
    versions: tuple[Version, ...]
    plural: str
    short_names: tuple[str, ...]
    printer_columns: tuple[PrinterColumn, ...]
    scale: ScalePaths | None = None
    categories: tuple[str, ...] = field(default=(CATEGORY,))

    @property
    def group(self) -> str:
        """The API group."""
        return self.model.GROUP

    @property
    def kind(self) -> str:
        """The kind name."""
        return self.model.KIND

    @property
    def singular(self) -> str:
        """The lower-case singular resource name."""
        return self.kind.lower()

    @property
    def storage_version(self) -> str:
        """The version objects are stored in (the preferred one)."""
        return next(v.name for v in self.versions if v.storage)

    @property
    def served_versions(self) -> tuple[str, ...]:
        """Versions the API serves."""
        return tuple(v.name for v in self.versions if v.served)

    @property
    def api_version(self) -> str:
        """``group/storageVersion``, the apiVersion the operator writes."""
        return f"{self.group}/{self.storage_version}"

    @property
    def resource(self) -> Kind:
        """The kind as the operator reads and writes it: its storage version."""
        return Kind(self.group, self.storage_version, self.kind, self.plural)

    @property
    def crd_name(self) -> str:
        """``plural.group``, the CRD's metadata.name."""
        return f"{self.plural}.{self.group}"


def _age() -> PrinterColumn:
    return PrinterColumn("age", "date", ".metadata.creationTimestamp")


def _health() -> PrinterColumn:
    return PrinterColumn("health", "string", ".status.health")


def _version(description: str) -> PrinterColumn:
    return PrinterColumn("version", "string", ".status.version", description)


def _deployment_columns(app: str) -> tuple[PrinterColumn, ...]:
    return (
        _health(),
        PrinterColumn("nodes", "integer", ".status.availableNodes", "Available nodes"),
        _version(f"{app} version"),
        _age(),
    )


def _available_expected() -> tuple[PrinterColumn, PrinterColumn]:
    return (
        PrinterColumn("available", "integer", ".status.availableNodes", "Available nodes"),
        PrinterColumn("expected", "integer", ".status.expectedNodes", "Expected nodes"),
    )


def _condition(name: str) -> PrinterColumn:
    return PrinterColumn(name, "string", f".status.conditions[?(@.type=='{name}')].status")


_V1_FAMILY = (Version("v1", storage=True), Version("v1beta1"), Version("v1alpha1", served=False))
_V1ALPHA1 = (Version("v1alpha1", storage=True),)

KINDS: tuple[KindInfo, ...] = (
    KindInfo(
        model=Elasticsearch,
        versions=_V1_FAMILY,
        plural="elasticsearches",
        short_names=("es",),
        printer_columns=(
            _health(),
            PrinterColumn("nodes", "integer", ".status.availableNodes", "Available nodes"),
            _version("Elasticsearch version"),
            PrinterColumn("phase", "string", ".status.phase"),
            _age(),
        ),
    ),
    KindInfo(
        model=Kibana,
        versions=_V1_FAMILY,
        plural="kibanas",
        short_names=("kb",),
        printer_columns=_deployment_columns("Kibana"),
        scale=ScalePaths(),
    ),
    KindInfo(
        model=ApmServer,
        versions=_V1_FAMILY,
        plural="apmservers",
        short_names=("apm",),
        printer_columns=_deployment_columns("APM"),
        scale=ScalePaths(),
    ),
    KindInfo(
        model=EnterpriseSearch,
        versions=(Version("v1", storage=True), Version("v1beta1")),
        plural="enterprisesearches",
        short_names=("ent",),
        printer_columns=_deployment_columns("Enterprise Search"),
        scale=ScalePaths(),
    ),
    KindInfo(
        model=Beat,
        versions=(Version("v1beta1", storage=True),),
        plural="beats",
        short_names=("beat",),
        printer_columns=(
            _health(),
            *_available_expected(),
            PrinterColumn("type", "string", ".spec.type", "Beat type"),
            _version("Beat version"),
            _age(),
        ),
    ),
    KindInfo(
        model=Agent,
        versions=_V1ALPHA1,
        plural="agents",
        short_names=("agent",),
        printer_columns=(_health(), *_available_expected(), _version("Agent version"), _age()),
    ),
    KindInfo(
        model=Logstash,
        versions=_V1ALPHA1,
        plural="logstashes",
        short_names=("ls",),
        printer_columns=(_health(), *_available_expected(), _age(), _version("Logstash version")),
        scale=ScalePaths(status_replicas_path=".status.expectedNodes"),
    ),
    KindInfo(
        model=ElasticMapsServer,
        versions=_V1ALPHA1,
        plural="elasticmapsservers",
        short_names=("ems",),
        printer_columns=_deployment_columns("ElasticMapsServer"),
        scale=ScalePaths(),
    ),
    KindInfo(
        model=PackageRegistry,
        versions=_V1ALPHA1,
        plural="packageregistries",
        short_names=("epr",),
        printer_columns=_deployment_columns("Package Registry"),
        scale=ScalePaths(),
    ),
    KindInfo(
        model=StackConfigPolicy,
        versions=_V1ALPHA1,
        plural="stackconfigpolicies",
        short_names=("scp",),
        printer_columns=(
            PrinterColumn("Ready", "string", ".status.readyCount", "Resources configured"),
            PrinterColumn("Phase", "string", ".status.phase"),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
            PrinterColumn("Weight", "integer", ".spec.weight", "Weight of the policy", priority=1),
        ),
    ),
    KindInfo(
        model=ElasticsearchAutoscaler,
        versions=_V1ALPHA1,
        plural="elasticsearchautoscalers",
        short_names=("esa",),
        printer_columns=(
            PrinterColumn("Target", "string", ".spec.elasticsearchRef.name"),
            _condition("Active"),
            _condition("Healthy"),
            _condition("Limited"),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
        ),
    ),
    KindInfo(
        model=AutoOpsAgentPolicy,
        versions=_V1ALPHA1,
        plural="autoopsagentpolicies",
        short_names=("aop",),
        printer_columns=(
            PrinterColumn("Ready", "string", ".status.readyCount", "Resources configured"),
            PrinterColumn("Phase", "string", ".status.phase"),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
        ),
    ),
)

_BY_KIND: dict[str, KindInfo] = {info.kind: info for info in KINDS}
_BY_GROUP_KIND: dict[tuple[str, str], KindInfo] = {(info.group, info.kind): info for info in KINDS}


def kind_info(kind: str) -> KindInfo:
    """The table entry of ``kind`` (``"Elasticsearch"``); KeyError for an unknown kind."""
    return _BY_KIND[kind]


def kind_resource(kind: str) -> Kind:
    """The Kubernetes kind of an ECK kind name, in its storage version; KeyError when unknown."""
    return _BY_KIND[kind].resource


def kind_for_object(obj: dict[str, Any]) -> KindInfo | None:
    """The table entry matching an object's apiVersion group and kind, or None."""
    group = str(obj.get("apiVersion", "")).partition("/")[0]
    return _BY_GROUP_KIND.get((group, str(obj.get("kind", ""))))


def parse_object(obj: dict[str, Any]) -> CustomResource:
    """Parse any ECK custom object with its kind's model; ValueError for an unknown kind."""
    info = kind_for_object(obj)
    if info is None:
        raise ValueError(
            f"not an ECK kind: apiVersion={obj.get('apiVersion')!r} kind={obj.get('kind')!r}"
        )
    return info.model.from_object(obj)


def unknown_spec_fields(obj: dict[str, Any]) -> list[str]:
    """The ``spec`` fields of an ECK object its kind does not declare (kept, but not read), pure.

    Empty for an object that does not parse (validation reports its problems) or of an unknown
    kind. Free-form parts (``config``, ``podTemplate``) are never looked into.
    """
    try:
        model = parse_object(obj)
    except (ValueError, InvalidResourceError):
        return []
    return [path for path in unknown_fields(model) if path.startswith("spec.")]
