"""Kubernetes protobuf: kubectl's imperative commands against kubesim, and the converter itself.

kubectl's typed commands (``create namespace``, ``create secret``, ``create configmap``,
``create deployment``) send protobuf bodies and prefer protobuf answers; ``run`` and ``expose`` are
checked alongside. Everything here but the "classes missing" checks
needs the generated classes (``make proto``) and skips, with that reason, without them.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubesim import protobuf
from kubesim.proto_json import Catalog, go_duration, parse_go_duration
from kubesim.testing import KubeSim
from tests.conftest import Kubectl
from tests.kubesim.protobuf_calls import KUBECTL_ACCEPT, PROTOBUF, call, require_catalog


@pytest.fixture
def catalog() -> Catalog:
    """The loaded protobuf catalog (skips without the generated classes)."""
    return require_catalog()


def stored(sim: KubeSim, plural: str, namespace: str | None, name: str, group: str = "") -> Any:
    """An object as kubesim stores it."""
    rt = sim.server.registry.lookup(group, "v1", plural)
    assert rt is not None
    return sim.store.get(rt, namespace, name)


def protobuf_posts(sim: KubeSim) -> list[str]:
    """The paths of the POSTs that carried protobuf bodies and got protobuf answers."""
    return [
        r.path
        for r in sim.server.request_log
        if r.method == "POST"
        and r.content_type.startswith(PROTOBUF)
        and r.response_content_type.startswith(PROTOBUF)
    ]


# -- kubectl's imperative commands -----------------------------------------------------------


@pytest.mark.kubectl
class TestKubectlImperative:
    """The commands that failed with 415 before kubesim decoded protobuf."""

    @pytest.fixture(autouse=True)
    def _classes(self) -> None:
        require_catalog()

    async def test_create_namespace(self, kubesim: KubeSim, kubectl: Kubectl) -> None:
        """``kubectl create namespace`` succeeds (over protobuf both ways) and the namespace exists."""
        rc, out, err = await kubectl("create", "namespace", "demo")
        assert rc == 0, err
        assert out.strip() == "namespace/demo created"
        assert protobuf_posts(kubesim) == ["/api/v1/namespaces"]
        assert stored(kubesim, "namespaces", None, "demo")["status"]["phase"] == "Active"
        rc, out, err = await kubectl("get", "namespace", "demo", "-o", "name")
        assert (rc, out.strip()) == (0, "namespace/demo"), err

    async def test_create_output_is_the_decoded_answer(
        self, kubesim: KubeSim, kubectl: Kubectl
    ) -> None:
        """``-o json`` prints what kubectl decoded from kubesim's protobuf answer."""
        rc, out, err = await kubectl("create", "namespace", "shown", "-o", "json")
        assert rc == 0, err
        printed = json.loads(out)
        live = stored(kubesim, "namespaces", None, "shown")
        assert printed["metadata"]["uid"] == live["metadata"]["uid"]
        assert printed["metadata"]["creationTimestamp"] == live["metadata"]["creationTimestamp"]
        assert printed["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
        assert printed["status"] == live["status"]

    async def test_create_secret_generic(self, kubesim: KubeSim, kubectl: Kubectl) -> None:
        """A Secret made from a literal holds the bytes of that literal."""
        rc, _, err = await kubectl("create", "namespace", "demo")
        assert rc == 0, err
        rc, out, err = await kubectl(
            "create", "secret", "generic", "s", "--from-literal=a=b", "-n", "demo"
        )
        assert rc == 0, err
        assert out.strip() == "secret/s created"
        assert "/api/v1/namespaces/demo/secrets" in protobuf_posts(kubesim)
        secret = stored(kubesim, "secrets", "demo", "s")
        assert base64.b64decode(secret["data"]["a"]) == b"b"
        rc, out, err = await kubectl("get", "secret", "s", "-n", "demo", "-o", "jsonpath={.data.a}")
        assert rc == 0, err
        assert base64.b64decode(out) == b"b"

    async def test_create_configmap(self, kubesim: KubeSim, kubectl: Kubectl) -> None:
        """A ConfigMap made from literals holds them."""
        rc, out, err = await kubectl(
            "create", "configmap", "settings", "--from-literal=k=v", "--from-literal=x=y"
        )
        assert rc == 0, err
        assert out.strip() == "configmap/settings created"
        assert protobuf_posts(kubesim) == ["/api/v1/namespaces/default/configmaps"]
        assert stored(kubesim, "configmaps", "default", "settings")["data"] == {"k": "v", "x": "y"}

    async def test_run_pod(self, kubesim: KubeSim, kubectl: Kubectl) -> None:
        """``kubectl run`` makes a Pod with the image, labelled ``run=<name>``.

        kubectl 1.37 sends this one (and ``expose``) as JSON; it must keep working either way.
        """
        rc, out, err = await kubectl("run", "nginx", "--image=nginx")
        assert rc == 0, err
        assert out.strip() == "pod/nginx created"
        pod = stored(kubesim, "pods", "default", "nginx")
        assert [c["image"] for c in pod["spec"]["containers"]] == ["nginx"]
        assert pod["metadata"]["labels"] == {"run": "nginx"}

    async def test_create_deployment_and_expose(self, kubesim: KubeSim, kubectl: Kubectl) -> None:
        """``create deployment`` then ``expose``: a Deployment and a Service selecting its pods."""
        rc, out, err = await kubectl("create", "deployment", "web", "--image=nginx")
        assert rc == 0, err
        assert out.strip() == "deployment.apps/web created"
        assert protobuf_posts(kubesim) == ["/apis/apps/v1/namespaces/default/deployments"]
        deployment = stored(kubesim, "deployments", "default", "web", group="apps")
        assert deployment["spec"]["replicas"] == 1
        assert deployment["spec"]["selector"] == {"matchLabels": {"app": "web"}}
        containers = deployment["spec"]["template"]["spec"]["containers"]
        assert [c["image"] for c in containers] == ["nginx"]
        rc, out, err = await kubectl("expose", "deployment", "web", "--port=80")
        assert rc == 0, err
        assert out.strip() == "service/web exposed"
        service = stored(kubesim, "services", "default", "web")
        assert service["spec"]["selector"] == {"app": "web"}
        assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(80, 80)]
        rc, out, err = await kubectl(
            "get", "service", "web", "-o", "jsonpath={.spec.ports[0].port}"
        )
        assert (rc, out) == (0, "80"), err


