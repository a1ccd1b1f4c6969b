"""ECK's ``enforce-rbac-on-refs`` rule: may an object's ServiceAccount read what it references?

With the key on, a reference across namespaces (an application to its Elasticsearch, an
AutoOpsAgentPolicy to a cluster it selects, a cluster to its remote cluster) is honoured only
when the referring object's ServiceAccount (``spec.serviceAccountName``, ``default`` when empty)
is allowed to ``get`` the referenced object. The Kubernetes API server answers that question
through a SubjectAccessReview; this module builds the question and reads the answer, and the
adapter in ``stackflow.kube.access`` asks it. A reference within one namespace is allowed without
asking, as in ECK (``pkg/utils/rbac``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.kinds import Kind

__all__ = [
    "DEFAULT_SERVICE_ACCOUNT",
    "RBAC_RECHECK_SECONDS",
    "SERVICE_ACCOUNT_USER_PREFIX",
    "AccessReview",
    "InvalidServiceAccountError",
    "access_review",
    "review_allowed",
    "service_account_of",
]

#: The user name the API server gives a ServiceAccount's requests.
SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"
#: The ServiceAccount a Pod runs as when its spec names none (ECK's default too).
DEFAULT_SERVICE_ACCOUNT = "default"
#: How often a reference that passed the check is checked again. A change of Roles or
#: RoleBindings wakes nothing (ECK watches none either): ECK requeues every 15 minutes
#: (``RequeueRbacCheck``) while a Pending reference is retried at its usual pace.
RBAC_RECHECK_SECONDS = 15 * 60.0

_MAX_NAME = 253
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class InvalidServiceAccountError(ValueError):
    """A ``serviceAccountName`` no ServiceAccount can have: nothing is asked for it."""


@dataclass(frozen=True)
class AccessReview:
    """One question for the API server: may ``user`` ``verb`` the object?"""

    user: str
    group: str
    version: str
    resource: str
    namespace: str
    name: str
    verb: str = "get"

    def manifest(self) -> dict[str, Any]:
        """The ``authorization.k8s.io/v1`` SubjectAccessReview asking it."""
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": self.user,
                "resourceAttributes": {
                    "namespace": self.namespace,
                    "verb": self.verb,
                    "group": self.group,
                    "version": self.version,
                    "resource": self.resource,
                    "name": self.name,
                },
            },
        }


def service_account_of(obj: Mapping[str, Any]) -> str:
    """The ``spec.serviceAccountName`` of an object as written ("" when unset)."""
    spec = obj.get("spec")
    value = spec.get("serviceAccountName") if isinstance(spec, Mapping) else None
    return str(value or "")


def access_review(
    *,
    service_account: str,
    source_namespace: str,
    target: Kind,
    target_namespace: str,
    target_name: str,
) -> AccessReview | None:
    """The review to ask before an object of ``source_namespace`` running as ``service_account``
    may use the ``target`` object, or None when it is allowed without asking (same namespace).

    An empty ``service_account`` is ``default``; one that is not a DNS subdomain raises
    ``InvalidServiceAccountError`` (ECK refuses it before any review, too).
    """
    if source_namespace == target_namespace:
        return None
    account = service_account or DEFAULT_SERVICE_ACCOUNT
    if len(account) > _MAX_NAME or not _DNS_SUBDOMAIN.fullmatch(account):
        raise InvalidServiceAccountError(
            f"serviceAccountName {account!r} is not a valid ServiceAccount name "
            "(lowercase alphanumerics, '-' and '.', at most 253 characters)"
        )
    return AccessReview(
        user=f"{SERVICE_ACCOUNT_USER_PREFIX}{source_namespace}:{account}",
        group=target.group,
        version=target.version,
        resource=target.plural,
        namespace=target_namespace,
        name=target_name,
    )


def review_allowed(review: Mapping[str, Any]) -> bool:
    """Whether a SubjectAccessReview the API server answered allows the request: ``allowed``
    true and not ``denied`` (a missing status or field is a no)."""
    status = review.get("status")
    if not isinstance(status, Mapping):
        return False
    return status.get("allowed") is True and status.get("denied") is not True
