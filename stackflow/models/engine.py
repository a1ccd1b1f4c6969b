"""The engine's data contract: what flows between watchers, workflows and activities.

Every workflow, activity, signal and update takes one frozen pydantic input model and returns one
result model, so a field can be added later without breaking running workflows. This module is pure
(pydantic and temporalio's search-attribute keys only): workflows import it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio.common import SearchAttributeKey

from stackflow.models.cluster_steps import ClusterStep
from stackflow.models.kinds import Kind

TASK_QUEUE = "stackflow"
#: Registered workflow type names.
RESOURCE_WORKFLOW = "ResourceWorkflow"
FLIP_WORKFLOW = "NamespaceFlipWorkflow"

SA_CONTROLLER = SearchAttributeKey.for_keyword("StackflowController")
SA_KIND = SearchAttributeKey.for_keyword("StackflowKind")
SA_NAMESPACE = SearchAttributeKey.for_keyword("StackflowNamespace")
SA_PHASE = SearchAttributeKey.for_keyword("StackflowPhase")
SEARCH_ATTRIBUTES = (SA_CONTROLLER, SA_KIND, SA_NAMESPACE, SA_PHASE)

LICENSE_RECHECK_SECONDS = 300.0
#: The longest a retried reconcile waits between looks while nothing changes (ECK's ceiling too).
RETRY_CEILING_SECONDS = 300.0
INVALID_SPEC_ERROR = "InvalidSpec"


class Model(BaseModel):
    """Base of every engine model: frozen, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Phase(StrEnum):
    """A resource workflow's phase, as the ``StackflowPhase`` search attribute shows it."""

    RECONCILING = "Reconciling"
    READY = "Ready"
    RETRY_SCHEDULED = "RetryScheduled"
    WAITING_FOR_LICENSE = "WaitingForLicense"
    OUT_OF_SCOPE = "OutOfScope"
    ERROR = "Error"
    DELETED = "Deleted"


class TriggerReason(StrEnum):
    """Why a workflow is asked to look at its resource again."""

    CREATED = "Created"
    SPEC_CHANGED = "SpecChanged"
    METADATA_CHANGED = "MetadataChanged"
    DELETED = "Deleted"
    CHILD_CHANGED = "ChildChanged"
    REFERENCE_CHANGED = "ReferenceChanged"
    NAMESPACE_FLIP = "NamespaceFlip"
    LICENSE_CHANGED = "LicenseChanged"
    MANUAL = "Manual"
    STARTUP = "Startup"


class ResourceRef(Model):
    """One managed resource as one controller sees it; the workflow's identity."""

    controller: str
    group: str
    version: str
    kind: str
    plural: str
    namespace: str
    name: str

    @property
    def workflow_id(self) -> str:
        """``{controller}/{namespace}/{name}``."""
        return f"{self.controller}/{self.namespace}/{self.name}"

    @property
    def summary(self) -> str:
        """``Kind namespace/name``: the workflow's static summary in the Temporal UI."""
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def api_version(self) -> str:
        """``group/version`` (or ``version`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> Kind:
        """The Kubernetes kind of the resource (its fields are kept flat in histories)."""
        return Kind(self.group, self.version, self.kind, self.plural)

    @classmethod
    def of(cls, controller: str, kind: Kind, *, namespace: str, name: str) -> ResourceRef:
        """The ref of one object of ``kind`` as ``controller`` sees it."""
        return cls(
            controller=controller,
            group=kind.group,
            version=kind.version,
            kind=kind.kind,
            plural=kind.plural,
            namespace=namespace,
            name=name,
        )


class ObjectKey(Model):
    """A Kubernetes object referenced by a resource's spec (a Secret, a ConfigMap, …)."""

    group: str = ""
    version: str = "v1"
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, kind: Kind, *, namespace: str, name: str) -> ObjectKey:
        """The key of one object of ``kind``."""
        return cls(
            group=kind.group, version=kind.version, kind=kind.kind, namespace=namespace, name=name
        )


