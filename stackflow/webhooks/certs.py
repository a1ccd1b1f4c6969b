"""The webhook's certificate Secret and ValidatingWebhookConfiguration.

Pure parts: ``webhook_certificates`` (the CA and serving pair to keep, reusing the current ones
until they are due for rotation), ``desired_secret`` and ``desired_configuration`` (the objects
to write). ``WebhookObjects.ensure`` reads, decides and writes them; only the leader calls it
(``keep_webhook_objects``), while every replica reads the Secret to serve with its certificate.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import structlog

from stackflow.kube import errors
from stackflow.models.kinds import SECRETS, Kind
from stackflow.stack.certificates import (
    CertificateSettings,
    KeyPair,
    LeafRequest,
    reconcile_ca,
    reconcile_leaf,
    service_dns_names,
)
from stackflow.webhooks.admission import VALIDATED_OPERATIONS, WEBHOOKS

VALIDATING_WEBHOOK_CONFIGURATIONS = Kind(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    namespaced=False,
)
LOCAL_HOST = "127.0.0.1"
CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
MANAGED_BY = {"app.kubernetes.io/managed-by": "stackflow"}

_log = structlog.get_logger("stackflow.webhooks")


@dataclass(frozen=True)
class WebhookSettings:
    """Where the webhook lives: its Secret, its configuration's name, its Service or address."""

    namespace: str
    secret_name: str
    configuration_name: str
    port: int
    in_cluster: bool
    certificates: CertificateSettings = field(default_factory=CertificateSettings)

    @property
    def service_name(self) -> str:
        """The Service in front of the webhook: the Secret's name without ``-cert``.

        The chart names them ``<name>-webhook`` and ``<name>-webhook-cert``, ECK by default
        ``elastic-webhook-server`` and ``elastic-webhook-server-cert``.
        """
        return self.secret_name.removesuffix("-cert")

    @property
    def leaf_request(self) -> LeafRequest:
        """The serving certificate's names: the Service's DNS names and the loopback address."""
        return LeafRequest(
            common_name=self.service_name,
            dns_names=(*service_dns_names(self.service_name, self.namespace), "localhost"),
            ip_addresses=(LOCAL_HOST,),
        )


def _decoded(data: Mapping[str, Any], key: str) -> bytes | None:
    value = data.get(key)
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def pairs_from_secret(secret: Mapping[str, Any] | None) -> tuple[KeyPair | None, KeyPair | None]:
    """The CA and serving pairs a Secret holds (None for each that is missing)."""
    data = (secret or {}).get("data") or {}
    ca_cert, ca_key = _decoded(data, CA_CERT), _decoded(data, CA_KEY)
    tls_cert, tls_key = _decoded(data, TLS_CERT), _decoded(data, TLS_KEY)
    ca = KeyPair(ca_cert, ca_key) if ca_cert and ca_key else None
    leaf = KeyPair(tls_cert, tls_key) if tls_cert and tls_key else None
    return ca, leaf


def webhook_certificates(
    secret: Mapping[str, Any] | None, settings: WebhookSettings, *, now: datetime
) -> tuple[KeyPair, KeyPair]:
    """The CA and serving pair to keep: the Secret's while valid, else freshly issued ones."""
    current_ca, current_leaf = pairs_from_secret(secret)
    ca = reconcile_ca(
        current=current_ca,
        common_name=f"{settings.service_name}-ca",
        organizational_unit="stackflow-webhook",
        now=now,
        settings=settings.certificates,
    )
    leaf = reconcile_leaf(
        current=current_leaf if ca == current_ca else None,
        ca=ca,
        request=settings.leaf_request,
        now=now,
        settings=settings.certificates,
    )
    return ca, leaf


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def desired_secret(settings: WebhookSettings, ca: KeyPair, leaf: KeyPair) -> dict[str, Any]:
    """The certificate Secret: the CA (kept to sign the next serving certificate) and the pair."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": settings.secret_name,
            "namespace": settings.namespace,
            "labels": dict(MANAGED_BY),
        },
        "type": "Opaque",
        "data": {
            CA_CERT: _b64(ca.cert_pem),
            CA_KEY: _b64(ca.key_pem),
            TLS_CERT: _b64(leaf.cert_pem),
            TLS_KEY: _b64(leaf.key_pem),
        },
    }


def _client_config(settings: WebhookSettings, path: str, ca: bytes) -> dict[str, Any]:
    if settings.in_cluster:
        target: dict[str, Any] = {
            "service": {
                "name": settings.service_name,
                "namespace": settings.namespace,
                "path": path,
                "port": 443,
            }
        }
    else:
        # Outside a cluster (make dev, the tests) the API server reaches the operator directly.
        target = {"url": f"https://{LOCAL_HOST}:{settings.port}{path}"}
    return {**target, "caBundle": _b64(ca)}


def desired_webhooks(settings: WebhookSettings, ca_cert: bytes) -> list[dict[str, Any]]:
    """One entry per ECK webhook: ECK's name, rules and policies, pointing at this operator."""
    return [
        {
            "name": webhook.name,
            "clientConfig": _client_config(settings, webhook.path, ca_cert),
            "rules": [
                {
                    "apiGroups": [webhook.group],
                    "apiVersions": [webhook.version],
                    "operations": list(VALIDATED_OPERATIONS),
                    "resources": [webhook.plural],
                    "scope": "*",
                }
            ],
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "matchPolicy": "Exact",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10,
        }
        for webhook in WEBHOOKS
    ]


