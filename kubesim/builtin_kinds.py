"""The built-in kinds kubesim serves, described as the real API server describes them in discovery."""

from __future__ import annotations

from typing import Any

from kubesim.resource_type import ResourceType, ScaleSpec

_REPLICAS_SCALE = ScaleSpec(
    spec_replicas_path=".spec.replicas",
    status_replicas_path=".status.replicas",
    label_selector_path=".spec.selector",
)

_EVENT_FIELD_SELECTORS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)


def _core(
    plural: str,
    kind: str,
    *,
    short_names: tuple[str, ...] = (),
    namespaced: bool = True,
    **extra: Any,
) -> ResourceType:
    return ResourceType(
        group="",
        version="v1",
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        list_kind=f"{kind}List",
        namespaced=namespaced,
        short_names=short_names,
        **extra,
    )


def _grouped(
    group: str,
    plural: str,
    kind: str,
    *,
    short_names: tuple[str, ...] = (),
    namespaced: bool = True,
    **extra: Any,
) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        list_kind=f"{kind}List",
        namespaced=namespaced,
        short_names=short_names,
        **extra,
    )


def _workload(
    plural: str, kind: str, short: str, *, generation: str, scalable: bool
) -> ResourceType:
    return _grouped(
        "apps",
        plural,
        kind,
        short_names=(short,),
        categories=("all",),
        has_status=True,
        scale=_REPLICAS_SCALE if scalable else None,
        generation=generation,
    )


BUILTIN_RESOURCE_TYPES: tuple[ResourceType, ...] = (
    # core/v1
    _core(
        "namespaces",
        "Namespace",
        short_names=("ns",),
        namespaced=False,
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        has_status=True,
        field_selectors=frozenset({"status.phase"}),
        returns_deleted_object=True,
    ),
    _core("secrets", "Secret", field_selectors=frozenset({"type"})),
    _core("configmaps", "ConfigMap", short_names=("cm",)),
    _core("services", "Service", short_names=("svc",), categories=("all",), has_status=True),
    _core("endpoints", "Endpoints", short_names=("ep",)),
    _core(
        "pods",
        "Pod",
        short_names=("po",),
        categories=("all",),
        has_status=True,
        generation="spec",
        # PodToSelectableFields of the real server.
        field_selectors=frozenset(
            {
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
            }
        ),
        returns_deleted_object=True,
    ),
    _core("serviceaccounts", "ServiceAccount", short_names=("sa",), returns_deleted_object=True),
    _core("persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",), has_status=True),
    _core(
        "events",
        "Event",
        short_names=("ev",),
        field_selectors=_EVENT_FIELD_SELECTORS,
        shared_storage=("", "events"),
    ),
    _core(
        "nodes",
        "Node",
        short_names=("no",),
        namespaced=False,
        has_status=True,
        field_selectors=frozenset({"spec.unschedulable"}),
    ),
    # apps/v1
    _workload("statefulsets", "StatefulSet", "sts", generation="spec", scalable=True),
    _workload(
        "deployments", "Deployment", "deploy", generation="spec_or_annotations", scalable=True
    ),
    _workload("daemonsets", "DaemonSet", "ds", generation="spec", scalable=False),
    _workload("replicasets", "ReplicaSet", "rs", generation="spec", scalable=True),
    # events.k8s.io/v1: same storage as core/v1 events
    _grouped(
        "events.k8s.io",
        "events",
        "Event",
        short_names=("ev",),
        field_selectors=_EVENT_FIELD_SELECTORS,
        shared_storage=("", "events"),
    ),
    # authorization.k8s.io/v1: create-only reviews
    _grouped(
        "authorization.k8s.io",
        "subjectaccessreviews",
        "SubjectAccessReview",
        namespaced=False,
        verbs=("create",),
    ),
    _grouped(
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        namespaced=False,
        verbs=("create",),
    ),
    # policy/v1
    _grouped(
        "policy",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        short_names=("pdb",),
        has_status=True,
        generation="spec",
    ),
    # rbac.authorization.k8s.io/v1
    _grouped("rbac.authorization.k8s.io", "roles", "Role"),
    _grouped("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _grouped("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", namespaced=False),
    _grouped(
        "rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
    ),
    # admissionregistration.k8s.io/v1
    _grouped(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        namespaced=False,
        categories=("api-extensions",),
        generation="non_metadata",
    ),
    _grouped(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        namespaced=False,
        categories=("api-extensions",),
        generation="non_metadata",
    ),
    # apiextensions.k8s.io/v1
    _grouped(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        short_names=("crd", "crds"),
        namespaced=False,
        categories=("api-extensions",),
        has_status=True,
        generation="spec",
    ),
    # coordination.k8s.io/v1
    _grouped("coordination.k8s.io", "leases", "Lease"),
    # discovery.k8s.io/v1: kept by the EndpointSlice controller (controllers/endpointslices.py)
    _grouped("discovery.k8s.io", "endpointslices", "EndpointSlice"),
)
