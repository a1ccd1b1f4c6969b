"""Starting a ``NamespaceFlipWorkflow`` for one namespace flip, and the fast path beside it.

The id is ``flip/{namespace}/{resourceVersion}``, so a re-delivered Namespace event starts nothing
twice; the start is retried with a capped backoff while this replica leads.

The fast path (``fast_flip_targets``): the watcher signals at once the resources its informer
caches already know a flip concerns — the primaries in the flipped namespace and, for a controller
with its own flip mapper, the resources whose spec references something there (an association's
target) — with the very trigger the flip workflow sends (``flip_trigger``), so the resource
workflow merges the two. The flip workflow still runs: it lists from the API server and covers
what the caches missed or a crash lost, recorded at once and run ``BACKSTOP_DELAY`` later when
the fast path signalled something (so its fan-out does not slow the reconciles it would repeat).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta

import structlog
from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from stackflow.kube.backoff import Backoff
from stackflow.models.engine import (
    FLIP_SOURCE_PREFIX,
    FLIP_WORKFLOW,
    FlipDirectionName,
    NamespaceFlipInput,
    Trigger,
    namespace_flip_trigger,
)
from stackflow.models.keys import ResourceKey

__all__ = [
    "BACKSTOP_DELAY",
    "FAST_PATH_ENV",
    "fast_flip_targets",
    "fast_path_enabled",
    "flip_trigger",
    "flip_workflow_id",
    "start_flip_workflow",
]
#: ``0``/``false``/``off`` turns the fast path off (to measure the flip workflow's path alone).
FAST_PATH_ENV = "STACKFLOW_FLIP_FAST_PATH"
#: How long the flip workflow waits when the fast path has signalled the flip's targets: it is
#: recorded at once (a crash loses nothing), but its listing and fan-out would otherwise compete
#: for the process with the reconciles the fast path just started.
BACKSTOP_DELAY = timedelta(seconds=1)
#: Delays between two start attempts: 0.2 s doubling up to 10 s.
START_RETRY = Backoff(initial=0.2, maximum=10.0)

_log = structlog.get_logger(__name__)


def flip_workflow_id(namespace: str, resource_version: str) -> str:
    """``flip/{namespace}/{resourceVersion}``."""
    return f"{FLIP_SOURCE_PREFIX}{namespace}/{resource_version}"


def flip_trigger(namespace: str, resource_version: str, direction: FlipDirectionName) -> Trigger:
    """The trigger a flip sends every target: the same from the fast path and the workflow, so
    the resource workflow coalesces the two into one reconcile."""
    return namespace_flip_trigger(
        flip_workflow_id(namespace, resource_version), namespace, direction
    )


def fast_path_enabled(environ: Mapping[str, str]) -> bool:
    """Whether the fast path is on (the default) in this environment."""
    return environ.get(FAST_PATH_ENV, "").strip().lower() not in {"0", "false", "off", "no"}


def fast_flip_targets(
    namespace: str,
    *,
    in_namespace: Mapping[str, Iterable[str]],
    referrers: Iterable[ResourceKey],
    mapped: Iterable[str],
    deferred: Iterable[str] = (),
) -> list[ResourceKey]:
    """What the fast path signals for a flip of ``namespace``, each once, sorted (pure).

    ``in_namespace``: per controller, the names of its primaries cached in the namespace (every
    controller's flip concerns those); ``referrers``: the cached resources whose spec references
    an object in the namespace; ``mapped``: the controllers with their own flip mapper — only
    their referrers are signalled (the others' flip is the namespace's objects, as ECK's);
    ``deferred``: the controllers left to the flip workflow (``Controller.fast_flip``).
    """
    with_mapper, later = set(mapped), set(deferred)
    targets = {
        ResourceKey(controller, namespace, name)
        for controller, names in in_namespace.items()
        if controller not in later
        for name in names
    }
    targets.update(
        key for key in referrers if key.controller in with_mapper and key.controller not in later
    )
    return sorted(targets)


async def start_flip_workflow(
    temporal: Client,
    *,
    task_queue: str,
    namespace: str,
    resource_version: str,
    direction: FlipDirectionName,
    controllers: Sequence[str],
    is_leader: Callable[[], bool],
    start_delay: timedelta | None = None,
) -> bool:
    """Start the flip workflow (retrying while leader); False if it already existed or this
    replica stopped leading first. ``start_delay``: the workflow is recorded now and runs that
    much later (see ``BACKSTOP_DELAY``)."""
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
                start_delay=start_delay,
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
