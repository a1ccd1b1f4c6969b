"""Pure desired-state builders of the stack applications (Kibana, APM Server, Beats, Agent, …).

* :func:`desired_children` — every child manifest of an application;
* :func:`application_status` — its status from the workload and pods;
* :func:`validate_application` / :func:`application_warnings` — ECK's webhook checks;
* :data:`APP_KINDS` — the table of kinds.
"""

from __future__ import annotations

from stackflow.stack.apps.builder import desired_children
from stackflow.stack.apps.context import AppKind
from stackflow.stack.apps.kinds import APP_KINDS, app_kind
from stackflow.stack.apps.status import application_status
from stackflow.stack.apps.validation import application_warnings, validate_application

__all__ = [
    "APP_KINDS",
    "AppKind",
    "app_kind",
    "application_status",
    "application_warnings",
    "desired_children",
    "validate_application",
]
