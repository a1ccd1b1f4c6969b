"""The StackConfigPolicy activities against kubesim (and the fake Elasticsearch): the merged
file-settings Secret of two policies, a conflict, readiness from the cluster's reported version,
an untargeted cluster's reset, the finalizer and the flip mapper."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from temporalio.testing import ActivityEnvironment

from activities import stackconfigpolicy as policy_activities
from activities.errors import InvalidSpecError, translated_errors
from kubesim.testing import KubeSim
from stackflow.api.kinds import kind_info
from stackflow.controllers import CONTROLLERS
from stackflow.kube import errors
from stackflow.models.engine import (
    FinalizeInput,
    FlipDirectionName,
    ReconcileResult,
    ResourceRef,
)
from stackflow.models.kinds import CONFIGMAPS, SECRETS, STATEFULSETS
from stackflow.stack.policies.stack_config.secrets import (
    es_secret_mount_copy_name,
    file_settings_secret_name,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration import families
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    Cluster,
    FakeFactory,
    cluster,
    fake_es,
    serve_crds,
    startup,
)

__all__ = ["cluster", "fake_es"]

NAMESPACE = "team-a"
POLICY = kind_info("StackConfigPolicy").resource
ES = kind_info("Elasticsearch").resource
KB = kind_info("Kibana").resource


@pytest.fixture(autouse=True)
async def crds(cluster: Cluster, kubesim: KubeSim, ka_client: client.ApiClient) -> None:
    await serve_crds(kubesim, ka_client, "StackConfigPolicy", "Kibana")
    await cluster.create_namespace(NAMESPACE)


def policy(namespace: str, name: str, weight: int, settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": POLICY.api_version,
        "kind": "StackConfigPolicy",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {
            "weight": weight,
            "resourceSelector": {"matchLabels": {"env": "prod"}},
            "elasticsearch": {"clusterSettings": settings},
        },
    }


def elasticsearch(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"namespace": NAMESPACE, "name": name, "labels": labels},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


def kibana(config: dict[str, Any]) -> dict[str, Any]:
    """The Kibana ``kb`` the policies below select, with ``config`` in its spec (when any)."""
    spec: dict[str, Any] = {"version": "9.1.0", "count": 1}
    if config:
        spec["config"] = config
    return {
        "apiVersion": KB.api_version,
        "kind": "Kibana",
        "metadata": {"namespace": NAMESPACE, "name": "kb", "labels": {"env": "prod"}},
        "spec": spec,
    }


def kibana_policy(config: dict[str, Any]) -> dict[str, Any]:
    """The policy ``kb-policy`` setting ``config`` in the ``kibana.yml`` of the Kibanas it selects."""
    return {
        "apiVersion": POLICY.api_version,
        "kind": "StackConfigPolicy",
        "metadata": {"namespace": NAMESPACE, "name": "kb-policy"},
        "spec": {
            "resourceSelector": {"matchLabels": {"env": "prod"}},
            "kibana": {"config": config},
        },
    }


def ref(namespace: str, name: str) -> ResourceRef:
    return ResourceRef.of("stackconfigpolicy", POLICY, namespace=namespace, name=name)


async def reconcile(cluster: Cluster, target: ResourceRef, **kwargs: Any) -> ReconcileResult:
    context = cluster.context(**kwargs)
    request = startup(target)
    return await ActivityEnvironment().run(translated_errors(families.reconcile), context, request)


async def settings(cluster: Cluster, es: str = "prod") -> dict[str, Any]:
    secret = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name=file_settings_secret_name(es))
    document: dict[str, Any] = json.loads(base64.b64decode(secret["data"]["settings.json"]))
    return document


async def status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    obj = await cluster.raw.get(POLICY, namespace=namespace, name=name)
    return dict(obj.get("status") or {})


async def test_two_policies_merge_by_weight_and_the_version_moves_only_on_change(
    cluster: Cluster,
) -> None:
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    await cluster.raw.create(ES, elasticsearch("dev", {"env": "dev"}), namespace=NAMESPACE)
    low = policy(OPERATOR_NAMESPACE, "low", 10, {"a": "low", "b": "low"})
    high = policy(NAMESPACE, "high", 100, {"a": "high"})
    await cluster.raw.create(POLICY, low, namespace=OPERATOR_NAMESPACE)
    await cluster.raw.create(POLICY, high, namespace=NAMESPACE)

    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "low"))
    document = await settings(cluster)
    assert document["state"]["cluster_settings"] == {"a": "high", "b": "low"}
    version = document["metadata"]["version"]
    secret = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-file-settings")
    assert json.loads(secret["metadata"]["annotations"]["eck.k8s.elastic.co/owner-refs"]) == [
        "elastic-system/low",
        "team-a/high",
    ]
    # The unlabelled cluster is not targeted: no policy Secret for it.
    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="dev-es-file-settings")
    await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-policy-config")

    await reconcile(cluster, ref(NAMESPACE, "high"))
    assert (await settings(cluster))["metadata"]["version"] == version
    for name in ("low", "high"):
        namespace = OPERATOR_NAMESPACE if name == "low" else NAMESPACE
        got = await status(cluster, namespace, name)
        assert (got["resources"], got["readyCount"]) == (1, "0/1")
        # Outside a cluster nothing is dialled: the change is still being applied.
        assert got["details"]["elasticsearch"]["team-a/prod"]["phase"] == "ApplyingChanges"

    # The high-weight policy gone: its setting goes, the version moves, one owner is left.
    await cluster.raw.delete(POLICY, namespace=NAMESPACE, name="high")
    context = cluster.context()
    await ActivityEnvironment().run(
        families.finalize, context, FinalizeInput(ref=ref(NAMESPACE, "high"))
    )
    document = await settings(cluster)
    assert document["state"]["cluster_settings"] == {"a": "low", "b": "low"}
    assert int(document["metadata"]["version"]) == int(version) + 1
    secret = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-file-settings")
    assert (
        secret["metadata"]["annotations"]["eck.k8s.elastic.co/owner-refs"]
        == f'["{OPERATOR_NAMESPACE}/low"]'
    )

    # The cluster no longer matches: reset to an empty state, policy config deleted, not counted.
    await cluster.raw.merge_patch(
        ES, {"metadata": {"labels": {"env": "qa"}}}, namespace=NAMESPACE, name="prod"
    )
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "low"))
    document = await settings(cluster)
    assert document["state"]["cluster_settings"] == {}
    assert int(document["metadata"]["version"]) == int(version) + 2
    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-policy-config")
    got = await status(cluster, OPERATOR_NAMESPACE, "low")
    assert (got["resources"], got["phase"], got.get("details") or {}) == (0, "Ready", {})


async def test_equal_weights_conflict_and_nothing_is_written(cluster: Cluster) -> None:
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    await cluster.raw.create(
        POLICY, policy(OPERATOR_NAMESPACE, "one", 5, {"a": "1"}), namespace=OPERATOR_NAMESPACE
    )
    await cluster.raw.create(POLICY, policy(NAMESPACE, "two", 5, {"a": "2"}), namespace=NAMESPACE)

    await reconcile(cluster, ref(NAMESPACE, "two"))

    got = await status(cluster, NAMESPACE, "two")
    assert got["phase"] == "Conflict"
    entry = got["details"]["elasticsearch"]["team-a/prod"]
    assert entry["phase"] == "Conflict"
    assert entry["error"]["message"] == (
        'merge conflict: policies "team-a/two" and "elastic-system/one" have the same weight 5'
    )
    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-file-settings")


async def test_ready_once_the_cluster_reports_the_version(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    await cluster.raw.create(
        SECRETS,
        {
            "metadata": {"namespace": NAMESPACE, "name": "prod-es-internal-users"},
            "data": {"elastic-internal": base64.b64encode(b"secret").decode()},
        },
        namespace=NAMESPACE,
    )
    await cluster.raw.create(
        POLICY, policy(OPERATOR_NAMESPACE, "p", 0, {"a": "1"}), namespace=OPERATOR_NAMESPACE
    )
    factory = FakeFactory(fake_es)

    first = await reconcile(cluster, ref(OPERATOR_NAMESPACE, "p"), elasticsearch=factory)
    assert first.requeue_after_seconds == policy_activities.NOT_READY_REQUEUE_SECONDS
    version = int((await settings(cluster))["metadata"]["version"])
    entry = (await status(cluster, OPERATOR_NAMESPACE, "p"))["details"]["elasticsearch"]
    assert entry["team-a/prod"] == {"phase": "ApplyingChanges", "expectedVersion": version}

    fake_es.state.file_settings_version = version
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "p"), elasticsearch=factory)
    got = await status(cluster, OPERATOR_NAMESPACE, "p")
    assert (got["phase"], got["readyCount"]) == ("Ready", "1/1")
    assert got["details"]["elasticsearch"]["team-a/prod"]["currentVersion"] == version


async def test_flip_mapper_names_the_flipped_namespace_and_the_operator_namespace(
    cluster: Cluster,
) -> None:
    await cluster.create_namespace("team-b")
    for namespace, name in ((OPERATOR_NAMESPACE, "global"), (NAMESPACE, "a"), ("team-b", "b")):
        await cluster.raw.create(
            POLICY, policy(namespace, name, 1, {"x": "y"}), namespace=namespace
        )
    found = await families.flip_targets(
        cluster.context(), "stackconfigpolicy", NAMESPACE, FlipDirectionName.INTO_SCOPE
    )
    assert sorted(obj["metadata"]["name"] for obj in found) == ["a", "global"]


async def test_a_kibana_gets_its_policy_config_and_loses_it_when_no_longer_targeted(
    cluster: Cluster,
) -> None:
    await cluster.raw.create(KB, kibana({}), namespace=NAMESPACE)
    obj = kibana_policy({"xpack.fleet.agents.enabled": False})
    await cluster.raw.create(POLICY, obj, namespace=NAMESPACE)

    await reconcile(cluster, ref(NAMESPACE, "kb-policy"))

    secret = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="kb-kb-policy-config")
    assert json.loads(base64.b64decode(secret["data"]["kibana.json"])) == {
        "xpack.fleet.agents.enabled": False
    }
    assert secret["metadata"]["annotations"]["eck.k8s.elastic.co/owner-refs"] == (
        f'["{NAMESPACE}/kb-policy"]'
    )
    got = await status(cluster, NAMESPACE, "kb-policy")
    # The Kibana controller has not rendered kibana.yml with the settings yet.
    assert got["details"]["kibana"]["team-a/kb"]["phase"] == "ApplyingChanges"
    assert got["resources"] == 1

    await cluster.raw.merge_patch(
        KB, {"metadata": {"labels": {"env": None}}}, namespace=NAMESPACE, name="kb"
    )
    await reconcile(cluster, ref(NAMESPACE, "kb-policy"))

    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="kb-kb-policy-config")
    assert (await status(cluster, NAMESPACE, "kb-policy"))["resources"] == 0


async def test_an_unusable_selector_is_an_invalid_spec(cluster: Cluster) -> None:
    obj = policy(NAMESPACE, "bad", 0, {"a": "1"})
    obj["spec"]["resourceSelector"] = {
        "matchExpressions": [{"key": "env", "operator": "Sometimes", "values": ["x"]}]
    }
    await cluster.raw.create(POLICY, obj, namespace=NAMESPACE)
    request = startup(ref(NAMESPACE, "bad"))
    with pytest.raises(InvalidSpecError, match="resourceSelector"):
        await families.reconcile(cluster.context(), request)


async def test_an_edit_of_a_policy_secure_settings_secret_changes_the_file_settings_secret(
    cluster: Cluster,
) -> None:
    """The file-settings Secret carries the cluster-name label: changing it wakes the cluster,
    which rebuilds its keystore from the policy's Secret."""
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    keyed = policy(OPERATOR_NAMESPACE, "keyed", 10, {"a": "1"})
    keyed["spec"]["elasticsearch"]["secureSettings"] = [{"secretName": "policy-keys"}]
    await cluster.raw.create(POLICY, keyed, namespace=OPERATOR_NAMESPACE)
    keys = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": OPERATOR_NAMESPACE, "name": "policy-keys"},
        "data": {"slack.url": base64.b64encode(b"https://one").decode()},
    }
    await cluster.raw.create(SECRETS, keys, namespace=OPERATOR_NAMESPACE)

    async def annotations() -> dict[str, str]:
        secret = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-file-settings")
        return dict(secret["metadata"].get("annotations") or {})

    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "keyed"))
    first = await annotations()
    assert json.loads(first["policy.k8s.elastic.co/secure-settings-secrets"]) == [
        {"namespace": OPERATOR_NAMESPACE, "secretName": "policy-keys"}
    ]
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "keyed"))
    assert await annotations() == first

    await cluster.raw.merge_patch(
        SECRETS,
        {"data": {"slack.url": base64.b64encode(b"https://two").decode()}},
        namespace=OPERATOR_NAMESPACE,
        name="policy-keys",
    )
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "keyed"))
    assert await annotations() != first


