"""StackConfigPolicy end to end: a Temporal dev server and ``stackflow run`` (dynamic scope) on
kubesim and on the real API server, driven only through the Kubernetes API.

* one policy of the operator namespace and two clusters, one in scope and one out: the policy
  counts one; a flip into scope makes it two; both flipped out make it none, its details
  cleared, and the clusters' StatefulSets and Pods untouched;
* two policies on one cluster whose namespace starts out of scope, weight 100 there and weight 10
  in the operator namespace: after the flip both report the cluster, the merged file-settings
  Secret holds the weight-100 value, and so does the node set's ``elasticsearch.yml`` (the
  policies' ``elasticsearch.config``, read by the Elasticsearch controller);
* a policy's secure settings Secret lands in the cluster's keystore Secret
  (``<es>-es-secure-settings``), next to the cluster's own; an edit of the policy's Secret reaches
  it too;
* a policy's ``secretMounts`` Secret is copied into the cluster's namespace
  (``<es>-es-scp-<hash>``), the StatefulSet mounts the copy, and an edit of the source reaches it;
* a cluster relabelled into a policy's ``resourceSelector`` is taken on, and the policy's history
  shows it was woken by that cluster's change (not by its periodic recheck); relabelled out, it
  is let go the same way;
* no license: a Warning ``ReconciliationError`` event on the policy and nothing applied; a
  license (the enterprise trial) arrives and the policy is applied.

Outside a Pod the operator dials no cluster, so the clusters stay ``ApplyingChanges``: the tests
read counts and Secrets, never readiness.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stackflow.api.kinds import kind_resource
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import EVENTS, PODS, SECRETS, STATEFULSETS
from stackflow.stack.policies.stack_config.secrets import es_secret_mount_copy_name
from tests.clusters import ClusterTarget
from tests.e2e.harness import (
    ES,
    Stack,
    accept_trial,
    create_namespace,
    get_or_none,
    operator_stack,
    set_in_scope,
    workflow_triggers,
)
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

OPERATOR_NAMESPACE = "elastic-system"
POLICY = kind_resource("StackConfigPolicy")
RECOVERY_SETTING = "indices.recovery.max_bytes_per_sec"
#: A node setting the policies also put in ``elasticsearch.yml`` (their ``elasticsearch.config``).
NODE_SETTING = "node.attr.policy_value"
#: Long enough for a loaded 2-core machine to start an operator and reconcile.
WITHIN = 120.0


@pytest.fixture
async def stack(cluster_target: ClusterTarget, tmp_path: Path) -> AsyncIterator[Stack]:
    """The cluster, a Temporal dev server and ``stackflow run`` (dynamic scope, trial license)."""
    async with operator_stack(tmp_path, cluster_target) as running:
        yield running


def elasticsearch(namespace: str, name: str = "quickstart") -> dict[str, Any]:
    """A one-node Elasticsearch the policies select (label ``policy: on``)."""
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": namespace, "labels": {"policy": "on"}},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


def policy(namespace: str, name: str, *, weight: int, value: str) -> dict[str, Any]:
    """A policy selecting ``policy: on`` and setting one cluster setting to ``value``."""
    return {
        "apiVersion": POLICY.api_version,
        "kind": "StackConfigPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "weight": weight,
            "resourceSelector": {"matchLabels": {"policy": "on"}},
            "elasticsearch": {
                "clusterSettings": {RECOVERY_SETTING: value},
                "config": {NODE_SETTING: value},
            },
        },
    }


async def policy_status(kube: ResourceClient, namespace: str, name: str) -> dict[str, Any]:
    """The policy's status ({} before any)."""
    obj = await kube.get(POLICY, namespace=namespace, name=name)
    return dict(obj.get("status") or {})


async def targeted(kube: ResourceClient, namespace: str, name: str) -> list[str]:
    """The ``namespace/name`` of every cluster the policy reports."""
    status = await policy_status(kube, namespace, name)
    details = (status.get("details") or {}).get("elasticsearch") or {}
    return sorted(details)


