"""kubesim's fake scheduler and kubelet: schedulerName, taints and tolerations, nodes run by an
external kubelet, and the scheduler extender (a tiny aiohttp extender on 127.0.0.1)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from kubesim.cli import build_parser
from kubesim.controllers import Controllers
from kubesim.controllers.scheduling import (
    EXTENDER_DROPPED,
    EXTERNAL_KUBELET,
    EXTERNAL_KUBELET_ANNOTATION,
    ExtenderVerdict,
    fit_nodes,
    scheduled_by_default_scheduler,
    tolerates,
    unschedulable_message,
)
from kubesim.resources import Registry, ResourceType
from kubesim.scheduler_extender import HttpExtender, read_filter_result
from kubesim.store import Store
from kubesim.testing import KubeSim
from tests.polling import eventually

ES_TYPE_LABEL = "common.k8s.elastic.co/type"
RUNNER_NODE = "es-runner"
TAINT = {"key": "stackflow.dev/elasticsearch-runner", "value": "true", "effect": "NoSchedule"}

# ----------------------------------------------------------------------------- pure rules


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        pytest.param({"key": "k", "operator": "Equal", "value": "v"}, TAINT | {"key": "k", "value": "v"}, True, id="equal"),
        pytest.param({"key": "k", "value": "v"}, TAINT | {"key": "k", "value": "v"}, True, id="empty-operator-is-equal"),
        pytest.param({"key": "k", "operator": "Equal", "value": "w"}, TAINT | {"key": "k", "value": "v"}, False, id="other-value"),
        pytest.param({"key": "k", "operator": "Equal"}, TAINT | {"key": "k", "value": ""}, True, id="empty-values"),
        pytest.param({"key": "k", "operator": "Exists"}, TAINT | {"key": "k", "value": "v"}, True, id="exists-any-value"),
        pytest.param({"key": "j", "operator": "Exists"}, TAINT | {"key": "k"}, False, id="exists-other-key"),
        pytest.param({"operator": "Exists"}, TAINT, True, id="empty-key-exists-tolerates-all"),
        pytest.param({"operator": "Equal", "value": "true"}, TAINT, True, id="empty-key-equal-value"),
        pytest.param({"key": TAINT["key"], "operator": "Exists", "effect": "NoExecute"}, TAINT, False, id="other-effect"),
        pytest.param({"key": TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}, TAINT, True, id="same-effect"),
        pytest.param({"key": TAINT["key"], "operator": "Exists", "effect": ""}, TAINT, True, id="empty-effect-any"),
        pytest.param({"key": "n", "operator": "Gt", "value": "1"}, {"key": "n", "value": "5", "effect": "NoSchedule"}, False, id="gt-gate-off"),
        pytest.param({"key": "k", "operator": "Bogus", "value": "v"}, TAINT | {"key": "k", "value": "v"}, False, id="unknown-operator"),
    ],
)  # fmt: skip
def test_toleration_matches_taint(
    toleration: dict[str, Any], taint: dict[str, Any], tolerated: bool
) -> None:
    assert tolerates(toleration, taint) is tolerated


def _node(name: str, *, labels: dict[str, str] | None = None, taints: Any = None) -> dict[str, Any]:
    node: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "spec": {}}
    if taints is not None:
        node["spec"]["taints"] = taints
    return node


NODES = {
    "plain": _node("plain", labels={"disk": "ssd"}),
    "tainted": _node("tainted", labels={"disk": "ssd"}, taints=[TAINT]),
    "soft": _node("soft", taints=[TAINT | {"effect": "PreferNoSchedule"}]),
    "evicting": _node("evicting", taints=[TAINT | {"effect": "NoExecute"}]),
}


@pytest.mark.parametrize(
    ("spec", "feasible", "rejected"),
    [
        pytest.param({}, ("plain", "soft"), {"tainted": "node(s) had untolerated taint(s)", "evicting": "node(s) had untolerated taint(s)"}, id="no-tolerations"),
        pytest.param({"tolerations": [{"key": TAINT["key"], "operator": "Exists"}]}, ("evicting", "plain", "soft", "tainted"), {}, id="key-exists-every-effect"),
        pytest.param({"tolerations": [{"key": TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]}, ("plain", "soft", "tainted"), {"evicting": "node(s) had untolerated taint(s)"}, id="noschedule-only"),
        pytest.param({"nodeSelector": {"disk": "ssd"}}, ("plain",), {"tainted": "node(s) had untolerated taint(s)", "soft": "node(s) didn't match Pod's node affinity/selector", "evicting": "node(s) didn't match Pod's node affinity/selector"}, id="selector-before-taints"),
        pytest.param({"tolerations": [{"operator": "Exists"}], "nodeSelector": {"disk": "ssd"}}, ("plain", "tainted"), {"soft": "node(s) didn't match Pod's node affinity/selector", "evicting": "node(s) didn't match Pod's node affinity/selector"}, id="tolerate-all"),
    ],
)  # fmt: skip
def test_the_filters_read_node_selector_and_taints(
    spec: dict[str, Any], feasible: tuple[str, ...], rejected: dict[str, str]
) -> None:
    fit = fit_nodes(spec, NODES)
    assert (fit.feasible, dict(fit.rejected)) == (feasible, rejected)


@pytest.mark.parametrize(
    ("spec", "scheduled"),
    [
        pytest.param({}, True, id="missing"),
        pytest.param({"schedulerName": ""}, True, id="empty"),
        pytest.param({"schedulerName": "default-scheduler"}, True, id="default"),
        pytest.param({"schedulerName": "elasticsearch-runner"}, False, id="another"),
    ],
)
def test_only_default_scheduler_pods_are_scheduled(spec: dict[str, Any], scheduled: bool) -> None:
    assert scheduled_by_default_scheduler(spec) is scheduled


@pytest.mark.parametrize(
    ("total", "unresolvable", "resolvable", "message"),
    [
        pytest.param(
            3,
            {"a": "node(s) had untolerated taint(s)", "b": "node(s) didn't match Pod's node affinity/selector", "c": "node(s) didn't match Pod's node affinity/selector"},
            {},
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match "
            "Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is "
            "not helpful for scheduling.",
            id="filters",
        ),
        pytest.param(
            2,
            {"a": "node(s) had untolerated taint(s)"},
            {"b": "not an Elasticsearch pod"},
            "0/2 nodes are available: 1 node(s) had untolerated taint(s), 1 not an Elasticsearch "
            "pod. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
            "pod, 1 Preemption is not helpful for scheduling.",
            id="extender-failed-nodes",
        ),
    ],
)  # fmt: skip
def test_unschedulable_messages_count_and_sort_the_reasons(
    total: int, unresolvable: dict[str, str], resolvable: dict[str, str], message: str
) -> None:
    assert unschedulable_message(total, unresolvable, resolvable) == message


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        pytest.param({"NodeNames": ["a"], "FailedNodes": {"b": "no"}, "Error": ""}, ExtenderVerdict(("a",), {"b": "no"}), id="go-names"),
        pytest.param({"nodenames": ["b"], "failedAndUnresolvableNodes": {"a": "never"}}, ExtenderVerdict(("b",), unresolvable={"a": "never"}), id="any-case"),
        pytest.param({"NodeNames": None, "Nodes": {"items": [{"metadata": {"name": "a"}}]}}, ExtenderVerdict(("a",)), id="node-list"),
        pytest.param({}, ExtenderVerdict(), id="nothing-kept"),
        pytest.param({"Error": "runner not registered"}, ExtenderVerdict(error="runner not registered"), id="error"),
        pytest.param({"NodeNames": ["z"]}, ExtenderVerdict(error='extender "http://x" claims a filtered node "z" which is not found in the input node list'), id="unoffered-node"),
        pytest.param([], ExtenderVerdict(error="extender 'http://x' answered no ExtenderFilterResult object"), id="not-an-object"),
    ],
)  # fmt: skip
def test_extender_answers_are_read_as_go_decodes_them(
    answer: Any, verdict: ExtenderVerdict
) -> None:
    assert read_filter_result(answer, asked=["a", "b"], url="http://x") == verdict


def test_the_cli_takes_a_scheduler_extender() -> None:
    assert build_parser().parse_args([]).scheduler_extender is None
    args = build_parser().parse_args(["--scheduler-extender", "http://127.0.0.1:9/x"])
    assert args.scheduler_extender == "http://127.0.0.1:9/x"
    shown = subprocess.run(
        [sys.executable, "-m", "kubesim", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "--scheduler-extender URL" in shown.stdout


# ----------------------------------------------------------------------------- a running kubesim


@dataclass
class Sim:
    """A store with running controllers (and two simulated nodes)."""

    store: Store
    registry: Registry
    controllers: Controllers

    def rt(self, plural: str) -> ResourceType:
        return next(rt for rt in self.registry.all() if (rt.group, rt.plural) == ("", plural))

    def pod(self, name: str) -> dict[str, Any]:
        return self.store.get(self.rt("pods"), "default", name)

    def add_node(
        self, name: str, *, annotations: dict[str, str] | None = None, taints: Any = None
    ) -> None:
        node = _node(name, labels={"kubernetes.io/hostname": name}, taints=taints)
        node["metadata"]["annotations"] = annotations or {}
        self.store.create(self.rt("nodes"), node, namespace=None)

    def add_pod(self, name: str, **spec: Any) -> None:
        body = {
            "metadata": {"name": name, "labels": spec.pop("labels", {})},
            "spec": {"containers": [{"name": "c", "image": "i:1"}], **spec},
        }
        self.store.create(self.rt("pods"), body, namespace="default")


def scheduled(pod: dict[str, Any]) -> dict[str, Any]:
    """The PodScheduled condition (empty when there is none)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), {})


