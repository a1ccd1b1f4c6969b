"""Admission webhooks registered by ``url: https://127.0.0.1:<port>/…`` with a generated CA.

The webhook server (tests/kubesim/webhook_server.py) runs in the test's event loop. Every webhook
of a check selects only objects labelled with the check's token (``objectSelector``), so the real
server's other clients never reach it; configurations are deleted when the check ends. The real
server takes a moment to load a new configuration: the checks probe with dry-run creates until
the webhook has seen one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import MERGE_PATCH, config_map, core
from tests.conformance.registry import check
from tests.kubesim.webhook_server import WebhookServer, allow, closed_port, deny, patch, raw

VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
#: The label that marks a check's own objects for its webhooks.
SCOPE_LABEL = "cf-webhook"


@asynccontextmanager
async def webhook_server() -> AsyncIterator[WebhookServer]:
    """An HTTPS webhook server on 127.0.0.1 (certificate for 127.0.0.1 from its own CA)."""
    async with WebhookServer.start() as server:
        yield server


def scoped(run: Run, name: str, role: str = "main", **meta: Any) -> dict[str, Any]:
    """A ConfigMap the check's webhooks with ``role`` select."""
    return config_map(name, labels={SCOPE_LABEL: f"{run.token}-{role}"}, **meta)


def configuration(
    run: Run,
    *,
    name: str,
    url: str,
    ca_bundle: str,
    role: str = "main",
    failure_policy: str = "Fail",
    operations: tuple[str, ...] = ("CREATE", "UPDATE", "DELETE"),
    mutating: bool = False,
) -> dict[str, Any]:
    """A webhook configuration for the run's ConfigMaps labelled for ``role``."""
    webhook: dict[str, Any] = {
        "name": f"{name}.example.com",
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [
            {
                "operations": list(operations),
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
                "scope": "Namespaced",
            }
        ],
        "objectSelector": {"matchLabels": {SCOPE_LABEL: f"{run.token}-{role}"}},
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }
    if mutating:
        webhook["reinvocationPolicy"] = "Never"
    return {"metadata": {"name": run.name(name)}, "webhooks": [webhook]}


async def register(
    run: Run,
    body: dict[str, Any],
    *,
    mutating: bool = False,
    effective: Callable[[], Awaitable[bool]],
) -> None:
    """Create a webhook configuration (deleted when the check ends) and wait until it is in use."""
    path = MUTATING if mutating else VALIDATING
    run.delete_on_cleanup(f"{path}/{body['metadata']['name']}")
    await run.ok("POST", path, body=body)
    await run.eventually(effective, what="the webhook configuration in effect")


def seen_by(server: WebhookServer, name: str) -> bool:
    """Whether a review of ConfigMap ``name`` has reached the webhook server."""
    return any(
        (review.get("request", {}).get("object") or {}).get("metadata", {}).get("name") == name
        for review in server.reviews
    )


def probed(run: Run, server: WebhookServer, probe: dict[str, Any]) -> Callable[[], Awaitable[bool]]:
    """Effective once a dry-run create of ``probe`` reached the server (whatever it answered)."""

    async def effective() -> bool:
        await run.request("POST", core(run, "configmaps"), query={"dryRun": "All"}, body=probe)
        return seen_by(server, probe["metadata"]["name"])

    return effective


def review_summary(review: dict[str, Any]) -> dict[str, Any]:
    """The parts of an AdmissionReview request the checks compare (userInfo names the client)."""
    request = review.get("request") or {}
    obj = request.get("object") or {}
    old = request.get("oldObject") or {}
    return {
        "apiVersion": review.get("apiVersion"),
        "kind": review.get("kind"),
        # Keyed by name: a key one side lacks is one difference, not a shifted list.
        "request keys": dict.fromkeys(sorted(request), True),
        "uid is set": bool(request.get("uid")),
        **{
            key: request.get(key)
            for key in (
                "kind",
                "resource",
                "subResource",
                "requestKind",
                "requestResource",
                "requestSubResource",
                "name",
                "namespace",
                "operation",
                "dryRun",
                "options",
            )
        },
        "object": {
            "kind": obj.get("kind"),
            "name": obj.get("metadata", {}).get("name"),
            "data": obj.get("data"),
        }
        if obj
        else None,
        "oldObject": {"kind": old.get("kind"), "name": old.get("metadata", {}).get("name")}
        if old
        else None,
    }


def own_reviews(server: WebhookServer) -> list[dict[str, Any]]:
    """The reviews of the check's own requests (the effectiveness probes are dry runs)."""
    return [review for review in server.reviews if not review.get("request", {}).get("dryRun")]