class Trigger(Model):
    """The ``trigger`` signal: why, from where, and a human detail for the history."""

    reason: TriggerReason
    source: str
    detail: str = ""


#: The signals of ``ResourceWorkflow``: one trigger, or several delivered at once.
TRIGGER_SIGNAL = "trigger"
TRIGGERS_SIGNAL = "triggers"


class TriggerBatch(Model):
    """The ``triggers`` signal: the triggers that waited together, in one history event."""

    triggers: tuple[Trigger, ...]


def signal_of(triggers: tuple[Trigger, ...]) -> tuple[str, Trigger | TriggerBatch]:
    """The signal name and argument that deliver ``triggers`` (one: ``trigger``; more: a batch)."""
    if len(triggers) == 1:
        return TRIGGER_SIGNAL, triggers[0]
    return TRIGGERS_SIGNAL, TriggerBatch(triggers=triggers)


class CompensationStep(Model):
    """A saga step recorded when a resource takes state outside itself; it releases that state.

    Recorded by a reconcile (an AutoOps agent and API key per cluster, remote-cluster trust and
    keys per peer) or by a cluster step (an allocation exclude, voting exclusions). ``activity`` is
    the registered activity name that performs the release; ``key`` identifies the held state so
    that the same step is recorded once; ``data`` is what the release needs (never a credential:
    it is written to the history).
    """

    activity: str
    key: str
    data: dict[str, Any] = Field(default_factory=dict)


class CarriedState(Model):
    """Everything a ResourceWorkflow carries across continue-as-new."""

    pending: tuple[Trigger, ...] = ()
    compensations: tuple[CompensationStep, ...] = ()
    out_of_scope: bool = False
    license_warned: bool = False
    phase: Phase = Phase.RECONCILING
    message: str = ""
    reconciles: int = 0
    requeue_after_seconds: float | None = None
    referenced: tuple[ObjectKey, ...] = ()
    #: Consecutive reconciles that asked to be retried with the same outcome: the retry's wait
    #: doubles with each, up to ``RETRY_CEILING_SECONDS``.
    retries: int = 0
    #: The step that changes the running cluster now being run ("" when none), for the UI.
    operation: str = ""


class ResourceWorkflowInput(Model):
    """Start argument of ``ResourceWorkflow``.

    Runs started by earlier versions also carried ``gated`` (the gate is a column of the
    controller table now) and ``history_limit`` (a test knob, now a test interceptor); both are
    ignored so that those runs, and their committed histories, still decode.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    ref: ResourceRef
    carried: CarriedState = CarriedState()
    #: Run the reconcile step as a local activity (the controller table's ``local_step``); fixed
    #: for the run and carried across continue-as-new, so a table change only affects new runs.
    local_step: bool = True


class ResourceWorkflowResult(Model):
    """What a ResourceWorkflow returns when its resource is gone."""

    phase: Phase
    reconciles: int


class ReconcileNowInput(Model):
    """The ``reconcile_now`` update: reconcile at once and answer the outcome."""

    reason: TriggerReason = TriggerReason.MANUAL
    source: str = "stackflow reconcile"
    detail: str = ""


class ReconcileNowResult(Model):
    """The outcome of the reconcile the update asked for."""

    phase: Phase
    message: str
    reconciles: int


class WorkflowStateView(Model):
    """The ``state`` query."""

    ref: ResourceRef
    phase: Phase
    message: str
    reconciles: int
    pending: tuple[Trigger, ...]
    compensations: tuple[CompensationStep, ...]
    out_of_scope: bool
    license_warned: bool
    referenced: tuple[ObjectKey, ...]
    #: A batch of triggers is being handled now. Its reconcile's phase is set before the
    #: releases and cluster steps that follow it in the same batch: the batch is over only once
    #: this is false again.
    handling: bool = False


# --- activities -----------------------------------------------------------------------------------

ACT_SCOPE_CHECK = "stackflow.scope_check"
ACT_LICENSE_CHECK = "stackflow.license_check"
ACT_LICENSE_WAIT_NOTICE = "stackflow.license_wait_notice"
ACT_INVALID_SPEC_NOTICE = "stackflow.invalid_spec_notice"
ACT_FLIP_TARGETS = "stackflow.flip_targets"
ACT_SIGNAL_RESOURCES = "stackflow.signal_resources"
#: Runs one step that changes a running Elasticsearch cluster (``ClusterStepInput``).
ACT_CLUSTER_STEP = "stackflow.elasticsearch.cluster_step"
#: The compensation of what a cluster step left in the cluster (an allocation exclude or enable
#: setting, voting exclusions, a node shutdown): undoes it (``CompensateInput``).
ACT_UNDO_CLUSTER_STEP = "stackflow.elasticsearch.undo_cluster_step"


def reconcile_activity(controller: str) -> str:
    """The registered name of a controller's reconcile activity."""
    return f"{controller}.reconcile"