@asynccontextmanager
async def running(**options: Any) -> AsyncIterator[Sim]:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry, nodes=2, **options)
    controllers.start()
    try:
        yield Sim(store, registry, controllers)
    finally:
        await controllers.stop()


TOLERATES_RUNNER = [
    {"key": TAINT["key"], "operator": "Equal", "value": "true", "effect": "NoSchedule"}
]


@pytest.mark.parametrize(
    ("spec", "node", "reason", "message"),
    [
        pytest.param({}, "kubesim-node-", None, None, id="untainted-nodes-only"),
        pytest.param({"nodeSelector": {"kubernetes.io/hostname": "tainted"}}, None, "Unschedulable", "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.", id="untolerated"),
        pytest.param({"nodeSelector": {"kubernetes.io/hostname": "tainted"}, "tolerations": TOLERATES_RUNNER}, "tainted", None, None, id="tolerated"),
        pytest.param({"nodeSelector": {"kubernetes.io/hostname": "tainted"}, "tolerations": [{"operator": "Exists"}]}, "tainted", None, None, id="tolerate-everything"),
        pytest.param({"schedulerName": "someone-else"}, None, None, None, id="another-scheduler"),
        pytest.param({"schedulerName": "default-scheduler", "nodeSelector": {"kubernetes.io/hostname": "kubesim-node-1"}}, "kubesim-node-1", None, None, id="default-scheduler"),
    ],
)  # fmt: skip
async def test_pods_are_placed_by_selector_taints_and_scheduler_name(
    spec: dict[str, Any], node: str | None, reason: str | None, message: str | None
) -> None:
    async with running() as sim:
        sim.add_node("tainted", taints=[TAINT])
        sim.add_pod("p", **spec)
        await sim.controllers.settle()
        pod = sim.pod("p")
        bound = str(pod["spec"].get("nodeName") or "")
        if node is None:
            assert bound == ""
            assert pod["status"]["phase"] == "Pending"
        else:
            assert bound.startswith(node)
            assert pod["status"]["phase"] == "Running"
        assert scheduled(pod).get("reason") == reason
        assert scheduled(pod).get("message") == message


