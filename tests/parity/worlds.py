"""The two worlds of the parity tier: ECK, then Stackflow, each on a fresh real control plane.

Each world: a control plane of ``make tools`` with the CRDs (ECK's own for ECK, deploy/crds for Stackflow: each as its users install it;
they differ in wording and validation, docs/parity.md), the operator namespace
with a trial license, the operator (ECK's ``elastic-operator`` of ``make eck``, or ``stackflow run``
with a Temporal dev server as tests/e2e runs it) isolated in a network namespace
(:mod:`tests.parity.isolate`), a scenario applied, and, once the scenario's StatefulSets have their
Pods Ready and nothing changes any more, every object of the scenario's namespaces and of the
operator namespace dumped with the real kubectl.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from temporalio.testing import WorkflowEnvironment

from controlplane import ControlPlane
from controlplane.cluster import tools_bin
from stackflow.kube.client import make_api_client
from stackflow.kube.resources import ResourceClient
from tests.clusters import (
    OPERATOR_SERVICE_ACCOUNT,
    REPO,
    ensure_namespace,
    install_chart,
    install_crds,
    kubectl,
)
from tests.e2e.harness import (
    SCOPE_LABEL,
    Operator,
    accept_trial,
    set_in_scope,
    temporal_server,
    write_operator_config,
)
from tests.parity.compare import Until, holds, object_key, world
from tests.parity.isolate import host_relays, isolated_argv

OPERATOR_NAMESPACE = "elastic-system"
ECK = tools_bin() / "elastic-operator"
#: The module tools/eck builds ECK from, as Go's module cache lays it out.
ECK_MODULE = "github.com/elastic/cloud-on-k8s/v3@v3.5.0"
#: What is dumped of each namespace (Events apart); the stack kinds by their full names.
DUMPED = (
    "configmaps,secrets,services,statefulsets,pods,persistentvolumeclaims,"
    "poddisruptionbudgets.policy,serviceaccounts,deployments.apps,"
    "elasticsearches.elasticsearch.k8s.elastic.co,kibanas.kibana.k8s.elastic.co,"
    "stackconfigpolicies.stackconfigpolicy.k8s.elastic.co,"
    "autoopsagentpolicies.autoops.k8s.elastic.co,"
    "daemonsets.apps,beats.beat.k8s.elastic.co,agents.agent.k8s.elastic.co,"
    "logstashes.logstash.k8s.elastic.co,elasticmapsservers.maps.k8s.elastic.co"
)
#: What ECK writes once after it starts, whatever the scenario: its licensing report, 10 s after
#: its start (a fixed delay of its own), then every 2 minutes. The ECK world waits for it.
ECK_STARTUP_OBJECTS = frozenset({f"ConfigMap {OPERATOR_NAMESPACE}/elastic-licensing"})
#: What an operator writes once it has started the enterprise trial of ``eck-trial``.
TRIAL_STATUS = f"Secret {OPERATOR_NAMESPACE}/trial-status"
#: The trial Secret the tier writes (made by the tier, not by an operator: never compared).
TRIAL = f"Secret {OPERATOR_NAMESPACE}/eck-trial"
#: Polls of a world that must find nothing changed before it is dumped (one second apart).
QUIET_POLLS = 3


@dataclass(frozen=True)
class Step:
    """A change made once the world has settled: namespaces labelled into scope or out of it,
    manifests applied, the trial accepted (``trial``); the StatefulSets and the conditions
    (``until``) to wait for after it."""

    namespaces: Mapping[str, bool] = field(default_factory=dict)
    manifests: Sequence[Mapping[str, Any]] = ()
    statefulsets: Sequence[tuple[str, str]] = ()
    until: Sequence[Until] = ()
    trial: bool = False


@dataclass(frozen=True)
class Scenario:
    """What is applied: namespaces (in scope or not) and manifests, the StatefulSets and
    conditions to wait for, and the steps made after (``then``); the world compared is the one
    after the last step. ``trial``: the operator namespace holds an enterprise trial before the
    operator starts (without it, the operator runs on a basic license until a step accepts one)."""

    name: str
    namespaces: Mapping[str, bool]
    manifests: Sequence[Mapping[str, Any]]
    statefulsets: Sequence[tuple[str, str]] = ()
    then: Sequence[Step] = ()
    until: Sequence[Until] = ()
    trial: bool = True

    def steps(self) -> list[Step]:
        """Every step, the first included."""
        first = Step(self.namespaces, self.manifests, self.statefulsets, self.until)
        return [first, *self.then]

    def all_namespaces(self) -> list[str]:
        """Every namespace a step names, in order."""
        return list(dict.fromkeys(name for step in self.steps() for name in step.namespaces))


def eck_unavailable() -> str | None:
    """Why ECK's operator cannot run here, or None."""
    if not ECK.exists():
        return f"parity tier skipped: {ECK} not built (run `make eck`)"
    return None


