"""Kubernetes resource quantities (``500m``, ``1.5Gi``, ``2e3``) as exact numbers.

The API server stores a quantity in its canonical form (``1.5Gi`` comes back as ``1536Mi``, a bare
``1`` CPU as ``"1"``), so two spellings of one amount must compare equal, or every reconcile would
rewrite an object that is already as desired.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["parse_quantity", "same_quantity"]

_SUFFIXES: dict[str, Decimal] = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]|)$"
)


def parse_quantity(value: object) -> Decimal | None:
    """The amount a quantity (string or number) denotes, or None when it is not one (pure)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    number, suffix = match.groups()
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number + suffix)
        return Decimal(number) * _SUFFIXES[suffix]
    except InvalidOperation:
        return None


def same_quantity(left: object, right: object) -> bool:
    """Whether two values are quantities of the same amount (pure)."""
    first, second = parse_quantity(left), parse_quantity(right)
    return first is not None and second is not None and first == second
