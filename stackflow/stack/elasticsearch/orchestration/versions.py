"""Version rules of a running cluster: which changes of ``spec.version`` are refused, which version
the cluster runs, and in which order a version upgrade reaches the node sets.

Versions are ordered as ECK orders them (semantic versioning: a pre-release sorts before its
release), through :func:`version_key`; the parsing is ``stackflow.stack.version``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ExpectedStatefulSet,
    PodState,
    StatefulSetState,
)
from stackflow.stack.version import Version, parse_version

#: ECK's validation messages (``pkg/controller/elasticsearch/validation``), word for word.
NO_DOWNGRADES_MESSAGE = "Downgrades are not supported"
UNSUPPORTED_UPGRADE_MESSAGE = "Unsupported version upgrade path. Check the Elasticsearch documentation for supported upgrade paths."
UNSUPPORTED_VERSION_MESSAGE = "Unsupported version"
PARSE_VERSION_MESSAGE = (
    "Cannot parse Elasticsearch version. String format must be {major}.{minor}.{patch}[-{label}]"
)
PARSE_STORED_VERSION_MESSAGE = (
    "Cannot parse current Elasticsearch version. "
    "String format must be {major}.{minor}.{patch}[-{label}]"
)
NON_MASTERS_UPGRADING_REASON = "Non-master StatefulSets are still upgrading"

#: From this version on a cluster has the node shutdown API (pre-releases of 7.15.2 included).
NODE_SHUTDOWN_VERSION = (7, 15, 2)
#: From this version on nodes have data tiers, and restarts go frozen → cold → warm → hot.
DATA_TIERS_VERSION = (7, 10, 0)
#: From this version on voting exclusions are added with ``?node_names=``.
VOTING_EXCLUSIONS_QUERY_VERSION = (7, 8, 0)


def version_key(
    version: Version,
) -> tuple[tuple[int, int, int], int, tuple[tuple[int, int, str], ...]]:
    """A sort key ordering versions by semantic-versioning precedence.

    A pre-release precedes its release (``8.0.0-rc1 < 8.0.0``); pre-release identifiers compare
    numerically when numeric, numeric ones before alphanumeric ones.
    """
    core = (version.major, version.minor, version.patch)
    if not version.pre_release:
        return (core, 1, ())
    identifiers = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in version.pre_release.split(".")
    )
    return (core, 0, identifiers)


def supports_node_shutdown(version: Version) -> bool:
    """Whether a cluster running ``version`` (its lowest) has the node shutdown API."""
    return version.at_least(*NODE_SHUTDOWN_VERSION)


def flush_is_synced(target: Version) -> bool:
    """Whether the flush before a restart is a synced flush: only for targets before 8.0."""
    # The target decides, not the running version: during 7.x → 8.x some nodes may run 8 already.
    return target.major < 8


@dataclass(frozen=True)
class FieldProblem:
    """A refused spec field, rendered as the Kubernetes API renders ECK's ``field.Error``."""

    path: str
    message: str
    value: str | None = None

    def __str__(self) -> str:
        """``<path>: Invalid value: "<value>": <message>`` or ``<path>: Required value: <message>``."""
        if self.value is None:
            return f"{self.path}: Required value: {self.message}"
        return f'{self.path}: Invalid value: "{self.value}": {self.message}'


def _parse(text: str) -> Version | None:
    try:
        return parse_version(text)
    except ValueError:
        return None


def downgrade_refusal(
    *, current: str, proposed: str, downgrades_allowed: bool = False
) -> FieldProblem | None:
    """ECK's ``noDowngrades`` on an update: ``spec.version`` may not go below the stored one.

    ``current`` is the stored ``spec.version`` (not ``status.version``); the annotation
    ``eck.k8s.elastic.co/disable-downgrade-validation: "true"`` (``downgrades_allowed``) lifts it.
    """
    if downgrades_allowed:
        return None
    current_version, proposed_version = _parse(current), _parse(proposed)
    if current_version is None:
        return FieldProblem("spec.version", PARSE_STORED_VERSION_MESSAGE, current)
    if proposed_version is None:
        return FieldProblem("spec.version", PARSE_VERSION_MESSAGE, proposed)
    if version_key(proposed_version) < version_key(current_version):
        return FieldProblem("spec.version", NO_DOWNGRADES_MESSAGE, proposed)
    return None


