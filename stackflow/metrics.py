"""The operator's Prometheus metrics: a per-process registry over ``prometheus_client``.

:class:`Registry` wraps one ``prometheus_client.CollectorRegistry`` of its own (never the library's
global default, so each operator process, and each test, starts empty) and hands out counters,
gauges and histograms whose ``inc``/``set``/``observe`` take the label values as keyword arguments.
:meth:`Registry.render` is the text exposition format 0.0.4 that ``/metrics`` serves with
:data:`CONTENT_TYPE`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import prometheus_client
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_BUCKETS",
    "LICENSE_LEVELS",
    "Counter",
    "Gauge",
    "Histogram",
    "LicenseGauges",
    "Registry",
]

# Spelled out: prometheus_client's CONTENT_TYPE_LATEST moved to 1.0.0 in 0.22, and the 0.0.4 constant
# only exists from then on, while ``generate_latest`` writes 0.0.4 for the legacy names used here.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The ``Content-Type`` of :meth:`Registry.render`'s output."""

DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Histogram upper bounds in seconds, up to the minute a slow reconcile can take (``+Inf`` added)."""

# prometheus_client accepts any UTF-8 name unless told otherwise (a process-wide switch); the 0.0.4
# text format carries only these, so refuse others here rather than have them escaped on output.
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

_Wrapped = TypeVar("_Wrapped", bound=MetricWrapperBase)


class _Metric:
    """One ``prometheus_client`` metric, addressed with label values as keyword arguments."""

    def __init__(self, registry: CollectorRegistry, name: str, label_names: Sequence[str]) -> None:
        if not _NAME.fullmatch(name):
            raise ValueError(f"invalid metric name {name!r}")
        for label in label_names:
            # ``le`` is reserved only in histograms by the library; refusing it everywhere keeps a
            # name from meaning a bucket bound in one metric and something else in another.
            if not _LABEL.fullmatch(label) or label.startswith("__") or label == "le":
                raise ValueError(f"invalid label name {label!r} for {name}")
        self.name = name
        self.label_names = tuple(label_names)
        self._registry = registry

    def _labels(self, labels: dict[str, str]) -> dict[str, str]:
        if set(labels) != set(self.label_names):
            raise ValueError(
                f"{self.name} takes labels {sorted(self.label_names)}, got {sorted(labels)}"
            )
        return {name: str(value) for name, value in labels.items()}

    def _child(self, wrapped: _Wrapped, labels: dict[str, str]) -> _Wrapped:
        checked = self._labels(labels)
        # An unlabelled prometheus_client metric is its own (only) child; ``labels()`` refuses it.
        return wrapped.labels(**checked) if self.label_names else wrapped

    def _sample(self, sample_name: str, labels: dict[str, str]) -> float:
        value = self._registry.get_sample_value(sample_name, self._labels(labels))
        return 0.0 if value is None else value


class Counter(_Metric):
    """A monotonically increasing count per label set."""

    def __init__(
        self,
        registry: CollectorRegistry,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
    ) -> None:
        """Declare the counter in ``registry``; ``name`` must end in ``_total``."""
        super().__init__(registry, name, label_names)
        if not name.endswith("_total"):
            # prometheus_client appends ``_total`` to a counter's samples, so any other name would
            # not be the one exposed.
            raise ValueError(f"counter name {name!r} must end in _total")
        self._counter = prometheus_client.Counter(
            name, help_text, self.label_names, registry=registry
        )

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` (not negative) to the count of ``labels``."""
        if amount < 0:
            raise ValueError("a counter only goes up")
        self._child(self._counter, labels).inc(amount)

    def value(self, **labels: str) -> float:
        """The current count of ``labels`` (0 if never incremented)."""
        return self._sample(self.name, labels)


