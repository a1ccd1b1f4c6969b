"""The report activities: the licensing usage report and the telemetry document's write.

Both read the managed namespaces only: in dynamic mode the namespaces the selector matches now,
with a static list that list, otherwise every namespace (``report_namespaces``); the operator
namespace is always among them. The figures come from the pure ``stackflow.licensing.usage`` and
``stackflow.stack.telemetry``; these functions only read, call them and write the result.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from activities.context import ControllerContext
from stackflow import __version__
from stackflow.api.kinds import kind_resource
from stackflow.kube import errors
from stackflow.licensing.usage import USAGE_APPS, ManagedApp
from stackflow.licensing.usage import license_usage as usage_of
from stackflow.models.kinds import CONFIGMAPS, SECRETS
from stackflow.models.objects import view
from stackflow.models.telemetry import (
    LicenseUsageInput,
    LicenseUsageResult,
    TelemetryReportInput,
    TelemetryReportResult,
)
from stackflow.scope import NamespaceMatcher, ScopeMode
from stackflow.stack.objects import decode_secret_data, encode_secret_data
from stackflow.stack.telemetry import (
    STATS_KEYS,
    TELEMETRY_KEY,
    OperatorInfo,
    kibana_config_secret_name,
    telemetry_document,
    telemetry_yaml,
)

__all__ = [
    "OPERATOR_UUID_CONFIGMAP",
    "OPERATOR_UUID_KEY",
    "license_usage",
    "report_namespaces",
    "telemetry_report",
]

#: ECK keeps the operator's identity for telemetry in this ConfigMap of the operator namespace.
OPERATOR_UUID_CONFIGMAP = "elastic-operator-uuid"
OPERATOR_UUID_KEY = "uuid"


def report_namespaces(matcher: NamespaceMatcher) -> list[str] | None:
    """The namespaces the reports cover: the matching ones now, or None for every namespace."""
    if matcher.scope.mode is ScopeMode.ALL_NAMESPACES:
        return None
    return [str(name) for name in matcher.matching_namespaces()]


async def _list_kind(
    context: ControllerContext, kind: str, namespaces: list[str] | None
) -> list[dict[str, Any]]:
    """Every object of ECK kind `kind` in `namespaces` (None: all), read through the scoped client."""
    resource = kind_resource(kind)
    items: list[dict[str, Any]] = []
    for namespace in [None] if namespaces is None else namespaces:
        try:
            listed = await context.scoped.list(resource, namespace=namespace)
        except errors.NotFound:
            # The kind's CRD is not installed: nothing of it to report.
            return []
        items.extend(listed["items"])
    return items


async def _objects_by_kind(
    context: ControllerContext, kinds: Iterable[str], namespaces: list[str] | None
) -> dict[str, list[dict[str, Any]]]:
    return {kind: await _list_kind(context, kind, namespaces) for kind in kinds}


async def license_usage(
    context: ControllerContext, request: LicenseUsageInput
) -> LicenseUsageResult:
    """The licensing usage report of the managed applications under the current license."""
    namespaces = report_namespaces(context.matcher)
    kinds = [kind for kind, _ in USAGE_APPS.values()]
    objects = await _objects_by_kind(context, kinds, namespaces)
    verdict = await context.licenses.verdict()
    current = verdict.license.license if verdict.license is not None else None
    usage = usage_of(
        (
            ManagedApp(kind, manifest)
            for kind, manifests in objects.items()
            for manifest in manifests
        ),
        current,
    )
    return LicenseUsageResult(
        level=usage.level,
        enterprise_resource_units=usage.enterprise_resource_units,
        max_enterprise_resource_units=usage.max_enterprise_resource_units,
        expiry=usage.expiry,
        report=usage.report(),
        namespaces=namespaces or [],
    )


async def operator_uuid(context: ControllerContext) -> str:
    """The operator's telemetry identity, created on first use and kept in a ConfigMap."""
    namespace = context.operator_namespace
    try:
        existing = await context.scoped.get(
            CONFIGMAPS, namespace=namespace, name=OPERATOR_UUID_CONFIGMAP
        )
    except errors.NotFound:
        body = {
            "metadata": {"name": OPERATOR_UUID_CONFIGMAP, "namespace": namespace},
            "data": {OPERATOR_UUID_KEY: str(uuid.uuid4())},
        }
        try:
            existing = await context.scoped.create(CONFIGMAPS, body, namespace=namespace)
        except errors.AlreadyExists:
            # Another run created it meanwhile: its identity wins.
            existing = await context.scoped.get(
                CONFIGMAPS, namespace=namespace, name=OPERATOR_UUID_CONFIGMAP
            )
    data = existing.get("data") or {}
    return str(data.get(OPERATOR_UUID_KEY, ""))


async def _write_document(
    context: ControllerContext, kibana: Mapping[str, Any], text: str
) -> bool | None:
    """Put `text` under ``telemetry.yml`` of the Kibana's config Secret.

    True when written, False when it was there already, None when the Secret does not exist
    yet (the Kibana's first reconcile creates it; the next run writes it).
    """
    metadata = view(kibana)
    name = kibana_config_secret_name(metadata.name)
    try:
        secret = await context.scoped.get(SECRETS, namespace=metadata.namespace, name=name)
    except errors.NotFound:
        return None
    if decode_secret_data(secret).get(TELEMETRY_KEY) == text.encode():
        return False
    await context.scoped.merge_patch(
        SECRETS,
        {"data": encode_secret_data({TELEMETRY_KEY: text})},
        namespace=metadata.namespace,
        name=name,
        field_manager=context.field_manager,
    )
    return True


async def telemetry_report(
    context: ControllerContext, request: TelemetryReportInput
) -> TelemetryReportResult:
    """Build the telemetry document and write it into every managed Kibana's config Secret."""
    namespaces = report_namespaces(context.matcher)
    objects = await _objects_by_kind(context, STATS_KEYS, namespaces)
    operator = OperatorInfo(
        operator_uuid=await operator_uuid(context),
        operator_namespace=context.operator_namespace,
        distribution="",
        version=__version__,
    )
    text = telemetry_yaml(telemetry_document(operator, objects, request.license_report))
    written: list[str] = []
    unchanged: list[str] = []
    for kibana in objects["Kibana"]:
        outcome = await _write_document(context, kibana, text)
        metadata = view(kibana)
        where = f"{metadata.namespace}/{kibana_config_secret_name(metadata.name)}"
        if outcome is True:
            written.append(where)
        elif outcome is False:
            unchanged.append(where)
    return TelemetryReportResult(written=written, unchanged=unchanged, namespaces=namespaces or [])
