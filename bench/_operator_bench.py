"""The operator half of the engine benchmark: drive the in-process operator through kubesim.

Every measurement reads the times the bench controller's reconcile recorded
(``_stack.ReconcileRecorder``), so nothing polls the API while the operator works.
"""

from __future__ import annotations

import asyncio
import base64
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _stack import ReconcileRecorder, bounded, progress
from temporalio.client import Client

from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube.resources import ResourceClient
from stackflow.licensing.issue import generate_private_key, issue_license, public_key_pem
from stackflow.licensing.model import LICENSE_SCOPE_LABEL, LICENSE_SCOPE_OPERATOR
from stackflow.models.engine import SA_NAMESPACE, SA_PHASE, Phase, Trigger, TriggerReason
from stackflow.models.kinds import NAMESPACES, SECRETS

ES = ELASTICSEARCH
OPERATOR_NAMESPACE = "elastic-system"
WARM_NAMESPACE = "bench-warm"
FLIP_NAMESPACE = "bench-flip"
SCOPE_LABEL = "bench-managed"
LICENSE_SECRET = "bench-license"
#: As ``activities.generic.SIGNAL_CONCURRENCY``: the flip's fan-out; used for every bench sender.
SIGNAL_CONCURRENCY = 32
WRITE_CONCURRENCY = 16


def elasticsearch(namespace: str, name: str) -> dict[str, Any]:
    """A one-node Elasticsearch."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


def license_secret(document: str) -> dict[str, Any]:
    """The operator license Secret."""
    return {
        "metadata": {
            "name": LICENSE_SECRET,
            "namespace": OPERATOR_NAMESPACE,
            "labels": {LICENSE_SCOPE_LABEL: LICENSE_SCOPE_OPERATOR},
        },
        "data": {"license": base64.b64encode(document.encode()).decode()},
    }


def enterprise_license(directory: Path) -> tuple[Path, str]:
    """A signing key pair and an enterprise license: (public key file, license JSON)."""
    private_key = generate_private_key()
    public_key = directory / "license-public.pem"
    public_key.write_bytes(public_key_pem(private_key.public_key()))
    document = issue_license(
        private_key=private_key, now=datetime.now(UTC), validity=timedelta(days=30)
    ).to_json()
    return public_key, document


class OperatorBench:
    """Drives the in-process operator through kubesim and measures it with the recorder."""

    def __init__(
        self, *, kube: ResourceClient, temporal: Client, recorder: ReconcileRecorder, document: str
    ) -> None:
        """Measure through ``kube`` (writes) and ``temporal`` (direct signals, visibility)."""
        self.kube = kube
        self.temporal = temporal
        self.recorder = recorder
        self.document = document

    async def create_many(self, namespace: str, names: list[str]) -> None:
        """Create an Elasticsearch per name."""

        async def create(name: str) -> None:
            await self.kube.create(ES, elasticsearch(namespace, name), namespace=namespace)

        await bounded(names, create, limit=WRITE_CONCURRENCY)

    async def warm_rounds(self, names: list[str], *, rounds: int) -> float:
        """Signal every running workflow ``rounds`` times, as the bare loop; reconciles/s."""
        trigger = Trigger(reason=TriggerReason.MANUAL, source="bench")

        async def poke(name: str) -> None:
            workflow_id = f"elasticsearch/{WARM_NAMESPACE}/{name}"
            await self.temporal.get_workflow_handle(workflow_id).signal("trigger", trigger)

        began = time.monotonic()
        for _ in range(rounds):
            before = self.recorder.done.total
            await bounded(names, poke, limit=SIGNAL_CONCURRENCY)
            await self.recorder.done.wait_total(before + len(names), within=600)
        return len(names) * rounds / (time.monotonic() - began)

    async def event_latencies(self, names: list[str], *, samples: int) -> list[float]:
        """Annotate one resource at a time; seconds from the write until its reconcile starts."""
        latencies: list[float] = []
        for index in range(samples):
            name = names[index % len(names)]
            key = f"{WARM_NAMESPACE}/{name}"
            began = time.monotonic()
            await self.kube.merge_patch(
                ES,
                {"metadata": {"annotations": {"bench/touch": str(index)}}},
                namespace=WARM_NAMESPACE,
                name=name,
            )
            await self.recorder.wait_each([key], after=began, within=60)
            start = self.recorder.first_start_after(key, began)
            assert start is not None
            latencies.append(start - began)
        return latencies

    async def count_waiting(self) -> int:
        """Running workflows of the warm namespace in phase WaitingForLicense (visibility)."""
        query = (
            f"ExecutionStatus='Running' AND {SA_PHASE.name}='{Phase.WAITING_FOR_LICENSE.value}'"
            f" AND {SA_NAMESPACE.name}='{WARM_NAMESPACE}'"
        )
        return (await self.temporal.count_workflows(query)).count

    async def license_restores(self, names: list[str], *, rounds: int, waiting: int) -> list[float]:
        """Remove the license, change ``waiting`` specs, restore it; seconds to each reconcile."""
        samples: list[float] = []
        for round_number in range(rounds):
            chosen = names[round_number * waiting : (round_number + 1) * waiting]
            await self.kube.delete(SECRETS, namespace=OPERATOR_NAMESPACE, name=LICENSE_SECRET)
            for name in chosen:
                await self.kube.merge_patch(
                    ES,
                    {"spec": {"nodeSets": [{"name": "default", "count": 2 + round_number}]}},
                    namespace=WARM_NAMESPACE,
                    name=name,
                )
            deadline = time.monotonic() + 120
            while await self.count_waiting() < len(chosen):
                if time.monotonic() > deadline:
                    raise TimeoutError("resources did not reach WaitingForLicense")
                await asyncio.sleep(0.1)
            restored = time.monotonic()
            await self.kube.create(
                SECRETS, license_secret(self.document), namespace=OPERATOR_NAMESPACE
            )
            keys = [f"{WARM_NAMESPACE}/{name}" for name in chosen]
            await self.recorder.wait_each(keys, after=restored, within=600)
            for key in keys:
                end = self.recorder.first_end_after(key, restored)
                assert end is not None
                samples.append(end - restored)
        return samples

    async def flip(self, count: int) -> tuple[float, list[float]]:
        """Label a namespace holding ``count`` resources into scope: seconds until all reconciled,
        and each resource's seconds from the label to its reconcile's start."""
        names = [f"es-{index}" for index in range(count)]
        await self.create_many(FLIP_NAMESPACE, names)
        progress(f"operator: {count} resources created out of scope; flipping {FLIP_NAMESPACE}")
        began = time.monotonic()
        await self.kube.merge_patch(
            NAMESPACES,
            {"metadata": {"labels": {SCOPE_LABEL: "true"}}},
            namespace=None,
            name=FLIP_NAMESPACE,
        )
        keys = [f"{FLIP_NAMESPACE}/{name}" for name in names]
        await self.recorder.wait_each(keys, after=began, within=1800)
        elapsed = time.monotonic() - began
        starts = [self.recorder.first_start_after(key, began) for key in keys]
        return elapsed, [start - began for start in starts if start is not None]
