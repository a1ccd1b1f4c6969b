"""Conformance checks 2-16 of the reference (§12), through kubernetes_asyncio and raw HTTP."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.testing import KubeSim
from tests.conftest import core_api, custom_api

WIDGETS = ("example.com", "v1", "default", "widgets")


def status_of(exc: ApiException) -> dict[str, Any]:
    """The Status body of an ApiException."""
    body: dict[str, Any] = json.loads(exc.body or b"{}")
    return body


def widget(name: str, **extra: Any) -> dict[str, Any]:
    """A Widget body."""
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, **extra}


async def raw(
    sim: KubeSim,
    request_line: str,
    *,
    body: Any = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    """Send one raw ``"METHOD /path"`` request; answers (status, decoded JSON body)."""
    method, _, path = request_line.partition(" ")
    data = json.dumps(body).encode() if body is not None else None
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, sim.url + path, data=data, headers={"Content-Type": content_type}
        ) as response,
    ):
        return response.status, json.loads(await response.text())


async def test_list_namespaces_and_version(ka_client: client.ApiClient) -> None:
    """Check 2: four namespaces with RVs ≤ the list RV; /version/ answers v1.x."""
    namespaces = await client.CoreV1Api(ka_client).list_namespace()
    names = sorted(ns.metadata.name for ns in namespaces.items)
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    list_rv = int(namespaces.metadata.resource_version)
    assert all(int(ns.metadata.resource_version) <= list_rv for ns in namespaces.items)
    version = await client.VersionApi(ka_client).get_code()
    assert version.git_version.startswith("v1.")


async def test_create_twice_is_already_exists(ka_client: client.ApiClient) -> None:
    """Check 3."""
    core = core_api(ka_client)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "AlreadyExists"
    assert status_of(caught.value)["message"] == 'configmaps "x" already exists'


async def test_create_in_missing_namespace_is_not_found(ka_client: client.ApiClient) -> None:
    """Check 4."""
    with pytest.raises(ApiException) as caught:
        await core_api(ka_client).create_namespaced_config_map("nope", {"metadata": {"name": "x"}})
    assert caught.value.status == 404
    assert status_of(caught.value)["message"] == 'namespaces "nope" not found'


async def test_stale_replace_conflicts_and_cr_put_needs_rv(
    ka_client: client.ApiClient, widget_crd: dict[str, Any]
) -> None:
    """Check 5."""
    core = core_api(ka_client)
    created = await core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    stale_rv = created.metadata.resource_version
    await core.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    with pytest.raises(ApiException) as caught:
        await core.replace_namespaced_config_map(
            "c", "default", {"metadata": {"name": "c", "resourceVersion": stale_rv}}
        )
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"
    assert "the object has been modified" in status_of(caught.value)["message"]

    custom = custom_api(ka_client)
    await custom.create_namespaced_custom_object(*WIDGETS, widget("w"))
    with pytest.raises(ApiException) as caught:
        await custom.replace_namespaced_custom_object(*WIDGETS, "w", widget("w"))
    assert caught.value.status == 422
    causes = status_of(caught.value)["details"]["causes"]
    assert [c["field"] for c in causes] == ["metadata.resourceVersion"]


async def test_strategic_patch_keeps_keys_and_noop_keeps_rv(
    kubesim: KubeSim, ka_client: client.ApiClient
) -> None:
    """Check 6: typed patch is strategic merge; an identical patch writes nothing."""
    core = core_api(ka_client)
    created = await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "p"}, "data": {"k1": "v1"}}
    )
    patched = await core.patch_namespaced_config_map("p", "default", {"data": {"k2": "v2"}})
    assert patched.data == {"k1": "v1", "k2": "v2"}
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
    patches = [r for r in kubesim.server.request_log if r.method == "PATCH"]
    assert patches[-1].content_type.startswith("application/strategic-merge-patch+json")

    again = await core.patch_namespaced_config_map("p", "default", {"data": {"k2": "v2"}})
    assert again.metadata.resource_version == patched.metadata.resource_version
    events = [
        event["type"]
        async for event in watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=patched.metadata.resource_version,
            timeout_seconds=1,
        )
    ]
    assert events == []


async def test_custom_object_patch_content_types(
    ka_client: client.ApiClient, widget_crd: dict[str, Any]
) -> None:
    """Check 7: CustomObjectsApi's dict json-patch is a 400; merge-patch bumps generation."""
    custom = custom_api(ka_client)
    created = await custom.create_namespaced_custom_object(*WIDGETS, widget("g", spec={"size": 1}))
    with pytest.raises(ApiException) as caught:
        await custom.patch_namespaced_custom_object(*WIDGETS, "g", {"spec": {"size": 2}})
    assert caught.value.status == 400
    assert status_of(caught.value)["reason"] == "BadRequest"
    assert "[]handlers.jsonPatchOp" in status_of(caught.value)["message"]
    patched = await custom.patch_namespaced_custom_object(
        *WIDGETS, "g", {"spec": {"size": 2}}, _content_type="application/merge-patch+json"
    )
    assert patched["metadata"]["generation"] == created["metadata"]["generation"] + 1


