"""One association ref resolved against the world: the target, its CA, its URL and the credentials.

Every read goes through the **scoped** client: a target in a namespace that left scope reads as
``NotFound`` and the ref goes ``Pending`` (its conf annotation is then removed), without a single
write in that namespace. Writes (the CA copy, the user Secrets on both sides) happen only once the
target was read, so only into namespaces in scope. With ``enforce-rbac-on-refs`` a ref whose
Elasticsearch (the one its user lives in) sits in another namespace is used only while the
associated object's ServiceAccount may get it; refused, it is unbound and ``Pending``. The
decisions are the pure builders of ``stackflow.stack.associations``; this module only reads and
applies.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from activities.apply import apply_object, apply_objects
from activities.context import ControllerContext
from activities.errors import InvalidSpecError
from activities.passwords import random_password
from stackflow.api.kinds import kind_resource
from stackflow.kube import errors
from stackflow.models.engine import ObjectKey
from stackflow.models.kinds import SECRETS, SERVICES
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.stack.access import InvalidServiceAccountError, service_account_of
from stackflow.stack.associations import conf as conf_builders
from stackflow.stack.associations import secrets as secret_builders
from stackflow.stack.associations.conf import AssociationConf, ConfError
from stackflow.stack.associations.refs import AssociationRef, parse_refs
from stackflow.stack.associations.service_accounts import service_account_secrets
from stackflow.stack.associations.status import (
    ESTABLISHED,
    FAILED,
    PENDING,
    AssociationStatusValue,
)
from stackflow.stack.associations.table import (
    ELASTICSEARCH,
    FLEET_SERVER,
    Association,
    AuthMode,
    association_named,
    elastic_service_account,
)
from stackflow.stack.objects import decode_secret_data

__all__ = [
    "ASSOCIATION_NOT_ALLOWED",
    "RefOutcome",
    "resolve_ref",
]

#: ECK's words for a reference the referring object's ServiceAccount may not follow.
ASSOCIATION_NOT_ALLOWED = "Association not allowed"


@dataclass(frozen=True)
class RefOutcome:
    """What resolving one ref gave: its status, its conf when established, what it depends on."""

    ref: AssociationRef
    status: AssociationStatusValue
    message: str
    conf: AssociationConf | None = None
    #: Objects read while resolving (the target, its Service and CA, a transitive Elasticsearch).
    watched: tuple[ObjectKey, ...] = field(default=())
    #: The referring object's ServiceAccount may not get the Elasticsearch (enforce-rbac-on-refs).
    denied: bool = False
    #: The target itself does not exist (or is out of scope): ECK warns ``AssociationError``.
    backend_missing: bool = False


def _tls_disabled(target: Mapping[str, Any]) -> bool:
    tls = (((target.get("spec") or {}).get("http") or {}).get("tls")) or {}
    return bool((tls.get("selfSignedCertificate") or {}).get("disabled")) and not (
        tls.get("certificate") or {}
    ).get("secretName")


def _version_of(target: Mapping[str, Any]) -> str:
    status = target.get("status") or {}
    return str(status.get("version") or (target.get("spec") or {}).get("version") or "")


async def _external(
    context: ControllerContext, association: Association, ref: AssociationRef
) -> RefOutcome:
    """A ``secretName`` ref: the conf points straight at the user's Secret."""
    watched = (ObjectKey.of(SECRETS, namespace=ref.namespace, name=ref.secret_name),)
    secret = await context.scoped.get_or_none(
        SECRETS, namespace=ref.namespace, name=ref.secret_name
    )
    if secret is None:
        return RefOutcome(
            ref, PENDING, f"secret {ref.key} of the external {association.target.kind} not found",
            watched=watched,
        )  # fmt: skip
    try:
        conf = conf_builders.external_conf(
            ref=ref, secret_data=decode_secret_data(secret), version=""
        )
    except ConfError as error:
        return RefOutcome(ref, FAILED, str(error), watched=watched)
    return RefOutcome(ref, ESTABLISHED, "", conf=conf, watched=watched)


