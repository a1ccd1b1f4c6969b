"""What informers keep: projections answer "did it change" as whole objects do; the policy of
which informer keeps what, which follows which; the cache's lean indexes."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest

from stackflow.controllers import CONTROLLERS
from stackflow.kube.cache import (
    DIGEST_KEY,
    LAST_APPLIED_ANNOTATION,
    ObjectCache,
    Projection,
    content_digest,
    is_projected,
    metadata_projection,
    project,
    whole_object,
)
from stackflow.licensing.model import OPERATOR_LICENSE_SELECTOR, TRIAL_SELECTOR
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import (
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    Kind,
)
from stackflow.stack.labels import TYPE_LABEL
from watchers.informers import (
    covering_informers,
    follow_sources,
    informer_projection,
    reference_resources,
    selector_predicate,
)
from watchers.triggers import child_owners, license_trigger, reference_trigger

ELASTICSEARCHES = Kind("elasticsearch.k8s.elastic.co", "v1", "Elasticsearch", "elasticsearches")
MANAGED_FIELDS = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:data": {}}}]


def secret(**changes: Any) -> dict[str, Any]:
    """A Secret as the API server sends it, with ``changes`` merged into its metadata or body."""
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "es-es-elastic-user",
            "namespace": "team-a",
            "uid": "6f1e0c9a-0000-4000-8000-000000000001",
            "resourceVersion": "41",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"elasticsearch.k8s.elastic.co/cluster-name": "es"},
            "annotations": {"note": "a", LAST_APPLIED_ANNOTATION: '{"data":{"elastic":"x"}}'},
            "ownerReferences": [
                {
                    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
                    "kind": "Elasticsearch",
                    "name": "es",
                    "uid": "6f1e0c9a-0000-4000-8000-0000000000aa",
                    "controller": True,
                }
            ],
            "managedFields": MANAGED_FIELDS,
        },
        "type": "Opaque",
        "data": {"elastic": "c2VjcmV0"},
    }
    for key, value in changes.items():
        if key in obj["metadata"] or key in ("deletionTimestamp", "finalizers"):
            obj["metadata"][key] = value
        else:
            obj[key] = value
    return obj


def _annotations(**values: str) -> dict[str, str]:
    return {"note": "a", LAST_APPLIED_ANNOTATION: '{"data":{"elastic":"x"}}', **values}


# --- the projections ------------------------------------------------------------------------------


def test_a_metadata_projection_keeps_identity_and_metadata_and_digests_the_rest() -> None:
    original = secret()
    before = copy.deepcopy(original)

    projected = metadata_projection(original)

    assert original == before  # the object it was made from is left alone
    assert set(projected) == {"apiVersion", "kind", "metadata", DIGEST_KEY}
    assert (projected["apiVersion"], projected["kind"]) == ("v1", "Secret")
    expected_metadata = {
        key: value for key, value in before["metadata"].items() if key != "managedFields"
    }
    expected_metadata["annotations"] = {"note": "a"}
    assert projected["metadata"] == expected_metadata
    assert projected[DIGEST_KEY] == content_digest(original)
    assert is_projected(projected)
    assert "c2VjcmV0" not in json.dumps(projected)  # nor the Secret's data


def test_the_last_applied_annotation_alone_leaves_no_annotations_behind() -> None:
    projected = metadata_projection(secret(annotations={LAST_APPLIED_ANNOTATION: "{}"}))

    assert "annotations" not in projected["metadata"]


def test_a_whole_object_only_loses_its_managed_fields() -> None:
    original = secret(status={"phase": "Bound", "conditions": [{"type": "Ready"}]})
    before = copy.deepcopy(original)

    whole = whole_object(original)

    assert original == before
    expected = copy.deepcopy(before)
    del expected["metadata"]["managedFields"]
    assert whole == expected
    assert not is_projected(whole)
    assert project(original, Projection.WHOLE) == whole
    assert project(original, Projection.METADATA) == metadata_projection(original)


def test_names_labels_and_keys_are_shared_between_objects_decoded_apart() -> None:
    first = whole_object(json.loads(json.dumps(secret())))
    second = metadata_projection(json.loads(json.dumps(secret(resourceVersion="42"))))

    assert first["metadata"]["namespace"] is second["metadata"]["namespace"]
    assert first["metadata"]["name"] is second["metadata"]["name"]
    first_labels, second_labels = first["metadata"]["labels"], second["metadata"]["labels"]
    assert next(iter(first_labels)) is next(iter(second_labels))
    assert next(iter(first_labels.values())) is next(iter(second_labels.values()))
    first_owner = first["metadata"]["ownerReferences"][0]
    assert first_owner["kind"] is second["metadata"]["ownerReferences"][0]["kind"]


def _owners(obj: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    return (NamespacedName("team-a", "es"),)


# (old, new, whether anything but the resourceVersion and the managed fields changed)
CHANGES = [
    pytest.param(secret(), secret(resourceVersion="42"), False, id="resource-version-only"),
    pytest.param(
        secret(),
        secret(resourceVersion="42", managedFields=[{"manager": "other"}]),
        False,
        id="managed-fields-only",
    ),
    pytest.param(secret(), secret(data={"elastic": "bmV3"}), True, id="data"),
    pytest.param(secret(), secret(type="kubernetes.io/tls"), True, id="type"),
    pytest.param(secret(), secret(status={"x": 1}), True, id="a-new-top-level-field"),
    pytest.param(
        secret(),
        secret(labels={"elasticsearch.k8s.elastic.co/cluster-name": "other"}),
        True,
        id="label",
    ),
    pytest.param(secret(), secret(annotations=_annotations(note="b")), True, id="annotation"),
    pytest.param(
        secret(),
        secret(annotations=_annotations(**{LAST_APPLIED_ANNOTATION: "{}"})),
        True,
        id="last-applied-annotation",
    ),
    pytest.param(secret(), secret(ownerReferences=[]), True, id="owner-references"),
    pytest.param(secret(), secret(deletionTimestamp="2026-01-02T00:00:00Z"), True, id="deletion"),
    pytest.param(secret(), secret(finalizers=["keep"]), True, id="finalizers"),
]


@pytest.mark.parametrize(("old", "new", "changed"), CHANGES)
def test_projections_tell_a_meaningful_change_as_whole_objects_do(
    old: dict[str, Any], new: dict[str, Any], changed: bool
) -> None:
    for form in (Projection.WHOLE, Projection.METADATA):
        before, after = project(old, form), project(new, form)
        assert (reference_trigger("MODIFIED", before, after, source="test") is not None) is (
            changed
        )
        assert bool(child_owners("MODIFIED", before, after, _owners)) is changed
    # And exactly as on the objects the API server sent.
    assert (reference_trigger("MODIFIED", old, new, source="test") is not None) is changed


def test_a_license_secret_change_reads_alike_on_projections() -> None:
    labels = {"license.k8s.elastic.co/scope": "operator"}
    old = secret(labels=labels)
    new = secret(labels=labels, data={"license": "bmV3"})
    for form in (Projection.WHOLE, Projection.METADATA):
        assert license_trigger("MODIFIED", project(old, form), project(new, form), source="t")
        assert not license_trigger(
            "MODIFIED", project(old, form), project(secret(labels=labels), form), source="t"
        )


# --- which informer keeps what -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "selector", "raw", "expected"),
    [
        pytest.param(SECRETS, None, False, Projection.METADATA, id="referenced-secrets"),
        pytest.param(
            SECRETS, "kibana.k8s.elastic.co/name", False, Projection.METADATA, id="child-secrets"
        ),
        pytest.param(
            SECRETS, OPERATOR_LICENSE_SELECTOR, False, Projection.WHOLE, id="license-secrets"
        ),
        pytest.param(SECRETS, TRIAL_SELECTOR, True, Projection.WHOLE, id="a-primary-raw"),
        pytest.param(CONFIGMAPS, None, False, Projection.METADATA, id="configmaps"),
        pytest.param(SERVICES, None, False, Projection.METADATA, id="services"),
        pytest.param(PODS, "apm.k8s.elastic.co/name", False, Projection.METADATA, id="pods"),
        pytest.param(STATEFULSETS, "x", False, Projection.METADATA, id="statefulsets"),
        pytest.param(ELASTICSEARCHES, None, False, Projection.WHOLE, id="custom-resources"),
        pytest.param(NAMESPACES, None, False, Projection.WHOLE, id="not-a-child-kind"),
    ],
)
def test_informer_projection(
    resource: Kind, selector: str | None, raw: bool, expected: Projection
) -> None:
    assert informer_projection(resource, selector, raw=raw) is expected


def test_every_primary_and_reference_target_of_the_table_stays_whole() -> None:
    for controller in CONTROLLERS:
        assert (
            informer_projection(controller.primary, controller.primary_label_selector, raw=True)
            is Projection.WHOLE
        )
    custom = [kind for kind in reference_resources(CONTROLLERS) if kind.group]
    assert custom
    for kind in custom:
        assert informer_projection(kind, None, raw=False) is Projection.WHOLE


def _key(kind: Kind, selector: str = "") -> tuple[str, str, str, str]:
    return (kind.group, kind.version, kind.plural, selector)


@pytest.mark.parametrize(
    ("projections", "expected"),
    [
        pytest.param({}, {}, id="nothing"),
        pytest.param(
            {
                _key(SECRETS): Projection.METADATA,
                _key(SECRETS, "a"): Projection.METADATA,
                _key(SECRETS, "b=c"): Projection.METADATA,
            },
            {_key(SECRETS, "a"): _key(SECRETS), _key(SECRETS, "b=c"): _key(SECRETS)},
            id="selected-secrets-follow-the-unfiltered-informer",
        ),
        pytest.param(
            {
                _key(SECRETS): Projection.METADATA,
                _key(SECRETS, OPERATOR_LICENSE_SELECTOR): Projection.WHOLE,
            },
            {},
            id="not-across-projections",
        ),
        pytest.param(
            {_key(PODS, "a"): Projection.METADATA, _key(PODS, "b"): Projection.METADATA},
            {},
            id="no-unfiltered-informer-of-the-kind",
        ),
        pytest.param(
            {_key(SECRETS): Projection.METADATA, _key(SECRETS, "a in (b"): Projection.METADATA},
            {},
            id="unparseable-selector-watches-on-its-own",
        ),
        pytest.param(
            {
                _key(PODS, "a"): Projection.METADATA,
                _key(PODS, "b=c"): Projection.METADATA,
                _key(PODS, TYPE_LABEL): Projection.METADATA,
            },
            {_key(PODS, "a"): _key(PODS, TYPE_LABEL), _key(PODS, "b=c"): _key(PODS, TYPE_LABEL)},
            id="selected-pods-follow-the-covering-informer",
        ),
        pytest.param(
            {
                _key(PODS, "a"): Projection.METADATA,
                _key(PODS): Projection.METADATA,
                _key(PODS, TYPE_LABEL): Projection.METADATA,
            },
            {_key(PODS, "a"): _key(PODS), _key(PODS, TYPE_LABEL): _key(PODS)},
            id="the-unfiltered-informer-first",
        ),
        pytest.param(
            {
                _key(SECRETS, "a"): Projection.METADATA,
                _key(SECRETS, TYPE_LABEL): Projection.METADATA,
            },
            {},
            id="secrets-are-not-covered",
        ),
    ],
)
def test_follow_sources(
    projections: dict[tuple[str, str, str, str], Projection],
    expected: dict[tuple[str, str, str, str], tuple[str, str, str, str]],
) -> None:
    assert follow_sources(projections) == expected


@pytest.mark.parametrize(
    ("projections", "expected"),
    [
        pytest.param({}, {}, id="nothing"),
        pytest.param(
            {_key(PODS, "a"): Projection.METADATA, _key(PODS, "b"): Projection.METADATA},
            {_key(PODS, TYPE_LABEL): Projection.METADATA},
            id="two-selected-informers-of-a-covered-kind",
        ),
        pytest.param({_key(PODS, "a"): Projection.METADATA}, {}, id="one-lists-on-its-own"),
        pytest.param(
            {
                _key(PODS, "a"): Projection.METADATA,
                _key(PODS, "b"): Projection.METADATA,
                _key(PODS): Projection.METADATA,
            },
            {},
            id="an-unfiltered-informer-covers-them-already",
        ),
        pytest.param(
            {_key(PODS, "a"): Projection.METADATA, _key(PODS, "b"): Projection.WHOLE},
            {},
            id="not-across-projections",
        ),
        pytest.param(
            {_key(SECRETS, "a"): Projection.METADATA, _key(SECRETS, "b"): Projection.METADATA},
            {},
            id="secrets-are-not-covered",
        ),
        pytest.param(
            {
                _key(DEPLOYMENTS, "a"): Projection.METADATA,
                _key(DEPLOYMENTS, "b"): Projection.METADATA,
                _key(STATEFULSETS, "a"): Projection.METADATA,
                _key(STATEFULSETS, "b"): Projection.METADATA,
            },
            {
                _key(DEPLOYMENTS, TYPE_LABEL): Projection.METADATA,
                _key(STATEFULSETS, TYPE_LABEL): Projection.METADATA,
            },
            id="one-per-kind",
        ),
    ],
)
def test_covering_informers(
    projections: dict[tuple[str, str, str, str], Projection],
    expected: dict[tuple[str, str, str, str], Projection],
) -> None:
    assert covering_informers(projections) == expected


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        pytest.param("a", {"a": "1"}, True, id="exists"),
        pytest.param("a", {"b": "1"}, False, id="exists-missing"),
        pytest.param("a=1", {"a": "1"}, True, id="equality"),
        pytest.param("a=1", {"a": "2"}, False, id="equality-other"),
        pytest.param("a in (1,2)", {"a": "2"}, True, id="in"),
        pytest.param("a!=1", {}, True, id="inequality-missing"),
        pytest.param("!a", {"a": "1"}, False, id="does-not-exist"),
    ],
)
def test_selector_predicate(selector: str, labels: dict[str, str], selected: bool) -> None:
    predicate = selector_predicate(selector)

    assert predicate is not None
    assert predicate({"metadata": {"name": "x", "labels": labels}}) is selected


def test_an_unparseable_selector_has_no_predicate() -> None:
    assert selector_predicate("a in (b") is None


# --- the cache's indexes ---------------------------------------------------------------------------


def _obj(namespace: str, name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "uid": name, "labels": labels}}


def _names(objects: list[dict[str, Any]]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]


def test_the_namespace_index_goes_from_one_object_to_many_and_back() -> None:
    cache = ObjectCache()
    cache.upsert(_obj("a", "one"))
    assert _names(cache.list(namespace="a")) == ["one"]
    cache.upsert(_obj("a", "two"))
    cache.upsert(_obj("a", "three"))
    assert _names(cache.list(namespace="a")) == ["one", "three", "two"]
    cache.remove(namespace="a", name="three")
    cache.remove(namespace="a", name="one")
    assert _names(cache.list(namespace="a")) == ["two"]
    cache.upsert(_obj("a", "two", changed="yes"))
    assert _names(cache.list(namespace="a")) == ["two"]
    cache.remove(namespace="a", name="two")
    assert cache.list(namespace="a") == []
    assert cache.namespaces() == set()
    assert cache.remove(namespace="a", name="two") is None


def test_label_and_owner_indexes_are_built_on_first_use_and_then_kept() -> None:
    cache = ObjectCache()
    cache.upsert(_obj("a", "one", app="es"))
    cache.upsert(_obj("b", "two", app="es"))

    assert _names(cache.by_label("app", "es")) == ["one", "two"]  # built now
    cache.upsert(_obj("a", "one", app="kb"))
    cache.upsert(_obj("c", "three", app="es"))
    cache.remove(namespace="b", name="two")
    assert _names(cache.by_label("app", "es")) == ["three"]
    assert _names(cache.by_label("app", "kb", namespace="a")) == ["one"]
    assert cache.by_owner("nobody") == []
