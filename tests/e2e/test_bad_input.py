"""A bad-input matrix against one running operator (kubesim + a Temporal dev server + ``stackflow run``).

Each row applies one bad (or unusual but valid) input to a fresh namespace or object and waits
for the one clear message the operator, or the API server, gives for it: a Warning event, a
status phase and condition, an annotation, or an operator log line naming the object. A healthy
"canary" Elasticsearch in its own namespace is reconciled before the first row (its nodes up, its
health ``unknown``: kubesim's Pods run no Elasticsearch to measure); after the matrix a
spec change of it is still reconciled, the operator log holds no traceback, and the module's
stack asserts that the operator exits 0 on SIGTERM.

Rows marked ``xfail(strict=True)`` name a gap the matrix found that is not fixed yet. An invalid
namespace selector in a live configuration edit is not a row: ``test_config_reload.py`` covers it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from cryptography import x509
from cryptography.x509.oid import NameOID
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from stackflow.api.kinds import kind_resource
from stackflow.kube import errors
from stackflow.licensing.model import (
    LICENSE_INVALID_ANNOTATION,
    LICENSE_SCOPE_LABEL,
    LICENSE_SCOPE_OPERATOR,
    LICENSE_TYPE_LABEL,
    TRIAL_PUBKEY_KEY,
    TRIAL_STATUS_SECRET_NAME,
)
from stackflow.models.kinds import EVENTS, NAMESPACES, SECRETS, STATEFULSETS
from stackflow.stack.labels import ES_VERSION_LABEL
from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import (
    ES,
    Stack,
    create_namespace,
    manifest,
    operator_stack,
    set_in_scope,
)
from tests.e2e.vitals import Vitals, health_port_of, watched
from tests.polling import eventually

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(900)]

OPERATOR_NAMESPACE = "elastic-system"
CANARY_NAMESPACE = "canary"
VERSION = "9.1.0"
KIBANA = kind_resource("Kibana")
AGENT = kind_resource("Agent")
#: The trial the harness starts before the operator: the valid license of the whole matrix.
TRIAL_SECRET = "eck-trial"
#: Generous: the machine running this is loaded, and every wait ends as soon as it holds.
WITHIN = 180.0


def elasticsearch_spec(**overrides: Any) -> dict[str, Any]:
    """A valid one-node Elasticsearch spec, with ``overrides`` applied on top."""
    return {"version": VERSION, "nodeSets": [{"name": "default", "count": 1}], **overrides}


def node_sets(*sets: dict[str, Any]) -> dict[str, Any]:
    """An Elasticsearch spec with exactly these node sets."""
    return elasticsearch_spec(nodeSets=list(sets))


def stackflow_license(*args: str) -> str:
    """Run ``stackflow license ARGS`` as a user would; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "stackflow.cli", "license", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@dataclass
class Matrix:
    """The running stack and what the rows share."""

    stack: Stack
    #: A well-formed enterprise license signed by a key the operator does not trust.
    stranger_license: str
    #: The operator's RSS and /healthz answers while the rows run (printed, not asserted).
    vitals: Vitals

    @property
    def log(self) -> str:
        """The operator's log so far."""
        return self.stack.operator.log.read_text(errors="replace")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def matrix(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Matrix]:
    """One operator for the module, with a reconciled canary Elasticsearch."""
    directory = tmp_path_factory.mktemp("bad-input")
    keys = directory / "stranger-keys"
    stackflow_license("keygen", "--out-dir", str(keys))
    document = stackflow_license(
        "issue", "--private-key", str(keys / "license-private.pem"), "--type", "enterprise"
    )
    async with operator_stack(directory, ClusterTarget(KUBESIM)) as stack:
        await create_namespace(stack.kube, CANARY_NAMESPACE, in_scope=True)
        canary = manifest("Elasticsearch", "canary", CANARY_NAMESPACE, elasticsearch_spec())
        await stack.kube.create(ES, canary, namespace=CANARY_NAMESPACE)
        assert stack.operator.process is not None
        port = await health_port_of(stack.operator.log)
        async with watched(stack.operator.process.pid, port) as vitals:
            running = Matrix(stack, document, vitals)
            await wait_reconciled(running, CANARY_NAMESPACE, "canary")
            yield running


# --- observations -----------------------------------------------------------------------------


async def es_status(matrix: Matrix, namespace: str, name: str = "es") -> dict[str, Any]:
    """``status`` of an Elasticsearch."""
    obj = await matrix.stack.kube.get(ES, namespace=namespace, name=name)
    return dict(obj.get("status") or {})


async def wait_reconciled(matrix: Matrix, namespace: str, name: str = "es") -> None:
    """Wait until an Elasticsearch's current generation is reconciled as far as kubesim lets it:
    its nodes up, its health ``unknown`` (no Elasticsearch answers)."""

    async def reconciled() -> bool:
        obj = await matrix.stack.kube.get(ES, namespace=namespace, name=name)
        return nodes_up_health_unknown(obj)

    await eventually(reconciled, within=WITHIN, interval=0.2, what=f"{namespace}/{name} reconciled")


