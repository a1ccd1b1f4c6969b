"""``authorization.k8s.io/v1`` SubjectAccessReviews and SelfSubjectAccessReviews over HTTP.

A review is a question, not an object: a POST is decoded and checked like any create (TypeMeta,
``fieldValidation``, admission webhooks), validated, answered 201 with ``status`` filled in, and
never stored (no name, uid or resourceVersion, as on the real server). A SubjectAccessReview is
decided by :mod:`kubesim.rbac` from the Roles, ClusterRoles and bindings the store holds now. kubesim
authenticates nobody and serves every client as the real server serves a ``system:masters``
client, so a SelfSubjectAccessReview (the requester's own access) is always allowed, with no
reason, as the privileged-group authorizer answers.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim import errors, rbac, request, schema
from kubesim.backend import Backend
from kubesim.request import ResourcePath
from kubesim.resource_type import ResourceType
from kubesim.responses import object_response
from kubesim.write_request import context, require_verb, strict_decoding_error
from kubesim.writes import admit, read_body

REVIEW_GROUP = "authorization.k8s.io"
SUBJECT_ACCESS_REVIEWS = "subjectaccessreviews"
SELF_SUBJECT_ACCESS_REVIEWS = "selfsubjectaccessreviews"
_RBAC_GROUP = "rbac.authorization.k8s.io"


def is_access_review(rt: ResourceType) -> bool:
    """True for the two review kinds this module answers."""
    return rt.group == REVIEW_GROUP and rt.plural in (
        SUBJECT_ACCESS_REVIEWS,
        SELF_SUBJECT_ACCESS_REVIEWS,
    )


async def create_review(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """POST a review: 201 with the answered review (nothing stored); 422 for a malformed one."""
    require_verb(rt, "create")
    self_review = rt.plural == SELF_SUBJECT_ACCESS_REVIEWS
    ctx = context(req, rt, operation="CREATE")
    body = request.decode_object_body(await read_body(req), req.headers.get("Content-Type"))
    obj = request.check_type_meta(body, api_version=rt.api_version, kind=rt.kind, custom=rt.custom)
    unknown = schema.unknown_builtin_fields(rt, obj) + rbac.unknown_spec_fields(
        obj, self_review=self_review
    )
    warnings: list[str] = []
    if unknown and ctx.field_validation == "Strict":
        raise strict_decoding_error(unknown)
    if unknown and ctx.field_validation != "Ignore":
        warnings = [f"unknown field {request.go_quote(p)}" for p in unknown]
    obj, admission_warnings = await admit(backend, rt, ctx=ctx, new=obj, old=None, name="")
    problem = rbac.review_error(obj, self_review=self_review)
    if problem is not None:
        raise problem
    if self_review:
        decision = rbac.Decision(allowed=True)
    else:
        spec = obj.get("spec")
        attributes = rbac.Attributes.from_spec(spec if isinstance(spec, dict) else {})
        decision = rbac.authorize(attributes, _policy(backend))
    answer = rbac.answered_review(obj, decision, self_review=self_review)
    return object_response(req, rt, obj=answer, status=201, warnings=warnings + admission_warnings)


def _policy(backend: Backend) -> rbac.Policy:
    """The RBAC objects stored now (shared, not copied: the decision is made before any await)."""
    return rbac.Policy(
        roles=_stored(backend, "roles"),
        cluster_roles=_stored(backend, "clusterroles"),
        role_bindings=_stored(backend, "rolebindings"),
        cluster_role_bindings=_stored(backend, "clusterrolebindings"),
    )


def _stored(backend: Backend, plural: str) -> list[dict[str, Any]]:
    rt = backend.registry.lookup(_RBAC_GROUP, "v1", plural)
    if rt is None:
        raise errors.internal_error(f"{plural}.{_RBAC_GROUP} is not served")
    objects, _rv = backend.store.list(rt, None, copy=False)
    return objects
