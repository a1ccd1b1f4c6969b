"""Version rules: ECK's ordering, refused downgrades and upgrade paths with ECK's messages,
``status.version``, ``RunningDesiredVersion``, the full-restart case and the upgrade order
(non-master node sets first, masters last)."""

from __future__ import annotations

import pytest

from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ExpectedStatefulSet,
    PodState,
    StatefulSetState,
)
from stackflow.stack.elasticsearch.orchestration.versions import (
    NON_MASTERS_UPGRADING_REASON,
    FieldProblem,
    TemplateRollout,
    VersionCondition,
    downgrade_refusal,
    flush_is_synced,
    full_restart_required,
    is_non_ha_cluster,
    is_version_upgrade,
    orchestration_version,
    running_desired_version,
    status_version,
    supports_node_shutdown,
    template_rollout,
    upgrade_path_refusal,
    version_key,
)
from stackflow.stack.labels import ES_STATEFULSET_NAME_LABEL, ES_VERSION_LABEL
from stackflow.stack.version import Version, parse_version
from tests.unit.orchestration.fixtures import (
    NEW_REVISION,
    OLD_REVISION,
    Node,
    node,
    pod_labels,
    roles,
)


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("8.0.0-rc1", "8.0.0"),
        ("7.17.0", "8.0.0-alpha1"),
        ("8.1.0-1", "8.1.0-2"),
        ("8.1.0-2", "8.1.0-10"),
        ("8.1.0-10", "8.1.0-alpha"),
        ("8.1.0-alpha", "8.1.0-alpha.1"),
        ("8.1.0-SNAPSHOT", "8.1.0"),
        ("7.17.0-1", "7.17.0-SNAPSHOT"),
    ],
)
def test_version_key_orders_pre_releases_before_releases(lower: str, higher: str) -> None:
    assert version_key(parse_version(lower)) < version_key(parse_version(higher))


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("7.15.1", False),
        ("7.15.2-SNAPSHOT", True),
        ("7.15.2", True),
        ("7.17.0", True),
        ("8.0.0", True),
        ("7.4.0", False),
    ],
)
def test_supports_node_shutdown(version: str, expected: bool) -> None:
    assert supports_node_shutdown(parse_version(version)) is expected


@pytest.mark.parametrize(
    ("target", "synced"),
    [
        pytest.param("8.0.0", False, id="flush when target version is 8.x"),
        pytest.param("7.6.0", True, id="sync flush when target version is below 8.x"),
        pytest.param("9.1.0", False, id="9.x"),
    ],
)
def test_flush_is_synced(target: str, synced: bool) -> None:
    assert flush_is_synced(parse_version(target)) is synced


@pytest.mark.parametrize(
    ("current", "proposed", "allowed", "expected"),
    [
        pytest.param(
            "2.0.0",
            "1.0.0",
            False,
            'spec.version: Invalid value: "1.0.0": Downgrades are not supported',
            id="prevent downgrade",
        ),
        pytest.param("1.0.0", "1.2.0", False, None, id="allow upgrades"),
        pytest.param("8.15.0", "8.15.0", False, None, id="same version"),
        pytest.param(
            "9.1.0",
            "8.15.0",
            False,
            'spec.version: Invalid value: "8.15.0": Downgrades are not supported',
            id="major downgrade",
        ),
        pytest.param(
            "9.1.0",
            "9.1.0-SNAPSHOT",
            False,
            'spec.version: Invalid value: "9.1.0-SNAPSHOT": Downgrades are not supported',
            id="a pre-release of the running version is below it",
        ),
        pytest.param("9.1.0", "8.15.0", True, None, id="annotation allows the downgrade"),
        pytest.param(
            "9.1.0",
            "nine",
            False,
            'spec.version: Invalid value: "nine": Cannot parse Elasticsearch version. '
            "String format must be {major}.{minor}.{patch}[-{label}]",
            id="proposed does not parse",
        ),
        pytest.param(
            "x",
            "9.1.0",
            False,
            'spec.version: Invalid value: "x": Cannot parse current Elasticsearch version. '
            "String format must be {major}.{minor}.{patch}[-{label}]",
            id="stored version does not parse",
        ),
    ],
)
def test_downgrade_refusal(
    current: str, proposed: str, allowed: bool, expected: str | None
) -> None:
    problem = downgrade_refusal(current=current, proposed=proposed, downgrades_allowed=allowed)
    assert (str(problem) if problem else None) == expected


UNSUPPORTED_PATH = "Unsupported version upgrade path. Check the Elasticsearch documentation for supported upgrade paths."


