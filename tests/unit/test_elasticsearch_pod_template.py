"""The Elasticsearch Pod template as ECK makes it: security contexts, affinity, volumes, init
containers, resources, and the scripts the Pod runs."""

from __future__ import annotations

import itertools
import subprocess
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from stackflow.stack.elasticsearch.builder import desired_children
from stackflow.stack.elasticsearch.pods import (
    default_affinity,
    main_resources,
    pod_security_context,
    security_context,
)
from stackflow.stack.elasticsearch.scripts import PRE_STOP_SCRIPT, scripts_data
from stackflow.stack.version import Version

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HARDENED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "privileged": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
}


def template(version: str = "8.18.0", **node_set: Any) -> dict[str, Any]:
    """The pod template of the one node set ``default`` of an Elasticsearch ``qs``."""
    es = {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "qs", "namespace": "ns1", "uid": "uid-1", "generation": 1},
        "spec": {"version": version, "nodeSets": [{"name": "default", "count": 1, **node_set}]},
    }
    numbers = itertools.count(1)
    children = desired_children(
        es, existing={}, now=NOW, random_password=lambda: f"password-{next(numbers)}"
    )
    sts = next(c for c in children if c["kind"] == "StatefulSet")
    return dict(sts["spec"]["template"])


def scripts(version: str = "8.18.0") -> dict[str, str]:
    return dict(scripts_data())


@pytest.mark.parametrize(
    ("version", "read_only_root", "expected"),
    [
        (
            Version(7, 17, 0),
            True,
            {
                "allowPrivilegeEscalation": False,
                "privileged": False,
                "readOnlyRootFilesystem": True,
            },
        ),
        (
            Version(8, 7, 0),
            False,
            {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
                "privileged": False,
                "readOnlyRootFilesystem": False,
            },
        ),
        (Version(8, 8, 0), True, HARDENED),
        (Version(9, 1, 0), True, HARDENED),
    ],
)
def test_the_container_security_context_follows_the_version(
    version: Version, read_only_root: bool, expected: dict[str, Any]
) -> None:
    assert security_context(version, read_only_root=read_only_root) == expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (Version(7, 17, 0), None),
        (Version(8, 0, 0), {"fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}}),
    ],
)
def test_the_pod_security_context_follows_the_version(
    version: Version, expected: dict[str, Any] | None
) -> None:
    assert pod_security_context(version) == expected


