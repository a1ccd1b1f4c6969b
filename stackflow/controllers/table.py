"""The shape of the controller table: what a controller is, as pure data.

A controller names its primary kind, the license gate that applies to it, the child kinds whose
changes wake it (each with a pure mapper from a child to any number of owners), the objects its
spec references, its namespace-flip strategy and the names of its activities. Nothing here does
I/O or holds a callable that does: ``activities`` binds implementations to the controller names,
``watchers`` builds informers from the same rows, and the scope check reads the gate from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from stackflow.models.engine import (
    ObjectKey,
    ResourceRef,
    finalize_activity,
    reconcile_activity,
    reconcile_step_activity,
)
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import Kind
from stackflow.models.objects import view

__all__ = [
    "ChildWatch",
    "Controller",
    "ControllerTable",
    "FlipStrategy",
    "Gate",
    "OwnersOf",
    "ReferencesOf",
    "SelectionContext",
    "SelectionWatch",
    "Selects",
    "UnlicensedNotice",
    "no_references",
    "owners_by_labels",
]


#: A child object → the primaries it belongs to (none, one or several), pure.
OwnersOf = Callable[[Mapping[str, Any]], tuple[NamespacedName, ...]]
#: A primary object → the objects its spec references, pure.
ReferencesOf = Callable[[Mapping[str, Any]], list[ObjectKey]]


class SelectionContext(NamedTuple):
    """What a selector decision needs besides the two objects (from the watchers' caches)."""

    #: A StackConfigPolicy there targets every managed namespace.
    operator_namespace: str
    #: The labels of the selected object's Namespace (an AutoOps ``namespaceSelector``).
    namespace_labels: Mapping[str, str]


#: A primary (a policy) and an object of a kind it selects → whether its selector picks the
#: object, as its reconcile would decide it; pure. A policy whose selector cannot be parsed picks
#: nothing (its reconcile reports that, and only an edit of the policy mends it).
Selects = Callable[[Mapping[str, Any], Mapping[str, Any], SelectionContext], bool]


class Gate(StrEnum):
    """Which license gate a controller's reconciles pass before they run."""

    #: Never gated (the license and trial controllers: they are how a license arrives).
    NONE = "none"
    #: Gated only while dynamic namespace scoping is on (ECK's namespace-selector feature).
    DYNAMIC_SCOPE = "dynamic-scope"
    #: An enterprise feature in every mode (StackConfigPolicy, Maps, the autoscaler).
    ENTERPRISE = "enterprise"

    def requires_license(self, *, dynamic_scope: bool) -> bool:
        """Whether a reconcile needs an enterprise license, given the scoping mode."""
        return self is Gate.ENTERPRISE or (self is Gate.DYNAMIC_SCOPE and dynamic_scope)


class FlipStrategy(StrEnum):
    """How a namespace flip finds the resources it concerns."""

    #: ECK's default: every object of the primary kind in the flipped namespace.
    NAMESPACE_OBJECTS = "namespace-objects"
    #: The controller's activities define ``flip_targets`` (other namespaces are concerned too).
    CONTROLLER = "controller"


@dataclass(frozen=True)
class ChildWatch:
    """A child kind whose events wake its owners' workflows."""

    kind: Kind
    owners: OwnersOf
    #: Narrow the child informer (e.g. only labelled Secrets); None watches every object.
    label_selector: str | None = None


@dataclass(frozen=True)
class SelectionWatch:
    """A kind whose objects the primary selects by their labels (a policy's ``resourceSelector``).

    A change to such an object wakes every primary that selects it before or after the change,
    including one that never named it: a cluster created with matching labels, or relabelled
    into a selector, is picked up at once. The reference index cannot do that (it only knows
    what a primary names already).
    """

    kind: Kind
    selects: Selects


@dataclass(frozen=True)
class UnlicensedNotice:
    """What a license wait records on a resource whose kind has its own ECK notice.

    Without one, the gate's default applies (``activities.generic.license_notice``).
    """

    #: The Warning event's reason (action ``LicenseCheck``) and message, on the resource.
    reason: str
    message: str
    #: The ``status.conditions`` written while it waits (merged by type; pure), or None.
    conditions: Callable[[], list[dict[str, str]]] | None = None


def no_references(obj: Mapping[str, Any]) -> list[ObjectKey]:
    """A controller whose spec references nothing."""
    return []


@dataclass(frozen=True)
class Controller:
    """One row of the controller table."""

    name: str
    primary: Kind
    gate: Gate
    children: tuple[ChildWatch, ...] = ()
    references: ReferencesOf = no_references
    #: Every kind ``references`` can name: the watchers wake the referrers on their changes.
    reference_kinds: tuple[Kind, ...] = ()
    #: Kinds its primaries select by labels: a change wakes each primary that selects the object.
    selections: tuple[SelectionWatch, ...] = ()
    flip: FlipStrategy = FlipStrategy.NAMESPACE_OBJECTS
    #: Narrow the primary informer (the trial controller watches only trial Secrets).
    primary_label_selector: str | None = None
    #: Registered names of the compensation activities its reconciles may record.
    compensations: tuple[str, ...] = ()
    #: Its reconcile step is short (Kubernetes calls only): it runs as a local activity, in the
    #: workflow task (one history event). False for a reconcile that may wait on a slow remote
    #: (an Elasticsearch that times out): an activity of its own keeps the workflow task short.
    local_step: bool = True
    #: Its own license-wait notice (ECK's per-kind event and status); None: the gate's default.
    unlicensed: UnlicensedNotice | None = None
    #: Annotation keys whose change alone does not concern it: another controller's bookkeeping
    #: on a primary they share (each association's conf annotation, for the other associations).
    ignored_annotation: Callable[[str], bool] | None = None
    #: The watchers' fast path signals it at once on a namespace flip. False: its flip waits for
    #: the flip workflow (recorded at once, run about a second later), for a controller whose
    #: flip nobody waits on and whose work would compete with the reconciles that one is for.
    fast_flip: bool = True

    @property
    def reconcile_activity(self) -> str:
        """The registered name of its reconcile activity."""
        return reconcile_activity(self.name)

    @property
    def reconcile_step_activity(self) -> str:
        """The registered name of its reconcile step (the gates and the reconcile in one)."""
        return reconcile_step_activity(self.name)

    @property
    def finalize_activity(self) -> str:
        """The registered name of its finalizing activity."""
        return finalize_activity(self.name)

    @property
    def activity_names(self) -> tuple[str, ...]:
        """Every activity name the controller needs an implementation for."""
        return (
            self.reconcile_activity,
            self.reconcile_step_activity,
            self.finalize_activity,
            *self.compensations,
        )

    def ref(self, *, namespace: str, name: str) -> ResourceRef:
        """The workflow identity of one of its resources."""
        return ResourceRef.of(self.name, self.primary, namespace=namespace, name=name)

    def ref_of(self, obj: Mapping[str, Any]) -> ResourceRef:
        """The workflow identity of a primary object."""
        meta = view(obj)
        return self.ref(namespace=meta.namespace, name=meta.name)


class ControllerTable:
    """The controllers of one operator process, by name, in table order."""

    def __init__(self, controllers: Iterable[Controller]) -> None:
        """Index ``controllers``; ValueError when two share a name."""
        self._by_name: dict[str, Controller] = {}
        for controller in controllers:
            if controller.name in self._by_name:
                raise ValueError(f"two controllers are named {controller.name!r}")
            self._by_name[controller.name] = controller

    def __iter__(self) -> Iterator[Controller]:
        """The controllers in table order."""
        return iter(self._by_name.values())

    def __len__(self) -> int:
        """How many controllers there are."""
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        """Whether a controller of that name exists."""
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        """Every controller name, in table order."""
        return tuple(self._by_name)

    def named(self, name: str) -> Controller:
        """The controller called ``name``; KeyError when there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no controller named {name!r}") from None

    def get(self, name: str) -> Controller | None:
        """The controller called ``name``, or None."""
        return self._by_name.get(name)

    def only(self, names: Iterable[str]) -> ControllerTable:
        """A table of just the named controllers (benchmarks and tests run a subset)."""
        return ControllerTable(self.named(name) for name in names)

    def reference_kinds(self) -> list[Kind]:
        """Every kind whose changes wake referrers, each once, first-seen order."""
        kinds: dict[tuple[str, str, str], Kind] = {}
        for controller in self:
            for kind in controller.reference_kinds:
                kinds.setdefault((kind.group, kind.version, kind.plural), kind)
        return list(kinds.values())


def owners_by_labels(*, namespace_label: str | None, name_label: str) -> OwnersOf:
    """An owner mapper reading the owner's name (and namespace) from a child's labels."""

    def owners(child: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
        meta = view(child)
        name = meta.labels.get(name_label)
        namespace = meta.labels.get(namespace_label) if namespace_label else meta.namespace
        return (NamespacedName(str(namespace), str(name)),) if name and namespace else ()

    return owners