# -- the HTTP layer --------------------------------------------------------------------------


async def test_get_and_list_answer_protobuf_when_preferred(
    kubesim: KubeSim, catalog: Catalog
) -> None:
    """GET and LIST of a built-in kind answer protobuf for kubectl's Accept, JSON otherwise."""
    body = catalog.encode_object(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    )
    status, _, _ = await call(
        kubesim, "POST", "/api/v1/namespaces/default/configmaps", data=body, content_type=PROTOBUF
    )
    assert status == 201
    path = "/api/v1/namespaces/default/configmaps/c"
    status, content_type, raw = await call(kubesim, "GET", path, accept=KUBECTL_ACCEPT)
    assert (status, content_type) == (200, PROTOBUF)
    _, _, as_json = await call(kubesim, "GET", path)
    assert catalog.decode_object(raw) == json.loads(as_json)
    status, content_type, raw = await call(
        kubesim, "GET", "/api/v1/namespaces/default/configmaps", accept=KUBECTL_ACCEPT
    )
    assert (status, content_type) == (200, PROTOBUF)
    listed = catalog.decode_object(raw)
    assert listed["kind"] == "ConfigMapList"
    assert [item["data"] for item in listed["items"]] == [{"k": "v"}]


async def test_update_with_protobuf(kubesim: KubeSim, catalog: Catalog) -> None:
    """A protobuf PUT (client-go's typed Update) replaces the object and answers protobuf."""
    path = "/api/v1/namespaces/default/configmaps"
    created = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"}}
    status, _, raw = await call(
        kubesim,
        "POST",
        path,
        data=catalog.encode_object(created),
        content_type=PROTOBUF,
        accept=KUBECTL_ACCEPT,
    )
    assert status == 201
    live = catalog.decode_object(raw)
    live["data"] = {"changed": "yes"}
    status, content_type, raw = await call(
        kubesim,
        "PUT",
        f"{path}/u",
        data=catalog.encode_object(live),
        content_type=PROTOBUF,
        accept=KUBECTL_ACCEPT,
    )
    assert (status, content_type) == (200, PROTOBUF)
    assert catalog.decode_object(raw)["data"] == {"changed": "yes"}
    assert stored(kubesim, "configmaps", "default", "u")["data"] == {"changed": "yes"}


