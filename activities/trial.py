"""The trial controller: starts the 30-day enterprise trial once, and flags invalid trial Secrets.

Not license-gated (a gate would deadlock the trial's own bootstrap). A user asks for a trial with
a Secret labelled ``license.k8s.elastic.co/type: enterprise_trial`` and annotated
``elastic.co/eula: accepted``. The first time, the operator generates an RSA key pair, records the
public key in the ``trial-status`` Secret (operator namespace), fills and signs the trial license
into the user's Secret and drops the private key. Afterwards an empty trial Secret is refused
("trial can be started only once") and a tampered or expired one is flagged; refusals are written
to the ``license.k8s.elastic.co/invalid`` annotation, as ECK does. ``decide`` is the pure core.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from activities.binding import Family, FamilyActivities, Primary
from activities.context import ControllerContext
from stackflow.controllers.trial import TRIAL_CONTROLLER
from stackflow.kube import errors
from stackflow.licensing import EnterpriseLicense, LicenseParseError, LicenseStatus
from stackflow.licensing.issue import populate_trial_license, trial_status_pubkey
from stackflow.licensing.model import (
    COMMON_TYPE_LABEL,
    COMMON_TYPE_LICENSE,
    EULA_ACCEPTED,
    EULA_ANNOTATION,
    LICENSE_FILE_NAME,
    LICENSE_INVALID_ANNOTATION,
    LICENSE_SCOPE_LABEL,
    LICENSE_SCOPE_OPERATOR,
    LICENSE_TYPE_LABEL,
    TRIAL_ACTIVATION_KEY,
    TRIAL_PUBKEY_KEY,
    TRIAL_SECRET_NAME_ANNOTATION,
    TRIAL_SECRET_NAMESPACE_ANNOTATION,
    TRIAL_SELECTOR,
    TRIAL_STATUS_SECRET_NAME,
    TRIAL_TYPES,
    LicenseSpec,
    OperatorLicenseType,
)
from stackflow.licensing.verify import (
    check_license,
    license_data,
    load_public_key,
    parse_license_data,
    trial_public_key_from_status,
)
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    Phase,
    ReconcileInput,
    ReconcileResult,
    ResourceRef,
)
from stackflow.models.kinds import SECRETS
from stackflow.models.objects import view
from stackflow.stack.rsa_keys import RSA_KEYS

__all__ = [
    "EULA_MESSAGE",
    "FAMILIES",
    "TRIAL_EXPIRED_MESSAGE",
    "TRIAL_INVALID_MESSAGE",
    "TRIAL_ONLY_ONCE_MESSAGE",
    "TRIAL_STATUS_MISSING_MESSAGE",
    "TrialAction",
    "TrialActivities",
    "TrialDecision",
    "decide",
    "is_trial_secret",
    "trial_status_problem",
]

EULA_MESSAGE = f'Please set the annotation {EULA_ANNOTATION} to "accepted" to accept the EULA'
TRIAL_ONLY_ONCE_MESSAGE = "trial can be started only once"
TRIAL_INVALID_MESSAGE = "trial license signature invalid"
TRIAL_EXPIRED_MESSAGE = "trial license expired"
TRIAL_STATUS_MISSING_MESSAGE = (
    f"Secret {TRIAL_STATUS_SECRET_NAME} is missing: the trial license cannot be verified"
)


class TrialAction(StrEnum):
    """What the trial controller does with one trial Secret."""

    IGNORE = "ignore"
    INVALID = "invalid"
    START = "start"
    VALID = "valid"


@dataclass(frozen=True)
class TrialDecision:
    """The action, and the message for an ``invalid`` annotation."""

    action: TrialAction
    message: str = ""


def is_trial_secret(secret: Mapping[str, Any]) -> bool:
    """Whether a Secret asks for an enterprise trial (its license type label)."""
    return view(secret).labels.get(LICENSE_TYPE_LABEL) in TRIAL_TYPES


def requested_license(secret: Mapping[str, Any]) -> EnterpriseLicense:
    """The trial license in a Secret; an empty Secret is an empty trial request."""
    data = license_data(secret)
    if not data:
        return EnterpriseLicense(license=LicenseSpec(type=OperatorLicenseType.ENTERPRISE_TRIAL))
    return parse_license_data(data)


def trial_started(status: Mapping[str, Any] | None) -> bool:
    """A trial has been started when ``trial-status`` exists and is not mid-activation."""
    if status is None:
        return False
    return TRIAL_ACTIVATION_KEY not in (status.get("data") or {})


def trial_status_problem(status: Mapping[str, Any] | None) -> str | None:
    """Why ``trial-status`` cannot verify a started trial, or None when its key is readable (pure).

    The Secret is the operator's own record of the trial's public key; edited by hand (or deleted)
    it can no longer vouch for the trial license. The trial then counts as used and invalid (as
    ECK: no new trial is started) and this message names the Secret rather than the signature.
    """
    if status is None:
        return TRIAL_STATUS_MISSING_MESSAGE
    meta = view(status)
    key_bytes = trial_public_key_from_status(status)
    if key_bytes:
        try:
            load_public_key(key_bytes)
        except ValueError:
            pass
        else:
            return None
    return (
        f"Secret {meta.namespace}/{meta.name} holds no readable trial public key "
        f"(key {TRIAL_PUBKEY_KEY}; was it edited?): the trial license cannot be verified"
    )


def decide(
    secret: Mapping[str, Any],
    *,
    trial_status: Mapping[str, Any] | None,
    now: datetime,
) -> TrialDecision:
    """ECK's trial reconcile as a pure decision over the trial Secret and ``trial-status``."""
    if not is_trial_secret(secret):
        return TrialDecision(TrialAction.IGNORE)
    try:
        requested = requested_license(secret)
    except LicenseParseError as error:
        return TrialDecision(TrialAction.INVALID, str(error))
    if not requested.license.is_eck_managed_trial():
        return TrialDecision(TrialAction.IGNORE)
    if view(secret).annotations.get(EULA_ANNOTATION) != EULA_ACCEPTED:
        return TrialDecision(TrialAction.INVALID, EULA_MESSAGE)
    populated = not requested.license.missing_fields()
    started = trial_started(trial_status)
    if not populated:
        if started:
            return TrialDecision(TrialAction.INVALID, TRIAL_ONLY_ONCE_MESSAGE)
        return TrialDecision(TrialAction.START)
    status_problem = trial_status_problem(trial_status)
    if status_problem is not None:
        return TrialDecision(TrialAction.INVALID, status_problem)
    key_bytes = trial_public_key_from_status(trial_status)
    trial_key = load_public_key(key_bytes) if key_bytes else None
    check = check_license(requested, public_keys=(), trial_public_key=trial_key, now=now)
    if check.status is LicenseStatus.EXPIRED:
        return TrialDecision(TrialAction.INVALID, TRIAL_EXPIRED_MESSAGE)
    if check.status is not LicenseStatus.VALID:
        return TrialDecision(TrialAction.INVALID, TRIAL_INVALID_MESSAGE)
    return TrialDecision(TrialAction.VALID)


