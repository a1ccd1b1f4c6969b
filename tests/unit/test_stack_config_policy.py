"""The StackConfigPolicy rules as tables: targeting, merging by weight, conflicts, the
file-settings versioning rule, the soft-owner marks, the policy status and its patch, the
controller row's mappers and the license notice of an enterprise-only kind."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from activities.generic import license_notice
from stackflow.controllers import CONTROLLERS, FlipStrategy, Gate, OwnerKey
from stackflow.controllers.stackconfigpolicy import (
    policy_references,
    policy_secret_owners,
    policy_targets,
)
from stackflow.scope.selector import SelectorError
from stackflow.stack.policies.stack_config.file_settings import (
    empty_state,
    file_settings,
    state_hash,
)
from stackflow.stack.policies.stack_config.merge import (
    MergeConflictError,
    merge_elasticsearch,
    merge_kibana,
)
from stackflow.stack.policies.stack_config.owners import (
    SOFT_OWNER_REFS_ANNOTATION,
    owner_marks,
    secret_owners,
)
from stackflow.stack.policies.stack_config.policy import Policy, parse_policy, selector_problem
from stackflow.stack.policies.stack_config.reading import (
    read_es_policy_config,
    read_kb_policy_config,
)
from stackflow.stack.policies.stack_config.secrets import (
    SETTINGS_HASH_ANNOTATION,
    es_policy_config_secret,
    es_policy_config_secret_name,
    es_secret_mount_copy,
    es_secret_mount_copy_name,
    file_settings_secret,
    file_settings_secret_name,
    is_es_secret_mount_copy_name,
    kb_policy_config_secret,
    kb_policy_config_secret_name,
)
from stackflow.stack.policies.stack_config.status import (
    ResourceStatus,
    kibana_applied,
    policy_status,
    resource_phase,
    status_patch,
)
from stackflow.stack.policies.stack_config.targeting import Target, policies_for, targets
from stackflow.stack.policies.stack_config.variables import (
    VariableSource,
    substitute_variables,
    variable_sources,
    variables_of,
)

OPERATOR = "elastic-system"


def policy_obj(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name}, "spec": spec}


def policy(namespace: str, name: str, weight: int = 0, **spec: Any) -> Policy:
    return parse_policy(policy_obj(namespace, name, {"weight": weight, **spec}))


ES_A = Target("elasticsearch", "team-a", "es", {"env": "prod"})

# (policy namespace, selector, target, targets?)
TARGETING: list[tuple[str, dict[str, Any], Target, bool]] = [
    (OPERATOR, {}, ES_A, True),
    ("team-a", {}, ES_A, True),
    ("team-b", {}, ES_A, False),
    (OPERATOR, {"matchLabels": {"env": "prod"}}, ES_A, True),
    (OPERATOR, {"matchLabels": {"env": "dev"}}, ES_A, False),
    (
        "team-a",
        {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "qa"]}]},
        ES_A,
        True,
    ),
    ("team-a", {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, ES_A, False),
]


@pytest.mark.parametrize(("namespace", "selector", "target", "expected"), TARGETING)
def test_targeting(
    namespace: str, selector: dict[str, Any], target: Target, expected: bool
) -> None:
    subject = policy(namespace, "p", resourceSelector=selector)
    assert targets(subject, target, operator_namespace=OPERATOR) is expected


def test_an_unusable_selector_is_named() -> None:
    obj = policy_obj("ns", "p", {"resourceSelector": {"matchLabels": {"bad key!": "x"}}})
    with pytest.raises(SelectorError):
        parse_policy(obj)
    assert selector_problem(obj) is not None
    assert selector_problem(policy_obj("ns", "p", {})) is None


# (policies, names in merge order, or the conflict message)
ORDERING: list[tuple[list[Policy], list[str] | str]] = [
    ([], []),
    ([policy(OPERATOR, "low", 10), policy("team-a", "high", 100)], ["low", "high"]),
    ([policy("team-a", "high", 100), policy(OPERATOR, "low", 10)], ["low", "high"]),
    # A policy of another namespace does not target the cluster, so it cannot conflict.
    ([policy("team-b", "other", 0), policy("team-a", "mine", 0)], ["mine"]),
    (
        [policy(OPERATOR, "one", 5), policy("team-a", "two", 5)],
        'merge conflict: policies "team-a/two" and "elastic-system/one" have the same weight 5',
    ),
    (
        [policy(OPERATOR, "a"), policy(OPERATOR, "b")],
        'merge conflict: policies "elastic-system/b" and "elastic-system/a" have the same weight 0',
    ),
]


@pytest.mark.parametrize(("policies", "expected"), ORDERING)
def test_policies_by_weight(policies: list[Policy], expected: list[str] | str) -> None:
    if isinstance(expected, str):
        with pytest.raises(MergeConflictError) as raised:
            policies_for(ES_A, policies, operator_namespace=OPERATOR)
        assert str(raised.value) == expected
        return
    ordered = policies_for(ES_A, policies, operator_namespace=OPERATOR)
    assert [p.name for p in ordered] == expected


def es_policy(name: str, weight: int, **elasticsearch: Any) -> Policy:
    return policy(OPERATOR, name, weight, elasticsearch=elasticsearch)


# (policies lowest weight first, expected state sections that differ from empty)
MERGES: list[tuple[list[Policy], dict[str, Any]]] = [
    ([], {}),
    (
        [es_policy("a", 1, clusterSettings={"indices.recovery.max_bytes_per_sec": "100mb"})],
        {"cluster_settings": {"indices.recovery.max_bytes_per_sec": "100mb"}},
    ),
    # The higher weight wins a setting, whatever its spelling; the others are kept.
    (
        [
            es_policy("low", 10, clusterSettings={"indices": {"recovery": {"a": "1", "b": "1"}}}),
            es_policy("high", 100, clusterSettings={"indices.recovery.a": "2"}),
        ],
        {"cluster_settings": {"indices": {"recovery": {"a": "2", "b": "1"}}}},
    ),
    # Sections merge key by key: a repository is replaced whole.
    (
        [
            es_policy(
                "low",
                10,
                snapshotRepositories={
                    "r1": {"type": "fs", "settings": {"location": "/a", "compress": True}},
                    "r2": {"type": "fs"},
                },
            ),
            es_policy(
                "high",
                100,
                snapshotRepositories={"r1": {"type": "fs", "settings": {"location": "/b"}}},
            ),
        ],
        {
            "snapshot_repositories": {
                "r1": {"type": "fs", "settings": {"location": "/b"}},
                "r2": {"type": "fs"},
            }
        },
    ),
    (
        [
            es_policy("a", 1, snapshotLifecyclePolicies={"s": {"schedule": "x"}}),
            es_policy("b", 2, securityRoleMappings={"m": {"enabled": True}}),
            es_policy("c", 3, indexLifecyclePolicies={"i": {"phases": {}}}),
            es_policy("d", 4, ingestPipelines={"p": {"processors": []}}),
            es_policy(
                "e",
                5,
                indexTemplates={
                    "componentTemplates": {"ct": {"template": {}}},
                    "composableIndexTemplates": {"it": {"index_patterns": ["x*"]}},
                },
            ),
        ],
        {
            "slm": {"s": {"schedule": "x"}},
            "role_mappings": {"m": {"enabled": True}},
            "ilm": {"i": {"phases": {}}},
            "ingest_pipelines": {"p": {"processors": []}},
            "index_templates": {
                "component_templates": {"ct": {"template": {}}},
                "composable_index_templates": {"it": {"index_patterns": ["x*"]}},
            },
        },
    ),
]


@pytest.mark.parametrize(("ordered", "sections"), MERGES)
def test_merged_file_settings_state(ordered: list[Policy], sections: dict[str, Any]) -> None:
    merged = merge_elasticsearch(ordered)
    assert merged.state == {**empty_state(), **sections}
    assert merged.owners == tuple(sorted(p.key for p in ordered))


def test_config_mounts_and_secure_settings_merge() -> None:
    merged = merge_elasticsearch(
        [
            es_policy(
                "low",
                1,
                config={"logger.org.elasticsearch": "info", "a": 1},
                secretMounts=[{"secretName": "s1", "mountPath": "/m1"}],
                secureSettings=[{"secretName": "creds"}],
            ),
            policy(
                "team-a",
                "high",
                2,
                secureSettings=[{"secretName": "legacy"}],
                elasticsearch={"config": {"logger": {"org": {"elasticsearch": "debug"}}}},
            ),
        ]
    )
    assert merged.config == {"logger": {"org": {"elasticsearch": "debug"}}, "a": 1}
    assert merged.secret_mounts == ({"secretName": "s1", "mountPath": "/m1"},)
    assert merged.secure_settings == (
        {"namespace": OPERATOR, "secretName": "creds"},
        {"namespace": "team-a", "secretName": "legacy"},
    )


# (mounts of policy one, mounts of policy two, the conflict message)
MOUNT_CONFLICTS: list[tuple[list[dict[str, str]], list[dict[str, str]], str]] = [
    (
        [{"secretName": "s", "mountPath": "/a"}],
        [{"secretName": "s", "mountPath": "/b"}],
        'merge conflict: secret with name "s" is defined in policy "elastic-system/two", '
        '"elastic-system/one"',
    ),
    (
        [{"secretName": "s", "mountPath": "/a"}],
        [{"secretName": "t", "mountPath": "/a"}],
        'merge conflict: secret mount path "/a" is defined in policy "elastic-system/two", '
        '"elastic-system/one"',
    ),
]


@pytest.mark.parametrize(("first", "second", "message"), MOUNT_CONFLICTS)
def test_clashing_secret_mounts_conflict(
    first: list[dict[str, str]], second: list[dict[str, str]], message: str
) -> None:
    with pytest.raises(MergeConflictError) as raised:
        merge_elasticsearch(
            [es_policy("one", 1, secretMounts=first), es_policy("two", 2, secretMounts=second)]
        )
    assert str(raised.value) == message


def test_kibana_merge() -> None:
    merged = merge_kibana(
        [
            policy(OPERATOR, "low", 1, kibana={"config": {"a.b": 1, "c": 1}}),
            policy(OPERATOR, "high", 2, kibana={"config": {"a": {"b": 2}}}),
        ]
    )
    assert merged.config == {"a": {"b": 2}, "c": 1}
    assert merged.owners == ("elastic-system/high", "elastic-system/low")


STATE = {**empty_state(), "cluster_settings": {"x": "1"}}

# (current document, current hash, state, expected version)
HOLDING_STATE = json.dumps({"metadata": {"version": "7"}, "state": STATE})
HOLDING_EMPTY = json.dumps({"metadata": {"version": "7"}, "state": empty_state()})

VERSIONS: list[tuple[str | None, str | None, dict[str, Any], int]] = [
    # No current document: the first version.
    (None, None, STATE, 1000),
    ("not json", None, STATE, 1000),
    # Same hash, recorded and held: the version is kept.
    (HOLDING_STATE, state_hash(STATE), STATE, 7),
    # Another state, or no hash recorded (the Elasticsearch controller's empty document): bumped.
    (HOLDING_EMPTY, state_hash(empty_state()), STATE, 8),
    (HOLDING_EMPTY, None, STATE, 8),
    (HOLDING_STATE, state_hash(STATE), empty_state(), 8),
    # The recorded hash matches but the document was replaced under it: bumped.
    (HOLDING_EMPTY, state_hash(STATE), STATE, 8),
    ('{"metadata": {"version": "7"}}', state_hash(STATE), STATE, 8),
]


@pytest.mark.parametrize(("document", "digest", "state", "version"), VERSIONS)
def test_versioning_rule(
    document: str | None, digest: str | None, state: dict[str, Any], version: int
) -> None:
    settings = file_settings(
        state, current_document=document, current_hash=digest, first_version=1000
    )
    assert settings.version == version
    assert settings.hash == state_hash(state)
    assert json.loads(settings.document) == {
        "metadata": {"version": str(version), "compatibility": "8.4.0"},
        "state": state,
    }


def decoded(secret: dict[str, Any], key: str) -> Any:
    return json.loads(base64.b64decode(secret["data"][key]))


def test_file_settings_secret_keeps_its_version_and_then_resets() -> None:
    merged = merge_elasticsearch([es_policy("p", 1, clusterSettings={"x": "1"})])
    first, version = file_settings_secret(
        None, namespace="ns", es_name="es", merged=merged, first_version=5
    )
    assert version == 5
    assert first["metadata"]["name"] == "es-es-file-settings"
    assert first["metadata"]["labels"]["eck.k8s.elastic.co/owner-name"] == "p"
    assert first["metadata"]["annotations"][SETTINGS_HASH_ANNOTATION] == state_hash(merged.state)
    again, same = file_settings_secret(
        first, namespace="ns", es_name="es", merged=merged, first_version=99
    )
    assert (again, same) == (first, 5)
    reset, bumped = file_settings_secret(
        first, namespace="ns", es_name="es", merged=None, first_version=99
    )
    assert bumped == 6
    assert decoded(reset, "settings.json")["state"] == empty_state()
    labels = reset["metadata"]["labels"]
    assert not any(key.startswith("eck.k8s.elastic.co/owner-") for key in labels)
    assert labels["elasticsearch.k8s.elastic.co/cluster-name"] == "es"


# (owners, expected owner labels, expected owner-refs annotation)
MARKS: list[tuple[list[str], dict[str, str], str | None]] = [
    ([], {}, None),
    (
        ["ns/p"],
        {
            "eck.k8s.elastic.co/owner-kind": "StackConfigPolicy",
            "eck.k8s.elastic.co/owner-namespace": "ns",
            "eck.k8s.elastic.co/owner-name": "p",
        },
        None,
    ),
    (
        ["ns/p", "elastic-system/q"],
        {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"},
        '["elastic-system/q", "ns/p"]',
    ),
]


@pytest.mark.parametrize(("owners", "labels", "refs"), MARKS)
def test_owner_marks_round_trip(
    owners: list[str], labels: dict[str, str], refs: str | None
) -> None:
    stale = {
        "keep": "me",
        "eck.k8s.elastic.co/owner-kind": "StackConfigPolicy",
        "eck.k8s.elastic.co/owner-namespace": "old",
        "eck.k8s.elastic.co/owner-name": "old",
    }
    new_labels, annotations = owner_marks(stale, {SOFT_OWNER_REFS_ANNOTATION: "[]"}, owners)
    assert new_labels == {"keep": "me", **labels}
    assert annotations.get(SOFT_OWNER_REFS_ANNOTATION) == refs
    secret = {"metadata": {"labels": new_labels, "annotations": annotations}}
    assert sorted(secret_owners(secret)) == sorted(tuple(owner.split("/", 1)) for owner in owners)


def test_names() -> None:
    assert file_settings_secret_name("quickstart") == "quickstart-es-file-settings"
    assert es_policy_config_secret_name("quickstart") == "quickstart-es-policy-config"
    assert kb_policy_config_secret_name("quickstart") == "quickstart-kb-policy-config"


# (reported version, reported errors, expected phase)
PHASES: list[tuple[int | None, dict[str, Any] | None, str]] = [
    (None, None, "ApplyingChanges"),
    (3, None, "ApplyingChanges"),
    (4, None, "Ready"),
    (3, {"version": 4, "errors": ["bad setting"]}, "Error"),
    (4, {"version": 2, "errors": ["old"]}, "Ready"),
]


@pytest.mark.parametrize(("reported", "errors", "phase"), PHASES)
def test_resource_phase(reported: int | None, errors: dict[str, Any] | None, phase: str) -> None:
    status = resource_phase(expected_version=4, reported_version=reported, reported_errors=errors)
    assert status.phase == phase


# (resource phases, expected policy phase, readyCount)
STATUSES: list[tuple[list[str], str, str]] = [
    ([], "Ready", "0/0"),
    (["Ready", "Ready"], "Ready", "2/2"),
    (["Ready", "ApplyingChanges"], "ApplyingChanges", "1/2"),
    (["Ready", "Error", "ApplyingChanges"], "Error", "1/3"),
    (["Conflict", "Error"], "Conflict", "0/2"),
]


@pytest.mark.parametrize(("phases", "phase", "ready_count"), STATUSES)
def test_policy_status(phases: list[str], phase: str, ready_count: str) -> None:
    details = {"elasticsearch": {f"ns/es{i}": ResourceStatus(p) for i, p in enumerate(phases)}}
    status = policy_status(details, observed_generation=3)
    assert status["phase"] == phase
    assert status["readyCount"] == ready_count
    assert status["resources"] == len(phases)
    assert status["observedGeneration"] == 3
    assert len(status["details"].get("elasticsearch", {})) == len(phases)


# (current status, desired status, expected merge patch)
STATUS_PATCHES: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]] = [
    ({"phase": "Ready"}, {"phase": "Ready"}, None),
    ({}, {"phase": "Ready", "resources": 0}, {"phase": "Ready", "resources": 0}),
    # A resource no longer targeted leaves the details; a field an entry lost is removed.
    (
        {
            "details": {
                "elasticsearch": {
                    "a/es": {"phase": "Ready", "currentVersion": 3},
                    "b/es": {"phase": "Ready"},
                }
            }
        },
        {"details": {"elasticsearch": {"a/es": {"phase": "ApplyingChanges"}}}},
        {
            "details": {
                "elasticsearch": {
                    "a/es": {"phase": "ApplyingChanges", "currentVersion": None},
                    "b/es": None,
                }
            }
        },
    ),
    (
        {"details": {"kibana": {"a/kb": {"phase": "Ready"}}}},
        {"details": {}},
        {"details": {"kibana": None}},
    ),
    # Fields the policy controller does not write are left alone.
    ({"conditions": [{"type": "x"}], "phase": "Invalid"}, {"phase": "Ready"}, {"phase": "Ready"}),
]


@pytest.mark.parametrize(("current", "desired", "patch"), STATUS_PATCHES)
def test_status_patch(
    current: dict[str, Any], desired: dict[str, Any], patch: dict[str, Any] | None
) -> None:
    assert status_patch(current, desired) == patch


# (secret metadata, owners the controller row maps it to)
SECRET_OWNERS: list[tuple[dict[str, Any], list[OwnerKey]]] = [
    ({}, []),
    (
        {
            "labels": {
                "eck.k8s.elastic.co/owner-kind": "Kibana",
                "eck.k8s.elastic.co/owner-name": "kb",
            }
        },
        [],
    ),
    (
        {
            "labels": {
                "eck.k8s.elastic.co/owner-kind": "StackConfigPolicy",
                "eck.k8s.elastic.co/owner-namespace": "ns",
                "eck.k8s.elastic.co/owner-name": "p",
            }
        },
        [OwnerKey("ns", "p")],
    ),
    (
        {
            "labels": {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"},
            "annotations": {SOFT_OWNER_REFS_ANNOTATION: '["elastic-system/q", "ns/p"]'},
        },
        [OwnerKey("elastic-system", "q"), OwnerKey("ns", "p")],
    ),
    (
        {
            "labels": {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"},
            "annotations": {SOFT_OWNER_REFS_ANNOTATION: "not json"},
        },
        [],
    ),
]


@pytest.mark.parametrize(("metadata", "owners"), SECRET_OWNERS)
def test_the_row_maps_policy_secrets_to_their_policies(
    metadata: dict[str, Any], owners: list[OwnerKey]
) -> None:
    secret = {"metadata": {"namespace": "x", "name": "s", **metadata}}
    assert list(policy_secret_owners(secret)) == owners


def test_the_row_references_the_resources_its_status_lists() -> None:
    obj = {
        "status": {
            "details": {
                "elasticsearch": {"a/es": {"phase": "Ready"}, "bad": {}},
                "kibana": {"b/kb": {"phase": "ApplyingChanges"}},
            }
        }
    }
    assert [(key.kind, key.namespace, key.name) for key in policy_targets(obj)] == [
        ("Elasticsearch", "a", "es"),
        ("Kibana", "b", "kb"),
    ]
    assert policy_targets({}) == []


def test_the_row() -> None:
    row = CONTROLLERS.named("stackconfigpolicy")
    assert row.gate is Gate.ENTERPRISE
    assert row.flip is FlipStrategy.CONTROLLER
    assert row.primary.kind == "StackConfigPolicy"
    assert {kind.kind for kind in row.reference_kinds} == {
        "Elasticsearch",
        "Kibana",
        "Secret",
        "ConfigMap",
    }


def test_policy_references_add_its_secure_settings_secrets_in_its_namespace() -> None:
    obj = {
        "metadata": {"namespace": "elastic-system", "name": "p"},
        "spec": {
            "secureSettings": [{"secretName": "legacy"}],
            "elasticsearch": {"secureSettings": [{"secretName": "es-s"}, {"secretName": "legacy"}]},
            "kibana": {"secureSettings": [{"secretName": "kb-s"}]},
        },
        "status": {"details": {"elasticsearch": {"a/es": {"phase": "Ready"}}}},
    }
    assert [(key.kind, key.namespace, key.name) for key in policy_references(obj)] == [
        ("Elasticsearch", "a", "es"),
        ("Secret", "elastic-system", "es-s"),
        ("Secret", "elastic-system", "kb-s"),
        ("Secret", "elastic-system", "legacy"),
    ]


def test_policy_references_add_its_secret_mount_secrets_in_its_namespace() -> None:
    obj = {
        "metadata": {"namespace": "elastic-system", "name": "p"},
        "spec": {"elasticsearch": {"secretMounts": [{"secretName": "gcs", "mountPath": "/g"}]}},
    }
    assert [(key.kind, key.namespace, key.name) for key in policy_references(obj)] == [
        ("Secret", "elastic-system", "gcs"),
    ]


# (cluster, source Secret, the copy's name): ECK's <es>-es-scp-<HashObject(secretName)>.
MOUNT_COPY_NAMES: list[tuple[str, str, str]] = [
    # HashObject("elastictesting") = 4269947480 (the reference value of hash.HashObject).
    ("quickstart", "elastictesting", "quickstart-es-scp-4269947480"),
    ("a" * 36, "elastictesting", "a" * 36 + "-es-scp-4269947480"),
]


@pytest.mark.parametrize(("es_name", "source", "expected"), MOUNT_COPY_NAMES)
def test_secret_mount_copy_name(es_name: str, source: str, expected: str) -> None:
    name = es_secret_mount_copy_name(es_name, source)
    assert name == expected
    assert len(name) <= 63
    assert is_es_secret_mount_copy_name(es_name, name)


# (cluster, Secret name, whether it is one of the cluster's secretMounts copies)
COPY_NAME_CHECKS: list[tuple[str, str, bool]] = [
    ("es", "es-es-scp-12345", True),
    ("es", "es-es-policy-config", False),
    ("es", "es-es-scp-", False),
    ("es", "es-es-scp-abc", False),
    ("other", "es-es-scp-12345", False),
]


@pytest.mark.parametrize(("es_name", "name", "expected"), COPY_NAME_CHECKS)
def test_is_secret_mount_copy_name(es_name: str, name: str, expected: bool) -> None:
    assert is_es_secret_mount_copy_name(es_name, name) is expected


def test_merge_records_the_namespace_each_mounted_secret_lives_in() -> None:
    merged = merge_elasticsearch(
        [
            policy(
                OPERATOR,
                "a",
                1,
                elasticsearch={"secretMounts": [{"secretName": "s1", "mountPath": "/1"}]},
            ),
            policy(
                "team",
                "b",
                2,
                elasticsearch={"secretMounts": [{"secretName": "s2", "mountPath": "/2"}]},
            ),
        ]
    )
    assert merged.mount_namespaces == {"s1": OPERATOR, "s2": "team"}


# (owners, the copy's soft-owner labels, its owner-refs annotation)
COPY_OWNERS: list[tuple[tuple[str, ...], dict[str, str], str | None]] = [
    (
        ("elastic-system/p",),
        {
            "eck.k8s.elastic.co/owner-kind": "StackConfigPolicy",
            "eck.k8s.elastic.co/owner-namespace": "elastic-system",
            "eck.k8s.elastic.co/owner-name": "p",
        },
        None,
    ),
    (
        ("elastic-system/p", "elastic-system/q"),
        {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"},
        '["elastic-system/p", "elastic-system/q"]',
    ),
]


@pytest.mark.parametrize(("owners", "owner_labels", "refs"), COPY_OWNERS)
def test_secret_mount_copy_content_and_marks(
    owners: tuple[str, ...], owner_labels: dict[str, str], refs: str | None
) -> None:
    source = {
        "metadata": {"name": "gcs", "namespace": OPERATOR, "labels": {"mine": "x"}},
        "type": "Opaque",
        "data": {"key.json": base64.b64encode(b"{}").decode()},
    }
    owner = {"apiVersion": "elasticsearch.k8s.elastic.co/v1", "kind": "Elasticsearch"}
    copy = es_secret_mount_copy(
        None, source, namespace="ns", es_name="es", owners=owners, owner_reference=owner
    )
    meta = copy["metadata"]
    assert (meta["namespace"], meta["name"]) == ("ns", es_secret_mount_copy_name("es", "gcs"))
    assert copy["data"] == source["data"]
    assert meta["labels"] == {
        "elasticsearch.k8s.elastic.co/cluster-name": "es",
        "common.k8s.elastic.co/type": "elasticsearch",
        **owner_labels,
    }
    assert meta["annotations"].get(SOFT_OWNER_REFS_ANNOTATION) == refs
    assert meta["annotations"]["policy.k8s.elastic.co/source-secret-name"] == "gcs"
    assert meta["ownerReferences"] == [owner]
    assert secret_owners(copy) == tuple(tuple(o.split("/")) for o in owners)


# (gate, kind, expected reason, whether the operator Pod gets the event too)
NOTICES: list[tuple[Gate, str, str, bool]] = [
    (Gate.ENTERPRISE, "StackConfigPolicy", "ReconciliationError", False),
    (Gate.DYNAMIC_SCOPE, "Elasticsearch", "InvalidLicense", True),
]


@pytest.mark.parametrize(("gate", "kind", "reason", "on_pod"), NOTICES)
def test_license_notice(gate: Gate, kind: str, reason: str, on_pod: bool) -> None:
    got_reason, message, got_on_pod = license_notice(gate, kind)
    assert (got_reason, got_on_pod) == (reason, on_pod)
    if gate is Gate.ENTERPRISE:
        assert message == f"{kind} is an enterprise feature. Enterprise features are disabled"


VARIABLES = {"HOST": "es.example", "QUOTE": 'say "hi"', "EMPTY": ""}

# (value, substituted)
SUBSTITUTION: list[tuple[Any, Any]] = [
    ("${HOST}", "es.example"),
    ("https://${HOST}:9200", "https://es.example:9200"),
    ("${MISSING}", "${MISSING}"),  # unknown: left as written (may be the Pod's env var)
    ("${MISSING:-fallback}", "fallback"),
    ("${HOST:-fallback}", "es.example"),
    ("${EMPTY:-fallback}", ""),  # defined (even empty) wins the default
    ("${QUOTE}", 'say "hi"'),  # inserted as text: stays one string
    ("$HOST", "$HOST"),  # only the braced form
    ({"${HOST}.enabled": ["${HOST}", 3, True]}, {"es.example.enabled": ["es.example", 3, True]}),
    (7, 7),
]


@pytest.mark.parametrize(("value", "expected"), SUBSTITUTION)
def test_substitute_variables(value: Any, expected: Any) -> None:
    assert substitute_variables(value, VARIABLES) == expected


def test_variables_are_substituted_in_the_settings_only() -> None:
    obj = policy_obj(
        "team-a",
        "p",
        {
            "secureSettings": [{"secretName": "${HOST}"}],
            "elasticsearch": {"clusterSettings": {"a": "${HOST}"}},
            "kibana": {"config": {"b": "${HOST}"}},
        },
    )
    parsed = parse_policy(obj, VARIABLES)
    assert parsed.spec["elasticsearch"] == {"clusterSettings": {"a": "es.example"}}
    assert parsed.spec["kibana"] == {"config": {"b": "es.example"}}
    assert parsed.spec["secureSettings"] == [{"secretName": "${HOST}"}]
    assert obj["spec"]["elasticsearch"] == {"clusterSettings": {"a": "${HOST}"}}  # not mutated


def test_variable_sources_and_their_values() -> None:
    obj = policy_obj(
        "team-a",
        "p",
        {
            "variablesFrom": [
                {"kind": "ConfigMap", "name": "vars"},
                {
                    "kind": "Secret",
                    "name": "creds",
                    "namespace": "elastic-system",
                    "optional": True,
                },
            ]
        },
    )
    sources = variable_sources(obj)
    assert sources == [
        VariableSource("ConfigMap", "team-a", "vars", False),
        VariableSource("Secret", "elastic-system", "creds", True),
    ]
    config_map = {"data": {"A": "1"}}
    secret = {"data": {"B": base64.b64encode(b"two").decode()}}
    assert variables_of(sources[0], config_map) == {"A": "1"}
    assert variables_of(sources[1], secret) == {"B": "two"}


def test_security_roles_merge_role_by_role() -> None:
    low = policy(
        OPERATOR,
        "low",
        1,
        elasticsearch={"securityRoles": {"a": {"cluster": ["all"]}, "b": {"cluster": ["monitor"]}}},
    )
    high = policy(OPERATOR, "high", 2, elasticsearch={"securityRoles": {"b": {"run_as": ["x"]}}})
    merged = merge_elasticsearch([low, high])
    assert merged.roles == {"a": {"cluster": ["all"]}, "b": {"run_as": ["x"]}}


def test_policy_config_secrets_read_back() -> None:
    es_merge = merge_elasticsearch(
        [
            policy(
                OPERATOR,
                "p",
                elasticsearch={
                    "config": {"a.b": 1},
                    "secretMounts": [{"secretName": "s", "mountPath": "/m"}],
                    "securityRoles": {"r": {"cluster": ["monitor"]}},
                },
            )
        ]
    )
    secret = es_policy_config_secret(None, namespace="ns", es_name="es", merged=es_merge)
    read = read_es_policy_config(secret)
    assert read.config == {"a.b": 1}
    assert read.secret_mounts == (("s", "/m"),)
    assert read.roles == {"r": {"cluster": ["monitor"]}}
    assert read_es_policy_config(None).config == {}

    kb_merge = merge_kibana([policy(OPERATOR, "p", kibana={"config": {"x": {"y": True}}})])
    kb_secret = kb_policy_config_secret(None, namespace="ns", kb_name="kb", merged=kb_merge)
    assert read_kb_policy_config(kb_secret) == {"x": {"y": True}}
    assert read_kb_policy_config({"data": {"kibana.json": "bm90IGpzb24="}}) == {}


# (policy config, rendered kibana.yml, applied?)
KIBANA_APPLIED: list[tuple[dict[str, Any], dict[str, Any], bool]] = [
    ({}, {}, True),
    ({"a.b": 1}, {"a": {"b": 1}, "c": 2}, True),
    ({"a": {"b": 1}}, {"a.b": 1}, True),
    ({"a.b": 1}, {"a": {"b": 2}}, False),
    ({"a.b": 1}, {}, False),
]


@pytest.mark.parametrize(("config", "rendered", "applied"), KIBANA_APPLIED)
def test_kibana_applied(config: dict[str, Any], rendered: dict[str, Any], applied: bool) -> None:
    assert kibana_applied(config, rendered) is applied


def test_the_row_references_the_variables_sources() -> None:
    obj = policy_obj("team-a", "p", {"variablesFrom": [{"kind": "Secret", "name": "creds"}]})
    assert [(key.kind, key.namespace, key.name) for key in policy_targets(obj)] == [
        ("Secret", "team-a", "creds")
    ]


@pytest.mark.parametrize(
    ("controller", "secret", "owner"),
    [
        pytest.param(
            "elasticsearch",
            es_policy_config_secret(
                None,
                namespace="team-a",
                es_name="prod",
                merged=merge_elasticsearch([policy(OPERATOR, "p", elasticsearch={"config": {}})]),
            ),
            OwnerKey("team-a", "prod"),
            id="es-policy-config",
        ),
        pytest.param(
            "kibana",
            kb_policy_config_secret(
                None,
                namespace="team-a",
                kb_name="kb",
                merged=merge_kibana([policy(OPERATOR, "p", kibana={"config": {"a": 1}})]),
            ),
            OwnerKey("team-a", "kb"),
            id="kb-policy-config",
        ),
    ],
)
def test_the_targeted_resource_wakes_on_its_policy_config_secret(
    controller: str, secret: dict[str, Any], owner: OwnerKey
) -> None:
    """The policy-config Secrets carry the cluster-name / Kibana name label, so the Elasticsearch
    and Kibana rows' Secret watches map a change of one to the resource that reads it."""
    row = CONTROLLERS.named(controller)
    labels = secret["metadata"]["labels"]
    watches = [
        watch
        for watch in row.children
        if watch.kind.kind == "Secret" and str(watch.label_selector) in labels
    ]
    assert watches
    assert all(watch.owners(secret) == (owner,) for watch in watches)
