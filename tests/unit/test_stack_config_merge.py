"""The policies targeting one resource merged by weight: the file-settings state, settings,
secret mounts, security roles, secure settings sources, and the conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.policies.stack_config.file_settings import empty_state
from stackflow.stack.policies.stack_config.merge import (
    MergeConflictError,
    merge_elasticsearch,
    merge_kibana,
)
from stackflow.stack.policies.stack_config.policy import Policy
from tests.unit.stack_config_policies import OPERATOR, es_policy, policy

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
