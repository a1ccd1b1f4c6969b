"""The garbage collection activities against kubesim, with the namespace selector on.

* The sweep deletes, in the managed namespaces only, the soft-owned Secrets whose owner is gone;
  an owner in a namespace out of scope still exists, so its Secrets stay.
* A finalizer deletes its gone owner's soft-owned Secrets even out of scope.
"""

from __future__ import annotations

from typing import Any

from temporalio.testing import ActivityEnvironment

from activities.garbage import sweep_orphaned_secrets
from stackflow.controllers.elasticsearch import ELASTICSEARCH, ELASTICSEARCH_CONTROLLER
from stackflow.models.engine import FinalizeInput
from stackflow.models.garbage import SweepSecretsInput
from stackflow.models.kinds import SECRETS
from stackflow.stack.labels import soft_owner_labels
from tests.integration import families
from tests.integration.controller_context import SELECTOR, Cluster, cluster

__all__ = ["cluster"]

IN_SCOPE, OUT_OF_SCOPE = "managed", "unmanaged"


def elasticsearch(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


def soft_owned(namespace: str, name: str, *, owner: tuple[str, str, str]) -> dict[str, Any]:
    kind, owner_namespace, owner_name = owner
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": soft_owner_labels(namespace=owner_namespace, name=owner_name, kind=kind),
        },
        "data": {},
    }


async def secret_names(cluster: Cluster) -> set[str]:
    listed = await cluster.raw.list(SECRETS)
    return {f"{s['metadata']['namespace']}/{s['metadata']['name']}" for s in listed["items"]}


async def test_the_sweep_deletes_only_managed_secrets_whose_owner_is_gone(
    cluster: Cluster,
) -> None:
    await cluster.create_namespace(IN_SCOPE, {"eck": "on"})
    await cluster.create_namespace(OUT_OF_SCOPE)
    for namespace, name in ((IN_SCOPE, "alive"), (OUT_OF_SCOPE, "far")):
        await cluster.raw.create(ELASTICSEARCH, elasticsearch(namespace, name))
    secrets = [
        soft_owned(IN_SCOPE, "alive-es-elastic-user", owner=("Elasticsearch", IN_SCOPE, "alive")),
        soft_owned(IN_SCOPE, "ghost-es-elastic-user", owner=("Elasticsearch", IN_SCOPE, "ghost")),
        # A copy next to its consumer, owned from a namespace out of scope: the owner exists.
        soft_owned(IN_SCOPE, "far-copy", owner=("Elasticsearch", OUT_OF_SCOPE, "far")),
        # Out of scope: not this sweep's to judge, even with its owner gone.
        soft_owned(
            OUT_OF_SCOPE, "gone-es-elastic-user", owner=("Elasticsearch", OUT_OF_SCOPE, "gone")
        ),
        # Owned by a kind the operator does not manage (another operator's, with the same
        # soft-owner labels): no ECK kind qualifies now that every one has a controller.
        soft_owned(IN_SCOPE, "policy-copy", owner=("Kafka", IN_SCOPE, "nobody")),
    ]
    for secret in secrets:
        await cluster.raw.create(SECRETS, secret, namespace=secret["metadata"]["namespace"])

    result = await ActivityEnvironment().run(
        sweep_orphaned_secrets, cluster.context(selector=SELECTOR), SweepSecretsInput()
    )

    assert result.deleted == (f"Secret {IN_SCOPE}/ghost-es-elastic-user",)
    remaining = await secret_names(cluster)
    assert f"{IN_SCOPE}/ghost-es-elastic-user" not in remaining
    assert {
        f"{IN_SCOPE}/alive-es-elastic-user",
        f"{IN_SCOPE}/far-copy",
        f"{OUT_OF_SCOPE}/gone-es-elastic-user",
        f"{IN_SCOPE}/policy-copy",
    } <= remaining


async def test_finalize_deletes_soft_owned_secrets_out_of_scope(cluster: Cluster) -> None:
    await cluster.create_namespace(OUT_OF_SCOPE)
    owner = ("Elasticsearch", OUT_OF_SCOPE, "a")
    await cluster.raw.create(
        SECRETS, soft_owned(OUT_OF_SCOPE, "a-es-elastic-user", owner=owner), namespace=OUT_OF_SCOPE
    )
    ref = ELASTICSEARCH_CONTROLLER.ref(namespace=OUT_OF_SCOPE, name="a")

    result = await ActivityEnvironment().run(
        families.finalize, cluster.context(selector=SELECTOR), FinalizeInput(ref=ref)
    )

    assert result.deleted == (f"Secret {OUT_OF_SCOPE}/a-es-elastic-user",)
    assert f"{OUT_OF_SCOPE}/a-es-elastic-user" not in await secret_names(cluster)
