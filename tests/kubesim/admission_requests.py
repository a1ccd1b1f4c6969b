"""The AdmissionRequest the admission tests start from: a ConfigMap create in ``default``."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from kubesim.admission_match import AdmissionRequest

CONFIG_MAP: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "web"}},
    "data": {"k": "v"},
}


def admission_request(**changes: Any) -> AdmissionRequest:
    """A ConfigMap CREATE request, with ``changes`` applied to its fields."""
    base = AdmissionRequest(
        operation="CREATE",
        group="",
        version="v1",
        kind="ConfigMap",
        plural="configmaps",
        subresource="",
        namespaced=True,
        name="cm",
        namespace="default",
        obj=copy.deepcopy(CONFIG_MAP),
        old_obj=None,
        dry_run=False,
        options={"fieldManager": "test"},
        namespace_labels={"env": "prod"},
    )
    return dataclasses.replace(base, **changes)