def desired_configuration(settings: WebhookSettings, ca_cert: bytes) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration this operator manages."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": settings.configuration_name, "labels": dict(MANAGED_BY)},
        "webhooks": desired_webhooks(settings, ca_cert),
    }


def _same_webhooks(current: list[Any], desired: list[dict[str, Any]]) -> bool:
    # The API server defaults fields (namespaceSelector, objectSelector, port): compare only
    # what this operator sets.
    if len(current) != len(desired):
        return False
    for have, want in zip(current, desired, strict=True):
        if not isinstance(have, Mapping):
            return False
        for key, value in want.items():
            if key == "clientConfig":
                have_config = have.get(key) or {}
                if any(have_config.get(k) != v for k, v in value.items() if k != "service"):
                    return False
                if "service" in value and not _same_fields(
                    have_config.get("service"), value["service"]
                ):
                    return False
            elif key == "rules":
                if not all(
                    _same_fields(h, w) for h, w in zip(have.get(key) or [], value, strict=False)
                ) or len(have.get(key) or []) != len(value):
                    return False
            elif have.get(key) != value:
                return False
    return True


def _same_fields(have: object, want: Mapping[str, Any]) -> bool:
    return isinstance(have, Mapping) and all(have.get(k) == v for k, v in want.items())


class WebhookClient(Protocol):
    """The reads and writes the routine needs (the scoped client: the operator namespace is
    always managed, and the configuration is cluster-scoped)."""

    async def get(self, resource: Kind, *, namespace: str | None, name: str) -> dict[str, Any]:
        """GET one object."""
        ...

    async def create(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """POST a new object."""
        ...

    async def replace(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """PUT an object."""
        ...


async def _get_or_none(
    client: WebhookClient, resource: Kind, *, namespace: str | None, name: str
) -> dict[str, Any] | None:
    try:
        return await client.get(resource, namespace=namespace, name=name)
    except errors.NotFound:
        return None


async def read_serving_pair(client: WebhookClient, settings: WebhookSettings) -> KeyPair | None:
    """The serving certificate and key of the Secret, or None while there is none."""
    secret = await _get_or_none(
        client, SECRETS, namespace=settings.namespace, name=settings.secret_name
    )
    return pairs_from_secret(secret)[1]


async def ensure_webhook_objects(
    client: WebhookClient, settings: WebhookSettings, *, now: datetime
) -> KeyPair:
    """Create or rotate the Secret, then create or update the configuration; returns the pair."""
    secret = await _get_or_none(
        client, SECRETS, namespace=settings.namespace, name=settings.secret_name
    )
    ca, leaf = webhook_certificates(secret, settings, now=now)
    wanted = desired_secret(settings, ca, leaf)
    if secret is None:
        await client.create(SECRETS, wanted, namespace=settings.namespace)
        _log.info("webhook.secret_created", secret=settings.secret_name)
    elif (secret.get("data") or {}) != wanted["data"]:
        # Keep the rest of the Secret (labels set by others); resourceVersion makes it optimistic.
        updated = {**secret, "data": wanted["data"]}
        await client.replace(SECRETS, updated, namespace=settings.namespace)
        _log.info("webhook.secret_rotated", secret=settings.secret_name)
    configuration = desired_configuration(settings, ca.cert_pem)
    current = await _get_or_none(
        client, VALIDATING_WEBHOOK_CONFIGURATIONS, namespace=None, name=settings.configuration_name
    )
    if current is None:
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, configuration)
        _log.info("webhook.configuration_created", name=settings.configuration_name)
    elif not _same_webhooks(current.get("webhooks") or [], configuration["webhooks"]):
        updated = {**current, "webhooks": configuration["webhooks"]}
        await client.replace(VALIDATING_WEBHOOK_CONFIGURATIONS, updated)
        _log.info("webhook.configuration_updated", name=settings.configuration_name)
    return leaf


async def keep_webhook_objects(
    client: WebhookClient,
    settings: WebhookSettings,
    *,
    is_leader: Callable[[], bool],
    stop: asyncio.Event,
    interval_seconds: float = 60.0,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """While this replica leads, keep the Secret and the configuration (every ``interval``).

    A failed pass is logged and retried on the next tick: the webhook's failurePolicy is Ignore,
    so a missing certificate degrades admission, never the operator.
    """
    retry = timedelta(seconds=min(interval_seconds, 5.0)).total_seconds()
    while not stop.is_set():
        delay = interval_seconds
        if is_leader():
            try:
                await ensure_webhook_objects(client, settings, now=clock())
            except Exception as error:  # any failure is retried, never fatal
                _log.warning("webhook.objects_failed", error=str(error) or repr(error))
                delay = retry
        else:
            delay = retry  # a replica that becomes leader takes over within seconds
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=delay)
