"""Suspended Pods (``eck.k8s.elastic.co/suspend``) and paused orchestration: the annotation's
names, which Pods to delete, the scripts ConfigMap and the init container, and the script itself
run by bash."""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stackflow.stack.elasticsearch.builder import desired_children
from stackflow.stack.elasticsearch.config import SCRIPTS_MOUNT_DIR
from stackflow.stack.elasticsearch.scripts import (
    SUSPEND_SCRIPT,
    SUSPENDED_PODS_KEY,
    scripts_data,
    suspended_pods_file,
)
from stackflow.stack.elasticsearch.suspend import (
    PAUSE_ORCHESTRATION_ANNOTATION,
    SUSPEND_ANNOTATION,
    SUSPEND_CONTAINER,
    orchestration_paused,
    pods_to_delete_for_suspend,
    pods_to_wake,
    suspended_pods,
)
from stackflow.stack.labels import ES_CONFIG_HASH_ANNOTATION, TEMPLATE_HASH_LABEL
from tests.polling import eventually

NOW = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, frozenset()),
        ({}, frozenset()),
        ({SUSPEND_ANNOTATION: ""}, frozenset()),
        ({SUSPEND_ANNOTATION: "es-default-0"}, {"es-default-0"}),
        ({SUSPEND_ANNOTATION: " es-default-0 , es-default-2"}, {"es-default-0", "es-default-2"}),
        ({SUSPEND_ANNOTATION: "a,,a, "}, {"a"}),
        ({"eck.k8s.elastic.co/suspended": "a"}, frozenset()),
    ],
)
def test_the_annotation_names_the_suspended_pods(
    annotations: dict[str, str] | None, expected: frozenset[str]
) -> None:
    assert suspended_pods(annotations) == expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, False),
        ({}, False),
        ({PAUSE_ORCHESTRATION_ANNOTATION: "true"}, True),
        ({PAUSE_ORCHESTRATION_ANNOTATION: "True"}, False),
        ({PAUSE_ORCHESTRATION_ANNOTATION: "false"}, False),
        ({PAUSE_ORCHESTRATION_ANNOTATION: ""}, False),
    ],
)
def test_orchestration_is_paused_by_exactly_true(
    annotations: dict[str, str] | None, expected: bool
) -> None:
    assert orchestration_paused(annotations) is expected


RUNNING = {"running": {"startedAt": "2026-03-01T00:00:00Z"}}
WAITING = {"waiting": {"reason": "PodInitializing"}}
CRASHING = {"waiting": {"reason": "CrashLoopBackOff"}}
DONE = {"terminated": {"exitCode": 0, "reason": "Completed"}}


def pod(
    name: str,
    *,
    suspend: dict[str, Any] | None = None,
    main: dict[str, Any] | None = None,
    terminating: bool = False,
) -> dict[str, Any]:
    """A Pod with the given states of its suspend init container and its main container."""
    status: dict[str, Any] = {}
    if suspend is not None:
        status["initContainerStatuses"] = [
            {"name": "elastic-internal-init-filesystem", "state": DONE},
            {"name": SUSPEND_CONTAINER, "state": suspend},
        ]
    if main is not None:
        status["containerStatuses"] = [{"name": "elasticsearch", "state": main}]
    metadata: dict[str, Any] = {"name": name}
    if terminating:
        metadata["deletionTimestamp"] = "2026-03-01T00:00:00Z"
    return {"metadata": metadata, "status": status}


@pytest.mark.parametrize(
    ("the_pod", "deleted"),
    [
        pytest.param(pod("es-0", suspend=DONE, main=RUNNING), True, id="running-node"),
        pytest.param(pod("es-0", main=RUNNING), True, id="running-node-older-template"),
        pytest.param(pod("es-0", suspend=DONE, main=CRASHING), True, id="past-suspension"),
        pytest.param(pod("es-0", suspend=RUNNING, main=WAITING), False, id="already-suspended"),
        pytest.param(pod("es-0", suspend=WAITING, main=WAITING), False, id="initialising"),
        pytest.param(pod("es-0"), False, id="no-status-yet"),
        pytest.param(
            pod("es-0", suspend=DONE, main=RUNNING, terminating=True), False, id="terminating"
        ),
        pytest.param(pod("es-1", suspend=DONE, main=RUNNING), False, id="not-named"),
    ],
)
def test_a_named_pod_past_its_suspend_container_is_deleted(
    the_pod: dict[str, Any], deleted: bool
) -> None:
    expected = (the_pod["metadata"]["name"],) if deleted else ()
    assert pods_to_delete_for_suspend([the_pod], frozenset({"es-0"})) == expected


