"""No secret value reaches Temporal: every workflow history of an operator run is free of them.

An Elasticsearch, a Kibana associated to it and the operator's enterprise trial run on kubesim
until reconciled (the Kibana green, the Elasticsearch's nodes up with health ``unknown``: kubesim's
Pods run no Elasticsearch to measure). Then every Secret value of every namespace (passwords, tokens, private keys,
certificates, license signatures, file-realm hashes) is searched for in every history of the
Temporal namespace (every run, the schedules' workflows too): in the history's JSON and in every
payload's decoded ``data``, raw, base64-encoded and JSON-escaped.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, ScheduleActionStartWorkflow

from stackflow.api.kinds import kind_resource
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES, SECRETS
from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import ES, Stack, create_namespace, manifest, operator_stack
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

VERSION = "8.15.0"
#: A healthy Elasticsearch and Kibana are reconciled within this many seconds on a loaded 2-core machine.
WITHIN = 240.0
#: Shorter values (``true``, a port, a role name) would match by chance, and are no secret.
SHORTEST_SECRET = 8


async def health_of(kube: ResourceClient, kind: str, namespace: str, name: str) -> str | None:
    """``status.health`` of a stack object (None before it has one)."""
    obj = await kube.get(kind_resource(kind), namespace=namespace, name=name)
    return (obj.get("status") or {}).get("health")


async def wait_settled(stack: Stack, kind: str, namespace: str, name: str) -> None:
    """Wait until the object is as far as it goes on kubesim: an application green; an
    Elasticsearch with its nodes up and health ``unknown`` (its Pods run no Elasticsearch)."""

    async def settled() -> bool:
        if kind == "Elasticsearch":
            obj = await stack.kube.get(ES, namespace=namespace, name=name)
            return nodes_up_health_unknown(obj)
        return await health_of(stack.kube, kind, namespace, name) == "green"

    try:
        await eventually(settled, within=WITHIN, what=f"{kind} {namespace}/{name} settled")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{stack.operator.tail()}") from None


async def run_settled_stack(stack: Stack, namespace: str) -> None:
    """An Elasticsearch and a Kibana associated to it, both reconciled."""
    kube = stack.kube
    await create_namespace(kube, namespace, in_scope=True)
    es_spec = {"version": VERSION, "nodeSets": [{"name": "default", "count": 1}]}
    await kube.create(ES, manifest("Elasticsearch", "es", namespace, es_spec), namespace=namespace)
    kb_spec = {"version": VERSION, "count": 1, "elasticsearchRef": {"name": "es"}}
    await kube.create(
        kind_resource("Kibana"), manifest("Kibana", "kb", namespace, kb_spec), namespace=namespace
    )
    await wait_settled(stack, "Elasticsearch", namespace, "es")
    await wait_settled(stack, "Kibana", namespace, "kb")


async def run_every_schedule(client: Client) -> list[str]:
    """Trigger every Schedule once more (now that there is a Kibana to report on) and wait until
    each triggered run has finished; the workflow ids the Schedules start runs under."""
    handles = [
        client.get_schedule_handle(entry.id) async for entry in await client.list_schedules()
    ]
    before = {handle.id: (await handle.describe()).info.num_actions for handle in handles}
    for handle in handles:
        await handle.trigger()

    async def all_ran() -> bool:
        for handle in handles:
            info = (await handle.describe()).info
            if info.num_actions <= before[handle.id] or info.running_actions:
                return False
        return True

    await eventually(all_ran, within=WITHIN, what="every Schedule ran once more")
    actions = [(await handle.describe()).schedule.action for handle in handles]
    return sorted(
        action.id for action in actions if isinstance(action, ScheduleActionStartWorkflow)
    )


async def secret_values(kube: ResourceClient) -> dict[str, bytes]:
    """Every Secret value of every namespace, decoded, keyed ``namespace/name/key``."""
    values: dict[str, bytes] = {}
    namespaces = await kube.list(NAMESPACES)
    for item in namespaces["items"]:
        namespace = item["metadata"]["name"]
        secrets = await kube.list(SECRETS, namespace=namespace)
        for secret in secrets["items"]:
            name = secret["metadata"]["name"]
            for key, encoded in (secret.get("data") or {}).items():
                value = base64.b64decode(encoded)
                if len(value) >= SHORTEST_SECRET:
                    values[f"{namespace}/{name}/{key}"] = value
    return values


def disguises(value: bytes) -> list[bytes]:
    """The forms a value may take in a history: raw, base64-encoded, escaped inside JSON."""
    forms = [value, base64.b64encode(value)]
    text = value.decode("utf-8", errors="ignore")
    if text:
        forms.append(json.dumps(text)[1:-1].encode())
    return forms


def base64_or_none(text: object) -> bytes | None:
    """`text` base64-decoded, or None when it is no base64 string."""
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def decoded_payload_data(node: Any) -> Iterator[bytes]:
    """Every payload ``data`` field of a history (as JSON), base64-decoded."""
    if isinstance(node, dict):
        for key, child in node.items():
            decoded = base64_or_none(child) if key == "data" else None
            if decoded is not None:
                yield decoded
            else:
                yield from decoded_payload_data(child)
    elif isinstance(node, list):
        for child in node:
            yield from decoded_payload_data(child)


async def every_history(client: Client) -> dict[str, bytes]:
    """Each run's complete history (JSON, then every decoded payload), keyed ``id@run``."""
    histories: dict[str, bytes] = {}
    async for execution in client.list_workflows():
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        as_json = history.to_json()
        decoded = b"\n".join(decoded_payload_data(json.loads(as_json)))
        histories[f"{execution.id}@{execution.run_id}"] = as_json.encode() + b"\n" + decoded
    return histories


