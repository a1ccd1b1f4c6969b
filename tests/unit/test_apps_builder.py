"""Desired children of the stack applications: names, labels, owners, config, reuse, determinism."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from stackflow.stack.apps import APP_KINDS, desired_children
from stackflow.stack.apps.associations import ref_annotation
from stackflow.stack.apps.workload import image_suffix
from stackflow.stack.policies.stack_config.merge import KibanaMerge
from stackflow.stack.policies.stack_config.secrets import kb_policy_config_secret

NOW = datetime(2026, 8, 1, tzinfo=UTC)
NAMESPACE = "ns"
SOFT_OWNER_LABELS = {
    "eck.k8s.elastic.co/owner-namespace",
    "eck.k8s.elastic.co/owner-name",
    "eck.k8s.elastic.co/owner-kind",
}
ES_CONF = {
    "authSecretName": "app-es-user",
    "authSecretKey": "ns-app-es-user",
    "caCertProvided": True,
    "caSecretName": "app-es-ca",
    "url": "https://es-es-http.ns.svc:9200",
    "version": "8.15.0",
}


def app(
    kind: str, name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """Return an application object as the API server would hold it."""
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": APP_KINDS[kind].api_version,
        "kind": kind,
        "metadata": metadata,
        "spec": {"version": "8.15.0", **spec},
    }


def build(
    obj: dict[str, Any], existing: dict[tuple[str, str], Any] | None = None, **kwargs: Any
) -> list[dict[str, Any]]:
    """Build the children of ``obj``."""
    return desired_children(obj["kind"], obj, existing=existing or {}, now=NOW, **kwargs)


def as_existing(children: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """Index built children as the ``existing`` argument of the next build."""
    return {(child["kind"], child["metadata"]["name"]): child for child in children}


def by_name(children: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Index children by name."""
    return {child["metadata"]["name"]: child for child in children}


def secret_text(secret: dict[str, Any], key: str) -> str:
    """Decode one key of a built Secret."""
    return base64.b64decode(secret["data"][key]).decode()


def config_of(children: list[dict[str, Any]], secret_name: str, file_name: str) -> dict[str, Any]:
    """Return the parsed config file of a built config Secret."""
    parsed: dict[str, Any] = (
        yaml.safe_load(secret_text(by_name(children)[secret_name], file_name)) or {}
    )
    return parsed


def main_container(workload: dict[str, Any]) -> dict[str, Any]:
    """Return the first container of a workload's pod template."""
    container: dict[str, Any] = workload["spec"]["template"]["spec"]["containers"][0]
    return container


def http_certs(prefix: str) -> list[tuple[str, str]]:
    """The three HTTP certificate Secrets of an HTTP-serving kind."""
    return [
        ("Secret", f"{prefix}-http-ca-internal"),
        ("Secret", f"{prefix}-http-certs-internal"),
        ("Secret", f"{prefix}-http-certs-public"),
    ]


