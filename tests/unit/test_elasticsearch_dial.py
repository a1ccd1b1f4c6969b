"""``elasticsearch-dial``: the key, where a cluster is dialled (pure tables), the factory, and the
client trying its addresses in turn."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from activities.context import (
    ElasticsearchEndpoint,
    aiohttp_elasticsearch,
    dials_ready_addresses,
    elasticsearch_factory,
    out_of_cluster_elasticsearch,
    ready_address_elasticsearch,
)
from stackflow.config import ConfigError, ElasticsearchDial, describe_effective, load_config
from stackflow.elastic import (
    AiohttpElasticsearchClient,
    ElasticsearchError,
    ElasticsearchUnavailable,
    NotDialledElasticsearch,
)
from stackflow.stack.elasticsearch.dial import DialPlan, dial_plan
from tests.fakes.fake_elasticsearch import FakeElasticsearch

HOST = "quickstart-es-internal-http.demo.svc"
ENDPOINT = ElasticsearchEndpoint(
    namespace="demo",
    name="quickstart",
    url=f"https://{HOST}:9200",
    username="elastic-internal",
    password="not-a-secret",
)
HTTPS_PORT = {"name": "https", "port": 9200, "protocol": "TCP"}


def endpoint(address: str, *, ready: bool | None = True, **extra: Any) -> dict[str, Any]:
    """One Pod endpoint of a slice (``ready`` None: the condition left unset)."""
    conditions = {} if ready is None else {"ready": ready, "serving": ready, "terminating": False}
    return {"addresses": [address], "conditions": conditions, **extra}


def endpoint_slice(
    *endpoints: dict[str, Any],
    address_type: str = "IPv4",
    ports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An EndpointSlice of the internal HTTP Service, as the kube-controller-manager writes it."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "quickstart-es-internal-http-x7k2p", "namespace": "demo"},
        "addressType": address_type,
        "endpoints": list(endpoints) or None,
        "ports": [HTTPS_PORT] if ports is None else ports,
    }


PLACEHOLDER = {**endpoint_slice(), "endpoints": None, "ports": None}


@pytest.mark.parametrize(
    ("slices", "scheme", "urls"),
    [
        ([], "https", ()),
        ([PLACEHOLDER], "https", ()),
        ([endpoint_slice(endpoint("127.0.0.2"))], "https", ("https://127.0.0.2:9200",)),
        ([endpoint_slice(endpoint("127.0.0.2", ready=False))], "https", ()),
        ([endpoint_slice(endpoint("127.0.0.2", ready=None))], "https", ("https://127.0.0.2:9200",)),
        (
            # Numeric order, whatever the slices' order: every call tries them the same way.
            [
                endpoint_slice(endpoint("127.0.0.10"), endpoint("127.0.0.9", ready=False)),
                endpoint_slice(endpoint("127.0.0.3"), endpoint("127.0.0.10")),
            ],
            "https",
            ("https://127.0.0.3:9200", "https://127.0.0.10:9200"),
        ),
        (
            [
                endpoint_slice(endpoint("fd00::5"), address_type="IPv6"),
                endpoint_slice(endpoint("10.244.0.7")),
            ],
            "https",
            ("https://10.244.0.7:9200", "https://[fd00::5]:9200"),
        ),
        ([endpoint_slice(endpoint("es-0.example"), address_type="FQDN")], "https", ()),
        ([endpoint_slice(endpoint("not-an-ip"))], "https", ()),
        ([endpoint_slice({"addresses": [], "conditions": {"ready": True}})], "https", ()),
        (
            [
                endpoint_slice(
                    endpoint("127.0.0.2"),
                    ports=[{"name": "metrics", "port": 9100}, {"name": "https", "port": 19200}],
                )
            ],
            "https",
            ("https://127.0.0.2:19200",),
        ),
        (
            [endpoint_slice(endpoint("127.0.0.2"), ports=[{"name": "", "port": 19200}])],
            "https",
            ("https://127.0.0.2:19200",),
        ),
        (
            [
                endpoint_slice(
                    endpoint("127.0.0.2"),
                    ports=[{"name": "a", "port": 1}, {"name": "b", "port": 2}],
                )
            ],
            "https",
            (),
        ),
        (
            [endpoint_slice(endpoint("127.0.0.2"), ports=[])],
            "https",
            (),
        ),
        (
            [{**endpoint_slice(endpoint("127.0.0.2")), "ports": None}],
            "https",
            ("https://127.0.0.2:9200",),
        ),
        (
            [
                endpoint_slice(
                    endpoint("127.0.0.2"), ports=[{"name": "http", "port": 9200, "protocol": "TCP"}]
                )
            ],
            "http",
            ("http://127.0.0.2:9200",),
        ),
    ],
    ids=[
        "no-slice",
        "placeholder",
        "one-ready",
        "not-ready",
        "ready-unset-means-ready",
        "deduplicated-in-address-order",
        "ipv4-before-ipv6",
        "fqdn-ignored",
        "unparsable-address",
        "no-address",
        "port-named-after-the-scheme",
        "the-only-port",
        "no-port-to-choose",
        "no-port",
        "every-port",
        "plain-http",
    ],
)
def test_dial_plan(slices: list[dict[str, Any]], scheme: str, urls: tuple[str, ...]) -> None:
    plan = dial_plan(namespace="demo", name="quickstart", scheme=scheme, slices=slices)
    assert plan == DialPlan(urls=urls, server_hostname=HOST)


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
