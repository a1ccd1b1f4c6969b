"""The Elasticsearch keystore against kubesim: every secure settings source lands in
``<es>-es-secure-settings``, the Pods get the keystore init container, and a source's edit rolls
them."""

from __future__ import annotations

import base64
import json
from typing import Any

from activities import elasticsearch as es_activities
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.models.kinds import EVENTS, SECRETS, STATEFULSETS
from stackflow.stack.elasticsearch.keystore import (
    INIT_KEYSTORE_CONTAINER,
    SECURE_SETTINGS_VOLUME,
)
from stackflow.stack.labels import ES_CONFIG_HASH_ANNOTATION, TEMPLATE_HASH_LABEL
from stackflow.stack.policies.stack_config.secrets import SECURE_SETTINGS_ANNOTATION
from tests.integration.controller_context import OPERATOR_NAMESPACE, Cluster, cluster
from tests.integration.elasticsearch_setup import NAMESPACE, es_manifest, es_ref, run_reconcile

__all__ = ["cluster"]

SECURE = "quickstart-es-secure-settings"


def secret(
    name: str, data: dict[str, str], namespace: str = NAMESPACE, **meta: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


def policy_file_settings() -> dict[str, Any]:
    """``<es>-es-file-settings`` as the policy controller leaves it for one secure settings source."""
    sources = [{"namespace": OPERATOR_NAMESPACE, "secretName": "policy-secure"}]
    return secret(
        "quickstart-es-file-settings",
        {"settings.json": "{}"},
        labels={
            "elasticsearch.k8s.elastic.co/cluster-name": "quickstart",
            "eck.k8s.elastic.co/owner-kind": "StackConfigPolicy",
        },
        annotations={SECURE_SETTINGS_ANNOTATION: json.dumps(sources)},
    )


async def aggregated(cluster: Cluster) -> dict[str, str]:
    got = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name=SECURE)
    return {key: base64.b64decode(value).decode() for key, value in got["data"].items()}


async def statefulset(cluster: Cluster) -> dict[str, Any]:
    return await cluster.raw.get(STATEFULSETS, namespace=NAMESPACE, name="quickstart-es-default")


async def test_spec_policy_and_remote_key_sources_land_in_the_keystore_and_an_edit_rolls_the_pods(
    cluster: Cluster,
) -> None:
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    es = es_manifest(count=1)
    es["spec"]["secureSettings"] = [
        {"secretName": "s3-creds"},
        {
            "secretName": "gcs-creds",
            "entries": [{"key": "gcs.json", "path": "gcs.client.default.credentials_file"}],
        },
    ]
    await cluster.raw.create(SECRETS, secret("s3-creds", {"s3.client.default.access_key": "AKIA"}))
    await cluster.raw.create(SECRETS, secret("gcs-creds", {"gcs.json": "{}", "unused": "x"}))
    await cluster.raw.create(
        SECRETS,
        secret(
            "policy-secure",
            {"xpack.notification.slack.account.a.secure_url": "https://slack"},
            OPERATOR_NAMESPACE,
        ),
    )
    await cluster.raw.create(SECRETS, policy_file_settings())
    await cluster.raw.create(
        SECRETS,
        secret(
            "quickstart-es-remote-api-keys",
            {"cluster.remote.other.credentials": "encoded-key"},
            labels={"elasticsearch.k8s.elastic.co/cluster-name": "quickstart"},
        ),
    )
    await cluster.raw.create(ELASTICSEARCH, es)

    await run_reconcile(context, es_ref())

    assert await aggregated(cluster) == {
        "s3.client.default.access_key": "AKIA",
        "gcs.client.default.credentials_file": "{}",
        "xpack.notification.slack.account.a.secure_url": "https://slack",
        "cluster.remote.other.credentials": "encoded-key",
    }
    sts = await statefulset(cluster)
    pod_spec = sts["spec"]["template"]["spec"]
    assert [c["name"] for c in pod_spec["initContainers"]] == [
        "elastic-internal-init-filesystem",
        INIT_KEYSTORE_CONTAINER,
        "elastic-internal-suspend",
    ]
    volume = next(v for v in pod_spec["volumes"] if v["name"] == SECURE_SETTINGS_VOLUME)
    assert volume["secret"]["secretName"] == SECURE
    before_template = sts["metadata"]["labels"][TEMPLATE_HASH_LABEL]
    before_config = sts["spec"]["template"]["metadata"]["annotations"][ES_CONFIG_HASH_ANNOTATION]

    await cluster.raw.merge_patch(
        SECRETS,
        {"data": {"s3.client.default.access_key": base64.b64encode(b"AKIA2").decode()}},
        namespace=NAMESPACE,
        name="s3-creds",
    )
    await run_reconcile(context, es_ref())

    assert (await aggregated(cluster))["s3.client.default.access_key"] == "AKIA2"
    sts = await statefulset(cluster)
    assert sts["metadata"]["labels"][TEMPLATE_HASH_LABEL] != before_template
    assert (
        sts["spec"]["template"]["metadata"]["annotations"][ES_CONFIG_HASH_ANNOTATION]
        != before_config
    )


async def test_a_missing_source_is_one_warning_and_the_cluster_still_reconciled(
    cluster: Cluster,
) -> None:
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    es = es_manifest(count=1)
    es["spec"]["secureSettings"] = [{"secretName": "absent"}, {"secretName": "present"}]
    await cluster.raw.create(SECRETS, secret("present", {"a.key": "v"}))
    await cluster.raw.create(ELASTICSEARCH, es)

    result = await run_reconcile(context, es_ref())

    assert "objects written" in result.message
    assert await aggregated(cluster) == {"a.key": "v"}
    assert (await statefulset(cluster))["spec"]["replicas"] == 1
    events = (await cluster.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    warnings = [
        e for e in events if e.get("type") == "Warning" and "absent" in e.get("message", "")
    ]
    assert len(warnings) == 1
    assert warnings[0]["reason"] == es_activities.SECURE_SETTINGS_NOT_FOUND_REASON
    assert f"{NAMESPACE}/absent" in warnings[0]["message"]
    assert "quickstart" in warnings[0]["message"]


async def test_no_source_no_keystore_and_the_secret_goes_with_the_last_source(
    cluster: Cluster,
) -> None:
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    es = es_manifest(count=1)
    await cluster.raw.create(ELASTICSEARCH, es)
    await run_reconcile(context, es_ref())
    names = {
        s["metadata"]["name"]
        for s in (await cluster.raw.list(SECRETS, namespace=NAMESPACE))["items"]
    }
    assert SECURE not in names
    inits = (await statefulset(cluster))["spec"]["template"]["spec"]["initContainers"]
    assert INIT_KEYSTORE_CONTAINER not in [c["name"] for c in inits]

    await cluster.raw.create(SECRETS, secret("present", {"a.key": "v"}))
    current = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    current["spec"]["secureSettings"] = [{"secretName": "present"}]
    await cluster.raw.replace(ELASTICSEARCH, current, namespace=NAMESPACE, name="quickstart")
    await run_reconcile(context, es_ref())
    assert await aggregated(cluster) == {"a.key": "v"}

    current = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    del current["spec"]["secureSettings"]
    await cluster.raw.replace(ELASTICSEARCH, current, namespace=NAMESPACE, name="quickstart")
    await run_reconcile(context, es_ref())
    names = {
        s["metadata"]["name"]
        for s in (await cluster.raw.list(SECRETS, namespace=NAMESPACE))["items"]
    }
    assert SECURE not in names
