"""Every line the operator writes is a JSON record, the Temporal core's own lines included.

The operator runs on kubesim against a Temporal dev server, which is then stopped: the SDK's core
(Rust) logs its failing polls. By default it writes them to standard error in colour, between the
operator's JSON lines; forwarded through Python logging (``forward_temporal_core_logs``) they are
records like any other, logger ``temporalio.core``, with no ANSI escape anywhere in the log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from stackflow.models.engine import SEARCH_ATTRIBUTES
from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.harness import TEMPORAL, Operator, write_operator_config
from tests.polling import DEV_SERVER_STARTUP, eventually

pytestmark = [pytest.mark.timeout(400)]

WITHIN = 180.0


def records(log: Path) -> list[dict[str, Any]]:
    """Every line of the log, each parsed as JSON (a line that is not fails the test)."""
    parsed = []
    for number, line in enumerate(log.read_text(errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"line {number} of the log is not JSON: {line[:300]!r}") from None
    return parsed


@pytest.mark.asyncio
async def test_the_temporal_cores_lines_are_json_records_during_an_outage(tmp_path: Path) -> None:
    async with ClusterTarget(KUBESIM).open(tmp_path) as cluster:
        temporal = await WorkflowEnvironment.start_local(
            dev_server_startup_timeout=DEV_SERVER_STARTUP,
            data_converter=pydantic_data_converter,
            dev_server_existing_path=str(TEMPORAL),
            search_attributes=SEARCH_ATTRIBUTES,
        )
        config = write_operator_config(tmp_path / "operator.yaml", temporal=temporal)
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=tmp_path / "operator.log"
        )
        await operator.start()
        try:
            await eventually(
                lambda: any(r.get("event") == "operator.started" for r in records(operator.log)),
                within=WITHIN,
                what="the operator started",
            )
            await temporal.shutdown()  # the outage

            def core_lines() -> list[dict[str, Any]]:
                return [r for r in records(operator.log) if r.get("logger") == "temporalio.core"]

            await eventually(
                lambda: bool(core_lines()), within=WITHIN, what="the core logged the outage"
            )
        finally:
            # Temporal is gone: the worker's shutdown may not be clean; what matters is the log.
            await operator.stop()
    text = operator.log.read_text(errors="replace")
    assert "\x1b" not in text, "an ANSI escape in the log"
    lines = core_lines()
    assert all(line["level"] in ("warning", "error") for line in lines), lines
    assert all(line.get("target", "").startswith("temporal") for line in lines), lines
    print(f"{len(lines)} core lines, e.g. {lines[0]}")
