"""The pure rules of ECK's remote clusters: seeds, managed aliases, remote CA, API keys, flips."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from stackflow.stack.elasticsearch.remote_clusters import (
    API_KEYS_ANNOTATION,
    MANAGED_REMOTE_CLUSTERS_ANNOTATION,
    ClusterKey,
    ExistingKey,
    ExpectedKey,
    KeyPlan,
    RemoteClusterRef,
    StoredKey,
    WarningEvent,
    api_key_name,
    api_key_secret_key,
    api_keys_secret_contents,
    api_keys_secret_data,
    enterprise_disabled_event,
    expected_api_keys,
    flip_clusters,
    has_relationship,
    managed_aliases_annotation_patch,
    plan_api_keys,
    read_managed_aliases,
    read_stored_keys,
    related_clusters,
    remote_api_keys_secret_name,
    remote_ca_bundle,
    remote_ca_copy_labels,
    remote_ca_copy_name,
    remote_ca_copy_peers,
    remote_ca_secret_name,
    remote_cluster_refs,
    remote_cluster_settings,
    supports_api_keys,
)


def _es(namespace: str, name: str, *remotes: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"version": "8.15.0"}
    if remotes:
        spec["remoteClusters"] = list(remotes)
    return {
        "kind": "Elasticsearch",
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec,
    }


def _remote(alias: str, name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    es_ref: dict[str, Any] = {"name": name}
    if namespace is not None:
        es_ref["namespace"] = namespace
    return {"name": alias, "elasticsearchRef": es_ref, **extra}


def _pem(label: str) -> str:
    return f"-----BEGIN CERTIFICATE-----\n{label}\n-----END CERTIFICATE-----"


# --- parsing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("es", "expected"),
    [
        pytest.param(
            _es("ns", "a", _remote("b", "b")),
            [RemoteClusterRef("b", "ns", "b")],
            id="same-namespace-without-namespace",
        ),
        pytest.param(
            _es("ns", "a", _remote("far", "b", "other")),
            [RemoteClusterRef("far", "other", "b")],
            id="explicit-namespace",
        ),
        pytest.param(
            _es("ns", "a", {"name": "x"}, {"elasticsearchRef": {"name": "b"}}, _remote("ok", "c")),
            [RemoteClusterRef("ok", "ns", "c")],
            id="malformed-entries-skipped",
        ),
        pytest.param(_es("ns", "a"), [], id="no-remote-clusters"),
    ],
)
def test_remote_cluster_refs(es: Mapping[str, Any], expected: list[RemoteClusterRef]) -> None:
    assert remote_cluster_refs(es) == expected


@pytest.mark.parametrize(
    ("entry", "uses_api_key", "access"),
    [
        pytest.param(_remote("r", "b"), False, None, id="certificates"),
        pytest.param(
            _remote("r", "b", apiKey={"access": {"search": [{"names": ["*"]}]}}),
            True,
            {"search": [{"names": ["*"]}]},
            id="api-key-with-access",
        ),
        pytest.param(_remote("r", "b", apiKey={}), True, {}, id="api-key-without-access"),
    ],
)
def test_remote_cluster_refs_api_key(
    entry: Mapping[str, Any], uses_api_key: bool, access: Mapping[str, Any] | None
) -> None:
    (ref,) = remote_cluster_refs(_es("ns", "a", entry))
    assert ref.uses_api_key is uses_api_key
    assert ref.api_key_access == access


# --- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            remote_ca_secret_name("quickstart"), "quickstart-es-remote-ca", id="remote-ca"
        ),
        pytest.param(
            remote_api_keys_secret_name("quickstart"),
            "quickstart-es-remote-api-keys",
            id="api-keys-secret",
        ),
        pytest.param(
            api_key_secret_key("eu-west"), "cluster.remote.eu-west.credentials", id="api-key-key"
        ),
    ],
)
def test_names(name: str, expected: str) -> None:
    assert name == expected


# --- versions --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        pytest.param("8.9.9", False, id="8.9.9"),
        pytest.param("8.10.0", True, id="8.10.0"),
        pytest.param("8.10.0-SNAPSHOT", True, id="8.10.0-snapshot"),
        pytest.param("9.1.0", True, id="9.1.0"),
        pytest.param("7.17.20", False, id="7.17"),
        pytest.param("latest", False, id="unparseable"),
        pytest.param("", False, id="empty"),
    ],
)
def test_supports_api_keys(version: str, expected: bool) -> None:
    assert supports_api_keys(version) is expected


# --- settings --------------------------------------------------------------------------------------

_B_SEEDS = ["b-es-transport.ns.svc:9300"]
_B_REMOTE_CLUSTER_SEEDS = ["b-es-remote-cluster.ns.svc:9443"]


def _settings(alias: str, seeds: list[str] | None = None) -> dict[str, list[str] | None]:
    return {f"cluster.remote.{alias}.seeds": seeds}


@pytest.mark.parametrize(
    ("desired", "previous", "version", "expected"),
    [
        pytest.param(
            [RemoteClusterRef("b", "ns", "b")],
            [],
            "8.15.0",
            _settings("b", seeds=_B_SEEDS),
            id="new-alias-certificates",
        ),
        pytest.param(
            [RemoteClusterRef("b", "ns", "b")],
            ["b"],
            "8.15.0",
            _settings("b", seeds=_B_SEEDS),
            id="unchanged-alias",
        ),
        pytest.param(
            [],
            ["b"],
            "8.15.0",
            _settings("b"),
            id="alias-removed",
        ),
        pytest.param(
            [RemoteClusterRef("b2", "ns", "b")],
            ["b"],
            "8.15.0",
            {**_settings("b2", seeds=_B_SEEDS), **_settings("b")},
            id="alias-renamed",
        ),
        pytest.param(
            [RemoteClusterRef("b", "ns", "b", {"search": []})],
            [],
            "8.10.0",
            _settings("b", seeds=_B_REMOTE_CLUSTER_SEEDS),
            id="api-key-8.10-remote-cluster-service",
        ),
        pytest.param(
            [RemoteClusterRef("b", "ns", "b", {"search": []})],
            [],
            "8.9.9",
            _settings("b", seeds=_B_SEEDS),
            id="api-key-before-8.10-falls-back",
        ),
        pytest.param(
            [RemoteClusterRef("far", "other", "c")],
            [],
            "9.1.0",
            _settings("far", seeds=["c-es-transport.other.svc:9300"]),
            id="remote-in-other-namespace",
        ),
        pytest.param(
            [RemoteClusterRef("b", "ns", "b"), RemoteClusterRef("b", "ns", "c")],
            [],
            "8.15.0",
            _settings("b", seeds=_B_SEEDS),
            id="duplicate-alias-first-wins",
        ),
        pytest.param([], [], "8.15.0", {}, id="nothing"),
    ],
)
def test_remote_cluster_settings(
    desired: Sequence[RemoteClusterRef],
    previous: Sequence[str],
    version: str,
    expected: dict[str, list[str] | None],
) -> None:
    assert remote_cluster_settings(desired, previous, version) == expected


@pytest.mark.parametrize(
    ("desired", "keys", "version", "expected"),
    [
        pytest.param(
            [RemoteClusterRef("b", "ns", "b", {}), RemoteClusterRef("c", "ns", "c")],
            {"b": "a2V5"},
            "8.15.0",
            {"cluster.remote.b.credentials": "a2V5"},
            id="api-key-entries-only",
        ),
        pytest.param(
            [RemoteClusterRef("b", "ns", "b", {})],
            {},
            "8.15.0",
            {},
            id="key-not-yet-known",
        ),
        pytest.param(
            [RemoteClusterRef("b", "ns", "b", {})],
            {"b": "a2V5"},
            "8.9.9",
            {},
            id="version-without-api-keys",
        ),
    ],
)
def test_api_keys_secret_data(
    desired: Sequence[RemoteClusterRef],
    keys: Mapping[str, str],
    version: str,
    expected: dict[str, str],
) -> None:
    assert api_keys_secret_data(desired, keys, version) == expected


# --- the managed aliases annotation ------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param(None, [], id="no-annotations"),
        pytest.param({}, [], id="absent"),
        pytest.param({MANAGED_REMOTE_CLUSTERS_ANNOTATION: ""}, [], id="empty"),
        pytest.param({MANAGED_REMOTE_CLUSTERS_ANNOTATION: "a,b"}, ["a", "b"], id="eck-format"),
        pytest.param({MANAGED_REMOTE_CLUSTERS_ANNOTATION: "b, a,,b"}, ["a", "b"], id="untidy"),
        pytest.param({MANAGED_REMOTE_CLUSTERS_ANNOTATION: "solo"}, ["solo"], id="one-alias"),
    ],
)
def test_read_managed_aliases(annotations: Mapping[str, str] | None, expected: list[str]) -> None:
    assert read_managed_aliases(annotations) == expected


@pytest.mark.parametrize(
    ("aliases", "value"),
    [
        pytest.param(["b", "a", "b"], "a,b", id="sorted-unique"),
        pytest.param([], None, id="none-left-deletes-annotation"),
    ],
)
def test_managed_aliases_annotation_patch_round_trips(
    aliases: list[str], value: str | None
) -> None:
    patch = managed_aliases_annotation_patch(aliases)
    assert patch == {MANAGED_REMOTE_CLUSTERS_ANNOTATION: value}
    written = {key: text for key, text in patch.items() if text is not None}
    assert read_managed_aliases(written) == sorted(set(aliases))


# --- relationships and the remote CA --------------------------------------------------------------

_CLUSTERS = [
    _es("ns", "a", _remote("b", "b")),  # same namespace, namespace omitted
    _es("ns", "b", _remote("a", "a")),  # cycle a <-> b
    _es("other", "c", _remote("to-a", "a", "ns")),  # c references a from elsewhere
    _es("other", "d", _remote("to-x", "x", "gone")),  # references a cluster that is not listed
    _es("ns", "self", _remote("me", "self")),  # references itself
    _es("ns", "alone"),
]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        pytest.param(("ns", "a"), [("ns", "b"), ("other", "c")], id="cycle-and-referrer"),
        pytest.param(("ns", "b"), [("ns", "a")], id="cycle-other-side"),
        pytest.param(("other", "c"), [("ns", "a")], id="client-only"),
        pytest.param(("other", "d"), [("gone", "x")], id="remote-not-listed"),
        pytest.param(("ns", "self"), [], id="self-reference-ignored"),
        pytest.param(("ns", "alone"), [], id="unrelated"),
    ],
)
def test_related_clusters(key: ClusterKey, expected: list[ClusterKey]) -> None:
    assert related_clusters(key, _CLUSTERS) == expected


@pytest.mark.parametrize(
    ("related", "cas", "expected"),
    [
        pytest.param(
            [("ns", "b"), ("alpha", "z")],
            {("ns", "b"): _pem("B"), ("alpha", "z"): _pem("Z")},
            f"{_pem('Z')}\n{_pem('B')}\n",
            id="ordered-by-namespace-then-name",
        ),
        pytest.param(
            [("a", "b-c"), ("a-b", "a")],
            {("a", "b-c"): _pem("ABC"), ("a-b", "a"): _pem("ABA")},
            f"{_pem('ABA')}\n{_pem('ABC')}\n",
            id="eck-secret-name-order",
        ),
        pytest.param(
            [("ns", "b"), ("ns", "c")],
            {("ns", "b"): _pem("SHARED") + "\n", ("ns", "c"): "\n" + _pem("SHARED")},
            f"{_pem('SHARED')}\n",
            id="duplicate-ca-once",
        ),
        pytest.param(
            [("ns", "b")],
            {("ns", "b"): f"{_pem('OLD')}\n{_pem('NEW')}\n{_pem('OLD')}\n"},
            f"{_pem('OLD')}\n{_pem('NEW')}\n",
            id="bundle-within-one-ca-deduplicated",
        ),
        pytest.param(
            [("ns", "b"), ("ns", "missing")],
            {("ns", "b"): _pem("B")},
            f"{_pem('B')}\n",
            id="unknown-ca-skipped",
        ),
        pytest.param([], {}, f"{_pem('OWN')}\n", id="no-relationship-own-ca"),
        pytest.param([("ns", "missing")], {}, f"{_pem('OWN')}\n", id="no-known-ca-own-ca"),
    ],
)
def test_remote_ca_bundle(
    related: list[ClusterKey], cas: Mapping[ClusterKey, str], expected: str
) -> None:
    assert remote_ca_bundle(related, cas, own_transport_ca=_pem("OWN")) == expected


# --- the namespace flip mapper ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        pytest.param(
            "ns",
            [("ns", "a"), ("ns", "alone"), ("ns", "b"), ("ns", "self"), ("other", "c")],
            id="flipped-namespace-and-referrer-elsewhere",
        ),
        pytest.param(
            "other",
            [("gone", "x"), ("ns", "a"), ("other", "c"), ("other", "d")],
            id="declared-counterparts-elsewhere",
        ),
        pytest.param("gone", [("other", "d")], id="referrer-of-missing-cluster"),
        pytest.param("empty", [], id="nothing-related"),
    ],
)
def test_flip_clusters(namespace: str, expected: list[ClusterKey]) -> None:
    assert flip_clusters(namespace, _CLUSTERS) == expected


# --- licensing -------------------------------------------------------------------------------------


_ENTERPRISE_WARNING = WarningEvent(
    type="Warning",
    reason="AssociationError",
    message="Remote cluster is an enterprise feature. Enterprise features are disabled",
)


@pytest.mark.parametrize(
    ("es", "enterprise_enabled", "expected"),
    [
        pytest.param(
            _es("ns", "a", _remote("b", "b")), False, _ENTERPRISE_WARNING, id="unlicensed"
        ),
        pytest.param(_es("ns", "a", _remote("b", "b")), True, None, id="licensed"),
        pytest.param(_es("ns", "a"), False, None, id="unlicensed-without-remotes"),
    ],
)
def test_enterprise_disabled_event(
    es: Mapping[str, Any], enterprise_enabled: bool, expected: WarningEvent | None
) -> None:
    assert enterprise_disabled_event(es, enterprise_enabled) == expected


# --- remote CA copies, API keys, relationships (the reconciler's pure parts) -------------------------


def test_remote_ca_copy_name_and_labels_are_eck_s() -> None:
    assert remote_ca_copy_name("a", ("ns-b", "b")) == "a-ns-b-b-es-remote-ca"
    assert remote_ca_copy_labels("a", ("ns-b", "b")) == {
        "common.k8s.elastic.co/type": "remote-ca",
        "elasticsearch.k8s.elastic.co/cluster-name": "a",
        "elasticsearch.k8s.elastic.co/remote-cluster-name": "b",
        "elasticsearch.k8s.elastic.co/remote-cluster-namespace": "ns-b",
    }


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(
            remote_ca_copy_labels("a", ("ns-b", "b")), (("ns-a", "a"), ("ns-b", "b")), id="copy"
        ),
        pytest.param({"common.k8s.elastic.co/type": "remote-ca"}, None, id="unlabelled"),
        pytest.param(
            {**remote_ca_copy_labels("a", ("ns-b", "b")), "common.k8s.elastic.co/type": "user"},
            None,
            id="other-type",
        ),
    ],
)
def test_remote_ca_copy_peers(
    labels: dict[str, str], expected: tuple[ClusterKey, ClusterKey] | None
) -> None:
    secret = {"metadata": {"namespace": "ns-a", "name": "x", "labels": labels}}
    assert remote_ca_copy_peers(secret) == expected


def _api_remote(alias: str, name: str, namespace: str) -> dict[str, Any]:
    return _remote(alias, name, namespace, apiKey={"access": {"search": [{"names": ["*"]}]}})


def test_expected_api_keys_one_per_api_key_alias_of_8_10_clients() -> None:
    server = _es("ns-s", "s")
    client = _es("ns-c", "c", _api_remote("one", "s", "ns-s"), _remote("plain", "s", "ns-s"))
    old = _es("ns-c", "old", _api_remote("x", "s", "ns-s"))
    old["spec"]["version"] = "8.9.0"

    keys = expected_api_keys(server, [server, client, old])

    assert [key.name for key in keys] == ["eck-ns-c-c-one"]
    assert keys[0].metadata()["elasticsearch.k8s.elastic.co/managed-by"] == "eck"
    assert api_key_name(("ns-c", "c"), "one") == "eck-ns-c-c-one"


_WANT = ExpectedKey(client=("ns", "c"), client_uid="u", alias="a", access={"search": []})
_OTHER_ACCESS = ExpectedKey(client=("ns", "c"), client_uid="u", alias="a", access={"x": 1})


def _key(key_id: str, name: str, config_hash: str | None, managed: bool = True) -> ExistingKey:
    metadata: dict[str, Any] = {"elasticsearch.k8s.elastic.co/managed-by": "eck"} if managed else {}
    if config_hash is not None:
        metadata["elasticsearch.k8s.elastic.co/config-hash"] = config_hash
    return ExistingKey(id=key_id, name=name, metadata=metadata)


@pytest.mark.parametrize(
    ("expected", "existing", "stored", "plan"),
    [
        pytest.param([_WANT], [], {}, KeyPlan(create=(_WANT,)), id="missing-created"),
        pytest.param(
            [_WANT],
            [_key("k1", _WANT.name, _WANT.config_hash)],
            {(("ns", "c"), "a"): "k1"},
            KeyPlan(),
            id="in-line",
        ),
        pytest.param(
            [_OTHER_ACCESS],
            [_key("k1", _WANT.name, _WANT.config_hash)],
            {(("ns", "c"), "a"): "k1"},
            KeyPlan(update=(("k1", _OTHER_ACCESS),)),
            id="access-changed-updated",
        ),
        pytest.param(
            [_WANT],
            [_key("k1", _WANT.name, _WANT.config_hash)],
            {},
            KeyPlan(create=(_WANT,), invalidate=("k1",)),
            id="encoded-value-lost-recreated",
        ),
        pytest.param(
            [],
            [_key("k1", _WANT.name, _WANT.config_hash), _key("k2", "eck-x", None, managed=False)],
            {},
            KeyPlan(invalidate=("k1",)),
            id="stale-invalidated-foreign-kept",
        ),
    ],
)
def test_plan_api_keys(
    expected: list[ExpectedKey],
    existing: list[ExistingKey],
    stored: dict[tuple[ClusterKey, str], str],
    plan: KeyPlan,
) -> None:
    assert plan_api_keys(expected, existing, stored) == plan


def test_api_keys_secret_round_trips() -> None:
    stored = {"a": StoredKey(namespace="ns-s", name="s", id="k1", encoded="ZW5j")}
    contents = api_keys_secret_contents(stored)
    assert contents is not None
    data, annotations = contents
    secret = {
        "metadata": {"annotations": annotations},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }

    assert data == {"cluster.remote.a.credentials": "ZW5j"}
    assert json.loads(annotations[API_KEYS_ANNOTATION]) == {
        "a": {"namespace": "ns-s", "name": "s", "id": "k1"}
    }
    assert read_stored_keys(secret) == stored
    assert api_keys_secret_contents({}) is None


@pytest.mark.parametrize(
    ("clusters", "managed", "held", "expected"),
    [
        pytest.param([_es("ns", "a")], [], [], False, id="alone"),
        pytest.param([_es("ns", "a", _remote("b", "b"))], [], [], True, id="declares"),
        pytest.param(
            [_es("ns", "a"), _es("ns", "c", _remote("x", "a"))], [], [], True, id="declared"
        ),
        pytest.param([_es("ns", "a")], ["old"], [], True, id="alias-to-clean"),
        pytest.param([_es("ns", "a")], [], [("ns", "z")], True, id="copy-to-clean"),
    ],
)
def test_has_relationship(
    clusters: list[dict[str, Any]],
    managed: list[str],
    held: list[ClusterKey],
    expected: bool,
) -> None:
    assert (
        has_relationship(("ns", "a"), clusters, managed_aliases=managed, held_copies=held)
        is expected
    )
