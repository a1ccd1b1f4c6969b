"""``stackflow status KIND/NAMESPACE/NAME``: why one resource is (or is not) reconciled.

Prints, for the resource's ``ResourceWorkflow``: the scope verdict and why (the namespace's labels
against the selector, or the static list, judged by the operator's own ``NamespaceMatcher``), the
license verdict (the operator's ``OperatorLicenseReader``, and whether the controller's gate needs a
license at all), the workflow's phase (the ``state`` query), its last reconcile and its outcome
(from the run's history), the pending triggers, the resource's ``StackflowReconciliation``
condition when it has one, and the Temporal UI link of the workflow.

``KIND`` is read as ``stackflow reconcile`` reads it. ``--ui-url`` is required: ``stackflow dev``
serves the UI on a port of its own (printed at start-up), which the Temporal address does not tell.
Exit status: 0 printed, 1 Temporal or the API server could not be reached, 2 bad arguments or
configuration, no kubeconfig, or no workflow for the resource.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from stackflow.cli.kubeconfig import kubeconfig_problem
from stackflow.config import ConfigError, OperatorConfig, UnusableSettingError, load_config
from stackflow.models.engine import (
    SA_PHASE,
    ResourceRef,
    WorkflowStateView,
    reconcile_activity,
    reconcile_step_activity,
)
from stackflow.scope.matcher import NamespaceMatcher, ScopeConfig, ScopeMode

__all__ = [
    "LastReconcile",
    "LicenseFacts",
    "ScopeVerdict",
    "StatusReport",
    "last_reconcile",
    "main",
    "render",
    "scope_verdict",
    "workflow_link",
]

EXIT_UNREACHABLE = 1
EXIT_BAD_ARGS = 2
#: The condition the license wait writes on the resource (``activities.license_wait_condition``).
CONDITION_TYPE = "StackflowReconciliation"
QUERY_TIMEOUT = timedelta(seconds=10)


class BadInputError(ValueError):
    """Input the command cannot act on: one line, exit status 2."""


@dataclass(frozen=True)
class ScopeVerdict:
    """Whether the resource's namespace is managed, and why, in words."""

    in_scope: bool
    why: str


@dataclass(frozen=True)
class LicenseFacts:
    """The license gate as it stands for this resource's controller."""

    #: Whether the controller's gate needs an enterprise license in the configured scope mode.
    required: bool
    gate: str
    licensed: bool
    #: Why enterprise features are off (the license reader's reason), empty when licensed.
    reason: str = ""
    #: The license that enables them (uid, type, expiry), empty when none.
    license: str = ""


@dataclass(frozen=True)
class LastReconcile:
    """The latest reconcile step of the run: when it ended and what it decided."""

    at: datetime | None
    verdict: str
    reason: str = ""
    phase: str = ""
    message: str = ""


@dataclass(frozen=True)
class StatusReport:
    """Everything ``stackflow status`` prints about one resource."""

    ref: ResourceRef
    scope: ScopeVerdict
    license: LicenseFacts
    #: The ``state`` query's answer; None when no worker answered (the operator is not running).
    state: WorkflowStateView | None
    #: The run's status (Running, Completed, …) and its ``StackflowPhase`` search attribute.
    run_status: str
    phase_attribute: str | None
    last: LastReconcile | None
    condition: Mapping[str, Any] | None
    link: str


