"""Informer plumbing of the watchers: the kinds the controller table makes them watch, and
``InformerSet`` (one shared informer per kind and label selector, with scoped views; also the
activities' read-through ``ObjectReader`` over the unscoped caches).

What each informer keeps (``informer_projection``): the informers of the built-in kinds the
watchers see as children or references (Secrets, ConfigMaps, Services, Pods, StatefulSets,
Deployments, DaemonSets, PodDisruptionBudgets) keep metadata and a digest of the rest, which is all
their handlers read (owner mappers read metadata, ``watchers.triggers`` compares states). Whole
objects stay in the informers handed out raw (``InformerSet.informer``: the primaries, whose
specs feed the reference index), in those of custom resources, and in the operator license
Secrets' informer (the license reader verifies their data from the cache, and a malformed one
gets an event naming its content). The reader answers only from whole caches.

When the set starts, each informer with a label selector whose kind also has an unfiltered
informer of the same projection follows that one (``Informer.follow``) instead of listing and
watching on its own: a Secret labelled for a cluster is decoded and held once, not once per
informer that selects it, and the API server serves one watch per kind instead of one per
selector (``follow_sources`` decides, pure). The workload kinds have no unfiltered informer (a
cluster's other Pods change all the time); their label-selected informers follow one covering
informer per kind instead (``COVERED_KINDS``, ``covering_informers``).

The unfiltered Secret informer is narrowed (``Informer.narrow``, ``narrowed_informers`` decides):
no label selector covers every Secret the operator needs (those it makes carry different labels,
the trial-status Secret none, and a user's Secret named in a spec whatever its owner gave it), so
it still lists and watches every Secret, but holds only those some handler needs: the ones its
followers' selectors match (the operator's own Secrets), and those its other users ``keep`` (the
watchers keep the Secrets a spec references and the selector-less child watch's). A cluster's
unrelated Secrets are decoded as they pass and dropped. Nothing reads Secrets from that cache
(it keeps metadata): the activities GET a referenced Secret through the scoped client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stackflow.controllers import ControllerTable
from stackflow.kube.informer import Backoff, Informer, Projection, Selects
from stackflow.kube.reader import UNKNOWN, Unknown, equality_selector, matches_labels
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedInformer
from stackflow.licensing.model import OPERATOR_LICENSE_SELECTOR
from stackflow.models.kinds import (
    CONFIGMAPS,
    DAEMONSETS,
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    Kind,
)
from stackflow.models.objects import view
from stackflow.scope.matcher import NamespaceMatcher
from stackflow.scope.selector import SelectorError, parse_selector_string
from stackflow.stack.labels import TYPE_LABEL

__all__ = [
    "COVERED_KINDS",
    "COVERING_SELECTOR",
    "NARROWED_KINDS",
    "PROJECTED_KINDS",
    "WHOLE_INFORMERS",
    "InformerKey",
    "InformerSet",
    "any_of",
    "covering_informers",
    "follow_sources",
    "informer_projection",
    "narrowed_informers",
    "reference_resources",
    "selector_predicate",
]

InformerKey = tuple[str, str, str, str]
"""(group, version, plural, label selector or "") of one informer of the set."""

#: (group, plural) of the built-in kinds whose scoped informers keep metadata and a digest.
PROJECTED_KINDS: frozenset[tuple[str, str]] = frozenset(
    (kind.group, kind.plural)
    for kind in (
        SECRETS,
        CONFIGMAPS,
        SERVICES,
        PODS,
        STATEFULSETS,
        DEPLOYMENTS,
        DAEMONSETS,
        PODDISRUPTIONBUDGETS,
    )
)
#: (group, plural, label selector) of informers of those kinds that keep whole objects anyway.
WHOLE_INFORMERS: frozenset[tuple[str, str, str]] = frozenset(
    {(SECRETS.group, SECRETS.plural, OPERATOR_LICENSE_SELECTOR)}
)


def informer_projection(resource: Kind, label_selector: str | None, *, raw: bool) -> Projection:
    """What the informer of ``resource`` and ``label_selector`` keeps (pure): whole objects when
    it is handed out ``raw`` (its caller reads them unscoped and whole), when the kind is not a
    ``PROJECTED_KINDS`` one or the informer a ``WHOLE_INFORMERS`` one; else metadata."""
    if raw or (resource.group, resource.plural) not in PROJECTED_KINDS:
        return Projection.WHOLE
    if (resource.group, resource.plural, label_selector or "") in WHOLE_INFORMERS:
        return Projection.WHOLE
    return Projection.METADATA


def selector_predicate(label_selector: str) -> Selects | None:
    """The label selector as a predicate over objects, or None when it does not parse (pure)."""
    try:
        selector = parse_selector_string(label_selector)
    except (SelectorError, ValueError):
        return None

    def selects(obj: Mapping[str, Any]) -> bool:
        return selector.matches(view(obj).labels)

    return selects


def follow_sources(projections: Mapping[InformerKey, Projection]) -> dict[InformerKey, InformerKey]:
    """Which informer follows which (pure): each one with a parseable label selector follows the
    unfiltered informer of its kind when there is one with the same projection, else, for a
    ``COVERED_KINDS`` kind, its covering informer when there is one with the same projection."""
    follows: dict[InformerKey, InformerKey] = {}
    for key, projection in projections.items():
        group, version, plural, selector = key
        if not selector or selector_predicate(selector) is None:
            continue
        sources = [(group, version, plural, "")]
        if (group, plural) in COVERED_KINDS and selector != COVERING_SELECTOR:
            sources.append((group, version, plural, COVERING_SELECTOR))
        found = next((source for source in sources if projections.get(source) is projection), None)
        if found is not None:
            follows[key] = found
    return follows


def covering_informers(
    projections: Mapping[InformerKey, Projection],
) -> dict[InformerKey, Projection]:
    """The covering informers to add (pure): for a ``COVERED_KINDS`` kind with neither an
    unfiltered nor a covering informer, one, with the projection of its first label-selected
    informer, when at least two of them keep that projection."""
    counts: dict[InformerKey, int] = {}
    kept: dict[InformerKey, Projection] = {}
    for (group, version, plural, selector), projection in projections.items():
        key = (group, version, plural, COVERING_SELECTOR)
        if (
            (group, plural) not in COVERED_KINDS
            or not selector
            or key in projections
            or (group, version, plural, "") in projections
        ):
            continue
        if kept.setdefault(key, projection) is projection:
            counts[key] = counts.get(key, 0) + 1
    return {key: kept[key] for key, count in counts.items() if count >= 2}


#: (group, plural) of the workload kinds whose label-selected informers follow one covering
#: informer, by that informer's selector: every Pod, StatefulSet, Deployment and DaemonSet the
#: operator makes carries ``common.k8s.elastic.co/type`` (as ECK's do), and each child watch of
#: those kinds selects by a label that only such objects carry, so one list and one watch per
#: kind serve every controller (35 fewer of each at start-up, each a connection of its own).
COVERED_KINDS: Mapping[tuple[str, str], Kind] = {
    (kind.group, kind.plural): kind for kind in (PODS, STATEFULSETS, DEPLOYMENTS, DAEMONSETS)
}
#: The covering informer's label selector.
COVERING_SELECTOR = TYPE_LABEL

#: (group, plural) of the kinds whose unfiltered informer keeps only what its users need.
NARROWED_KINDS: frozenset[tuple[str, str]] = frozenset({(SECRETS.group, SECRETS.plural)})


def narrowed_informers(
    projections: Mapping[InformerKey, Projection], kept: Iterable[tuple[str, str, str]]
) -> set[InformerKey]:
    """Which informers are narrowed (pure): the unfiltered informer of each ``NARROWED_KINDS``
    kind that keeps metadata, once a user said what it needs of it (``kept``: (group, version,
    plural) of such kinds). An informer of whole objects is not: it is read as a cache of every
    object, which can say "absent" (``InformerSet.get``)."""
    wanted = set(kept)
    return {
        key
        for key, projection in projections.items()
        if not key[3]
        and projection is Projection.METADATA
        and (key[0], key[2]) in NARROWED_KINDS
        and key[:3] in wanted
    }


def any_of(predicates: Sequence[Selects]) -> Selects:
    """One predicate accepting what any of ``predicates`` accepts (pure; none accepts nothing)."""
    chosen = tuple(predicates)

    def selects(obj: Mapping[str, Any]) -> bool:
        return any(predicate(obj) for predicate in chosen)

    return selects


def reference_resources(controllers: ControllerTable) -> list[Kind]:
    """The kinds whose changes wake referrers: Secrets and ConfigMaps (any spec may name them)
    and every controller's reference kinds, each once, in first-seen order."""
    kinds: dict[tuple[str, str, str], Kind] = {}
    for kind in (SECRETS, CONFIGMAPS, *controllers.reference_kinds()):
        kinds.setdefault((kind.group, kind.version, kind.plural), kind)
    return list(kinds.values())


