"""The access reviewer: asks the API server whether a ServiceAccount may read a referenced object.

``SubjectAccessReviewer`` creates an ``authorization.k8s.io/v1`` SubjectAccessReview for the
question ``stackflow.stack.access.access_review`` builds and reads its answer. The review is a
cluster-scoped create that reads nothing of any namespace, so it goes through the raw client, not
the scoped one. ``PermissiveAccessReviewer`` is the answer with ``enforce-rbac-on-refs`` off:
every reference is allowed and no review is ever created (ECK's permissive reviewer).
"""

from __future__ import annotations

import logging
from typing import Protocol

from stackflow.kube.protocols import Creates
from stackflow.models.kinds import SUBJECTACCESSREVIEWS, Kind
from stackflow.stack.access import access_review, review_allowed

__all__ = [
    "AccessReviewer",
    "PermissiveAccessReviewer",
    "SubjectAccessReviewer",
    "access_reviewer",
]

logger = logging.getLogger(__name__)


class AccessReviewer(Protocol):
    """Whether an object's ServiceAccount may ``get`` another object it references."""

    @property
    def enforced(self) -> bool:
        """Whether references are checked at all (``enforce-rbac-on-refs``)."""
        ...

    async def allowed(
        self,
        *,
        service_account: str,
        source_namespace: str,
        target: Kind,
        target_namespace: str,
        target_name: str,
    ) -> bool:
        """Whether ``service_account`` (``""``: ``default``) of ``source_namespace`` may get the
        ``target`` object ``target_namespace/target_name``.

        Raises ``InvalidServiceAccountError`` for a name no ServiceAccount can have, and the
        Kubernetes errors of the review's create.
        """
        ...


class PermissiveAccessReviewer:
    """Every reference allowed, nothing asked (``enforce-rbac-on-refs`` off)."""

    enforced = False

    async def allowed(
        self,
        *,
        service_account: str,
        source_namespace: str,
        target: Kind,
        target_namespace: str,
        target_name: str,
    ) -> bool:
        """Always yes."""
        return True


class SubjectAccessReviewer:
    """Asks the API server with a SubjectAccessReview (``enforce-rbac-on-refs`` on)."""

    enforced = True

    def __init__(self, client: Creates) -> None:
        """Create the reviews with ``client`` (the raw client: the review is cluster-scoped)."""
        self._client = client

    async def allowed(
        self,
        *,
        service_account: str,
        source_namespace: str,
        target: Kind,
        target_namespace: str,
        target_name: str,
    ) -> bool:
        """Allowed without asking in one namespace; else the API server's answer."""
        review = access_review(
            service_account=service_account,
            source_namespace=source_namespace,
            target=target,
            target_namespace=target_namespace,
            target_name=target_name,
        )
        if review is None:
            return True
        answer = await self._client.create(SUBJECTACCESSREVIEWS, review.manifest())
        allowed = review_allowed(answer)
        logger.debug(
            "access review: %s get %s %s/%s: %s",
            review.user,
            target.group_resource,
            target_namespace,
            target_name,
            "allowed" if allowed else "denied",
        )
        return allowed


def access_reviewer(*, enforce: bool, client: Creates) -> AccessReviewer:
    """The reviewer for ``enforce-rbac-on-refs``: the API server's answer when on, else yes."""
    return SubjectAccessReviewer(client) if enforce else PermissiveAccessReviewer()