def test_pods_to_delete_are_sorted_by_name() -> None:
    pods = [pod(name, suspend=DONE, main=RUNNING) for name in ("es-2", "es-0", "es-1")]
    assert pods_to_delete_for_suspend(pods, frozenset({"es-2", "es-0"})) == ("es-0", "es-2")


@pytest.mark.parametrize(
    ("the_pod", "woken"),
    [
        pytest.param(pod("es-0", suspend=RUNNING), True, id="suspended-not-named"),
        pytest.param(pod("es-1", suspend=RUNNING), False, id="suspended-still-named"),
        pytest.param(pod("es-0", suspend=DONE, main=RUNNING), False, id="running"),
        pytest.param(pod("es-0", suspend=RUNNING, terminating=True), False, id="terminating"),
    ],
)
def test_a_suspended_pod_no_longer_named_is_woken(the_pod: dict[str, Any], woken: bool) -> None:
    expected = (the_pod["metadata"]["name"],) if woken else ()
    assert pods_to_wake([the_pod], frozenset({"es-1"})) == expected


# --- the builder ------------------------------------------------------------------------------


def make_es(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {
            "name": "quickstart",
            "namespace": "ns1",
            "uid": "uid-1",
            "annotations": annotations or {},
        },
        "spec": {
            "version": "8.15.0",
            "nodeSets": [
                {
                    "name": "default",
                    "count": 2,
                    "podTemplate": {
                        "spec": {
                            "containers": [
                                {"name": "elasticsearch", "env": [{"name": "X", "value": "1"}]}
                            ],
                            "initContainers": [{"name": "user-init", "image": "busybox"}],
                        }
                    },
                }
            ],
        },
    }


