"""The license end-to-end set-up, shared by the license test modules: an operator Pod named as the
operator runs, an enterprise license issued by the command line and its Secret, clusters, and the
operator's configuration file."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from stackflow.kube.resources import ResourceClient
from stackflow.licensing.model import LICENSE_SCOPE_LABEL, LICENSE_SCOPE_OPERATOR
from tests.e2e.harness import ES, Operator

OPERATOR_NAMESPACE = "elastic-system"
OPERATOR_POD = "stackflow-e2e-0"
LICENSE_SECRET = "eck-enterprise-license"

#: Well under the 5-minute durable recheck: reaching a state before it proves a watch woke it.
PROMPTLY = 60.0


class PodNamedOperator(Operator):
    """``stackflow run`` with ``POD_NAME`` set, as the Deployment's downward API would."""

    async def start(self) -> None:
        """Start it."""
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", "POD_NAME": OPERATOR_POD}
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdout=log, stderr=log, env=environment
            )


def stackflow_license(*args: str) -> str:
    """Run ``stackflow license ARGS`` as a user would; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "stackflow.cli", "license", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def issue_enterprise_license(directory: Path) -> tuple[Path, str]:
    """A fresh signing key pair and an enterprise license it signed: (public key, license JSON)."""
    stackflow_license("keygen", "--out-dir", str(directory))
    document = stackflow_license(
        "issue", "--private-key", str(directory / "license-private.pem"), "--type", "enterprise"
    )
    return directory / "license-public.pem", document


def license_secret(document: str) -> dict[str, Any]:
    """The operator license Secret holding ``document``."""
    return {
        "metadata": {
            "name": LICENSE_SECRET,
            "namespace": OPERATOR_NAMESPACE,
            "labels": {LICENSE_SCOPE_LABEL: LICENSE_SCOPE_OPERATOR},
        },
        "data": {"license": base64.b64encode(document.encode()).decode()},
    }


def operator_pod() -> dict[str, Any]:
    """The Pod object the operator runs as (``POD_NAME``), so its events name a real object."""
    return {
        "metadata": {"name": OPERATOR_POD, "namespace": OPERATOR_NAMESPACE},
        "spec": {"containers": [{"name": "manager", "image": "stackflow:e2e"}]},
    }


def elasticsearch(namespace: str, *, count: int = 1) -> dict[str, Any]:
    """A one-node-set Elasticsearch."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": count}]},
    }


def write_config(path: Path, settings: dict[str, Any]) -> Path:
    """Write an operator configuration file."""
    path.write_text(yaml.safe_dump(settings))
    return path


def generations(es: dict[str, Any]) -> tuple[int, int | None]:
    """(metadata.generation, status.observedGeneration) of an Elasticsearch."""
    observed = (es.get("status") or {}).get("observedGeneration")
    return int(es["metadata"]["generation"]), None if observed is None else int(observed)


async def reconciled(kube: ResourceClient, namespace: str) -> bool:
    """Whether the operator has reconciled the current spec of ``namespace``/quickstart."""
    generation, observed = generations(await kube.get(ES, namespace=namespace, name="quickstart"))
    return observed == generation
