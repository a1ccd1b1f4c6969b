"""Running a check on both servers and comparing the transcripts.

kubesim: a fresh :class:`~kubesim.testing.KubeSim` per check (in the running loop). The real
server: the control plane the caller started, shared by every check; each check works in its own
namespace ``cf-<token>`` and names its cluster-scoped objects with the same token, and removes them
when it ends (namespaces are deleted and awaited at the end of the session, see
:func:`wait_for_namespaces`).
"""

from __future__ import annotations

import asyncio
import secrets
import ssl
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from controlplane import ControlPlane
from kubesim.testing import KubeSim
from tests.conformance.compare import Comparison, compare, flatten_transcript
from tests.conformance.differences import ANY_CHECK, DIFFERENCES, FIXED, Difference
from tests.conformance.harness import APISERVER, KUBESIM, CheckError, Endpoint, Run
from tests.conformance.normalize import Normalizer
from tests.conformance.registry import Check

#: Namespaces the checks made on the real server (awaited gone at the end of the session).
NAMESPACE_PREFIX = "cf-"
#: Every outcome of this process (the pytest summary line counts them).
OUTCOMES: list[Outcome] = []


@dataclass
class Outcome:
    """A check's two transcripts and their comparison."""

    check: Check
    kubesim: list[tuple[str, Any]]
    apiserver: list[tuple[str, Any]]
    comparison: Comparison
    cleanup_failures: list[str]


def apiserver_endpoint(plane: ControlPlane, directory: Path) -> Endpoint:
    """The real control plane as an endpoint (admin client certificate)."""
    context = ssl.create_default_context(cafile=str(plane.pki.ca.cert))
    context.load_cert_chain(str(plane.pki.admin.cert), str(plane.pki.admin.key))
    return Endpoint(
        name=APISERVER,
        url=plane.url,
        kubeconfig=plane.admin_kubeconfig,
        cache_dir=directory / "kubectl-cache-apiserver",
        ssl_context=context,
        etcd_url=etcd_client_url(plane),
    )


def etcd_client_url(plane: ControlPlane) -> str | None:
    """The client URL the plane's etcd listens on (read from its command line)."""
    for component in plane.components:
        if component.name == "etcd":
            for argument in component.argv:
                if argument.startswith("--listen-client-urls="):
                    return argument.split("=", 1)[1].split(",")[0]
    return None


@asynccontextmanager
async def kubesim_endpoint(directory: Path) -> AsyncIterator[Endpoint]:
    """A fresh kubesim as an endpoint, stopped at the end."""
    async with KubeSim() as sim:
        # write_kubeconfig creates the directory (a few bytes: not worth a thread).
        kubeconfig = sim.write_kubeconfig(directory / "kubesim.kubeconfig")
        yield Endpoint(
            name=KUBESIM,
            url=sim.url,
            kubeconfig=kubeconfig,
            cache_dir=directory / "kubectl-cache-kubesim",
            sim=sim,
        )


async def run_check(check: Check, endpoint: Endpoint, *, token: str, workdir: Path) -> Run:
    """Run ``check`` on ``endpoint``; a failure of the check itself is recorded as step ``error``."""
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        run = Run(
            endpoint=endpoint, check=check.name, token=token, session=session, workdir=workdir
        )
        nodes = await run.request("GET", "/api/v1/nodes")
        if nodes.ok:
            endpoint.node_names = tuple(
                item["metadata"]["name"] for item in nodes.object().get("items", [])
            )
        try:
            if check.namespace:
                await _create_namespace(run, pods=check.pods)
            await check.function(run)
        except Exception as exc:  # a broken scenario is a difference like any other
            run.fact("error", f"{type(exc).__name__}: {exc}")
        finally:
            await release_finalizers(run)
            run.cleanup_failures = await run.cleanup()
    return run


#: Collections where a check may leave objects held by its own finalizers (a check that failed
#: half-way): released before cleanup, so namespaces and CRDs can go.
HELD_COLLECTIONS = (
    "/api/v1/namespaces/{ns}/configmaps",
    "/apis/apps/v1/namespaces/{ns}/deployments",
    "/apis/{group}/v1/namespaces/{ns}/widgets",
    "/apis/{group}/v1/namespaces/{ns}/gadgets",
)


