"""The trial controller against kubesim: EULA, activation, one trial only, tampering, expiry."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities import generic
from stackflow.models.engine import (
    LicenseCheckInput,
    ReconcileInput,
    ReconcileResult,
    ResourceRef,
    Trigger,
    TriggerReason,
)
from stackflow.models.kinds import SECRETS
from tests.integration import families
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Clock,
    Cluster,
    cluster,
)

__all__ = ["cluster"]

INVALID = "license.k8s.elastic.co/invalid"


def trial_ref(name: str) -> ResourceRef:
    return ResourceRef(
        controller="trial",
        group="",
        version="v1",
        kind="Secret",
        plural="secrets",
        namespace=OPERATOR_NAMESPACE,
        name=name,
    )


def trial_request(name: str, *, eula: bool = True) -> dict[str, Any]:
    annotations = {"elastic.co/eula": "accepted"} if eula else {}
    return {
        "metadata": {
            "name": name,
            "namespace": OPERATOR_NAMESPACE,
            "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
            "annotations": annotations,
        }
    }


async def reconcile(context: Any, name: str) -> ReconcileResult:
    result: ReconcileResult = await ActivityEnvironment().run(
        families.reconcile,
        context,
        ReconcileInput(
            ref=trial_ref(name), triggers=(Trigger(reason=TriggerReason.CREATED, source="test"),)
        ),
    )
    return result


async def annotation(cluster: Cluster, name: str) -> str | None:
    secret = await cluster.raw.get(SECRETS, namespace=OPERATOR_NAMESPACE, name=name)
    value = (secret["metadata"].get("annotations") or {}).get(INVALID)
    return str(value) if value is not None else None


async def licensed(context: Any) -> bool:
    result = await ActivityEnvironment().run(
        generic.license_check, context, LicenseCheckInput(ref=trial_ref("x"))
    )
    return bool(result.licensed)


async def test_trial_without_eula_is_flagged(cluster: Cluster) -> None:
    context = cluster.context()
    await cluster.raw.create(SECRETS, trial_request("eck-trial", eula=False))

    await reconcile(context, "eck-trial")

    assert (
        await annotation(cluster, "eck-trial")
        == 'Please set the annotation elastic.co/eula to "accepted" to accept the EULA'
    )
    assert not await licensed(context)


async def test_trial_starts_once_and_enables_enterprise_features(cluster: Cluster) -> None:
    clock = Clock()
    context = cluster.context(selector=SELECTOR, clock=clock)
    await cluster.raw.create(SECRETS, trial_request("eck-trial"))
    assert not await licensed(context)

    started = await reconcile(context, "eck-trial")

    assert "trial started" in started.message
    status = await cluster.raw.get(SECRETS, namespace=OPERATOR_NAMESPACE, name="trial-status")
    assert set(status["data"]) == {"pubkey"}
    assert status["metadata"]["annotations"] == {
        "trial.k8s.elastic.co/secret-name": "eck-trial",
        "trial.k8s.elastic.co/secret-namespace": OPERATOR_NAMESPACE,
    }
    secret = await cluster.raw.get(SECRETS, namespace=OPERATOR_NAMESPACE, name="eck-trial")
    document = json.loads(base64.b64decode(secret["data"]["license"]))["license"]
    assert document["issuer"] == "Elastic k8s operator"
    expiry = document["expiry_date_in_millis"] - document["start_date_in_millis"]
    assert expiry == timedelta(days=30) // timedelta(milliseconds=1)
    assert secret["metadata"]["labels"]["license.k8s.elastic.co/scope"] == "operator"
    assert await licensed(context)

    await reconcile(context, "eck-trial")
    assert await annotation(cluster, "eck-trial") is None

    await cluster.raw.create(SECRETS, trial_request("second-trial"))
    await reconcile(context, "second-trial")
    assert await annotation(cluster, "second-trial") == "trial can be started only once"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param("tamper", "trial license signature invalid", id="tampered"),
        pytest.param("expire", "trial license expired", id="expired"),
        pytest.param(
            "tamper-status",
            f"Secret {OPERATOR_NAMESPACE}/trial-status holds no readable trial public key "
            "(key pubkey; was it edited?): the trial license cannot be verified",
            id="tampered-trial-status",
        ),
    ],
)
async def test_invalid_trial_license_is_flagged(
    cluster: Cluster, change: str, message: str
) -> None:
    clock = Clock()
    context = cluster.context(clock=clock)
    await cluster.raw.create(SECRETS, trial_request("eck-trial"))
    await reconcile(context, "eck-trial")
    if change == "tamper":
        secret = await cluster.raw.get(SECRETS, namespace=OPERATOR_NAMESPACE, name="eck-trial")
        document = json.loads(base64.b64decode(secret["data"]["license"]))
        document["license"]["max_resource_units"] = 1000
        encoded = base64.b64encode(json.dumps(document).encode()).decode()
        await cluster.raw.merge_patch(
            SECRETS, {"data": {"license": encoded}}, namespace=OPERATOR_NAMESPACE, name="eck-trial"
        )
    elif change == "tamper-status":
        garbage = base64.b64encode(b"garbage").decode()
        await cluster.raw.merge_patch(
            SECRETS,
            {"data": {"pubkey": garbage}},
            namespace=OPERATOR_NAMESPACE,
            name="trial-status",
        )
    else:
        clock.now += timedelta(days=31)

    await reconcile(context, "eck-trial")

    assert await annotation(cluster, "eck-trial") == message
    assert not await licensed(context)
    # Whatever happened to the trial, it is not started a second time.
    await cluster.raw.create(SECRETS, trial_request("another-trial"))
    await reconcile(context, "another-trial")
    assert await annotation(cluster, "another-trial") == "trial can be started only once"