async def run_controller(cluster: Cluster, controller: str, name: str, activity: Any) -> None:
    """One reconcile of the Elasticsearch or Kibana controller (as its workflow would run it)."""
    request = startup(CONTROLLERS.named(controller).ref(namespace=NAMESPACE, name=name))
    await ActivityEnvironment().run(translated_errors(activity), cluster.context(), request)


def secret_text(secret: dict[str, Any], key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


def source_secret(name: str, value: bytes) -> dict[str, Any]:
    """A Secret of the operator namespace that a policy mounts."""
    return {
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
        "data": {"key.json": base64.b64encode(value).decode()},
    }


async def mounted_secret(cluster: Cluster, mount_path: str) -> str:
    """The Secret the cluster's StatefulSet mounts at ``mount_path`` in the elasticsearch container."""
    sts = await cluster.raw.get(STATEFULSETS, namespace=NAMESPACE, name="prod-es-default")
    pod = sts["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "elasticsearch")
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == mount_path)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    return str(volume["secret"]["secretName"])


async def test_secret_mounts_are_copied_into_the_cluster_namespace_and_kept_in_sync(
    cluster: Cluster,
) -> None:
    """A policy of the operator namespace mounts a Secret of its own namespace: the cluster's
    namespace gets a policy-owned copy (ECK's ``<es>-es-scp-<hash>``), the StatefulSet mounts the
    copy, an edit of the source reaches the copy and removing the mount deletes it."""
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    await cluster.raw.create(
        SECRETS, source_secret("gcs-creds", b"v1"), namespace=OPERATOR_NAMESPACE
    )
    obj = policy(OPERATOR_NAMESPACE, "mounts", 1, {"a": "1"})
    obj["spec"]["elasticsearch"]["secretMounts"] = [
        {"secretName": "gcs-creds", "mountPath": "/usr/share/gcs"}
    ]
    await cluster.raw.create(POLICY, obj, namespace=OPERATOR_NAMESPACE)
    copy_name = es_secret_mount_copy_name("prod", "gcs-creds")
    assert copy_name.startswith("prod-es-scp-")

    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "mounts"))

    copy = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name=copy_name)
    assert secret_text(copy, "key.json") == "v1"
    labels = copy["metadata"]["labels"]
    assert labels["eck.k8s.elastic.co/owner-kind"] == "StackConfigPolicy"
    assert labels["eck.k8s.elastic.co/owner-name"] == "mounts"
    assert (
        copy["metadata"]["annotations"]["policy.k8s.elastic.co/source-secret-name"] == "gcs-creds"
    )
    # The source Secret wakes the policy.
    row = CONTROLLERS.named("stackconfigpolicy")
    assert row.references is not None
    stored = await cluster.raw.get(POLICY, namespace=OPERATOR_NAMESPACE, name="mounts")
    assert (OPERATOR_NAMESPACE, "gcs-creds") in {
        (key.namespace, key.name) for key in row.references(stored) if key.kind == "Secret"
    }

    await run_controller(cluster, "elasticsearch", "prod", families.reconcile)
    assert await mounted_secret(cluster, "/usr/share/gcs") == copy_name

    # An edit of the source is copied again at the next reconcile.
    await cluster.raw.merge_patch(
        SECRETS,
        {"data": {"key.json": base64.b64encode(b"v2").decode()}},
        namespace=OPERATOR_NAMESPACE,
        name="gcs-creds",
    )
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "mounts"))
    copy = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name=copy_name)
    assert secret_text(copy, "key.json") == "v2"
    # Unchanged: not rewritten.
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "mounts"))
    again = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name=copy_name)
    assert again["metadata"]["resourceVersion"] == copy["metadata"]["resourceVersion"]

    # The mount removed: the copy goes.
    await cluster.raw.merge_patch(
        POLICY,
        {"spec": {"elasticsearch": {"secretMounts": None}}},
        namespace=OPERATOR_NAMESPACE,
        name="mounts",
    )
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "mounts"))
    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name=copy_name)
    assert (await settings(cluster))["state"]["cluster_settings"] == {"a": "1"}