async def _user_elasticsearch(
    context: ControllerContext,
    association: Association,
    target: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, str, tuple[ObjectKey, ...]]:
    """The Elasticsearch the association's user lives in: the target, or the target Kibana's."""
    if not association.user_via_kibana:
        return dict(target), "", ()
    kb_es = association_named("kb-es")
    refs = parse_refs({**target, "kind": kb_es.associated_kind}, kb_es).refs
    if not refs:
        return None, "the target Kibana has no elasticsearchRef", ()
    es_ref = refs[0]
    if es_ref.is_external:
        return None, "the target Kibana's Elasticsearch is external: no user can be made", ()
    resource = kind_resource(ELASTICSEARCH.kind)
    watched = (ObjectKey.of(resource, namespace=es_ref.namespace, name=es_ref.name),)
    es = await context.scoped.get_or_none(resource, namespace=es_ref.namespace, name=es_ref.name)
    if es is None:
        return None, f"Elasticsearch {es_ref.key} of the target Kibana not found", watched
    return es, "", watched


@dataclass(frozen=True)
class _Credentials:
    """Where a ref's credentials live: the application's Secret and the Elasticsearch user's."""

    app_secret_name: str
    user: str
    es_namespace: str

    @classmethod
    def of(
        cls,
        association: Association,
        *,
        associated: Mapping[str, Any],
        ref: AssociationRef,
        es_namespace: str,
    ) -> _Credentials:
        """The names for ``associated``'s ``ref``, its user living in ``es_namespace``."""
        meta = view(associated)
        return cls(
            app_secret_name=secret_builders.app_user_secret_name(
                association, associated_name=meta.name, ref=ref
            ),
            user=secret_builders.es_user_name(
                association, associated_namespace=meta.namespace, associated_name=meta.name, ref=ref
            ),
            es_namespace=es_namespace,
        )

    async def read(
        self, context: ControllerContext, namespace: str
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Both Secrets as they are now (None: absent or out of scope), read at once."""
        current_app, current_es = await asyncio.gather(
            context.scoped.get_or_none(SECRETS, namespace=namespace, name=self.app_secret_name),
            context.scoped.get_or_none(SECRETS, namespace=self.es_namespace, name=self.user),
        )
        return current_app, current_es


async def _credentials(
    context: ControllerContext,
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
    es: Mapping[str, Any],
    names: _Credentials,
    current: tuple[dict[str, Any] | None, dict[str, Any] | None],
) -> tuple[str, str, bool]:
    """Apply the user (or service-account token) Secrets on both sides, against ``current``
    (the two Secrets ``names`` names, as read moments ago); (secret, key, is SA)."""
    current_app, current_es = current
    app_secret_name, user = names.app_secret_name, names.user
    account = elastic_service_account(association, associated)
    if account is not None:
        app_secret, es_secret = service_account_secrets(
            association,
            associated=associated,
            ref=ref,
            es=es,
            service_account=account,
            existing=current_app,
            generate_secret=random_password,
        )
        await _apply_pair(context, (app_secret, current_app), (es_secret, current_es))
        return app_secret_name, conf_builders.SERVICE_ACCOUNT_TOKEN_KEY, True
    app_secret, password = secret_builders.app_user_secret(
        association,
        associated=associated,
        ref=ref,
        existing=current_app,
        generate_password=random_password,
    )
    # A new bcrypt hash costs tens of milliseconds of CPU: not on the event loop.
    es_secret = await asyncio.to_thread(
        lambda: secret_builders.es_user_secret(
            association,
            associated=associated,
            ref=ref,
            es=es,
            password=password,
            existing=current_es,
        )
    )
    await _apply_pair(context, (app_secret, current_app), (es_secret, current_es))
    return app_secret_name, user, False


async def _apply_pair(
    context: ControllerContext,
    *secrets: tuple[Mapping[str, Any], Mapping[str, Any] | None],
) -> None:
    """Apply both sides' Secrets at once, each against the object read moments ago."""
    await apply_objects(context.scoped, [(SECRETS, desired, read) for desired, read in secrets])


async def _unbind(
    context: ControllerContext,
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
) -> None:
    """ECK's ``Unbind``: delete the Elasticsearch-side user and token Secrets of the ref (in the
    namespaces in scope) and the application's credentials Secret; the caller drops the conf."""
    for selector in secret_builders.unbind_selectors(association, associated=associated, ref=ref):
        listed = await context.scoped.list(
            SECRETS, label_selector=equality_selector_string(selector)
        )
        for secret in listed["items"]:
            meta = view(secret)
            try:
                await context.scoped.delete(SECRETS, namespace=meta.namespace, name=meta.name)
            except errors.NotFound:
                continue
    if association.user_secret_suffix is None:
        return
    meta = view(associated)
    name = secret_builders.app_user_secret_name(association, associated_name=meta.name, ref=ref)
    with contextlib.suppress(errors.NotFound):
        await context.scoped.delete(SECRETS, namespace=meta.namespace, name=name)


@dataclass(frozen=True)
class _Denial:
    """Why a ref may not be used; ``refused`` when the API server said no (then it is unbound)."""

    message: str
    refused: bool


async def _access_denied(
    context: ControllerContext,
    associated: Mapping[str, Any],
    es: Mapping[str, Any],
) -> _Denial | None:
    """Why the associated object may not use ``es`` (enforce-rbac-on-refs), or None: its
    ServiceAccount must be allowed to get the Elasticsearch its user lives in (ECK checks that
    one, the transitive one for a Kibana ref, and none for the associations without a user)."""
    meta, es_meta = view(associated), view(es)
    try:
        allowed = await context.access.allowed(
            service_account=service_account_of(associated),
            source_namespace=meta.namespace,
            target=kind_resource(ELASTICSEARCH.kind),
            target_namespace=es_meta.namespace,
            target_name=es_meta.name,
        )
    except InvalidServiceAccountError as error:
        # Nothing was asked, so nothing is known to be refused: the ref waits, as in ECK.
        return _Denial(f"spec.{error}", refused=False)
    if allowed:
        return None
    return _Denial(
        f"{ASSOCIATION_NOT_ALLOWED}: {meta.namespace}/{meta.name} to "
        f"{es_meta.namespace}/{es_meta.name}",
        refused=True,
    )


def _check_target(association: Association, target: Mapping[str, Any]) -> None:
    """Refuse a target that exists but cannot be associated (an Agent that is no Fleet Server)."""
    if association.target is FLEET_SERVER:
        spec = target.get("spec") or {}
        if not (spec.get("mode") == "fleet" and spec.get("fleetServerEnabled")):
            raise InvalidSpecError(
                f"spec.{association.ref_field}: Agent {view(target).key}"
                " is not a Fleet Server (fleetServerEnabled in fleet mode)"
            )


async def _nothing_read() -> tuple[None, None]:
    return None, None


def missing_backend_message(kind: str, group: str, ref: AssociationRef) -> str:
    """ECK's ``AssociationError`` message for a target that does not exist (pure): the
    association controller's ``Failed to find referenced backend`` with the API's not-found."""
    return f'Failed to find referenced backend {ref.key}: {kind}.{group} "{ref.name}" not found'


async def resolve_ref(
    context: ControllerContext,
    association: Association,
    *,
    associated: Mapping[str, Any],
    ref: AssociationRef,
) -> RefOutcome:
    """Resolve one ref: Pending while something is missing, Established with its conf, else Failed."""
    if ref.is_external:
        return await _external(context, association, ref)
    kind = association.target
    resource = kind_resource(kind.kind)
    service_name = ref.service_name or kind.http_service_name(ref.name)
    certs_name = kind.public_certs_secret_name(ref.name)
    watched: tuple[ObjectKey, ...] = (
        ObjectKey.of(resource, namespace=ref.namespace, name=ref.name),
        ObjectKey.of(SERVICES, namespace=ref.namespace, name=service_name),
        ObjectKey.of(SECRETS, namespace=ref.namespace, name=certs_name),
    )
    associated_meta = view(associated)
    ca_copy_name = secret_builders.ca_secret_name(
        association, associated_name=associated_meta.name, ref=ref
    )
    # The credentials' Secrets are named before the target is read when the user lives in the
    # target itself: read with it. (A user via a Kibana lives in that Kibana's Elasticsearch.)
    credentials = (
        _Credentials.of(association, associated=associated, ref=ref, es_namespace=ref.namespace)
        if association.auth_mode is not AuthMode.NONE and not association.user_via_kibana
        else None
    )
    # Independent reads, at once: each is a round trip to the API server.
    target, certs, service, current_ca, current_credentials = await asyncio.gather(
        context.scoped.get_or_none(resource, namespace=ref.namespace, name=ref.name),
        context.scoped.get_or_none(SECRETS, namespace=ref.namespace, name=certs_name),
        context.scoped.get_or_none(SERVICES, namespace=ref.namespace, name=service_name),
        context.scoped.get_or_none(SECRETS, namespace=associated_meta.namespace, name=ca_copy_name),
        credentials.read(context, associated_meta.namespace)
        if credentials is not None
        else _nothing_read(),
    )
    if target is None:
        return RefOutcome(
            ref,
            PENDING,
            missing_backend_message(kind.kind, resource.group, ref),
            watched=watched,
            backend_missing=True,
        )
    _check_target(association, target)
    ca_provided, ca_name = False, ""
    if not _tls_disabled(target):
        if certs is None:
            return RefOutcome(
                ref, PENDING, f"waiting for the certificates of {kind.kind} {ref.key}",
                watched=watched,
            )  # fmt: skip
        ca_copy = secret_builders.ca_secret(
            association, associated=associated, ref=ref, public_certs=certs
        )
        await apply_object(context.scoped, SECRETS, ca_copy, current=current_ca)
        ca_provided = secret_builders.ca_cert_provided(ca_copy)
        ca_name = str(ca_copy["metadata"]["name"])
    url = None
    if service is not None:
        url = conf_builders.service_url(service, scheme="https" if ca_name else "http")
    if url is None:
        return RefOutcome(
            ref, PENDING, f"service {ref.namespace}/{service_name} not found or without port",
            watched=watched,
        )  # fmt: skip
    version = _version_of(target)
    if association.auth_mode is AuthMode.NONE:
        conf = conf_builders.no_auth_conf(
            ca_secret_name=ca_name, ca_cert_provided=ca_provided, url=url, version=version
        )
        return RefOutcome(ref, ESTABLISHED, "", conf=conf, watched=watched)
    es, problem, transitive = await _user_elasticsearch(context, association, target)
    watched += transitive
    if es is None:
        return RefOutcome(ref, PENDING, problem, watched=watched)
    denial = await _access_denied(context, associated, es)
    if denial is not None:
        if denial.refused:
            await _unbind(context, association, associated=associated, ref=ref)
        return RefOutcome(ref, PENDING, denial.message, watched=watched, denied=denial.refused)
    if credentials is None:
        # The user lives in the target Kibana's Elasticsearch: named only now.
        credentials = _Credentials.of(
            association, associated=associated, ref=ref, es_namespace=view(es).namespace
        )
        current_credentials = await credentials.read(context, associated_meta.namespace)
    secret_name, secret_key, service_account = await _credentials(
        context,
        association,
        associated=associated,
        ref=ref,
        es=es,
        names=credentials,
        current=current_credentials,
    )
    conf = conf_builders.managed_conf(
        ca_secret_name=ca_name,
        ca_cert_provided=ca_provided,
        url=url,
        version=version,
        auth_secret_name=secret_name,
        auth_secret_key=secret_key,
        is_service_account=service_account,
    )
    return RefOutcome(ref, ESTABLISHED, "", conf=conf, watched=watched)
