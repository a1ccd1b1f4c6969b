"""One Pod's life on this runner: volumes, init containers, the node, its readiness, its restarts
and its graceful end, with the status reported to the API server at each step."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from esrunner import adapt, containers
from esrunner.distributions import DistributionUnavailable, distribution
from esrunner.kubeapi import KubeApi, KubeError
from esrunner.plan import (
    IMAGE_HOME,
    QUICK_START_JVM_OPTIONS,
    Container,
    PlanError,
    PodPlan,
    heap_options,
    pod_plan,
)
from esrunner.status import ContainerState, pod_status
from esrunner.volumes import materialise, pod_directory, refresh

logger = logging.getLogger("esrunner.pods")

#: Back-off between restarts of a container that exited, as a kubelet's (doubling, capped).
RESTART_BACKOFF_SECONDS = (5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0)
#: How often a running Pod's Secret and ConfigMap volumes are re-read (a kubelet's sync period,
#: shortened so that the operator's certificate, user and file-settings updates arrive quickly).
VOLUME_SYNC_SECONDS = 3.0


def now() -> str:
    """The current time as the API server writes it."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunnerSettings:
    """How the runner runs its Pods."""

    node_name: str
    state_dir: Path
    heap_ceiling_mb: int = 512
    hosts_file: Path = field(default_factory=lambda: Path("/nonexistent"))
    resolv_conf: Path = field(default_factory=lambda: Path("/nonexistent"))

    def log_dir(self, plan: PodPlan) -> Path:
        """Where a Pod's container logs go."""
        return pod_directory(self.state_dir, plan.namespace, plan.name, plan.uid) / "logs"


def _field(pod: Mapping[str, Any], path: str, ip: str, node: str) -> str:
    metadata = pod.get("metadata") or {}
    simple = {
        "status.podIP": ip,
        "status.hostIP": "127.0.0.1",
        "spec.nodeName": node,
        "metadata.name": metadata.get("name", ""),
        "metadata.namespace": metadata.get("namespace", ""),
        "metadata.uid": metadata.get("uid", ""),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", ""),
    }
    if path in simple:
        return str(simple[path])
    for prefix, key in (("metadata.labels['", "labels"), ("metadata.annotations['", "annotations")):
        if path.startswith(prefix):
            return str((metadata.get(key) or {}).get(path[len(prefix) : -2], ""))
    raise PlanError(f"fieldRef {path} is not supported here")