async def test_a_missing_secret_mount_source_is_an_error_for_that_cluster(
    cluster: Cluster,
) -> None:
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    obj = policy(OPERATOR_NAMESPACE, "mounts", 1, {"a": "1"})
    obj["spec"]["elasticsearch"]["secretMounts"] = [
        {"secretName": "absent", "mountPath": "/usr/share/absent"}
    ]
    await cluster.raw.create(POLICY, obj, namespace=OPERATOR_NAMESPACE)

    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "mounts"))

    got = await status(cluster, OPERATOR_NAMESPACE, "mounts")
    entry = got["details"]["elasticsearch"]["team-a/prod"]
    assert entry["phase"] == "Error"
    assert entry["error"]["message"] == (
        f'spec.elasticsearch.secretMounts: Secret "{OPERATOR_NAMESPACE}/absent" not found'
    )
    assert got["phase"] == "Error"
    # Nothing mounting a Secret that is not there is written for the cluster.
    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-policy-config")

    await cluster.raw.create(
        SECRETS, source_secret("absent", b"here"), namespace=OPERATOR_NAMESPACE
    )
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "mounts"))
    copy_name = es_secret_mount_copy_name("prod", "absent")
    copy = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name=copy_name)
    assert secret_text(copy, "key.json") == "here"
    recovered = await status(cluster, OPERATOR_NAMESPACE, "mounts")
    assert recovered["details"]["elasticsearch"]["team-a/prod"]["phase"] != "Error"


