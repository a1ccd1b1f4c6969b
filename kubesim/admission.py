"""Mutating and validating admission webhooks: AdmissionReview v1 over HTTPS (reference §8).

The HTTP layer calls :meth:`Admission.mutate` before schema validation and :meth:`Admission.validate`
just before persisting. Decisions (matching, review bodies, answer checks, error wording) live in
:mod:`kubesim.admission_match`; this module only posts reviews and sequences the webhooks.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import dataclasses
import json
import logging
import os
import ssl
import uuid
from collections.abc import Callable
from typing import Any

import aiohttp

from kubesim.admission_match import (
    AdmissionRequest,
    SelectorError,
    Verdict,
    WebhookCallError,
    WebhookFlavour,
    build_review,
    call_failure_error,
    denial_error,
    dry_run_unsupported,
    ignores_failures,
    ordered_webhooks,
    read_verdict,
    service_url,
    supports_dry_run,
    timeout_seconds,
    webhook_applies,
    with_timeout_query,
)
from kubesim.errors import internal_error
from kubesim.patch import PatchError, apply_json_patch

__all__ = ["Admission", "AdmissionRequest", "ServiceResolver"]

log = logging.getLogger("kubesim.admission")

# (namespace, name, port) of a Service → "host:port" to dial, or None when it cannot be reached.
ServiceResolver = Callable[[str, str, int], "str | None"]


class Admission:
    """Calls the webhooks of the current Mutating/ValidatingWebhookConfigurations for each write."""

    def __init__(
        self,
        *,
        list_configurations: Callable[[str], list[dict[str, Any]]],
        service_resolver: ServiceResolver | None = None,
    ) -> None:
        """``list_configurations("mutating" | "validating")`` returns the configuration objects."""
        self._list_configurations = list_configurations
        self._service_resolver = service_resolver
        self._session: aiohttp.ClientSession | None = None
        self._ssl_contexts: dict[str, ssl.SSLContext] = {}

    def has_webhooks(self) -> bool:
        """Whether any mutating or validating webhook configuration exists (else writes skip admission)."""
        return bool(
            self._list_configurations("mutating") or self._list_configurations("validating")
        )

    async def mutate(self, request: AdmissionRequest) -> tuple[dict[str, Any] | None, list[str]]:
        """Run the mutating webhooks in series; answer the (possibly patched) object and the warnings.

        ``IfNeeded`` webhooks are called once more when a later webhook changed the object.
        Raises :class:`StatusError` for a denial, a failed call under ``Fail``, or a bad patch.
        Without mutating webhooks the request's own object is answered (not a copy).
        """
        webhooks = ordered_webhooks(self._list_configurations("mutating"))
        if not webhooks:
            return request.obj, []
        obj = copy.deepcopy(request.obj)
        warnings: list[str] = []
        invoked_reinvocable: set[int] = set()
        to_reinvoke: set[int] = set()
        for reinvocation in (False, True):
            if reinvocation and not to_reinvoke:
                break
            for index, webhook in enumerate(webhooks):
                current = _with_object(request, obj)
                # As in apiserver: a webhook skipped in the first round is not called on reinvocation.
                if not _applies(webhook, current) or (reinvocation and index not in to_reinvoke):
                    continue
                verdict = await self._consult(webhook, current, flavour="mutating")
                if verdict is None:
                    continue
                warnings.extend(verdict.warnings)
                if not verdict.allowed:
                    raise denial_error(webhook.get("name", ""), verdict.status)
                if verdict.patch and obj is not None:
                    patched = _patched(obj, verdict.patch)
                    if patched != obj:
                        to_reinvoke |= invoked_reinvocable
                        invoked_reinvocable = set()
                    obj = patched
                if webhook.get("reinvocationPolicy") == "IfNeeded":
                    invoked_reinvocable.add(index)
        return obj, warnings

    async def validate(self, request: AdmissionRequest) -> list[str]:
        """Run the validating webhooks in parallel; answer their warnings.

        Raises the first failure in webhook order (denial, failed call under ``Fail``, dry-run refusal).
        """
        configurations = self._list_configurations("validating")
        if not configurations:
            return []
        webhooks = [
            webhook for webhook in ordered_webhooks(configurations) if _applies(webhook, request)
        ]
        outcomes = await asyncio.gather(
            *(self._consult(webhook, request, flavour="validating") for webhook in webhooks),
            return_exceptions=True,
        )
        warnings: list[str] = []
        for webhook, outcome in zip(webhooks, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                raise outcome
            if outcome is None:
                continue
            warnings.extend(outcome.warnings)
            if not outcome.allowed:
                raise denial_error(webhook.get("name", ""), outcome.status)
        return warnings

    async def close(self) -> None:
        """Close the HTTP client session."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _consult(
        self, webhook: dict[str, Any], request: AdmissionRequest, *, flavour: WebhookFlavour
    ) -> Verdict | None:
        """One webhook's verdict, or None when its call failed under ``failurePolicy: Ignore``."""
        name = str(webhook.get("name", ""))
        if request.dry_run and not supports_dry_run(webhook):
            raise dry_run_unsupported(name)
        uid = str(uuid.uuid4())
        try:
            body = await self._post(webhook, build_review(request, uid=uid))
            return read_verdict(body, uid=uid, mutating=flavour == "mutating")
        except WebhookCallError as failure:
            if ignores_failures(webhook):
                log.warning("ignoring failed webhook call %s: %s", name, failure.reason)
                return None
            raise call_failure_error(name, failure.reason) from failure

    async def _post(self, webhook: dict[str, Any], review: dict[str, Any]) -> Any:
        """POST the review; any transport or HTTP failure is a :class:`WebhookCallError`."""
        client_config = webhook.get("clientConfig") or {}
        seconds = timeout_seconds(webhook)
        target, shown, server_hostname = self._target(client_config, seconds)
        ssl_context = self._ssl_context(client_config.get("caBundle"))
        session = self._client()
        failed = f'failed to call webhook: Post "{shown}"'
        try:
            async with asyncio.timeout(seconds):
                async with session.post(
                    target, json=review, ssl=ssl_context, server_hostname=server_hostname
                ) as response:
                    text = await response.text()
                    if response.status // 100 != 2:
                        raise WebhookCallError(
                            f"failed to call webhook: the server responded with the status code "
                            f"{response.status} but did not return more information"
                        )
        except TimeoutError as error:
            raise WebhookCallError(f"{failed}: context deadline exceeded") from error
        except aiohttp.ClientConnectorCertificateError as error:
            raise WebhookCallError(
                f"{failed}: tls: failed to verify certificate: {error}"
            ) from error
        except aiohttp.ClientConnectorError as error:
            # asyncio's strerror names the address; Go prints the plain errno text.
            errno = error.os_error.errno
            why = (os.strerror(errno) if errno else str(error.os_error)).lower()
            raise WebhookCallError(
                f"{failed}: dial tcp {error.host}:{error.port}: connect: {why}"
            ) from error
        except aiohttp.ClientError as error:
            raise WebhookCallError(f"{failed}: {error}") from error
        try:
            return json.loads(text)
        except ValueError as error:
            raise WebhookCallError(
                f"failed to call webhook: invalid JSON in response: {error}"
            ) from error

    def _target(self, client_config: dict[str, Any], seconds: int) -> tuple[str, str, str | None]:
        """(URL to dial, URL shown in messages, TLS server name override) of a ``clientConfig``."""
        url = client_config.get("url")
        if url:
            shown = with_timeout_query(str(url), seconds)
            return shown, shown, None
        service = client_config.get("service")
        if not isinstance(service, dict):
            raise WebhookCallError(
                "failed to call webhook: clientConfig has neither url nor service"
            )
        shown = with_timeout_query(service_url(service), seconds)
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        port = int(service.get("port") or 443)
        resolver = self._service_resolver
        address = resolver(namespace, name, port) if resolver is not None else None
        if not address:
            raise WebhookCallError(
                f'failed to call webhook: Post "{shown}": service "{name}" not found'
            )
        path = service.get("path") or "/"
        # The certificate is issued for the in-cluster name, not for the address kubesim dials.
        return (
            with_timeout_query(f"https://{address}{path}", seconds),
            shown,
            f"{name}.{namespace}.svc",
        )

    def _ssl_context(self, ca_bundle: Any) -> ssl.SSLContext:
        """A TLS context trusting ``caBundle`` (base64 PEM), or the system roots when it is absent."""
        key = str(ca_bundle or "")
        context = self._ssl_contexts.get(key)
        if context is not None:
            return context
        if not key:
            context = ssl.create_default_context()
        else:
            try:
                context = ssl.create_default_context(
                    cadata=base64.b64decode(key, validate=True).decode()
                )
            except (binascii.Error, UnicodeDecodeError, ssl.SSLError) as error:
                raise WebhookCallError(
                    "could not get REST client: unable to load root certificates: "
                    "unable to parse bytes as PEM block"
                ) from error
        self._ssl_contexts[key] = context
        return context

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        return self._session


def _applies(webhook: dict[str, Any], request: AdmissionRequest) -> bool:
    try:
        return webhook_applies(webhook, request)
    except SelectorError as error:
        raise internal_error(f'webhook "{webhook.get("name", "")}": {error}') from error


def _with_object(request: AdmissionRequest, obj: dict[str, Any] | None) -> AdmissionRequest:
    return request if obj is request.obj else dataclasses.replace(request, obj=obj)


def _patched(obj: dict[str, Any], operations: list[Any]) -> dict[str, Any]:
    """Apply a webhook's JSONPatch; a patch that does not apply is a 500 (whatever the failurePolicy)."""
    try:
        patched = apply_json_patch(obj, operations)
    except PatchError as error:
        raise internal_error(error.message) from error
    if not isinstance(patched, dict):
        raise internal_error("the patch from the webhook did not produce an object")
    return patched
