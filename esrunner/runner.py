"""The runner: the kubelet of one Node on which every Elasticsearch Pod runs as a real node.

It registers its Node, answers the scheduler's extender calls (Elasticsearch Pods to this Node,
every other Pod elsewhere), watches the Pods bound to its Node, runs each with a
:class:`~esrunner.pods.PodWorker`, keeps the hosts file that stands in for cluster DNS, and on
close stops every node gracefully.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from esrunner.kubeapi import KubeApi, KubeError
from esrunner.names import RunningPod, address_unbound, allocate_ip, hosts_file
from esrunner.plan import is_elasticsearch_pod
from esrunner.pods import PodWorker, RunnerSettings, now

logger = logging.getLogger("esrunner")

#: The Node annotation telling kubesim that another kubelet (this one) runs the Node's Pods.
EXTERNAL_KUBELET_ANNOTATION = "stackflow.dev/kubelet"
NODE_LABEL = "stackflow.dev/elasticsearch-runner"
HEARTBEAT_SECONDS = 20.0
#: The containers' resolver: names the hosts file lacks fail at once, on the loopback; the
#: machine's own nameserver is never asked (no traffic leaves 127.0.0.0/8).
RESOLV_CONF = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
#: How often the hosts file is rebuilt from the Pods and Services.
HOSTS_SECONDS = 2.0
#: How often the directories of deleted claims are looked for.
VOLUME_RELEASE_SECONDS = 30.0


def node_manifest(name: str) -> dict[str, Any]:
    """The runner's Node."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {EXTERNAL_KUBELET_ANNOTATION: "external"},
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                NODE_LABEL: "true",
                "type": "elasticsearch-runner",
            },
        },
        "spec": {},
    }


def node_status(name: str) -> dict[str, Any]:
    """The runner's Node status: Ready, with the machine's capacity."""
    stamp = now()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    capacity = {"cpu": str(os.cpu_count() or 1), "memory": f"{memory // 1024}Ki", "pods": "110"}
    return {
        "capacity": capacity,
        "allocatable": capacity,
        "addresses": [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": name},
        ],
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "the Elasticsearch runner is posting ready status",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
        ],
        "nodeInfo": {
            "architecture": "amd64",
            "kubeletVersion": "esrunner",
            "operatingSystem": "linux",
            "kernelVersion": os.uname().release,
            "osImage": "",
            "containerRuntimeVersion": "esrunner://1",
            "kubeProxyVersion": "",
            "bootID": "",
            "machineID": "",
            "systemUUID": "",
        },
        "phase": "Running",
    }


