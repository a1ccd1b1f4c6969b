"""kubesim's answers shaped as the real API server's, as measured by tests/conformance.

These pin, without a control plane, what the comparison with kube-apiserver v1.37 found and fixed:
Table printers of built-in kinds, defaults of built-in objects, the addresses a Service gets,
Secret ``stringData``, namespace deletion, the fake scheduler's decisions and validation messages.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubesim import schema, tables
from kubesim.controllers import Controllers
from kubesim.errors import StatusError
from kubesim.resources import Registry, ResourceType
from kubesim.store import Store
from tests.kubesim.store_sim import Sim, crd_body, raises

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
CREATED = "2026-01-01T11:58:00Z"


def _rt(plural: str, group: str = "") -> ResourceType:
    found = Registry.builtin().lookup(group, "v1", plural)
    assert found is not None
    return found


def _row(rt: ResourceType, obj: dict[str, Any]) -> list[Any]:
    table = tables.to_table(rt, [obj], include_object="None", list_meta={}, now=NOW)
    cells: list[Any] = table["rows"][0]["cells"]
    return cells


def test_pod_table_of_a_running_pod() -> None:
    pod = {
        "metadata": {"name": "p", "creationTimestamp": CREATED},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": "10.0.0.5"}],
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "a", "ready": True, "restartCount": 1, "state": {"running": {}}},
                {"name": "b", "ready": False, "restartCount": 0, "state": {"running": {}}},
            ],
        },
    }
    columns = [c["name"] for c in tables.column_definitions(_rt("pods"))]
    assert columns == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    assert _row(_rt("pods"), pod) == [
        "p",
        "1/2",
        "Running",
        "1",
        "2m",
        "10.0.0.5",
        "n1",
        "<none>",
        "<none>",
    ]


def test_pod_table_status_of_gated_waiting_and_deleting_pods() -> None:
    def status_cell(spec: dict[str, Any], status: dict[str, Any], **meta: Any) -> Any:
        pod = {"metadata": {"name": "p", **meta}, "spec": spec, "status": status}
        return _row(_rt("pods"), pod)[2]

    gated = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "reason": "SchedulingGated"}],
    }
    assert status_cell({"containers": [{}]}, gated) == "SchedulingGated"
    waiting = {
        "phase": "Pending",
        "containerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff"}}}],
    }
    assert status_cell({"containers": [{}]}, waiting) == "ImagePullBackOff"
    running = {"phase": "Running"}
    assert status_cell({"containers": [{}]}, running, deletionTimestamp=CREATED) == "Terminating"


def test_workload_service_and_secret_tables() -> None:
    deployment = {
        "metadata": {"name": "d", "creationTimestamp": CREATED},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"}]}},
        },
        "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1},
    }
    assert _row(_rt("deployments", "apps"), deployment) == [
        "d",
        "1/2",
        2,
        1,
        "2m",
        "app",
        "nginx:1",
        "app=d",
    ]
    service = {
        "metadata": {"name": "s", "creationTimestamp": CREATED},
        "spec": {
            "type": "NodePort",
            "clusterIPs": ["10.96.0.10"],
            "ports": [{"port": 80, "nodePort": 30001, "protocol": "TCP"}],
            "selector": {"b": "2", "a": "1"},
        },
    }
    assert _row(_rt("services"), service) == [
        "s",
        "NodePort",
        "10.96.0.10",
        "<none>",
        "80:30001/TCP",
        "2m",
        "a=1,b=2",
    ]
    secret = {
        "metadata": {"name": "x", "creationTimestamp": CREATED},
        "type": "Opaque",
        "data": {"k": ""},
    }
    assert _row(_rt("secrets"), secret) == ["x", "Opaque", 1, "2m"]


def test_roles_have_the_default_table() -> None:
    role = {"metadata": {"name": "r", "creationTimestamp": CREATED}}
    rt = _rt("roles", "rbac.authorization.k8s.io")
    assert [c["name"] for c in tables.column_definitions(rt)] == ["Name", "Created At"]
    assert _row(rt, role) == ["r", CREATED]


def test_pod_defaults_and_admission_on_create() -> None:
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    schema.default_builtin(_rt("pods"), pod, creating=True)
    spec = pod["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["serviceAccountName"]) == (
        "Always",
        "ClusterFirst",
        "default",
    )
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "Always"  # no tag: latest
    assert (
        container["volumeMounts"][0]["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"
    )
    assert spec["volumes"][0]["name"].startswith("kube-api-access-")
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_store_gives_a_service_its_addresses_and_folds_secret_string_data() -> None:
    sim = Sim()
    services = sim.rt("", "services")
    first = sim.store.create(
        services,
        {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}},
        namespace="default",
    )
    second = sim.store.create(
        services,
        {"metadata": {"name": "b"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}},
        namespace="default",
    )
    assert first["spec"]["clusterIP"] != second["spec"]["clusterIP"]
    assert first["spec"]["clusterIPs"] == [first["spec"]["clusterIP"]]
    assert first["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert second["spec"]["ports"][0]["nodePort"] >= 30000
    assert first["status"] == {"loadBalancer": {}}
    secret = sim.store.create(
        sim.rt("", "secrets"),
        {"metadata": {"name": "s"}, "stringData": {"a": "b"}},
        namespace="default",
    )
    assert (secret["data"], secret["type"], "stringData" in secret) == (
        {"a": "Yg=="},
        "Opaque",
        False,
    )


def test_first_delete_only_marks_a_namespace_without_finalizers() -> None:
    sim = Sim()
    sim.store.create(sim.ns, {"metadata": {"name": "t"}}, namespace=None)
    sim.store.update(
        sim.ns,
        {"metadata": {"name": "t"}, "spec": {"finalizers": []}},
        namespace=None,
        name="t",
        subresource="finalize",
    )
    marked = sim.store.delete(sim.ns, None, "t")
    assert marked is not None
    assert marked["status"]["phase"] == "Terminating"
    assert "deletionGracePeriodSeconds" not in marked["metadata"]
    assert sim.store.get(sim.ns, None, "t")["metadata"]["deletionTimestamp"]
    assert sim.store.delete(sim.ns, None, "t") is not None  # the second DELETE removes it
    raises(404, sim.store.get, sim.ns, None, "t")


def test_label_and_data_key_validation() -> None:
    sim = Sim()
    err = raises(
        422,
        sim.store.create,
        sim.cm,
        {"metadata": {"name": "c", "labels": {"bad key!": "v"}}, "data": {"bad key": "v"}},
        namespace="default",
    )
    assert [c.field for c in err.causes] == ["metadata.labels", "data[bad key]"]
    namespace = raises(422, sim.store.create, sim.ns, {"metadata": {"name": "a.b"}}, namespace=None)
    assert namespace.causes[0].message == 'Invalid value: "a.b": must not contain dots'


async def test_scheduler_respects_node_selectors_and_gates() -> None:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry)
    controllers.start()
    try:
        pods = next(rt for rt in registry.all() if rt.plural == "pods")
        for name, extra in (
            ("nowhere", {"nodeSelector": {"cf": "none"}}),
            ("gated", {"schedulingGates": [{"name": "example.com/gate"}]}),
            ("missing-node", {"nodeName": "no-such-node"}),
        ):
            spec = {"containers": [{"name": "c", "image": "i:1"}], **extra}
            store.create(pods, {"metadata": {"name": name}, "spec": spec}, namespace="default")
        await controllers.settle()
        reasons = {}
        for name in ("nowhere", "gated", "missing-node"):
            status = store.get(pods, "default", name)["status"]
            assert status["phase"] == "Pending"
            scheduled = [c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"]
            reasons[name] = scheduled[0]["reason"] if scheduled else None
        assert reasons == {
            "nowhere": "Unschedulable",
            "gated": "SchedulingGated",
            "missing-node": None,
        }
    finally:
        await controllers.stop()


def test_a_crd_create_answers_the_status_before_its_controllers() -> None:
    sim = Sim()
    created = sim.store.create(sim.crd, crd_body(), namespace=None)
    assert created["status"]["conditions"] is None
    stored = sim.store.get(sim.crd, None, "widgets.example.com")
    assert {c["type"] for c in stored["status"]["conditions"]} == {"NamesAccepted", "Established"}
    assert stored["spec"]["conversion"] == {"strategy": "None"}
    assert sim.registry.lookup("example.com", "v1", "widgets") is not None


def test_errors_leave_out_empty_fields() -> None:
    status = StatusError(500, "", "storage failure").to_status()
    assert "reason" not in status


def test_an_events_watch_expires_in_etcds_words() -> None:
    # The real server keeps no watch cache for Events: etcd answers a compacted revision.
    sim = Sim()
    err = raises(410, sim.store.watch, sim.rt("", "events"), "default", since_rv=1)
    assert err.message == "The resourceVersion for the provided watch is too old."
    other = raises(410, sim.store.watch, sim.cm, "default", since_rv=1)
    assert other.message.startswith("too old resource version: 1 (")
