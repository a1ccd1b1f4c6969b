"""The tiny Prometheus registry renders the text exposition format scrapers read."""

from __future__ import annotations

import pytest

from stackflow.metrics import Registry, format_value


def test_counter_renders_help_type_and_one_line_per_label_set() -> None:
    registry = Registry()
    reconciles = registry.counter(
        "stackflow_reconciles_total", "Reconciles by outcome.", ("controller", "outcome")
    )
    reconciles.inc(controller="elasticsearch", outcome="Ready")
    reconciles.inc(2, controller="elasticsearch", outcome="Ready")
    reconciles.inc(controller="license", outcome="error")
    assert registry.render() == (
        "# HELP stackflow_reconciles_total Reconciles by outcome.\n"
        "# TYPE stackflow_reconciles_total counter\n"
        'stackflow_reconciles_total{controller="elasticsearch",outcome="Ready"} 3\n'
        'stackflow_reconciles_total{controller="license",outcome="error"} 1\n'
    )


def test_histogram_buckets_are_cumulative_with_sum_and_count() -> None:
    registry = Registry()
    duration = registry.histogram(
        "stackflow_reconcile_duration_seconds", "Duration.", ("controller",), buckets=(0.1, 1.0)
    )
    for value in (0.05, 0.5, 3.0):
        duration.observe(value, controller="es")
    lines = registry.render().splitlines()
    assert lines[2:] == [
        'stackflow_reconcile_duration_seconds_bucket{controller="es",le="0.1"} 1',
        'stackflow_reconcile_duration_seconds_bucket{controller="es",le="1"} 2',
        'stackflow_reconcile_duration_seconds_bucket{controller="es",le="+Inf"} 3',
        'stackflow_reconcile_duration_seconds_sum{controller="es"} 3.55',
        'stackflow_reconcile_duration_seconds_count{controller="es"} 3',
    ]
    assert duration.count(controller="es") == 3


def test_gauge_goes_both_ways_and_label_values_are_escaped() -> None:
    registry = Registry()
    leader = registry.gauge("stackflow_leader", "1 when leading.", ("identity",))
    leader.set(1, identity='pod "a"\\b')
    leader.inc(-1, identity='pod "a"\\b')
    assert 'stackflow_leader{identity="pod \\"a\\"\\\\b"} 0' in registry.render()


def test_asking_twice_returns_the_same_metric() -> None:
    registry = Registry()
    first = registry.counter("x_total", "x", ("a",))
    first.inc(a="1")
    assert registry.counter("x_total", "x", ("a",)).value(a="1") == 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda r: r.counter("bad name", "x"), "invalid metric name"),
        (lambda r: r.counter("x_total", "x", ("le",)), "invalid label name"),
        (lambda r: (r.counter("x_total", "x"), r.gauge("x_total", "x")), "registered differently"),
        (lambda r: r.counter("x_total", "x", ("a",)).inc(b="1"), "takes labels"),
        (lambda r: r.counter("x_total", "x").inc(-1), "only goes up"),
    ],
    ids=["name", "reserved-label", "kind-clash", "wrong-labels", "negative"],
)
def test_misuse_is_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(Registry())  # type: ignore[operator]


@pytest.mark.parametrize(
    ("value", "text"),
    [(3.0, "3"), (0.25, "0.25"), (float("inf"), "+Inf"), (float("nan"), "NaN")],
)
def test_format_value(value: float, text: str) -> None:
    assert format_value(value) == text


def test_an_empty_registry_renders_nothing() -> None:
    assert Registry().render() == ""
