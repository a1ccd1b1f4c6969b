"""PATCH: merge patch, JSON patch, strategic merge patch of workloads, server-side apply."""

from __future__ import annotations

import json
from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    apps,
    config_map,
    container,
    core,
    deployment,
    generation,
    install_crd,
    rv,
    widget,
    widget_crd,
    widgets,
)
from tests.conformance.registry import check


def _containers(body: Any) -> Any:
    return body["spec"]["template"]["spec"]["containers"]


@check("patch-merge", "JSON merge patch: null deletes, maps merge, lists are replaced")
async def _merge_patch(run: Run) -> None:
    await run.ok(
        "POST",
        core(run, "configmaps"),
        body=config_map("x", {"a": "1", "b": "2"}, labels={"l": "1"}),
    )
    await run.call(
        "merge patch",
        "PATCH",
        core(run, "configmaps", "x"),
        body={
            "data": {"a": None, "c": "3"},
            "metadata": {"labels": {"m": "2"}, "finalizers": ["x/y"]},
        },
        content_type=MERGE_PATCH,
    )
    await run.call(
        "merge patch replacing the list",
        "PATCH",
        core(run, "configmaps", "x"),
        body={"metadata": {"finalizers": ["x/z"]}},
        content_type=MERGE_PATCH,
    )
    await run.ok(
        "PATCH",
        core(run, "configmaps", "x"),
        body={"metadata": {"finalizers": None}},
        content_type=MERGE_PATCH,
    )


@check("patch-json", "JSON patch: add, remove, replace, move, copy, test, escapes, append")
async def _json_patch(run: Run) -> None:
    await run.ok("POST", core(run, "configmaps"), body=config_map("x", {"a": "1"}))
    ops = [
        {"op": "add", "path": "/data/b", "value": "2"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "copy", "from": "/data/a", "path": "/data/d"},
        {"op": "move", "from": "/data/d", "path": "/data/e"},
        {"op": "test", "path": "/data/e", "value": "10"},
        {"op": "add", "path": "/metadata/labels", "value": {"example.com/x": "1"}},
        {"op": "replace", "path": "/metadata/labels/example.com~1x", "value": "2"},
        {"op": "add", "path": "/metadata/finalizers", "value": []},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "a/b"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]
    await run.call(
        "json patch", "PATCH", core(run, "configmaps", "x"), body=ops, content_type=JSON_PATCH
    )
    await run.call(
        "json patch with an unknown op",
        "PATCH",
        core(run, "configmaps", "x"),
        body=[{"op": "frobnicate", "path": "/data/a"}],
        content_type=JSON_PATCH,
    )
    await run.call(
        "json patch adding below a missing parent",
        "PATCH",
        core(run, "configmaps", "x"),
        body=[{"op": "add", "path": "/nope/deeper", "value": 1}],
        content_type=JSON_PATCH,
    )


@check(
    "patch-strategic-deployment", "Strategic merge patch of a Deployment: merge keys and directives"
)
async def _strategic_deployment(run: Run) -> None:
    body = deployment(
        "d",
        containers=[
            container(
                "app",
                env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                ports=[{"containerPort": 80}],
            ),
            container("side", "busybox:1"),
        ],
    )
    created = await run.ok("POST", apps(run, "deployments"), body=body)
    patches: list[tuple[str, Any]] = [
        (
            "change one env var",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "app", "env": [{"name": "B", "value": "3"}]}]
                        }
                    }
                }
            },
        ),
        (
            "delete a container",
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}
                }
            },
        ),
        (
            "add a container and reorder",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "$setElementOrder/containers": [{"name": "new"}, {"name": "app"}],
                            "containers": [{"name": "new", "image": "busybox:2"}],
                        }
                    }
                }
            },
        ),
        (
            "replace the env list",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "app",
                                    "env": [{"$patch": "replace"}, {"name": "Z", "value": "26"}],
                                }
                            ]
                        }
                    }
                }
            },
        ),
        (
            "annotate the template",
            {"spec": {"template": {"metadata": {"annotations": {"x": "y"}}}}},
        ),
    ]
    previous = created
    for step, document in patches:
        answer = await run.call(
            step,
            "PATCH",
            apps(run, "deployments", "d"),
            body=document,
            content_type=STRATEGIC_PATCH,
            project=lambda body: [
                {key: c.get(key) for key in ("name", "image", "env", "ports")}
                for c in _containers(body)
            ],
        )
        run.fact(f"{step}: generation", (generation(previous), generation(answer)))
        previous = answer