def dump(kubeconfig: Path, namespaces: Sequence[str]) -> list[dict[str, Any]]:
    """Every object of ``namespaces`` that the tier compares, Events included."""
    items: list[dict[str, Any]] = []
    for namespace in namespaces:
        for kinds in (DUMPED, "events"):
            listed = json.loads(
                kubectl(kubeconfig, "get", kinds, f"--namespace={namespace}", "--output=json")
            )
            items.extend(listed["items"])
    return items


def _ready(items: Sequence[Mapping[str, Any]], statefulsets: Sequence[tuple[str, str]]) -> bool:
    """Whether every wanted StatefulSet exists with all its replicas Ready."""
    found = {
        (item["metadata"]["namespace"], item["metadata"]["name"]): item
        for item in items
        if item.get("kind") == "StatefulSet"
    }
    for key in statefulsets:
        sset = found.get(key)
        if sset is None:
            return False
        wanted = (sset.get("spec") or {}).get("replicas", 1)
        if (sset.get("status") or {}).get("readyReplicas", 0) != wanted:
            return False
    return True


async def settle(
    kubeconfig: Path,
    scenario: Scenario,
    statefulsets: Sequence[tuple[str, str]],
    *,
    ignore: frozenset[str],
    alive: Callable[[], str | None],
    expect: frozenset[str] = frozenset(),
    until: Sequence[Until] = (),
    within: float = 360.0,
) -> dict[str, Any]:
    """Wait until ``statefulsets`` are Ready, the objects ``expect`` exist, the conditions
    ``until`` hold and the world no longer changes; return it. ``alive`` says why the operator
    is gone (an AssertionError then)."""
    namespaces = [*scenario.all_namespaces(), OPERATOR_NAMESPACE]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last: dict[str, Any] | None = None
    quiet = 0
    while True:
        gone = alive()
        if gone:
            raise AssertionError(gone)
        items = await asyncio.to_thread(dump, kubeconfig, namespaces)
        current = world(items, ignore=ignore)
        if _ready(items, statefulsets) and expect <= current.keys() and holds(current, until):
            quiet = quiet + 1 if current == last else 0
            if quiet >= QUIET_POLLS:
                return current
        last = current
        if loop.time() > deadline:
            raise AssertionError(
                f"{scenario.name}: not settled after {within:g} s; objects: {sorted(current)}"
            )
        await asyncio.sleep(1.0)


async def play(
    kube: ResourceClient,
    kubeconfig: Path,
    scenario: Scenario,
    *,
    ignore: frozenset[str],
    alive: Callable[[], str | None],
    expect: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Make each step of ``scenario`` once the one before has settled; the world after the last.
    With a trial, the first waits until the operator has started it (its ``trial-status``
    Secret), so that neither world reconciles a first time without its license."""
    licensed = frozenset({TRIAL_STATUS}) if scenario.trial else frozenset()
    await settle(kubeconfig, scenario, (), ignore=ignore, alive=alive, expect=expect | licensed)
    settled: dict[str, Any] = {}
    for step in scenario.steps():
        if step.trial:
            await accept_trial(kube, operator_namespace=OPERATOR_NAMESPACE)
            expect |= {TRIAL_STATUS}
        for namespace, in_scope in step.namespaces.items():
            await ensure_namespace(kube, namespace)
            await set_in_scope(kube, namespace, in_scope)
        if step.manifests:
            body = yaml.safe_dump_all(list(step.manifests))
            await asyncio.to_thread(kubectl, kubeconfig, "apply", "--filename=-", stdin=body)
        settled = await settle(
            kubeconfig,
            scenario,
            step.statefulsets,
            ignore=ignore,
            alive=alive,
            expect=expect,
            until=step.until,
        )
    return settled


def _baseline(kubeconfig: Path) -> frozenset[str]:
    """What the operator namespace holds before the operator starts (the chart, the trial; the
    trial also when a step writes it later)."""
    found = frozenset(object_key(item) for item in dump(kubeconfig, [OPERATOR_NAMESPACE]))
    return found | {TRIAL}


def eck_crds() -> Path | None:
    """ECK's own CRDs, from the module ``make eck`` built it from (Go's module cache), if there."""
    done = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    path = Path(done.stdout.strip()) / ECK_MODULE / "config" / "crds" / "v1" / "all-crds.yaml"
    return path if path.exists() else None


def _install(plane: ControlPlane, crds: Path | None) -> None:
    """The CRDs at ``crds`` (deploy/crds when None), applied and Established."""
    if crds is None:
        install_crds(plane)
        return
    kubectl(plane.admin_kubeconfig, "apply", "--server-side", f"--filename={crds}")
    kubectl(
        plane.admin_kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd",
        "--all",
    )


@contextlib.asynccontextmanager
async def fresh_plane(directory: Path, *, crds: Path | None = None) -> AsyncIterator[ControlPlane]:
    """A control plane of its own, with the CRDs at ``crds`` (ours by default); stopped after."""
    plane = ControlPlane(directory)
    await asyncio.to_thread(plane.start)
    try:
        await asyncio.to_thread(_install, plane, crds)
        yield plane
    finally:
        await asyncio.to_thread(plane.stop)


class Isolated:
    """An operator process in its own network namespace (see :mod:`tests.parity.isolate`)."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], log: Path) -> None:
        """Configure; nothing runs until ``start``."""
        self.argv, self.env, self.log = list(argv), dict(env), log
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start it (from the repository, where ``tests`` imports)."""
        with self.log.open("ab") as out:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdout=out, stderr=out, env=self.env, cwd=REPO
            )

    def gone(self) -> str | None:
        """Why it is no longer running, or None."""
        if self.process is not None and self.process.returncode is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            return f"operator exited {self.process.returncode}:\n{tail}"
        return None

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s: never left behind."""
        process, self.process = self.process, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=30)
        except TimeoutError:
            process.kill()
            await process.wait()


