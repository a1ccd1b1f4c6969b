"""The volume decisions (ECK's): claim validation, PVC resizes, the recreation state machine, the
claims of removed nodes and the delete policy's ownerReferences."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from stackflow.stack.elasticsearch.pods import volume_claim_templates
from stackflow.stack.elasticsearch.volumes import (
    CLAIMS_IMMUTABLE_MESSAGE,
    NO_DEFAULT_STORAGE_CLASS_MESSAGE,
    RecreateAction,
    StorageChange,
    claim_templates_refusal,
    compare_storage,
    default_storage_class,
    elasticsearch_owner_reference,
    expansion_refusal,
    needs_recreate,
    node_set_claims_field,
    pvc_names_to_keep,
    pvc_owner_changes,
    pvc_resizes,
    pvcs_to_delete,
    recreate_annotation,
    recreate_steps,
    recreated_statefulset,
    volume_claim_delete_policy,
    volume_claim_problems,
    with_owner_reference,
    without_owner_reference,
)

DECREASE = (
    "decreasing storage size is not supported: an attempt was made to decrease storage size "
    "for claim elasticsearch-data"
)


def claim(
    name: str = "elasticsearch-data", storage: str | None = "1Gi", **spec: Any
) -> dict[str, Any]:
    """A claim template as the builder writes it."""
    body: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], **spec}
    if storage is not None:
        body["resources"] = {"requests": {"storage": storage}}
    return {"metadata": {"name": name}, "spec": body}


def stored(template: dict[str, Any]) -> dict[str, Any]:
    """A claim template as the API server stores it in a StatefulSet (kubesim adds the same)."""
    result = copy.deepcopy(template)
    result["apiVersion"] = "v1"
    result["kind"] = "PersistentVolumeClaim"
    result["metadata"]["creationTimestamp"] = None
    result["spec"].setdefault("volumeMode", "Filesystem")
    result["status"] = {"phase": "Pending"}
    return result


def storage_class(
    name: str, *, expands: bool | None = None, default: str | None = None
) -> dict[str, Any]:
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "example.com/disk",
    }
    if expands is not None:
        sc["allowVolumeExpansion"] = expands
    if default is not None:
        sc["metadata"]["annotations"] = {default: "true"}
    return sc


DEFAULT = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT = "storageclass.beta.kubernetes.io/is-default-class"
EXPANDING_DEFAULT = storage_class("standard", expands=True, default=DEFAULT)
FIXED_DEFAULT = storage_class("standard", expands=False, default=DEFAULT)


def statefulset(
    name: str = "quickstart-es-default",
    *,
    replicas: int = 2,
    claims: list[dict[str, Any]] | None = None,
    uid: str = "sts-uid-1",
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": "42",
            "labels": {"elasticsearch.k8s.elastic.co/cluster-name": "quickstart"},
            "ownerReferences": [{"kind": "Elasticsearch", "name": "quickstart", "uid": "es-uid"}],
            "managedFields": [{"manager": "stackflow"}],
        },
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "volumeClaimTemplates": claims if claims is not None else [stored(claim())],
        },
        "status": {"replicas": replicas},
    }


def pvc(name: str, storage: str = "1Gi", **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}", **metadata},
        "spec": {"resources": {"requests": {"storage": storage}}},
    }


def es(
    *, annotations: dict[str, str] | None = None, uid: str = "es-uid", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {
            "name": "quickstart",
            "namespace": "team-a",
            "uid": uid,
            "annotations": annotations or {},
        },
        "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 2}], **spec},
    }


# --- storage comparison -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("1Gi", "1Gi", StorageChange.SAME),
        ("1Gi", "1024Mi", StorageChange.SAME),
        ("1Gi", "2Gi", StorageChange.INCREASE),
        ("1Gi", "1.5Gi", StorageChange.INCREASE),
        ("2Gi", "1Gi", StorageChange.DECREASE),
        ("1G", "1Gi", StorageChange.INCREASE),
        # ECK: a missing or zero size on either side compares as no change.
        (None, "2Gi", StorageChange.SAME),
        ("1Gi", None, StorageChange.SAME),
        ("0", "2Gi", StorageChange.SAME),
    ],
)
def test_storage_requests_compare_as_quantities(
    before: str | None, after: str | None, expected: StorageChange
) -> None:
    assert compare_storage(claim(storage=before), claim(storage=after)) is expected


# --- StorageClasses -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ([], None),
        ([storage_class("a"), storage_class("b", default=DEFAULT)], "b"),
        ([storage_class("a", default=BETA_DEFAULT)], "a"),
        ([storage_class("a", default="example.com/is-default")], None),
    ],
)
def test_the_default_storage_class_is_the_annotated_one(
    classes: list[dict[str, Any]], expected: str | None
) -> None:
    found = default_storage_class(classes)
    assert (found["metadata"]["name"] if found else None) == expected


@pytest.mark.parametrize(
    ("template", "classes", "expected"),
    [
        pytest.param(claim(), [EXPANDING_DEFAULT], None, id="default-class-expands"),
        pytest.param(
            claim(),
            [FIXED_DEFAULT],
            "claim elasticsearch-data (storage class standard) does not support volume expansion",
            id="default-class-fixed",
        ),
        pytest.param(
            claim(),
            [storage_class("standard", default=DEFAULT)],
            "claim elasticsearch-data (storage class standard) does not support volume expansion",
            id="allowVolumeExpansion-unset",
        ),
        pytest.param(
            claim(),
            [storage_class("fast", expands=True)],
            NO_DEFAULT_STORAGE_CLASS_MESSAGE,
            id="no-default-class",
        ),
        pytest.param(
            claim(storageClassName="fast"),
            [FIXED_DEFAULT, storage_class("fast", expands=True)],
            None,
            id="named-class-expands",
        ),
        pytest.param(
            claim(storageClassName="fast"),
            [EXPANDING_DEFAULT, storage_class("fast", expands=False)],
            "claim elasticsearch-data (storage class fast) does not support volume expansion",
            id="named-class-fixed-default-ignored",
        ),
        pytest.param(
            claim(storageClassName="gone"),
            [EXPANDING_DEFAULT],
            'cannot retrieve storage class: storageclasses.storage.k8s.io "gone" not found',
            id="named-class-missing",
        ),
        pytest.param(
            claim(storageClassName=""), [EXPANDING_DEFAULT], None, id="empty-name-means-default"
        ),
    ],
)
def test_an_increase_needs_a_storage_class_that_expands(
    template: dict[str, Any], classes: list[dict[str, Any]], expected: str | None
) -> None:
    assert expansion_refusal(template, classes) == expected


# --- claim template validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "desired", "classes", "expected"),
    [
        pytest.param([stored(claim())], [claim()], [], None, id="unchanged-server-defaults"),
        pytest.param(
            [stored(claim(storage="1024Mi"))], [claim()], [], None, id="same-amount-spelt-apart"
        ),
        pytest.param([], [], [], None, id="no-claims"),
        pytest.param(
            [stored(claim())], [claim(storage="2Gi")], [EXPANDING_DEFAULT], None, id="increase"
        ),
        pytest.param(
            [stored(claim())],
            [claim(storage="2Gi")],
            [FIXED_DEFAULT],
            "claim elasticsearch-data (storage class standard) does not support volume expansion",
            id="increase-not-expandable",
        ),
        pytest.param(
            [stored(claim(storage="2Gi"))], [claim()], [EXPANDING_DEFAULT], DECREASE, id="decrease"
        ),
        pytest.param(
            [stored(claim())],
            [claim(), claim("extra")],
            [],
            CLAIMS_IMMUTABLE_MESSAGE,
            id="claim-added",
        ),
        pytest.param(
            [stored(claim()), stored(claim("extra"))],
            [claim()],
            [],
            CLAIMS_IMMUTABLE_MESSAGE,
            id="claim-removed",
        ),
        pytest.param(
            [stored(claim())], [claim("renamed")], [], CLAIMS_IMMUTABLE_MESSAGE, id="claim-renamed"
        ),
        pytest.param(
            [stored(claim("a")), stored(claim("b"))],
            [claim("b"), claim("a")],
            [],
            CLAIMS_IMMUTABLE_MESSAGE,
            id="claims-reordered",
        ),
        pytest.param(
            [stored(claim())],
            [claim(storage="2Gi", accessModes=["ReadWriteMany"])],
            [EXPANDING_DEFAULT],
            CLAIMS_IMMUTABLE_MESSAGE,
            id="other-field-with-increase",
        ),
        pytest.param(
            [stored(claim())],
            [claim(storageClassName="fast")],
            [],
            CLAIMS_IMMUTABLE_MESSAGE,
            id="storage-class-changed",
        ),
        pytest.param(
            [stored(claim())],
            [claim(volumeMode="Block")],
            [],
            CLAIMS_IMMUTABLE_MESSAGE,
            id="volume-mode-changed",
        ),
        pytest.param(
            [stored(claim("a")), stored(claim(storage="3Gi"))],
            [claim("a", storage="2Gi"), claim(storage="2Gi")],
            [EXPANDING_DEFAULT],
            DECREASE,
            id="first-refusal-wins",
        ),
    ],
)
def test_only_a_storage_increase_the_class_allows_may_change_the_claims(
    current: list[dict[str, Any]],
    desired: list[dict[str, Any]],
    classes: list[dict[str, Any]],
    expected: str | None,
) -> None:
    assert claim_templates_refusal(current, desired, classes) == expected


def test_the_webhook_checks_each_node_set_against_its_statefulset() -> None:
    cluster = es(
        nodeSets=[
            {"name": "new", "count": 1, "volumeClaimTemplates": [claim(storage="1Mi")]},
            {"name": "default", "count": 2, "volumeClaimTemplates": [claim(storage="500Mi")]},
            {"name": "grows", "count": 1, "volumeClaimTemplates": [claim(storage="5Gi")]},
            # No claim templates: the builder's default 1Gi data claim is compared.
            {"name": "plain", "count": 1},
        ]
    )
    current = [
        statefulset("quickstart-es-default"),
        statefulset("quickstart-es-grows"),
        statefulset("quickstart-es-plain", claims=[stored(claim(storage="1Gi"))]),
    ]
    assert volume_claim_problems(cluster, current, [FIXED_DEFAULT]) == [
        ("spec.nodeSets[1].volumeClaimTemplates", DECREASE),
        (
            "spec.nodeSets[2].volumeClaimTemplates",
            "claim elasticsearch-data (storage class standard) does not support volume expansion",
        ),
    ]
    assert volume_claim_problems(cluster, current[1:], [EXPANDING_DEFAULT]) == []


def test_a_reverted_size_is_accepted_while_the_statefulset_still_has_it() -> None:
    # 1Gi → 2Gi refused (no expansion), then back to 1Gi: the StatefulSet still says 1Gi.
    node_set = {"name": "default", "count": 2, "volumeClaimTemplates": [claim(storage="1Gi")]}
    assert volume_claim_problems(es(nodeSets=[node_set]), [statefulset()], [FIXED_DEFAULT]) == []
    assert volume_claim_templates(node_set) == [claim(storage="1Gi")]


@pytest.mark.parametrize(
    ("statefulset_name", "expected"),
    [
        ("quickstart-es-default", "spec.nodeSets[0].volumeClaimTemplates"),
        ("quickstart-es-hot", "spec.nodeSets[1].volumeClaimTemplates"),
        ("quickstart-es-gone", "spec.nodeSets"),
    ],
)
def test_a_refusal_names_its_node_set(statefulset_name: str, expected: str) -> None:
    cluster = es(nodeSets=[{"name": "default", "count": 1}, {"name": "hot", "count": 1}])
    assert node_set_claims_field(cluster, statefulset_name) == expected


# --- expansion ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "desired", "expected"),
    [
        ([stored(claim())], [claim()], False),
        ([stored(claim())], [claim(storage="2Gi")], True),
        ([stored(claim(storage="2Gi"))], [claim()], False),
        # A claim the StatefulSet lacks is validation's business, not a recreation.
        ([stored(claim())], [claim(), claim("extra", storage="9Gi")], False),
        ([stored(claim("a")), stored(claim())], [claim("a"), claim(storage="2Gi")], True),
    ],
)
def test_a_statefulset_is_recreated_when_a_claim_grows(
    current: list[dict[str, Any]], desired: list[dict[str, Any]], expected: bool
) -> None:
    assert (
        needs_recreate(statefulset(claims=current), statefulset(claims=desired, uid="")) is expected
    )


@pytest.mark.parametrize(
    ("replicas", "pvcs", "expected"),
    [
        pytest.param(
            2,
            [
                pvc("elasticsearch-data-quickstart-es-default-0"),
                pvc("elasticsearch-data-quickstart-es-default-1"),
            ],
            (
                ("elasticsearch-data-quickstart-es-default-0", "2Gi"),
                ("elasticsearch-data-quickstart-es-default-1", "2Gi"),
            ),
            id="every-pvc-of-the-pods",
        ),
        pytest.param(
            2,
            [
                pvc("elasticsearch-data-quickstart-es-default-0", "2Gi"),
                pvc("elasticsearch-data-quickstart-es-default-1", "2048Mi"),
            ],
            (),
            id="already-resized",
        ),
        pytest.param(
            2,
            [pvc("elasticsearch-data-quickstart-es-default-1", "3Gi")],
            (),
            id="larger-pvc-untouched-missing-pvc-skipped",
        ),
        pytest.param(
            1,
            [
                pvc("elasticsearch-data-quickstart-es-default-0"),
                pvc("elasticsearch-data-quickstart-es-default-1"),
                pvc("elasticsearch-data-quickstart-es-other-0"),
                pvc("logs-quickstart-es-default-0"),
            ],
            (("elasticsearch-data-quickstart-es-default-0", "2Gi"),),
            id="only-ordinals-below-the-replicas",
        ),
    ],
)
def test_smaller_pvcs_of_the_statefulset_are_resized(
    replicas: int, pvcs: list[dict[str, Any]], expected: tuple[tuple[str, str], ...]
) -> None:
    actual = statefulset(replicas=replicas)
    desired = statefulset(replicas=replicas, claims=[claim(storage="2Gi")])
    assert pvc_resizes(actual, desired, pvcs) == expected


def test_the_recreate_annotation_holds_the_current_statefulset_with_the_new_claims() -> None:
    actual = statefulset()
    desired = statefulset(claims=[claim(storage="2Gi")])

    key, value = recreate_annotation(actual, desired)

    assert key == "elasticsearch.k8s.elastic.co/recreate-quickstart-es-default"
    held = json.loads(value)
    assert held["metadata"]["uid"] == "sts-uid-1"
    assert held["spec"]["volumeClaimTemplates"] == [claim(storage="2Gi")]
    assert held["spec"]["serviceName"] == "quickstart-es-default"
    assert "status" not in held
    assert "managedFields" not in held["metadata"]
    assert actual == statefulset()  # the input is not changed


def test_a_recreated_statefulset_has_fresh_metadata() -> None:
    held = json.loads(recreate_annotation(statefulset(), statefulset(claims=[claim("x")]))[1])

    created = recreated_statefulset(held)

    assert created["metadata"] == {
        "name": "quickstart-es-default",
        "namespace": "team-a",
        "labels": {"elasticsearch.k8s.elastic.co/cluster-name": "quickstart"},
        "ownerReferences": [{"kind": "Elasticsearch", "name": "quickstart", "uid": "es-uid"}],
    }
    assert created["spec"]["volumeClaimTemplates"] == [claim("x")]
    assert "status" not in created


KEY = "elasticsearch.k8s.elastic.co/recreate-quickstart-es-default"
HELD = recreate_annotation(statefulset(), statefulset(claims=[claim(storage="2Gi")]))[1]


def _deleting(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["deletionTimestamp"] = "2026-03-01T00:00:00Z"
    return obj


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        pytest.param(
            {"quickstart-es-default": statefulset()}, RecreateAction.DELETE, id="same-uid"
        ),
        pytest.param(
            {"quickstart-es-default": _deleting(statefulset())},
            RecreateAction.AWAIT_DELETION,
            id="same-uid-being-deleted",
        ),
        pytest.param({}, RecreateAction.CREATE, id="missing"),
        pytest.param(
            {"quickstart-es-default": statefulset(uid="sts-uid-2")},
            RecreateAction.DONE,
            id="another-uid",
        ),
    ],
)
def test_the_recreation_moves_one_step_per_pass(
    current: dict[str, dict[str, Any]], expected: RecreateAction
) -> None:
    annotations = {KEY: HELD, "unrelated": "x"}

    steps, problems = recreate_steps(annotations, current)

    assert problems == ()
    assert [(step.annotation, step.statefulset, step.action) for step in steps] == [
        (KEY, "quickstart-es-default", expected)
    ]
    step = steps[0]
    assert step.uid == ("sts-uid-1" if expected is RecreateAction.DELETE else step.uid)
    if expected is RecreateAction.CREATE:
        assert step.manifest is not None
        assert "uid" not in step.manifest["metadata"]
        assert step.manifest["spec"]["volumeClaimTemplates"] == [claim(storage="2Gi")]
    else:
        assert step.manifest is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"metadata": {"name": "quickstart-es-default"}}', "no name or uid"),
    ],
)
def test_an_annotation_without_a_statefulset_is_a_problem(value: str, reason: str) -> None:
    steps, problems = recreate_steps({KEY: value}, {})

    assert steps == ()
    assert len(problems) == 1
    assert problems[0][0] == f"metadata.annotations[{KEY}]"
    assert reason in problems[0][1]


def test_no_annotation_no_step() -> None:
    assert recreate_steps({}, {"quickstart-es-default": statefulset()}) == ((), ())


# --- owner references ---------------------------------------------------------------------------

OWNER = elasticsearch_owner_reference(es())
STS_OWNER = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "name": "s",
    "uid": "u",
    "controller": True,
}


def test_the_owner_reference_is_not_a_controller_reference() -> None:
    assert OWNER == {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "name": "quickstart",
        "uid": "es-uid",
    }


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([], [OWNER]),
        ([STS_OWNER], [STS_OWNER, OWNER]),
        ([OWNER], None),
        # An Elasticsearch of the same name deleted and created again: its reference replaced.
        ([{**OWNER, "uid": "old"}, STS_OWNER], [OWNER, STS_OWNER]),
        # Same name and uid under an older apiVersion: already owned (ECK keeps such references).
        ([{**OWNER, "apiVersion": "elasticsearch.k8s.elastic.co/v1beta1"}], None),
    ],
)
def test_with_owner_reference(
    refs: list[dict[str, Any]], expected: list[dict[str, Any]] | None
) -> None:
    assert with_owner_reference(pvc("p", ownerReferences=refs), es()) == expected


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([], None),
        ([STS_OWNER], None),
        ([OWNER, STS_OWNER], [STS_OWNER]),
        ([{**OWNER, "uid": "another"}], None),
    ],
)
def test_without_owner_reference(
    refs: list[dict[str, Any]], expected: list[dict[str, Any]] | None
) -> None:
    assert without_owner_reference(pvc("p", ownerReferences=refs), es()) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (None, "DeleteOnScaledownAndClusterDeletion"),
        ("", "DeleteOnScaledownAndClusterDeletion"),
        ("DeleteOnScaledownOnly", "DeleteOnScaledownOnly"),
        ("DeleteOnScaledownAndClusterDeletion", "DeleteOnScaledownAndClusterDeletion"),
    ],
)
def test_the_delete_policy_defaults_as_eck(policy: str | None, expected: str) -> None:
    assert volume_claim_delete_policy(es(volumeClaimDeletePolicy=policy)) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(
            None,
            (("a-owned-by-sts", [STS_OWNER, OWNER]), ("b-bare", [OWNER])),
            id="default-owns-every-pvc",
        ),
        pytest.param(
            "DeleteOnScaledownOnly", (("c-owned", []),), id="scaledown-only-releases-them"
        ),
        pytest.param("SomethingElse", (), id="unknown-policy-touches-nothing"),
    ],
)
def test_pvc_owner_references_follow_the_delete_policy(
    policy: str | None, expected: tuple[tuple[str, list[dict[str, Any]]], ...]
) -> None:
    pvcs = [
        pvc("c-owned", ownerReferences=[OWNER]),
        pvc("b-bare"),
        pvc("a-owned-by-sts", ownerReferences=[STS_OWNER]),
        _deleting(pvc("d-deleting")),
    ]
    assert pvc_owner_changes(pvcs, es(volumeClaimDeletePolicy=policy)) == expected


# --- claims of removed nodes --------------------------------------------------------------------


def test_the_claims_to_keep_are_every_claim_of_every_ordinal_below_the_replicas() -> None:
    two_claims = statefulset(replicas=2, claims=[stored(claim()), stored(claim("logs"))])
    assert pvc_names_to_keep([two_claims, statefulset("quickstart-es-none", replicas=0)]) == {
        "elasticsearch-data-quickstart-es-default-0",
        "elasticsearch-data-quickstart-es-default-1",
        "logs-quickstart-es-default-0",
        "logs-quickstart-es-default-1",
    }


@pytest.mark.parametrize(
    ("actual", "expected_replicas", "pvc_names", "deleted"),
    [
        pytest.param(
            3,
            3,
            [
                "elasticsearch-data-quickstart-es-default-0",
                "elasticsearch-data-quickstart-es-default-2",
            ],
            [],
            id="all-mounted",
        ),
        pytest.param(
            3,
            1,
            ["elasticsearch-data-quickstart-es-default-2"],
            [],
            id="downscale-not-done-yet-kept",
        ),
        pytest.param(
            1,
            3,
            ["elasticsearch-data-quickstart-es-default-2"],
            [],
            id="upscale-not-done-yet-kept",
        ),
        pytest.param(
            1,
            1,
            [
                "elasticsearch-data-quickstart-es-default-0",
                "elasticsearch-data-quickstart-es-default-1",
                "elasticsearch-data-quickstart-es-default-4",
            ],
            [
                "elasticsearch-data-quickstart-es-default-1",
                "elasticsearch-data-quickstart-es-default-4",
            ],
            id="ordinals-not-below-both-deleted",
        ),
        pytest.param(
            2,
            2,
            ["elasticsearch-data-quickstart-es-removed-0", "stray-claim"],
            ["elasticsearch-data-quickstart-es-removed-0", "stray-claim"],
            id="statefulset-gone-and-stray-names-deleted",
        ),
    ],
)
def test_pvcs_no_statefulset_would_mount_are_deleted(
    actual: int, expected_replicas: int, pvc_names: list[str], deleted: list[str]
) -> None:
    pvcs = [pvc(name) for name in pvc_names]
    chosen = pvcs_to_delete(
        pvcs,
        actual=[statefulset(replicas=actual)],
        expected=[statefulset(replicas=expected_replicas, claims=[claim()])],
    )
    assert [p["metadata"]["name"] for p in chosen] == deleted


def test_pvcs_of_a_node_set_being_renamed_are_kept_while_either_statefulset_wants_them() -> None:
    pvcs = [
        pvc("elasticsearch-data-quickstart-es-old-0"),
        pvc("elasticsearch-data-quickstart-es-new-0"),
    ]
    chosen = pvcs_to_delete(
        pvcs,
        actual=[statefulset("quickstart-es-old", replicas=1)],
        expected=[statefulset("quickstart-es-new", replicas=1)],
    )
    assert chosen == ()


def test_a_pvc_already_being_deleted_is_not_deleted_again() -> None:
    pvcs = [_deleting(pvc("elasticsearch-data-quickstart-es-default-5"))]
    assert pvcs_to_delete(pvcs, actual=[statefulset()], expected=[statefulset()]) == ()
