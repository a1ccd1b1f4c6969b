"""The validating webhooks end to end: ``kubectl apply`` meets ECK's denial, on every replica.

Two operators run with ``enable-webhook: true``; the first one leads and writes the certificate
Secret and the ValidatingWebhookConfiguration, the second serves with the same certificate. The
API server (kubesim, or the real kube-apiserver) calls the leader's port; the second replica's port
is called directly with an AdmissionReview. A third operator asked to serve on a taken port exits
with status 2 and one line naming the port and the setting.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import ssl
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from stackflow.kube import errors
from stackflow.kube.decoding import MAX_OBJECT_DEPTH
from stackflow.kube.informer import QUARANTINED_REASON
from stackflow.models.kinds import EVENTS, SECRETS
from stackflow.webhooks.certs import VALIDATING_WEBHOOK_CONFIGURATIONS
from tests.clusters import APISERVER, ClusterTarget, kubectl
from tests.e2e.harness import (
    ES,
    Operator,
    accept_trial,
    create_namespace,
    get_or_none,
    manifest,
    temporal_server,
    write_operator_config,
)
from tests.polling import eventually

MANAGED, UNMANAGED = "team-hooks", "outside-hooks"
SECRET, CONFIGURATION = "elastic-webhook-server-cert", "elastic-webhook.k8s.elastic.co"
ES_PATH = "/validate-elasticsearch-k8s-elastic-co-v1-elasticsearch"
DENIAL = (
    'Elasticsearch.elasticsearch.k8s.elastic.co "bad-es" is invalid: '
    'spec.version: Invalid value: "7.0.0": unsupported version'
)


def free_port() -> int:
    """A port nobody listens on now, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def invalid_es(namespace: str) -> dict[str, Any]:
    """An Elasticsearch ECK's webhook refuses: an unsupported version."""
    spec = {"version": "7.0.0", "nodeSets": [{"name": "default", "count": 1}]}
    return manifest("Elasticsearch", "bad-es", namespace, spec)


async def apply(kubeconfig: Path, obj: dict[str, Any], *extra: str) -> str:
    """``kubectl apply`` of ``obj``: '' when accepted, else kubectl's error.

    In a thread: kubesim runs on this event loop and must keep answering kubectl.
    """
    try:
        await asyncio.to_thread(
            kubectl, kubeconfig, "apply", "-f", "-", *extra, stdin=yaml.safe_dump(obj)
        )
    except AssertionError as error:
        return str(error)
    return ""


def admission_review(namespace: str) -> dict[str, Any]:
    """What the API server would send for creating ``invalid_es(namespace)``."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "operation": "CREATE",
            "namespace": namespace,
            "object": invalid_es(namespace),
        },
    }


TOO_DEEP = f"spec.nodeSets[0].config: nested more than {MAX_OBJECT_DEPTH} levels deep"


def deep_es_json(namespace: str, depth: int) -> str:
    """An Elasticsearch whose node set config nests ``depth`` levels, as JSON text (written out:
    json.dumps would recurse)."""
    spec = {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1, "config": "@"}]}
    text = json.dumps(manifest("Elasticsearch", "deep-es", namespace, spec))
    return text.replace('"@"', '{"a":' * depth + "1" + "}" * depth)


async def apply_text(kubeconfig: Path, text: str) -> str:
    """``kubectl apply`` of a manifest's text: '' when accepted, else kubectl's error."""
    try:
        await asyncio.to_thread(kubectl, kubeconfig, "apply", "-f", "-", stdin=text)
    except AssertionError as error:
        return str(error)
    return ""


async def post(port: int, ca: bytes, body: bytes) -> tuple[int, dict[str, Any]]:
    """POST to a replica's webhook, verifying its certificate against the webhook CA."""
    context = ssl.create_default_context(cadata=ca.decode())
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"https://127.0.0.1:{port}{ES_PATH}",
            data=body,
            headers={"Content-Type": "application/json"},
            ssl=context,
        ) as response,
    ):
        return response.status, json.loads(await response.read())


