"""``apply_object`` with the object as the reconcile listed it, against kubesim: a listing that is
stale or missed the object changes nothing the user sees, it only saves reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from activities.apply import ApplyOutcome, apply_object, apply_objects
from stackflow.kube import errors
from stackflow.kube.informer import Backoff, NamespaceInformer
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedClient
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES
from stackflow.scope import NamespaceMatcher, ScopeConfig

NAMESPACE = "team-a"


def configmap(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"k": value},
    }


@pytest.fixture
async def scoped(ka_client: client.ApiClient) -> AsyncIterator[ScopedClient]:
    raw = ResourceClient(ka_client)
    await raw.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    namespaces = NamespaceInformer(raw, backoff=Backoff(initial=0.05, maximum=0.5))
    namespaces.start()
    async with asyncio.timeout(10):
        await namespaces.wait_synced()
    yield ScopedClient(
        raw, NamespaceMatcher(ScopeConfig(operator_namespace="elastic-system"), source=namespaces)
    )
    await namespaces.stop()


async def test_a_stale_listing_is_written_again_on_a_fresh_read(scoped: ScopedClient) -> None:
    listed = await scoped.create(CONFIGMAPS, configmap("x", "old"), namespace=NAMESPACE)
    # Someone writes after the listing: the listed resourceVersion is stale.
    await scoped.merge_patch(
        CONFIGMAPS, {"metadata": {"labels": {"by": "user"}}}, namespace=NAMESPACE, name="x"
    )

    applied = await apply_object(scoped, CONFIGMAPS, configmap("x", "new"), current=listed)

    stored = await scoped.get(CONFIGMAPS, namespace=NAMESPACE, name="x")
    assert applied.outcome is ApplyOutcome.UPDATED
    assert stored["data"] == {"k": "new"}
    assert stored["metadata"]["labels"] == {"by": "user"}


async def test_an_object_the_listing_missed_is_updated_not_refused(scoped: ScopedClient) -> None:
    await scoped.create(CONFIGMAPS, configmap("x", "old"), namespace=NAMESPACE)

    applied = await apply_object(scoped, CONFIGMAPS, configmap("x", "new"), current=None)

    assert applied.outcome is ApplyOutcome.UPDATED
    assert (await scoped.get(CONFIGMAPS, namespace=NAMESPACE, name="x"))["data"] == {"k": "new"}


async def test_an_equal_listed_object_is_not_written(scoped: ScopedClient) -> None:
    listed = await scoped.create(CONFIGMAPS, configmap("x", "same"), namespace=NAMESPACE)

    applied = await apply_object(scoped, CONFIGMAPS, configmap("x", "same"), current=listed)

    stored = await scoped.get(CONFIGMAPS, namespace=NAMESPACE, name="x")
    assert applied.outcome is ApplyOutcome.UNCHANGED
    assert stored["metadata"]["resourceVersion"] == listed["metadata"]["resourceVersion"]


async def test_applying_many_tries_every_one_then_raises_the_first_failure(
    scoped: ScopedClient,
) -> None:
    bad = configmap("Not_A_Name", "v")

    with pytest.raises(errors.Invalid):
        await apply_objects(
            scoped,
            [(CONFIGMAPS, bad, None), (CONFIGMAPS, configmap("good", "v"), None)],
        )

    assert (await scoped.get(CONFIGMAPS, namespace=NAMESPACE, name="good"))["data"] == {"k": "v"}
