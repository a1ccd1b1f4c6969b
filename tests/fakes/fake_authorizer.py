"""A stand-in for the API server's authorizer: answers SubjectAccessReviews from a grant table.

kubesim stores a SubjectAccessReview without judging it; the activity tests give the real
``SubjectAccessReviewer`` this client instead, so that a test decides which ServiceAccount may get
which object and sees every review the operator asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stackflow.models.kinds import SUBJECTACCESSREVIEWS, Kind

__all__ = ["Grant", "GrantTable"]


@dataclass(frozen=True)
class Grant:
    """``user`` may get the object ``namespace/name`` of ``resource`` (a plural)."""

    user: str
    resource: str
    namespace: str
    name: str


@dataclass
class GrantTable:
    """Creates nothing: answers each review from ``grants`` and keeps the questions."""

    grants: set[Grant] = field(default_factory=set)
    asked: list[Grant] = field(default_factory=list)

    def grant(self, namespace: str, service_account: str, resource: Kind, target: str) -> None:
        """Let ``namespace``'s ``service_account`` get ``target`` (``namespace/name``)."""
        target_namespace, _, name = target.partition("/")
        user = f"system:serviceaccount:{namespace}:{service_account}"
        self.grants.add(Grant(user, resource.plural, target_namespace, name))

    def revoke_all(self) -> None:
        """Forget every grant."""
        self.grants.clear()

    async def create(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Answer a SubjectAccessReview as an RBAC authorizer holding ``grants`` would."""
        assert resource == SUBJECTACCESSREVIEWS, resource
        spec = body["spec"]
        attributes = spec["resourceAttributes"]
        question = Grant(
            spec["user"], attributes["resource"], attributes["namespace"], attributes["name"]
        )
        assert attributes["verb"] == "get", attributes
        self.asked.append(question)
        return {**body, "status": {"allowed": question in self.grants}}