@pytest.mark.timeout(400)
async def test_webhooks_deny_in_scope_allow_out_of_scope_on_every_replica(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    # On the real API server the operator runs under the chart's RBAC with the webhook on.
    async with (
        cluster_target.open(tmp_path, chart_values={"webhook.enabled": "true"}) as cluster,
        temporal_server() as temporal,
    ):
        kube, admin = cluster.kube, cluster.admin_kubeconfig
        await accept_trial(kube, operator_namespace="elastic-system")
        await create_namespace(kube, MANAGED, in_scope=True)
        await create_namespace(kube, UNMANAGED, in_scope=False)
        ports = [free_port(), free_port()]
        operators = [
            Operator(
                config=write_operator_config(
                    tmp_path / f"operator-{index}.yaml", temporal=temporal, webhook_port=port
                ),
                kubeconfig=cluster.operator_kubeconfig,
                log=tmp_path / f"operator-{index}.log",
            )
            for index, port in enumerate(ports)
        ]
        leader, replica = operators
        async with contextlib.AsyncExitStack() as running:
            # Cluster-scoped: the session's API server must not keep calling a stopped operator.
            running.push_async_callback(_delete_configuration, kube)
            await leader.start()
            running.push_async_callback(leader.stop)

            async def configuration_written() -> bool:
                return (
                    await get_or_none(kube, SECRETS, namespace="elastic-system", name=SECRET)
                    is not None
                    and await _configuration(kube) is not None
                )

            await eventually(
                configuration_written, what="the webhook Secret and configuration", within=120
            )
            configuration = await _configuration(kube)
            assert configuration is not None
            hooks = configuration["webhooks"]
            assert len(hooks) == 16
            assert {hook["failurePolicy"] for hook in hooks} == {"Ignore"}
            assert {hook["sideEffects"] for hook in hooks} == {"None"}
            assert {hook["matchPolicy"] for hook in hooks} == {"Exact"}
            es_hook = next(
                h for h in hooks if h["name"] == "elastic-es-validation-v1.k8s.elastic.co"
            )
            assert es_hook["clientConfig"]["url"] == f"https://127.0.0.1:{ports[0]}{ES_PATH}"
            assert es_hook["rules"][0]["operations"] == ["CREATE", "UPDATE"]

            # A server-side dry run goes through the webhooks without creating anything: it
            # shows when the API server calls the leader's webhook (and the leader sees scope).
            last: list[str] = []

            async def dry_run_denied() -> bool:
                last[:] = [await apply(admin, invalid_es(MANAGED), "--dry-run=server")]
                return DENIAL in last[0]

            try:
                await eventually(dry_run_denied, what="the dry run denied", within=120)
            except AssertionError as error:
                raise AssertionError(f"{error}: {last}\n{leader.tail()}") from None

            denial = await apply(admin, invalid_es(MANAGED))
            assert DENIAL in denial
            assert 'admission webhook "elastic-es-validation-v1.k8s.elastic.co"' in denial
            assert await get_or_none(kube, ES, namespace=MANAGED, name="bad-es") is None
            assert await apply(admin, invalid_es(UNMANAGED)) == ""
            assert await get_or_none(kube, ES, namespace=UNMANAGED, name="bad-es") is not None

            # A config nested too deep (on the real API server, too deep for Python's json) is
            # denied naming the field, not answered with a 500 that failurePolicy Ignore admits.
            depth = 1500 if cluster.name == APISERVER else MAX_OBJECT_DEPTH + 20
            denial = await apply_text(admin, deep_es_json(MANAGED, depth))
            assert TOO_DEEP in denial, denial
            assert await get_or_none(kube, ES, namespace=MANAGED, name="deep-es") is None
            # Out of scope it is admitted; the operator's cluster-wide informer skips it with one
            # Warning event on it, and goes on.
            assert await apply_text(admin, deep_es_json(UNMANAGED, depth)) == ""

            async def quarantined() -> bool:
                events = (await kube.list(EVENTS, namespace=UNMANAGED))["items"]
                return any(
                    event.get("reason") == QUARANTINED_REASON
                    and event["involvedObject"].get("name") == "deep-es"
                    and TOO_DEEP in event.get("message", "")
                    for event in events
                )

            await eventually(quarantined, what="the Quarantined event on deep-es", within=120)

            secret = await kube.get(SECRETS, namespace="elastic-system", name=SECRET)
            ca = base64.b64decode(secret["data"]["ca.crt"])
            await replica.start()
            running.push_async_callback(replica.stop)

            async def replica_serves() -> bool:
                try:
                    await post(ports[1], ca, b"{}")
                except (aiohttp.ClientError, ssl.SSLError, OSError):
                    return False
                return True

            await eventually(replica_serves, what="the second replica serving", within=120)
            for port in ports:
                status, body = await post(port, ca, json.dumps(admission_review(MANAGED)).encode())
                assert status == 200
                assert body["response"]["allowed"] is False
                assert DENIAL in body["response"]["status"]["message"]
                status, body = await post(
                    port, ca, json.dumps(admission_review(UNMANAGED)).encode()
                )
                assert (status, body["response"]["allowed"]) == (200, True)
                status, body = await post(port, ca, b"{not json")
                assert status == 400
                assert body["kind"] == "AdmissionReview"
                assert body["response"]["status"]["code"] == 400

            # A replica asked to serve on a taken port says so in one line and exits 2.
            taken = Operator(
                config=write_operator_config(
                    tmp_path / "operator-taken.yaml", temporal=temporal, webhook_port=ports[0]
                ),
                kubeconfig=cluster.operator_kubeconfig,
                log=tmp_path / "operator-taken.log",
            )
            await taken.start()
            running.push_async_callback(taken.stop)
            assert taken.process is not None
            status = await asyncio.wait_for(taken.process.wait(), timeout=120)
            assert status == 2, taken.tail()
            output = taken.tail()
            assert f"webhook-port: port {ports[0]} on 127.0.0.1 is already in use" in output
            assert "Traceback" not in output


async def _configuration(kube: Any) -> dict[str, Any] | None:
    try:
        return dict(
            await kube.get(VALIDATING_WEBHOOK_CONFIGURATIONS, namespace=None, name=CONFIGURATION)
        )
    except errors.NotFound:
        return None


async def _delete_configuration(kube: Any) -> None:
    with contextlib.suppress(errors.NotFound):
        await kube.delete(VALIDATING_WEBHOOK_CONFIGURATIONS, namespace=None, name=CONFIGURATION)
