"""``elasticsearch-dial``: the key, where a cluster is dialled (pure tables), the factory, and the
client trying its addresses in turn."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from stackflow.config import ConfigError, ElasticsearchDial, describe_effective, load_config
from stackflow.elastic import (
    AiohttpElasticsearchClient,
    ElasticsearchError,
    ElasticsearchUnavailable,
    NotDialledElasticsearch,
)
from stackflow.elastic.factory import (
    ElasticsearchEndpoint,
    aiohttp_elasticsearch,
    dials_ready_addresses,
    elasticsearch_factory,
    out_of_cluster_elasticsearch,
    ready_address_elasticsearch,
)
from stackflow.stack.elasticsearch.dial import DialPlan, dial_plan, pod_selector
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL
from tests.fakes.fake_elasticsearch import FakeElasticsearch

HOST = "quickstart-es-internal-http.demo.svc"
ENDPOINT = ElasticsearchEndpoint(
    namespace="demo",
    name="quickstart",
    url=f"https://{HOST}:9200",
    username="elastic-internal",
    password="not-a-secret",
)
HTTPS_PORT = {"name": "https", "port": 9200, "protocol": "TCP", "targetPort": 9200}
SELECTOR = {ES_CLUSTER_NAME_LABEL: "quickstart"}


def service(**spec: Any) -> dict[str, Any]:
    """The internal HTTP Service as ECK's builder writes it (and the API server defaults it),
    with ``spec`` overriding."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "quickstart-es-internal-http", "namespace": "demo"},
        "spec": {
            "type": "ClusterIP",
            "selector": dict(SELECTOR),
            "publishNotReadyAddresses": False,
            "ports": [dict(HTTPS_PORT)],
            "clusterIP": "10.96.0.12",
            "ipFamilies": ["IPv4"],
            **spec,
        },
    }


