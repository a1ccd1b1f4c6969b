"""ECK's expectations over a snapshot: awaited deletions first, then awaited generations, then
generations the StatefulSet controller has not observed, then Pods against replicas — with ECK's
reasons (``expectations_test.go``, ``voting_exclusions_test.go``)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from stackflow.stack.elasticsearch.orchestration.expectations import (
    ExpectationCheck,
    expectations_met,
    pods_match_replicas,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import PodState, StatefulSetState
from stackflow.stack.labels import ES_STATEFULSET_NAME_LABEL


def pods(*names: str, terminating: frozenset[str] = frozenset()) -> tuple[PodState, ...]:
    """Pods labelled with the StatefulSet their name starts with."""
    return tuple(
        PodState(
            name,
            labels={ES_STATEFULSET_NAME_LABEL: name.rsplit("-", 1)[0]},
            terminating=name in terminating,
        )
        for name in names
    )


def sset(name: str, replicas: int, generation: int = 1, observed: int = 1) -> StatefulSetState:
    return StatefulSetState(name, replicas, generation=generation, observed_generation=observed)


@pytest.mark.parametrize(
    ("statefulsets", "listed", "expected"),
    [
        pytest.param(
            (sset("nodes", 3),),
            pods("nodes-0", "nodes-1", "nodes-2"),
            ExpectationCheck(True),
            id="3/3 nodes there",
        ),
        pytest.param(
            (sset("nodes", 3),),
            pods("nodes-0", "nodes-1"),
            ExpectationCheck(False, ", creations: [nodes-2]"),
            id="2/3 nodes there",
        ),
        pytest.param(
            (sset("nodes", 2),),
            pods("nodes-0", "nodes-1", "nodes-2"),
            ExpectationCheck(False, ", deletions: [nodes-2]"),
            id="3/2 nodes there",
        ),
        pytest.param(
            (sset("nodes", 2),),
            pods("nodes-0", "nodes-1", terminating=frozenset({"nodes-1"})),
            ExpectationCheck(True),
            id="a terminating Pod still counts",
        ),
        pytest.param(
            (sset("a", 2), sset("b", 1)),
            pods("a-1", "b-0", "b-1"),
            ExpectationCheck(False, ", creations: [a-0]"),
            id="first mismatching StatefulSet",
        ),
        pytest.param(
            (sset("a", 2),),
            pods("a-1", "a-3"),
            ExpectationCheck(False, ", creations: [a-0], deletions: [a-3]"),
            id="both ways",
        ),
        pytest.param((sset("a", 0),), (), ExpectationCheck(True), id="empty StatefulSet"),
    ],
)
def test_pods_match_replicas(
    statefulsets: tuple[StatefulSetState, ...],
    listed: tuple[PodState, ...],
    expected: ExpectationCheck,
) -> None:
    assert pods_match_replicas(statefulsets, listed) == expected


@pytest.mark.parametrize(
    ("statefulsets", "listed", "deletions", "generations", "expected"),
    [
        pytest.param((sset("a", 1),), pods("a-0"), (), {}, ExpectationCheck(True), id="all met"),
        pytest.param(
            (sset("a", 2),),
            pods("a-0", "a-1"),
            ("a-1", "a-0"),
            {},
            ExpectationCheck(False, "Expecting deletion for Pods: a-0,a-1"),
            id="deleted Pods still listed",
        ),
        pytest.param(
            (sset("a", 2, generation=3, observed=3), sset("b", 1)),
            pods("a-0", "a-1", "b-0"),
            (),
            {"a": 4, "b": 1},
            ExpectationCheck(False, "*v1.StatefulSet not reconciled yet: a"),
            id="update not seen yet",
        ),
        pytest.param(
            (sset("a", 1),),
            pods("a-0"),
            (),
            {"gone": 7},
            ExpectationCheck(True),
            id="awaited StatefulSet is gone",
        ),
        pytest.param(
            (sset("a", 1, generation=2, observed=1), sset("b", 1, generation=5, observed=4)),
            pods("a-0", "b-0"),
            (),
            {},
            ExpectationCheck(
                False, "observedGeneration is not reconciled yet for StatefulSets a,b"
            ),
            id="controller has not observed",
        ),
        pytest.param(
            (sset("a", 2),),
            pods("a-0"),
            (),
            {},
            ExpectationCheck(False, ", creations: [a-1]"),
            id="Pods not created yet",
        ),
    ],
)
def test_expectations_met(
    statefulsets: tuple[StatefulSetState, ...],
    listed: tuple[PodState, ...],
    deletions: tuple[str, ...],
    generations: Mapping[str, int],
    expected: ExpectationCheck,
) -> None:
    assert (
        expectations_met(
            statefulsets, listed, awaited_deletions=deletions, awaited_generations=generations
        )
        == expected
    )
