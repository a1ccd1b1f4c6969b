"""ECK's validating webhooks as pure functions: an AdmissionReview in, the HTTP answer out.

One table row per webhook ECK registers (its name, path, group, version, kind and plural). The
rules themselves are the reconciles' validators (``validate_elasticsearch``,
``validate_application``): the webhook and the reconcile share one definition of each rule, so a
spec the webhook admits is one the reconcile accepts. The policy kinds' rules are the pure
functions of ``stackflow.stack.policies.validation`` and
``stackflow.stack.policies.autoscaling.validation``.

``review(path, body, is_managed, enterprise=...)`` decides: a body that is not an AdmissionReview
v1 is a 400 with an AdmissionReview error; an object in a namespace the operator does not manage is
allowed untouched (ECK's pre-check); one whose top-level fields have the wrong JSON type or that
nests more than ``stackflow.kube.decoding.MAX_OBJECT_DEPTH`` levels is denied naming the field
(the informers would quarantine it); one annotated ``eck.k8s.elastic.co/license: enterprise`` is
denied unless the operator runs with an enterprise license (the second pre-check); otherwise the
kind's rules allow it or deny it with ECK's wording,
``<Kind>.<group> "<name>" is invalid: <field>: Invalid value: <value>: <rule>``. The license level
is a value passed in: the server reads it only for a body that :func:`needs_license`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from stackflow.api.kinds import kind_info
from stackflow.kube import decoding
from stackflow.stack.apps.validation import application_warnings, validate_application
from stackflow.stack.elasticsearch.validation import validate_elasticsearch
from stackflow.stack.policies.autoscaling.validation import validate_elasticsearch_autoscaler
from stackflow.stack.policies.validation import (
    validate_autoops_agent_policy,
    validate_stack_config_policy,
)

_log = structlog.get_logger("stackflow.webhooks")

FieldError = tuple[str, str]
Validator = Callable[[str, Mapping[str, Any]], list[FieldError]]

ADMISSION_API_VERSION = "admission.k8s.io/v1"
VALIDATED_OPERATIONS = ("CREATE", "UPDATE")

#: The annotation by which an object asks for enterprise features, and the value that asks.
LICENSE_ANNOTATION = "eck.k8s.elastic.co/license"
ENTERPRISE = "enterprise"
ENTERPRISE_REQUIRED = "Enterprise license required but ECK operator is running on a Basic license"


def _elasticsearch_rules(_kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    return validate_elasticsearch(obj)


def _stack_config_policy_rules(_kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    return validate_stack_config_policy(obj)


def _autoscaler_rules(_kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    return validate_elasticsearch_autoscaler(obj)


def _autoops_rules(_kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    # The webhook reads no license for this kind, so it admits every version an enterprise
    # operator accepts (the lower floor); never denying what the operator may well accept.
    return validate_autoops_agent_policy(obj, enterprise=True)


def _no_warnings(_kind: str, _obj: Mapping[str, Any]) -> list[FieldError]:
    return []


@dataclass(frozen=True)
class Webhook:
    """One of ECK's validating webhooks: where it is served and which rules it applies."""

    short: str
    group: str
    version: str
    kind: str
    plural: str
    path: str
    rules: Validator
    warnings: Validator = _no_warnings

    @property
    def name(self) -> str:
        """ECK's webhook name, ``elastic-<short>-validation-<version>.k8s.elastic.co``."""
        return f"elastic-{self.short}-validation-{self.version}.k8s.elastic.co"


def _webhook(
    short: str,
    kind: str,
    version: str,
    path: str,
    rules: Validator = validate_application,
    warnings: Validator = _no_warnings,
) -> Webhook:
    info = kind_info(kind)
    return Webhook(short, info.group, version, kind, info.plural, path, rules, warnings)


_V1 = "/validate-{}-k8s-elastic-co-v1-{}"
_V1BETA1 = "/validate-{}-k8s-elastic-co-v1beta1-{}"
_V1ALPHA1 = "/validate-{}-k8s-elastic-co-v1alpha1-{}"