async def cluster_setting(kube: ResourceClient, namespace: str) -> str | None:
    """The recovery setting in ``quickstart``'s file-settings Secret (None: no such Secret).

    One policy's settings are written as given (dotted); several policies' are merged setting by
    setting, in ECK's canonical (nested) form: either spelling is read.
    """
    secret = await get_or_none(
        kube, SECRETS, namespace=namespace, name="quickstart-es-file-settings"
    )
    if secret is None:
        return None
    document = json.loads(base64.b64decode(secret["data"]["settings.json"]))
    settings = document["state"]["cluster_settings"]
    value = settings.get(RECOVERY_SETTING)
    if value is None:
        nested: Any = settings
        for part in RECOVERY_SETTING.split("."):
            nested = nested.get(part) if isinstance(nested, dict) else None
        value = nested
    return None if value is None else str(value)


async def node_setting(kube: ResourceClient, namespace: str) -> str | None:
    """``NODE_SETTING`` in the ``elasticsearch.yml`` of ``quickstart``'s node set (None: unset)."""
    secret = await get_or_none(
        kube, SECRETS, namespace=namespace, name="quickstart-es-default-es-config"
    )
    if secret is None:
        return None
    rendered = yaml.safe_load(base64.b64decode(secret["data"]["elasticsearch.yml"]))
    value = rendered.get(NODE_SETTING)
    return None if value is None else str(value)


async def workloads(kube: ResourceClient, namespace: str) -> dict[str, tuple[str, int]]:
    """Every StatefulSet and Pod of the namespace: uid and generation (a re-creation or a new
    spec changes them)."""
    found: dict[str, tuple[str, int]] = {}
    for resource in (STATEFULSETS, PODS):
        for item in (await kube.list(resource, namespace=namespace))["items"]:
            meta = item["metadata"]
            found[f"{resource.kind}/{meta['name']}"] = (meta["uid"], int(meta.get("generation", 0)))
    return found


async def test_a_policy_follows_namespace_flips_without_touching_the_clusters(
    stack: Stack,
) -> None:
    kube = stack.kube
    for namespace, in_scope in (("scp-in", True), ("scp-later", False)):
        await create_namespace(kube, namespace, in_scope=in_scope)
        await kube.create(ES, elasticsearch(namespace), namespace=namespace)

    async def statefulset_made() -> bool:
        return bool((await kube.list(STATEFULSETS, namespace="scp-in"))["items"])

    await eventually(statefulset_made, within=WITHIN, what="the in-scope cluster's StatefulSet")
    await kube.create(
        POLICY,
        policy(OPERATOR_NAMESPACE, "global", weight=10, value="50mb"),
        namespace=OPERATOR_NAMESPACE,
    )

    async def counts(expected: list[str]) -> bool:
        status = await policy_status(kube, OPERATOR_NAMESPACE, "global")
        return (
            status.get("resources") == len(expected)
            and await targeted(kube, OPERATOR_NAMESPACE, "global") == expected
        )

    await eventually(
        lambda: counts(["scp-in/quickstart"]), within=WITHIN, what="the policy counts one cluster"
    )

    async def applied_in() -> bool:
        return await cluster_setting(kube, "scp-in") == "50mb"

    await eventually(applied_in, within=WITHIN, what="the policy applied in scp-in")
    # Out of scope: the operator wrote nothing there.
    assert await cluster_setting(kube, "scp-later") is None

    await set_in_scope(kube, "scp-later", True)
    await eventually(
        lambda: counts(["scp-in/quickstart", "scp-later/quickstart"]),
        within=WITHIN,
        what="the policy counts the flipped-in cluster too",
    )

    async def applied_in_later() -> bool:
        return await cluster_setting(kube, "scp-later") == "50mb"

    await eventually(applied_in_later, within=WITHIN, what="the policy applied in scp-later")

    async def both_made() -> bool:
        for namespace in ("scp-in", "scp-later"):
            if not (await kube.list(STATEFULSETS, namespace=namespace))["items"]:
                return False
        return True

    await eventually(both_made, within=WITHIN, what="both clusters' StatefulSets")
    before = {namespace: await workloads(kube, namespace) for namespace in ("scp-in", "scp-later")}

    for namespace in ("scp-in", "scp-later"):
        await set_in_scope(kube, namespace, False)

    async def none_left() -> bool:
        status = await policy_status(kube, OPERATOR_NAMESPACE, "global")
        return status.get("resources") == 0 and not status.get("details")

    await eventually(none_left, within=WITHIN, what="the policy counts no cluster, no details")
    status = await policy_status(kube, OPERATOR_NAMESPACE, "global")
    assert status["readyCount"] == "0/0"
    for namespace, seen in before.items():
        assert await workloads(kube, namespace) == seen, f"{namespace}'s workloads changed"


