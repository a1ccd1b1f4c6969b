"""Wiring of the webhooks into ``stackflow run``: the server on every replica, the leader's objects.

``enable-webhook: false`` starts nothing. Otherwise every replica serves (with the webhook
Secret's certificate), and with ``manage-webhook-certs: true`` the leader keeps the Secret and the
ValidatingWebhookConfiguration.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from stackflow.config import OperatorConfig
from stackflow.kube.operator_licenses import OperatorLicenseReader
from stackflow.webhooks.certs import WebhookClient, WebhookSettings, keep_webhook_objects
from stackflow.webhooks.server import WebhookServer, follow_certificate

#: In a Pod the API server dials the Pod IP; outside a cluster only the loopback is exposed.
IN_CLUSTER_HOST = "0.0.0.0"
LOCAL_HOST = "127.0.0.1"


def webhook_settings(config: OperatorConfig, *, in_cluster: bool) -> WebhookSettings:
    """The webhook's Secret, configuration name and port, as configured."""
    return WebhookSettings(
        namespace=config.operator_namespace,
        secret_name=config.webhook_secret,
        configuration_name=config.webhook_name,
        port=config.webhook_port,
        in_cluster=in_cluster,
    )


async def start_webhooks(
    config: OperatorConfig,
    *,
    client: WebhookClient,
    is_managed: Callable[[str], bool],
    is_leader: Callable[[], bool],
    in_cluster: bool,
    stop: asyncio.Event,
    running: contextlib.AsyncExitStack,
    licenses: OperatorLicenseReader | None = None,
) -> WebhookServer | None:
    """Start the webhook server (and, when it manages them, the certificate routine).

    ``licenses`` is the operator's license reader, asked only for objects annotated to require
    an enterprise license.

    Raises ``WebhookPortInUseError`` when ``webhook-port`` is taken. Everything started is
    stopped by ``running``.
    """
    if not config.enable_webhook:
        return None
    settings = webhook_settings(config, in_cluster=in_cluster)
    server = WebhookServer(
        host=IN_CLUSTER_HOST if in_cluster else LOCAL_HOST,
        port=config.webhook_port,
        is_managed=is_managed,
        enterprise_license=None if licenses is None else licenses.licensed,
    )
    await server.start()
    running.push_async_callback(server.stop)
    tasks = [
        asyncio.create_task(
            follow_certificate(client, settings, server, stop=stop), name="webhook-certificate"
        )
    ]
    if config.manage_webhook_certs:
        tasks.append(
            asyncio.create_task(
                keep_webhook_objects(client, settings, is_leader=is_leader, stop=stop),
                name="webhook-objects",
            )
        )
    running.push_async_callback(_cancel, tasks)
    return server


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
