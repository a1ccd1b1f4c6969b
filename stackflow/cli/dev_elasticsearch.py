"""``stackflow dev --elasticsearch real``: the Elasticsearch runner beside the cluster, so every
Elasticsearch Pod of the environment is a real node (see docs/elasticsearch.md)."""

from __future__ import annotations

from pathlib import Path

from esrunner.containers import unavailable_reason
from esrunner.distributions import installed_versions, parse_version
from esrunner.distributions import unavailable_reason as version_unavailable
from esrunner.kubeapi import KubeApi
from esrunner.pods import RunnerSettings
from esrunner.runner import Runner
from stackflow.cli.dev_temporal import free_port

#: Three nodes in one machine: each node's heap is kept small.
DEV_HEAP_CEILING_MB = 256


def runnable_version(preferred: str) -> str:
    """``preferred`` when it can run here, else the newest installed version that can;
    RuntimeError naming what is missing when none can."""
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"--elasticsearch real: {reason}")
    if version_unavailable(preferred) is None:
        return preferred
    for version in sorted(installed_versions(), key=parse_version, reverse=True):
        if version_unavailable(version) is None:
            return version
    raise RuntimeError(f"--elasticsearch real: {version_unavailable(preferred)}")


class RealNodes:
    """The runner of ``stackflow dev``: its scheduler extender's URL is known before the cluster
    starts (the scheduler is configured with it); the runner itself starts once the cluster
    answers."""

    def __init__(self, state_dir: Path, *, preferred_version: str) -> None:
        """Check that nodes can run here (RuntimeError, one line, when not)."""
        self.version = runnable_version(preferred_version)
        self.state_dir = state_dir
        self.port = free_port("127.0.0.1")
        self.runner: Runner | None = None

    @property
    def extender_url(self) -> str:
        """The scheduler extender that sends Elasticsearch Pods to the runner's Node."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self, kubeconfig: Path) -> None:
        """Register the runner's Node and start running the Pods bound to it."""
        settings = RunnerSettings(
            node_name="elasticsearch-runner",
            state_dir=self.state_dir,
            heap_ceiling_mb=DEV_HEAP_CEILING_MB,
        )
        self.runner = Runner(KubeApi(kubeconfig), settings, extender_port=self.port)
        await self.runner.start()

    async def stop(self) -> None:
        """Stop every node gracefully."""
        if self.runner is not None:
            await self.runner.close()

    def instructions(self, kubeconfig: Path) -> str:
        """How to reach the demo's real cluster from this machine."""
        ns, es = "demo", "quickstart"
        return f"""
Elasticsearch {self.version} runs for real: each Pod of {ns}/{es} is a node at its Pod IP
(logs in {self.state_dir}/pods/<namespace>/<pod>/logs).
  kubectl get pods -n {ns} -o wide
  PASSWORD=$(kubectl get secret {es}-es-elastic-user -n {ns} -o jsonpath='{{.data.elastic}}' | base64 -d)
  IP=$(kubectl get pod {es}-es-default-0 -n {ns} -o jsonpath='{{.status.podIP}}')
  kubectl get secret {es}-es-http-certs-public -n {ns} -o jsonpath='{{.data.ca\\.crt}}' | base64 -d > /tmp/{es}-ca.crt
  curl --cacert /tmp/{es}-ca.crt --resolve {es}-es-http.{ns}.svc:9200:$IP -u "elastic:$PASSWORD" \\
    "https://{es}-es-http.{ns}.svc:9200/_cluster/health?pretty"
"""