class Gauge(_Metric):
    """A value that goes up and down per label set."""

    def __init__(
        self,
        registry: CollectorRegistry,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
    ) -> None:
        """Declare the gauge in ``registry``."""
        super().__init__(registry, name, label_names)
        self._gauge = prometheus_client.Gauge(name, help_text, self.label_names, registry=registry)

    def set(self, value: float, **labels: str) -> None:
        """Set the value of ``labels``."""
        self._child(self._gauge, labels).set(value)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` (may be negative) to the value of ``labels``."""
        self._child(self._gauge, labels).inc(amount)

    def value(self, **labels: str) -> float:
        """The current value of ``labels`` (0 if never set)."""
        return self._sample(self.name, labels)


class Histogram(_Metric):
    """Observations counted into cumulative buckets, with their sum and count."""

    def __init__(
        self,
        registry: CollectorRegistry,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> None:
        """Declare the histogram in ``registry`` with upper bounds ``buckets`` (``+Inf`` is added)."""
        super().__init__(registry, name, label_names)
        # The library wants the bounds sorted and appends +Inf itself.
        bounds = sorted(float(bound) for bound in buckets if not math.isinf(bound))
        self.bounds = (*bounds, math.inf)
        self._histogram = prometheus_client.Histogram(
            name, help_text, self.label_names, registry=registry, buckets=self.bounds
        )

    def observe(self, value: float, **labels: str) -> None:
        """Record one observation of ``labels``."""
        self._child(self._histogram, labels).observe(value)

    def count(self, **labels: str) -> int:
        """How many observations ``labels`` has."""
        return int(self._sample(f"{self.name}_count", labels))


class _WithoutCreated:
    """A view of a registry without the ``_created`` series.

    prometheus_client adds a ``<name>_created`` gauge (a start timestamp) to every counter and
    histogram series unless switched off process-wide; the operator never exposed those and a
    per-registry filter leaves other users of the library alone.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        """The registry's metric families, ``_created`` samples dropped."""
        for family in self._registry.collect():
            if family.type in ("counter", "histogram"):
                # The library builds the families afresh on every collect, so this edits no state.
                created = f"{family.name}_created"
                family.samples = [sample for sample in family.samples if sample.name != created]
            yield family


_Declared = TypeVar("_Declared", bound=_Metric)


class Registry:
    """The operator's metrics; asking twice for the same name returns the same metric."""

    def __init__(self) -> None:
        """Start empty, with a ``CollectorRegistry`` of its own."""
        self.collector_registry = CollectorRegistry()
        """The underlying ``prometheus_client`` registry (for the library's own exporters)."""
        self._metrics: dict[str, _Metric] = {}

    def _declared(
        self,
        kind: type[_Declared],
        name: str,
        label_names: Sequence[str],
        declare: Callable[[], _Declared],
    ) -> _Declared:
        # The library refuses a second registration of a name; the operator's components each ask
        # for the metrics they record into, so a repeated identical declaration means "the same".
        existing = self._metrics.get(name)
        if existing is None:
            metric = self._metrics[name] = declare()
            return metric
        if type(existing) is not kind or existing.label_names != tuple(label_names):
            raise ValueError(f"metric {name} is already registered differently")
        assert isinstance(existing, kind)
        return existing

    def counter(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> Counter:
        """The counter ``name`` (declared on first use); its name must end in ``_total``."""
        return self._declared(
            Counter,
            name,
            label_names,
            lambda: Counter(self.collector_registry, name, help_text, label_names),
        )

    def gauge(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> Gauge:
        """The gauge ``name`` (declared on first use)."""
        return self._declared(
            Gauge,
            name,
            label_names,
            lambda: Gauge(self.collector_registry, name, help_text, label_names),
        )

    def histogram(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> Histogram:
        """The histogram ``name`` (declared on first use)."""
        return self._declared(
            Histogram,
            name,
            label_names,
            lambda: Histogram(
                self.collector_registry, name, help_text, label_names, buckets=buckets
            ),
        )

    def render(self) -> str:
        """Every metric in the text exposition format 0.0.4 (empty when nothing is declared)."""
        return prometheus_client.generate_latest(_WithoutCreated(self.collector_registry)).decode()


#: The levels ``stackflow_license_level`` always reports (0 or 1), so a change of level shows as
#: one series going to 0 and another to 1 rather than a series disappearing.
LICENSE_LEVELS = ("basic", "enterprise", "enterprise_trial")


class LicenseGauges:
    """The licensing usage gauges: the license level and the enterprise resource units in use."""

    def __init__(self, registry: Registry) -> None:
        """Declare the gauges in ``registry``."""
        self.level = registry.gauge(
            "stackflow_license_level",
            "1 for the operator's current license level (basic without an enterprise license).",
            ("level",),
        )
        self.enterprise_resource_units = registry.gauge(
            "stackflow_enterprise_resource_units",
            "Enterprise resource units in use: ceil(managed memory / 64 GiB), as ECK reports.",
        )
        self.max_enterprise_resource_units = registry.gauge(
            "stackflow_max_enterprise_resource_units",
            "Enterprise resource units the current license allows (0 when it sets no limit).",
        )

    def record(self, *, level: str, units: int, max_units: int) -> None:
        """Show one licensing usage report."""
        for known in {*LICENSE_LEVELS, level}:
            self.level.set(1 if known == level else 0, level=known)
        self.enterprise_resource_units.set(units)
        self.max_enterprise_resource_units.set(max_units)
