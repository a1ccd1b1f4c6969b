"""What only a real API server can show: manifests written as ECK's documentation writes them apply
unchanged and reconcile; the operator, once settled, writes nothing on a re-reconcile (the server
normalises what it stores); and the chart's RBAC is exactly what the operator uses — checked in the
API server's audit log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.service import RPCError

from controlplane import ControlPlane
from stackflow.api.kinds import kind_resource
from stackflow.controllers import CONTROLLERS
from stackflow.models.kinds import EVENTS, SECRETS, Kind
from stackflow.stack.elasticsearch.names import file_realm_secret_name
from stackflow.stack.elasticsearch.users import parse_users_file
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, TYPE_LABEL
from stackflow.stack.objects import decode_secret_data
from tests.audit import AuditLog, reads_out_of_scope, request_figures
from tests.clusters import APISERVER, REPO, ClusterTarget, kubectl, render_chart
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import ES, Stack, create_namespace, manifest, operator_stack
from tests.polling import eventually

pytestmark = [
    pytest.mark.apiserver,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(600),
]

DOCS = REPO / "deploy" / "examples" / "eck-docs"
NAMESPACE = "eck-docs"
OPERATOR = "system:serviceaccount:elastic-system:stackflow"
SERVICE_ACCOUNTS = Kind("", "v1", "ServiceAccount", "serviceaccounts")
#: A namespace never in scope, holding a Secret and an Elasticsearch the operator must not read.
OUTSIDE = "eck-outside"
OUTSIDE_SPEC = {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]}
#: The stack objects of the documentation manifests, and the health each reaches.
DOCUMENTED = [
    ("Elasticsearch", "quickstart"),
    ("Kibana", "quickstart"),
    ("Agent", "fleet-server"),
    ("Agent", "elastic-agent"),
    ("Beat", "quickstart"),
    ("Logstash", "quickstart"),
    ("ElasticMapsServer", "quickstart"),
]
#: Grants the audit log cannot show used, each with the reason it is still needed.
NOT_SEEN = {
    # OwnerReferencesPermissionEnforcement authorizes `update <kind>/finalizers` while admitting
    # every child with a blocking ownerReference: the children's creates succeeding proves it.
    ("finalizers", "update"): "authorized by admission, never requested",
    # The trial-started annotation is written once a real Elasticsearch started a trial; kwok
    # runs no Elasticsearch.
    ("elasticsearches", "patch"): "needs a live Elasticsearch",
    # The event recorder patches an event's count when the same event repeats; whether one
    # repeats within this module depends on the timing (tests/integration/test_event_recorder.py
    # shows the patch).
    ("events", "patch"): "only when an event repeats",
    # An AutoOps agent's ConfigMap is deleted once its cluster is no longer served; serving one
    # first needs its API key from a live Elasticsearch (tests/e2e/test_autoops.py shows it on
    # kubesim with a fake Elasticsearch).
    ("configmaps", "delete"): "needs a live Elasticsearch",
    # The operator reads its own Pod only to put a dynamic-scope license wait's InvalidLicense
    # Warning on it; whether a reconcile waits for the trial here depends on the timing
    # (tests/e2e/test_license_gate.py shows the event on the Pod, on both backends).
    ("pods", "get"): "only when a reconcile waits for a license",
    # A rolling restart deletes Pods once the cluster says it may; kwok runs no Elasticsearch
    # (tests/elasticsearch/test_changing_a_cluster.py restarts real nodes on this server).
    ("pods", "delete"): "needs a live Elasticsearch",
    # Volumes: a claim grown (its StatefulSet recreated, its Pods owned meanwhile), a claim of a
    # removed node deleted; tests/integration/test_activities_es_volumes.py shows each.
    ("pods", "patch"): "only while a StatefulSet is recreated for its volumes",
    ("storageclasses", "list"): "only when a claim grows",
    ("persistentvolumeclaims", "delete"): "only when a node is removed",
    ("persistentvolumeclaims", "patch"): "only when a claim grows or changes owner",
    # A node set removed or renamed: its headless Service goes once its data has moved, which
    # needs a live Elasticsearch (tests/elasticsearch/test_changing_a_cluster.py renames one).
    ("services", "delete"): "needs a live Elasticsearch",
    # The Elasticsearch reconcile applies its PDB against its own listing (no read first); it is
    # read when a write answers Conflict or a create finds it made
    # (tests/integration/test_apply_listed.py shows both).
    ("poddisruptionbudgets", "get"): "only when the listing is stale",
}
#: A namespace in scope whose APM Server references the documented cluster across namespaces:
#: with enforce-rbac-on-refs on, the operator asks the API server whether the APM Server's
#: ServiceAccount may get it (no Role grants that here, so it stays Pending).
REFS = "eck-refs"
CROSS_APM = {
    "version": "8.15.0",
    "count": 1,
    "elasticsearchRef": {"name": "quickstart", "namespace": NAMESPACE},
}
#: Stack objects beyond the documentation's, so every kind the role names is reconciled here.
EXTRA = [
    ("ApmServer", "apm", {"count": 1, "elasticsearchRef": {"name": "quickstart"}}),
    ("EnterpriseSearch", "ent", {"count": 1, "elasticsearchRef": {"name": "quickstart"}}),
    ("PackageRegistry", "epr", {"count": 1}),
]
WRITES = {"create", "update", "patch", "delete"}
AUTOSCALER = kind_resource("ElasticsearchAutoscaler")
#: An autoscaler of the documented cluster for a role none of its node sets has: the operator
#: reads it and gives it a status (outside a Pod it dials no cluster: ``Online`` false).
UNUSED_AUTOSCALER = {
    "apiVersion": AUTOSCALER.api_version,
    "kind": AUTOSCALER.kind,
    "metadata": {"name": "ml-only", "namespace": NAMESPACE},
    "spec": {
        "elasticsearchRef": {"name": "quickstart"},
        "policies": [
            {"name": "ml", "roles": ["ml"], "resources": {"nodeCount": {"min": 0, "max": 1}}}
        ],
    },
}
POLICY = kind_resource("StackConfigPolicy")
#: A StackConfigPolicy selecting no cluster: the operator still reads it and gives it a status.
UNUSED_POLICY = {
    "apiVersion": POLICY.api_version,
    "kind": POLICY.kind,
    "metadata": {"name": "nothing", "namespace": NAMESPACE},
    "spec": {
        "resourceSelector": {"matchLabels": {"stackflow.test/policy": "on"}},
        "elasticsearch": {"clusterSettings": {"indices.recovery.max_bytes_per_sec": "50mb"}},
    },
}


AUTOOPS_POLICY = kind_resource("AutoOpsAgentPolicy")
#: An AutoOpsAgentPolicy selecting no cluster: read, watched and given a status.
UNUSED_AUTOOPS_POLICY = {
    "apiVersion": AUTOOPS_POLICY.api_version,
    "kind": AUTOOPS_POLICY.kind,
    "metadata": {"name": "nothing", "namespace": NAMESPACE},
    "spec": {
        "version": "9.2.4",
        "resourceSelector": {"matchLabels": {"stackflow.test/autoops": "on"}},
        "autoOpsRef": {"secretName": "autoops-connection"},
    },
}

AUTOOPS_CONNECTION = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "autoops-connection", "namespace": NAMESPACE},
    "stringData": dict.fromkeys(
        ("autoops-token", "autoops-otel-url", "cloud-connected-mode-api-key"), "unused"
    ),
}


@pytest.fixture(scope="module")
def target(control_plane: ControlPlane) -> ClusterTarget:
    """The real API server only."""
    if control_plane.audit_log is None:
        pytest.fail("the session control plane runs without an audit log")
    return ClusterTarget(APISERVER, control_plane)


@pytest.fixture(scope="module")
def audit(target: ClusterTarget) -> AuditLog:
    """The audit log from the module's start (before its stack), the operator's requests only."""
    assert target.plane is not None
    assert target.plane.audit_log is not None
    return AuditLog(target.plane.audit_log, OPERATOR)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def stack(
    target: ClusterTarget, audit: AuditLog, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    """One operator for the module, under the chart's RBAC; the audit log then keeps only the
    requests of this stack's ServiceAccount (an earlier module's, of the same name, had another
    uid), with an out-of-scope namespace holding objects the operator must not read."""
    async with operator_stack(
        tmp_path_factory.mktemp("real-server"),
        target,
        settings={"enforce-rbac-on-refs": True},
    ) as running:
        account = await running.kube.get(
            SERVICE_ACCOUNTS, namespace="elastic-system", name="stackflow"
        )
        audit.uid = str(account["metadata"]["uid"])
        await create_namespace(running.kube, OUTSIDE, in_scope=False)
        await running.kube.create(
            SECRETS,
            {"metadata": {"name": "not-yours"}, "stringData": {"password": "out of scope"}},
            namespace=OUTSIDE,
        )
        await running.kube.create(
            ES, manifest("Elasticsearch", "outside", OUTSIDE, OUTSIDE_SPEC), namespace=OUTSIDE
        )
        yield running


async def health(stack: Stack, kind: str, name: str) -> str:
    """``status.health`` of a documented object."""
    obj = await stack.kube.get(kind_resource(kind), namespace=NAMESPACE, name=name)
    return str((obj.get("status") or {}).get("health") or "")


#: The Fleet-mode Agents of the documentation: out of cluster the operator cannot ask Kibana's
#: Fleet API, so, as ECK, it makes no workload for them and claims no health.
FLEET_AGENTS = {"fleet-server", "elastic-agent"}


async def fleet_agent_waiting(stack: Stack, name: str) -> bool:
    """Whether a Fleet-mode Agent waits as ECK's does here: its spec observed, no health, and for
    the Fleet Server (whose Kibana is green) the ``ReconciliationError`` saying Fleet did not
    answer; the Agent enrolled through it waits without an Event (no version reported yet)."""
    obj = await stack.kube.get(kind_resource("Agent"), namespace=NAMESPACE, name=name)
    status = obj.get("status") or {}
    if "health" in status or status.get("observedGeneration") != obj["metadata"]["generation"]:
        return False
    if name != "fleet-server":
        return True
    events = (await stack.kube.list(EVENTS, namespace=NAMESPACE))["items"]
    return any(
        event["involvedObject"].get("name") == name and event["reason"] == "ReconciliationError"
        for event in events
    )


async def documented_settled(stack: Stack, kind: str, name: str) -> bool:
    """Whether a documented object is as far as this cluster lets it go: an application green
    (a Fleet-mode Agent waiting for Fleet); the Elasticsearch with its nodes up and health
    ``unknown`` (its Pods run no Elasticsearch)."""
    if kind == "Elasticsearch":
        return nodes_up_health_unknown(await stack.kube.get(ES, namespace=NAMESPACE, name=name))
    if kind == "Agent" and name in FLEET_AGENTS:
        return await fleet_agent_waiting(stack, name)
    return await health(stack, kind, name) == "green"


async def all_green(stack: Stack) -> None:
    """Wait until every documented object is settled (every application green)."""

    async def green() -> bool:
        return all([await documented_settled(stack, kind, name) for kind, name in DOCUMENTED])

    try:
        await eventually(green, within=420, interval=1, what="every documented object settled")
    except AssertionError as error:
        states = {
            f"{kind}/{name}": (
                await health(stack, kind, name),
                await documented_settled(stack, kind, name),
            )
            for kind, name in DOCUMENTED
        }
        raise AssertionError(f"{error}: {states}\n{stack.operator.tail()}") from None


def child_writes(events: Iterable[dict[str, Any]]) -> list[str]:
    """The operator's writes of children (``verb resource name``) among audit ``events``: events
    and the Lease are its bookkeeping, and a status may still record progress made late."""
    return sorted(
        {
            f"{event['verb']} {event['objectRef'].get('resource')} {event['objectRef'].get('name')}"
            for event in events
            if event["verb"] in WRITES
            and event["objectRef"].get("resource") not in ("events", "leases")
            and not event["objectRef"].get("subresource")
        }
    )


async def file_realm_complete(stack: Stack) -> bool:
    """Whether the cluster's file realm holds every association user: the Elasticsearch
    reconciled after the last association made its user Secret."""
    listed = await stack.kube.list(
        SECRETS,
        namespace=NAMESPACE,
        label_selector=f"{TYPE_LABEL}=user,{ES_CLUSTER_NAME_LABEL}=quickstart",
    )
    wanted = {decode_secret_data(item).get("name", b"").decode() for item in listed["items"]}
    realm = await stack.kube.get(
        SECRETS, namespace=NAMESPACE, name=file_realm_secret_name("quickstart")
    )
    users = parse_users_file(decode_secret_data(realm).get("users", b"").decode())
    return wanted <= set(users)


async def settled(stack: Stack, audit: AuditLog) -> None:
    """Wait until the operator has nothing left to do: every documented object green, every one
    of their workflows idle, the file realm complete, and no child written between two looks."""
    await all_green(stack)
    looked: dict[str, int] = {}

    async def quiet() -> bool:
        offset = audit.path.stat().st_size
        if "offset" not in looked:  # the first look only marks where the next one reads from
            looked["offset"] = offset
            return False
        written = child_writes(audit.operator_requests(since=looked["offset"]))
        looked["offset"] = offset
        idle = all([(await reconciles(stack, kind, name))[1] for kind, name in DOCUMENTED])
        return not written and idle and await file_realm_complete(stack)

    await eventually(quiet, within=300, interval=3, what="the operator settled")


async def reconciles(stack: Stack, kind: str, name: str) -> tuple[int, bool]:
    """How many reconciles the workflows of every controller of the object have done, and whether
    they are all idle now (a controller with no workflow for it counts nothing)."""
    total, idle = 0, True
    for controller in CONTROLLERS:
        if controller.primary.kind != kind:
            continue
        workflow_id = controller.ref(namespace=NAMESPACE, name=name).workflow_id
        try:
            state = await stack.temporal.client.get_workflow_handle(workflow_id).query("state")
        except RPCError:
            continue
        view = state if isinstance(state, dict) else state.model_dump()
        total += int(view.get("reconciles", 0))
        idle = idle and not view.get("pending")
    return total, idle


async def test_eck_documentation_manifests_apply_unchanged_and_reconcile(
    stack: Stack, target: ClusterTarget
) -> None:
    assert target.plane is not None
    await create_namespace(stack.kube, NAMESPACE, in_scope=True)
    # Server-side apply, as `kubectl apply --server-side` does: the real OpenAPI v3 and the CRDs'
    # structural schemas validate each document.
    applied = await asyncio.to_thread(
        kubectl,
        target.plane.admin_kubeconfig,
        "apply",
        "--server-side",
        f"--namespace={NAMESPACE}",
        f"--filename={DOCS}",
    )
    assert applied.count("serverside-applied") == len(DOCUMENTED) + 1, applied  # + the SA
    await all_green(stack)


async def test_a_settled_operator_writes_nothing_on_a_re_reconcile(
    stack: Stack, audit: AuditLog, target: ClusterTarget
) -> None:
    assert target.plane is not None
    await settled(stack, audit)
    before = {f"{k}/{n}": (await reconciles(stack, k, n))[0] for k, n in DOCUMENTED}
    audit.mark()
    for kind, name in DOCUMENTED:
        # A metadata-only change: it wakes the reconcile, and nothing the operator makes depends on it.
        await asyncio.to_thread(
            kubectl,
            target.plane.admin_kubeconfig,
            "annotate",
            f"--namespace={NAMESPACE}",
            "--overwrite",
            f"{kind_resource(kind).plural}/{name}",
            "stackflow.test/poked=yes",
        )

    async def re_reconciled() -> bool:
        for kind, name in DOCUMENTED:
            count, idle = await reconciles(stack, kind, name)
            if count <= before[f"{kind}/{name}"] or not idle:
                return False
        return True

    await eventually(
        re_reconciled, within=300, interval=1, what="every documented object re-reconciled"
    )
    writes = child_writes(audit.operator_requests())
    assert writes == [], writes


def granted_rules() -> list[tuple[str, tuple[tuple[str, str, str], ...]]]:
    """Each (verb, the (apiGroup, resource, subresource) it is granted on) of every rule of the
    chart's roles."""
    grants = []
    for document in yaml.safe_load_all(render_chart(namespace="elastic-system")):
        if not document or document["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in document["rules"]:
            targets = tuple(
                (group, *resource.partition("/")[::2])
                for group in rule["apiGroups"]
                for resource in rule["resources"]
            )
            grants += [(verb, targets) for verb in rule["verbs"]]
    return grants


async def refused_across_namespaces(stack: Stack) -> bool:
    """Whether the APM Server of ``REFS`` was refused the documented cluster (its Warning)."""
    listed = await stack.kube.list(EVENTS, namespace=REFS)
    wanted = f"Association not allowed: {REFS}/cross to {NAMESPACE}/quickstart"
    return any(
        event.get("reason") == "AssociationError" and event.get("message") == wanted
        for event in listed["items"]
    )


async def test_the_chart_grants_what_the_operator_uses_and_nothing_else(
    stack: Stack, audit: AuditLog, target: ClusterTarget
) -> None:
    assert target.plane is not None
    admin = target.plane.admin_kubeconfig
    await all_green(stack)
    for kind, name, spec in EXTRA:
        body = manifest(kind, name, NAMESPACE, {"version": "8.15.0", **spec})
        await stack.kube.create(kind_resource(kind), body, namespace=NAMESPACE)
    await stack.kube.create(POLICY, UNUSED_POLICY, namespace=NAMESPACE)
    # The policy's connection Secret, with the keys ECK requires (else the policy is Invalid).
    await stack.kube.create(SECRETS, AUTOOPS_CONNECTION, namespace=NAMESPACE)
    await stack.kube.create(AUTOOPS_POLICY, UNUSED_AUTOOPS_POLICY, namespace=NAMESPACE)
    await stack.kube.create(AUTOSCALER, UNUSED_AUTOSCALER, namespace=NAMESPACE)
    await create_namespace(stack.kube, REFS, in_scope=True)
    await stack.kube.create(
        kind_resource("ApmServer"), manifest("ApmServer", "cross", REFS, CROSS_APM), namespace=REFS
    )
    # Exercise the update and delete paths: a scaled cluster (StatefulSet, unicast hosts) with its
    # own disruption budget, an annotated HTTP Service, an application switching workload kind (its
    # DaemonSet deleted) and an association removed (its user Secret deleted).
    es = await stack.kube.get(ES, namespace=NAMESPACE, name="quickstart")
    node_sets = es["spec"]["nodeSets"]
    node_sets[0]["count"] = 2  # the whole list: a merge patch replaces lists
    await stack.kube.merge_patch(
        ES,
        {
            "spec": {
                "nodeSets": node_sets,
                "http": {"service": {"metadata": {"annotations": {"team": "search"}}}},
                "podDisruptionBudget": {"spec": {"maxUnavailable": 2}},
            }
        },
        namespace=NAMESPACE,
        name="quickstart",
    )
    await stack.kube.merge_patch(
        kind_resource("Beat"),
        {"spec": {"daemonSet": None, "deployment": {"replicas": 1}}},
        namespace=NAMESPACE,
        name="quickstart",
    )
    await asyncio.to_thread(
        kubectl, admin, "delete", f"--namespace={NAMESPACE}", "kibana/quickstart", "--wait=true"
    )

    seen: dict[str, Any] = {}

    async def changes_reconciled() -> bool:
        seen["daemonsets"] = await asyncio.to_thread(
            kubectl, admin, "get", "daemonsets", f"--namespace={NAMESPACE}", "-o", "name"
        )
        seen.update({kind: await health(stack, kind, name) for kind, name, _ in EXTRA})
        es = await stack.kube.get(ES, namespace=NAMESPACE, name="quickstart")
        seen["es"] = es.get("status") or {}
        policy = await stack.kube.get(POLICY, namespace=NAMESPACE, name="nothing")
        seen["policy"] = policy.get("status") or {}
        autoops = await stack.kube.get(AUTOOPS_POLICY, namespace=NAMESPACE, name="nothing")
        seen["autoops"] = autoops.get("status") or {}
        autoscaler = await stack.kube.get(AUTOSCALER, namespace=NAMESPACE, name="ml-only")
        seen["autoscaler"] = autoscaler.get("status") or {}
        seen["refused"] = await refused_across_namespaces(stack)
        return (
            seen["refused"]
            and "quickstart-beat" not in seen["daemonsets"]
            and all(seen[kind] == "green" for kind, _, _ in EXTRA)
            and seen["es"].get("availableNodes") == 2
            and seen["policy"].get("resources") == 0
            and seen["autoops"].get("phase") == "NoMonitoredResources"
            and bool(seen["autoscaler"].get("conditions"))
        )

    try:
        await eventually(changes_reconciled, within=300, interval=1, what="the changes reconciled")
    except AssertionError as error:
        workloads = await asyncio.to_thread(
            kubectl, admin, "get", "deployments,statefulsets,pods", f"--namespace={NAMESPACE}"
        )
        raise AssertionError(f"{error}: {seen}\n{workloads}\n{stack.operator.tail()}") from None
    used: set[tuple[str, str, str, str]] = set()
    denied: set[str] = set()
    audit.offset = audit.start  # the whole module: every request the operator made under this role
    for event in audit.operator_requests():
        ref = event.get("objectRef") or {}
        key = (ref.get("apiGroup", ""), ref.get("resource", ""), ref.get("subresource", ""))
        used.add((*key, event["verb"]))
        if (event.get("responseStatus") or {}).get("code") == 403:
            denied.add(f"{event['verb']} {'/'.join(part for part in key if part)}")
    assert sorted(denied) == [], "the operator was denied"
    # A rule's verb is needed when the operator used it on at least one of the rule's resources.
    needless = sorted(
        f"{verb} {[resource for _, resource, _ in targets]}"
        for verb, targets in granted_rules()
        if not any((*target, verb) in used for target in targets)
        and not any((target[2] or target[1], verb) in NOT_SEEN for target in targets)
    )
    assert needless == [], "granted but never used"


async def test_the_operator_reads_nothing_in_a_namespace_out_of_its_scope(
    stack: Stack, audit: AuditLog, capsys: pytest.CaptureFixture[str]
) -> None:
    # After the module's scenarios (documentation manifests, re-reconcile, updates and deletes),
    # with OUTSIDE holding a Secret and an Elasticsearch since the operator started.
    assert stack.operator.process is not None
    audit.offset = audit.start  # the whole module, this stack's ServiceAccount only
    events = list(audit.operator_requests())
    counts = request_figures(events)
    # Its cluster-wide lists and watches (the ones ECK keeps too) name no namespace; every
    # namespaced read is of a namespace it manages, or its own.
    outside = reads_out_of_scope(events, in_scope=(NAMESPACE, REFS, "elastic-system"))
    with capsys.disabled():
        top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        print(f"\noperator requests in this module: {sum(counts.values())}", end="")
        print(f"; reads in a namespace out of scope: {len(outside)}")
        print("\n".join(f"  {key}: {count}" for key, count in top))
    assert counts, "no request of this stack's operator in the audit log"
    assert outside == [], outside
