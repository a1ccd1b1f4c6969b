"""A real Kubernetes control plane on 127.0.0.1 for tests and ``stackflow dev --cluster apiserver``.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built by ``make tools`` from
Kubernetes' own Go modules into ``.tools/bin``. It stands alone: nothing of the operator is imported.
"""

from controlplane.cluster import ControlPlane, ControlPlaneError, tools_missing

__all__ = ["ControlPlane", "ControlPlaneError", "tools_missing"]
