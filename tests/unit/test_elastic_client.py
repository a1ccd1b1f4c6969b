"""The aiohttp Elasticsearch client against the fake Elasticsearch server (TLS, auth, errors)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from stackflow.elastic import (
    AiohttpElasticsearchClient,
    ElasticsearchError,
    ElasticsearchUnavailable,
)
from stackflow.stack.certificates import (
    CertificateSettings,
    KeyPair,
    LeafRequest,
    create_ca,
    issue_leaf,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch

NOW = datetime.now(UTC)
SETTINGS = CertificateSettings()
PASSWORD = "s3cret"


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return create_ca(
        common_name="test-http", organizational_unit="test", now=NOW, settings=SETTINGS
    )


@pytest.fixture(scope="module")
def server_cert(ca: KeyPair) -> KeyPair:
    request = LeafRequest(common_name="fake", dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    return issue_leaf(ca=ca, request=request, now=NOW, settings=SETTINGS)


@pytest.fixture
async def fake(server_cert: KeyPair) -> AsyncIterator[FakeElasticsearch]:
    async with FakeElasticsearch(
        password=PASSWORD, cert_pem=server_cert.cert_pem, key_pem=server_cert.key_pem
    ) as server:
        yield server


@pytest.fixture
async def client(fake: FakeElasticsearch, ca: KeyPair) -> AsyncIterator[AiohttpElasticsearchClient]:
    async with AiohttpElasticsearchClient(
        url=fake.url, username="elastic", password=PASSWORD, ca_pem=ca.cert_pem
    ) as es_client:
        yield es_client


@pytest.mark.parametrize("health", ["green", "yellow", "red"])
async def test_cluster_health(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient, health: str
) -> None:
    fake.state.health = health

    answer = await client.cluster_health()

    assert answer.status == health
    assert answer.number_of_nodes == 3


async def test_license_calls(fake: FakeElasticsearch, client: AiohttpElasticsearchClient) -> None:
    assert (await client.get_license())["type"] == "basic"

    started = await client.start_trial()

    assert started["trial_was_started"] is True
    assert (await client.get_license())["type"] == "trial"

    await client.put_license({"uid": "u-1", "type": "platinum", "signature": "sig"})

    assert (await client.get_license())["uid"] == "u-1"
    put = fake.calls_to("PUT", "/_license")
    assert put[0].body == {"licenses": [{"uid": "u-1", "type": "platinum", "signature": "sig"}]}
    assert put[0].query == {"acknowledge": "true"}


async def test_api_key_create_and_invalidate(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    key = await client.create_api_key(
        name="autoops", role_descriptors={"r": {"cluster": ["monitor"]}}, metadata={"m": 1}
    )

    assert key.name == "autoops"
    assert fake.calls_to("POST", "/_security/api_key")[0].body == {
        "name": "autoops",
        "role_descriptors": {"r": {"cluster": ["monitor"]}},
        "metadata": {"m": 1},
    }
    assert await client.invalidate_api_key(ids=[key.id]) == 1
    assert await client.invalidate_api_key(ids=[key.id]) == 0


@pytest.mark.parametrize(("version", "expected"), [(None, None), (7, 7)])
async def test_file_settings_state(
    fake: FakeElasticsearch,
    client: AiohttpElasticsearchClient,
    version: int | None,
    expected: int | None,
) -> None:
    fake.state.file_settings_version = version

    state = await client.file_settings_state()

    assert state.version == expected


async def test_unavailable_cluster_raises_unavailable(
    fake: FakeElasticsearch, client: AiohttpElasticsearchClient
) -> None:
    fake.state.unavailable = True

    with pytest.raises(ElasticsearchUnavailable):
        await client.cluster_health()


async def test_wrong_password_raises_error_with_status(
    fake: FakeElasticsearch, ca: KeyPair
) -> None:
    async with AiohttpElasticsearchClient(
        url=fake.url, username="elastic", password="wrong", ca_pem=ca.cert_pem
    ) as es_client:
        with pytest.raises(ElasticsearchError) as raised:
            await es_client.cluster_health()

    assert raised.value.status == 401


async def test_untrusted_server_certificate_is_unavailable(fake: FakeElasticsearch) -> None:
    other_ca = create_ca(common_name="other", organizational_unit="x", now=NOW, settings=SETTINGS)

    async with AiohttpElasticsearchClient(
        url=fake.url, username="elastic", password=PASSWORD, ca_pem=other_ca.cert_pem
    ) as es_client:
        with pytest.raises(ElasticsearchUnavailable):
            await es_client.cluster_health()

    assert fake.calls == []


async def test_connection_refused_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with AiohttpElasticsearchClient(
        url=f"http://127.0.0.1:{port}", username="elastic", password=PASSWORD
    ) as es_client:
        with pytest.raises(ElasticsearchUnavailable):
            await es_client.cluster_health()


async def test_plain_http_server() -> None:
    async with (
        FakeElasticsearch(password=PASSWORD) as server,
        AiohttpElasticsearchClient(
            url=server.url, username="elastic", password=PASSWORD
        ) as es_client,
    ):
        assert (await es_client.cluster_health()).status == "green"
        assert [(c.method, c.path) for c in server.calls] == [("GET", "/_cluster/health")]


async def test_autoscaling_policies_and_capacity(
    client: AiohttpElasticsearchClient, fake: FakeElasticsearch
) -> None:
    # Nothing to delete yet: Elasticsearch's 404 for the wildcard is not an error.
    await client.delete_autoscaling_policies()
    await client.put_autoscaling_policy("data", {"roles": ["data"], "deciders": {}})
    await client.put_autoscaling_policy("ml", {"roles": ["ml"], "deciders": {}})
    required = {"node": {"memory": 2**31}, "total": {"memory": 2**33}}
    fake.state.autoscaling_capacity["data"] = {"required_capacity": required}

    answer = await client.autoscaling_capacity()

    assert answer["policies"]["data"]["required_capacity"] == required
    assert answer["policies"]["ml"]["required_capacity"] == {"node": {}, "total": {}}
    await client.delete_autoscaling_policies()
    assert fake.state.autoscaling_policies == {}
    assert [call.path for call in fake.calls if call.method == "DELETE"] == [
        "/_autoscaling/policy/*",
        "/_autoscaling/policy/*",
    ]