@pytest.mark.parametrize(
    ("user", "shorthand", "expected"),
    [
        (None, None, {"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}}),
        # ECK's sample: a limit alone, and no request of the operator's beside it.
        (
            {"resources": {"limits": {"memory": "4Gi", "cpu": "1"}}},
            None,
            {"limits": {"memory": "4Gi", "cpu": "1"}},
        ),
        (None, {"limits": {"memory": "3Gi"}}, {"limits": {"memory": "3Gi"}}),
        (
            {"resources": {"requests": {"cpu": "1"}}},
            {"requests": {"memory": "1Gi"}},
            {"requests": {"cpu": "1", "memory": "1Gi"}},
        ),
    ],
)
def test_default_resources_only_when_the_user_names_none(
    user: dict[str, Any] | None, shorthand: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    assert main_resources(user, shorthand) == expected


def test_every_container_is_hardened_and_the_pod_uses_the_runtime_seccomp_profile() -> None:
    spec = template()["spec"]
    assert spec["securityContext"] == {
        "fsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    for container in (*spec["initContainers"], *spec["containers"]):
        assert container["securityContext"] == HARDENED, container["name"]
    assert spec["affinity"] == default_affinity("qs")
    assert spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][
        0
    ]["podAffinityTerm"] == {
        "labelSelector": {"matchLabels": {"elasticsearch.k8s.elastic.co/cluster-name": "qs"}},
        "topologyKey": "kubernetes.io/hostname",
    }


def test_a_user_security_context_or_affinity_replaces_the_default() -> None:
    user_container = {"name": "elasticsearch", "securityContext": {"runAsUser": 1000}}
    spec = template(
        podTemplate={
            "spec": {
                "securityContext": {"runAsUser": 1000},
                "affinity": {},
                "containers": [user_container],
            }
        }
    )["spec"]
    assert spec["securityContext"] == {"runAsUser": 1000}
    assert spec["affinity"] == {}
    assert spec["containers"][0]["securityContext"] == {"runAsUser": 1000}
    assert spec["initContainers"][0]["securityContext"] == HARDENED


def test_without_the_data_volume_the_root_filesystem_stays_writable() -> None:
    spec = template(
        volumeClaimTemplates=[
            {"metadata": {"name": "other"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
        ]
    )["spec"]
    main = spec["containers"][0]
    assert main["securityContext"]["readOnlyRootFilesystem"] is False
    assert all(m["name"] != "elasticsearch-data" for m in main["volumeMounts"])


def test_the_node_writes_only_to_its_volumes() -> None:
    spec = template()["spec"]
    main = spec["containers"][0]
    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    # The image's config, plugins and bin are emptyDirs prepare-fs fills; /tmp is one too.
    for path, volume in [
        ("/usr/share/elasticsearch/config", "elastic-internal-elasticsearch-config-local"),
        ("/usr/share/elasticsearch/plugins", "elastic-internal-elasticsearch-plugins-local"),
        ("/usr/share/elasticsearch/bin", "elastic-internal-elasticsearch-bin-local"),
        ("/tmp", "tmp-volume"),
        ("/usr/share/elasticsearch/logs", "elasticsearch-logs"),
    ]:
        assert mounts[path] == volume
        assert volumes[volume] == {"name": volume, "emptyDir": {}}
    assert mounts["/usr/share/elasticsearch/data"] == "elasticsearch-data"
    assert mounts["/mnt/elastic-internal/downward-api"] == "downward-api"
    assert volumes["downward-api"]["downwardAPI"] == {
        "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
    }
    assert mounts["/mnt/elastic-internal/pod-mounted-users"] == "elastic-internal-probe-user"
    assert volumes["elastic-internal-probe-user"]["secret"]["items"] == [
        {"key": "elastic-internal-probe", "path": "elastic-internal-probe"},
        {"key": "elastic-internal-pre-stop", "path": "elastic-internal-pre-stop"},
    ]
    assert mounts["/usr/share/elasticsearch/config/operator"] == "file-settings"


def test_the_filesystem_init_container_fills_the_shared_dirs_and_waits_for_its_certificate() -> (
    None
):
    spec = template()["spec"]
    main = spec["containers"][0]
    init = spec["initContainers"][0]
    assert init["name"] == "elastic-internal-init-filesystem"
    own = {m["mountPath"]: m["name"] for m in init["volumeMounts"][:4]}
    assert own == {
        "/mnt/elastic-internal/elasticsearch-config-local": (
            "elastic-internal-elasticsearch-config-local"
        ),
        "/mnt/elastic-internal/elasticsearch-plugins-local": (
            "elastic-internal-elasticsearch-plugins-local"
        ),
        "/mnt/elastic-internal/elasticsearch-bin-local": "elastic-internal-elasticsearch-bin-local",
        "/mnt/elastic-internal/transport-certificates": "elastic-internal-transport-certificates",
    }
    # Then every mount of the node container whose volume and path it does not mount yet.
    inherited = [m for m in main["volumeMounts"] if m["name"] not in own.values()]
    assert init["volumeMounts"][4:] == inherited
    assert init["resources"] == {
        "requests": {"cpu": "100m", "memory": "50Mi"},
        "limits": {"cpu": "100m", "memory": "50Mi"},
    }
    assert init["env"] == main["env"]


def test_a_user_init_container_inherits_image_mounts_and_environment() -> None:
    spec = template(
        podTemplate={
            "spec": {
                "initContainers": [
                    {"name": "install-plugins", "command": ["sh", "-c", "bin/elasticsearch-plugin"]}
                ]
            }
        }
    )["spec"]
    main = spec["containers"][0]
    user = spec["initContainers"][-1]
    assert user["name"] == "install-plugins"
    assert user["image"] == main["image"]
    assert user["volumeMounts"] == main["volumeMounts"]
    assert user["env"] == main["env"]
    assert user["resources"] == main["resources"]


def test_the_settings_make_shard_allocation_aware_of_the_kubernetes_node() -> None:
    es = {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "qs", "namespace": "ns1", "uid": "uid-1", "generation": 1},
        "spec": {"version": "8.18.0", "nodeSets": [{"name": "default", "count": 1}]},
    }
    numbers = itertools.count(1)
    children = desired_children(
        es, existing={}, now=NOW, random_password=lambda: f"password-{next(numbers)}"
    )
    config = next(c for c in children if c["metadata"]["name"] == "qs-es-default-es-config")
    import base64

    settings = yaml.safe_load(base64.b64decode(config["data"]["elasticsearch.yml"]))
    assert settings["cluster.routing.allocation.awareness.attributes"] == "k8s_node_name"
    assert settings["node.attr.k8s_node_name"] == "${NODE_NAME}"


def test_the_scripts_have_ecks_names() -> None:
    assert sorted(scripts()) == [
        "pre-stop-hook-script.sh",
        "prepare-fs.sh",
        "readiness-port-script.sh",
        "readiness-probe-script.sh",
        "suspend.sh",
        "suspended_pods.txt",
    ]
    probe = template("8.1.0")["spec"]["containers"][0]["readinessProbe"]["exec"]["command"]
    assert probe == ["bash", "-c", "/mnt/elastic-internal/scripts/readiness-probe-script.sh"]


def _has_shutdown_api(version: str) -> bool:
    """Run the pre-stop hook's own version test in bash."""
    start = PRE_STOP_SCRIPT.index("has_shutdown_api() {")
    end = PRE_STOP_SCRIPT.index("\n}\n", start) + 3
    function = PRE_STOP_SCRIPT[start:end]
    result = subprocess.run(
        ["bash", "-c", f'{function}\nhas_shutdown_api "$1"', "test", version], check=False
    )
    return result.returncode == 0


@pytest.mark.parametrize(
    ("version", "supported"),
    [
        ("7.15.1", False),
        ("7.15.2", True),
        ("7.16.0", True),
        ("v8.18.0", True),
        ("9.1.0-SNAPSHOT", True),
        ("6.8.0", False),
        ("", False),
    ],
)
def test_the_pre_stop_hook_asks_for_a_node_shutdown_from_7_15_2(
    version: str, supported: bool
) -> None:
    assert _has_shutdown_api(version) is supported


@pytest.mark.parametrize("name", sorted(scripts_data()))
def test_every_script_is_valid_bash(name: str) -> None:
    if not name.endswith(".sh"):
        pytest.skip("not a script")
    subprocess.run(["bash", "-n"], input=scripts_data()[name].encode(), check=True)
