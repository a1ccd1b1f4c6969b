"""A policy's status: each targeted resource's phase (an Elasticsearch from the file-settings
version it reports, a Kibana from its rendered ``kibana.yml``), the policy's phase and counts, and
the merge patch that writes them."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.api.stackconfigpolicy import PHASE_SEVERITY
from stackflow.stack.policies.stack_config.values import mapping_of


@dataclass(frozen=True)
class ResourceStatus:
    """How far the policies got on one targeted resource."""

    phase: str
    expected_version: int | None = None
    current_version: int | None = None
    error: str | None = None

    def as_status(self) -> dict[str, Any]:
        """The ``status.details.<type>.<ns/name>`` entry."""
        entry: dict[str, Any] = {"phase": self.phase}
        if self.expected_version is not None:
            entry["expectedVersion"] = self.expected_version
        if self.current_version is not None:
            entry["currentVersion"] = self.current_version
        if self.error is not None:
            entry["error"] = {"message": self.error}
            if self.expected_version is not None:
                entry["error"]["version"] = self.expected_version
        return entry


def resource_phase(
    *,
    expected_version: int,
    reported_version: int | None,
    reported_errors: Mapping[str, Any] | None,
) -> ResourceStatus:
    """An Elasticsearch's phase from the file-settings version it reports (None: it could not be
    asked): Ready once it applied the Secret's version, Error when it reports errors for it,
    ApplyingChanges otherwise."""
    errors = mapping_of(reported_errors)
    if errors and _error_version(errors) == expected_version:
        return ResourceStatus(
            phase="Error",
            expected_version=expected_version,
            current_version=reported_version,
            error=json.dumps(dict(errors), sort_keys=True),
        )
    if reported_version is not None and reported_version == expected_version:
        return ResourceStatus(
            phase="Ready", expected_version=expected_version, current_version=reported_version
        )
    return ResourceStatus(
        phase="ApplyingChanges",
        expected_version=expected_version,
        current_version=reported_version,
    )


def _error_version(errors: Mapping[str, Any]) -> int | None:
    try:
        return int(errors.get("version"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def policy_status(
    details: Mapping[str, Mapping[str, ResourceStatus]], *, observed_generation: int | None
) -> dict[str, Any]:
    """The policy's ``status``: counts, ``readyCount`` ("ready/resources"), per-resource details
    and the phase, the worst of its resources' phases (Ready when it targets nothing)."""
    entries = [entry for by_key in details.values() for entry in by_key.values()]
    ready = sum(1 for entry in entries if entry.phase == "Ready")
    errors = sum(1 for entry in entries if entry.phase in ("Error", "Conflict", "Invalid"))
    phase = "Ready"
    for entry in entries:
        if PHASE_SEVERITY.get(entry.phase, -1) > PHASE_SEVERITY[phase]:
            phase = entry.phase
    status: dict[str, Any] = {
        "resources": len(entries),
        "ready": ready,
        "errors": errors,
        "readyCount": f"{ready}/{len(entries)}",
        "phase": phase,
        "details": {
            type_: {key: entry.as_status() for key, entry in sorted(by_key.items())}
            for type_, by_key in sorted(details.items())
            if by_key
        },
    }
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    return status


def _merge_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch turning ``current`` into ``desired`` (a gone key is set to null)."""
    patch: dict[str, Any] = {}
    for key in sorted(set(current) | set(desired)):
        if key not in desired:
            patch[key] = None
        elif current.get(key) != desired[key]:
            old, new = current.get(key), desired[key]
            both_maps = isinstance(old, Mapping) and isinstance(new, Mapping)
            patch[key] = _merge_patch(old, new) if both_maps else copy.deepcopy(new)  # type: ignore[arg-type]
    return patch


def status_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch of the policy's ``status`` from ``current`` to ``desired``, or None when
    nothing changed: every field of ``desired`` is set, and within ``details`` a resource no
    longer targeted (or a field an entry no longer has) is removed. Fields the policy controller
    does not own (an Invalid notice's conditions) are left as they are."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        old = current.get(key)
        if old == value:
            continue
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            patch[key] = _merge_patch(old, value)
        else:
            patch[key] = copy.deepcopy(value)
    return patch or None


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def kibana_applied(policy_config: Mapping[str, Any], rendered: Mapping[str, Any]) -> bool:
    """Whether the Kibana controller rendered every policy setting into ``kibana.yml``
    (``rendered``: the parsed file), i.e. the Pods roll to the policy's configuration."""
    have = _flat(rendered)
    return all(have.get(key) == value for key, value in _flat(policy_config).items())
