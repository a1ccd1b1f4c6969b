"""Leader election on a Lease in kubesim: one leader, takeover after release or expiry."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from kubernetes_asyncio import client

from stackflow.kube.leader import LeaderCallbacks, LeaderElector
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import LEASES, NAMESPACES

NAMESPACE = "elastic-system"
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


@dataclass
class FakeMonotonic:
    """The elector's expiry clock, moved by hand."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def resources(ka_client: client.ApiClient) -> ResourceClient:
    raw = ResourceClient(ka_client)
    await raw.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    return raw


def candidate(
    resources: ResourceClient, identity: str, clock: FakeMonotonic, log: list[str]
) -> LeaderElector:
    return LeaderElector(
        resources,
        namespace=NAMESPACE,
        identity=identity,
        lease_duration_seconds=15,
        renew_deadline_seconds=10,
        monotonic=clock,
        callbacks=LeaderCallbacks(
            on_started_leading=lambda: log.append(f"{identity} started"),
            on_stopped_leading=lambda: log.append(f"{identity} stopped"),
        ),
    )


async def test_one_candidate_leads_and_writes_a_lease(resources: ResourceClient) -> None:
    clock, log = FakeMonotonic(), []
    a, b = candidate(resources, "a", clock, log), candidate(resources, "b", clock, log)

    assert await a.step() is True
    assert await b.step() is False

    assert (a.is_leader, b.is_leader, b.leader) == (True, False, "a")
    lease = await resources.get(LEASES, namespace=NAMESPACE, name="stackflow-leader")
    spec = lease["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == (
        "a",
        15,
        0,
    )
    assert MICRO_TIME.fullmatch(spec["acquireTime"])
    assert MICRO_TIME.fullmatch(spec["renewTime"])
    assert log == ["a started"]


async def test_the_other_candidate_takes_over_after_release(resources: ResourceClient) -> None:
    clock, log = FakeMonotonic(), []
    a, b = candidate(resources, "a", clock, log), candidate(resources, "b", clock, log)
    await a.step()
    await b.step()

    assert await a.release() is True
    assert await b.step() is True

    lease = await resources.get(LEASES, namespace=NAMESPACE, name="stackflow-leader")
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 1)
    assert log == ["a started", "a stopped", "b started"]


async def test_the_other_candidate_takes_over_after_expiry(resources: ResourceClient) -> None:
    clock, log = FakeMonotonic(), []
    a, b = candidate(resources, "a", clock, log), candidate(resources, "b", clock, log)
    await a.step()
    await b.step()

    clock.now += 10
    assert await a.step() is True  # renewed in time
    assert await b.step() is False
    clock.now += 16  # a stops renewing; the lease expires for b
    assert await b.step() is True
    assert await a.step() is False

    assert (a.is_leader, b.is_leader) == (False, True)
    assert log == ["a started", "b started", "a stopped"]
