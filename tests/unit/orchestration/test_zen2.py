"""``cluster.initial_master_nodes`` only while bootstrapping, kept stable by ECK's annotation, and
the annotation's removal once an elected master runs 7.0 or later (``initial_master_nodes_test.go``)."""

from __future__ import annotations

import pytest

from stackflow.stack.elasticsearch.orchestration.snapshot import ClusterNode, ExpectedStatefulSet
from stackflow.stack.elasticsearch.orchestration.zen2 import (
    BOOTSTRAP_INCOMPLETE_REASON,
    INITIAL_MASTER_NODES_ANNOTATION,
    NO_MASTER_ERROR,
    BootstrapAnnotation,
    InitialMasterNodes,
    annotated_initial_master_nodes,
    bootstrap_annotation,
    initial_master_nodes,
    is_bootstrapped,
)
from stackflow.stack.labels import ES_CLUSTER_UUID_ANNOTATION
from tests.unit.orchestration.fixtures import roles

RESOURCES = (
    ExpectedStatefulSet("es-master", 3, roles("master")),
    ExpectedStatefulSet("es-masterdata", 3, roles("master", "data")),
    ExpectedStatefulSet("es-data", 3, roles("data")),
)
ALL_MASTERS = (
    "es-master-0",
    "es-master-1",
    "es-master-2",
    "es-masterdata-0",
    "es-masterdata-1",
    "es-masterdata-2",
)


@pytest.mark.parametrize(
    ("annotations", "expected", "result"),
    [
        # ECK's TestSetupInitialMasterNodes.
        pytest.param(
            {},
            RESOURCES,
            InitialMasterNodes(ALL_MASTERS, ",".join(ALL_MASTERS)),
            id="initial creation: compute and keep cluster.initial_master_nodes",
        ),
        pytest.param(
            {INITIAL_MASTER_NODES_ANNOTATION: "node-0,node-1,node-2"},
            RESOURCES,
            InitialMasterNodes(("node-0", "node-1", "node-2")),
            id="currently bootstrapping: reuse the annotated value",
        ),
        pytest.param(
            {ES_CLUSTER_UUID_ANNOTATION: "uuid"},
            RESOURCES,
            InitialMasterNodes(),
            id="existed before: nothing",
        ),
        # Beyond ECK's table.
        pytest.param(
            {ES_CLUSTER_UUID_ANNOTATION: ""},
            RESOURCES,
            InitialMasterNodes(),
            id="an empty uuid annotation still means bootstrapped",
        ),
        pytest.param(
            {ES_CLUSTER_UUID_ANNOTATION: "uuid", INITIAL_MASTER_NODES_ANNOTATION: "a-0"},
            RESOURCES,
            InitialMasterNodes(("a-0",)),
            id="the annotation wins until it is removed",
        ),
        pytest.param(
            {INITIAL_MASTER_NODES_ANNOTATION: "es-master-0"},
            (ExpectedStatefulSet("es-master", 5, roles("master")),),
            InitialMasterNodes(("es-master-0",)),
            id="a spec change while bootstrapping does not change the list",
        ),
        pytest.param(
            {},
            (ExpectedStatefulSet("es-data", 3, roles("data")),),
            InitialMasterNodes(error=NO_MASTER_ERROR),
            id="no master to bootstrap with",
        ),
        pytest.param(
            {},
            (
                ExpectedStatefulSet("es-master", 1, roles("master")),
                ExpectedStatefulSet("es-new", 0, roles("master")),
            ),
            InitialMasterNodes(("es-master-0",), "es-master-0"),
            id="replicas of this pass (after maxSurge)",
        ),
    ],
)
def test_initial_master_nodes(
    annotations: dict[str, str],
    expected: tuple[ExpectedStatefulSet, ...],
    result: InitialMasterNodes,
) -> None:
    assert initial_master_nodes(annotations, expected) == result


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        # ECK's Test_getInitialMasterNodesAnnotation.
        pytest.param({}, (), id="annotations nil"),
        pytest.param({"other": "x"}, (), id="annotation not set"),
        pytest.param(
            {INITIAL_MASTER_NODES_ANNOTATION: "node-0"}, ("node-0",), id="one master node"
        ),
        pytest.param(
            {INITIAL_MASTER_NODES_ANNOTATION: "node-0,node-1,node-2"},
            ("node-0", "node-1", "node-2"),
            id="several master nodes",
        ),
        pytest.param({INITIAL_MASTER_NODES_ANNOTATION: ""}, (), id="empty value"),
    ],
)
def test_annotated_initial_master_nodes(
    annotations: dict[str, str], expected: tuple[str, ...]
) -> None:
    assert annotated_initial_master_nodes(annotations) == expected


@pytest.mark.parametrize(
    ("annotations", "bootstrapped"),
    [
        ({}, False),
        ({ES_CLUSTER_UUID_ANNOTATION: "abc"}, True),
        ({INITIAL_MASTER_NODES_ANNOTATION: "a-0"}, False),
    ],
)
def test_is_bootstrapped(annotations: dict[str, str], bootstrapped: bool) -> None:
    assert is_bootstrapped(annotations) is bootstrapped


BOOTSTRAPPING = {INITIAL_MASTER_NODES_ANNOTATION: "foo,bar"}


@pytest.mark.parametrize(
    ("annotations", "master", "expected"),
    [
        # ECK's TestRemoveZen2BootstrapAnnotation (its error row is the Elasticsearch call's).
        pytest.param({}, None, BootstrapAnnotation(), id="no annotation: nothing to do"),
        pytest.param(
            BOOTSTRAPPING,
            None,
            BootstrapAnnotation(requeue_reason=BOOTSTRAP_INCOMPLETE_REASON),
            id="bootstrap not over yet",
        ),
        pytest.param(
            BOOTSTRAPPING,
            ClusterNode("foo", "id", version="8.15.0"),
            BootstrapAnnotation(remove=True),
            id="bootstrap is over",
        ),
        # Beyond ECK's table.
        pytest.param(
            BOOTSTRAPPING,
            ClusterNode("foo", "id", version="6.8.0"),
            BootstrapAnnotation(requeue_reason=BOOTSTRAP_INCOMPLETE_REASON),
            id="a 6.x master is no zen2 bootstrap",
        ),
        pytest.param(
            BOOTSTRAPPING,
            ClusterNode("foo", "id", version="7.0.0"),
            BootstrapAnnotation(remove=True),
            id="7.0 is enough",
        ),
        pytest.param(
            BOOTSTRAPPING,
            ClusterNode("foo", "id", version="seven"),
            BootstrapAnnotation(error="unable to parse node version seven"),
            id="a version that does not parse",
        ),
    ],
)
def test_bootstrap_annotation(
    annotations: dict[str, str], master: ClusterNode | None, expected: BootstrapAnnotation
) -> None:
    assert bootstrap_annotation(annotations, master) == expected