CASES: list[tuple[dict[str, Any], str, list[tuple[str, str]]]] = [
    (
        app("Kibana", "kb", {}),
        "kibana.k8s.elastic.co/name",
        [
            ("Service", "kb-kb-http"),
            *http_certs("kb-kb"),
            ("Secret", "kb-kb-config"),
            ("Deployment", "kb-kb"),
        ],
    ),
    (
        app("ApmServer", "apm", {}),
        "apm.k8s.elastic.co/name",
        [
            ("Service", "apm-apm-http"),
            *http_certs("apm-apm"),
            ("Secret", "apm-apm-config"),
            ("Secret", "apm-apm-token"),
            ("Deployment", "apm-apm-server"),
        ],
    ),
    (
        app("EnterpriseSearch", "ent", {}),
        "enterprisesearch.k8s.elastic.co/name",
        [
            ("Service", "ent-ent-http"),
            *http_certs("ent-ent"),
            ("Secret", "ent-ent-config"),
            ("Deployment", "ent-ent"),
        ],
    ),
    (
        app("Beat", "fb", {"type": "filebeat", "daemonSet": {}}),
        "beat.k8s.elastic.co/name",
        [("Secret", "fb-beat-filebeat-config"), ("DaemonSet", "fb-beat-filebeat")],
    ),
    (
        app("Beat", "mb", {"type": "metricbeat", "deployment": {"replicas": 3}}),
        "beat.k8s.elastic.co/name",
        [("Secret", "mb-beat-metricbeat-config"), ("Deployment", "mb-beat-metricbeat")],
    ),
    (
        app("Agent", "ag", {"deployment": {}}),
        "agent.k8s.elastic.co/name",
        [("Secret", "ag-agent-config"), ("Deployment", "ag-agent")],
    ),
    (
        app("Agent", "fs", {"mode": "fleet", "fleetServerEnabled": True, "statefulSet": {}}),
        "agent.k8s.elastic.co/name",
        [
            ("Service", "fs-agent-http"),
            *http_certs("fs-agent"),
            ("Secret", "fs-agent-config"),
            ("Secret", "fs-agent-envvars"),
            ("StatefulSet", "fs-agent"),
        ],
    ),
    (
        app(
            "Logstash",
            "ls",
            {
                "services": [
                    {
                        "name": "beats",
                        "service": {"spec": {"ports": [{"name": "beats", "port": 5044}]}},
                    }
                ]
            },
        ),
        "logstash.k8s.elastic.co/name",
        [
            ("Service", "ls-ls-api"),
            ("Service", "ls-ls-beats"),
            ("Secret", "ls-ls-config"),
            ("Secret", "ls-ls-pipeline"),
            ("StatefulSet", "ls-ls"),
        ],
    ),
    (
        app("ElasticMapsServer", "ems", {}),
        "maps.k8s.elastic.co/name",
        [
            ("Service", "ems-ems-http"),
            *http_certs("ems-ems"),
            ("Secret", "ems-ems-config"),
            ("Deployment", "ems-ems"),
        ],
    ),
    (
        app("PackageRegistry", "epr", {}),
        "packageregistry.k8s.elastic.co/name",
        [
            ("Service", "epr-epr-http"),
            *http_certs("epr-epr"),
            ("Secret", "epr-epr-config"),
            ("Deployment", "epr-epr"),
        ],
    ),
]
CASE_IDS = [f"{obj['kind']}-{obj['metadata']['name']}" for obj, _, _ in CASES]
SOFT_OWNED = {"-http-certs-public", "-apm-token"}