async def warnings_on(
    matrix: Matrix, *, namespace: str, kind: str, name: str, reason: str
) -> list[str]:
    """Messages of the Warning events with ``reason`` on one object."""
    listed = await matrix.stack.kube.list(EVENTS, namespace=namespace)
    return [
        str(event.get("message") or "")
        for event in listed["items"]
        if event.get("type") == "Warning"
        and event.get("reason") == reason
        and (event.get("involvedObject") or {}).get("kind") == kind
        and (event.get("involvedObject") or {}).get("name") == name
    ]


async def wait_warning(
    matrix: Matrix, *, namespace: str, kind: str, name: str, reason: str, contains: str
) -> None:
    """Wait for a Warning event on the object whose message contains ``contains``."""

    async def recorded() -> bool:
        messages = await warnings_on(
            matrix, namespace=namespace, kind=kind, name=name, reason=reason
        )
        return any(contains in message for message in messages)

    await eventually(
        recorded,
        within=WITHIN,
        interval=0.2,
        what=f"{reason} warning on {kind} {namespace}/{name} containing {contains!r}",
    )


async def refused(matrix: Matrix, namespace: str, message: str) -> None:
    """The Elasticsearch ``es`` is refused: a ``Validation`` warning and phase ``Invalid``, both
    carrying ``message``."""
    await wait_warning(
        matrix,
        namespace=namespace,
        kind="Elasticsearch",
        name="es",
        reason="Validation",
        contains=message,
    )

    async def invalid() -> bool:
        status = await es_status(matrix, namespace)
        conditions = status.get("conditions") or []
        return status.get("phase") == "Invalid" and any(
            message in str(condition.get("message")) for condition in conditions
        )

    await eventually(invalid, within=WITHIN, interval=0.2, what=f"{namespace}/es phase Invalid")


async def wait_log(matrix: Matrix, *fragments: str) -> None:
    """Wait for an operator log line holding every one of ``fragments``."""

    def logged() -> bool:
        return any(all(part in line for part in fragments) for line in matrix.log.splitlines())

    await eventually(logged, within=WITHIN, interval=0.2, what=f"operator log line {fragments}")


async def create_es(matrix: Matrix, namespace: str, spec: dict[str, Any], name: str = "es") -> None:
    """Create an Elasticsearch in a fresh in-scope namespace."""
    await create_namespace(matrix.stack.kube, namespace, in_scope=True)
    await matrix.stack.kube.create(
        ES, manifest("Elasticsearch", name, namespace, spec), namespace=namespace
    )


async def api_refuses(matrix: Matrix, namespace: str, spec: dict[str, Any], field: str) -> None:
    """The API server refuses the Elasticsearch with a message naming ``field``."""
    await create_namespace(matrix.stack.kube, namespace, in_scope=True)
    with pytest.raises(errors.Invalid) as refusal:
        await matrix.stack.kube.create(
            ES, manifest("Elasticsearch", "es", namespace, spec), namespace=namespace
        )
    assert field in str(refusal.value)


