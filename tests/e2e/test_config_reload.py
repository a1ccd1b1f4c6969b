"""The namespace selector changed in the config file without a restart, on kubesim and the real
API server: ``stackflow run --config FILE`` (a subprocess, dynamic scope, trial license) sees the
file change, flips a namespace matching only the new selector into scope (it is reconciled) and one
matching only the old selector out (its workflow waits ``OutOfScope``), with the same pid and the
same Lease holder; an invalid edit is refused with one log line naming the key and the operator
keeps running; a switch to another scope mode ends the run cleanly (status 0) saying why. A
static ``namespaces`` list edited the same way is watched anew: the added namespace is reconciled,
the removed one's workflow waits ``OutOfScope``, by the same process; hostile contents (an alias
bomb, nesting 2,000 deep, a duplicate key, a boolean port) are each refused with one line naming the
key, and the good edit after them applies.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stackflow.kube.leader import DEFAULT_LEASE_NAME, LeaseRecord
from stackflow.kube.resources import ResourceClient
from stackflow.models.engine import SA_PHASE
from stackflow.models.kinds import LEASES
from tests.clusters import ClusterTarget, ensure_namespace
from tests.e2e.harness import ES, SCOPE_LABEL, Operator, Stack, operator_stack, temporal_server
from tests.polling import eventually

OPERATOR_NAMESPACE = "elastic-system"
OLD_ONLY, NEW_ONLY = "selector-old", "selector-new"
NEW_LABEL = "stackflow-reload"


@pytest.fixture
async def stack(cluster_target: ClusterTarget, tmp_path: Path) -> AsyncIterator[Stack]:
    """The cluster, a Temporal dev server and ``stackflow run`` on ``tmp_path/operator.yaml``."""
    async with operator_stack(tmp_path, cluster_target) as running:
        yield running


def elasticsearch(namespace: str) -> dict[str, Any]:
    """A one-node Elasticsearch ``quickstart``."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


async def reconciled(kube: ResourceClient, namespace: str) -> bool:
    """Whether the operator wrote the status of the current spec of ``namespace``/quickstart."""
    es = await kube.get(ES, namespace=namespace, name="quickstart")
    observed = (es.get("status") or {}).get("observedGeneration")
    return observed is not None and int(observed) == int(es["metadata"]["generation"])


def hostile_edits(good: str) -> list[tuple[str, str]]:
    """File contents the loader refuses, each with what its ``config.rejected`` line names."""
    bomb = 'lol: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"l{level}: &l{level} [{','.join(['*' + ('a' if level == 0 else f'l{level - 1}')] * 9)}]\n"
        for level in range(8)
    )
    return [
        (good + bomb, "lol: YAML anchors and aliases"),
        (good + "namespace-selector: " + "[" * 2000 + "]" * 2000 + "\n", "nested more than"),
        (good + "temporal-address: localhost:7233\n", "temporal-address: duplicate key"),
        (good + "metrics-port: true\n", "metrics-port: must be an integer"),
    ]


def rejected_lines(log: Path) -> int:
    """How many ``config.rejected`` lines the log has."""
    return sum("config.rejected" in line for line in log.read_text(errors="replace").splitlines())


async def lease(kube: ResourceClient) -> LeaseRecord:
    """The leader's Lease as stored."""
    stored = await kube.get(LEASES, namespace=OPERATOR_NAMESPACE, name=DEFAULT_LEASE_NAME)
    return LeaseRecord.from_lease(stored)


def edit_config(path: Path, **changes: Any) -> None:
    """Rewrite the config file with ``changes`` (kebab-case keys; None removes a key), replacing
    it as a ConfigMap volume does (a new file moved over the old one)."""
    config = yaml.safe_load(path.read_text())
    for key, value in changes.items():
        key = key.replace("_", "-")
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    staged = path.with_suffix(".new")
    staged.write_text(yaml.safe_dump(config))
    staged.replace(path)