def pod(
    *ips: str,
    ready: bool | None = True,
    phase: str = "Running",
    deleting: bool = False,
    labels: dict[str, str] | None = None,
    namespace: str = "demo",
    ports: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    pod_ip_only: bool = False,
) -> dict[str, Any]:
    """A Pod of the cluster at ``ips`` (none: no address yet); ``ready`` None: no condition."""
    metadata: dict[str, Any] = {
        "name": f"quickstart-es-default-{'-'.join(ips) or 'x'}",
        "namespace": namespace,
        "labels": dict(SELECTOR) if labels is None else labels,
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    if ips:
        status["podIP"] = ips[0]
        if not pod_ip_only:
            status["podIPs"] = [{"ip": ip} for ip in ips]
    container = {
        "name": "elasticsearch",
        "ports": [{"name": "https", "containerPort": 9200, "protocol": "TCP"}]
        if ports is None
        else ports,
    }
    spec: dict[str, Any] = {"containers": [container]}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def https(*hosts: str, port: int = 9200) -> tuple[str, ...]:
    """The URLs of ``hosts`` (IPv6 ones bracketed) at ``port``."""
    return tuple(f"https://{f'[{h}]' if ':' in h else h}:{port}" for h in hosts)


NAMED_TARGET = {**HTTPS_PORT, "targetPort": "https"}
#: (Service, Pods, scheme, URLs).
CASES: dict[str, tuple[dict[str, Any] | None, list[dict[str, Any]], str, tuple[str, ...]]] = {
    "no-service": (None, [pod("127.1.0.2")], "https", ()),
    "no-pod": (service(), [], "https", ()),
    "one-ready": (service(), [pod("127.1.0.2")], "https", https("127.1.0.2")),
    "not-ready": (service(), [pod("127.1.0.2", ready=False)], "https", ()),
    "no-ready-condition": (service(), [pod("127.1.0.2", ready=None)], "https", ()),
    "terminating": (service(), [pod("127.1.0.2", deleting=True)], "https", ()),
    "no-ip-yet": (service(), [pod()], "https", ()),
    "pod-ip-without-pod-ips": (
        service(),
        [pod("127.1.0.2", pod_ip_only=True)],
        "https",
        https("127.1.0.2"),
    ),
    "unparsable-ip": (service(), [pod("not-an-ip")], "https", ()),
    "finished": (
        service(),
        [pod("127.1.0.2", phase="Succeeded"), pod("127.1.0.3", phase="Failed")],
        "https",
        (),
    ),
    "publish-not-ready-addresses": (
        service(publishNotReadyAddresses=True),
        [
            pod("127.1.0.2", ready=False),
            pod("127.1.0.3", ready=None),
            pod("127.1.0.4", deleting=True),
            pod("127.1.0.5", phase="Failed"),
            pod(),
        ],
        "https",
        https("127.1.0.2", "127.1.0.3", "127.1.0.4"),
    ),
    "not-selected": (
        service(),
        [pod("127.1.0.2", labels={}), pod("127.1.0.3", labels={**SELECTOR, "extra": "x"})],
        "https",
        https("127.1.0.3"),
    ),
    "another-namespace": (service(), [pod("127.1.0.2", namespace="other")], "https", ()),
    "no-selector": (service(selector=None), [pod("127.1.0.2")], "https", ()),
    "empty-selector": (service(selector={}), [pod("127.1.0.2")], "https", ()),
    "external-name": (service(type="ExternalName"), [pod("127.1.0.2")], "https", ()),
    "numbered-target-port": (
        service(ports=[{**HTTPS_PORT, "targetPort": 19200}]),
        [pod("127.1.0.2")],
        "https",
        https("127.1.0.2", port=19200),
    ),
    "target-port-unset-is-the-port": (
        service(ports=[{"name": "https", "port": 9200}]),
        [pod("127.1.0.2")],
        "https",
        https("127.1.0.2"),
    ),
    "named-target-port": (
        service(ports=[NAMED_TARGET]),
        [pod("127.1.0.2", ports=[{"name": "https", "containerPort": 19200}])],
        "https",
        https("127.1.0.2", port=19200),
    ),
    "named-target-port-of-a-sidecar": (
        service(ports=[NAMED_TARGET]),
        [
            pod(
                "127.1.0.2",
                ports=[],
                init_containers=[
                    {
                        "name": "proxy",
                        "restartPolicy": "Always",
                        "ports": [{"name": "https", "containerPort": 19201}],
                    },
                    {"name": "setup", "ports": [{"name": "https", "containerPort": 1}]},
                ],
            )
        ],
        "https",
        https("127.1.0.2", port=19201),
    ),
    "named-target-port-missing": (
        service(ports=[NAMED_TARGET]),
        [
            pod("127.1.0.2", ports=[{"name": "transport", "containerPort": 9300}]),
            pod("127.1.0.3", ports=[{"name": "https", "containerPort": 9200, "protocol": "UDP"}]),
            pod("127.1.0.4"),
        ],
        "https",
        https("127.1.0.4"),
    ),
    "port-named-after-the-scheme": (
        service(ports=[{"name": "metrics", "port": 9100}, {**HTTPS_PORT, "targetPort": 19200}]),
        [pod("127.1.0.2")],
        "https",
        https("127.1.0.2", port=19200),
    ),
    "the-only-port": (
        service(ports=[{"port": 9200, "targetPort": 19200}]),
        [pod("127.1.0.2")],
        "https",
        https("127.1.0.2", port=19200),
    ),
    "no-port-to-choose": (
        service(ports=[{"name": "a", "port": 1}, {"name": "b", "port": 2}]),
        [pod("127.1.0.2")],
        "https",
        (),
    ),
    "no-port": (service(ports=[]), [pod("127.1.0.2")], "https", ()),
    "plain-http": (
        service(ports=[{"name": "http", "port": 9200, "targetPort": 9200}]),
        [pod("127.1.0.2")],
        "http",
        ("http://127.1.0.2:9200",),
    ),
    # Numeric order, whatever the Pods' order: every call tries them the same way.
    "deduplicated-in-address-order": (
        service(),
        [pod("127.1.0.10"), pod("127.1.0.9", ready=False), pod("127.1.0.3"), pod("127.1.0.10")],
        "https",
        https("127.1.0.3", "127.1.0.10"),
    ),
    "ipv6": (
        service(ipFamilies=["IPv6"], clusterIP="fd00:10:96::c"),
        [pod("fd00::5")],
        "https",
        https("fd00::5"),
    ),
    "dual-stack-ipv4-before-ipv6": (
        service(ipFamilies=["IPv6", "IPv4"]),
        [pod("fd00::5", "10.244.0.7"), pod("10.244.0.3", "fd00::3")],
        "https",
        https("10.244.0.3", "10.244.0.7", "fd00::3", "fd00::5"),
    ),
    "only-the-service-families": (
        service(),
        [pod("fd00::5"), pod("10.244.0.7", "fd00::7")],
        "https",
        https("10.244.0.7"),
    ),
    "no-families-the-cluster-ip-family": (
        service(ipFamilies=None),
        [pod("fd00::5"), pod("10.244.0.7")],
        "https",
        https("10.244.0.7"),
    ),
    "no-families-headless-both": (
        service(ipFamilies=None, clusterIP="None"),
        [pod("fd00::5"), pod("10.244.0.7")],
        "https",
        https("10.244.0.7", "fd00::5"),
    ),
}


@pytest.mark.parametrize(
    ("service_", "pods", "scheme", "urls"), list(CASES.values()), ids=list(CASES)
)
def test_dial_plan(
    service_: dict[str, Any] | None,
    pods: list[dict[str, Any]],
    scheme: str,
    urls: tuple[str, ...],
) -> None:
    plan = dial_plan(
        namespace="demo", name="quickstart", scheme=scheme, service=service_, pods=pods
    )
    assert plan == DialPlan(urls=urls, server_hostname=HOST)


@pytest.mark.parametrize(
    ("service_", "selector"),
    [
        (None, None),
        (service(), SELECTOR),
        (service(selector=None), None),
        (service(selector={}), None),
        (service(type="ExternalName"), None),
        (service(selector={"a": "1", "b": ""}), {"a": "1", "b": ""}),
    ],
    ids=["no-service", "the-cluster", "no-selector", "empty", "external-name", "as-given"],
)
def test_pod_selector(service_: dict[str, Any] | None, selector: dict[str, str] | None) -> None:
    assert pod_selector(service_) == selector


# --------------------------------------------------------------------------- the key


@pytest.mark.parametrize(
    ("environ", "mode"),
    [
        ({}, ElasticsearchDial.SERVICE),
        ({"STACKFLOW_ELASTICSEARCH_DIAL": ""}, ElasticsearchDial.SERVICE),
        ({"STACKFLOW_ELASTICSEARCH_DIAL": "service"}, ElasticsearchDial.SERVICE),
        ({"STACKFLOW_ELASTICSEARCH_DIAL": "endpoints"}, ElasticsearchDial.ENDPOINTS),
        (
            {
                "STACKFLOW_ELASTICSEARCH_DIAL": "endpoints",
                "STACKFLOW_IN_CLUSTER_NETWORKING": "true",
            },
            ElasticsearchDial.ENDPOINTS,
        ),
    ],
)
def test_the_key_and_its_default(environ: dict[str, str], mode: ElasticsearchDial) -> None:
    config = load_config(None, environ)
    assert config.elasticsearch_dial is mode
    assert f"elasticsearch-dial: {mode.value}" in describe_effective(config)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"STACKFLOW_ELASTICSEARCH_DIAL": "pods"},
            'elasticsearch-dial: must be service or endpoints, got "pods" '
            "(from STACKFLOW_ELASTICSEARCH_DIAL)",
        ),
        (
            {
                "STACKFLOW_ELASTICSEARCH_DIAL": "endpoints",
                "STACKFLOW_IN_CLUSTER_NETWORKING": "false",
            },
            '"elasticsearch-dial: endpoints" dials the clusters\' Pods and '
            '"in-cluster-networking: false" dials no cluster: unset one of them',
        ),
    ],
)
def test_a_bad_dial_setting_is_one_line(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(None, environ)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("environ", "pod", "factory"),
    [
        ({}, False, out_of_cluster_elasticsearch),
        ({}, True, aiohttp_elasticsearch),
        ({"STACKFLOW_ELASTICSEARCH_DIAL": "endpoints"}, False, ready_address_elasticsearch),
        ({"STACKFLOW_ELASTICSEARCH_DIAL": "endpoints"}, True, ready_address_elasticsearch),
        (
            {
                "STACKFLOW_ELASTICSEARCH_DIAL": "endpoints",
                "STACKFLOW_IN_CLUSTER_NETWORKING": "true",
            },
            False,
            ready_address_elasticsearch,
        ),
    ],
)
def test_the_factory_of_each_mode(environ: dict[str, str], pod: bool, factory: object) -> None:
    config = load_config(None, environ)
    in_a_pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"} if pod else {}
    assert elasticsearch_factory(config, in_a_pod) is factory
    assert dials_ready_addresses(config) is (factory is ready_address_elasticsearch)


