"""Table tests of the AutoOps agent's config, Deployment and pod-rolling hash
(stackflow.stack.policies.autoops_agent), as ECK builds them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from stackflow.stack.policies.autoops_agent import (
    DEFAULT_RESOURCES,
    agent_config,
    agent_deployment,
    deployment_config_hash,
    merge_configs,
    render_config,
)

DEFAULT_PERIODS = ["10s", "24h"]


def _modules(config: dict[str, Any]) -> list[dict[str, Any]]:
    modules: list[dict[str, Any]] = config["receivers"]["metricbeatreceiver"]["metricbeat"][
        "modules"
    ]
    return modules


@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        # later maps win key by key
        (({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}), {"a": {"b": 3, "c": 2}}),
        # lists are appended, not replaced
        (({"l": [1]}, {"l": [2]}), {"l": [1, 2]}),
        # dotted keys are paths
        (({"a": {"b": 1}}, {"a.c": 2}), {"a": {"b": 1, "c": 2}}),
        (({"a": 1}, None, {}), {"a": 1}),
    ],
)
def test_merge_configs(layers: tuple[dict[str, Any] | None, ...], expected: dict[str, Any]) -> None:
    assert merge_configs(*layers) == expected


def test_default_config_under_tls() -> None:
    config = agent_config(None, None, tls=True, es_namespace="prod", es_name="a")
    modules = _modules(config)
    assert [module["period"] for module in modules] == DEFAULT_PERIODS
    for module in modules:
        assert module["hosts"] == "${env:AUTOOPS_ES_URL}"
        assert module["ssl"] == {
            "verification_mode": "certificate",
            "certificate_authorities": ["/mnt/elastic-internal/es-ca/prod-a/ca.crt"],
        }
    assert config["exporters"]["otlphttp"]["endpoint"] == "${env:AUTOOPS_OTEL_URL}"
    assert config["exporters"]["otlphttp"]["sending_queue"]["queue_size"] == 52428800
    assert config["service"]["extensions"] == ["healthcheckv2"]
    assert config["extensions"]["healthcheckv2"]["http"]["endpoint"] == "0.0.0.0:13133"
    assert yaml.safe_load(render_config(config)) == config


def test_user_config_layers() -> None:
    user = {
        "exporters": {"otlphttp": {"sending_queue": {"queue_size": 10}, "endpoint": "mine"}},
        # a non-autoops_es module keeps the defaults, appended after it
        "receivers": {"metricbeatreceiver": {"metricbeat": {"modules": [{"module": "system"}]}}},
    }
    config = agent_config(user, None, tls=False, es_namespace="prod", es_name="a")
    otlp = config["exporters"]["otlphttp"]
    assert otlp["sending_queue"]["queue_size"] == 10  # the baseline is the user's to tune
    assert otlp["endpoint"] == "${env:AUTOOPS_OTEL_URL}"  # the mandatory part wins
    modules = _modules(config)
    assert [module["module"] for module in modules] == ["system", "autoops_es", "autoops_es"]
    assert "ssl" not in modules[0]
    assert modules[1]["ssl"] == {"verification_mode": "none"}


def test_user_autoops_module_replaces_the_defaults() -> None:
    from_ref = {
        "receivers": {
            "metricbeatreceiver": {
                "metricbeat": {"modules": [{"module": "autoops_es", "period": "1m"}]}
            }
        }
    }
    config = agent_config({}, from_ref, tls=False, es_namespace="prod", es_name="a")
    assert [module["period"] for module in _modules(config)] == ["1m"]


def test_config_hash_follows_the_config_the_connection_and_the_key() -> None:
    ref = {"autoops-token": b"t", "autoops-otel-url": b"u", "cloud-connected-mode-api-key": b"k"}
    first = deployment_config_hash("cfg", ref, b"key")
    assert first.isdigit()
    assert first == deployment_config_hash("cfg", dict(ref), b"key")
    assert first != deployment_config_hash("cfg2", ref, b"key")
    assert first != deployment_config_hash("cfg", {**ref, "autoops-token": b"t2"}, b"key")
    assert first != deployment_config_hash("cfg", ref, b"key2")
    # keys the hash does not read do not roll the pods
    assert first == deployment_config_hash("cfg", {**ref, "unrelated": b"x"}, b"key")


POLICY: dict[str, Any] = {
    "metadata": {"namespace": "ops", "name": "p", "uid": "u"},
    "spec": {"version": "9.2.1", "autoOpsRef": {"secretName": "conn"}},
}


def _deployment(policy: dict[str, Any], *, ca: bool = True) -> dict[str, Any]:
    return agent_deployment(
        policy,
        name="p-autoops-deploy-h",
        labels={"l": "v"},
        selector={"l": "v"},
        config_map="p-autoops-config-h",
        api_key_secret="p-autoops-apikey-h",
        ca_secret="p-autoops-ca-h" if ca else None,
        es_namespace="prod",
        es_name="a",
        es_url="https://a-es-internal-http.prod.svc:9200",
        config_hash="123",
        annotation="autoops.k8s.elastic.co/config-hash",
        owner_reference={"kind": "AutoOpsAgentPolicy", "name": "p"},
    )


def test_deployment() -> None:
    deployment = _deployment(POLICY)
    template = deployment["spec"]["template"]
    container = template["spec"]["containers"][0]
    assert container["image"] == "docker.elastic.co/elastic-agent/elastic-otel-collector:9.2.1"
    assert container["args"] == ["--config", "/mnt/config/autoops_es.yml"]
    assert container["resources"] == DEFAULT_RESOURCES
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/health/status",
        "port": 13133,
        "scheme": "HTTP",
    }
    assert container["ports"] == [{"name": "http", "containerPort": 13133, "protocol": "TCP"}]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    env = {item["name"]: item for item in container["env"]}
    assert env["AUTOOPS_ES_URL"]["value"] == "https://a-es-internal-http.prod.svc:9200"
    assert env["AUTOOPS_ES_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "p-autoops-apikey-h",
        "key": "api_key",
        "optional": False,
    }
    assert env["AUTOOPS_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "conn"
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]} == {
        "config-volume": "/mnt/config",
        "es-ca-a-prod": "/mnt/elastic-internal/es-ca/prod-a",
    }
    assert template["metadata"]["annotations"] == {"autoops.k8s.elastic.co/config-hash": "123"}
    assert deployment["metadata"]["annotations"] == {"autoops.k8s.elastic.co/config-hash": "123"}
    no_ca = _deployment(POLICY, ca=False)["spec"]["template"]["spec"]["volumes"]
    assert [volume["name"] for volume in no_ca] == ["config-volume"]


@pytest.mark.parametrize(
    ("template_resources", "shorthand", "expected"),
    [
        (None, None, DEFAULT_RESOURCES),
        # the pod template's own resources replace the defaults
        ({"limits": {"memory": "1Gi"}}, None, {"limits": {"memory": "1Gi"}}),
        # the shorthand overrides cpu and memory over the template's
        (
            {"requests": {"memory": "1Gi", "ephemeral-storage": "1Gi"}},
            {"requests": {"memory": "2Gi"}},
            {"requests": {"memory": "2Gi", "ephemeral-storage": "1Gi"}},
        ),
        ({}, {"limits": {"cpu": "1"}}, {"limits": {"cpu": "1"}}),
    ],
)
def test_resources(
    template_resources: dict[str, Any] | None,
    shorthand: dict[str, Any] | None,
    expected: dict[str, Any],
) -> None:
    spec: dict[str, Any] = dict(POLICY["spec"])
    if template_resources is not None:
        spec["podTemplate"] = {
            "spec": {"containers": [{"name": "autoops-agent", "resources": template_resources}]}
        }
    if shorthand is not None:
        spec["resources"] = shorthand
    container = _deployment({**POLICY, "spec": spec})["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == expected


def test_pod_template_is_merged() -> None:
    spec = {
        **POLICY["spec"],
        "podTemplate": {
            "metadata": {"labels": {"team": "ops"}, "annotations": {"a": "b"}},
            "spec": {
                "nodeSelector": {"disk": "ssd"},
                "containers": [
                    {"name": "autoops-agent", "env": [{"name": "EXTRA", "value": "1"}]},
                    {"name": "sidecar", "image": "busybox"},
                ],
            },
        },
    }
    template = _deployment({**POLICY, "spec": spec})["spec"]["template"]
    assert template["metadata"]["labels"] == {"team": "ops", "l": "v"}
    assert template["metadata"]["annotations"]["a"] == "b"
    assert template["spec"]["nodeSelector"] == {"disk": "ssd"}
    names = [container["name"] for container in template["spec"]["containers"]]
    assert names == ["autoops-agent", "sidecar"]
    env = [item["name"] for item in template["spec"]["containers"][0]["env"]]
    assert "EXTRA" in env
    assert "AUTOOPS_TOKEN" in env