async def test_a_selector_edit_flips_namespaces_without_a_restart(stack: Stack) -> None:
    kube = stack.kube
    config = stack.operator.log.parent / "operator.yaml"
    await ensure_namespace(kube, OLD_ONLY, {SCOPE_LABEL: "true"})
    await ensure_namespace(kube, NEW_ONLY, {NEW_LABEL: "true"})
    for namespace in (OLD_ONLY, NEW_ONLY):
        await kube.create(ES, elasticsearch(namespace), namespace=namespace)

    async def old_reconciled() -> bool:
        return await reconciled(kube, OLD_ONLY)

    await eventually(old_reconciled, within=120, what="the Elasticsearch of the old selector")

    async def led() -> bool:
        return bool((await lease(kube)).holder_identity)

    await eventually(led, what="a leader holds the Lease")
    leader_before = await lease(kube)
    process = stack.operator.process
    assert process is not None
    assert not await reconciled(kube, NEW_ONLY)

    edit_config(config, namespace_selector={"matchLabels": {NEW_LABEL: "true"}})

    async def new_reconciled() -> bool:
        return await reconciled(kube, NEW_ONLY)

    await eventually(new_reconciled, within=120, what="the Elasticsearch of the new selector")
    old_workflow = stack.temporal.client.get_workflow_handle(f"elasticsearch/{OLD_ONLY}/quickstart")

    async def old_out_of_scope() -> bool:
        described = await old_workflow.describe()
        return described.typed_search_attributes.get(SA_PHASE) == "OutOfScope"

    await eventually(old_out_of_scope, within=60, what="the old selector's workflow OutOfScope")
    log = stack.operator.log.read_text(errors="replace")
    assert "config.scope_applied" in log, stack.operator.tail()
    # The same process and leader did it.
    assert stack.operator.process is process
    assert process.returncode is None
    leader_after = await lease(kube)
    assert leader_after.holder_identity == leader_before.holder_identity
    assert leader_after.acquire_time == leader_before.acquire_time

    # An invalid edit: one line naming the key; the last good configuration stays.
    edit_config(config, namespace_selector={"matchExpressions": [{"key": "a", "operator": "Near"}]})

    def rejected() -> bool:
        return any(
            "config.rejected" in line and "namespace-selector" in line
            for line in stack.operator.log.read_text(errors="replace").splitlines()
        )

    await eventually(rejected, within=60, what="the invalid selector rejected")
    assert process.returncode is None
    # A merge patch (the whole list: it replaces lists), not a replace racing the status writes.
    node_sets = elasticsearch(NEW_ONLY)["spec"]["nodeSets"]
    node_sets[0]["count"] = 2
    await kube.merge_patch(
        ES, {"spec": {"nodeSets": node_sets}}, namespace=NEW_ONLY, name="quickstart"
    )
    await eventually(new_reconciled, within=120, what="the new selector still in force")

    # Another scope mode needs a restart: a clean exit the Deployment would restart.
    edit_config(config, namespace_selector=None)
    status = await asyncio.wait_for(process.wait(), timeout=90)
    assert status == 0, stack.operator.tail()
    assert "config.restart" in stack.operator.log.read_text(errors="replace")


async def test_a_static_list_edit_is_watched_anew_without_a_restart(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    first, second = "list-first", "list-second"
    async with cluster_target.open(tmp_path) as cluster, temporal_server() as temporal:
        kube = cluster.kube
        for name in (first, second):
            await ensure_namespace(kube, name)
        config = tmp_path / "operator.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "operator-namespace": OPERATOR_NAMESPACE,
                    "namespaces": [first],
                    "temporal-address": temporal.client.service_client.config.target_host,
                }
            )
        )
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=tmp_path / "operator.log"
        )
        await operator.start()
        try:
            for namespace in (first, second):
                await kube.create(ES, elasticsearch(namespace), namespace=namespace)

            async def first_reconciled() -> bool:
                return await reconciled(kube, first)

            await eventually(first_reconciled, within=120, what="the listed Elasticsearch")
            process = operator.process
            assert process is not None
            assert not await reconciled(kube, second)

            edit_config(config, namespaces=[second])

            async def second_reconciled() -> bool:
                return await reconciled(kube, second)

            try:
                await eventually(second_reconciled, within=120, what="the newly listed one")
            except AssertionError as error:
                raise AssertionError(f"{error}\n{operator.tail()}") from None
            dropped = temporal.client.get_workflow_handle(f"elasticsearch/{first}/quickstart")

            async def dropped_out_of_scope() -> bool:
                described = await dropped.describe()
                return described.typed_search_attributes.get(SA_PHASE) == "OutOfScope"

            await eventually(dropped_out_of_scope, within=60, what="the unlisted one OutOfScope")
            assert operator.process is process
            assert process.returncode is None

            # Hostile contents: each refused with one line naming the key; the watch goes on.
            good = config.read_text()
            for hostile, named in hostile_edits(good):
                before = rejected_lines(operator.log)
                config.write_text(hostile)

                def refused(before: int = before, named: str = named) -> bool:
                    lines = [
                        line
                        for line in operator.log.read_text(errors="replace").splitlines()
                        if "config.rejected" in line
                    ]
                    return len(lines) > before and named in lines[-1]

                await eventually(refused, within=60, what=f"refused naming {named!r}")
                assert process.returncode is None, operator.tail()
            # A good edit after them all still applies: the first namespace listed again.
            config.write_text(good)
            edit_config(config, namespaces=[first, second])
            await kube.merge_patch(
                ES,
                {"metadata": {"labels": {"touched": "after-hostile-edits"}}},
                namespace=first,
                name="quickstart",
            )

            async def first_back_in_scope() -> bool:
                described = await dropped.describe()
                return described.typed_search_attributes.get(SA_PHASE) != "OutOfScope"

            try:
                await eventually(first_back_in_scope, within=120, what="the first listed again")
            except AssertionError as error:
                raise AssertionError(f"{error}\n{operator.tail()}") from None
            assert operator.process is process
        finally:
            assert await operator.stop() == 0, operator.tail()