@pytest.mark.usefixtures("widget_crd")
async def test_custom_resources_stay_json(kubesim: KubeSim, catalog: Catalog) -> None:
    """A custom resource answers JSON to a protobuf-preferring client and refuses protobuf bodies."""
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    status, content_type, raw = await call(
        kubesim,
        "POST",
        widgets,
        data=json.dumps(widget).encode(),
        content_type="application/json",
        accept=KUBECTL_ACCEPT,
    )
    assert (status, content_type) == (201, "application/json")
    assert json.loads(raw)["metadata"]["name"] == "w"
    # A protobuf envelope naming the custom kind: there is no message for it.
    unknown: Any = catalog.unknown_class()()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = "example.com/v1", "Widget"
    status, _, raw = await call(
        kubesim,
        "POST",
        widgets,
        data=protobuf.MAGIC + unknown.SerializeToString(),
        content_type=PROTOBUF,
    )
    assert status == 415
    assert json.loads(raw)["reason"] == "UnsupportedMediaType"


@pytest.mark.parametrize(
    "body",
    [b"k8s\x00\x0a\x02v1", b"k8s\x00\xff\xff", b"not protobuf at all"],
    ids=["truncated", "garbage", "no-magic"],
)
async def test_malformed_protobuf_is_bad_request(
    kubesim: KubeSim, catalog: Catalog, body: bytes
) -> None:
    """A protobuf body that does not decode is a 400, as the real server's decode errors are."""
    status, content_type, raw = await call(
        kubesim, "POST", "/api/v1/namespaces", data=body, content_type=PROTOBUF
    )
    assert (status, content_type) == (400, "application/json")
    assert json.loads(raw)["reason"] == "BadRequest"


async def test_without_classes_protobuf_is_refused(
    kubesim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without generated classes: 415 saying to run ``make proto``, and JSON answers."""
    monkeypatch.setenv(protobuf.ENV_DIR, str(tmp_path / "no-classes"))
    status, _, raw = await call(
        kubesim,
        "POST",
        "/api/v1/namespaces",
        data=b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace",
        content_type=PROTOBUF,
    )
    assert status == 415
    assert "run `make proto`" in json.loads(raw)["message"]
    status, content_type, _ = await call(
        kubesim, "GET", "/api/v1/namespaces/default", accept=KUBECTL_ACCEPT
    )
    assert (status, content_type) == (200, "application/json")


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (KUBECTL_ACCEPT, True),
        (PROTOBUF, True),
        ("application/json", False),
        (None, False),
        ("*/*", False),
        (f"application/json,{PROTOBUF}", False),
        (f"application/json;q=0.5,{PROTOBUF}", True),
        (f"{PROTOBUF};q=0,application/json", False),
        (f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io,application/json", False),
    ],
)
def test_accept_negotiation(accept: str | None, expected: bool) -> None:
    """Protobuf only when it is the client's first choice (by q, then as listed)."""
    assert protobuf.prefers_protobuf(accept) is expected


# -- the converter ---------------------------------------------------------------------------

ROUND_TRIPS: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "demo",
            "uid": "0b5e6c1a-6a61-4b1e-9a53-8f3e8b2b8d11",
            "resourceVersion": "12",
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "labels": {"kubernetes.io/metadata.name": "demo", "team": "x"},
            "annotations": {"note": "☃ 日本"},
            "managedFields": [
                {
                    "manager": "kubectl-create",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-05-06T07:08:09Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}},
                }
            ],
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    },
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "demo"},
        "data": {
            "a": base64.b64encode(b"b").decode(),
            "bin": base64.b64encode(b"\x00\xff").decode(),
        },
        "type": "Opaque",
        "immutable": False,
    },
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "demo"},
        "data": {"k": "v", "empty": ""},
        "binaryData": {"blob": base64.b64encode(b"\x01\x02").decode()},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "demo", "deletionTimestamp": "2024-05-06T07:08:09Z"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "1Gi"},
                        "requests": {"cpu": "0.25", "ephemeral-storage": "2G"},
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": "http"},
                        "periodSeconds": 3,
                    },
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "failureThreshold": 1},
                    "env": [{"name": "A", "value": "1"}],
                }
            ],
            "volumes": [
                {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                {"name": "conf", "configMap": {"name": "c", "defaultMode": 420}},
            ],
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"disk": "ssd"},
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": "2024-05-06T07:08:10Z",
                }
            ],
        },
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "generation": 2},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1},
            },
        },
    },
    {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "web-1", "namespace": "demo"},
        "data": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "b"}]}}}},
        "revision": 1,
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {
            "ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"}],
            "selector": {"app": "web"},
            "clusterIP": "10.0.0.10",
            "type": "ClusterIP",
        },
        "status": {"loadBalancer": {}},
    },
    {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "demo"},
        "spec": {
            "holderIdentity": "me",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-05-06T07:08:09.000000Z",
            "renewTime": "2024-05-06T07:08:09.123456Z",
            "leaseTransitions": 0,
        },
    },
    {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "demo"},
        "eventTime": "2024-05-06T07:08:09.654321Z",
        "reportingController": "kubesim",
        "reportingInstance": "kubesim-1",
        "action": "Create",
        "reason": "Created",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "demo", "apiVersion": "v1"},
        "type": "Normal",
    },
    {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "namespace": "demo"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    },
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "hooks"},
        "webhooks": [
            {
                "name": "check.example.com",
                "clientConfig": {
                    "caBundle": base64.b64encode(b"-----BEGIN CERTIFICATE-----").decode(),
                    "service": {"namespace": "demo", "name": "hook", "port": 443},
                },
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["configmaps"],
                        "scope": "*",
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
            }
        ],
    },
    {
        "apiVersion": "v1",
        "kind": "NamespaceList",
        "metadata": {"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3},
        "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
    },
]


