"""The ``elasticsearch`` tier's stacks: one per cluster kind and test module, shared by its tests
(three JVMs take a minute to form a cluster), each test in namespaces of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from controlplane import ControlPlane
from controlplane.processes import free_port
from tests.clusters import APISERVER, KUBESIM, apiserver_unavailable, install_crds
from tests.elasticsearch.real_stack import RealStack, real_stack, unavailable


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is of the ``elasticsearch`` tier."""
    for item in items:
        if "tests/elasticsearch/" in str(item.path):
            item.add_marker(pytest.mark.elasticsearch)
            item.add_marker(pytest.mark.timeout(900))


@pytest.fixture(scope="module")
def extender_port() -> int:
    """Where the runner serves the scheduler extender for this module."""
    return free_port()


@pytest.fixture(
    scope="module", params=[KUBESIM, pytest.param(APISERVER, marks=pytest.mark.apiserver)]
)
def es_target(request: pytest.FixtureRequest) -> str:
    """Each scenario runs on kubesim and on the real API server; a module that sets
    ``ONE_API_SERVER = True`` runs on the real API server alone where it can run, and on kubesim
    only where it cannot."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    missing = apiserver_unavailable()
    if request.param == APISERVER and missing:
        pytest.skip(missing)
    if (
        request.param == KUBESIM
        and not missing
        and getattr(request.module, "ONE_API_SERVER", False)
    ):
        # Its scenarios prove what Elasticsearch does through the operator, the same API calls on
        # either server; running them twice costs CI minutes it does not have.
        pytest.skip("runs on the real API server here (on kubesim where that cannot run)")
    return str(request.param)


@pytest.fixture(scope="module")
def es_plane(
    es_target: str, extender_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane | None]:
    """A control plane of the tier's own on the real API server (its scheduler asks the
    runner's extender); None on kubesim."""
    if es_target != APISERVER:
        yield None
        return
    plane = ControlPlane(
        tmp_path_factory.mktemp("es-controlplane"),
        scheduler_extender=f"http://127.0.0.1:{extender_port}",
    )
    plane.start()
    try:
        install_crds(plane)
        yield plane
    finally:
        plane.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def es_stack(
    es_target: str,
    es_plane: ControlPlane | None,
    extender_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[RealStack]:
    """The running stack for this module's tests."""
    directory: Path = tmp_path_factory.mktemp(f"es-{es_target}")
    async with real_stack(
        directory, es_target, plane=es_plane, extender_port=extender_port
    ) as stack:
        yield stack
