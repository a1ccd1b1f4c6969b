"""``stackflow status``: the pure verdicts, the history reading, the rendering and bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import ActivityType, Payload, Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskFailedEventAttributes,
    ActivityTaskScheduledEventAttributes,
    HistoryEvent,
    MarkerRecordedEventAttributes,
)

from stackflow.cli import main as stackflow_main
from stackflow.cli.status import (
    LastReconcile,
    LicenseFacts,
    ScopeVerdict,
    StatusReport,
    last_reconcile,
    render,
    scope_verdict,
    workflow_link,
)
from stackflow.models.engine import (
    Phase,
    ResourceRef,
    Trigger,
    TriggerReason,
    WorkflowStateView,
)
from stackflow.models.kinds import Kind
from stackflow.scope.matcher import ScopeConfig
from stackflow.scope.selector import LabelSelector

OPERATOR = "elastic-system"
SELECTOR = LabelSelector.model_validate({"matchLabels": {"eck": "on"}})
DYNAMIC = ScopeConfig(operator_namespace=OPERATOR, namespace_selector=SELECTOR)
STATIC = ScopeConfig(operator_namespace=OPERATOR, namespaces=("team-a", "team-b"))
EVERY = ScopeConfig(operator_namespace=OPERATOR)
AT = datetime(2026, 12, 3, 14, 0, 5, tzinfo=UTC)
ES_KIND = Kind("elasticsearch.k8s.elastic.co", "v1", "Elasticsearch", "elasticsearches")
REF = ResourceRef.of("elasticsearch", ES_KIND, namespace="team-a", name="quickstart")


@pytest.mark.parametrize(
    ("scope", "namespace", "labels", "in_scope", "why"),
    [
        (DYNAMIC, "team-a", {"eck": "on"}, True, "labels {eck=on} match the namespace selector"),
        (DYNAMIC, "team-a", {"eck": "off", "x": "1"}, False, "{eck=off, x=1} do not match"),
        (DYNAMIC, "team-a", {}, False, "labels {} do not match the namespace selector eck=on"),
        (DYNAMIC, "gone", None, False, "namespace gone does not exist"),
        (DYNAMIC, OPERATOR, {}, True, "operator namespace, always managed"),
        (STATIC, "team-b", {}, True, "team-b is in the namespace list (team-a, team-b)"),
        (STATIC, "team-c", {"eck": "on"}, False, "team-c is not in the namespace list"),
        (EVERY, "anything", {}, True, "every namespace is managed"),
    ],
)
def test_scope_verdict(
    scope: ScopeConfig,
    namespace: str,
    labels: dict[str, str] | None,
    in_scope: bool,
    why: str,
) -> None:
    verdict = scope_verdict(scope, namespace, labels)
    assert verdict.in_scope is in_scope
    assert why in verdict.why


def test_workflow_link_escapes_the_id() -> None:
    assert workflow_link("http://127.0.0.1:8233/", "default", REF.workflow_id) == (
        "http://127.0.0.1:8233/namespaces/default/workflows/elasticsearch%2Fteam-a%2Fquickstart"
    )


def payloads(value: Any) -> Payloads:
    """One JSON payload, as the data converter writes it."""
    return Payloads(
        payloads=[Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode())]
    )


def event(event_id: int, kind: EventType.ValueType, **attributes: Any) -> HistoryEvent:
    """A history event at ``AT`` with its attributes."""
    built = HistoryEvent(event_id=event_id, event_type=kind, **attributes)
    built.event_time.FromDatetime(AT)
    return built


def step_marker(event_id: int, activity: str, result: dict[str, Any]) -> HistoryEvent:
    """A local activity's marker."""
    return event(
        event_id,
        EventType.EVENT_TYPE_MARKER_RECORDED,
        marker_recorded_event_attributes=MarkerRecordedEventAttributes(
            marker_name="core_local_activity",
            details={"data": payloads({"activity_type": activity}), "result": payloads(result)},
        ),
    )