async def test_strategic_patch_of_custom_object_is_415(
    kubesim: KubeSim, widget_crd: dict[str, Any], ka_client: client.ApiClient
) -> None:
    """Check 8."""
    await custom_api(ka_client).create_namespaced_custom_object(*WIDGETS, widget("s"))
    status, body = await raw(
        kubesim,
        "PATCH /apis/example.com/v1/namespaces/default/widgets/s",
        body={"spec": {"size": 3}},
        content_type="application/strategic-merge-patch+json",
    )
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")


async def test_status_is_dropped_on_create_and_labels_keep_generation(
    ka_client: client.ApiClient, widget_crd: dict[str, Any]
) -> None:
    """Check 9."""
    custom = custom_api(ka_client)
    created = await custom.create_namespaced_custom_object(
        *WIDGETS, widget("st", spec={"size": 1}, status={"ready": True})
    )
    assert "status" not in created
    assert created["metadata"]["generation"] == 1
    relabelled = await custom.patch_namespaced_custom_object(
        *WIDGETS,
        "st",
        {"metadata": {"labels": {"a": "b"}}},
        _content_type="application/merge-patch+json",
    )
    assert relabelled["metadata"]["generation"] == 1


async def test_status_patch_ignores_spec(
    ka_client: client.ApiClient, widget_crd: dict[str, Any]
) -> None:
    """Check 10."""
    custom = custom_api(ka_client)
    created = await custom.create_namespaced_custom_object(*WIDGETS, widget("sp", spec={"size": 1}))
    patched = await custom.patch_namespaced_custom_object_status(
        *WIDGETS,
        "sp",
        {"spec": {"size": 9}, "status": {"ready": True}},
        _content_type="application/merge-patch+json",
    )
    assert patched["status"] == {"ready": True}
    assert patched["spec"] == {"size": 1}
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


@pytest.fixture
async def labelled_config_maps(ka_client: client.ApiClient) -> None:
    """ConfigMaps with a spread of env/tier/legacy labels."""
    core = core_api(ka_client)
    labels = {
        "a-web": {"env": "a", "tier": "web"},
        "b-none": {"env": "b"},
        "a-db": {"env": "a", "tier": "db"},
        "c-web": {"env": "c", "tier": "web"},
        "a-legacy": {"env": "a", "legacy": "yes"},
    }
    for name, cm_labels in labels.items():
        await core.create_namespaced_config_map(
            "default", {"metadata": {"name": name, "labels": cm_labels}}
        )


@pytest.mark.usefixtures("labelled_config_maps")
async def test_label_selectors(ka_client: client.ApiClient) -> None:
    """Check 11: set-based selectors, including objects without the tier label; bad ones 400."""
    core = core_api(ka_client)
    selected = await core.list_namespaced_config_map(
        "default", label_selector="env in (a,b),!legacy,tier!=db"
    )
    assert sorted(cm.metadata.name for cm in selected.items) == ["a-web", "b-none"]
    with pytest.raises(ApiException) as caught:
        await core.list_namespaced_config_map("default", label_selector="env in (a")
    assert caught.value.status == 400