def reconcile_step_activity(controller: str) -> str:
    """The registered name of a controller's reconcile step: the gates, then the reconcile."""
    return f"{controller}.reconcile_step"


def finalize_activity(controller: str) -> str:
    """The registered name of a controller's finalizing activity (the resource was deleted)."""
    return f"{controller}.finalize"


class ScopeCheckInput(Model):
    """Is the resource in scope, does it still exist, and does reconciling it need a license?

    The gate is looked up in the controller table by ``ref.controller``; inputs recorded by
    earlier versions carried it as ``gated``, which is ignored.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    ref: ResourceRef


class ScopeCheckResult(Model):
    """``exists`` False means the resource is gone (deleted); ``in_scope`` False: its namespace does
    not match (or cannot be read); ``license_required``: the controller's gate applies now."""

    exists: bool
    in_scope: bool
    license_required: bool
    reason: str = ""


class LicenseCheckInput(Model):
    """Ask whether enterprise features are enabled right now."""

    ref: ResourceRef


class LicenseCheckResult(Model):
    """The license gate's verdict."""

    licensed: bool
    reason: str = ""


class LicenseWaitNoticeInput(Model):
    """Emit the ``InvalidLicense`` Warning events (operator Pod and resource) for a new wait."""

    ref: ResourceRef
    message: str


class LicenseWaitNoticeResult(Model):
    """How many events were recorded."""

    events: int


class InvalidSpecNoticeInput(Model):
    """Record an invalid spec: phase ``Error``, a condition and a Warning event on the resource."""

    ref: ResourceRef
    message: str


class InvalidSpecNoticeResult(Model):
    """Whether the resource's status was updated."""

    recorded: bool


class ReconcileInput(Model):
    """A controller's reconcile activity input: the coalesced triggers that led to it."""

    ref: ResourceRef
    triggers: tuple[Trigger, ...]


class ReconcileResult(Model):
    """A controller's reconcile outcome.

    ``acquired`` are compensations to record (operator-held state taken by this reconcile);
    ``released`` are keys of recorded compensations that no longer apply.
    """

    phase: Phase
    message: str = ""
    requeue_after_seconds: float | None = None
    observed_generation: int | None = None
    acquired: tuple[CompensationStep, ...] = ()
    released: tuple[str, ...] = ()
    #: Compensations to run now, each an activity step of this iteration: the state they release
    #: belongs to a target that left scope or is no longer selected (the resource stays). They
    #: run last-acquired first and their keys are then forgotten; a step that fails stays held.
    release_now: tuple[CompensationStep, ...] = ()
    referenced: tuple[ObjectKey, ...] = ()
    #: Steps that change the running cluster, for the workflow to run one by one, in order, each
    #: as an activity of its own (``ACT_CLUSTER_STEP``) that its history shows by name.
    cluster_steps: tuple[ClusterStep, ...] = ()


class ClusterStepInput(Model):
    """Run one step that changes a running cluster (a Pod deleted, a node excluded, ...)."""

    ref: ResourceRef
    step: ClusterStep


class ClusterStepResult(Model):
    """What the step did (``done`` false: nothing was left to do, e.g. the Pod was already gone).

    ``acquired`` are compensations for what the step left in the cluster (an allocation exclude,
    a voting exclusion) that must not outlive the operator's oversight; ``released`` are keys of
    recorded compensations the step undid itself (the exclusion cleared in the normal course).
    """

    done: bool
    message: str = ""
    acquired: tuple[CompensationStep, ...] = ()
    released: tuple[str, ...] = ()


