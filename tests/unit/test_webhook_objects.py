"""The leader's webhook routine against an in-memory client: who writes, and when."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stackflow.config import OperatorConfig
from stackflow.kube import errors
from stackflow.models.kinds import SECRETS, Kind
from stackflow.webhooks.certs import (
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    WebhookSettings,
    ensure_webhook_objects,
    keep_webhook_objects,
)
from stackflow.webhooks.runner import start_webhooks

NOW = datetime(2026, 12, 1, tzinfo=UTC)
SETTINGS = WebhookSettings("elastic-system", "hook-cert", "hook.k8s.elastic.co", 9443, False)


class MemoryClient:
    """Objects by (plural, namespace, name); every write is recorded."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        self.writes: list[tuple[str, str]] = []

    async def get(self, resource: Kind, *, namespace: str | None, name: str) -> dict[str, Any]:
        try:
            return copy.deepcopy(self.objects[(resource.plural, namespace, name)])
        except KeyError:
            raise errors.not_found(
                plural=resource.plural, group=resource.group, name=name
            ) from None

    def _store(
        self, verb: str, resource: Kind, body: Mapping[str, Any], namespace: str | None
    ) -> dict[str, Any]:
        name = str(body["metadata"]["name"])
        stored = copy.deepcopy(dict(body))
        if resource is VALIDATING_WEBHOOK_CONFIGURATIONS:
            # What the API server defaults on each webhook: never a reason to rewrite.
            for hook in stored["webhooks"]:
                hook.setdefault("namespaceSelector", {})
                hook.setdefault("objectSelector", {})
        self.objects[(resource.plural, namespace if resource.namespaced else None, name)] = stored
        self.writes.append((verb, resource.plural))
        return stored

    async def create(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        return self._store("create", resource, body, namespace)

    async def replace(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        return self._store("replace", resource, body, namespace)


async def test_first_pass_creates_then_nothing_changes_until_rotation() -> None:
    client = MemoryClient()
    first = await ensure_webhook_objects(client, SETTINGS, now=NOW)
    assert client.writes == [("create", "secrets"), ("create", "validatingwebhookconfigurations")]
    client.writes.clear()
    assert await ensure_webhook_objects(client, SETTINGS, now=NOW + timedelta(days=30)) == first
    assert client.writes == []
    rotated = await ensure_webhook_objects(client, SETTINGS, now=NOW + timedelta(days=365))
    assert rotated != first
    # A new CA: the Secret and the configuration's caBundle both change.
    assert client.writes == [
        ("replace", "secrets"),
        ("replace", "validatingwebhookconfigurations"),
    ]


async def test_an_edited_configuration_is_put_back() -> None:
    client = MemoryClient()
    await ensure_webhook_objects(client, SETTINGS, now=NOW)
    key = ("validatingwebhookconfigurations", None, "hook.k8s.elastic.co")
    client.objects[key]["webhooks"][0]["failurePolicy"] = "Fail"
    client.writes.clear()
    await ensure_webhook_objects(client, SETTINGS, now=NOW)
    assert client.writes == [("replace", "validatingwebhookconfigurations")]
    assert client.objects[key]["webhooks"][0]["failurePolicy"] == "Ignore"


@pytest.mark.parametrize(("leading", "writes"), [(False, 0), (True, 2)])
async def test_only_the_leader_writes(leading: bool, writes: int) -> None:
    client = MemoryClient()
    stop = asyncio.Event()
    task = asyncio.create_task(
        keep_webhook_objects(
            client, SETTINGS, is_leader=lambda: leading, stop=stop, clock=lambda: NOW
        )
    )
    # The in-memory client never suspends: one yield lets the task run its whole first pass
    # (it then waits on ``stop``).
    await asyncio.sleep(0)
    stop.set()
    await task
    assert len(client.writes) == writes
    assert (client.objects.get(("secrets", "elastic-system", "hook-cert")) is not None) is leading


async def test_a_disabled_webhook_starts_nothing() -> None:
    client = MemoryClient()
    async with contextlib.AsyncExitStack() as running:
        server = await start_webhooks(
            OperatorConfig(enable_webhook=False),
            client=client,
            is_managed=lambda namespace: True,
            is_leader=lambda: True,
            in_cluster=False,
            stop=asyncio.Event(),
            running=running,
        )
    assert server is None
    assert client.writes == []
    assert SECRETS.plural not in {plural for plural, *_ in client.objects}