async def test_the_cluster_takes_the_policy_config_mounts_roles_and_variables(
    cluster: Cluster,
) -> None:
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    await cluster.raw.create(
        CONFIGMAPS,
        {"metadata": {"name": "vars", "namespace": OPERATOR_NAMESPACE}, "data": {"LEVEL": "warn"}},
        namespace=OPERATOR_NAMESPACE,
    )
    await cluster.raw.create(
        SECRETS, source_secret("azure-creds", b"k"), namespace=OPERATOR_NAMESPACE
    )
    obj = policy(
        OPERATOR_NAMESPACE, "cfg", 1, {"indices.recovery.max_bytes_per_sec": "${RATE:-90mb}"}
    )
    obj["spec"]["variablesFrom"] = [{"kind": "ConfigMap", "name": "vars"}]
    obj["spec"]["elasticsearch"] |= {
        "config": {"logger.org.elasticsearch.discovery": "${LEVEL}"},
        "secretMounts": [{"secretName": "azure-creds", "mountPath": "/usr/share/azure"}],
        "securityRoles": {"log-reader": {"cluster": ["monitor"]}},
    }
    await cluster.raw.create(POLICY, obj, namespace=OPERATOR_NAMESPACE)

    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "cfg"))
    document = await settings(cluster)
    assert document["state"]["cluster_settings"] == {"indices.recovery.max_bytes_per_sec": "90mb"}

    expected_hash = (
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-policy-config")
    )["metadata"]["annotations"]["policy.k8s.elastic.co/elasticsearch-config-mounts-hash"]

    await run_controller(cluster, "elasticsearch", "prod", families.reconcile)

    config = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-default-es-config")
    yml = yaml.safe_load(secret_text(config, "elasticsearch.yml"))
    assert yml["logger.org.elasticsearch.discovery"] == "warn"  # variable substituted
    template = (await cluster.raw.get(STATEFULSETS, namespace=NAMESPACE, name="prod-es-default"))[
        "spec"
    ]["template"]
    assert (
        template["metadata"]["annotations"][
            "policy.k8s.elastic.co/elasticsearch-config-mounts-hash"
        ]
        == expected_hash
    )
    sts = await cluster.raw.get(STATEFULSETS, namespace=NAMESPACE, name="prod-es-default")
    pod = sts["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "elasticsearch")
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/usr/share/azure")
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == es_secret_mount_copy_name("prod", "azure-creds")
    realm = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-xpack-file-realm")
    assert yaml.safe_load(secret_text(realm, "roles.yml"))["log-reader"] == {"cluster": ["monitor"]}

    # A changed variable changes the rendered config, and the Pods roll on the config hash.
    hash_label = "elasticsearch.k8s.elastic.co/config-hash"  # a Pod template annotation
    before = sts["spec"]["template"]["metadata"]["annotations"][hash_label]
    await cluster.raw.merge_patch(
        CONFIGMAPS, {"data": {"LEVEL": "debug"}}, namespace=OPERATOR_NAMESPACE, name="vars"
    )
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "cfg"))
    await run_controller(cluster, "elasticsearch", "prod", families.reconcile)
    config = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-default-es-config")
    assert (
        yaml.safe_load(secret_text(config, "elasticsearch.yml"))[
            "logger.org.elasticsearch.discovery"
        ]
        == "debug"
    )
    sts = await cluster.raw.get(STATEFULSETS, namespace=NAMESPACE, name="prod-es-default")
    assert sts["spec"]["template"]["metadata"]["annotations"][hash_label] != before