class InformerSet:
    """One informer per (resource, label selector), shared by every handler that needs it.

    It is also an ``ObjectReader``: Gets and Lists answered from the raw (unscoped) caches of
    synced informers that keep whole objects, so the scope check can tell a deleted object from a
    de-scoped one; a projected cache answers ``UNKNOWN`` (the caller asks the API server).
    """

    def __init__(
        self,
        client: ResourceClient,
        matcher: NamespaceMatcher,
        *,
        backoff: Backoff | None = None,
    ) -> None:
        """Informers list/watch through ``client``; scoped views filter through ``matcher``."""
        self.client = client
        self.matcher = matcher
        self.backoff = backoff
        self._informers: dict[InformerKey, Informer] = {}
        self._keeps: dict[tuple[str, str, str], list[Selects]] = {}

    def keep(self, resource: Kind, keeps: Selects) -> None:
        """Say what a handler of the unfiltered informer of ``resource`` needs of it: for a
        ``NARROWED_KINDS`` kind, the informer then holds only the objects its followers'
        selectors or some ``keeps`` accept (others ignore it). Every user of such an informer
        must say so before the set starts; one that does not sees only what the others keep."""
        self._keeps.setdefault((resource.group, resource.version, resource.plural), []).append(
            keeps
        )

    def informer(self, resource: Kind, *, label_selector: str | None = None) -> Informer:
        """The raw (cluster-wide, unfiltered) informer of ``resource``; it keeps whole objects.

        Ask before the informers start: one that already caches projections cannot turn whole
        (``RuntimeError``).
        """
        return self._informer(resource, label_selector, raw=True)

    def scoped(self, resource: Kind, *, label_selector: str | None = None) -> ScopedInformer:
        """The same informer seen through the matcher (projected per ``informer_projection``,
        unless it is handed out raw too)."""
        return ScopedInformer(self._informer(resource, label_selector, raw=False), self.matcher)

    def _informer(self, resource: Kind, label_selector: str | None, *, raw: bool) -> Informer:
        key = (resource.group, resource.version, resource.plural, label_selector or "")
        projection = informer_projection(resource, label_selector, raw=raw)
        informer = self._informers.get(key)
        if informer is None:
            informer = self._informers[key] = Informer(
                self.client,
                resource,
                label_selector=label_selector,
                backoff=self.backoff,
                projection=projection,
                # A static list: one namespaced watch per listed namespace (and the operator's),
                # as ECK's multi-namespace cache; the RBAC need not grant cluster-wide watches.
                namespaces=self.matcher.watched_namespaces,
            )
        elif projection is Projection.WHOLE:
            informer.projection = Projection.WHOLE
        return informer

    def _covering(
        self, resource: Kind, label_selector: str | None, namespace: str | None
    ) -> Informer | None:
        """The synced informer of that selector covering ``namespace`` (None: every namespace),
        if any, whatever it keeps; a static list's informers know only the listed namespaces."""
        key = (resource.group, resource.version, resource.plural, label_selector or "")
        informer = self._informers.get(key)
        if (
            informer is None
            or not informer.has_synced
            or not informer.covers(namespace if resource.namespaced else None)
        ):
            return None
        return informer

    def _synced(
        self, resource: Kind, label_selector: str | None, namespace: str | None
    ) -> Informer | None:
        """``_covering``'s informer when it keeps every object whole, else None."""
        informer = self._covering(resource, label_selector, namespace)
        if (
            informer is None
            or informer.projection is not Projection.WHOLE
            or informer.narrowed  # holds what its users need, not every object
        ):
            return None
        return informer

    def resource_version(self, resource: Kind, *, namespace: str | None, name: str) -> str | None:
        """The resourceVersion the synced unfiltered informer holds for the object, whole or
        projected, narrowed or not; None when it holds none."""
        informer = self._covering(resource, None, namespace)
        if informer is None:
            return None
        cached = informer.cache.get(namespace=namespace if resource.namespaced else None, name=name)
        return None if cached is None else view(cached).resource_version or None

    def get(
        self, resource: Kind, *, namespace: str | None, name: str
    ) -> dict[str, Any] | Unknown | None:
        """The cached object; None when the synced unfiltered informer lacks it; else UNKNOWN.

        Only the informer of every object can say "absent": a label-filtered one lacks the
        objects its selector leaves out. A projected informer never answers.
        """
        informer = self._synced(resource, None, namespace)
        if informer is None:
            return UNKNOWN
        return informer.cache.get(namespace=namespace if resource.namespaced else None, name=name)

    def list(
        self, resource: Kind, *, namespace: str | None, label_selector: str | None
    ) -> list[dict[str, Any]] | Unknown:
        """Cached objects matching ``label_selector`` (one namespace or all), or UNKNOWN.

        From the informer of exactly that selector, else from the unfiltered informer when the
        selector is equality-only; only informers of whole objects answer.
        """
        informer = self._synced(resource, label_selector, namespace)
        if informer is not None:
            return informer.cache.list(namespace=namespace)
        informer = self._synced(resource, None, namespace)
        required = equality_selector(label_selector)
        if informer is None or required is None:
            return UNKNOWN
        return [
            obj for obj in informer.cache.list(namespace=namespace) if matches_labels(obj, required)
        ]

    def start(self) -> None:
        """Start every informer, the selected ones following their kind's unfiltered one (or
        its covering one, ``COVERED_KINDS``)."""
        for (group, _, plural, selector), projection in covering_informers(
            self._unstarted_projections()
        ).items():
            kind = COVERED_KINDS[(group, plural)]
            self._informer(kind, selector, raw=projection is Projection.WHOLE)
        projections = self._unstarted_projections()
        follows = follow_sources(projections)
        followers: dict[InformerKey, list[Selects]] = {}
        for key, source in follows.items():
            selects = selector_predicate(key[3])
            if selects is not None and self._informers[key].follow(
                self._informers[source], selects
            ):
                followers.setdefault(source, []).append(selects)
        for key in narrowed_informers(projections, self._keeps):
            # Its followers are fed by its events: it keeps whatever they select, and what its
            # own users said they need.
            self._informers[key].narrow(any_of([*followers.get(key, ()), *self._keeps[key[:3]]]))
        for informer in self._informers.values():
            informer.start()

    def _unstarted_projections(self) -> dict[InformerKey, Projection]:
        """What each informer that lists on its own and has not synced yet keeps."""
        return {
            key: informer.projection
            for key, informer in self._informers.items()
            if informer.source is None and not informer.has_synced
        }

    def cached_objects(self, resource: Kind) -> int:
        """How many objects of ``resource`` the set holds: the caches of its informers that list
        on their own (a follower holds its source's objects, not copies)."""
        return sum(
            len(informer.cache)
            for (group, version, plural, _), informer in self._informers.items()
            if (group, version, plural) == (resource.group, resource.version, resource.plural)
            and informer.source is None
        )

    async def change_namespaces(self) -> None:
        """Watch the matcher's static list as it is now (it changed while running): every
        multi-namespace informer keeps the namespaces that stay, lists the added ones and
        forgets the removed ones (``Informer.change_namespaces``)."""
        watched = self.matcher.watched_namespaces
        if watched is None:
            return
        await asyncio.gather(
            *(
                informer.change_namespaces(watched)
                for informer in self._informers.values()
                if informer.namespaces is not None
            )
        )

    async def stop(self) -> None:
        """Stop every informer."""
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))

    async def wait_synced(self) -> None:
        """Wait until every informer listed once."""
        await asyncio.gather(*(informer.wait_synced() for informer in self._informers.values()))

    @property
    def has_synced(self) -> bool:
        """Whether every informer listed once."""
        return all(informer.has_synced for informer in self._informers.values())