@pytest.mark.parametrize(
    ("current_spec", "current_status", "proposed", "expected"),
    [
        # ECK's Test_validUpgradePath.
        pytest.param(
            "1.0.0", "", "2.0.0", "Unsupported version", id="unsupported version rejected"
        ),
        pytest.param("6.5.0", "", "7.0.0", UNSUPPORTED_PATH, id="too old version rejected"),
        pytest.param("7.0.0", "", "6.5.0", "Unsupported version", id="too new rejected"),
        pytest.param("7.0.0", "", "7.17.0", None, id="in range accepted"),
        pytest.param("7.17.0", "7.16.2", "8.0.0", UNSUPPORTED_PATH, id="not yet fully upgraded"),
        # The ranges.
        pytest.param("7.17.0", "7.17.0", "8.0.0", None, id="7.17 to 8"),
        pytest.param("7.17.0", "7.17.0-SNAPSHOT", "8.0.0", None, id="7.17 snapshot to 8"),
        pytest.param("8.17.0", "8.17.0", "9.0.0", UNSUPPORTED_PATH, id="8.17 to 9 is a jump"),
        pytest.param("8.18.0", "8.18.0", "9.0.0", None, id="8.18 to 9"),
        pytest.param("7.17.0", "", "9.0.0", UNSUPPORTED_PATH, id="7 to 9 is a jump"),
        pytest.param("8.19.0", "", "10.0.0", "Unsupported version", id="no rule for 10"),
        pytest.param("9.1.0", "", "8.19.0", UNSUPPORTED_PATH, id="9 back to 8 is outside the path"),
        pytest.param("8.19.0", "", "8.15.0", None, id="the path does not judge downgrades"),
    ],
)
def test_upgrade_path_refusal(
    current_spec: str, current_status: str, proposed: str, expected: str | None
) -> None:
    problem = upgrade_path_refusal(
        current_spec=current_spec, current_status=current_status, proposed=proposed
    )
    assert (problem.message if problem else None) == expected
    if problem is not None:
        assert str(problem) == f'spec.version: Invalid value: "{proposed}": {expected}'


def test_field_problem_renders_a_required_value() -> None:
    assert (
        str(FieldProblem("spec.nodeSets", "needs one"))
        == "spec.nodeSets: Required value: needs one"
    )


def versioned(name: str, version: str, *, terminating: bool = False) -> PodState:
    return PodState(
        name,
        labels={ES_VERSION_LABEL: version, ES_STATEFULSET_NAME_LABEL: name.rsplit("-", 1)[0]},
        terminating=terminating,
    )


@pytest.mark.parametrize(
    ("pods", "statefulsets", "previous", "expected"),
    [
        pytest.param(
            (versioned("a-0", "8.15.0"), versioned("a-1", "8.14.3")),
            (StatefulSetState("a", 2, version="8.15.0"),),
            "",
            "8.14.3",
            id="lowest Pod",
        ),
        pytest.param(
            (versioned("a-0", "8.15.0"),),
            (StatefulSetState("a", 1, version="8.14.0"),),
            "",
            "8.14.0",
            id="lowest StatefulSet",
        ),
        pytest.param(
            (versioned("a-0", "8.15.0", terminating=True),),
            (),
            "",
            "8.15.0",
            id="terminating Pods count",
        ),
        pytest.param((), (), "8.1.0", "8.1.0", id="nothing: previous kept"),
        pytest.param(
            (versioned("a-0", "nope"),),
            (StatefulSetState("a", 1, version="8.14.0"),),
            "8.13.0",
            "8.13.0",
            id="a label that does not parse: previous kept",
        ),
        pytest.param(
            (versioned("a-0", "9.0.0"), versioned("a-1", "9.0.0-SNAPSHOT")),
            (),
            "",
            "9.0.0-SNAPSHOT",
            id="a pre-release is lower",
        ),
    ],
)
def test_status_version(
    pods: tuple[PodState, ...],
    statefulsets: tuple[StatefulSetState, ...],
    previous: str,
    expected: str,
) -> None:
    assert status_version(pods, statefulsets, previous) == expected


@pytest.mark.parametrize(
    ("pods", "spec", "expected"),
    [
        pytest.param(
            (versioned("a-0", "7.17.0"), versioned("a-1", "8.1.0")), "8.1.0", "7.17.0", id="lowest"
        ),
        pytest.param(
            (versioned("a-0", "7.14.0", terminating=True), versioned("a-1", "8.1.0")),
            "8.1.0",
            "8.1.0",
            id="terminating Pods left out",
        ),
        pytest.param((), "8.2.0", "8.2.0", id="no Pod: the spec's"),
    ],
)
def test_orchestration_version(pods: tuple[PodState, ...], spec: str, expected: str) -> None:
    assert orchestration_version(pods, spec) == parse_version(expected)


