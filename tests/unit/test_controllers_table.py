"""The controller table: names, gates, kinds, owner mappers, references, registered activities."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio import activity

from activities.registry import activity_names, build_activities
from stackflow.controllers import (
    CONTROLLERS,
    controller_named,
    es_cluster_owner,
    es_owner_reference,
    es_references,
)
from stackflow.models.engine import (
    ACT_FLIP_TARGETS,
    ACT_INVALID_SPEC_NOTICE,
    ACT_LICENSE_CHECK,
    ACT_LICENSE_WAIT_NOTICE,
    ACT_SCOPE_CHECK,
    ACT_SIGNAL_RESOURCES,
    ObjectKey,
)


@pytest.mark.parametrize(
    ("name", "kind", "gated", "default_flip_mapper"),
    [
        pytest.param("elasticsearch", "Elasticsearch", True, True, id="elasticsearch"),
        pytest.param("license", "Elasticsearch", False, False, id="license"),
        pytest.param("trial", "Secret", False, False, id="trial"),
        pytest.param("kibana", "Kibana", True, True, id="kibana"),
        pytest.param("agent", "Agent", True, True, id="agent"),
        pytest.param("kb-es", "Kibana", True, False, id="kb-es"),
        pytest.param("agent-fleetserver", "Agent", True, False, id="agent-fleetserver"),
    ],
)
def test_table_entries(name: str, kind: str, gated: bool, default_flip_mapper: bool) -> None:
    controller = controller_named(name)

    assert (controller.primary.kind, controller.gated) == (kind, gated)
    assert (controller.flip_mapper is None) is default_flip_mapper


def test_names_are_unique_and_unknown_names_are_refused() -> None:
    names = [controller.name for controller in CONTROLLERS]
    assert len(names) == len(set(names))
    with pytest.raises(KeyError):
        controller_named("nope")


def child(
    labels: dict[str, str] | None = None, owners: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "x", "namespace": "ns", "labels": labels or {}}
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"metadata": metadata}


@pytest.mark.parametrize(
    ("obj", "owner"),
    [
        pytest.param(
            child({"elasticsearch.k8s.elastic.co/cluster-name": "es"}), ("ns", "es"), id="labelled"
        ),
        pytest.param(child(), None, id="unlabelled"),
    ],
)
def test_es_children_map_to_their_cluster(
    obj: dict[str, Any], owner: tuple[str, str] | None
) -> None:
    assert es_cluster_owner(obj) == owner


@pytest.mark.parametrize(
    ("owners", "owner"),
    [
        pytest.param(
            [
                {
                    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
                    "kind": "Elasticsearch",
                    "name": "es",
                }
            ],
            ("ns", "es"),
            id="owned-by-es",
        ),
        pytest.param(
            [{"apiVersion": "kibana.k8s.elastic.co/v1", "kind": "Kibana", "name": "kb"}],
            None,
            id="owned-by-other",
        ),
        pytest.param([], None, id="no-owner"),
    ],
)
def test_license_secret_maps_to_its_es(
    owners: list[dict[str, Any]], owner: tuple[str, str] | None
) -> None:
    assert es_owner_reference(child(owners=owners)) == owner


def test_es_references_name_the_spec_secrets() -> None:
    es = {
        "metadata": {"name": "es", "namespace": "ns"},
        "spec": {
            "secureSettings": [{"secretName": "keystore"}],
            "auth": {"roles": [{"secretName": "roles"}]},
        },
    }

    assert es_references(es) == [
        ObjectKey(kind="Secret", namespace="ns", name="keystore"),
        ObjectKey(kind="Secret", namespace="ns", name="roles"),
    ]


APP_NAMES = (
    "kibana",
    "apmserver",
    "enterprisesearch",
    "beat",
    "agent",
    "logstash",
    "maps",
    "packageregistry",
)
ASSOCIATION_NAMES = (
    "kb-es",
    "apm-es",
    "apm-kibana",
    "ent-es",
    "beat-es",
    "beat-kibana",
    "agent-es",
    "agent-kibana",
    "agent-fleetserver",
    "logstash-es",
    "ems-es",
    "kb-ent",
    "kb-epr",
)


def test_build_activities_registers_every_contract_name() -> None:
    context: Any = object()  # registration does not touch the context

    built = build_activities(context)

    assert sorted(activity_names(built)) == sorted(
        [
            ACT_SCOPE_CHECK,
            ACT_LICENSE_CHECK,
            ACT_LICENSE_WAIT_NOTICE,
            ACT_INVALID_SPEC_NOTICE,
            ACT_FLIP_TARGETS,
            ACT_SIGNAL_RESOURCES,
            "elasticsearch.reconcile",
            "elasticsearch.finalize",
            "elasticsearch.release_observers",
            "license.reconcile",
            "license.finalize",
            "trial.reconcile",
            "trial.finalize",
            *(f"{app}.{step}" for app in APP_NAMES for step in ("reconcile", "finalize")),
            *(
                f"{association}.{step}"
                for association in ASSOCIATION_NAMES
                for step in ("reconcile", "finalize", "release_watches")
            ),
        ]
    )
    for function in built:
        assert activity._Definition.from_callable(function) is not None
