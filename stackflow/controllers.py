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

from activities import apps as app_activities
from activities import associations as association_activities
from activities import elasticsearch as es_activities
from activities import license as license_activities
from activities import trial as trial_activities
from activities.association_targets import target_resource
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
from stackflow.stack.apps import APP_KINDS, AppKind
from stackflow.stack.associations.table import ASSOCIATIONS, Association
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
    #: Every kind ``references`` can name: the watchers wake the referrers on their changes.
    reference_kinds: tuple[Kind, ...] = ()
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
    # The cluster-name Secret watch also covers the association controllers' user and
    # service-account-token Secrets (they carry the label), so the file realm follows them; the
    # license Secret has no cluster-name label and is mapped through its ownerReference.
    children=(
        *(
            ChildWatch(kind=kind, owner=es_cluster_owner, label_selector=ES_CLUSTER_NAME_LABEL)
            for kind in _ES_CHILD_KINDS
        ),
        ChildWatch(kind=SECRET, owner=es_owner_reference, label_selector=ES_LICENSE_SCOPE_SELECTOR),
    ),
    references=es_references,
    reference_kinds=(SECRET, CONFIGMAP),
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

# --- stack applications and associations -----------------------------------------------------

DEPLOYMENT = Kind("apps", "v1", "Deployment", "deployments")
DAEMONSET = Kind("apps", "v1", "DaemonSet", "daemonsets")
_APP_CHILD_KINDS = (DEPLOYMENT, DAEMONSET, STATEFULSET, SERVICE, CONFIGMAP, SECRET, POD)
#: Controller names: ECK's short kind names.
APP_CONTROLLER_NAMES: Mapping[str, str] = {
    "Kibana": "kibana",
    "ApmServer": "apmserver",
    "EnterpriseSearch": "enterprisesearch",
    "Beat": "beat",
    "Agent": "agent",
    "Logstash": "logstash",
    "ElasticMapsServer": "maps",
    "PackageRegistry": "packageregistry",
}


def kind_of(resource: KubeResource) -> Kind:
    """The table ``Kind`` of a ``stackflow.kube`` resource."""
    return Kind(resource.group, resource.version, resource.kind, resource.plural)


def app_controller(app: AppKind) -> Controller:
    """One application controller: the generic app reconcile, children found by the name label."""
    owner = app_activities.app_owner(app.kind)
    return Controller(
        name=APP_CONTROLLER_NAMES[app.kind],
        primary=kind_of(app_activities.app_resource(app.kind)),
        gated=True,
        reconcile=app_activities.reconcile,
        finalize=app_activities.finalize,
        children=tuple(
            ChildWatch(kind=kind, owner=owner, label_selector=app.name_label)
            for kind in _APP_CHILD_KINDS
        ),
        references=app_activities.app_references,
        reference_kinds=(SECRET,),
    )


def association_controller(association: Association) -> Controller:
    """One association controller (``kb-es``…): its Secrets on both sides are its children."""
    release = association_activities.release_watches_activity(association)
    return Controller(
        name=association.name,
        primary=kind_of(app_activities.app_resource(association.associated_kind)),
        gated=True,
        reconcile=association_activities.reconcile_for(association),
        finalize=association_activities.finalize_for(association),
        compensations={release: association_activities.release_watches_for(association)},
        children=(
            ChildWatch(
                kind=SECRET,
                owner=association_activities.association_owner(association),
                label_selector=association_activities.association_secrets_label_selector(
                    association
                ),
            ),
        ),
        references=association_activities.association_references(association),
        reference_kinds=(
            kind_of(target_resource(association.target.kind)),
            SERVICE,
            SECRET,
        ),
        flip_mapper=association_activities.flip_mapper_for(association),
    )


APP_CONTROLLERS: tuple[Controller, ...] = tuple(app_controller(app) for app in APP_KINDS.values())
ASSOCIATION_CONTROLLERS: tuple[Controller, ...] = tuple(
    association_controller(association) for association in ASSOCIATIONS
)

CONTROLLERS: tuple[Controller, ...] = (
    ELASTICSEARCH_CONTROLLER,
    LICENSE_CONTROLLER,
    TRIAL_CONTROLLER,
    *APP_CONTROLLERS,
    *ASSOCIATION_CONTROLLERS,
)


def controller_named(name: str) -> Controller:
    """The controller called ``name``; KeyError when there is none."""
    for controller in CONTROLLERS:
        if controller.name == name:
            return controller
    raise KeyError(f"no controller named {name!r}")
