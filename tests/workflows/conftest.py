"""Workflow-tier fixtures: one time-skipping Temporal server per session (search attributes
registered), a dev server for visibility queries, unique task queues and workflow ids."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from stackflow.models.engine import SEARCH_ATTRIBUTES
from stackflow.temporal import DATA_CONVERTER, register_search_attributes
from tests.polling import DEV_SERVER_STARTUP

BIN = Path(sys.executable).parent
TEST_SERVER = BIN / "temporal-test-server"
DEV_SERVER = BIN / "temporal"


async def start_time_skipping_env() -> WorkflowEnvironment:
    """The time-skipping test server from the venv (nothing downloaded), attributes registered."""
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=DATA_CONVERTER,
        test_server_existing_path=str(TEST_SERVER),
        test_server_startup_timeout=DEV_SERVER_STARTUP,
    )
    await register_search_attributes(env.client)
    return env


@pytest_asyncio.fixture(loop_scope="session")
async def ts_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server of this test's own (it starts in about half a second).

    Sharing one across tests is not safe: after an activity fails or a worker stops with work
    in flight, the test server sometimes keeps its clock locked, and a later test's
    ``env.sleep`` then hangs until the RPC times out.
    """
    env = await start_time_skipping_env()
    yield env
    await env.shutdown()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """The real dev server (visibility queries), bound to 127.0.0.1 on a free port."""
    env = await WorkflowEnvironment.start_local(
        dev_server_startup_timeout=DEV_SERVER_STARTUP,
        data_converter=DATA_CONVERTER,
        dev_server_existing_path=str(DEV_SERVER),
        search_attributes=SEARCH_ATTRIBUTES,
        ip="127.0.0.1",
        ui=False,
    )
    yield env
    await env.shutdown()


@pytest.fixture
def task_queue() -> str:
    """A task queue of this test's own."""
    return f"tq-{uuid.uuid4().hex[:12]}"
