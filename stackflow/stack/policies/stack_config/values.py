"""Lenient readers of the untyped JSON a policy and its Secrets hold: a field of the wrong type
reads as empty and an undecodable Secret value as absent, so that a malformed object configures
nothing instead of failing the reconcile."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any


def mapping_of(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def list_of(value: object) -> list[Any]:
    """A copy of ``value`` when it is a list, else an empty list."""
    return list(value) if isinstance(value, list) else []


def secret_text(secret: Mapping[str, Any] | None, key: str) -> str | None:
    """The text of a Secret's ``data`` key, or None when it is absent or not base64 UTF-8."""
    value = ((secret or {}).get("data") or {}).get(key)
    if value is None:
        return None
    try:
        return base64.b64decode(str(value)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
