"""SubjectAccessReviews answered as the real API server answers them: the RBAC authorizer, pure.

A review is evaluated with exactly the user, groups and attributes of its ``spec``: the API server
adds no group (not ``system:authenticated``, not ``system:serviceaccounts``) to a
SubjectAccessReview, so a ServiceAccount user matches only bindings that name that ServiceAccount
or its user name, and group subjects match only the groups the review lists.

The authorizer chain is the real server's ``--authorization-mode=Node,RBAC`` behind its
privileged-group check: a review listing the ``system:masters`` group is allowed with no reason;
otherwise the RBAC rules decide (the Node authorizer has no opinion on anything but node
identities, which kubesim does not model). RBAC visits the ClusterRoleBindings, then (for a
namespaced request) the RoleBindings of the request's namespace, each binding's first matching
subject, and the rules of its role in order; the first rule that allows names the binding in the
reason. Bindings are visited by name here; the real server visits them in its informer's order, so
when two bindings allow, the reason may name the other one there. A binding whose role is missing
records an error; a denial lists those errors as its reason. Nothing is ever ``denied``: RBAC only
allows or has no opinion.

Only ``rules`` of a ClusterRole count: aggregated ClusterRoles count once the aggregation
controller has written the rules it gathers (``aggregated_rules`` is that controller's decision).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import Cause, StatusError
from kubesim.structural import OBJECT_META_FIELD_ORDER

#: The group the API server allows everything (its privileged-group authorizer, before RBAC).
PRIVILEGED_GROUP = "system:masters"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
#: The authorizer's name the real server puts before the reason of a denial (structured authz).
_RBAC_NAME = "rbac"
_REVIEW_GROUP = "authorization.k8s.io"

# Field order of the Go types, for the spec a review answers with (unset fields are left out).
_SPEC_FIELDS = ("resourceAttributes", "nonResourceAttributes", "user", "groups", "extra", "uid")
_SELF_SPEC_FIELDS = ("resourceAttributes", "nonResourceAttributes")
_RESOURCE_FIELDS = (
    "namespace",
    "verb",
    "group",
    "version",
    "resource",
    "subresource",
    "name",
    "fieldSelector",
    "labelSelector",
)
_NON_RESOURCE_FIELDS = ("path", "verb")


@dataclass(frozen=True)
class Attributes:
    """What a review asks: who (user, groups) may do what (a resource or a non-resource request)."""

    user: str = ""
    groups: tuple[str, ...] = ()
    resource_request: bool = True
    verb: str = ""
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Attributes:
        """The attributes of a (validated) SubjectAccessReview spec, taken as they are."""
        user = _text(spec.get("user"))
        groups = tuple(_text(g) for g in spec.get("groups") or ())
        resource = spec.get("resourceAttributes")
        if isinstance(resource, Mapping):
            return cls(
                user=user,
                groups=groups,
                verb=_text(resource.get("verb")),
                namespace=_text(resource.get("namespace")),
                api_group=_text(resource.get("group")),
                resource=_text(resource.get("resource")),
                subresource=_text(resource.get("subresource")),
                name=_text(resource.get("name")),
            )
        non_resource = spec.get("nonResourceAttributes")
        non_resource = non_resource if isinstance(non_resource, Mapping) else {}
        return cls(
            user=user,
            groups=groups,
            resource_request=False,
            verb=_text(non_resource.get("verb")),
            path=_text(non_resource.get("path")),
        )


@dataclass(frozen=True)
class Policy:
    """The stored RBAC objects, as the authorizer's listers see them."""

    roles: Sequence[Mapping[str, Any]] = ()
    cluster_roles: Sequence[Mapping[str, Any]] = ()
    role_bindings: Sequence[Mapping[str, Any]] = ()
    cluster_role_bindings: Sequence[Mapping[str, Any]] = ()
    _roles: dict[tuple[str, str], Mapping[str, Any]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _cluster_roles: dict[str, Mapping[str, Any]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        for role in self.roles:
            meta = role.get("metadata") or {}
            self._roles[(meta.get("namespace", ""), meta.get("name", ""))] = role
        for cluster_role in self.cluster_roles:
            self._cluster_roles[(cluster_role.get("metadata") or {}).get("name", "")] = cluster_role

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The Role ``namespace/name``, or None."""
        return self._roles.get((namespace, name))

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        """The ClusterRole ``name``, or None."""
        return self._cluster_roles.get(name)


@dataclass(frozen=True)
class Decision:
    """The review's answer: ``status.allowed`` and ``status.reason`` ("" = left out)."""

    allowed: bool
    reason: str = ""


def authorize(attributes: Attributes, policy: Policy) -> Decision:
    """The decision of the real server's authorizer chain (privileged group, then RBAC)."""
    if PRIVILEGED_GROUP in attributes.groups:
        return Decision(allowed=True)
    problems: list[str] = []
    for source, rules in _bindings_for(attributes, policy, problems):
        if any(rule_allows(attributes, rule) for rule in rules):
            return Decision(allowed=True, reason=f"RBAC: allowed by {source}")
    if not problems:
        return Decision(allowed=False)
    return Decision(allowed=False, reason=f"{_RBAC_NAME}: RBAC: {_aggregate(problems)}")


def rule_allows(attributes: Attributes, rule: Mapping[str, Any]) -> bool:
    """RBAC's RuleAllows: verb, then API group, resource (``res/sub``, ``*/sub``) and name, or
    the non-resource URL (exact, ``*``, or a ``prefix*``)."""
    if not _matches(rule.get("verbs"), attributes.verb):
        return False
    if not attributes.resource_request:
        return any(
            url == "*"
            or url == attributes.path
            or (url.endswith("*") and attributes.path.startswith(url.rstrip("*")))
            for url in _strings(rule.get("nonResourceURLs"))
        )
    combined = attributes.resource
    if attributes.subresource:
        combined = f"{attributes.resource}/{attributes.subresource}"
    names = _strings(rule.get("resourceNames"))
    return (
        _matches(rule.get("apiGroups"), attributes.api_group)
        and any(
            _resource_matches(resource, combined, attributes.subresource)
            for resource in _strings(rule.get("resources"))
        )
        and (not names or attributes.name in names)
    )


def aggregated_rules(
    cluster_role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]] | None:
    """The rules the aggregation controller writes into an aggregated ClusterRole: the rules of
    every other ClusterRole one of its selectors matches, selector by selector, roles by name,
    each distinct rule once; None for a ClusterRole without an ``aggregationRule``."""
    rule = cluster_role.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return None
    own_name = (cluster_role.get("metadata") or {}).get("name")
    candidates = sorted(
        (role for role in cluster_roles if (role.get("metadata") or {}).get("name") != own_name),
        key=lambda role: str((role.get("metadata") or {}).get("name", "")),
    )
    gathered: list[dict[str, Any]] = []
    for selector in rule.get("clusterRoleSelectors") or []:
        for role in candidates:
            if not _selector_matches(selector, (role.get("metadata") or {}).get("labels") or {}):
                continue
            for policy_rule in role.get("rules") or []:
                if policy_rule not in gathered:
                    gathered.append(dict(policy_rule))
    return gathered


# -- the review document ---------------------------------------------------------------------


def review_error(obj: Mapping[str, Any], *, self_review: bool) -> StatusError | None:
    """The 422 the real server answers for a malformed review (None when it is well formed).

    The real server validates the decoded internal object, whose kind is empty: the message
    starts ``.authorization.k8s.io "" is invalid`` and the details name no kind.
    """
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    causes: list[Cause] = []
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if (resource is None) == (non_resource is None):
        # Both set or neither: the bad value printed is the non-resource attributes (the internal
        # Go type, field names capitalised), or null.
        shown = "null" if non_resource is None else _go_non_resource(non_resource)
        causes.append(
            _invalid(
                "spec",
                f"Invalid value: {shown}: exactly one of nonResourceAttributes or "
                "resourceAttributes must be specified",
            )
        )
    if not self_review and not spec.get("user") and not spec.get("groups"):
        user = _text(spec.get("user"))
        causes.append(
            _invalid(
                "spec.user",
                f"Invalid value: {json.dumps(user)}: at least one of user or group must be "
                "specified",
            )
        )
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and any(
        meta.get(key) not in (None, "", 0, {}, []) for key in OBJECT_META_FIELD_ORDER
    ):
        causes.append(_invalid("metadata", f"Invalid value: {_go_meta(meta)}: must be empty"))
    if not causes:
        return None
    rendered = [f"{c.field}: {c.message}" for c in causes]
    joined = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    return StatusError(
        422,
        "Invalid",
        f'.{_REVIEW_GROUP} "" is invalid: {joined}',
        {"group": _REVIEW_GROUP},
        causes,
    )


def unknown_spec_fields(obj: Mapping[str, Any], *, self_review: bool) -> list[str]:
    """Paths of the fields of ``spec`` (and of its attributes) the review's Go types do not have,
    as strict decoding names them (``spec.foo``, ``spec.resourceAttributes.bar``)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    known = _SELF_SPEC_FIELDS if self_review else _SPEC_FIELDS
    unknown = [f"spec.{key}" for key in spec if key not in known]
    for key, fields in (
        ("resourceAttributes", _RESOURCE_FIELDS),
        ("nonResourceAttributes", _NON_RESOURCE_FIELDS),
    ):
        value = spec.get(key)
        if isinstance(value, Mapping):
            unknown.extend(f"spec.{key}.{name}" for name in value if name not in fields)
    return unknown


def answered_review(
    obj: Mapping[str, Any], decision: Decision, *, self_review: bool
) -> dict[str, Any]:
    """The review the server answers: metadata emptied, the spec as the Go types re-encode it
    (unset and empty fields left out, any client ``status`` replaced), then the decision."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    fields = _SELF_SPEC_FIELDS if self_review else _SPEC_FIELDS
    out_spec: dict[str, Any] = {}
    for key in fields:
        value = spec.get(key)
        if key == "resourceAttributes" and isinstance(value, Mapping):
            value = _ordered(value, _RESOURCE_FIELDS)
        elif key == "nonResourceAttributes" and isinstance(value, Mapping):
            value = _ordered(value, _NON_RESOURCE_FIELDS)
        if value is not None and value != "" and value != []:
            out_spec[key] = value
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {"metadata": {}, "spec": out_spec, "status": status}


# -- helpers -----------------------------------------------------------------------------------


def _bindings_for(
    attributes: Attributes, policy: Policy, problems: list[str]
) -> Iterable[tuple[str, Sequence[Mapping[str, Any]]]]:
    """(describer, rules) of every binding whose subjects include the requester, in the order the
    RBAC rule resolver visits them; missing roles go to ``problems``."""
    for binding in sorted(policy.cluster_role_bindings, key=_binding_name):
        subject = _applying_subject(attributes, binding, namespace="")
        if subject is None:
            continue
        rules = _role_rules(policy, binding, namespace="", problems=problems)
        if rules is not None:
            yield _describe(binding, subject, namespace=""), rules
    if not attributes.namespace:
        return
    local = (
        b
        for b in policy.role_bindings
        if (b.get("metadata") or {}).get("namespace") == attributes.namespace
    )
    for binding in sorted(local, key=_binding_name):
        subject = _applying_subject(attributes, binding, namespace=attributes.namespace)
        if subject is None:
            continue
        rules = _role_rules(policy, binding, namespace=attributes.namespace, problems=problems)
        if rules is not None:
            yield _describe(binding, subject, namespace=attributes.namespace), rules


def _applying_subject(
    attributes: Attributes, binding: Mapping[str, Any], *, namespace: str
) -> Mapping[str, Any] | None:
    """The binding's first subject that is the requester."""
    subjects: list[Mapping[str, Any]] = [
        s for s in binding.get("subjects") or [] if isinstance(s, Mapping)
    ]
    return next((s for s in subjects if _is_requester(attributes, s, namespace)), None)


def _is_requester(attributes: Attributes, subject: Mapping[str, Any], namespace: str) -> bool:
    """A User by name, a Group the review lists, or a ServiceAccount by its user name (one
    without a namespace is in the RoleBinding's namespace; in a ClusterRoleBinding it is nobody)."""
    kind = subject.get("kind")
    name = _text(subject.get("name"))
    if kind == "User":
        return attributes.user == name
    if kind == "Group":
        return name in attributes.groups
    if kind == "ServiceAccount":
        account_namespace = _text(subject.get("namespace")) or namespace
        return bool(account_namespace) and (
            attributes.user == f"{SERVICE_ACCOUNT_PREFIX}{account_namespace}:{name}"
        )
    return False


def _role_rules(
    policy: Policy, binding: Mapping[str, Any], *, namespace: str, problems: list[str]
) -> Sequence[Mapping[str, Any]] | None:
    ref = binding.get("roleRef") or {}
    kind, name = ref.get("kind"), _text(ref.get("name"))
    if kind == "Role":
        role = policy.role(namespace, name)
        if role is None:
            problems.append(f'role.rbac.authorization.k8s.io "{name}" not found')
            return None
        return list(role.get("rules") or [])
    if kind == "ClusterRole":
        cluster_role = policy.cluster_role(name)
        if cluster_role is None:
            problems.append(f'clusterrole.rbac.authorization.k8s.io "{name}" not found')
            return None
        return list(cluster_role.get("rules") or [])
    problems.append(f'unsupported role reference kind: "{kind}"')
    return None


def _describe(binding: Mapping[str, Any], subject: Mapping[str, Any], *, namespace: str) -> str:
    """``ClusterRoleBinding "b" of ClusterRole "r" to User "u"``; a RoleBinding is ``"b/ns"``."""
    ref = binding.get("roleRef") or {}
    name = _binding_name(binding)
    described = f'{subject.get("kind")} "{subject.get("name")}"'
    if subject.get("kind") == "ServiceAccount":
        account_namespace = subject.get("namespace") or namespace
        described = f'ServiceAccount "{subject.get("name")}/{account_namespace}"'
    if namespace:
        return f'RoleBinding "{name}/{namespace}" of {ref.get("kind")} "{ref.get("name")}" to {described}'
    return f'ClusterRoleBinding "{name}" of {ref.get("kind")} "{ref.get("name")}" to {described}'


def _resource_matches(rule_resource: str, combined: str, subresource: str) -> bool:
    if rule_resource in ("*", combined):
        return True
    return bool(subresource) and rule_resource == f"*/{subresource}"


def _matches(values: Any, wanted: str) -> bool:
    return any(value in ("*", wanted) for value in _strings(values))


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; an empty selector matches every ClusterRole."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def _binding_name(binding: Mapping[str, Any]) -> str:
    return str((binding.get("metadata") or {}).get("name", ""))


def _strings(values: Any) -> list[str]:
    return [v for v in values or () if isinstance(v, str)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _aggregate(messages: list[str]) -> str:
    """utilerrors.Aggregate: one message bare, several de-duplicated in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _invalid(path: str, message: str) -> Cause:
    return Cause("FieldValueInvalid", message, path)


def _ordered(value: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {key: value[key] for key in fields if value.get(key) not in (None, "")}


def _go_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _go_non_resource(value: Any) -> str:
    """The internal NonResourceAttributes as Go marshals it (no JSON tags: Go field names)."""
    value = value if isinstance(value, Mapping) else {}
    return _go_json({"Path": _text(value.get("path")), "Verb": _text(value.get("verb"))})


def _go_meta(meta: Mapping[str, Any]) -> str:
    """The review's metadata as Go marshals ObjectMeta (field order, empty fields left out)."""
    return _go_json(
        {
            key: meta[key]
            for key in OBJECT_META_FIELD_ORDER
            if meta.get(key) not in (None, "", 0, {}, [])
        }
    )
