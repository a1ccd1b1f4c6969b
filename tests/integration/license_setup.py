"""Shared set-up of the license tests: a signed enterprise license with one cluster license, and
the operator license Secret holding it."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from stackflow.licensing.issue import new_license, signed
from stackflow.licensing.model import (
    ClusterLicense,
    ClusterLicenseSpec,
    EnterpriseLicense,
    to_millis,
)
from tests.integration.controller_context import OPERATOR_NAMESPACE, Clock


def enterprise_license(
    key: rsa.RSAPrivateKey, clock: Clock, *, days: int = 365, cluster_type: str = "platinum"
) -> EnterpriseLicense:
    """An enterprise license signed with ``key``, valid ``days`` from now, holding one
    ``cluster_type`` cluster license."""
    unsigned = new_license(now=clock.now, validity=timedelta(days=days), uid="ENT-1")
    cluster_license = ClusterLicense(
        license=ClusterLicenseSpec(
            uid="CL-1",
            type=cluster_type,
            issue_date_in_millis=to_millis(clock.now),
            start_date_in_millis=to_millis(clock.now),
            expiry_date_in_millis=to_millis(clock.now + timedelta(days=days)),
            max_nodes=100,
            issued_to="test",
            issuer="test",
            signature="es-signature",
        )
    )
    with_cluster = unsigned.model_copy(
        update={
            "license": unsigned.license.model_copy(update={"cluster_licenses": (cluster_license,)})
        }
    )
    return signed(with_cluster, private_key=key)


def license_secret(
    document: EnterpriseLicense, *, namespace: str = OPERATOR_NAMESPACE
) -> dict[str, Any]:
    """The operator license Secret (scope ``operator``) holding ``document``."""
    return {
        "metadata": {
            "name": "eck-license",
            "namespace": namespace,
            "labels": {"license.k8s.elastic.co/scope": "operator"},
        },
        "data": {"license": base64.b64encode(document.to_json().encode()).decode()},
    }
