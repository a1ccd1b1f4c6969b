"""``helm lint`` and ``helm template`` of ``deploy/stackflow`` over a matrix of values, with the
rendered objects asserted; the values the chart refuses; and the rendered configuration file read
back by the operator's own loader (``stackflow.config.load_config``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from stackflow.cli.run import build_parser
from stackflow.config import (
    ElasticsearchDial,
    OperatorConfig,
    config_keys,
    env_var_name,
    load_config,
)
from stackflow.kube.leader import DEFAULT_LEASE_NAME
from stackflow.scope.matcher import ScopeMode
from tests.clusters import CHART
from tests.helm.chart import Rendered, grants, materialize, run_helm, template

pytestmark = pytest.mark.helm

#: What every release renders (the release ``stackflow`` in ``elastic-system``).
BASE = frozenset(
    {
        "ServiceAccount/elastic-system/stackflow",
        "ConfigMap/elastic-system/stackflow",
        "ClusterRole//stackflow",
        "ClusterRoleBinding//stackflow",
        "Role/elastic-system/stackflow-leader-election",
        "RoleBinding/elastic-system/stackflow-leader-election",
        "Deployment/elastic-system/stackflow",
    }
)
CLUSTER_SCOPED = frozenset({"ClusterRole//stackflow", "ClusterRoleBinding//stackflow"})
#: The Roles (and their bindings) of a static list: in each listed namespace and the operator's.
STATIC_ROLES = frozenset(
    f"{kind}/{namespace}/stackflow"
    for kind in ("Role", "RoleBinding")
    for namespace in ("elastic-system", "team-a", "team-b")
)
#: What webhook.enabled adds: the webhook's Service and its own roles.
WEBHOOK_OBJECTS = frozenset(
    {
        "Service/elastic-system/stackflow-webhook",
        "ClusterRole//stackflow-webhook",
        "ClusterRoleBinding//stackflow-webhook",
        "Role/elastic-system/stackflow-webhook",
        "RoleBinding/elastic-system/stackflow-webhook",
    }
)
SELECTOR = {"matchLabels": {"eck-visible": "true"}}
#: Verbs the whole ClusterRole grants on a few resources (all-namespaces and selector modes).
WHOLE = {
    "/namespaces": ("list", "watch"),
    "/secrets": ("create", "delete", "get", "list", "patch", "update", "watch"),
    "apps/statefulsets": ("create", "delete", "get", "list", "update", "watch"),
    "/events": ("create", "patch"),
    "elasticsearch.k8s.elastic.co/elasticsearches/status": ("patch",),
    "authorization.k8s.io/subjectaccessreviews": ("create",),
}


@dataclass(frozen=True)
class Case:
    """One set of values and what the chart must render from it."""

    id: str
    values: Mapping[str, Any]
    #: The exact set of rendered objects (``Kind/namespace/name``).
    objects: frozenset[str]
    #: Verbs granted on some resources, by the role they must be granted in (exact per resource;
    #: None: the resource is not in that role).
    grants: Mapping[str, Mapping[str, tuple[str, ...] | None]] = field(default_factory=dict)
    #: Values at paths (``a.b.0.c``) of rendered objects.
    paths: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    #: Entries of the operator's configuration file (None: the key is absent).
    config: Mapping[str, Any] = field(default_factory=dict)


CASES = [
    Case(
        "all-namespaces",
        {},
        BASE,
        grants={"ClusterRole//stackflow": WHOLE},
        paths={
            ("Deployment/elastic-system/stackflow", "spec.replicas"): 1,
            ("ClusterRoleBinding//stackflow", "subjects.0.namespace"): "elastic-system",
        },
        config={
            "namespaces": None,
            "namespace-selector": None,
            "enforce-rbac-on-refs": False,
            "elasticsearch-dial": "service",
        },
    ),
    Case(
        "static-list",
        {"managedNamespaces": ["team-a", "team-b"]},
        BASE | STATIC_ROLES,
        grants={
            # The informers watch each listed namespace: nothing namespaced is cluster-wide.
            "ClusterRole//stackflow": {
                "/namespaces": ("list", "watch"),
                # Cluster-scoped: the access reviews of enforce-rbac-on-refs.
                "authorization.k8s.io/subjectaccessreviews": ("create",),
                "/secrets": None,
                "apps/statefulsets": None,
                "elasticsearch.k8s.elastic.co/elasticsearches": None,
                "/events": None,
                "elasticsearch.k8s.elastic.co/elasticsearches/status": None,
            },
            "Role/team-a/stackflow": {
                "/namespaces": None,
                "/secrets": ("create", "delete", "get", "list", "patch", "update", "watch"),
                "/pods": ("delete", "get", "list", "patch", "watch"),
                "/events": ("create", "patch"),
                "elasticsearch.k8s.elastic.co/elasticsearches": ("get", "list", "patch", "watch"),
                "elasticsearch.k8s.elastic.co/elasticsearches/finalizers": ("update",),
            },
            "Role/elastic-system/stackflow": {
                "/secrets": ("create", "delete", "get", "list", "patch", "update", "watch")
            },
        },
        paths={
            ("RoleBinding/team-b/stackflow", "subjects.0.namespace"): "elastic-system",
            ("RoleBinding/team-b/stackflow", "roleRef.name"): "stackflow",
        },
        config={"namespaces": ["team-a", "team-b"], "namespace-selector": None},
    ),
    Case(
        "static-list-with-the-operator-namespace",
        {"managedNamespaces": ["elastic-system", "team-a", "team-b"]},
        BASE | STATIC_ROLES,
    ),
    Case(
        "selector",
        {"managedNamespaceSelector": SELECTOR},
        BASE,
        grants={"ClusterRole//stackflow": WHOLE},
        config={"namespaces": None, "namespace-selector": SELECTOR},
    ),
    Case(
        "webhook",
        {"webhook": {"enabled": True, "port": 9444}},
        BASE | WEBHOOK_OBJECTS,
        grants={
            "ClusterRole//stackflow-webhook": {
                "admissionregistration.k8s.io/validatingwebhookconfigurations": (
                    "create",
                    "get",
                    "list",
                    "patch",
                    "update",
                    "watch",
                ),
                "/secrets": None,
            },
            "Role/elastic-system/stackflow-webhook": {
                "/secrets": ("create", "get", "update"),
                "admissionregistration.k8s.io/validatingwebhookconfigurations": None,
            },
            # The operator's own role is unchanged: the webhook's grants stand apart.
            "ClusterRole//stackflow": WHOLE
            | {"admissionregistration.k8s.io/validatingwebhookconfigurations": None},
        },
        paths={
            ("Service/elastic-system/stackflow-webhook", "spec.ports"): [
                {"name": "https", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
            ],
            (
                "Deployment/elastic-system/stackflow",
                "spec.template.spec.containers.0.ports",
            ): [
                {"name": "health", "containerPort": 8081, "protocol": "TCP"},
                {"name": "webhook", "containerPort": 9444, "protocol": "TCP"},
            ],
            ("ClusterRoleBinding//stackflow-webhook", "subjects.0.namespace"): "elastic-system",
            ("RoleBinding/elastic-system/stackflow-webhook", "roleRef.name"): ("stackflow-webhook"),
        },
        config={
            "enable-webhook": True,
            "webhook-port": 9444,
            "manage-webhook-certs": True,
            "webhook-secret": "stackflow-webhook-cert",
            "webhook-name": "stackflow.elastic-system.k8s.elastic.co",
        },
    ),
    Case(
        "webhook-disabled",
        {"webhook": {"enabled": False, "port": 9444}},
        BASE,
        paths={
            (
                "Deployment/elastic-system/stackflow",
                "spec.template.spec.containers.0.ports",
            ): [{"name": "health", "containerPort": 8081, "protocol": "TCP"}],
        },
        config={"enable-webhook": False, "webhook-secret": None, "webhook-name": None},
    ),
    Case(
        # Dialling ready Pod addresses reads the internal HTTP Service and its Pods, which the
        # role grants anyway: no EndpointSlice grant (their loopback addresses are refused there).
        "elasticsearch-dial-endpoints",
        {"config": {"elasticsearchDial": "endpoints"}},
        BASE,
        grants={
            "ClusterRole//stackflow": WHOLE
            | {
                "/pods": ("delete", "get", "list", "patch", "watch"),
                "/services": ("create", "delete", "get", "list", "update", "watch"),
                "discovery.k8s.io/endpointslices": None,
            }
        },
        config={"elasticsearch-dial": "endpoints"},
    ),
    Case(
        "no-cluster-scoped-resources",
        {"createClusterScopedResources": False},
        BASE - CLUSTER_SCOPED,
    ),
    Case(
        "no-cluster-scoped-resources-static-list",
        {"createClusterScopedResources": False, "managedNamespaces": ["team-a", "team-b"]},
        (BASE - CLUSTER_SCOPED) | STATIC_ROLES,
    ),
    Case(
        "operator-namespace",
        {"operatorNamespace": "ops"},
        frozenset(key.replace("/elastic-system/", "/ops/") for key in BASE),
        paths={("ClusterRoleBinding//stackflow", "subjects.0.namespace"): "ops"},
        config={"operator-namespace": "ops"},
    ),
    Case(
        "replicas-2",
        {"replicaCount": 2},
        BASE,
        paths={("Deployment/elastic-system/stackflow", "spec.replicas"): 2},
        config={"enable-leader-election": True},
    ),
    Case(
        "tls",
        {"temporal": {"tls": {"enabled": True, "secretName": "temporal-client"}}},
        BASE,
        paths={
            ("Deployment/elastic-system/stackflow", "spec.template.spec.volumes.2.secret"): {
                "secretName": "temporal-client",
                "items": [
                    {"key": "ca.crt", "path": "ca.crt"},
                    {"key": "tls.crt", "path": "tls.crt"},
                    {"key": "tls.key", "path": "tls.key"},
                ],
            },
        },
        config={
            "temporal-tls-ca": "/etc/temporal-tls/ca.crt",
            "temporal-tls-cert": "/etc/temporal-tls/tls.crt",
            "temporal-tls-key": "/etc/temporal-tls/tls.key",
        },
    ),
    Case(
        "tls-server-auth-only",
        {"temporal": {"tls": {"enabled": True, "secretName": "ca", "certKey": "", "keyKey": ""}}},
        BASE,
        paths={
            ("Deployment/elastic-system/stackflow", "spec.template.spec.volumes.2.secret.items"): [
                {"key": "ca.crt", "path": "ca.crt"}
            ],
        },
        config={
            "temporal-tls-ca": "/etc/temporal-tls/ca.crt",
            "temporal-tls-cert": None,
            "temporal-tls-key": None,
        },
    ),
    Case(
        "api-key",
        {"temporal": {"apiKey": {"existingSecret": "temporal-cloud", "key": "token"}}},
        BASE,
        paths={
            ("Deployment/elastic-system/stackflow", "spec.template.spec.containers.0.env.1"): {
                "name": "STACKFLOW_TEMPORAL_API_KEY",
                "valueFrom": {"secretKeyRef": {"name": "temporal-cloud", "key": "token"}},
            }
        },
        config={"temporal-api-key": None},
    ),
    Case(
        "service-monitor",
        {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
        BASE
        | {
            "Service/elastic-system/stackflow-metrics",
            "ServiceMonitor/elastic-system/stackflow",
        },
        paths={
            ("ServiceMonitor/elastic-system/stackflow", "apiVersion"): "monitoring.coreos.com/v1",
            ("ServiceMonitor/elastic-system/stackflow", "metadata.labels.release"): "prometheus",
            ("ServiceMonitor/elastic-system/stackflow", "spec.endpoints.0.port"): "metrics",
            ("Service/elastic-system/stackflow-metrics", "spec.ports.0"): {
                "name": "metrics",
                "port": 8081,
                "targetPort": "health",
                "protocol": "TCP",
            },
        },
    ),
    Case(
        "service-monitor-metrics-port",
        {"serviceMonitor": {"enabled": True}, "config": {"metricsPort": 9090}},
        BASE
        | {
            "Service/elastic-system/stackflow-metrics",
            "ServiceMonitor/elastic-system/stackflow",
        },
        paths={
            ("Service/elastic-system/stackflow-metrics", "spec.ports.0.port"): 9090,
            ("Service/elastic-system/stackflow-metrics", "spec.ports.0.targetPort"): "metrics",
            ("Deployment/elastic-system/stackflow", "spec.template.spec.containers.0.ports.1"): {
                "name": "metrics",
                "containerPort": 9090,
                "protocol": "TCP",
            },
        },
        config={"metrics-port": 9090},
    ),
    Case(
        "pdb",
        {"podDisruptionBudget": {"enabled": True}},
        BASE | {"PodDisruptionBudget/elastic-system/stackflow"},
        paths={
            ("PodDisruptionBudget/elastic-system/stackflow", "spec"): {
                "maxUnavailable": 1,
                "selector": {
                    "matchLabels": {
                        "app.kubernetes.io/name": "stackflow",
                        "app.kubernetes.io/instance": "stackflow",
                    }
                },
            }
        },
    ),
    Case(
        "pdb-min-available",
        {"replicaCount": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 1}},
        BASE | {"PodDisruptionBudget/elastic-system/stackflow"},
        paths={
            ("PodDisruptionBudget/elastic-system/stackflow", "spec.minAvailable"): 1,
            ("PodDisruptionBudget/elastic-system/stackflow", "spec.maxUnavailable"): None,
        },
    ),
    Case(
        "image",
        {
            "image": {
                "repository": "example.test/stackflow",
                "tag": "dev",
                "pullPolicy": "Always",
            }
        },
        BASE,
        paths={
            ("Deployment/elastic-system/stackflow", "spec.template.spec.containers.0.image"): (
                "example.test/stackflow:dev"
            ),
            (
                "Deployment/elastic-system/stackflow",
                "spec.template.spec.containers.0.imagePullPolicy",
            ): "Always",
        },
    ),
]


def at(document: Any, path: str) -> Any:
    """The value at a dotted ``path`` (list indexes as numbers); None when a step is missing."""
    for step in path.split("."):
        if isinstance(document, list):
            index = int(step)
            document = document[index] if index < len(document) else None
        elif isinstance(document, dict):
            document = document.get(step)
        else:
            return None
    return document


def test_helm_lint_passes_strict() -> None:
    done = run_helm("lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_rendered_objects(case: Case) -> None:
    rendered = Rendered.of(case.values)
    assert sorted(rendered.objects) == sorted(case.objects)
    for role, expected in case.grants.items():
        granted = grants(rendered.objects[role])
        assert {resource: granted.get(resource) for resource in expected} == expected, role
    for (key, path), expected in case.paths.items():
        assert at(rendered.objects[key], path) == expected, f"{key} {path}"
    config = yaml.safe_load(rendered.config_text())
    assert {key: config.get(key) for key in case.config} == dict(case.config)


def test_the_default_image_tag_is_the_app_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert Rendered.of({}).container()["image"] == f"stackflow:{chart['appVersion']}"


def test_leader_election_reads_and_renews_only_the_operators_lease() -> None:
    """Reading and renewing name the one Lease the operator elects on (RBAC cannot restrict
    ``create`` by name, so creating is granted on leases); nothing else on leases."""
    role = Rendered.of({}).objects["Role/elastic-system/stackflow-leader-election"]
    rules = {
        (tuple(rule["verbs"]), tuple(rule.get("resourceNames", ())))
        for rule in role["rules"]
        if rule["apiGroups"] == ["coordination.k8s.io"] and rule["resources"] == ["leases"]
    }
    assert rules == {(("create",), ()), (("get", "update"), (DEFAULT_LEASE_NAME,))}
    assert len(role["rules"]) == 2


@pytest.mark.parametrize(
    "values",
    [{}, {"managedNamespaces": ["team-a"]}, {"managedNamespaceSelector": SELECTOR}],
    ids=["all-namespaces", "static-list", "selector"],
)
def test_the_static_roles_split_the_cluster_role_without_loss_or_addition(
    values: Mapping[str, Any],
) -> None:
    """A static list grants, per namespace, exactly what the whole ClusterRole grants on
    namespaced resources; the ClusterRole keeps only the cluster-scoped rules (namespaces, the
    SubjectAccessReviews of enforce-rbac-on-refs, the StorageClasses a growing claim needs)."""
    whole = grants(Rendered.of({}).objects["ClusterRole//stackflow"])
    rendered = Rendered.of(values)
    split: dict[str, set[str]] = {}
    cluster = grants(rendered.objects["ClusterRole//stackflow"])
    roles = [
        grants(doc)
        for key, doc in rendered.objects.items()
        if doc["kind"] == "Role" and not key.endswith("-leader-election")
    ]
    for granted in [cluster, *roles[:1]]:
        for resource, verbs in granted.items():
            split.setdefault(resource, set()).update(verbs)
    assert {resource: tuple(sorted(verbs)) for resource, verbs in split.items()} == whole
    assert all(granted == roles[0] for granted in roles), "the static Roles differ"
    if roles:
        assert set(cluster) == {
            "/namespaces",
            "authorization.k8s.io/subjectaccessreviews",
            "storage.k8s.io/storageclasses",
        }
        assert "/namespaces" not in roles[0]


def test_the_deployment_runs_the_operator_on_its_config_file_and_health_port() -> None:
    rendered = Rendered.of({})
    container = rendered.container()
    assert container["args"][0] == "run"
    flags = build_parser().parse_args(container["args"][1:])
    config_path = Path("/etc/stackflow/operator.yaml")
    assert flags.config == config_path
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    config_volume = next(name for name, volume in volumes.items() if "configMap" in volume)
    assert Path(mounts[config_volume]) == config_path.parent
    assert volumes[config_volume]["configMap"]["name"] == "stackflow"
    assert config_path.name in rendered.one("ConfigMap")["data"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports["health"] == flags.health_port == 8081
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "health"}


def test_the_pods_run_as_non_root_on_a_read_only_root_without_capabilities() -> None:
    rendered = Rendered.of({})
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    container = rendered.container()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["serviceAccountName"] == "stackflow"


@pytest.mark.parametrize(
    ("values", "changes"),
    [
        ({"config": {"logVerbosity": 1}}, True),
        ({"temporal": {"address": "temporal-frontend.temporal:7233"}}, True),
        ({"podAnnotations": {"team": "search"}}, False),
    ],
    ids=["config", "temporal", "pod-annotation"],
)
def test_the_config_checksum_follows_the_config_map(
    values: Mapping[str, Any], changes: bool
) -> None:
    def checksum(rendered: Rendered) -> str:
        template = rendered.one("Deployment")["spec"]["template"]
        return str(template["metadata"]["annotations"]["checksum/config"])

    assert (checksum(Rendered.of(values)) != checksum(Rendered.of({}))) is changes


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"managedNamespaceSelector": SELECTOR, "managedNamespaces": ["team-a"]},
            "managedNamespaceSelector and managedNamespaces are mutually exclusive",
        ),
        (
            {"managedNamespaceSelector": SELECTOR, "createClusterScopedResources": False},
            "managedNamespaceSelector needs createClusterScopedResources: true",
        ),
        (
            {"webhook": {"enabled": True}, "createClusterScopedResources": False},
            "webhook.enabled needs createClusterScopedResources: true",
        ),
        (
            {"temporal": {"tls": {"enabled": True}}},
            "temporal.tls.enabled needs temporal.tls.secretName",
        ),
        (
            {"temporal": {"tls": {"enabled": True, "secretName": "s", "keyKey": ""}}},
            "temporal.tls.certKey and temporal.tls.keyKey must be set together",
        ),
        (
            {"temporal": {"tls": {"serverName": "temporal.example"}}},
            "temporal.tls.serverName is not supported yet",
        ),
        (
            {"temporal": {"apiKey": {"existingSecret": "s", "key": ""}}},
            "temporal.apiKey.existingSecret needs temporal.apiKey.key",
        ),
        (
            {"replicaCount": 2, "config": {"enableLeaderElection": False}},
            "replicaCount above 1 needs config.enableLeaderElection: true",
        ),
    ],
    ids=[
        "selector-and-list",
        "selector-without-cluster-role",
        "webhook-without-cluster-role",
        "tls-without-secret",
        "tls-cert-without-key",
        "tls-server-name",
        "api-key-without-key",
        "replicas-without-election",
    ],
)
def test_refused_values_fail_rendering_naming_them(values: Mapping[str, Any], message: str) -> None:
    done = template(values)
    assert done.returncode != 0, f"rendered: {done.stdout[:300]}"
    assert message in done.stderr, done.stderr
    assert "validate-chart.yaml" in done.stderr, done.stderr


#: Values setting every configuration key away from the operator's default.
EVERY_KEY = {
    "operatorNamespace": "ops",
    "managedNamespaces": ["team-a", "team-b"],
    "webhook": {"enabled": True, "port": 9444, "manageCerts": False},
    "refs": {"enforceRBAC": True},
    "temporal": {
        "address": "temporal-frontend.temporal:7233",
        "namespace": "stackflow-prod",
        "taskQueue": "stackflow-prod",
        "tls": {"enabled": True, "secretName": "temporal-client"},
        "apiKey": {"existingSecret": "temporal-cloud", "key": "api-key"},
    },
    "config": {
        "metricsPort": 9090,
        "enableLeaderElection": False,
        "disableTelemetry": True,
        "telemetryInterval": "90m",
        "logVerbosity": 2,
        "maxConcurrentReconciles": 3,
        "temporalMaxCachedWorkflows": 0,
        "temporalWorkflowSandbox": True,
        "temporalPayloadEncryptionAllowPlaintext": True,
        "inClusterNetworking": False,
        "elasticsearchUrl": "https://quickstart-es-http.team-a.svc:9200",
        "licensePublicKey": {"existingSecret": "license-key", "key": "key.pem"},
    },
}


def load_rendered(values: Mapping[str, Any], root: Path) -> OperatorConfig:
    """The operator's configuration as ``stackflow run`` would load it in the rendered Pod."""
    path, environ = materialize(Rendered.of(values), root)
    return load_config(path, environ)


