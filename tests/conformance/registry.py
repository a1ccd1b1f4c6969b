"""The table of checks: each is one scenario of client calls, run the same way against both servers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tests.conformance.harness import Run

CheckFunction = Callable[[Run], Awaitable[None]]


@dataclass(frozen=True)
class Check:
    """One scenario: its name, what it covers, and how the run is prepared."""

    name: str
    covers: str
    function: CheckFunction
    #: Create the run's namespace first (and delete it after).
    namespace: bool = True
    #: The check creates Pods: on the real server wait for the namespace's ServiceAccount first.
    pods: bool = False


CHECKS: dict[str, Check] = {}


def check(
    name: str, covers: str, *, namespace: bool = True, pods: bool = False
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check function under ``name``."""

    def register(function: CheckFunction) -> CheckFunction:
        if name in CHECKS:
            raise ValueError(f"two checks are named {name!r}")
        CHECKS[name] = Check(name, covers, function, namespace=namespace, pods=pods)
        return function

    return register


def all_checks() -> dict[str, Check]:
    """Every check, in definition order (importing the check modules registers them)."""
    from tests.conformance import (  # noqa: F401  (imported for their registrations)
        checks_crd,
        checks_deletion,
        checks_errors,
        checks_gc,
        checks_kubectl,
        checks_lists,
        checks_namespaces,
        checks_objects,
        checks_patch,
        checks_rbac,
        checks_spec,
        checks_tables,
        checks_watch,
        checks_webhooks,
    )

    return dict(CHECKS)
