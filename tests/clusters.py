"""The clusters the end-to-end tier runs on: kubesim, and the real control plane of ``make tools``.

On kubesim each test gets a fresh emulator. The real control plane starts once per test session
(``control_plane`` fixture in tests/conftest.py); each test gets it with the ECK CRDs, the operator
namespace with the chart ``deploy/stackflow`` installed by the real helm (release ``stackflow``, no
operator Pod: ``replicaCount=0``, so the operator's RBAC, ServiceAccount and ConfigMap) and a
ServiceAccount token for the operator, and leaves it as it found it: every namespace the test made
is deleted, and gone, before the next test starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from controlplane import ControlPlane, tools_missing
from controlplane.cluster import tools_bin
from kubesim.cli import apply_crds
from kubesim.testing import KubeSim
from stackflow.kube.client import make_api_client
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES

REPO = Path(__file__).resolve().parents[1]
KUBECTL = Path(sys.executable).parent / "kubectl"
CHART = REPO / "deploy" / "stackflow"
CRDS = REPO / "deploy" / "crds"
KUBESIM = "kubesim"
APISERVER = "apiserver"
#: Namespaces a real cluster starts with; a test's cleanup leaves them alone.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
#: The operator's ServiceAccount, as the chart names it for the release ``stackflow``.
OPERATOR_SERVICE_ACCOUNT = "stackflow"


def apiserver_unavailable() -> str | None:
    """Why the apiserver tier cannot run here, or None when it can."""
    missing = tools_missing()
    if not missing:
        return None
    if shutil.which("go") is None:
        return "apiserver tier skipped: Go is not installed, so `make tools` cannot build the control plane"
    return f"apiserver tier skipped: {', '.join(missing)} not built in {tools_bin()} (run `make tools`)"


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    """Run the real kubectl; its stdout, or (``check``) an AssertionError with its stderr."""
    done = subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def helm() -> Path:
    """The helm ``make tools`` built."""
    return tools_bin() / "helm"


def render_chart(*, namespace: str, values: dict[str, str] | None = None) -> str:
    """``helm template`` of the chart for the release ``stackflow`` in ``namespace``."""
    sets = [f"--set={key}={value}" for key, value in (values or {}).items()]
    done = subprocess.run(
        [str(helm()), "template", "stackflow", str(CHART), f"--namespace={namespace}", *sets],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"helm template failed: {done.stderr.strip()}")
    return done.stdout


#: The release the apiserver tier installs the chart as.
RELEASE = "stackflow"


def install_chart(
    plane: ControlPlane,
    *,
    namespace: str,
    values: Mapping[str, str] | None = None,
) -> str:
    """``helm upgrade --install`` the chart as ``RELEASE`` into ``namespace`` (which must exist) on
    the control plane, without an operator Pod (``replicaCount=0``: kwok runs no container) and
    without the CRDs (the session installed them); ``values`` are more ``--set``. Its output, or
    an AssertionError with helm's stderr.

    Objects left by an earlier release of the session (a test's namespaces are deleted, its
    release record with them, but not the cluster-scoped objects) are taken over.
    """
    sets = [
        f"--set={key}={value}" for key, value in {"replicaCount": "0", **(values or {})}.items()
    ]
    done = subprocess.run(
        [
            str(helm()),
            "upgrade",
            "--install",
            RELEASE,
            str(CHART),
            f"--kubeconfig={plane.admin_kubeconfig}",
            f"--namespace={namespace}",
            "--skip-crds",
            "--take-ownership",
            "--reset-values",
            *sets,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"helm upgrade --install failed: {done.stderr.strip()}")
    return done.stdout


def install_crds(plane: ControlPlane) -> None:
    """Apply the ECK CRDs server-side and wait until every one is Established."""
    kubectl(plane.admin_kubeconfig, "apply", "--server-side", f"--filename={CRDS}")
    kubectl(
        plane.admin_kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd",
        "--all",
    )


@dataclass(frozen=True)
class ClusterTarget:
    """Which cluster a test runs on (the ``cluster_target`` fixture): its name, and the session's
    control plane when it is the real API server."""

    name: str
    plane: ControlPlane | None = None

    def open(
        self, directory: Path, **options: float | str
    ) -> contextlib.AbstractAsyncContextManager[KubeCluster]:
        """The cluster, set up for one test (see ``kube_cluster``)."""
        return kube_cluster(directory, self.name, plane=self.plane, **options)  # type: ignore[arg-type]


@dataclass
class KubeCluster:
    """The cluster a test runs on: an admin client, and the kubeconfig the operator runs with."""

    name: str
    kube: ResourceClient
    admin_kubeconfig: Path
    operator_kubeconfig: Path
    sim: KubeSim | None = None
    plane: ControlPlane | None = None


async def ensure_namespace(
    kube: ResourceClient, name: str, labels: dict[str, str] | None = None
) -> None:
    """Create a namespace, or set its labels when it exists already."""
    body = {"metadata": {"name": name, "labels": labels or {}}}
    existing = {item["metadata"]["name"] for item in (await kube.list(NAMESPACES))["items"]}
    if name in existing:
        if labels:
            await kube.merge_patch(
                NAMESPACES, {"metadata": {"labels": labels}}, namespace=None, name=name
            )
        return
    await kube.create(NAMESPACES, body)


async def _clean(kube: ResourceClient, *, within: float = 180.0) -> None:
    """Delete every namespace a test made and wait until they are gone."""
    listed = await kube.list(NAMESPACES)
    doomed = [
        item["metadata"]["name"]
        for item in listed["items"]
        if item["metadata"]["name"] not in SYSTEM_NAMESPACES
    ]
    for name in doomed:
        with contextlib.suppress(Exception):
            await kube.delete(NAMESPACES, namespace=None, name=name)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        left = {item["metadata"]["name"] for item in (await kube.list(NAMESPACES))["items"]}
        remaining = sorted(left & set(doomed))
        if not remaining:
            return
        if loop.time() > deadline:
            raise AssertionError(f"namespaces {remaining} still terminating after {within:g}s")
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def kube_cluster(
    directory: Path,
    name: str = KUBESIM,
    *,
    plane: ControlPlane | None = None,
    operator_namespace: str = "elastic-system",
    pod_ready_delay: float = 0.2,
    chart_values: Mapping[str, str] | None = None,
    namespaces: Sequence[str] = (),
    scheduler_extender: str | None = None,
) -> AsyncIterator[KubeCluster]:
    """The cluster ``name`` with the ECK CRDs and the operator namespace (and, on the real API
    server, the chart installed with ``chart_values`` and the operator's token; ``namespaces`` are
    created before, for a chart that makes objects in them); cleaned up after. kubesim's
    scheduler asks ``scheduler_extender`` (the real one is configured on ``plane``)."""
    if name == KUBESIM:
        async with KubeSim(
            pod_ready_delay=pod_ready_delay, scheduler_extender=scheduler_extender
        ) as sim:
            apply_crds(sim, CRDS)
            await sim.settle()
            kubeconfig = sim.write_kubeconfig(directory / "kubeconfig")
            api_client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=30)
            try:
                kube = ResourceClient(api_client)
                await ensure_namespace(kube, operator_namespace)
                yield KubeCluster(name, kube, kubeconfig, kubeconfig, sim=sim)
            finally:
                await api_client.close()
        return
    if plane is None:
        raise AssertionError("the apiserver cluster needs the session's control plane")
    api_client = await make_api_client(kubeconfig=plane.admin_kubeconfig, context=None, timeout=30)
    kube = ResourceClient(api_client)
    try:
        for namespace in (operator_namespace, *namespaces):
            await ensure_namespace(kube, namespace)
        await asyncio.to_thread(
            install_chart, plane, namespace=operator_namespace, values=chart_values
        )
        operator_kubeconfig = await asyncio.to_thread(
            plane.token_kubeconfig,
            directory / "operator.kubeconfig",
            namespace=operator_namespace,
            service_account=OPERATOR_SERVICE_ACCOUNT,
        )
        try:
            yield KubeCluster(name, kube, plane.admin_kubeconfig, operator_kubeconfig, plane=plane)
        finally:
            await _clean(kube)
    finally:
        await api_client.close()