async def test_a_missing_variables_source_is_an_error_until_it_appears(cluster: Cluster) -> None:
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    obj = policy(NAMESPACE, "vars", 1, {"a": "${A}"})
    obj["spec"]["variablesFrom"] = [
        {"kind": "Secret", "name": "gone", "optional": True},
        {"kind": "Secret", "name": "creds"},
    ]
    await cluster.raw.create(POLICY, obj, namespace=NAMESPACE)

    result = await reconcile(cluster, ref(NAMESPACE, "vars"))

    got = await status(cluster, NAMESPACE, "vars")
    assert got["phase"] == "Error"
    message = 'spec.variablesFrom: Secret "team-a/creds" not found'
    assert message in result.message
    assert any(message in c["message"] for c in got["conditions"])
    with pytest.raises(errors.NotFound):  # nothing written meanwhile
        await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="prod-es-policy-config")

    await cluster.raw.create(
        SECRETS,
        {
            "metadata": {"name": "creds", "namespace": NAMESPACE},
            "data": {"A": base64.b64encode(b"from-secret").decode()},
        },
        namespace=NAMESPACE,
    )
    await reconcile(cluster, ref(NAMESPACE, "vars"))
    assert (await settings(cluster))["state"]["cluster_settings"] == {"a": "from-secret"}
    recovered = await status(cluster, NAMESPACE, "vars")
    assert recovered["phase"] != "Error"
    assert not any(message in c["message"] for c in recovered.get("conditions") or [])


