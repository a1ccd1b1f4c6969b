"""Apply the per-cluster license (``<es>-es-license``) through the cluster's ``_license`` API.

The license controller writes ``<es>-es-license``; the Elasticsearch reconcile installs it, as ECK's
``applyLinkedLicense``: it compares the Secret's license with ``GET _license`` and calls
``PUT _license`` only when the uids differ. A ``trial`` license starts Elasticsearch's
self-generated trial instead, once per cluster: the start is remembered in an annotation on the
Elasticsearch object, because Elasticsearch refuses a second trial anyway and asking again on every
reconcile would only produce errors. The decision (:func:`license_decision`) is pure; the I/O is in
:func:`apply_cluster_license`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from activities.context import ControllerContext
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.elastic import ElasticsearchApi, ElasticsearchError, ElasticsearchUnavailable
from stackflow.licensing.model import LICENSE_FILE_NAME
from stackflow.models.kinds import SECRETS
from stackflow.stack.elasticsearch.names import license_secret_name
from stackflow.stack.objects import decode_secret_data

__all__ = [
    "TRIAL_STARTED_ANNOTATION",
    "LicenseAction",
    "LicenseDecision",
    "LicenseOutcome",
    "apply_cluster_license",
    "desired_license",
    "license_decision",
]

logger = logging.getLogger("activities.elasticsearch")

TRIAL_STARTED_ANNOTATION = "elasticsearch.k8s.elastic.co/trial-started"
ES_TRIAL_TYPE = "trial"
_FORBIDDEN = 403


class LicenseAction(Enum):
    """What the reconcile must ask the cluster."""

    NONE = "none"
    PUT_LICENSE = "put-license"
    START_TRIAL = "start-trial"


@dataclass(frozen=True)
class LicenseDecision:
    """The action, and why (for the reconcile message and logs)."""

    action: LicenseAction
    reason: str


@dataclass(frozen=True)
class LicenseOutcome:
    """What happened: the call made (if any), and whether to try again later."""

    applied: LicenseAction = LicenseAction.NONE
    retry: bool = False
    message: str = ""


def desired_license(secret: Mapping[str, Any]) -> dict[str, Any]:
    """Return the license object of a ``<es>-es-license`` Secret; ``ValueError`` when unreadable.

    The license is under the ``license`` key, or the only key of a Secret a user wrote by hand.
    """
    data = decode_secret_data(secret)
    raw = data.get(LICENSE_FILE_NAME)
    if raw is None and len(data) == 1:
        raw = next(iter(data.values()))
    if raw is None:
        raise ValueError(f"no {LICENSE_FILE_NAME!r} key in the license Secret")
    try:
        parsed = json.loads(raw)
    except ValueError as error:
        raise ValueError(f"license Secret is not JSON: {error}") from error
    if not isinstance(parsed, dict) or not parsed.get("type"):
        raise ValueError("license Secret holds no license type")
    return parsed


def license_decision(
    *, desired: Mapping[str, Any], current: Mapping[str, Any], trial_started: bool
) -> LicenseDecision:
    """Decide how to bring the cluster's ``current`` license to ``desired`` (pure)."""
    desired_type = str(desired.get("type", ""))
    current_type = str(current.get("type", ""))
    if desired_type == ES_TRIAL_TYPE:
        if current_type == ES_TRIAL_TYPE:
            return LicenseDecision(LicenseAction.NONE, "trial license already active")
        if trial_started:
            return LicenseDecision(LicenseAction.NONE, "self-generated trial already started once")
        return LicenseDecision(LicenseAction.START_TRIAL, "starting the self-generated trial")
    if desired.get("uid") and desired.get("uid") == current.get("uid"):
        return LicenseDecision(LicenseAction.NONE, f"{desired_type} license already applied")
    return LicenseDecision(LicenseAction.PUT_LICENSE, f"applying the {desired_type} license")


async def _license_secret(
    context: ControllerContext, *, namespace: str, name: str
) -> dict[str, Any] | None:
    return await context.scoped.get_or_none(
        SECRETS, namespace=namespace, name=license_secret_name(name)
    )


async def _remember_trial(context: ControllerContext, *, namespace: str, name: str) -> None:
    patch = {"metadata": {"annotations": {TRIAL_STARTED_ANNOTATION: "true"}}}
    await context.scoped.merge_patch(ELASTICSEARCH, patch, namespace=namespace, name=name)


async def _start_trial(api: ElasticsearchApi) -> None:
    """Start the trial; a 403 means Elasticsearch already ran one for this cluster (ECK ignores it)."""
    try:
        answer = await api.start_trial()
    except ElasticsearchError as error:
        if error.status != _FORBIDDEN:
            raise
        return
    if not answer.get("trial_was_started") and "already" not in str(
        answer.get("error_message", "")
    ):
        raise ElasticsearchError(200, json.dumps(answer))


async def _put_license(api: ElasticsearchApi, license_: Mapping[str, Any]) -> None:
    answer = await api.put_license(license_)
    status = str(answer.get("license_status", "valid"))
    if not answer.get("acknowledged", True) or status != "valid":
        raise ElasticsearchError(200, json.dumps(answer))


async def apply_cluster_license(
    context: ControllerContext, *, es: Mapping[str, Any], api: ElasticsearchApi | None
) -> LicenseOutcome:
    """Install ``<es>-es-license`` on the cluster when it exists and differs from the current one.

    ``api`` is None when the cluster cannot be asked yet (no ready node, no credentials): the
    license waits, and the outcome asks for a retry.
    """
    metadata = es["metadata"]
    namespace, name = str(metadata["namespace"]), str(metadata["name"])
    secret = await _license_secret(context, namespace=namespace, name=name)
    if secret is None:
        return LicenseOutcome()
    try:
        desired = desired_license(secret)
    except ValueError as error:
        # A broken Secret is rewritten by the license controller; its change wakes this reconcile.
        logger.warning("cluster %s/%s: ignoring the license Secret: %s", namespace, name, error)
        return LicenseOutcome(message=f"license not applied: {error}")
    if api is None:
        return LicenseOutcome(retry=True, message="license pending: cluster not reachable")
    trial_started = (metadata.get("annotations") or {}).get(TRIAL_STARTED_ANNOTATION) == "true"
    try:
        decision = license_decision(
            desired=desired, current=await api.get_license(), trial_started=trial_started
        )
        if decision.action is LicenseAction.START_TRIAL:
            await _start_trial(api)
            await _remember_trial(context, namespace=namespace, name=name)
        elif decision.action is LicenseAction.PUT_LICENSE:
            await _put_license(api, desired)
    except ElasticsearchUnavailable as error:
        logger.info("cluster %s/%s: license not applied yet: %s", namespace, name, error)
        return LicenseOutcome(retry=True, message="license pending: cluster not reachable")
    except ElasticsearchError as error:
        logger.warning("cluster %s/%s: license not applied: %s", namespace, name, error)
        return LicenseOutcome(retry=True, message=f"license not applied: {error}")
    return LicenseOutcome(applied=decision.action, message=decision.reason)
