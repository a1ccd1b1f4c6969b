"""enforce-rbac-on-refs: the pure rule (which question to ask, how to read the answer) and the
reviewer that asks it, against a recording client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stackflow.api.kinds import kind_resource
from stackflow.kube.access import PermissiveAccessReviewer, SubjectAccessReviewer, access_reviewer
from stackflow.models.kinds import SUBJECTACCESSREVIEWS, Kind
from stackflow.stack.access import (
    AccessReview,
    InvalidServiceAccountError,
    access_review,
    review_allowed,
    service_account_of,
)

ES = kind_resource("Elasticsearch")
KIBANA = kind_resource("Kibana")


@pytest.mark.parametrize(
    ("service_account", "source", "target", "namespace", "expected"),
    [
        # One namespace: allowed without asking, whatever the ServiceAccount.
        ("", "team-a", ES, "team-a", None),
        ("nobody", "team-a", ES, "team-a", None),
        # Another namespace: ECK's question, the default ServiceAccount when none is named.
        (
            "",
            "team-a",
            ES,
            "team-b",
            AccessReview(
                user="system:serviceaccount:team-a:default",
                group="elasticsearch.k8s.elastic.co",
                version=ES.version,
                resource="elasticsearches",
                namespace="team-b",
                name="target",
            ),
        ),
        (
            "kibana-sa",
            "apps",
            KIBANA,
            "shared",
            AccessReview(
                user="system:serviceaccount:apps:kibana-sa",
                group="kibana.k8s.elastic.co",
                version=KIBANA.version,
                resource="kibanas",
                namespace="shared",
                name="target",
            ),
        ),
        (
            "a.b-c",
            "x",
            ES,
            "y",
            AccessReview(
                user="system:serviceaccount:x:a.b-c",
                group="elasticsearch.k8s.elastic.co",
                version=ES.version,
                resource="elasticsearches",
                namespace="y",
                name="target",
            ),
        ),
    ],
)
def test_the_question_asked_for_a_reference(
    service_account: str, source: str, target: Kind, namespace: str, expected: AccessReview | None
) -> None:
    review = access_review(
        service_account=service_account,
        source_namespace=source,
        target=target,
        target_namespace=namespace,
        target_name="target",
    )
    assert review == expected


@pytest.mark.parametrize("name", ["Upper", "under_score", "-lead", "trail-", "a" * 254, "a..b"])
def test_a_service_account_name_no_account_can_have_is_refused_before_asking(name: str) -> None:
    with pytest.raises(InvalidServiceAccountError, match="not a valid ServiceAccount name"):
        access_review(
            service_account=name,
            source_namespace="a",
            target=ES,
            target_namespace="b",
            target_name="es",
        )


def test_the_review_manifest() -> None:
    review = AccessReview(
        user="system:serviceaccount:a:default",
        group="elasticsearch.k8s.elastic.co",
        version="v1",
        resource="elasticsearches",
        namespace="b",
        name="es",
    )
    assert review.manifest() == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:a:default",
            "resourceAttributes": {
                "namespace": "b",
                "verb": "get",
                "group": "elasticsearch.k8s.elastic.co",
                "version": "v1",
                "resource": "elasticsearches",
                "name": "es",
            },
        },
    }


@pytest.mark.parametrize(
    ("answer", "allowed"),
    [
        ({"status": {"allowed": True}}, True),
        ({"status": {"allowed": True, "reason": "RBAC: allowed by RoleBinding"}}, True),
        ({"status": {"allowed": False}}, False),
        ({"status": {"allowed": True, "denied": True}}, False),
        ({"status": {"allowed": "true"}}, False),
        ({"status": {}}, False),
        ({"spec": {}}, False),
        ({}, False),
    ],
)
def test_reading_the_answer(answer: Mapping[str, Any], allowed: bool) -> None:
    assert review_allowed(answer) is allowed


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"spec": {"serviceAccountName": "sa"}}, "sa"),
        ({"spec": {"serviceAccountName": ""}}, ""),
        ({"spec": {}}, ""),
        ({}, ""),
    ],
)
def test_the_service_account_as_written(obj: Mapping[str, Any], expected: str) -> None:
    assert service_account_of(obj) == expected


class RecordingClient:
    """Creates nothing: records each body and answers with ``allowed``."""

    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed
        self.created: list[tuple[Kind, dict[str, Any]]] = []

    async def create(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        self.created.append((resource, dict(body)))
        return {**body, "status": {"allowed": self.allowed}}


@pytest.mark.parametrize("allowed", [True, False])
async def test_the_reviewer_asks_the_api_server_across_namespaces_only(allowed: bool) -> None:
    client = RecordingClient(allowed)
    reviewer = access_reviewer(enforce=True, client=client)
    assert isinstance(reviewer, SubjectAccessReviewer)
    assert reviewer.enforced
    same = await reviewer.allowed(
        service_account="", source_namespace="a", target=ES, target_namespace="a", target_name="es"
    )
    assert same is True
    assert client.created == []
    across = await reviewer.allowed(
        service_account="", source_namespace="a", target=ES, target_namespace="b", target_name="es"
    )
    assert across is allowed
    assert [(kind, body["spec"]["user"]) for kind, body in client.created] == [
        (SUBJECTACCESSREVIEWS, "system:serviceaccount:a:default")
    ]


async def test_with_the_key_off_nothing_is_asked() -> None:
    client = RecordingClient(False)
    reviewer = access_reviewer(enforce=False, client=client)
    assert isinstance(reviewer, PermissiveAccessReviewer)
    assert not reviewer.enforced
    assert await reviewer.allowed(
        service_account="", source_namespace="a", target=ES, target_namespace="b", target_name="es"
    )
    assert client.created == []