async def test_a_cluster_relabelled_into_a_policy_wakes_the_policy(stack: Stack) -> None:
    kube = stack.kube
    namespace = "scp-relabel"
    await create_namespace(kube, namespace, in_scope=True)
    unlabelled = elasticsearch(namespace)
    unlabelled["metadata"]["labels"] = {}
    await kube.create(ES, unlabelled, namespace=namespace)
    await kube.create(
        POLICY,
        policy(OPERATOR_NAMESPACE, "global", weight=10, value="70mb"),
        namespace=OPERATOR_NAMESPACE,
    )

    async def reconciled_with_none() -> bool:
        status = await policy_status(kube, OPERATOR_NAMESPACE, "global")
        return status.get("resources") == 0 and status.get("readyCount") == "0/0"

    await eventually(reconciled_with_none, within=WITHIN, what="the policy selecting no cluster")
    workflow_id = f"stackconfigpolicy/{OPERATOR_NAMESPACE}/global"
    cluster = f"Elasticsearch {namespace}/quickstart"

    async def woken_by_the_cluster(expected: list[str]) -> bool:
        if await targeted(kube, OPERATOR_NAMESPACE, "global") != expected:
            return False
        triggers = await workflow_triggers(stack.temporal.client, workflow_id)
        # The policy did not name the cluster before: only a selection watch can send this.
        return any(cluster in trigger.detail for trigger in triggers)

    await kube.merge_patch(
        ES, {"metadata": {"labels": {"policy": "on"}}}, namespace=namespace, name="quickstart"
    )
    await eventually(
        lambda: woken_by_the_cluster([f"{namespace}/quickstart"]),
        within=WITHIN,
        what="the policy woken by the relabelled cluster, and counting it",
    )

    async def applied() -> bool:
        return await cluster_setting(kube, namespace) == "70mb"

    await eventually(applied, within=WITHIN, what="the policy applied to the relabelled cluster")
    await kube.merge_patch(
        ES, {"metadata": {"labels": {"policy": None}}}, namespace=namespace, name="quickstart"
    )
    await eventually(
        reconciled_with_none, within=WITHIN, what="the policy letting the relabelled cluster go"
    )