def test_elasticsearch_url_keeps_precedence_over_endpoints() -> None:
    config = load_config(
        None,
        {"STACKFLOW_ELASTICSEARCH_DIAL": "endpoints", "STACKFLOW_ELASTICSEARCH_URL": "http://x:1"},
    )
    assert not dials_ready_addresses(config)
    factory = elasticsearch_factory(config, {})
    assert factory not in (ready_address_elasticsearch, aiohttp_elasticsearch)
    assert isinstance(factory(ENDPOINT), AiohttpElasticsearchClient)


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        (None, "the ready addresses of Service demo/quickstart-es-internal-http were not read"),
        (
            DialPlan(urls=(), server_hostname=HOST),
            "Service demo/quickstart-es-internal-http has no ready address",
        ),
    ],
)
async def test_no_ready_address_is_not_reachable_at_once(
    plan: DialPlan | None, reason: str
) -> None:
    api = ready_address_elasticsearch(dataclasses.replace(ENDPOINT, dial=plan))
    assert isinstance(api, NotDialledElasticsearch)
    with pytest.raises(ElasticsearchUnavailable, match=reason):
        await api.cluster_health()


def test_ready_addresses_are_dialled_with_the_service_name() -> None:
    plan = DialPlan(urls=("https://127.0.0.2:9200", "https://127.0.0.3:9200"), server_hostname=HOST)
    api = ready_address_elasticsearch(dataclasses.replace(ENDPOINT, dial=plan, ca_pem=None))
    assert isinstance(api, AiohttpElasticsearchClient)
    assert (api._urls, api._server_hostname) == (plan.urls, HOST)