def _encoded(value: bytes | str) -> str:
    raw = value.encode() if isinstance(value, str) else value
    return base64.b64encode(raw).decode()


async def _read_trial_status(context: ControllerContext) -> dict[str, Any] | None:
    try:
        return await context.scoped.get(
            SECRETS, namespace=context.operator_namespace, name=TRIAL_STATUS_SECRET_NAME
        )
    except errors.NotFound:
        return None


async def _annotate_invalid(
    context: ControllerContext, secret: Mapping[str, Any], message: str | None
) -> bool:
    """Set (or clear, with None) the invalid annotation; False when it already says so."""
    metadata = secret["metadata"]
    if ((metadata.get("annotations") or {}).get(LICENSE_INVALID_ANNOTATION)) == message:
        return False
    await context.scoped.merge_patch(
        SECRETS,
        {
            "metadata": {
                "annotations": {LICENSE_INVALID_ANNOTATION: message},
                "resourceVersion": metadata["resourceVersion"],
            }
        },
        namespace=metadata["namespace"],
        name=metadata["name"],
    )
    return True


async def _write_trial_status(
    context: ControllerContext,
    *,
    current: Mapping[str, Any] | None,
    pubkey: bytes,
    secret: Mapping[str, Any],
) -> None:
    metadata = secret["metadata"]
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": TRIAL_STATUS_SECRET_NAME,
            "namespace": context.operator_namespace,
            "annotations": {
                TRIAL_SECRET_NAME_ANNOTATION: metadata["name"],
                TRIAL_SECRET_NAMESPACE_ANNOTATION: metadata["namespace"],
            },
        },
        "data": {TRIAL_PUBKEY_KEY: _encoded(pubkey), TRIAL_ACTIVATION_KEY: _encoded("true")},
    }
    if current is None:
        await context.scoped.create(SECRETS, body, namespace=context.operator_namespace)
        return
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    await context.scoped.replace(SECRETS, body, namespace=context.operator_namespace)


