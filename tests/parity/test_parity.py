"""ECK's operator and Stackflow make the same objects of the same manifests, field by field, but
for the rows of DIFFERENCES.md; a new difference fails with the fields that differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clusters import apiserver_unavailable
from tests.parity.compare import diff, explain, parse_rows, undocumented
from tests.parity.isolate import isolation_unavailable
from tests.parity.scenarios import SCENARIOS
from tests.parity.worlds import Scenario, eck_unavailable, run_eck, run_stackflow

DIFFERENCES = Path(__file__).with_name("DIFFERENCES.md")

pytestmark = [pytest.mark.eck, pytest.mark.apiserver]


@pytest.fixture(autouse=True)
def _tier() -> None:
    reason = eck_unavailable() or apiserver_unavailable() or isolation_unavailable()
    if reason:
        pytest.skip(reason)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.name)
async def test_eck_and_stackflow_make_the_same_objects(scenario: Scenario, tmp_path: Path) -> None:
    eck = await run_eck(tmp_path / "eck", scenario)
    stackflow = await run_stackflow(tmp_path / "stackflow", scenario)
    loose, stale = undocumented(
        scenario.name, diff(eck, stackflow), parse_rows(DIFFERENCES.read_text())
    )
    message = []
    if loose:
        message.append(f"{len(loose)} difference(s) no row of {DIFFERENCES.name} documents:")
        message.extend(explain(found) for found in loose)
    if stale:
        message.append(f"{len(stale)} row(s) of {DIFFERENCES.name} match no difference any more:")
        message.extend(f"  {row.objects} :: {row.paths}: {row.reason}" for row in stale)
    assert not message, "\n".join(message)