def upgrade_source_range(target: Version) -> tuple[Version, Version] | None:
    """The versions a cluster may run to be moved to ``target`` directly (``None``: no major rule).

    7.x from 7.0.0; 8.x from 7.17.0; 9.x from 8.18.0 — the lower bounds include their pre-releases.
    """
    match target.major:
        case 7:
            return Version(7, 0, 0), Version(7, 99, 99)
        case 8:
            # "1" is the lowest pre-release identifier, so 7.17.0-SNAPSHOT builds are in range.
            return Version(7, 17, 0, "1"), Version(8, 99, 99)
        case 9:
            return Version(8, 18, 0, "1"), Version(9, 99, 99)
    return None


def upgrade_path_refusal(
    *, current_spec: str, current_status: str, proposed: str
) -> FieldProblem | None:
    """ECK's ``validUpgradePath``: the running version must be able to reach ``proposed``.

    The running version is ``status.version`` (the lowest a Pod runs), else the stored
    ``spec.version``. The downgrade annotation does not lift this rule.
    """
    if current_status:
        current = _parse(current_status)
        if current is None:
            return FieldProblem("status.version", PARSE_STORED_VERSION_MESSAGE, current_status)
    else:
        current = _parse(current_spec)
        if current is None:
            return FieldProblem("spec.version", PARSE_STORED_VERSION_MESSAGE, current_spec)
    target = _parse(proposed)
    if target is None:
        return FieldProblem("spec.version", PARSE_VERSION_MESSAGE, proposed)
    source_range = upgrade_source_range(target)
    if source_range is None:
        return FieldProblem("spec.version", UNSUPPORTED_VERSION_MESSAGE, proposed)
    lowest, highest = source_range
    if not version_key(lowest) <= version_key(current) <= version_key(highest):
        return FieldProblem("spec.version", UNSUPPORTED_UPGRADE_MESSAGE, proposed)
    return None


def lowest_version(versions: Iterable[str]) -> Version | None:
    """The lowest of ``versions``; ``None`` when there is none or one does not parse."""
    parsed = [_parse(text) for text in versions]
    if not parsed or any(version is None for version in parsed):
        return None
    return min((version for version in parsed if version is not None), key=version_key)


def status_version(
    pods: Sequence[PodState], statefulsets: Sequence[StatefulSetState], previous: str = ""
) -> str:
    """``status.version``: the lowest version of every Pod (terminating ones too) and StatefulSet.

    A version label that does not parse leaves the previous value, as ECK does.
    """
    pod_lowest = lowest_version(pod.version for pod in pods) if pods else None
    sset_lowest = lowest_version(s.version for s in statefulsets) if statefulsets else None
    if (pods and pod_lowest is None) or (statefulsets and sset_lowest is None):
        return previous
    candidates = [version for version in (pod_lowest, sset_lowest) if version is not None]
    return str(min(candidates, key=version_key)) if candidates else previous


def orchestration_version(pods: Sequence[PodState], spec_version: str) -> Version:
    """The version orchestration talks to: the lowest among non-terminating Pods, else the spec's.

    It decides whether the node shutdown API is there. ``ValueError`` when a label does not parse.
    """
    current = [pod.version for pod in pods if not pod.terminating]
    if not current:
        return parse_version(spec_version)
    return min((parse_version(version) for version in current), key=version_key)


@dataclass(frozen=True)
class VersionCondition:
    """The ``RunningDesiredVersion`` condition: ``True``, ``False`` or ``Unknown`` and its message."""

    status: str
    message: str


def running_desired_version(*, spec_version: str, running: str) -> VersionCondition:
    """ECK's ``RunningDesiredVersion`` for ``running`` (``status.version``) against the spec."""
    if not running:
        return VersionCondition("Unknown", "No running version reported")
    desired = _parse(spec_version)
    if desired is None:
        return VersionCondition(
            "Unknown", f"Error while parsing desired version: invalid version {spec_version!r}"
        )
    current = _parse(running)
    if current is None:
        return VersionCondition(
            "Unknown", f"Error while parsing running version: invalid version {running!r}"
        )
    if version_key(desired) > version_key(current):
        return VersionCondition("False", f"Upgrading from {current} to {desired}")
    return VersionCondition("True", f"All nodes are running version {current}")