class PodWorker:
    """Runs one Pod (one uid) until it is deleted."""

    def __init__(
        self,
        api: KubeApi,
        settings: RunnerSettings,
        pod: dict[str, Any],
        *,
        ip: str,
        readiness_port: int,
        on_change: Callable[[], None],
    ) -> None:
        """Nothing starts until ``run``."""
        self.api = api
        self.settings = settings
        self.pod = pod
        self.ip = ip
        self.readiness_port = readiness_port
        self.on_change = on_change
        metadata = pod["metadata"]
        self.namespace = str(metadata["namespace"])
        self.name = str(metadata["name"])
        self.uid = str(metadata["uid"])
        self.started = now()
        self.init: list[ContainerState] = []
        self.main: list[ContainerState] = []
        self.process: asyncio.subprocess.Process | None = None
        self.plan: PodPlan | None = None
        self.ready = False
        self.stopping = asyncio.Event()
        self._paths: dict[str, Path] | None = None
        self.task: asyncio.Task[None] | None = None
        self._reported: dict[str, Any] | None = None

    @property
    def hostname(self) -> str:
        """The Pod's hostname (``spec.hostname``, else its name), as Kubernetes sets it."""
        return self.plan.hostname if self.plan is not None else self.name

    @property
    def path(self) -> str:
        """The Pod's API path."""
        return f"/api/v1/namespaces/{self.namespace}/pods/{self.name}"

    # -- reporting --------------------------------------------------------------------------

    async def report(self) -> None:
        """Write the Pod's status when it changed (never after the Pod began to stop)."""
        previous = self.pod.get("status") or {}
        status = pod_status(
            pod_ip=self.ip,
            started=self.started,
            init=self.init,
            main=self.main,
            previous=previous,
            now=now(),
        )
        comparable = {k: v for k, v in status.items() if k != "conditions"}
        comparable["ready"] = [c["status"] for c in status["conditions"]]
        if comparable == self._reported:
            return
        try:
            patched = await self.api.request(
                "PATCH",
                f"{self.path}/status",
                {"metadata": {"uid": self.uid}, "status": status},
                content_type="application/merge-patch+json",
            )
        except KubeError as error:
            if error.status in (404, 409, 422):
                return
            raise
        self._reported = comparable
        if isinstance(patched, dict):
            self.pod = patched
        self.on_change()

    def _waiting_all(self, reason: str, message: str) -> None:
        assert self.plan is not None
        self.init = [
            ContainerState(c.name, self._image(c.name, init=True), "waiting", reason, message)
            for c in self.plan.init_containers
        ]
        self.main = [
            ContainerState(c.name, self._image(c.name, init=False), "waiting", reason, message)
            for c in self.plan.containers
        ]

    def _image(self, name: str, *, init: bool) -> str:
        key = "initContainers" if init else "containers"
        for container in (self.pod.get("spec") or {}).get(key) or []:
            if container.get("name") == name:
                return str(container.get("image", ""))
        return ""

    # -- the life of the Pod ----------------------------------------------------------------

    async def run(self) -> None:
        """Prepare, initialise and run the Pod, restarting its node when it exits, until stopped."""
        try:
            self.plan = pod_plan(self.pod)
        except PlanError as error:
            logger.warning("pod %s/%s cannot run: %s", self.namespace, self.name, error)
            self.main = [
                ContainerState(
                    str(c.get("name")),
                    str(c.get("image", "")),
                    "waiting",
                    "CreateContainerConfigError",
                    str(error),
                )
                for c in (self.pod.get("spec") or {}).get("containers") or []
            ]
            await self.report()
            await self.stopping.wait()
            return
        self._waiting_all("ContainerCreating", "")
        await self.report()
        paths = await self._prepare_volumes()
        if paths is None:
            return
        self._paths = paths
        if not await self._initialise(paths):
            return
        await self._run_main(paths)

    async def _sources(self) -> dict[tuple[str, str], Mapping[str, Any] | None]:
        assert self.plan is not None
        wanted: set[tuple[str, str]] = set()
        for volume in self.plan.volumes:
            if volume.kind in ("secret", "configMap"):
                wanted.add((volume.kind, volume.reference))
        for container in (*self.plan.init_containers, *self.plan.containers):
            for variable in container.env_from_api:
                if variable.kind in ("secret", "configMap"):
                    wanted.add((variable.kind, variable.reference))
        found: dict[tuple[str, str], Mapping[str, Any] | None] = {}
        for kind, name in sorted(wanted):
            plural = "secrets" if kind == "secret" else "configmaps"
            found[(kind, name)] = await self.api.get_or_none(
                f"/api/v1/namespaces/{self.namespace}/{plural}/{name}"
            )
        return found

    async def _claims(self) -> dict[str, str] | None:
        """Each claim's uid (its data directory is keyed by it), or None while one is missing."""
        assert self.plan is not None
        uids: dict[str, str] = {}
        for volume in self.plan.volumes:
            if volume.kind != "persistentVolumeClaim":
                continue
            claim = await self.api.get_or_none(
                f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{volume.reference}"
            )
            if claim is None:
                return None
            uids[volume.reference] = str(claim["metadata"]["uid"])
        return uids

    async def _prepare_volumes(self) -> dict[str, Path] | None:
        assert self.plan is not None
        while not self.stopping.is_set():
            try:
                sources = await self._sources()
                claims = await self._claims()
                if claims is None:
                    raise PlanError("a PersistentVolumeClaim of the Pod does not exist yet")
                plan = replace(
                    self.plan,
                    volumes=tuple(
                        replace(v, reference=f"{v.reference}-{claims[v.reference]}")
                        if v.kind == "persistentVolumeClaim"
                        else v
                        for v in self.plan.volumes
                    ),
                )
                return materialise(
                    self.settings.state_dir,
                    plan,
                    sources,
                    self.pod,
                    uid=containers.NODE_UID,
                    gid=containers.NODE_GID,
                    adapters=self._adapters(),
                )
            except PlanError as error:
                self._waiting_all("ContainerCreating", str(error))
                await self.report()
            await self._wait_stopping(2.0)
        return None

    async def _wait_stopping(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True when the Pod began to stop meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), timeout=seconds)
        return self.stopping.is_set()

    def _launch(
        self, container: Container, paths: Mapping[str, Path], *, layer: str = ""
    ) -> tuple[list[str], dict[str, str], list[containers.Bind], containers.Image]:
        """The command, environment, binds and image of one container (DistributionUnavailable
        or PlanError when it cannot run here). ``layer`` names the image's writable layer (the
        container's name by default; a hook gets its own, the container's being in use)."""
        if container.image_version is None:
            raise PlanError(
                f"container {container.name}: only Elasticsearch images run here "
                f"({self._image(container.name, init=False) or 'no image'})"
            )
        dist = distribution(container.image_version)
        env: dict[str, str] = {}
        resolved = dict(container.env)
        for variable in container.env_from_api:
            if variable.kind == "field":
                resolved[variable.name] = _field(
                    self.pod, variable.reference, self.ip, self.settings.node_name
                )
            elif variable.kind == "resource":
                resolved[variable.name] = "0"
        env.update(resolved)
        # What the image itself would provide: its Java, its home, its hostname.
        env.setdefault("HOSTNAME", self.name)
        env["HOME"] = IMAGE_HOME
        env["ES_JAVA_HOME"] = str(dist.java_home)
        heap = heap_options(container.memory_limit_bytes, ceiling_mb=self.settings.heap_ceiling_mb)
        env["ES_JAVA_OPTS"] = " ".join(
            filter(None, [env.get("ES_JAVA_OPTS", ""), heap, QUICK_START_JVM_OPTIONS])
        )
        layers = (
            pod_directory(self.settings.state_dir, self.namespace, self.name, self.uid)
            / "empty"
            / ".layers"
            / (layer or container.name)
        )
        image = containers.Image(dist.home, layers / "upper", layers / "work", IMAGE_HOME)
        binds: list[containers.Bind] = []
        if self.settings.hosts_file.exists():
            binds.append(containers.Bind(self.settings.hosts_file, "/etc/hosts", read_only=True))
        if self.settings.resolv_conf.exists():
            binds.append(
                containers.Bind(self.settings.resolv_conf, "/etc/resolv.conf", read_only=True)
            )
        volume_paths = dict(paths)
        for mount in container.mounts:
            source = volume_paths[mount.volume]
            if mount.sub_path:
                source = source / mount.sub_path
            binds.append(containers.Bind(source, mount.path, mount.read_only))
        return list(container.command), env, binds, image

    async def _initialise(self, paths: Mapping[str, Path]) -> bool:
        # A kubelet keeps the volumes in sync while init containers run too: prepare-fs waits
        # for the Pod's transport certificate, the suspend container for its name to leave
        # the suspended list.
        syncing = asyncio.ensure_future(self._sync_volumes())
        try:
            return await self._run_init_containers(paths)
        finally:
            syncing.cancel()

    async def _run_init_containers(self, paths: Mapping[str, Path]) -> bool:
        assert self.plan is not None
        logs = self.settings.log_dir(self.plan)
        attempt = 0
        while not self.stopping.is_set():
            done: list[ContainerState] = []
            failed = False
            for index, container in enumerate(self.plan.init_containers):
                image = self._image(container.name, init=True)
                try:
                    command, env, binds, layer = self._launch(container, paths)
                except (PlanError, DistributionUnavailable) as error:
                    self.init = [
                        *done,
                        ContainerState(
                            container.name,
                            image,
                            "waiting",
                            "CreateContainerConfigError",
                            str(error),
                        ),
                    ]
                    await self.report()
                    failed = True
                    break
                started = now()
                self.init = [
                    *done,
                    ContainerState(
                        container.name, image, "running", started_at=started, restart_count=attempt
                    ),
                ]
                self.init += [
                    ContainerState(
                        c.name, self._image(c.name, init=True), "waiting", "PodInitializing"
                    )
                    for c in self.plan.init_containers[index + 1 :]
                ]
                await self.report()
                code = await containers.run_to_end(
                    command,
                    env=env,
                    binds=binds,
                    log=logs / f"{container.name}.log",
                    limit_seconds=600.0,
                    hostname=self.hostname,
                    image=layer,
                    read_only_root=container.read_only_root,
                )
                state = ContainerState(
                    container.name,
                    image,
                    "terminated",
                    started_at=started,
                    finished_at=now(),
                    exit_code=code,
                    restart_count=attempt,
                )
                done.append(state)
                if code != 0:
                    logger.warning(
                        "init container %s of %s/%s exited %s",
                        container.name,
                        self.namespace,
                        self.name,
                        code,
                    )
                    self.init = done
                    failed = True
                    break
            if not failed:
                self.init = done
                return True
            await self.report()
            if await self._wait_stopping(
                RESTART_BACKOFF_SECONDS[min(attempt, len(RESTART_BACKOFF_SECONDS) - 1)]
            ):
                return False
            attempt += 1
        return False

    async def _run_main(self, paths: Mapping[str, Path]) -> None:
        assert self.plan is not None
        # One node per Pod: the Elasticsearch container; a sidecar cannot run here.
        container = self.plan.containers[0]
        image = self._image(container.name, init=False)
        others = [
            ContainerState(
                c.name,
                self._image(c.name, init=False),
                "waiting",
                "CreateContainerConfigError",
                "only one container per Pod runs here",
            )
            for c in self.plan.containers[1:]
        ]
        logs = self.settings.log_dir(self.plan)
        restarts = 0
        while not self.stopping.is_set():
            try:
                command, env, binds, layer = self._launch(container, paths)
            except (PlanError, DistributionUnavailable) as error:
                self.main = [
                    ContainerState(
                        container.name, image, "waiting", "CreateContainerConfigError", str(error)
                    ),
                    *others,
                ]
                await self.report()
                if await self._wait_stopping(10.0):
                    return
                continue
            command += [
                "-E",
                f"network.bind_host={self.ip}",
                "-E",
                f"remote_cluster.bind_host={self.ip}",
                "-E",
                f"readiness.port={self.readiness_port}",
            ]
            started = now()
            self.process = await containers.start(
                command,
                env=env,
                binds=binds,
                log=logs / f"{container.name}.log",
                workdir=IMAGE_HOME,
                hostname=self.hostname,
                image=layer,
                read_only_root=container.read_only_root,
            )
            self._write_pid()
            self.ready = False
            self.main = [
                ContainerState(
                    container.name, image, "running", started_at=started, restart_count=restarts
                ),
                *others,
            ]
            await self.report()
            exited = asyncio.ensure_future(self.process.wait())
            probing = asyncio.ensure_future(
                self._probe(container, image, started, restarts, others)
            )
            syncing = asyncio.ensure_future(self._sync_volumes())
            stop = asyncio.ensure_future(self.stopping.wait())
            await asyncio.wait({exited, stop}, return_when=asyncio.FIRST_COMPLETED)
            probing.cancel()
            syncing.cancel()
            stop.cancel()
            if self.stopping.is_set():
                exited.cancel()
                return
            code = self.process.returncode if self.process.returncode is not None else -1
            logger.warning("node %s/%s exited with %s; restarting", self.namespace, self.name, code)
            self.ready = False
            self.main = [
                ContainerState(
                    container.name,
                    image,
                    "waiting",
                    "CrashLoopBackOff",
                    f"exited with {code}",
                    restart_count=restarts + 1,
                ),
                *others,
            ]
            await self.report()
            if await self._wait_stopping(
                RESTART_BACKOFF_SECONDS[min(restarts, len(RESTART_BACKOFF_SECONDS) - 1)]
            ):
                return
            restarts += 1

    async def _probe(
        self,
        container: Container,
        image: str,
        started: str,
        restarts: int,
        others: list[ContainerState],
    ) -> None:
        """Readiness as the Pod's probe asks for it: the node's readiness port (see the docs)."""
        probe = self._readiness_probe(container.name)
        if probe is None:
            self.ready = True
        else:
            await asyncio.sleep(float(probe.get("initialDelaySeconds", 0)))
        period = float((probe or {}).get("periodSeconds", 10))
        failures = 0
        threshold = int((probe or {}).get("failureThreshold", 3))
        while True:
            if probe is not None:
                ok = await self._port_open(self.readiness_port)
                failures = 0 if ok else failures + 1
                self.ready = ok or (self.ready and failures < threshold)
            self.main = [
                ContainerState(
                    container.name,
                    image,
                    "running",
                    started_at=started,
                    restart_count=restarts,
                    ready=self.ready,
                ),
                *others,
            ]
            await self.report()
            await asyncio.sleep(period if self.ready else min(period, 1.0))

    def _readiness_probe(self, name: str) -> Mapping[str, Any] | None:
        for container in (self.pod.get("spec") or {}).get("containers") or []:
            if container.get("name") == name:
                probe = container.get("readinessProbe")
                return probe if isinstance(probe, dict) else None
        return None

    @staticmethod
    async def _port_open(port: int) -> bool:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5.0)
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    async def _sync_volumes(self) -> None:
        assert self.plan is not None
        while True:
            await asyncio.sleep(VOLUME_SYNC_SECONDS)
            try:
                refresh(
                    self.settings.state_dir,
                    self.plan,
                    await self._sources(),
                    uid=containers.NODE_UID,
                    gid=containers.NODE_GID,
                    adapters=self._adapters(),
                )
            except (KubeError, OSError, PlanError) as error:
                logger.info("volumes of %s/%s not refreshed: %s", self.namespace, self.name, error)

    def _adapters(self) -> dict[str, Callable[[dict[str, bytes]], dict[str, bytes]]]:
        """The volume whose files the distribution cannot take as they are (see adapt.py)."""
        assert self.plan is not None
        container = self.plan.containers[0]
        if container.image_version is None:
            return {}
        try:
            missing = adapt.missing_sections(distribution(container.image_version).home)
        except DistributionUnavailable:
            return {}
        return {
            mount.volume: functools.partial(adapt.file_settings, missing=missing)
            for mount in container.mounts
            if mount.path == adapt.FILE_SETTINGS_DIR
        }

    def _pid_file(self) -> Path:
        return self.settings.state_dir / "pids" / f"{self.namespace}_{self.name}_{self.uid}"

    def _write_pid(self) -> None:
        if self.process is None:
            return
        path = self._pid_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(self.process.pid))

    # -- the end ----------------------------------------------------------------------------

    async def terminate(
        self, grace_seconds: float, *, finalise: bool, pre_stop: bool = True
    ) -> None:
        """Stop the Pod as a kubelet does: the pre-stop hook, SIGTERM, SIGKILL at the end of the
        grace period; then (``finalise``) confirm the deletion to the API server. The runner's
        own shutdown (``pre_stop=False``) stops the nodes without the hook, as a machine going
        down does."""
        self.stopping.set()
        began = time.monotonic()
        process = self.process
        if process is not None and process.returncode is None and self.plan is not None:
            container = self.plan.containers[0]
            if container.pre_stop_exec and pre_stop:
                await self._pre_stop(container, grace_seconds)
            left = grace_seconds - (time.monotonic() - began)
            await containers.stop(process, grace_seconds=max(left, 1.0))
        self._pid_file().unlink(missing_ok=True)
        if finalise:
            with contextlib.suppress(KubeError):
                await self.api.request(
                    "DELETE",
                    self.path,
                    {
                        "kind": "DeleteOptions",
                        "apiVersion": "v1",
                        "gracePeriodSeconds": 0,
                        "preconditions": {"uid": self.uid},
                    },
                )
        if self.plan is not None:
            shutil.rmtree(
                pod_directory(self.settings.state_dir, self.namespace, self.name, self.uid)
                / "empty",
                ignore_errors=True,
            )

    async def _pre_stop(self, container: Container, grace_seconds: float) -> None:
        assert self.plan is not None
        paths = self._paths
        if paths is None:
            return
        try:
            _, env, binds, layer = self._launch(
                container, paths, layer=f"{container.name}-pre-stop"
            )
        except (PlanError, DistributionUnavailable):
            return
        code = await containers.run_to_end(
            container.pre_stop_exec,
            env=env,
            binds=binds,
            log=self.settings.log_dir(self.plan) / f"{container.name}-pre-stop.log",
            limit_seconds=grace_seconds,
            hostname=self.hostname,
            image=layer,
            read_only_root=container.read_only_root,
        )
        logger.info("pre-stop hook of %s/%s exited %s", self.namespace, self.name, code)
