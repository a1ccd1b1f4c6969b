"""The eck-docs scenarios cover every manifest of deploy/examples/eck-docs/, each placed in a
namespace the tier dumps (pure: no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.parity.eck_docs import DOCS, ECK_DOCS, NAMESPACE, NEEDS, placed


def test_every_manifest_of_the_directory_is_a_scenario() -> None:
    assert sorted(NEEDS) == sorted(path.name for path in DOCS.glob("*.yaml"))
    assert [s.name for s in ECK_DOCS] == [f"eck-docs-{name[:-5]}" for name in NEEDS]


def test_every_object_is_in_a_namespace_in_scope() -> None:
    for scenario in ECK_DOCS:
        for item in scenario.manifests:
            assert scenario.namespaces[item["metadata"]["namespace"]] is True


@pytest.mark.parametrize(
    ("document", "namespace"),
    [
        ({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a"}}, NAMESPACE),
        (
            {"apiVersion": "kibana.k8s.elastic.co/v1", "kind": "Kibana", "metadata": {"name": "k"}},
            NAMESPACE,
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "a", "namespace": "own"},
            },
            "own",
        ),
    ],
)
def test_an_object_goes_to_the_namespace_unless_it_names_one(
    document: dict[str, Any], namespace: str
) -> None:
    assert placed(document, NAMESPACE)["metadata"]["namespace"] == namespace


@pytest.mark.parametrize(
    "document",
    [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
    ],
)
def test_a_cluster_scoped_object_is_refused(document: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        placed(document, NAMESPACE)
