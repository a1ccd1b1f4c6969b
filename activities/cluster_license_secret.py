"""The license controller: writes (or deletes) each Elasticsearch's ``<es>-es-license`` Secret.

Not license-gated: it must keep removing ``<es>-es-license`` when the operator is unlicensed, so
that clusters revert to basic. The choice of the cluster license (``best_cluster_license``) is pure;
the activity reads the ES and the operator licenses, applies the Secret idempotently and asks to
be woken 15 days before the chosen license expires (ECK's 30-day safety margin halved).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from activities.apply import apply_object
from activities.binding import Family, FamilyActivities, Primary
from activities.context import ControllerContext
from stackflow.controllers.elasticsearch import ELASTICSEARCH, LICENSE_CONTROLLER
from stackflow.kube import errors
from stackflow.licensing import EnterpriseLicense, LicenseCheck, LicenseStatus
from stackflow.licensing.model import (
    COMMON_TYPE_LABEL,
    COMMON_TYPE_LICENSE,
    LICENSE_FILE_NAME,
    LICENSE_NAME_LABEL,
    LICENSE_SCOPE_ELASTICSEARCH,
    LICENSE_SCOPE_LABEL,
    LICENSE_TYPE_LABEL,
    OPERATOR_LICENSE_SELECTOR,
    ClusterLicenseSpec,
    from_millis,
)
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import SECRETS
from stackflow.stack.elasticsearch.names import license_secret_name
from stackflow.stack.objects import controller_owner_reference, encode_secret_data
from stackflow.stack.version import Version, parse_version

__all__ = [
    "FAMILIES",
    "ClusterLicenseChoice",
    "LicenseActivities",
    "best_cluster_license",
    "license_secret",
    "requeue_after",
]

SAFETY_MARGIN = timedelta(days=30)
MINIMUM_RETRY_INTERVAL = timedelta(hours=1)
ENTERPRISE_MIN_VERSION = (7, 8, 1)
ES_TRIAL_TYPE = "trial"
# ECK's ranking of Elasticsearch license types (unknown types rank lowest).
_ES_TYPE_RANK = {"basic": 0, "trial": 1, "gold": 2, "platinum": 3, "enterprise": 4}


@dataclass(frozen=True)
class ClusterLicenseChoice:
    """The Elasticsearch license to install, and the operator license it comes from."""

    es_license: dict[str, Any]
    parent_uid: str
    es_type: str
    expiry: datetime | None


def _cluster_license_document(spec: ClusterLicenseSpec) -> dict[str, Any]:
    document = spec.model_dump(mode="json", exclude={"issue_date", "expiry_date", "status"})
    return {key: value for key, value in document.items() if value not in (None, "", 0)}


def best_cluster_license(
    checks: Sequence[LicenseCheck], *, now: datetime, min_version: Version | None
) -> ClusterLicenseChoice | None:
    """ECK's ``findLicense``: the best ES license among the valid operator licenses (pure).

    A valid ECK-managed trial yields ES's self-generated trial; otherwise every embedded cluster
    license valid at ``now`` competes (``enterprise`` only for clusters ≥ 7.8.1), ranked by type
    and then by the longest remaining validity.
    """
    best: ClusterLicenseChoice | None = None
    best_key: tuple[int, int] = (-1, -1)
    for check in checks:
        operator_license: EnterpriseLicense | None = check.license
        if operator_license is None or check.status_at(now) is not LicenseStatus.VALID:
            continue
        spec = operator_license.license
        if spec.is_eck_managed_trial():
            return ClusterLicenseChoice(
                es_license={"type": ES_TRIAL_TYPE},
                parent_uid=spec.uid,
                es_type=ES_TRIAL_TYPE,
                expiry=spec.expiry_time(),
            )
        for cluster in spec.cluster_licenses:
            entry = cluster.license
            starts, expires = entry.start_date_in_millis, entry.expiry_date_in_millis
            now_millis = int(now.timestamp() * 1000)
            if not starts <= now_millis < expires:
                continue
            if entry.type == "enterprise" and (
                min_version is None or not min_version.at_least(*ENTERPRISE_MIN_VERSION)
            ):
                continue
            key = (_ES_TYPE_RANK.get(entry.type, -1), expires)
            if key > best_key:
                best_key = key
                best = ClusterLicenseChoice(
                    es_license=_cluster_license_document(entry),
                    parent_uid=spec.uid,
                    es_type=entry.type,
                    expiry=from_millis(expires),
                )
    return best


def requeue_after(*, now: datetime, expiry: datetime | None) -> timedelta:
    """ECK's ``nextReconcileRelativeTo``: half the safety margin before expiry, at least 1 h (pure)."""
    if expiry is None:
        return MINIMUM_RETRY_INTERVAL
    wait = expiry - SAFETY_MARGIN / 2 - now
    return wait if wait > timedelta(0) else MINIMUM_RETRY_INTERVAL


