"""Amounts as ECK's autoscaler rounds, clamps and renders them (bytes, cores, node counts)."""

from __future__ import annotations

import math
from decimal import Decimal

from stackflow.stack.policies.autoscaling.spec import Bounds

__all__ = [
    "GIB",
    "clamp",
    "clamp_count",
    "format_quantity",
    "millis",
    "round_up",
    "whole",
]

#: ECK rounds memory and storage up to a GiB; it renders a whole number of GB as ``<n>G``.
GIB = 2**30
_GB = 10**9


def whole(value: Decimal) -> int:
    """A quantity's ``Value()`` in ECK: the amount rounded up to a whole unit."""
    return math.ceil(value)


def round_up(value: int, multiple: int) -> int:
    """``value`` rounded up to a multiple of ``multiple``."""
    return value if value % multiple == 0 else value + multiple - value % multiple


def millis(value: Decimal) -> int:
    """An amount of cores in millicores, rounded up (ECK sizes cpu in millicores)."""
    return math.ceil(value * 1000)


def clamp_count(count: int, bounds: Bounds) -> int:
    """A node count kept within a ``nodeCount`` range."""
    return int(min(max(Decimal(count), bounds.min), bounds.max))


def clamp(value: Decimal, bounds: Bounds) -> Decimal:
    """An amount kept within a resource's range."""
    return min(max(value, bounds.min), bounds.max)


def format_quantity(amount: Decimal, *, cpu: bool = False) -> str:
    """ECK's rendering of an amount: cpu in cores or millicores; bytes as ``<n>Gi`` when a
    whole number of GiB, ``<n>G`` when a whole number of GB, else the plain number of bytes."""
    if cpu:
        if amount == amount.to_integral_value():
            return str(int(amount))
        return f"{math.ceil(amount * 1000)}m"
    rounded = whole(amount)
    if rounded >= GIB and rounded % GIB == 0:
        return f"{rounded // GIB}Gi"
    if rounded >= _GB and rounded % _GB == 0:
        return f"{rounded // _GB}G"
    return str(rounded)
