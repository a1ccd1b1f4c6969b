"""Registry lookups: built-in kinds, CRD-served kinds, discovery order of groups and versions."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.resources import Registry, ScaleSpec, version_priority_key


def widget_crd(
    *,
    versions: list[dict[str, Any]] | None = None,
    established: bool = True,
    scope: str = "Namespaced",
) -> dict[str, Any]:
    """A CRD for widgets.example.com, established unless told otherwise."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {
                "plural": "widgets",
                "kind": "Widget",
                "shortNames": ["wd"],
                "categories": ["all", "toys"],
            },
            "versions": versions
            or [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
        "status": {
            "conditions": [
                {"type": "Established", "status": "True" if established else "False"},
            ]
        },
    }


@pytest.mark.parametrize(
    ("group", "plural", "kind", "namespaced", "short_names"),
    [
        ("", "namespaces", "Namespace", False, ("ns",)),
        ("", "secrets", "Secret", True, ()),
        ("", "configmaps", "ConfigMap", True, ("cm",)),
        ("", "services", "Service", True, ("svc",)),
        ("", "endpoints", "Endpoints", True, ("ep",)),
        ("", "pods", "Pod", True, ("po",)),
        ("", "serviceaccounts", "ServiceAccount", True, ("sa",)),
        ("", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",)),
        ("", "events", "Event", True, ("ev",)),
        ("", "nodes", "Node", False, ("no",)),
        ("apps", "statefulsets", "StatefulSet", True, ("sts",)),
        ("apps", "deployments", "Deployment", True, ("deploy",)),
        ("apps", "daemonsets", "DaemonSet", True, ("ds",)),
        ("apps", "replicasets", "ReplicaSet", True, ("rs",)),
        ("policy", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",)),
        ("coordination.k8s.io", "leases", "Lease", True, ()),
        ("discovery.k8s.io", "endpointslices", "EndpointSlice", True, ()),
        ("events.k8s.io", "events", "Event", True, ("ev",)),
        ("rbac.authorization.k8s.io", "roles", "Role", True, ()),
        ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", True, ()),
        ("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False, ()),
        ("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", False, ()),
        ("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", False, ()),
        ("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, ()),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            False,
            (),
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            False,
            (),
        ),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            ("crd", "crds"),
        ),
    ],
)
def test_builtin_lookup(
    group: str, plural: str, kind: str, namespaced: bool, short_names: tuple[str, ...]
) -> None:
    reg = Registry.builtin()
    rt = reg.lookup(group, "v1", plural)
    assert rt is not None
    assert (rt.kind, rt.namespaced, rt.short_names) == (kind, namespaced, short_names)
    assert rt.list_kind == f"{kind}List"
    assert rt.singular == kind.lower()
    assert not rt.custom
    assert reg.by_kind(rt.api_version, kind) is rt


@pytest.mark.parametrize(
    ("group", "plural", "has_status", "scalable", "generation"),
    [
        ("", "namespaces", True, False, "none"),
        ("", "configmaps", False, False, "none"),
        ("", "secrets", False, False, "none"),
        ("", "services", True, False, "none"),
        ("", "pods", True, False, "spec"),
        ("", "persistentvolumeclaims", True, False, "none"),
        ("", "nodes", True, False, "none"),
        ("", "events", False, False, "none"),
        ("apps", "deployments", True, True, "spec_or_annotations"),
        ("apps", "statefulsets", True, True, "spec"),
        ("apps", "replicasets", True, True, "spec"),
        ("apps", "daemonsets", True, False, "spec"),
        ("policy", "poddisruptionbudgets", True, False, "spec"),
        ("coordination.k8s.io", "leases", False, False, "none"),
        ("apiextensions.k8s.io", "customresourcedefinitions", True, False, "spec"),
    ],
)
def test_builtin_subresources_and_generation(
    group: str, plural: str, has_status: bool, scalable: bool, generation: str
) -> None:
    rt = Registry.builtin().lookup(group, "v1", plural)
    assert rt is not None
    assert rt.has_status is has_status
    assert (rt.scale is not None) is scalable
    assert rt.generation == generation


def test_workload_scale_paths() -> None:
    rt = Registry.builtin().lookup("apps", "v1", "deployments")
    assert rt is not None
    assert rt.scale == ScaleSpec(".spec.replicas", ".status.replicas", ".spec.selector")
    assert rt.subresources == ("status", "scale")


@pytest.mark.parametrize(
    ("plural", "verbs"),
    [
        ("namespaces", ("create", "delete", "get", "list", "patch", "update", "watch")),
        (
            "configmaps",
            ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
        ),
    ],
)
def test_core_verbs(plural: str, verbs: tuple[str, ...]) -> None:
    rt = Registry.builtin().lookup("", "v1", plural)
    assert rt is not None
    assert rt.verbs == verbs


def test_access_reviews_are_create_only() -> None:
    rt = Registry.builtin().lookup("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
    assert rt is not None
    assert rt.verbs == ("create",)


@pytest.mark.parametrize(
    ("group", "plural", "field_name", "supported"),
    [
        ("", "pods", "spec.nodeName", True),
        ("", "pods", "status.podIP", True),
        ("", "pods", "spec.serviceAccountName", True),
        ("", "pods", "status.phase", True),
        ("", "pods", "spec.foo", False),
        ("", "namespaces", "status.phase", True),
        ("", "secrets", "type", True),
        ("", "configmaps", "type", False),
        ("", "configmaps", "metadata.name", True),
        ("", "configmaps", "metadata.namespace", True),
        ("", "events", "involvedObject.uid", True),
        ("", "events", "involvedObject.fieldPath", True),
        ("", "events", "reportingComponent", True),
        ("", "events", "source", True),
        ("events.k8s.io", "events", "involvedObject.name", True),
    ],
)
def test_field_selector_support(group: str, plural: str, field_name: str, supported: bool) -> None:
    rt = Registry.builtin().lookup(group, "v1", plural)
    assert rt is not None
    assert rt.supports_field(field_name) is supported


@pytest.mark.parametrize(
    ("plural", "returns_deleted"),
    [("pods", True), ("serviceaccounts", True), ("namespaces", True), ("configmaps", False)],
)
def test_returns_deleted_object(plural: str, returns_deleted: bool) -> None:
    rt = Registry.builtin().lookup("", "v1", plural)
    assert rt is not None
    assert rt.returns_deleted_object is returns_deleted


def test_events_share_storage_and_others_do_not() -> None:
    reg = Registry.builtin()
    core = reg.lookup("", "v1", "events")
    new = reg.lookup("events.k8s.io", "v1", "events")
    deployments = reg.lookup("apps", "v1", "deployments")
    assert core is not None
    assert new is not None
    assert deployments is not None
    assert core.storage_key == new.storage_key == ("", "events")
    assert deployments.storage_key == ("apps", "deployments")


@pytest.mark.parametrize(
    ("api_version", "kind", "plural"),
    [
        ("v1", "ConfigMap", "configmaps"),
        ("apps/v1", "Deployment", "deployments"),
        ("events.k8s.io/v1", "Event", "events"),
        ("v1", "Deployment", None),
        ("apps/v2", "Deployment", None),
    ],
)
def test_by_kind(api_version: str, kind: str, plural: str | None) -> None:
    rt = Registry.builtin().by_kind(api_version, kind)
    assert (rt.plural if rt else None) == plural
    if rt is not None:
        assert rt.api_version == api_version


def test_group_resource_names() -> None:
    reg = Registry.builtin()
    cm = reg.lookup("", "v1", "configmaps")
    deploy = reg.lookup("apps", "v1", "deployments")
    assert cm is not None
    assert deploy is not None
    assert (cm.group_resource, deploy.group_resource) == ("configmaps", "deployments.apps")


def test_builtin_group_versions_start_with_core() -> None:
    groups = [group for group, _ in Registry.builtin().group_versions()]
    assert groups[0] == ""
    assert groups[1] == "apps"
    assert set(groups) == {
        "",
        "apps",
        "events.k8s.io",
        "authorization.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
    }


def test_unknown_lookup_is_none() -> None:
    assert Registry.builtin().lookup("", "v1", "widgets") is None


def test_add_crd_serves_each_served_version() -> None:
    schema = {"openAPIV3Schema": {"type": "object"}}
    versions = [
        {"name": "v1alpha1", "served": True, "storage": False, "schema": schema},
        {"name": "v1", "served": True, "storage": True, "schema": schema},
        {"name": "v1beta1", "served": False, "storage": False, "schema": schema},
        {"name": "v2beta1", "served": True, "storage": False, "schema": schema},
    ]
    reg = Registry.builtin()
    reg.add_crd(widget_crd(versions=versions))
    assert reg.lookup("example.com", "v1beta1", "widgets") is None
    served = {v: reg.lookup("example.com", v, "widgets") for v in ("v1alpha1", "v1", "v2beta1")}
    assert all(rt is not None and rt.custom for rt in served.values())
    assert ("example.com", ["v1", "v2beta1", "v1alpha1"]) in reg.group_versions()
    assert reg.group_versions()[-1][0] == "example.com"


def test_crd_resource_type_details() -> None:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}
    columns = [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": schema,
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        "additionalPrinterColumns": columns,
        "selectableFields": [{"jsonPath": ".spec.color"}],
    }
    reg = Registry.builtin()
    reg.add_crd(widget_crd(versions=[version], scope="Cluster"))
    rt = reg.lookup("example.com", "v1", "widgets")
    assert rt is not None
    assert (rt.kind, rt.singular, rt.list_kind) == ("Widget", "widget", "WidgetList")
    assert rt.namespaced is False
    assert rt.short_names == ("wd",)
    assert rt.categories == ("all", "toys")
    assert rt.generation == "non_metadata"
    assert rt.has_status
    assert rt.scale == ScaleSpec(".spec.replicas", ".status.replicas", ".status.selector")
    assert rt.schema == schema["openAPIV3Schema"]
    assert rt.printer_columns == tuple(columns)
    assert rt.supports_field("spec.color")
    assert not rt.supports_field("spec.size")
    assert rt.group_resource == "widgets.example.com"
    assert reg.by_kind("example.com/v1", "Widget") is rt


def test_crd_not_established_is_not_served() -> None:
    reg = Registry.builtin()
    reg.add_crd(widget_crd(established=False))
    assert reg.lookup("example.com", "v1", "widgets") is None


def test_readding_crd_updates_and_remove_stops_serving() -> None:
    reg = Registry.builtin()
    reg.add_crd(widget_crd())
    schema = {"openAPIV3Schema": {"type": "object"}}
    reg.add_crd(
        widget_crd(versions=[{"name": "v2", "served": True, "storage": True, "schema": schema}])
    )
    assert reg.lookup("example.com", "v1", "widgets") is None
    assert reg.lookup("example.com", "v2", "widgets") is not None
    reg.remove_crd("widgets.example.com")
    assert reg.lookup("example.com", "v2", "widgets") is None
    assert all(group != "example.com" for group, _ in reg.group_versions())


@pytest.mark.parametrize(
    "ordered",
    [
        ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"],
        ["v11", "v10", "v2beta1", "v10alpha1", "v1alpha1"],
    ],
)
def test_version_priority(ordered: list[str]) -> None:
    scrambled = list(reversed(ordered))
    assert sorted(scrambled, key=version_priority_key) == ordered
