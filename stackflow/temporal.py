"""Temporal wiring shared by the operator, the tests and ``stackflow replay``.

The pydantic data converter (every engine model crosses the wire as JSON; encrypted with the
optional payload key), the client built from the
operator configuration, search-attribute registration, and signal-with-start of a resource's
workflow (by its registered type name: this adapter does not import the workflows).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

import structlog
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client, TLSConfig, WorkflowHandle
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode

from stackflow.codec import AesGcmCodec, read_keyring
from stackflow.config import OperatorConfig
from stackflow.models.engine import (
    RESOURCE_WORKFLOW,
    SA_CONTROLLER,
    SA_KIND,
    SA_NAMESPACE,
    SA_PHASE,
    SEARCH_ATTRIBUTES,
    TASK_QUEUE,
    Phase,
    ResourceRef,
    ResourceWorkflowInput,
    ResourceWorkflowResult,
    Trigger,
    signal_of,
)

DATA_CONVERTER: DataConverter = pydantic_data_converter

_log = structlog.get_logger("stackflow.temporal")


def data_converter(config: OperatorConfig) -> DataConverter:
    """The data converter every client of this configuration uses: ``DATA_CONVERTER``, its
    payloads encrypted (``stackflow.codec``) with the keyring of
    ``temporal-payload-encryption-key`` when it is set."""
    if config.temporal_payload_encryption_key is None:
        return DATA_CONVERTER
    codec = AesGcmCodec.of_keyring(
        read_keyring(config.temporal_payload_encryption_key),
        allow_plaintext=config.temporal_payload_encryption_allow_plaintext,
    )
    return dataclasses.replace(DATA_CONVERTER, payload_codec=codec)


def tls_config(config: OperatorConfig) -> TLSConfig | bool:
    """TLS settings from the config: a TLSConfig when any file is set, else True with an API key."""
    files = (config.temporal_tls_cert, config.temporal_tls_key, config.temporal_tls_ca)
    if any(path is not None for path in files):
        return TLSConfig(
            client_cert=config.temporal_tls_cert.read_bytes() if config.temporal_tls_cert else None,
            client_private_key=(
                config.temporal_tls_key.read_bytes() if config.temporal_tls_key else None
            ),
            server_root_ca_cert=config.temporal_tls_ca.read_bytes()
            if config.temporal_tls_ca
            else None,
        )
    # An API key implies TLS (Temporal Cloud); plain localhost needs none.
    return config.temporal_api_key is not None


#: rustls' names for the certificate problems a misconfigured TLS setting causes, in words.
_TLS_PROBLEMS = {
    "UnknownIssuer": 'the server\'s certificate is not signed by the "temporal-tls-ca" CA',
    "NotValidForName": "the server's certificate does not name the address",
    "Expired": "the server's certificate has expired",
}


def _tls_problem(error: RuntimeError) -> str:
    """The SDK's connect error, led by a plain statement of the certificate problem if known."""
    text = str(error)
    for name, words in _TLS_PROBLEMS.items():
        if name in text:
            return f"{words} ({text})"
    return text


async def connect_client(config: OperatorConfig) -> Client:
    """Connect to the configured Temporal server with the configuration's data converter.

    Over TLS, a failed connection is a RuntimeError naming the address and the TLS problem
    (the SDK's own message names neither the address nor, in words, the certificate problem).
    """
    api_key = config.temporal_api_key.get_secret_value() if config.temporal_api_key else None
    tls = tls_config(config)
    try:
        return await Client.connect(
            config.temporal_address,
            namespace=config.temporal_namespace,
            data_converter=data_converter(config),
            tls=tls,
            api_key=api_key,
        )
    except RuntimeError as error:
        if tls is False:
            raise
        # Still a RuntimeError: the operator's wait loop and the CLIs catch that type.
        raise RuntimeError(
            f"cannot connect to Temporal at {config.temporal_address} over TLS: "
            f"{_tls_problem(error)}"
        ) from error


async def existing_search_attributes(client: Client) -> set[str] | None:
    """Names of the custom search attributes the namespace has; None when the server cannot say."""
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as error:
        if error.status is RPCStatusCode.UNIMPLEMENTED:
            return None
        raise
    return set(response.custom_attributes)