def test_the_config_file_covers_every_operator_key() -> None:
    rendered = Rendered.of(EVERY_KEY)
    in_file = set(yaml.safe_load(rendered.config_text()))
    # The selector excludes the list: rendered on its own.
    selector = Rendered.of({"managedNamespaceSelector": SELECTOR}).config_text()
    in_file |= set(yaml.safe_load(selector))
    from_env = {
        key
        for key in config_keys()
        for variable in rendered.container()["env"]
        if variable["name"] == env_var_name(key)
    }
    assert from_env == {"temporal-api-key"}
    assert in_file | from_env == set(config_keys())


def test_the_default_config_is_the_operator_default(tmp_path: Path) -> None:
    assert load_rendered({}, tmp_path) == OperatorConfig()


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"managedNamespaces": ["team-a"]},
            {"namespaces": ("team-a",), "scope_mode": ScopeMode.STATIC_LIST},
        ),
        (
            {"managedNamespaceSelector": SELECTOR},
            {"dynamic_namespaces_enabled": True, "scope_mode": ScopeMode.DYNAMIC},
        ),
        (
            {
                "managedNamespaceSelector": {
                    "matchExpressions": [{"key": "tier", "operator": "Exists"}]
                }
            },
            {"dynamic_namespaces_enabled": True},
        ),
        (
            # Typed as `helm --set` types them: label values and names must still be strings.
            {
                "managedNamespaceSelector": {
                    "matchLabels": {"eck-visible": True},
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": [1, True]}],
                },
                "temporal": {"namespace": 123, "taskQueue": 7},
            },
            {
                "namespace_selector_text": "eck-visible=true,tier in (1,true)",
                "temporal_namespace": "123",
                "temporal_task_queue": "7",
            },
        ),
        ({}, {"scope_mode": ScopeMode.ALL_NAMESPACES, "operator_namespace": "elastic-system"}),
        ({"replicaCount": 3}, {"enable_leader_election": True}),
        (
            {"config": {"elasticsearchDial": "endpoints"}},
            {"elasticsearch_dial": ElasticsearchDial.ENDPOINTS},
        ),
        (
            EVERY_KEY,
            {
                "operator_namespace": "ops",
                "namespaces": ("team-a", "team-b"),
                "enable_webhook": True,
                "webhook_port": 9444,
                "manage_webhook_certs": False,
                "enforce_rbac_on_refs": True,
                "webhook_secret": "stackflow-webhook-cert",
                "webhook_name": "stackflow.ops.k8s.elastic.co",
                "metrics_port": 9090,
                "enable_leader_election": False,
                "disable_telemetry": True,
                "telemetry_interval_seconds": 5400.0,
                "log_verbosity": 2,
                "max_concurrent_reconciles": 3,
                "temporal_address": "temporal-frontend.temporal:7233",
                "temporal_namespace": "stackflow-prod",
                "temporal_task_queue": "stackflow-prod",
                "temporal_tls_ca": "etc/temporal-tls/ca.crt",
                "temporal_tls_cert": "etc/temporal-tls/tls.crt",
                "temporal_tls_key": "etc/temporal-tls/tls.key",
                "temporal_api_key": "secret:temporal-cloud/api-key",
                "temporal_max_cached_workflows": 0,
                "temporal_workflow_sandbox": True,
                "temporal_payload_encryption_allow_plaintext": True,
                "in_cluster_networking": False,
                "elasticsearch_url": "https://quickstart-es-http.team-a.svc:9200/",
                "license_public_key": "etc/stackflow-license/key.pem",
            },
        ),
    ],
    ids=[
        "static-list",
        "selector",
        "selector-expressions",
        "typed-by-set",
        "defaults",
        "replicas",
        "elasticsearch-dial",
        "every-key",
    ],
)
def test_the_operator_loads_the_rendered_config(
    values: Mapping[str, Any], expected: Mapping[str, Any], tmp_path: Path
) -> None:
    config = load_rendered(values, tmp_path)
    seen: dict[str, Any] = {}
    for name in expected:
        if name == "scope_mode":
            seen[name] = config.scope().mode
        elif name == "namespace_selector_text":
            assert config.namespace_selector is not None
            seen[name] = config.namespace_selector.to_string()
        elif name == "telemetry_interval_seconds":
            seen[name] = config.telemetry_interval.total_seconds()
        elif name == "elasticsearch_url":
            seen[name] = str(config.elasticsearch_url)
        else:
            value = getattr(config, name)
            if hasattr(value, "get_secret_value"):
                value = value.get_secret_value()
            elif isinstance(value, Path):  # the mounted file, under tmp_path
                value = str(value.relative_to(tmp_path))
            seen[name] = value
    assert seen == dict(expected)