async def test_an_unschedulable_pod_is_placed_once_a_node_fits() -> None:
    async with running() as sim:
        sim.add_node("tainted", taints=[TAINT])
        sim.add_pod("p", nodeSelector={"kubernetes.io/hostname": "tainted"})
        await sim.controllers.settle()
        assert scheduled(sim.pod("p"))["reason"] == "Unschedulable"
        nodes = sim.rt("nodes")
        node = sim.store.get(nodes, None, "tainted")
        node["spec"]["taints"] = []
        sim.store.update(nodes, node, namespace=None, name="tainted")
        await sim.controllers.settle()
        pod = sim.pod("p")
        assert (pod["spec"]["nodeName"], pod["status"]["phase"]) == ("tainted", "Running")
        assert scheduled(pod)["status"] == "True"


@pytest.mark.parametrize(
    ("annotations", "kubesim_runs_it"),
    [
        pytest.param({EXTERNAL_KUBELET_ANNOTATION: EXTERNAL_KUBELET}, False, id="external"),
        pytest.param({EXTERNAL_KUBELET_ANNOTATION: "kubesim"}, True, id="other-value"),
        pytest.param({}, True, id="no-annotation"),
    ],
)
@pytest.mark.parametrize("bound_by", ["creator", "scheduler"])
async def test_kubesim_runs_no_pod_of_a_node_with_an_external_kubelet(
    annotations: dict[str, str], kubesim_runs_it: bool, bound_by: str
) -> None:
    assert EXTERNAL_KUBELET_ANNOTATION == "stackflow.dev/kubelet"
    async with running() as sim:
        sim.add_node("runner", annotations=annotations)
        if bound_by == "creator":
            sim.add_pod("p", nodeName="runner")
        else:
            sim.add_pod("p", nodeSelector={"kubernetes.io/hostname": "runner"})
        sim.controllers.set_pod_ready("default", "p", True)
        await sim.controllers.settle()
        pod = sim.pod("p")
        assert pod["spec"]["nodeName"] == "runner"
        if kubesim_runs_it:
            assert pod["status"]["phase"] == "Running"
        else:
            # What the API server (and, when kubesim bound it, the binding) wrote, nothing more.
            assert pod["status"]["phase"] == "Pending"
            assert "containerStatuses" not in pod["status"]
            assert "podIP" not in pod["status"]
            if bound_by == "scheduler":
                assert scheduled(pod)["status"] == "True"