def build(annotations: dict[str, str] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    children = desired_children(
        make_es(annotations), existing={}, now=NOW, random_password=lambda: "password"
    )
    return {(child["kind"], child["metadata"]["name"]): child for child in children}


@pytest.mark.parametrize(
    ("names", "content"),
    [
        ((), ""),
        (("b", "a"), "a\nb"),
        (("a", "a"), "a"),
    ],
)
def test_the_suspended_pods_file_is_sorted_one_per_line(
    names: tuple[str, ...], content: str
) -> None:
    assert suspended_pods_file(names) == content
    assert scripts_data(names)[SUSPENDED_PODS_KEY] == content


def test_the_scripts_config_map_carries_the_suspend_script_and_the_names() -> None:
    data = build({SUSPEND_ANNOTATION: "quickstart-es-default-1,quickstart-es-default-0"})[
        ("ConfigMap", "quickstart-es-scripts")
    ]["data"]
    assert data["suspend.sh"] == SUSPEND_SCRIPT
    assert data["suspended_pods.txt"] == "quickstart-es-default-0\nquickstart-es-default-1"
    assert build()[("ConfigMap", "quickstart-es-scripts")]["data"]["suspended_pods.txt"] == ""


def test_the_suspend_init_container_follows_eck() -> None:
    sts = build()[("StatefulSet", "quickstart-es-default")]
    pod_spec = sts["spec"]["template"]["spec"]
    main = pod_spec["containers"][0]
    inits = pod_spec["initContainers"]

    assert [c["name"] for c in inits] == [
        "elastic-internal-init-filesystem",
        SUSPEND_CONTAINER,
        "user-init",
    ]
    suspend = inits[1]
    assert suspend["command"] == ["bash", "-c", f"{SCRIPTS_MOUNT_DIR}/suspend.sh"]
    assert (
        suspend["image"] == main["image"] == "docker.elastic.co/elasticsearch/elasticsearch:8.15.0"
    )
    # The main container's environment (the user's included) and mounts: POD_NAME names the Pod,
    # and a shell in a suspended Pod sees the prepared config and the data.
    assert suspend["env"] == main["env"]
    assert {"name": "X", "value": "1"} in suspend["env"]
    assert any(env["name"] == "POD_NAME" for env in suspend["env"])
    assert suspend["volumeMounts"] == main["volumeMounts"]
    assert suspend["resources"] == main["resources"]


def test_suspending_a_pod_changes_neither_the_config_hash_nor_the_template() -> None:
    plain = build()
    suspended = build({SUSPEND_ANNOTATION: "quickstart-es-default-0"})

    # Certificates and passwords are fresh in each build; the StatefulSets are not.
    for key, child in plain.items():
        if key[0] == "StatefulSet":
            assert suspended[key] == child, key
    scripts = ("ConfigMap", "quickstart-es-scripts")
    changed = {
        data_key
        for data_key, value in suspended[scripts]["data"].items()
        if plain[scripts]["data"][data_key] != value
    }
    assert changed == {SUSPENDED_PODS_KEY}
    sts = suspended[("StatefulSet", "quickstart-es-default")]
    before = plain[("StatefulSet", "quickstart-es-default")]
    assert (
        sts["spec"]["template"]["metadata"]["annotations"][ES_CONFIG_HASH_ANNOTATION]
        == before["spec"]["template"]["metadata"]["annotations"][ES_CONFIG_HASH_ANNOTATION]
    )
    assert (
        sts["metadata"]["labels"][TEMPLATE_HASH_LABEL]
        == (before["metadata"]["labels"][TEMPLATE_HASH_LABEL])
    )


# --- the script, run by bash ------------------------------------------------------------------


@pytest.fixture
def scripts_dir(tmp_path: Path) -> Path:
    if shutil.which("bash") is None or shutil.which("grep") is None:
        pytest.skip("bash and grep are needed to run the suspend script")
    return tmp_path


async def _start(scripts_dir: Path, pod_name: str) -> asyncio.subprocess.Process:
    # The script reads the file under the scripts mount; here under a temporary directory, and
    # with a short pause so that waking up is quick.
    script = SUSPEND_SCRIPT.replace(SCRIPTS_MOUNT_DIR, str(scripts_dir)).replace(
        "sleep 10", "sleep 0.05"
    )
    path = scripts_dir / "suspend.sh"
    path.write_text(script)
    return await asyncio.create_subprocess_exec(
        "bash",
        str(path),
        env={"POD_NAME": pod_name, "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE,
    )


@pytest.mark.parametrize(
    "content",
    [
        None,
        "",
        "quickstart-es-default-10\nquickstart-es-default-1x",
        # A dot is no wildcard: the names are matched as fixed strings.
        "quickstart.es-default-1",
    ],
)
async def test_a_pod_not_listed_starts(scripts_dir: Path, content: str | None) -> None:
    if content is not None:
        (scripts_dir / SUSPENDED_PODS_KEY).write_text(content)
    process = await _start(scripts_dir, "quickstart-es-default-1")
    async with asyncio.timeout(10):
        assert await process.wait() == 0


async def test_a_listed_pod_waits_until_its_name_is_removed(scripts_dir: Path) -> None:
    names = scripts_dir / SUSPENDED_PODS_KEY
    names.write_text("quickstart-es-default-0\nquickstart-es-default-1")
    process = await _start(scripts_dir, "quickstart-es-default-1")
    assert process.stdout is not None
    try:
        async with asyncio.timeout(10):
            line = await process.stdout.readline()
        assert line.decode().strip() == ("Pod suspended via eck.k8s.elastic.co/suspend annotation")
        assert process.returncode is None

        names.write_text("quickstart-es-default-0")
        await eventually(lambda: process.returncode is not None, within=10, what="the script ends")
        assert process.returncode == 0
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