class _OneNamespace:
    """The matcher's Namespace source for one namespace (None: it does not exist)."""

    def __init__(self, name: str, labels: Mapping[str, str] | None) -> None:
        self._name = name
        self._labels = labels

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of ``name`` when it is the namespace at hand."""
        return self._labels if name == self._name else None

    def namespace_names(self) -> Iterable[str]:
        """The one namespace, when it exists."""
        return [self._name] if self._labels is not None else []


def _labels_text(labels: Mapping[str, str]) -> str:
    if not labels:
        return "{}"
    return "{" + ", ".join(f"{key}={value}" for key, value in sorted(labels.items())) + "}"


def scope_verdict(
    scope: ScopeConfig, namespace: str, labels: Mapping[str, str] | None
) -> ScopeVerdict:
    """The operator's matcher's answer for ``namespace`` (``labels`` None: no such Namespace),
    with the reason: the operator namespace, every namespace, the static list or the selector."""
    matcher = NamespaceMatcher(scope, source=_OneNamespace(namespace, labels))
    in_scope = matcher.name_matches(namespace)
    if matcher.is_always_managed(namespace):
        return ScopeVerdict(True, f"{namespace} is the operator namespace, always managed")
    if scope.mode is ScopeMode.ALL_NAMESPACES:
        why = "every namespace is managed (no namespace selector, no namespace list)"
    elif scope.mode is ScopeMode.STATIC_LIST:
        listed = ", ".join(scope.namespaces or ())
        why = f"{namespace} is {'' if in_scope else 'not '}in the namespace list ({listed})"
    elif labels is None:
        why = f"namespace {namespace} does not exist, so it cannot match the namespace selector"
    else:
        verb = "match" if in_scope else "do not match"
        why = (
            f"namespace {namespace} labels {_labels_text(labels)} {verb} the namespace "
            f"selector {scope.namespace_selector}"
        )
    return ScopeVerdict(in_scope, why)


def workflow_link(ui_url: str, temporal_namespace: str, workflow_id: str) -> str:
    """The Temporal UI page of the workflow (its latest run)."""
    base = ui_url.rstrip("/")
    return (
        f"{base}/namespaces/{quote(temporal_namespace, safe='')}"
        f"/workflows/{quote(workflow_id, safe='')}"
    )


def _json_payload(payloads: Any) -> Any:
    """The first payload of a payload list as JSON, or None when it is not JSON."""
    for payload in payloads:
        encoding = payload.metadata.get("encoding", b"")
        if encoding != b"json/plain":
            return None
        return json.loads(payload.data)
    return None


def _outcome(at: datetime | None, result: Any) -> LastReconcile:
    """A step's result (verdict, reason, reconciled) or, in runs before the step, a reconcile's."""
    if not isinstance(result, Mapping):
        return LastReconcile(at=at, verdict="Reconciled")
    if "verdict" not in result:
        result = {"verdict": "Reconciled", "reconciled": result}
    reconciled = result.get("reconciled") or {}
    return LastReconcile(
        at=at,
        verdict=str(result.get("verdict") or ""),
        reason=str(result.get("reason") or ""),
        phase=str(reconciled.get("phase") or ""),
        message=str(reconciled.get("message") or ""),
    )


def _event_time(event: HistoryEvent) -> datetime | None:
    if not event.HasField("event_time"):
        return None
    return event.event_time.ToDatetime(tzinfo=UTC)


def last_reconcile(events: Iterable[HistoryEvent], controller: str) -> LastReconcile | None:
    """The latest reconcile of a run's history: a local step's marker, a step (or, in runs
    recorded before the step, a reconcile) activity that completed or failed; None: no reconcile."""
    names = {reconcile_step_activity(controller), reconcile_activity(controller)}
    scheduled: set[int] = set()
    last: LastReconcile | None = None
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            attributes = event.marker_recorded_event_attributes
            if attributes.marker_name != "core_local_activity" or "data" not in attributes.details:
                continue
            data = _json_payload(attributes.details["data"].payloads)
            if not isinstance(data, Mapping) or data.get("activity_type") not in names:
                continue
            result = (
                _json_payload(attributes.details["result"].payloads)
                if "result" in attributes.details
                else None
            )
            if attributes.HasField("failure"):
                last = LastReconcile(
                    _event_time(event), "Failed", reason=attributes.failure.message
                )
            else:
                last = _outcome(_event_time(event), result)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            if event.activity_task_scheduled_event_attributes.activity_type.name in names:
                scheduled.add(event.event_id)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completed = event.activity_task_completed_event_attributes
            if completed.scheduled_event_id in scheduled:
                result = _json_payload(completed.result.payloads)
                last = _outcome(_event_time(event), result)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            failed = event.activity_task_failed_event_attributes
            if failed.scheduled_event_id in scheduled:
                last = LastReconcile(_event_time(event), "Failed", reason=failed.failure.message)
    return last


def _license_text(facts: LicenseFacts) -> str:
    if not facts.required:
        return f"not needed (gate {facts.gate}; no namespace selector needs one)"
    if facts.licensed:
        return f"licensed: {facts.license}" if facts.license else "licensed"
    return (
        f"missing: {facts.reason or 'no valid enterprise license'} "
        "(the operator's namespace selector needs an enterprise license)"
    )


def _time_text(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else "unknown time"


def _last_text(last: LastReconcile | None) -> str:
    if last is None:
        return "none in this run"
    parts = [f"{_time_text(last.at)} {last.verdict}"]
    if last.phase:
        parts.append(f"phase {last.phase}")
    detail = last.reason or last.message
    text = ", ".join(parts)
    return f"{text}: {detail}" if detail else text


def render(report: StatusReport) -> str:
    """The text ``stackflow status`` prints (pure)."""
    ref, state = report.ref, report.state
    lines = [f"{ref.summary} (workflow {ref.workflow_id}, {report.run_status})"]
    scope = "in scope" if report.scope.in_scope else "out of scope"
    lines.append(f"scope: {scope}: {report.scope.why}")
    lines.append(f"license: {_license_text(report.license)}")
    if state is None:
        phase = report.phase_attribute or "unknown"
        lines.append(f"phase: {phase} (no worker answered the state query: is the operator up?)")
    else:
        phase_line = f"phase: {state.phase.value}"
        lines.append(f"{phase_line}: {state.message}" if state.message else phase_line)
        handling = " (handling a batch of triggers now)" if state.handling else ""
        lines.append(f"reconciles: {state.reconciles}{handling}")
    lines.append(f"last reconcile: {_last_text(report.last)}")
    if state is not None:
        pending = ", ".join(
            f"{trigger.reason.value} ({trigger.source}{': ' + trigger.detail if trigger.detail else ''})"
            for trigger in state.pending
        )
        lines.append(f"pending triggers: {pending or 'none'}")
    if report.condition is not None:
        condition = report.condition
        lines.append(
            f"condition: {condition.get('type')}={condition.get('status')} "
            f"{condition.get('reason') or ''}: {condition.get('message') or ''}".rstrip(": ")
        )
    lines.append(f"temporal ui: {report.link}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Flags of ``stackflow status``."""
    parser = argparse.ArgumentParser(
        prog="stackflow status",
        description="Why one resource is, or is not, reconciled.",
    )
    parser.add_argument("target", metavar="KIND/NAMESPACE/NAME", help="e.g. es/default/quickstart")
    parser.add_argument(
        "--ui-url",
        required=True,
        help="the Temporal UI's base URL (stackflow dev prints it), e.g. http://127.0.0.1:8233",
    )
    parser.add_argument("--config", type=Path, help="operator configuration file (YAML)")
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig file (default: in-cluster config in a Pod, else $KUBECONFIG)",
    )
    parser.add_argument("--context", dest="kube_context", help="kubeconfig context")
    return parser