@check(
    "spec-25-validating-webhook",
    "§12.25: validating webhook denial, the AdmissionReview sent, operations",
)
async def _validating(run: Run) -> None:
    async with webhook_server() as server:
        server.answer("/validate", deny(403, "nope", reason="Forbidden"))
        body = configuration(
            run, name="deny", url=server.url("/validate"), ca_bundle=server.ca_bundle
        )
        await register(run, body, effective=probed(run, server, scoped(run, "deny-probe")))
        server.reviews.clear()
        await run.call("create denied", "POST", core(run, "configmaps"), body=scoped(run, "x"))
        run.fact("the review of the create", [review_summary(r) for r in own_reviews(server)])
        server.answer("/validate", deny(200, "", reason=""))
        await run.call(
            "denied with code 200 and no message",
            "POST",
            core(run, "configmaps"),
            body=scoped(run, "y"),
        )
        server.answer("/validate", deny(422, "", reason="Invalid"))
        await run.call(
            "denied with a reason only", "POST", core(run, "configmaps"), body=scoped(run, "y")
        )
        server.answer("/validate", allow(warnings=["be careful"]))
        server.reviews.clear()
        await run.call(
            "allowed with a warning", "POST", core(run, "configmaps"), body=scoped(run, "z")
        )
        await run.call(
            "update allowed",
            "PATCH",
            core(run, "configmaps", "z"),
            body={"data": {"k": "2"}},
            content_type=MERGE_PATCH,
        )
        await run.call("delete allowed", "DELETE", core(run, "configmaps", "z"))
        run.fact(
            "the reviews of create, patch, delete", [review_summary(r) for r in own_reviews(server)]
        )


@check("webhook-failures", "Webhook call failures: wrong uid, server down with Fail and Ignore")
async def _failures(run: Run) -> None:
    async with webhook_server() as server:
        server.answer(
            "/wrong-uid",
            raw(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": "other", "allowed": True},
                }
            ),
        )
        body = configuration(
            run,
            name="wrong-uid",
            url=server.url("/wrong-uid"),
            ca_bundle=server.ca_bundle,
            role="uid",
        )
        await register(run, body, effective=probed(run, server, scoped(run, "uid-probe", "uid")))
        await run.call(
            "reply with another uid", "POST", core(run, "configmaps"), body=scoped(run, "x", "uid")
        )
        port = await closed_port()
        for policy in ("Fail", "Ignore"):
            down = configuration(
                run,
                name=f"down-{policy.lower()}",
                url=f"https://127.0.0.1:{port}/validate",
                ca_bundle=server.ca_bundle,
                failure_policy=policy,
                role=policy,
            )

            async def failing(policy: str = policy) -> bool:
                if policy == "Ignore":
                    # Ignored failures look like no webhook at all: nothing to wait for.
                    return True
                answer = await run.request(
                    "POST",
                    core(run, "configmaps"),
                    query={"dryRun": "All"},
                    body=scoped(run, "down-probe", policy),
                )
                return answer.status == 500

            await register(run, down, effective=failing)
            await run.call(
                f"webhook down with {policy}",
                "POST",
                core(run, "configmaps"),
                body=scoped(run, f"down-{policy.lower()}", policy),
            )


@check("webhook-mutating", "Mutating webhook: a JSON patch applied; a reply without a response")
async def _mutating(run: Run) -> None:
    async with webhook_server() as server:
        server.answer(
            "/mutate",
            patch(
                [
                    {"op": "add", "path": "/metadata/annotations", "value": {"mutated": "yes"}},
                    {"op": "add", "path": "/data/added", "value": "1"},
                ]
            ),
        )
        body = configuration(
            run,
            name="mutate",
            url=server.url("/mutate"),
            ca_bundle=server.ca_bundle,
            operations=("CREATE",),
            mutating=True,
        )
        await register(
            run, body, mutating=True, effective=probed(run, server, scoped(run, "m-probe"))
        )
        server.reviews.clear()
        await run.call("create mutated", "POST", core(run, "configmaps"), body=scoped(run, "x"))
        run.fact("review", [review_summary(r) for r in server.reviews])
        server.answer(
            "/mutate", raw({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})
        )
        await run.call(
            "a review without response", "POST", core(run, "configmaps"), body=scoped(run, "y")
        )


@check("webhook-namespace-selector", "A webhook selecting the namespace of a create by its labels")
async def _namespace_selector(run: Run) -> None:
    async with webhook_server() as server:
        server.answer("/validate", deny(403, "not here"))
        body = configuration(
            run, name="ns-deny", url=server.url("/validate"), ca_bundle=server.ca_bundle
        )
        # The token label keeps the webhook to this check's objects; the namespace selector is
        # what is measured.
        body["webhooks"][0]["namespaceSelector"] = {
            "matchLabels": {"kubernetes.io/metadata.name": run.ns}
        }
        # The probe names its namespace in the body: kubesim matches the selector only so.
        probe = scoped(run, "ns-probe", namespace=run.ns)
        await register(run, body, effective=probed(run, server, probe))
        await run.call(
            "create (no namespace in the body)",
            "POST",
            core(run, "configmaps"),
            body=scoped(run, "x"),
        )
        await run.call(
            "create (namespace in the body)",
            "POST",
            core(run, "configmaps"),
            body=scoped(run, "y", namespace=run.ns),
        )