# §9 of ECK's webhook table: one row per (kind, version) ECK validates, with ECK's paths.
WEBHOOKS: tuple[Webhook, ...] = (
    _webhook(
        "agent",
        "Agent",
        "v1alpha1",
        _V1ALPHA1.format("agent", "agent"),
        warnings=application_warnings,
    ),
    _webhook("apm", "ApmServer", "v1", _V1.format("apm", "apmserver")),
    _webhook("apm", "ApmServer", "v1beta1", _V1BETA1.format("apm", "apmserver")),
    _webhook(
        "autoops",
        "AutoOpsAgentPolicy",
        "v1alpha1",
        _V1ALPHA1.format("autoops", "autoopsagentpolicies"),
        _autoops_rules,
    ),
    _webhook("beat", "Beat", "v1beta1", _V1BETA1.format("beat", "beat")),
    _webhook("ems", "ElasticMapsServer", "v1alpha1", _V1ALPHA1.format("ems", "mapsservers")),
    _webhook("ent", "EnterpriseSearch", "v1", _V1.format("enterprisesearch", "enterprisesearch")),
    _webhook(
        "ent",
        "EnterpriseSearch",
        "v1beta1",
        _V1BETA1.format("enterprisesearch", "enterprisesearch"),
    ),
    _webhook("epr", "PackageRegistry", "v1alpha1", _V1ALPHA1.format("epr", "packageregistry")),
    _webhook(
        "es",
        "Elasticsearch",
        "v1",
        _V1.format("elasticsearch", "elasticsearch"),
        _elasticsearch_rules,
    ),
    _webhook(
        "es",
        "Elasticsearch",
        "v1beta1",
        _V1BETA1.format("elasticsearch", "elasticsearch"),
        _elasticsearch_rules,
    ),
    _webhook(
        "esa",
        "ElasticsearchAutoscaler",
        "v1alpha1",
        _V1ALPHA1.format("autoscaling", "elasticsearchautoscaler"),
        _autoscaler_rules,
    ),
    _webhook("kb", "Kibana", "v1", _V1.format("kibana", "kibana")),
    _webhook("kb", "Kibana", "v1beta1", _V1BETA1.format("kibana", "kibana")),
    _webhook("logstash", "Logstash", "v1alpha1", _V1ALPHA1.format("logstash", "logstash")),
    _webhook(
        "scp",
        "StackConfigPolicy",
        "v1alpha1",
        _V1ALPHA1.format("scp", "stackconfigpolicies"),
        _stack_config_policy_rules,
    ),
)
WEBHOOKS_BY_PATH: Mapping[str, Webhook] = {webhook.path: webhook for webhook in WEBHOOKS}


@dataclass(frozen=True)
class Answer:
    """What the server sends back: an HTTP status and an AdmissionReview body."""

    status: int
    body: dict[str, Any]


class MalformedReviewError(ValueError):
    """The body is not an AdmissionReview v1 with a request this webhook can decide."""


