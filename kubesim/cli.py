"""``kubesim`` command line: serve a simulated cluster until SIGINT/SIGTERM.

Prints exactly one line ``kubesim listening on http://HOST:PORT`` once requests are accepted.
``build_parser`` and ``main`` are reused by ``stackflow kubesim``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from kubesim import errors
from kubesim.testing import KubeSim

log = logging.getLogger("kubesim.cli")

CRD_API_VERSION = "apiextensions.k8s.io/v1"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``kubesim`` (also mounted as ``stackflow kubesim``)."""
    parser = argparse.ArgumentParser(
        prog="kubesim", description="Serve an in-process Kubernetes API emulator."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (0 = a free port)")
    parser.add_argument("--kubeconfig", type=Path, help="write a kubeconfig for the server here")
    parser.add_argument(
        "--no-controllers", action="store_true", help="do not run the simulated controllers"
    )
    parser.add_argument(
        "--pod-ready-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="delay before simulated pods become ready",
    )
    parser.add_argument("--crds", type=Path, metavar="DIR", help="apply the CRD YAML files in DIR")
    parser.add_argument(
        "--state-file", type=Path, metavar="PATH", help="restore state on start, save on shutdown"
    )
    parser.add_argument(
        "--history-window",
        type=int,
        default=1000,
        metavar="N",
        help="watch events retained for resourceVersion starts",
    )
    parser.add_argument(
        "--scheduler-extender",
        metavar="URL",
        help="a kube-scheduler extender (filter verb, nodeCacheCapable): the simulated scheduler "
        "POSTs URL/filter and places each pod only on a node it keeps",
    )
    return parser


def crd_documents(directory: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every CRD document of the ``*.yaml``/``*.yml``/``*.json`` files in ``directory`` (multi-doc)."""
    files = sorted(
        p for p in directory.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml", ".json")
    )
    for path in files:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if (
                isinstance(document, dict)
                and document.get("kind") == "CustomResourceDefinition"
                and document.get("apiVersion") == CRD_API_VERSION
            ):
                yield path, document


def apply_crds(sim: KubeSim, directory: Path) -> int:
    """Create (or replace) the CRDs found in ``directory``; answers how many were applied."""
    registry = sim.server.registry
    rt = registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    if rt is None:
        raise RuntimeError("this kubesim build does not serve CustomResourceDefinitions")
    applied = 0
    for path, crd in crd_documents(directory):
        name = str((crd.get("metadata") or {}).get("name", ""))
        body = {k: v for k, v in crd.items() if k != "status"}
        try:
            live = sim.store.get(rt, None, name)
        except errors.StatusError as err:
            if err.code != 404:
                raise
            sim.store.create(rt, body, namespace=None)
        else:
            body.setdefault("metadata", {})["resourceVersion"] = live["metadata"]["resourceVersion"]
            sim.store.update(rt, body, namespace=None, name=name)
        log.info("applied CRD %s from %s", name, path)
        applied += 1
    return applied


async def serve(args: argparse.Namespace) -> int:
    """Run the server until a stop signal; the exit code of ``main``."""
    sim = KubeSim(
        host=args.host,
        port=args.port,
        controllers=not args.no_controllers,
        pod_ready_delay=args.pod_ready_delay,
        history_window=args.history_window,
        state_file=args.state_file,
        scheduler_extender=args.scheduler_extender,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await sim.start()
    try:
        if args.crds is not None:
            apply_crds(sim, args.crds)
            await sim.settle()
        if args.kubeconfig is not None:
            sim.write_kubeconfig(args.kubeconfig)
        print(f"kubesim listening on {sim.url}", flush=True)
        await stop.wait()
    finally:
        await sim.stop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kubesim`` / ``python -m kubesim``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.crds is not None and not args.crds.is_dir():
        print(f"kubesim: --crds {args.crds} is not a directory", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(args))
    except OSError as exc:
        print(f"kubesim: {exc}", file=sys.stderr)
        return 1
    except errors.StatusError as exc:
        print(f"kubesim: {exc.message}", file=sys.stderr)
        return 1
