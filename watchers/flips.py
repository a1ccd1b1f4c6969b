"""Starting a ``NamespaceFlipWorkflow`` for one namespace flip.

The id is ``flip/{namespace}/{resourceVersion}``, so a re-delivered Namespace event starts nothing
twice; the start is retried with a capped backoff while this replica leads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import structlog
from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from stackflow.kube.backoff import Backoff
from stackflow.models.engine import FLIP_WORKFLOW, FlipDirectionName, NamespaceFlipInput

__all__ = ["flip_workflow_id", "start_flip_workflow"]
#: Delays between two start attempts: 0.2 s doubling up to 10 s.
START_RETRY = Backoff(initial=0.2, maximum=10.0)

_log = structlog.get_logger(__name__)


def flip_workflow_id(namespace: str, resource_version: str) -> str:
    """``flip/{namespace}/{resourceVersion}``."""
    return f"flip/{namespace}/{resource_version}"


async def start_flip_workflow(
    temporal: Client,
    *,
    task_queue: str,
    namespace: str,
    resource_version: str,
    direction: FlipDirectionName,
    controllers: Sequence[str],
    is_leader: Callable[[], bool],
) -> bool:
    """Start the flip workflow (retrying while leader); False if it already existed or this
    replica stopped leading first."""
    workflow_id = flip_workflow_id(namespace, resource_version)
    flip = NamespaceFlipInput(
        namespace=namespace, direction=direction, controllers=tuple(controllers)
    )
    attempt = 0
    while is_leader():
        try:
            await temporal.start_workflow(
                FLIP_WORKFLOW,
                flip,
                id=workflow_id,
                task_queue=task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"Namespace {namespace} {direction.value}",
            )
        except WorkflowAlreadyStartedError:
            return False
        except Exception as exc:
            delay = START_RETRY.delay(attempt)
            attempt += 1
            _log.warning("flip.retry", workflow_id=workflow_id, error=repr(exc), delay=delay)
            await asyncio.sleep(delay)
            continue
        _log.info("flip.started", namespace=namespace, direction=direction.value)
        return True
    return False