@pytest.mark.parametrize(("obj", "name_label", "expected"), CASES, ids=CASE_IDS)
def test_children_names_labels_and_owners(
    obj: dict[str, Any], name_label: str, expected: list[tuple[str, str]]
) -> None:
    children = build(obj)
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == expected
    type_label = APP_KINDS[obj["kind"]].type_label
    for child in children:
        metadata = child["metadata"]
        assert metadata["namespace"] == NAMESPACE
        assert metadata["labels"]["common.k8s.elastic.co/type"] == type_label
        assert metadata["labels"][name_label] == obj["metadata"]["name"]
        if any(metadata["name"].endswith(suffix) for suffix in SOFT_OWNED):
            assert "ownerReferences" not in metadata
            assert {k: metadata["labels"][k] for k in SOFT_OWNER_LABELS} == {
                "eck.k8s.elastic.co/owner-namespace": NAMESPACE,
                "eck.k8s.elastic.co/owner-name": obj["metadata"]["name"],
                "eck.k8s.elastic.co/owner-kind": obj["kind"],
            }
        else:
            assert metadata["ownerReferences"] == [
                {
                    "apiVersion": obj["apiVersion"],
                    "kind": obj["kind"],
                    "name": obj["metadata"]["name"],
                    "uid": obj["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        if child["kind"] in ("Secret", "Service"):
            assert metadata["labels"]["eck.k8s.elastic.co/watched"] == "true"


@pytest.mark.parametrize(("obj", "name_label", "expected"), CASES, ids=CASE_IDS)
def test_workload_selects_its_pods_and_runs_the_version(
    obj: dict[str, Any], name_label: str, expected: list[tuple[str, str]]
) -> None:
    workload = build(obj)[-1]
    kind = APP_KINDS[obj["kind"]]
    selector = workload["spec"]["selector"]["matchLabels"]
    assert selector == {
        "common.k8s.elastic.co/type": kind.type_label,
        name_label: obj["metadata"]["name"],
    }
    template_labels = workload["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= template_labels.items()
    assert template_labels[kind.version_label] == "8.15.0"
    repository = kind.image_repository.format(type=obj["spec"].get("type", ""))
    suffix = image_suffix(obj["kind"], "8.15.0")
    assert main_container(workload)["image"] == f"{repository}{suffix}:8.15.0"
    assert kind.config_hash_annotation in workload["spec"]["template"]["metadata"]["annotations"]


@pytest.mark.parametrize(("obj", "name_label", "expected"), CASES, ids=CASE_IDS)
def test_rebuild_from_own_output_is_identical(
    obj: dict[str, Any], name_label: str, expected: list[tuple[str, str]]
) -> None:
    first = build(obj)
    assert build(obj, as_existing(first)) == first


@pytest.mark.parametrize(("obj", "name_label", "expected"), CASES, ids=CASE_IDS)
def test_config_change_rolls_the_pods(
    obj: dict[str, Any], name_label: str, expected: list[tuple[str, str]]
) -> None:
    first = build(obj)
    changed = copy.deepcopy(obj)
    changed["spec"]["config"] = {"logging.level": "debug"}
    if obj["kind"] == "Agent" and obj["spec"].get("mode") == "fleet":
        # Fleet agents take no config; their enrollment settings roll the pods instead.
        changed["spec"]["policyID"] = "policy-2"
    second = build(changed, as_existing(first))
    annotation = APP_KINDS[obj["kind"]].config_hash_annotation

    def config_hash(children: list[dict[str, Any]]) -> str:
        value: str = children[-1]["spec"]["template"]["metadata"]["annotations"][annotation]
        return value

    assert config_hash(first) != config_hash(second)
    assert build(changed, as_existing(second)) == second


def test_replicas_default_to_one_and_follow_count() -> None:
    assert build(app("Kibana", "kb", {}))[-1]["spec"]["replicas"] == 1
    assert build(app("Kibana", "kb", {"count": 3}))[-1]["spec"]["replicas"] == 3
    assert (
        build(app("Beat", "mb", {"type": "metricbeat", "deployment": {"replicas": 2}}))[-1]["spec"][
            "replicas"
        ]
        == 2
    )
    assert (
        "replicas"
        not in build(app("Beat", "fb", {"type": "filebeat", "daemonSet": {}}))[-1]["spec"]
    )


def test_custom_image_pod_template_and_resources() -> None:
    obj = app(
        "Kibana",
        "kb",
        {
            "image": "my/kibana:x",
            "resources": {"limits": {"memory": "2Gi"}},
            "podTemplate": {
                "metadata": {"labels": {"team": "a"}},
                "spec": {
                    "containers": [
                        {"name": "kibana", "env": [{"name": "X", "value": "1"}]},
                        {"name": "sidecar", "image": "busybox"},
                    ],
                    "nodeSelector": {"disk": "ssd"},
                },
            },
        },
    )
    workload = build(obj)[-1]
    template = workload["spec"]["template"]
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["spec"]["nodeSelector"] == {"disk": "ssd"}
    containers = template["spec"]["containers"]
    assert [c["name"] for c in containers] == ["kibana", "sidecar"]
    assert containers[0]["image"] == "my/kibana:x"
    assert {"name": "X", "value": "1"} in containers[0]["env"]
    assert containers[0]["resources"] == {"limits": {"memory": "2Gi"}}


def test_tls_disabled_serves_plain_http_without_certificates() -> None:
    obj = app("Kibana", "kb", {"http": {"tls": {"selfSignedCertificate": {"disabled": True}}}})
    children = build(obj)
    assert [c["metadata"]["name"] for c in children] == ["kb-kb-http", "kb-kb-config", "kb-kb"]
    assert children[0]["spec"]["ports"][0]["name"] == "http"
    assert main_container(children[-1])["readinessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert "ssl" not in config_of(children, "kb-kb-config", "kibana.yml")["server"]


def test_http_service_template_is_merged() -> None:
    obj = app(
        "Kibana",
        "kb",
        {
            "http": {
                "service": {
                    "metadata": {"annotations": {"a": "b"}},
                    "spec": {"type": "LoadBalancer"},
                }
            }
        },
    )
    service = build(obj)[0]
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["metadata"]["annotations"] == {"a": "b"}
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 5601, "protocol": "TCP", "targetPort": 5601}
    ]


def test_kibana_reads_the_elasticsearch_association() -> None:
    obj = app("Kibana", "kb", {}, {"association.k8s.elastic.co/es-conf": json.dumps(ES_CONF)})
    children = build(obj)
    config = config_of(children, "kb-kb-config", "kibana.yml")
    assert config["elasticsearch"]["hosts"] == ["https://es-es-http.ns.svc:9200"]
    assert config["elasticsearch"]["username"] == "ns-app-es-user"
    assert config["elasticsearch"]["password"] == "${ELASTICSEARCH_PASSWORD}"
    ca_path = config["elasticsearch"]["ssl"]["certificateAuthorities"][0]
    container = main_container(children[-1])
    assert {
        "name": "ELASTICSEARCH_PASSWORD",
        "valueFrom": {
            "secretKeyRef": {"name": "app-es-user", "key": "ns-app-es-user", "optional": False}
        },
    } in container["env"]
    mount = next(m for m in container["volumeMounts"] if ca_path.startswith(m["mountPath"]))
    volume = next(
        v for v in children[-1]["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
    )
    assert volume["secret"]["secretName"] == "app-es-ca"


def test_association_secret_change_rolls_the_pods() -> None:
    obj = app("Kibana", "kb", {}, {"association.k8s.elastic.co/es-conf": json.dumps(ES_CONF)})
    first = build(obj)
    existing = as_existing(first)
    existing[("Secret", "app-es-user")] = {"data": {"ns-app-es-user": "b2xk"}}
    second = build(obj, existing)
    existing[("Secret", "app-es-user")] = {"data": {"ns-app-es-user": "bmV3"}}
    third = build(obj, existing)
    hashes = [
        c[-1]["spec"]["template"]["metadata"]["annotations"]["kibana.k8s.elastic.co/config-hash"]
        for c in (first, second, third)
    ]
    assert len(set(hashes)) == 3


def test_explicit_association_confs_take_precedence_over_annotations() -> None:
    obj = app("ApmServer", "apm", {})
    children = build(obj, association_confs={"association.k8s.elastic.co/es-conf": ES_CONF})
    config = config_of(children, "apm-apm-config", "apm-server.yml")
    assert config["output"]["elasticsearch"]["hosts"] == ["https://es-es-http.ns.svc:9200"]
    assert config["apm-server"]["secret_token"] == "${SECRET_TOKEN}"


def test_generated_secrets_and_telemetry_are_kept() -> None:
    kibana = app("Kibana", "kb", {})
    first = build(kibana)
    existing = as_existing(first)
    config = copy.deepcopy(existing[("Secret", "kb-kb-config")])
    config["data"]["telemetry.yml"] = base64.b64encode(b"eck: {}\n").decode()
    existing[("Secret", "kb-kb-config")] = config
    second = by_name(build(kibana, existing))
    assert secret_text(second["kb-kb-config"], "telemetry.yml") == "eck: {}\n"
    assert secret_text(second["kb-kb-config"], "kibana.yml") == secret_text(
        by_name(first)["kb-kb-config"], "kibana.yml"
    )
    apm = app("ApmServer", "apm", {})
    tokens = iter(["first-token", "second-token"])
    built = build(apm, random_secret=lambda: next(tokens))
    token = by_name(built)["apm-apm-token"]
    assert secret_text(token, "secret-token") == "first-token"
    rebuilt = by_name(build(apm, as_existing(built), random_secret=lambda: "other"))
    assert rebuilt["apm-apm-token"] == token
    assert rebuilt["apm-apm-http-certs-internal"] == by_name(built)["apm-apm-http-certs-internal"]


def test_user_config_wins_over_operator_defaults() -> None:
    obj = app(
        "Kibana", "kb", {"config": {"server": {"name": "custom"}, "elasticsearch.hosts": ["x"]}}
    )
    config = config_of(build(obj), "kb-kb-config", "kibana.yml")
    assert config["server"]["name"] == "custom"
    assert config["elasticsearch"]["hosts"] == ["x"]


def test_config_ref_is_merged_under_spec_config() -> None:
    obj = app("EnterpriseSearch", "ent", {"configRef": {"secretName": "my-ent-config"}})
    existing = {
        ("Secret", "my-ent-config"): {
            "data": {"enterprise-search.yml": base64.b64encode(b"a: 1\nb: 2\n").decode()}
        }
    }
    config = config_of(build(obj, existing), "ent-ent-config", "enterprise-search.yml")
    assert (config["a"], config["b"]) == (1, 2)


def test_logstash_pipelines_and_es_env() -> None:
    ref = {"name": "prod", "clusterName": "prod-eu"}
    annotation = ref_annotation(target="es", ref=ref, default_namespace=NAMESPACE)
    obj = app(
        "Logstash",
        "ls",
        {
            "elasticsearchRefs": [ref],
            "pipelines": [{"pipeline.id": "main", "config.string": "input {}"}],
        },
        {annotation: json.dumps(ES_CONF)},
    )
    children = by_name(build(obj))
    assert yaml.safe_load(secret_text(children["ls-ls-pipeline"], "pipelines.yml")) == [
        {"pipeline.id": "main", "config.string": "input {}"}
    ]
    env = {e["name"]: e for e in main_container(children["ls-ls"])["env"]}
    assert env["PROD_EU_ES_HOSTS"]["value"] == ES_CONF["url"]
    assert env["PROD_EU_ES_USER"]["value"] == ES_CONF["authSecretKey"]
    assert env["PROD_EU_ES_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "app-es-user"
    assert env["PROD_EU_ES_SSL_CERTIFICATE_AUTHORITY"]["value"].endswith("/ca.crt")
    statefulset = children["ls-ls"]["spec"]
    assert statefulset["serviceName"] == "ls-ls-api"
    assert [t["metadata"]["name"] for t in statefulset["volumeClaimTemplates"]] == ["logstash-data"]
    assert children["ls-ls-api"]["spec"]["ports"][0]["port"] == 9600


def test_standalone_agent_outputs() -> None:
    refs = [
        {"name": "a", "outputName": "default"},
        {"name": "b", "namespace": "other", "outputName": "monitoring"},
    ]
    annotations = {
        ref_annotation(target="es", ref=ref, default_namespace=NAMESPACE): json.dumps(
            {**ES_CONF, "url": f"https://{ref['name']}:9200"}
        )
        for ref in refs
    }
    obj = app("Agent", "ag", {"daemonSet": {}, "elasticsearchRefs": refs}, annotations)
    config = config_of(build(obj), "ag-agent-config", "agent.yml")
    assert config["outputs"]["default"]["hosts"] == ["https://a:9200"]
    assert config["outputs"]["monitoring"]["hosts"] == ["https://b:9200"]
    assert config["outputs"]["monitoring"]["type"] == "elasticsearch"


def test_fleet_server_envvars() -> None:
    ref = {"name": "es"}
    es_conf = {**ES_CONF, "isServiceAccount": True, "authSecretKey": "token"}
    kb_conf = {**ES_CONF, "url": "https://kb-kb-http.ns.svc:5601", "caSecretName": "fs-agent-kb-ca"}
    obj = app(
        "Agent",
        "fs",
        {
            "mode": "fleet",
            "fleetServerEnabled": True,
            "policyID": "p1",
            "deployment": {},
            "elasticsearchRefs": [ref],
        },
        {
            ref_annotation(target="es", ref=ref, default_namespace=NAMESPACE): json.dumps(es_conf),
            "association.k8s.elastic.co/kb-conf": json.dumps(kb_conf),
        },
    )
    children = by_name(build(obj))
    envvars = {
        key: secret_text(children["fs-agent-envvars"], key)
        for key in children["fs-agent-envvars"]["data"]
    }
    assert envvars["FLEET_SERVER_ENABLE"] == "true"
    assert envvars["FLEET_URL"] == "https://fs-agent-http.ns.svc:8220"
    assert envvars["FLEET_SERVER_ELASTICSEARCH_HOST"] == ES_CONF["url"]
    assert envvars["FLEET_SERVER_POLICY_ID"] == "p1"
    assert envvars["KIBANA_FLEET_HOST"] == kb_conf["url"]
    container = main_container(children["fs-agent"])
    assert container["envFrom"] == [{"secretRef": {"name": "fs-agent-envvars"}}]
    assert "FLEET_SERVER_SERVICE_TOKEN" in {e["name"] for e in container["env"]}
    assert children["fs-agent-http"]["spec"]["ports"][0]["port"] == 8220


def test_kind_accepts_short_names() -> None:
    obj = app("Kibana", "kb", {})
    assert [c["metadata"]["name"] for c in desired_children("kb", obj, existing={}, now=NOW)][
        -1
    ] == "kb-kb"


def _kb_policy_config(config: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """``<kb>-kb-policy-config`` as the StackConfigPolicy controller writes it."""
    merged = KibanaMerge(config=config, secure_settings=(), owners=("elastic-system/policy",))
    secret = kb_policy_config_secret(None, namespace=NAMESPACE, kb_name="kb", merged=merged)
    return {("Secret", "kb-kb-policy-config"): secret}


# (spec.config, policy config, setting path, expected value in kibana.yml)
KIBANA_POLICY: list[tuple[dict[str, Any], dict[str, Any], tuple[str, ...], Any]] = [
    ({}, {"xpack.canvas.enabled": False}, ("xpack", "canvas", "enabled"), False),
    ({"logging": {"root": {"level": "info"}}}, {"logging.root.level": "debug"},
     ("logging", "root", "level"), "debug"),  # the policy wins the user, as ECK
    ({"a": "user"}, {"b": "policy"}, ("a",), "user"),  # the user's other settings stay
]  # fmt: skip


@pytest.mark.parametrize(("user", "policy", "path", "expected"), KIBANA_POLICY)
def test_kibana_policy_config_is_merged_last(
    user: dict[str, Any], policy: dict[str, Any], path: tuple[str, ...], expected: Any
) -> None:
    children = build(app("Kibana", "kb", {"config": user}), _kb_policy_config(policy))
    value: Any = config_of(children, "kb-kb-config", "kibana.yml")
    for part in path:
        value = value[part]
    assert value == expected


def test_kibana_policy_config_change_rolls_the_pods() -> None:
    kibana = app("Kibana", "kb", {})
    annotation = APP_KINDS["Kibana"].config_hash_annotation

    def config_hash(children: list[dict[str, Any]]) -> str:
        value: str = children[-1]["spec"]["template"]["metadata"]["annotations"][annotation]
        return value

    hashes = {
        config_hash(build(kibana)),
        config_hash(build(kibana, _kb_policy_config({"a": 1}))),
        config_hash(build(kibana, _kb_policy_config({"a": 2}))),
    }
    assert len(hashes) == 3


def test_other_kinds_ignore_a_kibana_policy_secret_of_the_same_name() -> None:
    apm = app("ApmServer", "kb", {})
    with_secret = config_of(
        build(apm, _kb_policy_config({"a": 1})), "kb-apm-config", "apm-server.yml"
    )
    assert with_secret == config_of(build(apm), "kb-apm-config", "apm-server.yml")
    assert "a" not in with_secret
