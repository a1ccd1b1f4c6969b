"""The operator's long-running tasks as one group (``stackflow.cli.operator._LongRunning``).

An essential task (the worker, the elector) that ends stops the operator with status 1; a stop
request ends it with 0; on the way out every task of the group has ended, the background ones
(reachability check, config watch) cancelled at once, the essential ones given their grace.
"""

from __future__ import annotations

import asyncio

from stackflow.cli.operator import _LongRunning


async def _forever() -> None:
    await asyncio.Event().wait()


async def _fails() -> None:
    raise RuntimeError("worker crashed")


async def test_an_essential_task_that_ends_stops_the_operator_and_every_task_ends() -> None:
    tasks = _LongRunning(within=5.0)
    background = tasks.start(_forever(), name="config-watch", essential=False)
    elector = tasks.start(_forever(), name="leader-election")
    tasks.start(_fails(), name="temporal-worker")

    assert await tasks.until_stop_or_failure(asyncio.Event()) is True

    await tasks.finish()
    assert background.cancelled()
    assert elector.done()


async def test_a_stop_request_is_not_a_failure_and_essential_tasks_may_finish_on_their_own() -> (
    None
):
    stop = asyncio.Event()
    tasks = _LongRunning(within=5.0)
    background = tasks.start(_forever(), name="temporal-reachability", essential=False)
    worker = tasks.start(stop.wait(), name="temporal-worker")
    stop.set()

    assert await tasks.until_stop_or_failure(stop) is False

    await tasks.finish()
    assert background.cancelled()
    assert worker.done()
    assert not worker.cancelled()
