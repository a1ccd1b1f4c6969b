"""The AutoOpsAgentPolicy controller's activities (``AutoOpsActivities``), one idea a module.

A reconcile reads the policy, every Elasticsearch cluster of the managed namespaces (a policy
selects cluster-wide, but through the scoped client: a cluster whose namespace left scope is not
seen, so it stops being served) and the Namespace labels, and lets the pure rules of
``stackflow.stack.policies.autoops`` decide which clusters are served, waited for or skipped.
With ``enforce-rbac-on-refs`` a matched cluster the policy's ServiceAccount may not get is
skipped, as ECK does.
For each served (matched, Ready, supported) cluster it keeps, in the policy's namespace, ECK's
Deployment, ConfigMap, API-key Secret (no ownerReference) and, when the cluster's HTTP TLS is on,
CA Secret (``stackflow.stack.policies.autoops_agent`` builds the agent's config and Deployment); the
cluster's API key is looked up by name in Elasticsearch and created or replaced by ECK's rule
(``api_key_plan``). The objects of a cluster that is no longer matched, or left scope, are deleted
and its key invalidated: the one case where leaving scope removes operator-made objects, as ECK
does (the key would otherwise stay valid in a cluster the operator no longer looks after).

That release is a saga step. Each reconcile records a compensation per cluster it keeps an agent
for (``autoopsagentpolicy.release_cluster``, keyed ``agent/<es namespace>/<es name>``) and reports
those of clusters it no longer keeps as ``release_now``: the workflow runs each as an activity
step of its history. When the policy itself leaves scope, or is deleted, the workflow runs every
recorded one, last-acquired first.

Modules: ``family`` (the class: reconcile, finalize, flip targets, compensations), ``agent``
(serving one cluster), ``config`` (the policy's validity and configuration layers), ``status``
(pause, unmanaged, the status write), ``written`` (the objects a policy wrote, by cluster) and
``release`` (the compensation).
"""

from __future__ import annotations

from activities.autoops.config import CONFIG_FILE
from activities.autoops.family import (
    FAMILIES,
    NOT_READY_REQUEUE_SECONDS,
    READY_RECHECK_SECONDS,
    AutoOpsActivities,
)
from activities.autoops.release import agent_compensation
from activities.autoops.status import (
    DEPRECATED_UNMANAGED_ANNOTATION,
    LEGACY_PAUSE_ANNOTATION,
    PAUSE_ANNOTATION,
    PAUSED_NO_CHANGES_MESSAGE,
    PAUSED_PENDING_MESSAGE,
    RESUMED_MESSAGE,
)
from activities.autoops.written import API_KEY_ID_ANNOTATION

__all__ = [
    "API_KEY_ID_ANNOTATION",
    "CONFIG_FILE",
    "DEPRECATED_UNMANAGED_ANNOTATION",
    "FAMILIES",
    "LEGACY_PAUSE_ANNOTATION",
    "NOT_READY_REQUEUE_SECONDS",
    "PAUSED_NO_CHANGES_MESSAGE",
    "PAUSED_PENDING_MESSAGE",
    "PAUSE_ANNOTATION",
    "READY_RECHECK_SECONDS",
    "RESUMED_MESSAGE",
    "AutoOpsActivities",
    "agent_compensation",
]
