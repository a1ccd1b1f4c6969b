"""The metrics registry and ``/metrics``: names, labels, help, types and values as scrapers read them."""

from __future__ import annotations

from types import SimpleNamespace

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from stackflow.metrics import CONTENT_TYPE, Registry
from stackflow.models.engine import ACT_LICENSE_WAIT_NOTICE, ACT_SCOPE_CHECK
from stackflow.observability import ActivityMetrics, ProbeServer

Sample = tuple[str, dict[str, str], float]


def families(text: str) -> dict[str, tuple[str, str, list[Sample]]]:
    """Parse exposition text: family name -> (type, help, samples)."""
    return {
        family.name: (
            family.type,
            family.documentation,
            [(sample.name, sample.labels, sample.value) for sample in family.samples],
        )
        for family in text_string_to_metric_families(text)
    }


def test_counter_sums_per_label_set() -> None:
    registry = Registry()
    reconciles = registry.counter(
        "stackflow_reconciles_total", "Reconciles by outcome.", ("controller", "outcome")
    )
    reconciles.inc(controller="elasticsearch", outcome="Ready")
    reconciles.inc(2, controller="elasticsearch", outcome="Ready")
    reconciles.inc(controller="license", outcome="error")
    text = registry.render()
    assert "# HELP stackflow_reconciles_total Reconciles by outcome.\n" in text
    assert "# TYPE stackflow_reconciles_total counter\n" in text
    assert "_created" not in text
    kind, help_text, samples = families(text)["stackflow_reconciles"]
    assert (kind, help_text) == ("counter", "Reconciles by outcome.")
    assert sorted(samples, key=str) == [
        ("stackflow_reconciles_total", {"controller": "elasticsearch", "outcome": "Ready"}, 3),
        ("stackflow_reconciles_total", {"controller": "license", "outcome": "error"}, 1),
    ]
    assert reconciles.value(controller="elasticsearch", outcome="Ready") == 3
    assert reconciles.value(controller="kibana", outcome="Ready") == 0


def test_histogram_buckets_are_cumulative_with_sum_and_count() -> None:
    registry = Registry()
    duration = registry.histogram(
        "stackflow_reconcile_duration_seconds", "Duration.", ("controller",), buckets=(1.0, 0.1)
    )
    for value in (0.05, 0.5, 3.0):
        duration.observe(value, controller="es")
    text = registry.render()
    assert "# TYPE stackflow_reconcile_duration_seconds histogram\n" in text
    assert "_created" not in text
    _, _, samples = families(text)["stackflow_reconcile_duration_seconds"]
    by_name = {(name, labels.get("le")): value for name, labels, value in samples}
    assert by_name == {
        ("stackflow_reconcile_duration_seconds_bucket", "0.1"): 1,
        ("stackflow_reconcile_duration_seconds_bucket", "1.0"): 2,
        ("stackflow_reconcile_duration_seconds_bucket", "+Inf"): 3,
        ("stackflow_reconcile_duration_seconds_sum", None): pytest.approx(3.55),
        ("stackflow_reconcile_duration_seconds_count", None): 3,
    }
    assert duration.count(controller="es") == 3


def test_gauge_goes_both_ways_and_label_values_are_escaped() -> None:
    registry = Registry()
    leader = registry.gauge("stackflow_leader", "1 when leading.", ("identity",))
    leader.set(1, identity='pod "a"\\b')
    leader.inc(-1, identity='pod "a"\\b')
    text = registry.render()
    assert 'stackflow_leader{identity="pod \\"a\\"\\\\b"} 0' in text
    assert families(text)["stackflow_leader"][2] == [
        ("stackflow_leader", {"identity": 'pod "a"\\b'}, 0)
    ]


def test_help_text_is_escaped() -> None:
    registry = Registry()
    registry.gauge("stackflow_leader", "one\nline \\ two")
    assert "# HELP stackflow_leader one\\nline \\\\ two\n" in registry.render()


def test_asking_twice_returns_the_same_metric() -> None:
    registry = Registry()
    first = registry.counter("x_total", "x", ("a",))
    first.inc(a="1")
    again = registry.counter("x_total", "x", ("a",))
    assert again is first
    again.inc(a="1")
    assert families(registry.render())["x"][2] == [("x_total", {"a": "1"}, 2)]


