"""No secret value reaches the operator's log, even at the highest verbosity.

``stackflow run`` with ``log-verbosity: 3`` (every DEBUG line of its own) manages, on kubesim, an
Elasticsearch with secure settings, a Kibana associated to it (its service-account token and user),
the cluster's self-signed CA and TLS certificates, the elastic user, the enterprise trial and an
enterprise license, until both are reconciled (the Kibana green, the Elasticsearch's nodes up,
its health ``unknown``: kubesim's Pods run no Elasticsearch); and, against a fake Elasticsearch, an AutoOps policy
whose connection Secret holds the token, until its agent runs with an API key the operator
created. Then every data value of every Secret of every namespace
is searched for in the whole log — raw, base64-encoded, JSON-escaped, and each line of a PEM's
body on its own — and the test fails naming every Secret key found.
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path

import pytest

from stackflow.api.kinds import kind_resource
from stackflow.models.kinds import SECRETS
from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.autoops_stack import (
    OPERATOR_NAMESPACE,
    POLICY,
    agents,
    autoops_stack,
    connection,
    policy,
)
from tests.e2e.autoops_stack import elasticsearch as autoops_elasticsearch
from tests.e2e.harness import ES, Stack, create_namespace, manifest, operator_stack
from tests.e2e.license_setup import issue_enterprise_license, license_secret
from tests.e2e.test_no_secret_in_history import VERSION, disguises, secret_values, wait_settled
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

NAMESPACE = "secrets-log"
#: A line of a PEM body is 64 base64 characters; shorter pieces (the last line) may be common.
PEM_PIECE = 40


def pem_pieces(value: bytes) -> list[bytes]:
    """The body lines of every PEM block in `value` long enough to be its own (a key's line is
    as secret as the whole key, and a log may wrap or cut it)."""
    if b"-----BEGIN " not in value:
        return []
    return [
        line.strip()
        for line in value.splitlines()
        if len(line.strip()) >= PEM_PIECE and not line.startswith(b"-----")
    ]


def leaks_in_log(secret_values: dict[str, bytes], log: bytes) -> list[str]:
    """The ``namespace/name/key`` of every Secret value the log holds, in any disguise."""
    return sorted(
        secret
        for secret, value in secret_values.items()
        if any(form in log for form in [*disguises(value), *pem_pieces(value)])
    )


def test_leaks_in_log_finds_each_disguise_and_pem_pieces() -> None:
    """The scanner itself: a value is found raw, base64-encoded, JSON-escaped or by one line of
    its PEM body, and an absent one is not."""
    body = [base64.b64encode(bytes([n]) * 48) for n in range(3)]
    pem = b"-----BEGIN PRIVATE KEY-----\n" + b"\n".join(body) + b"\n-----END PRIVATE KEY-----\n"
    password = b"s3cr3t-passw0rd"
    values = {"ns/es-elastic-user/elastic": password, "ns/es-http-certs/tls.key": pem}
    assert leaks_in_log(values, b'{"event": "x"}') == []
    assert leaks_in_log(values, b"password=" + password) == ["ns/es-elastic-user/elastic"]
    assert leaks_in_log(values, base64.b64encode(password)) == ["ns/es-elastic-user/elastic"]
    assert leaks_in_log(values, json.dumps(pem.decode()).encode()) == ["ns/es-http-certs/tls.key"]
    assert leaks_in_log(values, b"... " + body[1] + b" ...") == ["ns/es-http-certs/tls.key"]


async def run_settled_stack(stack: Stack, license_document: str) -> str:
    """An enterprise license; an Elasticsearch with a keystore setting from a Secret of its own
    and a Kibana associated to it, both reconciled. Returns the keystore setting's value."""
    kube = stack.kube
    await kube.create(SECRETS, license_secret(license_document), namespace="elastic-system")
    await create_namespace(kube, NAMESPACE, in_scope=True)
    keystore_value = secrets.token_urlsafe(24)
    await kube.create(
        SECRETS,
        {
            "metadata": {"name": "es-keystore", "namespace": NAMESPACE},
            "data": {
                "s3.client.default.secret_key": base64.b64encode(keystore_value.encode()).decode()
            },
        },
        namespace=NAMESPACE,
    )
    es_spec = {
        "version": VERSION,
        "nodeSets": [{"name": "default", "count": 1}],
        "secureSettings": [{"secretName": "es-keystore"}],
    }
    await kube.create(ES, manifest("Elasticsearch", "es", NAMESPACE, es_spec), namespace=NAMESPACE)
    kb_spec = {"version": VERSION, "count": 1, "elasticsearchRef": {"name": "es"}}
    await kube.create(
        kind_resource("Kibana"), manifest("Kibana", "kb", NAMESPACE, kb_spec), namespace=NAMESPACE
    )
    await wait_settled(stack, "Elasticsearch", NAMESPACE, "es")
    await wait_settled(stack, "Kibana", NAMESPACE, "kb")
    return keystore_value