async def release_finalizers(run: Run) -> None:
    """Drop the finalizers a check put on its objects (``example.com/…`` and the collector's)."""
    for template in HELD_COLLECTIONS:
        path = template.format(ns=run.ns, group=run.group)
        listed = await run.request("GET", path)
        if not listed.ok:
            continue
        for item in listed.object().get("items") or []:
            if item["metadata"].get("finalizers"):
                await run.request(
                    "PATCH",
                    f"{path}/{item['metadata']['name']}",
                    body={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json",
                )


async def _create_namespace(run: Run, *, pods: bool) -> None:
    await run.ok("POST", "/api/v1/namespaces", body={"metadata": {"name": run.ns}})

    async def delete() -> None:
        await run.request("DELETE", f"/api/v1/namespaces/{run.ns}")

    run.on_cleanup(delete)
    if pods and not run.is_kubesim:
        # The ServiceAccount admission plugin rejects Pods until the namespace's `default`
        # ServiceAccount exists (kubesim has no such plugin, nor the controller that makes it).
        async def account() -> bool:
            path = f"/api/v1/namespaces/{run.ns}/serviceaccounts/default"
            return (await run.request("GET", path)).ok

        await run.eventually(account, what="the namespace's default ServiceAccount")


def transcript(run: Run) -> list[tuple[str, Any]]:
    """The run's entries, normalized."""
    normalizer = Normalizer(node_names=run.endpoint.node_names, substitutions=run.substitutions)
    return [(entry.step, normalizer.entry(entry.data)) for entry in run.entries]


async def compare_check(
    check: Check,
    apiserver: Endpoint,
    *,
    workdir: Path,
    differences: Sequence[Difference] = DIFFERENCES,
) -> Outcome:
    """Run ``check`` on a fresh kubesim and on the real server, and compare."""
    token = secrets.token_hex(3)
    async with kubesim_endpoint(workdir / f"kubesim-{token}") as sim:
        sim_run = await run_check(check, sim, token=token, workdir=workdir)
    real_run = await run_check(check, apiserver, token=token, workdir=workdir)
    sim_entries, real_entries = transcript(sim_run), transcript(real_run)
    comparison = compare(
        check.name,
        flatten_transcript(sim_entries),
        flatten_transcript(real_entries),
        differences,
    )
    failures = sim_run.cleanup_failures + real_run.cleanup_failures
    return Outcome(check, sim_entries, real_entries, comparison, failures)


async def wait_for_namespaces(endpoint: Endpoint, *, within: float = 300.0) -> list[str]:
    """Delete what is left of the checks' namespaces on the real server and wait until they are
    gone; the names still there at the deadline."""
    async with aiohttp.ClientSession() as session:
        run = Run(endpoint=endpoint, check="cleanup", token="", session=session, workdir=Path())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            listed = await run.request("GET", "/api/v1/namespaces")
            left = [
                item["metadata"]["name"]
                for item in listed.object().get("items", [])
                if item["metadata"]["name"].startswith(NAMESPACE_PREFIX)
            ]
            if not left:
                return []
            for name in left:
                await run.request("DELETE", f"/api/v1/namespaces/{name}")
            if loop.time() > deadline:
                return left
            await asyncio.sleep(0.5)


@dataclass(frozen=True)
class Counts:
    """The numbers of the summary line."""

    run: int
    identical: int
    documented_only: int
    #: Of ``documented_only``: checks whose only differences are the ``*`` rows (managedFields).
    model_only: int
    failed: int
    fixed: int
    documented: int

    def line(self) -> str:
        """``conformance: N checks run, …``."""
        return (
            f"conformance: {self.run} checks run, {self.identical} identical, "
            f"{self.documented_only} differing only in documented fields "
            f"({self.model_only} of them only in the `*` rows), {self.failed} failed; "
            f"{self.fixed} fixed in kubesim, {self.documented} documented differences"
        )


def counts(outcomes: Sequence[Outcome]) -> Counts:
    """Summarize outcomes together with the FIXED and DIFFERENCES tables."""
    names = {outcome.check.name for outcome in outcomes}
    return Counts(
        run=len(outcomes),
        identical=sum(1 for outcome in outcomes if outcome.comparison.identical),
        documented_only=sum(
            1
            for outcome in outcomes
            if outcome.comparison.passed and not outcome.comparison.identical
        ),
        model_only=sum(
            1
            for outcome in outcomes
            if outcome.comparison.passed
            and not outcome.comparison.identical
            and all(row.check == ANY_CHECK for row in outcome.comparison.used)
        ),
        failed=sum(1 for outcome in outcomes if not outcome.comparison.passed),
        fixed=sum(1 for name in FIXED if name in names),
        documented=len(DIFFERENCES),
    )


def scratch_directory() -> Path:
    """A temporary directory for kubeconfigs and kubectl caches (callers remove it)."""
    return Path(tempfile.mkdtemp(prefix="conformance-"))


__all__ = [
    "CheckError",
    "Counts",
    "Outcome",
    "apiserver_endpoint",
    "compare_check",
    "counts",
    "kubesim_endpoint",
    "run_check",
    "scratch_directory",
    "transcript",
    "wait_for_namespaces",
]