class StepVerdict(StrEnum):
    """What a reconcile step decided: the gate that stopped it, or that it reconciled."""

    DELETED = "Deleted"
    OUT_OF_SCOPE = "OutOfScope"
    UNLICENSED = "Unlicensed"
    INVALID_SPEC = "InvalidSpec"
    RECONCILED = "Reconciled"


class ReconcileStepInput(Model):
    """A reconcile step: the scope check, the license gate and the reconcile in one activity."""

    ref: ResourceRef
    triggers: tuple[Trigger, ...]


class ReconcileStepResult(Model):
    """The step's verdict; ``reason`` says why a gate stopped it (or the invalid spec's message),
    ``reconciled`` is the reconcile's outcome when it ran."""

    verdict: StepVerdict
    reason: str = ""
    reconciled: ReconcileResult | None = None


class CompensateInput(Model):
    """Run one compensation step (its activity name is ``step.activity``)."""

    ref: ResourceRef
    step: CompensationStep


class CompensateResult(Model):
    """Whether the step released anything (False: it was already released)."""

    released: bool


class FinalizeInput(Model):
    """Run a controller's finalizing steps after its resource was deleted."""

    ref: ResourceRef


class FinalizeResult(Model):
    """What the finalizer cleaned up."""

    deleted: tuple[str, ...] = ()


# --- namespace flips ------------------------------------------------------------------------------


class FlipDirectionName(StrEnum):
    """A namespace entering or leaving the managed set."""

    INTO_SCOPE = "IntoScope"
    OUT_OF_SCOPE = "OutOfScope"


#: The source of a flip's trigger is its flip workflow's id, ``flip/{namespace}/{revision}``: one
#: per flip. Other flip triggers (a leader's resync) repeat their source.
FLIP_SOURCE_PREFIX = "flip/"


def namespace_flip_trigger(flip_id: str, namespace: str, direction: FlipDirectionName) -> Trigger:
    """The trigger a flip sends each target, the same from the watcher's fast path and from the
    flip workflow (``flip_id``), so a resource workflow knows the second for the first."""
    return Trigger(
        reason=TriggerReason.NAMESPACE_FLIP,
        source=flip_id,
        detail=f"namespace {namespace} {direction.value}",
    )


def flip_of(trigger: Trigger) -> tuple[str, FlipDirectionName] | None:
    """The namespace and direction of a flip workflow's trigger; None for any other trigger."""
    if trigger.reason is not TriggerReason.NAMESPACE_FLIP:
        return None
    if not trigger.source.startswith(FLIP_SOURCE_PREFIX):
        return None
    words = trigger.detail.split()
    if len(words) != 3 or words[0] != "namespace":
        return None
    try:
        return words[1], FlipDirectionName(words[2])
    except ValueError:
        return None


class NamespaceFlipInput(Model):
    """Start argument of ``NamespaceFlipWorkflow`` (id ``flip/{namespace}/{resourceVersion}``)."""

    namespace: str
    direction: FlipDirectionName
    controllers: tuple[str, ...]


class NamespaceFlipResult(Model):
    """How many resource workflows the flip triggered, per controller."""

    triggered: dict[str, int]


class FlipTargetsInput(Model):
    """Ask one controller's flip mapper which resources a flip of ``namespace`` concerns."""

    controller: str
    namespace: str
    direction: FlipDirectionName


class FlipTargetsResult(Model):
    """The resources to trigger (results of earlier versions also carried ``gated``: ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    refs: tuple[ResourceRef, ...]


class SignalResourcesInput(Model):
    """Signal-with-start the workflows of ``refs`` with ``trigger`` (``gated`` of earlier
    versions is ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    refs: tuple[ResourceRef, ...]
    trigger: Trigger


class SignalResourcesResult(Model):
    """How many workflows were signalled."""

    signalled: int