@pytest.mark.asyncio
async def test_no_secret_value_in_the_log_at_the_highest_verbosity(tmp_path: Path) -> None:
    public_key, document = issue_enterprise_license(tmp_path / "keys")
    settings = {"log-verbosity": 3, "license-public-key": str(public_key)}
    async with operator_stack(tmp_path, ClusterTarget(KUBESIM), settings=settings) as stack:
        keystore_value = await run_settled_stack(stack, document)
        values = await secret_values(stack.kube)
    log = stack.operator.log.read_bytes()
    lines = [json.loads(line) for line in log.splitlines() if line.startswith(b"{")]
    # The scan must have something to scan, and the log must be the verbose one.
    assert len(values) > 10, sorted(values)
    assert f"{NAMESPACE}/es-keystore/s3.client.default.secret_key" in values
    assert keystore_value.encode() in values.values()
    assert any(value.startswith(b"-----BEGIN") for value in values.values())
    assert any(line.get("level") == "debug" for line in lines), "no DEBUG line: not verbose"
    print(f"scanned {len(log)} bytes of log ({len(lines)} lines) for {len(values)} values")
    assert leaks_in_log(values, log) == []


AUTOOPS_NAMESPACE = "secrets-log-autoops"


@pytest.mark.asyncio
async def test_no_autoops_token_or_api_key_in_the_log_at_the_highest_verbosity(
    tmp_path: Path,
) -> None:
    """The operator dialling a (fake) Elasticsearch with the cluster's credentials, creating an
    AutoOps API key and an agent with the connection Secret's token, at ``log-verbosity: 3``."""
    async with autoops_stack(tmp_path, ClusterTarget(KUBESIM), settings={"log-verbosity": 3}) as (
        stack,
        _,
    ):
        kube = stack.kube
        await create_namespace(kube, AUTOOPS_NAMESPACE, in_scope=True)
        await kube.create(ES, autoops_elasticsearch(AUTOOPS_NAMESPACE), namespace=AUTOOPS_NAMESPACE)
        token = {key: secrets.token_urlsafe(24) for key in connection()["stringData"]}
        await kube.create(
            SECRETS, {**connection(), "stringData": token}, namespace=OPERATOR_NAMESPACE
        )
        await kube.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)

        async def has_agent() -> bool:
            return await agents(kube) == [f"{AUTOOPS_NAMESPACE}/quickstart"]

        await eventually(has_agent, within=240, what="the AutoOps agent")
        values = await secret_values(kube)
    log = stack.operator.log.read_bytes()
    assert set(token.values()) <= {value.decode(errors="ignore") for value in values.values()}
    # The API key the operator created for the agent is among the scanned values.
    assert any("api-key" in secret or "api_key" in secret for secret in values), sorted(values)
    print(f"scanned {len(log)} bytes of log for {len(values)} values")
    assert leaks_in_log(values, log) == []
