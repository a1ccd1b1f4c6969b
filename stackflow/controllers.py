"""The controller table: one entry per controller (see docs/engine.md).

A controller is data: its primary kind, whether the license gate applies, its reconcile, finalize
and compensation activities, the child kinds whose changes wake it (with a pure owner mapper), the
objects its spec references, and its namespace-flip mapper. ``activities.registry`` turns the table
into registered Temporal activities; ``watchers`` turns it into informers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from activities import elasticsearch as es_activities
from activities import license as license_activities
from activities import trial as trial_activities
from activities.context import ControllerContext
from stackflow.kube.resources import ResourceRef as KubeResource
from stackflow.models.engine import (
    CompensateInput,
    CompensateResult,
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    ObjectKey,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.stack.elasticsearch.references import referenced_objects

__all__ = [
    "CONTROLLERS",
    "ChildWatch",
    "Controller",
    "Kind",
    "controller_named",
]


@dataclass(frozen=True)
class Kind:
    """A Kubernetes kind by group, version, kind and plural (all namespaced here)."""

    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        """``group/version`` (``version`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def resource(self) -> KubeResource:
        """The ``stackflow.kube`` resource to read and write objects of this kind."""
        return KubeResource(self.group, self.version, self.plural, namespaced=True, kind=self.kind)


OwnerMapper = Callable[[Mapping[str, Any]], tuple[str, str] | None]


@dataclass(frozen=True)
class ChildWatch:
    """A child kind whose events wake the owner's workflow; ``owner`` maps a child to it (pure)."""

    kind: Kind
    owner: OwnerMapper
    #: Narrow the child informer (e.g. only labelled Secrets); None watches every object.
    label_selector: str | None = None


Reconcile = Callable[[ControllerContext, ReconcileInput], Awaitable[ReconcileResult]]
Finalize = Callable[[ControllerContext, FinalizeInput], Awaitable[FinalizeResult]]
Compensation = Callable[[ControllerContext, CompensateInput], Awaitable[CompensateResult]]
FlipMapper = Callable[[ControllerContext, str, FlipDirectionName], Awaitable[list[dict[str, Any]]]]


def no_references(obj: Mapping[str, Any]) -> list[ObjectKey]:
    """A controller whose spec references nothing."""
    return []


@dataclass(frozen=True)
class Controller:
    """One controller of the table."""

    name: str
    primary: Kind
    gated: bool
    reconcile: Reconcile
    finalize: Finalize
    compensations: Mapping[str, Compensation] = field(default_factory=dict)
    children: tuple[ChildWatch, ...] = ()
    references: Callable[[Mapping[str, Any]], list[ObjectKey]] = no_references
    #: None: the default mapper (every object of the primary kind in the namespace, unscoped).
    flip_mapper: FlipMapper | None = None
    #: Narrow the primary informer (the trial controller watches only trial Secrets).
    primary_label_selector: str | None = None


# --- kinds -------------------------------------------------------------------------------------

ELASTICSEARCH = Kind("elasticsearch.k8s.elastic.co", "v1", "Elasticsearch", "elasticsearches")
SECRET = Kind("", "v1", "Secret", "secrets")
CONFIGMAP = Kind("", "v1", "ConfigMap", "configmaps")
SERVICE = Kind("", "v1", "Service", "services")
POD = Kind("", "v1", "Pod", "pods")
STATEFULSET = Kind("apps", "v1", "StatefulSet", "statefulsets")
PODDISRUPTIONBUDGET = Kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")

ES_CLUSTER_NAME_LABEL = "elasticsearch.k8s.elastic.co/cluster-name"
ES_LICENSE_SCOPE_SELECTOR = "license.k8s.elastic.co/scope=elasticsearch"


# --- owner mappers and references (pure) -------------------------------------------------------


def es_cluster_owner(child: Mapping[str, Any]) -> tuple[str, str] | None:
    """An Elasticsearch child's owner, from its ``cluster-name`` label."""
    metadata = child.get("metadata") or {}
    cluster = (metadata.get("labels") or {}).get(ES_CLUSTER_NAME_LABEL)
    namespace = metadata.get("namespace")
    return (str(namespace), str(cluster)) if cluster and namespace else None


def es_owner_reference(child: Mapping[str, Any]) -> tuple[str, str] | None:
    """The Elasticsearch named by a child's ownerReferences (the ``<es>-es-license`` Secret)."""
    metadata = child.get("metadata") or {}
    for owner in metadata.get("ownerReferences") or []:
        if owner.get("kind") == ELASTICSEARCH.kind and str(owner.get("apiVersion", "")).startswith(
            ELASTICSEARCH.group + "/"
        ):
            return (str(metadata.get("namespace") or ""), str(owner.get("name") or ""))
    return None


def es_references(es: Mapping[str, Any]) -> list[ObjectKey]:
    """The Secrets and ConfigMaps an Elasticsearch spec references."""
    return [
        ObjectKey(kind=item.kind, namespace=item.namespace, name=item.name)
        for item in referenced_objects(es)
    ]


# --- the table ---------------------------------------------------------------------------------

_ES_CHILD_KINDS = (STATEFULSET, SERVICE, CONFIGMAP, SECRET, POD, PODDISRUPTIONBUDGET)

ELASTICSEARCH_CONTROLLER = Controller(
    name="elasticsearch",
    primary=ELASTICSEARCH,
    gated=True,
    reconcile=es_activities.reconcile,
    finalize=es_activities.finalize,
    compensations={es_activities.RELEASE_OBSERVERS: es_activities.release_observers},
    children=tuple(
        ChildWatch(kind=kind, owner=es_cluster_owner, label_selector=ES_CLUSTER_NAME_LABEL)
        for kind in _ES_CHILD_KINDS
    ),
    references=es_references,
)

LICENSE_CONTROLLER = Controller(
    name="license",
    primary=ELASTICSEARCH,
    gated=False,
    reconcile=license_activities.reconcile,
    finalize=license_activities.finalize,
    children=(
        ChildWatch(kind=SECRET, owner=es_owner_reference, label_selector=ES_LICENSE_SCOPE_SELECTOR),
    ),
    flip_mapper=license_activities.flip_mapper,
)

TRIAL_CONTROLLER = Controller(
    name="trial",
    primary=SECRET,
    gated=False,
    reconcile=trial_activities.reconcile,
    finalize=trial_activities.finalize,
    children=(ChildWatch(kind=SECRET, owner=trial_activities.trial_status_owner),),
    flip_mapper=trial_activities.flip_mapper,
    primary_label_selector=trial_activities.TRIAL_SELECTOR,
)

CONTROLLERS: tuple[Controller, ...] = (
    ELASTICSEARCH_CONTROLLER,
    LICENSE_CONTROLLER,
    TRIAL_CONTROLLER,
)


def controller_named(name: str) -> Controller:
    """The controller called ``name``; KeyError when there is none."""
    for controller in CONTROLLERS:
        if controller.name == name:
            return controller
    raise KeyError(f"no controller named {name!r}")
