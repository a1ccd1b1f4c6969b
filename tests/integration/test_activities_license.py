"""The license gate, the InvalidLicense notice and the license controller against kubesim."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.testing import ActivityEnvironment

from activities import generic
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube import errors
from stackflow.licensing.issue import generate_private_key, public_key_pem
from stackflow.models.engine import (
    LicenseCheckInput,
    LicenseWaitNoticeInput,
    Phase,
    ReconcileInput,
    ResourceRef,
    Trigger,
    TriggerReason,
)
from stackflow.models.kinds import EVENTS, PODS, SECRETS
from tests.integration import families
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    OPERATOR_POD,
    SELECTOR,
    Clock,
    Cluster,
    cluster,
)
from tests.integration.license_setup import enterprise_license, license_secret

__all__ = ["cluster"]

NAMESPACE = "team-a"
UNLICENSED = "Dynamic namespace selector is an enterprise feature. Enterprise features are disabled"


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return generate_private_key()


def ref(controller: str = "license") -> ResourceRef:
    return ResourceRef(
        controller=controller,
        group="elasticsearch.k8s.elastic.co",
        version="v1",
        kind="Elasticsearch",
        plural="elasticsearches",
        namespace=NAMESPACE,
        name="quickstart",
    )


async def create_es(cluster: Cluster) -> None:
    await cluster.raw.create(
        ELASTICSEARCH,
        {
            "apiVersion": "elasticsearch.k8s.elastic.co/v1",
            "kind": "Elasticsearch",
            "metadata": {"name": "quickstart", "namespace": NAMESPACE},
            "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]},
        },
    )


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        pytest.param("valid", True, id="valid-license"),
        pytest.param("none", False, id="no-license"),
        pytest.param("expired", False, id="expired-license"),
        pytest.param("other-key", False, id="signed-by-another-key"),
        pytest.param("unmanaged-namespace", False, id="license-in-unmanaged-namespace"),
    ],
)
async def test_license_check(
    cluster: Cluster, signing_key: rsa.RSAPrivateKey, installed: str, expected: bool
) -> None:
    clock = Clock()
    context = cluster.context(
        selector=SELECTOR, public_keys=[public_key_pem(signing_key.public_key())], clock=clock
    )
    await cluster.create_namespace("unmanaged")
    if installed == "valid":
        await cluster.raw.create(SECRETS, license_secret(enterprise_license(signing_key, clock)))
    elif installed == "expired":
        await cluster.raw.create(SECRETS, license_secret(enterprise_license(signing_key, clock)))
        clock.now += timedelta(days=400)
    elif installed == "other-key":
        other = generate_private_key()
        await cluster.raw.create(SECRETS, license_secret(enterprise_license(other, clock)))
    elif installed == "unmanaged-namespace":
        document = enterprise_license(signing_key, clock)
        await cluster.raw.create(SECRETS, license_secret(document, namespace="unmanaged"))

    result = await ActivityEnvironment().run(
        generic.license_check, context, LicenseCheckInput(ref=ref("elasticsearch"))
    )

    assert result.licensed is expected
    assert bool(result.reason) is not expected


async def test_license_wait_notice_warns_on_operator_pod_and_resource(cluster: Cluster) -> None:
    context = cluster.context(selector=SELECTOR)
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    await cluster.raw.create(
        PODS,
        {
            "metadata": {"name": OPERATOR_POD, "namespace": OPERATOR_NAMESPACE},
            "spec": {"containers": [{"name": "operator", "image": "stackflow"}]},
        },
    )
    await create_es(cluster)
    notice = LicenseWaitNoticeInput(ref=ref("elasticsearch"), message="no license")

    first = await ActivityEnvironment().run(generic.license_wait_notice, context, notice)
    await ActivityEnvironment().run(generic.license_wait_notice, context, notice)

    assert first.events == 2
    pod = await cluster.raw.get(PODS, namespace=OPERATOR_NAMESPACE, name=OPERATOR_POD)
    es = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    for namespace, involved in ((OPERATOR_NAMESPACE, pod), (NAMESPACE, es)):
        events = (await cluster.raw.list(EVENTS, namespace=namespace))["items"]
        assert len(events) == 1
        event = events[0]
        assert (event["type"], event["reason"], event["action"]) == (
            "Warning",
            "InvalidLicense",
            "LicenseCheck",
        )
        assert event["message"] == UNLICENSED
        assert event["involvedObject"]["uid"] == involved["metadata"]["uid"]
        assert event["involvedObject"]["kind"] == involved["kind"]
        assert event["count"] == 2


async def reconcile(context: Any) -> Any:
    return await ActivityEnvironment().run(
        families.reconcile,
        context,
        ReconcileInput(ref=ref(), triggers=(Trigger(reason=TriggerReason.CREATED, source="test"),)),
    )


async def test_license_controller_writes_then_removes_the_cluster_license(
    cluster: Cluster, signing_key: rsa.RSAPrivateKey
) -> None:
    clock = Clock()
    context = cluster.context(
        selector=SELECTOR, public_keys=[public_key_pem(signing_key.public_key())], clock=clock
    )
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    await create_es(cluster)
    await cluster.raw.create(SECRETS, license_secret(enterprise_license(signing_key, clock)))

    written = await reconcile(context)

    assert written.phase is Phase.READY
    assert written.requeue_after_seconds == pytest.approx(
        timedelta(days=350).total_seconds(), rel=1e-3
    )
    secret = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="quickstart-es-license")
    assert secret["metadata"]["labels"] == {
        "common.k8s.elastic.co/type": "license",
        "license.k8s.elastic.co/name": "ENT-1",
        "license.k8s.elastic.co/scope": "elasticsearch",
        "license.k8s.elastic.co/type": "platinum",
    }
    assert secret["metadata"]["ownerReferences"][0]["name"] == "quickstart"
    body = json.loads(base64.b64decode(secret["data"]["license"]))
    assert (body["uid"], body["type"], body["signature"]) == ("CL-1", "platinum", "es-signature")

    version = secret["metadata"]["resourceVersion"]
    await reconcile(context)
    again = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="quickstart-es-license")
    assert again["metadata"]["resourceVersion"] == version

    await cluster.raw.delete(SECRETS, namespace=OPERATOR_NAMESPACE, name="eck-license")
    removed = await reconcile(context)

    assert removed.phase is Phase.READY
    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="quickstart-es-license")