def license_secret(es: Mapping[str, Any], choice: ClusterLicenseChoice) -> dict[str, Any]:
    """The ``<es>-es-license`` Secret for ``choice`` (pure)."""
    metadata = es["metadata"]
    owner = {
        "apiVersion": es.get("apiVersion", ELASTICSEARCH.api_version),
        "kind": es.get("kind", ELASTICSEARCH.kind),
        "metadata": metadata,
    }
    body = json.dumps(choice.es_license, separators=(",", ":"))
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": license_secret_name(str(metadata["name"])),
            "namespace": metadata["namespace"],
            "labels": {
                COMMON_TYPE_LABEL: COMMON_TYPE_LICENSE,
                LICENSE_NAME_LABEL: choice.parent_uid,
                LICENSE_SCOPE_LABEL: LICENSE_SCOPE_ELASTICSEARCH,
                LICENSE_TYPE_LABEL: choice.es_type,
            },
            "ownerReferences": [controller_owner_reference(owner)],
        },
        "data": encode_secret_data({LICENSE_FILE_NAME: body}),
    }


def _min_version(es: Mapping[str, Any]) -> Version | None:
    # The lowest running version wins once known; the spec version stands in before that.
    for text in ((es.get("status") or {}).get("version"), (es.get("spec") or {}).get("version")):
        if text:
            try:
                return parse_version(str(text))
            except ValueError:
                continue
    return None


async def _delete_license_secret(context: ControllerContext, *, namespace: str, es: str) -> bool:
    try:
        await context.scoped.delete(SECRETS, namespace=namespace, name=license_secret_name(es))
    except errors.NotFound:
        return False
    return True


class LicenseActivities(FamilyActivities):
    """The license controller's activities: one Elasticsearch's ``<es>-es-license`` Secret.

    Its primary gone, it is ``Ready`` (there is nothing left to license).
    """

    primary_missing_phase = Phase.READY

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Install the best cluster license for one Elasticsearch, or remove it when there is
        none."""
        context, ref, es = self.context, request.ref, primary
        now = context.clock()
        checks = await context.licenses.checks()
        choice = best_cluster_license(checks, now=now, min_version=_min_version(es))
        if choice is None:
            deleted = await _delete_license_secret(context, namespace=ref.namespace, es=ref.name)
            message = (
                "no cluster license: license Secret removed" if deleted else "no cluster license"
            )
            return ReconcileResult(phase=Phase.READY, message=message)
        await apply_object(context.scoped, SECRETS, license_secret(es, choice))
        wait = requeue_after(now=now, expiry=choice.expiry)
        return ReconcileResult(
            phase=Phase.READY,
            message=f"{choice.es_type} license from {choice.parent_uid}",
            requeue_after_seconds=wait.total_seconds(),
        )

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """Nothing to clean up: the license Secret is owned by the Elasticsearch
        (garbage-collected)."""
        return FinalizeResult()

    async def flip_targets(
        self, namespace: str, direction: FlipDirectionName
    ) -> list[Mapping[str, Any]]:
        """ECK's license flip mapper: every ES when the namespace holds an operator license,
        else its ES."""
        context = self.context
        licenses = await context.unscoped.list(
            SECRETS, namespace=namespace, label_selector=OPERATOR_LICENSE_SELECTOR
        )
        if licenses["items"]:
            return list((await context.scoped.list(ELASTICSEARCH))["items"])
        return list((await context.unscoped.list(ELASTICSEARCH, namespace=namespace))["items"])


FAMILIES: Mapping[str, Family] = {LICENSE_CONTROLLER.name: LicenseActivities}