@pytest.mark.parametrize(
    ("spec", "running", "expected"),
    [
        pytest.param(
            "8.15.0", "", VersionCondition("Unknown", "No running version reported"), id="none"
        ),
        pytest.param(
            "8.15.0",
            "8.14.0",
            VersionCondition("False", "Upgrading from 8.14.0 to 8.15.0"),
            id="upgrading",
        ),
        pytest.param(
            "8.15.0",
            "8.15.0",
            VersionCondition("True", "All nodes are running version 8.15.0"),
            id="done",
        ),
        pytest.param(
            "8.14.0",
            "8.15.0",
            VersionCondition("True", "All nodes are running version 8.15.0"),
            id="allowed downgrade in progress",
        ),
        pytest.param(
            "8.15.0",
            "bad",
            VersionCondition(
                "Unknown", "Error while parsing running version: invalid version 'bad'"
            ),
            id="running does not parse",
        ),
    ],
)
def test_running_desired_version(spec: str, running: str, expected: VersionCondition) -> None:
    assert running_desired_version(spec_version=spec, running=running) == expected


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        # ECK's Test_isVersionUpgrade (the two parse errors are below).
        pytest.param("8.0.0", "7.17.0", True, id="upgrade"),
        pytest.param("8.1.0", "8.0.0", True, id="minor upgrade"),
        pytest.param("7.17.0", "7.17.0", False, id="not an upgrade"),
        pytest.param("8.1.0", "", False, id="new cluster"),
        pytest.param("8.0.0", "8.1.0", False, id="downgrade"),
    ],
)
def test_is_version_upgrade(spec: str, status: str, expected: bool) -> None:
    assert is_version_upgrade(spec_version=spec, status_version=status) is expected


@pytest.mark.parametrize(
    ("spec", "status"),
    [
        pytest.param("7.17.0", "NaV", id="corrupted status version"),
        pytest.param("should never happen", "7.17.0", id="corrupted spec version"),
    ],
)
def test_is_version_upgrade_refuses_what_does_not_parse(spec: str, status: str) -> None:
    with pytest.raises(ValueError, match="invalid version"):
        is_version_upgrade(spec_version=spec, status_version=status)


MASTER = roles("master")


@pytest.mark.parametrize(
    ("pods", "expected_masters", "non_ha"),
    [
        # ECK's Test_isNonHACluster.
        pytest.param([node("pod-0", "master")], ["pod-0"], True, id="single node cluster"),
        pytest.param(
            [node("pod-0", "master"), node("pod-1", "master")],
            ["pod-0", "pod-1"],
            True,
            id="two nodes",
        ),
        pytest.param(
            [node("master-0", "master"), node("master-1", "master"), node("data-0", "data")],
            ["pod-0", "pod-1"],
            True,
            id="multi-node cluster with two masters",
        ),
        pytest.param(
            [node("pod-0", "master"), node("pod-1", "master"), node("pod-2", "master")],
            ["pod-0", "pod-1", "pod-2"],
            False,
            id="more than two masters",
        ),
        pytest.param(
            [node("pod-0", "master"), node("pod-1", "master")],
            ["pod-0", "pod-1", "pod-2"],
            False,
            id="three expected, two rolled out",
        ),
        pytest.param(
            [node("pod-0", "master"), node("pod-1", "master"), node("pod-2", "master")],
            ["pod-0"],
            False,
            id="one expected, three present",
        ),
    ],
)
def test_is_non_ha_cluster(pods: list[Node], expected_masters: list[str], non_ha: bool) -> None:
    assert is_non_ha_cluster([n.pod() for n in pods], expected_masters) is non_ha


@pytest.mark.parametrize(
    ("spec", "status", "masters", "expected"),
    [
        pytest.param("8.0.0", "7.17.0", 1, True, id="single node major upgrade"),
        pytest.param("8.0.0", "7.17.0", 2, True, id="two masters"),
        pytest.param("8.0.0", "7.17.0", 3, False, id="three masters: rolling"),
        pytest.param("8.0.0", "8.0.0", 1, False, id="no version change: rolling"),
        pytest.param("8.0.0", "", 1, False, id="new cluster"),
    ],
)
def test_full_restart_required(spec: str, status: str, masters: int, expected: bool) -> None:
    names = [f"m-{i}" for i in range(masters)]
    pods = [node(name, "master").pod() for name in names]
    assert (
        full_restart_required(
            spec_version=spec, status_version=status, pods=pods, expected_masters=names
        )
        is expected
    )