def scheduled(event_id: int, activity: str) -> HistoryEvent:
    """An activity scheduled."""
    return event(
        event_id,
        EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        activity_task_scheduled_event_attributes=ActivityTaskScheduledEventAttributes(
            activity_type=ActivityType(name=activity)
        ),
    )


def completed(event_id: int, scheduled_id: int, result: dict[str, Any]) -> HistoryEvent:
    """An activity completed."""
    return event(
        event_id,
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        activity_task_completed_event_attributes=ActivityTaskCompletedEventAttributes(
            scheduled_event_id=scheduled_id, result=payloads(result)
        ),
    )


def failed(event_id: int, scheduled_id: int, message: str) -> HistoryEvent:
    """An activity failed."""
    return event(
        event_id,
        EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
        activity_task_failed_event_attributes=ActivityTaskFailedEventAttributes(
            scheduled_event_id=scheduled_id, failure=Failure(message=message)
        ),
    )


STEP = "elasticsearch.reconcile_step"
READY = {
    "verdict": "Reconciled",
    "reason": "",
    "reconciled": {"phase": "Ready", "message": "green"},
}
UNLICENSED = {"verdict": "Unlicensed", "reason": "no operator license Secret found"}


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([], None),
        # The latest local step wins; other local activities and activities are not reconciles.
        (
            [step_marker(5, STEP, READY), step_marker(9, STEP, UNLICENSED)],
            LastReconcile(AT, "Unlicensed", reason="no operator license Secret found"),
        ),
        (
            [step_marker(5, STEP, READY), step_marker(9, "kibana.reconcile_step", UNLICENSED)],
            LastReconcile(AT, "Reconciled", phase="Ready", message="green"),
        ),
        (
            [step_marker(5, STEP, READY), scheduled(9, "stackflow.license_wait_notice")],
            LastReconcile(AT, "Reconciled", phase="Ready", message="green"),
        ),
        # A step that is an activity: completed, then failed.
        (
            [scheduled(5, STEP), completed(7, 5, READY)],
            LastReconcile(AT, "Reconciled", phase="Ready", message="green"),
        ),
        (
            [scheduled(5, STEP), completed(7, 5, READY), scheduled(9, STEP), failed(11, 9, "boom")],
            LastReconcile(AT, "Failed", reason="boom"),
        ),
        # A run recorded before the step: the reconcile activity's own result.
        (
            [
                scheduled(5, "elasticsearch.reconcile"),
                completed(7, 5, {"phase": "RetryScheduled", "message": "not reachable"}),
            ],
            LastReconcile(AT, "Reconciled", phase="RetryScheduled", message="not reachable"),
        ),
    ],
)
def test_last_reconcile(events: list[HistoryEvent], expected: LastReconcile | None) -> None:
    assert last_reconcile(events, "elasticsearch") == expected


def report(**changes: Any) -> StatusReport:
    """A waiting resource's report; ``changes`` replace fields."""
    fields: dict[str, Any] = {
        "ref": REF,
        "scope": ScopeVerdict(True, "namespace team-a labels {eck=on} match the selector eck=on"),
        "license": LicenseFacts(
            required=True,
            gate="dynamic-scope",
            licensed=False,
            reason="no operator license Secret found",
        ),
        "state": WorkflowStateView(
            ref=REF,
            phase=Phase.WAITING_FOR_LICENSE,
            message="no operator license Secret found",
            reconciles=3,
            pending=(
                Trigger(reason=TriggerReason.SPEC_CHANGED, source="watch", detail="generation 2"),
            ),
            compensations=(),
            out_of_scope=False,
            license_warned=True,
            referenced=(),
        ),
        "run_status": "Running",
        "phase_attribute": "WaitingForLicense",
        "last": LastReconcile(AT, "Unlicensed", reason="no operator license Secret found"),
        "condition": {
            "type": "StackflowReconciliation",
            "status": "False",
            "reason": "WaitingForLicense",
            "message": "Not reconciled",
        },
        "link": "http://ui/namespaces/default/workflows/x",
    }
    fields.update(changes)
    return StatusReport(**fields)


