"""Pure decisions of admission webhooks (reference §8): which webhooks apply, what is sent, what an
answer means.

Nothing here does I/O; :mod:`kubesim.admission` calls these functions around its HTTPS calls. The
matching follows apiserver's ``webhook/predicates`` (rules, namespace and object selectors) and the
answer checks follow ``webhook/request.VerifyAdmissionResponse`` and ``webhook/errors.ToStatusErr``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kubesim.errors import StatusError, bad_request, internal_error

WebhookFlavour = Literal["mutating", "validating"]

ADMISSION_API_VERSION = "admission.k8s.io/v1"
# Configurations of webhooks are never sent to webhooks, so a broken webhook cannot lock itself in.
EXEMPT_GROUP = "admissionregistration.k8s.io"
DEFAULT_TIMEOUT_SECONDS = 10
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_USER_INFO = {
    "username": "emulator-admin",
    "uid": "emulator-admin",
    "groups": ["system:masters", "system:authenticated"],
}


@dataclass(frozen=True)
class AdmissionRequest:
    """One write as admission sees it (the HTTP layer builds it around a store write)."""

    operation: str  # "CREATE" | "UPDATE" | "DELETE"
    group: str
    version: str
    kind: str
    plural: str
    subresource: str  # "" when none
    namespaced: bool
    name: str
    namespace: str
    obj: dict[str, Any] | None
    old_obj: dict[str, Any] | None
    dry_run: bool
    options: dict[str, Any]  # CreateOptions / UpdateOptions / DeleteOptions body
    # Labels of the request's namespace; for a Namespace object its own labels.
    namespace_labels: dict[str, str] | None


class SelectorError(ValueError):
    """A namespaceSelector / objectSelector that cannot be evaluated."""


class WebhookCallError(Exception):
    """A webhook call that did not produce a usable answer; ``failurePolicy`` decides what follows.

    ``reason`` is the text after ``failed calling webhook "<name>": ``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Verdict:
    """A webhook's valid answer."""

    allowed: bool
    status: dict[str, Any]  # the webhook's status (used for denials)
    patch: list[Any] | None  # decoded JSONPatch operations (mutating webhooks only)
    warnings: list[str]


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelector`` semantics: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist)."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key", "")
        operator = expression.get("operator", "")
        values = expression.get("values") or []
        if operator == "In":
            matched = key in labels and labels[key] in values
        elif operator == "NotIn":
            matched = key not in labels or labels[key] not in values
        elif operator == "Exists":
            matched = key in labels
        elif operator == "DoesNotExist":
            matched = key not in labels
        else:
            raise SelectorError(f'"{operator}" is not a valid label selector operator')
        if not matched:
            return False
    return True


def _selector_is_empty(selector: Mapping[str, Any] | None) -> bool:
    return not selector or (
        not selector.get("matchLabels") and not selector.get("matchExpressions")
    )


def _labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _listed(values: list[str] | None, wanted: str) -> bool:
    return values is not None and ("*" in values or wanted in values)


def rule_matches(rule: Mapping[str, Any], request: AdmissionRequest, *, exact: bool) -> bool:
    """One ``rules[]`` entry against the request (apiserver ``rules.Matcher``).

    ``exact`` is ``matchPolicy: Exact``; with ``Equivalent`` (default) any served version of the same
    group/resource matches, since kubesim serves every version from one stored object.
    """
    scope = rule.get("scope") or "*"
    if scope != "*" and scope != ("Namespaced" if request.namespaced else "Cluster"):
        return False
    if not _listed(rule.get("operations"), request.operation):
        return False
    if not _listed(rule.get("apiGroups"), request.group):
        return False
    if exact and not _listed(rule.get("apiVersions"), request.version):
        return False
    for pattern in rule.get("resources") or []:
        resource, _, subresource = pattern.partition("/")
        if resource in ("*", request.plural) and subresource in ("*", request.subresource):
            return True
    return False


def webhook_applies(webhook: Mapping[str, Any], request: AdmissionRequest) -> bool:
    """Whether ``webhook`` is called for ``request``: rules, then namespaceSelector, then objectSelector.

    ``matchConditions`` (CEL) are not evaluated and count as matching. Raises
    :class:`SelectorError` for a selector with an unknown operator.
    """
    if request.group == EXEMPT_GROUP:
        return False
    exact = webhook.get("matchPolicy") == "Exact"
    if not any(rule_matches(rule, request, exact=exact) for rule in webhook.get("rules") or []):
        return False
    is_namespace = request.group == "" and request.plural == "namespaces"
    # Cluster-scoped objects other than Namespaces have no namespace to select on: never exempted.
    if request.namespaced or is_namespace:
        labels = request.namespace_labels or {}
        if not label_selector_matches(webhook.get("namespaceSelector"), labels):
            return False
    object_selector = webhook.get("objectSelector")
    if _selector_is_empty(object_selector):
        return True
    return any(
        obj is not None and label_selector_matches(object_selector, _labels_of(obj))
        for obj in (request.obj, request.old_obj)
    )


