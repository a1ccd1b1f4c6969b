"""How the workflows call activities: the one timeout and retry policy they share.

Activities retry with backoff until they succeed, except on errors the activity marks
non-retryable (``ApplicationError(non_retryable=True)``, see ``activities.errors``) and on an
``InvalidSpec``, which no retry can fix: the workflow records it instead.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from stackflow.models.engine import INVALID_SPEC_ERROR

__all__ = [
    "ACTIVITY_RETRY",
    "ACTIVITY_TIMEOUT",
    "CLUSTER_STEP_RETRY",
    "LOCAL_CHECK_TIMEOUT",
    "STEP_TIMEOUT",
]

ACTIVITY_TIMEOUT = timedelta(seconds=60)
#: A local activity keeps the workflow task open while it runs, so a stuck read must give up soon;
#: the retry policy then backs off (with timers past the local retry threshold).
LOCAL_CHECK_TIMEOUT = timedelta(seconds=20)
#: The reconcile step (gates + reconcile) is a local activity too. A step that outlasts most of
#: the workflow-task timeout makes the worker heartbeat the task (two extra events), which is
#: still fewer than an activity's round trip; one that hangs gives up here and is retried.
STEP_TIMEOUT = timedelta(seconds=60)
ACTIVITY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=0,
    non_retryable_error_types=[INVALID_SPEC_ERROR],
)
#: A step that changes a running cluster is tried a few times, then given up: the next reconcile
#: decides again from what is there, rather than repeat a step the cluster has moved past.
CLUSTER_STEP_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=3,
)