async def _start_trial(
    context: ControllerContext, secret: Mapping[str, Any], status: Mapping[str, Any] | None
) -> EnterpriseLicense:
    """Generate the trial key, record its public half, sign the trial, then end the activation."""
    # RSA key generation and signing are CPU work: in a worker thread, off the event loop (the
    # key is usually ready in the operator's pool, ``stackflow.stack.rsa_keys``).
    private_key = await asyncio.to_thread(RSA_KEYS.take)
    await _write_trial_status(
        context,
        current=status,
        pubkey=trial_status_pubkey(private_key.public_key()),
        secret=secret,
    )
    now = context.clock()
    trial = await asyncio.to_thread(
        lambda: populate_trial_license(requested_license(secret), private_key=private_key, now=now)
    )
    metadata = secret["metadata"]
    await context.scoped.merge_patch(
        SECRETS,
        {
            "metadata": {
                "resourceVersion": metadata["resourceVersion"],
                "labels": {
                    LICENSE_SCOPE_LABEL: LICENSE_SCOPE_OPERATOR,
                    LICENSE_TYPE_LABEL: OperatorLicenseType.ENTERPRISE_TRIAL.value,
                    COMMON_TYPE_LABEL: COMMON_TYPE_LICENSE,
                },
                "annotations": {LICENSE_INVALID_ANNOTATION: None},
            },
            "data": {LICENSE_FILE_NAME: _encoded(trial.to_json())},
        },
        namespace=metadata["namespace"],
        name=metadata["name"],
    )
    # The private key is dropped here: nobody can sign another trial with it.
    await context.scoped.merge_patch(
        SECRETS,
        {"data": {TRIAL_ACTIVATION_KEY: None}},
        namespace=context.operator_namespace,
        name=TRIAL_STATUS_SECRET_NAME,
    )
    return trial


class TrialActivities(FamilyActivities):
    """The trial controller's activities: start, validate or refuse trial Secrets.

    Its primary gone, it is ``Ready`` (``trial Secret not found``).
    """

    primary_missing_phase = Phase.READY

    def primary_missing(self, ref: ResourceRef) -> ReconcileResult:
        """``trial Secret not found``, ``Ready``."""
        return ReconcileResult(phase=Phase.READY, message="trial Secret not found")

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Start, validate or refuse one trial Secret."""
        context, secret = self.context, primary
        status = await _read_trial_status(context)
        decision = decide(secret, trial_status=status, now=context.clock())
        if decision.action is TrialAction.IGNORE:
            return ReconcileResult(phase=Phase.READY, message="not an operator-managed trial")
        if decision.action is TrialAction.INVALID:
            await _annotate_invalid(context, secret, decision.message)
            return ReconcileResult(phase=Phase.READY, message=decision.message)
        if decision.action is TrialAction.START:
            trial = await _start_trial(context, secret, status)
            expiry = trial.license.expiry_time().isoformat()
            return ReconcileResult(phase=Phase.READY, message=f"trial started, expires {expiry}")
        await _annotate_invalid(context, secret, None)
        return ReconcileResult(phase=Phase.READY, message="trial license valid")

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """Nothing to clean up: ``trial-status`` must outlive the trial Secret (one trial only)."""
        return FinalizeResult()

    async def flip_targets(
        self, namespace: str, direction: FlipDirectionName
    ) -> list[Mapping[str, Any]]:
        """Trial Secrets of the flipped namespace, and the trial ``trial-status`` points at."""
        context = self.context
        listed = await context.unscoped.list(
            SECRETS, namespace=namespace, label_selector=TRIAL_SELECTOR
        )
        targets: list[Mapping[str, Any]] = list(listed["items"])
        if namespace == context.operator_namespace:
            try:
                status = await context.unscoped.get(
                    SECRETS, namespace=namespace, name=TRIAL_STATUS_SECRET_NAME
                )
            except errors.NotFound:
                return targets
            annotations = view(status).annotations
            name = annotations.get(TRIAL_SECRET_NAME_ANNOTATION)
            trial_namespace = annotations.get(TRIAL_SECRET_NAMESPACE_ANNOTATION)
            if name and trial_namespace:
                targets.append({"metadata": {"namespace": trial_namespace, "name": name}})
        return targets


FAMILIES: Mapping[str, Family] = {TRIAL_CONTROLLER.name: TrialActivities}
