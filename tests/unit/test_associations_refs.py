"""Parsing an associated object's refs: namespace defaulting, ids, hashes and validation errors."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.associations.refs import (
    AssociationRef,
    association_id,
    parse_all_refs,
    parse_refs,
    ref_to,
)
from stackflow.stack.associations.table import UnknownAssociationError, association_named


def _obj(kind: str, namespace: str = "apps", **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": namespace, "name": "obj"}, "spec": spec}


def test_single_ref_namespace_defaults_to_the_object() -> None:
    parsed = parse_refs(_obj("Kibana", elasticsearchRef={"name": "es"}), association_named("kb-es"))
    assert parsed.errors == ()
    assert parsed.refs == (
        AssociationRef(
            association="kb-es", target_kind="Elasticsearch", namespace="apps", name="es"
        ),
    )
    assert parsed.refs[0].key == "apps/es"


def test_external_ref_keeps_secret_and_defaults_namespace() -> None:
    parsed = parse_refs(
        _obj("Kibana", elasticsearchRef={"secretName": "remote"}), association_named("kb-es")
    )
    (ref,) = parsed.refs
    assert ref.is_external
    assert ref.namespace == "apps"
    assert ref.key == "apps/remote"


def test_hash_matches_eck_vector() -> None:
    ref = AssociationRef(
        association="agent-es",
        target_kind="Elasticsearch",
        namespace="namespace1",
        name="elasticsearch1",
    )
    assert ref.hash() == "2150608354"


def test_multi_refs_with_output_names() -> None:
    agent = _obj(
        "Agent",
        elasticsearchRefs=[
            {"name": "es1", "outputName": "default"},
            {"name": "es2", "namespace": "other", "outputName": "monitoring"},
        ],
    )
    parsed = parse_refs(agent, association_named("agent-es"))
    assert parsed.errors == ()
    assert [(r.key, r.output_name) for r in parsed.refs] == [
        ("apps/es1", "default"),
        ("other/es2", "monitoring"),
    ]
    assert association_id(association_named("agent-es"), parsed.refs[1]) == "other-es2"
    assert association_id(association_named("kb-es"), parsed.refs[1]) == ""


@pytest.mark.parametrize(
    ("obj", "association", "error"),
    [
        (_obj("Kibana", elasticsearchRef={"name": "es", "secretName": "s"}), "kb-es", "spec.elasticsearchRef: specify name or secretName, not both"),
        (_obj("Kibana", elasticsearchRef={"namespace": "x"}), "kb-es", "spec.elasticsearchRef: name or secretName is required"),
        (_obj("Kibana", elasticsearchRef={"secretName": "s", "serviceName": "svc"}), "kb-es", "spec.elasticsearchRef.serviceName: only allowed with name, not with secretName"),
        (_obj("Kibana", packageRegistryRef={"secretName": "s"}), "kb-epr", "spec.packageRegistryRef.secretName: not supported for a PackageRegistry reference"),
        (_obj("Agent", elasticsearchRefs=[{}]), "agent-es", "spec.elasticsearchRefs[0]: name or secretName is required"),
        (_obj("Agent", elasticsearchRefs=[{"name": "a"}, {"name": "b", "outputName": "x"}]), "agent-es", "spec.elasticsearchRefs: every reference needs an outputName when there are several"),
        (_obj("Agent", elasticsearchRefs=[{"name": "a", "outputName": "o"}, {"name": "b", "outputName": "o"}]), "agent-es", "spec.elasticsearchRefs: outputName 'o' is used more than once"),
        (_obj("Agent", elasticsearchRefs=[{"name": "a", "outputName": "o"}, {"name": "a", "outputName": "p"}]), "agent-es", "spec.elasticsearchRefs: apps/a is referenced more than once"),
        (_obj("Logstash", elasticsearchRefs=[{"name": "a"}]), "logstash-es", "spec.elasticsearchRefs[0].clusterName: required"),
        (_obj("Agent", elasticsearchRefs={"name": "a"}), "agent-es", "spec.elasticsearchRefs: must be a list"),
        (_obj("Beat", elasticsearchRef={"name": "es"}), "kb-es", "kind: a Beat has no kb-es association"),
    ],
)  # fmt: skip
def test_bad_refs_are_reported(obj: dict[str, Any], association: str, error: str) -> None:
    assert error in parse_refs(obj, association_named(association)).errors


def test_absent_or_empty_single_ref_is_no_association() -> None:
    assert parse_refs(_obj("Kibana"), association_named("kb-es")).refs == ()
    parsed = parse_refs(_obj("Kibana", elasticsearchRef={}), association_named("kb-es"))
    assert parsed.refs == ()
    assert parsed.errors == ()


def test_valid_refs_survive_a_bad_sibling() -> None:
    agent = _obj(
        "Agent", elasticsearchRefs=[{"name": "ok", "outputName": "default"}, {"outputName": "x"}]
    )
    parsed = parse_refs(agent, association_named("agent-es"))
    assert [r.name for r in parsed.refs] == ["ok"]
    assert len(parsed.errors) == 1


def test_parse_all_refs_covers_every_association_of_the_kind() -> None:
    kibana = _obj(
        "Kibana",
        elasticsearchRef={"name": "es"},
        enterpriseSearchRef={"name": "ent", "namespace": "search"},
        packageRegistryRef={"name": "epr"},
    )
    parsed = parse_all_refs(kibana)
    assert [(r.association, r.key) for r in parsed.refs] == [
        ("kb-es", "apps/es"),
        ("kb-ent", "search/ent"),
        ("kb-epr", "apps/epr"),
    ]
    assert parse_all_refs(_obj("Elasticsearch")).errors == (
        "kind: Elasticsearch has no associations",
    )


def test_ref_to_a_kind_that_cannot_be_associated() -> None:
    assert (
        ref_to(associated_kind="Beat", target_kind="Kibana", namespace="n", name="kb").association
        == "beat-kibana"
    )
    with pytest.raises(UnknownAssociationError):
        ref_to(associated_kind="Logstash", target_kind="Kibana", namespace="n", name="kb")