def sset(
    name: str,
    replicas: int,
    version: str,
    *,
    master: bool = False,
    generation: int = 1,
    observed: int = 1,
    updated: int | None = None,
) -> StatefulSetState:
    return StatefulSetState(
        name,
        replicas,
        update_revision=NEW_REVISION,
        master=master,
        version=version,
        generation=generation,
        observed_generation=observed,
        status_replicas=replicas,
        updated_replicas=replicas if updated is None else updated,
    )


def pods_of(name: str, count: int, *, old: int = 0) -> list[PodState]:
    """``count`` Pods of StatefulSet ``name``, the first ``old`` on the old revision."""
    return [
        PodState(
            f"{name}-{i}",
            labels=pod_labels(
                name,
                node_roles=roles("data"),
                version="8.0.0",
                revision=OLD_REVISION if i < old else NEW_REVISION,
            ),
        )
        for i in range(count)
    ]


EXPECTED = (
    ExpectedStatefulSet("data", 3, roles("data")),
    ExpectedStatefulSet("masters", 3, roles("master")),
)


@pytest.mark.parametrize(
    ("spec", "status", "expected", "actual", "pods", "generations", "rollout"),
    [
        pytest.param(
            "8.0.0",
            "8.0.0",
            EXPECTED,
            (sset("data", 3, "8.0.0"), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3),
            {},
            TemplateRollout(update=("data", "masters")),
            id="no version change: everything at once",
        ),
        pytest.param(
            "8.1.0",
            "",
            EXPECTED,
            (),
            [],
            {},
            TemplateRollout(update=("data", "masters")),
            id="new cluster",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            EXPECTED,
            (sset("data", 3, "8.0.0"), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3),
            {},
            TemplateRollout(update=("data",), withheld=("masters",), waiting_for=("data",)),
            id="upgrade: data template first, masters withheld",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            EXPECTED,
            (sset("data", 3, "8.1.0"), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3, old=1),
            {},
            TemplateRollout(update=("data",), withheld=("masters",), waiting_for=("data",)),
            id="data Pods still on the old revision",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            EXPECTED,
            (sset("data", 3, "8.1.0", updated=2), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3),
            {},
            TemplateRollout(update=("data",), withheld=("masters",), waiting_for=("data",)),
            id="replicas not all updated",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            EXPECTED,
            (sset("data", 3, "8.1.0", generation=2), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3),
            {},
            TemplateRollout(update=("data",), withheld=("masters",), waiting_for=("data",)),
            id="generation not observed",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            EXPECTED,
            (sset("data", 3, "8.1.0"), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3),
            {"data": 2},
            TemplateRollout(update=("data",), withheld=("masters",), waiting_for=("data",)),
            id="update not seen yet",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            EXPECTED,
            (sset("data", 3, "8.1.0"), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3),
            {},
            TemplateRollout(update=("data", "masters")),
            id="data done: masters now",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            (
                ExpectedStatefulSet("data", 3, roles("data")),
                ExpectedStatefulSet("masters", 5, MASTER),
            ),
            (sset("data", 3, "8.0.0"), sset("masters", 3, "8.0.0", master=True)),
            pods_of("data", 3),
            {},
            TemplateRollout(
                update=("data",),
                scale_up_only=("masters",),
                withheld=("masters",),
                waiting_for=("data",),
            ),
            id="masters may only scale up meanwhile",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            (ExpectedStatefulSet("masters", 3, MASTER),),
            (sset("masters", 3, "8.0.0", master=True),),
            [],
            {},
            TemplateRollout(update=("masters",)),
            id="only masters: at once",
        ),
        pytest.param(
            "8.1.0",
            "8.0.0",
            (ExpectedStatefulSet("data", 3, roles("data", "master")),),
            (sset("data", 3, "8.0.0"),),
            pods_of("data", 3),
            {},
            TemplateRollout(update=("data",)),
            id="a node set becoming master counts as a master one",
        ),
    ],
)
def test_template_rollout(
    spec: str,
    status: str,
    expected: tuple[ExpectedStatefulSet, ...],
    actual: tuple[StatefulSetState, ...],
    pods: list[PodState],
    generations: dict[str, int],
    rollout: TemplateRollout,
) -> None:
    result = template_rollout(
        spec_version=spec,
        status_version=status,
        expected=expected,
        actual=actual,
        pods=pods,
        awaited_generations=generations,
    )
    assert result == rollout
    assert result.requeue_reason == (NON_MASTERS_UPGRADING_REASON if rollout.waiting_for else None)


def test_version_is_the_builders_type() -> None:
    assert parse_version("8.1.0-rc1") == Version(8, 1, 0, "rc1")
