"""The watchers' wiring (``Watchers``): informers of every controller's kinds, wired to the Signaller.

* primary kinds (scoped informers): create, generation change, label/annotation change → the
  resource's workflow; the raw (unscoped) informer keeps the reference index and delivers deletes
  to the running workflow whatever the namespace's scope (its finalizer must still run);
* children (scoped) → their owner's workflow, if the owner is a cached, in-scope primary;
* referenced objects (scoped) → the workflows whose spec references them (``ReferenceIndex``):
  Secrets and ConfigMaps, and every ``reference_kinds`` of the table (an association's target,
  its Service and CA Secret, which may live in another namespace than the referrer);
* selected objects (scoped; each ``selections`` kind of the table) → the primaries whose pure
  ``selects`` picks the object before or after the change (a cluster relabelled into a policy);
* the cluster-wide Namespace informer → ECK's flip rule → at once, a ``NamespaceFlip`` trigger
  to the resources the caches know the flip concerns (the fast path), and a
  ``NamespaceFlipWorkflow`` (id ``flip/{namespace}/{resourceVersion}``, so a re-delivered event
  starts nothing twice) that lists them from the API server and signals them durably;
* operator license Secrets → ``LicenseChanged`` to every workflow waiting for a license
  (visibility query) and to every resource of the license controller.

Only the leader sends; other replicas keep their informers warm. ``resync`` (called when
leadership is acquired) sends a ``Startup`` trigger to every in-scope primary and a
``NamespaceFlip`` to running workflows whose namespace left scope while nobody led.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from temporalio.client import Client

from stackflow.controllers import (
    ChildWatch,
    Controller,
    ControllerTable,
    FlipStrategy,
    SelectionContext,
    SelectionWatch,
)
from stackflow.controllers.elasticsearch import LICENSE_CONTROLLER
from stackflow.kube.cache import EventType
from stackflow.kube.events import EventRecorder
from stackflow.kube.informer import NamespaceInformer
from stackflow.kube.operator_licenses import OperatorLicenseReader
from stackflow.kube.scoped import ScopedInformer
from stackflow.kube.writes import OwnWrites
from stackflow.licensing.model import OPERATOR_LICENSE_SELECTOR
from stackflow.licensing.waiters import LicenseWaiters
from stackflow.metrics import Registry
from stackflow.models.engine import (
    SA_NAMESPACE,
    FlipDirectionName,
    Phase,
    Trigger,
    TriggerReason,
)
from stackflow.models.kinds import SECRETS, Kind
from stackflow.models.objects import view
from stackflow.scope import namespace_flip_direction
from watchers.flips import (
    BACKSTOP_DELAY,
    fast_flip_targets,
    fast_path_enabled,
    flip_trigger,
    start_flip_workflow,
)
from watchers.informers import InformerSet, reference_resources
from watchers.license_events import LicenseProblemReporter
from watchers.references import ReferenceIndex
from watchers.signals import Signaller
from watchers.triggers import (
    child_owners,
    child_trigger,
    license_trigger,
    primary_trigger,
    reference_trigger,
    selecting,
)

__all__ = ["Watchers"]

#: Seconds between the repeated visibility queries after a license change. A workflow that found
#: no license moments before the change is listed as waiting only once its search attribute is
#: written (tens of milliseconds later): the first query again soon finds it.
LICENSE_FOLLOW_UP_DELAYS = (0.25, 1.0, 4.0)
WAITING_FOR_LICENSE_QUERY = (
    f"ExecutionStatus='Running' AND StackflowPhase='{Phase.WAITING_FOR_LICENSE.value}'"
)
IN_SCOPE_PHASES_QUERY = (
    "ExecutionStatus='Running' AND WorkflowType='ResourceWorkflow'"
    f" AND StackflowPhase!='{Phase.OUT_OF_SCOPE.value}'"
    f" AND StackflowPhase!='{Phase.DELETED.value}'"
)

_log = structlog.get_logger(__name__)


def _has_owners(child: ChildWatch) -> Callable[[Mapping[str, Any]], bool]:
    """Whether an object is a child of ``child``'s watch: its owner mapper names someone."""

    def owned(obj: Mapping[str, Any]) -> bool:
        return bool(child.owners(obj))

    return owned