async def _workflow_facts(
    config: OperatorConfig, ref: ResourceRef
) -> tuple[WorkflowStateView | None, str, str | None, LastReconcile | None]:
    """The state query, the run's status and phase attribute, and its last reconcile."""
    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError, RPCStatusCode

    from stackflow.temporal import connect_client

    client = await connect_client(config)
    handle = client.get_workflow_handle(ref.workflow_id)
    try:
        description = await handle.describe()
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise BadInputError(
                f"no workflow {ref.workflow_id} in Temporal namespace {config.temporal_namespace}"
            ) from exc
        raise
    run_status = description.status.name.title() if description.status else "Unknown"
    phase = description.typed_search_attributes.get(SA_PHASE)
    try:
        state: WorkflowStateView | None = await handle.query(
            "state", result_type=WorkflowStateView, rpc_timeout=QUERY_TIMEOUT
        )
    except (RPCError, WorkflowQueryFailedError):
        state = None
    events = [event async for event in handle.fetch_history_events()]
    return state, run_status, phase, last_reconcile(events, ref.controller)


async def _cluster_facts(
    config: OperatorConfig, ref: ResourceRef, args: argparse.Namespace
) -> tuple[ScopeVerdict, LicenseFacts, Mapping[str, Any] | None]:
    """The scope verdict, the license facts and the resource's condition, read from the API."""
    from stackflow.controllers import CONTROLLERS
    from stackflow.kube import errors
    from stackflow.kube.client import api_client_session
    from stackflow.kube.operator_licenses import OperatorLicenseReader, read_public_keys
    from stackflow.kube.resources import ResourceClient
    from stackflow.kube.scoped import ScopedClient
    from stackflow.models.kinds import NAMESPACES

    async with api_client_session(
        kubeconfig=args.kubeconfig, context=args.kube_context, timeout=10.0
    ) as api_client:
        resources = ResourceClient(api_client)
        listed = await resources.list(NAMESPACES)
        labels_by_name = {
            str(item["metadata"]["name"]): dict(item["metadata"].get("labels") or {})
            for item in listed["items"]
        }
        scope = config.scope()
        verdict = scope_verdict(scope, ref.namespace, labels_by_name.get(ref.namespace))
        matcher = NamespaceMatcher(scope, source=_Namespaces(labels_by_name))
        scoped = ScopedClient(resources, matcher)
        gate = CONTROLLERS.named(ref.controller).gate
        licenses = OperatorLicenseReader(
            scoped,
            operator_namespace=config.operator_namespace,
            public_keys=read_public_keys(config.license_public_key),
        )
        judged = await licenses.verdict()
        enterprise = judged.license.license if judged.license is not None else None
        facts = LicenseFacts(
            required=gate.requires_license(dynamic_scope=matcher.enabled),
            gate=gate.value,
            licensed=judged.licensed,
            reason=judged.reason,
            license=(
                f"{enterprise.type} license {enterprise.uid}, expires "
                f"{_time_text(enterprise.expiry_time())}"
                if enterprise is not None
                else ""
            ),
        )
        try:
            obj = await scoped.get(ref.resource, namespace=ref.namespace, name=ref.name)
        except errors.NotFound:
            obj = {}
    conditions = (obj.get("status") or {}).get("conditions") or []
    condition = next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)
    return verdict, facts, condition


