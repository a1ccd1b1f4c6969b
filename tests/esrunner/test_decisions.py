"""The runner's pure decisions, as tables: a Pod's plan, its heap, addresses and names, its status,
the extender's filter, the file-settings adaptation and the launcher script."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from esrunner.adapt import file_settings, missing_sections
from esrunner.containers import Bind, launcher_script
from esrunner.names import RunningPod, address_unbound, allocate_ip, hosts_file
from esrunner.plan import PlanError, expand, heap_options, image_version, pod_plan
from esrunner.runner import filter_nodes, released_claim_directories
from esrunner.status import ContainerState, pod_status

ES_LABELS = {"common.k8s.elastic.co/type": "elasticsearch"}


def _pod(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "containers": [{"name": "elasticsearch", "image": "x/elasticsearch:8.17.0"}],
    }
    base.update(spec)
    return {
        "metadata": {"namespace": "ns", "name": "es-0", "uid": "u1", "labels": ES_LABELS},
        "spec": base,
    }


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("docker.elastic.co/elasticsearch/elasticsearch:8.17.0", "8.17.0"),
        ("registry:5000/elasticsearch:9.1.0@sha256:abc", "9.1.0"),
        ("elasticsearch:8.18.0-SNAPSHOT", "8.18.0"),
        ("busybox", None),
        ("", None),
    ],
)
def test_the_version_an_image_names(image: str, version: str | None) -> None:
    assert image_version(image) == version


@pytest.mark.parametrize(
    ("limit", "ceiling", "heap"),
    [
        (2 * 1024**3, 512, "-Xms512m -Xmx512m"),  # half of 2Gi, capped
        (512 * 1024**2, 512, "-Xms256m -Xmx256m"),  # half the limit
        (None, 256, "-Xms256m -Xmx256m"),  # no limit: the ceiling
        (64 * 1024**2, 512, "-Xms64m -Xmx64m"),  # never below 64m
    ],
)
def test_the_heap_is_half_the_memory_limit_under_the_ceiling(
    limit: int | None, ceiling: int, heap: str
) -> None:
    assert heap_options(limit, ceiling_mb=ceiling) == heap


@pytest.mark.parametrize(
    ("value", "env", "expanded"),
    [
        ("$(A)-$(B)", {"A": "1", "B": "2"}, "1-2"),
        ("$(MISSING)", {}, "$(MISSING)"),
        ("$$(A)", {"A": "1"}, "$(A)"),
    ],
)
def test_variables_expand_as_a_kubelet_expands_them(
    value: str, env: dict[str, str], expanded: str
) -> None:
    assert expand(value, env) == expanded


def test_a_pod_plan_takes_volumes_env_mounts_probes_and_grace() -> None:
    pod = _pod(
        terminationGracePeriodSeconds=180,
        volumes=[
            {"name": "cfg", "secret": {"secretName": "es-config", "defaultMode": 0o440}},
            {"name": "scripts", "configMap": {"name": "es-scripts", "defaultMode": 0o755}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-es-0"}},
            {"name": "tmp", "emptyDir": {}},
        ],
        initContainers=[
            {"name": "init", "image": "x/elasticsearch:8.17.0", "command": ["bash", "-c", "x"]}
        ],
        containers=[
            {
                "name": "elasticsearch",
                "image": "x/elasticsearch:8.17.0",
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {
                        "name": "S",
                        "valueFrom": {"secretKeyRef": {"name": "sec", "key": "k"}},
                    },
                ],
                "args": ["-E", "x=y"],
                "resources": {"limits": {"memory": "1Gi"}},
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/mnt/cfg", "readOnly": True},
                    {"name": "data", "mountPath": "/usr/share/elasticsearch/data"},
                ],
                "readinessProbe": {"exec": {"command": ["bash", "-c", "probe.sh"]}},
                "lifecycle": {"preStop": {"exec": {"command": ["bash", "-c", "stop.sh"]}}},
            }
        ],
    )
    plan = pod_plan(pod)
    assert [(v.name, v.kind, v.reference) for v in plan.volumes] == [
        ("cfg", "secret", "es-config"),
        ("scripts", "configMap", "es-scripts"),
        ("data", "persistentVolumeClaim", "data-es-0"),
        ("tmp", "emptyDir", ""),
    ]
    assert plan.volumes[0].default_mode == 0o440
    assert plan.grace_seconds == 180
    assert plan.init_containers[0].command == ("bash", "-c", "x")
    main = plan.containers[0]
    # No command: the image's entrypoint, with the container's args.
    assert main.command == ("/usr/share/elasticsearch/bin/elasticsearch", "-E", "x=y")
    assert main.env == (("A", "1"),)
    assert [(e.name, e.kind, e.reference, e.key) for e in main.env_from_api] == [
        ("IP", "field", "status.podIP", ""),
        ("S", "secret", "sec", "k"),
    ]
    assert main.memory_limit_bytes == 1024**3
    assert main.readiness_exec == ("bash", "-c", "probe.sh")
    assert main.pre_stop_exec == ("bash", "-c", "stop.sh")
    assert main.image_version == "8.17.0"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"volumes": [{"name": "v", "hostPath": {"path": "/"}}]},
            "volume v: hostPath is not supported here",
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "x/elasticsearch:8.17.0",
                        "volumeMounts": [{"name": "nope", "mountPath": "/x"}],
                    }
                ]
            },
            "container c: volume mount nope names no volume",
        ),
        ({"containers": []}, "the Pod has no container"),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "resources": {"limits": {"memory": "lots"}},
                    }
                ]
            },
            "memory quantity 'lots' is not a quantity",
        ),
    ],
)
def test_what_cannot_run_here_is_one_clear_message(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError) as raised:
        pod_plan(_pod(**spec))
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("in_use", "address"),
    [
        ([], "127.1.0.2"),
        (["127.1.0.2"], "127.1.0.3"),
        (["127.1.0.2", "127.1.0.4"], "127.1.0.3"),
    ],
)
def test_pod_ips_are_the_lowest_free_loopback_addresses(in_use: list[str], address: str) -> None:
    assert allocate_ip(in_use) == address


def test_an_address_another_process_holds_is_skipped() -> None:
    held = {"127.1.0.2", "127.1.0.3"}
    assert allocate_ip([], free=lambda address: address not in held) == "127.1.0.4"


def test_an_address_with_a_listener_is_not_unbound() -> None:
    with socket.socket() as listener:
        listener.bind(("127.1.0.250", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not address_unbound("127.1.0.250", [port])
    assert address_unbound("127.1.0.250", [port])


def _running(name: str, ip: str, ready: bool = True) -> RunningPod:
    return RunningPod("ns", name, ip, {"app": "es"}, "es", ready)


def test_the_hosts_file_names_pods_and_the_services_that_select_them() -> None:
    pods = [_running("es-1", "127.1.0.3", ready=False), _running("es-0", "127.1.0.2")]
    services: list[dict[str, Any]] = [
        {"metadata": {"namespace": "ns", "name": "es-http"}, "spec": {"selector": {"app": "es"}}},
        {
            "metadata": {"namespace": "ns", "name": "es"},
            "spec": {"selector": {"app": "es"}, "publishNotReadyAddresses": True},
        },
        {"metadata": {"namespace": "ns", "name": "other"}, "spec": {"selector": {"app": "x"}}},
        {"metadata": {"namespace": "ns", "name": "none"}, "spec": {}},
    ]
    lines = hosts_file(pods, services).splitlines()
    assert "127.1.0.2\tes-0.es.ns.svc es-0.es.ns.svc.cluster.local es-0" in lines
    assert "127.1.0.3\tes-1.es.ns.svc es-1.es.ns.svc.cluster.local es-1" in lines
    # A ready Pod for a Service, any Pod for one that publishes not-ready addresses.
    assert "127.1.0.2\tes-http.ns.svc es-http.ns.svc.cluster.local" in lines
    assert "127.1.0.2\tes.ns.svc es.ns.svc.cluster.local" in lines
    assert not any("other" in line or "none.ns" in line for line in lines)


def test_a_service_of_only_unready_pods_does_not_resolve() -> None:
    pods = [_running("es-0", "127.1.0.2", ready=False)]
    services = [
        {"metadata": {"namespace": "ns", "name": "es-http"}, "spec": {"selector": {"app": "es"}}}
    ]
    assert "es-http" not in hosts_file(pods, services)


@pytest.mark.parametrize(
    ("labels", "kept"),
    [
        (ES_LABELS, ["runner"]),
        ({"app": "kibana"}, ["kwok-0", "kwok-1"]),
        ({}, ["kwok-0", "kwok-1"]),
    ],
)
def test_the_extender_sends_elasticsearch_pods_to_the_runner_and_others_elsewhere(
    labels: dict[str, str], kept: list[str]
) -> None:
    pod = {"metadata": {"labels": labels}}
    assert filter_nodes(pod, ["kwok-0", "runner", "kwok-1"], {"runner"}) == kept


def _state(name: str, state: str, **kw: Any) -> ContainerState:
    return ContainerState(name, "img", state, **kw)


@pytest.mark.parametrize(
    ("init", "main", "phase", "ready"),
    [
        ([_state("i", "running")], [_state("c", "waiting")], "Pending", False),
        ([_state("i", "terminated", exit_code=1)], [_state("c", "waiting")], "Pending", False),
        ([_state("i", "terminated")], [_state("c", "running")], "Running", False),
        ([_state("i", "terminated")], [_state("c", "running", ready=True)], "Running", True),
        ([], [_state("c", "running", ready=True)], "Running", True),
        ([], [_state("c", "waiting", reason="CrashLoopBackOff")], "Pending", False),
    ],
)
def test_the_pod_status_follows_its_containers(
    init: list[ContainerState], main: list[ContainerState], phase: str, ready: bool
) -> None:
    status = pod_status(
        pod_ip="127.1.0.2", started="t0", init=init, main=main, previous={}, now="t1"
    )
    assert status["phase"] == phase
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["Ready"] == ("True" if ready else "False")
    assert conditions["ContainersReady"] == conditions["Ready"]
    assert status["podIP"] == "127.1.0.2"


def test_a_condition_keeps_its_transition_time_while_unchanged() -> None:
    running = [_state("c", "running", ready=True)]
    first = pod_status(pod_ip="ip", started="t0", init=[], main=running, previous={}, now="t1")
    second = pod_status(pod_ip="ip", started="t0", init=[], main=running, previous=first, now="t2")
    ready = {c["type"]: c for c in second["conditions"]}["Ready"]
    assert ready["lastTransitionTime"] == "t1"
    unready = [_state("c", "running", ready=False)]
    third = pod_status(pod_ip="ip", started="t0", init=[], main=unready, previous=second, now="t3")
    assert {c["type"]: c for c in third["conditions"]}["Ready"]["lastTransitionTime"] == "t3"


def _settings(state: dict[str, Any]) -> dict[str, bytes]:
    return {"settings.json": json.dumps({"metadata": {"version": "1"}, "state": state}).encode()}


@pytest.mark.parametrize(
    ("state", "missing", "kept"),
    [
        ({"cluster_settings": {}, "ilm": {}, "slm": {}}, {"ilm", "slm"}, {"cluster_settings"}),
        ({"ilm": {"p": {}}, "slm": {}}, {"ilm", "slm"}, {"ilm"}),  # asked-for ILM is kept
        ({"ilm": {}, "slm": {}}, set(), {"ilm", "slm"}),  # a distribution with both modules
    ],
)
def test_empty_sections_the_distribution_cannot_parse_are_dropped(
    state: dict[str, Any], missing: set[str], kept: set[str]
) -> None:
    adapted = file_settings(_settings(state), frozenset(missing))
    assert set(json.loads(adapted["settings.json"])["state"]) == kept


def test_the_missing_sections_are_read_from_the_distribution_modules(tmp_path: Path) -> None:
    (tmp_path / "modules" / "x-pack-ilm").mkdir(parents=True)
    assert missing_sections(tmp_path) == frozenset({"slm"})


def test_the_launcher_binds_parents_first_then_makes_read_only_then_drops_root(
    tmp_path: Path,
) -> None:
    image, config, certs = tmp_path / "image", tmp_path / "config", tmp_path / "certs"
    for path in (image, config, certs):
        path.mkdir()
    script = launcher_script(
        [
            Bind(certs, "/usr/share/elasticsearch/config/certs", read_only=True),
            Bind(image, "/usr/share/elasticsearch", read_only=True),
            Bind(config, "/usr/share/elasticsearch/config"),
        ],
        uid=1000,
        gid=1000,
        workdir="/usr/share/elasticsearch",
    ).splitlines()
    binds = [line for line in script if line.startswith("mount --bind")]
    assert [line.split()[-1] for line in binds] == [
        "/usr/share/elasticsearch",
        "/usr/share/elasticsearch/config",
        "/usr/share/elasticsearch/config/certs",
    ]
    remounts = [line.split()[-1] for line in script if "remount" in line]
    assert remounts == ["/usr/share/elasticsearch/config/certs", "/usr/share/elasticsearch"]
    assert (
        script[-1]
        == 'exec setpriv --reuid=1000 --regid=1000 --clear-groups --pdeathsig KILL -- "$@"'
    )
    assert script.index(next(line for line in script if "remount" in line)) > script.index(
        binds[-1]
    )


def test_only_the_directories_of_deleted_claims_are_released(tmp_path: Path) -> None:
    live = "11111111-1111-1111-1111-111111111111"
    gone = "22222222-2222-2222-2222-222222222222"
    (tmp_path / "ns" / f"data-es-0-{live}").mkdir(parents=True)
    (tmp_path / "ns" / f"data-es-1-{gone}").mkdir(parents=True)
    assert released_claim_directories(tmp_path, {live}) == [tmp_path / "ns" / f"data-es-1-{gone}"]
    assert released_claim_directories(tmp_path / "absent", set()) == []


def test_the_launcher_names_the_pod_s_host_before_anything_else() -> None:
    script = launcher_script([], uid=1000, gid=1000, workdir="/", hostname="es-0").splitlines()
    assert script[:3] == ["set -eu", "mount --make-rprivate /", "hostname es-0"]
    assert not any(
        line.startswith("hostname")
        for line in launcher_script([], uid=1, gid=1, workdir="/").splitlines()
    )