def _review(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def malformed(message: str, *, uid: str = "") -> Answer:
    """The 400 answer to a body that cannot be decided: an AdmissionReview naming the problem."""
    return Answer(
        400,
        _review({"uid": uid, "allowed": False, "status": {"code": 400, "message": message}}),
    )


def refused(status: int, message: str) -> Answer:
    """The answer to a request refused before it is read (413 too large, 408 too slow)."""
    return Answer(
        status,
        _review({"uid": "", "allowed": False, "status": {"code": status, "message": message}}),
    )


def unavailable(message: str) -> Answer:
    """The 500 answer when something the decision needs cannot be read (the call fails)."""
    return Answer(
        500, _review({"uid": "", "allowed": False, "status": {"code": 500, "message": message}})
    )


def allowed(uid: str, *, warnings: list[str] | None = None) -> Answer:
    """The answer that admits the object (with admission warnings when there are any)."""
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if warnings:
        response["warnings"] = warnings
    return Answer(200, _review(response))


def denied(uid: str, message: str) -> Answer:
    """The answer that refuses the object with ECK's message (a 403 Forbidden status inside)."""
    status = {"code": 403, "reason": "Forbidden", "message": message}
    return Answer(200, _review({"uid": uid, "allowed": False, "status": status}))


_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def field_value(obj: Mapping[str, Any], path: str) -> object:
    """The value at a field path such as ``spec.nodeSets[0].name``, or None when absent."""
    current: object = obj
    for name, index in _SEGMENT.findall(path):
        if name and isinstance(current, Mapping):
            current = current.get(name)
        elif index and isinstance(current, list) and int(index) < len(current):
            current = current[int(index)]
        else:
            return None
    return current


def _field_error(obj: Mapping[str, Any], path: str, rule: str) -> str:
    return _field_error_of(path, field_value(obj, path), rule)


def _field_error_of(path: str, value: object, rule: str) -> str:
    # Kubernetes' field.Error wording: a scalar is quoted as Go's %#v would; a missing value is
    # "Required value", a structured one is named without being printed in full.
    if value is None or value == "" or value == [] or value == {}:
        return f"{path}: Required value: {rule}"
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return f"{path}: Invalid value: {json.dumps(value)}: {rule}"
    return f"{path}: Invalid value: {type(value).__name__}: {rule}"


def _invalid(webhook: Webhook, obj: Mapping[str, Any], errors: list[str]) -> str:
    # apierrors.NewInvalid: one error as is, several as a bracketed list.
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    name = str((metadata or {}).get("name") or "")
    listed = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f'{webhook.kind}.{webhook.group} "{name}" is invalid: {listed}'


def denial_message(webhook: Webhook, obj: Mapping[str, Any], problems: list[FieldError]) -> str:
    """ECK's message for a refused object: apierrors.NewInvalid over every field error."""
    return _invalid(webhook, obj, [_field_error(obj, path, rule) for path, rule in problems])


def license_denial_message(webhook: Webhook, obj: Mapping[str, Any]) -> str:
    """ECK's message for an object that asks for enterprise features on a Basic operator."""
    # The annotation key holds dots, so the field path is spelled out rather than looked up.
    path = f"metadata.annotations.{LICENSE_ANNOTATION}"
    return _invalid(webhook, obj, [_field_error_of(path, ENTERPRISE, ENTERPRISE_REQUIRED)])


def requests_enterprise(obj: object) -> bool:
    """Whether ``obj`` is annotated ``eck.k8s.elastic.co/license: enterprise``."""
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return isinstance(annotations, Mapping) and annotations.get(LICENSE_ANNOTATION) == ENTERPRISE


def needs_license(body: object) -> bool:
    """Whether deciding ``body`` needs the operator's license level: its object asks for it.

    The server reads the license only then, so every other review costs no license read.
    """
    request = body.get("request") if isinstance(body, Mapping) else None
    return isinstance(request, Mapping) and requests_enterprise(request.get("object"))


def _parse_request(body: object) -> dict[str, Any]:
    if not isinstance(body, Mapping):
        raise MalformedReviewError("the body is not a JSON object")
    if body.get("apiVersion") != ADMISSION_API_VERSION or body.get("kind") != "AdmissionReview":
        raise MalformedReviewError(
            f"expected an AdmissionReview of {ADMISSION_API_VERSION}, got "
            f"apiVersion={body.get('apiVersion')!r} kind={body.get('kind')!r}"
        )
    request = body.get("request")
    if not isinstance(request, Mapping):
        raise MalformedReviewError("the AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReviewError("the AdmissionReview request has no uid")
    return dict(request)


def _namespace_of(request: Mapping[str, Any], obj: Mapping[str, Any]) -> str:
    namespace = request.get("namespace")
    if isinstance(namespace, str) and namespace:
        return namespace
    metadata = obj.get("metadata")
    return str(metadata.get("namespace") or "") if isinstance(metadata, Mapping) else ""


def review(
    path: str, body: object, is_managed: Callable[[str], bool], *, enterprise: bool = False
) -> Answer:
    """Decide one AdmissionReview sent to ``path``.

    ``is_managed(namespace)`` is the operator's namespace matcher: an object outside the managed
    namespaces is allowed without a look at its spec, as ECK's common pre-check does.
    ``enterprise`` is whether the operator runs with an enterprise license; it matters only for a
    body that :func:`needs_license` (an object annotated to require one is denied without it).
    """
    try:
        request = _parse_request(body)
    except MalformedReviewError as error:
        return malformed(str(error))
    uid = str(request["uid"])
    webhook = WEBHOOKS_BY_PATH.get(path)
    if webhook is None:
        return malformed(f"no validating webhook is served at {path!r}", uid=uid)
    if request.get("operation") not in VALIDATED_OPERATIONS:
        return allowed(uid)
    obj = request.get("object")
    if not isinstance(obj, Mapping):
        return malformed("the AdmissionReview request has no object", uid=uid)
    if not is_managed(_namespace_of(request, obj)):
        return allowed(uid)
    unusable = shape_problem(obj)
    if unusable is not None:
        return denied(uid, _invalid(webhook, obj, [unusable]))
    if requests_enterprise(obj) and not enterprise:
        return denied(uid, license_denial_message(webhook, obj))
    kind = obj.get("kind")
    if kind is not None and kind != webhook.kind:
        return malformed(f"{webhook.path} validates {webhook.kind}, not {kind!r}", uid=uid)
    try:
        problems = webhook.rules(webhook.kind, obj)
        warned = webhook.warnings(webhook.kind, obj)
    except Exception as error:
        # A rule that trips over a shape it did not expect: the object is refused with what is
        # known, one log line, and no traceback (a 500 would let failurePolicy Ignore admit it).
        _log.warning("webhook.rules_failed", kind=webhook.kind, error=repr(error))
        rule = f"the object cannot be validated ({type(error).__name__}: {error})"
        return denied(uid, _invalid(webhook, obj, [f"spec: Invalid value: {rule}"]))
    if problems:
        return denied(uid, denial_message(webhook, obj, problems))
    notes = [f"{path}: {message}" for path, message in warned]
    return allowed(uid, warnings=notes)


#: The top-level fields every kind's rules read, and the JSON type each must have.
_TOP_LEVEL_OBJECTS = ("metadata", "spec", "status")


def shape_problem(obj: Mapping[str, Any]) -> str | None:
    """What makes ``obj`` unusable before any rule reads it, as a field error, or None (pure):
    a top-level field of the wrong JSON type, or nesting deeper than
    ``stackflow.kube.decoding.MAX_OBJECT_DEPTH`` levels (the informers would quarantine it)."""
    for field in _TOP_LEVEL_OBJECTS:
        value = obj.get(field)
        if value is not None and not isinstance(value, Mapping):
            return f"{field}: Invalid value: {type(value).__name__}: must be an object"
    path = decoding.too_deep_path(obj)
    if path is not None:
        return f"{path or 'the object'}: nested more than {decoding.MAX_OBJECT_DEPTH} levels deep"
    return None


def decode_body(raw: bytes) -> object:
    """The JSON of a raw request body; raises :class:`MalformedReviewError` when it is not JSON.

    A body nested too deep for the stdlib decoder is decoded with its deepest values replaced
    (``stackflow.kube.decoding.loads``), so the review can still name the field and deny it.
    """
    try:
        return decoding.loads(raw)
    except decoding.DocumentError as error:
        raise MalformedReviewError(f"the body is {error}") from None


def review_bytes(
    path: str, raw: bytes, is_managed: Callable[[str], bool], *, enterprise: bool = False
) -> Answer:
    """Decide a raw request body: JSON that cannot be parsed is a 400, never an exception."""
    try:
        body = decode_body(raw)
    except MalformedReviewError as error:
        return malformed(str(error))
    return review(path, body, is_managed, enterprise=enterprise)