async def test_two_policies_merge_by_weight_after_a_flip(stack: Stack) -> None:
    kube = stack.kube
    await create_namespace(kube, "scp-team", in_scope=False)
    await kube.create(ES, elasticsearch("scp-team"), namespace="scp-team")
    await kube.create(
        POLICY, policy("scp-team", "team", weight=100, value="100mb"), namespace="scp-team"
    )
    await kube.create(
        POLICY,
        policy(OPERATOR_NAMESPACE, "global", weight=10, value="10mb"),
        namespace=OPERATOR_NAMESPACE,
    )

    async def global_counts_none() -> bool:
        return (await policy_status(kube, OPERATOR_NAMESPACE, "global")).get("resources") == 0

    await eventually(global_counts_none, within=WITHIN, what="the global policy counts nothing")
    assert await policy_status(kube, "scp-team", "team") == {}

    await set_in_scope(kube, "scp-team", True)

    async def both_report() -> bool:
        for namespace, name in ((OPERATOR_NAMESPACE, "global"), ("scp-team", "team")):
            if await targeted(kube, namespace, name) != ["scp-team/quickstart"]:
                return False
        return True

    await eventually(both_report, within=WITHIN, what="both policies report the cluster")

    async def merged() -> bool:
        return await cluster_setting(kube, "scp-team") == "100mb"

    await eventually(merged, within=WITHIN, what="the weight-100 value in the file settings")
    secret = await kube.get(SECRETS, namespace="scp-team", name="quickstart-es-file-settings")
    owners = json.loads(secret["metadata"]["annotations"]["eck.k8s.elastic.co/owner-refs"])
    assert owners == ["elastic-system/global", "scp-team/team"]

    # The Elasticsearch controller, woken by the policy-config Secret, renders the merged
    # elasticsearch.config into the node set's elasticsearch.yml.
    async def in_the_node_config() -> bool:
        return await node_setting(kube, "scp-team") == "100mb"

    await eventually(
        in_the_node_config, within=WITHIN, what="the weight-100 value in elasticsearch.yml"
    )


