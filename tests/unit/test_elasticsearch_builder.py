"""The Elasticsearch children: names, labels, owners, kept secrets and stable output."""

from __future__ import annotations

import base64
import copy
import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from activities.apply import merged_object
from stackflow.stack.elasticsearch.builder import (
    DisruptedNodeSet,
    allowed_disruptions,
    desired_children,
    elasticsearch_annotations,
)
from stackflow.stack.elasticsearch.tls import MissingReferenceError
from stackflow.stack.labels import ES_CLUSTER_UUID_ANNOTATION, ES_CONFIG_HASH_ANNOTATION
from stackflow.stack.policies.stack_config.file_settings import empty_state, state_hash
from stackflow.stack.policies.stack_config.merge import ElasticsearchMerge
from stackflow.stack.policies.stack_config.secrets import (
    es_policy_config_secret,
    es_secret_mount_copy_name,
)

NOW = datetime(2026, 3, 1, tzinfo=UTC)
ES_LABELS = {
    "common.k8s.elastic.co/type": "elasticsearch",
    "elasticsearch.k8s.elastic.co/cluster-name": "quickstart",
}
SOFT_OWNED = {
    "quickstart-es-elastic-user",
    "quickstart-es-http-certs-public",
    "quickstart-es-transport-certs-public",
}


def make_es(**spec_overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "version": "8.15.0",
        "nodeSets": [
            {"name": "masters", "count": 3, "config": {"node.roles": ["master"]}},
            {"name": "data", "count": 2, "config": {"node": {"roles": ["data", "ingest"]}}},
        ],
    }
    spec.update(spec_overrides)
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": "ns1", "uid": "uid-1", "generation": 1},
        "spec": spec,
    }


def counter_passwords() -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"password-{next(numbers)}"