def ordered_webhooks(configurations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All webhooks of the configurations: configurations sorted by name, webhooks in list order."""
    ordered = sorted(configurations, key=lambda c: (c.get("metadata") or {}).get("name", ""))
    return [webhook for config in ordered for webhook in config.get("webhooks") or []]


def supports_dry_run(webhook: Mapping[str, Any]) -> bool:
    """Only webhooks declaring no side effects (on dry run) may see a dry-run request."""
    return webhook.get("sideEffects") in ("None", "NoneOnDryRun")


def timeout_seconds(webhook: Mapping[str, Any]) -> int:
    """``timeoutSeconds`` or the default of 10."""
    value = webhook.get("timeoutSeconds")
    return value if isinstance(value, int) and value > 0 else DEFAULT_TIMEOUT_SECONDS


def with_timeout_query(url: str, seconds: int) -> str:
    """The URL client-go posts to: ``?timeout=10s`` appended to the configured one."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}timeout={seconds}s"


def service_url(service: Mapping[str, Any]) -> str:
    """The in-cluster URL of a ``clientConfig.service`` (used in messages and as TLS server name)."""
    path = service.get("path") or "/"
    port = service.get("port") or 443
    return f"https://{service.get('name', '')}.{service.get('namespace', '')}.svc:{port}{path}"


def build_review(request: AdmissionRequest, *, uid: str) -> dict[str, Any]:
    """The ``AdmissionReview`` v1 body posted to a webhook."""
    kind = {"group": request.group, "version": request.version, "kind": request.kind}
    resource = {"group": request.group, "version": request.version, "resource": request.plural}
    options = dict(request.options)
    options.setdefault("apiVersion", "meta.k8s.io/v1")
    options.setdefault("kind", _OPTIONS_KIND.get(request.operation, "CreateOptions"))
    body: dict[str, Any] = {
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "subResource": request.subresource,
        "requestKind": dict(kind),
        "requestResource": dict(resource),
        "requestSubResource": request.subresource,
        "name": request.name,
        "namespace": request.namespace,
        "operation": request.operation,
        "userInfo": json.loads(json.dumps(_USER_INFO)),
        "object": request.obj,
        "oldObject": request.old_obj,
        "dryRun": request.dry_run,
        "options": options,
    }
    # These strings are omitempty in admission/v1: an empty one is left out.
    for key in ("subResource", "requestSubResource", "name", "namespace"):
        if not body[key]:
            del body[key]
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "request": body}


def read_verdict(body: Any, *, uid: str, mutating: bool) -> Verdict:
    """Check a webhook's answer like ``VerifyAdmissionResponse``; a malformed one raises :class:`WebhookCallError`.

    A patch that is not base64 JSON raises a 500 :class:`StatusError` (it is not a call failure, so
    ``failurePolicy: Ignore`` does not hide it).
    """
    invalid = "received invalid webhook response: "
    if not isinstance(body, dict):
        raise WebhookCallError(invalid + "webhook response was not a JSON object")
    response = body.get("response")
    if not isinstance(response, dict):
        raise WebhookCallError(invalid + "webhook response was absent")
    if response.get("uid") != uid:
        raise WebhookCallError(
            invalid + f'expected response.uid="{uid}", got "{response.get("uid", "")}"'
        )
    if body.get("apiVersion") != ADMISSION_API_VERSION or body.get("kind") != "AdmissionReview":
        got = f"{body.get('apiVersion', '')}, Kind={body.get('kind', '')}"
        raise WebhookCallError(
            invalid
            + f"expected webhook response of {ADMISSION_API_VERSION}, Kind=AdmissionReview, got {got}"
        )
    raw_patch = response.get("patch") or ""
    patch_type = response.get("patchType") or ""
    if not mutating and raw_patch:
        raise WebhookCallError(invalid + "validating webhook may not return response.patch")
    if not mutating and patch_type:
        raise WebhookCallError(invalid + "validating webhook may not return response.patchType")
    if raw_patch and not patch_type:
        raise WebhookCallError(
            invalid + "webhook returned response.patch but not response.patchType"
        )
    if raw_patch and patch_type != "JSONPatch":
        raise WebhookCallError(
            invalid + f'webhook returned invalid response.patchType of "{patch_type}"'
        )
    warnings = [w for w in response.get("warnings") or [] if isinstance(w, str)]
    status = response.get("status")
    return Verdict(
        allowed=response.get("allowed") is True,
        status=status if isinstance(status, dict) else {},
        patch=_decode_patch(raw_patch) if raw_patch else None,
        warnings=warnings,
    )


def _decode_patch(raw_patch: Any) -> list[Any]:
    try:
        operations = json.loads(base64.b64decode(str(raw_patch), validate=True))
    except (binascii.Error, ValueError) as error:
        raise internal_error(f"invalid JSON patch from webhook: {error}") from error
    if not isinstance(operations, list):
        raise internal_error("invalid JSON patch from webhook: the patch is not a JSON array")
    return operations


def denial_error(webhook_name: str, status: Mapping[str, Any]) -> StatusError:
    """``ToStatusErr``: the webhook's status, code ≥400 (else 400), message prefixed with the webhook."""
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    code = status.get("code")
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return StatusError(
        code if isinstance(code, int) and code >= 400 else 400, reason, text, details
    )


def call_failure_error(webhook_name: str, reason: str) -> StatusError:
    """500 for a failed call under ``failurePolicy: Fail``."""
    return internal_error(f'failed calling webhook "{webhook_name}": {reason}')


def dry_run_unsupported(webhook_name: str) -> StatusError:
    """400 for a dry-run request to a webhook that may have side effects."""
    return bad_request(f'admission webhook "{webhook_name}" does not support dry run')


def ignores_failures(webhook: Mapping[str, Any]) -> bool:
    """``failurePolicy: Ignore`` (the default is Fail)."""
    return webhook.get("failurePolicy") == "Ignore"