def leaks(secrets: dict[str, bytes], histories: dict[str, bytes]) -> list[str]:
    """``secret in history`` for every secret value some history holds, in any disguise."""
    found = []
    for secret, value in secrets.items():
        forms = disguises(value)
        for run, history in histories.items():
            if any(form in history for form in forms):
                found.append(f"{secret} in {run}")
    return found


def test_leaks_finds_each_disguise_and_nothing_else() -> None:
    """The scanner itself: a value is found raw, base64-encoded, JSON-escaped and inside a
    payload, and an absent one is not."""
    value = b"-----BEGIN KEY-----\nsecret-material\n"
    payload = base64.b64encode(json.dumps({"pem": value.decode()}).encode()).decode()
    cases = {
        "raw": value,
        "base64": base64.b64encode(value),
        "json": json.dumps(value.decode()).encode(),
        "payload": b"\n".join(decoded_payload_data({"payloads": [{"data": payload}]})),
        "absent": b"-----BEGIN KEY-----\nother\n",
    }
    found = leaks({"s": value}, cases)
    assert found == [f"s in {case}" for case in ("raw", "base64", "json", "payload")]


@pytest.mark.asyncio
async def test_no_secret_value_in_any_workflow_history(tmp_path: Path) -> None:
    async with operator_stack(tmp_path, ClusterTarget(KUBESIM)) as stack:
        await run_settled_stack(stack, "secrets")
        schedules = await run_every_schedule(stack.temporal.client)
        secrets = await secret_values(stack.kube)
        histories = await every_history(stack.temporal.client)
    # The scan must have something to scan: the ES passwords, the Kibana user, the trial license.
    assert len(secrets) > 10, sorted(secrets)
    assert any(run.startswith("elasticsearch/secrets/es@") for run in histories), sorted(histories)
    assert len(schedules) == 3, schedules
    for workflow_id in schedules:
        assert any(run.startswith(workflow_id) for run in histories), (
            workflow_id,
            sorted(histories),
        )
    print(f"scanned {sorted(histories)} for {len(secrets)} secret values")
    assert leaks(secrets, histories) == []
