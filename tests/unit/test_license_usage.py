"""The licensing usage report (``stackflow.licensing.usage``): memory per application, ERU, level."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from stackflow.licensing.model import LicenseSpec, to_millis
from stackflow.licensing.usage import (
    GIB,
    ManagedApp,
    app_memory_bytes,
    enterprise_resource_units,
    license_usage,
    max_enterprise_resource_units,
)

MIB = 1024**2


def container(name: str, *, limit: str | None = None, request: str | None = None) -> dict[str, Any]:
    """A pod template with one container whose memory limit/request is set as given."""
    resources: dict[str, Any] = {}
    if limit is not None:
        resources["limits"] = {"memory": limit}
    if request is not None:
        resources["requests"] = {"memory": request}
    return {"spec": {"containers": [{"name": name, "resources": resources}]}}


def es(*node_sets: tuple[int, str | None]) -> ManagedApp:
    """An Elasticsearch with node sets of (count, memory limit or None)."""
    return ManagedApp(
        "Elasticsearch",
        {
            "spec": {
                "nodeSets": [
                    {
                        "name": f"set{index}",
                        "count": count,
                        **(
                            {"podTemplate": container("elasticsearch", limit=limit)}
                            if limit
                            else {}
                        ),
                    }
                    for index, (count, limit) in enumerate(node_sets)
                ]
            }
        },
    )


def app(kind: str, count: int | None = None, pod_template: Any = None) -> ManagedApp:
    """A single-workload application of `kind`."""
    spec: dict[str, Any] = {}
    if count is not None:
        spec["count"] = count
    if pod_template is not None:
        spec["podTemplate"] = pod_template
    return ManagedApp(kind, {"spec": spec})


@pytest.mark.parametrize(
    ("managed", "expected"),
    [
        pytest.param(es((3, None)), 6 * GIB, id="es-default-2Gi-per-node"),
        pytest.param(es((3, "4Gi"), (2, None)), 12 * GIB + 4 * GIB, id="es-node-sets-summed"),
        pytest.param(es((0, "4Gi")), 0, id="es-zero-count"),
        pytest.param(app("Kibana"), 1 * GIB, id="kibana-default-one-replica"),
        pytest.param(app("Kibana", 2), 2 * GIB, id="kibana-count"),
        pytest.param(
            app("Kibana", 1, container("kibana", limit="3Gi")), 3 * GIB, id="kibana-limit"
        ),
        pytest.param(
            app("Kibana", 1, container("kibana", request="1536Mi")),
            1536 * MIB,
            id="kibana-request-when-no-limit",
        ),
        pytest.param(
            app("Kibana", 1, container("sidecar", limit="8Gi")),
            1 * GIB,
            id="other-container-ignored",
        ),
        pytest.param(app("ApmServer"), 512 * MIB, id="apm-default"),
        pytest.param(app("EnterpriseSearch", 2), 8 * GIB, id="enterprise-search-default"),
        pytest.param(app("Logstash", 3), 6 * GIB, id="logstash-default"),
    ],
)
def test_app_memory(managed: ManagedApp, expected: int) -> None:
    """Per-Pod memory (limit, request, default) times replicas."""
    assert app_memory_bytes(managed) == expected


@pytest.mark.parametrize(
    ("total", "units"),
    [
        (0, 0),
        (1, 1),
        (64 * GIB, 1),
        (64 * GIB + 1, 2),
        (200 * GIB, 4),
    ],
)
def test_enterprise_resource_units(total: int, units: int) -> None:
    """One unit per started 64 GiB."""
    assert enterprise_resource_units(total) == units


@pytest.mark.parametrize(
    ("license", "allowed"),
    [
        (None, 0),
        (LicenseSpec(type="enterprise", max_resource_units=10, max_instances=40), 10),
        (LicenseSpec(type="enterprise", max_instances=40), 20),
        (LicenseSpec(type="enterprise_trial"), 0),
    ],
)
def test_max_enterprise_resource_units(license: LicenseSpec | None, allowed: int) -> None:
    """``max_resource_units``, else half of ``max_instances``."""
    assert max_enterprise_resource_units(license) == allowed


EXPIRY = datetime(2027, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("managed", "license", "expected"),
    [
        pytest.param(
            [],
            None,
            {
                "eck_license_level": "basic",
                "enterprise_resource_units": "0",
                "total_managed_memory": "0.00GiB",
                "total_managed_memory_bytes": "0",
            },
            id="nothing-unlicensed",
        ),
        pytest.param(
            [es((32, "4Gi")), app("Kibana", 2), ManagedApp("Beat", {"spec": {}})],
            LicenseSpec(
                type="enterprise",
                max_resource_units=5,
                expiry_date_in_millis=to_millis(EXPIRY),
            ),
            {
                "eck_license_level": "enterprise",
                "eck_license_expiry_date": "2027-01-01T00:00:00Z",
                "enterprise_resource_units": "3",
                "max_enterprise_resource_units": "5",
                "elasticsearch_memory": "128.00GiB",
                "elasticsearch_memory_bytes": str(128 * GIB),
                "kibana_memory": "2.00GiB",
                "total_managed_memory": "130.00GiB",
                "total_managed_memory_bytes": str(130 * GIB),
            },
            id="enterprise-beats-not-counted",
        ),
        pytest.param(
            [app("ApmServer", 3)],
            LicenseSpec(type="enterprise_trial", expiry_date_in_millis=to_millis(EXPIRY)),
            {
                "eck_license_level": "enterprise_trial",
                "enterprise_resource_units": "1",
                "apm_memory": "1.50GiB",
            },
            id="trial",
        ),
    ],
)
def test_license_usage_report(
    managed: list[ManagedApp], license: LicenseSpec | None, expected: dict[str, str]
) -> None:
    """The report's fields (a subset is checked per row; the rest are shown by other rows)."""
    report = license_usage(managed, license).report()
    assert {key: report.get(key) for key in expected} == expected
    assert "timestamp" not in report
    if license is None:
        assert "eck_license_expiry_date" not in report
        assert "max_enterprise_resource_units" not in report
