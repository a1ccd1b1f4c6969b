"""Hypothesis strategies for the fuzz tier: objects drawn from the committed CRD schemas.

``from_schema`` draws values an API server that enforces the ``openAPIV3Schema`` would store;
``fuzzed`` draws the same, but any node may instead hold a wrong-typed, oversized or deeply nested
value (what a server without the schema, or a client posting raw JSON, may hand the operator).
The free-form parts of a spec (``config``, ``podTemplate``, ``volumeClaimTemplates`` items) are
schema-valid whatever JSON they hold, so they get hostile JSON in both modes.

Every test of the tier runs with :data:`FUZZ_SETTINGS`: a fixed example budget, no per-example
deadline (a loaded CI machine is slow, and a slow example is not the finding) and derandomized, so
a failure found in CI is found again locally with the same examples.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

REPOSITORY = Path(__file__).resolve().parents[3]
CRDS = REPOSITORY / "deploy" / "crds"
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"

#: The budget of every fuzz test: fixed, derandomized, without the on-disk example database.
FUZZ_SETTINGS = settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    # The inputs are large and filtered on purpose (oversized values, names within a schema's
    # maxLength); how fast they are drawn is not what the tier checks.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)

#: The builders' budget: a build signs certificates and hashes passwords, so fewer examples.
BUILD_SETTINGS = settings(FUZZ_SETTINGS, max_examples=60)

#: Versions a user may write: valid ones across the supported range and the edges, and junk.
VERSION_STRINGS = st.one_of(
    st.sampled_from(
        [
            "8.15.0",
            "7.17.0",
            "9.0.0",
            "8.18.3",
            "7.16.3",
            "6.8.0",
            "10.0.0",
            "8.15.0-SNAPSHOT",
            "8.15",
            "8",
            "v8.15.0",
            "8.15.0.1",
            "8.15.x",
            " 8.15.0 ",
            "",
            "-1.0.0",
            "99999999999999999999.0.0",
            "8.15.0+build.1",
            "8.15.0-rc1",
        ]
    ),
    st.from_regex(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}(-[a-zA-Z0-9.]{0,8})?", fullmatch=True),
    st.text(max_size=20),
)

#: Strings a user may put anywhere: empty, odd characters, long, and lookalikes of the real thing.
HOSTILE_STRINGS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            " ",
            "null",
            "true",
            "0",
            "-1",
            "8.15.0",
            "elasticsearch",
            "a" * 64,
            "a" * 254,
            "x" * 10_000,
            "name with spaces",
            "UPPER",
            "dots.in.name",
            "slash/name",
            "ünïcödé",
            "\x00",
            "\ud7ff",
            "-leading-dash",
            "${env:SECRET}",
            "{{ template }}",
        ]
    ),
)

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31, 2**63, 10**18]),
    # No NaN nor infinity: JSON has neither, so no API server stores them (ADVERSARIAL has them).
    st.floats(allow_nan=False, allow_infinity=False),
    HOSTILE_STRINGS,
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Any JSON-like value: scalars of every type (NaN, huge ints), lists and string-keyed maps."""
    return st.recursive(
        _SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(HOSTILE_STRINGS, children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


def deeply_nested(depth: int) -> Any:
    """A value ``depth`` levels deep (maps and lists alternating): the too-deep input."""
    value: Any = "leaf"
    for level in range(depth):
        value = {"nested": value} if level % 2 else [value]
    return value


#: Values that are wrong for any typed field: every JSON type, too deep, too big.
ADVERSARIAL = st.one_of(
    json_values(),
    st.sampled_from([float("nan"), float("inf"), -float("inf")]),
    st.sampled_from([40, 400]).map(deeply_nested),
    st.just(list(range(2_000))),
    st.just({f"key-{index}": index for index in range(2_000)}),
)


@functools.cache
def crd_schema(file_name: str, version: str = "v1") -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` in the committed CRD ``deploy/crds/<file_name>``."""
    crd = yaml.safe_load((CRDS / file_name).read_text())
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(f"{file_name} has no version {version}")


def _string(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    max_length = schema.get("maxLength")
    if "pattern" in schema:
        pattern = st.from_regex(schema["pattern"], fullmatch=True)
        if max_length is not None:
            pattern = pattern.filter(lambda text: len(text) <= max_length)
        return pattern
    if max_length is not None:
        return HOSTILE_STRINGS.filter(lambda text: len(text) <= max_length)
    return HOSTILE_STRINGS


def _integer(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    low = schema.get("minimum")
    high = schema.get("maximum")
    small = st.integers(min_value=low, max_value=high if high is not None else 5)
    if low is not None and high is None:
        small = st.integers(min_value=low, max_value=max(low, 5))
    return st.one_of(small, st.integers(min_value=low, max_value=high))


def from_schema(
    schema: dict[str, Any], *, fuzz: bool = False, depth: int = 0
) -> st.SearchStrategy[Any]:
    """Values of ``schema``; with ``fuzz``, any node may be an :data:`ADVERSARIAL` value instead.

    Every property is optional (the CRDs require none). A free-form object (one that preserves
    unknown fields and declares no property) holds arbitrary JSON, which the schema allows.
    """
    valid = _valid(schema, fuzz=fuzz, depth=depth)
    if fuzz and depth > 0:
        return st.one_of(valid, ADVERSARIAL)
    return valid


def _valid(schema: dict[str, Any], *, fuzz: bool, depth: int) -> st.SearchStrategy[Any]:
    if schema.get(INT_OR_STRING):
        return st.one_of(st.integers(min_value=-5, max_value=2**40), HOSTILE_STRINGS)
    kind = schema.get("type")
    if kind == "object":
        properties: dict[str, Any] = schema.get("properties") or {}
        if not properties:
            additional = schema.get("additionalProperties")
            if isinstance(additional, dict):
                return st.dictionaries(
                    HOSTILE_STRINGS, from_schema(additional, fuzz=fuzz, depth=depth + 1), max_size=3
                )
            return st.dictionaries(HOSTILE_STRINGS, json_values(), max_size=4)
        return st.fixed_dictionaries(
            {},
            optional={
                name: from_schema(child, fuzz=fuzz, depth=depth + 1)
                for name, child in properties.items()
            },
        )
    if kind == "array":
        return st.lists(
            from_schema(schema.get("items") or {}, fuzz=fuzz, depth=depth + 1), max_size=3
        )
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return _integer(schema)
    if kind == "number":
        return st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return st.booleans()
    return json_values()


ELASTICSEARCH_CRD = "elasticsearch.k8s.elastic.co_elasticsearches.yaml"
KIBANA_CRD = "kibana.k8s.elastic.co_kibanas.yaml"

#: Annotations the operator reads on a cluster, each with values a user may well write.
MEANINGFUL_ANNOTATIONS = (
    "eck.k8s.elastic.co/license",
    "eck.k8s.elastic.co/disable-downgrade-validation",
    "eck.k8s.elastic.co/suspend",
    "eck.k8s.elastic.co/pause-orchestration",
    "eck.k8s.elastic.co/disable-upgrade-predicates",
    "elasticsearch.k8s.elastic.co/cluster-uuid",
    "elasticsearch.k8s.elastic.co/managed-remote-clusters",
    "elasticsearch.k8s.elastic.co/remote-cluster-api-keys",
    "association.k8s.elastic.co/es-conf",
    "association.k8s.elastic.co/ent-conf",
)
ANNOTATION_VALUES = st.one_of(
    st.sampled_from(["enterprise", "true", "false", "*", "", "a,b", "[]", "{}", '["x"]']),
    st.sampled_from(['{"a": 1}', '{"a": {"b": 1}}', "null", "1", "[1, 2]", '{"a": [1]}']),
    # JSON nested deeper than Python's decoder recurses (an annotation may hold 256 KiB).
    st.just("[" * 5_000 + "]" * 5_000),
    st.sampled_from(
        [
            '{"url": "https://es-es-http.ns1.svc:9200", "authSecretName": "kb-user",'
            ' "authSecretKey": "ns1-kb", "caCertProvided": true, "caSecretName": "es-ca",'
            ' "version": "8.15.0"}',
            '{"url": "https://x:9200", "authSecretName": "-", "isServiceAccount": true}',
            '{"url": 5, "version": ["8"], "caCertProvided": "yes"}',
            '{"url": "http://[::1", "version": "not-a-version"}',
        ]
    ),
    HOSTILE_STRINGS,
)


def annotation_maps(*, fuzz: bool) -> st.SearchStrategy[Any]:
    """``metadata.annotations``: the ones the operator reads with odd values, and others."""
    values: st.SearchStrategy[Any] = ANNOTATION_VALUES
    if fuzz:
        values = st.one_of(ANNOTATION_VALUES, ADVERSARIAL)
    keyed = st.dictionaries(
        st.one_of(st.sampled_from(MEANINGFUL_ANNOTATIONS), HOSTILE_STRINGS), values, max_size=4
    )
    return st.one_of(keyed, ADVERSARIAL) if fuzz else keyed


def metadata(*, fuzz: bool) -> st.SearchStrategy[Any]:
    """``metadata``: a name (valid, long or odd), a namespace, a uid and annotations."""
    names: st.SearchStrategy[Any] = st.one_of(
        st.from_regex(r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True), HOSTILE_STRINGS
    )
    if fuzz:
        names = st.one_of(names, ADVERSARIAL)
    valid = st.fixed_dictionaries(
        {"name": names, "namespace": st.sampled_from(["ns1", "default"]), "uid": st.just("uid-1")},
        optional={
            "annotations": annotation_maps(fuzz=fuzz),
            "labels": st.dictionaries(HOSTILE_STRINGS, HOSTILE_STRINGS, max_size=3),
            "generation": st.integers(min_value=1, max_value=10),
        },
    )
    return st.one_of(valid, ADVERSARIAL) if fuzz else valid


def custom_resource(
    crd_file: str,
    kind: str,
    api_version: str,
    *,
    fuzz: bool,
    spec: st.SearchStrategy[Any] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """A whole object of ``kind``: metadata, a spec (from the CRD unless given) and maybe a status."""
    schema = crd_schema(crd_file)
    properties = schema["properties"]
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just(api_version),
            "kind": st.just(kind),
            "metadata": metadata(fuzz=fuzz),
            "spec": spec
            if spec is not None
            else from_schema(properties["spec"], fuzz=fuzz, depth=1),
        },
        optional={"status": from_schema(properties["status"], fuzz=fuzz, depth=1)},
    )


def elasticsearch_objects(*, fuzz: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Elasticsearch objects drawn from the CRD schema (``fuzz``: with wrong-typed values too)."""
    return custom_resource(
        ELASTICSEARCH_CRD, "Elasticsearch", "elasticsearch.k8s.elastic.co/v1", fuzz=fuzz
    )


def kibana_objects(*, fuzz: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Kibana objects drawn from the CRD schema (``fuzz``: with wrong-typed values too)."""
    return custom_resource(KIBANA_CRD, "Kibana", "kibana.k8s.elastic.co/v1", fuzz=fuzz)


#: Versions every kind validates: the builders' inputs must get past validation.
SUPPORTED_VERSIONS = st.sampled_from(
    ["7.17.0", "7.17.28", "8.0.0", "8.6.1", "8.15.0", "8.18.0", "9.0.0", "9.1.2"]
)

_NODE_ROLES = st.lists(
    st.sampled_from(
        [
            "master",
            "data",
            "ingest",
            "ml",
            "data_hot",
            "voting_only",
            "remote_cluster_client",
            "transform",
        ]
    ),
    max_size=4,
)


def _node_set_config() -> st.SearchStrategy[Any]:
    schema_free = st.dictionaries(HOSTILE_STRINGS, json_values(), max_size=3)
    roles = st.fixed_dictionaries(
        {},
        optional={"node.roles": _NODE_ROLES, "node": st.fixed_dictionaries({"roles": _NODE_ROLES})},
    )
    return st.one_of(
        st.none(),
        st.builds(lambda fixed, extra: {**extra, **fixed}, roles, schema_free),
        schema_free,
    )


def elasticsearch_valid_looking(*, max_count: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """Clusters likely to pass validation, with schema-valid (free-form: any JSON) user parts.

    The version is supported, the node sets have valid, unique names and small counts, the first
    node set is master-eligible; ``config``, ``podTemplate``, ``volumeClaimTemplates``, ``http``,
    ``transport`` and the rest are drawn from the CRD, so they hold what a user may store.
    """
    spec_schema = crd_schema(ELASTICSEARCH_CRD)["properties"]["spec"]
    node_set_schema = spec_schema["properties"]["nodeSets"]["items"]["properties"]
    user_parts = {
        "podTemplate": POD_TEMPLATES,
        "volumeClaimTemplates": VOLUME_CLAIM_TEMPLATES,
        "resources": from_schema(node_set_schema["resources"], depth=2),
    }
    node_set = st.fixed_dictionaries(
        {"count": st.integers(min_value=0, max_value=max_count), "config": _node_set_config()},
        optional=user_parts,
    )
    master = st.fixed_dictionaries(
        {
            "name": st.just("masters"),
            "count": st.integers(min_value=1, max_value=max_count),
            "config": st.just({"node.roles": ["master", "data"]}),
        },
        optional=user_parts,
    )
    others = st.lists(node_set, max_size=2).map(
        lambda sets: [{**one, "name": f"set-{index}"} for index, one in enumerate(sets)]
    )
    optional_spec = {
        field: from_schema(child, depth=1)
        for field, child in spec_schema["properties"].items()
        if field not in ("version", "nodeSets")
    }
    spec = st.fixed_dictionaries(
        {
            # Mostly supported versions (the build is reached), sometimes what a user may type.
            "version": st.one_of(SUPPORTED_VERSIONS, SUPPORTED_VERSIONS, VERSION_STRINGS),
            "nodeSets": st.builds(lambda first, rest: [first, *rest], master, others),
        },
        optional=optional_spec,
    )
    name = st.from_regex(r"[a-z]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("elasticsearch.k8s.elastic.co/v1"),
            "kind": st.just("Elasticsearch"),
            "metadata": st.fixed_dictionaries(
                {"name": name, "namespace": st.just("ns1"), "uid": st.just("uid-1")},
                optional={"annotations": annotation_maps(fuzz=False)},
            ),
            "spec": spec,
        },
        # The running version the upgrade and downgrade rules compare with.
        optional={
            "status": st.fixed_dictionaries(
                {"version": st.one_of(SUPPORTED_VERSIONS, VERSION_STRINGS)}
            )
        },
    )


def kibana_valid_looking() -> st.SearchStrategy[dict[str, Any]]:
    """Kibana objects likely to pass validation, with every other spec field from the CRD."""
    spec_schema = crd_schema(KIBANA_CRD)["properties"]["spec"]
    optional_spec = {
        field: from_schema(child, depth=1)
        for field, child in spec_schema["properties"].items()
        if field != "version"
    }
    name = st.from_regex(r"[a-z]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("kibana.k8s.elastic.co/v1"),
            "kind": st.just("Kibana"),
            "metadata": st.fixed_dictionaries(
                {"name": name, "namespace": st.just("ns1"), "uid": st.just("uid-1")},
                optional={"annotations": annotation_maps(fuzz=False)},
            ),
            "spec": st.fixed_dictionaries({"version": SUPPORTED_VERSIONS}, optional=optional_spec),
        }
    )


def shaped(skeleton: Any, *, hostile: bool = True) -> st.SearchStrategy[Any]:
    """Values shaped like ``skeleton`` (maps of optional keys, ``[item]`` lists, strategy leaves).

    With ``hostile``, any node may hold arbitrary JSON instead: the free-form parts of a spec
    (``podTemplate``, ``volumeClaimTemplates``) are schema-valid whatever they hold, yet the
    builders read them as Kubernetes objects.
    """
    if isinstance(skeleton, st.SearchStrategy):
        valid: st.SearchStrategy[Any] = skeleton
    elif isinstance(skeleton, list):
        valid = st.lists(shaped(skeleton[0], hostile=hostile), max_size=3)
    else:
        valid = st.fixed_dictionaries(
            {}, optional={key: shaped(child, hostile=hostile) for key, child in skeleton.items()}
        )
    if not hostile:
        return valid
    # Three to one for the shape, so the builders' deeper reads are reached too.
    return st.one_of(valid, valid, valid, json_values(6))


def shaped_object(skeleton: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A map shaped like ``skeleton`` whose every value may be hostile: what a schema typing only
    the top (``type: object``, unknown fields preserved) lets through."""
    return st.fixed_dictionaries(
        {}, optional={key: shaped(child) for key, child in skeleton.items()}
    )


QUANTITIES = st.one_of(
    st.sampled_from(["1Gi", "2Gi", "500m", "2", "0", "", "-1Gi", "1e3", "abc", "1.5Gi", "10Ti"]),
    st.integers(min_value=-5, max_value=2**40),
)
_LABELS = st.dictionaries(HOSTILE_STRINGS, HOSTILE_STRINGS, max_size=3)
_CONTAINER = {
    "name": st.one_of(st.sampled_from(["elasticsearch", "kibana", "sidecar", ""]), HOSTILE_STRINGS),
    "image": HOSTILE_STRINGS,
    "env": [{"name": HOSTILE_STRINGS, "value": HOSTILE_STRINGS, "valueFrom": json_values(4)}],
    "resources": {
        "requests": {"memory": QUANTITIES, "cpu": QUANTITIES},
        "limits": {"memory": QUANTITIES, "cpu": QUANTITIES},
    },
    "volumeMounts": [{"name": HOSTILE_STRINGS, "mountPath": HOSTILE_STRINGS}],
    "ports": [
        {"name": HOSTILE_STRINGS, "containerPort": st.integers(min_value=-1, max_value=70_000)}
    ],
    "command": [HOSTILE_STRINGS],
    "args": [HOSTILE_STRINGS],
    "securityContext": json_values(4),
    "readinessProbe": json_values(4),
}
POD_TEMPLATE = {
    "metadata": {"labels": _LABELS, "annotations": _LABELS},
    "spec": {
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "volumes": [
            {
                "name": st.one_of(
                    st.sampled_from(["elasticsearch-data", "elasticsearch-logs"]), HOSTILE_STRINGS
                ),
                "emptyDir": json_values(3),
                "secret": {"secretName": HOSTILE_STRINGS},
                "persistentVolumeClaim": {"claimName": HOSTILE_STRINGS},
            }
        ],
        "securityContext": json_values(4),
        "affinity": json_values(4),
        "nodeSelector": _LABELS,
        "tolerations": [json_values(3)],
        "serviceAccountName": HOSTILE_STRINGS,
        "automountServiceAccountToken": st.booleans(),
        "terminationGracePeriodSeconds": st.integers(min_value=-5, max_value=2**40),
    },
}
VOLUME_CLAIM_TEMPLATE = {
    "metadata": {
        "name": st.one_of(st.just("elasticsearch-data"), HOSTILE_STRINGS),
        "labels": _LABELS,
    },
    "spec": {
        "accessModes": [st.sampled_from(["ReadWriteOnce", "ReadOnlyMany", "bogus"])],
        "resources": {"requests": {"storage": QUANTITIES}},
        "storageClassName": HOSTILE_STRINGS,
        "volumeMode": st.sampled_from(["Filesystem", "Block", ""]),
    },
}
#: What a user writes in ``podTemplate`` and ``volumeClaimTemplates``: Kubernetes-shaped, or not.
POD_TEMPLATES = shaped(POD_TEMPLATE)
VOLUME_CLAIM_TEMPLATES = st.one_of(
    st.lists(shaped(VOLUME_CLAIM_TEMPLATE), max_size=3), json_values(4)
)


def crd_file(group: str, plural: str) -> str:
    """The committed CRD file of a kind: ``deploy/crds/<group>_<plural>.yaml``."""
    return f"{group}_{plural}.yaml"


def objects_of(
    group: str, plural: str, kind: str, version: str, *, fuzz: bool
) -> st.SearchStrategy[dict[str, Any]]:
    """Objects of any kind from its CRD's ``version`` schema (``fuzz``: with wrong types too)."""
    schema = crd_schema(crd_file(group, plural), version)
    properties = schema["properties"]
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just(f"{group}/{version}"),
            "kind": st.just(kind),
            "metadata": metadata(fuzz=fuzz),
            "spec": from_schema(properties["spec"], fuzz=fuzz, depth=1),
        },
        optional={"status": from_schema(properties["status"], fuzz=fuzz, depth=1)},
    )


#: What each application kind needs to get past validation, beyond a supported version.
APPLICATION_REQUIREMENTS: dict[str, dict[str, Any]] = {
    "Kibana": {},
    "ApmServer": {},
    "EnterpriseSearch": {"version": "8.15.0"},
    "Beat": {"type": "filebeat", "deployment": {}},
    "Agent": {"deployment": {}},
    "Logstash": {"version": "8.15.0"},
    "ElasticMapsServer": {},
    "PackageRegistry": {},
}
#: The fields the requirements fix, left out of the drawn spec.
_WORKLOAD_FIELDS = ("daemonSet", "deployment", "statefulSet", "mode", "fleetServerEnabled")


def application_valid_looking(
    group: str, plural: str, kind: str, version: str
) -> st.SearchStrategy[dict[str, Any]]:
    """Application objects likely to pass validation: a supported version, the kind's required
    fields, every other spec field from the CRD (``podTemplate`` and ``config`` free-form)."""
    spec_schema = crd_schema(crd_file(group, plural), version)["properties"]["spec"]
    required = APPLICATION_REQUIREMENTS[kind]
    optional_spec = {
        field: POD_TEMPLATES if field == "podTemplate" else from_schema(child, depth=1)
        for field, child in spec_schema["properties"].items()
        if field != "version" and field not in required and field not in _WORKLOAD_FIELDS
    }
    name = st.from_regex(r"[a-z]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just(f"{group}/{version}"),
            "kind": st.just(kind),
            "metadata": st.fixed_dictionaries(
                {"name": name, "namespace": st.just("ns1"), "uid": st.just("uid-1")},
                optional={"annotations": annotation_maps(fuzz=False)},
            ),
            "spec": st.fixed_dictionaries(
                {"version": SUPPORTED_VERSIONS}, optional=optional_spec
            ).map(lambda spec: {**spec, **required}),
        }
    )
