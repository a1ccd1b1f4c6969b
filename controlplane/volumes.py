"""A stand-in for a storage provisioner: every pending PersistentVolumeClaim gets a PersistentVolume
made for it (kube-controller-manager's binder then binds the two), and a released one is deleted.

No kubelet runs here, so nothing ever mounts these volumes; they exist so that a StatefulSet's
claims bind and its Pods schedule, as on a cluster with a default provisioner."""

from __future__ import annotations

import threading
from typing import Any

from controlplane.api import AdminApi, ApiError

#: How often pending claims are looked for. A tool's loop, not a test's synchronisation.
POLL_SECONDS = 0.25


def volume_for(claim: dict[str, Any]) -> dict[str, Any]:
    """The PersistentVolume that satisfies ``claim`` exactly, pre-bound to it."""
    meta = claim["metadata"]
    spec = claim.get("spec") or {}
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    volume: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"pv-{meta['uid']}",
            "labels": {"stackflow.dev/fake-volume": "true"},
        },
        "spec": {
            "capacity": {"storage": size},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": f"/nonexistent/stackflow-fake-volumes/{meta['uid']}"},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
        },
    }
    if spec.get("storageClassName"):
        volume["spec"]["storageClassName"] = spec["storageClassName"]
    if spec.get("volumeMode"):
        volume["spec"]["volumeMode"] = spec["volumeMode"]
    return volume


class VolumeProvisioner:
    """A daemon thread that provisions volumes until ``stop``."""

    def __init__(self, api: AdminApi) -> None:
        """Nothing runs until ``start``."""
        self.api = api
        self.stopping = threading.Event()
        self.thread = threading.Thread(
            target=self._run, name="fake-volume-provisioner", daemon=True
        )

    def start(self) -> None:
        """Start provisioning."""
        self.thread.start()

    def stop(self) -> None:
        """Stop and wait for the thread."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def _run(self) -> None:
        while not self.stopping.wait(POLL_SECONDS):
            try:
                self._pass()
            except (ApiError, OSError):
                continue  # the API server restarting or going away: try again next pass

    def _pass(self) -> None:
        claims = self.api.get("/api/v1/persistentvolumeclaims")["items"]
        for claim in claims:
            if (
                not claim["spec"].get("volumeName")
                and claim.get("status", {}).get("phase") == "Pending"
            ):
                self.api.create("/api/v1/persistentvolumes", volume_for(claim))
        volumes = self.api.get(
            "/api/v1/persistentvolumes?labelSelector=stackflow.dev%2Ffake-volume%3Dtrue"
        )
        for volume in volumes["items"]:
            if volume.get("status", {}).get("phase") == "Released":
                try:
                    self.api.request(
                        "DELETE", f"/api/v1/persistentvolumes/{volume['metadata']['name']}"
                    )
                except ApiError as error:
                    if error.status != 404:
                        raise