def test_render_a_waiting_resource() -> None:
    assert render(report()).splitlines() == [
        "Elasticsearch team-a/quickstart (workflow elasticsearch/team-a/quickstart, Running)",
        "scope: in scope: namespace team-a labels {eck=on} match the selector eck=on",
        "license: missing: no operator license Secret found "
        "(the operator's namespace selector needs an enterprise license)",
        "phase: WaitingForLicense: no operator license Secret found",
        "reconciles: 3",
        "last reconcile: 2026-12-03T14:00:05Z Unlicensed: no operator license Secret found",
        "pending triggers: SpecChanged (watch: generation 2)",
        "condition: StackflowReconciliation=False WaitingForLicense: Not reconciled",
        "temporal ui: http://ui/namespaces/default/workflows/x",
    ]


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        ({"state": None}, "phase: WaitingForLicense (no worker answered the state query"),
        ({"state": None, "phase_attribute": None}, "phase: unknown (no worker answered"),
        ({"last": None}, "last reconcile: none in this run"),
        (
            {"last": LastReconcile(AT, "Reconciled", phase="Ready", message="green")},
            "last reconcile: 2026-12-03T14:00:05Z Reconciled, phase Ready: green",
        ),
        (
            {"license": LicenseFacts(required=False, gate="dynamic-scope", licensed=False)},
            "license: not needed (gate dynamic-scope",
        ),
        (
            {
                "license": LicenseFacts(
                    required=True, gate="dynamic-scope", licensed=True, license="enterprise X"
                )
            },
            "license: licensed: enterprise X",
        ),
        ({"scope": ScopeVerdict(False, "labels {} do not match")}, "scope: out of scope: labels"),
    ],
)
def test_render_lines(changes: dict[str, Any], line: str) -> None:
    assert any(rendered.startswith(line) for rendered in render(report(**changes)).splitlines())


def test_render_says_when_a_batch_of_triggers_is_being_handled() -> None:
    state = report().state
    assert state is not None
    text = render(report(state=state.model_copy(update={"handling": True})))
    assert "reconciles: 3 (handling a batch of triggers now)" in text.splitlines()


def test_render_leaves_out_what_is_not_there() -> None:
    text = render(report(condition=None, state=None))
    assert "condition:" not in text
    assert "pending triggers:" not in text


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("es/team-a", "expected KIND/NAMESPACE/NAME"),
        ("es//quickstart", "expected KIND/NAMESPACE/NAME"),
        ("es/a/b/c", "expected KIND/NAMESPACE/NAME"),
        ("widget/team-a/quickstart", "unknown kind 'widget'"),
    ],
)
def test_bad_targets_exit_2_with_one_line(
    target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert stackflow_main(["status", target, "--ui-url", "http://127.0.0.1:8233"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]


def test_the_ui_url_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        stackflow_main(["status", "es/team-a/quickstart"])
    assert exited.value.code == 2
    assert "--ui-url" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "environ", "problem"),
    [
        (
            [],
            {"HOME": "{d}"},
            "no kubeconfig: not in a Pod, $KUBECONFIG is not set and {d}/.kube/config does not "
            "exist; pass --kubeconfig",
        ),
        (
            [],
            {"HOME": "{d}", "KUBECONFIG": "{d}/missing"},
            "no kubeconfig: none of $KUBECONFIG's files exists ({d}/missing); pass --kubeconfig",
        ),
        (
            ["--kubeconfig", "{d}/missing"],
            {"HOME": "{d}"},
            "no kubeconfig: --kubeconfig {d}/missing does not exist or is not a file",
        ),
    ],
)
def test_no_kubeconfig_exits_2_with_one_line_before_temporal_is_asked(
    flags: list[str],
    environ: dict[str, str],
    problem: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value.format(d=tmp_path))
    # No Temporal listens on port 1: the command must stop at the kubeconfig.
    monkeypatch.setenv("STACKFLOW_TEMPORAL_ADDRESS", "127.0.0.1:1")
    argv = ["status", "es/team-a/quickstart", "--ui-url", "http://127.0.0.1:8233"]
    assert stackflow_main([*argv, *(flag.format(d=tmp_path) for flag in flags)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"stackflow status: {problem.format(d=tmp_path)}"]
