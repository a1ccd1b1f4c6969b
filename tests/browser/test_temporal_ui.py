"""The Temporal UI answers "why is this resource where it is?" for the demo of ``stackflow dev``.

Drives the real UI (served by the Temporal dev server that ``stackflow dev`` starts) in a headless
chromium: the workflow list filtered by the ``StackflowNamespace`` and ``StackflowPhase`` search
attributes, then the resource's workflow with its static summary and details, its current details
and the summaries of its steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect
from playwright.async_api import TimeoutError as PlaywrightTimeout
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter

from stackflow.models.engine import SA_NAMESPACE, SA_PHASE, Phase
from tests.dev_process import REPO, DevProcess, demo_reconciled, start_dev, stop_dev
from tests.polling import eventually

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = REPO / "test-artifacts" / "temporal-ui.png"
#: ``ResourceRef.workflow_id`` of the demo Elasticsearch: ``{controller}/{namespace}/{name}``.
WORKFLOW_ID = "elasticsearch/demo/quickstart"
#: ``ResourceRef.summary``: the workflow's static summary.
SUMMARY = "Elasticsearch demo/quickstart"
#: A workflow of another namespace, which the namespace filter must leave out.
OTHER_NAMESPACE_WORKFLOW = "trial/elastic-system/eck-trial-license"
#: How long one look at the UI may take on a loaded machine (milliseconds).
UI_TIMEOUT_MS = 30_000
#: The first line of the current details: the phase in bold, then the summary.
CURRENT_HEADLINE = re.compile(rf"^({'|'.join(phase.value for phase in Phase)}) {SUMMARY}$")


def chromium_missing() -> str | None:
    """Why the browser tier cannot run here, or None when Debian's chromium is installed."""
    if CHROMIUM.exists():
        return None
    return f"no chromium at {CHROMIUM} (apt-get install -y chromium)"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Debian's headless chromium, driven by Playwright (which cannot download its own here)."""
    reason = chromium_missing()
    if reason:
        pytest.skip(reason)
    # Every wait of an assertion gets the same allowance as the page's actions (not 5 s).
    expect.set_options(timeout=UI_TIMEOUT_MS)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            await launched.close()


async def test_the_ui_shows_why_the_demo_elasticsearch_is_where_it_is(
    browser: Browser, tmp_path: Path
) -> None:
    dev = await start_dev(tmp_path / "state", "--crds", str(REPO / "deploy" / "crds"), deadline=120)
    try:
        dev.follow()
        ui = urlsplit(dev.ui_url)
        await look_at_the_demo(dev, browser, tmp_path)
    finally:
        stopped = await stop_dev(dev, sig=signal.SIGTERM, within=60)
    tail = "".join(dev.output[-20:])
    assert stopped.returncode == 0, f"stackflow dev exited {stopped.returncode}:\n{tail}"
    assert stopped.leftovers == [], "left running (now killed):\n" + "\n".join(stopped.leftovers)
    assert ui.hostname is not None
    assert ui.port is not None
    assert not await accepts_connections(ui.hostname, ui.port), "the Temporal UI still serves"


async def look_at_the_demo(dev: DevProcess, browser: Browser, tmp_path: Path) -> None:
    """Wait for the demo to be reconciled and settled, then look at it in the UI."""
    kubeconfig = dev.state_dir / "kubeconfig"
    cache = tmp_path / "kubectl-cache"

    async def reconciled() -> bool:
        return await demo_reconciled(kubeconfig, cache, "demo")

    await eventually(reconciled, within=150, what="the demo Elasticsearch reconciled", interval=0.5)
    client = await Client.connect(dev.temporal_address)
    handle = client.get_workflow_handle(WORKFLOW_ID)

    async def settled() -> bool:
        return await phase_of(handle) not in (None, Phase.RECONCILING.value)

    await eventually(settled, within=60, what="the workflow leaves Reconciling", interval=0.5)
    steps = await step_summaries(handle)
    assert steps, "no step summary in the workflow's history"
    assert steps[0].startswith("reconcile ("), steps

    page = await browser.new_page(viewport={"width": 1600, "height": 1200})
    page.set_default_timeout(UI_TIMEOUT_MS)
    try:
        await find_in_the_filtered_list(page, dev.ui_url, handle)
        await page.get_by_role("link", name=WORKFLOW_ID, exact=True).click()
        await expect(page.get_by_role("heading", name=WORKFLOW_ID)).to_be_visible()
        await see_the_step_summaries(page, steps)
        await see_the_summary_and_details(page)
    except BaseException:
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        (SCREENSHOT.parent / "temporal-ui.html").write_text(await page.content())
        raise
    finally:
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SCREENSHOT), full_page=True)
        await page.close()


