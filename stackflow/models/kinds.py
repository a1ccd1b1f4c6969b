"""``Kind``: the one identity of a Kubernetes kind, from the informer to the activity.

A kind is addressed by its API group (``""`` for core), version, kind and plural resource name,
and is namespaced or cluster-scoped. The same value names the informer to start, the URL to call,
the controller table's primary and child kinds, and the kind of a workflow's resource. The
built-in kinds are defined here; the custom kinds come from ``stackflow.api.kinds`` (``KindInfo.resource``). Pure: the
URL paths are strings, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = [
    "CONFIGMAPS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "PERSISTENTVOLUMECLAIMS",
    "PODDISRUPTIONBUDGETS",
    "PODS",
    "SECRETS",
    "SERVICES",
    "STATEFULSETS",
    "STORAGECLASSES",
    "SUBJECTACCESSREVIEWS",
    "Kind",
]


@dataclass(frozen=True)
class Kind:
    """A Kubernetes kind: group ("" for core), version, kind, plural, and whether namespaced."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``v1`` for core, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``configmaps`` or ``elasticsearches.elasticsearch.k8s.elastic.co`` (error texts)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection_path(self, namespace: str | None) -> str:
        """URL path of the collection (all namespaces when ``namespace`` is None)."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{root}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        """URL path of one object, or of its subresource."""
        if self.namespaced and not namespace:
            raise ValueError(f"{self.group_resource} is namespaced: a namespace is required")
        path = f"{self.collection_path(namespace)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path


NAMESPACES = Kind("", "v1", "Namespace", "namespaces", namespaced=False)
CONFIGMAPS = Kind("", "v1", "ConfigMap", "configmaps")
SECRETS = Kind("", "v1", "Secret", "secrets")
SERVICES = Kind("", "v1", "Service", "services")
PODS = Kind("", "v1", "Pod", "pods")
EVENTS = Kind("", "v1", "Event", "events")
LEASES = Kind("coordination.k8s.io", "v1", "Lease", "leases")
STATEFULSETS = Kind("apps", "v1", "StatefulSet", "statefulsets")
DEPLOYMENTS = Kind("apps", "v1", "Deployment", "deployments")
DAEMONSETS = Kind("apps", "v1", "DaemonSet", "daemonsets")
PODDISRUPTIONBUDGETS = Kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
PERSISTENTVOLUMECLAIMS = Kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims")
STORAGECLASSES = Kind("storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False)
#: Create-only and cluster-scoped: the API server answers whether a user may do something.
SUBJECTACCESSREVIEWS = Kind(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)
