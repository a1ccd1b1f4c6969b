"""``ControlPlane``: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on
127.0.0.1, started together, checked ready, and stopped together.

Usage::

    with ControlPlane(tmp_path / "cluster") as plane:
        plane.admin_kubeconfig            # system:masters, for kubectl and kubernetes_asyncio
        plane.token_kubeconfig(path, namespace="elastic-system", service_account="stackflow")
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from controlplane import pki
from controlplane.api import AdminApi, ApiError, insecure_probe, kubeconfig_document
from controlplane.processes import Component, free_port
from controlplane.volumes import VolumeProvisioner

#: Where ``make tools`` puts the binaries; ``STACKFLOW_TOOLS_BIN`` points elsewhere.
DEFAULT_BIN = Path(__file__).resolve().parents[1] / ".tools" / "bin"
REQUIRED = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
START_SECONDS = 120.0
#: How many times a start that lost a port race (or failed for any reason) is retried.
ATTEMPTS = 3
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
POD_CIDR = "10.244.0.0/16"


class ControlPlaneError(RuntimeError):
    """A component failed to start; the message carries the end of its log."""


def tools_bin() -> Path:
    """The directory the control-plane binaries are taken from."""
    return Path(os.environ.get("STACKFLOW_TOOLS_BIN") or DEFAULT_BIN)


def tools_missing(bin_dir: Path | None = None) -> list[str]:
    """The required binaries not built yet (empty when the control plane can start)."""
    directory = bin_dir or tools_bin()
    return [name for name in REQUIRED if not (directory / name).is_file()]


def fake_node(name: str) -> dict[str, Any]:
    """A Node that kwok keeps Ready and whose bound Pods it moves to Running."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
            },
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "500"},
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "500"},
            "nodeInfo": {
                "architecture": "amd64",
                "kubeletVersion": "kwok",
                "operatingSystem": "linux",
                "kernelVersion": "",
                "osImage": "",
                "containerRuntimeVersion": "",
                "kubeProxyVersion": "",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
            },
            "phase": "Running",
        },
    }