def filter_nodes(
    pod: Mapping[str, Any], node_names: list[str], runner_nodes: set[str]
) -> list[str]:
    """The scheduler extender's filter: an Elasticsearch Pod fits only this runner's Node, any
    other Pod every Node but it."""
    if is_elasticsearch_pod(pod):
        return [name for name in node_names if name in runner_nodes]
    return [name for name in node_names if name not in runner_nodes]


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for a node's readiness port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Runner:
    """One runner: its Node, its extender and its Pods."""

    def __init__(self, api: KubeApi, settings: RunnerSettings, *, extender_port: int = 0) -> None:
        """Nothing starts until ``start``."""
        self.api = api
        self.settings = settings
        self.extender_port = extender_port
        self.workers: dict[str, PodWorker] = {}
        self.stopping: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.tasks: list[asyncio.Task[Any]] = []
        self._web: web.AppRunner | None = None
        self._hosts_dirty = asyncio.Event()
        settings.hosts_file = settings.state_dir / "hosts"
        settings.resolv_conf = settings.state_dir / "resolv.conf"

    # -- start and stop ---------------------------------------------------------------------

    async def start(self) -> None:
        """Register the Node, serve the extender, and begin watching Pods."""
        self.settings.state_dir.mkdir(parents=True, exist_ok=True)
        self._kill_leftovers()
        self.settings.hosts_file.write_text(hosts_file([], []))
        self.settings.hosts_file.chmod(0o644)
        self.settings.resolv_conf.write_text(RESOLV_CONF)
        self.settings.resolv_conf.chmod(0o644)
        await self._register()
        if self.extender_port:
            await self._serve_extender()
        self.tasks = [
            asyncio.create_task(self._heartbeat(), name="esrunner-heartbeat"),
            asyncio.create_task(self._watch_pods(), name="esrunner-pods"),
            asyncio.create_task(self._keep_hosts(), name="esrunner-hosts"),
            asyncio.create_task(self._release_volumes(), name="esrunner-volumes"),
        ]
        logger.info(
            "runner node %s ready (state in %s)", self.settings.node_name, self.settings.state_dir
        )

    async def close(self) -> None:
        """Stop every node gracefully (within its Pod's grace period), then everything else."""
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await asyncio.gather(
            *(
                worker.terminate(worker_grace(worker), finalise=False, pre_stop=False)
                for worker in self.workers.values()
            ),
            return_exceptions=True,
        )
        for worker in self.workers.values():
            if worker.task is not None:
                worker.task.cancel()
        await asyncio.gather(*self.stopping.values(), return_exceptions=True)
        if self._web is not None:
            await self._web.cleanup()
        await self.api.close()

    def _kill_leftovers(self) -> None:
        """Nodes a previous runner left behind (it was killed) are stopped: their Pods start anew."""
        pids = self.settings.state_dir / "pids"
        for path in pids.glob("*") if pids.exists() else []:
            with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
                os.killpg(int(path.read_text()), signal.SIGKILL)
            path.unlink(missing_ok=True)

    async def _register(self) -> None:
        name = self.settings.node_name
        manifest = node_manifest(name)
        try:
            await self.api.request("POST", "/api/v1/nodes", manifest)
        except KubeError as error:
            if error.status != 409:
                raise
            await self.api.request(
                "PATCH",
                f"/api/v1/nodes/{name}",
                {"metadata": {k: manifest["metadata"][k] for k in ("labels", "annotations")}},
                content_type="application/merge-patch+json",
            )
        await self._post_status()

    async def _post_status(self) -> None:
        await self.api.request(
            "PATCH",
            f"/api/v1/nodes/{self.settings.node_name}/status",
            {"status": node_status(self.settings.node_name)},
            content_type="application/merge-patch+json",
        )

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            try:
                await self._post_status()
            except (KubeError, OSError) as error:
                logger.warning("node heartbeat failed: %s", error)

    # -- the scheduler extender -------------------------------------------------------------

    async def _serve_extender(self) -> None:
        app = web.Application()
        app.router.add_post("/filter", self._filter)
        self._web = web.AppRunner(app, access_log=None)
        await self._web.setup()
        await web.TCPSite(self._web, "127.0.0.1", self.extender_port).start()

    async def _filter(self, request: web.Request) -> web.Response:
        args = await request.json()
        # kube-scheduler's ExtenderArgs: Go field names, read case-insensitively as Go does.
        fields = {str(key).lower(): value for key, value in args.items()}
        pod = fields.get("pod") or {}
        names = list(fields.get("nodenames") or [])
        if not names and fields.get("nodes"):
            names = [n["metadata"]["name"] for n in fields["nodes"].get("items") or []]
        kept = filter_nodes(pod, names, {self.settings.node_name})
        failed = {
            name: "Elasticsearch Pods run only on the runner's Node, other Pods never"
            for name in names
            if name not in kept
        }
        return web.json_response({"NodeNames": kept, "FailedNodes": failed, "Error": ""})

    # -- Pods -------------------------------------------------------------------------------

    async def _watch_pods(self) -> None:
        path = "/api/v1/pods"
        query = {"fieldSelector": f"spec.nodeName={self.settings.node_name}"}
        while True:
            try:
                listing = await self.api.request("GET", path, query=query)
                seen = set()
                for pod in listing.get("items") or []:
                    seen.add(pod["metadata"]["uid"])
                    self._observe(pod)
                for uid in [uid for uid in self.workers if uid not in seen]:
                    self._gone(uid, finalise=False)
                version = listing["metadata"]["resourceVersion"]
                while True:
                    async for event in self.api.watch(path, query=query, resource_version=version):
                        kind, obj = event.get("type"), event.get("object") or {}
                        if kind == "ERROR":
                            raise KubeError("WATCH", path, int(obj.get("code") or 500), str(obj))
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                        if kind == "DELETED":
                            self._gone(obj["metadata"]["uid"], finalise=False)
                        elif kind in ("ADDED", "MODIFIED"):
                            self._observe(obj)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a kubelet relists after any watch failure
                logger.warning("pod watch failed (%s); relisting", error)
                await asyncio.sleep(1.0)

    def _observe(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        worker = self.workers.get(uid)
        if pod["metadata"].get("deletionTimestamp"):
            if worker is not None and not worker.stopping.is_set():
                self._gone(
                    uid, finalise=True, grace=pod["metadata"].get("deletionGracePeriodSeconds")
                )
            elif worker is None:
                # Deleted before it ever ran here: confirm at once.
                self._confirm_deleted(pod)
            return
        if worker is not None:
            worker.pod = {**pod, "status": worker.pod.get("status") or pod.get("status") or {}}
            return
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        in_use = {w.ip for w in self.workers.values()}
        previous = (pod.get("status") or {}).get("podIP")
        ip = (
            previous
            if previous and previous not in in_use
            else allocate_ip(in_use, free=address_unbound)
        )
        worker = PodWorker(
            self.api,
            self.settings,
            pod,
            ip=ip,
            readiness_port=free_port(),
            on_change=self._hosts_dirty.set,
        )
        self.workers[uid] = worker
        predecessor = self.stopping.get((namespace, name))
        worker.task = asyncio.create_task(
            self._run_after(worker, predecessor), name=f"pod {namespace}/{name}"
        )
        logger.info("pod %s/%s bound here: running it at %s", namespace, name, ip)

    async def _run_after(self, worker: PodWorker, predecessor: asyncio.Task[None] | None) -> None:
        if predecessor is not None:
            # The previous Pod of this name must have let go of its data first.
            with contextlib.suppress(Exception):
                await predecessor
        try:
            await worker.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("pod %s/%s failed in the runner", worker.namespace, worker.name)

    def _gone(self, uid: str, *, finalise: bool, grace: Any = None) -> None:
        worker = self.workers.pop(uid, None) if not finalise else self.workers.get(uid)
        if worker is None:
            return
        seconds = float(grace) if grace is not None else worker_grace(worker)
        key = (worker.namespace, worker.name)

        async def end() -> None:
            await worker.terminate(seconds, finalise=finalise)
            if worker.task is not None:
                worker.task.cancel()
            self.workers.pop(uid, None)
            self._hosts_dirty.set()
            logger.info("pod %s/%s stopped", *key)

        task = asyncio.create_task(end(), name=f"stop {key[0]}/{key[1]}")
        self.stopping[key] = task
        task.add_done_callback(
            lambda done: self.stopping.pop(key, None) if self.stopping.get(key) is done else None
        )

    def _confirm_deleted(self, pod: Mapping[str, Any]) -> None:
        metadata = pod["metadata"]

        async def confirm() -> None:
            with contextlib.suppress(KubeError):
                await self.api.request(
                    "DELETE",
                    f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}",
                    {
                        "kind": "DeleteOptions",
                        "apiVersion": "v1",
                        "gracePeriodSeconds": 0,
                        "preconditions": {"uid": metadata["uid"]},
                    },
                )

        self.tasks.append(asyncio.create_task(confirm()))

    # -- volumes ----------------------------------------------------------------------------

    async def _release_volumes(self) -> None:
        """A claim's directory goes once the claim is gone, as a Delete reclaim policy frees its
        volume: a new claim of the same name (a cluster made again) starts empty."""
        while True:
            await asyncio.sleep(VOLUME_RELEASE_SECONDS)
            try:
                claims = await self.api.request("GET", "/api/v1/persistentvolumeclaims")
            except (KubeError, OSError) as error:
                logger.info("claims not listed: %s", error)
                continue
            live = {str(c["metadata"]["uid"]) for c in claims.get("items") or []}
            for directory in released_claim_directories(self.settings.state_dir / "volumes", live):
                logger.info("claim gone: removing %s", directory)
                shutil.rmtree(directory, ignore_errors=True)

    # -- names ------------------------------------------------------------------------------

    async def _keep_hosts(self) -> None:
        written = ""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hosts_dirty.wait(), timeout=HOSTS_SECONDS)
            self._hosts_dirty.clear()
            try:
                content = await self._hosts_content()
            except (KubeError, OSError) as error:
                logger.info("hosts file not rebuilt: %s", error)
                continue
            if content != written:
                # Rewritten in place: every container has this very file bound at /etc/hosts.
                with self.settings.hosts_file.open("r+") as out:
                    out.seek(0)
                    out.write(content)
                    out.truncate()
                written = content

    async def _hosts_content(self) -> str:
        pods = [
            RunningPod(
                namespace=w.namespace,
                name=w.name,
                ip=w.ip,
                labels=(w.pod.get("metadata") or {}).get("labels") or {},
                subdomain=str((w.pod.get("spec") or {}).get("subdomain") or ""),
                ready=w.ready,
            )
            for w in self.workers.values()
            if not w.stopping.is_set()
        ]
        services: list[dict[str, Any]] = []
        for namespace in sorted({pod.namespace for pod in pods}):
            listing = await self.api.request("GET", f"/api/v1/namespaces/{namespace}/services")
            services += listing.get("items") or []
        return hosts_file(pods, services)


def released_claim_directories(root: Path, live_uids: set[str]) -> list[Path]:
    """The claim directories (``<root>/<ns>/<claim>-<uid>``) whose claim no longer exists."""
    if not root.is_dir():
        return []
    return sorted(
        directory
        for namespace in root.iterdir()
        if namespace.is_dir()
        for directory in namespace.iterdir()
        if directory.is_dir() and directory.name[-36:] not in live_uids
    )


def worker_grace(worker: PodWorker) -> float:
    """A Pod's termination grace period."""
    return float(worker.plan.grace_seconds) if worker.plan is not None else 30.0


async def serve(api: KubeApi, settings: RunnerSettings, *, extender_port: int) -> None:
    """Run until cancelled (Ctrl-C), then stop every node."""
    runner = Runner(api, settings, extender_port=extender_port)
    await runner.start()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.close()