def test_registries_are_independent() -> None:
    one, two = Registry(), Registry()
    one.counter("x_total", "x").inc()
    two.counter("x_total", "x")
    assert families(one.render())["x"][2] == [("x_total", {}, 1)]
    assert families(two.render())["x"][2] == [("x_total", {}, 0)]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda r: r.counter("bad name_total", "x"), "invalid metric name"),
        (lambda r: r.counter("x_total", "x", ("le",)), "invalid label name"),
        (lambda r: r.gauge("x", "x", ("__a",)), "invalid label name"),
        (lambda r: r.counter("x", "x"), "must end in _total"),
        (lambda r: (r.counter("x_total", "x"), r.gauge("x_total", "x")), "registered differently"),
        (lambda r: (r.gauge("x", "x", ("a",)), r.gauge("x", "x", ("b",))), "differently"),
        (lambda r: r.counter("x_total", "x", ("a",)).inc(b="1"), "takes labels"),
        (lambda r: r.gauge("x", "x").set(1, a="1"), "takes labels"),
        (lambda r: r.counter("x_total", "x").inc(-1), "only goes up"),
    ],
    ids=[
        "name",
        "reserved-le",
        "reserved-dunder",
        "counter-suffix",
        "kind-clash",
        "label-clash",
        "wrong-labels",
        "unlabelled",
        "negative",
    ],
)
def test_misuse_is_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(Registry())  # type: ignore[operator]


def test_an_empty_registry_renders_nothing() -> None:
    assert Registry().render() == ""


def test_activity_metrics_exposition() -> None:
    registry = Registry()
    metrics = ActivityMetrics(registry)
    metrics.record(
        "elasticsearch.reconcile",
        SimpleNamespace(phase=SimpleNamespace(value="Ready")),
        0.2,
        failed=False,
    )
    metrics.record("kibana.reconcile", None, 1.5, failed=True)
    metrics.record(ACT_LICENSE_WAIT_NOTICE, None, 0.0, failed=False)
    metrics.record(ACT_SCOPE_CHECK, SimpleNamespace(exists=True, in_scope=False), 0.0, failed=False)
    metrics.record(ACT_SCOPE_CHECK, SimpleNamespace(exists=True, in_scope=True), 0.0, failed=False)
    parsed = families(registry.render())
    assert {name: (kind, help_text) for name, (kind, help_text, _) in parsed.items()} == {
        "stackflow_reconciles": (
            "counter",
            "Reconcile activities by controller and outcome (the phase, or error).",
        ),
        "stackflow_reconcile_duration_seconds": (
            "histogram",
            "Duration of reconcile activity attempts, by controller.",
        ),
        "stackflow_license_waits": (
            "counter",
            "License waits started (InvalidLicense notices emitted).",
        ),
        "stackflow_out_of_scope": (
            "counter",
            "Scope checks that found a resource out of scope (one per out-of-scope wake).",
        ),
        "stackflow_enterprise_resource_units": (
            "gauge",
            "Enterprise resource units in use: ceil(managed memory / 64 GiB), as ECK reports.",
        ),
        "stackflow_max_enterprise_resource_units": (
            "gauge",
            "Enterprise resource units the current license allows (0 when it sets no limit).",
        ),
        "stackflow_license_level": (
            "gauge",
            "1 for the operator's current license level (basic without an enterprise license).",
        ),
    }
    assert sorted(parsed["stackflow_reconciles"][2], key=str) == [
        ("stackflow_reconciles_total", {"controller": "elasticsearch", "outcome": "Ready"}, 1),
        ("stackflow_reconciles_total", {"controller": "kibana", "outcome": "error"}, 1),
    ]
    counts = {
        labels["controller"]: value
        for name, labels, value in parsed["stackflow_reconcile_duration_seconds"][2]
        if name.endswith("_count")
    }
    assert counts == {"elasticsearch": 1, "kibana": 1}
    assert parsed["stackflow_license_waits"][2] == [("stackflow_license_waits_total", {}, 1)]
    assert parsed["stackflow_out_of_scope"][2] == [("stackflow_out_of_scope_total", {}, 1)]


async def test_metrics_endpoint_serves_the_exposition() -> None:
    registry = Registry()
    registry.gauge("stackflow_leader", "1 while this replica holds the leader Lease.").set(1)
    server = ProbeServer(
        registry=registry,
        is_healthy=lambda: True,
        is_ready=lambda: True,
        host="127.0.0.1",
        health_port=0,
    )
    await server.start()
    try:
        url = f"http://127.0.0.1:{server.bound_health_port}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
            assert response.headers["Content-Type"] == CONTENT_TYPE
            body = await response.text()
    finally:
        await server.stop()
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"
    assert families(body)["stackflow_leader"] == (
        "gauge",
        "1 while this replica holds the leader Lease.",
        [("stackflow_leader", {}, 1)],
    )