def is_version_upgrade(*, spec_version: str, status_version: str) -> bool:
    """Whether ``spec.version`` is above ``status.version``; a new cluster (no status) is not.

    ``ValueError`` when either does not parse.
    """
    if not status_version:
        return False
    return version_key(parse_version(spec_version)) > version_key(parse_version(status_version))


def is_non_ha_cluster(pods: Sequence[PodState], expected_masters: Sequence[str]) -> bool:
    """Whether the masters cannot lose a node: at most two expected and at most two present."""
    if len(expected_masters) > 2:
        return False
    return sum(1 for pod in pods if pod.is_master) <= 2


def full_restart_required(
    *,
    spec_version: str,
    status_version: str,
    pods: Sequence[PodState],
    expected_masters: Sequence[str],
) -> bool:
    """ECK's full-cluster restart: a version upgrade of a cluster with at most two masters.

    Such a cluster cannot keep a quorum while a master restarts on a new major version, so every
    outdated Pod is restarted at once instead of one by one.
    """
    upgrade = is_version_upgrade(spec_version=spec_version, status_version=status_version)
    return upgrade and is_non_ha_cluster(pods, expected_masters)


def _statefulset_upgrading(
    statefulset: StatefulSetState,
    pods: Sequence[PodState],
    target: Version,
    awaited_generations: Mapping[str, int],
) -> bool:
    if statefulset.generation < awaited_generations.get(statefulset.name, 0):
        return True
    template_version = _parse(statefulset.version)
    # A template version that does not parse cannot be shown to be upgraded: keep waiting.
    if template_version is None or version_key(template_version) < version_key(target):
        return True
    if statefulset.observed_generation < statefulset.generation:
        return True
    if statefulset.updated_replicas != statefulset.status_replicas:
        return True
    return bool(statefulset.update_revision) and any(
        pod.revision != statefulset.update_revision
        for pod in pods
        if pod.statefulset == statefulset.name
    )


@dataclass(frozen=True)
class TemplateRollout:
    """Which StatefulSets get their new spec in this pass.

    ``update`` get the whole new spec; ``scale_up_only`` (masters during a version upgrade) keep
    their old template and only get more replicas; ``withheld`` wait for ``waiting_for``, the
    non-master StatefulSets still upgrading.
    """

    update: tuple[str, ...]
    scale_up_only: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()
    waiting_for: tuple[str, ...] = ()

    @property
    def requeue_reason(self) -> str | None:
        """ECK's requeue reason while masters wait for the other node sets."""
        return NON_MASTERS_UPGRADING_REASON if self.waiting_for else None


def template_rollout(
    *,
    spec_version: str,
    status_version: str,
    expected: Sequence[ExpectedStatefulSet],
    actual: Sequence[StatefulSetState],
    pods: Sequence[PodState],
    awaited_generations: Mapping[str, int] | None = None,
) -> TemplateRollout:
    """The order of a version upgrade: every node set but the masters first, masters last.

    Outside a version upgrade every StatefulSet is updated at once. During one, a master
    StatefulSet's template changes only once no non-master StatefulSet is still upgrading (its
    template below the target, its generation not observed, replicas not all updated, or a Pod on
    an older revision); until then an existing master StatefulSet may only gain replicas. A
    StatefulSet is a master one when its current template or its spec says so.
    """
    if not is_version_upgrade(spec_version=spec_version, status_version=status_version):
        return TemplateRollout(update=tuple(s.name for s in expected))
    target = parse_version(spec_version)
    masters = tuple(s.name for s in expected if s.master)
    non_masters = tuple(s.name for s in expected if not s.master)
    actual_by_name = {s.name: s for s in actual}
    expected_by_name = {s.name: s for s in expected}
    scale_up_only = (
        tuple(
            name
            for name in masters
            if name in actual_by_name
            and actual_by_name[name].replicas < expected_by_name[name].replicas
        )
        if non_masters
        else ()
    )
    waiting_for = tuple(
        s.name
        for s in actual
        if not s.master
        and not (s.name in expected_by_name and expected_by_name[s.name].master)
        and _statefulset_upgrading(s, pods, target, awaited_generations or {})
    )
    if waiting_for:
        return TemplateRollout(
            update=non_masters,
            scale_up_only=scale_up_only,
            withheld=masters,
            waiting_for=waiting_for,
        )
    # Nothing to wait for: the masters' scale-up and their new template happen together.
    return TemplateRollout(update=non_masters + masters)