def license_secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    """An operator license Secret in the operator namespace holding ``data`` (plain text)."""
    return {
        "metadata": {
            "name": name,
            "namespace": OPERATOR_NAMESPACE,
            "labels": {LICENSE_SCOPE_LABEL: LICENSE_SCOPE_OPERATOR},
        },
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


async def create_license(matrix: Matrix, name: str, document: str) -> None:
    """Create an operator license Secret holding ``document``."""
    await matrix.stack.kube.create(
        SECRETS, license_secret(name, {"license": document}), namespace=OPERATOR_NAMESPACE
    )


def edited_license(matrix: Matrix, **fields: Any) -> str:
    """The stranger's license document with ``fields`` changed (its signature no longer matches)."""
    document = json.loads(matrix.stranger_license)
    document["license"].update(fields)
    return json.dumps(document)


async def malformed_license(matrix: Matrix, name: str, contains: str) -> None:
    """The license Secret ``name`` gets an ``InvalidLicense`` warning containing ``contains``."""
    await wait_warning(
        matrix,
        namespace=OPERATOR_NAMESPACE,
        kind="Secret",
        name=name,
        reason="InvalidLicense",
        contains=f"while parsing license in {OPERATOR_NAMESPACE}/{name}: {contains}",
    )


async def invalid_license(matrix: Matrix, name: str, problem: str) -> None:
    """The well-formed license Secret ``name`` gets an ``InvalidLicense`` warning naming its
    problem, though another license (the trial) is valid."""
    await wait_warning(
        matrix,
        namespace=OPERATOR_NAMESPACE,
        kind="Secret",
        name=name,
        reason="InvalidLicense",
        contains=f"license in {OPERATOR_NAMESPACE}/{name} is not used: {problem}",
    )


# --- the rows ---------------------------------------------------------------------------------


async def unsupported_version(matrix: Matrix, namespace: str) -> None:
    """A version below the supported range is refused."""
    await create_es(matrix, namespace, elasticsearch_spec(version="5.0.0"))
    await refused(matrix, namespace, "spec.version: unsupported version: 5.0.0")


async def unparseable_version(matrix: Matrix, namespace: str) -> None:
    """A version that is not major.minor.patch is refused."""
    await create_es(matrix, namespace, elasticsearch_spec(version="nope"))
    await refused(matrix, namespace, "spec.version: invalid version 'nope'")


async def next_major_version(matrix: Matrix, namespace: str) -> None:
    """A major version the operator does not know yet is refused."""
    await create_es(matrix, namespace, elasticsearch_spec(version="10.0.0"))
    await refused(matrix, namespace, "spec.version: unsupported version: 10.0.0")


async def downgrade(matrix: Matrix, namespace: str) -> None:
    """A version lower than the running one is refused, and the running cluster is left alone."""
    await create_es(matrix, namespace, elasticsearch_spec())
    await wait_reconciled(matrix, namespace)
    await matrix.stack.kube.merge_patch(
        ES, {"spec": {"version": "8.15.0"}}, namespace=namespace, name="es"
    )
    await refused(matrix, namespace, "spec.version: Downgrades are not supported")
    statefulset = await matrix.stack.kube.get(
        STATEFULSETS, namespace=namespace, name="es-es-default"
    )
    pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    assert pod_labels[ES_VERSION_LABEL] == VERSION
    assert (await es_status(matrix, namespace)).get("version") == VERSION


async def duplicate_node_set_names(matrix: Matrix, namespace: str) -> None:
    """Two node sets with one name are refused, naming the second."""
    spec = node_sets({"name": "data", "count": 1}, {"name": "data", "count": 1})
    await create_es(matrix, namespace, spec)
    await refused(matrix, namespace, "spec.nodeSets[1].name: duplicate node set name 'data'")


async def name_too_long(matrix: Matrix, namespace: str) -> None:
    """A 37-character Elasticsearch name is refused (its children's names would not fit)."""
    name = "n" * 37
    await create_es(matrix, namespace, elasticsearch_spec(), name=name)
    await wait_warning(
        matrix,
        namespace=namespace,
        kind="Elasticsearch",
        name=name,
        reason="Validation",
        contains="metadata.name: name exceeds maximum allowed length of 36",
    )

    # The event is recorded before the status is written: wait for the phase too.
    async def invalid() -> bool:
        return (await es_status(matrix, namespace, name)).get("phase") == "Invalid"

    await eventually(invalid, within=WITHIN, interval=0.2, what=f"{namespace}/{name} Invalid")


async def no_master_eligible_node(matrix: Matrix, namespace: str) -> None:
    """Only data nodes: refused, a cluster needs a master."""
    spec = node_sets({"name": "data", "count": 1, "config": {"node.roles": ["data"]}})
    await create_es(matrix, namespace, spec)
    await refused(matrix, namespace, "Elasticsearch needs to have at least one master node")


async def negative_count(matrix: Matrix, namespace: str) -> None:
    """A negative count never reaches the operator: the CRD schema refuses it."""
    spec = node_sets({"name": "default", "count": -1})
    await api_refuses(matrix, namespace, spec, "spec.nodeSets[0].count")


async def count_not_a_number(matrix: Matrix, namespace: str) -> None:
    """A count that is a string: refused by the CRD schema."""
    spec = node_sets({"name": "default", "count": "three"})
    await api_refuses(matrix, namespace, spec, "spec.nodeSets[0].count")


async def no_node_sets(matrix: Matrix, namespace: str) -> None:
    """An empty node set list: refused by the CRD schema."""
    await api_refuses(matrix, namespace, elasticsearch_spec(nodeSets=[]), "spec.nodeSets")


async def invalid_node_set_name(matrix: Matrix, namespace: str) -> None:
    """A node set name that cannot be part of a StatefulSet name: refused by the CRD schema."""
    spec = node_sets({"name": "bad_name!", "count": 1})
    await api_refuses(matrix, namespace, spec, "spec.nodeSets[0].name")


async def config_not_a_map(matrix: Matrix, namespace: str) -> None:
    """A node set config that is a string: refused by the CRD schema."""
    spec = node_sets({"name": "default", "count": 1, "config": "node.roles: [master]"})
    await api_refuses(matrix, namespace, spec, "spec.nodeSets[0].config")


async def huge_config(matrix: Matrix, namespace: str) -> None:
    """500 KB of node set config is reconciled like any other and reaches the StatefulSet's
    config Secret owner: the cluster is reconciled."""
    config = {f"custom.setting{index}": "v" * 100 for index in range(5000)}
    await create_es(matrix, namespace, node_sets({"name": "default", "count": 1, "config": config}))
    await wait_reconciled(matrix, namespace)
    statefulset = await matrix.stack.kube.get(
        STATEFULSETS, namespace=namespace, name="es-es-default"
    )
    assert statefulset["metadata"]["name"] == "es-es-default"


async def deeply_nested_config(matrix: Matrix, namespace: str) -> None:
    """A config nested 150 levels deep is reconciled."""
    nested: dict[str, Any] = {"leaf": "value"}
    for _ in range(150):
        nested = {"level": nested}
    await create_es(
        matrix, namespace, node_sets({"name": "default", "count": 1, "config": {"deep": nested}})
    )
    await wait_reconciled(matrix, namespace)


async def containers_not_a_list(matrix: Matrix, namespace: str) -> None:
    """A pod template whose containers are a string: refused naming the field, not a traceback."""
    spec = node_sets({"name": "default", "count": 1, "podTemplate": {"spec": {"containers": "x"}}})
    await create_es(matrix, namespace, spec)
    await refused(
        matrix,
        namespace,
        "spec.nodeSets[0].podTemplate.spec.containers: must be a list of containers, "
        "not a string ('x')",
    )


async def env_not_a_list(matrix: Matrix, namespace: str) -> None:
    """A container env that is a string: refused naming the field."""
    container = {"name": "elasticsearch", "env": "A=1"}
    spec = node_sets(
        {"name": "default", "count": 1, "podTemplate": {"spec": {"containers": [container]}}}
    )
    await create_es(matrix, namespace, spec)
    await refused(
        matrix, namespace, "spec.nodeSets[0].podTemplate.spec.containers[0].env: must be a list"
    )


async def claims_not_a_list(matrix: Matrix, namespace: str) -> None:
    """Volume claim templates that are a map: refused naming the field (the CRD schema lets a
    list of objects through only: the item is the free-form part)."""
    claim = {"metadata": {"name": "elasticsearch-data"}, "spec": "10Gi"}
    spec = node_sets({"name": "default", "count": 1, "volumeClaimTemplates": [claim]})
    await create_es(matrix, namespace, spec)
    await refused(matrix, namespace, "spec.nodeSets[0].volumeClaimTemplates[0].spec: must be a map")


async def count_int32_max(matrix: Matrix, namespace: str) -> None:
    """2147483647 nodes: refused at once, before a single key is made (the operator used to name
    every Pod and make a key per Pod until it was killed)."""
    spec = node_sets({"name": "default", "count": 2147483647})
    await create_es(matrix, namespace, spec)
    await refused(
        matrix,
        namespace,
        "spec.nodeSets[0].count: count 2147483647 is more than the 234 nodes a node set may have",
    )


async def count_over_the_secret_limit(matrix: Matrix, namespace: str) -> None:
    """300 nodes in one node set: their transport certificates would not fit into one Secret."""
    spec = node_sets({"name": "default", "count": 300})
    await create_es(matrix, namespace, spec)
    await refused(matrix, namespace, "transport certificates Secret, which may hold at most 1 MiB")


async def garbage_roles(matrix: Matrix, namespace: str) -> None:
    """A node role Elasticsearch does not know: refused naming it."""
    config = {"node.roles": ["master", "garbage"]}
    await create_es(matrix, namespace, node_sets({"name": "default", "count": 1, "config": config}))
    await refused(
        matrix, namespace, "spec.nodeSets[0].config.node.roles: unknown node role 'garbage'"
    )


async def garbage_memory(matrix: Matrix, namespace: str) -> None:
    """A memory request that is no quantity: refused naming it, never copied to a StatefulSet."""
    resources = {"requests": {"memory": "lots"}}
    spec = node_sets({"name": "default", "count": 1, "resources": resources})
    await create_es(matrix, namespace, spec)
    await refused(
        matrix,
        namespace,
        "spec.nodeSets[0].resources.requests.memory: 'lots' is not a Kubernetes quantity",
    )


async def garbage_storage(matrix: Matrix, namespace: str) -> None:
    """A storage size that is no quantity: refused naming it."""
    claim = {
        "metadata": {"name": "elasticsearch-data"},
        "spec": {"resources": {"requests": {"storage": "huge"}}},
    }
    spec = node_sets({"name": "default", "count": 1, "volumeClaimTemplates": [claim]})
    await create_es(matrix, namespace, spec)
    await refused(
        matrix,
        namespace,
        "spec.nodeSets[0].volumeClaimTemplates[0].spec.resources.requests.storage: "
        "'huge' is not a Kubernetes quantity",
    )


async def config_too_deep(matrix: Matrix, namespace: str) -> None:
    """A config nested 300 levels deep: refused naming the field."""
    nested: dict[str, Any] = {"leaf": "value"}
    for _ in range(300):
        nested = {"level": nested}
    await create_es(
        matrix, namespace, node_sets({"name": "default", "count": 1, "config": {"deep": nested}})
    )
    await refused(
        matrix, namespace, "spec.nodeSets[0].config.deep.level: nested more than 200 levels deep"
    )


async def config_too_large(matrix: Matrix, namespace: str) -> None:
    """900 KB of node set config: its elasticsearch.yml would not fit into a Secret."""
    config = {f"custom.setting{index}": "v" * 100 for index in range(8000)}
    await create_es(matrix, namespace, node_sets({"name": "default", "count": 1, "config": config}))
    await refused(matrix, namespace, "larger than the 786432 bytes allowed")


async def kibana_containers_not_a_list(matrix: Matrix, namespace: str) -> None:
    """A Kibana whose pod template containers are a string: a ``Validation`` warning naming it."""
    await create_namespace(matrix.stack.kube, namespace, in_scope=True)
    spec = {"version": VERSION, "count": 1, "podTemplate": {"spec": {"containers": "x"}}}
    await matrix.stack.kube.create(
        KIBANA, manifest("Kibana", "kb", namespace, spec), namespace=namespace
    )
    await wait_warning(
        matrix,
        namespace=namespace,
        kind="Kibana",
        name="kb",
        reason="Validation",
        contains="spec.podTemplate.spec.containers: must be a list of containers",
    )


async def unknown_fields(matrix: Matrix, namespace: str) -> None:
    """Fields the operator does not know are kept as written and named in one ``UnknownFields``
    warning, and the cluster still reconciles."""
    spec = elasticsearch_spec(
        futureField={"enabled": True},
        nodeSets=[{"name": "default", "count": 1, "futureNodeSetField": 3}],
    )
    await create_es(matrix, namespace, spec)
    await wait_warning(
        matrix,
        namespace=namespace,
        kind="Elasticsearch",
        name="es",
        reason="UnknownFields",
        contains="kept but ignored: spec.futureField, spec.nodeSets[0].futureNodeSetField",
    )
    await wait_reconciled(matrix, namespace)
    stored = await matrix.stack.kube.get(ES, namespace=namespace, name="es")
    assert stored["spec"]["futureField"] == {"enabled": True}
    assert stored["spec"]["nodeSets"][0]["futureNodeSetField"] == 3


async def unusual_labels(matrix: Matrix, namespace: str) -> None:
    """Valid labels at the edges of the syntax (a 253-character dotted prefix, a 63-character name
    and value, dots, dashes and underscores) on the Elasticsearch: it is reconciled."""
    prefix = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
    assert len(prefix) == 253
    labels = {f"{prefix}/{'n' * 63}": "v" * 63, "example.com/a.b-c_d": "x.y-z_0"}
    await create_namespace(matrix.stack.kube, namespace, in_scope=True)
    obj = manifest("Elasticsearch", "es", namespace, elasticsearch_spec())
    obj["metadata"]["labels"] = labels
    await matrix.stack.kube.create(ES, obj, namespace=namespace)
    await wait_reconciled(matrix, namespace)


async def longest_namespace_name(matrix: Matrix, namespace: str) -> None:
    """A 63-character namespace name (the maximum): its Elasticsearch is reconciled, though
    ``es-es-http.<namespace>.es.local`` is longer than a certificate's common name may be."""
    longest = (namespace + "-" + "x" * 63)[:63]
    await create_es(matrix, longest, elasticsearch_spec())
    await wait_reconciled(matrix, longest)
    # The long name is kept among the certificate's names; a short one is its common name.
    secret = await matrix.stack.kube.get(SECRETS, namespace=longest, name="es-es-http-certs-public")
    certificate = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"es-es-http.{longest}.es.local" in sans.get_values_for_type(x509.DNSName)
    assert f"es-es-http.{longest}.svc" in sans.get_values_for_type(x509.DNSName)
    common_names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert [name.value for name in common_names] == ["es-es-http"]


async def missing_reference(matrix: Matrix, namespace: str) -> None:
    """A Kibana pointing at an Elasticsearch that does not exist: association ``Pending`` and
    ECK's Warning ``AssociationError``."""
    await create_namespace(matrix.stack.kube, namespace, in_scope=True)
    spec = {"version": VERSION, "count": 1, "elasticsearchRef": {"name": "nowhere"}}
    await matrix.stack.kube.create(
        KIBANA, manifest("Kibana", "kb", namespace, spec), namespace=namespace
    )
    await wait_association_pending(matrix, namespace)
    await wait_warning(
        matrix,
        namespace=namespace,
        kind="Kibana",
        name="kb",
        reason="AssociationError",
        contains=(
            f"Failed to find referenced backend {namespace}/nowhere: "
            'Elasticsearch.elasticsearch.k8s.elastic.co "nowhere" not found'
        ),
    )


async def out_of_scope_reference(matrix: Matrix, namespace: str) -> None:
    """A Kibana pointing at an Elasticsearch in an unmanaged namespace sees no target: ``Pending``,
    and nothing is written into the unmanaged namespace."""
    unmanaged = f"{namespace}-unmanaged"
    await create_namespace(matrix.stack.kube, unmanaged, in_scope=False)
    await matrix.stack.kube.create(
        ES, manifest("Elasticsearch", "es", unmanaged, elasticsearch_spec()), namespace=unmanaged
    )
    await create_namespace(matrix.stack.kube, namespace, in_scope=True)
    spec = {
        "version": VERSION,
        "count": 1,
        "elasticsearchRef": {"name": "es", "namespace": unmanaged},
    }
    await matrix.stack.kube.create(
        KIBANA, manifest("Kibana", "kb", namespace, spec), namespace=namespace
    )
    await wait_association_pending(matrix, namespace)
    target = await matrix.stack.kube.get(ES, namespace=unmanaged, name="es")
    assert not target.get("status"), target
    statefulsets = await matrix.stack.kube.list(STATEFULSETS, namespace=unmanaged)
    assert statefulsets["items"] == []


async def wait_association_pending(matrix: Matrix, namespace: str) -> None:
    """Wait until Kibana ``kb`` reports its Elasticsearch association ``Pending``."""

    async def pending() -> bool:
        obj = await matrix.stack.kube.get(KIBANA, namespace=namespace, name="kb")
        return (obj.get("status") or {}).get("elasticsearchAssociationStatus") == "Pending"

    await eventually(pending, within=WITHIN, interval=0.2, what=f"{namespace}/kb Pending")


async def license_not_json(matrix: Matrix, namespace: str) -> None:
    """A license Secret holding no JSON: an ``InvalidLicense`` warning on the Secret."""
    await create_license(matrix, namespace, "{not json")
    await malformed_license(matrix, namespace, "license cannot be unmarshalled")


async def license_with_two_keys(matrix: Matrix, namespace: str) -> None:
    """A license Secret with two data keys: an ``InvalidLicense`` warning on the Secret."""
    data = {"license": matrix.stranger_license, "extra": "x"}
    await matrix.stack.kube.create(
        SECRETS, license_secret(namespace, data), namespace=OPERATOR_NAMESPACE
    )
    await malformed_license(matrix, namespace, "license secret needs to contain exactly one file")


async def license_of_wrong_type(matrix: Matrix, namespace: str) -> None:
    """A license of a type the operator does not accept (``gold``): malformed, warned."""
    await create_license(matrix, namespace, edited_license(matrix, type="gold"))
    await malformed_license(matrix, namespace, "")


async def license_missing_fields(matrix: Matrix, namespace: str) -> None:
    """A license document without its ``license`` object: malformed, warned."""
    await create_license(matrix, namespace, json.dumps({"licence": {}}))
    await malformed_license(matrix, namespace, "")


async def forged_license(matrix: Matrix, namespace: str) -> None:
    """A license signed by a key the operator does not trust: its problem is named."""
    await create_license(matrix, namespace, matrix.stranger_license)
    await invalid_license(matrix, namespace, "invalid signature")


async def expired_license(matrix: Matrix, namespace: str) -> None:
    """An expired license: its problem is named."""
    await create_license(matrix, namespace, edited_license(matrix, expiry_date_in_millis=1000))
    await invalid_license(matrix, namespace, "expired at 1970-01-01T00:00:01+00:00")


async def not_yet_valid_license(matrix: Matrix, namespace: str) -> None:
    """A license whose start lies in 2100: its problem is named."""
    document = edited_license(matrix, start_date_in_millis=4102444800000)
    await create_license(matrix, namespace, document)
    await invalid_license(matrix, namespace, "not valid before 2100-01-01T00:00:00+00:00")


async def license_deleted_mid_reconcile(matrix: Matrix, namespace: str) -> None:
    """A license Secret deleted right after it was created: both changes are noticed."""
    await create_license(matrix, namespace, matrix.stranger_license)
    await matrix.stack.kube.delete(SECRETS, namespace=OPERATOR_NAMESPACE, name=namespace)
    await wait_log(matrix, "license.changed", f"{OPERATOR_NAMESPACE}/{namespace} removed")


def trial_request(name: str) -> dict[str, Any]:
    """A trial request Secret in the operator namespace (the EULA accepted)."""
    return {
        "metadata": {
            "name": name,
            "namespace": OPERATOR_NAMESPACE,
            "labels": {LICENSE_TYPE_LABEL: "enterprise_trial"},
            "annotations": {"elastic.co/eula": "accepted"},
        }
    }


async def wait_annotation(matrix: Matrix, name: str, message: str | None) -> None:
    """Wait until the trial Secret ``name`` says ``message`` in its invalid annotation (None:
    no such annotation, the trial is valid)."""

    async def annotated() -> bool:
        secret = await matrix.stack.kube.get(SECRETS, namespace=OPERATOR_NAMESPACE, name=name)
        annotations = secret["metadata"].get("annotations") or {}
        return annotations.get(LICENSE_INVALID_ANNOTATION) == message

    await eventually(
        annotated, within=WITHIN, interval=0.2, what=f"{name} annotated invalid: {message!r}"
    )


async def second_trial(matrix: Matrix, namespace: str) -> None:
    """A second trial request is refused: the annotation says a trial starts only once."""
    await matrix.stack.kube.create(SECRETS, trial_request(namespace), namespace=OPERATOR_NAMESPACE)
    await wait_annotation(matrix, namespace, "trial can be started only once")


async def reference_cycle(matrix: Matrix, namespace: str) -> None:
    """Two Agents enrolled each through the other as their Fleet Server (a cycle the API
    allows): each is refused naming the other, and nothing loops."""
    await create_namespace(matrix.stack.kube, namespace, in_scope=True)
    for name, other in (("a", "b"), ("b", "a")):
        spec = {
            "version": VERSION,
            "mode": "fleet",
            "policyID": "eck-agent",
            "deployment": {"replicas": 1},
            "fleetServerRef": {"name": other},
        }
        await matrix.stack.kube.create(
            AGENT, manifest("Agent", name, namespace, spec), namespace=namespace
        )
    for name, other in (("a", "b"), ("b", "a")):
        await wait_warning(
            matrix,
            namespace=namespace,
            kind="Agent",
            name=name,
            reason="Validation",
            contains=(f"spec.fleetServerRef: Agent {namespace}/{other} is not a Fleet Server"),
        )
    for name in ("a", "b"):
        agent = await matrix.stack.kube.get(AGENT, namespace=namespace, name=name)
        status = agent.get("status") or {}
        assert status.get("fleetServerAssociationStatus") != "Established", status


async def namespace_deleted_mid_flip(matrix: Matrix, namespace: str) -> None:
    """A namespace labelled into scope with an Elasticsearch in it and deleted right after: the
    flip it started completes, and no workflow is left retrying in the gone namespace."""
    await create_namespace(matrix.stack.kube, namespace, in_scope=False)
    await matrix.stack.kube.create(
        ES, manifest("Elasticsearch", "es", namespace, elasticsearch_spec()), namespace=namespace
    )
    flipped = await set_in_scope(matrix.stack.kube, namespace, True)
    await matrix.stack.kube.delete(NAMESPACES, namespace=None, name=namespace)
    await wait_log(matrix, "flip.started", namespace)
    client = matrix.stack.temporal.client
    flip = client.get_workflow_handle(f"flip/{namespace}/{flipped['metadata']['resourceVersion']}")
    await asyncio.wait_for(flip.result(), timeout=WITHIN)

    async def gone() -> bool:
        try:
            await matrix.stack.kube.get(NAMESPACES, namespace=None, name=namespace)
        except errors.NotFound:
            return True
        return False

    await eventually(gone, within=WITHIN, interval=0.2, what=f"namespace {namespace} deleted")

    async def workflow_finished() -> bool:
        handle = client.get_workflow_handle(f"elasticsearch/{namespace}/es")
        try:
            description = await handle.describe()
        except RPCError as error:
            # The flip found nothing to start: the namespace was gone first.
            return error.status is RPCStatusCode.NOT_FOUND
        return description.status is not WorkflowExecutionStatus.RUNNING

    await eventually(
        workflow_finished, within=WITHIN, interval=0.2, what=f"{namespace}/es workflow finished"
    )
    retries = [line for line in matrix.log.splitlines() if "retry" in line and namespace in line]
    assert retries == []


async def tampered_trial_status(matrix: Matrix, namespace: str) -> None:
    """``trial-status`` edited by hand: the trial is flagged, naming that Secret, an
    ``InvalidLicense`` warning says why the trial no longer counts, and no second trial starts.
    Restoring the Secret heals the trial (the rows after this one, and the canary, need it)."""
    original = await matrix.stack.kube.get(
        SECRETS, namespace=OPERATOR_NAMESPACE, name=TRIAL_STATUS_SECRET_NAME
    )
    garbage = base64.b64encode(b"garbage").decode()
    await matrix.stack.kube.merge_patch(
        SECRETS,
        {"data": {TRIAL_PUBKEY_KEY: garbage}},
        namespace=OPERATOR_NAMESPACE,
        name=TRIAL_STATUS_SECRET_NAME,
    )
    try:
        await wait_annotation(
            matrix,
            TRIAL_SECRET,
            f"Secret {OPERATOR_NAMESPACE}/{TRIAL_STATUS_SECRET_NAME} holds no readable trial "
            "public key (key pubkey; was it edited?): the trial license cannot be verified",
        )
        await wait_warning(
            matrix,
            namespace=OPERATOR_NAMESPACE,
            kind="Secret",
            name=TRIAL_SECRET,
            reason="InvalidLicense",
            contains=f"license in {OPERATOR_NAMESPACE}/{TRIAL_SECRET} is not used: invalid "
            "signature: no readable trial public key",
        )
        await matrix.stack.kube.create(
            SECRETS, trial_request(namespace), namespace=OPERATOR_NAMESPACE
        )
        await wait_annotation(matrix, namespace, "trial can be started only once")
    finally:
        await matrix.stack.kube.merge_patch(
            SECRETS,
            {"data": {TRIAL_PUBKEY_KEY: original["data"][TRIAL_PUBKEY_KEY]}},
            namespace=OPERATOR_NAMESPACE,
            name=TRIAL_STATUS_SECRET_NAME,
        )
    await wait_annotation(matrix, TRIAL_SECRET, None)


@dataclass(frozen=True)
class Row:
    """One bad input: how to apply it to a fresh namespace (or object) and see its message."""

    name: str
    check: Callable[[Matrix, str], Awaitable[None]]
    gap: str | None = None


ROWS = [
    Row("unsupported-version", unsupported_version),
    Row("unparseable-version", unparseable_version),
    Row("next-major-version", next_major_version),
    Row("downgrade", downgrade),
    Row("duplicate-node-sets", duplicate_node_set_names),
    Row("name-too-long", name_too_long),
    Row("no-master", no_master_eligible_node),
    Row("negative-count", negative_count),
    Row("count-not-a-number", count_not_a_number),
    Row("no-node-sets", no_node_sets),
    Row("invalid-node-set-name", invalid_node_set_name),
    Row("config-not-a-map", config_not_a_map),
    Row("huge-config", huge_config),
    Row("deeply-nested-config", deeply_nested_config),
    Row("containers-not-a-list", containers_not_a_list),
    Row("env-not-a-list", env_not_a_list),
    Row("claim-spec-not-a-map", claims_not_a_list),
    Row("count-int32-max", count_int32_max),
    Row("count-over-the-secret-limit", count_over_the_secret_limit),
    Row("garbage-roles", garbage_roles),
    Row("garbage-memory", garbage_memory),
    Row("garbage-storage", garbage_storage),
    Row("config-too-deep", config_too_deep),
    Row("config-too-large", config_too_large),
    Row("kibana-containers-not-a-list", kibana_containers_not_a_list),
    Row("unknown-fields", unknown_fields),
    Row("unusual-labels", unusual_labels),
    Row("longest-namespace", longest_namespace_name),
    Row("missing-reference", missing_reference),
    Row("out-of-scope-reference", out_of_scope_reference),
    Row("license-not-json", license_not_json),
    Row("license-two-keys", license_with_two_keys),
    Row("license-wrong-type", license_of_wrong_type),
    Row("license-missing-fields", license_missing_fields),
    Row("license-forged", forged_license),
    Row("license-expired", expired_license),
    Row("license-not-yet-valid", not_yet_valid_license),
    Row("license-deleted", license_deleted_mid_reconcile),
    Row("second-trial", second_trial),
    Row("reference-cycle", reference_cycle),
    Row("namespace-deleted-mid-flip", namespace_deleted_mid_flip),
    # Last: while trial-status is tampered, the operator is unlicensed.
    Row("tampered-trial-status", tampered_trial_status),
]


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(
            row,
            id=row.name,
            marks=[pytest.mark.xfail(strict=True, reason=row.gap)] if row.gap else [],
        )
        for row in ROWS
    ],
)
async def test_bad_input_gets_one_clear_message(matrix: Matrix, row: Row) -> None:
    await row.check(matrix, f"bad-{row.name}")


async def test_the_canary_still_reconciles_and_nothing_crashed(matrix: Matrix) -> None:
    await wait_reconciled(matrix, CANARY_NAMESPACE, "canary")
    await matrix.stack.kube.merge_patch(
        ES,
        {"spec": {"nodeSets": [{"name": "default", "count": 2}]}},
        namespace=CANARY_NAMESPACE,
        name="canary",
    )

    async def scaled() -> bool:
        obj = await matrix.stack.kube.get(ES, namespace=CANARY_NAMESPACE, name="canary")
        return nodes_up_health_unknown(obj) and obj["status"]["availableNodes"] == 2

    await eventually(scaled, within=WITHIN, interval=0.2, what="canary scaled to 2 nodes")
    process = matrix.stack.operator.process
    assert process is not None
    assert process.returncode is None, "the operator is not running"
    assert "Traceback" not in matrix.log, matrix.stack.operator.tail()
    print(f"bad-input matrix, {len(ROWS)} rows: {matrix.vitals.summary()}")