def opaque(namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    """An Opaque Secret of ``data``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


async def keystore(kube: ResourceClient, namespace: str) -> dict[str, str]:
    """The decoded ``quickstart-es-secure-settings`` ({} when it does not exist)."""
    secret = await get_or_none(
        kube, SECRETS, namespace=namespace, name="quickstart-es-secure-settings"
    )
    data = (secret or {}).get("data") or {}
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


async def test_policy_secure_settings_reach_the_keystore_and_follow_an_edit(stack: Stack) -> None:
    kube = stack.kube
    await create_namespace(kube, "scp-keys", in_scope=True)
    await kube.create(SECRETS, opaque("scp-keys", "own", {"own.key": "mine"}), namespace="scp-keys")
    await kube.create(
        SECRETS,
        opaque(OPERATOR_NAMESPACE, "policy-keys", {"slack.url": "https://one"}),
        namespace=OPERATOR_NAMESPACE,
    )
    es = elasticsearch("scp-keys")
    es["spec"]["secureSettings"] = [{"secretName": "own"}]
    await kube.create(ES, es, namespace="scp-keys")
    keyed = policy(OPERATOR_NAMESPACE, "keyed", weight=1, value="1mb")
    keyed["spec"]["elasticsearch"]["secureSettings"] = [{"secretName": "policy-keys"}]
    await kube.create(POLICY, keyed, namespace=OPERATOR_NAMESPACE)

    async def both_sources() -> bool:
        return await keystore(kube, "scp-keys") == {"own.key": "mine", "slack.url": "https://one"}

    await eventually(both_sources, within=WITHIN, what="the cluster's and the policy's keys")

    await kube.replace(
        SECRETS,
        opaque(OPERATOR_NAMESPACE, "policy-keys", {"slack.url": "https://two"}),
        namespace=OPERATOR_NAMESPACE,
        name="policy-keys",
    )

    async def edited() -> bool:
        return (await keystore(kube, "scp-keys")).get("slack.url") == "https://two"

    await eventually(edited, within=WITHIN, what="the policy Secret's edit in the keystore")


async def test_no_license_warns_and_applies_nothing_until_a_license_arrives(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    async with operator_stack(tmp_path, cluster_target, trial=False) as stack:
        kube = stack.kube
        await create_namespace(kube, "scp-gated", in_scope=True)
        await kube.create(ES, elasticsearch("scp-gated"), namespace="scp-gated")
        await kube.create(
            POLICY,
            policy(OPERATOR_NAMESPACE, "gated", weight=0, value="5mb"),
            namespace=OPERATOR_NAMESPACE,
        )

        async def warned() -> bool:
            listed = await kube.list(EVENTS, namespace=OPERATOR_NAMESPACE)
            return any(
                event.get("type") == "Warning"
                and event.get("reason") == "ReconciliationError"
                and event["involvedObject"].get("kind") == "StackConfigPolicy"
                and event["involvedObject"].get("name") == "gated"
                and event.get("message")
                == "StackConfigPolicy is an enterprise feature. Enterprise features are disabled"
                for event in listed["items"]
            )

        await eventually(warned, within=WITHIN, what="a ReconciliationError event on the policy")
        # Only the engine's waiting-for-a-license condition: no count, no details.
        waiting = await policy_status(kube, OPERATOR_NAMESPACE, "gated")
        assert "resources" not in waiting
        assert "details" not in waiting
        assert await cluster_setting(kube, "scp-gated") is None

        await accept_trial(kube, operator_namespace=OPERATOR_NAMESPACE)

        async def applied() -> bool:
            # The Secret is written before the status: wait for both.
            status = await policy_status(kube, OPERATOR_NAMESPACE, "gated")
            return (
                await cluster_setting(kube, "scp-gated") == "5mb" and status.get("resources") == 1
            )

        await eventually(
            applied, within=WITHIN, what="the policy applied and counted once licensed"
        )


async def mount_copy(kube: ResourceClient, namespace: str) -> dict[str, str]:
    """The decoded policy-made copy of the ``gcs-creds`` mount ({} when it does not exist)."""
    name = es_secret_mount_copy_name("quickstart", "gcs-creds")
    secret = await get_or_none(kube, SECRETS, namespace=namespace, name=name)
    data = (secret or {}).get("data") or {}
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


async def test_policy_secret_mounts_are_copied_mounted_and_follow_an_edit(stack: Stack) -> None:
    kube = stack.kube
    await create_namespace(kube, "scp-mounts", in_scope=True)
    await kube.create(
        SECRETS,
        opaque(OPERATOR_NAMESPACE, "gcs-creds", {"key.json": "one"}),
        namespace=OPERATOR_NAMESPACE,
    )
    await kube.create(ES, elasticsearch("scp-mounts"), namespace="scp-mounts")
    mounting = policy(OPERATOR_NAMESPACE, "mounting", weight=1, value="1mb")
    mounting["spec"]["elasticsearch"]["secretMounts"] = [
        {"secretName": "gcs-creds", "mountPath": "/usr/share/gcs"}
    ]
    await kube.create(POLICY, mounting, namespace=OPERATOR_NAMESPACE)

    async def copied() -> bool:
        return await mount_copy(kube, "scp-mounts") == {"key.json": "one"}

    await eventually(copied, within=WITHIN, what="the mounted Secret copied to the cluster")

    async def mounted() -> bool:
        sts = await get_or_none(
            kube, STATEFULSETS, namespace="scp-mounts", name="quickstart-es-default"
        )
        pod = ((sts or {}).get("spec") or {}).get("template", {}).get("spec") or {}
        container = next(
            (c for c in pod.get("containers") or [] if c["name"] == "elasticsearch"), {}
        )
        names = {
            m["name"]
            for m in container.get("volumeMounts") or []
            if m["mountPath"] == "/usr/share/gcs"
        }
        return any(
            v["name"] in names
            and (v.get("secret") or {}).get("secretName")
            == es_secret_mount_copy_name("quickstart", "gcs-creds")
            for v in pod.get("volumes") or []
        )

    await eventually(mounted, within=WITHIN, what="the StatefulSet mounting the copy")

    await kube.replace(
        SECRETS,
        opaque(OPERATOR_NAMESPACE, "gcs-creds", {"key.json": "two"}),
        namespace=OPERATOR_NAMESPACE,
        name="gcs-creds",
    )

    async def edited() -> bool:
        return await mount_copy(kube, "scp-mounts") == {"key.json": "two"}

    await eventually(edited, within=WITHIN, what="the source Secret's edit in the copy")