class _Namespaces:
    """Every Namespace's labels, as listed once: the matcher's source for the license reader."""

    def __init__(self, labels_by_name: Mapping[str, Mapping[str, str]]) -> None:
        self._labels = labels_by_name

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of ``name`` (None: no such Namespace)."""
        return self._labels.get(name)

    def namespace_names(self) -> Iterable[str]:
        """Every listed Namespace."""
        return list(self._labels)


async def _status(args: argparse.Namespace, ref: ResourceRef) -> int:
    config = load_config(args.config, os.environ)
    state, run_status, phase, last = await _workflow_facts(config, ref)
    scope, license_facts, condition = await _cluster_facts(config, ref, args)
    report = StatusReport(
        ref=ref,
        scope=scope,
        license=license_facts,
        state=state,
        run_status=run_status,
        phase_attribute=phase,
        last=last,
        condition=condition,
        link=workflow_link(args.ui_url, config.temporal_namespace, ref.workflow_id),
    )
    print(render(report))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``stackflow status``: returns 2 for a bad target; once it has looked (a
    Temporal client was made) it ends the process with the exit status."""
    args = build_parser().parse_args(argv)
    from temporalio.service import RPCError

    from stackflow.cli.reconcile import resolve_target
    from stackflow.controllers import CONTROLLERS
    from stackflow.kube.errors import KubeError

    try:
        ref = resolve_target(args.target, CONTROLLERS)
    except ValueError as exc:
        print(f"stackflow status: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    # Before Temporal is asked anything: a missing kubeconfig is the user's to fix, not an outage.
    if (problem := kubeconfig_problem(args.kubeconfig, os.environ)) is not None:
        print(f"stackflow status: {problem}", file=sys.stderr)
        return EXIT_BAD_ARGS
    try:
        status = asyncio.run(_status(args, ref))
    except (BadInputError, ValueError, UnusableSettingError) as exc:
        print(f"stackflow status: {exc}", file=sys.stderr)
        status = EXIT_BAD_ARGS
    except ConfigError as exc:
        print(f"stackflow status: invalid configuration: {exc}", file=sys.stderr)
        status = EXIT_BAD_ARGS
    except (OSError, RuntimeError, RPCError, KubeError) as exc:
        print(f"stackflow status: cannot reach Temporal or the API server: {exc}", file=sys.stderr)
        status = EXIT_UNREACHABLE
    # temporalio#300: interpreter teardown after a Temporal client can abort in PyGILState_Release.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
