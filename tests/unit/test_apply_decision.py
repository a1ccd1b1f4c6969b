"""What ``apply_object`` writes: nothing for an object a real API server stored as desired (its
defaults, omitted zero values and canonical quantities), the merged object otherwise."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from activities.apply import planned_update
from stackflow.models.quantity import parse_quantity, same_quantity


def service(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "es-es-http"}, "spec": spec}


def claim_template(storage: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "sts"},
        "spec": {
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"resources": {"requests": {"storage": storage}}},
                }
            ]
        },
    }


def containers(**container: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "kb"},
        "spec": {"template": {"spec": {"containers": [{"name": "kibana", **container}]}}},
    }


STORED = service(
    ports=[{"name": "https", "port": 9200, "protocol": "TCP", "targetPort": 9200}],
    clusterIP="10.96.0.12",
    type="ClusterIP",
)


@pytest.mark.parametrize(
    ("current", "desired"),
    [
        pytest.param(
            STORED, service(ports=[{"name": "https", "port": 9200}]), id="server defaults kept"
        ),
        pytest.param(
            STORED,
            service(ports=[{"name": "https", "port": 9200}], publishNotReadyAddresses=False),
            id="false the server omits",
        ),
        pytest.param(
            containers(image="kb"), containers(image="kb", env=[]), id="empty list omitted"
        ),
        pytest.param(
            {"metadata": {"name": "s"}}, {"metadata": {"name": "s"}, "data": {}}, id="empty payload"
        ),
        pytest.param(claim_template("1536Mi"), claim_template("1.5Gi"), id="canonical quantity"),
        pytest.param(
            containers(resources={"requests": {"cpu": "1", "memory": "2Gi"}}),
            containers(resources={"requests": {"cpu": 1, "memory": "2048Mi"}}),
            id="cpu as a number",
        ),
    ],
)
def test_nothing_is_written_for_an_object_stored_as_desired(
    current: dict[str, Any], desired: dict[str, Any]
) -> None:
    assert planned_update(current, desired) is None


@pytest.mark.parametrize(
    ("current", "desired", "path", "value"),
    [
        pytest.param(
            service(publishNotReadyAddresses=True),
            service(publishNotReadyAddresses=False),
            ("spec", "publishNotReadyAddresses"),
            False,
            id="true to false is a change",
        ),
        pytest.param(
            claim_template("1Gi"),
            claim_template("2Gi"),
            ("spec", "volumeClaimTemplates", 0, "spec", "resources", "requests", "storage"),
            "2Gi",
            id="another amount",
        ),
        pytest.param(
            containers(env=[{"name": "A", "value": "1.0"}]),
            containers(env=[{"name": "A", "value": "1"}]),
            ("spec", "template", "spec", "containers", 0, "env", 0, "value"),
            "1",
            id="an env value is text, not a quantity",
        ),
        pytest.param(
            {"metadata": {"name": "s"}, "data": {"a": "eA=="}},
            {"metadata": {"name": "s"}, "data": {}},
            ("data",),
            {},
            id="payload emptied",
        ),
    ],
)
def test_a_real_change_is_written(
    current: dict[str, Any], desired: dict[str, Any], path: tuple[Any, ...], value: Any
) -> None:
    update = planned_update(current, desired)
    assert update is not None
    for step in path:
        update = update[step]
    assert update == value


@pytest.mark.parametrize(
    ("current", "desired"),
    [
        pytest.param(STORED, service(ports=[{"name": "https", "port": 9200}]), id="unchanged"),
        pytest.param(claim_template("1Gi"), claim_template("2Gi"), id="a nested amount"),
        pytest.param(
            containers(env=[{"name": "A", "value": "1"}], image="kb"),
            containers(env=[{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]),
            id="a list replaced",
        ),
        pytest.param(
            {"metadata": {"name": "s", "labels": {"a": "1"}}, "data": {"a": "eA=="}},
            {"metadata": {"name": "s", "labels": {"b": "2"}}, "stringData": {"b": "y"}},
            id="labels merged, a payload replaced",
        ),
    ],
)
def test_the_decision_changes_neither_object(
    current: dict[str, Any], desired: dict[str, Any]
) -> None:
    """The merged object shares what it does not change with both: they must stay as they were."""
    current_before, desired_before = copy.deepcopy(current), copy.deepcopy(desired)
    planned_update(current, desired)
    assert (current, desired) == (current_before, desired_before)


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("1536Mi", "1.5Gi", True),
        ("500m", "0.5", True),
        (1, "1", True),
        ("1k", "1000", True),
        ("2e3", "2k", True),
        ("1Ki", "1k", False),
        ("1Gi", "1G", False),
        ("abc", "abc", False),
        (True, 1, False),
    ],
)
def test_quantities_compare_by_amount(left: object, right: object, same: bool) -> None:
    assert same_quantity(left, right) is same


def test_a_malformed_quantity_is_not_one() -> None:
    assert parse_quantity("12 Gi") is None
    assert parse_quantity("Gi") is None