class Watchers:
    """Turns Kubernetes events into workflow signals and flip workflows (leader only)."""

    def __init__(
        self,
        *,
        controllers: ControllerTable,
        informers: InformerSet,
        namespaces: NamespaceInformer,
        signaller: Signaller,
        temporal: Client,
        task_queue: str,
        metrics: Registry,
        events: EventRecorder | None = None,
        own_writes: OwnWrites | None = None,
        licenses: OperatorLicenseReader | None = None,
        license_waiters: LicenseWaiters | None = None,
        fast_flips: bool | None = None,
    ) -> None:
        """Register every handler; nothing runs until the informers start.

        With ``events``, a malformed operator license Secret gets a Warning event on itself; with
        ``licenses`` too (the reconciles' reader, with the operator's keys), so does one that is not valid. With
        ``own_writes`` (the memory the activities' client records its writes in), an event that
        only shows the operator's own write wakes nobody. With ``license_waiters`` (the
        reconcile steps' record), a license change wakes the workflows the steps here saw waiting
        at once, before the visibility query lists them. ``fast_flips`` (default: on unless
        ``STACKFLOW_FLIP_FAST_PATH`` turns it off) signals a flip's targets from the caches at
        once, before the flip workflow runs.
        """
        self.fast_flips = fast_path_enabled(os.environ) if fast_flips is None else fast_flips
        self.controllers = controllers
        self.informers = informers
        self.matcher = informers.matcher
        self.namespaces = namespaces
        self.signaller = signaller
        self.temporal = temporal
        self.task_queue = task_queue
        self.references = ReferenceIndex()
        self.own_writes = own_writes if own_writes is not None else OwnWrites(capacity=0)
        self.license_waiters = license_waiters if license_waiters is not None else LicenseWaiters()
        self._license_reporter = (
            LicenseProblemReporter(events, judge=None if licenses is None else licenses.check)
            if events is not None
            else None
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._flips = metrics.counter(
            "stackflow_namespace_flips_total",
            "Namespace scope flips that started a NamespaceFlipWorkflow, by direction.",
            ("direction",),
        )
        self._license_changes = metrics.counter(
            "stackflow_license_changes_total",
            "Operator license Secret changes, by the number of workflows told (bucketed).",
            (),
        )
        self._echoes = metrics.counter(
            "stackflow_watch_echoes_total",
            "Watch events that only showed the operator's own write (no signal), by kind.",
            ("kind",),
        )
        self._primaries: dict[str, ScopedInformer] = {}
        self._fast_signals = metrics.counter(
            "stackflow_flip_fast_signals_total",
            "Resources signalled at once from the caches on a namespace flip, by direction.",
            ("direction",),
        )
        for controller in controllers:
            self._wire_controller(controller)
        # One handler per referenced resource, on the shared unfiltered informer: a target kind
        # that is also a primary kind (Elasticsearch, Kibana, Agent…) reuses the primary's.
        for resource in reference_resources(controllers):
            self.informers.scoped(resource).add_handler(self._reference_handler(resource))
            # A narrowed informer (Secrets) holds the referenced objects, not every one.
            self.informers.keep(resource, self._is_referenced(resource))
        for controller in controllers:
            for selection in controller.selections:
                self.informers.scoped(selection.kind).add_handler(
                    self._selection_handler(controller, selection)
                )
        self.license_secrets = self.informers.scoped(
            SECRETS, label_selector=OPERATOR_LICENSE_SELECTOR
        )
        self.license_secrets.add_handler(self._on_license_secret)
        namespaces.add_handler(self._on_namespace)

    @property
    def is_leader(self) -> bool:
        """Whether this replica may send."""
        return self.signaller.is_leader()

    def _echo(
        self,
        resource: Kind,
        event_type: EventType,
        new: dict[str, Any] | None,
        *,
        controller: str,
    ) -> bool:
        """Whether the event is the echo of ``controller``'s own write (counted; not signalled)."""
        if not self.own_writes.is_echo(resource, event_type, new, controller=controller):
            return False
        self._echoes.inc(kind=resource.kind)
        return True

    def _unless_echo(
        self,
        resource: Kind,
        event_type: EventType,
        new: dict[str, Any] | None,
        *,
        controller: str,
        deliver: Callable[[], object],
    ) -> None:
        """Run ``deliver`` unless the event is the echo of ``controller``'s own write; while a
        write of ours to the object is in flight, decide once it has returned."""

        def decide() -> None:
            if not self._echo(resource, event_type, new, controller=controller):
                deliver()

        if not self.own_writes.defer(resource, new, decide):
            decide()

    def primary(self, controller: str) -> ScopedInformer:
        """The scoped primary informer of a controller."""
        return self._primaries[controller]

    # --- wiring -----------------------------------------------------------------------------

    def _wire_controller(self, controller: Controller) -> None:
        resource = controller.primary
        selector = controller.primary_label_selector
        raw = self.informers.informer(resource, label_selector=selector)
        raw.add_handler(self._index_handler(controller))
        # Deletions come from the raw informer: the scoped one drops the DELETED event of a
        # namespace out of scope, and the workflow would wait OutOfScope forever, its
        # soft-owned Secrets left behind.
        raw.add_handler(self._deletion_handler(controller))
        scoped = self.informers.scoped(resource, label_selector=selector)
        scoped.add_handler(self._primary_handler(controller))
        self._primaries[controller.name] = scoped
        for child in controller.children:
            self.informers.scoped(child.kind, label_selector=child.label_selector).add_handler(
                self._child_handler(controller, child)
            )
            if child.label_selector is None:
                # On the unfiltered informer: if narrowed, it must hold the children that have an
                # owner (the trial-status Secret), which no selector names.
                self.informers.keep(child.kind, _has_owners(child))

    def _is_referenced(self, resource: Kind) -> Callable[[Mapping[str, Any]], bool]:
        """Whether an object of ``resource`` is referenced by some spec now (the index)."""

        def referenced(obj: Mapping[str, Any]) -> bool:
            meta = view(obj)
            return bool(
                self.references.referrers(
                    group=resource.group,
                    kind=resource.kind,
                    namespace=meta.namespace,
                    name=meta.name,
                )
            )

        return referenced

    def _index_handler(
        self, controller: Controller
    ) -> Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], None]:
        def handler(
            event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
        ) -> None:
            obj = new if new is not None else old
            if obj is None:
                return
            namespace, name = view(obj).namespace, view(obj).name
            if new is None:
                self.references.remove(controller=controller.name, namespace=namespace, name=name)
                return
            self.references.set_references(
                controller=controller.name,
                namespace=namespace,
                name=name,
                references=controller.references(new),
            )

        return handler

    def _primary_handler(
        self, controller: Controller
    ) -> Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], None]:
        source = f"watch {controller.primary.kind}"
        resource = controller.primary

        def handler(
            event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
        ) -> None:
            trigger = primary_trigger(
                event_type,
                old,
                new,
                source=source,
                ignored_annotation=controller.ignored_annotation,
            )
            obj = new if new is not None else old
            if trigger is None or obj is None:
                return
            if trigger.reason is TriggerReason.DELETED:
                return  # told by the deletion handler, whatever the namespace's scope
            ref = controller.ref_of(obj)
            self._unless_echo(
                resource,
                event_type,
                new,
                controller=controller.name,
                deliver=lambda: self.signaller.submit(ref, trigger=trigger),
            )

        return handler

    def _deletion_handler(
        self, controller: Controller
    ) -> Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], None]:
        """Tell a deleted primary's running workflow, in or out of scope (it then finalizes)."""
        source = f"watch {controller.primary.kind}"

        def handler(
            event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
        ) -> None:
            if event_type != "DELETED" or old is None:
                return
            trigger = primary_trigger(event_type, old, new, source=source)
            if trigger is None:
                return
            # A gone resource needs no new workflow: tell the running one, if any.
            self.signaller.submit_running(controller.ref_of(old).workflow_id, trigger)

        return handler

    def _child_handler(
        self, controller: Controller, child: ChildWatch
    ) -> Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], None]:
        source = f"watch {child.kind.kind}"

        def handler(
            event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
        ) -> None:
            owners = child_owners(event_type, old, new, child.owners)
            if not owners or not self.is_leader:
                return
            primaries = self._primaries[controller.name]
            trigger = child_trigger(event_type, old, new, source=source)

            def deliver() -> None:
                # The owner may live in another namespace than the child (an association's
                # Secrets in the target's namespace): only the owner's namespace must be in scope.
                for namespace, name in owners:
                    if primaries.get(namespace=namespace, name=name) is None:
                        continue  # the owner is gone or out of scope: nothing to reconcile
                    self.signaller.submit(
                        controller.ref(namespace=namespace, name=name), trigger=trigger
                    )

            self._unless_echo(
                child.kind, event_type, new, controller=controller.name, deliver=deliver
            )

        return handler

    def _reference_handler(
        self, resource: Kind
    ) -> Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], None]:
        source = f"watch {resource.kind}"

        def handler(
            event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
        ) -> None:
            obj = new if new is not None else old
            if obj is None or not self.is_leader:
                return
            meta = view(obj)
            referrers = self.references.referrers(
                group=resource.group, kind=resource.kind, namespace=meta.namespace, name=meta.name
            )
            if not referrers:
                return
            trigger = reference_trigger(event_type, old, new, source=source)
            if trigger is None:
                return
            for controller_name, ref_namespace, ref_name in referrers:
                controller = self.controllers.get(controller_name)
                if controller is None or not self.matcher.name_matches(ref_namespace):
                    continue
                ref = controller.ref(namespace=ref_namespace, name=ref_name)
                self._unless_echo(
                    resource,
                    event_type,
                    new,
                    controller=controller_name,
                    deliver=functools.partial(self.signaller.submit, ref, trigger=trigger),
                )

        return handler

    def _selection_handler(
        self, controller: Controller, selection: SelectionWatch
    ) -> Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], None]:
        """Wake the primaries whose selector picks the object, before or after the change (a
        cluster created or relabelled into a policy is taken on at once, not at its recheck)."""
        source = f"watch {selection.kind.kind}"

        def handler(
            event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
        ) -> None:
            obj = new if new is not None else old
            if obj is None or not self.is_leader:
                return
            trigger = reference_trigger(event_type, old, new, source=source)
            if trigger is None:
                return
            namespace = view(obj).namespace
            context = SelectionContext(
                operator_namespace=self.matcher.scope.operator_namespace,
                namespace_labels=dict(self.namespaces.namespace_labels(namespace) or {}),
            )
            chosen = selecting(
                old, new, self._primaries[controller.name].list(), selection.selects, context
            )
            for primary in chosen:
                ref = controller.ref_of(primary)
                self._unless_echo(
                    selection.kind,
                    event_type,
                    new,
                    controller=controller.name,
                    deliver=functools.partial(self.signaller.submit, ref, trigger=trigger),
                )

        return handler

    # --- license ------------------------------------------------------------------------------

    async def _on_license_secret(
        self, event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        trigger = license_trigger(event_type, old, new, source="watch license Secret")
        if trigger is None or not self.is_leader:
            return
        if new is not None and self._license_reporter is not None:
            await self._license_reporter.report(new)
        self._license_changes.inc()
        told = self.signal_license_controller(trigger)
        # The workflows this process saw waiting first, then those the visibility query lists
        # (a step that ran on another replica), each woken once.
        woken = self.signal_license_waiters(trigger)
        told += len(woken)
        told += await self.signal_waiting_for_license(trigger, already=woken)
        _log.info("license.changed", detail=trigger.detail, workflows=told)
        # Visibility is eventually consistent: a workflow that entered WaitingForLicense just
        # before this change may not be listed yet. Ask again a little later.
        self._spawn(self._license_follow_up(trigger, already=woken))

    async def _license_follow_up(self, trigger: Trigger, *, already: frozenset[str]) -> None:
        for delay in LICENSE_FOLLOW_UP_DELAYS:
            await asyncio.sleep(delay)
            if not self.is_leader:
                return
            await self.signal_waiting_for_license(trigger, already=already)

    def signal_license_waiters(self, trigger: Trigger) -> frozenset[str]:
        """Send ``trigger`` to the running workflows whose last step here found no license;
        the ids of those it was queued for."""
        return frozenset(
            workflow_id
            for workflow_id in sorted(self.license_waiters.waiting())
            if self.signaller.submit_running(workflow_id, trigger)
        )

    def signal_license_controller(self, trigger: Trigger) -> int:
        """Send ``trigger`` to every resource of the license controller; how many."""
        controller = self.controllers.get(LICENSE_CONTROLLER.name)
        if controller is None:
            return 0
        count = 0
        for obj in self._primaries[controller.name].list():
            count += self.signaller.submit(controller.ref_of(obj), trigger=trigger)
        return count

    async def signal_waiting_for_license(
        self, trigger: Trigger, *, already: frozenset[str] = frozenset()
    ) -> int:
        """Send ``trigger`` to every running workflow in phase WaitingForLicense but those
        ``already`` told; how many."""
        count = 0
        try:
            async for execution in self.temporal.list_workflows(WAITING_FOR_LICENSE_QUERY):
                if execution.id not in already:
                    count += self.signaller.submit_running(execution.id, trigger)
        except Exception as exc:
            # The durable 5-minute recheck still wakes them; log and go on.
            _log.warning("license.visibility_query_failed", error=repr(exc))
        return count

    # --- namespaces ---------------------------------------------------------------------------

    def _on_namespace(
        self, event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        # The initial list is not a flip: the leader's start-up resync covers what exists.
        if not self.matcher.enabled or not self.namespaces.has_synced or not self.is_leader:
            return
        obj = new if new is not None else old
        if obj is None:
            return
        meta = view(obj)
        name = meta.name
        direction = namespace_flip_direction(
            event_type,
            old_matches=None if old is None else self.matcher.namespace_matches(old),
            new_matches=None if new is None else self.matcher.namespace_matches(new),
            always_managed=self.matcher.is_always_managed(name),
        )
        if direction is None:
            return
        self._spawn(self.start_flip(name, meta.resource_version, direction))

    async def start_flip(
        self, namespace: str, resource_version: str, direction: FlipDirectionName
    ) -> bool:
        """Start the flip workflow (retrying while leader); False if it already existed."""
        signalled = 0
        if self.fast_flips and self.is_leader:
            signalled = self.signal_flip_now(namespace, resource_version, direction)
            # The senders go first: the signals are what a reconcile waits on, while the flip
            # workflow starts a second later anyway.
            await asyncio.sleep(0)
        started = await start_flip_workflow(
            self.temporal,
            task_queue=self.task_queue,
            namespace=namespace,
            resource_version=resource_version,
            direction=direction,
            controllers=self.controllers.names,
            is_leader=lambda: self.is_leader,
            start_delay=BACKSTOP_DELAY if signalled else None,
        )
        if started:
            self._flips.inc(direction=direction.value)
        return started

    def signal_flip_now(
        self, namespace: str, resource_version: str, direction: FlipDirectionName
    ) -> int:
        """The fast path: the flip's trigger, now, to the resources the caches know it concerns
        (the flip workflow sends the same trigger to what the API server lists); how many."""
        # The raw primary informers: a de-scoped namespace's objects must be reached too.
        in_namespace = {
            controller.name: [
                view(obj).name
                for obj in self._primaries[controller.name].informer.cache.list(namespace=namespace)
            ]
            for controller in self.controllers
        }
        mapped = [
            controller.name
            for controller in self.controllers
            if controller.flip is FlipStrategy.CONTROLLER
        ]
        trigger = flip_trigger(namespace, resource_version, direction)
        count = 0
        for key in fast_flip_targets(
            namespace,
            in_namespace=in_namespace,
            referrers=self.references.referrers_into(namespace),
            mapped=mapped,
            deferred=[
                controller.name for controller in self.controllers if not controller.fast_flip
            ],
        ):
            controller = self.controllers.get(key.controller)
            if controller is not None:
                count += self.signaller.submit(
                    controller.ref(namespace=key.namespace, name=key.name), trigger=trigger
                )
        self._fast_signals.inc(count, direction=direction.value)
        return count

    # --- leadership ---------------------------------------------------------------------------

    async def resync(self) -> int:
        """A new leader's catch-up: ``Startup`` to every in-scope primary, ``NamespaceFlip`` to
        running workflows whose namespace is out of scope now. Returns how many were queued."""
        count = 0
        startup = Trigger(reason=TriggerReason.STARTUP, source="leader resync")
        for controller in self.controllers:
            for obj in self._primaries[controller.name].list():
                count += self.signaller.submit(controller.ref_of(obj), trigger=startup)
        if self.matcher.enabled:
            count += await self._sweep_out_of_scope()
        return count

    async def _sweep_out_of_scope(self) -> int:
        trigger = Trigger(
            reason=TriggerReason.NAMESPACE_FLIP,
            source="leader resync",
            detail="namespace left scope while no replica was leading",
        )
        count = 0
        try:
            async for execution in self.temporal.list_workflows(IN_SCOPE_PHASES_QUERY):
                namespace = execution.typed_search_attributes.get(SA_NAMESPACE)
                if namespace is not None and not self.matcher.name_matches(namespace):
                    count += self.signaller.submit_running(execution.id, trigger)
        except Exception as exc:
            _log.warning("resync.visibility_query_failed", error=repr(exc))
        return count

    def _spawn(self, coroutine: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Cancel background flip starts."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