# --------------------------------------------------------------------------- the client


async def test_the_client_moves_on_when_an_address_refuses_and_stays_where_it_answered() -> None:
    async with FakeElasticsearch(username="u", password="p") as fake:
        # The fake holds this port on 127.0.0.1 only: nothing can listen on it on 127.0.0.2.
        refused = f"http://127.0.0.2:{fake.port}"
        async with AiohttpElasticsearchClient(
            url=refused, alternate_urls=(fake.url,), username="u", password="p"
        ) as api:
            assert (await api.cluster_health()).status == "green"
            assert api._preferred == 1
            assert (await api.get_license())["type"] == "basic"
    assert [call.path for call in fake.calls] == ["/_cluster/health", "/_license"]


async def test_every_address_refusing_is_unavailable_naming_each() -> None:
    async with FakeElasticsearch() as fake:
        port = fake.port
    urls = (f"http://127.0.0.2:{port}", f"http://127.0.0.3:{port}")
    async with AiohttpElasticsearchClient(
        url=urls[0], alternate_urls=urls[1:], username="u", password="p"
    ) as api:
        with pytest.raises(ElasticsearchUnavailable) as raised:
            await api.cluster_health()
    message = str(raised.value)
    assert message.startswith("GET /_cluster/health: ")
    assert all(f"{url}: ClientConnectorError" in message for url in urls), message


async def test_an_error_answer_is_not_retried_elsewhere() -> None:
    async with (
        FakeElasticsearch(username="u", password="right") as first,
        FakeElasticsearch(username="u", password="right") as second,
        AiohttpElasticsearchClient(
            url=first.url, alternate_urls=(second.url,), username="u", password="wrong"
        ) as api,
    ):
        with pytest.raises(ElasticsearchError) as raised:
            await api.cluster_health()
    assert raised.value.status == 401
    assert (len(first.calls), len(second.calls)) == (1, 0)
