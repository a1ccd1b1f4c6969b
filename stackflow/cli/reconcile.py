"""``stackflow reconcile KIND/NAMESPACE/NAME``: reconcile one resource now.

``KIND`` is the ECK kind (``Elasticsearch``), its plural, its short name (``es``) or a controller
name (``license``). The resource is read from the API server first (``--kubeconfig``, else
in-cluster or the default kubeconfig): one that does not exist is refused ("... not found"), as a
signal-with-start would otherwise start a workflow for it that reports it ``Deleted``. With
``--wait`` the ``reconcile_now`` update runs on the resource's workflow and the outcome is printed;
without it a ``Manual`` trigger is signalled (signal-with-start) and the command returns at once.
The Temporal connection comes from ``--config`` (or the defaults and ``STACKFLOW_*`` variables).
Exit status: 0 done, 1 the workflow failed or the API server could not be reached, 2 bad
arguments or configuration, no kubeconfig, no such resource, or Temporal not reachable.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from stackflow.cli.kubeconfig import kubeconfig_problem
from stackflow.config import ConfigError, UnusableSettingError, load_config
from stackflow.controllers import Controller, ControllerTable
from stackflow.models.engine import ReconcileNowInput, ReconcileNowResult, ResourceRef, Trigger

__all__ = ["SHORT_NAMES", "TargetNotFoundError", "main", "resolve_target"]

EXIT_FAILED = 1
EXIT_BAD_ARGS = 2
#: Seconds each API request may take.
KUBE_TIMEOUT = 10.0


class TargetNotFoundError(Exception):
    """The resource named on the command line does not exist in the cluster."""


#: ECK's short names (``kubectl get es``).
SHORT_NAMES = {
    "es": "Elasticsearch",
    "kb": "Kibana",
    "apm": "ApmServer",
    "ent": "EnterpriseSearch",
    "beat": "Beat",
    "agent": "Agent",
    "ls": "Logstash",
    "ems": "ElasticMapsServer",
    "epr": "PackageRegistry",
    "scp": "StackConfigPolicy",
    "esa": "ElasticsearchAutoscaler",
}


def _controller_for(kind: str, controllers: ControllerTable) -> Controller:
    wanted = kind.lower()
    for controller in controllers:
        if controller.name.lower() == wanted:
            return controller
    wanted = SHORT_NAMES.get(wanted, kind).lower()
    for controller in controllers:
        primary = controller.primary
        if wanted in (primary.kind.lower(), primary.plural.lower()):
            return controller
    known = sorted({c.primary.kind for c in controllers} | {c.name for c in controllers})
    raise ValueError(f"unknown kind {kind!r} (known: {', '.join(known)})")


def resolve_target(target: str, controllers: ControllerTable) -> ResourceRef:
    """``KIND/NAMESPACE/NAME`` → the workflow's ResourceRef; ValueError with a clear message."""
    parts = target.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"expected KIND/NAMESPACE/NAME, got {target!r}")
    kind, namespace, name = parts
    return _controller_for(kind, controllers).ref(namespace=namespace, name=name)


def build_parser() -> argparse.ArgumentParser:
    """Flags of ``stackflow reconcile``."""
    parser = argparse.ArgumentParser(
        prog="stackflow reconcile", description="Reconcile one resource now."
    )
    parser.add_argument("target", metavar="KIND/NAMESPACE/NAME", help="e.g. es/default/quickstart")
    parser.add_argument(
        "--wait", action="store_true", help="wait for the reconcile and print its outcome"
    )
    parser.add_argument("--config", type=Path, help="operator configuration file (YAML)")
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig file (default: in-cluster config in a Pod, else $KUBECONFIG)",
    )
    parser.add_argument("--context", dest="kube_context", help="kubeconfig context")
    return parser


async def check_exists(ref: ResourceRef, *, kubeconfig: Path | None, context: str | None) -> None:
    """Read the resource from the API server; TargetNotFoundError when it does not exist."""
    from stackflow.kube import errors
    from stackflow.kube.client import api_client_session
    from stackflow.kube.resources import ResourceClient

    async with api_client_session(
        kubeconfig=kubeconfig, context=context, timeout=KUBE_TIMEOUT
    ) as api_client:
        try:
            await ResourceClient(api_client).get(
                ref.resource, namespace=ref.namespace, name=ref.name
            )
        except errors.NotFound:
            raise TargetNotFoundError(f"{ref.summary} not found (nothing to reconcile)") from None


def describe(ref: ResourceRef, result: ReconcileNowResult) -> str:
    """One line for a finished reconcile."""
    line = f"{ref.summary}: {result.phase.value} (reconciles: {result.reconciles})"
    return f"{line}: {result.message}" if result.message else line


async def _reconcile(ref: ResourceRef, args: argparse.Namespace, *, local_step: bool) -> int:
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    from stackflow.kube.errors import KubeError
    from stackflow.temporal import connect_client, signal_with_start

    config = load_config(args.config, os.environ)
    try:
        await check_exists(ref, kubeconfig=args.kubeconfig, context=args.kube_context)
    except (KubeError, OSError, TimeoutError) as exc:
        print(f"stackflow reconcile: cannot read {ref.summary}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    wait: bool = args.wait
    client = await connect_client(config)
    request = ReconcileNowInput()
    trigger = Trigger(reason=request.reason, source=request.source, detail="requested by the CLI")
    try:
        # Make sure a run exists (a signal-with-start never fails on a missing workflow).
        await signal_with_start(
            client,
            task_queue=config.temporal_task_queue,
            ref=ref,
            trigger=trigger,
            local_step=local_step,
        )
        if not wait:
            print(f"{ref.summary}: reconcile requested (workflow {ref.workflow_id})")
            return 0
        result = await client.get_workflow_handle(ref.workflow_id).execute_update(
            "reconcile_now", request, result_type=ReconcileNowResult
        )
    except (RPCError, WorkflowUpdateFailedError) as exc:
        print(f"stackflow reconcile: {ref.workflow_id}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(describe(ref, result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``stackflow reconcile``; returns the exit status."""
    args = build_parser().parse_args(argv)
    from stackflow.controllers import CONTROLLERS

    try:
        ref = resolve_target(args.target, CONTROLLERS)
        local_step = CONTROLLERS.named(ref.controller).local_step
        if (problem := kubeconfig_problem(args.kubeconfig, os.environ)) is not None:
            raise ValueError(problem)
        return asyncio.run(_reconcile(ref, args, local_step=local_step))
    except (ValueError, TargetNotFoundError, UnusableSettingError) as exc:
        print(f"stackflow reconcile: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    except ConfigError as exc:
        print(f"stackflow reconcile: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    except (OSError, RuntimeError) as exc:
        print(f"stackflow reconcile: cannot reach Temporal: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