@pytest.mark.parametrize(
    "obj", ROUND_TRIPS, ids=[f"{o['apiVersion']}/{o['kind']}" for o in ROUND_TRIPS]
)
def test_round_trip(catalog: Catalog, obj: dict[str, Any]) -> None:
    """JSON → protobuf → JSON gives back the object (Quantities, IntOrString, times, bytes, maps)."""
    encoded = catalog.encode_object(copy.deepcopy(obj))
    assert encoded.startswith(protobuf.MAGIC)
    assert catalog.decode_object(encoded) == obj


def test_go_zero_values_follow_encoding_json(catalog: Catalog) -> None:
    """What Go's marshaller writes for unset Go fields decodes as Go's encoding/json prints it."""
    cls: Any = catalog.message_class("v1", "Namespace")
    assert cls is not None
    message = cls()
    message.metadata.name = "demo"
    message.metadata.namespace = ""  # a non-pointer omitempty string: omitted
    message.metadata.generation = 0  # likewise
    message.metadata.creationTimestamp.SetInParent()  # a zero omitzero metav1.Time: omitted
    message.spec.SetInParent()  # a non-pointer struct: {}
    condition = message.status.conditions.add()
    condition.type, condition.status, condition.reason = "Ready", "", ""
    condition.lastTransitionTime.SetInParent()  # a zero metav1.Time without omitzero: null
    assert catalog.to_json(message) == {
        "metadata": {"name": "demo"},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "", "lastTransitionTime": None}]},
    }


def test_unknown_fields_do_not_encode(catalog: Catalog) -> None:
    """An object that does not fit its message cannot be encoded (the server answers JSON)."""
    with pytest.raises(protobuf.ProtobufError, match=r"unknown field spec\.bogus"):
        catalog.encode_object({"apiVersion": "v1", "kind": "Namespace", "spec": {"bogus": 1}})
    too_big = {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 2**40}]}}
    with pytest.raises(protobuf.ProtobufError, match="does not fit"):
        catalog.encode_object(too_big)
    cr = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert protobuf.encode_body(cr) is None


@pytest.mark.parametrize(
    ("text", "nanoseconds", "canonical"),
    [
        ("0", 0, "0s"),
        ("1h30m", 5400 * 10**9, "1h30m0s"),
        ("1.5s", 1_500_000_000, "1.5s"),
        ("-2m3.25s", -123_250_000_000, "-2m3.25s"),
        ("1500us", 1_500_000, "1.5ms"),
        ("2µs", 2000, "2µs"),
        ("7ns", 7, "7ns"),
    ],
)
def test_go_durations(text: str, nanoseconds: int, canonical: str) -> None:
    """metav1.Duration's JSON is Go's duration text: parsed and printed as Go does."""
    assert parse_go_duration(text) == nanoseconds
    assert go_duration(nanoseconds) == canonical
