"""Conformance checks 22-24 (§12) over HTTP: finalizers, garbage collection, namespace lifecycle."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.testing import KubeSim
from tests.conftest import Kubectl

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


def _widget(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, **meta},
        "spec": {"size": 1},
    }


async def test_check_22_finalizer_holds_deleted_custom_resource(
    kubesim: KubeSim, ka_client: client.ApiClient, widget_crd: dict[str, Any]
) -> None:
    # The generated clients are typed for model objects; these tests send plain dicts.
    api: Any = client.CustomObjectsApi(ka_client)
    created = await api.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _widget("w1", finalizers=["example.com/cleanup"])
    )

    deleted = await api.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")

    assert deleted["metadata"]["deletionTimestamp"]
    assert deleted["metadata"]["generation"] == created["metadata"]["generation"] + 1
    with pytest.raises(ApiException) as refused:
        await api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            {"metadata": {"finalizers": ["example.com/cleanup", "example.com/second"]}},
            _content_type="application/merge-patch+json",
        )
    assert refused.value.status == 422
    await api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w1",
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )
    with pytest.raises(ApiException) as gone:
        await api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert gone.value.status == 404


@pytest.mark.parametrize(
    ("policy", "survives"), [("Background", False), ("Orphan", True), ("Foreground", False)]
)
async def test_check_23_owner_deletion_policies(
    kubesim: KubeSim,
    ka_client: client.ApiClient,
    widget_crd: dict[str, Any],
    policy: str,
    survives: bool,
) -> None:
    custom: Any = client.CustomObjectsApi(ka_client)
    core: Any = client.CoreV1Api(ka_client)
    owner = await custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _widget("owner")
    )
    ref = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "child", "ownerReferences": [ref]}}
    )

    await custom.delete_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "owner", body={"propagationPolicy": policy}
    )
    await kubesim.settle()

    names = [cm.metadata.name for cm in (await core.list_namespaced_config_map("default")).items]
    assert ("child" in names) == survives
    if survives:
        child = await core.read_namespaced_config_map("child", "default")
        assert not child.metadata.owner_references


async def test_check_24_namespace_lifecycle_with_kubectl(
    kubesim: KubeSim, ka_client: client.ApiClient, kubectl: Kubectl
) -> None:
    core: Any = client.CoreV1Api(ka_client)
    await core.create_namespace({"metadata": {"name": "t1"}})
    await core.create_namespaced_config_map(
        "t1", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    await core.create_namespaced_config_map("t1", {"metadata": {"name": "plain"}})

    deleting = asyncio.create_task(kubectl("delete", "ns", "t1", "--timeout=10s"))
    deadline = asyncio.get_running_loop().time() + 10
    while (await core.read_namespace("t1")).status.phase != "Terminating":
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    with pytest.raises(ApiException) as refused:
        await core.create_namespaced_config_map("t1", {"metadata": {"name": "late"}})
    assert refused.value.status == 403
    assert '"reason":"NamespaceTerminating"' in str(refused.value.body)
    await kubesim.settle()
    await core.patch_namespaced_config_map("held", "t1", {"metadata": {"finalizers": None}})

    rc, _out, err = await deleting
    assert rc == 0, err
    with pytest.raises(ApiException) as gone:
        await core.read_namespace("t1")
    assert gone.value.status == 404
    rc, _out, err = await kubectl("delete", "ns", "default")
    assert rc != 0
    assert "this namespace may not be deleted" in err