async def test_variables_from_another_namespace_only_for_operator_namespace_policies(
    cluster: Cluster,
) -> None:
    obj = policy(NAMESPACE, "far", 1, {"a": "${A}"})
    obj["spec"]["variablesFrom"] = [{"kind": "ConfigMap", "name": "v", "namespace": "elsewhere"}]
    await cluster.raw.create(POLICY, obj, namespace=NAMESPACE)
    request = startup(ref(NAMESPACE, "far"))
    with pytest.raises(InvalidSpecError, match="operator namespace"):
        await families.reconcile(cluster.context(), request)


async def test_the_kibana_takes_the_policy_config_and_the_policy_sees_it_applied(
    cluster: Cluster,
) -> None:
    await cluster.raw.create(KB, kibana({"server.name": "mine"}), namespace=NAMESPACE)
    obj = kibana_policy({"server.name": "policy", "xpack.fleet.agents.enabled": False})
    await cluster.raw.create(POLICY, obj, namespace=NAMESPACE)
    await reconcile(cluster, ref(NAMESPACE, "kb-policy"))

    await run_controller(cluster, "kibana", "kb", families.reconcile)

    config = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="kb-kb-config")
    yml = yaml.safe_load(secret_text(config, "kibana.yml"))
    assert yml["server"]["name"] == "policy"  # the policy wins the spec's config, as ECK
    assert yml["xpack"]["fleet"]["agents"]["enabled"] is False
    await reconcile(cluster, ref(NAMESPACE, "kb-policy"))
    got = await status(cluster, NAMESPACE, "kb-policy")
    assert got["details"]["kibana"]["team-a/kb"]["phase"] == "Ready"


async def test_ready_only_once_the_cluster_rendered_the_policy_config(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await cluster.raw.create(ES, elasticsearch("prod", {"env": "prod"}), namespace=NAMESPACE)
    obj = policy(OPERATOR_NAMESPACE, "p", 0, {"a": "1"})
    obj["spec"]["elasticsearch"]["config"] = {"node.attr.rack": "r1"}
    await cluster.raw.create(POLICY, obj, namespace=OPERATOR_NAMESPACE)
    factory = FakeFactory(fake_es)
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "p"), elasticsearch=factory)
    fake_es.state.file_settings_version = int((await settings(cluster))["metadata"]["version"])

    # The file settings are applied, but no StatefulSet has the policy's config yet.
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "p"), elasticsearch=factory)
    got = await status(cluster, OPERATOR_NAMESPACE, "p")
    assert got["details"]["elasticsearch"]["team-a/prod"]["phase"] == "ApplyingChanges"

    await run_controller(cluster, "elasticsearch", "prod", families.reconcile)
    await reconcile(cluster, ref(OPERATOR_NAMESPACE, "p"), elasticsearch=factory)
    got = await status(cluster, OPERATOR_NAMESPACE, "p")
    assert (got["phase"], got["readyCount"]) == ("Ready", "1/1")