class ControlPlane:
    """A whole control plane in ``directory`` (a temporary one when not given)."""

    def __init__(
        self,
        directory: Path | None = None,
        *,
        bin_dir: Path | None = None,
        nodes: int = 2,
        audit_log: bool = False,
        keep_data: bool = False,
        progress: Callable[[str], None] | None = None,
        scheduler_extender: str | None = None,
    ) -> None:
        """Configure; nothing runs until ``start``. ``keep_data`` keeps etcd's data directory from
        one start to the next (``stackflow dev``); otherwise every start begins empty.
        ``scheduler_extender`` is the URL prefix of a kube-scheduler extender (filter verb,
        nodeCacheCapable, not ignorable) that kube-scheduler asks about every pod it places."""
        self._owned_directory = directory is None
        self.directory = directory or Path(tempfile.mkdtemp(prefix="stackflow-controlplane-"))
        self.bin_dir = bin_dir or tools_bin()
        self.node_count = nodes
        self.audit_log = self.directory / "audit.log" if audit_log else None
        self.keep_data = keep_data
        self.scheduler_extender = scheduler_extender
        self.progress = progress or (lambda message: None)
        self.components: list[Component] = []
        #: Every process id this control plane ever started (a test checks none outlives it).
        self.started: list[int] = []
        self.provisioner: VolumeProvisioner | None = None
        self.apiserver_port = 0
        self._pki: pki.Pki | None = None

    # -- what a client needs ---------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API server's address."""
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def ca_file(self) -> Path:
        """The CA the API server's certificate is signed by."""
        return self.pki.ca.cert

    @property
    def pki(self) -> pki.Pki:
        """The certificates (after ``start``)."""
        if self._pki is None:
            raise ControlPlaneError("the control plane has not been started")
        return self._pki

    @property
    def admin_kubeconfig(self) -> Path:
        """A kubeconfig as ``system:masters`` (client certificate)."""
        return self.directory / "admin.kubeconfig"

    def api(self) -> AdminApi:
        """The launcher's own admin client."""
        return AdminApi(self.apiserver_port, self.pki)

    def token_kubeconfig(
        self,
        path: Path,
        *,
        namespace: str,
        service_account: str,
        expiration_seconds: int = 24 * 3600,
    ) -> Path:
        """Write a kubeconfig that authenticates as a ServiceAccount with a TokenRequest token (the
        ServiceAccount is created if missing)."""
        api = self.api()
        api.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            {"metadata": {"name": service_account, "namespace": namespace}},
        )
        answer = api.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": expiration_seconds},
            },
        )
        document = kubeconfig_document(
            self.url, self.ca_file, user={"token": answer["status"]["token"]}
        )
        document["contexts"][0]["context"]["namespace"] = namespace
        path.parent.mkdir(parents=True, exist_ok=True)
        pki.write_private(path, yaml.safe_dump(document).encode())  # it holds a token
        return path

    def pids(self) -> list[int]:
        """The process ids of the running components (a test checks none outlives ``stop``)."""
        return [pid for component in self.components if (pid := component.pid) is not None]

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        """Start it."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop it."""
        self.stop()

    def start(self) -> None:
        """Start every component and wait until the cluster schedules Pods onto Ready nodes."""
        missing = tools_missing(self.bin_dir)
        if missing:
            raise ControlPlaneError(
                f"missing {', '.join(missing)} in {self.bin_dir}: run `make tools` first"
            )
        for attempt in range(1, ATTEMPTS + 1):
            try:
                self._start_once()
                return
            except ControlPlaneError:
                self._stop_components()
                if attempt == ATTEMPTS:
                    raise
                self.progress(
                    f"control plane start failed (attempt {attempt}); retrying on new ports"
                )

    def stop(self) -> None:
        """Stop every component; the temporary directory goes too when this made it."""
        self._stop_components()
        if self._owned_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def restart_apiserver(self, *, with_etcd: bool = False) -> None:
        """Stop kube-apiserver (and etcd first, with ``with_etcd``) and start them again on the
        same ports and data, as a crash or an upgrade would; return once the API server is ready.
        Every watch and connection to it ends meanwhile."""
        names = ("etcd", "kube-apiserver") if with_etcd else ("kube-apiserver",)
        chosen = [component for component in self.components if component.name in names]
        for component in reversed(chosen):
            self.progress(f"stopping {component.name}")
            component.stop()
        for component in chosen:
            self.progress(f"starting {component.name} again")
            component.start()
            if component.pid is not None:
                self.started.append(component.pid)
        self._wait(chosen[-1], self._apiserver_ready)

    def _stop_components(self) -> None:
        if self.provisioner is not None:
            self.provisioner.stop()
            self.provisioner = None
        for component in reversed(self.components):
            component.stop()

    def _start_once(self) -> None:
        self.components = []
        self.directory.mkdir(parents=True, exist_ok=True)
        self._pki = pki.generate(self.directory / "pki")
        logs = self.directory / "logs"
        logs.mkdir(exist_ok=True)
        etcd_port, peer_port = free_port(), free_port()
        self.apiserver_port = free_port()

        data = self.directory / "etcd"
        if not self.keep_data:
            shutil.rmtree(data, ignore_errors=True)
        self._launch(
            Component(
                "etcd",
                [
                    str(self.bin_dir / "etcd"),
                    "--name=controlplane",
                    f"--data-dir={data}",
                    f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                    f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                    f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                    f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                    f"--initial-cluster=controlplane=http://127.0.0.1:{peer_port}",
                    "--unsafe-no-fsync",
                    "--log-level=warn",
                ],
                logs / "etcd.log",
            ),
            ready=lambda: _http_ok(etcd_port, "/health"),
        )
        self._launch(
            Component(
                "kube-apiserver", self._apiserver_argv(etcd_port), logs / "kube-apiserver.log"
            ),
            ready=self._apiserver_ready,
        )
        self._write_kubeconfigs()
        controller_manager_port, scheduler_port = free_port(), free_port()
        self._launch(
            Component(
                "kube-controller-manager",
                self._controller_manager_argv(controller_manager_port),
                logs / "kube-controller-manager.log",
            ),
            ready=lambda: (
                insecure_probe(controller_manager_port) and self._default_service_account()
            ),
        )
        self._launch(
            Component(
                "kube-scheduler", self._scheduler_argv(scheduler_port), logs / "kube-scheduler.log"
            ),
            ready=lambda: insecure_probe(scheduler_port),
        )
        kwok_port = free_port()
        self._launch(
            Component(
                "kwok",
                [
                    str(self.bin_dir / "kwok"),
                    f"--kubeconfig={self.admin_kubeconfig}",
                    "--manage-all-nodes=false",
                    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                    f"--cidr={POD_CIDR}",
                    "--node-ip=127.0.0.1",
                    f"--server-address=127.0.0.1:{kwok_port}",
                ],
                logs / "kwok.log",
            ),
            ready=lambda: True,
        )
        api = self.api()
        for index in range(self.node_count):
            api.create("/api/v1/nodes", fake_node(f"kwok-node-{index}"))
        self._wait(self.components[-1], self._nodes_ready)
        self.provisioner = VolumeProvisioner(api)
        self.provisioner.start()
        self.progress(f"control plane ready at {self.url} ({self.node_count} kwok nodes)")

    # -- component arguments -------------------------------------------------------------

    def _apiserver_argv(self, etcd_port: int) -> list[str]:
        keys = self.pki
        argv = [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.apiserver_port}",
            f"--cert-dir={self.directory / 'apiserver-certs'}",
            f"--tls-cert-file={keys.serving.cert}",
            f"--tls-private-key-file={keys.serving.key}",
            f"--client-ca-file={keys.ca.cert}",
            "--authorization-mode=Node,RBAC",
            # On top of the default plugins: the stricter owner-reference check some
            # distributions (OpenShift) run, so a missing `<kind>/finalizers` grant shows here.
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={keys.service_account_public_key}",
            f"--service-account-signing-key-file={keys.service_account_key}",
            f"--service-cluster-ip-range={pki.SERVICE_RANGE}",
            # Its own address is loopback, which Endpoints may not hold; nothing here needs the
            # `kubernetes` Service's endpoints (no client runs in a Pod).
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true",
            "--profiling=false",
            "--v=1",
        ]
        if self.audit_log is not None:
            policy = self.directory / "audit-policy.yaml"
            policy.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "audit.k8s.io/v1",
                        "kind": "Policy",
                        "omitStages": ["RequestReceived"],
                        "rules": [{"level": "Metadata"}],
                    }
                )
            )
            argv += [
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
            ]
        return argv

    def _controller_manager_argv(self, port: int) -> list[str]:
        kubeconfig = self.directory / "controller-manager.kubeconfig"
        return [
            str(self.bin_dir / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.directory / 'controller-manager-certs'}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={self.pki.service_account_key}",
            f"--root-ca-file={self.pki.ca.cert}",
            f"--cluster-cidr={POD_CIDR}",
            f"--service-cluster-ip-range={pki.SERVICE_RANGE}",
            # The garbage collector, namespace, workload, service-account and token controllers
            # are all in the default set; the cloud and node-IPAM ones are off by default.
            "--controllers=*",
            "--concurrent-gc-syncs=20",
            # kwok's Nodes have no kubelet: their heartbeats are kwok's, and on a loaded 2-core
            # machine it can miss the default 50 s. The node lifecycle controller would then mark
            # the Node NotReady and every Pod on it not ready, and nothing makes them ready
            # again (kwok readies a Pod once): every workload would stay red. Node health is
            # not what the tests are about, so the Nodes never expire while a session lasts.
            "--node-monitor-grace-period=6h",
            "--v=1",
        ]

    def _scheduler_argv(self, port: int) -> list[str]:
        kubeconfig = self.directory / "scheduler.kubeconfig"
        argv = [str(self.bin_dir / "kube-scheduler")]
        if self.scheduler_extender is None:
            argv.append(f"--kubeconfig={kubeconfig}")
        else:
            # With --config, kube-scheduler ignores --kubeconfig (and the other deprecated
            # flags) without a word: the kubeconfig goes into the file's clientConnection.
            argv.append(f"--config={self._write_scheduler_config(kubeconfig)}")
        return [
            *argv,
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            # Honoured with --config too (the leader-election flags override the file).
            "--leader-elect=false",
        ]

    def _write_scheduler_config(self, kubeconfig: Path) -> Path:
        """The KubeSchedulerConfiguration naming the scheduler extender."""
        path = self.directory / "scheduler-config.yaml"
        configuration = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "leaderElection": {"leaderElect": False},
            "extenders": [
                {
                    "urlPrefix": self.scheduler_extender,
                    "filterVerb": "filter",
                    "nodeCacheCapable": True,
                    "ignorable": False,
                    "weight": 1,
                }
            ],
        }
        path.write_text(yaml.safe_dump(configuration))
        return path

    def _write_kubeconfigs(self) -> None:
        keys = self.pki
        for path, credential in (
            (self.admin_kubeconfig, keys.admin),
            (self.directory / "controller-manager.kubeconfig", keys.controller_manager),
            (self.directory / "scheduler.kubeconfig", keys.scheduler),
        ):
            user = {"client-certificate": str(credential.cert), "client-key": str(credential.key)}
            path.write_text(yaml.safe_dump(kubeconfig_document(self.url, keys.ca.cert, user=user)))

    # -- readiness ---------------------------------------------------------------------------

    def _launch(self, component: Component, *, ready: Callable[[], bool]) -> None:
        self.progress(f"starting {component.name}")
        self.components.append(component)
        component.start()
        if component.pid is not None:
            self.started.append(component.pid)
        self._wait(component, ready)

    def _wait(self, component: Component, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            status = component.exited()
            if status is not None:
                raise ControlPlaneError(
                    f"{component.name} exited with status {status} while starting; "
                    f"the end of {component.log}:\n{component.tail()}"
                )
            try:
                if ready():
                    return
            except (ApiError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{component.name} not ready within {START_SECONDS:g} s; "
                    f"the end of {component.log}:\n{component.tail()}"
                )
            time.sleep(0.1)  # a launcher polling a process it started, not a test

    def _apiserver_ready(self) -> bool:
        return bool(self.api().get("/readyz") == "ok")

    def _default_service_account(self) -> bool:
        self.api().get("/api/v1/namespaces/default/serviceaccounts/default")
        return True

    def _nodes_ready(self) -> bool:
        nodes = self.api().get("/api/v1/nodes?labelSelector=type%3Dkwok")["items"]
        ready = [
            node
            for node in nodes
            if any(
                condition["type"] == "Ready" and condition["status"] == "True"
                for condition in node.get("status", {}).get("conditions") or []
            )
        ]
        return len(ready) >= self.node_count


def _http_ok(port: int, path: str) -> bool:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    finally:
        connection.close()
