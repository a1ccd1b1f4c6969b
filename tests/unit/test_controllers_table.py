"""The controller table: names, gates, kinds, owner mappers, references, registered activities."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio import activity

from activities.binding import FamilyActivities
from activities.registry import FAMILIES, BindingError, build_activities
from stackflow.controllers import CONTROLLERS, ControllerTable, FlipStrategy, Gate
from stackflow.controllers.elasticsearch import (
    ELASTICSEARCH_CONTROLLER,
    es_references,
    license_secret_owners,
)
from stackflow.models.engine import (
    ACT_CLUSTER_STEP,
    ACT_FLIP_TARGETS,
    ACT_INVALID_SPEC_NOTICE,
    ACT_LICENSE_CHECK,
    ACT_LICENSE_WAIT_NOTICE,
    ACT_SCOPE_CHECK,
    ACT_SIGNAL_RESOURCES,
    ACT_UNDO_CLUSTER_STEP,
    ObjectKey,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.garbage import ACT_SWEEP_SECRETS, ACT_SWEEP_WORKFLOWS
from stackflow.models.keys import NamespacedName
from stackflow.models.license_condition import ACT_LICENSE_CONDITION
from stackflow.models.telemetry import ACT_LICENSE_USAGE, ACT_TELEMETRY_REPORT

NS = FlipStrategy.NAMESPACE_OBJECTS
OWN = FlipStrategy.CONTROLLER


@pytest.mark.parametrize(
    ("name", "kind", "gate", "flip"),
    [
        pytest.param("elasticsearch", "Elasticsearch", Gate.DYNAMIC_SCOPE, NS, id="elasticsearch"),
        pytest.param("license", "Elasticsearch", Gate.NONE, OWN, id="license"),
        pytest.param("trial", "Secret", Gate.NONE, OWN, id="trial"),
        pytest.param("kibana", "Kibana", Gate.DYNAMIC_SCOPE, NS, id="kibana"),
        pytest.param("agent", "Agent", Gate.DYNAMIC_SCOPE, NS, id="agent"),
        pytest.param("kb-es", "Kibana", Gate.DYNAMIC_SCOPE, OWN, id="kb-es"),
        pytest.param("agent-fleetserver", "Agent", Gate.DYNAMIC_SCOPE, OWN, id="agent-fleetserver"),
        pytest.param(
            "elasticsearchautoscaler",
            "ElasticsearchAutoscaler",
            Gate.ENTERPRISE,
            NS,
            id="elasticsearchautoscaler",
        ),
        pytest.param("remotecluster", "Elasticsearch", Gate.NONE, OWN, id="remotecluster"),
    ],
)
def test_table_entries(name: str, kind: str, gate: Gate, flip: FlipStrategy) -> None:
    controller = CONTROLLERS.named(name)

    assert (controller.primary.kind, controller.gate, controller.flip) == (kind, gate, flip)


@pytest.mark.parametrize(
    ("gate", "dynamic_scope", "required"),
    [
        (Gate.NONE, False, False),
        (Gate.NONE, True, False),
        (Gate.DYNAMIC_SCOPE, False, False),
        (Gate.DYNAMIC_SCOPE, True, True),
        (Gate.ENTERPRISE, False, True),
        (Gate.ENTERPRISE, True, True),
    ],
)
def test_the_gate_says_when_a_license_is_required(
    gate: Gate, dynamic_scope: bool, required: bool
) -> None:
    assert gate.requires_license(dynamic_scope=dynamic_scope) is required


def test_names_are_unique_and_unknown_names_are_refused() -> None:
    assert len(CONTROLLERS.names) == len(set(CONTROLLERS.names)) == len(CONTROLLERS)
    with pytest.raises(KeyError, match="no controller named 'nope'"):
        CONTROLLERS.named("nope")
    with pytest.raises(ValueError, match="two controllers are named 'elasticsearch'"):
        ControllerTable([ELASTICSEARCH_CONTROLLER, ELASTICSEARCH_CONTROLLER])


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
    cluster_watch = ELASTICSEARCH_CONTROLLER.children[0]
    assert cluster_watch.owners(obj) == ((NamespacedName(*owner),) if owner else ())


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
    assert license_secret_owners(child(owners=owners)) == (
        (NamespacedName(*owner),) if owner else ()
    )


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


@dataclass
class _Context:
    """Registration reads only the table from the context."""

    controllers: ControllerTable


#: What every controller registers: the reconcile (runs recorded before the step call it), the
#: reconcile step, and the finalizer.
STEPS = ("reconcile", "reconcile_step", "finalize")


def test_build_activities_registers_every_contract_name() -> None:
    context: Any = _Context(CONTROLLERS)

    built = build_activities(context)

    assert sorted(built) == sorted(
        [
            ACT_SCOPE_CHECK,
            ACT_LICENSE_CHECK,
            ACT_LICENSE_WAIT_NOTICE,
            ACT_INVALID_SPEC_NOTICE,
            ACT_FLIP_TARGETS,
            ACT_SIGNAL_RESOURCES,
            # A step that changes a running Elasticsearch cluster, and its undoing.
            ACT_CLUSTER_STEP,
            ACT_UNDO_CLUSTER_STEP,
            # The license-wait condition on a waiting resource.
            ACT_LICENSE_CONDITION,
            # The leader's periodic reports (licensing usage, telemetry).
            ACT_LICENSE_USAGE,
            ACT_TELEMETRY_REPORT,
            # The garbage sweep (workflows of gone resources, orphaned soft-owned Secrets).
            ACT_SWEEP_WORKFLOWS,
            ACT_SWEEP_SECRETS,
            *(
                f"{controller}.{step}"
                for controller in ("elasticsearch", "license", "trial", "stackconfigpolicy")
                for step in STEPS
            ),
            *(f"autoopsagentpolicy.{step}" for step in STEPS),
            *(f"{app}.{step}" for app in APP_NAMES for step in STEPS),
            *(f"elasticsearchautoscaler.{step}" for step in STEPS),
            *(f"{association}.{step}" for association in ASSOCIATION_NAMES for step in STEPS),
            # The remote-cluster controller, a second row over Elasticsearch.
            *(f"remotecluster.{step}" for step in STEPS),
            # The compensations: what a policy or cluster acquired outside itself, released.
            "autoopsagentpolicy.release_cluster",
            "remotecluster.release_peer",
        ]
    )


def test_a_subset_table_registers_only_its_controllers() -> None:
    context: Any = _Context(CONTROLLERS.only(["elasticsearch", "kb-es"]))

    built = build_activities(context)

    assert {name for name in built if "." in name and not name.startswith("stackflow.")} == {
        "elasticsearch.reconcile",
        "elasticsearch.reconcile_step",
        "elasticsearch.finalize",
        "kb-es.reconcile",
        "kb-es.reconcile_step",
        "kb-es.finalize",
    }


class _FlippingFamily(FamilyActivities):
    """A family with its own flip mapper."""

    async def reconcile(self, request: Any, primary: Any) -> Any:
        return None

    async def finalize(self, request: Any) -> Any:
        return None

    async def flip_targets(self, namespace: str, direction: Any) -> Any:
        return []


@pytest.mark.parametrize(
    ("table", "families", "message"),
    [
        pytest.param(
            ControllerTable([replace(ELASTICSEARCH_CONTROLLER, name="widget")]),
            FAMILIES,
            "controller 'widget' has no activities implementation",
            id="no-implementation",
        ),
        pytest.param(
            ControllerTable([replace(ELASTICSEARCH_CONTROLLER, compensations=("es.release",))]),
            FAMILIES,
            "controller 'elasticsearch': no implementation of es.release",
            id="missing-compensation",
        ),
        pytest.param(
            ControllerTable([replace(ELASTICSEARCH_CONTROLLER, flip=FlipStrategy.CONTROLLER)]),
            FAMILIES,
            "flip strategy controller needs a flip_targets implementation",
            id="custom-flip-without-mapper",
        ),
        pytest.param(
            ControllerTable([ELASTICSEARCH_CONTROLLER]),
            {"elasticsearch": _FlippingFamily},
            "flip strategy namespace-objects needs no flip_targets implementation",
            id="mapper-without-custom-flip",
        ),
    ],
)
def test_a_table_and_families_that_disagree_are_refused(
    table: ControllerTable, families: Any, message: str
) -> None:
    with pytest.raises(BindingError, match=message):
        build_activities(_Context(table), families=families)  # type: ignore[arg-type]


def test_the_autoscaler_references_its_cluster_and_has_ecks_unlicensed_notice() -> None:
    autoscaler = CONTROLLERS.named("elasticsearchautoscaler")
    obj = {
        "metadata": {"name": "esa", "namespace": "ns"},
        "spec": {"elasticsearchRef": {"name": "es"}},
    }

    keys = autoscaler.references(obj)

    assert [(key.kind, key.namespace, key.name) for key in keys] == [("Elasticsearch", "ns", "es")]
    assert autoscaler.references({"metadata": {"name": "esa", "namespace": "ns"}, "spec": {}}) == []
    assert autoscaler.local_step is False
    assert autoscaler.unlicensed is not None
    assert autoscaler.unlicensed.reason == "InvalidLicense"
    assert autoscaler.unlicensed.message == (
        "Autoscaling is an enterprise feature. Enterprise features are disabled"
    )


def test_every_registered_activity_declares_its_input_and_result_models() -> None:
    """Temporal decodes an activity's input and result by the registered function's annotations:
    each bound method is registered with its own models, never ``Any``."""
    built = build_activities(_Context(CONTROLLERS))

    for name, function in built.items():
        definition = activity._Definition.must_from_callable(function)
        assert definition.name == name
        assert definition.arg_types is not None, name
        (argument,) = definition.arg_types
        assert issubclass(argument, BaseModel), name
        assert isinstance(definition.ret_type, type), name
        assert issubclass(definition.ret_type, BaseModel), name
    reconcile = activity._Definition.must_from_callable(built["elasticsearch.reconcile"])
    assert (reconcile.arg_types, reconcile.ret_type) == ([ReconcileInput], ReconcileResult)