@check(
    "patch-server-side-apply",
    "Server-side apply: create, update, managedFields, removal, fieldManager",
)
async def _server_side_apply(run: Run) -> None:
    path = core(run, "configmaps", "x")
    applied = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {"a": "1", "b": "2"},
    }
    first = await run.call(
        "apply creates",
        "PATCH",
        path,
        query={"fieldManager": "alice"},
        raw=json.dumps(applied).encode(),
        content_type=APPLY_PATCH,
    )
    yaml_config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: '1'\n"
    second = await run.call(
        "apply dropping a field (YAML)",
        "PATCH",
        path,
        query={"fieldManager": "alice"},
        raw=yaml_config.encode(),
        content_type=APPLY_PATCH,
    )
    run.fact("resourceVersion changed", rv(first) != rv(second))
    again = await run.call(
        "the same apply again",
        "PATCH",
        path,
        query={"fieldManager": "alice"},
        raw=yaml_config.encode(),
        content_type=APPLY_PATCH,
    )
    run.fact("no-op apply kept the resourceVersion", rv(again) == rv(second))
    await run.call(
        "apply without fieldManager",
        "PATCH",
        path,
        raw=yaml_config.encode(),
        content_type=APPLY_PATCH,
    )
    await run.call(
        "force on a merge patch",
        "PATCH",
        path,
        query={"force": "true", "fieldManager": "x"},
        body={"data": {"c": "3"}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "apply with a kind mismatch",
        "PATCH",
        path,
        query={"fieldManager": "alice"},
        raw=b'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}',
        content_type=APPLY_PATCH,
    )


@check("patch-apply-conflicts", "Server-side apply: conflicts between managers and force")
async def _apply_conflicts(run: Run) -> None:
    path = core(run, "configmaps", "x")
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {"a": "alice"},
    }
    await run.call(
        "alice applies",
        "PATCH",
        path,
        query={"fieldManager": "alice"},
        raw=json.dumps(config).encode(),
        content_type=APPLY_PATCH,
    )
    config["data"] = {"a": "bob"}
    await run.call(
        "bob applies the same field",
        "PATCH",
        path,
        query={"fieldManager": "bob"},
        raw=json.dumps(config).encode(),
        content_type=APPLY_PATCH,
    )
    await run.call(
        "bob forces",
        "PATCH",
        path,
        query={"fieldManager": "bob", "force": "true"},
        raw=json.dumps(config).encode(),
        content_type=APPLY_PATCH,
    )
    await run.call(
        "an update by carol",
        "PATCH",
        path,
        query={"fieldManager": "carol"},
        body={"data": {"c": "carol"}},
        content_type=MERGE_PATCH,
    )


@check(
    "patch-custom-objects", "Patches of a custom object: merge, JSON, apply, generation, RV check"
)
async def _custom_objects(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    created = await run.call(
        "create", "POST", widgets(run), body=widget(run, "w1", {"size": 1, "tags": ["a"]})
    )
    merged = await run.call(
        "merge patch",
        "PATCH",
        widgets(run, "w1"),
        body={"spec": {"tags": ["b", "c"]}},
        content_type=MERGE_PATCH,
    )
    run.fact("merge patch generation", (generation(created), generation(merged)))
    await run.call(
        "json patch",
        "PATCH",
        widgets(run, "w1"),
        body=[{"op": "replace", "path": "/spec/size", "value": 7}],
        content_type=JSON_PATCH,
    )
    await run.call(
        "patch with a stale resourceVersion",
        "PATCH",
        widgets(run, "w1"),
        body={"metadata": {"resourceVersion": rv(created)}, "spec": {"size": 2}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "apply",
        "PATCH",
        widgets(run, "w1"),
        query={"fieldManager": "mgr"},
        raw=json.dumps(widget(run, "w1", {"size": 9})).encode(),
        content_type=APPLY_PATCH,
    )
    await run.call(
        "patch invalid by the schema",
        "PATCH",
        widgets(run, "w1"),
        body={"spec": {"size": "big"}},
        content_type=MERGE_PATCH,
    )
