"""The real API server restarted with its etcd under a running operator: nothing is lost.

kubesim's restart is in the reliability suite; this is the same fault on the real control plane
(its etcd keeps the data, every watch and connection ends, resourceVersions continue from etcd).
Changes made right after the restart — a spec change in scope, a namespace flipped in — must be
applied; the time until they are is printed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from controlplane import ControlPlane
from tests.clusters import APISERVER, ClusterTarget
from tests.e2e.harness import ES, create_namespace, manifest, operator_stack, set_in_scope
from tests.polling import eventually
from tests.reliability.load import ClusterKey, cluster_state

pytestmark = [pytest.mark.reliability, pytest.mark.apiserver]

IN_SCOPE = "rel-restart"
FLIPPED = "rel-restart-later"
#: No Elasticsearch answers this test's operator (its Pods are kwok's): the health it reports.
UNANSWERED = "unknown"


def _spec(count: int) -> dict[str, object]:
    return {"version": "9.1.0", "nodeSets": [{"name": "default", "count": count}]}


@pytest.mark.timeout(900)
async def test_changes_after_an_api_server_and_etcd_restart_are_applied(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with operator_stack(tmp_path, ClusterTarget(APISERVER, control_plane)) as stack:
        kube = stack.kube
        await create_namespace(kube, IN_SCOPE, in_scope=True)
        await create_namespace(kube, FLIPPED, in_scope=False)
        scaled, flipped = ClusterKey(IN_SCOPE, "es"), ClusterKey(FLIPPED, "es")
        for key in (scaled, flipped):
            body = manifest("Elasticsearch", key.name, key.namespace, _spec(1))
            await kube.create(ES, body, namespace=key.namespace)

        async def first_ready() -> bool:
            return await cluster_state(kube, scaled, 1, health=UNANSWERED) is None

        await eventually(first_ready, within=240, what=f"{scaled} ready before the restart")

        await asyncio.to_thread(control_plane.restart_apiserver, with_etcd=True)
        restarted = time.monotonic()
        await kube.merge_patch(ES, {"spec": _spec(2)}, namespace=scaled.namespace, name=scaled.name)
        await set_in_scope(kube, FLIPPED, True)

        async def applied() -> bool:
            return (
                await cluster_state(kube, scaled, 2, health=UNANSWERED) is None
                and await cluster_state(kube, flipped, 1, health=UNANSWERED) is None
            )

        last: dict[str, str | None] = {}

        async def report() -> bool:
            done = await applied()
            if not done:
                last["scaled"] = await cluster_state(kube, scaled, 2, health=UNANSWERED)
                last["flipped"] = await cluster_state(kube, flipped, 1, health=UNANSWERED)
            return done

        try:
            await eventually(report, within=300, what="both changes applied after the restart")
        except AssertionError as error:
            raise AssertionError(f"{error}; last seen: {last}") from None
        print(
            f"\napi server + etcd restart: both changes applied "
            f"{time.monotonic() - restarted:.1f} s after the API server was ready again"
        )