@pytest.mark.usefixtures("labelled_config_maps")
async def test_field_selectors(ka_client: client.ApiClient) -> None:
    """Check 12."""
    core = core_api(ka_client)
    selected = await core.list_namespaced_config_map("default", field_selector="metadata.name=a-db")
    assert [cm.metadata.name for cm in selected.items] == ["a-db"]
    with pytest.raises(ApiException) as caught:
        await core.list_namespaced_config_map("default", field_selector="spec.foo=x")
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == "field label not supported: spec.foo"


@pytest.mark.usefixtures("labelled_config_maps")
async def test_pagination(ka_client: client.ApiClient) -> None:
    """Check 13: limit=2 over 5 objects; following the tokens yields each once; garbage is 400."""
    core = core_api(ka_client)
    first = await core.list_namespaced_config_map("default", limit=2)
    assert len(first.items) == 2
    assert first.metadata.remaining_item_count == 3
    seen = [cm.metadata.name for cm in first.items]
    token = first.metadata._continue
    while token:
        page = await core.list_namespaced_config_map("default", limit=2, _continue=token)
        seen += [cm.metadata.name for cm in page.items]
        token = page.metadata._continue
    assert sorted(seen) == ["a-db", "a-legacy", "a-web", "b-none", "c-web"]
    with pytest.raises(ApiException) as caught:
        await core.list_namespaced_config_map("default", limit=2, _continue="garbage!")
    assert caught.value.status == 400


async def test_watch_sequence_ends_after_timeout(ka_client: client.ApiClient) -> None:
    """Check 14: ADDED, MODIFIED, DELETED from the list RV; the stream ends by itself."""
    core = core_api(ka_client)
    listed = await core.list_namespaced_config_map("default")
    await core.create_namespaced_config_map("default", {"metadata": {"name": "w"}})
    await core.patch_namespaced_config_map("w", "default", {"data": {"a": "1"}})
    await core.delete_namespaced_config_map("w", "default")
    seen: list[tuple[str, int]] = []
    async for event in watch.Watch().stream(
        core.list_namespaced_config_map,
        "default",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=3,
    ):
        seen.append((event["type"], int(event["object"].metadata.resource_version)))
    assert [kind for kind, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert seen[2][1] > seen[1][1]


async def test_watch_from_expired_rv_is_410() -> None:
    """Check 15: a 410 ERROR event inside a 200, raised by kubernetes_asyncio as ApiException 410."""
    async with KubeSim(history_window=2) as sim:
        api_client = client.ApiClient(client.Configuration(host=sim.url))
        try:
            core = core_api(api_client)
            for index in range(5):
                await core.create_namespaced_config_map(
                    "default", {"metadata": {"name": f"h{index}"}}
                )
            with pytest.raises(ApiException) as caught:
                async for _ in watch.Watch().stream(
                    core.list_namespaced_config_map,
                    "default",
                    resource_version="1",
                    timeout_seconds=2,
                ):
                    pass
            assert caught.value.status == 410
        finally:
            await api_client.close()


async def test_watch_selector_transitions(ka_client: client.ApiClient) -> None:
    """Check 16: leaving the selector is DELETED, coming back is ADDED."""
    core = core_api(ka_client)
    created = await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "t", "labels": {"app": "a"}}}
    )
    await core.patch_namespaced_config_map("t", "default", {"metadata": {"labels": {"app": "b"}}})
    await core.patch_namespaced_config_map("t", "default", {"metadata": {"labels": {"app": "a"}}})
    kinds = [
        event["type"]
        async for event in watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            label_selector="app=a",
            resource_version=created.metadata.resource_version,
            timeout_seconds=1,
        )
    ]
    assert kinds == ["DELETED", "ADDED"]