async def find_in_the_filtered_list(
    page: Page, ui_url: str, handle: WorkflowHandle[Any, Any]
) -> None:
    """The list filtered by namespace and by the workflow's current phase shows it, and leaves
    out a workflow of another namespace."""
    link = page.get_by_role("link", name=WORKFLOW_ID, exact=True)

    async def listed() -> bool:
        phase = await phase_of(handle)
        query = f'{SA_NAMESPACE.name}="demo" AND {SA_PHASE.name}="{phase}"'
        await page.goto(f"{ui_url}/namespaces/default/workflows?query={quote(query, safe='')}")
        try:
            await link.wait_for(state="visible", timeout=UI_TIMEOUT_MS)
        except PlaywrightTimeout:
            return False
        return True

    await eventually(listed, within=120, what=f"{WORKFLOW_ID} listed under its phase", interval=1)
    await expect(page.get_by_role("link", name=OTHER_NAMESPACE_WORKFLOW)).to_have_count(0)


async def see_the_step_summaries(page: Page, steps: list[str]) -> None:
    """The event history, oldest first, shows the summaries the workflow gave its steps."""
    await page.get_by_role("tab", name="Event History").click()
    await page.get_by_role("button", name="Descending").click()
    await expect(page.get_by_role("button", name="Ascending")).to_be_visible()
    for summary in steps:
        await expect(page.get_by_text(summary, exact=True).first).to_be_visible()


async def see_the_summary_and_details(page: Page) -> None:
    """The User Metadata tab: static summary, static details, current details."""
    await page.get_by_role("tab", name="User Metadata").click()
    summary = page.frame_locator("iframe#user-metadata-summary")
    await expect(summary.get_by_text(SUMMARY, exact=True)).to_be_visible()
    details = page.frame_locator("iframe#user-metadata-details")
    for line in (
        "kind: Elasticsearch (elasticsearch.k8s.elastic.co/v1)",
        "object: demo/quickstart",
        "controller: elasticsearch",
    ):
        await expect(details.get_by_text(line, exact=True)).to_be_visible()
    current = page.frame_locator("iframe#user-metadata-current-details")
    await expect(current.get_by_text(CURRENT_HEADLINE)).to_be_visible()
    await expect(current.get_by_text(re.compile(r"^reconciles: [1-9]\d*$"))).to_be_visible()
    await expect(current.get_by_text("compensations held: 0", exact=True)).to_be_visible()


async def phase_of(handle: WorkflowHandle[Any, Any]) -> str | None:
    """The workflow's ``StackflowPhase`` search attribute, as the server has it."""
    description = await handle.describe()
    return description.typed_search_attributes.get(SA_PHASE)


async def step_summaries(handle: WorkflowHandle[Any, Any], *, first: int = 60) -> list[str]:
    """The distinct summaries of the activities and timers among the first events of the
    workflow's history, in order (all of them fit on the UI's first page of events)."""
    converter = DataConverter.default.payload_converter
    kinds = (EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EventType.EVENT_TYPE_TIMER_STARTED)
    found: list[str] = []
    async for event in handle.fetch_history_events():
        if event.event_id > first:
            break
        if event.event_type in kinds and event.user_metadata.HasField("summary"):
            text = converter.from_payload(event.user_metadata.summary, str)
            if text not in found:
                found.append(text)
    return found


async def accepts_connections(host: str, port: int) -> bool:
    """Whether something listens on ``host:port``."""
    try:
        _, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True