# ----------------------------------------------------------------------------- the extender


@dataclass
class Extender:
    """A tiny scheduler extender: ES pods to the runner's node, every other pod anywhere else."""

    url: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def route(self, args: dict[str, Any]) -> dict[str, Any]:
        labels = args["Pod"]["metadata"].get("labels") or {}
        names = args["NodeNames"]
        if labels.get(ES_TYPE_LABEL) == "elasticsearch":
            kept = [name for name in names if name == RUNNER_NODE]
        else:
            kept = [name for name in names if name != RUNNER_NODE]
        failed = {name: "not this pod's runner" for name in names if name not in kept}
        return {"NodeNames": kept, "FailedNodes": failed, "Error": ""}

    async def handle(self, request: web.Request) -> web.Response:
        args = await request.json()
        self.calls.append(args)
        return web.json_response((self.answer or self.route)(args))


@asynccontextmanager
async def extender_server() -> AsyncIterator[Extender]:
    extender = Extender()
    app = web.Application()
    app.router.add_post("/scheduler/filter", extender.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        extender.url = f"http://127.0.0.1:{runner.addresses[0][1]}/scheduler"
        yield extender
    finally:
        await runner.cleanup()


def _called_for(extender: Extender) -> list[str]:
    return [call["Pod"]["metadata"]["name"] for call in extender.calls]


async def test_the_extender_routes_elasticsearch_pods_to_the_runner() -> None:
    async with extender_server() as extender, KubeSim(scheduler_extender=extender.url) as sim:
        store, server = sim.store, sim.server
        nodes = server.registry.lookup("", "v1", "nodes")
        pods = server.registry.lookup("", "v1", "pods")
        assert nodes is not None
        assert pods is not None
        runner = _node(RUNNER_NODE, labels={"kubernetes.io/hostname": RUNNER_NODE})
        runner["metadata"]["annotations"] = {EXTERNAL_KUBELET_ANNOTATION: EXTERNAL_KUBELET}
        store.create(nodes, runner, namespace=None)
        for name, labels in (
            ("es-0", {ES_TYPE_LABEL: "elasticsearch"}),
            ("kb-0", {ES_TYPE_LABEL: "kibana"}),
        ):
            body = {
                "metadata": {"name": name, "labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            }
            store.create(pods, body, namespace="default")
        # Bound by its creator: never offered to the extender.
        pinned = {
            "metadata": {"name": "pinned"},
            "spec": {"nodeName": "kubesim-node-0", "containers": [{"name": "c", "image": "i"}]},
        }
        store.create(pods, pinned, namespace="default")

        def placed() -> bool:
            return all(
                store.get(pods, "default", n)["spec"].get("nodeName") for n in ("es-0", "kb-0")
            )

        await eventually(placed, within=30, what="both pods bound")
        await sim.settle()
        es, kb = (store.get(pods, "default", name) for name in ("es-0", "kb-0"))
        assert es["spec"]["nodeName"] == RUNNER_NODE
        assert es["status"]["phase"] == "Pending"  # the runner's to start, not kubesim's
        assert scheduled(es)["status"] == "True"
        assert kb["spec"]["nodeName"] == "kubesim-node-0"
        assert kb["status"]["phase"] == "Running"
        assert sorted(_called_for(extender)) == ["es-0", "kb-0"]
        # What kube-scheduler sends a nodeCacheCapable extender: Go's field names, no node objects.
        first = extender.calls[0]
        assert sorted(first) == ["NodeNames", "Nodes", "Pod"]
        assert first["Nodes"] is None
        assert sorted(first["NodeNames"]) == [RUNNER_NODE, "kubesim-node-0"]


async def test_extender_failures_leave_the_pod_unscheduled_then_it_is_retried() -> None:
    async with extender_server() as extender:
        client = HttpExtender(extender.url)
        try:
            async with running(scheduler_extender=client) as sim:
                sim.add_node(
                    RUNNER_NODE, annotations={EXTERNAL_KUBELET_ANNOTATION: EXTERNAL_KUBELET}
                )
                extender.answer = lambda _args: {"Error": "the runner has not registered yet"}
                sim.add_pod("es-0", labels={ES_TYPE_LABEL: "elasticsearch"})
                await sim.controllers.settle()
                refused = scheduled(sim.pod("es-0"))
                assert (refused["status"], refused["reason"], refused["message"]) == (
                    "False",
                    "SchedulerError",
                    "the runner has not registered yet",
                )
                extender.answer = lambda _args: {"NodeNames": []}
                await eventually(
                    lambda: scheduled(sim.pod("es-0")).get("reason") == "Unschedulable",
                    within=30,
                    what="an empty extender answer reported",
                )
                assert scheduled(sim.pod("es-0"))["message"] == (
                    f"0/3 nodes are available: 3 {EXTENDER_DROPPED}. preemption: 0/3 nodes are "
                    "available: 3 Preemption is not helpful for scheduling."
                )
                calls = len(extender.calls)
                extender.answer = None
                await eventually(
                    lambda: sim.pod("es-0")["spec"].get("nodeName") == RUNNER_NODE,
                    within=30,
                    what="the pod bound once the extender routes it",
                )
                # Retried after a backoff, not in a loop: a handful of calls, not hundreds.
                assert len(extender.calls) - calls <= 3
        finally:
            await client.close()


async def test_an_unreachable_extender_is_a_scheduler_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens there now: the connection is refused.
    async with KubeSim(scheduler_extender=f"http://127.0.0.1:{port}") as sim:
        pods = sim.server.registry.lookup("", "v1", "pods")
        assert pods is not None
        body = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        sim.store.create(pods, body, namespace="default")
        await sim.settle()
        condition = scheduled(sim.store.get(pods, "default", "p"))
        assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
        assert condition["message"].startswith(f'Post "http://127.0.0.1:{port}/filter": ')