def build(
    es: dict[str, Any], existing: dict[tuple[str, str], dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    return desired_children(
        es, existing=existing or {}, now=NOW, random_password=counter_passwords()
    )


def by_key(children: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(child["kind"], child["metadata"]["name"]): child for child in children}


def secret_value(secret: dict[str, Any], key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


@pytest.fixture(scope="module")
def children() -> list[dict[str, Any]]:
    return build(make_es())


def test_children_names_in_apply_order(children: list[dict[str, Any]]) -> None:
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("Service", "quickstart-es-http"),
        ("Service", "quickstart-es-internal-http"),
        ("Service", "quickstart-es-transport"),
        ("Secret", "quickstart-es-http-ca-internal"),
        ("Secret", "quickstart-es-http-certs-internal"),
        ("Secret", "quickstart-es-http-certs-public"),
        ("Secret", "quickstart-es-transport-ca-internal"),
        ("Secret", "quickstart-es-transport-certs-public"),
        ("Secret", "quickstart-es-remote-ca"),
        ("Secret", "quickstart-es-elastic-user"),
        ("Secret", "quickstart-es-internal-users"),
        ("Secret", "quickstart-es-xpack-file-realm"),
        ("Secret", "quickstart-es-file-settings"),
        ("ConfigMap", "quickstart-es-scripts"),
        ("ConfigMap", "quickstart-es-unicast-hosts"),
        ("Secret", "quickstart-es-masters-es-config"),
        ("Secret", "quickstart-es-masters-es-transport-certs"),
        ("Service", "quickstart-es-masters"),
        ("StatefulSet", "quickstart-es-masters"),
        ("Secret", "quickstart-es-data-es-config"),
        ("Secret", "quickstart-es-data-es-transport-certs"),
        ("Service", "quickstart-es-data"),
        ("StatefulSet", "quickstart-es-data"),
        ("PodDisruptionBudget", "quickstart-es-default"),
    ]


def test_every_child_has_cluster_labels_and_one_kind_of_owner(
    children: list[dict[str, Any]],
) -> None:
    for child in children:
        metadata = child["metadata"]
        assert metadata["namespace"] == "ns1"
        assert ES_LABELS.items() <= metadata["labels"].items()
        if metadata["name"] in SOFT_OWNED:
            assert "ownerReferences" not in metadata
            assert metadata["labels"]["eck.k8s.elastic.co/owner-name"] == "quickstart"
            assert metadata["labels"]["eck.k8s.elastic.co/owner-namespace"] == "ns1"
            assert metadata["labels"]["eck.k8s.elastic.co/owner-kind"] == "Elasticsearch"
        else:
            assert metadata["ownerReferences"] == [
                {
                    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
                    "kind": "Elasticsearch",
                    "name": "quickstart",
                    "uid": "uid-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]


@pytest.mark.parametrize(
    ("node_set", "count", "true_roles"),
    [
        ("masters", 3, {"master"}),
        ("data", 2, {"data", "ingest"}),
    ],
)
def test_statefulset_replicas_and_pod_labels(
    children: list[dict[str, Any]], node_set: str, count: int, true_roles: set[str]
) -> None:
    statefulset = by_key(children)[("StatefulSet", f"quickstart-es-{node_set}")]
    labels = statefulset["spec"]["template"]["metadata"]["labels"]

    assert statefulset["spec"]["replicas"] == count
    assert statefulset["spec"]["serviceName"] == f"quickstart-es-{node_set}"
    assert labels["elasticsearch.k8s.elastic.co/statefulset-name"] == f"quickstart-es-{node_set}"
    assert labels["elasticsearch.k8s.elastic.co/version"] == "8.15.0"
    assert labels["elasticsearch.k8s.elastic.co/http-scheme"] == "https"
    roles = {
        key.removeprefix("elasticsearch.k8s.elastic.co/node-")
        for key, value in labels.items()
        if key.startswith("elasticsearch.k8s.elastic.co/node-") and value == "true"
    }
    assert roles == true_roles
    assert statefulset["spec"]["selector"]["matchLabels"].items() <= labels.items()
    claim = statefulset["spec"]["volumeClaimTemplates"][0]
    assert claim["metadata"]["name"] == "elasticsearch-data"


def test_transport_certs_secret_has_a_certificate_per_pod(children: list[dict[str, Any]]) -> None:
    secret = by_key(children)[("Secret", "quickstart-es-data-es-transport-certs")]

    assert sorted(secret["data"]) == [
        "ca.crt",
        "quickstart-es-data-0.tls.crt",
        "quickstart-es-data-0.tls.key",
        "quickstart-es-data-1.tls.crt",
        "quickstart-es-data-1.tls.key",
    ]


def test_elasticsearch_yml_has_operator_and_user_settings(children: list[dict[str, Any]]) -> None:
    secret = by_key(children)[("Secret", "quickstart-es-data-es-config")]
    config = yaml.safe_load(secret_value(secret, "elasticsearch.yml"))

    assert config["cluster.name"] == "quickstart"
    assert config["node.name"] == "${POD_NAME}"
    assert config["node.roles"] == ["data", "ingest"]
    assert config["discovery.seed_providers"] == "file"
    assert config["xpack.security.http.ssl.enabled"] == "true"
    # Only master-eligible nodes bootstrap the cluster (ECK writes the list into masters' config).
    assert "cluster.initial_master_nodes" not in config
    masters = by_key(children)[("Secret", "quickstart-es-masters-es-config")]
    assert yaml.safe_load(secret_value(masters, "elasticsearch.yml"))[
        "cluster.initial_master_nodes"
    ] == [
        "quickstart-es-masters-0",
        "quickstart-es-masters-1",
        "quickstart-es-masters-2",
    ]


def test_bootstrap_masters_never_change_the_config_hash() -> None:
    """Dropping ``cluster.initial_master_nodes`` once the cluster formed restarts no node."""
    es = make_es()
    formed = copy.deepcopy(es)
    formed["metadata"]["annotations"] = {ES_CLUSTER_UUID_ANNOTATION: "abc"}

    def hashes(cluster: dict[str, Any]) -> dict[str, str]:
        built = build(cluster)
        return {
            child["metadata"]["name"]: child["spec"]["template"]["metadata"]["annotations"][
                ES_CONFIG_HASH_ANNOTATION
            ]
            for child in built
            if child["kind"] == "StatefulSet"
        }

    assert hashes(es) == hashes(formed)
    configs = [
        secret_value(child, "elasticsearch.yml")
        for child in build(formed)
        if child["metadata"]["name"].endswith("-es-config")
    ]
    assert configs
    assert all("initial_master_nodes" not in config for config in configs)


def test_rebuilding_from_the_current_children_changes_nothing(
    children: list[dict[str, Any]],
) -> None:
    rebuilt = build(make_es(), by_key(children))
    rebuilt_again = build(make_es(), by_key(rebuilt))

    assert rebuilt == children
    assert rebuilt_again == children


def test_elastic_password_is_generated_once_and_kept(children: list[dict[str, Any]]) -> None:
    first = secret_value(by_key(children)[("Secret", "quickstart-es-elastic-user")], "elastic")
    existing = {
        ("Secret", "quickstart-es-elastic-user"): by_key(children)[
            ("Secret", "quickstart-es-elastic-user")
        ]
    }

    rebuilt = by_key(build(make_es(), existing))

    assert first.startswith("password-")
    assert secret_value(rebuilt[("Secret", "quickstart-es-elastic-user")], "elastic") == first
    users = secret_value(rebuilt[("Secret", "quickstart-es-xpack-file-realm")], "users")
    assert any(line.startswith("elastic:{PBKDF2}") for line in users.splitlines())


def test_disabled_elastic_user_gets_no_secret() -> None:
    children = by_key(build(make_es(auth={"disableElasticUser": True})))

    assert ("Secret", "quickstart-es-elastic-user") not in children


@pytest.mark.parametrize(
    ("pdb", "expected_spec"),
    [
        (
            None,
            {
                "minAvailable": 0,
                "selector": {
                    "matchLabels": {"elasticsearch.k8s.elastic.co/cluster-name": "quickstart"}
                },
            },
        ),
        ({}, None),
        # A user's spec is taken as written, as ECK: no selector is added to it.
        ({"spec": {"minAvailable": 2}}, {"minAvailable": 2}),
    ],
)
def test_pod_disruption_budget(
    pdb: dict[str, Any] | None, expected_spec: dict[str, Any] | None
) -> None:
    overrides = {} if pdb is None else {"podDisruptionBudget": pdb}
    children = by_key(build(make_es(nodeSets=[{"name": "all", "count": 1}], **overrides)))

    found = children.get(("PodDisruptionBudget", "quickstart-es-default"))

    written = {k: v for k, v in found["spec"].items() if v is not None} if found else None
    assert written == expected_spec


def test_a_users_pdb_spec_replaces_the_stored_default_whole() -> None:
    """ECK replaces the PDB's spec: a user's maxUnavailable over the stored default leaves no
    minAvailable beside it (the API server refuses a PDB with both) and no default selector."""
    default = by_key(build(make_es(nodeSets=[{"name": "all", "count": 1}])))[
        ("PodDisruptionBudget", "quickstart-es-default")
    ]
    users = by_key(
        build(
            make_es(
                nodeSets=[{"name": "all", "count": 1}],
                podDisruptionBudget={"spec": {"maxUnavailable": 2}},
            )
        )
    )[("PodDisruptionBudget", "quickstart-es-default")]

    stored = {**default, "spec": {k: v for k, v in default["spec"].items() if v is not None}}
    merged = merged_object(stored, users)

    assert {k: v for k, v in merged["spec"].items() if v is not None} == {"maxUnavailable": 2}


def _node_set(replicas: int, *roles: str) -> DisruptedNodeSet:
    return DisruptedNodeSet(
        replicas=replicas, master="master" in roles, data="data" in roles, ingest="ingest" in roles
    )


ALL_ROLES = ("master", "data", "ingest")


@pytest.mark.parametrize(
    ("node_sets", "health", "allowed"),
    [
        # One node may always be disrupted, whatever the health.
        ([_node_set(1, *ALL_ROLES)], "red", 1),
        ([_node_set(1, *ALL_ROLES)], "", 1),
        ([_node_set(3, *ALL_ROLES)], "green", 1),
        ([_node_set(3, *ALL_ROLES)], "yellow", 0),
        ([_node_set(3, *ALL_ROLES)], "", 0),
        # A role held by a single node keeps every node.
        ([_node_set(1, "master"), _node_set(2, "data", "ingest")], "green", 0),
        ([_node_set(2, "master", "ingest"), _node_set(1, "data")], "green", 0),
        ([_node_set(2, "master", "data"), _node_set(1, "ingest")], "green", 0),
        # Data tiers alone are not the ``data`` role ECK counts.
        ([_node_set(3, "master", "ingest"), _node_set(2, "data_hot")], "green", 1),
        ([_node_set(3, "master", "data", "ingest"), _node_set(1, "ml")], "green", 1),
    ],
)
def test_allowed_disruptions(node_sets: list[DisruptedNodeSet], health: str, allowed: int) -> None:
    assert allowed_disruptions(node_sets, health) == allowed


def test_default_pdb_keeps_every_node_of_a_cluster_not_known_green() -> None:
    es = make_es(nodeSets=[{"name": "all", "count": 3}])
    unknown = by_key(build(es))[("PodDisruptionBudget", "quickstart-es-default")]
    green = by_key(build({**es, "status": {"health": "green"}}))[
        ("PodDisruptionBudget", "quickstart-es-default")
    ]

    assert unknown["spec"]["minAvailable"] == 3
    assert green["spec"]["minAvailable"] == 2
    assert "common.k8s.elastic.co/template-hash" in green["metadata"]["labels"]
    assert (
        green["metadata"]["labels"]["common.k8s.elastic.co/template-hash"]
        != unknown["metadata"]["labels"]["common.k8s.elastic.co/template-hash"]
    )


def test_default_pdb_counts_the_nodes_a_downscale_still_runs() -> None:
    es = {**make_es(nodeSets=[{"name": "all", "count": 3}]), "status": {"health": "green"}}
    current = by_key(build(es))[("StatefulSet", "quickstart-es-all")]
    downscaled = {**es, "spec": {**es["spec"], "nodeSets": [{"name": "all", "count": 2}]}}

    pdb = by_key(build(downscaled, {("StatefulSet", "quickstart-es-all"): current}))[
        ("PodDisruptionBudget", "quickstart-es-default")
    ]

    assert pdb["spec"]["minAvailable"] == 2


def test_http_tls_disabled_means_plain_http_and_no_http_certificates() -> None:
    es = make_es(http={"tls": {"selfSignedCertificate": {"disabled": True}}})
    children = by_key(build(es))

    assert not any(name.startswith("quickstart-es-http-c") for _, name in children)
    statefulset = children[("StatefulSet", "quickstart-es-masters")]
    assert (
        statefulset["spec"]["template"]["metadata"]["labels"][
            "elasticsearch.k8s.elastic.co/http-scheme"
        ]
        == "http"
    )
    assert children[("Service", "quickstart-es-http")]["spec"]["ports"][0]["name"] == "http"


def test_user_pod_template_is_merged_over_the_defaults() -> None:
    template = {
        "metadata": {"labels": {"team": "search"}},
        "spec": {
            "containers": [
                {
                    "name": "elasticsearch",
                    "env": [{"name": "ES_JAVA_OPTS", "value": "-Xms1g"}],
                    "resources": {"limits": {"memory": "4Gi"}},
                }
            ],
            "nodeSelector": {"disk": "ssd"},
        },
    }
    es = make_es(nodeSets=[{"name": "all", "count": 1, "podTemplate": template}])

    statefulset = by_key(build(es))[("StatefulSet", "quickstart-es-all")]

    pod = statefulset["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert pod["metadata"]["labels"]["team"] == "search"
    assert pod["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert container["resources"]["limits"]["memory"] == "4Gi"
    env_names = [entry["name"] for entry in container["env"]]
    assert "ES_JAVA_OPTS" in env_names
    assert "POD_NAME" in env_names
    assert container["image"] == "docker.elastic.co/elasticsearch/elasticsearch:8.15.0"


def test_every_service_selects_by_type_and_the_transport_one_publishes_booting_nodes(
    children: list[dict[str, Any]],
) -> None:
    services = {c["metadata"]["name"]: c for c in children if c["kind"] == "Service"}

    for service in services.values():
        assert service["spec"]["selector"]["common.k8s.elastic.co/type"] == "elasticsearch"
        assert service["metadata"]["labels"]["eck.k8s.elastic.co/watched"] == "true"
    assert services["quickstart-es-transport"]["spec"]["publishNotReadyAddresses"] is True
    assert services["quickstart-es-http"]["spec"]["publishNotReadyAddresses"] is False
    assert services["quickstart-es-masters"]["spec"]["selector"] == {
        "common.k8s.elastic.co/type": "elasticsearch",
        "elasticsearch.k8s.elastic.co/cluster-name": "quickstart",
        "elasticsearch.k8s.elastic.co/statefulset-name": "quickstart-es-masters",
    }


def test_node_set_secrets_name_their_statefulset_and_seeds_are_not_watched(
    children: list[dict[str, Any]],
) -> None:
    objects = by_key(children)
    sset_label = "elasticsearch.k8s.elastic.co/statefulset-name"

    for name in ("quickstart-es-masters-es-config", "quickstart-es-masters-es-transport-certs"):
        assert objects[("Secret", name)]["metadata"]["labels"][sset_label] == (
            "quickstart-es-masters"
        )
    seeds = objects[("ConfigMap", "quickstart-es-unicast-hosts")]
    assert "eck.k8s.elastic.co/watched" not in seeds["metadata"]["labels"]


def test_statefulset_carries_its_selector_and_hash_and_retains_claims(
    children: list[dict[str, Any]],
) -> None:
    statefulset = by_key(children)[("StatefulSet", "quickstart-es-masters")]

    assert set(statefulset["metadata"]["labels"]) == {
        "common.k8s.elastic.co/type",
        "common.k8s.elastic.co/template-hash",
        "elasticsearch.k8s.elastic.co/cluster-name",
        "elasticsearch.k8s.elastic.co/statefulset-name",
    }
    # The Pods keep the role and version labels.
    assert (
        statefulset["spec"]["template"]["metadata"]["labels"][
            "elasticsearch.k8s.elastic.co/node-master"
        ]
        == "true"
    )
    # The operator deletes claims (after the StatefulSet shrank), never the StatefulSet controller.
    assert statefulset["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }


def test_http_service_template_is_merged() -> None:
    es = make_es(
        http={
            "service": {"metadata": {"annotations": {"a": "b"}}, "spec": {"type": "LoadBalancer"}}
        }
    )

    service = by_key(build(es))[("Service", "quickstart-es-http")]

    assert service["spec"]["type"] == "LoadBalancer"
    assert service["metadata"]["annotations"] == {"a": "b"}
    assert service["spec"]["selector"] == {
        "common.k8s.elastic.co/type": "elasticsearch",
        "elasticsearch.k8s.elastic.co/cluster-name": "quickstart",
    }


def test_unicast_hosts_lists_master_pods_with_an_ip() -> None:
    def pod(name: str, ip: str, master: str) -> dict[str, Any]:
        return {
            "metadata": {
                "name": name,
                "labels": {
                    "elasticsearch.k8s.elastic.co/cluster-name": "quickstart",
                    "elasticsearch.k8s.elastic.co/node-master": master,
                },
            },
            "status": {"podIP": ip},
        }

    existing = {
        ("Pod", "m0"): pod("m0", "10.0.0.2", "true"),
        ("Pod", "m1"): pod("m1", "10.0.0.1", "true"),
        ("Pod", "d0"): pod("d0", "10.0.0.9", "false"),
    }

    config_map = by_key(build(make_es(nodeSets=[{"name": "all", "count": 1}]), existing))[
        ("ConfigMap", "quickstart-es-unicast-hosts")
    ]

    assert config_map["data"]["unicast_hosts.txt"] == "10.0.0.1:9300\n10.0.0.2:9300\n"


def test_missing_custom_http_certificate_is_reported_not_papered_over() -> None:
    es = make_es(http={"tls": {"certificate": {"secretName": "my-cert"}}})

    with pytest.raises(MissingReferenceError, match="my-cert"):
        build(es)


def test_custom_http_certificate_is_mounted_as_given(children: list[dict[str, Any]]) -> None:
    user_secret = {
        "data": {
            "tls.crt": children[4]["data"]["tls.crt"],
            "tls.key": children[4]["data"]["tls.key"],
        }
    }
    es = make_es(http={"tls": {"certificate": {"secretName": "my-cert"}}})

    built = by_key(build(es, {("Secret", "my-cert"): user_secret}))

    assert ("Secret", "quickstart-es-http-ca-internal") not in built
    internal = built[("Secret", "quickstart-es-http-certs-internal")]
    assert internal["data"] == user_secret["data"]


# --- the remote CA bundle (remote clusters) ----------------------------------------------------------


def _remote_ca_copy(holder: str, peer_ns: str, peer: str, pem: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"{holder}-{peer_ns}-{peer}-es-remote-ca",
            "namespace": "ns1",
            "labels": {
                "common.k8s.elastic.co/type": "remote-ca",
                "elasticsearch.k8s.elastic.co/cluster-name": holder,
                "elasticsearch.k8s.elastic.co/remote-cluster-name": peer,
                "elasticsearch.k8s.elastic.co/remote-cluster-namespace": peer_ns,
            },
        },
        "data": {"ca.crt": base64.b64encode(pem.encode()).decode()},
    }


def _pem(label: str) -> str:
    return f"-----BEGIN CERTIFICATE-----\n{label}\n-----END CERTIFICATE-----\n"


def test_remote_ca_bundle_falls_back_to_the_own_transport_ca(
    children: list[dict[str, Any]],
) -> None:
    secrets = by_key(children)
    own = secret_value(secrets[("Secret", "quickstart-es-transport-certs-public")], "ca.crt")

    bundle = secret_value(secrets[("Secret", "quickstart-es-remote-ca")], "ca.crt")

    assert bundle.strip() == own.strip()


def test_remote_ca_bundle_concatenates_the_peer_copies_in_ecks_order() -> None:
    existing = {
        ("Secret", copy["metadata"]["name"]): copy
        for copy in (
            _remote_ca_copy("quickstart", "zeta", "b", _pem("B")),
            _remote_ca_copy("quickstart", "alpha", "c", _pem("C")),
            # Another cluster's copy in the same namespace is not this cluster's trust.
            _remote_ca_copy("other", "alpha", "d", _pem("D")),
        )
    }

    secrets = by_key(build(make_es(), existing))

    assert secret_value(secrets[("Secret", "quickstart-es-remote-ca")], "ca.crt") == (
        _pem("C") + _pem("B")
    )


def test_the_remote_ca_bundle_is_mounted_and_trusted_for_transport(
    children: list[dict[str, Any]],
) -> None:
    statefulset = next(c for c in children if c["kind"] == "StatefulSet")
    pod_spec = statefulset["spec"]["template"]["spec"]
    volume = next(
        v
        for v in pod_spec["volumes"]
        if v["name"] == "elastic-internal-remote-certificate-authorities"
    )
    container = next(c for c in pod_spec["containers"] if c["name"] == "elasticsearch")
    mount = next(
        m
        for m in container["volumeMounts"]
        if m["name"] == "elastic-internal-remote-certificate-authorities"
    )
    config = by_key(children)[("Secret", "quickstart-es-masters-es-config")]

    assert volume["secret"]["secretName"] == "quickstart-es-remote-ca"
    assert mount["mountPath"] == "/usr/share/elasticsearch/config/transport-remote-certs/"
    assert "/usr/share/elasticsearch/config/transport-remote-certs/ca.crt" in secret_value(
        config, "elasticsearch.yml"
    )


def _yml(children: list[dict[str, Any]]) -> dict[str, Any]:
    config = by_key(children)[("Secret", "quickstart-es-masters-es-config")]
    loaded: dict[str, Any] = yaml.safe_load(secret_value(config, "elasticsearch.yml"))
    return loaded


@pytest.mark.parametrize(
    ("overrides", "server", "client"),
    [
        pytest.param({}, False, False, id="neither"),
        pytest.param({"remoteClusterServer": {"enabled": True}}, True, False, id="server"),
        pytest.param(
            {
                "remoteClusters": [
                    {"name": "r", "elasticsearchRef": {"name": "other"}, "apiKey": {}}
                ],
            },
            False,
            True,
            id="api-key-client",
        ),
        pytest.param(
            {"remoteClusters": [{"name": "r", "elasticsearchRef": {"name": "other"}}]},
            False,
            False,
            id="certificate-client",
        ),
    ],
)
def test_remote_cluster_server_and_client_settings_as_eck(
    overrides: dict[str, Any], server: bool, client: bool
) -> None:
    children = build(make_es(**overrides))
    settings = _yml(children)
    remote_service = by_key(children).get(("Service", "quickstart-es-remote-cluster"))

    assert (settings.get("remote_cluster_server.enabled") == "true") is server
    assert (remote_service is not None) is server
    assert settings.get("xpack.security.remote_cluster_client.ssl.enabled", False) is client
    if server:
        assert remote_service is not None
        assert remote_service["spec"]["clusterIP"] == "None"
        assert remote_service["spec"]["publishNotReadyAddresses"] is True
        assert [(p["name"], p["port"]) for p in remote_service["spec"]["ports"]] == [("rcs", 9443)]
        assert settings["xpack.security.remote_cluster_server.ssl.certificate_authorities"] == [
            "/usr/share/elasticsearch/config/transport-certs/ca.crt",
            "/usr/share/elasticsearch/config/transport-remote-certs/ca.crt",
        ]


def _keystore_build(secure_settings: dict[str, bytes] | None) -> list[dict[str, Any]]:
    return desired_children(
        make_es(),
        existing={},
        now=NOW,
        random_password=counter_passwords(),
        secure_settings=secure_settings,
    )


def test_secure_settings_add_the_secret_the_volume_and_the_keystore_init_container(
    children: list[dict[str, Any]],
) -> None:
    built = _keystore_build({"s3.client.default.access_key": b"AKIA"})
    plain_names = [(c["kind"], c["metadata"]["name"]) for c in children]
    built_names = [(c["kind"], c["metadata"]["name"]) for c in built]
    # Only one child more: the aggregated Secret, next to the other cluster-wide Secrets.
    assert [n for n in built_names if n not in plain_names] == [
        ("Secret", "quickstart-es-secure-settings")
    ]
    secure = by_key(built)[("Secret", "quickstart-es-secure-settings")]
    assert secret_value(secure, "s3.client.default.access_key") == "AKIA"
    for node_set in ("masters", "data"):
        pod_spec = by_key(built)[("StatefulSet", f"quickstart-es-{node_set}")]["spec"]["template"][
            "spec"
        ]
        init = [c["name"] for c in pod_spec["initContainers"]]
        # ECK's order: the filesystem, the keystore, then the suspend container.
        assert init == [
            "elastic-internal-init-filesystem",
            "elastic-internal-init-keystore",
            "elastic-internal-suspend",
        ]
        keystore = pod_spec["initContainers"][1]
        assert "elasticsearch-keystore create" in keystore["command"][-1]
        assert "elasticsearch-keystore add-file" in keystore["command"][-1]
        assert {"secretName": "quickstart-es-secure-settings", "optional": False} in [
            v.get("secret") for v in pod_spec["volumes"]
        ]
    plain_sts = by_key(children)[("StatefulSet", "quickstart-es-data")]
    assert not any(
        c["name"] == "elastic-internal-init-keystore"
        for c in plain_sts["spec"]["template"]["spec"]["initContainers"]
    )


def test_a_secure_settings_change_changes_the_config_and_template_hashes() -> None:
    first = by_key(_keystore_build({"k": b"1"}))[("StatefulSet", "quickstart-es-data")]
    again = by_key(_keystore_build({"k": b"1"}))[("StatefulSet", "quickstart-es-data")]
    second = by_key(_keystore_build({"k": b"2"}))[("StatefulSet", "quickstart-es-data")]
    config_hash = "elasticsearch.k8s.elastic.co/config-hash"
    assert first == again
    assert first["metadata"]["labels"] != second["metadata"]["labels"]
    assert (
        first["spec"]["template"]["metadata"]["annotations"][config_hash]
        != second["spec"]["template"]["metadata"]["annotations"][config_hash]
    )


def _policy_config(
    config: dict[str, Any],
    mounts: list[dict[str, str]] | None = None,
    roles: dict[str, Any] | None = None,
) -> dict[tuple[str, str], dict[str, Any]]:
    """The ``<es>-es-policy-config`` Secret as the StackConfigPolicy controller writes it."""
    merged = ElasticsearchMerge(
        state=empty_state(),
        config=config,
        secret_mounts=tuple(mounts or []),
        secure_settings=(),
        owners=("elastic-system/policy",),
        roles=roles or {},
    )
    secret = es_policy_config_secret(None, namespace="ns1", es_name="quickstart", merged=merged)
    return {("Secret", "quickstart-es-policy-config"): secret}


# (node set config, policy config, setting, expected value in elasticsearch.yml)
POLICY_PRECEDENCE: list[tuple[dict[str, Any], dict[str, Any], str, Any]] = [
    ({}, {"logger.org.elasticsearch": "debug"}, "logger.org.elasticsearch", "debug"),
    ({"a.b": "node"}, {"a": {"b": "policy"}}, "a.b", "policy"),  # the policy wins the user
    ({"a.b": "node"}, {"c": "policy"}, "a.b", "node"),  # the user's other settings stay
    ({}, {"xpack.security.authc.token.enabled": True}, "xpack.security.authc.token.enabled", True),
    ({}, {"cluster.name": "other"}, "cluster.name", "other"),  # merged last, as ECK
]


@pytest.mark.parametrize(("node_config", "policy", "setting", "expected"), POLICY_PRECEDENCE)
def test_policy_config_is_merged_over_the_node_set_config(
    node_config: dict[str, Any], policy: dict[str, Any], setting: str, expected: Any
) -> None:
    es = make_es(nodeSets=[{"name": "masters", "count": 1, "config": node_config}])
    assert _yml(build(es, _policy_config(policy)))[setting] == expected


def test_a_policy_config_change_rolls_the_pods() -> None:
    es = make_es()

    def hash_of(children: list[dict[str, Any]]) -> str:
        sts = by_key(children)[("StatefulSet", "quickstart-es-masters")]
        annotations = sts["spec"]["template"]["metadata"]["annotations"]
        return str(annotations["elasticsearch.k8s.elastic.co/config-hash"])

    without = hash_of(build(es))
    first = hash_of(build(es, _policy_config({"a": "1"})))
    second = hash_of(build(es, _policy_config({"a": "2"})))
    assert len({without, first, second}) == 3


def test_policy_secret_mounts_are_mounted_into_the_elasticsearch_container() -> None:
    existing = _policy_config({}, [{"secretName": "azure-creds", "mountPath": "/usr/share/az"}])
    sts = by_key(build(make_es(), existing))[("StatefulSet", "quickstart-es-data")]
    pod = sts["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    container = next(c for c in pod["containers"] if c["name"] == "elasticsearch")
    mounts = {mount["mountPath"]: mount for mount in container["volumeMounts"]}

    mount = mounts["/usr/share/az"]
    assert mount["readOnly"] is True
    # The policy controller's copy of the policy namespace's Secret (as ECK).
    copy_name = es_secret_mount_copy_name("quickstart", "azure-creds")
    assert copy_name.startswith("quickstart-es-scp-")
    assert volumes[mount["name"]]["secret"]["secretName"] == copy_name


def test_no_policy_no_extra_volume(children: list[dict[str, Any]]) -> None:
    sts = by_key(children)[("StatefulSet", "quickstart-es-data")]
    names = [volume["name"] for volume in sts["spec"]["template"]["spec"]["volumes"]]
    assert not [name for name in names if name.startswith("scp-")]


def test_policy_security_roles_join_the_file_realm_roles() -> None:
    role = {"cluster": ["monitor"], "indices": [{"names": ["logs-*"], "privileges": ["read"]}]}
    existing = _policy_config({}, roles={"log-reader": role})
    realm = by_key(build(make_es(), existing))[("Secret", "quickstart-es-xpack-file-realm")]
    roles = yaml.safe_load(secret_value(realm, "roles.yml"))
    assert roles["log-reader"] == role


def test_the_pod_template_carries_the_policy_config_hash(children: list[dict[str, Any]]) -> None:
    annotation = "policy.k8s.elastic.co/elasticsearch-config-mounts-hash"
    existing = _policy_config({"a": "1"})
    secret = existing[("Secret", "quickstart-es-policy-config")]
    sts = by_key(build(make_es(), existing))[("StatefulSet", "quickstart-es-data")]
    template = sts["spec"]["template"]["metadata"]["annotations"]
    assert template[annotation] == secret["metadata"]["annotations"][annotation]
    without = by_key(children)[("StatefulSet", "quickstart-es-data")]
    assert annotation not in without["spec"]["template"]["metadata"]["annotations"]


HINTS = "eck.k8s.elastic.co/orchestration-hints"
INITIAL_MASTERS = "elasticsearch.k8s.elastic.co/initial-master-nodes"
MASTERS = "quickstart-es-masters-0,quickstart-es-masters-1,quickstart-es-masters-2"


def _annotated(annotations: dict[str, str], **extra: Any) -> dict[str, Any]:
    es = make_es()
    es["metadata"]["annotations"] = annotations
    es.update(extra)
    return es


@pytest.mark.parametrize(
    ("es", "patch"),
    [
        # A new cluster: the bootstrap list and ECK's hints for a version with service accounts.
        (
            _annotated({}),
            {
                INITIAL_MASTERS: MASTERS,
                HINTS: '{"no_transient_settings":false,"service_accounts":true}',
            },
        ),
        # Bootstrapping: the kept list is left as it is, whatever the spec says now.
        (
            _annotated(
                {
                    INITIAL_MASTERS: "quickstart-es-masters-0",
                    HINTS: '{"no_transient_settings":false,"service_accounts":true}',
                }
            ),
            {},
        ),
        # Formed: the list goes; hints already true stay.
        (
            _annotated(
                {
                    INITIAL_MASTERS: MASTERS,
                    ES_CLUSTER_UUID_ANNOTATION: "uuid",
                    HINTS: '{"no_transient_settings":true,"service_accounts":true}',
                }
            ),
            {INITIAL_MASTERS: None},
        ),
        # A formed cluster whose running version cannot read service tokens says so.
        (
            _annotated({ES_CLUSTER_UUID_ANNOTATION: "uuid"}, status={"version": "7.16.3"}),
            {HINTS: '{"no_transient_settings":false,"service_accounts":false}'},
        ),
        # A formed cluster of a version that can: only Elasticsearch could tell, nothing written.
        (_annotated({ES_CLUSTER_UUID_ANNOTATION: "uuid"}, status={"version": "8.15.0"}), {}),
    ],
)
def test_elasticsearch_annotations(es: dict[str, Any], patch: dict[str, str | None]) -> None:
    assert elasticsearch_annotations(es) == patch


def test_masters_bootstrap_with_the_annotated_list_until_the_cluster_formed() -> None:
    def initial_masters(es: dict[str, Any]) -> Any:
        config = by_key(build(es))[("Secret", "quickstart-es-masters-es-config")]
        return yaml.safe_load(secret_value(config, "elasticsearch.yml")).get(
            "cluster.initial_master_nodes"
        )

    kept = _annotated({INITIAL_MASTERS: "quickstart-es-masters-0"})
    formed = _annotated({ES_CLUSTER_UUID_ANNOTATION: "uuid"})

    assert initial_masters(kept) == ["quickstart-es-masters-0"]
    assert initial_masters(formed) is None


def test_file_settings_and_file_realm_secrets_carry_the_policy_hashes(
    children: list[dict[str, Any]],
) -> None:
    objects = by_key(children)
    settings = objects[("Secret", "quickstart-es-file-settings")]
    realm = objects[("Secret", "quickstart-es-xpack-file-realm")]

    # No policy: the hash of the empty state, and an empty roles hash.
    assert settings["metadata"]["annotations"] == {
        "policy.k8s.elastic.co/settings-hash": state_hash(empty_state())
    }
    assert realm["metadata"]["annotations"] == {
        "policy.k8s.elastic.co/elasticsearch-roles-hash": ""
    }
