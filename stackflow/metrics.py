"""A tiny Prometheus registry: counters, gauges and histograms with labels, rendered as text.

Enough for ``/metrics`` (text exposition format 0.0.4) without a new dependency. Not
thread-safe by design: everything that records runs on the operator's event loop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_BUCKETS",
    "Counter",
    "Gauge",
    "Histogram",
    "Registry",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

LabelValues = tuple[str, ...]


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value as Prometheus writes it (``+Inf``, integers without ``.0``)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _labels_text(names: Sequence[str], values: Sequence[str]) -> str:
    if not names:
        return ""
    pairs = ",".join(
        f'{name}="{_escape_label_value(value)}"' for name, value in zip(names, values, strict=True)
    )
    return "{" + pairs + "}"


class _Metric:
    kind = "untyped"

    def __init__(self, name: str, help_text: str, label_names: Sequence[str]) -> None:
        if not _NAME.fullmatch(name):
            raise ValueError(f"invalid metric name {name!r}")
        for label in label_names:
            if not _LABEL.fullmatch(label) or label.startswith("__") or label == "le":
                raise ValueError(f"invalid label name {label!r} for {name}")
        self.name = name
        self.help = help_text
        self.label_names = tuple(label_names)

    def _key(self, labels: dict[str, str]) -> LabelValues:
        if set(labels) != set(self.label_names):
            raise ValueError(
                f"{self.name} takes labels {sorted(self.label_names)}, got {sorted(labels)}"
            )
        return tuple(str(labels[name]) for name in self.label_names)

    def header(self) -> list[str]:
        """The ``# HELP`` and ``# TYPE`` lines."""
        return [
            f"# HELP {self.name} {_escape_help(self.help)}",
            f"# TYPE {self.name} {self.kind}",
        ]

    def samples(self) -> Iterable[str]:
        """The sample lines."""
        return ()


class Counter(_Metric):
    """A monotonically increasing count per label set."""

    kind = "counter"

    def __init__(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> None:
        """Declare a counter; its name should end in ``_total``."""
        super().__init__(name, help_text, label_names)
        self._values: dict[LabelValues, float] = {}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` (not negative) to the count of ``labels``."""
        if amount < 0:
            raise ValueError("a counter only goes up")
        key = self._key(labels)
        self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        """The current count of ``labels`` (0 if never incremented)."""
        return self._values.get(self._key(labels), 0.0)

    def samples(self) -> Iterable[str]:
        """One line per label set."""
        for key in sorted(self._values):
            yield f"{self.name}{_labels_text(self.label_names, key)} {format_value(self._values[key])}"


class Gauge(_Metric):
    """A value that goes up and down per label set."""

    kind = "gauge"

    def __init__(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> None:
        """Declare a gauge."""
        super().__init__(name, help_text, label_names)
        self._values: dict[LabelValues, float] = {}

    def set(self, value: float, **labels: str) -> None:
        """Set the value of ``labels``."""
        self._values[self._key(labels)] = float(value)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` (may be negative) to the value of ``labels``."""
        key = self._key(labels)
        self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        """The current value of ``labels`` (0 if never set)."""
        return self._values.get(self._key(labels), 0.0)

    def samples(self) -> Iterable[str]:
        """One line per label set."""
        for key in sorted(self._values):
            yield f"{self.name}{_labels_text(self.label_names, key)} {format_value(self._values[key])}"


class Histogram(_Metric):
    """Observations counted into cumulative buckets, with their sum and count."""

    kind = "histogram"

    def __init__(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> None:
        """Declare a histogram with upper bounds ``buckets`` (``+Inf`` is added)."""
        super().__init__(name, help_text, label_names)
        bounds = sorted(float(bound) for bound in buckets if not math.isinf(bound))
        self.bounds = (*bounds, math.inf)
        self._counts: dict[LabelValues, list[int]] = {}
        self._sums: dict[LabelValues, float] = {}

    def observe(self, value: float, **labels: str) -> None:
        """Record one observation of ``labels``."""
        key = self._key(labels)
        counts = self._counts.setdefault(key, [0] * len(self.bounds))
        for index, bound in enumerate(self.bounds):
            if value <= bound:
                counts[index] += 1
        self._sums[key] = self._sums.get(key, 0.0) + value

    def count(self, **labels: str) -> int:
        """How many observations ``labels`` has."""
        counts = self._counts.get(self._key(labels))
        return counts[-1] if counts else 0

    def samples(self) -> Iterable[str]:
        """``_bucket`` lines (cumulative), then ``_sum`` and ``_count`` per label set."""
        names = (*self.label_names, "le")
        for key in sorted(self._counts):
            counts = self._counts[key]
            for bound, count in zip(self.bounds, counts, strict=True):
                labels = _labels_text(names, (*key, format_value(bound)))
                yield f"{self.name}_bucket{labels} {count}"
            base = _labels_text(self.label_names, key)
            yield f"{self.name}_sum{base} {format_value(self._sums[key])}"
            yield f"{self.name}_count{base} {counts[-1]}"


class Registry:
    """Named metrics; asking twice for the same name returns the same metric."""

    def __init__(self) -> None:
        """Start empty."""
        self._metrics: dict[str, _Metric] = {}

    def _get_or_add(self, metric: _Metric) -> _Metric:
        existing = self._metrics.get(metric.name)
        if existing is None:
            self._metrics[metric.name] = metric
            return metric
        if type(existing) is not type(metric) or existing.label_names != metric.label_names:
            raise ValueError(f"metric {metric.name} is already registered differently")
        return existing

    def counter(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> Counter:
        """The counter ``name`` (declared on first use)."""
        metric = self._get_or_add(Counter(name, help_text, label_names))
        assert isinstance(metric, Counter)
        return metric

    def gauge(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> Gauge:
        """The gauge ``name`` (declared on first use)."""
        metric = self._get_or_add(Gauge(name, help_text, label_names))
        assert isinstance(metric, Gauge)
        return metric

    def histogram(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> Histogram:
        """The histogram ``name`` (declared on first use)."""
        metric = self._get_or_add(Histogram(name, help_text, label_names, buckets=buckets))
        assert isinstance(metric, Histogram)
        return metric

    def render(self) -> str:
        """Every metric in the text exposition format, sorted by name."""
        lines: list[str] = []
        for name in sorted(self._metrics):
            metric = self._metrics[name]
            lines.extend(metric.header())
            lines.extend(metric.samples())
        return "\n".join(lines) + "\n" if lines else ""
