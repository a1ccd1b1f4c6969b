"""Outside a Pod the operator looks up and dials no in-cluster Service name."""

from __future__ import annotations

import dataclasses
import re

import pytest

from stackflow.config import ConfigError, load_config
from stackflow.elastic import AiohttpElasticsearchClient, ElasticsearchUnavailable
from stackflow.elastic.factory import (
    ElasticsearchEndpoint,
    aiohttp_elasticsearch,
    elasticsearch_factory,
    out_of_cluster_elasticsearch,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch

IN_A_POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
ENDPOINT = ElasticsearchEndpoint(
    namespace="demo",
    name="quickstart",
    url="https://quickstart-es-internal-http.demo.svc:9200",
    username="elastic-internal",
    password="not-a-secret",
)


@pytest.mark.parametrize(
    ("setting", "environ", "dials"),
    [
        (None, {}, False),  # a laptop or CI: the names resolve nowhere
        (None, IN_A_POD, True),
        (True, {}, True),  # e.g. a VPN into the cluster's DNS
        (False, IN_A_POD, False),
    ],
)
def test_the_factory_follows_the_setting_and_else_where_the_operator_runs(
    setting: bool | None, environ: dict[str, str], dials: bool
) -> None:
    config = load_config(
        None, {} if setting is None else {"STACKFLOW_IN_CLUSTER_NETWORKING": str(setting).lower()}
    )
    factory = elasticsearch_factory(config, environ)
    assert factory is (aiohttp_elasticsearch if dials else out_of_cluster_elasticsearch)
    assert isinstance(factory(ENDPOINT), AiohttpElasticsearchClient) is dials


async def test_every_call_outside_the_cluster_is_unavailable_at_once_naming_the_address() -> None:
    api = out_of_cluster_elasticsearch(ENDPOINT)
    calls = [
        api.cluster_health(),
        api.get_license(),
        api.start_trial(),
        api.put_license({}),
        api.create_api_key(name="k", role_descriptors={}),
        api.invalidate_api_key(ids=["a"]),
        api.file_settings_state(),
    ]
    for call in calls:
        with pytest.raises(ElasticsearchUnavailable, match=re.escape(ENDPOINT.url)):
            await call


async def test_elasticsearch_url_reaches_every_cluster_there_with_its_own_credentials() -> None:
    async with FakeElasticsearch(username=ENDPOINT.username, password=ENDPOINT.password) as fake:
        config = load_config(
            None,
            {"STACKFLOW_ELASTICSEARCH_URL": fake.url, "STACKFLOW_IN_CLUSTER_NETWORKING": "false"},
        )
        with_ca = dataclasses.replace(ENDPOINT, ca_pem=b"the cluster's CA")
        async with elasticsearch_factory(config, {})(with_ca) as api:  # type: ignore[attr-defined]
            health = await api.cluster_health()
    assert health.status == "green"
    assert [call.path for call in fake.calls] == ["/_cluster/health"]


def test_a_malformed_elasticsearch_url_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="elasticsearch-url"):
        load_config(None, {"STACKFLOW_ELASTICSEARCH_URL": "not a url"})
