"""How the real-server tests read the shared audit log: one stack's ServiceAccount only, from the
module's offset on, and what counts as a read in a namespace out of scope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.audit import AuditLog, is_request_of, reads_out_of_scope, request_figures

USER = "system:serviceaccount:elastic-system:stackflow"


def event(
    verb: str,
    resource: str,
    namespace: str | None = None,
    name: str | None = None,
    *,
    stage: str = "ResponseComplete",
    user: str = USER,
    uid: str = "uid-1",
    subresource: str | None = None,
) -> dict[str, Any]:
    """An audit event of the shape kube-apiserver writes (the fields read here)."""
    ref: dict[str, Any] = {"resource": resource}
    if namespace is not None:
        ref["namespace"] = namespace
    if name is not None:
        ref["name"] = name
    if subresource is not None:
        ref["subresource"] = subresource
    return {"verb": verb, "stage": stage, "user": {"username": user, "uid": uid}, "objectRef": ref}


@pytest.mark.parametrize(
    ("case", "audit_event", "uid", "counted"),
    [
        ("complete request", event("get", "secrets", "a", "s"), "uid-1", True),
        ("any uid while unknown", event("get", "secrets", "a", "s", uid="old"), None, True),
        ("an earlier account of that name", event("get", "secrets", uid="old"), "uid-1", False),
        ("another user", event("get", "secrets", user="system:admin"), None, False),
        ("open watch", event("watch", "secrets", stage="ResponseStarted"), "uid-1", True),
        ("started get", event("get", "secrets", stage="ResponseStarted"), "uid-1", False),
        ("closed watch", event("watch", "secrets"), "uid-1", True),
    ],
)
def test_which_events_are_the_stacks_requests(
    case: str, audit_event: dict[str, Any], uid: str | None, counted: bool
) -> None:
    assert is_request_of(audit_event, USER, uid) is counted, case


IN_SCOPE = ("eck-docs", "elastic-system")


@pytest.mark.parametrize(
    ("case", "audit_event", "outside"),
    [
        ("get in scope", event("get", "secrets", "eck-docs", "s"), []),
        ("operator namespace", event("list", "secrets", "elastic-system"), []),
        ("cluster-wide watch", event("watch", "secrets"), []),
        ("cluster-wide list", event("list", "elasticsearches"), []),
        ("get out of scope", event("get", "secrets", "other", "s"), ["get secrets other/s"]),
        ("namespaced list", event("list", "pods", "other"), ["list pods other/"]),
        ("namespaced watch", event("watch", "pods", "other"), ["watch pods other/"]),
        ("a Namespace object", event("get", "namespaces", "other", "other"), []),
        ("write out of scope", event("delete", "secrets", "other", "s"), []),
        (
            "subresource read",
            event("get", "elasticsearches", "other", "es", subresource="status"),
            ["get elasticsearches/status other/es"],
        ),
    ],
)
def test_reads_out_of_scope(case: str, audit_event: dict[str, Any], outside: list[str]) -> None:
    assert reads_out_of_scope([audit_event], IN_SCOPE) == outside, case


def test_request_figures_count_by_verb_and_resource() -> None:
    events = [
        event("get", "secrets", "a", "x"),
        event("get", "secrets", "b", "y"),
        event("watch", "secrets"),
        event("patch", "elasticsearches", "a", "es", subresource="status"),
    ]
    assert request_figures(events) == {
        "get secrets": 2,
        "watch secrets": 1,
        "patch elasticsearches/status": 1,
    }


def test_the_log_is_read_from_the_modules_offset_and_for_one_account(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    earlier = event("get", "secrets", "other", "s", uid="earlier-stack")
    log.write_text(json.dumps(earlier) + "\n")
    audit = AuditLog(log, USER)
    ours = event("get", "secrets", "eck-docs", "s", uid="ours")
    late = event("watch", "secrets", "other", uid="earlier-stack")  # closed after the mark
    partial = json.dumps(event("get", "secrets", "x", "y", uid="ours"))[:20]
    log.write_text(log.read_text() + "".join(json.dumps(e) + "\n" for e in (ours, late)) + partial)
    audit.uid = "ours"
    assert list(audit.operator_requests()) == [ours]
    audit.mark()
    assert list(audit.operator_requests()) == []
    audit.offset = audit.start
    assert list(audit.operator_requests()) == [ours]