async def register_search_attributes(
    client: Client, keys: Sequence[SearchAttributeKey[str]] = SEARCH_ATTRIBUTES
) -> list[str]:
    """Register the missing custom search attributes; returns the names it added.

    Works on a running server and on the time-skipping test server (which starts without any
    custom attribute and cannot list them: there every key is added).
    """
    existing = await existing_search_attributes(client)
    missing = [key for key in keys if existing is None or key.name not in existing]
    if not missing:
        return []
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=client.namespace,
                search_attributes={
                    key.name: IndexedValueType.ValueType(key.indexed_value_type) for key in missing
                },
            )
        )
    except RPCError as error:
        # Another replica registered them between our list and add.
        if error.status is not RPCStatusCode.ALREADY_EXISTS:
            raise
    return [key.name for key in missing]


def resource_search_attributes(ref: ResourceRef) -> TypedSearchAttributes:
    """The search attributes a new resource workflow starts with (phase ``Reconciling``)."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(SA_CONTROLLER, ref.controller),
            SearchAttributePair(SA_KIND, ref.kind),
            SearchAttributePair(SA_NAMESPACE, ref.namespace),
            SearchAttributePair(SA_PHASE, Phase.RECONCILING.value),
        ]
    )


def resource_static_details(ref: ResourceRef) -> str:
    """The workflow's static details in the Temporal UI (Markdown): kind, object, controller."""
    return "\n".join(
        [
            f"* kind: {ref.kind} ({ref.api_version})",
            f"* object: {ref.namespace}/{ref.name}",
            f"* controller: {ref.controller}",
        ]
    )


async def signal_with_start(
    client: Client,
    *,
    ref: ResourceRef,
    trigger: Trigger,
    task_queue: str = TASK_QUEUE,
    more: Sequence[Trigger] = (),
    local_step: bool = True,
) -> WorkflowHandle[Any, ResourceWorkflowResult]:
    """Deliver `trigger` (and `more`, in the same signal) to the resource's workflow, starting a
    new run if none is running (whose reconcile step is local as `local_step` says)."""
    signal, argument = signal_of((trigger, *more))
    return await client.start_workflow(
        RESOURCE_WORKFLOW,
        ResourceWorkflowInput(ref=ref, local_step=local_step),
        result_type=ResourceWorkflowResult,
        id=ref.workflow_id,
        task_queue=task_queue,
        start_signal=signal,
        start_signal_args=[argument],
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        static_summary=ref.summary,
        static_details=resource_static_details(ref),
        search_attributes=resource_search_attributes(ref),
    )


#: How often the operator asks the Temporal frontend whether it serves, and how long it waits.
REACHABILITY_INTERVAL_SECONDS = 5.0
REACHABILITY_TIMEOUT_SECONDS = 3.0


class TemporalReachability:
    """Whether the Temporal frontend answered its last health check: a readiness check
    (``stackflow.observability.ReadinessCheck``) that costs one gRPC health call per interval,
    never one per probe. The worker itself keeps retrying while Temporal is down; this only
    makes it visible in ``/readyz``."""

    def __init__(
        self,
        check_health: Callable[[], Awaitable[bool]],
        *,
        address: str,
        interval_seconds: float = REACHABILITY_INTERVAL_SECONDS,
    ) -> None:
        """Ask ``check_health()`` (True: serving) every ``interval_seconds``."""
        self._check_health = check_health
        self.address = address
        self.interval_seconds = interval_seconds
        self._reason: str | None = None

    @classmethod
    def of(cls, client: Client, *, address: str) -> TemporalReachability:
        """The reachability of ``client``'s frontend (the SDK's gRPC health check)."""

        async def check_health() -> bool:
            timeout = timedelta(seconds=REACHABILITY_TIMEOUT_SECONDS)
            return await client.service_client.check_health(timeout=timeout)

        return cls(check_health, address=address)

    def not_ready_reason(self) -> str | None:
        """Why Temporal counts as unreachable, None when its last check passed (the readiness
        check)."""
        return self._reason

    async def check_once(self) -> None:
        """Ask the frontend once and remember the verdict (logged when it changes)."""
        try:
            serving = await self._check_health()
            reason = None if serving else f"temporal: {self.address} is not serving"
        except Exception as error:
            reason = f"temporal: unreachable at {self.address} ({_first_line(error)})"
        if reason != self._reason:
            if reason is None:
                _log.info("temporal.reachable", address=self.address)
            else:
                _log.warning("temporal.unreachable", address=self.address, reason=reason)
        self._reason = reason

    async def run(self, stop: asyncio.Event) -> None:
        """Check every interval until ``stop`` is set."""
        while not stop.is_set():
            await self.check_once()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval_seconds)


def _first_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text.splitlines()[0]
