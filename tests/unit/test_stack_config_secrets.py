"""The Secrets the policies write (file settings, policy config, secretMounts copies): names,
content, soft-owner marks, and what the builders read back from them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from stackflow.stack.policies.stack_config.file_settings import empty_state, state_hash
from stackflow.stack.policies.stack_config.merge import merge_elasticsearch, merge_kibana
from stackflow.stack.policies.stack_config.owners import (
    SOFT_OWNER_REFS_ANNOTATION,
    owner_marks,
    secret_owners,
)
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
from tests.unit.stack_config_policies import OPERATOR, es_policy, policy


def decoded(secret: dict[str, Any], key: str) -> Any:
    return json.loads(base64.b64decode(secret["data"][key]))


def test_file_settings_secret_keeps_its_version_and_then_resets() -> None:
    merged = merge_elasticsearch([es_policy("p", 1, clusterSettings={"x": "1"})])
    first, version = file_settings_secret(
        None, namespace="ns", es_name="es", merged=merged, first_version=5
    )
    assert version == 5
    assert first["metadata"]["name"] == "es-es-file-settings"
    assert first["metadata"]["annotations"][SOFT_OWNER_REFS_ANNOTATION] == '["elastic-system/p"]'
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


def test_names() -> None:
    assert file_settings_secret_name("quickstart") == "quickstart-es-file-settings"
    assert es_policy_config_secret_name("quickstart") == "quickstart-es-policy-config"
    assert kb_policy_config_secret_name("quickstart") == "quickstart-kb-policy-config"


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
        '["elastic-system/p","elastic-system/q"]',
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


# (owners, expected owner labels, expected owner-refs annotation)
MARKS: list[tuple[list[str], dict[str, str], str | None]] = [
    ([], {}, None),
    # One policy too: ECK 3.5 marks the file-settings and policy-config Secrets by annotation.
    (["ns/p"], {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"}, '["ns/p"]'),
    (
        ["ns/p", "elastic-system/q"],
        {"eck.k8s.elastic.co/owner-kind": "StackConfigPolicy"},
        '["elastic-system/q","ns/p"]',
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