def eck_config(path: Path) -> Path:
    """ECK's configuration file: the namespace selector is a configuration-file-only setting."""
    config = {
        "operator-namespace": OPERATOR_NAMESPACE,
        "namespace-selector": {"matchLabels": {SCOPE_LABEL: "true"}},
        "enable-webhook": False,
        "enable-leader-election": False,
        "metrics-port": 0,
        "disable-telemetry": True,
        "probes-bind-address": "127.0.0.1:0",
    }
    path.write_text(yaml.safe_dump(config))
    return path


async def run_eck(directory: Path, scenario: Scenario) -> dict[str, Any]:
    """The world ECK makes of ``scenario``, with ECK's own CRDs (ours where Go's module cache
    has no copy of ECK's module)."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    crds = await asyncio.to_thread(eck_crds)
    async with fresh_plane(directory / "plane", crds=crds) as plane:
        kubeconfig = plane.admin_kubeconfig
        client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=30)
        try:
            kube = ResourceClient(client)
            await ensure_namespace(kube, OPERATOR_NAMESPACE)
            if scenario.trial:
                await accept_trial(kube, operator_namespace=OPERATOR_NAMESPACE)
            ignore = await asyncio.to_thread(_baseline, kubeconfig)
            relays = directory / "relays"
            command = [str(ECK), "manager", f"--config={eck_config(directory / 'eck.yaml')}"]
            env = {
                **os.environ,
                "KUBECONFIG": str(kubeconfig),
                # Its APM agent would dial the cloud metadata address otherwise.
                "ELASTIC_APM_ACTIVE": "false",
                "ELASTIC_APM_CLOUD_PROVIDER": "none",
            }
            operator = Isolated(
                isolated_argv(relays, [plane.apiserver_port], command),
                env=env,
                log=directory / "eck.log",
            )
            async with host_relays(relays, [plane.apiserver_port]):
                await operator.start()
                try:
                    return await play(
                        kube,
                        kubeconfig,
                        scenario,
                        ignore=ignore,
                        alive=operator.gone,
                        expect=ECK_STARTUP_OBJECTS,
                    )
                finally:
                    await operator.stop()
        finally:
            await client.close()


async def run_stackflow(directory: Path, scenario: Scenario) -> dict[str, Any]:
    """The world Stackflow makes of ``scenario`` (the chart's RBAC, a Temporal dev server)."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    async with fresh_plane(directory / "plane") as plane:
        kubeconfig = plane.admin_kubeconfig
        client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=30)
        # As tests/clusters.py's kube_cluster sets the real API server up (the chart's RBAC and
        # the operator's token), without its cleanup: the control plane is thrown away after.
        try:
            kube = ResourceClient(client)
            await ensure_namespace(kube, OPERATOR_NAMESPACE)
            await asyncio.to_thread(install_chart, plane, namespace=OPERATOR_NAMESPACE)
            token = await asyncio.to_thread(
                plane.token_kubeconfig,
                directory / "operator.kubeconfig",
                namespace=OPERATOR_NAMESPACE,
                service_account=OPERATOR_SERVICE_ACCOUNT,
            )
            async with temporal_server() as temporal:
                return await _run_stackflow(directory, scenario, plane, kube, token, temporal)
        finally:
            await client.close()


async def _run_stackflow(
    directory: Path,
    scenario: Scenario,
    plane: ControlPlane,
    kube: ResourceClient,
    token: Path,
    temporal: WorkflowEnvironment,
) -> dict[str, Any]:
    kubeconfig = plane.admin_kubeconfig
    if scenario.trial:
        await accept_trial(kube, operator_namespace=OPERATOR_NAMESPACE)
    ignore = await asyncio.to_thread(_baseline, kubeconfig)
    # Telemetry off in both worlds (ECK's configuration says so too).
    config = write_operator_config(
        directory / "operator.yaml", temporal=temporal, settings={"disable-telemetry": True}
    )
    plain = Operator(config=config, kubeconfig=token, log=directory / "sf.log")
    _, _, port = temporal.client.service_client.config.target_host.rpartition(":")
    ports = [plane.apiserver_port, int(port)]
    relays = directory / "relays"
    operator = Isolated(
        isolated_argv(relays, ports, plain.argv),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        log=directory / "stackflow.log",
    )
    async with host_relays(relays, ports):
        await operator.start()
        try:
            return await play(kube, kubeconfig, scenario, ignore=ignore, alive=operator.gone)
        finally:
            await operator.stop()


Runner = Callable[[Path, Scenario], Awaitable[dict[str, Any]]]
